"""The RNN encoder-decoders of chapter 4: shapes, step-by-step = teacher forcing, attention, errors."""
import pytest
import torch

import attnlib as A
from attnlib.seq2seq import (
    EncoderDecoder,
    LuongAttentionDecoder,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)

pytestmark = pytest.mark.usefixtures("one_thread")


SRC_V, TGT_V, EMB, H, LAYERS = 23, 31, 8, 16, 2


def make(kind: str, bidirectional: bool = False, dropout: float = 0.0) -> EncoderDecoder:
    enc = Seq2SeqEncoder(SRC_V, EMB, H, LAYERS, dropout, bidirectional=bidirectional)
    dec = {"plain": lambda: Seq2SeqDecoder(TGT_V, EMB, H, LAYERS, dropout),
           "bahdanau": lambda: Seq2SeqAttentionDecoder(TGT_V, EMB, H, LAYERS, dropout),
           "dot": lambda: LuongAttentionDecoder(TGT_V, EMB, H, LAYERS, dropout, score="dot"),
           "general": lambda: LuongAttentionDecoder(TGT_V, EMB, H, LAYERS, dropout, score="general"),
           }[kind]()
    return EncoderDecoder(enc, dec).eval()


KINDS = ["plain", "bahdanau", "dot", "general"]


def batch(b=3, s=7, t=6):
    src = torch.randint(0, SRC_V, (b, s))
    tgt = torch.randint(0, TGT_V, (b, t))
    return src, tgt, torch.tensor([7, 2, 5][:b])


@pytest.mark.parametrize("bidirectional", [False, True])
def test_encoder_shapes(bidirectional):
    enc = Seq2SeqEncoder(SRC_V, EMB, H, LAYERS, bidirectional=bidirectional)
    outputs, state = enc(torch.randint(0, SRC_V, (3, 7)))
    assert outputs.shape == (7, 3, H)  # time first, as d2l
    assert state.shape == (LAYERS, 3, H)


def test_bidirectional_state_joins_forward_and_backward_final_states():
    enc = Seq2SeqEncoder(SRC_V, EMB, H, 1, bidirectional=True).eval()
    X = torch.randint(0, SRC_V, (2, 5))
    outputs, state = enc(X)
    # forward direction ends at the last step, backward direction at the first one
    torch.testing.assert_close(state[0, :, : H // 2], outputs[-1, :, : H // 2])
    torch.testing.assert_close(state[0, :, H // 2:], outputs[0, :, H // 2:])
    # the backward half at step 0 depends on the last word; a forward GRU's step 0 would not
    X2 = X.clone()
    X2[:, -1] = (X2[:, -1] + 1) % SRC_V
    assert not torch.allclose(enc(X2)[0][0, :, H // 2:], outputs[0, :, H // 2:])
    torch.testing.assert_close(enc(X2)[0][0, :, : H // 2], outputs[0, :, : H // 2])


def test_bidirectional_needs_even_hiddens():
    with pytest.raises(ValueError, match="even"):
        Seq2SeqEncoder(SRC_V, EMB, 15, 1, bidirectional=True)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_logits_shape_and_stepwise_equals_teacher_forcing(kind, bidirectional):
    model = make(kind, bidirectional)
    src, tgt, vl = batch()
    logits = model(src, tgt, vl)
    assert logits.shape == (3, 6, TGT_V)
    state = model.encode(src, vl)
    steps = []
    for t in range(tgt.shape[1]):
        out, state = model.decoder(tgt[:, t: t + 1], state)
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps, 1), logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_earlier_outputs_ignore_later_targets(kind):
    model = make(kind)
    src, tgt, vl = batch()
    tgt2 = tgt.clone()
    tgt2[:, 4:] = (tgt2[:, 4:] + 3) % TGT_V
    torch.testing.assert_close(model(src, tgt, vl)[:, :4], model(src, tgt2, vl)[:, :4])


@pytest.mark.parametrize("kind", ["bahdanau", "dot", "general"])
def test_attention_ignores_source_padding(kind):
    model = make(kind)
    src, tgt, vl = batch()
    src2 = src.clone()
    src2[1, 2:] = (src2[1, 2:] + 5) % SRC_V  # only padding of row 1 (valid length 2) changes...
    # ...but a unidirectional GRU's outputs at valid positions do not depend on later tokens,
    # and the decoder's initial state does; so compare the attention weights, not the logits
    with A.record_attention(model) as rec:
        model(src, tgt, vl)
    w = rec.stack("decoder.attention")  # (batch, 1, target steps, source steps)
    assert w.shape == (3, 1, 6, 7)
    assert torch.all(w[1, :, :, 2:] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 1, 6))


def test_bahdanau_records_one_weight_row_per_step():
    model = make("bahdanau")
    src, tgt, vl = batch()
    with A.record_attention(model) as rec:
        model(src, tgt, vl)
    assert len(rec["decoder.attention"]) == 6
    assert rec.last("decoder.attention").shape == (3, 1, 1, 7)


def test_bahdanau_query_is_previous_state():
    """The first step's weights depend only on the encoder (the initial state), not on y_0."""
    model = make("bahdanau")
    src, tgt, vl = batch()
    tgt2 = tgt.clone()
    tgt2[:, 0] = (tgt2[:, 0] + 1) % TGT_V
    with A.record_attention(model) as rec:
        model(src, tgt, vl)
        model(src, tgt2, vl)
    first = rec["decoder.attention"][0], rec["decoder.attention"][6]
    torch.testing.assert_close(*first)  # step 1 of both calls
    assert not torch.allclose(rec["decoder.attention"][1], rec["decoder.attention"][7])


def test_luong_query_is_current_state():
    """Luong attends with h_t, computed from y_{t-1}: the first row changes with y_0."""
    model = make("general")
    src, tgt, vl = batch()
    tgt2 = tgt.clone()
    tgt2[:, 0] = (tgt2[:, 0] + 1) % TGT_V
    with A.record_attention(model) as rec:
        model(src, tgt, vl)
        model(src, tgt2, vl)
    a, b = rec["decoder.attention"]
    assert not torch.allclose(a[:, :, 0], b[:, :, 0])


def test_plain_decoder_has_no_attention_and_gradients_flow():
    model = make("plain").train()
    with pytest.raises(ValueError, match="no AttentionModule"):
        with A.record_attention(model):
            pass
    src, tgt, vl = batch()
    model(src, tgt, vl).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_luong_rejects_unknown_score():
    with pytest.raises(ValueError, match="'dot' or 'general'"):
        LuongAttentionDecoder(TGT_V, EMB, H, 1, score="cosine")


def test_reorder_state_picks_rows():
    model = make("bahdanau")
    src, tgt, vl = batch()
    state = model.encode(src, vl)
    idx = torch.tensor([2, 2, 0])
    picked = model.decoder.reorder_state(state, idx)
    direct = model.encode(src[idx], vl[idx])
    torch.testing.assert_close(model.decoder(tgt[idx], picked)[0], model.decoder(tgt[idx], direct)[0])


@pytest.mark.parametrize("kind", KINDS)
def test_clear_errors(kind):
    model = make(kind)
    src, tgt, vl = batch()
    with pytest.raises(ValueError, match="vocabulary has 23 tokens"):
        model(src + SRC_V, tgt, vl)
    with pytest.raises(ValueError, match="vocabulary has 31 tokens"):
        model(src, tgt + TGT_V, vl)
    with pytest.raises(TypeError, match="integer token ids"):
        model(src.float(), tgt, vl)
    with pytest.raises(ValueError, match=r"\(batch, steps\)"):
        model(src[0], tgt, vl)
    with pytest.raises(ValueError, match="src_valid_len"):
        model(src, tgt, vl[:2])
