"""Chapter 8: a decoder-only (GPT-style) language model, sampling, and an n-gram baseline.

A decoder-only model is chapter 7's encoder block with one change: the self-attention is
*causal*, so position ``t`` sees positions ``0 .. t`` only and the output at ``t`` can be
trained to predict token ``t + 1``. There is no encoder and no cross-attention. With a
:class:`KVCache` per block, generation feeds one new token per call and never recomputes
the prefix.

* :class:`CausalBlock`, :class:`DecoderOnlyLM`: the model (learned positions, pre-LN);
* :func:`sample`: temperature and top-k sampling, through the cache or without it;
* :func:`char_sentences`, :func:`split_sentences`, :func:`encode_batch`: character-level
  data from the English (or French) side of the Tatoeba pairs, split by distinct sentence;
* :func:`lm_nll`, :func:`perplexity`: held-out cross-entropy of a model;
* :class:`NGramLM`: an add-k smoothed character n-gram model, the baseline to beat.
"""
from __future__ import annotations

import collections
import math
import random
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_bool, check_int, check_number, check_positive, check_tensor, module_device
from .data import TATOEBA_FRA_ENG, Vocab, _preprocess
from .multihead import KVCache
from .positional import LearnedPositionalEmbedding
from .seq2seq import check_sizes, check_token_ids
from .transformer import TransformerEncoderBlock, _embed, _token_embedding


class CausalBlock(TransformerEncoderBlock):
    """Chapter 7's encoder block with causal self-attention: a GPT block.

    ``forward(X (batch, steps, num_hiddens), cache=None)`` returns the same shape; output
    ``t`` depends on inputs ``0 .. t`` only. ``cache`` (a :class:`KVCache`) holds the keys
    and values of the positions fed before, so a call with the next tokens only gives the
    same result as a call with the whole sequence.
    """

    def forward(self, X: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        check_tensor("X", X, 3, f"(batch, steps, {self.attention.num_hiddens})")
        Y = self.addnorm1.residual(X, lambda x: self.attention(x, x, x, causal=True, cache=cache))
        return self.addnorm2.residual(Y, self.ffn)  # (batch, steps, num_hiddens)


class DecoderOnlyLM(nn.Module):
    """Token embedding, learned positions, ``num_blks`` :class:`CausalBlock` s, LayerNorm, linear.

    ``forward(X (batch, steps), caches=None) -> logits (batch, steps, vocab_size)``;
    ``logits[:, t]`` scores token ``t + 1``. ``caches`` (from :meth:`init_caches`) makes
    incremental decoding exact: positions continue from the number of tokens cached.
    Pre-LN, as in GPT-2, trains without a warm-up.
    """

    def __init__(self, vocab_size: int, num_hiddens: int = 64, ffn_num_hiddens: int = 128,
                 num_heads: int = 4, num_blks: int = 2, dropout: float = 0.0,
                 max_len: int = 128) -> None:
        super().__init__()
        check_sizes(dropout, vocab_size=vocab_size, num_hiddens=num_hiddens,
                    ffn_num_hiddens=ffn_num_hiddens, num_heads=num_heads, num_blks=num_blks,
                    max_len=max_len)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.embedding = _token_embedding(vocab_size, num_hiddens)
        self.pos_embedding = LearnedPositionalEmbedding(num_hiddens, dropout, max_len)
        nn.init.normal_(self.pos_embedding.embedding.weight, std=0.02)
        self.blks = nn.ModuleList(
            CausalBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, pre_norm=True)
            for _ in range(num_blks))
        self.ln = nn.LayerNorm(num_hiddens)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_caches(self) -> list[KVCache]:
        """One empty key/value cache per block."""
        return [KVCache() for _ in self.blks]

    def forward(self, X: torch.Tensor, caches: list[KVCache] | None = None) -> torch.Tensor:
        check_token_ids("X", X, self.vocab_size, module_device(self))
        if caches is not None:
            check_caches(caches, len(self.blks))
        offset = len(caches[0]) if caches else 0  # tokens already cached
        H = _embed(self.embedding, self.pos_embedding, X, offset)  # (batch, steps, num_hiddens)
        for i, blk in enumerate(self.blks):
            H = blk(H, None if caches is None else caches[i])  # (batch, steps, num_hiddens)
        return self.dense(self.ln(H))  # (batch, steps, vocab_size)


def check_caches(caches, num_blks: int) -> None:
    """``caches``: one self-attention :class:`KVCache` (not static) per block, as ``init_caches``."""
    if not isinstance(caches, (list, tuple)):
        raise TypeError(f"caches must be a list of KVCache (model.init_caches()) or None, got "
                        f"{type(caches).__name__}")
    if len(caches) != num_blks:
        raise ValueError(f"caches must hold one KVCache per block ({num_blks}), got {len(caches)}")
    for i, c in enumerate(caches):
        if not isinstance(c, KVCache):
            raise TypeError(f"caches[{i}] must be a KVCache, got {type(c).__name__}: build the caches "
                            "with model.init_caches()")
        if c.static:
            raise ValueError(f"caches[{i}] is a static KVCache (for encoder-decoder attention), which "
                             "never grows: build the caches with model.init_caches()")


def next_token_probs(logits: torch.Tensor, temperature: float = 1.0,
                     top_k: int | None = None) -> torch.Tensor:
    """The distribution sampling draws from: ``softmax(logits / temperature)`` over the ``top_k``
    largest logits of each row (``None``: all), 0 elsewhere. ``logits (batch, vocab)``."""
    check_tensor("logits", logits, 2, "(batch, vocab)")
    check_positive("temperature", temperature)
    if top_k is not None:
        check_int("top_k", top_k)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (batch, 1): the k-th largest
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return logits.softmax(-1)  # (batch, vocab)


def _next_token(logits: torch.Tensor, temperature: float, top_k: int | None,
                generator: torch.Generator | None) -> torch.Tensor:
    """Draw one token per row from ``logits (batch, vocab)``; ``temperature=0`` is greedy."""
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)  # (batch, 1)
    probs = next_token_probs(logits, temperature, top_k)  # (batch, vocab)
    return torch.multinomial(probs, 1, generator=generator)  # (batch, 1)


def _check_sample_args(model, prompt, num_new, temperature, top_k, use_cache, stop) -> None:
    """Every argument of :func:`sample` is what it says, or a clear error naming it (before any
    token is generated): a :class:`DecoderOnlyLM`, ids of its vocabulary on its device, a
    temperature >= 0, a positive ``top_k``, a ``stop`` id of the vocabulary, and a prompt plus
    ``num_new`` tokens that fit ``max_len``."""
    if not isinstance(model, DecoderOnlyLM):
        raise TypeError(f"model must be a DecoderOnlyLM, got {type(model).__name__}")
    check_token_ids("prompt", prompt, model.vocab_size, module_device(model))
    check_int("num_new", num_new, minimum=0)
    check_number("temperature", temperature)
    if temperature < 0:
        raise ValueError(f"temperature must be a number >= 0 (0: greedy), got {temperature!r}")
    if top_k is not None:
        check_int("top_k", top_k)
    check_bool("use_cache", use_cache)
    if stop is not None and (not isinstance(stop, int) or isinstance(stop, bool)
                             or not 0 <= stop < model.vocab_size):
        raise ValueError(f"stop must be None or a token id in [0, {model.vocab_size - 1}], "
                         f"got {stop!r}")
    if prompt.shape[1] + num_new > model.max_len:
        raise ValueError(f"prompt of {prompt.shape[1]} tokens + num_new={num_new} exceeds the "
                         f"model's max_len={model.max_len}")


@torch.no_grad()
def sample(model: DecoderOnlyLM, prompt: torch.Tensor, num_new: int, temperature: float = 1.0,
           top_k: int | None = None, generator: torch.Generator | None = None,
           use_cache: bool = True, stop: int | None = None) -> torch.Tensor:
    """Extend ``prompt (batch, steps)`` by up to ``num_new`` sampled tokens; return all ids.

    The logits are divided by ``temperature`` (below 1: sharper, above 1: flatter; 0 picks the
    arg-max), then only the ``top_k`` largest are kept. With ``use_cache`` each step feeds the
    newest token alone and reuses every block's cached keys and values; without it each step
    reruns the whole sequence. Both give the same tokens for the same ``generator`` state.
    Generation stops early once every row has produced ``stop`` (rows that stopped keep it).
    """
    _check_sample_args(model, prompt, num_new, temperature, top_k, use_cache, stop)
    model.eval()
    ys = prompt
    caches = model.init_caches() if use_cache else None
    logits = model(ys, caches)[:, -1]  # (batch, vocab): the prompt, once
    done = torch.zeros(ys.shape[0], 1, dtype=torch.bool, device=ys.device)  # (batch, 1): stopped
    for _ in range(num_new):
        nxt = _next_token(logits, temperature, top_k, generator)  # (batch, 1)
        if stop is not None:  # a row that has stopped keeps emitting stop
            nxt = nxt.masked_fill(done, stop)
            done = done | (nxt == stop)
        ys = torch.cat([ys, nxt], dim=1)  # (batch, steps + 1)
        if stop is not None and bool(done.all()):
            break
        logits = (model(nxt, caches) if use_cache else model(ys))[:, -1]  # (batch, vocab)
    return ys


# --- data: characters of real sentences -----------------------------------------------------

def char_sentences(side: str = "en", path=TATOEBA_FRA_ENG, max_chars: int | None = None) -> list[str]:
    """The distinct sentences of one side (``"en"`` or ``"fr"``) of a ``fra.txt`` file, in
    file order, lowercased and with a space before ``, . ! ?`` as chapter 4's data;
    sentences longer than ``max_chars`` are left out."""
    if side not in ("en", "fr"):
        raise ValueError(f"side must be 'en' or 'fr', got {side!r}")
    column = 0 if side == "en" else 1
    seen: dict[str, None] = {}
    with Path(path).open(encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) < 2:
                continue
            text = _preprocess(parts[column]).strip()
            if text and (max_chars is None or len(text) <= max_chars):
                seen.setdefault(text, None)
    return list(seen)


def split_sentences(sentences: Sequence[str], val_frac: float = 0.1, seed: int = 0
                    ) -> tuple[list[str], list[str]]:
    """Shuffle distinct sentences (seeded) and split them: no held-out sentence is in training."""
    if not 0 < val_frac < 1:
        raise ValueError(f"val_frac must be in (0, 1), got {val_frac!r}")
    unique = list(dict.fromkeys(sentences))
    random.Random(seed).shuffle(unique)
    n_val = max(1, round(len(unique) * val_frac))
    return unique[n_val:], unique[:n_val]


def char_vocab(sentences: Sequence[str]) -> Vocab:
    """A character vocabulary (``<pad> <bos> <eos> <unk>`` first) of ``sentences``."""
    return Vocab([list(s) for s in sentences])


def encode_batch(sentences: Sequence[str], vocab: Vocab) -> torch.Tensor:
    """``<bos> chars <eos>`` of each sentence, right-padded with ``<pad>``: ``(batch, longest + 2)``.

    Feed ``batch[:, :-1]`` and predict ``batch[:, 1:]``; padding comes only after a sentence
    ends, so with a causal mask no real position ever sees it.
    """
    _check_sentences(sentences, nonempty=True)
    ids = [[vocab.bos] + vocab[list(s)] + [vocab.eos] for s in sentences]
    width = max(len(x) for x in ids)
    return torch.tensor([x + [vocab.pad] * (width - len(x)) for x in ids])  # (batch, width)


@torch.no_grad()
def lm_nll(model: nn.Module, sentences: Sequence[str], vocab: Vocab, batch_size: int = 256,
           device=None) -> tuple[float, int]:
    """Total negative log-likelihood (nats) of every character and ``<eos>`` of ``sentences``
    given ``<bos>`` and the characters before it, and how many tokens that counts."""
    _check_sentences(sentences, nonempty=True)
    model.eval()
    device = device or module_device(model)
    total, count = 0.0, 0
    for i in range(0, len(sentences), batch_size):
        batch = encode_batch(sentences[i: i + batch_size], vocab).to(device)  # (b, width)
        logits = model(batch[:, :-1])  # (b, width - 1, vocab)
        label = batch[:, 1:]  # (b, width - 1)
        nll = F.cross_entropy(logits.transpose(1, 2), label, ignore_index=vocab.pad,
                              reduction="sum")
        total += float(nll)
        count += int((label != vocab.pad).sum())
    return total, count


def perplexity(model: nn.Module, sentences: Sequence[str], vocab: Vocab, **kwargs) -> float:
    """``exp`` of the mean per-character cross-entropy (see :func:`lm_nll`)."""
    total, count = lm_nll(model, sentences, vocab, **kwargs)
    return math.exp(total / count)


def train_lm(model: DecoderOnlyLM, sentences: Sequence[str], vocab: Vocab, num_steps: int,
             batch_size: int = 64, lr: float = 3e-3, seed: int = 0, device=None) -> list[float]:
    """Adam on random batches of sentences, cosine-decayed learning rate; losses per step."""
    device = device or module_device(model)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, num_steps)
    losses = []
    for _ in range(num_steps):
        idx = torch.randint(len(sentences), (batch_size,), generator=gen).tolist()
        batch = encode_batch([sentences[i] for i in idx], vocab).to(device)  # (batch, width)
        logits = model(batch[:, :-1])  # (batch, width - 1, vocab)
        loss = F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], ignore_index=vocab.pad)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    return losses


# --- the baseline ------------------------------------------------------------------------------

def _check_sentences(sentences, nonempty: bool = False) -> None:
    """A list (or other sequence) of strings; a lone string would be read as its characters."""
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise TypeError(f"sentences must be a list of strings, got {type(sentences).__name__}")
    for i, s in enumerate(sentences):
        if not isinstance(s, str):
            raise TypeError(f"sentences[{i}] must be a str, got {type(s).__name__}")
    if nonempty and not sentences:
        raise ValueError("sentences must hold at least one sentence, got an empty list")


class NGramLM:
    """Character n-gram model with add-k smoothing.

    ``P(c | h) = (count(h, c) + k) / (count(h) + k V)``, where ``h`` is the ``n - 1`` previous
    characters (``<bos>`` fills the start) and ``V`` the vocabulary size (every character and
    ``<eos>``). It predicts the same tokens as :func:`lm_nll` scores (every character and
    ``<eos>``, given ``<bos>``), so perplexities compare. The supports differ slightly: a
    Transformer's softmax also gives some probability to ``<pad>``, ``<bos>`` and ``<unk>``, which
    never occur as targets, so if anything the comparison handicaps the Transformer.
    """

    def __init__(self, n: int, k: float = 0.1) -> None:
        check_int("n", n)
        check_positive("k", k)
        self.n, self.k = n, k
        self.counts: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
        self.totals: collections.Counter = collections.Counter()
        self.vocab: set[str] = set()

    def _events(self, sentence: str):
        chars = ["<bos>"] * (self.n - 1) + list(sentence) + ["<eos>"]
        for t in range(self.n - 1, len(chars)):
            yield tuple(chars[t - self.n + 1: t]), chars[t]

    def fit(self, sentences: Sequence[str]) -> NGramLM:
        """Count every (history, next character) of ``sentences``."""
        _check_sentences(sentences)
        for s in sentences:
            for h, c in self._events(s):
                self.counts[h][c] += 1
                self.totals[h] += 1
                self.vocab.add(c)
        return self

    def log_prob(self, history: tuple, char: str) -> float:
        """``log P(char | history)`` in nats."""
        if not self.vocab:
            raise ValueError("the n-gram model is empty: call fit() first")
        counter = self.counts.get(history)
        seen = 0 if counter is None else counter[char]
        V = len(self.vocab)
        return math.log((seen + self.k) / (self.totals[history] + self.k * V))

    def perplexity(self, sentences: Sequence[str]) -> float:
        """``exp`` of the mean per-character negative log-likelihood of ``sentences``."""
        _check_sentences(sentences, nonempty=True)
        nll = [-self.log_prob(h, c) for s in sentences for h, c in self._events(s)]
        return math.exp(sum(nll) / len(nll))


# --- the model that ships --------------------------------------------------------------------

#: Chapter 8's character language model: its sizes, its data (the English sentences of up to
#: ``max_chars`` characters, ``val_frac`` held out, seeded) and its training (``num_steps`` batches
#: of ``batch_size`` sentences at ``lr``, seed 0). ``make models`` trains it once and ships the
#: weights (``attnlib/pretrained/``); the chapter and the website load them (:func:`shipped_lm`).
CHAR_LM = dict(num_hiddens=64, ffn_num_hiddens=128, num_heads=4, num_blks=2, max_len=48,
               max_chars=40, val_frac=0.1, num_steps=600, batch_size=32, lr=5e-3, seed=0)
#: How far a retrained model's held-out perplexity may land from the shipped one's and still count
#: as the same model (another float path trains other last digits, see attnlib.presets).
CHAR_LM_TOLERANCE = 0.05


def char_lm_data(path=TATOEBA_FRA_ENG) -> tuple[list[str], list[str], Vocab]:
    """``(train, held_out, vocab)`` of chapter 8's model: the held-out sentences are the first 2,000
    of the split, the vocabulary is the training sentences' characters."""
    sentences = char_sentences("en", path, max_chars=CHAR_LM["max_chars"])
    train_s, val_s = split_sentences(sentences, val_frac=CHAR_LM["val_frac"], seed=CHAR_LM["seed"])
    return train_s, val_s[:2000], char_vocab(train_s)


def char_lm_recipe(train_s: Sequence[str], vocab: Vocab) -> dict:
    """What the shipped weights follow from: the settings, a hash of the training sentences and
    vocabulary, and the code that trains them (``attnlib.presets.TRAINING_CODE`` and this module)."""
    import hashlib

    from . import presets

    code = presets.code_hashes((*presets.TRAINING_CODE, "lm"))
    data = hashlib.sha256(repr((list(train_s), vocab.idx_to_token)).encode()).hexdigest()[:16]
    return {"preset": "char_lm", "settings": dict(sorted(CHAR_LM.items())), "data": data, "code": code}


def char_lm_path(train_s: Sequence[str], vocab: Vocab) -> Path:
    """Where the shipped weights of chapter 8's model are (or would be)."""
    from .presets import PRETRAINED_DIR

    return PRETRAINED_DIR / f"char_lm-{char_lm_recipe(train_s, vocab)['data']}.pt"


def build_char_lm(vocab: Vocab) -> DecoderOnlyLM:
    """Chapter 8's model with :data:`CHAR_LM`'s sizes, freshly initialised (the global random state)."""
    p = CHAR_LM
    return DecoderOnlyLM(len(vocab), p["num_hiddens"], p["ffn_num_hiddens"], p["num_heads"],
                         p["num_blks"], max_len=p["max_len"])


def train_char_lm(train_s: Sequence[str], vocab: Vocab, device=None) -> tuple[DecoderOnlyLM, list[float]]:
    """Build chapter 8's model with seed 0 and train it with :data:`CHAR_LM`'s settings."""
    p = CHAR_LM
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(p["seed"])
        model = build_char_lm(vocab)
    model = model.to(device or "cpu")
    losses = train_lm(model, train_s, vocab, p["num_steps"], batch_size=p["batch_size"], lr=p["lr"])
    return model.eval(), losses


def shipped_lm(train_s: Sequence[str], vocab: Vocab, device=None, pretrained: bool = True
               ) -> tuple[DecoderOnlyLM, list[float]]:
    """Chapter 8's model and its training losses: the shipped weights when they were made from the
    current :func:`char_lm_recipe` (and ``pretrained``), else trained now (about a minute on a CPU)."""
    path = char_lm_path(train_s, vocab)
    if pretrained and path.exists():
        saved = torch.load(path, map_location=device or "cpu", weights_only=True)
        if saved.get("recipe") == char_lm_recipe(train_s, vocab):
            model = build_char_lm(vocab)
            model.load_state_dict(saved["model"])
            return model.to(device or "cpu").eval(), list(saved["losses"])
    return train_char_lm(train_s, vocab, device)
