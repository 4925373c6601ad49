"""Chapter 6: what self-attention can and cannot do without positions.

Self-attention treats its input as a *set*: permute the tokens and the outputs
are permuted the same way. A tagger built only from self-attention and
position-wise layers therefore cannot tell "first" from "last" unless a
positional encoding is added. This module holds the chapter's experiment:

* :func:`make_order_task` generates per-position classification tasks, some
  that depend on order (``"reverse"``, ``"sort"``) and one that does not
  (``"count"``: how often does my token occur in the sequence?);
* :class:`SelfAttentionTagger` is a tiny encoder-only Transformer with a
  choice of position information (none, sinusoidal, learned, RoPE);
* :func:`blind_reversal_ceiling` is the best accuracy *any* position-blind
  model can reach on reversal, so "no better than chance" has a number;
* :func:`fit_tagger` builds and trains one tagger from a seed, and can measure
  its learning curve (test accuracy every few steps) on the way;
* :func:`peak_memory` measures the tensor memory a call allocates at its
  peak, on any device, for the complexity benchmark.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .multihead import MultiHeadAttention
from .positional import LearnedPositionalEmbedding, PositionalEncoding, RotaryEmbedding
from .transformer import TransformerEncoderBlock

ORDER_TASKS = ("reverse", "sort", "count")
POSITIONS = (None, "sinusoidal", "learned", "rope")


def make_order_task(task: str, num_examples: int, seq_len: int, vocab_size: int,
                    generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token sequences ``X (num_examples, seq_len)`` and per-position labels ``Y``.

    ``"reverse"``: ``Y[:, i] = X[:, n-1-i]`` (needs positions);
    ``"sort"``: ``Y`` is ``X`` sorted (the *i*-th smallest token, needs the output position);
    ``"count"``: ``Y[:, i]`` = how many *other* tokens equal ``X[:, i]``, in ``0 .. n-1``
    (order-free: permuting ``X`` permutes ``Y`` the same way).
    Tokens are i.i.d. uniform in ``0 .. vocab_size-1``.
    """
    if task not in ORDER_TASKS:
        raise ValueError(f"task must be one of {ORDER_TASKS}, got {task!r}")
    for name, value in (("num_examples", num_examples), ("seq_len", seq_len),
                        ("vocab_size", vocab_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    X = torch.randint(vocab_size, (num_examples, seq_len), generator=generator)  # (examples, n)
    if task == "reverse":
        Y = X.flip(1)
    elif task == "sort":
        Y = X.sort(dim=1).values
    else:
        Y = (X.unsqueeze(2) == X.unsqueeze(1)).sum(2) - 1  # (examples, n): equal tokens, minus self
    return X, Y


def num_classes(task: str, seq_len: int, vocab_size: int) -> int:
    """Number of label values of :func:`make_order_task`'s ``task``."""
    if task not in ORDER_TASKS:
        raise ValueError(f"task must be one of {ORDER_TASKS}, got {task!r}")
    return seq_len if task == "count" else vocab_size


def blind_reversal_ceiling(X: torch.Tensor, vocab_size: int) -> float:
    """The best expected accuracy of any position-blind model on ``reverse`` for inputs ``X``.

    A permutation-equivariant model sees, at position ``i``, its own token and the
    multiset of the others, but not which one sits at ``n-1-i``. With i.i.d.
    tokens that target is equally likely to be any of the other ``n-1`` tokens,
    so the best guess is the most frequent of them and succeeds with
    probability ``max_v count_v / (n-1)`` (``n`` odd: the middle token is its own target).
    """
    n = X.shape[1]
    counts = nn.functional.one_hot(X, vocab_size).sum(1, keepdim=True)  # (examples, 1, vocab)
    others = counts - nn.functional.one_hot(X, vocab_size)  # (examples, n, vocab): without self
    best = others.max(-1).values.float() / max(n - 1, 1)  # (examples, n)
    if n % 2:
        best[:, n // 2] = 1.0
    return float(best.mean())


class SelfAttentionTagger(nn.Module):
    """Embedding, optional positions, ``num_layers`` encoder blocks, a linear classifier.

    ``forward(X (batch, n))`` returns logits ``(batch, n, num_classes)``.
    ``position`` is ``None`` (a set model: permutation-equivariant), ``"sinusoidal"``
    or ``"learned"`` (added to the embeddings) or ``"rope"`` (rotates each
    head's queries and keys inside attention). ``rope_base`` is RoPE's base (its
    frequencies are ``rope_base ** (-2j / head_dim)``); only ``"rope"`` uses it.
    """

    def __init__(self, vocab_size: int, num_classes: int, num_hiddens: int = 32,
                 num_heads: int = 4, num_layers: int = 2, ffn_num_hiddens: int = 64,
                 position: str | None = "sinusoidal", max_len: int = 64,
                 rope_base: float = 10000.0) -> None:
        super().__init__()
        if position not in POSITIONS:
            raise ValueError(f"position must be one of {POSITIONS}, got {position!r}")
        self.num_hiddens, self.position = num_hiddens, position
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos = {"sinusoidal": lambda: PositionalEncoding(num_hiddens, 0.0, max_len),
                    "learned": lambda: LearnedPositionalEmbedding(num_hiddens, 0.0, max_len),
                    }.get(position, nn.Identity)()
        self.blks = nn.ModuleList(TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads)
                                  for _ in range(num_layers))
        if position == "rope":
            for blk in self.blks:  # same block, but its attention rotates queries and keys
                rope = RotaryEmbedding(num_hiddens // num_heads, base=rope_base, max_len=max_len)
                blk.attention = MultiHeadAttention(num_hiddens, num_heads, rope=rope)
        self.head = nn.Linear(num_hiddens, num_classes)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        H = self.embedding(X)  # (batch, n, num_hiddens), entries ~ N(0, 1) like the encodings
        H = self.pos(H)  # (batch, n, num_hiddens); unchanged without absolute positions
        for blk in self.blks:
            H = blk(H)  # (batch, n, num_hiddens)
        return self.head(H)  # (batch, n, num_classes)


def train_tagger(model: SelfAttentionTagger, task: str, seq_len: int, vocab_size: int,
                 num_steps: int = 300, batch_size: int = 128, lr: float = 3e-3,
                 seed: int = 0, device: torch.device | str = "cpu",
                 on_step: Callable[[int], None] | None = None) -> list[float]:
    """Train on fresh random batches (no example is seen twice); returns the loss per step.

    ``on_step(steps_done)``, if given, is called after every step (to measure the model as it
    learns); it may put the model in evaluation mode, since each step sets training mode again.
    """
    gen = torch.Generator().manual_seed(seed)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(1, num_steps + 1):
        model.train()
        X, Y = make_order_task(task, batch_size, seq_len, vocab_size, gen)
        X, Y = X.to(device), Y.to(device)
        logits = model(X)  # (batch, n, classes)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), Y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step)
    return losses


def fit_tagger(task: str, seq_len: int, vocab_size: int, position: str | None = None,
               num_steps: int = 300, seed: int = 0, device: torch.device | str = "cpu",
               test_set: tuple[torch.Tensor, torch.Tensor] | None = None,
               eval_every: int = 50, rope_base: float = 10000.0,
               ) -> tuple[SelfAttentionTagger, list[float], dict[int, float]]:
    """A :class:`SelfAttentionTagger` for ``task`` built with seed ``seed`` and trained by
    :func:`train_tagger`; returns ``(model, losses, curve)``. ``rope_base`` is passed to the
    tagger (RoPE's base, used with ``position="rope"``).

    ``curve`` is the learning curve: ``{steps: accuracy on test_set}`` before training and after
    every ``eval_every`` steps (and after the last), or ``{}`` without ``test_set`` (``X, Y`` from
    :func:`make_order_task`). Measuring does not change the training: the model after ``k`` steps
    is the one a run of ``num_steps=k`` returns. A function of this module, so that
    :func:`attnlib.training.run_side_by_side` can train several at once.
    """
    if not isinstance(eval_every, int) or isinstance(eval_every, bool) or eval_every < 1:
        raise ValueError(f"eval_every must be a positive int (steps between measurements), "
                         f"got {eval_every!r}")
    if test_set is not None:
        if not (isinstance(test_set, (tuple, list)) and len(test_set) == 2
                and all(isinstance(t, torch.Tensor) for t in test_set)):
            raise TypeError("test_set must be a pair of tensors (X, Y) as make_order_task returns, "
                            f"got {type(test_set).__name__}")
        if test_set[0].shape != test_set[1].shape or test_set[0].dim() != 2:
            raise ValueError(f"test_set must be X, Y of one shape (examples, seq_len), got "
                             f"{tuple(test_set[0].shape)} and {tuple(test_set[1].shape)}")
    torch.manual_seed(seed)
    model = SelfAttentionTagger(vocab_size, num_classes(task, seq_len, vocab_size), position=position,
                                rope_base=rope_base)
    curve: dict[int, float] = {}

    def measure(step: int) -> None:
        if test_set is not None and (step % eval_every == 0 or step == num_steps):
            curve[step] = tagger_accuracy(model, *test_set)

    measure(0)
    losses = train_tagger(model, task, seq_len, vocab_size, num_steps, seed=seed, device=device,
                          on_step=measure)
    return model, losses, curve


@torch.no_grad()
def tagger_accuracy(model: nn.Module, X: torch.Tensor, Y: torch.Tensor) -> float:
    """Fraction of positions whose arg-max prediction equals ``Y``."""
    model.eval()
    device = next(model.parameters()).device
    pred = model(X.to(device)).argmax(-1).cpu()  # (batch, n)
    return float((pred == Y).float().mean())


class _PeakMemory(TorchDispatchMode):
    """Counts the bytes of every storage an operator returns until it is freed."""

    def __init__(self) -> None:
        super().__init__()
        self.now = self.peak = 0
        self.live: dict[int, int] = {}

    def _free(self, key: int) -> None:
        self.now -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0]
                  if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key in self.live or key in inputs or storage.nbytes() == 0:
                continue  # a view (or in-place result) of memory that already exists
            self.live[key] = storage.nbytes()
            self.now += storage.nbytes()
            self.peak = max(self.peak, self.now)
            weakref.finalize(storage, self._free, key)
        return out


def peak_memory(fn, *args, **kwargs) -> tuple[int, object]:
    """Run ``fn(*args, **kwargs)``; return (peak bytes of tensors it allocated, its result).

    Device-independent: it counts the storages that PyTorch operators return
    while they are alive (inputs and parameters, allocated before, are not
    counted). A kernel's private scratch space is not visible: for a fused
    kernel, a single operator, the count is what it returns (for
    ``F.scaled_dot_product_attention`` on a CPU, its output and one log-sum-exp
    per query), not the blocks of scores it works on inside.
    """
    tracker = _PeakMemory()
    with tracker:
        result = fn(*args, **kwargs)
    return tracker.peak, result
