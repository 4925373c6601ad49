"""Heatmaps of attention weights, in colours that read in greyscale.

matplotlib is imported inside the function, so ``import attnlib`` stays light.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch


def show_heatmaps(matrices, xlabel: str = "Keys", ylabel: str = "Queries", titles=None,
                  figsize=(2.5, 2.5), cmap: str | None = None, *,
                  x_labels: Sequence[str] | None = None, y_labels: Sequence[str] | None = None,
                  row_labels: Sequence[str] | None = None, vmin: float | None = None,
                  vmax: float | None = None, colorbar: bool = True, signed: bool | None = None,
                  colorbar_label: str | None = None):
    """Draw a grid of heatmaps with one shared colour scale and one labelled colour bar.

    ``matrices`` is ``(rows, cols, queries, keys)`` as in d2l (layers x heads,
    say); 2-D and 3-D inputs are treated as one row. ``x_labels``/``y_labels``
    put tokens on the axes, and the matrices are cropped to their lengths, so
    padding is hidden. ``titles`` label the columns, ``row_labels`` the rows.

    Colours read in greyscale and with colour-blindness. Magnitudes such as
    attention weights get viridis, whose lightness grows with the value, on a
    scale from 0 to the largest value. Signed values (``signed=True``, or by
    default whenever an entry is negative) get the diverging RdBu_r centred on
    0: white at 0, darker blue below and darker red above, on a scale symmetric
    about 0. ``cmap``, ``vmin`` and ``vmax`` override these choices. The colour
    bar is labelled ``colorbar_label`` (default "attention weight", or "value"
    for signed data). Returns the figure; the notebook displays it once.
    """
    import matplotlib.pyplot as plt

    try:
        M = torch.as_tensor(matrices).detach().float().cpu()
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(f"matrices must be a tensor or an array of numbers, got "
                        f"{type(matrices).__name__}") from e
    if M.numel() == 0:
        raise ValueError(f"matrices must not be empty, got shape {tuple(M.shape)}")
    if bool(M.isnan().all()):
        raise ValueError("matrices holds only NaN: there is nothing to draw")
    if (not isinstance(figsize, (tuple, list)) or len(figsize) != 2
            or not all(isinstance(f, (int, float)) and f > 0 for f in figsize)):
        raise TypeError(f"figsize must be a (width, height) pair of positive numbers, got {figsize!r}")
    if M.dim() == 2:
        M = M[None, None]  # (1, 1, queries, keys)
    elif M.dim() == 3:
        M = M[None]  # (1, cols, queries, keys)
    if M.dim() != 4:
        raise ValueError(f"matrices must be 2-D, 3-D or (rows, cols, queries, keys), "
                         f"got shape {tuple(M.shape)}")
    for name, labels, size in (("y_labels", y_labels, M.shape[2]), ("x_labels", x_labels, M.shape[3])):
        if labels is not None and not 0 < len(labels) <= size:
            raise ValueError(f"{name} has {len(labels)} entries; the matrices have {size} along that axis")
    nq = len(y_labels) if y_labels is not None else M.shape[2]
    nk = len(x_labels) if x_labels is not None else M.shape[3]
    M = M[:, :, :nq, :nk]  # (rows, cols, nq, nk): padding cropped
    finite = M[M.isfinite()]  # NaN cells (masked) stay blank and do not set the scale
    finite = finite if finite.numel() else torch.zeros(1)
    signed = bool((finite < 0).any()) if signed is None else signed
    if signed:
        limit = float(finite.abs().max())
        cmap = "RdBu_r" if cmap is None else cmap
        vmin, vmax = (-limit if vmin is None else vmin), (limit if vmax is None else vmax)
    else:
        cmap = "viridis" if cmap is None else cmap
        vmin = min(0.0, float(finite.min())) if vmin is None else vmin
        vmax = float(finite.max()) if vmax is None else vmax
    if colorbar_label is None:
        colorbar_label = "value" if signed else "attention weight"
    rows, cols = M.shape[:2]
    for name, labels, size, axis in (("titles", titles, cols, "columns"),
                                     ("row_labels", row_labels, rows, "rows")):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{name} has {len(labels)} entries, but there are {size} {axis}")
    fig, axes = plt.subplots(rows, cols, figsize=(figsize[0] * cols, figsize[1] * rows),
                             sharex=True, sharey=True, squeeze=False)
    for i in range(rows):
        for j in range(cols):
            ax = axes[i, j]
            image = ax.imshow(M[i, j].numpy(), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
            if x_labels is not None:
                ax.set_xticks(range(nk), x_labels, rotation=90)
            if y_labels is not None:
                ax.set_yticks(range(nq), y_labels)
            if i == rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel if row_labels is None else f"{row_labels[i]}\n{ylabel}")
            if titles is not None and i == 0:
                ax.set_title(titles[j])
    if colorbar:
        fig.colorbar(image, ax=axes, shrink=0.6, label=colorbar_label)
    return fig


def show_pair_attention(weights, pairs, title: str, xlabel: str = "English (source)",
                        ylabel: str = "French (reference)") -> list:
    """One heatmap per translation pair, labelled with its tokens and ``<eos>``.

    ``weights[i]`` is pair ``i``'s ``(target steps, source steps)`` matrix, as
    :func:`attnlib.teacher_forced_attention` returns them; rows are the reference's tokens
    (teacher forcing: each row predicts that token), columns the source's. Each figure is
    sized to its sentence. Returns the figures.
    """
    pairs, weights = list(pairs), list(weights)
    if len(pairs) != len(weights):
        raise ValueError(f"weights has {len(weights)} matrices but pairs has {len(pairs)} pairs: "
                         "pass one (target, source) matrix per pair")
    figs = []
    for pair, w in zip(pairs, weights, strict=True):
        x_labels, y_labels = [*pair.src, "<eos>"], [*pair.tgt, "<eos>"]
        figs.append(show_heatmaps(w, xlabel=xlabel, ylabel=ylabel, titles=[title],
                                  x_labels=x_labels, y_labels=y_labels,
                                  figsize=(0.5 * len(x_labels) + 1, 0.45 * len(y_labels) + 0.6)))
    return figs
