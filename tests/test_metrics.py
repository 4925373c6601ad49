"""attnlib.metrics: d2l's BLEU, sacrebleu's corpus BLEU / chrF, attention alignment scores."""
from __future__ import annotations

import math

import pytest
import sacrebleu
import torch

from attnlib.data import Pair
from attnlib.metrics import (
    alignment_accuracy,
    alignment_error_rate,
    attention_alignment,
    bleu,
    corpus_alignment_accuracy,
    corpus_alignment_error_rate,
    corpus_bleu,
    corpus_chrf,
    teacher_forced_attention,
)

BLEU_CASES = [
    ("va !", "va !", 2),
    ("j'ai perdu .", "j'ai perdu .", 2),
    ("il est bien .", "il est calme .", 2),
    ("je suis chez moi .", "je suis chez moi .", 3),
    ("je suis .", "je suis chez moi .", 2),           # brevity penalty
    ("la la la la", "la voiture rouge", 2),            # clipped counts
    ("rouge voiture la", "la voiture rouge", 2),       # no bigram matches
    ("a", "a b c", 4),                                 # k > len(pred)
    ("le chien rouge voit le chat .", "le chien voit le chat rouge .", 4),
]


@pytest.fixture(scope="module")
def d2l():
    from d2l import torch as d2l  # slow (~14 s): only here

    return d2l


@pytest.mark.parametrize("pred,label,k", BLEU_CASES)
def test_bleu_equals_d2l(d2l, pred, label, k):
    assert bleu(pred, label, k) == pytest.approx(d2l.bleu(pred, label, k), abs=1e-12)


def test_bleu_by_hand():
    assert bleu("va !", "va !") == 1.0
    # "je suis ." vs "je suis chez moi .": BP = exp(1 - 5/3), p1 = 3/3, p2 = 1/2
    assert bleu("je suis .", "je suis chez moi .") == pytest.approx(
        math.exp(1 - 5 / 3) * 1 ** 0.5 * (1 / 2) ** 0.25)
    assert bleu("rouge voiture la", "la voiture rouge") == 0.0
    assert bleu("la la la la", "la voiture rouge", k=1) == pytest.approx((1 / 4) ** 0.5)


def test_an_empty_prediction_scores_zero_but_its_reference_is_still_checked():
    assert bleu("", "va !") == 0.0 and bleu(" ", "va !", k=4) == 0.0
    with pytest.raises(ValueError, match="label_seq is an empty sentence"):
        bleu("", "")
    with pytest.raises(ValueError, match="k "):
        bleu("", "va !", k=0)


def test_bleu_errors():
    with pytest.raises(ValueError, match="label_seq"):
        bleu("va !", "  ")
    with pytest.raises(TypeError, match="pred_seq must be a string"):
        bleu(["va", "!"], "va !")
    with pytest.raises(ValueError, match="k "):
        bleu("va !", "va !", k=0)


HYPS = ["j'ai perdu .", "il est calme ."]
REFS = ["j'ai perdu .", "il est très calme ."]


def test_corpus_bleu_values():
    refs = ["le chien voit le chat .", "je suis chez moi .", "elle a perdu ."]
    assert corpus_bleu(refs, refs) == pytest.approx(100.0)
    # by hand: 7 hypothesis tokens, 8 reference tokens; matches 7/7, 4/5, 1/3 and 0/1
    # (sacrebleu's exp smoothing turns the first zero into 1/2)
    expected = 100 * math.exp(1 - 8 / 7) * (1 * 4 / 5 * 1 / 3 * 1 / 2) ** 0.25
    assert corpus_bleu(HYPS, REFS) == pytest.approx(expected, abs=1e-9)
    assert corpus_bleu(HYPS, REFS) == sacrebleu.corpus_bleu(HYPS, [REFS], tokenize="none").score
    assert corpus_bleu(["x y z w"], ["a b c d"]) == 0.0
    assert corpus_bleu(["", "il est calme ."], REFS) < corpus_bleu(HYPS, REFS)  # empty hyp allowed


def test_corpus_bleu_keeps_our_tokens():
    # tokenize='none': "j'ai" is one token, so a wrong elision costs a whole token
    assert corpus_bleu(["je ai perdu le livre ."], ["j'ai perdu le livre ."]) == pytest.approx(
        sacrebleu.corpus_bleu(["je ai perdu le livre ."], [["j'ai perdu le livre ."]],
                              tokenize="none").score)


def test_corpus_chrf_values():
    assert corpus_chrf(REFS, REFS) == pytest.approx(100.0)
    assert corpus_chrf(HYPS, REFS) == sacrebleu.corpus_chrf(HYPS, [REFS]).score
    assert 0 < corpus_chrf(HYPS, REFS) < 100
    assert corpus_chrf(["xyz"], ["abc"]) == 0.0


def test_corpus_errors():
    with pytest.raises(ValueError, match="same length, got 2 and 1"):
        corpus_bleu(HYPS, REFS[:1])
    with pytest.raises(ValueError, match="empty"):
        corpus_chrf([], [])
    with pytest.raises(TypeError, match="not a single string"):
        corpus_bleu("va !", "va !")
    with pytest.raises(ValueError, match=r"refs\[1\] is an empty sentence"):
        corpus_bleu(HYPS, ["j'ai perdu .", ""])
    with pytest.raises(TypeError, match=r"hyps\[0\]"):
        corpus_chrf([["va", "!"]], ["va !"])


# ---------------------------------------------------------------- alignment

# "the red car ." -> "la voiture rouge ." with crossing links
PAIR = Pair(("the", "red", "car", "."), ("la", "voiture", "rouge", "."), ((0,), (2,), (1,), (3,)))


def _onehot(cols, n_cols=5):
    """One row per target step (+ an <eos> step), all weight on ``cols[j]``."""
    w = torch.full((len(cols), n_cols), 0.01)
    w[torch.arange(len(cols)), torch.tensor(cols)] = 1.0
    return w / w.sum(1, keepdim=True)


def test_perfect_alignment():
    w = _onehot([0, 2, 1, 3, 4])  # rows: la voiture rouge . <eos>; cols: src + <eos>
    assert alignment_accuracy(w, PAIR) == 1.0
    assert alignment_error_rate(w, PAIR) == 0.0


def test_diagonal_attention_misses_the_crossing():
    w = _onehot([0, 1, 2, 3, 4])  # monotone: voiture->red, rouge->car
    assert alignment_accuracy(w, PAIR) == 2 / 4
    # A = {(0,0),(1,1),(2,2),(3,3)}, G = {(0,0),(1,2),(2,1),(3,3)}: AER = 1 - 2*2/(4+4)
    assert alignment_error_rate(w, PAIR) == pytest.approx(0.5)


def test_eos_column_counts_as_wrong_and_eos_row_is_ignored():
    w = _onehot([0, 2, 4, 3, 0])  # "rouge" looks at the source <eos>; the <eos> row is ignored
    assert alignment_accuracy(w, PAIR) == 3 / 4
    # A has no link for "rouge": |A| = 3, |A & G| = 3, |G| = 4 -> 1 - 6/7
    assert alignment_error_rate(w, PAIR) == pytest.approx(1 - 6 / 7)
    padded = torch.cat([_onehot([0, 2, 1, 3, 4], 8), torch.zeros(3, 8)])  # num_steps rows/cols
    assert alignment_accuracy(padded, PAIR) == 1.0


def test_one_to_many_gold_and_unaligned_tokens():
    pair = Pair(("i'm", "home", "."), ("je", "suis", "chez", "moi", "x", "."),
                ((0,), (0,), (1,), (1,), (), (2,)))
    w = _onehot([0, 0, 1, 0, 2, 2, 3], 4)
    assert alignment_accuracy(w, pair) == 4 / 5  # "moi" looks at i'm; "x" is not scored
    # A = 6 links (incl. x->'.'), G = 5 links, A & G = 4
    assert alignment_error_rate(w, pair) == pytest.approx(1 - 8 / 11)


def test_corpus_alignment_pools_tokens():
    other = Pair(("go", "."), ("va", "!"), ((0,), (1,)))
    ws = [_onehot([0, 1, 2, 3, 4]), _onehot([0, 1, 2])]
    assert corpus_alignment_accuracy(ws, [PAIR, other]) == pytest.approx(4 / 6)
    # hits 2 + 2, |A| 4 + 2, |G| 4 + 2
    assert corpus_alignment_error_rate(ws, [PAIR, other]) == pytest.approx(1 - 8 / 12)


def test_alignment_errors():
    w = _onehot([0, 2, 1, 3, 4])
    with pytest.raises(ValueError, match="teacher forcing"):
        alignment_accuracy(w[:3], PAIR)
    with pytest.raises(ValueError, match="columns but the source has 4"):
        alignment_error_rate(w[:, :3], PAIR)
    with pytest.raises(ValueError, match="2-D"):
        alignment_accuracy(w[None], PAIR)
    with pytest.raises(TypeError, match="torch.Tensor"):
        alignment_accuracy(w.tolist(), PAIR)
    no_gold = Pair(("go", "."), ("va", "!"), ((), ()))
    with pytest.raises(ValueError, match="no gold alignment"):
        alignment_accuracy(_onehot([0, 1, 2]), no_gold)
    with pytest.raises(ValueError, match="one weight matrix per pair"):
        corpus_alignment_accuracy([w], [PAIR, PAIR])
    with pytest.raises(ValueError, match="no pairs"):
        corpus_alignment_error_rate([], [])


def test_attention_alignment_scores_every_cross_attention_layer():
    """Teacher-forced, heads averaged, one score per decoder layer; unaligned pairs are skipped."""
    from attnlib import record_attention
    from attnlib.data import TranslationData
    from attnlib.presets import build_model

    data = TranslationData(batch_size=16, num_steps=24, num_pairs=200, seed=0)
    torch.manual_seed(0)
    model = build_model("transformer", data, num_blks=2).train()
    unaligned = Pair(data.test[0].src, data.test[0].tgt, ((),) * len(data.test[0].tgt))
    scores = attention_alignment(model, data, [unaligned, *data.test])
    assert list(scores) == ["decoder.blks.0.attention2", "decoder.blks.1.attention2"]
    assert model.training  # the mode is restored
    src, tgt_in, valid, _ = data.build(data.test)
    model.eval()
    with torch.no_grad(), record_attention(model) as rec:
        model(src, tgt_in, valid)
    forced = teacher_forced_attention(model, data, [unaligned, *data.test])  # one per pair
    for name, score in scores.items():
        weights = rec.stack(name).mean(dim=1)  # (pairs, target steps, source steps)
        assert score == pytest.approx(100 * corpus_alignment_accuracy(list(weights), data.test))
        assert len(forced[name]) == len(data.test) + 1
        torch.testing.assert_close(torch.stack(forced[name][1:]), weights)
    with pytest.raises(ValueError, match="no pair has a gold alignment"):
        attention_alignment(model, data, [unaligned])
