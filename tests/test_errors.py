"""Bad input gets a readable error naming the argument, what it saw and what it expected."""
import pytest
import torch

import attnlib as A

q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: A.DotProductAttention()(q, k[:1], v), ValueError, r"share the batch size.*keys \(1, 5, 4\)"),
    (lambda: A.DotProductAttention()(q, k, v[:, :4]), ValueError, r"same number of pairs"),
    (lambda: A.DotProductAttention()(q, torch.randn(2, 5, 3), v), ValueError,
     r"last dims must match: got queries \(2, 3, 4\) and keys \(2, 5, 3\)"),
    (lambda: A.DotProductAttention()(q[0], k, v), ValueError, r"queries must have shape .*got a 2-D"),
    (lambda: A.DotProductAttention()([1, 2], k, v), TypeError, r"queries must be a torch.Tensor"),
    (lambda: A.DotProductAttention()(q, k, v, torch.tensor([-1, 2])), ValueError,
     r"valid_lens must lie in \[0, 5\].*\[-1, 2\]"),
    (lambda: A.DotProductAttention()(q, k, v, torch.tensor([2, 6])), ValueError,
     r"valid_lens must lie in \[0, 5\]"),
    (lambda: A.DotProductAttention()(q, k, v, torch.tensor([1, 2, 3])), ValueError,
     r"valid_lens has shape \(3,\); expected \(batch,\) = \(2,\)"),
    (lambda: A.DotProductAttention()(q, k, v, torch.ones(2, 4, dtype=torch.bool)), ValueError,
     r"bool mask of shape \(2, 4\); expected \(2, 5\)"),
    (lambda: A.DotProductAttention()(q, k, v, [2, 3]), TypeError, r"valid_lens must be a torch.Tensor"),
    (lambda: A.masked_softmax(torch.rand(2, 3), None), ValueError,
     r"X must have shape \(batch, queries, keys\)"),
    (lambda: A.MultiHeadAttention(10, 3), ValueError,
     r"num_hiddens \(10\) must be divisible by num_heads \(3\)"),
    (lambda: A.MultiHeadAttention(8, 2)(torch.randn(1, 2, 6), torch.randn(1, 2, 8), torch.randn(1, 2, 8)),
     ValueError, r"queries has last dim 6 \(shape \(1, 2, 6\)\), but this module was built for size 8"),
    (lambda: A.MultiHeadAttention(8, 2, dropout=1.5), ValueError, r"dropout must be a probability"),
    (lambda: A.GeneralAttention(4, 3)(q, k, v), ValueError, r"keys has last dim 4"),
    (lambda: A.AdditiveAttention(8, query_size=3)(q, k, v), ValueError, r"queries has last dim 4"),
    (lambda: A.LocationAttention(4, max_keys=3)(q, k, v), ValueError, r"keys has 5 positions.*max_keys=3"),
    (lambda: A.LocalAttention(window=-1), ValueError, r"window must be a non-negative int"),
    (lambda: A.HardAttention("random"), ValueError, r"mode must be 'argmax' or 'sample'"),
    (lambda: A.CosineAttention(beta=0), ValueError, r"beta must be positive"),
    (lambda: A.NWKernelRegression(width=0), ValueError, r"width must be positive, got 0"),
    (lambda: A.NWKernelRegression(kernel="tophat"), ValueError, r"kernel must be one of"),
    (lambda: A.NWKernelRegression()(torch.rand(3), torch.rand(4, 5), torch.rand(4, 5)), ValueError,
     r"keys of shape \(4, 5\) must have one row per query"),
    (lambda: A.PositionalEncoding(8, max_len=4)(torch.zeros(1, 5, 8)), ValueError, r"max_len=4"),
    (lambda: A.PositionalEncoding(8)(torch.zeros(1, 5, 6)), ValueError, r"expected num_hiddens=8"),
    (lambda: A.RotaryEmbedding(7), ValueError, r"even dim"),
    (lambda: A.AddNorm(4)(torch.zeros(1, 2, 4), torch.zeros(1, 3, 4)), ValueError, r"same shape"),
])
def test_bad_input_raises_readable_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_fractional_lengths_rejected_whole_floats_accepted():
    with pytest.raises(ValueError, match="whole numbers"):
        A.masked_softmax(torch.rand(2, 2, 4), torch.tensor([1.5, 2.0]))
    W = A.masked_softmax(torch.rand(2, 2, 4), torch.tensor([1.0, 2.0]))
    assert torch.equal(W[0, :, 1:], torch.zeros(2, 3))
