# ruff: noqa: E501 - one bad call per line reads best as a table
"""A battery of bad calls, one per row: every public entry point of attnlib must answer bad
input with a ``TypeError``/``ValueError`` whose message names the argument, what it got and
what it expected; never a bare error from inside torch, never a silent wrong answer.

Each row is ``(call, expected exception type, regex the message must match)``. Run this file
as a script (``python tests/test_bad_inputs.py``) to count the outcomes: *clear* (the
expected type and message), *bare* (another exception or message) and *silent* (no error).
"""
from __future__ import annotations

import contextlib
import functools

import pytest
import torch

import attnlib as A
from attnlib.metrics import alignment_accuracy
from attnlib.training import masked_ce_loss

q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
q4, k4, v4 = torch.randn(2, 2, 3, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4)
X8 = torch.randn(2, 5, 8)
NAN, INF = float("nan"), float("inf")


@functools.cache
def data():
    return A.TranslationData(batch_size=8, num_steps=24, num_pairs=60, seed=0)


@functools.cache
def _bahdanau():
    torch.manual_seed(0)
    d = data()
    return A.EncoderDecoder(A.Seq2SeqEncoder(len(d.src_vocab), 8, 16, 1, bidirectional=True),
                            A.Seq2SeqAttentionDecoder(len(d.tgt_vocab), 8, 16, 1))


@functools.cache
def _transformer():
    torch.manual_seed(0)
    d = data()
    return A.EncoderDecoder(A.TransformerEncoder(len(d.src_vocab), 8, 16, 2, 1),
                            A.TransformerDecoder(len(d.tgt_vocab), 8, 16, 2, 1))


def bahdanau():
    return _bahdanau()


def transformer():
    return _transformer()


def other_vocab_model():
    """A model built for vocabularies of a different size than ``data()``'s."""
    torch.manual_seed(0)
    return A.EncoderDecoder(A.Seq2SeqEncoder(7, 4, 8, 1), A.Seq2SeqAttentionDecoder(9, 4, 8, 1))


def mha(**kw):
    return A.MultiHeadAttention(8, 2, **kw)


def pair():
    return data().test[0]


def weights_for(p):
    return torch.rand(len(p.tgt) + 1, len(p.src) + 1)


def src_ids(n=2, steps=4):
    return torch.ones(n, steps, dtype=torch.long) * 4


def train(**kw):
    args = dict(num_epochs=1, lr=0.01, progress=False, device="cpu")
    args.update(kw)
    return A.train_seq2seq(bahdanau(), data(), **args)


def static_cache_reused():
    """A static (cross-attention) cache filled for batch 1, then called with batch 3."""
    m, cache = mha(), A.KVCache(static=True)
    m(torch.randn(1, 1, 8), torch.randn(1, 5, 8), torch.randn(1, 5, 8), cache=cache)
    return m(torch.randn(3, 1, 8), torch.randn(3, 5, 8), torch.randn(3, 5, 8), cache=cache)


def self_cache_other_batch():
    m, cache = mha(), A.KVCache()
    m(torch.randn(1, 1, 8), torch.randn(1, 1, 8), torch.randn(1, 1, 8), causal=True, cache=cache)
    return m(torch.randn(2, 1, 8), torch.randn(2, 1, 8), torch.randn(2, 1, 8), causal=True, cache=cache)


def decoder_state(model, batch=2, steps=4):
    d = model.decoder
    enc = model.encoder(src_ids(batch, steps), torch.tensor([steps] * batch))
    return d.init_state(enc, torch.tensor([steps] * batch))


def encoder_block(X, lens=None):
    return A.TransformerEncoderBlock(8, 16, 2)(X, lens)


def decoder_block(X, enc, lens=None):
    return A.TransformerDecoderBlock(8, 16, 2)(X, [enc, lens, [None]])


ATTENTIONS = {  # name -> module with d_q = d_k = 4 inputs
    "DotAttention": lambda: A.DotAttention(),
    "DotProductAttention": lambda: A.DotProductAttention(),
    "AdditiveAttention": lambda: A.AdditiveAttention(8, query_size=4, key_size=4),
    "CosineAttention": lambda: A.CosineAttention(),
    "GeneralAttention": lambda: A.GeneralAttention(4, 4),
    "LocalAttention": lambda: A.LocalAttention(2),
    "HardAttention": lambda: A.HardAttention(),
}

CASES: list[tuple] = []


def case(id_, call, error, message):
    CASES.append(pytest.param(call, error, message, id=id_))


# --- every attention module: the same bad inputs ---------------------------------------------
for name, make in ATTENTIONS.items():
    case(f"{name}-int-queries", lambda m=make: m()(q.long(), k, v), TypeError,
         r"queries must be a floating-point tensor, got dtype torch.int64")
    case(f"{name}-mixed-dtypes", lambda m=make: m()(q, k.double(), v), TypeError,
         r"queries, keys and values must share one dtype.*float64")
    case(f"{name}-empty-batch", lambda m=make: m()(q[:0], k[:0], v[:0]), ValueError,
         r"queries must not be empty.*\(0, 3, 4\)")
    case(f"{name}-negative-len", lambda m=make: m()(q, k, v, torch.tensor([-1, 2])), ValueError,
         r"valid_lens must lie in \[0, 5\]")
    case(f"{name}-float-mask", lambda m=make: m()(q, k, v, torch.ones(2, 5)), ValueError,
         r"valid_lens .*whole numbers|valid_lens has shape \(2, 5\)")

# --- masked_softmax, make_mask, causal_mask ----------------------------------------------------
case("masked_softmax-list", lambda: A.masked_softmax([[1.0]]), TypeError, r"X must be a torch.Tensor")
case("masked_softmax-int", lambda: A.masked_softmax(torch.ones(2, 2, 3, dtype=torch.long)), TypeError,
     r"X must be a floating-point tensor, got dtype torch.int64")
case("masked_softmax-2d", lambda: A.masked_softmax(torch.rand(2, 3)), ValueError, r"X must have shape")
case("masked_softmax-fraction", lambda: A.masked_softmax(torch.rand(2, 2, 4), torch.tensor([1.5, 2.0])),
     ValueError, r"valid_lens must hold whole numbers")
case("masked_softmax-too-long", lambda: A.masked_softmax(torch.rand(2, 2, 4), torch.tensor([1, 9])),
     ValueError, r"valid_lens must lie in \[0, 4\].*9")
case("masked_softmax-nan-len", lambda: A.masked_softmax(torch.rand(2, 2, 4), torch.tensor([NAN, 1.0])),
     ValueError, r"valid_lens must hold whole numbers")
case("masked_softmax-list-lens", lambda: A.masked_softmax(torch.rand(2, 2, 4), [1, 2]), TypeError,
     r"valid_lens must be a torch.Tensor or None, got list")
case("masked_softmax-3d-lens", lambda: A.masked_softmax(torch.rand(2, 2, 4), torch.ones(2, 2, 2)),
     ValueError, r"valid_lens has shape \(2, 2, 2\)")
case("masked_softmax-bool-mask-shape", lambda: A.masked_softmax(torch.rand(2, 2, 4),
                                                                torch.ones(2, 3, dtype=torch.bool)),
     ValueError, r"bool mask of shape \(2, 3\)")
case("make_mask-batch-str", lambda: A.make_mask(torch.tensor([1]), "1", 2, 3), TypeError,
     r"batch_size must be an int, got str")
case("make_mask-negative-keys", lambda: A.make_mask(torch.tensor([1]), 1, 2, -3), ValueError,
     r"num_keys must be a non-negative int, got -3")
case("causal_mask-float", lambda: A.causal_mask(2.5, 3), TypeError, r"num_queries must be an int, got float")
case("causal_mask-negative", lambda: A.causal_mask(3, -1), ValueError,
     r"num_keys must be a non-negative int, got -1")
case("causal_mask-more-queries", lambda: A.causal_mask(4, 2), ValueError,
     r"num_queries \(4\) must not exceed num_keys \(2\)")

# --- scaled_dot_product ------------------------------------------------------------------------
sdp = A.scaled_dot_product
case("sdp-none-keys", lambda: sdp(q4, None, v4), TypeError, r"keys must be a torch.Tensor.*NoneType")
case("sdp-1d", lambda: sdp(torch.rand(4), k4, v4), ValueError, r"queries must have shape \(\.\.\., queries, d\)")
case("sdp-d-mismatch", lambda: sdp(q4, k4[..., :3], v4), ValueError,
     r"queries and keys must have the same last dim.*\(2, 2, 3, 4\).*\(2, 2, 5, 3\)")
case("sdp-kv-mismatch", lambda: sdp(q4, k4, v4[..., :4, :]), ValueError,
     r"keys and values must have the same number of positions")
case("sdp-batch-mismatch", lambda: sdp(q4, k4[:1].expand(3, -1, -1, -1), v4), ValueError,
     r"leading dims")
case("sdp-float-mask", lambda: sdp(q4, k4, v4, torch.ones(3, 5)), TypeError,
     r"mask must be a bool tensor \(True = attend\), got dtype torch.float32")
case("sdp-mask-shape", lambda: sdp(q4, k4, v4, torch.ones(3, 4, dtype=torch.bool)), ValueError,
     r"mask of shape \(3, 4\) does not broadcast to \(2, 2, 3, 5\)")
case("sdp-int-inputs", lambda: sdp(q4.long(), k4.long(), v4.long()), TypeError,
     r"queries must be a floating-point tensor")
case("sdp-mixed-dtypes", lambda: sdp(q4, k4.half(), v4), TypeError, r"share one dtype")
case("sdp-dropout", lambda: sdp(q4, k4, v4, dropout_p=1.5), ValueError, r"dropout_p must be a probability")
case("sdp-scale-nan", lambda: sdp(q4, k4, v4, scale=NAN), ValueError, r"scale must be a finite number, got nan")
case("sdp-scale-str", lambda: sdp(q4, k4, v4, scale="0.5"), TypeError, r"scale must be a number, got str")
case("sdp-causal-str", lambda: sdp(q4, k4, v4, causal="yes"), TypeError, r"causal must be a bool, got str")
case("sdp-causal-more-queries", lambda: sdp(torch.randn(1, 1, 4, 4), torch.randn(1, 1, 2, 4),
                                            torch.randn(1, 1, 2, 4), causal=True), ValueError,
     r"causal attention needs at least as many keys \(2\) as queries \(4\)")

# --- scoring module constructors -----------------------------------------------------------------
case("DotProductAttention-dropout-neg", lambda: A.DotProductAttention(-0.1), ValueError,
     r"dropout must be a probability in \[0, 1\), got -0.1")
case("DotProductAttention-dropout-str", lambda: A.DotProductAttention("0.1"), TypeError,
     r"dropout must be a number, got str")
case("DotProductAttention-causal-more-queries", lambda: A.DotProductAttention()(
    torch.randn(1, 4, 4), torch.randn(1, 2, 4), torch.randn(1, 2, 4), causal=True), ValueError,
     r"causal attention needs at least as many keys")
case("CosineAttention-beta-nan", lambda: A.CosineAttention(beta=NAN), ValueError,
     r"beta must be positive, got nan")
case("CosineAttention-beta-inf", lambda: A.CosineAttention(beta=INF), ValueError, r"beta must be finite, got inf")
case("GeneralAttention-sizes-zero", lambda: A.GeneralAttention(0, 4), ValueError,
     r"query_size must be a positive int, got 0")
case("GeneralAttention-sizes-float", lambda: A.GeneralAttention(4.0, 4), TypeError,
     r"query_size must be an int, got float")
case("GeneralAttention-query-size", lambda: A.GeneralAttention(3, 4)(q, k, v), ValueError,
     r"queries has last dim 4")
case("LocationAttention-max-keys-zero", lambda: A.LocationAttention(4, 0), ValueError,
     r"max_keys must be a positive int, got 0")
case("LocationAttention-too-many-keys", lambda: A.LocationAttention(4, 3)(q, k, v), ValueError,
     r"max_keys=3")
case("AdditiveAttention-hiddens-zero", lambda: A.AdditiveAttention(0), ValueError,
     r"num_hiddens must be a positive int, got 0")
case("AdditiveAttention-hiddens-str", lambda: A.AdditiveAttention("8"), TypeError,
     r"num_hiddens must be an int, got str")
case("AdditiveAttention-key-size", lambda: A.AdditiveAttention(8, key_size=3)(q, k, v), ValueError,
     r"keys has last dim 4")
case("LocalAttention-window-float", lambda: A.LocalAttention(1.5), ValueError, r"window must be a non-negative int")
case("LocalAttention-window-bool", lambda: A.LocalAttention(True), ValueError, r"window must be a non-negative int")
for name, make in (("GeneralAttention", lambda: A.GeneralAttention(4, 4)), ("AdditiveAttention", lambda: A.AdditiveAttention(8)),
                   ("LocationAttention", lambda: A.LocationAttention(4, 5))):
    case(f"{name}-float64-module-float32", lambda m=make: m()(q.double(), k.double(), v.double()), TypeError,
         r"queries has dtype torch.float64 but the module's parameters are torch.float32")
case("HardAttention-mode", lambda: A.HardAttention("max"), ValueError, r"mode must be 'argmax' or 'sample'")

# --- MultiHeadAttention and KVCache --------------------------------------------------------------
case("MHA-heads-zero", lambda: A.MultiHeadAttention(8, 0), ValueError, r"num_heads must be a positive int, got 0")
case("MHA-heads-float", lambda: A.MultiHeadAttention(8, 2.0), TypeError, r"num_heads must be an int, got float")
case("MHA-hiddens-zero", lambda: A.MultiHeadAttention(0, 1), ValueError,
     r"num_hiddens must be a positive int, got 0")
case("MHA-not-divisible", lambda: A.MultiHeadAttention(10, 4), ValueError, r"divisible")
case("MHA-dropout-one", lambda: A.MultiHeadAttention(8, 2, dropout=1.0), ValueError,
     r"dropout must be a probability")
case("MHA-query-size-neg", lambda: A.MultiHeadAttention(8, 2, query_size=-1), ValueError,
     r"query_size must be a positive int, got -1")
case("MHA-rope-type", lambda: A.MultiHeadAttention(8, 2, rope="yes"), TypeError,
     r"rope must be a RotaryEmbedding or None, got str")
case("MHA-rope-dim", lambda: A.MultiHeadAttention(8, 2, rope=A.RotaryEmbedding(8)), ValueError,
     r"rope.dim \(8\) must equal the head size num_hiddens / num_heads = 4")
case("MHA-2d-queries", lambda: mha()(X8[0], X8, X8), ValueError, r"queries must have shape")
case("MHA-size", lambda: mha()(X8[..., :6], X8, X8), ValueError, r"queries has last dim 6")
case("MHA-int", lambda: mha()(X8.long(), X8.long(), X8.long()), TypeError, r"queries must be a floating-point")
case("MHA-float64-module-float32", lambda: mha()(X8.double(), X8.double(), X8.double()), TypeError,
     r"queries has dtype torch.float64 but the module's parameters are torch.float32")
case("MHA-mixed", lambda: mha()(X8, X8.double(), X8), TypeError, r"share one dtype")
case("MHA-empty-batch", lambda: mha()(X8[:0], X8[:0], X8[:0]), ValueError, r"queries must not be empty")
case("MHA-lens-batch", lambda: mha()(X8, X8, X8, torch.tensor([1, 2, 3])), ValueError,
     r"valid_lens has shape \(3,\)")
case("MHA-lens-range", lambda: mha()(X8, X8, X8, torch.tensor([1, 6])), ValueError,
     r"valid_lens must lie in \[0, 5\]")
case("MHA-lens-fraction", lambda: mha()(X8, X8, X8, torch.tensor([1.0, 2.5])), ValueError,
     r"valid_lens must hold whole numbers")
case("MHA-cache-bool", lambda: mha()(X8, X8, X8, cache=True), TypeError,
     r"cache must be a KVCache or None, got bool")
case("MHA-causal-str", lambda: mha()(X8, X8, X8, causal="yes"), TypeError, r"causal must be a bool, got str")
case("MHA-static-cache-batch", static_cache_reused, ValueError,
     r"cache holds keys for batch size 1, but queries has batch size 3")
case("MHA-self-cache-batch", self_cache_other_batch, ValueError,
     r"cache holds keys for batch size 1, but queries has batch size 2")
case("MHA-rope-more-queries", lambda: A.MultiHeadAttention(8, 2, rope=A.RotaryEmbedding(4))(
    X8, X8[:, :2], X8[:, :2]), ValueError, r"more queries \(5\) than keys \(2\)")
case("KVCache-static-str", lambda: A.KVCache(static="yes"), TypeError, r"static must be a bool, got str")
case("KVCache-append-3d", lambda: A.KVCache().append(torch.randn(1, 2, 4), torch.randn(1, 2, 4)), ValueError,
     r"k must have shape \(batch, heads, new, head_dim\)")
case("KVCache-append-kv-mismatch", lambda: A.KVCache().append(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 2, 4)),
     ValueError, r"k and v must have the same batch, heads and positions")
case("KVCache-append-batch-change", lambda: (c := A.KVCache(), c.append(torch.randn(1, 2, 3, 4),
                                                                       torch.randn(1, 2, 3, 4)),
                                             c.append(torch.randn(2, 2, 1, 4), torch.randn(2, 2, 1, 4))),
     ValueError, r"cache holds \(batch, heads, head_dim\) = \(1, 2, 4\).*\(2, 2, 4\)")
case("KVCache-reorder-list", lambda: A.KVCache().reorder([0]), TypeError,
     r"index must be a torch.Tensor of batch rows, got list")
case("KVCache-reorder-out-of-range", lambda: (c := A.KVCache(), c.append(torch.randn(1, 2, 3, 4),
                                                                        torch.randn(1, 2, 3, 4)),
                                              c.reorder(torch.tensor([3]))), ValueError,
     r"index must lie in \[0, 0\], got \[3\]")


def filled_cache(dtype=torch.float32):
    cache = A.KVCache()
    cache.append(torch.randn(2, 2, 3, 4, dtype=dtype), torch.randn(2, 2, 3, 4, dtype=dtype))
    return cache


case("KVCache-reorder-negative", lambda: filled_cache().reorder(torch.tensor([-1])), ValueError,
     r"index must lie in \[0, 1\], got \[-1\]")
case("KVCache-reorder-float", lambda: filled_cache().reorder(torch.tensor([0.0])), TypeError,
     r"index must hold integer batch rows, got dtype torch.float32")
case("KVCache-append-dtype-change", lambda: filled_cache().append(torch.randn(2, 2, 1, 4, dtype=torch.float64),
                                                                torch.randn(2, 2, 1, 4, dtype=torch.float64)),
     ValueError, r"this cache holds torch.float32 keys on cpu, but k is torch.float64 on cpu")

# --- positional encodings ----------------------------------------------------------------------
case("sinusoidal_table-zero", lambda: A.sinusoidal_table(0, 4), ValueError, r"max_len must be positive")
case("sinusoidal_table-float", lambda: A.sinusoidal_table(4, 4.0), TypeError, r"num_hiddens must be an int")
case("offset_rotation-odd", lambda: A.offset_rotation(1, 5), ValueError, r"even num_hiddens")
case("offset_rotation-float-offset", lambda: A.offset_rotation(1.5, 4), TypeError, r"offset must be an int")
case("offset_rotation-int-dtype", lambda: A.offset_rotation(1, 4, torch.long), TypeError,
     r"dtype must be a floating-point dtype, got torch.int64")
case("PositionalEncoding-int-input", lambda: A.PositionalEncoding(8)(torch.zeros(1, 3, 8, dtype=torch.long)),
     TypeError, r"X must be a floating-point tensor.*torch.int64")
case("PositionalEncoding-2d", lambda: A.PositionalEncoding(8)(torch.zeros(3, 8)), ValueError, r"X must have shape")
case("PositionalEncoding-list", lambda: A.PositionalEncoding(8)([[0.0] * 8]), TypeError, r"X must be a torch.Tensor")
case("PositionalEncoding-offset-neg", lambda: A.PositionalEncoding(8)(torch.zeros(1, 3, 8), -1), ValueError,
     r"offset must be a non-negative int")
case("PositionalEncoding-dropout", lambda: A.PositionalEncoding(8, dropout=2), ValueError, r"dropout")
case("PositionalEncoding-hiddens-zero", lambda: A.PositionalEncoding(0), ValueError, r"num_hiddens must be positive")
case("PositionalEncoding-max-len", lambda: A.PositionalEncoding(8, max_len=2)(torch.zeros(1, 3, 8)), ValueError,
     r"max_len=2")
case("LearnedPE-int-input", lambda: A.LearnedPositionalEmbedding(8)(torch.zeros(1, 3, 8, dtype=torch.long)),
     TypeError, r"X must be a floating-point tensor")
case("LearnedPE-max-len-float", lambda: A.LearnedPositionalEmbedding(8, max_len=4.5), TypeError,
     r"max_len must be an int")
case("RotaryEmbedding-base-zero", lambda: A.RotaryEmbedding(4, base=0), ValueError,
     r"base must be a finite number > 1.*got 0")
case("RotaryEmbedding-base-neg", lambda: A.RotaryEmbedding(4, base=-10), ValueError, r"base must be a finite")
case("RotaryEmbedding-base-nan", lambda: A.RotaryEmbedding(4, base=NAN), ValueError, r"base must be a finite")
case("RotaryEmbedding-base-str", lambda: A.RotaryEmbedding(4, base="1e4"), TypeError,
     r"base must be a number, got str")
case("RotaryEmbedding-list", lambda: A.RotaryEmbedding(4)([1.0, 2.0]), TypeError,
     r"x must be a torch.Tensor.*got list")
case("RotaryEmbedding-wrong-dim", lambda: A.RotaryEmbedding(4)(torch.zeros(2, 3, 6)), ValueError,
     r"x must have shape \(\.\.\., n, 4\), got \(2, 3, 6\)")
case("RotaryEmbedding-int", lambda: A.RotaryEmbedding(4)(torch.zeros(2, 3, 4, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor")
case("RotaryEmbedding-offset", lambda: A.RotaryEmbedding(4)(torch.zeros(2, 3, 4), offset=2.0), ValueError,
     r"offset must be a non-negative int")
case("RotaryEmbedding-too-long", lambda: A.RotaryEmbedding(4, max_len=2)(torch.zeros(2, 3, 4)), ValueError,
     r"max_len=2")

# --- pooling -------------------------------------------------------------------------------------
case("kernel_weights-kernel", lambda: A.kernel_weights(torch.rand(3), torch.rand(4), "tophat"), ValueError,
     r"kernel must be one of")
case("kernel_weights-width-neg", lambda: A.kernel_weights(torch.rand(3), torch.rand(4), width=-1.0), ValueError,
     r"width must be positive")
case("kernel_weights-width-nan", lambda: A.kernel_weights(torch.rand(3), torch.rand(4), width=NAN), ValueError,
     r"width must be positive, got nan")
case("kernel_weights-width-tensor-nan", lambda: A.kernel_weights(torch.rand(3), torch.rand(4),
                                                                 width=torch.tensor(NAN)), ValueError,
     r"width must be positive")
case("kernel_weights-int-queries", lambda: A.kernel_weights(torch.arange(3), torch.rand(4)), TypeError,
     r"queries must be a floating-point tensor")
case("kernel_weights-2d-queries", lambda: A.kernel_weights(torch.rand(3, 1), torch.rand(4)), ValueError,
     r"queries must have shape \(n_queries,\)")
case("kernel_weights-rows", lambda: A.kernel_weights(torch.rand(3), torch.rand(4, 5)), ValueError,
     r"one row per query")
case("leave_one_out-one-point", lambda: A.leave_one_out(torch.rand(1), torch.rand(1)), ValueError, r"n >= 2")
case("leave_one_out-shapes", lambda: A.leave_one_out(torch.rand(3), torch.rand(4)), ValueError,
     r"x and y must have the same shape")
case("leave_one_out-list", lambda: A.leave_one_out([1.0, 2.0], torch.rand(2)), TypeError, r"x must be a torch.Tensor")
case("loo_cv_mse-empty-widths", lambda: A.loo_cv_mse(torch.rand(4), torch.rand(4), widths=()), ValueError,
     r"widths must hold at least one width")
case("loo_cv_mse-zero-width", lambda: A.loo_cv_mse(torch.rand(4), torch.rand(4), widths=(1.0, 0.0)), ValueError,
     r"width must be positive")
case("loo_cv_mse-kernel", lambda: A.loo_cv_mse(torch.rand(4), torch.rand(4), kernel="x"), ValueError,
     r"kernel must be one of")
case("NWKernelRegression-width-inf", lambda: A.NWKernelRegression(width=INF), ValueError,
     r"width must be finite, got inf")
case("NWKernelRegression-values-shape", lambda: A.NWKernelRegression()(torch.rand(3), torch.rand(4),
                                                                      torch.rand(5)), ValueError,
     r"values must match keys")
case("NWKernelRegression-learnable-str", lambda: A.NWKernelRegression(learnable="yes"), TypeError,
     r"learnable must be a bool, got str")

# --- Transformer blocks --------------------------------------------------------------------------
case("AddNorm-shapes", lambda: A.AddNorm(4)(torch.zeros(1, 2, 4), torch.zeros(1, 3, 4)), ValueError, r"same shape")
case("AddNorm-norm-shape", lambda: A.AddNorm(4)(torch.zeros(1, 2, 6), torch.zeros(1, 2, 6)), ValueError,
     r"X has last dim 6.*expected 4")
case("AddNorm-dropout", lambda: A.AddNorm(4, dropout=-1), ValueError, r"dropout must be a probability")
case("AddNorm-list", lambda: A.AddNorm(4)([0.0] * 4, torch.zeros(4)), TypeError, r"X must be a torch.Tensor")
case("PositionWiseFFN-size", lambda: A.PositionWiseFFN(16, 8)(torch.zeros(1, 2, 6)), ValueError,
     r"X has last dim 6.*8")
case("PositionWiseFFN-zero", lambda: A.PositionWiseFFN(0, 8), ValueError, r"ffn_num_hiddens must be a positive int")
case("PositionWiseFFN-int", lambda: A.PositionWiseFFN(16, 8)(torch.zeros(1, 2, 8, dtype=torch.long)), TypeError,
     r"X must be a floating-point tensor")
case("EncoderBlock-lens-range", lambda: encoder_block(X8, torch.tensor([3, 9])), ValueError,
     r"valid_lens must lie in \[0, 5\]")
case("EncoderBlock-2d", lambda: encoder_block(X8[0]), ValueError, r"X must have shape \(batch, steps, 8\)")
case("EncoderBlock-size", lambda: encoder_block(X8[..., :4]), ValueError, r"X has last dim 4|queries has last dim 4")
case("EncoderBlock-heads", lambda: A.TransformerEncoderBlock(8, 16, 3), ValueError, r"divisible")
case("DecoderBlock-enc-batch", lambda: decoder_block(X8, torch.randn(3, 5, 8)), ValueError,
     r"share the batch size|enc_outputs")
case("DecoderBlock-state", lambda: A.TransformerDecoderBlock(8, 16, 2)(X8, "state"), TypeError,
     r"state must be a list \[enc_outputs, enc_valid_lens, caches\], got str")
case("DecoderBlock-state-short", lambda: A.TransformerDecoderBlock(8, 16, 2)(X8, [X8]), ValueError,
     r"state must be a list \[enc_outputs, enc_valid_lens, caches\], got a list of 1")

# --- Transformer encoder / decoder ---------------------------------------------------------------
enc_t = functools.partial(A.TransformerEncoder, 20, 8, 16, 2, 1)
dec_t = functools.partial(A.TransformerDecoder, 20, 8, 16, 2, 1)
case("TransformerEncoder-ids-range", lambda: enc_t()(torch.tensor([[1, 25]])), ValueError,
     r"X holds token ids in \[1, 25\].*20 tokens")
case("TransformerEncoder-negative-ids", lambda: enc_t()(torch.tensor([[-1, 2]])), ValueError, r"X holds token ids")
case("TransformerEncoder-float-ids", lambda: enc_t()(torch.rand(1, 3)), TypeError, r"X must hold integer token ids")
case("TransformerEncoder-1d", lambda: enc_t()(torch.tensor([1, 2])), ValueError, r"X must have shape \(batch, steps\)")
case("TransformerEncoder-lens-neg", lambda: enc_t()(src_ids(), torch.tensor([-1, 2])), ValueError,
     r"valid_lens must lie in \[0, 4\]")
case("TransformerEncoder-lens-batch", lambda: enc_t()(src_ids(), torch.tensor([1, 2, 3])), ValueError,
     r"valid_lens has shape \(3,\)")
case("TransformerEncoder-vocab-zero", lambda: A.TransformerEncoder(0, 8, 16, 2, 1), ValueError,
     r"vocab_size must be a positive int, got 0")
case("TransformerEncoder-blks-neg", lambda: A.TransformerEncoder(20, 8, 16, 2, -1), ValueError,
     r"num_blks must be a non-negative int|num_blks must be a positive int")
case("TransformerEncoder-too-long", lambda: A.TransformerEncoder(20, 8, 16, 2, 1, max_len=3)(src_ids()), ValueError,
     r"max_len=3")
case("TransformerDecoder-ids-range", lambda: dec_t()(torch.tensor([[1, 30]]), dec_t().init_state(X8[:1], None)),
     ValueError, r"X holds token ids in \[1, 30\]")
case("TransformerDecoder-float-ids", lambda: dec_t()(torch.rand(1, 2), dec_t().init_state(X8[:1], None)),
     TypeError, r"X must hold integer token ids")
case("TransformerDecoder-enc-2d", lambda: dec_t().init_state(X8[0], None), ValueError,
     r"enc_outputs must have shape \(batch, src_steps, 8\)")
case("TransformerDecoder-enc-lens", lambda: dec_t().init_state(X8, torch.tensor([1, 2, 3])), ValueError,
     r"enc_valid_lens has shape \(3,\); expected \(2,\)")
case("TransformerDecoder-batch", lambda: dec_t()(torch.ones(3, 1, dtype=torch.long), dec_t().init_state(X8, None)),
     ValueError, r"X has batch size 3, but the state was built for batch size 2")

# --- RNN encoder / decoders ----------------------------------------------------------------------
enc_r = functools.partial(A.Seq2SeqEncoder, 20, 4, 8, 1)
case("Seq2SeqEncoder-negative-len", lambda: enc_r()(src_ids(), torch.tensor([-1, 2])), ValueError,
     r"valid_lens must lie in \[1, 4\].*-1")
case("Seq2SeqEncoder-fractional-len", lambda: enc_r()(src_ids(), torch.tensor([2.7, 2.0])), ValueError,
     r"valid_lens must hold whole numbers")
case("Seq2SeqEncoder-zero-len", lambda: enc_r()(src_ids(), torch.tensor([0, 2])), ValueError,
     r"valid_lens must lie in \[1, 4\]")
case("Seq2SeqEncoder-too-long", lambda: enc_r()(src_ids(), torch.tensor([5, 2])), ValueError,
     r"valid_lens must lie in \[1, 4\]")
case("Seq2SeqEncoder-lens-shape", lambda: enc_r()(src_ids(), torch.tensor([[2, 2]])), ValueError,
     r"valid_lens must have shape \(batch,\) = \(2,\)")
case("Seq2SeqEncoder-lens-list", lambda: enc_r()(src_ids(), [2, 2]), TypeError, r"valid_lens must be a torch.Tensor")
case("Seq2SeqEncoder-ids-range", lambda: enc_r()(torch.tensor([[1, 99]])), ValueError, r"X holds token ids")
case("Seq2SeqEncoder-float-ids", lambda: enc_r()(torch.rand(2, 3)), TypeError, r"X must hold integer token ids")
case("Seq2SeqEncoder-empty-batch", lambda: enc_r()(src_ids(0)), ValueError, r"X must not be empty")
case("Seq2SeqEncoder-odd-bidir", lambda: A.Seq2SeqEncoder(20, 4, 7, 1, bidirectional=True), ValueError, r"even")
case("Seq2SeqEncoder-layers-zero", lambda: A.Seq2SeqEncoder(20, 4, 8, 0), ValueError,
     r"num_layers must be a positive int, got 0")
case("Seq2SeqEncoder-dropout", lambda: A.Seq2SeqEncoder(20, 4, 8, 2, dropout=1.2), ValueError,
     r"dropout must be a probability")
case("Seq2SeqDecoder-ids-range", lambda: (m := A.EncoderDecoder(enc_r(), A.Seq2SeqDecoder(20, 4, 8, 1))).decoder(
    torch.tensor([[99, 1], [1, 1]]), decoder_state(m)), ValueError, r"X holds token ids")
case("Seq2SeqDecoder-embed-zero", lambda: A.Seq2SeqDecoder(20, 0, 8, 1), ValueError,
     r"embed_size must be a positive int, got 0")
case("Seq2SeqAttentionDecoder-ids-range", lambda: (m := A.EncoderDecoder(
    enc_r(), A.Seq2SeqAttentionDecoder(20, 4, 8, 1))).decoder(torch.tensor([[-3], [1]]), decoder_state(m)),
     ValueError, r"X holds token ids")
case("Seq2SeqAttentionDecoder-batch", lambda: (m := A.EncoderDecoder(
    enc_r(), A.Seq2SeqAttentionDecoder(20, 4, 8, 1))).decoder(torch.ones(3, 1, dtype=torch.long),
                                                             decoder_state(m)),
     ValueError, r"X has batch size 3, but the state was built for batch size 2")
case("Seq2SeqAttentionDecoder-hiddens-str", lambda: A.Seq2SeqAttentionDecoder(20, 4, "8", 1), TypeError,
     r"num_hiddens must be an int, got str")
case("LuongAttentionDecoder-score", lambda: A.LuongAttentionDecoder(20, 4, 8, 1, score="concat"), ValueError,
     r"score must be 'dot' or 'general'")
case("LuongAttentionDecoder-ids-range", lambda: (m := A.EncoderDecoder(
    enc_r(), A.LuongAttentionDecoder(20, 4, 8, 1))).decoder(torch.tensor([[25], [1]]), decoder_state(m)),
     ValueError, r"X holds token ids")
case("EncoderDecoder-tgt-batch", lambda: bahdanau()(src_ids(4), torch.ones(2, 3, dtype=torch.long),
                                                    torch.tensor([4, 4, 4, 4])), ValueError,
     r"tgt_in has batch size 2, but src has batch size 4")
case("EncoderDecoder-src-float", lambda: bahdanau()(torch.rand(2, 3), torch.ones(2, 3, dtype=torch.long)),
     TypeError, r"X must hold integer token ids|src must hold integer token ids")
case("EncoderDecoder-lens-batch", lambda: bahdanau()(src_ids(), src_ids(), torch.tensor([4, 4, 4])), ValueError,
     r"src_valid_len has shape \(3,\)")
case("EncoderDecoder-encoder-type", lambda: A.EncoderDecoder("enc", A.Seq2SeqDecoder(20, 4, 8, 1)), TypeError,
     r"encoder must be an nn.Module, got str")
case("EncoderDecoder-tgt-range", lambda: transformer()(src_ids(), torch.full((2, 3), 999), torch.tensor([4, 4])),
     ValueError, r"tgt_in holds token ids")

# --- data: Vocab, truncate_pad, TranslationData --------------------------------------------------
case("Vocab-min-freq-neg", lambda: A.Vocab(["a"], min_freq=-1), ValueError,
     r"min_freq must be a non-negative int, got -1")
case("Vocab-min-freq-str", lambda: A.Vocab(["a"], min_freq="2"), TypeError, r"min_freq must be an int, got str")
case("Vocab-tokens-str", lambda: A.Vocab("a b c"), TypeError,
     r"tokens must be a list of tokens or of token lists, not a string")
case("Vocab-reserved-str", lambda: A.Vocab(["a"], reserved_tokens="<x>"), TypeError,
     r"reserved_tokens must be a list of strings, not a string")
case("Vocab-to-tokens-neg", lambda: A.Vocab(["a"]).to_tokens(-1), ValueError, r"index -1 out of range")
case("Vocab-to-tokens-float", lambda: A.Vocab(["a"]).to_tokens(1.7), TypeError,
     r"indices must be ints, got float 1.7")
case("Vocab-to-tokens-2d", lambda: A.Vocab(["a"]).to_tokens(torch.ones(2, 2, dtype=torch.long)), ValueError,
     r"indices must be an int or a 1-D tensor, got a tensor of shape \(2, 2\)")
case("truncate_pad-zero", lambda: A.truncate_pad([1, 2], 0, 0), ValueError, r"num_steps must be a positive int")
case("truncate_pad-pad-str", lambda: A.truncate_pad([1, 2], 4, "<pad>"), TypeError, r"pad must be an int, got str")
case("truncate_pad-ids-str", lambda: A.truncate_pad("hello", 4, 0), TypeError,
     r"ids must be a sequence of ints, not a string")
case("TranslationData-batch-zero", lambda: A.TranslationData(batch_size=0), ValueError, r"batch_size must be a positive")
case("TranslationData-num-steps", lambda: A.TranslationData(num_steps=1), ValueError, r"num_steps must be an int >= 2")
case("TranslationData-min-freq", lambda: A.TranslationData(min_freq=-2, num_pairs=60), ValueError,
     r"min_freq must be a non-negative int")
case("TranslationData-pairs-str", lambda: A.TranslationData(pairs="go .\tva !"), TypeError,
     r"pairs must be a list of Pair")
case("TranslationData-build-empty", lambda: data().build([]), ValueError, r"at least one pair")
case("TranslationData-encode-empty", lambda: data().encode_src(""), ValueError, r"empty source sentence")
case("TranslationData-encode-none", lambda: data().encode_src(None), TypeError,
     r"sentence must be a string or a sequence of tokens, got NoneType")
case("TranslationData-encode-long", lambda: data().encode_src("go " * 30), ValueError, r"num_steps=24")
case("generate_pairs-zero", lambda: A.generate_pairs(0), ValueError, r"num_pairs must be an int >= 4")

# --- decoding ------------------------------------------------------------------------------------
case("greedy_decode-max-len-zero", lambda: A.greedy_decode(bahdanau(), data(), "go .", max_len=0), ValueError,
     r"max_len must be a positive int or None, got 0")
case("greedy_decode-max-len-neg", lambda: A.greedy_decode(bahdanau(), data(), "go .", max_len=-3), ValueError,
     r"max_len must be a positive int or None, got -3")
case("greedy_decode-max-len-float", lambda: A.greedy_decode(bahdanau(), data(), "go .", max_len=2.5), ValueError,
     r"max_len must be a positive int or None, got 2.5")
case("greedy_decode-batch-size", lambda: A.greedy_decode(bahdanau(), data(), "go .", batch_size=0), ValueError,
     r"batch_size must be a positive int, got 0")
case("greedy_decode-empty-list", lambda: A.greedy_decode(bahdanau(), data(), []), ValueError, r"non-empty list")
case("greedy_decode-empty-sentence", lambda: A.greedy_decode(bahdanau(), data(), ""), ValueError, r"empty")
case("greedy_decode-int-sentence", lambda: A.greedy_decode(bahdanau(), data(), 42), TypeError,
     r"sentences must be a sentence or a list of sentences, got int")
case("greedy_decode-other-vocab", lambda: A.greedy_decode(other_vocab_model(), data(), "go ."), ValueError,
     r"vocabulary of 7 tokens, but the data's has")
case("greedy_decode-not-a-model", lambda: A.greedy_decode("model", data(), "go ."), TypeError,
     r"model must be an EncoderDecoder")
case("greedy_decode-not-data", lambda: A.greedy_decode(bahdanau(), "data", "go ."), TypeError,
     r"data must be a TranslationData")
case("beam_search-beam-zero", lambda: A.beam_search(bahdanau(), data(), "go .", beam_size=0), ValueError,
     r"beam_size must be a positive int")
case("beam_search-beam-float", lambda: A.beam_search(bahdanau(), data(), "go .", beam_size=2.0), ValueError,
     r"beam_size must be a positive int")
case("beam_search-max-len-zero", lambda: A.beam_search(bahdanau(), data(), "go .", max_len=0), ValueError,
     r"max_len must be a positive int or None, got 0")
case("beam_search-penalty-nan", lambda: A.beam_search(bahdanau(), data(), "go .", length_penalty=NAN), ValueError,
     r"length_penalty must be a finite number, got nan")
case("beam_search-penalty-str", lambda: A.beam_search(bahdanau(), data(), "go .", length_penalty="0.6"),
     TypeError, r"length_penalty must be a number, got str")
case("beam_search-other-vocab", lambda: A.beam_search(other_vocab_model(), data(), "go ."), ValueError,
     r"vocabulary of 7 tokens")
case("translate-other-vocab", lambda: A.translate(other_vocab_model(), data(), ["go ."]), ValueError,
     r"vocabulary of 7 tokens")
case("translate-max-len-neg", lambda: A.translate(bahdanau(), data(), ["go ."], max_len=-1), ValueError,
     r"max_len must be a positive int or None, got -1")
case("translate-empty", lambda: A.translate(bahdanau(), data(), []), ValueError, r"non-empty list")
case("translate-none", lambda: A.translate(bahdanau(), data(), None), TypeError,
     r"sentences must be a sentence or a list of sentences, got NoneType")

# --- metrics -------------------------------------------------------------------------------------
case("bleu-double-space", lambda: A.bleu("a  b", "a b"), ValueError, r"pred_seq has an empty token")
case("bleu-label-double-space", lambda: A.bleu("a b", "a b "), ValueError, r"label_seq has an empty token")
case("bleu-empty-reference", lambda: A.bleu("a", " "), ValueError, r"label_seq is an empty sentence")
case("bleu-k-zero", lambda: A.bleu("a", "a", k=0), ValueError, r"k \(the longest n-gram\) must be a positive int")
case("bleu-list", lambda: A.bleu(["a"], "a"), TypeError, r"pred_seq must be a string")
case("corpus_bleu-lengths", lambda: A.corpus_bleu(["a"], ["a", "b"]), ValueError, r"same length, got 1 and 2")
case("corpus_bleu-str", lambda: A.corpus_bleu("a b", "a b"), TypeError, r"not a single string")
case("corpus_bleu-empty", lambda: A.corpus_bleu([], []), ValueError, r"hyps and refs are empty")
case("corpus_bleu-none-item", lambda: A.corpus_bleu(["a", None], ["a", "b"]), TypeError,
     r"hyps\[1\] must be a string, got NoneType")
case("corpus_chrf-empty-ref", lambda: A.corpus_chrf(["a"], [" "]), ValueError, r"refs\[0\] is an empty sentence")
case("corpus_chrf-int", lambda: A.corpus_chrf(5, ["a"]), TypeError, r"hyps must be a list of sentences, got int")
case("alignment_accuracy-nan", lambda: alignment_accuracy(torch.full((3, 3), NAN), pair()), ValueError,
     r"weights holds NaN")
case("alignment_accuracy-1d", lambda: alignment_accuracy(torch.rand(3), pair()), ValueError,
     r"weights must have shape \(target steps, source positions\)")
case("alignment_accuracy-short", lambda: alignment_accuracy(torch.rand(1, 5), pair()), ValueError,
     r"weights has 1 rows but the gold target has 2 tokens")
case("alignment_accuracy-pair-type", lambda: alignment_accuracy(torch.rand(3, 3), ("go", "va")), TypeError,
     r"pair must be a Pair.*got tuple")
case("alignment_accuracy-int", lambda: alignment_accuracy(torch.ones(3, 3, dtype=torch.long), pair()), TypeError,
     r"weights must be a floating-point tensor")
case("alignment_error_rate-nan", lambda: A.alignment_error_rate(torch.full((3, 3), NAN), pair()), ValueError,
     r"weights holds NaN")
case("alignment_error_rate-columns", lambda: A.alignment_error_rate(torch.rand(3, 1), pair()), ValueError,
     r"weights has 1 columns but the source has 2 tokens")
case("corpus_alignment_accuracy-count", lambda: A.corpus_alignment_accuracy([weights_for(pair())],
                                                                            [pair(), pair()]), ValueError,
     r"one weight matrix per pair, got 1 matrices and 2 pairs")
case("corpus_alignment_accuracy-empty", lambda: A.corpus_alignment_accuracy([], []), ValueError, r"no pairs")
case("corpus_alignment_error_rate-nan", lambda: A.corpus_alignment_error_rate(
    [torch.full((3, 3), NAN)], [pair()]), ValueError, r"weights holds NaN")
case("teacher_forced_attention-no-pairs", lambda: A.teacher_forced_attention(bahdanau(), data(), []), ValueError,
     r"pairs is empty|at least one pair")
case("teacher_forced_attention-other-vocab", lambda: A.teacher_forced_attention(other_vocab_model(), data(),
                                                                                [pair()]), ValueError,
     r"vocabulary of 7 tokens")
case("teacher_forced_attention-no-attention", lambda: A.teacher_forced_attention(A.EncoderDecoder(
    A.Seq2SeqEncoder(len(data().src_vocab), 4, 8, 1), A.Seq2SeqDecoder(len(data().tgt_vocab), 4, 8, 1)),
    data(), [pair()]), ValueError, r"has no cross-attention")
case("attention_alignment-no-gold", lambda: A.attention_alignment(bahdanau(), data(), [
    A.Pair(("go", "."), ("va", "!"), ((), ()))]), ValueError, r"no pair has a gold alignment")
case("attention_alignment-other-vocab", lambda: A.attention_alignment(other_vocab_model(), data(), [pair()]),
     ValueError, r"vocabulary of 7 tokens")

# --- plotting ------------------------------------------------------------------------------------
case("show_heatmaps-titles-short", lambda: A.show_heatmaps(torch.rand(1, 3, 2, 2), titles=["a"]), ValueError,
     r"titles has 1 entries, but there are 3 columns")
case("show_heatmaps-row-labels-short", lambda: A.show_heatmaps(torch.rand(2, 1, 2, 2), row_labels=["a"]),
     ValueError, r"row_labels has 1 entries, but there are 2 rows")
case("show_pair_attention-lengths", lambda: A.show_pair_attention([torch.rand(2, 2)], [], "t"), ValueError,
     r"weights has 1 matrices but pairs has 0 pairs")
case("show_heatmaps-x-labels-long", lambda: A.show_heatmaps(torch.rand(2, 2), x_labels=list("abc")), ValueError,
     r"x_labels has 3 entries")
case("show_heatmaps-5d", lambda: A.show_heatmaps(torch.rand(1, 1, 1, 2, 2)), ValueError, r"matrices must be 2-D")
case("show_heatmaps-nan", lambda: A.show_heatmaps(torch.full((2, 2), NAN)), ValueError,
     r"matrices holds only NaN")
case("show_heatmaps-str", lambda: A.show_heatmaps("weights"), TypeError,
     r"matrices must be a tensor or an array of numbers, got str")
case("show_heatmaps-empty", lambda: A.show_heatmaps(torch.rand(0, 3)), ValueError,
     r"matrices must not be empty, got shape \(0, 3\)")
case("show_heatmaps-figsize", lambda: A.show_heatmaps(torch.rand(2, 2), figsize=3), TypeError,
     r"figsize must be a \(width, height\) pair")

# --- training ------------------------------------------------------------------------------------
case("train-grad-clip-neg", lambda: train(grad_clip=-1.0), ValueError,
     r"grad_clip must be a positive number or None, got -1.0")
case("train-grad-clip-nan", lambda: train(grad_clip=NAN), ValueError, r"grad_clip must be a positive number")
case("train-lr-inf", lambda: train(lr=INF), ValueError, r"lr must be finite, got inf")
case("train-lr-nan", lambda: train(lr=NAN), ValueError, r"lr must be positive, got nan")
case("train-lr-none", lambda: train(lr=None), TypeError, r"lr must be a number, got NoneType")
case("train-lr-zero", lambda: train(lr=0.0), ValueError, r"lr must be positive, got 0.0")
case("train-epochs-zero", lambda: train(num_epochs=0), ValueError, r"num_epochs must be a positive int")
case("train-epochs-float", lambda: train(num_epochs=2.0), ValueError, r"num_epochs must be a positive int")
case("train-data-none", lambda: A.train_seq2seq(bahdanau(), None, 1, 0.01, progress=False), TypeError,
     r"data must be a TranslationData.*NoneType")
case("train-model-str", lambda: A.train_seq2seq("model", data(), 1, 0.01, progress=False), TypeError,
     r"model must be an EncoderDecoder")
case("train-device-bogus", lambda: train(device="bogus"), ValueError, r"device must name a torch device.*'bogus'")
case("train-cpu-threads-zero", lambda: train(cpu_threads=0), ValueError,
     r"cpu_threads must be a positive int.*got 0")
case("train-seed-str", lambda: train(seed="0"), TypeError, r"seed must be an int, got str")
case("train-other-vocab", lambda: A.train_seq2seq(other_vocab_model(), data(), 1, 0.01, progress=False),
     ValueError, r"vocabulary of 7 tokens")
case("masked_ce_loss-shapes", lambda: masked_ce_loss(torch.rand(2, 3, 5), torch.zeros(2, 4, dtype=torch.long), 0),
     ValueError, r"logits must be \(batch, steps, vocab\)")
case("masked_ce_loss-float-label", lambda: masked_ce_loss(torch.rand(2, 3, 5), torch.zeros(2, 3), 0), TypeError,
     r"label must hold integer token ids, got dtype torch.float32")
case("masked_ce_loss-label-range", lambda: masked_ce_loss(torch.rand(2, 3, 5), torch.full((2, 3), 7), 0),
     ValueError, r"label holds token ids in \[7, 7\].*5")
case("masked_ce_loss-pad-str", lambda: masked_ce_loss(torch.rand(2, 3, 5), torch.zeros(2, 3, dtype=torch.long),
                                                      "<pad>"), TypeError, r"pad must be an int, got str")

# --- presets and recording -----------------------------------------------------------------------
case("build_model-name", lambda: A.build_model("gpt", data()), ValueError, r"unknown preset 'gpt'")
case("build_model-override", lambda: A.build_model("bahdanau", data(), heads=3), ValueError,
     r"has no setting\(s\) \['heads'\]")
case("build_model-data", lambda: A.build_model("bahdanau", None), TypeError, r"data must be a TranslationData")
case("build_model-bad-size", lambda: A.build_model("transformer", data(), num_heads=3), ValueError, r"divisible")
case("training_args-name", lambda: A.training_args("nope"), ValueError, r"unknown preset 'nope'")
case("train_preset-name", lambda: A.train_preset("nope", data()), ValueError, r"unknown preset 'nope'")
case("train_preset-override", lambda: A.train_preset("bahdanau", data(), heads=2), ValueError,
     r"preset 'bahdanau' has no setting\(s\) \['heads'\]")
case("train_preset-data", lambda: A.train_preset("bahdanau", [1, 2]), TypeError, r"data must be a TranslationData")
case("train_preset-device", lambda: A.train_preset("bahdanau", data(), device="gpu0"), ValueError,
     r"device must name a torch device")
case("training_args-lr", lambda: A.training_args("bahdanau", lr=-1), ValueError,
     r"lr must be positive, got -1")
case("run_side_by_side-fn", lambda: A.run_side_by_side("train", [{}]), TypeError, r"fn must be a function, got str")
case("run_side_by_side-jobs", lambda: A.run_side_by_side(print, [("a", 1)]), TypeError,
     r"jobs must be dicts of keyword arguments for fn, got \['tuple'\]")
case("run_side_by_side-workers", lambda: A.run_side_by_side(print, [{}], workers=0), ValueError,
     r"workers must be a positive int, got 0")
case("train_presets-name", lambda: A.train_presets(["nope"], data(), workers=1), ValueError,
     r"unknown preset 'nope'")
case("record_attention-not-module", lambda: A.record_attention("model").__enter__(), TypeError,
     r"model must be an nn.Module")
case("record_attention-no-attention", lambda: A.record_attention(torch.nn.Linear(2, 2)).__enter__(), ValueError,
     r"contains no AttentionModule")
case("AttentionRecord-unknown", lambda: A.AttentionRecord().last("x"), KeyError, r"no attention module named 'x'")

# --- chapter 8: decoder-only LM, sampling, n-grams, SNAIL, ViT -----------------------------------
IDS = torch.tensor([[1, 2, 3], [4, 5, 6]])
IMG = torch.rand(2, 1, 8, 8)


@functools.cache
def _lm():
    torch.manual_seed(0)
    return A.DecoderOnlyLM(10, 8, 16, 2, 2, max_len=6)


def lm():
    return _lm()


def vit():
    return A.ViT(8, 4, 3, num_hiddens=8, ffn_num_hiddens=16, num_heads=2, num_blks=1)


def snail():
    return A.SNAIL(10, 3, 8, num_hiddens=8, filters=4, value_size=8)


def rollout_layers(*ns):
    return [torch.rand(1, 2, n, n).softmax(-1) for n in ns]


case("CausalBlock-2d", lambda: A.CausalBlock(8, 16, 2)(X8[0]), ValueError, r"X must have shape \(batch, steps, 8\)")
case("CausalBlock-size", lambda: A.CausalBlock(8, 16, 2)(X8[..., :4]), ValueError, r"X has last dim 4|queries has last dim 4")
case("CausalBlock-cache-type", lambda: A.CausalBlock(8, 16, 2)(X8, cache="cache"), TypeError,
     r"cache must be a KVCache or None, got str")
case("DecoderOnlyLM-float-ids", lambda: lm()(torch.rand(2, 3)), TypeError, r"X must hold integer token ids, got dtype torch.float32")
case("DecoderOnlyLM-id-range", lambda: lm()(IDS * 3), ValueError, r"X holds token ids in \[3, 18\].*10 tokens")
case("DecoderOnlyLM-too-long", lambda: lm()(torch.ones(1, 7, dtype=torch.long)), ValueError, r"7.*max_len.*6|6.*positions")
case("DecoderOnlyLM-caches-count", lambda: lm()(IDS, [A.KVCache()]), ValueError,
     r"caches must hold one KVCache per block \(2\), got 1")
case("DecoderOnlyLM-vocab-zero", lambda: A.DecoderOnlyLM(0), ValueError, r"vocab_size must be a positive int, got 0")
case("DecoderOnlyLM-max-len-float", lambda: A.DecoderOnlyLM(10, max_len=8.0), TypeError, r"max_len must be an int, got float")
case("DecoderOnlyLM-other-device", lambda: lm()(IDS.to("meta")), ValueError, r"X is on meta but the model is on cpu")
case("sample-temperature-neg", lambda: A.sample(lm(), IDS, 2, temperature=-1.0), ValueError,
     r"temperature must be a number >= 0 \(0: greedy\), got -1.0")
case("sample-temperature-nan", lambda: A.sample(lm(), IDS, 2, temperature=NAN), ValueError, r"temperature must be a finite number, got nan")
case("sample-temperature-str", lambda: A.sample(lm(), IDS, 2, temperature="hot"), TypeError, r"temperature must be a number, got str")
case("sample-top-k-zero", lambda: A.sample(lm(), IDS, 2, top_k=0), ValueError, r"top_k must be a positive int, got 0")
case("sample-top-k-float", lambda: A.sample(lm(), IDS, 2, top_k=2.5), TypeError, r"top_k must be an int, got float")
case("sample-num-new-neg", lambda: A.sample(lm(), IDS, -1), ValueError, r"num_new must be a non-negative int, got -1")
case("sample-too-long", lambda: A.sample(lm(), IDS, 4), ValueError, r"prompt of 3 tokens \+ num_new=4 exceeds the model's max_len=6")
case("next_token_probs-temperature-zero", lambda: A.next_token_probs(torch.zeros(1, 5), 0.0), ValueError, r"temperature must be positive, got 0.0")
case("next_token_probs-logits-1d", lambda: A.next_token_probs(torch.zeros(5)), ValueError, r"logits must have shape \(batch, vocab\) \(2-D\), got a 1-D tensor of shape \(5,\)")
case("next_token_probs-top-k-zero", lambda: A.next_token_probs(torch.zeros(1, 5), 1.0, top_k=0), ValueError, r"top_k must be a positive int, got 0")
case("sample-model-str", lambda: A.sample("gpt", IDS, 2), TypeError, r"model must be a DecoderOnlyLM, got str")
case("sample-stop-range", lambda: A.sample(lm(), IDS, 2, stop=10), ValueError, r"stop must be None or a token id in \[0, 9\], got 10")
case("sample-prompt-other-device", lambda: A.sample(lm(), IDS.to("meta"), 2), ValueError,
     r"prompt is on meta but the model is on cpu")
case("sample-prompt-float", lambda: A.sample(lm(), IDS.float(), 2), TypeError, r"prompt must hold integer token ids")
case("NGramLM-n-zero", lambda: A.NGramLM(0), ValueError, r"n must be a positive int, got 0")
case("NGramLM-n-float", lambda: A.NGramLM(2.0), TypeError, r"n must be an int, got float")
case("NGramLM-k-neg", lambda: A.NGramLM(2, k=-0.1), ValueError, r"k must be positive, got -0.1")
case("NGramLM-unfitted", lambda: A.NGramLM(2).perplexity(["ab"]), ValueError, r"empty: call fit\(\) first")
case("NGramLM-fit-str", lambda: A.NGramLM(2).fit("hello"), TypeError, r"sentences must be a list of strings, got str")
case("NGramLM-fit-ids", lambda: A.NGramLM(2).fit([[1, 2]]), TypeError, r"sentences\[0\] must be a str, got list")
case("NGramLM-perplexity-empty", lambda: A.NGramLM(2).fit(["ab"]).perplexity([]), ValueError,
     r"sentences must hold at least one sentence")
case("SNAIL-float-ids", lambda: snail()(torch.rand(2, 8)), TypeError, r"X must hold integer token ids")
case("SNAIL-id-range", lambda: snail()(IDS * 3), ValueError, r"X holds token ids in \[3, 18\]")
case("SNAIL-seq-len-zero", lambda: A.SNAIL(10, 3, 0), ValueError, r"seq_len must be a positive int, got 0")
case("SNAIL-classes-float", lambda: A.SNAIL(10, 2.0, 8), TypeError, r"num_classes must be an int, got float")
case("SNAIL-other-device", lambda: snail()(IDS.to("meta")), ValueError, r"X is on meta but the model is on cpu")
case("AttentionBlock-2d", lambda: A.AttentionBlock(8, 4)(X8[0]), ValueError, r"X must have shape \(batch, steps, 8\)")
case("AttentionBlock-size", lambda: A.AttentionBlock(8, 4)(torch.randn(2, 5, 6)), ValueError, r"X has 6 channels.*expected 8")
case("AttentionBlock-value-size-zero", lambda: A.AttentionBlock(8, 0), ValueError, r"value_size must be a positive int, got 0")
case("AttentionBlock-int", lambda: A.AttentionBlock(8, 4)(X8.long()), TypeError, r"X must be a floating-point tensor")
case("CausalConv1d-size", lambda: A.CausalConv1d(4, 4)(X8), ValueError, r"X has 8 channels \(shape \(2, 5, 8\)\), expected 4")
case("CausalConv1d-2d", lambda: A.CausalConv1d(8, 4)(X8[0]), ValueError, r"X must have shape \(batch, steps, 8\)")
case("CausalConv1d-kernel-zero", lambda: A.CausalConv1d(4, 4, kernel_size=0), ValueError, r"kernel_size must be a positive int, got 0")
case("CausalConv1d-dilation-zero", lambda: A.CausalConv1d(4, 4, dilation=0), ValueError, r"dilation must be a positive int, got 0")
case("CausalConv1d-int", lambda: A.CausalConv1d(8, 4)(X8.long()), TypeError, r"X must be a floating-point tensor")
case("CausalConv1d-float64", lambda: A.CausalConv1d(8, 4)(X8.double()), TypeError,
     r"X has dtype torch.float64 but the module's parameters are torch.float32")
case("CausalConv1d-other-device", lambda: A.CausalConv1d(8, 4)(X8.to("meta")), ValueError, r"X is on meta but the module is on cpu")
case("TCBlock-seq-len-zero", lambda: A.TCBlock(8, 0, 4), ValueError, r"seq_len must be a positive int, got 0")
case("TCBlock-filters-str", lambda: A.TCBlock(8, 8, "4"), TypeError, r"filters must be an int, got str")
case("TCBlock-size", lambda: A.TCBlock(4, 8, 4)(X8), ValueError, r"X has 8 channels.*expected 4")
case("CausalTransformerTagger-position", lambda: A.CausalTransformerTagger(10, 3, position="rope"), ValueError,
     r"position must be None, 'sinusoidal' or 'learned', got 'rope'")
case("CausalTransformerTagger-float-ids", lambda: A.CausalTransformerTagger(10, 3, 8, 16, 2, 1)(torch.rand(2, 3)),
     TypeError, r"X must hold integer token ids")
case("CausalTransformerTagger-classes-zero", lambda: A.CausalTransformerTagger(10, 0), ValueError,
     r"num_classes must be a positive int, got 0")
case("ViT-patch-not-dividing", lambda: A.ViT(8, 3, 3), ValueError, r"img_size \(8\) must be a multiple of patch_size \(3\)")
case("ViT-patch-zero", lambda: A.ViT(8, 0, 3), ValueError, r"patch_size must be a positive int, got 0")
case("ViT-image-size", lambda: vit()(torch.rand(2, 1, 12, 12)), ValueError, r"images must be 8x8, got shape \(2, 1, 12, 12\)")
case("ViT-channels", lambda: vit()(torch.rand(2, 3, 8, 8)), ValueError, r"images have 3 channels.*in_channels=1")
case("ViT-3d", lambda: vit()(IMG[0]), ValueError, r"images must have shape \(batch, channels, height, width\)")
case("ViT-uint8", lambda: vit()((IMG * 255).to(torch.uint8)), TypeError, r"images must be a floating-point tensor.*uint8")
case("ViT-other-device", lambda: vit()(IMG.to("meta")), ValueError, r"images is on meta but the module is on cpu")
case("PatchEmbedding-channels", lambda: A.PatchEmbedding(4, 3, 8)(IMG), ValueError, r"images have 1 channels.*in_channels=3")
case("PatchEmbedding-patch-zero", lambda: A.PatchEmbedding(0, 1, 8), ValueError, r"patch_size must be a positive int, got 0")
case("PatchEmbedding-float64", lambda: A.PatchEmbedding(4, 1, 8)(IMG.double()), TypeError,
     r"images has dtype torch.float64 but the module's parameters are torch.float32")
case("patchify-not-dividing", lambda: A.patchify(torch.rand(1, 1, 7, 8), 2), ValueError,
     r"images of 7x8 pixels.*cannot be cut into 2x2 patches")
case("patchify-3d", lambda: A.patchify(IMG[0], 4), ValueError, r"images must have shape \(batch, channels, height, width\)")
case("patchify-list", lambda: A.patchify([[0.0]], 1), TypeError, r"images must be a torch.Tensor")
case("patchify-patch-float", lambda: A.patchify(IMG, 2.0), TypeError, r"patch_size must be an int, got float")
case("unpatchify-mismatch", lambda: A.unpatchify(torch.rand(1, 4, 4), 2, 6, 6), ValueError,
     r"patches of shape \(1, 4, 4\) do not tile a 6x6 image with 2x2 patches \(9 patches expected\)")
case("unpatchify-patch-zero", lambda: A.unpatchify(torch.rand(1, 4, 4), 0, 4, 4), ValueError,
     r"patch_size must be a positive int, got 0")
case("unpatchify-2d", lambda: A.unpatchify(torch.rand(4, 4), 2, 4, 4), ValueError, r"patches must have shape")
case("unpatchify-height-str", lambda: A.unpatchify(torch.rand(1, 4, 4), 2, "4", 4), TypeError, r"height must be an int, got str")
case("attention_rollout-empty", lambda: A.attention_rollout([]), ValueError, r"attentions must hold at least one")
case("attention_rollout-tensor", lambda: A.attention_rollout(rollout_layers(3)[0]), TypeError,
     r"attentions must be a list of \(batch, heads, n, n\) tensors, one per layer, got Tensor")
case("attention_rollout-3d", lambda: A.attention_rollout([torch.rand(2, 3, 3)]), ValueError,
     r"attentions\[0\] must have shape \(batch, heads, n, n\)")
case("attention_rollout-not-square", lambda: A.attention_rollout([torch.rand(1, 2, 3, 4)]), ValueError,
     r"attentions\[0\] must be square self-attention weights, got shape \(1, 2, 3, 4\)")
case("attention_rollout-layers-differ", lambda: A.attention_rollout(rollout_layers(3, 4)), ValueError,
     r"attentions\[1\] has shape \(1, 2, 4, 4\), unlike the layers before it")
case("attention_rollout-int", lambda: A.attention_rollout([torch.ones(1, 2, 3, 3, dtype=torch.long)]), TypeError,
     r"attentions\[0\] must be a floating-point tensor")

# chapter 9: attnlib.efficient and grouped-query attention
case("blockwise_attention-block-zero", lambda: A.blockwise_attention(q4, k4, v4, block_size=0), ValueError,
     r"block_size must be a positive int, got 0")
case("blockwise_attention-mask-shape", lambda: A.blockwise_attention(q4, k4, v4, torch.ones(2, 4, dtype=torch.bool)),
     ValueError, r"mask of shape \(2, 4\) does not broadcast to \(2, 2, 3, 5\)")
case("blockwise_attention-causal-more-queries", lambda: A.blockwise_attention(k4, q4, q4, causal=True), ValueError,
     r"causal attention needs at least as many keys \(3\) as queries \(5\)")
case("sliding_window_attention-window-zero", lambda: A.sliding_window_attention(q4, q4, q4, window=0), ValueError,
     r"window must be a positive int, got 0")
case("sliding_window_attention-window-float", lambda: A.sliding_window_attention(q4, q4, q4, window=2.0), TypeError,
     r"window must be an int, got float")
case("sliding_window_attention-causal-more-queries", lambda: A.sliding_window_attention(k4, q4, q4, window=2),
     ValueError, r"causal attention needs at least as many keys \(3\) as queries \(5\)")
case("MHA-kv-heads-not-dividing", lambda: A.MultiHeadAttention(16, 4, num_kv_heads=3), ValueError,
     r"num_kv_heads \(3\) must divide num_heads \(4\)")
case("sliding_window_mask-zero", lambda: A.sliding_window_mask(3, 3, 0), ValueError, r"window must be a positive int, got 0")
case("sliding_window_mask-more-queries", lambda: A.sliding_window_mask(4, 3, 2), ValueError,
     r"num_queries \(4\) must not exceed num_keys \(3\)")
case("attention_pattern-kind", lambda: A.attention_pattern("banded", 4), ValueError, r"kind must be one of")
case("attention_pattern-dilation-zero", lambda: A.attention_pattern("dilated", 4, dilation=0), ValueError,
     r"dilation must be a positive int, got 0")
case("kept_positions-global-negative", lambda: A.kept_positions("global+local", 4, num_global=-1), ValueError,
     r"num_global must be a non-negative int, got -1")
case("WindowKVCache-window-float", lambda: A.WindowKVCache(2.5), TypeError, r"window must be an int, got float")
case("EfficientLM-window-zero", lambda: A.EfficientLM(10, 8, 16, 2, window=0), ValueError, r"window must be a positive int, got 0")
case("EfficientLM-kv-heads", lambda: A.EfficientLM(10, 8, 16, 4, num_kv_heads=3), ValueError,
     r"num_kv_heads \(3\) must divide num_heads \(4\)")
case("linear_attention-pairs", lambda: A.linear_attention(q, k, v[:, :2]), ValueError,
     r"keys and values must have the same number of positions")
case("linear_attention-int", lambda: A.linear_attention(q.long(), k.long(), v.long()), TypeError,
     r"queries must be a floating-point tensor")
case("linear_attention_recurrent-lengths", lambda: A.linear_attention_recurrent(q, k, v), ValueError,
     r"the recurrent form takes one query per key")
case("KeyValueMemory-kind", lambda: A.KeyValueMemory(10, 4, kind="rnn"), ValueError, r"kind must be 'softmax' or 'linear'")
case("KeyValueMemory-key-range", lambda: A.KeyValueMemory(4, 4)(torch.full((1, 2, 2), 3), torch.tensor([[7]])),
     ValueError, r"queries holds token ids in \[7, 7\]")
case("alibi_slopes-zero", lambda: A.alibi_slopes(0), ValueError, r"num_heads must be a positive int, got 0")
case("alibi_bias-more-queries", lambda: A.alibi_bias(2, 5, 3), ValueError, r"num_queries \(5\) must not exceed num_keys \(3\)")
case("ALiBiAttention-cross", lambda: A.ALiBiAttention(8, 2)(X8, X8.clone(), X8), ValueError,
     r"ALiBiAttention is causal self-attention only")

# --- issue 27: empty inputs, foreign and stale decoder states, containers, files ---------------
RNN_DECODERS = {"Seq2SeqDecoder": A.Seq2SeqDecoder, "Seq2SeqAttentionDecoder": A.Seq2SeqAttentionDecoder,
                "LuongAttentionDecoder": A.LuongAttentionDecoder}


def gru_state(decoder, num_hiddens=8, num_layers=1, batch=2):
    """``decoder``'s state built from a GRU encoder of the given size."""
    torch.manual_seed(0)
    enc = A.Seq2SeqEncoder(20, 4, num_hiddens, num_layers)
    return decoder.init_state(enc(src_ids(batch, 3)), torch.tensor([3] * batch))


def hand_made_state(decoder_class, num_hiddens):
    """A one-layer, batch-2 state of the layout ``decoder_class.init_state`` builds."""
    hidden = torch.randn(1, 2, num_hiddens)
    if decoder_class is A.Seq2SeqDecoder:
        return [torch.randn(2, num_hiddens), hidden]  # [context, hidden]
    return [torch.randn(2, 3, num_hiddens), hidden, None]  # [enc_outputs, hidden, enc_valid_lens]


def stale_transformer_state():
    """A decoder state fed a whole target prefix, then fed a second prefix."""
    d = dec_t().eval()
    state = d.init_state(X8, torch.tensor([5, 3]))
    d(src_ids(), state)
    return d(src_ids(), state)


@functools.cache
def _tmp():
    import tempfile
    return tempfile.mkdtemp(prefix="attnlib-bad-inputs-")


def text_file(name, text):
    path = f"{_tmp()}/{name}"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


for name, make in RNN_DECODERS.items():
    first = "context" if name == "Seq2SeqDecoder" else "enc_outputs"
    case(f"{name}-state-hidden-size", lambda m=make: m(20, 4, 6, 1)(src_ids(), hand_made_state(m, 8)), ValueError,
         rf"the state holds {first} \(2, (3, )?8\) and hidden \(1, 2, 8\), but this decoder's GRU has "
         r"num_layers=1 and num_hiddens=6: build the encoder with the decoder's num_hiddens and num_layers")
    case(f"{name}-encoder-layers", lambda m=make: gru_state(m(20, 4, 8, 1), num_layers=2), ValueError,
         r"hidden \(2, 2, 8\), but this decoder's GRU has num_layers=1 and num_hiddens=8")
    case(f"{name}-state-none", lambda m=make: m(20, 4, 8, 1)(src_ids(), None), TypeError,
         rf"state must be the list \[{first}, hidden.*\] that init_state returns, got NoneType")
    case(f"{name}-transformer-encoder", lambda m=make: m(20, 4, 8, 1).init_state(X8), TypeError,
         r"enc_all_outputs must be the \(outputs, state\) pair a Seq2SeqEncoder returns, got a tensor of "
         r"shape \(2, 5, 8\) \(a Transformer encoder's output\?\)")
    case(f"{name}-hidden-float64", lambda m=make: (d := m(20, 4, 8, 1))(src_ids(), [
        t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in gru_state(d)]),
         TypeError, r"state\[1\] \(hidden\) has dtype torch.float64 but the module's parameters are torch.float32")
    case(f"{name}-reorder-out-of-range", lambda m=make: (d := m(20, 4, 8, 1)).reorder_state(
        gru_state(d), torch.tensor([0, 5])), ValueError, r"index must lie in \[0, 1\], got \[0, 5\]")
    case(f"{name}-reorder-list", lambda m=make: (d := m(20, 4, 8, 1)).reorder_state(gru_state(d), [0]),
         TypeError, r"index must be a torch.Tensor of shape \(new_batch,\)")
case("EncoderDecoder-gru-sizes-differ", lambda: A.EncoderDecoder(A.Seq2SeqEncoder(20, 4, 6, 1), A.Seq2SeqAttentionDecoder(
    20, 4, 8, 1))(src_ids(), src_ids()), ValueError, r"enc_outputs \(2, 4, 6\) and hidden \(1, 2, 6\).*num_hiddens=8")
case("EncoderDecoder-transformer-encoder-gru-decoder", lambda: A.EncoderDecoder(enc_t(), A.Seq2SeqAttentionDecoder(
    20, 4, 8, 1))(src_ids(), src_ids()), TypeError, r"enc_all_outputs must be the \(outputs, state\) pair")
case("EncoderDecoder-transformer-sizes-differ", lambda: A.EncoderDecoder(A.TransformerEncoder(20, 6, 16, 2, 1), dec_t())(
    src_ids(), src_ids()), ValueError, r"enc_outputs has last dim 6 \(shape \(2, 4, 6\)\), but this decoder has num_hiddens=8")
case("TransformerDecoder-stale-state", stale_transformer_state, ValueError,
     r"state was already fed to the decoder.*pass the state that call returned.*or call init_state again")
case("TransformerDecoder-foreign-state-blocks", lambda: A.TransformerDecoder(20, 8, 16, 2, 2)(
    src_ids(), dec_t().init_state(X8)), ValueError,
     r"state\[2\] must list a cache pair \(or None\) per decoder block, 2 or more, got a list of 1")
case("TransformerDecoder-gru-state", lambda: dec_t()(src_ids(), [X8, torch.randn(1, 2, 8), None]), ValueError,
     r"state\[2\] must list a cache pair \(or None\) per decoder block.*got NoneType")
case("TransformerDecoder-state-tuple", lambda: dec_t()(src_ids(), tuple(dec_t().init_state(X8))), TypeError,
     r"state must be a list \[enc_outputs, enc_valid_lens, caches\], got tuple")
case("TransformerDecoder-enc-int", lambda: dec_t().init_state(X8.long()), TypeError,
     r"enc_outputs must be a floating-point tensor, got dtype torch.int64")
case("TransformerDecoder-reorder-range", lambda: dec_t().reorder_state(dec_t().init_state(X8), torch.tensor([2])),
     ValueError, r"index must lie in \[0, 1\], got \[2\]")
case("TransformerDecoder-reorder-float", lambda: dec_t().reorder_state(dec_t().init_state(X8), torch.tensor([0.0])),
     TypeError, r"index must hold integer batch rows, got dtype torch.float32")
case("DecoderBlock-caches-none", lambda: A.TransformerDecoderBlock(8, 16, 2)(X8, [X8, None, None]), ValueError,
     r"state\[2\] must list a cache pair \(or None\) per decoder block, 1 or more, got NoneType")
case("DecoderBlock-enc-none", lambda: A.TransformerDecoderBlock(8, 16, 2)(X8, [None, None, [None]]), TypeError,
     r"state\[0\] \(enc_outputs\) must be a torch.Tensor")
case("DecoderOnlyLM-caches-none", lambda: lm()(IDS, [None, None]), TypeError,
     r"caches\[0\] must be a KVCache, got NoneType: build the caches with model.init_caches\(\)")
case("DecoderOnlyLM-caches-static", lambda: lm()(IDS, [A.KVCache(static=True)] * 2), ValueError,
     r"caches\[0\] is a static KVCache")
case("DecoderOnlyLM-caches-str", lambda: lm()(IDS, "caches"), TypeError, r"caches must be a list of KVCache")
case("sample-stop-bool", lambda: A.sample(lm(), IDS, 2, stop=True), ValueError, r"stop must be None or a token id")
case("sample-use-cache-str", lambda: A.sample(lm(), IDS, 2, use_cache="no"), TypeError,
     r"use_cache must be a bool, got str")
case("greedy_decode-use-cache-str", lambda: A.greedy_decode(bahdanau(), data(), "go .", use_cache="no"), TypeError,
     r"use_cache must be a bool, got str")
case("beam_search-need-weights-int", lambda: A.beam_search(bahdanau(), data(), "go .", need_weights=1), TypeError,
     r"need_weights must be a bool, got int")
case("greedy_decode-none-in-list", lambda: A.greedy_decode(bahdanau(), data(), ["go .", None]), TypeError,
     r"sentences\[1\] must be a sentence \(a string or a list of tokens\), got NoneType")
case("translate-int-in-list", lambda: A.translate(bahdanau(), data(), [3]), TypeError, r"sentences\[0\] must be a sentence")
case("Vocab-none", lambda: A.Vocab(None), TypeError,
     r"tokens must be a list of tokens or of token lists, got NoneType: pass \[\] for the special tokens only")
case("Vocab-int", lambda: A.Vocab(3), TypeError, r"tokens must be a list of tokens or of token lists, got int")
case("Vocab-none-token", lambda: A.Vocab([None, "a"]), TypeError, r"tokens\[0\] must be a token \(str\) or a list of tokens")
case("Vocab-none-sentence", lambda: A.Vocab([["a"], None]), TypeError,
     r"tokens\[1\] must be a list of tokens, like tokens\[0\], got NoneType")
case("Vocab-string-sentence", lambda: A.Vocab([["a"], "b c"]), TypeError, r"tokens\[1\] must be a list of tokens.*not a string")
case("Vocab-int-token", lambda: A.Vocab([["a", 5]]), TypeError, r"tokens\[0\]\[1\] must be a str, got int 5")
case("Vocab-reserved-int", lambda: A.Vocab(["a"], reserved_tokens=5), TypeError, r"reserved_tokens must be a list of strings, got int")
case("Vocab-reserved-none-item", lambda: A.Vocab(["a"], reserved_tokens=[None]), TypeError,
     r"reserved_tokens\[0\] must be a str, got NoneType")
case("Pair-string", lambda: A.Pair("go .", "va !", ((),) * 4), TypeError, r"a Pair's src must be a tuple of tokens \(str\), got 'go .'")
case("load_fra_eng-empty-file", lambda: A.load_fra_eng(text_file("empty.txt", "")), ValueError,
     r"empty.txt holds no sentence pairs \(it is empty, or blank lines only\): expected one 'English<TAB>French' pair a line")
case("load_fra_eng-blank-lines", lambda: A.load_fra_eng(text_file("blank.txt", "\n \t \n\n")), ValueError,
     r"blank.txt holds no sentence pairs")
case("load_fra_eng-no-tab", lambda: A.load_fra_eng(text_file("notab.txt", "go.,va !\n")), ValueError,
     r"notab.txt:1: expected 'English<TAB>French', got 'go.,va !'")
case("load_fra_eng-one-column", lambda: A.load_fra_eng(text_file("half.txt", "Go.\tVa !\nRun!\t\n")), ValueError,
     r"half.txt:2: empty sentence")
case("load_fra_eng-path-int", lambda: A.load_fra_eng(3), TypeError, r"path must be a file path \(a str or pathlib.Path\) or None")
case("split_pairs-none", lambda: A.split_pairs(None), TypeError, r"pairs must be a list of Pair.*got NoneType")
case("split_pairs-tuples", lambda: A.split_pairs([("go .", "va !")]), TypeError, r"pairs\[0\] must be a Pair, got tuple")
case("split_pairs-frac-str", lambda: A.split_pairs(data().train, val_frac="0.1"), TypeError, r"val_frac must be a number, got str")
case("length_buckets-none", lambda: A.length_buckets(None), TypeError, r"pairs must be a list of Pair")
case("length_buckets-edges-str", lambda: A.length_buckets(data().test, edges="26"), TypeError,
     r"edges must be a list of increasing positive ints, got '26'")
case("novel_pair_fraction-train-none", lambda: A.novel_pair_fraction(data().test, None), TypeError,
     r"train must be a list of Pair.*got NoneType")
case("TranslationData-pairs-tuples", lambda: A.TranslationData(pairs=[("go", "va")] * 10), TypeError,
     r"pairs\[0\] must be a Pair, got tuple")
case("TranslationData-build-none", lambda: data().build(None), TypeError,
     r"pairs must be a list of Pair or of \(source, target\) sentence pairs, got NoneType")
case("TranslationData-build-item", lambda: data().build([("go .",)]), TypeError,
     r"pairs\[0\] must be a Pair or a \(source, target\) pair of sentences, got tuple")
case("TranslationData-encode-ids", lambda: data().encode_src([4, 5]), TypeError, r"sentence\[0\] must be a str, got int 4")
case("TranslationData-is-seen-none", lambda: data().is_seen(None), TypeError,
     r"sentence must be a string or a sequence of tokens, got NoneType")
case("truncate_pad-none", lambda: A.truncate_pad(None, 4, 0), TypeError, r"ids must be a sequence of ints \(token ids\), got NoneType")
case("truncate_pad-floats", lambda: A.truncate_pad([1.5], 4, 0), TypeError, r"ids must be a sequence of ints.*\[1.5\]")
case("NWKernelRegression-int-values", lambda: A.NWKernelRegression()(torch.rand(3), torch.rand(4),
                                                                    torch.arange(4)), TypeError,
     r"values must be a floating-point tensor, got dtype torch.int64")
case("loo_cv_mse-widths-number", lambda: A.loo_cv_mse(torch.rand(4), torch.rand(4), widths=0.5), TypeError,
     r"widths must be a sequence of widths, got the number 0.5: pass \[0.5\]")
case("loo_cv_mse-widths-none", lambda: A.loo_cv_mse(torch.rand(4), torch.rand(4), widths=None), TypeError,
     r"widths must be a sequence of widths, got NoneType")
case("attention_rollout-no-heads", lambda: A.attention_rollout([torch.rand(1, 0, 3, 3)]), ValueError,
     r"attentions\[0\] has no heads to average \(shape \(1, 0, 3, 3\)\)")
case("attention_rollout-residual-str", lambda: A.attention_rollout(rollout_layers(3), residual="no"), TypeError,
     r"residual must be a bool, got str")
case("ViT-empty-batch", lambda: vit()(IMG[:0]), ValueError, r"images must not be empty.*\(0, 1, 8, 8\)")
case("sdp-need-weights-str", lambda: sdp(q4, k4, v4, need_weights="yes"), TypeError, r"need_weights must be a bool, got str")


@pytest.mark.parametrize(("call", "error", "message"), CASES)
def test_bad_call_gets_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_battery_is_large_and_covers_every_public_name():
    assert len(CASES) >= 150
    ids = " ".join(c.id for c in CASES)
    skip = {"KERNELS", "PRESETS", "History", "Translation", "best_device",  # data / no arguments
            "AttentionModule", "Seq2Seq"}  # a base class; an alias of EncoderDecoder
    aliases = {"TransformerEncoderBlock": "EncoderBlock", "TransformerDecoderBlock": "DecoderBlock",
               "LearnedPositionalEmbedding": "LearnedPE", "MultiHeadAttention": "MHA",
               "scaled_dot_product": "sdp", "train_seq2seq": "train-"}
    missing = [n for n in A.__all__ if n not in skip and aliases.get(n, n) not in ids]
    assert not missing


def test_empty_inputs_with_a_natural_answer_give_it():
    """An empty batch (or no queries, or no keys) has an empty answer, whatever the mask."""
    for lens in (None, torch.zeros(0, dtype=torch.long), torch.zeros(0, 3), torch.zeros(0, 4, dtype=torch.bool)):
        assert A.masked_softmax(torch.rand(0, 3, 4), lens).shape == (0, 3, 4)
    assert A.make_mask(torch.zeros(0, dtype=torch.long), 0, 3, 4).shape == (0, 1, 4)
    assert A.masked_softmax(torch.rand(2, 0, 4), torch.tensor([1, 2])).shape == (2, 0, 4)
    W = A.masked_softmax(torch.rand(2, 3, 4), torch.tensor([[1, 2, 3], [0, 4, 2]]))  # per query, one row empty
    assert not W.isnan().any() and torch.equal(W[1, 0], torch.zeros(4))
    torch.testing.assert_close(W.sum(-1), torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]))
    assert A.attention_rollout([torch.rand(0, 2, 3, 3)]).shape == (0, 3, 3)
    assert A.PositionWiseFFN(16, 8)(torch.rand(0, 3, 8)).shape == (0, 3, 8)


@pytest.mark.parametrize("name", [*ATTENTIONS, "LocationAttention"])
@pytest.mark.parametrize("record", [False, True])
def test_padding_garbage_never_reaches_an_output(name, record):
    """NaN in values: padding that no query sees never leaks, and a fully masked row stays
    exactly 0 even when another query sees the NaN (it was ``0 * NaN``), on both paths."""
    torch.manual_seed(0)
    m = ATTENTIONS.get(name, lambda: A.LocationAttention(4, 5))()
    values = v.clone()
    values[0, 3:], values[1, 1] = float("nan"), float("nan")  # padding of sequence 0; a key of 1
    lens = torch.tensor([[3, 3, 3], [0, 2, 2]])  # sequence 1: query 0 sees nothing
    with A.record_attention(m) if record else contextlib.nullcontext():
        out = m(q, k, values, lens)
    assert torch.isfinite(out[0]).all(), out
    assert torch.equal(out[1, 0], torch.zeros(6))


def test_one_mask_for_every_query_may_be_1d():
    mask = torch.tensor([True, True, True, False, False])
    for need_weights in (False, True):
        out, _ = A.scaled_dot_product(q4, k4, v4, mask, need_weights=need_weights)
        torch.testing.assert_close(out, A.scaled_dot_product(q4[..., :, :], k4[..., :3, :], v4[..., :3, :])[0])


def test_every_gru_decoder_still_takes_its_own_state():
    """The state checks accept what init_state builds (bidirectional and multi-layer encoders too)."""
    for make in RNN_DECODERS.values():
        torch.manual_seed(0)
        for enc in (A.Seq2SeqEncoder(20, 4, 8, 2, bidirectional=True), A.Seq2SeqEncoder(20, 4, 8, 2)):
            d = make(20, 4, 8, 2)
            state = d.init_state(enc(src_ids(), torch.tensor([4, 2])), torch.tensor([4, 2]))
            logits, state = d(src_ids(), state)
            picked = d.reorder_state(state, torch.tensor([1, 1, 0]))
            assert logits.shape == (2, 4, 20) and d(src_ids(3, 1), picked)[0].shape == (3, 1, 20)


def classify() -> dict[str, list[str]]:
    """Run every case: clear (expected type and message), bare (anything else raised), silent."""
    import re

    import matplotlib
    matplotlib.use("Agg")
    out: dict[str, list[str]] = {"clear": [], "bare": [], "silent": []}
    for c in CASES:
        call, error, message = c.values
        try:
            call()
        except Exception as e:  # noqa: BLE001 - classified below
            ok = isinstance(e, error) and re.search(message, str(e))
            out["clear" if ok else "bare"].append(f"{c.id}: {type(e).__name__}: {str(e)[:120]}")
        else:
            out["silent"].append(c.id)
    return out


if __name__ == "__main__":
    torch.set_num_threads(1)
    result = classify()
    for kind in ("bare", "silent"):
        print(f"--- {kind}")
        print("\n".join(result[kind]))
    print({kind: len(ids) for kind, ids in result.items()}, "of", len(CASES), "calls")
