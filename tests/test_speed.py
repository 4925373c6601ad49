"""What multi-head attention's fast path pays beyond raw SDPA, counted, not timed.

Times on a shared machine are noisy (``make bench`` measures them, candidates taking turns);
the number of aten operations one forward dispatches is exact. A GPU launches a kernel for most
of them, and on a CPU each costs a few microseconds, which is what small models wait on.
"""
from contextlib import nullcontext

import pytest
import torch

import attnlib as A
from bench.attention import RawSDPA
from bench.common import count_ops as _count

MASKS = ("none", "padding", "causal")


def _setup(mask, n=16, batch=2, num_hiddens=64, heads=4):
    mha = A.MultiHeadAttention(num_hiddens, heads).eval()
    X = torch.randn(batch, n, num_hiddens)
    lens = torch.tensor([n, n // 2])  # every sequence sees at least one key
    keep = (torch.arange(n) < lens.view(-1, 1)).view(batch, 1, 1, n)  # (batch, 1, 1, keys)
    ours = lambda: mha(X, X, X, lens if mask == "padding" else None, causal=mask == "causal")
    raw = lambda: RawSDPA(mha)(X, keep if mask == "padding" else None, mask == "causal")
    return mha, X, ours, raw


@pytest.mark.parametrize("mask", MASKS)
def test_fast_path_dispatches_at_most_two_ops_more_than_raw_sdpa(mask):
    """Raw SDPA written on the same weights (three ``F.linear``, one SDPA call, ``W_o``) is the
    floor; attnlib adds its mask, its NaN rules and its checks, at most 2 operations more."""
    _, _, ours, raw = _setup(mask)
    torch.testing.assert_close(ours(), raw())  # the same function, or the count means nothing
    ours_ops, raw_ops = _count(ours), _count(raw)
    assert len(ours_ops) <= len(raw_ops) + 2, (mask, len(ours_ops), len(raw_ops), ours_ops)
    assert ours_ops.count("mm") == 2  # one packed product for W_q, W_k, W_v, one for W_o
    assert ours_ops.count("_scaled_dot_product_flash_attention_for_cpu") == 1


def test_guard_for_empty_rows_is_paid_only_when_a_row_can_be_empty():
    """A length of 0 hides every key from its queries: those rows must be zeros, not NaN, and
    only then does the forward pay for the guard."""
    mha, X, _, _ = _setup("padding")
    full = _count(lambda: mha(X, X, X, torch.tensor([16, 8])))
    empty = _count(lambda: mha(X, X, X, torch.tensor([16, 0])))
    assert len(empty) > len(full) and "any" in empty and "any" not in full  # the guard's mask.any
    for record in (False, True):
        with torch.no_grad(), A.record_attention(mha) if record else nullcontext():
            out = mha(X, X, X, torch.tensor([16, 0]))
        assert out.isfinite().all()
        assert torch.equal(out[1], torch.zeros_like(out[1]))  # W_o of zeros, no bias
        torch.testing.assert_close(out[0], mha(X[:1], X[:1], X[:1]).detach()[0])


@pytest.mark.parametrize("num_kv_heads, bias", [(4, True), (2, False), (1, True)])
def test_packed_projection_equals_three_separate_ones(num_kv_heads, bias):
    """Self-attention (one tensor for queries, keys and values) makes one product with the three
    weights stacked; any other call makes three. Both must give the same outputs and gradients:
    the two calls below differ only in which path they take (a swapped or misplaced block of
    rows, or grouped-query heads split as equal thirds, would show)."""
    torch.manual_seed(1)
    mha = A.MultiHeadAttention(16, 4, bias=bias, num_kv_heads=num_kv_heads)
    X = torch.randn(2, 5, 16)
    lens = torch.tensor([5, 3])
    grads = []
    for args in ((X, X, X), (X, X.clone(), X.clone())):
        mha.zero_grad()
        out = mha(*args, lens, causal=True)
        out.pow(2).sum().backward()
        grads.append((out.detach(), [p.grad.clone() for p in mha.parameters()]))
    (packed, g1), (separate, g2) = grads
    torch.testing.assert_close(packed, separate)
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b)
    assert len(g1) == 4 * (1 + bias)  # W_q, W_k, W_v, W_o stay the module's parameters
