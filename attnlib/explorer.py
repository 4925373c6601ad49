"""A chapter's widget, and every state of it for the book's website, from one function.

    from attnlib.explorer import explorable
    explored = explorable(draw, name="lookup",
                          temperature=widgets.SelectionSlider(options=[0.5, 1, 2], description="T"),
                          kind=widgets.Dropdown(options=["a", "b"], description="kind"))

In JupyterLab (and under nbval) this is ``ipywidgets.interactive(draw, **controls)``: the same
controls, and ``draw`` drawing with matplotlib as the reader moves them. The cell's output also
carries a small payload under the MIME type :data:`MIME` (which explorer, and the values each
control can take), which JupyterLab ignores. Nothing else is computed: the cell is as cheap as the
widget.

The website needs every state, drawn by the kernel. They are drawn only when the maintainers'
executor asks for them (``make explorers``: ``scripts/execute.py --explorers`` sets the
environment variable :data:`ENV` to the folder of the states): then :func:`explorable` also calls
``draw`` once for every combination of the controls' values (a slider's every step, a drop-down's
every option) and writes them to ``<folder>/<chapter>/<name>.json``, with each figure as a
lossless WebP image in ``<folder>/img/<key>.webp`` (the pixels of JupyterLab's inline PNG, each distinct image
once, shared by every explorer). A state is:

* its figures: the image key, and for every heatmap (an ``imshow`` of a 2-D array) where it lies
  in the image, its values (3 significant digits) and the tick labels naming its rows and columns
  (the tokens), so that pointing at a cell can say "query t, key o: attention weight 0.312";
* what the function printed or displayed as text, and what it returned (ipywidgets shows it under
  the figure), and a short text naming what each figure shows (its titles).

The executor then stamps the file with the notebook's recipe (:func:`recipe`: the code cells up to
the widget's, comments left out); the site's build and ``tests/test_explorer.py`` refuse states
whose recipe no longer matches the notebook. :meth:`Explored.check` redraws a state in the kernel
and compares it with the saved one (values within a tolerance: never bitwise images across
machines), which each chapter's hidden check does for two settings.

The grid is every combination, so a control must have few values: a slider with a coarse step or
a ``SelectionSlider`` of chosen values, a ``Dropdown`` of prompts instead of a free ``Text``.
:func:`explorable` refuses a grid of more than ``max_states`` states.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MIME = "application/vnd.attnbook.explorer+json"
#: Set (to a folder) by the maintainers' executor: explorable() then draws and writes every state.
ENV = "ATTNBOOK_EXPLORERS"
#: The chapter (notebook name without .ipynb) whose explorers are drawn; set by the executor too.
CHAPTER_ENV = "ATTNBOOK_CHAPTER"
#: Where the saved states are read (the book's ``book/explorers/``), set by the book's own tools:
#: its test configuration, ``make lab`` and the executor. Unset, as for attnlib installed from its
#: wheel, there are no saved states and a check has nothing to compare.
STATES_ENV = "ATTNBOOK_STATES"
IMAGES = "img"  # <folder>/img/<key>.webp


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


def plain(text: str) -> str:
    """Matplotlib's mathtext as the plain words a screen reader can read:
    ``$|\\mathbf{M}_k \\mathbf{p}_p - \\mathbf{p}_{p+k}|$`` becomes ``|M_k p_p - p_(p+k)|``."""
    text = re.sub(r"\\math\w+\{([^{}]*)\}", r"\1", text)  # \mathbf{M} -> M
    text = re.sub(r"([_^])\{([^{}]*)\}", r"\1(\2)", text)  # p_{p+k} -> p_(p+k)
    text = re.sub(r"\\[,;!: ]", " ", text)  # mathtext's spaces
    return text.replace("$", "").replace("{", "").replace("}", "")


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


def heatmaps(fig, bbox=None) -> list[dict]:
    """Every heatmap of a drawn ``fig``: ``{"box": [x0, y0, x1, y1]`` (its first and last cells'
    outer corners as fractions of the image, from the top left), ``"n": [rows, cols]``,
    ``"v"`` (row-major values), ``"rows"``/``"cols"`` (names or None), ``"lab"`` ([row axis,
    column axis, colour bar]) and ``"title"``}. ``bbox`` (inches) is the part of the figure the
    image shows (the inline backend's tight box); default: the whole figure."""
    found = []
    dpi = fig.dpi
    if bbox is None:
        bbox = fig.bbox_inches
    left_px, bottom_px = bbox.x0 * dpi, bbox.y0 * dpi
    width, height = bbox.width * dpi, bbox.height * dpi
    for ax in fig.axes:
        for image in ax.get_images():
            A = np.ma.asarray(image.get_array())
            if A.ndim != 2:
                continue  # a picture (RGB), not a heatmap
            rows, cols = A.shape
            left, right, bottom, top = image.get_extent()
            y_first, y_last = (top, bottom) if image.origin == "upper" else (bottom, top)
            (x0, y0), (x1, y1) = image.get_transform().transform([(left, y_first), (right, y_last)])
            x0, x1, y0, y1 = x0 - left_px, x1 - left_px, y0 - bottom_px, y1 - bottom_px  # in the image
            values = np.ma.filled(A.astype(float), np.nan).reshape(-1)
            found.append({
                "box": [sig(x0 / width, 4), sig(1 - y0 / height, 4), sig(x1 / width, 4),
                        sig(1 - y1 / height, 4)],
                "n": [rows, cols], "v": [sig(v) for v in values],
                "rows": _axis_names(ax.yaxis, y_first, y_last, rows),
                "cols": _axis_names(ax.xaxis, left, right, cols),
                "lab": [plain(ax.get_ylabel()), plain(ax.get_xlabel()), plain(_colorbar_label(image))],
                "title": plain(ax.get_title())})
    return found


def describe(fig) -> str:
    """What a figure shows, from its own texts: its titles (or its axes' labels), as plain words
    (the website's text alternative for the figure)."""
    texts = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) else []
    texts += [ax.get_title() for ax in fig.axes]
    texts = [t.replace("\n", " ") for t in dict.fromkeys(texts) if t]
    if not texts:
        texts = [f"{ax.get_ylabel()} against {ax.get_xlabel()}" for ax in fig.axes
                 if ax.get_xlabel() and ax.get_ylabel()][:1]
    return "; ".join(plain(t) for t in texts)


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
        pixels, bbox = inline_png(fig)
        figures.append({"img": webp(pixels), "w": pixels.shape[1], "h": pixels.shape[0],
                        "heat": heatmaps(fig, bbox), "about": describe(fig)})
        plt.close(fig)
    return {"figures": figures, "text": text}


def inline_png(fig):
    """The pixels ``(height, width, 4)`` of the PNG that JupyterLab's inline backend shows of
    ``fig`` (IPython's ``print_figure`` with ``bbox_inches="tight"``: the figure cropped to what it
    draws, plus a margin), and that box in inches."""
    import matplotlib.pyplot as plt
    from IPython.core.pylabtools import print_figure
    from PIL import Image

    png = print_figure(fig, "png", bbox_inches="tight")
    fig.canvas.draw()
    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(plt.rcParams["savefig.pad_inches"])
    with Image.open(io.BytesIO(png)) as image:
        pixels = np.asarray(image.convert("RGBA"))
    return pixels, bbox


def grids(controls: dict, max_states: int | None = None) -> tuple[list[dict], dict]:
    """The grids of ``controls`` (name -> ipywidget) and the ``ipywidgets.fixed`` values. Raises
    ValueError when the grid has more than ``max_states`` states (every combination is drawn)."""
    import ipywidgets as widgets

    fixed = {k: w.value for k, w in controls.items() if isinstance(w, widgets.fixed)}
    found = [control_grid(k, w) for k, w in controls.items() if not isinstance(w, widgets.fixed)]
    count = math.prod(len(g["values"]) for g in found)
    if max_states is not None and count > max_states:
        sizes = " x ".join(f"{g['name']} {len(g['values'])}" for g in found)
        raise ValueError(f"explorable: {count} states ({sizes}) is more than max_states={max_states}; "
                         "give a slider a coarser step or fewer choices")
    return found, fixed


def settings(controls: list[dict]):
    """Every setting of the grids ``controls``, row-major (the last control moves fastest)."""
    for combo in itertools.product(*(g["values"] for g in controls)):
        yield dict(zip((g["name"] for g in controls), combo, strict=True))


def export(fn, controls: dict, max_states: int = 400) -> tuple[dict, dict[str, bytes]]:
    """Every state of ``fn`` over ``controls`` (name -> ipywidget; ``ipywidgets.fixed`` values are
    passed as they are): ``({"controls": [control_grid(...)], "states": [view index, row-major
    over the controls], "views": [{"figures": [{"img": key, "w", "h", "heat", "about"}],
    "text"}]}, {key: lossless WebP bytes})``. Raises ValueError for more than ``max_states``."""
    found, fixed = grids(controls, max_states)
    views, view_index, states, images = [], {}, [], {}
    for setting in settings(found):
        drawn = render(fn, setting | fixed)
        for f in drawn["figures"]:
            key = hashlib.sha256(f["img"]).hexdigest()[:16]
            images[key] = f["img"]
            f["img"] = key
        view = json.dumps(drawn, sort_keys=True)
        if view not in view_index:
            view_index[view] = len(views)
            views.append(drawn)
        states.append(view_index[view])
    return {"controls": json.loads(json.dumps(found)), "states": states, "views": views}, images


def state(data: dict, **setting) -> dict:
    """The view ``data`` (states, as :func:`export` makes them) holds for ``setting`` (every
    control named). Raises ValueError for a value not on a control's grid."""
    index = 0
    for g in data["controls"]:
        value = json.loads(json.dumps(setting[g["name"]]))  # as saved: a tuple is a JSON list
        if value not in g["values"]:
            raise ValueError(f"{g['name']}={value!r} is not one of the widget's values {g['values']}")
        index = index * len(g["values"]) + g["values"].index(value)
    return data["views"][data["states"][index]]


def differences(kept: dict, fresh: dict, atol: float | None = 2e-3, rtol: float = 1e-2,
                text: bool = True, structure_only: bool = False) -> list[str]:
    """How a freshly drawn view differs from a saved one: the number of figures, their titles,
    each heatmap's shape and names, its values (within ``atol + rtol * |value|``: the saved values
    have 3 significant digits, and another machine's floats differ in the last bits; not compared
    when ``atol`` is None) and, with ``text``, the printed text. With ``structure_only``, only the
    number of figures and of heatmaps in each: for a model trained in the notebook, which another
    machine's float path trains into another model (other tokens, titles and weights). Images are
    not compared: pixels differ across machines and font builds."""
    found = []
    if len(kept["figures"]) != len(fresh["figures"]):
        return [f"{len(fresh['figures'])} figures drawn, {len(kept['figures'])} saved"]
    for i, (a, b) in enumerate(zip(kept["figures"], fresh["figures"], strict=True)):
        if structure_only:
            if len(a["heat"]) != len(b["heat"]):
                found.append(f"figure {i}: {len(b['heat'])} heatmaps, saved {len(a['heat'])}")
            continue
        if a["about"] != b["about"]:
            found.append(f"figure {i}: titled {b['about']!r}, saved {a['about']!r}")
        if len(a["heat"]) != len(b["heat"]):
            found.append(f"figure {i}: {len(b['heat'])} heatmaps, saved {len(a['heat'])}")
            continue
        for j, (h, g) in enumerate(zip(a["heat"], b["heat"], strict=True)):
            where = f"figure {i}, heatmap {j}"
            if h["n"] != g["n"] or h["rows"] != g["rows"] or h["cols"] != g["cols"]:
                found.append(f"{where}: shape or tokens {g['n']} {g['rows']} {g['cols']}, saved "
                             f"{h['n']} {h['rows']} {h['cols']}")
                continue
            if atol is None:
                continue
            saved = np.array([np.nan if v is None else v for v in h["v"]], dtype=float)
            drawn = np.array([np.nan if v is None else v for v in g["v"]], dtype=float)
            if not np.allclose(saved, drawn, atol=atol, rtol=rtol, equal_nan=True):
                worst = np.nanmax(np.abs(saved - drawn))
                found.append(f"{where}: values differ by up to {worst:.3g}")
    if text and not structure_only and kept["text"] != fresh["text"]:
        found.append(f"printed {fresh['text']!r}, saved {kept['text']!r}")
    return found


def recipe(cells: list[dict], upto: int) -> str:
    """The recipe of a notebook's states: a hash of its code cells ``cells[:upto + 1]`` (nbformat
    dicts) without comments, docstrings and blank lines, so that an edited comment leaves the
    states current while any change to the code that drew them makes them stale. The code is
    read as the shipped weights' recipe reads attnlib's modules (``attnlib.presets``: the same
    spans on every Python version), from a file, since that function's own code is part of the
    weights' recipe and stays as it is."""
    import tempfile

    from .presets import _code_only

    digest = hashlib.sha256()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cell.py"
        for cell in cells[:upto + 1]:
            if cell.get("cell_type") == "code":
                source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                path.write_text(source, encoding="utf-8", newline="\n")
                digest.update(_code_only(path) + b"\n\x00\n")
    return digest.hexdigest()[:16]


def states_folder() -> Path | None:
    """The folder of the saved states (:data:`ENV` while they are drawn, else :data:`STATES_ENV`),
    or None where there is none."""
    folder = os.environ.get(ENV) or os.environ.get(STATES_ENV)
    return Path(folder) if folder and Path(folder).is_dir() else None


def states_path(chapter: str, name: str, folder: Path | str | None = None) -> Path:
    """Where the states of explorer ``name`` of ``chapter`` are kept."""
    folder = folder or states_folder()
    if folder is None:
        raise FileNotFoundError(f"explorer {chapter}/{name}: no folder of saved states "
                                f"({STATES_ENV} is not set to one)")
    return Path(folder) / chapter / f"{name}.json"


def write_states(folder: Path, chapter: str, name: str, data: dict, images: dict[str, bytes]) -> Path:
    """Write ``data`` (as :func:`export` makes it) to ``folder/chapter/name.json`` and each image
    not already there to ``folder/img/<key>.webp``; returns the JSON file's path."""
    (folder / IMAGES).mkdir(parents=True, exist_ok=True)
    for key, image in images.items():
        path = folder / IMAGES / f"{key}.webp"
        if not path.exists():
            path.write_bytes(image)
    path = folder / chapter / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"chapter": chapter, "name": name, "recipe": None} | data
    path.write_text(json.dumps(record, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n",
                    encoding="utf-8")
    return path


def load_states(chapter: str, name: str, folder: Path | str | None = None) -> dict:
    """The saved states of explorer ``name`` of ``chapter``; FileNotFoundError (naming ``make
    explorers``) when there are none."""
    path = states_path(chapter, name, folder)
    if not path.exists():
        raise FileNotFoundError(f"no saved states for explorer {chapter}/{name} ({path}); "
                                "run `make explorers` to draw them")
    return json.loads(path.read_text(encoding="utf-8"))


def _chapter() -> str | None:
    """The chapter being run: the executor's variable, else JupyterLab's notebook path."""
    if os.environ.get(CHAPTER_ENV):
        return os.environ[CHAPTER_ENV]
    session = os.environ.get("JPY_SESSION_NAME")  # jupyter_server's path of the notebook
    return Path(session).stem if session else None


@dataclass
class Explored:
    """What :func:`explorable` made: the widget ``ui``, the function, its fixed arguments and the
    payload naming the saved states (``{"chapter", "name", "controls"}``)."""

    ui: object
    fn: object = field(repr=False)
    fixed: dict
    payload: dict

    @property
    def chapter(self) -> str:
        return self.payload["chapter"] or _find_chapter(self.payload["name"])

    def saved(self, **setting) -> dict:
        """The saved view for ``setting`` (every control named)."""
        data = load_states(self.chapter, self.payload["name"])
        if data["controls"] != self.payload["controls"]:
            raise ValueError(f"the saved states of {self.chapter}/{self.payload['name']} have other "
                             "controls than the widget; run `make explorers`")
        return state(data, **setting)

    def check(self, atol: float | None = 2e-3, text: bool = True, structure_only: bool = False,
              **setting) -> list[str]:
        """How what the function draws now for ``setting`` differs from the saved state (see
        :func:`differences`; empty: the same). Without a folder of saved states
        (:data:`STATES_ENV` unset, as for attnlib from its wheel, on Colab say) there is nothing to
        differ from."""
        if states_folder() is None:
            return []
        return differences(self.saved(**setting), render(self.fn, setting | self.fixed),
                           atol=atol, text=text, structure_only=structure_only)

    def verify(self, *settings: dict, atol: float | None = 2e-3, text: bool = True,
               structure_only: bool = False) -> list[str]:
        """A chapter's hidden check of its explorer: each of ``settings`` drawn now is its saved
        state (:meth:`check`), and their saved states differ (the figure moves with the controls).
        Returns what is wrong, one line each (empty: nothing)."""
        if states_folder() is None:
            return []  # no saved states outside the book's own tools (see check)
        found = [f"{setting}: {problem}" for setting in settings
                 for problem in self.check(atol, text, structure_only, **setting)]
        views = [json.dumps(self.saved(**setting), sort_keys=True) for setting in settings]
        if len(set(views)) < len(views):
            found.append(f"the settings {settings} share one saved state")
        return found


def _find_chapter(name: str) -> str:
    """The one chapter folder of the saved states holding explorer ``name`` (nbval sets no
    variable naming the notebook; explorer names are unique in the book)."""
    folder = states_folder()
    found = sorted(folder.glob(f"*/{name}.json")) if folder else []
    if len(found) != 1:
        raise FileNotFoundError(f"explorer {name!r}: {len(found)} saved states files "
                                f"({', '.join(map(str, found)) or 'none'}); run `make explorers`")
    return found[0].parent.name


def explorable(fn, /, *, name: str, max_states: int = 400, **controls) -> Explored:
    """Show ``ipywidgets.interactive(fn, **controls)`` with a payload naming this explorer
    (``name``, unique in the book) and its controls' values; when the executor asks
    (:data:`ENV`), also draw and save every state (see the module docstring)."""
    import ipywidgets as widgets
    from IPython.display import display

    if not name or not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"explorable: name must be a short word (letters, digits, - and _), got {name!r}")
    found, fixed = grids(controls, max_states)
    chapter = _chapter()
    payload = {"chapter": chapter, "name": name, "controls": json.loads(json.dumps(found))}
    folder = os.environ.get(ENV)
    if folder:
        if not chapter:
            raise RuntimeError(f"explorable: {ENV} is set but not {CHAPTER_ENV} (the chapter)")
        data, images = export(fn, controls, max_states)
        write_states(Path(folder), chapter, name, data, images)
    ui = widgets.interactive(fn, **controls)
    bundle = ui._repr_mimebundle_()
    bundle[MIME] = payload
    display(bundle, raw=True)
    return Explored(ui, fn, fixed, payload)
