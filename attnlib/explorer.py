"""A chapter's widget, and every state of it for the book's website, from one function.

    from attnlib.explorer import explorable
    ui, states = explorable(draw, temperature=widgets.SelectionSlider(options=[0.5, 1, 2], description="T"),
                 kind=widgets.Dropdown(options=["a", "b"], description="kind"))

In JupyterLab this is ``ipywidgets.interactive(draw, **controls)``: the same controls, and ``draw``
drawing with matplotlib as the reader moves them. It also calls ``draw`` once for every
combination of the controls' values (a slider's every step, a drop-down's every option) and
attaches the results to the cell's output as data, under the MIME type :data:`MIME` (JupyterLab
shows the widget and ignores it; the website draws it, with no Python behind it):

* each state's figures as images: matplotlib's PNG of the figure as the kernel draws it, stored
  as lossless WebP (the same pixels, about a third of the bytes), each distinct image once;
* for every heatmap (an ``imshow`` of a 2-D array), where it lies in the image, its values (3
  significant digits) and the tick labels naming its rows and columns (the tokens), so that
  pointing at a cell can say "query t, key o: attention weight 0.312";
* what the function printed or displayed as text, and what it returned (ipywidgets shows it under
  the figure), and a short text naming what each figure shows (its titles).

The grid is every combination, so a control must have few values: a slider with a coarse step or
a ``SelectionSlider`` of chosen values, a ``Dropdown`` of prompts instead of a free ``Text``.
:func:`explorable` refuses a grid of more than ``max_states`` states.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import itertools
import json
import math

import numpy as np

MIME = "application/vnd.attnbook.explorer+json"


def sig(x: float, digits: int = 3) -> float | int | None:
    """``x`` to ``digits`` significant digits (None for NaN or infinity): short JSON."""
    x = float(x)
    if not math.isfinite(x):
        return None
    v = float(f"{x:.{digits}g}")
    return int(v) if v == int(v) and abs(v) < 1e15 else v


def _readout(value, fmt: str | None) -> str:
    """A slider's value as its readout shows it (``readout_format``, d3's syntax; Python's ``g``
    drops trailing zeros as ipywidgets' readout does not: a reader sees the same number)."""
    if fmt:
        with contextlib.suppress(ValueError, TypeError):
            return format(value, fmt)
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def control_grid(name: str, w) -> dict:
    """The values a control can take: ``{"name", "label", "kind", "values", "labels", "index"}``.
    ``kind`` is "select" (drop-down, toggle buttons), "slider" or "checkbox"; ``index`` is the
    control's value now. Raises TypeError for a control whose values are not a short list."""
    import ipywidgets as widgets

    label = w.description or name
    if isinstance(w, (widgets.Dropdown, widgets.ToggleButtons, widgets.RadioButtons,
                      widgets.SelectionSlider)):
        values, labels = list(w._options_values), list(w._options_labels)
        kind = "slider" if isinstance(w, widgets.SelectionSlider) else "select"
        return {"name": name, "label": label, "kind": kind, "values": values, "labels": labels,
                "index": values.index(w.value)}
    if isinstance(w, widgets.Checkbox):
        return {"name": name, "label": label, "kind": "checkbox", "values": [False, True],
                "labels": ["off", "on"], "index": int(bool(w.value))}
    if isinstance(w, widgets.FloatLogSlider):
        n = round((w.max - w.min) / w.step)
        exps = [w.min + i * w.step for i in range(n + 1)]
        values = [float(f"{w.base ** e:.12g}") for e in exps]
        index = int(np.argmin([abs(math.log(v, w.base) - math.log(w.value, w.base)) for v in values]))
    elif isinstance(w, widgets.FloatSlider):
        n = round((w.max - w.min) / w.step)
        values = [float(f"{w.min + i * w.step:.12g}") for i in range(n + 1)]
        index = int(np.argmin([abs(v - w.value) for v in values]))
    elif isinstance(w, widgets.IntSlider):
        values = list(range(w.min, w.max + 1, w.step))
        index = values.index(w.value)
    else:
        raise TypeError(f"explorable: control {name!r} is a {type(w).__name__}; use a Dropdown, "
                        "ToggleButtons, SelectionSlider, Checkbox, IntSlider or Float(Log)Slider, "
                        "whose values are a short list (a free Text becomes a Dropdown of choices)")
    fmt = getattr(w, "readout_format", None)
    return {"name": name, "label": label, "kind": "slider", "values": values,
            "labels": [_readout(v, fmt) for v in values], "index": index}


def _axis_names(axis, lo: float, hi: float, n: int) -> list | None:
    """The tick labels naming each of ``n`` cells between data coordinates ``lo`` and ``hi`` (a
    heatmap's rows or columns), None for a cell without one; None when no cell has a label."""
    locs = np.asarray(axis.get_majorticklocs(), dtype=float)
    labels = [t.get_text() for t in axis.get_majorticklabels()]
    if len(labels) != len(locs):
        return None
    step = (hi - lo) / n
    names = []
    for i in range(n):
        centre = lo + (i + 0.5) * step
        hit = np.nonzero(np.abs(locs - centre) < 1e-6 * max(1.0, abs(step)))[0]
        names.append(labels[hit[0]] if len(hit) and labels[hit[0]] else None)
    return names if any(names) else None


def _colorbar_label(image) -> str:
    """The label of the colour bar showing ``image``'s scale (show_heatmaps draws one for all)."""
    for ax in image.axes.figure.axes:
        bar = getattr(ax, "_colorbar", None)
        if bar is None or bar.mappable is None:
            continue
        m = bar.mappable
        if m is image or (m.get_cmap().name == image.get_cmap().name
                          and tuple(m.get_clim()) == tuple(image.get_clim())):
            label = bar.ax.get_ylabel() if bar.orientation == "vertical" else bar.ax.get_xlabel()
            if label:
                return label
    return ""


def heatmaps(fig) -> list[dict]:
    """Every heatmap of a drawn ``fig``: ``{"box": [x0, y0, x1, y1]`` (its first and last cells'
    outer corners as fractions of the image, from the top left), ``"n": [rows, cols]``,
    ``"v"`` (row-major values), ``"rows"``/``"cols"`` (names or None), ``"lab"`` ([row axis,
    column axis, colour bar]) and ``"title"``}."""
    found = []
    width, height = fig.bbox.width, fig.bbox.height
    for ax in fig.axes:
        for image in ax.get_images():
            A = np.ma.asarray(image.get_array())
            if A.ndim != 2:
                continue  # a picture (RGB), not a heatmap
            rows, cols = A.shape
            left, right, bottom, top = image.get_extent()
            y_first, y_last = (top, bottom) if image.origin == "upper" else (bottom, top)
            (x0, y0), (x1, y1) = image.get_transform().transform([(left, y_first), (right, y_last)])
            values = np.ma.filled(A.astype(float), np.nan).reshape(-1)
            found.append({
                "box": [sig(x0 / width, 4), sig(1 - y0 / height, 4), sig(x1 / width, 4),
                        sig(1 - y1 / height, 4)],
                "n": [rows, cols], "v": [sig(v) for v in values],
                "rows": _axis_names(ax.yaxis, y_first, y_last, rows),
                "cols": _axis_names(ax.xaxis, left, right, cols),
                "lab": [ax.get_ylabel(), ax.get_xlabel(), _colorbar_label(image)],
                "title": ax.get_title()})
    return found


def describe(fig) -> str:
    """What a figure shows, from its own texts: its titles (or its axes' labels)."""
    texts = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) else []
    texts += [ax.get_title() for ax in fig.axes]
    texts = [t.replace("\n", " ") for t in dict.fromkeys(texts) if t]
    if not texts:
        texts = [f"{ax.get_ylabel()} against {ax.get_xlabel()}" for ax in fig.axes
                 if ax.get_xlabel() and ax.get_ylabel()][:1]
    return "; ".join(texts)


def webp(pixels: np.ndarray) -> bytes:
    """An RGBA image ``(height, width, 4)`` as lossless WebP: the same pixels as matplotlib's PNG
    in about a third of the bytes."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="webp", lossless=True)
    return out.getvalue()


def render(fn, setting: dict) -> dict:
    """Call ``fn(**setting)`` with its figures and text captured: ``{"figures": [{"img": bytes
    (lossless WebP), "w", "h", "heat", "about"}], "text": what it printed}``. The figures are
    closed."""
    import matplotlib.pyplot as plt
    from IPython.lib.pretty import pretty
    from IPython.utils.capture import capture_output

    before = set(plt.get_fignums())
    show = plt.show
    plt.show = lambda *a, **k: None  # the figures are saved below, not displayed
    try:
        with capture_output(display=True) as captured:
            result = fn(**setting)
    finally:
        plt.show = show
    text = captured.stdout + "".join(o.data.get("text/plain", "") + "\n" for o in captured.outputs)
    if result is not None:  # what ipywidgets.interactive shows under the figure
        text += pretty(result) + "\n"
    figures = []
    for num in [n for n in plt.get_fignums() if n not in before]:
        fig = plt.figure(num)
        fig.canvas.draw()  # the pixels savefig(format="png") gives, without encoding a PNG
        pixels = np.asarray(fig.canvas.buffer_rgba())  # (height, width, 4)
        figures.append({"img": webp(pixels), "w": round(fig.bbox.width), "h": round(fig.bbox.height),
                        "heat": heatmaps(fig), "about": describe(fig)})
        plt.close(fig)
    return {"figures": figures, "text": text}


def export(fn, controls: dict, max_states: int = 400) -> dict:
    """Every state of ``fn`` over ``controls`` (name -> ipywidget; ``ipywidgets.fixed`` values are
    passed as they are) as the JSON-ready payload of :data:`MIME`::

        {"controls": [control_grid(...)], "states": [view index, row-major over the controls],
         "views": [{"figures": [{"img": key, "w", "h", "heat", "about"}], "text"}],
         "images": {key: base64 lossless WebP}}
    """
    import ipywidgets as widgets

    fixed = {k: w.value for k, w in controls.items() if isinstance(w, widgets.fixed)}
    grids = [control_grid(k, w) for k, w in controls.items() if not isinstance(w, widgets.fixed)]
    count = math.prod(len(g["values"]) for g in grids)
    if count > max_states:
        sizes = " x ".join(f"{g['name']} {len(g['values'])}" for g in grids)
        raise ValueError(f"explorable: {count} states ({sizes}) is more than max_states={max_states}; "
                         "give a slider a coarser step or fewer choices")
    views, view_index, states, images = [], {}, [], {}
    for combo in itertools.product(*(g["values"] for g in grids)):
        setting = dict(zip((g["name"] for g in grids), combo, strict=True)) | fixed
        drawn = render(fn, setting)
        for f in drawn["figures"]:
            key = hashlib.sha256(f["img"]).hexdigest()[:16]
            images[key] = base64.b64encode(f["img"]).decode("ascii")
            f["img"] = key
        view = json.dumps(drawn, sort_keys=True)
        if view not in view_index:
            view_index[view] = len(views)
            views.append(drawn)
        states.append(view_index[view])
    return {"controls": grids, "states": states, "views": views, "images": images}


def state(data: dict, **setting) -> dict:
    """The view ``data`` (an :func:`export` payload) holds for ``setting`` (every control named)."""
    index = 0
    for g in data["controls"]:
        index = index * len(g["values"]) + g["values"].index(setting[g["name"]])
    return data["views"][data["states"][index]]


def same_view(data: dict, fn, **setting) -> bool:
    """Whether the view ``data`` holds for ``setting`` is what ``fn`` draws for it now: the same
    images (byte for byte), heatmaps and printed text."""
    kept = state(data, **setting)
    fresh = render(fn, setting)
    for f in fresh["figures"]:
        f["img"] = hashlib.sha256(f["img"]).hexdigest()[:16]
    return json.dumps(kept, sort_keys=True) == json.dumps(fresh, sort_keys=True)


def explorable(fn, /, *, max_states: int = 400, **controls):
    """Show ``ipywidgets.interactive(fn, **controls)`` and attach every state of it for the book's
    website (see the module docstring). Returns ``(ui, data)``: the widget and the payload."""
    import ipywidgets as widgets
    from IPython.display import display

    data = export(fn, controls, max_states)
    ui = widgets.interactive(fn, **controls)
    bundle = ui._repr_mimebundle_()
    bundle[MIME] = data
    display(bundle, raw=True)
    return ui, data
