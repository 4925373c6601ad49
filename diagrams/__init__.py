"""The book's diagrams: drawn by Python code in this folder, rendered to SVG in both editions.

    python scripts/render_diagrams.py            # render every diagram (English and Chinese) and refresh
                                          # the diagram cells of the chapters (make diagrams)
    python scripts/render_diagrams.py check      # exit 1 if a file or a chapter's cell is not a fresh render
    python scripts/render_diagrams.py insert NAME --after CELL_ID   # put a diagram into its chapter

* ``draw.py`` is the drawing kit and the visual language; ``chNN.py`` draws chapter NN's diagrams.
* ``svg/en/NAME.svg`` and ``svg/zh/NAME.svg`` are the renders (committed, so they can be looked at
  and compared with a fresh render). The Chinese labels come from the catalogue
  ``locale/zh_CN/LC_MESSAGES/diagrams.po``, one message per label with the diagram's name as
  context, maintained by ``book.i18n`` like the chapters' catalogues.
* A chapter shows a diagram in a markdown cell whose metadata names it (``"diagram": NAME``) and
  carries its caption and alt text as every figure does (``mystnb.figure.caption``,
  ``mystnb.image.alt``). The cell's text is generated: an image whose source is the SVG itself (a
  ``data:`` URL), so the diagram shows wherever the notebook goes, with nothing beside it. The
  website turns the cell into a numbered figure (:func:`figure_markdown`), and the Chinese
  notebooks get the Chinese SVG and alt text (:func:`localise_cell`).
* ``pending.json`` lists the diagrams drawn for chapters that do not show them yet: where each
  goes, its caption and its alt text.
"""

from __future__ import annotations

import importlib
import json
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .draw import Diagram

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SVG = HERE / "svg"
CATALOGUE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "diagrams.po"
PENDING = HERE / "pending.json"
LANGS = ("en", "zh")
CHAPTER_MODULES = [f"ch{n:02d}" for n in range(1, 10)]


@dataclass
class Spec:
    name: str  # e.g. "ch03_scoring_pipeline": the chapter, then what it shows
    chapter: int
    width: float
    height: float
    draw: Callable[[Diagram], None]


REGISTRY: dict[str, Spec] = {}


def diagram(width: float, height: float):
    """Register a drawing function ``chNN_what(d: Diagram)`` as a diagram of chapter NN."""

    def register(fn):
        name = fn.__name__
        match = re.fullmatch(r"ch(\d\d)_\w+", name)
        if not match:
            raise ValueError(f"a diagram's function is named chNN_what, got {name!r}")
        if name in REGISTRY:
            raise ValueError(f"two diagrams named {name!r}")
        REGISTRY[name] = Spec(name, int(match.group(1)), width, height, fn)
        return fn

    return register


def registry() -> dict[str, Spec]:
    """Every diagram, by name, in chapter order."""
    for module in CHAPTER_MODULES:
        importlib.import_module(f"{__name__}.{module}")
    return dict(sorted(REGISTRY.items(), key=lambda kv: (kv[1].chapter, list(REGISTRY).index(kv[0]))))


# --------------------------------------------------------------------------- translation
def translations() -> dict[tuple[str, str], str]:
    """(diagram name, English label) -> Chinese, for the translated, non-fuzzy labels."""
    if not CATALOGUE.exists():
        return {}
    import polib

    return {(e.msgctxt, e.msgid): e.msgstr for e in polib.pofile(str(CATALOGUE)).translated_entries()}


def labels(name: str) -> list[str]:
    """The labels of one diagram, in drawing order, each once."""
    found: list[str] = []
    spec = registry()[name]
    d = Diagram(name, spec.width, spec.height, collect=lambda s: found.append(s) if s not in found else None)
    spec.draw(d)
    return found


def render(name: str, lang: str = "en", zh: dict | None = None, missing: list | None = None) -> str:
    """The SVG text of diagram ``name`` in ``lang``. Labels without a Chinese translation stay
    English and are appended to ``missing``."""
    return drawn(name, lang, zh, missing).svg()


def drawn(name: str, lang: str = "en", zh: dict | None = None, missing: list | None = None) -> Diagram:
    """Diagram ``name`` drawn in ``lang`` (its SVG: ``.svg()``; where its texts lie: ``.extents``)."""
    spec = registry()[name]
    zh = translations() if lang == "zh" and zh is None else (zh or {})

    def translate(english: str) -> str:
        if lang == "en":
            return english
        if (name, english) in zh:
            return zh[(name, english)]
        if missing is not None:
            missing.append((name, english))
        return english

    d = Diagram(name, spec.width, spec.height, translate=translate)
    spec.draw(d)
    return d


def svg_path(name: str, lang: str = "en") -> Path:
    return SVG / lang / f"{name}.svg"


# --------------------------------------------------------------------------- notebook cells
def data_url(svg: str) -> str:
    """The SVG as a ``data:`` URL that Markdown keeps whole (no space, bracket, ``$`` or ``%``
    left unescaped)."""
    return "data:image/svg+xml," + urllib.parse.quote(svg, safe="-_.~!,:;=/'")


def cell_name(cell: dict) -> str | None:
    """The diagram a markdown cell shows, or None."""
    if cell.get("cell_type") != "markdown":
        return None
    name = cell.get("metadata", {}).get("diagram")
    return name if isinstance(name, str) else None


def cell_texts(cell: dict) -> tuple[str | None, str | None]:
    mystnb = cell.get("metadata", {}).get("mystnb", {})
    return mystnb.get("figure", {}).get("caption"), mystnb.get("image", {}).get("alt")


def _alt_markdown(alt: str) -> str:
    return re.sub(r"([\[\]\\])", r"\\\1", " ".join(alt.split()))


def cell_source(name: str, alt: str, svg: str) -> str:
    """The text of a diagram cell: the image, its alt text in the brackets."""
    return f"![{_alt_markdown(alt)}]({data_url(svg)})"


def refresh_cell(cell: dict, lang: str = "en", svg: str | None = None) -> bool:
    """Rewrite a diagram cell's text from its metadata and the current render; True if changed."""
    name = cell_name(cell)
    _, alt = cell_texts(cell)
    svg = svg if svg is not None else svg_path(name, lang).read_text(encoding="utf-8")
    new = cell_source(name, alt or "", svg)
    old = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    if old == new:
        return False
    cell["source"] = [new]
    return True


def localise_cell(cell: dict) -> None:
    """For the Chinese notebooks (``python -m book.i18n generate``): the Chinese SVG, and the alt
    text of the metadata (already translated) in the brackets."""
    refresh_cell(cell, "zh")


def figure_markdown(cell: dict) -> str:
    """The cell as the website shows it: a numbered MyST figure of ``diagrams/NAME.svg`` (beside
    the notebook) with the cell's caption and alt text."""
    name = cell_name(cell)
    caption, alt = cell_texts(cell)
    options = {"alt": " ".join((alt or "").split()), "name": f"diagram-{name}", "figclass": "diagram"}
    lines = [f":::{{figure}} diagrams/{name}.svg", "---"]
    lines += [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in options.items()]
    lines += ["---", " ".join((caption or "").split()), ":::"]
    return "\n".join(lines)


def stage_notebook(nb: dict, folder: Path, lang: str, write) -> set[str]:
    """For the website build: each diagram cell of ``nb`` becomes a figure, and its SVG is
    written (with ``write(path, text)``) to ``folder/diagrams/``. Returns the names shown."""
    shown = set()
    for cell in nb["cells"]:
        name = cell_name(cell)
        if name is None:
            continue
        write(folder / "diagrams" / f"{name}.svg", svg_path(name, lang).read_text(encoding="utf-8"))
        cell["source"] = figure_markdown(cell)
        shown.add(name)
    return shown


def new_cell(name: str, caption: str, alt: str) -> dict:
    """A diagram cell for ``name``, ready to insert into its chapter."""
    cell = {
        "cell_type": "markdown",
        "id": f"diagram-{name.replace('_', '-')}"[:64],
        "metadata": {"diagram": name, "mystnb": {"figure": {"caption": caption}, "image": {"alt": alt}}},
        "source": "",
    }
    refresh_cell(cell)
    return cell


def pending() -> list[dict]:
    """The diagrams drawn for chapters that do not show them yet (phase 2 puts them in)."""
    return json.loads(PENDING.read_text(encoding="utf-8"))["diagrams"] if PENDING.exists() else []


def chapter_cells(nb: dict) -> list[tuple[int, dict]]:
    return [(i, c) for i, c in enumerate(nb["cells"]) if cell_name(c)]
