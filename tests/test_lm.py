"""Chapter 8's decoder-only language model, sampling and n-gram baseline."""
import inspect
import math

import pytest
import torch

from attnlib import lm


def _model(vocab=11, **kw):
    torch.manual_seed(0)
    return lm.DecoderOnlyLM(vocab, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=2,
                            max_len=32, **kw).eval()


def test_shapes_and_causality():
    model = _model()
    X = torch.randint(11, (3, 9))
    out = model(X)
    assert out.shape == (3, 9, 11)
    X2 = X.clone()
    X2[:, 5:] = (X2[:, 5:] + 1) % 11  # change the future only
    out2 = model(X2)
    assert torch.allclose(out[:, :5], out2[:, :5], atol=1e-6)
    assert not torch.allclose(out[:, 5:], out2[:, 5:], atol=1e-3)


def test_cached_forward_equals_full_forward():
    model = _model()
    X = torch.randint(11, (2, 8))
    full = model(X)
    caches = model.init_caches()
    steps = [model(X[:, :3], caches)] + [model(X[:, t:t + 1], caches) for t in range(3, 8)]
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)


@pytest.mark.parametrize("temperature,top_k", [(1.0, None), (0.7, 3), (0.0, None)])
def test_cached_sampling_equals_uncached(temperature, top_k):
    model = _model()
    prompt = torch.randint(11, (4, 2))
    a = lm.sample(model, prompt, 10, temperature, top_k, torch.Generator().manual_seed(1))
    b = lm.sample(model, prompt, 10, temperature, top_k, torch.Generator().manual_seed(1),
                  use_cache=False)
    assert a.shape == (4, 12) and torch.equal(a, b) and torch.equal(a[:, :2], prompt)


def test_top_k_one_is_greedy():
    model = _model()
    prompt = torch.randint(11, (3, 1))
    greedy = lm.sample(model, prompt, 6, temperature=0)
    top1 = lm.sample(model, prompt, 6, temperature=2.0, top_k=1,
                     generator=torch.Generator().manual_seed(0))
    assert torch.equal(greedy, top1)


def test_bad_input_errors():
    model = _model()
    with pytest.raises(ValueError, match="token ids"):
        model(torch.tensor([[0, 11]]))
    with pytest.raises(ValueError, match="temperature"):
        lm.sample(model, torch.zeros(1, 1, dtype=torch.long), 3, temperature=-1)
    with pytest.raises(ValueError, match="top_k"):
        lm.sample(model, torch.zeros(1, 1, dtype=torch.long), 3, top_k=0)
    with pytest.raises(ValueError, match="max_len"):
        lm.sample(model, torch.zeros(1, 1, dtype=torch.long), 40)
    with pytest.raises(ValueError, match="side"):
        lm.char_sentences("de")


def test_sample_listing_is_the_computation():
    # chapter 8 shows lm.sample's source: its argument checks live in one helper call, so the
    # listing is the sampling loop, not a page of checks
    source = inspect.getsource(lm.sample)
    assert "raise" not in source and source.count("check") == 1, source
    assert len(source.splitlines()) <= 30
    with pytest.raises(ValueError, match="stop must be None or a token id"):  # the helper runs
        lm.sample(_model(), torch.zeros(1, 1, dtype=torch.long), 3, stop=11)


def test_split_by_distinct_sentence():
    sentences = [f"s{i % 50}" for i in range(200)]  # duplicates
    train, val = lm.split_sentences(sentences, 0.2, seed=0)
    assert not set(train) & set(val)
    assert len(set(train) | set(val)) == 50


def test_ngram_probabilities_sum_to_one_and_perplexity():
    ng = lm.NGramLM(3, k=0.5).fit(["abab", "abba", "ba"])
    vocab = sorted(ng.vocab)
    for h in (("<bos>", "<bos>"), ("a", "b"), ("x", "y")):
        assert math.isclose(sum(math.exp(ng.log_prob(h, c)) for c in vocab), 1.0, rel_tol=1e-9)
    assert ng.perplexity(["abab"]) < ng.perplexity(["bbbb"])
    with pytest.raises(ValueError, match="n must"):
        lm.NGramLM(0)


def test_nll_counts_characters_and_eos():
    sentences = ["hi .", "go"]
    vocab = lm.char_vocab(sentences)
    model = _model(vocab=len(vocab))
    total, count = lm.lm_nll(model, sentences, vocab)
    assert count == 4 + 1 + 2 + 1
    assert math.isclose(lm.perplexity(model, sentences, vocab), math.exp(total / count))


def test_trained_lm_beats_unigram_and_learns_text(one_thread):
    # A quick quality check on a repetitive toy corpus: the transformer must beat the
    # add-k bigram baseline on held-out sentences after a short training.
    import random
    rng = random.Random(0)
    words = ["the cat", "a dog", "my bird", "his fish"]
    verbs = ["runs", "sleeps", "eats", "sings"]
    sentences = list({f"{rng.choice(words)} {rng.choice(verbs)} ." for _ in range(200)})
    train, val = sentences[:12], sentences[12:]
    vocab = lm.char_vocab(train)
    model = _model(vocab=len(vocab))
    losses = lm.train_lm(model, train, vocab, num_steps=150, batch_size=16, lr=1e-2)
    assert losses[-1] < losses[0] / 2
    bigram = lm.NGramLM(2, k=0.1).fit(train).perplexity(val)
    assert lm.perplexity(model, val, vocab) < bigram


def test_next_token_probs_is_the_distribution_sample_draws_from():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0], [0.0, 3.0, 1.0, 1.0]])
    P = lm.next_token_probs(logits, 0.5, top_k=2)
    kept = torch.tensor([[2.0, 1.0], [3.0, 1.0]]) / 0.5
    assert torch.allclose(P[0, :2], kept[0].softmax(-1)) and P[0, 2:].eq(0).all()
    assert P[1, 0] == 0 and torch.allclose(P[1].sum(), torch.tensor(1.0))  # a tie at the k-th: both kept
    assert torch.allclose(lm.next_token_probs(logits), logits.softmax(-1))
    # sample's draws follow it: 4,000 single-token draws against the probabilities
    model = lm.DecoderOnlyLM(vocab_size=4, num_hiddens=8, ffn_num_hiddens=16, num_heads=2, num_blks=1,
                             max_len=4)
    prompt = torch.zeros(4000, 1, dtype=torch.long)
    with torch.no_grad():
        p = lm.next_token_probs(model(prompt[:1])[:, -1], 1.5, top_k=3)[0]
    drawn = lm.sample(model, prompt, 1, 1.5, 3, torch.Generator().manual_seed(0))[:, 1]
    freq = torch.bincount(drawn, minlength=4) / 4000
    assert (freq - p).abs().max() < 0.03 and freq[p == 0].sum() == 0
