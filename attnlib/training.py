"""Training any encoder-decoder of the book with one function.

:func:`train_seq2seq` trains a :class:`attnlib.seq2seq.EncoderDecoder` (RNN or
Transformer) on a :class:`attnlib.data.TranslationData` with teacher forcing:
the decoder reads ``<bos> y_1 .. y_{n-1}`` and must predict ``y_1 .. y_n <eos>``.
The loss is cross-entropy over real target tokens only (padding is ignored), the
gradient norm is clipped, and the returned :class:`History` records the losses,
the time per epoch, the device, and the throughput over *all* epochs (d2l reports
the last epoch only).

The models in this book are tiny, so a step costs mostly Python and kernel-launch
overhead, not arithmetic. The loop therefore never reads a number back from the
device inside an epoch (no ``.item()`` per batch): losses are summed as tensors and
read once per epoch. For the same reason training on the CPU uses one thread by
default (``cpu_threads=1``): a 32-unit GRU step is too small to split, and extra
OpenMP threads spin-wait whenever another process holds a core. Measured on the
book's shared 2-core machine, one Bahdanau step took 20 ms on one thread, 43 ms on
two (``OMP_WAIT_POLICY=PASSIVE``) and about 300 ms on two with the default policy.
"""
from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_device, check_int, check_positive, check_tensor, check_values, module_device
from .device import best_device


@contextlib.contextmanager
def torch_threads(n: int | None, device=None):
    """Let torch use ``n`` CPU threads inside the block (unchanged when ``n`` is None or
    ``device`` is not the CPU); the previous setting is restored afterwards."""
    if n is None or (device is not None and torch.device(device).type != "cpu"):
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def masked_ce_loss(logits: torch.Tensor, label: torch.Tensor, pad: int) -> torch.Tensor:
    """Mean cross-entropy over the tokens of ``label`` that are not ``pad``.

    ``logits (batch, steps, vocab)``, ``label (batch, steps)``. A batch with no real
    token gives 0, not NaN.
    """
    check_tensor("logits", logits, 3, "(batch, steps, vocab)")
    check_tensor("label", label, 2, "(batch, steps)")
    if label.shape != logits.shape[:2]:
        raise ValueError(f"logits must be (batch, steps, vocab) and label (batch, steps) with the "
                         f"same batch and steps, got logits {tuple(logits.shape)} and label "
                         f"{tuple(label.shape)}")
    if label.is_floating_point() or label.dtype == torch.bool:
        raise TypeError(f"label must hold integer token ids, got dtype {label.dtype}")
    check_int("pad", pad, minimum=0)
    check_device("label", label, logits.device, "logits")
    vocab = logits.shape[-1]
    check_values((label == pad) | ((label >= 0) & (label < vocab)), lambda: (
        f"label holds token ids in [{int(label.min())}, {int(label.max())}], but logits has "
        f"{vocab} classes (ids 0..{vocab - 1})"))
    total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), label.reshape(-1),
                            ignore_index=pad, reduction="sum")
    return total / (label != pad).sum().clamp(min=1)


def trim_batch(src, tgt_in, src_valid_len, label, pad: int):
    """Cut the padding columns that no sentence of the batch needs (before moving it).

    Exact for every model of the book: decoders are causal, so later target columns
    never change earlier outputs, and encoders ignore source padding (masked keys,
    packed GRUs). The RNN decoders then run as many steps as the longest target.
    """
    s = int(src_valid_len.max())
    t = int((label != pad).sum(1).max())
    return src[:, :s], tgt_in[:, :t], src_valid_len, label[:, :t]


@dataclass
class History:
    """What :func:`train_seq2seq` measured, one entry per epoch.

    ``tokens_per_sec`` is the mean throughput over every epoch (all target tokens
    trained on divided by all training time, validation excluded).
    """

    device: str
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # training time per epoch
    tokens: list[int] = field(default_factory=list)  # target tokens (not padding) per epoch
    cached: bool = False  # loaded by attnlib.presets.train_preset, not trained just now

    @property
    def tokens_per_sec(self) -> float:
        return sum(self.tokens) / max(sum(self.seconds), 1e-9)

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds)

    def summary(self) -> str:
        val = f", val loss {self.val_loss[-1]:.3f}" if self.val_loss else ""
        where = " (trained earlier, loaded now)" if self.cached else ""
        return (f"loss {self.train_loss[-1]:.3f}{val}, {self.tokens_per_sec:,.0f} tokens/s "
                f"on {self.device}, {self.total_seconds:.1f} s{where}")


def check_data(data) -> None:
    """``data`` must look like a :class:`attnlib.data.TranslationData`."""
    needed = ("src_vocab", "tgt_vocab", "encode_src", "num_steps")
    if not all(hasattr(data, a) for a in needed):
        raise TypeError(f"data must be a TranslationData (with {', '.join(needed)}), "
                        f"got {type(data).__name__}")


def check_compatible(model: nn.Module, data) -> None:
    """Raise a ``ValueError`` when the model's vocabulary sizes differ from the data's."""
    check_data(data)
    for side, part, vocab in (("source", "encoder", data.src_vocab),
                              ("target", "decoder", data.tgt_vocab)):
        size = getattr(getattr(model, part, None), "vocab_size", None)
        if size is None:
            raise TypeError(f"model must be an EncoderDecoder whose {part} has a vocab_size, "
                            f"got {type(model).__name__}")
        if size != len(vocab):
            raise ValueError(f"the model's {part} was built for a {side} vocabulary of {size} "
                             f"tokens, but the data's has {len(vocab)}: build the model with "
                             f"len(data.{'src' if side == 'source' else 'tgt'}_vocab)")


def evaluate_loss(model: nn.Module, batches, pad: int, device=None) -> float:
    """Mean masked cross-entropy of ``model`` over ``batches`` in evaluation mode.

    The Transformer decoder keeps its causal mask in evaluation, so this is an honest
    held-out loss (each position sees only the words before it).
    """
    device = device or module_device(model)
    was_training = model.training
    model.eval()
    total = torch.zeros((), device=device)
    count = torch.zeros((), device=device, dtype=torch.long)
    with torch.no_grad():
        for batch in batches:
            src, tgt_in, src_valid_len, label = trim_batch(*batch, pad)
            src, tgt_in, label = src.to(device), tgt_in.to(device), label.to(device)
            logits = model(src, tgt_in, src_valid_len.to(device))
            n = (label != pad).sum()
            total += masked_ce_loss(logits, label, pad) * n
            count += n
    model.train(was_training)
    return (total / count.clamp(min=1)).item()


def train_seq2seq(model: nn.Module, data, num_epochs: int, lr: float, *, grad_clip: float = 1.0,
                  device=None, seed: int = 0, progress: bool = True, plot: bool = False,
                  cpu_threads: int | None = 1) -> History:
    """Train ``model`` on ``data.train_dataloader()`` with Adam; return a :class:`History`.

    ``device`` defaults to :func:`attnlib.best_device` (a GPU when there is one); the
    model is moved there and stays there. ``seed`` seeds dropout and shuffling (seed
    the model's initial weights yourself, before building it). ``progress`` shows a
    tqdm bar over epochs; ``plot`` redraws a loss plot in a notebook as training goes.
    After every epoch the validation loss is computed in evaluation mode.
    ``cpu_threads``: torch threads while training on the CPU (see the module docstring);
    ``None`` keeps torch's setting.
    """
    check_training(num_epochs, lr)
    if grad_clip is not None:
        check_positive("grad_clip", grad_clip, "a positive number or None")
    if cpu_threads is not None:
        check_int("cpu_threads", cpu_threads)
    check_int("seed", seed, minimum=0)
    check_compatible(model, data)
    device = as_device(device) if device is not None else best_device()
    with torch_threads(cpu_threads, device):
        return _train(model, data, num_epochs, lr, grad_clip, device, seed, progress, plot)


def run_side_by_side(fn, jobs, device=None, workers: int | None = None) -> list:
    """``[fn(**job) for job in jobs]``, several at once on a CPU with several cores.

    For training several of the book's small models. Each trains on one CPU thread (a step is too
    small to split), so a CPU with several cores can train several at once, one per worker
    process, with exactly the results of running them in turn: the same seeds, the same single
    thread, the same order of floating-point sums. ``fn`` must be a function of a module (a worker
    cannot import one defined in a notebook), and its arguments and results are copied between
    processes (a model comes back as a trained copy). ``workers`` defaults to one per core; on a
    GPU (``device``), with one core or with ``workers=1``, the jobs run here, in turn.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {type(fn).__name__}")
    jobs = list(jobs)
    if not all(isinstance(job, dict) for job in jobs):
        raise TypeError("jobs must be dicts of keyword arguments for fn, got "
                        f"{sorted({type(job).__name__ for job in jobs})}")
    if workers is not None:
        check_int("workers", workers)
    device = as_device(device) if device is not None else best_device()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = min(workers or cores, len(jobs)) if device.type == "cpu" else 1
    if workers <= 1:
        return [fn(**job) for job in jobs]
    # Workers start from a clean process, never as a fork of this one: a fork inherits the threads'
    # locks and the sockets of a Jupyter kernel (and autograd's CUDA threads), and can hang. On Linux
    # a fork server that has imported torch and attnlib once forks them (quick); elsewhere they are
    # spawned and import torch first (a few seconds).
    method = "forkserver" if sys.platform == "linux" else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(["torch", "attnlib"])
    with ProcessPoolExecutor(workers, mp_context=context, initializer=torch.set_num_threads,
                             initargs=(1,)) as pool:
        futures = [pool.submit(_watched, fn, job, STALL_S) for job in jobs]
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=STALL_S, return_when=FIRST_COMPLETED)
            if not finished:  # nothing came back for STALL_S seconds: say where this process waits
                print(f"run_side_by_side: no job finished in {STALL_S} s; where this process "
                      "is (each worker prints its own):", file=sys.__stderr__, flush=True)
                faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
        return [future.result() for future in futures]


#: Seconds after which :func:`run_side_by_side` prints where a job, and the caller, are (the
#: book's jobs take seconds to a few minutes): a stalled run says where it waits.
STALL_S = 900


def _watched(fn, job: dict, seconds: float):
    """``fn(**job)`` in a worker, whose every thread's stack goes to stderr if it runs for longer
    than ``seconds`` (:mod:`faulthandler`, which needs no help from the stalled code)."""
    faulthandler.dump_traceback_later(seconds, file=sys.__stderr__)
    try:
        return fn(**job)
    finally:
        faulthandler.cancel_dump_traceback_later()


def check_training(num_epochs, lr) -> None:
    """The settings :func:`train_seq2seq` and the presets share."""
    if not isinstance(num_epochs, int) or isinstance(num_epochs, bool) or num_epochs < 1:
        raise ValueError(f"num_epochs must be a positive int, got {num_epochs!r}")
    check_positive("lr", lr)


def as_device(device) -> torch.device:
    """``torch.device(device)`` with an error that names the argument."""
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must name a torch device (e.g. 'cpu', 'cuda'), "
                         f"got {device!r}") from e


def _train(model, data, num_epochs, lr, grad_clip, device, seed, progress, plot) -> History:
    from tqdm.auto import trange

    torch.manual_seed(seed)  # dropout
    shuffle = torch.Generator().manual_seed(seed)  # batch order: new every epoch, same every run
    model.to(device)
    pad = data.tgt_vocab.pad
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, fused=device.type in ("cpu", "cuda"))
    history = History(device=str(device))
    plotter = _LivePlot(num_epochs) if plot else None
    bar = trange(num_epochs, desc=f"training on {device}", disable=not progress)
    for _ in bar:
        model.train()
        total = torch.zeros((), device=device)
        count = torch.zeros((), device=device, dtype=torch.long)
        start = time.perf_counter()
        for batch in data.train_dataloader(generator=shuffle):
            src, tgt_in, src_valid_len, label = trim_batch(*batch, pad)
            src, tgt_in, label = src.to(device), tgt_in.to(device), label.to(device)
            logits = model(src, tgt_in, src_valid_len.to(device))  # (batch, steps, vocab)
            loss = masked_ce_loss(logits, label, pad)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if grad_clip:
                nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            optimizer.step()
            n = (label != pad).sum()
            total += loss.detach() * n
            count += n
        history.train_loss.append((total / count.clamp(min=1)).item())  # one sync per epoch
        history.seconds.append(time.perf_counter() - start)
        history.tokens.append(int(count))
        if len(data.val):
            history.val_loss.append(evaluate_loss(model, data.val_dataloader(), pad, device))
        bar.set_postfix(loss=f"{history.train_loss[-1]:.3f}",
                        tok_s=f"{history.tokens[-1] / history.seconds[-1]:,.0f}")
        if plotter is not None:
            plotter.update(history)
    model.eval()
    return history


class _LivePlot:
    """Train and validation loss, redrawn in a notebook about 20 times during training."""

    def __init__(self, num_epochs: int) -> None:
        self.every = max(1, num_epochs // 20)
        self.num_epochs = num_epochs

    def update(self, history: History) -> None:
        epoch = len(history.train_loss)
        if epoch % self.every and epoch != self.num_epochs:
            return
        import matplotlib.pyplot as plt
        from IPython.display import clear_output, display

        fig, ax = plt.subplots(figsize=(4.5, 3))
        epochs = range(1, epoch + 1)
        ax.plot(epochs, history.train_loss, label="train")
        if history.val_loss:
            ax.plot(epochs, history.val_loss, "--", label="validation")
        ax.set(xlabel="epoch", ylabel="loss", xlim=(1, self.num_epochs), yscale="log")
        ax.legend()
        clear_output(wait=True)
        display(fig)
        plt.close(fig)
