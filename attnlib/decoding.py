"""Turning a trained encoder-decoder into translations: greedy search and beam search.

Both decode step by step: the decoder gets the last token and its state, returns the
scores of the next token, and the state carries what it needs (a GRU's hidden state,
or the Transformer's key/value cache). ``use_cache=False`` instead feeds the whole
prefix from a fresh state at every step, which must give the same output and is only
there to show (and test) that the cache is exact.

Attention comes back ready for heatmaps. ``Translation.attention`` is the decoder's
attention over the source, ``(layers, heads, target_steps, source_len)``: one row per
emitted target token (the step that emitted ``<eos>`` included) and one column per
source token (its ``<eos>`` included). RNN decoders have one layer and one head,
the Transformer one entry per decoder block and head (its encoder-decoder attention).
"""
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ._checks import check_bool, check_int, check_number, module_device
from .recording import record_attention
from .training import check_compatible, torch_threads


@dataclass
class Translation:
    """One decoded sentence.

    ``tokens``: the target tokens without ``<bos>``/``<eos>``; ``src_tokens``: the
    source tokens the model read, ``<eos>`` included; ``attention``:
    ``(layers, heads, target_steps, source_len)`` or ``None`` (no attention, or not
    asked for), rows labelled by ``target_labels``; ``score``: the sum of the
    log-probabilities of the emitted tokens (``<eos>`` included).
    """

    tokens: list[str]
    src_tokens: list[str]
    attention: torch.Tensor | None
    score: float
    finished: bool = True  # False when max_len stopped it before <eos>

    @property
    def sentence(self) -> str:
        return " ".join(self.tokens)

    @property
    def target_labels(self) -> list[str]:
        """Labels of the attention rows: the tokens, then ``<eos>`` if it was emitted."""
        return self.tokens + (["<eos>"] if self.finished else [])


def _cross_names(model: nn.Module) -> list[str]:
    """Recording names of the decoder's attention modules over the source."""
    wanted = {id(m) for m in model.decoder.cross_attentions()}
    return [name for name, m in model.named_modules() if id(m) in wanted]


def _recorder(model: nn.Module, need_weights: bool):
    if need_weights and _cross_names(model):
        return record_attention(model)
    return contextlib.nullcontext(None)


def _last_weights(rec, names) -> torch.Tensor | None:
    """The newest query row of every cross-attention: ``(batch, layers, heads, 1, src_steps)``."""
    if rec is None:
        return None
    return torch.stack([rec.last(n)[:, :, -1:, :] for n in names], dim=1)


def _token_ids(vocab, tokens: Sequence[str]) -> list[int]:
    return [vocab[t] for t in tokens]


def _encode_batch(data, sentences, device):
    """Source sentences (strings or token sequences) -> ``src (batch, steps)``, ``valid (batch,)``."""
    srcs, lens = [], []
    for s in sentences:
        src, valid = data.encode_src(s if isinstance(s, str) else " ".join(s))
        srcs.append(src)
        lens.append(valid)
    return torch.cat(srcs).to(device), torch.cat(lens).to(device)


def _specials(data) -> tuple[int, int, int]:
    v = data.tgt_vocab
    return v.bos, v.eos, v.pad


@torch.no_grad()
def greedy_search(model: nn.Module, src: torch.Tensor, src_valid_len: torch.Tensor, bos: int,
                  eos: int, max_len: int, *, use_cache: bool = True, need_weights: bool = True):
    """Batched greedy search on token ids: pick the most likely token at every step.

    Returns ``ids (batch, steps)`` (``<eos>`` and what follows it included; decoding
    stops once every row has emitted ``<eos>`` or after ``max_len`` steps), ``scores
    (batch,)`` (log-probability up to and including ``<eos>``), and the cross-attention
    ``(batch, layers, heads, steps, src_steps)`` or ``None``.
    """
    model.eval()
    b = src.shape[0]
    with _recorder(model, need_weights) as rec:
        enc_all = model.encoder(src, src_valid_len)
        state = model.decoder.init_state(enc_all, src_valid_len)
        names = _cross_names(model)
        ys = torch.full((b, 1), bos, dtype=torch.long, device=src.device)  # (batch, 1)
        done = torch.zeros(b, dtype=torch.bool, device=src.device)
        scores = torch.zeros(b, device=src.device)
        weights = []
        for _ in range(max_len):
            if use_cache:
                logits, state = model.decoder(ys[:, -1:], state)  # (batch, 1, vocab)
            else:
                logits, _ = model.decoder(ys, model.decoder.init_state(enc_all, src_valid_len))
            logp = logits[:, -1].log_softmax(-1)  # (batch, vocab)
            best, nxt = logp.max(-1)  # (batch,), (batch,)
            scores += torch.where(done, 0.0, best)
            nxt = torch.where(done, eos, nxt)
            ys = torch.cat((ys, nxt.unsqueeze(1)), dim=1)  # (batch, t + 2)
            w = _last_weights(rec, names)
            if w is not None:
                weights.append(w)  # (batch, layers, heads, 1, src_steps)
            done |= nxt == eos
            if bool(done.all()):
                break
    attention = torch.cat(weights, dim=3) if weights else None  # (batch, L, H, steps, src)
    return ys[:, 1:], scores, attention


def gnmt_length_penalty(length: int, alpha: float = 0.6) -> float:
    """GNMT's length penalty ``lp(Y) = ((5 + |Y|) / 6) ** alpha`` (Wu et al., 2016).

    Beam search ranks its finished hypotheses by ``log P(Y | X) / lp(Y)``; ``length`` is
    ``|Y|``, the tokens emitted, ``<eos>`` included. Every token multiplies a probability
    below 1 into ``P(Y | X)``, so the raw log-probability (``alpha = 0``, ``lp = 1``) favours
    short outputs. ``lp`` is 1 for one token and grows with the length, so dividing the
    (negative) log-probability by it lifts long hypotheses, the more the larger ``alpha``;
    the Transformer paper decodes with ``alpha = 0.6``, attnlib's default.
    """
    check_int("length", length)
    check_number("alpha", alpha)
    return ((5 + length) / 6) ** alpha


@torch.no_grad()
def beam_search_ids(model: nn.Module, src: torch.Tensor, src_valid_len: torch.Tensor, bos: int,
                    eos: int, beam_size: int, max_len: int, length_penalty: float = 0.6, *,
                    use_cache: bool = True, need_weights: bool = True):
    """Beam search for ONE source sentence (``src (1, steps)``); returns the best hypothesis.

    Every step extends each live prefix by every token and keeps the ``beam_size``
    extensions with the highest log-probability ``log P(prefix | src)``. An extension
    that ends in ``<eos>`` is set aside as finished and the beam shrinks by one, so
    exactly ``beam_size`` hypotheses finish (or ``max_len`` stops the rest). The winner
    is the hypothesis ``Y`` with the highest ``log P(Y | src) / lp(Y)``, where ``lp`` is
    :func:`gnmt_length_penalty` with ``alpha = length_penalty`` (0: the raw
    log-probability; larger favours longer output); the penalty ranks the finished
    hypotheses only, the search itself keeps the most likely prefixes. With
    ``beam_size=1`` this is greedy search.
    Returns ``(ids list (<eos> included when it finished), log P, attention (layers, heads,
    steps, src_steps) or None, finished)``.
    """
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive int, got {beam_size!r}")
    if src.shape[0] != 1:
        raise ValueError(f"beam_search_ids decodes one sentence: src must be (1, steps), "
                         f"got {tuple(src.shape)}")
    model.eval()
    dec = model.decoder
    with _recorder(model, need_weights) as rec:
        enc_all = model.encoder(src, src_valid_len)
        state = dec.init_state(enc_all, src_valid_len)
        names = _cross_names(model)
        ys = torch.full((1, 1), bos, dtype=torch.long, device=src.device)  # (alive, t + 1)
        scores = torch.zeros(1, device=src.device)  # (alive,)
        attn = None  # (alive, layers, heads, t, src_steps)
        finished = []  # (ids, log p, attention, reached <eos>)
        for _ in range(max_len):
            if use_cache:
                logits, state = dec(ys[:, -1:], state)  # (alive, 1, vocab)
            else:  # no cache: a fresh state for every prefix, which is fed whole
                fresh = dec.reorder_state(dec.init_state(enc_all, src_valid_len),
                                          torch.zeros(ys.shape[0], dtype=torch.long, device=src.device))
                logits, _ = dec(ys, fresh)  # (alive, t + 1, vocab)
            # every extension of every prefix: log P(prefix) + log p(token | prefix)
            logp = scores[:, None] + logits[:, -1].log_softmax(-1)  # (alive, vocab)
            w = _last_weights(rec, names)  # (alive, layers, heads, 1, src_steps)
            if w is not None:
                attn = w if attn is None else torch.cat((attn, w), dim=3)
            width = beam_size - len(finished)  # the beam shrinks as hypotheses finish
            top, flat = logp.flatten().topk(width)  # the best extensions, (width,)
            parent, token = flat // logp.shape[1], flat % logp.shape[1]  # (width,)
            keep = []  # the extensions that go on; those ending in <eos> are finished
            for j in range(width):
                if int(token[j]) == eos:
                    finished.append((ys[parent[j], 1:].tolist() + [eos], float(top[j]),
                                     None if attn is None else attn[parent[j]], True))
                else:
                    keep.append(j)
            if not keep:
                break
            keep = torch.tensor(keep, device=src.device)
            parent = parent[keep]
            ys = torch.cat((ys[parent], token[keep].unsqueeze(1)), dim=1)  # (alive, t + 2)
            scores = top[keep]
            attn = None if attn is None else attn[parent]
            if use_cache:
                state = dec.reorder_state(state, parent)
        else:
            for i in range(ys.shape[0]):  # max_len reached: the survivors end unfinished
                finished.append((ys[i, 1:].tolist(), float(scores[i]),
                                 None if attn is None else attn[i], False))

    def normalised(h):  # log P(Y | src) / lp(Y), |Y| counting <eos> when it was emitted
        return h[1] / gnmt_length_penalty(len(h[0]), length_penalty)

    return max(finished, key=normalised)


def _as_list(sentences) -> tuple[list, bool]:
    """A single sentence (a string, or a tuple/list of token strings) or a list of them."""
    if isinstance(sentences, str):
        return [sentences], True
    if not isinstance(sentences, Sequence):
        raise TypeError("sentences must be a sentence or a list of sentences, got "
                        f"{type(sentences).__name__}")
    if sentences and all(isinstance(t, str) for t in sentences) and not isinstance(sentences, list):
        return [sentences], True  # a tuple of tokens
    if not sentences:
        raise ValueError(f"expected a sentence or a non-empty list of sentences, got {sentences!r}")
    for i, s in enumerate(sentences):
        if not (isinstance(s, str) or isinstance(s, Sequence) and all(isinstance(t, str) for t in s)):
            raise TypeError(f"sentences[{i}] must be a sentence (a string or a list of tokens), got "
                            f"{type(s).__name__} {s!r}")
    return list(sentences), False


def _setup(model, data, sentences, max_len, **flags) -> tuple[list, bool, int, torch.device]:
    """Check the arguments every decoding function shares (``flags``: bools); the model's device."""
    check_compatible(model, data)
    for name, flag in flags.items():
        check_bool(name, flag)
    if max_len is not None and (not isinstance(max_len, int) or isinstance(max_len, bool)
                                or max_len < 1):
        raise ValueError(f"max_len must be a positive int or None, got {max_len!r}")
    items, single = _as_list(sentences)
    device = module_device(model)
    return items, single, max_len or data.num_steps, device


def _translation(data, src_row, valid, ids, score, attention, finished) -> Translation:
    n = int(valid)
    src_tokens = data.src_vocab.to_tokens(src_row[:n].tolist())
    eos = data.tgt_vocab.eos
    body = ids[: ids.index(eos)] if eos in ids else ids
    tokens = data.tgt_vocab.to_tokens(body)
    if attention is not None:
        rows = len(body) + (1 if finished else 0)
        attention = attention[:, :, :rows, :n].cpu()  # (layers, heads, target_steps, source_len)
    return Translation(list(tokens), list(src_tokens), attention, float(score), finished)


def greedy_decode(model: nn.Module, data, sentences, max_len: int | None = None, *,
                  use_cache: bool = True, need_weights: bool = True, batch_size: int = 512):
    """Translate a sentence (or a list of them) greedily, in batches.

    ``data`` provides the vocabularies and ``encode_src`` (a ``TranslationData``);
    ``max_len`` defaults to ``data.num_steps``. Returns a :class:`Translation` for one
    sentence, a list of them for a list. ``need_weights=False`` skips the attention
    weights (faster: the fused attention kernels stay on).
    """
    items, single, max_len, device = _setup(model, data, sentences, max_len, use_cache=use_cache,
                                            need_weights=need_weights)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    bos, eos, _ = _specials(data)
    out = []
    for start in range(0, len(items), batch_size):
        src, valid = _encode_batch(data, items[start: start + batch_size], device)
        with torch_threads(1, device):  # tiny steps: one thread is fastest (see attnlib.training)
            ids, scores, attention = greedy_search(model, src, valid, bos, eos, max_len,
                                                   use_cache=use_cache, need_weights=need_weights)
        for i in range(src.shape[0]):
            row = ids[i].tolist()
            out.append(_translation(data, src[i], valid[i], row, scores[i],
                                    None if attention is None else attention[i], eos in row))
    return out[0] if single else out


def beam_search(model: nn.Module, data, sentences, beam_size: int = 4, max_len: int | None = None,
                length_penalty: float = 0.6, *, use_cache: bool = True, need_weights: bool = True):
    """Translate with beam search (see :func:`beam_search_ids`); returns like :func:`greedy_decode`."""
    items, single, max_len, device = _setup(model, data, sentences, max_len, use_cache=use_cache,
                                            need_weights=need_weights)
    if not isinstance(beam_size, int) or isinstance(beam_size, bool) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive int, got {beam_size!r}")
    check_number("length_penalty", length_penalty)
    bos, eos, _ = _specials(data)
    out = []
    for item in items:
        src, valid = _encode_batch(data, [item], device)
        with torch_threads(1, device):
            ids, score, attention, finished = beam_search_ids(
                model, src, valid, bos, eos, beam_size, max_len, length_penalty,
                use_cache=use_cache, need_weights=need_weights)
        out.append(_translation(data, src[0], valid[0], ids, score, attention, finished))
    return out[0] if single else out


def translate(model: nn.Module, data, sentences, max_len: int | None = None,
              batch_size: int = 512) -> list[str]:
    """Greedy translations of many sentences as strings, without weights (for BLEU)."""
    items, _ = _as_list(sentences)
    return [t.sentence for t in greedy_decode(model, data, items, max_len, need_weights=False,
                                              batch_size=batch_size)]
