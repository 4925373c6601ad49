"""Chapter 3: attention scoring functions.

An attention layer scores every query against every key, turns the scores
into weights with a (masked) softmax, and returns the weighted average of the
values. The modules here differ only in the score::

    dot          q . k                        DotAttention
    scaled dot   q . k / sqrt(d)              DotProductAttention
    general      q^T W k                      GeneralAttention    (Luong)
    cosine       beta * cos(q, k)             CosineAttention     (Graves)
    location     (W q)_i, ignores the keys    LocationAttention   (Luong)
    additive     w^T tanh(W_q q + W_k k)      AdditiveAttention   (Bahdanau)

plus two ways to restrict or harden the weights: :class:`LocalAttention`
(a window around an aligned position) and :class:`HardAttention` (one key,
picked by argmax or by sampling; not differentiable).

Every forward takes d2l's ``(queries, keys, values, valid_lens)``:
``queries (batch, queries, d_q)``, ``keys (batch, keys, d_k)``,
``values (batch, keys, d_v)`` and ``valid_lens`` that is ``None``, ``(batch,)``
(per sequence), ``(batch, queries)`` (per query) or a boolean mask
``(batch, keys)`` / ``(batch, queries, keys)`` with True = may attend.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_bool,
    check_device,
    check_float,
    check_int,
    check_lengths,
    check_module_input,
    check_nonempty,
    check_number,
    check_positive,
    check_probability,
    check_qkv,
    check_same,
    check_size,
    check_tensor,
)
from .recording import AttentionModule


def make_mask(valid_lens, batch_size: int, num_queries: int, num_keys: int, device=None):
    """Turn ``valid_lens`` into a boolean mask ``(batch, 1 or queries, keys)``, True = attend.

    Returns ``None`` when ``valid_lens`` is ``None``. Raises a ``ValueError`` for lengths
    that are negative, longer than the keys, fractional, of the wrong shape, or (when
    ``device`` is given) on another device than the queries. The value checks never make
    a GPU wait (see :func:`attnlib._checks.check_values`).
    """
    if valid_lens is None:
        return None
    for name, n in (("batch_size", batch_size), ("num_queries", num_queries), ("num_keys", num_keys)):
        check_int(name, n, minimum=0)
    if not isinstance(valid_lens, torch.Tensor):
        raise TypeError(f"valid_lens must be a torch.Tensor or None, got {type(valid_lens).__name__}")
    check_device("valid_lens", valid_lens, device, "the queries")
    if valid_lens.dtype == torch.bool:
        ok = valid_lens.shape in ((batch_size, num_keys), (batch_size, num_queries, num_keys))
        if not ok:
            raise ValueError(f"valid_lens is a bool mask of shape {tuple(valid_lens.shape)}; "
                             f"expected ({batch_size}, {num_keys}) or "
                             f"({batch_size}, {num_queries}, {num_keys})")
        return valid_lens if valid_lens.dim() == 3 else valid_lens.unsqueeze(1)
    if valid_lens.shape not in ((batch_size,), (batch_size, num_queries)):
        raise ValueError(f"valid_lens has shape {tuple(valid_lens.shape)}; expected (batch,) = "
                         f"({batch_size},), (batch, queries) = ({batch_size}, {num_queries}), "
                         "or a bool mask (batch, keys) / (batch, queries, keys)")
    check_lengths("valid_lens", valid_lens, 0, num_keys)
    rows = num_queries if valid_lens.dim() == 2 else 1
    lens = valid_lens.reshape(batch_size, rows, 1)  # (batch, 1 or queries, 1); no -1: batch 0 works
    positions = torch.arange(num_keys, device=valid_lens.device)  # (keys,)
    return positions < lens  # (batch, 1 or queries, keys)


def may_hide_every_key(valid_lens) -> bool:
    """Whether the mask :func:`make_mask` builds from ``valid_lens`` may hide every key from
    some query. False for no mask, and for lengths on the CPU that are all at least 1 (read
    there anyway by the checks); True for boolean masks and for lengths on an accelerator, where
    reading them would make the host wait for the device. A caller passes the answer to
    :func:`scaled_dot_product` (``rows_may_be_empty``), which then pays for the guard that
    turns such a row into zeros only when it may be needed."""
    if valid_lens is None:
        return False
    if valid_lens.dtype == torch.bool or valid_lens.device.type != "cpu" or valid_lens.numel() == 0:
        return True
    return min(valid_lens.flatten().tolist()) < 1


def causal_mask(num_queries: int, num_keys: int, device=None) -> torch.Tensor:
    """Boolean ``(queries, keys)`` mask: query i may see keys up to its own position.

    Aligned bottom-right, so the last query sees every key: with a key/value
    cache the queries are the newest ``num_queries`` positions of ``num_keys``.
    """
    check_int("num_queries", num_queries, minimum=0)
    check_int("num_keys", num_keys, minimum=0)
    if num_queries > num_keys:
        raise ValueError(f"num_queries ({num_queries}) must not exceed num_keys ({num_keys}): "
                         "the queries are the last positions of the keys")
    offset = num_keys - num_queries
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril(offset)


def masked_softmax(X: torch.Tensor, valid_lens=None) -> torch.Tensor:
    """Softmax over the last axis of ``X (batch, queries, keys)``, ignoring masked keys.

    Masked keys get a weight of exactly 0, and a row whose keys are all masked
    gets all-zero weights (d2l fills with -1e6 and so spreads the row uniformly
    over padding; a fill of -inf would give NaN). Works in fp32, fp16 and bf16
    (half precision is computed in float32 and cast back). An empty batch (or no
    queries, or no keys) gives an empty result of the same shape.
    """
    check_tensor("X", X, 3, "(batch, queries, keys)")
    check_float("X", X)
    mask = make_mask(valid_lens, X.shape[0], X.shape[1], X.shape[2], X.device)
    return softmax_with_mask(X, mask)


def softmax_with_mask(scores: torch.Tensor, mask: torch.Tensor | None,
                      rows_may_be_empty: bool = True) -> torch.Tensor:
    """Softmax over the last axis; ``mask`` (broadcastable, True = keep) zeroes the rest.

    Half-precision scores are normalised in float32 (as the fused kernels do) and the
    weights cast back. Masked scores are replaced, so NaN or inf there never matters.
    ``rows_may_be_empty=False`` (the caller knows every row keeps a key) skips the product
    that zeroes fully masked rows.
    """
    dtype = scores.dtype
    scores = scores.float() if dtype in (torch.float16, torch.bfloat16) else scores
    if mask is None:
        return F.softmax(scores, dim=-1).to(dtype)
    # The dtype's most negative number, not -inf: a fully masked row stays finite
    # (uniform), and multiplying by the mask then zeroes it. In a row that keeps a key,
    # exp(min - max) is exactly 0 already.
    scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)  # (..., q, k)
    weights = F.softmax(scores, dim=-1)
    return (weights * mask if rows_may_be_empty else weights).to(dtype)


def check_causal(causal, num_queries: int, num_keys: int) -> None:
    check_bool("causal", causal)
    if causal and num_queries > num_keys:
        raise ValueError(f"causal attention needs at least as many keys ({num_keys}) as "
                         f"queries ({num_queries}): the queries are the last positions")


def _check_sdp(queries, keys, values, mask, causal, dropout_p, scale) -> None:
    """The arguments of :func:`scaled_dot_product`, from metadata only."""
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        check_tensor(name, x, tuple(range(2, 9)), f"(..., {name}, d)")
        check_nonempty(name, x)
    check_float("queries", queries)
    check_same("queries, keys and values", queries, keys, values)
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries and keys must have the same last dim, got queries "
                         f"{tuple(queries.shape)} and keys {tuple(keys.shape)}")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"keys and values must have the same number of positions (dim -2), "
                         f"got keys {tuple(keys.shape)} and values {tuple(values.shape)}")
    if not queries.shape[:-2] == keys.shape[:-2] == values.shape[:-2]:
        raise ValueError(f"queries, keys and values must have the same leading dims (batch, heads, "
                         f"...), got {tuple(queries.shape)}, {tuple(keys.shape)}, {tuple(values.shape)}")
    target = (*queries.shape[:-1], keys.shape[-2])
    if mask is not None:
        if not isinstance(mask, torch.Tensor):
            raise TypeError(f"mask must be a bool tensor or None, got {type(mask).__name__}")
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True = attend), got dtype {mask.dtype}")
        check_device("mask", mask, queries.device, "the queries")
        try:
            ok = torch.broadcast_shapes(mask.shape, target) == target
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to {target} "
                             "(..., queries, keys)")
    check_causal(causal, queries.shape[-2], keys.shape[-2])
    check_probability("dropout_p", dropout_p)
    if scale is not None:
        check_number("scale", scale)


def scaled_dot_product(queries, keys, values, mask=None, causal=False, dropout_p=0.0,
                       need_weights=False, scale=None, *, check: bool = True,
                       enable_gqa: bool = False, rows_may_be_empty: bool = True):
    """Scaled dot-product attention over any leading dims (``(batch, heads, ...)``).

    Shapes: queries ``(..., q, d)``, keys ``(..., k, d)``, values ``(..., k, d_v)``;
    ``mask`` a boolean tensor broadcastable to ``(..., q, k)``, True = attend.
    Returns ``(output (..., q, d_v), weights (..., q, k) or None)``.

    Without ``need_weights`` this calls PyTorch's fused
    ``F.scaled_dot_product_attention``, which never builds the ``q x k`` matrix.
    With it, the same computation runs step by step and keeps the weights (scores
    and softmax in float32 for half-precision inputs, as the fused kernels do).
    Both paths follow one rule for NaN and inf (the library contract): a query with no
    visible key returns zeros; a key/value position that the mask hides from every query
    is ignored, even when it holds NaN or inf; a query holding NaN or inf returns NaN;
    NaN or inf in a key or value that the query sees makes its output NaN.
    ``check=False`` skips the argument checks (for callers that made them already).
    ``enable_gqa`` (fused path only, unchecked: :func:`attnlib.multihead.grouped_attention`
    calls it) lets keys and values ``(batch, kv_heads, k, d)`` serve queries ``(batch, heads,
    q, d)`` in groups of ``heads / kv_heads``, as SDPA's argument of that name.
    ``rows_may_be_empty=False`` says that ``mask`` leaves every query at least one key (see
    :func:`may_hide_every_key`; a causal mask alone never hides a whole row): the guard that
    turns such rows into zeros is then skipped, a few operations fewer per call.
    """
    if check:
        _check_sdp(queries, keys, values, mask, causal, dropout_p, scale)
        check_bool("need_weights", need_weights)
    nq, nk = queries.shape[-2], keys.shape[-2]
    if mask is not None and mask.dim() == 1:
        mask = mask.unsqueeze(0)  # (1, keys): the same keys for every query
    padded = mask is not None
    may_be_empty = padded and rows_may_be_empty  # a causal mask alone never empties a row
    if causal and nq == 1:
        causal = False  # one new query (decoding with a cache) is the last position: it sees every key
    if causal and (mask is not None or nq != nk or need_weights):
        cm = causal_mask(nq, nk, queries.device)  # (queries, keys); hides no key from every query
        mask = cm if mask is None else mask & cm
        causal = False
    if padded:  # zero the keys and values that no query may see: padding garbage stays out (after
        # the causal mask joins: per-query lengths and causality together can hide a key from all)
        keys, values = zero_unseen(mask, keys, values)
    if not need_weights:
        if not may_be_empty:
            out = F.scaled_dot_product_attention(
                queries, keys, values, attn_mask=mask, dropout_p=dropout_p, is_causal=causal,
                scale=scale, enable_gqa=enable_gqa)
            return nan_where_queries_are(out, queries), None  # (..., q, d_v)
        empty = ~mask.any(dim=-1, keepdim=True)  # (..., q, 1): rows with nothing to see
        out = F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=mask | empty, dropout_p=dropout_p, scale=scale,
            enable_gqa=enable_gqa)
        return torch.where(empty, 0.0, nan_where_queries_are(out, queries)), None  # (..., q, d_v)
    dtype = queries.dtype
    wide = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    scale = 1.0 / math.sqrt(queries.shape[-1]) if scale is None else scale
    scores = (queries.to(wide) * scale) @ keys.to(wide).transpose(-2, -1)  # (..., q, k)
    weights = softmax_with_mask(scores, mask, may_be_empty)  # (..., q, k), float32 for half inputs
    # the values no query sees are zeroed above: only an empty row needs weighted_sum's mask
    out = weighted_sum(F.dropout(weights, dropout_p), values.to(wide),
                       mask if may_be_empty else None, zero_hidden=False)  # (..., q, d_v)
    return out.to(dtype), weights.to(dtype)


def nan_where_queries_are(out: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """``out (..., q, d_v)`` with NaN in the rows whose query ``(..., q, d)`` holds NaN or inf.

    The rule is NaN, as on the weights path, but some fused kernels (the CPU's among them)
    return zeros for such a query, or not, depending on the mask and the CPU. ``out + 0 *
    sum(query)`` costs O(q d) and turns exactly those rows into NaN (0 * inf is NaN too);
    add's ``alpha`` does the multiplication. Its gradient is 0, so autograd need not follow
    the sum."""
    with torch.no_grad():
        total = queries.sum(dim=-1, keepdim=True)  # (..., q, 1): finite, or NaN/inf
    return out.add(total, alpha=0)  # (..., q, d_v)


def zero_unseen(mask: torch.Tensor, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Zero the key/value positions of ``xs (..., keys, d)`` that ``mask`` (True = attend,
    broadcastable to ``(..., queries, keys)``) hides from every query: padding garbage (NaN, inf)
    would otherwise leak, since a weight of 0 times NaN is NaN."""
    # True where some query sees the key; a one-row mask needs no any()
    rows = mask if mask.shape[-2] == 1 else mask.any(dim=-2, keepdim=True)  # (..., 1, keys)
    seen = rows.transpose(-2, -1)  # (..., keys, 1)
    # torch.where writes the result in one pass (an out-of-place masked_fill copies, then fills)
    return tuple(torch.where(seen, x, 0.0) for x in xs)  # (..., keys, d) each


def weighted_sum(weights: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None, *,
                 zero_hidden: bool = True) -> torch.Tensor:
    """``weights (..., q, k) @ values (..., k, d_v)`` by the library's rule: a query that sees no
    key gets exactly 0 (not ``0 * NaN`` from a value another query sees), and values no query
    sees are ignored (zeroed here; ``zero_hidden=False``: the caller zeroed them already)."""
    if mask is None:
        return weights @ values  # (..., q, d_v)
    empty = ~mask.any(dim=-1, keepdim=True)  # (..., q, 1): queries with nothing to see
    if zero_hidden:
        values = zero_unseen(mask, values)[0]  # (..., k, d_v)
    return torch.where(empty, 0.0, weights @ values)  # (..., q, d_v)


class _ScoredAttention(AttentionModule):
    """Shared forward: score, masked softmax, dropout, weighted sum of values.

    Subclasses define ``score(queries, keys) -> (batch, queries, keys)``.
    """

    same_dim = False  # True when the score compares queries and keys directly

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = nn.Dropout(dropout)

    def score(self, queries, keys):  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values, same_dim=self.same_dim)
        check_module_input(self, "queries", queries)
        mask = make_mask(valid_lens, queries.shape[0], queries.shape[1], keys.shape[1], queries.device)
        scores = self.score(queries, keys)  # (batch, queries, keys)
        return self.attend(scores, mask, values)

    def attend(self, scores, mask, values):
        """Weights from ``scores`` and ``mask``, then their average of ``values``."""
        weights = softmax_with_mask(scores, mask)  # (batch, queries, keys)
        self._keep(weights)
        return weighted_sum(self.dropout(weights), values, mask)  # (batch, queries, value_size)


class DotAttention(_ScoredAttention):
    """Plain dot-product score ``q . k`` (Luong's "dot"). Grows with the dimension."""

    same_dim = True

    def score(self, queries, keys):
        return torch.bmm(queries, keys.transpose(1, 2))  # (batch, queries, keys)


class DotProductAttention(_ScoredAttention):
    """Scaled dot-product attention, ``softmax(q k^T / sqrt(d)) v`` (Vaswani et al.).

    Dividing by ``sqrt(d)`` keeps the scores' variance near 1 whatever the
    dimension, so the softmax does not saturate. Uses PyTorch's fused kernel
    unless the weights are being recorded.
    """

    same_dim = True

    def score(self, queries, keys):
        return torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])

    def forward(self, queries, keys, values, valid_lens=None, causal: bool = False):
        check_qkv(queries, keys, values, same_dim=True)
        mask = make_mask(valid_lens, queries.shape[0], queries.shape[1], keys.shape[1], queries.device)
        check_causal(causal, queries.shape[1], keys.shape[1])
        p = self.dropout.p if self.training else 0.0
        out, weights = scaled_dot_product(queries, keys, values, mask, causal, p,
                                          need_weights=self.recording, check=False)
        self._keep(weights)
        return out  # (batch, queries, value_size)


class GeneralAttention(_ScoredAttention):
    """Bilinear ("general") score ``q^T W k`` (Luong et al.): queries and keys may differ in size."""

    def __init__(self, query_size: int, key_size: int, dropout: float = 0.0) -> None:
        super().__init__(dropout)
        check_int("query_size", query_size)
        check_int("key_size", key_size)
        self.query_size, self.key_size = query_size, key_size
        self.W = nn.Linear(key_size, query_size, bias=False)

    def score(self, queries, keys):
        check_size("queries", queries.shape[-1], self.query_size, queries)
        check_size("keys", keys.shape[-1], self.key_size, keys)
        return torch.bmm(queries, self.W(keys).transpose(1, 2))  # (batch, queries, keys)


class CosineAttention(_ScoredAttention):
    """Content-based score ``beta * cos(q, k)`` (Graves et al., Neural Turing Machines).

    The cosine ignores vector lengths and lies in [-1, 1]; ``beta`` (the
    "key strength") sharpens the softmax.
    """

    same_dim = True

    def __init__(self, beta: float = 1.0, dropout: float = 0.0) -> None:
        super().__init__(dropout)
        check_positive("beta", beta)
        self.beta = beta

    def score(self, queries, keys):
        q = F.normalize(queries, dim=-1)  # (batch, queries, d)
        k = F.normalize(keys, dim=-1)  # (batch, keys, d)
        return self.beta * torch.bmm(q, k.transpose(1, 2))  # (batch, queries, keys)


class LocationAttention(_ScoredAttention):
    """Location-based score ``(W q)_i`` (Luong et al.): the weights depend on the query only.

    ``W`` maps a query to one score per key position, so the module needs the
    largest number of keys it will see, ``max_keys``.
    """

    def __init__(self, query_size: int, max_keys: int, dropout: float = 0.0) -> None:
        super().__init__(dropout)
        check_int("query_size", query_size)
        check_int("max_keys", max_keys)
        self.query_size, self.max_keys = query_size, max_keys
        self.W = nn.Linear(query_size, max_keys, bias=False)

    def score(self, queries, keys):
        check_size("queries", queries.shape[-1], self.query_size, queries)
        if keys.shape[1] > self.max_keys:
            raise ValueError(f"keys has {keys.shape[1]} positions (shape {tuple(keys.shape)}), "
                             f"more than max_keys={self.max_keys}")
        return self.W(queries)[..., : keys.shape[1]]  # (batch, queries, keys)


class AdditiveAttention(_ScoredAttention):
    """Additive score ``w_v^T tanh(W_q q + W_k k)`` (Bahdanau et al.).

    A one-hidden-layer MLP scores each query-key pair, so queries and keys may
    have different sizes. ``query_size``/``key_size`` default to lazy layers
    that infer them on the first call, as d2l's ``AdditiveAttention(num_hiddens, dropout)``.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, *,
                 query_size: int | None = None, key_size: int | None = None) -> None:
        super().__init__(dropout)
        check_int("num_hiddens", num_hiddens)
        for name, size in (("query_size", query_size), ("key_size", key_size)):
            if size is not None:
                check_int(name, size)
        self.W_q = _linear(query_size, num_hiddens)
        self.W_k = _linear(key_size, num_hiddens)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)

    def score(self, queries, keys):
        for name, x, layer in (("queries", queries, self.W_q), ("keys", keys, self.W_k)):
            if not isinstance(layer, nn.LazyLinear):
                check_size(name, x.shape[-1], layer.in_features, x)
        q, k = self.W_q(queries), self.W_k(keys)  # (batch, queries, h), (batch, keys, h)
        features = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))  # (batch, queries, keys, h)
        return self.w_v(features).squeeze(-1)  # (batch, queries, keys)


class LocalAttention(DotProductAttention):
    """Scaled dot-product attention restricted to a window (Luong et al.'s local-m).

    Query ``t`` is aligned with key position ``p_t = t (n_k - 1) / (n_q - 1)``
    (``p_t = t`` for self-attention) and sees only keys with ``|s - p_t| <= window``.
    The cost of a banded implementation is ``O(n * window)``; this one masks a
    full score matrix, which is clearer and fine at book sizes.
    """

    def __init__(self, window: int, dropout: float = 0.0) -> None:
        super().__init__(dropout)
        if not isinstance(window, int) or isinstance(window, bool) or window < 0:
            raise ValueError(f"window must be a non-negative int, got {window!r}")
        self.window = window

    def band(self, num_queries: int, num_keys: int, device=None) -> torch.Tensor:
        """Boolean ``(queries, keys)`` mask of each query's window."""
        ratio = (num_keys - 1) / max(num_queries - 1, 1)
        centre = torch.arange(num_queries, device=device) * ratio  # (queries,)
        dist = torch.arange(num_keys, device=device) - centre.unsqueeze(1)  # (queries, keys)
        return dist.abs() <= self.window + 1e-6

    def forward(self, queries, keys, values, valid_lens=None, causal: bool = False):
        check_qkv(queries, keys, values, same_dim=True)
        b, nq, nk = queries.shape[0], queries.shape[1], keys.shape[1]
        mask = make_mask(valid_lens, b, nq, nk, queries.device)  # (batch, 1 or queries, keys) or None
        band = self.band(nq, nk, queries.device)  # (queries, keys)
        mask = band.expand(b, nq, nk) if mask is None else mask & band  # (batch, queries, keys)
        return super().forward(queries, keys, values, mask, causal)  # (batch, queries, value_size)


class HardAttention(DotAttention):
    """Attend to exactly one key: the argmax of the dot-product weights, or a sample of them.

    The score is the plain ``q . k`` (no ``1/sqrt(d)``: scaling never changes the
    argmax, and a temperature belongs to the caller, who can divide the queries
    by it). The output is the chosen value itself. Picking an index is not a
    differentiable operation, so no gradient reaches the queries or keys; this
    is why soft attention, an expectation over the same choice, is what gets
    trained by backpropagation. ``mode`` is ``"argmax"`` or ``"sample"``.
    """

    def __init__(self, mode: str = "argmax", generator: torch.Generator | None = None) -> None:
        super().__init__(dropout=0.0)
        if mode not in ("argmax", "sample"):
            raise ValueError(f"mode must be 'argmax' or 'sample', got {mode!r}")
        self.mode, self.generator = mode, generator

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values, same_dim=True)
        mask = make_mask(valid_lens, queries.shape[0], queries.shape[1], keys.shape[1])
        soft = softmax_with_mask(self.score(queries, keys), mask)  # (batch, queries, keys)
        if self.mode == "argmax":
            choice = soft.argmax(dim=-1)  # (batch, queries)
        else:
            flat = soft.reshape(-1, soft.shape[-1])  # (batch * queries, keys)
            # multinomial refuses a row of zeros: a query that sees no key draws from equal
            # weights instead, and the mask below turns its pick back into nothing
            safe = torch.where(flat.sum(-1, keepdim=True) > 0, flat, torch.ones_like(flat))
            choice = torch.multinomial(safe, 1, generator=self.generator)  # (batch * queries, 1)
            choice = choice.view(soft.shape[:-1])  # (batch, queries)
        weights = F.one_hot(choice, soft.shape[-1]).to(soft.dtype)  # (batch, queries, keys)
        if mask is not None:
            weights = weights * mask  # a fully masked row picks nothing
        self._keep(weights)
        return weighted_sum(weights, values, mask)  # (batch, queries, value_size)


def _linear(in_features: int | None, out_features: int) -> nn.Module:
    """A bias-free linear layer; lazy (size inferred on first call) when ``in_features`` is None."""
    if in_features is None:
        return nn.LazyLinear(out_features, bias=False)
    return nn.Linear(in_features, out_features, bias=False)
