"""Masked softmax and the scoring modules: d2l parity, masking edge cases, the seed's example."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib as A
from tests.conftest import copy_linear_weights

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def seed_batch():
    """The worked example of seed 003: identical keys, values 0..39, valid lengths [2, 6]."""
    keys = torch.ones((2, 10, 2))
    values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
    return keys, values, torch.tensor([2, 6])


EXPECTED = torch.tensor([[[2.0, 3, 4, 5]], [[10.0, 11, 12, 13]]])


def test_seed_example_additive():
    keys, values, valid_lens = seed_batch()
    attention = A.AdditiveAttention(num_hiddens=8, dropout=0.1).eval()
    out = attention(torch.normal(0, 1, (2, 1, 20)), keys, values, valid_lens)
    torch.testing.assert_close(out, EXPECTED)


def test_seed_example_scaled_dot_product():
    keys, values, valid_lens = seed_batch()
    attention = A.DotProductAttention(dropout=0.5).eval()
    out = attention(torch.normal(0, 1, (2, 1, 2)), keys, values, valid_lens)
    torch.testing.assert_close(out, EXPECTED)


@pytest.mark.parametrize("valid_lens", [None, torch.tensor([2, 3]), torch.tensor([[1, 3], [2, 4]])])
def test_masked_softmax_matches_d2l(d2l, valid_lens):
    X = torch.rand(2, 2, 4)
    torch.testing.assert_close(A.masked_softmax(X, valid_lens), d2l.masked_softmax(X, valid_lens))


def test_fully_masked_row_is_zero_where_d2l_is_uniform(d2l):
    X = torch.rand(2, 3, 4)
    ours = A.masked_softmax(X, torch.tensor([0, 2]))
    theirs = d2l.masked_softmax(X, torch.tensor([0, 2]))
    assert torch.equal(ours[0], torch.zeros(3, 4))
    torch.testing.assert_close(theirs[0], torch.full((3, 4), 0.25))  # d2l spreads over padding
    torch.testing.assert_close(ours[1], theirs[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows_no_nan_any_dtype(dtype):
    X = (torch.randn(3, 2, 5) * 50).to(dtype)
    W = A.masked_softmax(X, torch.tensor([[0, 0], [0, 5], [3, 0]]))
    assert not torch.isnan(W).any()
    assert torch.equal(W[0], torch.zeros_like(W[0]))
    assert torch.allclose(W[1, 1].float().sum(), torch.tensor(1.0), atol=1e-2)


def test_bool_mask_equals_lengths():
    X = torch.randn(2, 3, 5)
    lens = torch.tensor([[1, 2, 5], [0, 3, 4]])
    mask = torch.arange(5) < lens.unsqueeze(-1)  # (batch, queries, keys)
    torch.testing.assert_close(A.masked_softmax(X, mask), A.masked_softmax(X, lens))
    key_mask = torch.tensor([[True, False, True, False, True]] * 2)
    W = A.masked_softmax(X, key_mask)
    assert torch.equal(W[..., 1], torch.zeros(2, 3)) and torch.equal(W[..., 3], torch.zeros(2, 3))


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 3), nq=st.integers(1, 4), nk=st.integers(1, 6),
       per_query=st.booleans(), dtype=st.sampled_from(DTYPES), data=st.data())
def test_masked_softmax_properties(batch, nq, nk, per_query, dtype, data):
    shape = (batch, nq) if per_query else (batch,)
    lens = torch.tensor(data.draw(st.lists(st.integers(0, nk), min_size=math.prod(shape),
                                           max_size=math.prod(shape)))).reshape(shape)
    scale = data.draw(st.sampled_from([1.0, 100.0, 1e4]))
    X = (torch.randn(batch, nq, nk) * scale).to(dtype)
    W = A.masked_softmax(X, lens).float()
    assert not torch.isnan(W).any()
    full = lens.reshape(batch, -1, 1).expand(batch, nq, 1)
    keep = torch.arange(nk) < full  # (batch, queries, keys)
    assert torch.equal(W[~keep], torch.zeros_like(W[~keep]))  # masked keys exactly 0
    sums = W.sum(-1)
    has_keys = full.squeeze(-1) > 0
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(sums[has_keys], torch.ones_like(sums[has_keys]), atol=tol)
    assert torch.equal(sums[~has_keys], torch.zeros_like(sums[~has_keys]))


def test_gradients_finite_with_fully_masked_rows():
    X = torch.randn(2, 2, 4, requires_grad=True)
    A.masked_softmax(X, torch.tensor([0, 3])).sum().backward()
    assert torch.isfinite(X.grad).all() and torch.equal(X.grad[0], torch.zeros(2, 4))


def test_additive_matches_d2l(d2l):
    q, k, v = torch.randn(2, 3, 5), torch.randn(2, 4, 6), torch.randn(2, 4, 7)
    ours = A.AdditiveAttention(8, 0.0).eval()
    theirs = d2l.AdditiveAttention(8, 0.0).eval()
    vl = torch.tensor([2, 4])
    ours(q, k, v, vl), theirs(q, k, v, vl)  # materialise the lazy layers
    copy_linear_weights(ours, theirs, ["W_q", "W_k", "w_v"])
    torch.testing.assert_close(ours(q, k, v, vl), theirs(q, k, v, vl))


@pytest.mark.parametrize("vl", [None, torch.tensor([1, 4]), torch.tensor([[1, 2, 3], [4, 4, 1]])])
def test_dot_product_matches_d2l_both_paths(d2l, vl):
    q, k, v = torch.randn(2, 3, 6), torch.randn(2, 4, 6), torch.randn(2, 4, 5)
    ours = A.DotProductAttention(0.0).eval()
    expected = d2l.DotProductAttention(0.0).eval()(q, k, v, vl)
    torch.testing.assert_close(ours(q, k, v, vl), expected)  # fused path
    with A.record_attention(ours) as rec:
        torch.testing.assert_close(ours(q, k, v, vl), expected)  # weights path
    assert rec.last("DotProductAttention").shape == (2, 1, 3, 4)


def test_fused_path_empty_rows_are_zero_not_nan():
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 3)
    out = A.DotProductAttention().eval()(q, k, v, torch.tensor([0, 5]))
    assert torch.equal(out[0], torch.zeros(3, 3)) and torch.isfinite(out).all()


def make_modules():
    return {
        "dot": A.DotAttention(), "scaled": A.DotProductAttention(),
        "general": A.GeneralAttention(query_size=4, key_size=4),
        "cosine": A.CosineAttention(beta=3.0), "location": A.LocationAttention(4, max_keys=8),
        "additive": A.AdditiveAttention(8, query_size=4, key_size=4),
        "local": A.LocalAttention(window=1), "hard": A.HardAttention(),
        "sampled": A.HardAttention("sample", torch.Generator().manual_seed(0)),
    }


@pytest.mark.parametrize("name", list(make_modules()))
def test_every_score_masks_and_averages(name):
    module = make_modules()[name].eval()
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 6, 4), torch.randn(2, 6, 5)
    vl = torch.tensor([0, 4])
    with A.record_attention(module) as rec:
        out = module(q, k, v, vl)
    W = rec.last(rec.names()[0])[:, 0]  # (batch, queries, keys)
    assert out.shape == (2, 3, 5) and W.shape == (2, 3, 6)
    assert torch.equal(W[0], torch.zeros(3, 6)) and torch.equal(out[0], torch.zeros(3, 5))
    assert torch.equal(W[1, :, 4:], torch.zeros(3, 2))
    torch.testing.assert_close(out, torch.bmm(W, v))


def test_score_formulas():
    q, k = torch.randn(1, 2, 4), torch.randn(1, 3, 4)
    dot = A.DotAttention().score(q, k)
    torch.testing.assert_close(dot, q @ k.transpose(1, 2))
    torch.testing.assert_close(A.DotProductAttention().score(q, k), dot / 2)
    cos = A.CosineAttention(beta=2.0).score(q, k)
    expected = 2 * torch.nn.functional.cosine_similarity(q.unsqueeze(2), k.unsqueeze(1), dim=-1)
    torch.testing.assert_close(cos, expected)
    general = A.GeneralAttention(4, 4)
    torch.testing.assert_close(general.score(q, k), q @ general.W.weight @ k.transpose(1, 2))


def test_local_window_band():
    band = A.LocalAttention(window=1).band(5, 5)
    expected = (torch.arange(5)[:, None] - torch.arange(5)).abs() <= 1
    assert torch.equal(band, expected)


def test_hard_attention_has_no_gradient_to_query_but_soft_does():
    q = torch.randn(1, 1, 4, requires_grad=True)
    k, v = torch.randn(1, 5, 4), torch.randn(1, 5, 3)
    hard = A.HardAttention()(q, k, v)
    assert not hard.requires_grad or torch.autograd.grad(hard.sum(), q, allow_unused=True)[0] is None
    soft = A.DotProductAttention()(q, k, v)
    (grad,) = torch.autograd.grad(soft.sum(), q)
    assert grad.abs().sum() > 0
    torch.testing.assert_close(hard[0, 0], v[0, (q @ k.transpose(1, 2)).argmax()])


def test_hard_sampling_follows_the_soft_weights():
    q, k, v = torch.randn(1, 1, 4), torch.randn(1, 3, 4), torch.eye(3).unsqueeze(0)
    gen = torch.Generator().manual_seed(1)
    hard = A.HardAttention("sample", gen)
    picks = torch.stack([hard(q, k, v)[0, 0] for _ in range(3000)]).mean(0)
    soft = A.DotAttention()(q, k, v)[0, 0]
    torch.testing.assert_close(picks, soft, atol=0.04, rtol=0)


# --- one NaN rule on both paths (fused kernel and weights) ---------------------------------------

def _both_paths(q, k, v, mask=None, causal=False):
    fused, _ = A.scaled_dot_product(q, k, v, mask, causal)
    weighted, weights = A.scaled_dot_product(q, k, v, mask, causal, need_weights=True)
    return fused, weighted, weights


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("garbage", [float("nan"), float("inf"), -float("inf"), 1e30])
def test_garbage_in_masked_keys_and_values_never_leaks(dtype, garbage):
    q, k, v = (torch.randn(2, 2, n, 8, dtype=dtype) for n in (3, 6, 6))
    mask = (torch.arange(6) < torch.tensor([6, 2]).view(2, 1)).view(2, 1, 1, 6)  # (batch, 1, 1, keys)
    tol = 1e-2 if dtype in (torch.bfloat16, torch.float16) else 1e-5  # a few units of the last place
    clean = _both_paths(q, k, v, mask)
    k[1, :, 2:], v[1, :, 3:] = garbage, garbage  # padding of the second sequence
    for causal in (False, True):
        fused, weighted, weights = _both_paths(q, k, v, mask, causal)
        assert torch.isfinite(fused).all() and torch.isfinite(weighted).all()
        assert torch.equal(weights[1, :, :, 2:], torch.zeros_like(weights[1, :, :, 2:]))
        torch.testing.assert_close(fused.float(), weighted.float(), atol=tol, rtol=tol)
    torch.testing.assert_close(_both_paths(q, k, v, mask)[0].float(), clean[0].float(), atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_huge_finite_padding_whose_sum_cancels_never_leaks(dtype):
    """Hidden keys and values of +-max/4: finite (their sum even 0), yet a product with them
    overflows (a score, or a value times the gradient): zeroed, they leave the output and the
    gradients finite, and the two paths agree."""
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 2, 6, 8, generator=gen).to(dtype) for _ in range(3))
    huge = torch.finfo(dtype).max / 4
    k[1, :, 2], k[1, :, 3] = huge, -huge  # hidden: sequence 1 sees keys 0 and 1
    v[1, :, 4], v[1, :, 5] = huge, -huge
    mask = (torch.arange(6) < torch.tensor([6, 2]).view(2, 1)).view(2, 1, 1, 6)
    results = []
    for weights in (False, True):
        q_, k_, v_ = (x.clone().requires_grad_() for x in (q, k, v))
        out, _ = A.scaled_dot_product(q_, k_, v_, mask, need_weights=weights)
        out.sum().backward()
        results.append((out, q_.grad, k_.grad, v_.grad))
        assert all(torch.isfinite(t).all() for t in results[-1])
    tol = 1e-2 if dtype == torch.bfloat16 else 1e-5
    for got, want in zip(*results, strict=True):
        torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)


def test_a_key_hidden_only_by_lengths_and_causality_together_never_leaks():
    """Per-query lengths (3, 1, 1) let key 2 be seen by query 0 only, which causality hides it
    from: no query sees it, and the NaN it holds must reach no output, on either path."""
    q, k, v = (torch.randn(1, 2, 3, 8) for _ in range(3))
    mask = torch.arange(3) < torch.tensor([3, 1, 1]).view(3, 1)  # (queries, keys)
    k[..., 2, :], v[..., 2, :] = float("nan"), float("nan")
    fused, weighted, weights = _both_paths(q, k, v, mask, causal=True)
    assert torch.isfinite(fused).all() and torch.isfinite(weighted).all()
    assert torch.equal(weights[..., 2], torch.zeros_like(weights[..., 2]))
    torch.testing.assert_close(fused, weighted)


@pytest.mark.parametrize("need_weights", [False, True])
def test_nan_query_gives_nan_row_and_fully_masked_row_gives_zeros(need_weights):
    q, k, v = torch.randn(2, 1, 3, 8), torch.randn(2, 1, 5, 8), torch.randn(2, 1, 5, 8)
    q[0, 0, 1] = float("nan")
    for mask in (None, torch.ones(2, 1, 1, 5, dtype=torch.bool)):
        out, _ = A.scaled_dot_product(q, k, v, mask, need_weights=need_weights)
        assert out[0, 0, 1].isnan().all() and torch.isfinite(out[0, 0, [0, 2]]).all()
        assert torch.isfinite(out[1]).all()
    hidden = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
    out, _ = A.scaled_dot_product(q, k, v, hidden, need_weights=need_weights)
    assert torch.equal(out, torch.zeros_like(out))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_weights_path_computes_half_precision_in_float32(dtype):
    """Recording weights must not change what a half-precision model computes: both paths are
    as close to a float64 reference as the inputs' rounding allows."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (3 * torch.randn(2, 4, 128, 64, generator=gen) for _ in range(3))
    q, k, v = (x.to(dtype) for x in (q, k, v))
    mask = torch.arange(128) < torch.tensor([128, 70]).view(2, 1, 1, 1)  # (batch, 1, 1, keys)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), attn_mask=mask)
    try:
        fused, weighted, weights = _both_paths(q, k, v, mask)
    except RuntimeError as err:  # torch's own limit, e.g. ATEN_CPU_CAPABILITY=default on an AVX-512 Xeon
        if "pack_vnni2 is only supported when avx512 is supported" not in str(err):
            raise
        pytest.skip(f"torch cannot run this dtype with these CPU kernels: {err}")
    assert weighted.dtype == weights.dtype == dtype
    scale = ref.abs().max()
    fused_err = ((fused.double() - ref).abs().max() / scale).item()
    weighted_err = ((weighted.double() - ref).abs().max() / scale).item()
    assert weighted_err <= 1.5 * fused_err + 1e-3, (weighted_err, fused_err)


def test_mha_paths_agree_on_masked_garbage():
    mha = A.MultiHeadAttention(8, 2).eval()
    X = torch.randn(2, 5, 8)
    X[1, 3:] = float("nan")  # padding of the second sentence
    lens = torch.tensor([5, 3])
    fused = mha(X, X, X, lens)
    with A.record_attention(mha):
        weighted = mha(X, X, X, lens)
    torch.testing.assert_close(fused[:, :3], weighted[:, :3])
    assert torch.isfinite(fused[0]).all() and torch.isfinite(fused[1, :3]).all()
