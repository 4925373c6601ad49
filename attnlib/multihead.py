"""Chapter 5: multi-head attention.

``h`` heads each attend in their own learned subspace of size ``head_dim = num_hiddens / h``;
their outputs are concatenated and mixed by ``W_o``. In the chapter's notation, heads counted
from 1::

    h_i = f(W_q^(i) q, W_k^(i) k, W_v^(i) v),    i = 1, ..., h
    MultiHead(q, k, v) = W_o [h_1; ...; h_h]

All heads run as one batched computation: one projection produces every head's features, and a
reshape moves the heads into a batch dimension. Head ``i`` owns rows ``(i-1)*head_dim`` to
``i*head_dim - 1`` of ``W_q.weight`` (and of ``W_k.weight`` and ``W_v.weight`` unless key/value
heads are shared, ``num_kv_heads < num_heads``) and the same columns of ``W_o.weight``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_bool,
    check_int,
    check_module_input,
    check_probability,
    check_qkv,
    check_rows,
    check_size,
    check_tensor,
)
from .positional import RotaryEmbedding
from .recording import AttentionModule
from .scoring import causal_mask, make_mask, may_hide_every_key, scaled_dot_product


class KVCache:
    """Projected keys and values ``(batch, heads, n, head_dim)`` one attention layer keeps
    between decoding steps, so that old positions are never projected again.

    ``static=False`` (a decoder's self-attention): every call appends its new positions and
    attends over all of them. ``static=True`` (encoder-decoder attention): the keys and values
    are the encoder's outputs, the same at every step, projected on the first call only.
    """

    def __init__(self, static: bool = False) -> None:
        check_bool("static", static)
        self.static = static
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add new positions ``(batch, heads, new, head_dim)``; return all of them."""
        check_tensor("k", k, 4, "(batch, heads, new, head_dim)")
        check_tensor("v", v, 4, "(batch, heads, new, head_dim)")
        if k.shape[:3] != v.shape[:3]:
            raise ValueError(f"k and v must have the same batch, heads and positions, got "
                             f"k {tuple(k.shape)} and v {tuple(v.shape)}")
        if self.k is not None:
            held = (self.k.shape[0], self.k.shape[1], self.k.shape[3])
            if held != (k.shape[0], k.shape[1], k.shape[3]):
                raise ValueError(f"this cache holds (batch, heads, head_dim) = {held}, but k has "
                                 f"{(k.shape[0], k.shape[1], k.shape[3])}: start a new KVCache for "
                                 "a new batch")
            if (k.dtype, k.device) != (self.k.dtype, self.k.device):
                raise ValueError(f"this cache holds {self.k.dtype} keys on {self.k.device}, but k is "
                                 f"{k.dtype} on {k.device}: keep a model's dtype and device while it decodes")
            k = torch.cat((self.k, k), dim=2)  # (batch, heads, seen + new, head_dim)
            v = torch.cat((self.v, v), dim=2)  # (batch, heads, seen + new, head_dim)
        self.k, self.v = k, v
        return k, v

    def reorder(self, index: torch.Tensor) -> KVCache:
        """A new cache holding batch rows ``index`` (beam search)."""
        if not isinstance(index, torch.Tensor):
            raise TypeError(f"index must be a torch.Tensor of batch rows, got {type(index).__name__}")
        picked = KVCache(self.static)
        if self.k is not None:
            check_rows(index, self.k.shape[0])
            picked.k, picked.v = self.k[index], self.v[index]
        return picked


class MultiHeadAttention(AttentionModule):
    """Multi-head scaled dot-product attention with d2l's interface.

    ``forward(queries, keys, values, valid_lens=None, causal=False)``:
    queries ``(batch, queries, query_size)``, keys ``(batch, keys, key_size)``,
    values ``(batch, keys, value_size)``; sizes default to ``num_hiddens``.
    ``valid_lens`` as in :func:`attnlib.scoring.make_mask`; ``causal=True``
    hides later keys (aligned so the last query sees every key, which is what
    a key/value cache needs). Returns ``(batch, queries, num_hiddens)``.

    Uses the fused ``F.scaled_dot_product_attention`` unless the weights are
    being recorded; recorded weights are ``(batch, heads, queries, keys)``.
    ``rope``, if given, rotates queries and keys by their positions.

    ``cache``, a :class:`KVCache`, keeps the projected keys and values between calls
    (decoding one token at a time); the result equals one call on the whole sequence.

    ``num_kv_heads`` (default ``num_heads``) key/value heads are shared by groups of
    ``num_heads / num_kv_heads`` query heads: grouped-query attention (Ainslie et al., 2023),
    multi-query attention (Shazeer, 2019) when it is 1. The cache then holds
    ``num_kv_heads`` heads, a ``num_heads / num_kv_heads`` times smaller cache.
    """

    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = False, *, query_size: int | None = None,
                 key_size: int | None = None, value_size: int | None = None,
                 rope: RotaryEmbedding | None = None, num_kv_heads: int | None = None) -> None:
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        check_config(num_hiddens, num_heads, dropout, (query_size, key_size, value_size), rope)
        check_kv_heads(num_heads, num_kv_heads)
        self.num_hiddens, self.num_heads, self.dropout = num_hiddens, num_heads, dropout
        self.num_kv_heads = num_kv_heads
        kv_hiddens = num_hiddens // num_heads * num_kv_heads  # head_dim per key/value head
        self.W_q = nn.Linear(query_size or num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(key_size or num_hiddens, kv_hiddens, bias=bias)
        self.W_v = nn.Linear(value_size or num_hiddens, kv_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.rope = rope

    def transpose_qkv(self, X: torch.Tensor, num_heads: int | None = None) -> torch.Tensor:
        """Split the last axis into heads: ``(batch, n, num_hiddens) -> (batch, heads, n, head_dim)``
        (``num_heads`` heads, default ``self.num_heads``)."""
        heads = num_heads or self.num_heads
        X = X.reshape(X.shape[0], X.shape[1], heads, -1)  # (batch, n, heads, head_dim)
        return X.transpose(1, 2)  # (batch, heads, n, head_dim)

    def transpose_output(self, X: torch.Tensor) -> torch.Tensor:
        """Undo :meth:`transpose_qkv`: ``(batch, heads, n, head_dim) -> (batch, n, num_hiddens)``."""
        X = X.transpose(1, 2)  # (batch, n, heads, head_dim)
        return X.reshape(X.shape[0], X.shape[1], -1)  # (batch, n, num_hiddens)

    def project(self, queries, keys, values):
        """``W_q``, ``W_k``, ``W_v`` applied and split into heads: ``q (batch, heads, queries,
        head_dim)``, ``k, v (batch, kv heads, keys, head_dim)``.

        Self-attention (``queries``, ``keys`` and ``values`` one tensor) stacks the three
        weight matrices and makes one matrix product, as ``nn.MultiheadAttention`` does
        (nanoGPT's ``c_attn`` too): one call instead of three, each with its own overhead (a
        kernel launch on a GPU), while ``W_q``, ``W_k``, ``W_v`` stay three layers to read and
        to load.
        """
        h, kv = self.num_heads, self.num_kv_heads
        if queries is keys is values:
            layers = (self.W_q, self.W_k, self.W_v)
            weight = torch.cat([W.weight for W in layers])  # ((heads + 2 kv heads) * head_dim, in)
            bias = None if self.W_q.bias is None else torch.cat([W.bias for W in layers])
            qkv = self.transpose_qkv(F.linear(queries, weight, bias), h + 2 * kv)
            return qkv.split((h, kv, kv), dim=1)  # (batch, heads + 2 kv heads, n, head_dim) split
        q = self.transpose_qkv(self.W_q(queries))  # (batch, heads, queries, head_dim)
        k = self.transpose_qkv(self.W_k(keys), kv)  # (batch, kv heads, keys, head_dim)
        v = self.transpose_qkv(self.W_v(values), kv)  # (batch, kv heads, keys, head_dim)
        return q, k, v

    def forward(self, queries, keys, values, valid_lens=None, causal: bool = False,
                cache: KVCache | None = None):
        check_inputs(self, queries, keys, values, causal, cache)
        if cache is not None and cache.static and cache.k is not None:
            q = self.transpose_qkv(self.W_q(queries))  # (batch, heads, queries, head_dim)
            k, v = cache.k, cache.v  # (batch, kv heads, keys, head_dim), projected on the first call
        else:
            q, k, v = self.project(queries, keys, values)  # (batch, heads or kv heads, n, head_dim)
            if self.rope is not None:
                k = self.rope(k, offset=0 if cache is None else len(cache))
            if cache is not None:
                k, v = cache.append(k, v)  # (batch, kv heads, keys seen so far, head_dim)
        b, nq, nk = queries.shape[0], queries.shape[1], k.shape[2]
        if nq > nk and (causal or self.rope is not None):
            raise ValueError(f"more queries ({nq}) than keys ({nk}): with causal=True or rope the "
                             "queries are the last positions of the keys")
        if self.rope is not None:  # the queries are the last nq positions seen so far
            seen = len(cache) if cache is not None and not cache.static else nk
            q = self.rope(q, offset=seen - nq)
        mask = make_mask(valid_lens, b, nq, nk, queries.device)  # (batch, 1 or queries, keys) or None
        if mask is not None:
            mask = mask.unsqueeze(1)  # (batch, 1, 1 or queries, keys): same for every head
        p = self.dropout if self.training else 0.0
        out, weights = grouped_attention(q, k, v, mask, causal, p, self.recording,
                                         may_hide_every_key(valid_lens))
        self._keep(weights)  # (batch, heads, queries, keys), only while recording
        return self.W_o(self.transpose_output(out))  # (batch, queries, num_hiddens)


def grouped_attention(q, k, v, mask, causal, dropout_p, need_weights, rows_may_be_empty=True):
    """Scaled dot-product attention of ``q (batch, heads, queries, head_dim)`` over
    ``k, v (batch, kv_heads, keys, head_dim)``, each key/value head serving ``heads / kv_heads``
    query heads in a row. The weights path lays the queries of a group's heads one after the
    other, ``(batch, kv_heads, group * queries, head_dim)``, so that one product per key/value
    head serves its whole group and no head is copied (a broadcast product against
    ``(batch, kv_heads, 1, keys, head_dim)`` would copy each head ``group`` times inside
    ``torch.matmul``); the causal mask, which depends on the query's position, is then built for
    each head's rows. The fused path passes SDPA ``enable_gqa``, and whether that copies depends
    on the kernel PyTorch picks: its CPU kernel and the CUDA flash kernels (half precision) index
    the shared head, its general fallback (float32 on CUDA, for one) repeats it with
    ``repeat_interleave``.
    ``mask`` is ``(batch, 1, 1 or queries, keys)`` or None. Returns ``(out (batch, heads,
    queries, head_dim), weights (batch, heads, queries, keys) or None)``.
    ``rows_may_be_empty`` as in :func:`attnlib.scoring.scaled_dot_product`."""
    group = q.shape[1] // k.shape[1]
    empty = rows_may_be_empty
    if group == 1:
        return scaled_dot_product(q, k, v, mask, causal, dropout_p, need_weights=need_weights,
                                  check=False, rows_may_be_empty=empty)
    if not need_weights:
        return scaled_dot_product(q, k, v, mask, causal, dropout_p, check=False, enable_gqa=True,
                                  rows_may_be_empty=empty)
    b, h, nq, nk = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    rows = q.reshape(b, k.shape[1], group * nq, q.shape[-1])  # (batch, kv heads, group * queries, head_dim)
    if causal:
        cm = causal_mask(nq, nk, q.device)  # (queries, keys)
        mask = cm if mask is None else mask & cm  # (batch, 1, queries, keys)
    if mask is not None and mask.shape[-2] > 1:
        mask = torch.cat([mask] * group, dim=-2)  # (..., group * queries, keys): a mask, not a head
    out, weights = scaled_dot_product(rows, k, v, mask, False, dropout_p, need_weights=True, check=False,
                                      rows_may_be_empty=empty)
    # out (batch, kv heads, group * queries, head_dim), weights (batch, kv heads, group * queries, keys)
    return out.reshape(b, h, nq, -1), weights.reshape(b, h, nq, nk)


def check_config(num_hiddens, num_heads, dropout, sizes, rope) -> None:
    """The arguments of :class:`MultiHeadAttention` (``sizes``: query, key, value sizes)."""
    check_int("num_hiddens", num_hiddens)
    check_int("num_heads", num_heads)
    if num_hiddens % num_heads:
        raise ValueError(f"num_hiddens ({num_hiddens}) must be divisible by num_heads ({num_heads})")
    check_probability("dropout", dropout)
    for name, size in zip(("query_size", "key_size", "value_size"), sizes, strict=True):
        if size is not None:
            check_int(name, size)
    if rope is not None and not isinstance(rope, RotaryEmbedding):
        raise TypeError(f"rope must be a RotaryEmbedding or None, got {type(rope).__name__}")
    if rope is not None and rope.dim != num_hiddens // num_heads:
        raise ValueError(f"rope.dim ({rope.dim}) must equal the head size num_hiddens / "
                         f"num_heads = {num_hiddens // num_heads}")


def check_kv_heads(num_heads, num_kv_heads) -> None:
    """``num_kv_heads`` key/value heads must split ``num_heads`` query heads into equal groups."""
    check_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads ({num_kv_heads}) must divide num_heads ({num_heads}): "
                         "each key/value head serves an equal group of query heads")


def check_inputs(mha: MultiHeadAttention, queries, keys, values, causal, cache) -> None:
    """Shapes, dtypes and devices against the module's sizes and parameters (metadata only)."""
    check_qkv(queries, keys, values)
    W_q, W_k, W_v = mha.W_q, mha.W_k, mha.W_v
    for name, x, layer in (("queries", queries, W_q), ("keys", keys, W_k), ("values", values, W_v)):
        check_size(name, x.shape[-1], layer.in_features, x)
    check_module_input(mha, "queries", queries, W_q.weight)
    check_bool("causal", causal)
    if cache is not None and not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
    if cache is not None and cache.k is not None and cache.k.shape[0] != queries.shape[0]:
        raise ValueError(f"this cache holds keys for batch size {cache.k.shape[0]}, but queries "
                         f"has batch size {queries.shape[0]}: use a new KVCache per batch")
