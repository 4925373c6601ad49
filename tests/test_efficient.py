"""attnlib.efficient (chapter 9) against references: PyTorch's fused attention, the full-mask
computation a cache must reproduce, the parallel form of linear attention, ALiBi's paper."""
import pytest
import torch
import torch.nn.functional as F

import attnlib as A
from attnlib import efficient as E
from attnlib.selfattention import peak_memory


def qkv(*shape, d_v=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    *lead, n, d = shape
    return (torch.randn(*lead, n, d, generator=gen), torch.randn(*lead, n + 3, d, generator=gen),
            torch.randn(*lead, n + 3, d_v or d, generator=gen))


# --- blockwise attention ---------------------------------------------------------------------

@pytest.mark.parametrize("block_size", [1, 3, 4, 64])
def test_blockwise_equals_sdpa(block_size):
    q, k, v = qkv(2, 3, 5, 8, d_v=6)
    expected = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(E.blockwise_attention(q, k, v, block_size=block_size), expected)


@pytest.mark.parametrize("block_size", [2, 5])
def test_blockwise_causal_and_scale_equal_sdpa(block_size):
    q, k, v = qkv(2, 2, 6, 4)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=False,
                                              attn_mask=A.causal_mask(6, 9), scale=0.3)
    torch.testing.assert_close(E.blockwise_attention(q, k, v, causal=True, block_size=block_size,
                                                     scale=0.3), expected)


def test_blockwise_padding_mask_and_fully_masked_rows():
    q, k, v = qkv(3, 2, 4, 8)
    mask = A.make_mask(torch.tensor([7, 2, 0]), 3, 4, 7).unsqueeze(1)  # (3, 1, 1, 7); row 2 sees nothing
    out = E.blockwise_attention(q, k, v, mask, block_size=3)
    assert not out.isnan().any()
    torch.testing.assert_close(out[2], torch.zeros_like(out[2]))
    expected = F.scaled_dot_product_attention(q[:2], k[:2], v[:2], attn_mask=mask[:2])
    torch.testing.assert_close(out[:2], expected)
    torch.testing.assert_close(out, A.scaled_dot_product(q, k, v, mask)[0])


def test_blockwise_causal_with_padding_matches_the_library():
    q, k, v = qkv(2, 2, 7, 4)
    mask = A.make_mask(torch.tensor([[1, 2, 3, 0, 5, 6, 10], [4] * 7]), 2, 7, 10).unsqueeze(1)
    out = E.blockwise_attention(q, k, v, mask, causal=True, block_size=4)
    torch.testing.assert_close(out, A.scaled_dot_product(q, k, v, mask, causal=True)[0])


def test_blockwise_large_scores_do_not_overflow():
    """The running max keeps exp() in range where a plain exp of the scores overflows."""
    q, k, v = qkv(1, 4, 16)
    out = E.blockwise_attention(q * 100, k * 100, v, block_size=2)
    assert out.isfinite().all()
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q * 100, k * 100, v),
                               atol=1e-4, rtol=1e-4)


def test_blockwise_gradients_match_sdpa():
    q, k, v = (t.requires_grad_() for t in qkv(2, 5, 4))
    E.blockwise_attention(q, k, v, causal=True, block_size=3).square().sum().backward()
    ours = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    mask = A.causal_mask(5, 8)
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask).square().sum().backward()
    for a, b in zip(ours, (q.grad, k.grad, v.grad), strict=True):
        torch.testing.assert_close(a, b)


def test_blockwise_never_builds_the_score_matrix():
    q, k, v = qkv(1, 256, 16)
    with torch.no_grad():
        blocked, _ = peak_memory(E.blockwise_attention, q, k, v, block_size=32)
        full, _ = peak_memory(A.scaled_dot_product, q, k, v, need_weights=True)
    assert full >= 256 * 259 * 4  # the (q, k) weights in float32
    assert blocked < full / 3


@pytest.mark.parametrize("masks", ["none", "causal", "padding", "causal+padding"])
def test_blockwise_memory_stays_linear_with_masks(masks):
    """Every temporary is (q, block): doubling n doubles the peak, with masks too, and the peak
    stays well below one n x n bool mask (the causal mask used to be built whole)."""
    peaks = []
    for n in (512, 1024):
        q, k, v = (torch.randn(1, 1, n, 16) for _ in range(3))
        pad = torch.ones(1, 1, 1, n, dtype=torch.bool)
        pad[..., n // 2:] = False
        kw = {"causal": "causal" in masks, "mask": pad if "padding" in masks else None}
        with torch.no_grad():
            peaks.append(peak_memory(E.blockwise_attention, q, k, v, block_size=32, **kw)[0])
    assert peaks[1] < 2.3 * peaks[0]
    assert peaks[1] < 1024 * 1024  # one (n, n) bool mask


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_blockwise_sums_half_precision_in_float32(dtype):
    """Many small blocks summed in bf16/fp16 drift; the running statistics stay float32, so the
    result is the float32 one rounded once."""
    q, k, v = (t * 2 for t in qkv(2, 2, 16, 32, seed=3))
    k, v = k.repeat(1, 1, 16, 1), v.repeat(1, 1, 16, 1)  # 304 keys in 38 blocks of 8
    mask = A.make_mask(torch.tensor([304, 150]), 2, 16, 304).unsqueeze(1)
    out = E.blockwise_attention(q.to(dtype), k.to(dtype), v.to(dtype), mask, block_size=8)
    exact = E.blockwise_attention(*(t.to(dtype).float() for t in (q, k, v)), mask, block_size=8)
    assert out.dtype == dtype
    torch.testing.assert_close(out, exact.to(dtype), atol=0, rtol=0)


def test_blockwise_ignores_nan_and_inf_that_the_mask_hides_from_every_query():
    q, k, v = qkv(2, 2, 5, 4)
    mask = A.make_mask(torch.tensor([8, 3]), 2, 5, 8).unsqueeze(1)  # (2, 1, 1, 8)
    k, v = k.clone(), v.clone()
    k[1, :, 3:], v[1, :, 3:] = float("nan"), float("inf")  # padding garbage of sequence 1
    for causal in (False, True):
        out = E.blockwise_attention(q, k, v, mask, causal=causal, block_size=2)
        assert out.isfinite().all()
        torch.testing.assert_close(out, A.scaled_dot_product(q, k, v, mask, causal=causal)[0])


def pad_to(mask, nq):
    """A mask that SDPA takes (it refuses a 1-D one): broadcast to (..., nq, k)."""
    return mask.expand(*mask.shape[:-2], nq, mask.shape[-1])


@pytest.mark.parametrize("shape", ["keys", "1,keys", "batch,1,1,keys", "queries,keys",
                                   "batch,1,queries,keys"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("nq", [13, 5])
def test_blockwise_takes_every_mask_shape_it_promises(shape, causal, nq):
    """Every mask broadcastable to (..., q, k), a 1-D (keys,) padding mask included, with and
    without causal, against SDPA; scores x 4 so that a missing rescale or a lost block shows."""
    q, k, v = qkv(2, 3, nq, 8, seed=7)  # keys: nq + 3
    q, k = 4 * q, 4 * k
    nk = k.shape[-2]
    gen = torch.Generator().manual_seed(1)
    dims = {"keys": (nk,), "1,keys": (1, nk), "batch,1,1,keys": (2, 1, 1, nk),
            "queries,keys": (nq, nk), "batch,1,queries,keys": (2, 1, nq, nk)}[shape]
    mask = torch.rand(*dims, generator=gen) > 0.3
    mask[..., -1] = True  # every query sees a key, even under the causal mask
    full = pad_to(mask, nq) & (A.causal_mask(nq, nk) if causal else True)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=full)
    for block_size, query_block_size in ((1, 1), (4, 3), (4, 512), (64, 64)):
        got = E.blockwise_attention(q, k, v, mask, causal=causal, block_size=block_size,
                                    query_block_size=query_block_size)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def score_blocks(fn):
    """The score blocks fn computes: the matrix products whose second operand is a block of keys
    transposed, counted with a dispatch mode (deterministic, unlike a time)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        scores = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in (torch.ops.aten.bmm.default, torch.ops.aten.mm.default) and args[1].shape[-2] == 8:
                self.scores += out.shape[-2] * out.shape[-1] * (out.shape[0] if out.dim() == 3 else 1)
            return out

    with Count() as counter:
        fn()
    return counter.scores


@pytest.mark.parametrize("n, block_size", [(256, 32), (250, 32), (64, 64)])
def test_causal_blockwise_skips_the_blocks_above_the_diagonal(n, block_size):
    """With causal=True the queries go in blocks too, and each stops at its last query: with
    T = ceil(n / block) blocks of queries and of keys, T (T + 1) / 2 blocks of scores instead of
    T^2, about half."""
    q, k, v = (torch.randn(1, 1, n, 8) for _ in range(3))
    full = score_blocks(lambda: E.blockwise_attention(q, k, v, block_size=block_size))
    causal = score_blocks(lambda: E.blockwise_attention(q, k, v, causal=True, block_size=block_size,
                                                        query_block_size=block_size))
    assert full == n * n
    rows = [min(block_size, n - s) for s in range(0, n, block_size)]  # each query block's size
    assert causal == sum(r * min(n, s + r) for r, s in zip(rows, range(0, n, block_size), strict=True))
    if n // block_size >= 8:
        assert causal < 0.6 * full
    for query_block_size in (block_size, 512):
        torch.testing.assert_close(E.blockwise_attention(q, k, v, causal=True, block_size=block_size,
                                                         query_block_size=query_block_size),
                                   F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                   atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"block_size": 0}, ValueError, "block_size must be a positive int"),
    ({"block_size": 2.5}, TypeError, "block_size must be an int"),
    ({"mask": torch.ones(3, 3)}, TypeError, "mask must be a bool tensor"),
    ({"mask": torch.ones(2, 5, dtype=torch.bool)}, ValueError, "does not broadcast"),
])
def test_blockwise_bad_arguments(kwargs, error, match):
    q, k, v = qkv(2, 4, 8)
    with pytest.raises(error, match=match):
        E.blockwise_attention(q, k, v, **kwargs)


def test_blockwise_bad_shapes():
    q, k, v = qkv(2, 4, 8)
    with pytest.raises(ValueError, match="same last dim"):
        E.blockwise_attention(q, k[..., :3], v)
    with pytest.raises(TypeError, match="queries must be a torch.Tensor"):
        E.blockwise_attention(q.tolist(), k, v)


# --- sliding windows and patterns ------------------------------------------------------------

def test_sliding_window_mask():
    m = E.sliding_window_mask(5, 5, 2)
    assert m.tolist() == [[j in (i - 1, i) for j in range(5)] for i in range(5)]
    assert torch.equal(E.sliding_window_mask(2, 6, 3), E.sliding_window_mask(6, 6, 3)[-2:])
    assert torch.equal(E.sliding_window_mask(4, 4, 10), A.causal_mask(4, 4))
    with pytest.raises(ValueError, match="window must be a positive int"):
        E.sliding_window_mask(3, 3, 0)


def test_patterns_and_kept_positions():
    n, w, d = 12, 3, 2
    for kind in E.PATTERNS:
        mask = E.attention_pattern(kind, n, w, d, 2)
        assert mask.diagonal().all()  # every query sees itself
        if kind != "full":
            assert not mask.triu(1).any()  # never the future
    dil = E.attention_pattern("dilated", n, w, d)
    assert dil[10].nonzero().flatten().tolist() == [6, 8, 10]
    gl = E.attention_pattern("global+local", n, w, 1, 2)
    assert gl[10].nonzero().flatten().tolist() == [0, 1, 8, 9, 10]
    # what a query at position n or later can see lies in the kept positions
    for kind in ("causal", "sliding", "dilated", "global+local"):
        big = E.attention_pattern(kind, n + 6, w, d, 2)
        needed = set(big[n:, :n].nonzero()[:, 1].tolist())
        assert needed <= set(E.kept_positions(kind, n, w, d, 2)), kind
    assert E.kept_positions("sliding", n, w) == [10, 11]
    with pytest.raises(ValueError, match="kind must be one of"):
        E.attention_pattern("banded", 4)


def lm(window=None, num_kv_heads=None):
    torch.manual_seed(0)
    return E.EfficientLM(20, 16, 32, num_heads=4, num_blks=2, max_len=40, window=window,
                         num_kv_heads=num_kv_heads).eval()


@pytest.mark.parametrize("window, num_kv_heads", [(3, None), (1, 2), (5, 1), (None, 2)])
def test_window_cache_decoding_equals_full_recomputation(window, num_kv_heads):
    model = lm(window, num_kv_heads)
    ids = torch.randint(20, (2, 14), generator=torch.Generator().manual_seed(1))
    full = model(ids)
    caches = model.init_caches()
    steps = [model(ids[:, :4], caches)] + [model(ids[:, i:i + 1], caches) for i in range(4, 14)]
    torch.testing.assert_close(torch.cat(steps, 1), full)
    held = caches[0].k.shape[2]
    assert held == (14 if window is None else window - 1) and len(caches[0]) == 14
    assert caches[0].k.shape[1] == (num_kv_heads or 4)


@pytest.mark.parametrize("window, num_kv_heads", [(3, None), (4, 2)])
def test_rotary_window_cache_decoding_equals_full_recomputation(window, num_kv_heads):
    """Keys and queries rotate at their true positions once the window cache drops old ones."""
    torch.manual_seed(0)
    blk = E.EfficientBlock(16, 32, 4, num_kv_heads, window).eval()
    blk.attention.rope = A.RotaryEmbedding(4, max_len=64)
    X = torch.randn(2, 13, 16)
    full = blk(X)
    cache = E.WindowKVCache(window)
    steps = [blk(X[:, :3], cache)] + [blk(X[:, i:i + 1], cache) for i in range(3, 13)]
    torch.testing.assert_close(torch.cat(steps, 1), full)
    assert cache.held == window - 1 and len(cache) == 13


@pytest.mark.parametrize("nq, nk, window, block_size", [
    (10, 10, 3, 4), (7, 12, 5, 2), (16, 16, 1, 4), (5, 5, 9, 2), (33, 40, 6, 8), (8, 8, 8, 128)])
def test_sliding_window_attention_equals_the_masked_full_computation(nq, nk, window, block_size):
    """Forward and backward equal full attention under the window mask, with queries that are the
    last positions of the keys (a cache), windows wider than the sequence and uneven blocks."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, d, generator=gen, requires_grad=True)
               for n, d in ((nq, 8), (nk, 8), (nk, 5)))
    out = E.sliding_window_attention(q, k, v, window, block_size=block_size)
    expected = A.scaled_dot_product(q, k, v, E.sliding_window_mask(nq, nk, window))[0]
    torch.testing.assert_close(out, expected)
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    for a, b in zip(grads, torch.autograd.grad(expected.square().sum(), (q, k, v)), strict=True):
        torch.testing.assert_close(a, b)


def test_sliding_window_attention_work_and_memory_grow_linearly():
    """Doubling n doubles the score arithmetic and the peak memory (full attention: 4x), and the
    arithmetic is that of about n (window + block) scores, not n^2."""
    from torch.utils.flop_counter import FlopCounterMode

    window, block, d = 32, 16, 8
    flops, peaks = [], []
    for n in (512, 1024):
        q, k, v = (torch.randn(1, 1, n, d) for _ in range(3))
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            E.sliding_window_attention(q, k, v, window, block_size=block)
        flops.append(counter.get_total_flops())
        with torch.no_grad():
            peaks.append(peak_memory(E.sliding_window_attention, q, k, v, window, block_size=block)[0])
    assert flops[1] == pytest.approx(2 * flops[0], rel=0.02)
    assert flops[1] <= 2 * 2 * d * 1024 * (window + block)  # two matmuls per score: q.k and p.v
    assert flops[1] < 2 * 2 * d * 1024 * 1024 / 10
    assert peaks[1] < 2.3 * peaks[0]


def test_sliding_window_attention_ignores_keys_outside_every_window():
    """Keys no query's window reaches may hold anything, NaN and inf included: with the queries
    the last 4 of 16 positions and a window of 3, keys 0 .. 9 are seen by no query."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(1, 2, 4, 8, generator=gen), *torch.randn(2, 1, 2, 16, 8, generator=gen)
    expected = E.sliding_window_attention(q, k, v, 3, block_size=2)
    k[..., :10, :], v[..., :10, :] = float("nan"), float("inf")
    torch.testing.assert_close(E.sliding_window_attention(q, k, v, 3, block_size=2), expected)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"window": 0}, ValueError, "window must be a positive int"),
    ({"window": 2.0}, TypeError, "window must be an int"),
    ({"window": 3, "block_size": 0}, ValueError, "block_size must be a positive int"),
])
def test_sliding_window_attention_bad_arguments(kwargs, error, match):
    q, k, v = qkv(2, 4, 8)
    with pytest.raises(error, match=match):
        E.sliding_window_attention(q, k, v, **kwargs)
    with pytest.raises(ValueError, match="at least as many keys"):
        E.sliding_window_attention(k, q, q, 2)


def test_window_equals_masked_full_attention():
    """A windowed block is the plain block with the window mask as valid_lens."""
    model, X = lm(4), torch.randn(2, 9, 16)
    blk = model.blks[0]
    mask = E.sliding_window_mask(9, 9, 4).expand(2, 9, 9)
    expected = blk.addnorm2.residual(blk.addnorm1.residual(
        X, lambda x: blk.attention(x, x, x, mask)), blk.ffn)
    torch.testing.assert_close(blk(X), expected)
    assert not torch.allclose(blk(X), A.lm.CausalBlock.forward(blk, X))


def test_windowed_lm_output_ignores_tokens_out_of_reach():
    """Two layers of window w reach back 2 (w - 1) positions, no further."""
    model, ids = lm(3), torch.randint(20, (1, 12))
    changed = ids.clone()
    changed[0, 2] = (ids[0, 2] + 1) % 20
    diff = (model(ids) - model(changed)).abs().amax(-1)[0]  # (steps,)
    assert (diff[2:7] > 0).all() and (diff[7:] == 0).all()


def test_sampling_through_the_window_cache_equals_without():
    model = lm(3, 2)
    prompt = torch.tensor([[1, 5, 6]])
    kw = dict(num_new=12, temperature=1.0, top_k=5)
    with_cache = A.sample(model, prompt, generator=torch.Generator().manual_seed(0), **kw)
    without = A.sample(model, prompt, generator=torch.Generator().manual_seed(0), use_cache=False, **kw)
    assert torch.equal(with_cache, without)


def test_window_cache_reorder_and_bad_window():
    cache = E.WindowKVCache(2)
    cache.append(torch.randn(2, 1, 3, 4), torch.randn(2, 1, 3, 4))
    picked = cache.reorder(torch.tensor([1, 1]))
    assert isinstance(picked, E.WindowKVCache) and len(picked) == 3 and picked.held == 1
    torch.testing.assert_close(picked.k[0], cache.k[1])
    with pytest.raises(ValueError, match="window must be a positive int"):
        E.WindowKVCache(0)
    with pytest.raises(ValueError, match="window must be a positive int"):
        E.EfficientLM(10, window=0)


def test_window_cache_holds_only_its_window_after_a_prefill():
    """The cache keeps copies of its last window - 1 positions: a view of them would keep the
    whole prefill's storage alive until the next call."""
    cache = E.WindowKVCache(4)
    k, v = torch.randn(1, 2, 1000, 8), torch.randn(1, 2, 1000, 8)
    cache.append(k, v)
    assert cache.held == 3 and len(cache) == 1000
    for held in (cache.k, cache.v):
        assert held.untyped_storage().nbytes() == held.numel() * held.element_size()  # 3 positions
    torch.testing.assert_close(cache.k, k[:, :, -3:])
    cache.append(torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8))  # a decoding step: the same
    assert cache.k.untyped_storage().nbytes() == cache.k.numel() * cache.k.element_size()


# --- linear attention --------------------------------------------------------------------------

def test_linear_attention_is_kernel_attention():
    """With phi = exp-free features it is Nadaraya-Watson with the kernel phi(q).phi(k)."""
    q, k, v = qkv(2, 5, 4)
    phi_q, phi_k = E.elu_feature_map(q), E.elu_feature_map(k)
    kernel = phi_q @ phi_k.transpose(-2, -1)  # (2, 5, 8)
    expected = (kernel / kernel.sum(-1, keepdim=True)) @ v
    torch.testing.assert_close(E.linear_attention(q, k, v), expected)
    assert (phi_q > 0).all()


def test_linear_attention_rnn_form_equals_parallel_form():
    q, k, v = (torch.randn(2, 3, 9, 4) for _ in range(3))
    v = torch.randn(2, 3, 9, 6)
    parallel = E.linear_attention(q, k, v, causal=True)
    rnn, (S, z) = E.linear_attention_recurrent(q, k, v)
    torch.testing.assert_close(rnn, parallel)
    assert S.shape == (2, 3, 4, 6) and z.shape == (2, 3, 4)
    first, state = E.linear_attention_recurrent(q[..., :4, :], k[..., :4, :], v[..., :4, :])
    rest, _ = E.linear_attention_recurrent(q[..., 4:, :], k[..., 4:, :], v[..., 4:, :], state)
    torch.testing.assert_close(torch.cat((first, rest), -2), parallel)
    # the last query sees every key: the non-causal form over all keys
    torch.testing.assert_close(parallel[..., -1:, :], E.linear_attention(q[..., -1:, :], k, v))


def test_linear_attention_gradients_agree_between_forms():
    q, k, v = (torch.randn(1, 6, 4, requires_grad=True) for _ in range(3))
    E.linear_attention(q, k, v, causal=True).sum().backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    E.linear_attention_recurrent(q, k, v)[0].sum().backward()
    for a, t in zip(grads, (q, k, v), strict=True):
        torch.testing.assert_close(a, t.grad)


def test_linear_attention_bad_inputs():
    q, k, v = qkv(2, 4, 8)
    with pytest.raises(ValueError, match="one query per key"):
        E.linear_attention_recurrent(q, k, v)
    with pytest.raises(ValueError, match="keys and values must have the same number"):
        E.linear_attention(q, k, v[:, :2])
    with pytest.raises(TypeError, match="queries must be a floating-point"):
        E.linear_attention(q.long(), k, v)


def test_pair_recall_task_and_memory():
    pairs, queries, answers = E.make_pair_recall_task(5, 6, 3, 10, 4, torch.Generator().manual_seed(0))
    assert pairs.shape == (5, 6, 2) and queries.shape == answers.shape == (5, 3)
    for p, q, a in zip(pairs, queries, answers, strict=True):
        assert len(set(p[:, 0].tolist())) == 6  # distinct keys
        lookup = dict(p.tolist())
        assert [lookup[x] for x in q.tolist()] == a.tolist()
    for kind in ("softmax", "linear"):
        out = E.KeyValueMemory(10, 4, 8, kind)(pairs, queries)
        assert out.shape == (5, 3, 4)
    with pytest.raises(ValueError, match="num_pairs .* must not exceed num_keys"):
        E.make_pair_recall_task(1, 11, 1, 10, 4)
    with pytest.raises(ValueError, match="kind must be 'softmax' or 'linear'"):
        E.KeyValueMemory(10, 4, kind="rnn")


# --- ALiBi -------------------------------------------------------------------------------------

def test_alibi_slopes_match_the_paper():
    assert E.alibi_slopes(8).tolist() == [2.0 ** -i for i in range(1, 9)]
    assert E.alibi_slopes(4).tolist() == [2.0 ** -i for i in (2, 4, 6, 8)]
    # not a power of 2: the 4-head slopes, then every other slope of the 8-head sequence
    assert E.alibi_slopes(6).tolist() == [2.0 ** -i for i in (2, 4, 6, 8, 1, 3)]


def test_alibi_bias_and_attention():
    bias = E.alibi_bias(2, 3, 5)
    assert bias.shape == (2, 3, 5)
    assert bias[0, 0].tolist() == [-0.125, -0.0625, 0.0, float("-inf"), float("-inf")]  # slope 2^-4
    att = E.ALiBiAttention(8, 2).eval()
    X = torch.randn(2, 6, 8)
    q, k, v = (att.transpose_qkv(W(X)) for W in (att.W_q, att.W_k, att.W_v))
    scores = q @ k.transpose(-2, -1) / 2 + E.alibi_bias(2, 6, 6)  # head_dim 4
    expected = att.W_o(att.transpose_output(scores.softmax(-1) @ v))
    torch.testing.assert_close(att(X, X, X), expected)
    Y = X[0]
    with pytest.raises(ValueError, match="X must have shape"):
        att(Y, Y, Y)


@pytest.mark.parametrize("position", E.POSITIONS)
def test_position_tagger_is_causal_at_any_length(position):
    torch.manual_seed(0)
    model = E.PositionTagger(8, 8, position, num_hiddens=16, max_len=40).eval()
    X = torch.randint(8, (2, 40))
    changed = X.clone()
    changed[:, 30:] = (X[:, 30:] + 1) % 8
    out = model(X)
    assert out.shape == (2, 40, 8)
    torch.testing.assert_close(out[:, :30], model(changed)[:, :30])
    assert not torch.allclose(out[:, 30:], model(changed)[:, 30:])


def test_position_tagger_and_alibi_bad_calls():
    with pytest.raises(ValueError, match="position must be one of"):
        E.PositionTagger(8, 8, "relative")
    att, X = E.ALiBiAttention(8, 2), torch.randn(1, 3, 8)
    with pytest.raises(ValueError, match="causal self-attention only"):
        att(X, X.clone(), X)
    with pytest.raises(ValueError, match="causal self-attention only"):
        att(X, X, X, cache=A.KVCache())


@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_memory_weights_are_what_the_read_averages(kind):
    """weights() is the forward pass's attention: the values averaged with it give its read."""
    torch.manual_seed(0)
    memory = E.KeyValueMemory(10, 4, 8, kind).eval()
    pairs, queries, _ = E.make_pair_recall_task(3, 5, 2, 10, 4, torch.Generator().manual_seed(0))
    w = memory.weights(pairs, queries)
    assert w.shape == (3, 2, 5) and (w > 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 2))
    read = w @ memory.value_embedding(pairs[..., 1])  # (3, 2, 8)
    torch.testing.assert_close(memory.out(read), memory(pairs, queries), atol=1e-5, rtol=1e-4)


def test_memory_feature_map_hook():
    """Linear attention reads through the feature map it is given: m features make an (m, h)
    state, e.g. positive random features of the softmax kernel (Performer)."""
    W = torch.randn(32, 8, generator=torch.Generator().manual_seed(0))  # m = 32 random directions

    def positive_random_features(x):
        return torch.exp(x @ W.T - x.square().sum(-1, keepdim=True) / 2) / 32 ** 0.5  # (..., 32)

    torch.manual_seed(0)
    memory = E.KeyValueMemory(10, 4, 8, "linear", feature_map=positive_random_features)
    pairs, queries, _ = E.make_pair_recall_task(3, 5, 2, 10, 4, torch.Generator().manual_seed(0))
    q, k, v = memory.embed(pairs, queries)
    state = positive_random_features(k).transpose(-2, -1) @ v  # (3, 32, 8)
    read = positive_random_features(q) @ state / (positive_random_features(q)
                                                 @ positive_random_features(k).sum(-2, keepdim=True).mT)
    torch.testing.assert_close(memory(pairs, queries), memory.out(read), atol=1e-5, rtol=1e-4)
    elu = E.KeyValueMemory(10, 4, 8, "linear")
    elu.load_state_dict(memory.state_dict())  # the same parameters, the default feature map
    assert not torch.allclose(elu(pairs, queries), memory(pairs, queries))
    with pytest.raises(TypeError, match="feature_map must be a function"):
        E.KeyValueMemory(10, 4, kind="linear", feature_map=3)


def test_experiment_helpers_train_and_score():
    """The chapter's three experiments, at a few steps: they run and report sensible numbers."""
    memory, acc = E.train_memory("linear", 4, num_steps=3)
    assert isinstance(memory, E.KeyValueMemory) and 0 <= acc <= 1
    pairs, queries, answers = E.memory_test_set(4)
    with torch.no_grad():
        assert (memory(pairs, queries).argmax(-1) == answers).float().mean().item() == acc
    accs = E.train_position_tagger("alibi", 8, (8, 16), num_steps=2)
    assert len(accs) == 2 and all(0 <= a <= 1 for a in accs)
    vocab = A.lm.char_vocab(["go .", "hi ."])
    model, ppl = E.train_lm_variant(["go .", "hi ."], ["go ."], vocab, 3, num_hiddens=8,
                                    ffn_num_hiddens=8, num_heads=2, num_blks=1, max_len=8, window=2)
    assert isinstance(model, E.EfficientLM) and 1 < ppl < len(vocab) * 2
