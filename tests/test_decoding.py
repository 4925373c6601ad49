"""Greedy and beam search: cache == no cache, beam 1 == greedy, attention shapes, errors."""
import pytest
import torch

from attnlib.decoding import beam_search_ids, greedy_search
from attnlib.seq2seq import (
    EncoderDecoder,
    LuongAttentionDecoder,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)
from attnlib.transformer import TransformerDecoder, TransformerEncoder

pytestmark = pytest.mark.usefixtures("one_thread")


SRC_V, TGT_V, BOS, EOS = 17, 21, 1, 2


def make(kind: str) -> EncoderDecoder:
    torch.manual_seed(1)
    if kind == "transformer":
        return EncoderDecoder(TransformerEncoder(SRC_V, 16, 32, 4, 2),
                              TransformerDecoder(TGT_V, 16, 32, 4, 2)).eval()
    if kind == "pre_ln":
        return EncoderDecoder(TransformerEncoder(SRC_V, 16, 32, 4, 2, pre_norm=True),
                              TransformerDecoder(TGT_V, 16, 32, 4, 2, pre_norm=True)).eval()
    dec = {"plain": Seq2SeqDecoder, "bahdanau": Seq2SeqAttentionDecoder,
           "luong": LuongAttentionDecoder}[kind](TGT_V, 8, 16, 2)
    return EncoderDecoder(Seq2SeqEncoder(SRC_V, 8, 16, 2, bidirectional=kind == "bahdanau"), dec).eval()


KINDS = ["plain", "bahdanau", "luong", "transformer", "pre_ln"]
LAYERS_HEADS = {"plain": None, "bahdanau": (1, 1), "luong": (1, 1), "transformer": (2, 4),
                "pre_ln": (2, 4)}


def sources(b=5, s=6):
    torch.manual_seed(2)
    return torch.randint(3, SRC_V, (b, s)), torch.tensor([6, 3, 1, 4, 6][:b])


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_cache_equals_recomputing_the_prefix(kind):
    model = make(kind)
    src, vl = sources()
    ids1, s1, w1 = greedy_search(model, src, vl, BOS, EOS, 9, use_cache=True)
    ids2, s2, w2 = greedy_search(model, src, vl, BOS, EOS, 9, use_cache=False)
    assert torch.equal(ids1, ids2)
    torch.testing.assert_close(s1, s2, atol=1e-4, rtol=1e-4)
    if LAYERS_HEADS[kind] is None:
        assert w1 is None and w2 is None
    else:
        assert w1.shape == (5, *LAYERS_HEADS[kind], ids1.shape[1], 6)
        torch.testing.assert_close(w1, w2, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_picks_the_argmax_of_teacher_forced_logits(kind):
    """Feeding the greedy output back with teacher forcing reproduces each argmax."""
    model = make(kind)
    src, vl = sources()
    ids, scores, _ = greedy_search(model, src, vl, BOS, EOS, 7, need_weights=False)
    tgt_in = torch.cat((torch.full((5, 1), BOS), ids[:, :-1]), dim=1)
    logits = model(src, tgt_in, vl)
    done = torch.cumsum(ids == EOS, 1) - (ids == EOS).long() > 0  # steps after the first <eos>
    assert torch.equal(logits.argmax(-1)[~done], ids[~done])
    logp = logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(logp.masked_fill(done, 0).sum(1), scores, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("use_cache", [True, False])
def test_beam_of_one_is_greedy(kind, use_cache):
    model = make(kind)
    src, vl = sources()
    ids, scores, weights = greedy_search(model, src, vl, BOS, EOS, 8)
    for i in range(5):
        hyp, score, attn, finished = beam_search_ids(model, src[i: i + 1], vl[i: i + 1], BOS, EOS,
                                                     1, 8, use_cache=use_cache)
        row = ids[i].tolist()
        expected = row[: row.index(EOS) + 1] if EOS in row else row
        assert hyp == expected and finished == (EOS in row)
        assert score == pytest.approx(float(scores[i]), abs=1e-4)
        if weights is not None:
            torch.testing.assert_close(attn, weights[i, :, :, : len(hyp)], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("kind", ["bahdanau", "transformer"])
def test_wider_beams_never_score_worse_without_length_penalty(kind):
    model = make(kind)
    src, vl = sources()
    for i in range(5):
        one = beam_search_ids(model, src[i: i + 1], vl[i: i + 1], BOS, EOS, 1, 6, 0.0)
        four = beam_search_ids(model, src[i: i + 1], vl[i: i + 1], BOS, EOS, 4, 6, 0.0)
        cache = beam_search_ids(model, src[i: i + 1], vl[i: i + 1], BOS, EOS, 4, 6, 0.0,
                                use_cache=False)
        if one[3] and four[3]:  # both finished: the wider beam found at least as likely an output
            assert four[1] >= one[1] - 1e-5
        assert cache[0] == four[0] and cache[1] == pytest.approx(four[1], abs=1e-4)


def test_beam_search_errors():
    model = make("bahdanau")
    src, vl = sources()
    with pytest.raises(ValueError, match="beam_size"):
        beam_search_ids(model, src[:1], vl[:1], BOS, EOS, 0, 5)
    with pytest.raises(ValueError, match=r"src must be \(1, steps\)"):
        beam_search_ids(model, src, vl, BOS, EOS, 2, 5)
