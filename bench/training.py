"""Training speed at the book's model sizes (``attnlib.presets``), on the book's data.

* attnlib's Transformer encoder-decoder against ``nn.Transformer`` with the same sizes
  (``d_model``, heads, blocks, FFN width, dropout, post-LN), the same embeddings and
  positional encoding, the same batches, loss, gradient clipping and fused Adam;
* attnlib's ``TransformerEncoder`` against d2l 1.0.3's ``TransformerEncoder`` (same sizes,
  loss: mean square of the outputs, so only the encoders differ);
* the Bahdanau model's tokens/s (d2l has no Bahdanau decoder to compare with).

The models take turns step by step on the same batch (in a balanced order:
:func:`bench.common.turn_orders`).
A step is forward, loss, backward, clipping and an optimiser step; tokens/s counts the
real (non-padding) target tokens, source tokens for the encoders. Training runs on one
CPU thread, as :func:`attnlib.training.train_seq2seq` does by default.
"""
from __future__ import annotations

import statistics
import time

import torch
from torch import nn

import attnlib
from attnlib.presets import DATA_DEFAULTS, TRANSFORMER_DEFAULTS, build_model
from attnlib.training import masked_ce_loss, torch_threads, trim_batch

from .common import TURN_ORDER, sync, turn_orders


class TorchTransformer(nn.Module):
    """``nn.Transformer`` wrapped like attnlib's ``EncoderDecoder``: ``(src, tgt_in, lens) -> logits``.

    Token embeddings scaled by ``sqrt(d)`` plus attnlib's sinusoidal positions, then
    ``nn.Transformer`` (post-LN, ReLU, batch first) and a linear layer to the vocabulary.
    Differences that remain: PyTorch's layers have biases in their attention projections
    and a final LayerNorm after each stack.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, num_hiddens: int, ffn_num_hiddens: int,
                 num_heads: int, num_blks: int, dropout: float) -> None:
        super().__init__()
        self.num_hiddens = num_hiddens
        self.src_embedding = nn.Embedding(src_vocab, num_hiddens)
        self.tgt_embedding = nn.Embedding(tgt_vocab, num_hiddens)
        self.pos_encoding = attnlib.PositionalEncoding(num_hiddens, dropout)
        self.transformer = nn.Transformer(num_hiddens, num_heads, num_blks, num_blks,
                                          ffn_num_hiddens, dropout, batch_first=True)
        self.dense = nn.Linear(num_hiddens, tgt_vocab)

    def embed(self, emb: nn.Embedding, X: torch.Tensor) -> torch.Tensor:
        return self.pos_encoding(emb(X) * self.num_hiddens ** 0.5)  # (batch, steps, d)

    def forward(self, src, tgt_in, src_valid_len):
        pad = torch.arange(src.shape[1], device=src.device) >= src_valid_len.unsqueeze(1)
        causal = nn.Transformer.generate_square_subsequent_mask(
            tgt_in.shape[1], device=src.device, dtype=torch.bool)  # True = hidden
        out = self.transformer(self.embed(self.src_embedding, src),
                               self.embed(self.tgt_embedding, tgt_in), tgt_mask=causal,
                               src_key_padding_mask=pad, memory_key_padding_mask=pad,
                               tgt_is_causal=True)  # (batch, tgt_steps, d)
        return self.dense(out)  # (batch, tgt_steps, tgt_vocab)


def _adam(model, lr):
    """Adam as :func:`attnlib.train_seq2seq` builds it: one fused kernel on the CPU and CUDA."""
    device = next(model.parameters()).device
    return torch.optim.Adam(model.parameters(), lr=lr, fused=device.type in ("cpu", "cuda"))


def _seq2seq_step(model, pad, lr=0.002):
    """A training step; tokens are counted on the host beforehand (no sync inside a step)."""
    opt = _adam(model, lr)

    def step(batch):
        src, tgt_in, src_valid_len, label = batch
        loss = masked_ce_loss(model(src, tgt_in, src_valid_len), label, pad)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return batch.target_tokens
    return step


def _encoder_step(encoder, lr=0.002):
    opt = _adam(encoder, lr)

    def step(batch):
        src, _, src_valid_len, _ = batch
        loss = encoder(src, src_valid_len).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(encoder.parameters(), 1.0)
        opt.step()
        return batch.source_tokens
    return step


class Batch(tuple):
    """``(src, tgt_in, src_valid_len, label)`` on the device, with its token counts (host ints)."""

    target_tokens: int
    source_tokens: int


def race(steps: dict, batches: list, device, warmup: int = 3) -> dict:
    """Run every step function on every batch, taking turns; times per step and tokens/s."""
    names = list(steps)
    times = {n: [] for n in names}
    tokens = {n: 0 for n in names}
    for i, (batch, order) in enumerate(zip(batches, turn_orders(names, len(batches)), strict=True)):
        for name in order:
            sync(device)
            t0 = time.perf_counter()
            ntok = steps[name](batch)
            sync(device)
            if i >= warmup:
                times[name].append(time.perf_counter() - t0)
                tokens[name] += ntok
    out = {}
    for name in names:
        med = statistics.median(times[name])
        out[name] = {"median_step_ms": 1e3 * med, "steps_per_s": 1 / med,
                     "tokens_per_s": tokens[name] / sum(times[name]),
                     "steps": len(times[name])}
    base = names[-1]
    for name in names:
        out[name]["ratio_to_" + base] = statistics.median(
            a / b for a, b in zip(times[name], times[base], strict=True))
    return out


def _batches(data, device, count: int) -> list:
    pad = data.tgt_vocab.pad
    batches = []
    while len(batches) < count:
        for batch in data.train_dataloader():
            trimmed = trim_batch(*batch, pad)  # on the CPU: counting tokens here costs no sync
            moved = Batch(t.to(device) for t in trimmed)
            moved.target_tokens = int((trimmed[3] != pad).sum())
            moved.source_tokens = int(trimmed[2].sum())
            batches.append(moved)
            if len(batches) == count:
                break
    return batches


def run(device, quick: bool = False, d2l=None, threads: int | None = 1, log=print,
        data_args: dict | None = None, steps: int | None = None) -> dict:
    """The training tables on ``device``; ``threads`` torch CPU threads (None: unchanged)."""
    data_args = dict(DATA_DEFAULTS, **(data_args or {}))
    steps = steps or (8 if quick else 40)
    torch.manual_seed(0)
    data = attnlib.TranslationData(**data_args)
    pad = data.tgt_vocab.pad
    batches = _batches(data, device, steps + 3)
    t = TRANSFORMER_DEFAULTS
    sizes = {k: t[k] for k in ("num_hiddens", "ffn_num_hiddens", "num_heads", "num_blks",
                               "dropout")}
    result = {"data": data_args, "transformer": sizes, "steps": steps, "turn_order": TURN_ORDER,
              "threads": threads if device.type == "cpu" else None}
    with torch_threads(threads, device):
        result["cpu_threads_used"] = torch.get_num_threads()
        torch.manual_seed(0)
        ours = build_model("transformer", data).to(device).train()
        theirs = TorchTransformer(len(data.src_vocab), len(data.tgt_vocab), *sizes.values())
        theirs = theirs.to(device).train()
        log(f"training: Transformer on {device}")
        result["seq2seq"] = race({"attnlib Transformer": _seq2seq_step(ours, pad),
                                  "nn.Transformer": _seq2seq_step(theirs, pad)}, batches, device)
        encoders = {"attnlib TransformerEncoder": attnlib.transformer.TransformerEncoder(
            len(data.src_vocab), *sizes.values())}
        if d2l is not None:
            encoders["d2l TransformerEncoder"] = d2l.TransformerEncoder(
                len(data.src_vocab), *sizes.values())
        log(f"training: encoders on {device}")
        result["encoder"] = race({k: _encoder_step(m.to(device).train())
                                  for k, m in encoders.items()}, batches, device)
        log(f"training: Bahdanau on {device}")
        torch.manual_seed(0)
        bahdanau = build_model("bahdanau", data).to(device).train()
        result["bahdanau"] = race({"attnlib Bahdanau": _seq2seq_step(bahdanau, pad, lr=0.005)},
                                  batches, device)
    result["throughput"] = {  # the chapters' presets, tokens/s on this device (compare devices)
        "transformer (ch7 preset)": result["seq2seq"]["attnlib Transformer"]["tokens_per_s"],
        "bahdanau (ch4 preset)": result["bahdanau"]["attnlib Bahdanau"]["tokens_per_s"]}
    return result


def speedups(results: dict) -> dict:
    """Each accelerator's training throughput as a multiple of the CPU's (same presets, batches)."""
    devices = results.get("devices", {})
    cpu = devices.get("cpu", {}).get("training", {}).get("throughput")
    out = {}
    for name, res in devices.items():
        tp = res.get("training", {}).get("throughput")
        if name != "cpu" and tp and cpu:
            out[name] = {k: tp[k] / cpu[k] for k in tp}
    return out
