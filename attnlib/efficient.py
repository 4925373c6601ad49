"""Chapter 9: attention at scale, the four ways models cut its time and memory.

* :func:`blockwise_attention`: exact softmax attention computed one block of keys at a time
  with a running maximum and sum (the online softmax of Milakov & Gimelshein, 2018, applied to
  attention by Rabe & Staats, 2021, and run in on-chip memory by FlashAttention, Dao et al.,
  2022; the update keeps the output unnormalised to the end, as FlashAttention-2 does, Dao,
  2023): no ``queries x keys`` matrix, and with a causal mask no block above the diagonal;
* grouped-query attention is ``MultiHeadAttention(..., num_kv_heads=g)`` in
  :mod:`attnlib.multihead`;
* :func:`sliding_window_mask`, :class:`WindowKVCache`, :class:`EfficientLM`: local attention
  (Beltagy et al., 2020; Mistral 7B, 2023) and a cache that keeps only the window;
  :func:`sliding_window_attention`: the window computed at a cost linear in the length, each
  block of queries against only the keys inside its window;
  :func:`attention_pattern`, :func:`kept_positions`: the sparse patterns side by side;
* :func:`linear_attention`, :func:`linear_attention_recurrent`: ``exp(q.k)`` replaced by
  ``phi(q).phi(k)`` (Katharopoulos et al., 2020), in parallel form and as an RNN with a
  fixed-size state; :class:`KeyValueMemory`, :func:`make_pair_recall_task`: a recall task
  (a simplified form of Arora et al.'s, 2023) that fills that state;
* :func:`alibi_slopes`, :func:`alibi_bias`, :class:`ALiBiAttention`: linear biases instead of
  position embeddings (Press et al., 2022); :class:`PositionTagger` compares them with
  chapter 6's positions on sequences longer than the training ones;
* :func:`train_lm_variant`, :func:`train_memory`, :func:`train_position_tagger`: the chapter's
  three experiments, one function each, so that several run side by side.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_float, check_int, check_tensor, module_device
from .lm import CausalBlock, DecoderOnlyLM, perplexity, train_lm
from .multihead import KVCache, MultiHeadAttention
from .positional import RotaryEmbedding
from .scoring import _check_sdp, causal_mask
from .seq2seq import check_token_ids
from .snail import IGNORE, CausalTransformerTagger, make_recall_task

# --- online softmax: exact attention, one block of keys at a time ------------------------------


def blockwise_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                        mask: torch.Tensor | None = None, causal: bool = False,
                        block_size: int = 128, scale: float | None = None,
                        query_block_size: int = 512) -> torch.Tensor:
    """``softmax(q k^T * scale) v`` computed one block of ``block_size`` keys at a time.

    Shapes as :func:`attnlib.scoring.scaled_dot_product`: queries ``(..., q, d)``, keys
    ``(..., k, d)``, values ``(..., k, d_v)``, ``mask`` bool broadcastable to ``(..., q, k)``
    (True = attend): ``(k,)`` or ``(..., 1, k)`` for padding, which stays that small;
    ``causal`` aligns the last query with the last key. :func:`online_softmax_attention` does
    the work for a block of queries. Without ``causal`` every query sees every block of keys,
    and all queries go at once. With ``causal`` the queries go in blocks of ``query_block_size``,
    and each block stops at its last query's position: the key blocks above the diagonal, which
    no query of the block may see, are never scored (FlashAttention's causal kernels skip them
    the same way), a fraction ``(T + 1) / 2T`` of the work with ``T`` blocks of queries for
    ``q = k``, half as ``T`` grows. (Smaller query blocks skip more, in more steps, each paying
    Python's overhead.) The result equals the full softmax, yet every temporary, the causal mask
    included, is ``(..., q or query_block_size, block_size)``. A query
    with no visible key returns zeros; a key/value position that the mask hides from every query
    is ignored, even when it holds NaN or inf (the rule of
    :func:`~attnlib.scoring.scaled_dot_product`). Half-precision inputs are summed in float32,
    as fused kernels keep their running statistics.
    """
    _check_sdp(queries, keys, values, mask, causal, 0.0, scale)
    check_int("block_size", block_size)
    check_int("query_block_size", query_block_size)
    nq, nk = queries.shape[-2], keys.shape[-2]
    scale = 1.0 / math.sqrt(queries.shape[-1]) if scale is None else scale
    if mask is not None and mask.dim() == 1:
        mask = mask.unsqueeze(0)  # (1, k): a padding mask, the same for every query
    rows_at_once = query_block_size if causal else nq  # only a causal mask lets a block stop early
    outs = []
    for first in range(0, nq, rows_at_once):
        rows = slice(first, first + rows_at_once)
        query_pos = torch.arange(nk - nq, nk, device=queries.device)[rows, None]  # (rows, 1)
        seen = nk if not causal else nk - nq + min(first + rows_at_once, nq)  # keys these rows may see
        rows_mask = None if mask is None else mask[..., rows, :] if mask.shape[-2] > 1 else mask
        outs.append(online_softmax_attention(queries[..., rows, :], keys[..., :seen, :],
                                             values[..., :seen, :], rows_mask, causal, query_pos,
                                             block_size, scale))  # (..., rows, d_v)
    return torch.cat(outs, dim=-2)  # (..., q, d_v)


def online_softmax_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                             mask: torch.Tensor | None, causal: bool, query_pos: torch.Tensor,
                             block_size: int, scale: float) -> torch.Tensor:
    """One block of queries ``(..., rows, d)`` over ``keys``, ``values`` ``(..., k, d)``, walking
    over blocks of ``block_size`` keys (the loop of :func:`blockwise_attention`; ``query_pos``
    ``(rows, 1)``: the queries' key positions, ``mask`` ``(..., 1 or rows, k)`` or None).

    Each query keeps a running maximum ``m`` of its scores, a running sum ``ell`` of
    ``exp(score - m)`` and a running weighted sum ``acc`` of the values; when a block raises the
    maximum, what was summed before is rescaled by ``exp(m_old - m_new)``, and ``acc / ell`` after
    the last block is the softmax-weighted average. Returns ``(..., rows, d_v)``."""
    wide = torch.float32 if queries.dtype in (torch.float16, torch.bfloat16) else queries.dtype
    q = queries.to(wide) * scale  # (..., rows, d)
    m = torch.full_like(q[..., :1], float("-inf"))  # (..., rows, 1): running max of the scores
    ell = torch.zeros_like(m)  # (..., rows, 1): running sum of exp(score - m)
    acc = q.new_zeros(*q.shape[:-1], values.shape[-1])  # (..., rows, d_v): running sum of weights * v
    for start in range(0, keys.shape[-2], block_size):
        k = keys[..., start:start + block_size, :].to(wide)  # (..., block, d)
        v = values[..., start:start + block_size, :].to(wide)  # (..., block, d_v)
        s = q @ k.transpose(-2, -1)  # (..., rows, block)
        seen = block_mask(mask, causal, query_pos, start, k.shape[-2])  # (..., 1 or rows, block) or None
        if seen is not None:
            s = s.masked_fill(~seen, float("-inf"))
            v = torch.where(seen.any(-2).unsqueeze(-1), v, 0.0)  # values no query sees: 0, not 0 * NaN
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))  # (..., rows, 1)
        shift = m_new.masked_fill(m_new == float("-inf"), 0.0)  # nothing seen yet: exp(-inf) = 0
        p = torch.exp(s - shift)  # (..., rows, block): unnormalised weights of this block
        rescale = torch.exp(m - shift)  # (..., rows, 1): old sums were relative to the old max
        ell = ell * rescale + p.sum(-1, keepdim=True)
        acc = acc * rescale + p @ v  # (..., rows, d_v)
        m = m_new
    out = acc / torch.where(ell > 0, ell, 1.0)  # (..., rows, d_v); rows that saw nothing stay 0
    return out.to(queries.dtype)


def block_mask(mask: torch.Tensor | None, causal: bool, query_pos: torch.Tensor, start: int,
               size: int) -> torch.Tensor | None:
    """Which queries see keys ``start .. start + size - 1``: the columns of ``mask`` (bool,
    ``(..., 1 or rows, k)``) and, with ``causal``, ``key position <= query position``
    (``query_pos (rows, 1)``), made for this block only. ``(..., 1 or rows, size)``, or None."""
    if mask is not None:
        mask = mask[..., start:start + size] if mask.shape[-1] > 1 else mask  # (..., 1 or rows, size)
    if not causal:
        return mask
    key_pos = torch.arange(start, start + size, device=query_pos.device)  # (size,)
    cm = key_pos <= query_pos  # (rows, size)
    return cm if mask is None else mask & cm  # (..., rows, size)


# --- sliding windows and other sparse patterns -------------------------------------------------

PATTERNS = ("full", "causal", "sliding", "dilated", "global+local")


def sliding_window_mask(num_queries: int, num_keys: int, window: int, device=None) -> torch.Tensor:
    """Bool ``(queries, keys)``: query ``i`` sees the ``window`` latest keys up to its own
    position, itself included. Aligned bottom-right as :func:`attnlib.scoring.causal_mask`,
    so the queries may be the newest positions of a cache."""
    check_int("window", window)
    cm = causal_mask(num_queries, num_keys, device)  # (queries, keys)
    return cm & ~cm.tril(num_keys - num_queries - window)  # drop keys `window` or more behind


def sliding_window_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                             window: int, block_size: int = 128,
                             scale: float | None = None) -> torch.Tensor:
    """Causal attention in which each query sees only the ``window`` latest keys up to its own
    position (:func:`sliding_window_mask`), without ever looking at the other keys.

    Shapes as :func:`blockwise_attention`; the queries are the last positions of the keys. It
    walks over blocks of ``block_size`` queries; a block whose first query is at position ``p``
    can only see keys ``p - window + 1 .. p + block_size - 1``, so it runs
    :func:`blockwise_attention` over that slice alone, and the keys outside it are never read
    (FlashAttention's block-sparse kernels skip such key blocks the same way). Each block costs
    ``O(block_size (block_size + window) d)`` whatever the length: time ``O(n w d)`` for
    ``n >> block_size``, and temporaries of ``(..., block_size, block_size + window - 1)`` at most.
    """
    _check_sdp(queries, keys, values, None, True, 0.0, scale)
    check_int("window", window)
    check_int("block_size", block_size)
    nq, nk = queries.shape[-2], keys.shape[-2]
    out = values.new_empty(*queries.shape[:-1], values.shape[-1])  # (..., q, d_v)
    for start in range(0, nq, block_size):
        q = queries[..., start:start + block_size, :]  # (..., b, d)
        first = nk - nq + start  # key position of this block's first query
        lo, hi = max(0, first - window + 1), first + q.shape[-2]  # the keys its window reaches
        seen = sliding_window_mask(q.shape[-2], hi - lo, window, q.device)  # (b, hi - lo)
        out[..., start:start + q.shape[-2], :] = blockwise_attention(
            q, keys[..., lo:hi, :], values[..., lo:hi, :], seen, block_size=block_size,
            scale=scale)  # (..., b, d_v)
    return out  # (..., q, d_v)


def attention_pattern(kind: str, n: int, window: int = 4, dilation: int = 2,
                      num_global: int = 1, device=None) -> torch.Tensor:
    """Bool ``(n, n)`` mask of one pattern of :data:`PATTERNS` (True = query row sees key column).

    ``"full"``: every key; ``"causal"``: keys up to the query; ``"sliding"``: the ``window``
    latest of those; ``"dilated"``: ``window`` keys ``dilation`` apart, ``t, t - dilation, ..``;
    ``"global+local"``: the sliding window plus the first ``num_global`` tokens, which every
    later query sees (the attention sinks of StreamingLLM, Xiao et al., 2024; Longformer's
    global tokens are instead chosen by the task and attend, and are attended, in both
    directions).
    """
    if kind not in PATTERNS:
        raise ValueError(f"kind must be one of {PATTERNS}, got {kind!r}")
    for name, value in (("n", n), ("window", window), ("dilation", dilation)):
        check_int(name, value)
    check_int("num_global", num_global, minimum=0)
    if kind == "full":
        return torch.ones(n, n, dtype=torch.bool, device=device)
    causal = causal_mask(n, n, device)  # (n, n)
    if kind == "causal":
        return causal
    if kind == "dilated":
        back = torch.arange(n, device=device)[:, None] - torch.arange(n, device=device)  # (n, n): i - j
        return causal & (back % dilation == 0) & (back < window * dilation)
    local = sliding_window_mask(n, n, window, device)  # (n, n)
    if kind == "sliding":
        return local
    return local | (causal & (torch.arange(n, device=device) < num_global))  # + global columns


def kept_positions(kind: str, n: int, window: int = 4, dilation: int = 2,
                   num_global: int = 1) -> list[int]:
    """The positions ``0 .. n-1`` a decoder's key/value cache must keep after ``n`` tokens so
    that every later query can attend as :func:`attention_pattern` says (``"full"`` sees the
    future, so it cannot decode token by token: it keeps everything and recomputes)."""
    attention_pattern(kind, 1, window, dilation, num_global)  # checks the arguments
    check_int("n", n)
    span = {"sliding": window - 1, "global+local": window - 1,
            "dilated": (window - 1) * dilation}.get(kind, n)  # how far back a later query looks
    keep = set(range(max(0, n - span), n))
    if kind == "global+local":
        keep |= set(range(min(num_global, n)))
    return sorted(keep)


class WindowKVCache(KVCache):
    """A :class:`KVCache` that holds only the latest ``window - 1`` positions: with a sliding
    window of ``window`` keys, all the next query needs besides itself. (Mistral's rolling
    buffer of ``W`` slots writes the new token's key and value first, so it holds ``W``
    positions, the new one included.) ``len()`` still counts every position seen, so positions
    continue; ``held`` is what is kept."""

    def __init__(self, window: int) -> None:
        super().__init__()
        check_int("window", window)
        self.window, self.seen = window, 0

    def __len__(self) -> int:
        return self.seen

    @property
    def held(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add ``(batch, heads, new, head_dim)``; return held + new positions, keep the window."""
        self.seen += k.shape[2]
        k, v = super().append(k, v)  # (batch, heads, held + new, head_dim)
        drop = max(k.shape[2] - (self.window - 1), 0)  # positions no later query will see
        # (batch, heads, <= window - 1, head_dim): copies, since a view of the window would keep
        # all of k and v alive (a whole prefill) until the next call
        self.k, self.v = (x[:, :, drop:].clone() if drop else x for x in (k, v))
        return k, v

    def reorder(self, index: torch.Tensor) -> WindowKVCache:
        """A new cache holding batch rows ``index`` (beam search)."""
        picked = WindowKVCache(self.window)
        base = super().reorder(index)
        picked.k, picked.v, picked.seen = base.k, base.v, self.seen
        return picked


class EfficientBlock(CausalBlock):
    """Chapter 8's GPT block with ``num_kv_heads`` key/value heads and, if ``window`` is
    given, a sliding window: each position sees the ``window`` latest positions only.
    ``forward(X (batch, steps, num_hiddens), cache=None)`` as :class:`attnlib.lm.CausalBlock`.
    The window is a mask on the full ``steps x keys`` computation, which costs as much time as
    full attention (cheap at the chapter's lengths); only the cache shrinks.
    :func:`sliding_window_attention` computes the same attention at a cost linear in the length."""

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_kv_heads: int | None = None, window: int | None = None,
                 dropout: float = 0.0) -> None:
        super().__init__(num_hiddens, ffn_num_hiddens, num_heads, dropout, pre_norm=True)
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, num_kv_heads=num_kv_heads)
        if window is not None:
            check_int("window", window)
        self.window = window

    def forward(self, X: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        if self.window is None:
            return super().forward(X, cache)
        check_tensor("X", X, 3, f"(batch, steps, {self.attention.num_hiddens})")
        b, n = X.shape[0], X.shape[1]
        held = 0 if cache is None or cache.k is None else cache.k.shape[2]  # keys already cached
        mask = sliding_window_mask(n, held + n, self.window, X.device)  # (steps, held + steps)
        mask = mask.expand(b, n, held + n)  # (batch, steps, held + steps), as valid_lens
        Y = self.addnorm1.residual(X, lambda x: self.attention(x, x, x, mask, causal=True, cache=cache))
        return self.addnorm2.residual(Y, self.ffn)  # (batch, steps, num_hiddens)


class EfficientLM(DecoderOnlyLM):
    """:class:`attnlib.lm.DecoderOnlyLM` built from :class:`EfficientBlock` s: the same model
    with ``num_kv_heads`` key/value heads (grouped-query attention) and an optional sliding
    ``window``. :meth:`init_caches` gives :class:`WindowKVCache` s when there is a window."""

    def __init__(self, vocab_size: int, num_hiddens: int = 64, ffn_num_hiddens: int = 128,
                 num_heads: int = 4, num_blks: int = 2, dropout: float = 0.0, max_len: int = 128,
                 *, num_kv_heads: int | None = None, window: int | None = None) -> None:
        super().__init__(vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, max_len)
        self.window = window
        self.blks = nn.ModuleList(EfficientBlock(num_hiddens, ffn_num_hiddens, num_heads,
                                                 num_kv_heads, window, dropout)
                                  for _ in range(num_blks))

    def init_caches(self) -> list[KVCache]:
        if self.window is None:
            return super().init_caches()
        return [WindowKVCache(self.window) for _ in self.blks]


# --- linear attention: a kernel instead of exp, an RNN instead of a cache ----------------------

def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """``phi(x) = elu(x) + 1``, positive everywhere (Katharopoulos et al., 2020)."""
    return F.elu(x) + 1


def _check_linear(queries, keys, values) -> None:
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        check_tensor(name, x, tuple(range(2, 9)), f"(..., {name}, d)")
    _check_sdp(queries, keys, values, None, False, 0.0, None)


def linear_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                     causal: bool = False, feature_map=elu_feature_map,
                     eps: float = 1e-6) -> torch.Tensor:
    """``out_i = sum_j phi(q_i).phi(k_j) v_j / sum_j phi(q_i).phi(k_j)``, the parallel form.

    Shapes ``(..., q, d)``, ``(..., k, d)``, ``(..., k, d_v)`` -> ``(..., q, d_v)``. Without
    ``causal`` the sums over keys are taken once, ``phi(K)^T V`` ``(d, d_v)`` and ``sum phi(k)``:
    cost linear in the length. With ``causal`` (queries are the last positions of the keys)
    the kernel matrix is masked, as softmax attention's, to check the recurrent form against.
    """
    _check_linear(queries, keys, values)
    q, k = feature_map(queries), feature_map(keys)  # (..., q, d), (..., k, d): positive features
    if causal:
        kernel = q @ k.transpose(-2, -1)  # (..., q, k): phi(q_i) . phi(k_j) replaces exp(q_i . k_j)
        kernel = kernel * causal_mask(q.shape[-2], k.shape[-2], q.device)  # (..., q, k)
        return (kernel @ values) / (kernel.sum(-1, keepdim=True) + eps)  # (..., q, d_v)
    memory = k.transpose(-2, -1) @ values  # (..., d, d_v): every key-value pair, summed
    norm = k.sum(-2).unsqueeze(-1)  # (..., d, 1)
    return (q @ memory) / (q @ norm + eps)  # (..., q, d_v)


def linear_attention_recurrent(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                               state: tuple[torch.Tensor, torch.Tensor] | None = None,
                               feature_map=elu_feature_map, eps: float = 1e-6):
    """Causal linear attention as an RNN: one position at a time with a fixed-size state.

    ``M_t = M_{t-1} + phi(k_t) v_t^T`` ``(..., d, d_v)``, ``z_t = z_{t-1} + phi(k_t)`` ``(..., d)``,
    ``y_t = phi(q_t)^T M_t / phi(q_t)^T z_t``. Queries, keys and values are ``(..., n, d)``
    (one query per key). Returns ``(y (..., n, d_v), (M, z))``, the ``y_t`` stacked; pass
    ``(M, z)`` back as ``state`` to continue. The state's size does not grow with ``n``: this is
    the whole cache.
    """
    _check_linear(queries, keys, values)
    if queries.shape[-2] != keys.shape[-2]:
        raise ValueError(f"the recurrent form takes one query per key, got queries "
                         f"{tuple(queries.shape)} and keys {tuple(keys.shape)}")
    q, k = feature_map(queries), feature_map(keys)  # (..., n, d)
    if state is None:
        M = q.new_zeros(*q.shape[:-2], q.shape[-1], values.shape[-1])  # (..., d, d_v)
        z = q.new_zeros(*q.shape[:-2], q.shape[-1])  # (..., d)
    else:
        M, z = state
    outs = []
    for t in range(q.shape[-2]):
        M = M + k[..., t, :, None] * values[..., t, None, :]  # (..., d, d_v): add phi(k_t) v_t^T
        z = z + k[..., t, :]  # (..., d)
        num = (q[..., t, None, :] @ M).squeeze(-2)  # (..., d_v)
        den = (q[..., t, :] * z).sum(-1, keepdim=True)  # (..., 1)
        outs.append(num / (den + eps))
    return torch.stack(outs, dim=-2), (M, z)  # (..., n, d_v)


class KeyValueMemory(nn.Module):
    """One attention layer as an associative memory: reads ``pairs (batch, P, 2)`` of
    (key id, value id) and answers ``queries (batch, Q)`` of key ids with logits over the
    values, ``(batch, Q, num_values)``. ``kind`` ``"softmax"`` or ``"linear"`` picks the attention;
    linear attention must squeeze all ``P`` pairs into an ``(m, num_hiddens)`` state, ``m`` the
    number of features ``feature_map`` makes of a ``num_hiddens`` vector (``elu + 1``: the same)."""

    def __init__(self, num_keys: int, num_values: int, num_hiddens: int = 16,
                 kind: str = "softmax", feature_map=elu_feature_map) -> None:
        super().__init__()
        if kind not in ("softmax", "linear"):
            raise ValueError(f"kind must be 'softmax' or 'linear', got {kind!r}")
        for name, value in (("num_keys", num_keys), ("num_values", num_values),
                            ("num_hiddens", num_hiddens)):
            check_int(name, value)
        if not callable(feature_map):
            raise TypeError(f"feature_map must be a function of a tensor, got {type(feature_map).__name__}")
        self.num_keys, self.num_values, self.kind = num_keys, num_values, kind
        self.feature_map = feature_map
        self.key_embedding = nn.Embedding(num_keys, num_hiddens)
        self.value_embedding = nn.Embedding(num_values, num_hiddens)
        self.W_q, self.W_k = nn.Linear(num_hiddens, num_hiddens), nn.Linear(num_hiddens, num_hiddens)
        self.out = nn.Linear(num_hiddens, num_values)

    def embed(self, pairs: torch.Tensor, queries: torch.Tensor):
        """The read's queries ``(batch, Q, h)``, keys and values ``(batch, P, h)``: the key ids'
        embeddings projected by ``W_q`` and ``W_k``, the value ids' embeddings as they are."""
        check_tensor("pairs", pairs, 3, "(batch, pairs, 2)")
        check_token_ids("pairs[..., 0]", pairs[..., 0], self.num_keys, module_device(self))
        check_token_ids("pairs[..., 1]", pairs[..., 1], self.num_values, module_device(self))
        check_token_ids("queries", queries, self.num_keys, module_device(self))
        k = self.W_k(self.key_embedding(pairs[..., 0]))  # (batch, P, h)
        v = self.value_embedding(pairs[..., 1])  # (batch, P, h)
        q = self.W_q(self.key_embedding(queries))  # (batch, Q, h)
        return q, k, v

    def forward(self, pairs: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        q, k, v = self.embed(pairs, queries)  # (batch, Q, h), (batch, P, h), (batch, P, h)
        if self.kind == "softmax":
            read = F.scaled_dot_product_attention(q, k, v)  # (batch, Q, h)
        else:
            read = linear_attention(q, k, v, feature_map=self.feature_map)  # through an (m, h) state
        return self.out(read)  # (batch, Q, num_values)

    def weights(self, pairs: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        """How much each query's read takes from each stored pair, ``(batch, Q, P)``, rows summing
        to 1: ``softmax(q.k / sqrt(h))``, or ``phi(q).phi(k)`` over its sum for linear attention."""
        q, k, _ = self.embed(pairs, queries)
        if self.kind == "softmax":
            return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)  # (batch, Q, P)
        kernel = self.feature_map(q) @ self.feature_map(k).transpose(-2, -1)  # (batch, Q, P)
        return kernel / kernel.sum(-1, keepdim=True)


def make_pair_recall_task(num_examples: int, num_pairs: int, num_queries: int, num_keys: int,
                          num_values: int, generator: torch.Generator | None = None):
    """A simplified multi-query associative recall: ``pairs (examples, num_pairs, 2)`` of
    distinct keys with random values, ``queries (examples, num_queries)`` drawn from those keys,
    ``answers`` their values. Arora et al.'s (2023) MQAR writes each pair as two neighbouring
    tokens, so a model must first bind every key to the token after it; here the pairs come
    already bound (chapter 8's recall task without its positional half), and only the lookup
    is left."""
    for name, value in (("num_examples", num_examples), ("num_pairs", num_pairs),
                        ("num_queries", num_queries), ("num_keys", num_keys),
                        ("num_values", num_values)):
        check_int(name, value)
    if num_pairs > num_keys:
        raise ValueError(f"num_pairs ({num_pairs}) must not exceed num_keys ({num_keys}): "
                         "the keys of one example are distinct")
    keys = torch.rand(num_examples, num_keys, generator=generator).argsort(-1)[:, :num_pairs]  # (ex, P)
    vals = torch.randint(num_values, (num_examples, num_pairs), generator=generator)  # (ex, P)
    which = torch.randint(num_pairs, (num_examples, num_queries), generator=generator)  # (ex, Q)
    pairs = torch.stack((keys, vals), dim=-1)  # (ex, P, 2)
    return pairs, keys.gather(1, which), vals.gather(1, which)  # (ex, P, 2), (ex, Q), (ex, Q)


# --- ALiBi: a distance penalty instead of position embeddings ----------------------------------

def alibi_slopes(num_heads: int, device=None) -> torch.Tensor:
    """The head slopes of Press et al. (2022): the geometric sequence ``2^(-8/h), 2^(-16/h), ..``
    ``(heads,)``; for a ``num_heads`` that is not a power of 2, the paper's interleaving.
    Computed on ``device``: no host-to-device copy (which would wait for the GPU) at every call."""
    check_int("num_heads", num_heads)
    p = 2 ** math.floor(math.log2(num_heads))  # the largest power of 2 <= num_heads
    slopes = 2 ** (-8 * torch.arange(1, p + 1, device=device) / p)  # (p,)
    extra = 2 ** (-4 * (2 * torch.arange(num_heads - p, device=device) + 1) / p)  # from the 2p sequence
    return torch.cat((slopes, extra))  # (heads,)


def alibi_bias(num_heads: int, num_queries: int, num_keys: int, device=None) -> torch.Tensor:
    """Additive causal score bias ``(heads, queries, keys)``: ``-slope_h * (i - j)`` for key
    ``j`` at or before query ``i`` (bottom-right aligned), ``-inf`` for later keys."""
    causal_mask(num_queries, num_keys)  # checks the counts: queries are the last keys
    slopes = alibi_slopes(num_heads, device)  # (heads,)
    pos_q = torch.arange(num_keys - num_queries, num_keys, device=device)  # (queries,)
    dist = (pos_q[:, None] - torch.arange(num_keys, device=device)).float()  # (queries, keys)
    bias = -slopes[:, None, None] * dist  # (heads, queries, keys)
    return bias.masked_fill(dist < 0, float("-inf"))


class ALiBiAttention(MultiHeadAttention):
    """Causal multi-head self-attention with ALiBi biases, for a model with no position
    embedding: ``forward(X, X, X, causal=True)`` with ``X (batch, steps, num_hiddens)``, as
    :class:`attnlib.lm.CausalBlock` calls its attention; returns the same shape."""

    def forward(self, queries, keys, values, valid_lens=None, causal: bool = True,
                cache: KVCache | None = None) -> torch.Tensor:
        if keys is not queries or values is not queries or valid_lens is not None or cache is not None:
            raise ValueError("ALiBiAttention is causal self-attention only: call it as att(X, X, X) "
                             "without valid_lens or cache")
        check_tensor("X", queries, 3, f"(batch, steps, {self.num_hiddens})")
        check_float("X", queries)
        X = queries
        q, k, v = (self.transpose_qkv(W(X)) for W in (self.W_q, self.W_k, self.W_v))  # (b, h, n, d)
        bias = alibi_bias(self.num_heads, X.shape[1], X.shape[1], X.device)  # (heads, n, n)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))  # (b, h, n, d)
        return self.W_o(self.transpose_output(out))  # (batch, steps, num_hiddens)


POSITIONS = ("sinusoidal", "learned", "rotary", "alibi")


class PositionTagger(CausalTransformerTagger):
    """Chapter 8's causal Transformer tagger with one of :data:`POSITIONS`: added sinusoidal
    or learned embeddings, rotary queries and keys (chapter 6), or ALiBi biases.
    ``forward(X (batch, steps)) -> logits (batch, steps, num_classes)``."""

    def __init__(self, vocab_size: int, num_classes: int, position: str, num_hiddens: int = 32,
                 num_heads: int = 4, num_blks: int = 2, max_len: int = 256) -> None:
        if position not in POSITIONS:
            raise ValueError(f"position must be one of {POSITIONS}, got {position!r}")
        added = position if position in ("sinusoidal", "learned") else None  # added to the input
        super().__init__(vocab_size, num_classes, num_hiddens, 2 * num_hiddens, num_heads, num_blks,
                         added, max_len)
        self.position = position
        for blk in self.blks:  # same block; rotary and ALiBi act inside its attention
            if position == "rotary":
                rope = RotaryEmbedding(num_hiddens // num_heads, max_len=max_len)
                blk.attention = MultiHeadAttention(num_hiddens, num_heads, rope=rope)
            elif position == "alibi":
                blk.attention = ALiBiAttention(num_hiddens, num_heads)


# --- the chapter's experiments, one function each (run_side_by_side runs them in workers) ---------

def train_lm_variant(train: list[str], val: list[str], vocab, num_steps: int, seed: int = 0,
                     **config) -> tuple[EfficientLM, float]:
    """An :class:`EfficientLM` (``config``: its keyword arguments) trained by
    :func:`attnlib.lm.train_lm`; returns it and its held-out perplexity."""
    torch.manual_seed(seed)
    model = EfficientLM(len(vocab), **config)
    train_lm(model, train, vocab, num_steps, batch_size=32, lr=5e-3, seed=seed)
    return model, perplexity(model, val, vocab)


def train_memory(kind: str, num_pairs: int, num_steps: int = 200, num_keys: int = 64,
                 num_values: int = 16, num_hiddens: int = 16, seed: int = 0,
                 feature_map=elu_feature_map) -> tuple[KeyValueMemory, float]:
    """Train a :class:`KeyValueMemory` on fresh :func:`make_pair_recall_task` batches (8
    queries each); return it and its accuracy on 1,000 held-out examples (drawn with seed
    ``seed + 1000``: :func:`memory_test_set`)."""
    torch.manual_seed(seed)
    model = KeyValueMemory(num_keys, num_values, num_hiddens, kind, feature_map)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(num_steps):
        pairs, queries, answers = make_pair_recall_task(64, num_pairs, 8, num_keys, num_values, gen)
        loss = F.cross_entropy(model(pairs, queries).flatten(0, 1), answers.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    pairs, queries, answers = memory_test_set(num_pairs, num_keys, num_values, seed)
    with torch.no_grad():
        return model, (model(pairs, queries).argmax(-1) == answers).float().mean().item()


def memory_test_set(num_pairs: int, num_keys: int = 64, num_values: int = 16, seed: int = 0):
    """The 1,000 held-out examples (8 queries each) that :func:`train_memory` scores on."""
    return make_pair_recall_task(1000, num_pairs, 8, num_keys, num_values,
                                 torch.Generator().manual_seed(seed + 1000))


def train_position_tagger(position: str, train_len: int, test_lens: tuple[int, ...],
                          num_steps: int = 150, vocab_size: int = 8, seed: int = 0) -> list[float]:
    """Train a :class:`PositionTagger` on chapter 8's recall task with sequences of
    ``train_len``; return its accuracy on sequences of each length in ``test_lens``."""
    torch.manual_seed(seed)
    model = PositionTagger(vocab_size, vocab_size, position, max_len=max(test_lens))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(num_steps):
        X, Y = make_recall_task(64, train_len, vocab_size, gen)
        loss = F.cross_entropy(model(X).flatten(0, 1), Y.flatten(), ignore_index=IGNORE)
        opt.zero_grad()
        loss.backward()
        opt.step()
    accs = []
    with torch.no_grad():
        for n in test_lens:
            X, Y = make_recall_task(500, n, vocab_size, torch.Generator().manual_seed(seed + n))
            ok = Y != IGNORE
            accs.append((model(X).argmax(-1)[ok] == Y[ok]).float().mean().item())
    return accs
