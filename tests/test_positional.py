"""Positional encodings: d2l parity, offsets, the offset-as-rotation property, RoPE."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib as A
from attnlib.positional import offset_rotation


@pytest.fixture(scope="module")
def d2l_pe(d2l):
    """d2l 1.0.3's PositionalEncoding (d2l imported once per session, about 14 s)."""
    return d2l.PositionalEncoding(32, 0.0, max_len=1000).eval()


@pytest.mark.slow
def test_table_equals_d2l(d2l_pe):
    ours = A.PositionalEncoding(32, 0.0, max_len=1000).eval()
    torch.testing.assert_close(ours.P, d2l_pe.P)
    X = torch.randn(2, 60, 32)
    torch.testing.assert_close(ours(X), d2l_pe(X))


def test_table_formula():
    P = A.sinusoidal_table(50, 8)
    p, j = 17, 2
    w = 1 / 10000 ** (2 * j / 8)
    assert P.shape == (50, 8)
    assert torch.isclose(P[p, 2 * j], torch.tensor(p * w).sin())
    assert torch.isclose(P[p, 2 * j + 1], torch.tensor(p * w).cos())


def test_table_in_float64_is_exact_where_float32_is_not():
    P64 = A.sinusoidal_table(500, 16, dtype=torch.float64)
    p, j = 487, 1
    angle = p / 10000 ** (2 * j / 16)
    assert P64.dtype == torch.float64
    assert abs(P64[p, 2 * j].item() - math.sin(angle)) < 1e-12
    assert abs(P64[p, 2 * j + 1].item() - math.cos(angle)) < 1e-12
    assert abs(A.sinusoidal_table(500, 16)[p, 2 * j].item() - math.sin(angle)) > 1e-9  # float32 angles
    with pytest.raises(TypeError, match="dtype must be a floating-point dtype, got torch.int64"):
        A.sinusoidal_table(4, 4, dtype=torch.int64)


@pytest.mark.parametrize("d", [1, 5, 7])
def test_odd_num_hiddens(d):
    P = A.sinusoidal_table(30, d)
    assert P.shape == (30, d)
    freq = torch.pow(10000, torch.arange(0, d, 2, dtype=torch.float32) / d)  # (ceil(d / 2),)
    angles = torch.arange(30.0)[:, None] / freq
    torch.testing.assert_close(P[:, 0::2], angles.sin())  # the last column is a lone sine
    torch.testing.assert_close(P[:, 1::2], angles[:, : d // 2].cos())
    out = A.PositionalEncoding(d)(torch.zeros(1, 4, d))
    torch.testing.assert_close(out[0], P[:4])


@pytest.mark.parametrize("cls", [A.PositionalEncoding, A.LearnedPositionalEmbedding])
def test_offset_equals_slice_of_full_sequence(cls):
    pe = cls(16, 0.0, max_len=20).eval()
    X = torch.randn(3, 12, 16)
    full = pe(X)
    torch.testing.assert_close(pe(X[:, 5:], offset=5), full[:, 5:])
    torch.testing.assert_close(pe(X[:, 11:], offset=11), full[:, 11:])  # one decoding step
    assert not torch.allclose(pe(X[:, 5:]), full[:, 5:])  # offset 0 is a different place


@pytest.mark.parametrize("cls", [A.PositionalEncoding, A.LearnedPositionalEmbedding])
def test_max_len_errors(cls):
    pe = cls(8, max_len=10)
    pe(torch.zeros(1, 10, 8))  # exactly max_len is fine
    with pytest.raises(ValueError, match=r"positions up to 11 .*max_len=10"):
        pe(torch.zeros(1, 11, 8))
    with pytest.raises(ValueError, match=r"positions up to 12 .*offset 4.*max_len=10"):
        pe(torch.zeros(1, 8, 8), offset=4)
    with pytest.raises(ValueError, match=r"offset must be a non-negative int"):
        pe(torch.zeros(1, 2, 8), offset=-1)


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda: A.sinusoidal_table(0, 8), ValueError, r"max_len must be positive, got 0"),
    (lambda: A.sinusoidal_table(10, 8.0), TypeError, r"num_hiddens must be an int, got float"),
    (lambda: A.PositionalEncoding(8, dropout=1.5), ValueError, r"dropout must be a probability"),
    (lambda: A.PositionalEncoding(8)(torch.zeros(5, 8)), ValueError, r"X must have shape"),
    (lambda: A.PositionalEncoding(8)(torch.zeros(1, 5, 6)), ValueError, r"last dim 6 .*num_hiddens=8"),
    (lambda: A.LearnedPositionalEmbedding(8, max_len=0), ValueError, r"max_len must be positive"),
    (lambda: offset_rotation(1, 7), ValueError, r"even num_hiddens.*got 7"),
    (lambda: offset_rotation(1.5, 8), TypeError, r"offset must be an int"),
    (lambda: A.RotaryEmbedding(7), ValueError, r"even dim, got 7"),
    (lambda: A.RotaryEmbedding(8)(torch.zeros(2, 5, 6)), ValueError, r"\(\.\.\., n, 8\), got \(2, 5, 6\)"),
    (lambda: A.RotaryEmbedding(8)(torch.zeros(8)), ValueError, r"got \(8,\)"),
    (lambda: A.RotaryEmbedding(8)([1.0]), TypeError, r"x must be a torch.Tensor.*got list"),
    (lambda: A.RotaryEmbedding(8, max_len=6)(torch.zeros(1, 4, 8), offset=3), ValueError,
     r"positions up to 7 requested, but max_len=6"),
    (lambda: A.RotaryEmbedding(8)(torch.zeros(1, 4, 8), offset=-2), ValueError, r"non-negative"),
])
def test_error_messages(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_learned_embedding_shapes_and_grad():
    pe = A.LearnedPositionalEmbedding(6, 0.0, max_len=10)
    assert pe.embedding.weight.shape == (10, 6)
    X = torch.randn(2, 4, 6, requires_grad=True)
    out = pe(X, offset=3)
    assert out.shape == (2, 4, 6)
    out.sum().backward()
    grad = pe.embedding.weight.grad
    torch.testing.assert_close(grad[3:7], torch.full((4, 6), 2.0))  # used by both batch rows
    assert grad[:3].abs().sum() == 0 and grad[7:].abs().sum() == 0  # unused positions untouched
    torch.testing.assert_close(X.grad, torch.ones_like(X))


def test_dropout_only_in_training():
    pe = A.PositionalEncoding(16, dropout=0.5)
    X = torch.zeros(4, 10, 16)
    assert (pe.train()(X) == 0).float().mean() > 0.2
    torch.testing.assert_close(pe.eval()(X), pe.P[:, :10].expand(4, -1, -1))


@pytest.mark.parametrize("k", [0, 1, 3, 17, -5])
def test_offset_is_a_fixed_rotation(k):
    d, n = 32, 200
    P = A.sinusoidal_table(n, d).double()
    M = offset_rotation(k, d, dtype=torch.float64)
    lo, hi = max(0, -k), n - max(0, k)
    shifted = P[lo:hi] @ M.T  # row p is M_k @ P[p]
    assert (shifted - P[lo + k: hi + k]).abs().max() < 1e-5
    torch.testing.assert_close(M @ M.T, torch.eye(d, dtype=torch.float64), atol=1e-6, rtol=0)
    outside = 1 - torch.block_diag(*[torch.ones(2, 2)] * (d // 2)).double()
    assert (M * outside).abs().max() == 0  # block diagonal: one 2x2 rotation per frequency


def test_rotation_is_exact_in_float64():
    angles = torch.arange(1000, dtype=torch.float64)[:, None] / torch.pow(
        10000, torch.arange(0, 16, 2, dtype=torch.float64) / 16)  # (positions, 8)
    P = torch.stack((angles.sin(), angles.cos()), -1).flatten(1)  # (positions, 16): sin, cos, ...
    M = offset_rotation(9, 16, dtype=torch.float64)
    assert M.dtype == torch.float64
    assert (P[:-9] @ M.T - P[9:]).abs().max() < 1e-11


def test_rotations_compose():
    torch.testing.assert_close(offset_rotation(3, 16) @ offset_rotation(4, 16), offset_rotation(7, 16),
                               atol=1e-6, rtol=0)
    torch.testing.assert_close(offset_rotation(-4, 16), offset_rotation(4, 16).T)


def test_similarity_depends_only_on_distance():
    P = A.sinusoidal_table(40, 16)
    S = P @ P.T  # (positions, positions)
    for dist in (0, 1, 7):
        diag = torch.diagonal(S, dist)
        assert (diag - diag[0]).abs().max() < 1e-4
    torch.testing.assert_close(S, S.T)


def test_rope_is_identity_at_zero_and_preserves_norms():
    rope = A.RotaryEmbedding(16)
    x = torch.randn(3, 2, 50, 16)  # (batch, heads, n, head_dim)
    y = rope(x)
    torch.testing.assert_close(y[..., 0, :], x[..., 0, :])
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    assert not torch.allclose(y[..., 1:, :], x[..., 1:, :])
    assert rope(x.double()).dtype == torch.float64


@settings(max_examples=40, deadline=None)
@given(m=st.integers(0, 200), n=st.integers(0, 200), shift=st.integers(0, 300),
       seed=st.integers(0, 2**16))
def test_rope_scores_depend_only_on_offset(m, n, shift, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(1, 8, generator=g, dtype=torch.float64), torch.randn(1, 8, generator=g,
                                                                            dtype=torch.float64)
    rope = A.RotaryEmbedding(8, max_len=512)
    score = lambda a, b: float(rope(q, offset=a) @ rope(k, offset=b).T)
    assert score(m, n) == pytest.approx(score(m + shift, n + shift), abs=1e-4)


def test_rope_offset_matches_cache():
    """Rotating the new steps at ``offset=t`` equals rotating the whole sequence (a KV cache)."""
    rope = A.RotaryEmbedding(12)
    x = torch.randn(2, 3, 9, 12)
    full = rope(x)
    torch.testing.assert_close(rope(x[..., 6:, :], offset=6), full[..., 6:, :])
    steps = torch.cat([rope(x[..., t: t + 1, :], offset=t) for t in range(9)], dim=-2)
    torch.testing.assert_close(steps, full)


def test_rope_equals_complex_multiplication():
    """RoPE is multiplication of each feature pair, read as a complex number, by e^{i p theta}."""
    rope = A.RotaryEmbedding(8, base=100.0)
    x = torch.randn(5, 8)
    theta = 100.0 ** (-torch.arange(0, 8, 2) / 8)
    z = torch.view_as_complex(x.reshape(5, 4, 2)) * torch.polar(
        torch.ones(5, 4), torch.arange(5.0)[:, None] * theta)
    torch.testing.assert_close(rope(x), torch.view_as_real(z).reshape(5, 8))
