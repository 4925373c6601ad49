"""Device bugs caught on a machine without a GPU, and no host-device sync in a forward pass.

The model goes to PyTorch's ``meta`` device, which stands in for a GPU: its tensors have
shapes, dtypes and a device but no values. :class:`FakeAccelerator` adds what ``meta``
alone does not check:

* an operation whose tensors sit on two devices fails, as it would on a GPU (``meta``
  lets some mixes through, e.g. an embedding lookup with CPU ids);
* reading a ``meta`` tensor's values on the host (``item``, ``tolist``, ``bool``, ``.cpu()``,
  ...) is what a sync is on a GPU: it fails with ``reads="fail"``, and with ``reads="zeros"``
  returns placeholder values so that decoding and training loops, which must read numbers,
  run to the end.
"""
from __future__ import annotations

import functools

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

import attnlib as A
from attnlib import decoding

META = torch.device("meta")
_READS = {torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__bool__, torch.Tensor.__int__,
          torch.Tensor.__float__, torch.Tensor.__index__, torch.Tensor.cpu, torch.Tensor.numpy}

_VF = torch._C._VariableFunctions
_HOST_ARGUMENTS = {_VF._pack_padded_sequence, _VF.gru, _VF._pad_packed_sequence}  # a packed
# sequence keeps its lengths (batch_sizes) on the CPU, whatever the device of its data


class FakeAccelerator(TorchFunctionMode):
    """See the module docstring. ``self.reads`` counts the host reads of ``meta`` values."""

    def __init__(self, reads: str = "fail") -> None:
        super().__init__()
        self.mode, self.reads = reads, 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        devices = {t.device for t in tensors if not (t.device.type == "cpu" and t.dim() == 0)}
        if len(devices) > 1 and func not in _HOST_ARGUMENTS:
            raise AssertionError(f"{getattr(func, '__name__', func)} mixes tensors on "
                                 f"{sorted(map(str, devices))}: a CPU tensor reached a model on a GPU")
        targets = {torch.device(a).type for a in (*args[1:], kwargs.get("device"))
                   if isinstance(a, (str, torch.device))}
        to_host = func is torch.Tensor.to and "cpu" in targets
        to_device = (func is torch.Tensor.to and "meta" in targets and tensors
                     and tensors[0].device.type == "cpu")
        if to_device and self.mode == "fail":  # a copy from pageable host memory waits for the GPU
            raise AssertionError("Tensor.to copies a CPU tensor to the device during a forward pass "
                                 "(a host-device sync): make it on the device")
        if (func in _READS or to_host) and tensors and tensors[0].device == META:
            self.reads += 1
            if self.mode == "fail":
                raise AssertionError(f"{func.__name__} reads a device tensor's values on the host "
                                     "(a host-device sync)")
            return _placeholder(func, tensors[0])
        return func(*args, **kwargs)


def _placeholder(func, t: torch.Tensor):
    zeros = torch.zeros(t.shape, dtype=t.dtype)  # as ids, indices or weights: valid everywhere
    if func in (torch.Tensor.item, torch.Tensor.__int__, torch.Tensor.__index__):
        return 0
    if func is torch.Tensor.__float__:
        return 0.0
    if func is torch.Tensor.__bool__:
        return False
    if func is torch.Tensor.tolist:
        return zeros.tolist()
    return zeros.numpy() if func is torch.Tensor.numpy else zeros


@functools.cache
def data():
    return A.TranslationData(batch_size=8, num_steps=24, num_pairs=60, seed=0)


def model(kind: str):
    torch.manual_seed(0)
    return A.build_model(kind, data(), num_hiddens=8, **({"ffn_num_hiddens": 16, "num_heads": 2}
                                                          if kind.startswith("transformer")
                                                          else {"embed_size": 4}))


KINDS = ["transformer", "bahdanau", "luong_general", "no_attention"]


# --- (a, b) the library puts what it builds on the model's device --------------------------------

@pytest.fixture
def full_lengths_for_packing(monkeypatch):
    """The GRU encoder's one host read (packing needs the lengths on the CPU) gives full lengths."""
    monkeypatch.setattr(A.Seq2SeqEncoder, "host_lengths",
                        lambda self, valid_lens, X: torch.full((X.shape[0],), X.shape[1]))


@pytest.mark.usefixtures("full_lengths_for_packing")
@pytest.mark.parametrize("kind", KINDS)
def test_public_paths_run_with_the_model_on_another_device(kind):
    m = model(kind).to(META)
    with FakeAccelerator(reads="zeros"):
        A.greedy_decode(m, data(), ["go .", "i lost ."], max_len=3)
        A.beam_search(m, data(), "go .", beam_size=2, max_len=3)
        A.translate(m, data(), ["go ."], max_len=3)
        src, tgt_in, lens, _ = (t.to(META) for t in data().build(data().test[:2]))
        m(src, tgt_in, lens)
        if m.decoder.cross_attentions():
            A.attention_alignment(m, data(), data().test[:2])
        A.train_seq2seq(m, data(), 1, 0.01, device=META, progress=False)


def test_chapter_9_language_model_samples_and_trains_on_another_device():
    from attnlib import lm as lm_module
    m = A.EfficientLM(12, 8, 16, num_heads=2, max_len=16, num_kv_heads=1, window=3).to(META)
    vocab = lm_module.char_vocab(["go .", "hi ."])
    with FakeAccelerator(reads="zeros"):
        A.sample(m, torch.ones(2, 2, dtype=torch.long, device=META), 4, 1.0, 3)
        lm_module.train_lm(m, ["go .", "hi ."], vocab, 1, batch_size=2, device=META)


def test_chapter_7_bug_gets_a_clear_error():
    """Chapter 7 once built ``src_ids`` on the CPU for a model on the GPU."""
    m = model("transformer").to(META)
    src, tgt_in, lens, _ = data().build(data().test[:2])  # on the CPU, like the notebook's
    with pytest.raises(ValueError, match=r"tgt_in is on cpu but the model is on meta"):
        m(src, tgt_in, lens)
    with pytest.raises(ValueError, match=r"X is on cpu but the model is on meta"):
        m(src, tgt_in.to(META))
    with pytest.raises(ValueError, match=r"src_valid_len is on cpu but the model is on meta"):
        m(src.to(META), tgt_in.to(META), lens)


def test_fake_accelerator_catches_a_cpu_tensor_the_checks_miss(monkeypatch):
    """Without attnlib's own device checks the guard still fails: the safety net for new code."""
    monkeypatch.setattr(A.seq2seq, "check_device", lambda *a, **k: None)
    monkeypatch.setattr(A.seq2seq, "check_token_ids", lambda *a, **k: None)
    m = model("transformer").to(META)
    src, tgt_in, lens, _ = data().build(data().test[:2])
    with FakeAccelerator(reads="zeros"), pytest.raises(AssertionError, match="mixes tensors on"):
        m.encoder(src)


@pytest.mark.usefixtures("full_lengths_for_packing")
def test_decoding_that_forgets_to_move_its_input_fails(monkeypatch):
    """Reintroduce the bug inside the library: decoding feeds CPU ids to the model."""
    def encode_on_cpu(data, sentences, device):
        return original(data, sentences, torch.device("cpu"))

    original = decoding._encode_batch
    monkeypatch.setattr(decoding, "_encode_batch", encode_on_cpu)
    m = model("bahdanau").to(META)
    with FakeAccelerator(reads="zeros"), pytest.raises(ValueError, match="X is on cpu but the model"):
        A.greedy_decode(m, data(), "go .", max_len=2)


def test_the_data_builds_model_inputs_on_a_given_device():
    src, valid = data().encode_src("go .", device=META)
    assert src.device == valid.device == META
    assert all(t.device == META for t in data().build(data().test[:2], device=META))
    assert all(t.device.type == "cpu" for t in data().build(data().test[:2]))


def test_inputs_on_another_device_name_both_devices():
    mha = A.MultiHeadAttention(8, 2).to(META)
    X = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match=r"queries is on cpu but the module is on meta"):
        mha(X, X, X)
    Xm = X.to(META)
    with pytest.raises(ValueError, match=r"valid_lens is on cpu but the queries is on meta"):
        mha(Xm, Xm, Xm, torch.tensor([3, 2]))
    with pytest.raises(ValueError, match=r"must be on one device, got meta, cpu, meta"):
        A.DotProductAttention()(Xm, X, Xm)


# --- (c) no host-device sync in a forward pass ----------------------------------------------------

def _forward_passes(device) -> list:
    """(module, args) for every attention module and model, with padding, on ``device``."""
    q, k, v = (torch.randn(2, n, 4, device=device) for n in (3, 5, 5))
    lens = torch.tensor([5, 2], device=device)
    cases = [(make().to(device), (q, k, v, lens)) for make in (
        A.DotAttention, A.DotProductAttention, A.CosineAttention, lambda: A.GeneralAttention(4, 4),
        lambda: A.AdditiveAttention(8, query_size=4, key_size=4), lambda: A.LocalAttention(1),
        lambda: A.LocationAttention(4, 5))]
    per_query = torch.tensor([[1, 2, 3], [4, 5, 0]], device=device)
    cases.append((A.masked_softmax, (torch.randn(2, 3, 5, device=device), per_query)))
    X = torch.randn(2, 5, 8, device=device)
    cases += [(A.MultiHeadAttention(8, 2).to(device), (X, X, X, lens)),
              (A.MultiHeadAttention(8, 2, rope=A.RotaryEmbedding(4)).to(device), (X, X, X, lens, True)),
              (A.TransformerEncoderBlock(8, 16, 2).to(device), (X, lens)),
              (A.NWKernelRegression(learnable=True).to(device), (torch.rand(3, device=device),) * 3)]
    src, tgt_in, src_lens, _ = (t.to(device) for t in data().build(data().test[:2]))
    for kind in ("transformer", "transformer_pre_ln"):
        cases.append((model(kind).to(device), (src, tgt_in, src_lens)))
    for kind in ("bahdanau", "luong_general", "no_attention"):  # the GRU decoders, fed a state
        m = model(kind).to(device)
        enc = m.encoder(src)  # without lengths: packing reads them on the host (see the docs)
        cases.append((m.decoder, (tgt_in, m.decoder.init_state(enc, src_lens))))
    cases.append((_decode_with_cache(device), ()))
    cases += _chapter_9_cases(device)
    return cases


def _chapter_9_cases(device) -> list:
    """attnlib.efficient's public paths: blockwise, windows with their cache, GQA, linear, ALiBi."""
    q, k, v = (torch.randn(2, 2, n, 4, device=device) for n in (3, 5, 5))
    pad = torch.tensor([5, 2], device=device)
    mask = (torch.arange(5, device=device) < pad[:, None])[:, None, None]  # (2, 1, 1, 5)
    lm = A.EfficientLM(10, 8, 16, num_heads=2, max_len=12, num_kv_heads=1, window=3).to(device)
    ids = torch.ones(2, 4, dtype=torch.long, device=device)

    def decode():
        caches = lm.init_caches()
        for i in range(4):
            lm(ids[:, i:i + 1], caches)

    pairs, queries, _ = (t.to(device) for t in A.efficient.make_pair_recall_task(2, 3, 2, 5, 4))
    X = torch.randn(2, 5, 8, device=device)
    return [(A.blockwise_attention, (q, k, v, mask, True, 2)),
            (A.linear_attention, (q, k, v, True)),
            (A.linear_attention_recurrent, (k, k, v)),
            (A.MultiHeadAttention(8, 2, num_kv_heads=1).to(device), (X, X, X, pad, True)),
            (lm, (ids,)), (decode, ()),
            (A.ALiBiAttention(8, 2).to(device), (X, X, X)),
            (A.KeyValueMemory(5, 4, 8, "linear").to(device), (pairs, queries)),
            (A.efficient.PositionTagger(5, 4, "alibi", 8).to(device), (ids.clamp(max=4),)),
            (A.efficient.PositionTagger(5, 4, "rotary", 8).to(device), (ids.clamp(max=4),)),
            (A.sliding_window_mask, (3, 5, 2, device)),
            (A.sliding_window_attention, (k, k, v, 2, 2)),
            (A.attention_pattern, ("dilated", 6, 2, 2, 1, device))]


def _decode_with_cache(device):
    """Three cached decoding steps of the Transformer and a beam reorder, ready to run."""
    m = model("transformer").to(device).eval()
    src, _, lens, _ = (t.to(device) for t in data().build(data().test[:2]))
    y = torch.ones(2, 1, dtype=torch.long, device=device)
    order = torch.tensor([1, 0], device=device)

    def run():
        state = m.decoder.init_state(m.encoder(src, lens), lens)
        for _ in range(3):
            _, state = m.decoder(y, state)
        m.decoder.reorder_state(state, order)
    return run


def test_no_forward_pass_reads_device_values():
    cases = _forward_passes(META)
    with FakeAccelerator(reads="fail"):
        for module, args in cases:
            module(*args)
        A.HardAttention().to(META)(*cases[0][1])  # a read would raise inside the guard


def test_the_guard_sees_a_sync():
    with FakeAccelerator(reads="fail"), pytest.raises(AssertionError, match="host-device sync"):
        lens = torch.tensor([5, 2], device=META)
        if lens.max() > 4:  # what the library's length checks used to do on every call
            pass


def test_the_guard_sees_a_copy_from_the_host():
    with FakeAccelerator(reads="fail"), pytest.raises(AssertionError, match="host-device sync"):
        torch.tensor([0.5, 0.25]).to(META)  # what alibi_slopes(...).to(device) did on every call


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_no_forward_pass_syncs_on_cuda():
    cases = _forward_passes(torch.device("cuda"))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for module, args in cases:
            module(*args)
    finally:
        torch.cuda.set_sync_debug_mode("default")
