"""What a chapter figure must carry: a caption and a text alternative that describe it.

A figure's caption and text alternative live in its cell's metadata, where MyST-NB reads them:
``{"mystnb": {"figure": {"caption": ...}, "image": {"alt": ...}}}`` (docs/book.md). The build
names the cells that lack them; tests/test_accessibility.py fails on them."""

from __future__ import annotations

import re

from book.widgets import WIDGET_STATE, WIDGET_VIEW, widget_tree

IMAGE_MIME = ("image/png", "image/svg+xml", "image/jpeg", "image/gif")
MIN_CAPTION, MIN_ALT = 15, 40  # characters: shorter texts cannot say what a figure shows


def cell_figures(cell: dict, state: dict) -> int:
    """How many figures a code cell shows: its image outputs, and the images held by the Output
    areas of the widgets it displays (``state``: the notebook's saved widget state)."""
    count = 0
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        count += any(m in data for m in IMAGE_MIME)
        view = data.get(WIDGET_VIEW)
        if view is not None:
            held = widget_tree(state, view.get("model_id", ""))["outputs"]
            count += sum(any(m in o.get("data", {}) for m in IMAGE_MIME) for o in held)
    return count


def text_problem(text, minimum: int) -> str | None:
    """Why ``text`` cannot serve as a figure's caption or text alternative; None if it can."""
    if not isinstance(text, str) or not text.strip():
        return "is missing"
    text = text.strip()
    if re.search(r"\.(?:png|svg|jpe?g|gif|webp|pdf)\b|_images/", text, flags=re.I):
        return f"looks like a file name: {text!r}"
    if any(re.search(r"\d", run) and re.search(r"[a-f]", run, flags=re.I)
           for run in re.findall(r"[0-9a-f]{12,}", text, flags=re.I)):
        return f"looks like a hash: {text!r}"
    if len(text) < minimum:
        return f"is too short to describe a figure ({len(text)} characters, at least {minimum})"
    return None


def figure_text_problems(cell: dict, state: dict) -> list[str]:
    """What a code cell that shows a figure lacks: one figure, a caption, a text alternative."""
    count = cell_figures(cell, state) if cell.get("cell_type") == "code" else 0
    if not count:
        return []
    meta = cell.get("metadata", {}).get("mystnb", {})
    meta = meta if isinstance(meta, dict) else {}
    figure, image = meta.get("figure", {}), meta.get("image", {})
    caption = figure.get("caption") if isinstance(figure, dict) else None
    alt = image.get("alt") if isinstance(image, dict) else None
    problems = []
    if count > 1:
        problems.append(f"shows {count} figures, which would share one caption: one per cell")
    for what, text, minimum in (("caption", caption, MIN_CAPTION), ("alt text", alt, MIN_ALT)):
        why = text_problem(text, minimum)
        if why:
            problems.append(f"its {what} {why}")
    if alt and caption and alt.strip() == caption.strip():
        problems.append("its alt text only repeats the caption: say what the figure shows")
    return problems


def notebook_figure_problems(nb: dict) -> list[tuple[int, list[str]]]:
    """(cell index, problems) for each cell of ``nb`` whose figure lacks a caption or alt text."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    found = [(i, figure_text_problems(cell, state)) for i, cell in enumerate(nb["cells"])]
    return [(i, problems) for i, problems in found if problems]
