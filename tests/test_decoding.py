"""Greedy and beam search: cache == no cache, beam 1 == greedy, attention shapes, errors."""
import pytest
import torch

from attnlib.decoding import beam_search_ids, gnmt_length_penalty, greedy_search
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


def test_gnmt_length_penalty_is_the_formula():
    assert gnmt_length_penalty(1, 0.6) == pytest.approx(1.0)  # one token: no penalty
    assert gnmt_length_penalty(7, 0.6) == pytest.approx(2 ** 0.6)  # (5 + 7) / 6 = 2
    assert gnmt_length_penalty(3, 0.0) == 1.0  # alpha 0: the raw log-probability
    assert gnmt_length_penalty(3, 1.0) == pytest.approx(8 / 6)
    with pytest.raises(ValueError, match="length must be a positive int"):
        gnmt_length_penalty(0, 0.6)
    with pytest.raises(TypeError, match="length must be an int"):
        gnmt_length_penalty(2.0, 0.6)
    with pytest.raises(ValueError, match="alpha must be a finite number"):
        gnmt_length_penalty(2, float("nan"))


# A made-up model whose next-token probabilities are a table, so that every complete output and
# its probability can be listed: ids 0 <bos>, 1 <eos>, 2 A, 3 B (the worked example of chapter 7).
TABLE = {(): {2: 0.42, 3: 0.33, 1: 0.25}, (2,): {2: 0.3, 3: 0.3, 1: 0.4},
         (3,): {2: 0.8, 3: 0.1, 1: 0.1}, (3, 2): {2: 0.2, 1: 0.8}}


class TableDecoder(torch.nn.Module):
    def init_state(self, enc_outputs, *args):
        return torch.zeros(enc_outputs.shape[0], 0, dtype=torch.long)

    def forward(self, X, state):
        fed = torch.cat((state, X), dim=1)
        logits = torch.full((*X.shape, 4), -float("inf"))
        for b in range(X.shape[0]):
            for j in range(X.shape[1]):
                emitted = tuple(fed[b, 1: state.shape[1] + j + 1].tolist())
                for token, p in TABLE.get(emitted, {1: 1.0}).items():
                    logits[b, j, token] = torch.tensor(p).log()
        return logits, fed

    def reorder_state(self, state, index):
        return state[index]

    def cross_attentions(self):
        return []


class TableModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = TableDecoder()

    def encoder(self, src, valid_len):
        return torch.zeros(src.shape[0], 1, 1)


def table_outputs(emitted=(), p=1.0):
    for token, q in TABLE.get(emitted, {1: 1.0}).items():
        if token == 1:
            yield [*emitted, 1], p * q
        else:
            yield from table_outputs((*emitted, token), p * q)


@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_a_wide_beam_returns_the_best_scored_output_with_the_length_penalty(alpha, use_cache):
    """With a beam as wide as the table, beam search returns the output with the highest
    log P / lp, as exhaustive search finds it: the empty output for alpha 0, a longer one after."""
    import math
    outputs = list(table_outputs())
    best = max(outputs, key=lambda o: math.log(o[1]) / gnmt_length_penalty(len(o[0]), alpha))
    ids, log_p, _, finished = beam_search_ids(TableModel(), torch.zeros(1, 1, dtype=torch.long),
                                              torch.ones(1), 0, 1, 3, 4, alpha,
                                              use_cache=use_cache, need_weights=False)
    assert (ids, finished) == (best[0], True)
    assert math.exp(log_p) == pytest.approx(best[1], abs=1e-6)
    assert ids == ([1] if alpha == 0.0 else [3, 2, 1])  # the penalty changes the winner


def test_beam_search_finds_a_more_probable_output_than_greedy_search():
    model, src, one = TableModel(), torch.zeros(1, 1, dtype=torch.long), torch.ones(1)
    greedy, greedy_log_p, _, _ = beam_search_ids(model, src, one, 0, 1, 1, 4, need_weights=False)
    beam, beam_log_p, _, _ = beam_search_ids(model, src, one, 0, 1, 2, 4, need_weights=False)
    assert (greedy, beam) == ([2, 1], [3, 2, 1])  # A <eos> against B A <eos>
    assert beam_log_p > greedy_log_p
