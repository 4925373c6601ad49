"""Every figure of every chapter has a caption and a text alternative (issue 32).

A chapter cell that draws a figure (an image/png or image/svg+xml output, or a widget whose saved
Output area holds one) carries both texts in its metadata, where MyST-NB reads them for the
website: ``{"mystnb": {"figure": {"caption": ...}, "image": {"alt": ...}}}`` (docs/book.md). The
texts must describe the figure: not a file name or a hash, not a few words, and the alt text must
say more than the caption. One figure per cell, since a cell has one caption. Colour maps named in
the chapters' code are ones that read in greyscale and for colour-blind readers.

Reads the committed notebooks only (no build, no kernel):
``python -m pytest -n 0 tests/test_accessibility.py`` or ``-m accessibility``.
"""

from __future__ import annotations

import json
import re

import pytest

from book import chapters, figures, widgets

pytestmark = pytest.mark.accessibility

PNG = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR"}}
ALT = ("Heatmap of the weights of 6 queries over 6 keys: bright on the diagonal, so each word "
       "attends to itself.")


def _cell(*outputs, caption=None, alt=None):
    meta = {"mystnb": {}}
    if caption is not None:
        meta["mystnb"]["figure"] = {"caption": caption}
    if alt is not None:
        meta["mystnb"]["image"] = {"alt": alt}
    return {"cell_type": "code", "metadata": meta, "source": "", "outputs": list(outputs)}


def test_the_check_accepts_described_figures_and_catches_the_rest():
    check = figures.figure_text_problems
    assert check(_cell(PNG, caption="Self-attention of the first layer.", alt=ALT), {}) == []
    text = {"output_type": "stream", "name": "stdout", "text": "no figure\n"}
    assert check(_cell(text), {}) == []
    assert check(_cell(PNG), {}) == ["its caption is missing", "its alt text is missing"]
    hashed = "../_images/3733f9b4e1c2d5a6b7c8d9e0f1a2b3c4.png"
    assert "file name" in check(_cell(PNG, caption="Self-attention weights.", alt=hashed), {})[0]
    assert "hash" in check(_cell(PNG, caption="Figure 3733f9b4e1c2d5a6", alt=ALT), {})[0]
    assert "too short" in check(_cell(PNG, caption="Self-attention weights.", alt="heatmap"), {})[0]
    assert "repeats the caption" in check(_cell(PNG, caption=ALT, alt=ALT), {})[0]
    svg = {"output_type": "display_data", "metadata": {}, "data": {"image/svg+xml": "<svg/>"}}
    assert "2 figures" in check(_cell(PNG, svg, caption="Two figures here.", alt=ALT), {})[0]


def test_the_check_sees_the_figure_a_widget_saved():
    view = {"output_type": "display_data", "metadata": {},
            "data": {widgets.WIDGET_VIEW: {"model_id": "box"}, "text/plain": "interactive"}}
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_out"]}},
        "out": {"model_name": "OutputModel", "state": {"outputs": [PNG]}},
    }
    nb = {"cells": [_cell(view)],
          "metadata": {"widgets": {widgets.WIDGET_STATE: {"state": state}}}}
    assert figures.notebook_figure_problems(nb) == [
        (0, ["its caption is missing", "its alt text is missing"])
    ]
    del state["out"]["state"]["outputs"][0]  # a widget showing no figure needs no texts
    assert figures.notebook_figure_problems(nb) == []


@pytest.mark.parametrize("path", chapters.chapters(), ids=lambda p: p.stem)
def test_every_figure_has_a_caption_and_alt_text(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems = figures.notebook_figure_problems(nb)
    lines = []
    for index, why in problems:
        source = chapters.cell_source(nb["cells"][index]).strip().splitlines() or [""]
        lines.append(f"  cell {index} ({source[0][:60]!r}): " + "; ".join(why))
    assert not problems, (
        f"{path.name}: {len(problems)} figure cells need a caption and alt text in their metadata "
        '({"mystnb": {"figure": {"caption": ...}, "image": {"alt": ...}}}, see docs/book.md):\n'
        + "\n".join(lines)
    )


# Colour maps whose lightness runs one way (sequential: magnitudes) or out from a light centre
# (diverging: signed values centred on 0), so they read in greyscale and for colour-blind readers.
# Not: jet, rainbow, hsv, Reds-style single hues for weights (d2l's default), spectral, ...
READABLE_CMAPS = {
    "viridis", "plasma", "inferno", "magma", "cividis", "gray", "gray_r", "Greys", "binary",
    "viridis_r", "plasma_r", "inferno_r", "magma_r", "cividis_r", "Greys_r",
    "RdBu", "RdBu_r", "PuOr", "PuOr_r", "BrBG", "BrBG_r", "coolwarm", "coolwarm_r",
}
CMAP_NAME = re.compile(r"""(?:cmap\s*=\s*|get_cmap\(\s*|colormaps\[\s*)["']([\w.]+)["']""")


def test_readable_colour_maps_pass_and_others_are_caught():
    assert CMAP_NAME.findall('imshow(w, cmap="RdBu_r"); plt.get_cmap(\'jet\')') == ["RdBu_r", "jet"]
    assert {"jet", "Reds"}.isdisjoint(READABLE_CMAPS)


@pytest.mark.parametrize("path", chapters.chapters(), ids=lambda p: p.stem)
def test_chapters_draw_with_readable_colour_maps(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = {
        (index, name)
        for index, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code"
        for name in CMAP_NAME.findall(chapters.cell_source(cell))
        if name not in READABLE_CMAPS
    }
    assert not found, (
        f"{path.name}: colour maps that do not read in greyscale or for colour-blind readers "
        f"(cell, map): {sorted(found)}; use viridis for magnitudes, RdBu_r centred on 0 for signed "
        "values"
    )
