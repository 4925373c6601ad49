"""Chapters 4-7: how good is a translation, and does attention look at the right words?

=================================  ===================================================
metric                             what it is for
=================================  ===================================================
:func:`bleu`                       d2l's sentence BLEU (k = 2), to compare with the book
:func:`corpus_bleu`                sacrebleu's corpus BLEU (0-100) on a held-out set
:func:`corpus_chrf`                sacrebleu's chrF (0-100), character n-grams
:func:`alignment_accuracy`         share of target tokens whose most-attended source
                                   token is one of their gold sources
:func:`alignment_error_rate`       Och & Ney's AER of the argmax links
:func:`teacher_forced_attention`   a trained model's cross-attention with the reference
                                   fed to the decoder, one matrix per pair
:func:`attention_alignment`        alignment accuracy of every cross-attention of a
                                   trained model on a corpus
=================================  ===================================================

Sentences are strings of tokens joined by single spaces (``"j'ai perdu ."``), as the
corpus in :mod:`attnlib.data` writes them. sacrebleu is called with ``tokenize='none'``:
the text is already tokenised, so BLEU counts exactly the tokens the model produced (its
default ``13a`` tokeniser would leave these strings unchanged anyway, but ``'none'`` makes
the unit explicit and independent of sacrebleu's tokeniser versions).
"""
from __future__ import annotations

import collections
import math
from collections.abc import Iterable, Sequence

import sacrebleu
import torch

from ._checks import check_float, check_tensor, module_device
from .data import Pair
from .recording import record_attention
from .training import check_compatible


def _check_sentence(name: str, s) -> list[str]:
    if not isinstance(s, str):
        raise TypeError(f"{name} must be a string of space-separated tokens, got {type(s).__name__}")
    if not s.strip():
        raise ValueError(f"{name} is an empty sentence")
    tokens = s.split(" ")
    if "" in tokens:
        raise ValueError(f"{name} has an empty token (two spaces in a row, or one at an end): "
                         f"separate tokens by single spaces, got {s!r}")
    return tokens


def bleu(pred_seq: str, label_seq: str, k: int = 2) -> float:
    """d2l's sentence BLEU: brevity penalty times the n-gram precisions ``p_n`` (n <= k)
    weighted by ``p_n ** (1 / 2**n)``, tokens split on single spaces (d2l 1.0.3 ``bleu``).

    An empty prediction (a model that emits ``<eos>`` first) scores 0; d2l would score it as
    the one token ``''``. An empty reference raises ``ValueError``.
    """
    label_tokens = _check_sentence("label_seq", label_seq)
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k (the longest n-gram) must be a positive int, got {k!r}")
    if isinstance(pred_seq, str) and not pred_seq.strip():
        return 0.0  # nothing matches, and the brevity penalty exp(1 - n / 0) is 0
    pred_tokens = _check_sentence("pred_seq", pred_seq)
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))  # brevity penalty
    for n in range(1, min(k, len_pred) + 1):
        label_subs = collections.Counter(
            " ".join(label_tokens[i:i + n]) for i in range(len_label - n + 1))
        num_matches = 0
        for i in range(len_pred - n + 1):
            gram = " ".join(pred_tokens[i:i + n])
            if label_subs[gram] > 0:  # clipped count: each label n-gram matches once
                num_matches += 1
                label_subs[gram] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score


def _check_corpus(hyps, refs) -> tuple[list[str], list[str]]:
    if isinstance(hyps, str) or isinstance(refs, str):
        raise TypeError("hyps and refs must be lists of sentences, not a single string")
    for name, x in (("hyps", hyps), ("refs", refs)):
        if not isinstance(x, Iterable):
            raise TypeError(f"{name} must be a list of sentences, got {type(x).__name__}")
    hyps, refs = list(hyps), list(refs)
    if len(hyps) != len(refs):
        raise ValueError(f"hyps and refs must have the same length, got {len(hyps)} and {len(refs)}")
    if not hyps:
        raise ValueError("hyps and refs are empty")
    for name, sents in (("hyps", hyps), ("refs", refs)):
        for i, s in enumerate(sents):
            if not isinstance(s, str):
                raise TypeError(f"{name}[{i}] must be a string, got {type(s).__name__}")
    for i, r in enumerate(refs):
        if not r.strip():
            raise ValueError(f"refs[{i}] is an empty sentence")
    return hyps, refs


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """sacrebleu corpus BLEU (0-100, 4-grams, exponential smoothing, ``tokenize='none'``),
    one reference per hypothesis. An empty hypothesis is allowed (it scores nothing).
    ``force=True`` only silences sacrebleu's warning that the text looks tokenised: it is,
    on purpose (see the module docstring); the score is unchanged."""
    hyps, refs = _check_corpus(hyps, refs)
    return sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", force=True).score


def corpus_chrf(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """sacrebleu chrF (0-100; character 6-grams, beta = 2), one reference per hypothesis."""
    hyps, refs = _check_corpus(hyps, refs)
    return sacrebleu.corpus_chrf(hyps, [refs]).score


# ----------------------------------------------------------------------------- alignment


def _argmax_links(weights: torch.Tensor, pair) -> tuple[list[int], list[set[int]]]:
    """Rows 0..len(tgt)-1 of ``weights`` -> the most-attended column of each, and the gold sets."""
    check_tensor("weights", weights, 2, "(target steps, source positions)")
    check_float("weights", weights)
    if not isinstance(pair, Pair):
        raise TypeError(f"pair must be a Pair (with src, tgt and align), got {type(pair).__name__}")
    n_tgt, n_src = len(pair.tgt), len(pair.src)
    if weights.shape[0] < n_tgt:
        raise ValueError(
            f"weights has {weights.shape[0]} rows but the gold target has {n_tgt} tokens: pass one "
            "row per target token (decode with teacher forcing on the gold target)")
    if weights.shape[1] < n_src:
        raise ValueError(f"weights has {weights.shape[1]} columns but the source has {n_src} tokens "
                         f"(shape {tuple(weights.shape)})")
    if not any(pair.align):
        raise ValueError(f"this pair has no gold alignment: {' '.join(pair.src)!r}")
    scored = weights[:n_tgt].float()  # (n_tgt, src positions)
    if bool(scored.isnan().any()):  # argmax would pick a NaN as the maximum
        raise ValueError(f"weights holds NaN in its first {n_tgt} rows (shape {tuple(weights.shape)}): "
                         "attention weights must be numbers")
    pred = scored.argmax(dim=1).tolist()  # (n_tgt,) most-attended column
    return pred, [set(a) for a in pair.align]


def alignment_accuracy(weights: torch.Tensor, pair) -> float:
    """Share of gold-aligned target tokens whose most-attended source position is gold.

    ``weights`` ``(target steps, source positions)``: row ``j`` holds the attention used to
    produce target token ``j`` when the decoder is fed the gold target (teacher forcing).
    Only rows ``j < len(pair.tgt)`` are scored (the extra ``<eos>`` row and any padding rows
    are ignored). The argmax runs over *all* columns: attending most to the source
    ``<eos>`` or to padding (columns ``>= len(pair.src)``) counts as wrong. Target tokens with
    an empty gold alignment are not scored.
    """
    correct, total = _alignment_counts(weights, pair)[:2]
    return correct / total


def _alignment_counts(weights, pair) -> tuple[int, int, int, int, int]:
    """(correct, scored, |A & G|, |A|, |G|) for one sentence."""
    pred, gold = _argmax_links(weights, pair)
    n_src = len(pair.src)
    scored = [j for j, g in enumerate(gold) if g]
    correct = sum(pred[j] in gold[j] for j in scored)
    links = {(j, i) for j, i in enumerate(pred) if i < n_src}  # A: argmax links to real tokens
    gold_links = {(j, i) for j, g in enumerate(gold) for i in g}  # G = S = P
    return correct, len(scored), len(links & gold_links), len(links), len(gold_links)


def alignment_error_rate(weights: torch.Tensor, pair) -> float:
    """Och & Ney's alignment error rate with sure = possible = gold links:
    ``AER = 1 - 2 |A & G| / (|A| + |G|)``, where ``A`` holds one link per target token
    (its most-attended source token; none when that is ``<eos>`` or padding). Rows as in
    :func:`alignment_accuracy`. 0 is perfect, 1 is entirely wrong."""
    _, _, hits, n_pred, n_gold = _alignment_counts(weights, pair)
    return 1 - 2 * hits / (n_pred + n_gold)


def _corpus_counts(weights_list, pairs):
    weights_list, pairs = list(weights_list), list(pairs)
    if len(weights_list) != len(pairs):
        raise ValueError(f"need one weight matrix per pair, got {len(weights_list)} matrices "
                         f"and {len(pairs)} pairs")
    if not pairs:
        raise ValueError("no pairs to score")
    return [sum(c) for c in zip(*(_alignment_counts(w, p) for w, p in zip(weights_list, pairs, strict=True)),
                                strict=True)]


def corpus_alignment_accuracy(weights_list: Sequence[torch.Tensor], pairs: Sequence) -> float:
    """:func:`alignment_accuracy` over a corpus, pooled over all scored target tokens."""
    correct, total, *_ = _corpus_counts(weights_list, pairs)
    return correct / total


def corpus_alignment_error_rate(weights_list: Sequence[torch.Tensor], pairs: Sequence) -> float:
    """:func:`alignment_error_rate` over a corpus, from link counts summed over sentences."""
    _, _, hits, n_pred, n_gold = _corpus_counts(weights_list, pairs)
    return 1 - 2 * hits / (n_pred + n_gold)


def teacher_forced_attention(model: torch.nn.Module, data, pairs: Sequence) -> dict[str, list]:
    """Each cross-attention's weights on ``pairs`` with the references fed to the decoder.

    Teacher forcing makes row ``j`` of a pair's ``(target steps, source steps)`` matrix the
    attention used to predict target token ``j``, which is what the gold alignment describes;
    heads are averaged. ``data`` (a :class:`attnlib.data.TranslationData`) turns the pairs into
    tensors. Returns one matrix per pair under each module name: ``'decoder.attention'`` for
    the RNN decoders, ``'decoder.blks.0.attention2'``, ... for the Transformer's layers.
    """
    check_compatible(model, data)
    if len(pairs) == 0:
        raise ValueError("pairs is empty: pass at least one pair")
    cross = model.decoder.cross_attentions()
    if not cross:
        raise ValueError(f"the model's decoder ({type(model.decoder).__name__}) has no "
                         "cross-attention to record")
    names = [name for name, module in model.named_modules() if module in cross]
    src, tgt_in, valid_len, _ = data.build(pairs, module_device(model))
    was_training = model.training
    model.eval()
    with torch.no_grad(), record_attention(model) as rec:
        model(src, tgt_in, valid_len)
    model.train(was_training)
    return {name: list(rec.stack(name).mean(dim=1).cpu()) for name in names}  # (tgt, src) each


def attention_alignment(model: torch.nn.Module, data, pairs: Sequence) -> dict[str, float]:
    """Alignment accuracy (%) of each cross-attention module of ``model`` on ``pairs``,
    from :func:`teacher_forced_attention`; pairs without a gold alignment are skipped."""
    pairs = [p for p in pairs if any(p.align)]
    if not pairs:
        raise ValueError("no pair has a gold alignment to score against")
    return {name: 100 * corpus_alignment_accuracy(weights, pairs)
            for name, weights in teacher_forced_attention(model, data, pairs).items()}
