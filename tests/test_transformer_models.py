"""The encoder-decoder Transformer: shapes, causal mask in train AND eval, cache, pre-LN, d2l parity."""
import pytest
import torch

import attnlib as A
from attnlib.seq2seq import EncoderDecoder
from attnlib.transformer import TransformerDecoder, TransformerDecoderBlock, TransformerEncoder

pytestmark = pytest.mark.usefixtures("one_thread")


SRC_V, TGT_V, D, FFN, HEADS, BLKS = 19, 27, 16, 32, 4, 2


def make(pre_norm=False, dropout=0.0) -> EncoderDecoder:
    return EncoderDecoder(TransformerEncoder(SRC_V, D, FFN, HEADS, BLKS, dropout, pre_norm=pre_norm),
                          TransformerDecoder(TGT_V, D, FFN, HEADS, BLKS, dropout, pre_norm=pre_norm))


def batch():
    return torch.randint(0, SRC_V, (3, 7)), torch.randint(0, TGT_V, (3, 6)), torch.tensor([7, 2, 5])


@pytest.mark.parametrize("pre_norm", [False, True])
def test_shapes_and_recorded_weights(pre_norm):
    model = make(pre_norm).eval()
    src, tgt, vl = batch()
    assert model.encoder(src, vl).shape == (3, 7, D)
    with A.record_attention(model) as rec:
        logits = model(src, tgt, vl)
    assert logits.shape == (3, 6, TGT_V)
    assert rec.last("decoder.blks.1.attention1").shape == (3, HEADS, 6, 6)  # self: target x target
    assert rec.last("decoder.blks.1.attention2").shape == (3, HEADS, 6, 7)  # cross: target x source
    assert rec.last("encoder.blks.0.attention").shape == (3, HEADS, 7, 7)
    assert torch.all(rec.last("decoder.blks.0.attention2")[1, :, :, 2:] == 0)  # source padding
    assert torch.all(rec.last("decoder.blks.0.attention1").triu(1) == 0)  # no future


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("pre_norm", [False, True])
def test_causal_mask_in_training_and_evaluation(train, pre_norm):
    """Changing later target tokens never changes earlier logits (d2l 1.0 fails this in eval)."""
    model = make(pre_norm).train(train)  # dropout 0, so train mode is deterministic too
    src, tgt, vl = batch()
    tgt2 = tgt.clone()
    tgt2[:, 3:] = (tgt2[:, 3:] + 1) % TGT_V
    out1, out2 = model(src, tgt, vl), model(src, tgt2, vl)
    torch.testing.assert_close(out1[:, :3], out2[:, :3])
    assert not torch.allclose(out1[:, 3:], out2[:, 3:])


@pytest.mark.parametrize("pre_norm", [False, True])
def test_cache_gives_the_same_logits_as_the_whole_prefix(pre_norm):
    model = make(pre_norm).eval()
    src, tgt, vl = batch()
    full = model(src, tgt, vl)
    state = model.encode(src, vl)
    steps = []
    for t in range(tgt.shape[1]):
        out, state = model.decoder(tgt[:, t: t + 1], state)
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-4)
    for self_cache, cross_cache in state[2]:  # projected keys and values, per head
        assert self_cache.k.shape == self_cache.v.shape == (3, HEADS, 6, D // HEADS)  # 6 targets
        assert cross_cache.k.shape == (3, HEADS, 7, D // HEADS)  # the 7 source positions
    # two tokens, then the remaining four at once: also the same
    state = model.encode(src, vl)
    a, state = model.decoder(tgt[:, :2], state)
    b, _ = model.decoder(tgt[:, 2:], state)
    torch.testing.assert_close(torch.cat((a, b), 1), full, atol=1e-5, rtol=1e-4)


def test_a_state_fed_twice_is_refused():
    """Feeding a state again would continue its caches (positions 6.. for a second prefix):
    refused; the returned state continues, and a fresh init_state starts over."""
    model = make().eval()
    src, tgt, vl = batch()
    state = model.encode(src, vl)
    first, later = model.decoder(tgt, state)
    with pytest.raises(ValueError, match=r"state was already fed to the decoder.*init_state"):
        model.decoder(tgt, state)
    with pytest.raises(ValueError, match=r"state was already fed"):
        model.decoder.reorder_state(state, torch.tensor([0]))
    again, _ = model.decoder(tgt, model.encode(src, vl))
    torch.testing.assert_close(again, first)
    assert model.decoder(tgt[:, :1], later)[0].shape == (3, 1, TGT_V)  # the returned state goes on


def test_decoder_block_alone_with_and_without_a_cache():
    blk = TransformerDecoderBlock(D, FFN, HEADS, 0.0, 0).eval()
    X, enc, lens = torch.randn(2, 5, D), torch.randn(2, 4, D), torch.tensor([4, 1])
    Y, state = blk(X, [enc, lens, [None]])  # d2l's call: nothing is kept
    assert Y.shape == (2, 5, D) and state[2] == [None]
    caches = [(A.KVCache(), A.KVCache(static=True))]
    steps = [blk(X[:, t: t + 1], [enc, lens, caches])[0] for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, 1), Y, atol=1e-5, rtol=1e-4)
    self_cache, cross_cache = caches[0]
    assert len(self_cache) == 5 and len(cross_cache) == 4  # the source was projected once


def test_the_cached_step_projects_only_the_new_position():
    """With the cache, one decoding step projects keys and values for one row, not for the whole
    prefix. Counted on what ``project`` returns (self-attention packs W_q, W_k, W_v into one
    product, which the layers' hooks never see), and on W_k, W_v's hooks outside ``project`` (a
    path that projected keys some other way)."""
    model = make().eval()
    src, tgt, vl = batch()
    state = model.encode(src, vl)
    _, state = model.decoder(tgt[:, :5], state)
    rows, inside = [], []

    def counted(name, project):
        def wrapper(queries, keys, values):
            inside.append(True)
            try:
                q, k, v = project(queries, keys, values)
            finally:
                inside.pop()
            rows.append((name, k.shape[2], v.shape[2]))  # key and value positions projected
            return q, k, v
        return wrapper

    def elsewhere(layer, args, out):
        if not inside:
            rows.append(("outside project", args[0].shape[1]))

    hooks = []
    for i, blk in enumerate(model.decoder.blks):
        for name, mha in ((f"self {i}", blk.attention1), (f"cross {i}", blk.attention2)):
            mha.project = counted(name, mha.project)
            hooks += [mha.W_k.register_forward_hook(elsewhere), mha.W_v.register_forward_hook(elsewhere)]
    model.decoder(tgt[:, 5:], state)
    for h in hooks:
        h.remove()
    # self-attention: the new token only, once; cross-attention: not at all (its cache is static)
    assert rows == [(f"self {i}", 1, 1) for i in range(BLKS)]


def test_pre_norm_stacks_end_with_a_layer_norm():
    model = make(pre_norm=True).eval()
    src, _, vl = batch()
    out = model.encoder(src, vl)
    torch.testing.assert_close(out.mean(-1), torch.zeros(3, 7), atol=1e-5, rtol=0)
    assert isinstance(make().encoder.ln, torch.nn.Identity)


def test_reorder_state_picks_rows_of_the_cache():
    model = make().eval()
    src, tgt, vl = batch()
    state = model.encode(src, vl)
    _, state = model.decoder(tgt[:, :3], state)
    idx = torch.tensor([1, 1, 2])
    picked = model.decoder.reorder_state(state, idx)
    direct = model.encode(src[idx], vl[idx])
    _, direct = model.decoder(tgt[idx, :3], direct)
    torch.testing.assert_close(model.decoder(tgt[idx, 3:], picked)[0],
                               model.decoder(tgt[idx, 3:], direct)[0])


def test_gradients_reach_every_parameter():
    model = make(dropout=0.1).train()
    src, tgt, vl = batch()
    model(src, tgt, vl).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_clear_errors():
    model = make()
    src, tgt, vl = batch()
    with pytest.raises(ValueError, match="vocabulary has 19 tokens"):
        model(src + SRC_V, tgt, vl)
    with pytest.raises(ValueError, match="vocabulary has 27 tokens"):
        model(src, tgt + TGT_V, vl)
    with pytest.raises(ValueError, match="valid_lens must lie in"):
        model(src, tgt, torch.tensor([9, 1, 1]))
    with pytest.raises(ValueError, match="max_len=8"):
        EncoderDecoder(TransformerEncoder(SRC_V, D, FFN, HEADS, 1, max_len=8),
                       TransformerDecoder(TGT_V, D, FFN, HEADS, 1, max_len=8))(
            src, torch.randint(0, TGT_V, (3, 9)), vl)


def test_encoder_matches_d2l(d2l):
    ours = TransformerEncoder(SRC_V, 24, 48, 4, 2, 0.2).eval()
    theirs = d2l.TransformerEncoder(SRC_V, 24, 48, 4, 2, 0.2).eval()
    X, vl = torch.randint(0, SRC_V, (2, 6)), torch.tensor([3, 6])
    theirs(X, vl)  # materialise d2l's lazy layers
    state = {k.replace("blks.", "blks.block", 1): v for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state)
    torch.testing.assert_close(ours(X, vl), theirs(X, vl))
    with A.record_attention(ours) as rec:
        ours(X, vl)
    torch.testing.assert_close(rec.last("blks.1.attention").reshape(8, 6, 6),
                               theirs.attention_weights[1])
