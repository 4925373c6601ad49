"""Chapter 6's experiment: order tasks, the position-blind ceiling, the tagger, peak memory."""
import sys

import pytest
import torch

import attnlib as A
from attnlib.selfattention import (
    ORDER_TASKS,
    SelfAttentionTagger,
    blind_reversal_ceiling,
    fit_tagger,
    make_order_task,
    num_classes,
    peak_memory,
    tagger_accuracy,
    train_tagger,
)


def test_order_tasks_labels():
    g = torch.Generator().manual_seed(1)
    X, Y = make_order_task("reverse", 50, 7, 5, g)
    assert X.shape == Y.shape == (50, 7) and X.dtype == torch.int64
    assert X.min() >= 0 and X.max() < 5
    assert all(Y[b, i] == X[b, 6 - i] for b in range(50) for i in range(7))
    X, Y = make_order_task("sort", 50, 7, 5, g)
    assert (Y[:, 1:] >= Y[:, :-1]).all() and (Y.sort(1).values == X.sort(1).values).all()
    X, Y = make_order_task("count", 50, 7, 5, g)
    expected = [[sum(int(X[b, j] == X[b, i]) for j in range(7)) - 1 for i in range(7)] for b in range(50)]
    assert Y.tolist() == expected
    assert Y.max() < num_classes("count", 7, 5) and num_classes("reverse", 7, 5) == 5


def test_count_is_order_free_and_reverse_is_not():
    g = torch.Generator().manual_seed(2)
    perm = torch.randperm(8, generator=g)
    X, Y = make_order_task("count", 20, 8, 4, g)
    Xp = X[:, perm]
    assert ((Xp.unsqueeze(2) == Xp.unsqueeze(1)).sum(2) - 1 == Y[:, perm]).all()
    X, Y = make_order_task("reverse", 20, 8, 4, g)
    assert not (X[:, perm].flip(1) == Y[:, perm]).all()


@pytest.mark.parametrize("call, pattern", [
    (lambda: make_order_task("copy", 4, 4, 4), r"task must be one of .*'copy'"),
    (lambda: make_order_task("count", 0, 4, 4), r"num_examples must be a positive int, got 0"),
    (lambda: make_order_task("count", 4, 4, 2.5), r"vocab_size must be a positive int"),
    (lambda: num_classes("copy", 4, 4), r"task must be one of"),
    (lambda: SelfAttentionTagger(5, 5, position="alibi"), r"position must be one of .*'alibi'"),
])
def test_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


@pytest.mark.parametrize("n", [6, 7])
def test_blind_ceiling_matches_best_blind_strategy(n):
    """Guessing the most frequent other token is the best blind strategy; its accuracy is the ceiling."""
    g = torch.Generator().manual_seed(3)
    X, Y = make_order_task("reverse", 20000, n, 4, g)
    ceiling = blind_reversal_ceiling(X, 4)
    others = torch.nn.functional.one_hot(X, 4).sum(1, keepdim=True) - torch.nn.functional.one_hot(X, 4)
    guess = others.argmax(-1)  # (examples, n)
    if n % 2:
        guess[:, n // 2] = X[:, n // 2]
    assert abs(float((guess == Y).float().mean()) - ceiling) < 0.01
    assert 0.25 < ceiling < 0.75  # above 1/vocab (the multiset helps), far below 1


@pytest.mark.parametrize("position", [None, "sinusoidal", "learned", "rope"])
def test_tagger_equivariant_only_without_positions(position):
    model = SelfAttentionTagger(6, 4, num_hiddens=16, num_heads=2, position=position).eval()
    X = torch.randint(6, (3, 9))
    perm = torch.tensor([4, 0, 8, 2, 6, 1, 3, 7, 5])
    out = model(X)
    assert out.shape == (3, 9, 4)
    equivariant = torch.allclose(model(X[:, perm]), out[:, perm], atol=1e-5)
    assert equivariant == (position is None)


def test_rope_base_reaches_every_rotary_layer():
    default = SelfAttentionTagger(6, 4, num_hiddens=16, num_heads=2, position="rope")
    usual = A.RotaryEmbedding(8, max_len=64)  # base 10000
    assert all(torch.equal(blk.attention.rope.cos, usual.cos) for blk in default.blks)
    model, _, _ = fit_tagger("reverse", 5, 6, position="rope", num_steps=1, rope_base=100.0)
    want = A.RotaryEmbedding(8, base=100.0, max_len=64)
    for blk in model.blks:
        torch.testing.assert_close(blk.attention.rope.cos, want.cos)  # the angles of base 100
        torch.testing.assert_close(blk.attention.rope.sin, want.sin)
        assert not torch.allclose(blk.attention.rope.cos, default.blks[0].attention.rope.cos)
    torch.manual_seed(0)
    X = torch.randint(6, (2, 5))
    default.eval()
    slow = default(X)
    for blk in default.blks:  # the same weights with base 100 give other scores
        blk.attention.rope = A.RotaryEmbedding(8, base=100.0, max_len=64)
    assert not torch.allclose(default(X), slow)


def test_rope_tagger_records_attention():
    model = SelfAttentionTagger(6, 4, num_hiddens=16, num_heads=2, position="rope").eval()
    X = torch.randint(6, (2, 5))
    with A.record_attention(model) as rec:
        out = model(X)
    assert rec.names() == ["blks.0.attention", "blks.1.attention"]
    assert rec.last("blks.1.attention").shape == (2, 2, 5, 5)
    torch.testing.assert_close(out, model(X))  # recording does not change the result


@pytest.mark.slow
def test_positions_decide_reversal_but_not_counting(one_thread):
    g = torch.Generator().manual_seed(4)
    n, V = 10, 10
    tests = {t: make_order_task(t, 1000, n, V, g) for t in ORDER_TASKS}
    ceiling = blind_reversal_ceiling(tests["reverse"][0], V)
    acc = {}
    for task, position in [("reverse", None), ("reverse", "sinusoidal"), ("count", None)]:
        torch.manual_seed(0)
        model = SelfAttentionTagger(V, num_classes(task, n, V), position=position)
        losses = train_tagger(model, task, n, V, num_steps=300)
        assert losses[-1] < losses[0]
        acc[task, position] = tagger_accuracy(model, *tests[task])
    assert acc["reverse", None] < ceiling + 0.03
    assert acc["reverse", "sinusoidal"] > 0.95
    assert acc["count", None] > 0.9


def test_fit_tagger_side_by_side_gives_the_models_of_training_in_turn(one_thread, monkeypatch):
    """Workers from a fork server (never a fork of this process, whose threads and sockets a child
    would inherit): the models of training in turn."""
    started = []
    real_context = A.training.multiprocessing.get_context
    monkeypatch.setattr(A.training.multiprocessing, "get_context",
                        lambda method: started.append(method) or real_context(method))
    jobs = [dict(task=task, position=position, seq_len=6, vocab_size=5, num_steps=20)
            for task, position in [("reverse", "sinusoidal"), ("count", None), ("reverse", "rope")]]
    side_by_side = A.run_side_by_side(fit_tagger, jobs, device="cpu", workers=2)
    assert started == ["forkserver" if sys.platform == "linux" else "spawn"]
    for job, (model, losses, curve) in zip(jobs, side_by_side, strict=True):
        alone, alone_losses, _ = fit_tagger(**job)
        assert losses == alone_losses and len(losses) == 20 and curve == {}
        for a, b in zip(model.state_dict().values(), alone.state_dict().values(), strict=True):
            assert torch.equal(a, b)
    torch.manual_seed(0)  # fit_tagger is the recipe of chapter 6: seed 0, then train_tagger
    by_hand = SelfAttentionTagger(5, num_classes("count", 6, 5), position=None)
    assert train_tagger(by_hand, "count", 6, 5, num_steps=20) == side_by_side[1][1]


def test_learning_curve_measures_without_changing_the_training(one_thread):
    """The curve's point at k steps is the accuracy of the model a k-step run returns, and
    measuring along the way leaves the losses and the final model as they are."""
    test_set = make_order_task("reverse", 200, 6, 5, torch.Generator().manual_seed(5))
    job = dict(task="reverse", seq_len=6, vocab_size=5, position="rope")
    model, losses, curve = fit_tagger(**job, num_steps=25, test_set=test_set, eval_every=10)
    assert sorted(curve) == [0, 10, 20, 25]  # before training, every 10 steps, and the last step
    assert all(0.0 <= a <= 1.0 for a in curve.values())
    plain_model, plain_losses, plain_curve = fit_tagger(**job, num_steps=25)
    assert plain_curve == {} and losses == plain_losses
    for a, b in zip(model.state_dict().values(), plain_model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert curve[25] == tagger_accuracy(plain_model, *test_set)
    short, _, _ = fit_tagger(**job, num_steps=10)
    assert curve[10] == tagger_accuracy(short, *test_set)
    assert curve[10] != curve[0] or curve[25] != curve[0]  # the model does learn


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(eval_every=0), ValueError, r"eval_every must be a positive int .*got 0"),
    (dict(eval_every=2.5), ValueError, r"eval_every must be a positive int"),
    (dict(test_set=torch.zeros(3, 6)), TypeError, r"test_set must be a pair of tensors \(X, Y\)"),
    (dict(test_set=(torch.zeros(3, 6), torch.zeros(3, 5))), ValueError,
     r"test_set must be X, Y of one shape .*\(3, 6\) and \(3, 5\)"),
])
def test_fit_tagger_rejects_bad_curve_arguments(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        fit_tagger("reverse", 6, 5, num_steps=1, **kwargs)


def test_peak_memory_counts_live_tensors_only():
    def two_temporaries():
        a = torch.empty(250_000)  # 1 MB
        del a
        b = torch.empty(250_000)  # another 1 MB, after the first is gone
        return b.sum()

    peak, result = peak_memory(two_temporaries)
    assert 1_000_000 <= peak < 1_100_000 and result.shape == ()
    peak, _ = peak_memory(lambda: [torch.empty(250_000) for _ in range(3)])
    assert peak >= 3_000_000
    x = torch.randn(1000)
    peak, _ = peak_memory(lambda: x.view(10, 100).t())  # views allocate nothing
    assert peak == 0


@torch.no_grad()
def test_peak_memory_sees_the_attention_matrix():
    mha = A.MultiHeadAttention(32, 4).eval()
    X = torch.randn(2, 256, 32)
    weights_bytes = 2 * 4 * 256 * 256 * 4  # (batch, heads, n, n) float32
    fused, _ = peak_memory(mha, X, X, X)
    with A.record_attention(mha):
        recorded, _ = peak_memory(mha, X, X, X)
    assert recorded >= weights_bytes > 2 * fused  # the fused kernel never builds the n x n matrix
