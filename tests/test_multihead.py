"""MultiHeadAttention against d2l, nn.MultiheadAttention and raw SDPA; masks; properties."""
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import attnlib as A
from tests.conftest import copy_linear_weights

QKVO = ["W_q", "W_k", "W_v", "W_o"]


def torch_mha_like(ours: A.MultiHeadAttention) -> nn.MultiheadAttention:
    """An nn.MultiheadAttention holding the same weights as ``ours`` (bias=True)."""
    ref = nn.MultiheadAttention(ours.num_hiddens, ours.num_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        ref.out_proj.weight.copy_(ours.W_o.weight)
        ref.out_proj.bias.copy_(ours.W_o.bias)
    return ref.eval()


@pytest.mark.parametrize("vl", [None, torch.tensor([3, 5]), torch.tensor([[1, 2, 3, 4], [5, 5, 2, 1]])])
def test_matches_d2l(d2l, vl):
    q, kv = torch.randn(2, 4, 16), torch.randn(2, 5, 16)
    ours, theirs = A.MultiHeadAttention(16, 4, 0.0).eval(), d2l.MultiHeadAttention(16, 4, 0.0).eval()
    theirs(q, kv, kv, vl)  # materialise d2l's lazy layers
    copy_linear_weights(ours, theirs, QKVO)
    expected = theirs(q, kv, kv, vl)
    torch.testing.assert_close(ours(q, kv, kv, vl), expected)
    with A.record_attention(ours) as rec:
        torch.testing.assert_close(ours(q, kv, kv, vl), expected)
    d2l_weights = theirs.attention.attention_weights.reshape(2, 4, 4, 5)
    torch.testing.assert_close(rec.last("MultiHeadAttention"), d2l_weights)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch_multihead_outputs_and_grads(need_weights, causal):
    ours = A.MultiHeadAttention(24, 3, 0.0, bias=True).eval()
    ref = torch_mha_like(ours)
    X1 = torch.randn(3, 6, 24, requires_grad=True)
    X2 = X1.detach().clone().requires_grad_(True)
    lens = torch.tensor([6, 2, 4])
    padding = torch.arange(6) >= lens[:, None]  # (batch, keys), True = ignore (torch's convention)
    future = torch.ones(6, 6, dtype=torch.bool).triu(1) if causal else None
    if need_weights:
        with A.record_attention(ours) as rec:
            out1 = ours(X1, X1, X1, lens, causal=causal)
    else:
        out1 = ours(X1, X1, X1, lens, causal=causal)
    out2, w2 = ref(X2, X2, X2, key_padding_mask=padding, attn_mask=future,
                   need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out1, out2)
    if need_weights:
        torch.testing.assert_close(rec.last("MultiHeadAttention"), w2)
    out1.pow(2).sum().backward()
    out2.pow(2).sum().backward()
    torch.testing.assert_close(X1.grad, X2.grad)
    torch.testing.assert_close(ours.W_o.weight.grad, ref.out_proj.weight.grad)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("kind", ["none", "padding", "causal", "both"])
def test_core_matches_raw_sdpa(need_weights, kind):
    q, k, v = (torch.randn(2, 3, 5, 8, requires_grad=True) for _ in range(3))
    mask = None
    if kind in ("padding", "both"):
        mask = (torch.arange(5) < torch.tensor([5, 3]).view(2, 1, 1, 1))  # (batch, 1, 1, keys)
    causal = kind in ("causal", "both")
    out, weights = A.scaled_dot_product(q, k, v, mask, causal, need_weights=need_weights)
    ref_mask = mask
    if causal:
        tri = torch.ones(5, 5, dtype=torch.bool).tril()
        ref_mask = tri if mask is None else mask & tri
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=ref_mask)
    torch.testing.assert_close(out, ref)
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    ref_grads = torch.autograd.grad(ref.sum(), (q, k, v))
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r)
    assert (weights is not None) == need_weights


def test_causal_with_fewer_queries_sees_the_prefix():
    """One new query against 4 cached keys (decoding) sees all of them."""
    q, k, v = torch.randn(1, 1, 1, 4), torch.randn(1, 1, 4, 4), torch.randn(1, 1, 4, 4)
    out, w = A.scaled_dot_product(q, k, v, causal=True, need_weights=True)
    assert (w > 0).all()
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))


@pytest.mark.parametrize("rope", [False, True])
@pytest.mark.parametrize("chunks", [[1] * 6, [2, 3, 1], [6]])
def test_kv_cache_equals_one_call_on_the_whole_sequence(rope, chunks):
    """Self-attention fed in chunks with a KVCache (decoding) == one causal call; RoPE included."""
    torch.manual_seed(0)
    mha = A.MultiHeadAttention(16, 4, rope=A.RotaryEmbedding(4) if rope else None).eval()
    X = torch.randn(2, 6, 16)
    full = mha(X, X, X, causal=True)
    cache, outs, start = A.KVCache(), [], 0
    for n in chunks:
        x = X[:, start: start + n]
        outs.append(mha(x, x, x, causal=True, cache=cache))
        start += n
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=1e-6, rtol=1e-5)
    assert cache.k.shape == (2, 4, 6, 4) and len(cache) == 6


def test_static_kv_cache_projects_the_memory_once():
    torch.manual_seed(0)
    mha = A.MultiHeadAttention(16, 4).eval()
    memory, lens = torch.randn(3, 5, 16), torch.tensor([5, 2, 4])
    cache = A.KVCache(static=True)
    first = mha(torch.randn(3, 1, 16), memory, memory, lens, cache=cache)
    k = cache.k
    q = torch.randn(3, 2, 16)
    torch.testing.assert_close(mha(q, memory, memory, lens, cache=cache), mha(q, memory, memory, lens))
    assert cache.k is k and first.shape == (3, 1, 16)  # reused, not re-projected or appended
    picked = cache.reorder(torch.tensor([2, 2]))
    assert picked.static and picked.k.shape == (2, 4, 5, 4) and torch.equal(picked.k[1], k[2])


@pytest.mark.parametrize("train", [True, False])
def test_causal_output_ignores_the_future(train):
    mha = A.MultiHeadAttention(16, 4, dropout=0.2).train(train)
    X = torch.randn(2, 7, 16)
    Y = X.clone()
    Y[:, 4:] = torch.randn(2, 3, 16)  # change steps 4.. only
    torch.manual_seed(1)
    a = mha(X, X, X, causal=True)
    torch.manual_seed(1)
    b = mha(Y, Y, Y, causal=True)
    torch.testing.assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 8), seed=st.integers(0, 2**16))
def test_self_attention_is_permutation_equivariant(n, seed):
    torch.manual_seed(seed)
    mha = A.MultiHeadAttention(8, 2).eval()
    X = torch.randn(1, n, 8)
    perm = torch.randperm(n)
    torch.testing.assert_close(mha(X, X, X)[:, perm], mha(X[:, perm], X[:, perm], X[:, perm]))


def test_rope_makes_scores_relative():
    rope = A.RotaryEmbedding(8)
    mha = A.MultiHeadAttention(16, 2, rope=rope).eval()
    X = torch.randn(1, 5, 16)
    perm = torch.tensor([4, 3, 2, 1, 0])
    # with RoPE, self-attention is no longer permutation-equivariant
    assert not torch.allclose(mha(X, X, X)[:, perm], mha(X[:, perm], X[:, perm], X[:, perm]))


def test_encoder_block_matches_d2l(d2l):
    X, vl = torch.randn(2, 6, 24), torch.tensor([3, 6])
    ours = A.TransformerEncoderBlock(24, 48, 8, 0.5).eval()
    theirs = d2l.TransformerEncoderBlock(24, 48, 8, 0.5).eval()
    theirs(X, vl)  # materialise lazy layers
    theirs.load_state_dict(ours.state_dict())
    torch.testing.assert_close(ours(X, vl), theirs(X, vl))


def test_pre_norm_block_keeps_an_identity_path():
    block = A.TransformerEncoderBlock(8, 16, 2, pre_norm=True).eval()
    with torch.no_grad():
        block.attention.W_o.weight.zero_()
        block.ffn.dense2.weight.zero_()
        block.ffn.dense2.bias.zero_()
    X = torch.randn(2, 4, 8)
    torch.testing.assert_close(block(X), X)


# --- grouped-query attention (chapter 9) --------------------------------------------------------

def test_gqa_with_as_many_kv_heads_as_heads_is_plain_mha():
    torch.manual_seed(0)
    plain = A.MultiHeadAttention(16, 4, bias=True).eval()
    torch.manual_seed(0)
    gqa = A.MultiHeadAttention(16, 4, bias=True, num_kv_heads=4).eval()
    q, kv = torch.randn(2, 3, 16), torch.randn(2, 5, 16)
    torch.testing.assert_close(gqa(q, kv, kv, torch.tensor([5, 2])), plain(q, kv, kv, torch.tensor([5, 2])))
    torch.testing.assert_close(gqa(q, kv, kv), torch_mha_like(plain)(q, kv, kv, need_weights=False)[0])


@pytest.mark.parametrize("num_kv_heads", [1, 2])
@pytest.mark.parametrize("need_weights", [False, True])
def test_gqa_matches_sdpa_with_shared_heads(num_kv_heads, need_weights):
    """Each group of query heads reads the same key/value head: torch's enable_gqa reference."""
    torch.manual_seed(1)
    mha = A.MultiHeadAttention(16, 4, num_kv_heads=num_kv_heads).eval()
    X = torch.randn(2, 6, 16)
    q = mha.transpose_qkv(mha.W_q(X))  # (batch, 4, n, 4)
    k, v = (mha.transpose_qkv(W(X), num_kv_heads) for W in (mha.W_k, mha.W_v))  # (batch, g, n, 4)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    expected = mha.W_o(mha.transpose_output(ref))
    with A.record_attention(mha) if need_weights else torch.no_grad():
        torch.testing.assert_close(mha(X, X, X, causal=True), expected)
    assert mha.W_k.out_features == mha.W_v.out_features == 4 * num_kv_heads


def copied_from(fn, *tensors):
    """Run ``fn()`` and count the elements that operators other than views and matrix products
    wrote from ``tensors``' memory (a clone of an expanded head, cat, stack, indexing, x * ones,
    ...), as PyTorch's dispatcher sees them, inside ``torch.matmul`` too, and the copies of
    those copies (an alias of a copy is no new copy)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    products = {torch.ops.aten.mm.default, torch.ops.aten.bmm.default}
    storages = {t.untyped_storage().data_ptr() for t in tensors}

    class Count(TorchDispatchMode):
        copied = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            reads = any(isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() in storages
                        for a in tree_flatten((args, kwargs))[0])
            if reads and not func.is_view and func not in products:
                copies = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)
                          and o.untyped_storage().data_ptr() not in storages]  # not an alias
                self.copied += sum(o.numel() for o in copies)
                storages.update(o.untyped_storage().data_ptr() for o in copies)
            return out

    with Count() as counter:
        fn()
    return counter.copied


@pytest.mark.parametrize("causal, mask", [(False, None), (True, None), (True, "padding"), (False, "rows")])
def test_gqa_weights_path_copies_no_key_or_value_head(causal, mask):
    """The path that returns weights lays each group's query heads in a row against its one
    key/value head: nothing is copied from K or V (a broadcast matmul against K with a head axis
    of 1 copies each head group times inside torch.matmul; the counter sees that)."""
    from attnlib.multihead import grouped_attention

    gen = torch.Generator().manual_seed(3)
    q = torch.randn(2, 8, 5, 4, generator=gen)
    k, v = torch.randn(2, 2, 7, 4, generator=gen), torch.randn(2, 2, 7, 4, generator=gen)
    m = {None: None, "padding": torch.arange(7).expand(2, 1, 1, 7) < 5,
         "rows": torch.rand(2, 1, 5, 7, generator=gen) > 0.3}[mask]
    result = []
    copied = copied_from(lambda: result.extend(grouped_attention(q, k, v, m, causal, 0.0, True)), k, v)
    # with a mask, scaled_dot_product writes K and V once with the positions no query sees zeroed
    # (NaN there must not reach the output); never once per query head, nor V a second time
    assert copied == (0 if m is None and not causal else k.numel() + v.numel())
    out, weights = result
    full = None if m is None else m.expand(2, 1, 5, 7)
    if causal:
        full = A.causal_mask(5, 7) if full is None else full & A.causal_mask(5, 7)
    want = F.scaled_dot_product_attention(q, k.repeat_interleave(4, 1), v.repeat_interleave(4, 1),
                                          attn_mask=full)
    torch.testing.assert_close(out, want)
    assert weights.shape == (2, 8, 5, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 8, 5))
    broadcast = lambda: q.unflatten(1, (2, 4)) @ k.unsqueeze(2).transpose(-2, -1)  # the old way
    assert copied_from(broadcast, k, v) == 4 * k.numel()  # the counter sees a copy inside matmul


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_gqa_kv_cache_keeps_only_the_kv_heads(num_kv_heads):
    torch.manual_seed(2)
    mha = A.MultiHeadAttention(16, 4, num_kv_heads=num_kv_heads).eval()
    X = torch.randn(2, 7, 16)
    cache = A.KVCache()
    steps = [mha(X[:, i:i + 1], X[:, i:i + 1], X[:, i:i + 1], causal=True, cache=cache) for i in range(7)]
    torch.testing.assert_close(torch.cat(steps, 1), mha(X, X, X, causal=True))
    assert cache.k.shape == (2, num_kv_heads, 7, 4)


def test_gqa_gradients_reach_the_shared_projections():
    mha = A.MultiHeadAttention(8, 4, num_kv_heads=2)
    X = torch.randn(2, 5, 8, requires_grad=True)
    mha(X, X, X, causal=True).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in mha.parameters())
    assert X.grad.isfinite().all()


@pytest.mark.parametrize("num_kv_heads, error, match", [
    (3, ValueError, r"num_kv_heads \(3\) must divide num_heads \(4\)"),
    (0, ValueError, "num_kv_heads must be a positive int"),
    (2.0, TypeError, "num_kv_heads must be an int"),
])
def test_gqa_bad_num_kv_heads(num_kv_heads, error, match):
    with pytest.raises(error, match=match):
        A.MultiHeadAttention(16, 4, num_kv_heads=num_kv_heads)


@pytest.mark.parametrize("need_weights", [False, True])
def test_gqa_never_copies_the_shared_heads(need_weights):
    """No tensor of (batch, heads, keys, head_dim) is made: the shared key/value heads are
    indexed (fused kernel) or broadcast (weights path), not repeated for every query head."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Shapes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor):
                    self.seen.append((str(func), tuple(t.shape)))
            return out

    torch.manual_seed(0)
    mha = A.MultiHeadAttention(16, 4, num_kv_heads=1).eval()
    Q, KV = torch.randn(2, 3, 16), torch.randn(2, 7, 16)
    expected_heads = []
    with torch.no_grad():
        k, v = (mha.transpose_qkv(W(KV), 1).expand(2, 4, 7, 4) for W in (mha.W_k, mha.W_v))
        expected = F.scaled_dot_product_attention(mha.transpose_qkv(mha.W_q(Q)), k, v)
        expected_heads.append(mha.W_o(mha.transpose_output(expected)))
        with Shapes() as shapes:
            if need_weights:
                with A.record_attention(mha) as rec:
                    out = mha(Q, KV, KV)
                assert rec.last("MultiHeadAttention").shape == (2, 4, 3, 7)
            else:
                out = mha(Q, KV, KV)
    copies = [op for op, shape in shapes.seen if shape == (2, 4, 7, 4)]
    assert not copies, copies
    torch.testing.assert_close(out, expected_heads[0])
