"""attnlib.explorer: a widget's every state as data, kept outside the notebooks; book.widgets: the
site's explorer; and that every chapter's explorer has current saved states (``make explorers``)."""
import io
import json
import re
import sys
from pathlib import Path

import ipywidgets as widgets
import matplotlib
import numpy as np
import pytest
from PIL import Image

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnlib import explorer  # noqa: E402
from attnlib.explorer import (  # noqa: E402
    control_grid,
    differences,
    explorable,
    export,
    heatmaps,
    recipe,
    render,
    state,
)
from book import widgets as site  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
TOKENS = ["<bos>", "t", "o", "m"]


def draw(n=3, scale=1.0, unused="a"):
    """A heatmap of n queries by n keys, named by tokens, with a colour bar; prints its total."""
    A = np.arange(n * n, dtype=float).reshape(n, n) * scale / 10
    fig, ax = plt.subplots(figsize=(3, 3))
    shown = ax.imshow(A, vmin=0, vmax=2)
    ax.set(xticks=range(n), xticklabels=TOKENS[:n], yticks=range(n), yticklabels=TOKENS[:n],
           xlabel="keys", ylabel="queries", title=f"n = {n}")
    fig.colorbar(shown, ax=ax, label="attention weight")
    print(f"total {A.sum():.2f}")
    plt.show()


def controls():
    return {
        "n": widgets.IntSlider(value=3, min=2, max=4, description="size"),
        "scale": widgets.SelectionSlider(options=[0.5, 1.0], value=1.0, description="scale"),
        "unused": widgets.Dropdown(options=["a", "b"], value="a", description="unused"),
    }


@pytest.fixture(scope="module")
def exported():
    return export(draw, controls())


def test_control_grid_lists_each_controls_values_labels_and_current_index():
    g = control_grid("w", widgets.FloatLogSlider(value=0.1, base=10, min=-2, max=0, step=0.5,
                                                 readout_format=".3g", description="width"))
    assert g["values"] == [0.01, 0.0316227766017, 0.1, 0.316227766017, 1.0]
    assert g["labels"][2] == "0.1" and g["index"] == 2 and g["label"] == "width"
    g = control_grid("q", widgets.FloatSlider(value=0.3, min=0, max=1, step=0.1))
    assert len(g["values"]) == 11 and g["values"][3] == 0.3 and g["index"] == 3 and g["label"] == "q"
    g = control_grid("k", widgets.ToggleButtons(options=["self", "cross"], value="cross"))
    assert g["kind"] == "select" and g["index"] == 1
    assert control_grid("c", widgets.Checkbox(value=True))["index"] == 1
    assert control_grid("i", widgets.IntSlider(value=24, min=0, max=396, step=12))["values"][-1] == 396
    with pytest.raises(TypeError, match="Text"):
        control_grid("prompt", widgets.Text(value="tom "))


def test_export_covers_every_state_and_stores_each_distinct_view_and_image_once(exported):
    data, images = exported
    assert len(data["states"]) == 3 * 2 * 2
    assert len(data["views"]) == 3 * 2  # 'unused' changes nothing: its two values share a view
    assert len(images) == 6
    assert plt.get_fignums() == []  # every figure drawn was closed
    a, b = state(data, n=2, scale=0.5, unused="a"), state(data, n=4, scale=1.0, unused="b")
    assert a != b and state(data, n=2, scale=0.5, unused="b") == a
    assert b["text"] == "total 12.00\n"
    image = images[b["figures"][0]["img"]]
    assert image[:4] == b"RIFF" and image[8:12] == b"WEBP"
    with pytest.raises(ValueError, match="scale=0.7 is not one of"):
        state(data, n=2, scale=0.7, unused="a")


def test_a_heatmap_says_where_it_lies_its_values_tokens_and_labels(exported):
    heat = state(exported[0], n=3, scale=1.0, unused="a")["figures"][0]["heat"]
    assert len(heat) == 1  # the colour bar is not a heatmap
    h = heat[0]
    assert h["n"] == [3, 3] and h["v"][5] == 0.5
    assert h["rows"] == TOKENS[:3] and h["cols"] == TOKENS[:3]
    assert h["lab"] == ["queries", "keys", "attention weight"] and h["title"] == "n = 3"
    x0, y0, x1, y1 = h["box"]
    assert 0 < x0 < x1 < 1 and 0 < y0 < y1 < 1  # inside the image, from its top left


def test_the_box_is_where_the_heatmap_is_drawn():
    """A heatmap filling the right half of a figure: its box is that half."""
    fig = plt.figure(figsize=(4, 2))
    ax = fig.add_axes([0.5, 0, 0.5, 1])
    ax.imshow(np.zeros((2, 2)), aspect="auto")
    fig.canvas.draw()
    assert heatmaps(fig)[0]["box"] == [0.5, 0, 1, 1]
    plt.close(fig)


def test_too_many_states_is_refused_with_the_sizes():
    with pytest.raises(ValueError, match="n 3 x scale 2 x unused 2"):
        export(draw, controls(), max_states=10)
    with pytest.raises(ValueError, match="n 3 x scale 2 x unused 2"):
        explorable(draw, name="big", max_states=10, **controls())


def test_render_captures_text_and_figures_without_showing_them():
    drawn = render(draw, {"n": 2})
    assert drawn["text"] == "total 0.60\n" and len(drawn["figures"]) == 1
    show, plt.show = plt.show, lambda: None  # the PNG JupyterLab shows (tight box): the same pixels
    try:
        draw(n=2)
    finally:
        plt.show = show
    from IPython.core.pylabtools import print_figure

    png = print_figure(plt.gcf(), "png", bbox_inches="tight")
    plt.close("all")
    own = np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))
    kept = np.asarray(Image.open(io.BytesIO(drawn["figures"][0]["img"])).convert("RGBA"))
    assert np.array_equal(own, kept)
    assert drawn["figures"][0]["about"] == "n = 2"
    assert [drawn["figures"][0]["h"], drawn["figures"][0]["w"]] == list(own.shape[:2])


def test_each_heatmap_cell_lies_where_its_box_says_in_the_cropped_image():
    """Cells of distinct colours: the pixel at each cell's centre, by the box, has its colour."""
    def cells():
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.imshow(np.arange(6).reshape(2, 3), cmap="viridis", vmin=0, vmax=5)
        ax.set(title="six cells", xlabel="keys", ylabel="queries")
        plt.show()

    f = render(cells, {})["figures"][0]
    pixels = np.asarray(Image.open(io.BytesIO(f["img"])).convert("RGB")).astype(int)
    h = f["heat"][0]
    x0, y0, x1, y1 = h["box"]
    colours = plt.get_cmap("viridis")(np.arange(6) / 5)[:, :3] * 255
    for r in range(2):
        for c in range(3):
            x = (x0 + (c + 0.5) * (x1 - x0) / 3) * f["w"]
            y = (y0 + (r + 0.5) * (y1 - y0) / 2) * f["h"]
            assert np.abs(pixels[int(y), int(x)] - colours[r * 3 + c]).max() <= 2, (r, c)


def test_what_the_function_returns_is_shown_as_ipywidgets_shows_it():
    def summary(k=1):
        print("drawn")
        return {"k": k, "twice": 2 * k}

    drawn = render(summary, {"k": 3})
    assert drawn == {"figures": [], "text": "drawn\n{'k': 3, 'twice': 6}\n"}


def test_differences_allow_rounding_but_not_a_changed_weight(exported):
    kept = state(exported[0], n=3, scale=1.0, unused="a")
    fresh = json.loads(json.dumps(kept))
    fresh["figures"][0]["heat"][0]["v"][4] += 0.001  # another CPU's last bits, after rounding
    assert differences(kept, fresh) == []
    fresh["figures"][0]["heat"][0]["v"][4] += 0.05
    assert differences(kept, fresh) == ["figure 0, heatmap 0: values differ by up to 0.051"]
    assert differences(kept, fresh, atol=None) == []  # values not compared
    fresh["text"] = "total 9\n"
    assert len(differences(kept, fresh, atol=None)) == 1
    assert differences(kept, fresh, atol=None, text=False) == []


def test_structure_only_sees_a_lost_heatmap_but_not_another_models_tokens(exported):
    """A model trained in the notebook: another machine trains another translation, so only the
    figures' structure is compared."""
    kept = state(exported[0], n=3, scale=1.0, unused="a")
    fresh = json.loads(json.dumps(kept))
    heat = fresh["figures"][0]["heat"][0]
    heat["v"] = [v + 0.3 for v in heat["v"]]
    heat["rows"], fresh["figures"][0]["about"], fresh["text"] = ["a", "b", "c"], "n = 9", "other\n"
    assert len(differences(kept, fresh)) == 3  # title, tokens (values then skipped), text
    assert differences(kept, fresh, structure_only=True) == []
    fresh["figures"][0]["heat"] = []
    assert differences(kept, fresh, structure_only=True) == ["figure 0: 0 heatmaps, saved 1"]


def test_the_text_alternative_and_labels_are_plain_words_not_mathtext():
    def maths():
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.imshow(np.eye(2))
        ax.set(title=r"largest $|\mathbf{M}_k \mathbf{p}_p - \mathbf{p}_{p+k}|$", xlabel="$k$",
               ylabel="$q$ (queries)")
        plt.show()

    f = render(maths, {})["figures"][0]
    assert f["about"] == "largest |M_k p_p - p_(p+k)|"
    assert f["heat"][0]["lab"][:2] == ["q (queries)", "k"]


# --------------------------------------------------------------------------- states outside
def test_in_a_reader_kernel_explorable_is_the_widget_with_a_small_payload(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(explorer.ENV, raising=False)
    monkeypatch.setenv(explorer.CHAPTER_ENV, "99_test")
    monkeypatch.setenv(explorer.STATES_ENV, str(tmp_path / "none"))  # no such folder (Colab, say)
    monkeypatch.chdir(tmp_path)
    explored = explorable(draw, name="grid", **controls())
    assert isinstance(explored.ui, widgets.interactive)
    assert set(explored.payload) == {"chapter", "name", "controls"}  # no states, no images
    assert explored.payload["chapter"] == "99_test" and len(explored.payload["controls"]) == 3
    assert len(json.dumps(explored.payload)) < 1000
    assert not list(tmp_path.iterdir())  # nothing drawn beyond the widget's own view
    assert explored.verify({"n": 2, "scale": 0.5, "unused": "a"}) == []  # no saved states: nothing to compare
    assert not list(tmp_path.iterdir())
    monkeypatch.delenv(explorer.STATES_ENV)  # attnlib from its wheel: no variable at all
    assert explored.verify({"n": 2, "scale": 0.5, "unused": "a"}) == []
    plt.close("all")


@pytest.fixture
def drawn_states(monkeypatch, tmp_path):
    """What `make explorers` does for one explorer: the states drawn into a folder."""
    folder = tmp_path / "explorers"
    monkeypatch.setenv(explorer.ENV, str(folder))
    monkeypatch.setenv(explorer.CHAPTER_ENV, "99_test")
    explored = explorable(draw, name="grid", **controls())
    plt.close("all")
    return folder, explored


def test_the_executor_gets_every_state_in_the_folder_and_each_image_once(drawn_states):
    folder, explored = drawn_states
    data = json.loads((folder / "99_test" / "grid.json").read_text())
    assert data["name"] == "grid" and data["chapter"] == "99_test" and data["recipe"] is None
    assert data["controls"] == explored.payload["controls"] and len(data["states"]) == 12
    assert sorted(p.stem for p in (folder / "img").glob("*.webp")) == sorted(
        {f["img"] for v in data["views"] for f in v["figures"]})
    a, b = {"n": 2, "scale": 0.5, "unused": "a"}, {"n": 4, "scale": 1.0, "unused": "b"}
    assert explored.verify(a, b) == []
    assert explored.verify(a, {"n": 2, "scale": 0.5, "unused": "b"}) == [
        "the settings ({'n': 2, 'scale': 0.5, 'unused': 'a'}, {'n': 2, 'scale': 0.5, 'unused': 'b'}) "
        "share one saved state"]


def test_the_hidden_check_sees_saved_states_that_drifted(drawn_states, monkeypatch):
    folder, explored = drawn_states
    monkeypatch.delenv(explorer.ENV)  # a reader's kernel: the states read where the book's tools say
    monkeypatch.setenv(explorer.STATES_ENV, str(folder))
    path = folder / "99_test" / "grid.json"
    data = json.loads(path.read_text())
    view = state(data, n=4, scale=0.5, unused="b")
    view["figures"][0]["heat"][0]["v"][0] = 0.9
    view["text"] = "total 0\n"
    path.write_text(json.dumps(data))
    problems = explored.verify({"n": 4, "scale": 0.5, "unused": "b"}, {"n": 2, "scale": 1.0, "unused": "a"})
    assert len(problems) == 2 and "values differ by up to 0.9" in problems[0] and "printed" in problems[1]


def test_the_recipe_ignores_comments_and_later_cells_but_not_code():
    cells = [{"cell_type": "markdown", "source": "# Title"},
             {"cell_type": "code", "source": "x = 1  # one\n\n\ny = 2"},
             {"cell_type": "code", "source": ["ui = explorable(f, name='a')\n"]},
             {"cell_type": "code", "source": "z = 3"}]
    base = recipe(cells, 2)
    edited = json.loads(json.dumps(cells))
    edited[1]["source"] = "x = 1  # the number one\ny = 2"
    edited[0]["source"] = "# Another title"
    edited[3]["source"] = "z = 4"
    assert recipe(edited, 2) == base
    edited[1]["source"] = "x = 2\ny = 2"
    assert recipe(edited, 2) != base


# --------------------------------------------------------------------------- the site's side
def notebook_with(payload: dict, code: str = "explored = explorable(draw, name='grid')") -> dict:
    out = {"output_type": "display_data", "metadata": {},
           "data": {site.WIDGET_VIEW: {"model_id": "m"}, site.EXPLORER: payload, "text/plain": "ui"}}
    return {"metadata": {}, "cells": [{"cell_type": "code", "source": "x = 1"},
                                      {"cell_type": "code", "outputs": [out], "source": code}]}


def stamped(folder: Path, nb: dict) -> None:
    """Stamp the states as the executor does after the run."""
    path = folder / "99_test" / "grid.json"
    data = json.loads(path.read_text())
    data["recipe"] = recipe(nb["cells"], 1)
    path.write_text(json.dumps(data))


def test_the_site_gets_labelled_controls_the_first_figure_and_every_image(drawn_states):
    folder, explored = drawn_states
    nb = notebook_with(explored.payload)
    stamped(folder, nb)
    data, why = site.saved_states(nb, 1, explored.payload, "99_test", folder)
    assert why == ""
    saved = {}
    zh = {"size": "大小", "Showing {settings}.": "当前显示：{settings}。"}
    outputs = site.explorer(data, saved.__setitem__, lambda e: zh.get(e, e), states=folder)
    assert set(saved) == {p.name for p in (folder / "img").glob("*.webp")}
    box = outputs[0]["data"]["text/html"]
    assert '<label class="explorer-control"><span>大小</span><input type="range"' in box
    assert 'aria-valuetext="3"' in box and "<select" in box and "当前显示：大小 = 3" in box
    payload = json.loads(box.split('class="explorer-data">')[1].split("</script>")[0])
    assert payload["states"] == data["states"] and payload["base"] == "../_static/explorer/"
    assert [c["name"] for c in payload["controls"]] == ["n", "scale", "unused"]
    first = state(data, n=3, scale=1.0, unused="a")
    shown = Image.open(io.BytesIO(__import__("base64").b64decode(outputs[1]["data"]["image/png"])))
    kept = Image.open(folder / "img" / f"{first['figures'][0]['img']}.webp")
    assert shown.format == "PNG" and np.array_equal(np.asarray(shown), np.asarray(kept))
    assert "total 3.60" in outputs[-1]["data"]["text/html"]


def test_missing_or_stale_states_become_a_snapshot_and_the_build_says_so(drawn_states, capsys):
    folder, explored = drawn_states
    nb = notebook_with(explored.payload)
    stamped(folder, nb)
    fresh = json.loads(json.dumps(nb))
    assert site.static_widgets(fresh, save=lambda name, data: None, chapter="99_test", states=folder) == 1
    assert "explorer-data" in fresh["cells"][1]["outputs"][0]["data"]["text/html"]
    assert "WARNING" not in capsys.readouterr().err
    cases = {
        "stale states: the chapter's code": notebook_with(
            explored.payload, "explored = explorable(draw, name='grid', n=1)"),
        "stale states: drawn for other controls": notebook_with(
            explored.payload | {"controls": explored.payload["controls"][:2]}),
        "no saved states": notebook_with(explored.payload | {"name": "other"}),
    }
    for why, nb in cases.items():
        assert site.static_widgets(nb, save=lambda name, data: None, chapter="99_test", states=folder) == 1
        html = nb["cells"][1]["outputs"][0]["data"]["text/html"]
        assert "explorer-data" not in html and "widget-snapshot" in html
        err = capsys.readouterr().err
        assert "WARNING" in err and why in err and "make explorers NB=notebooks/99_test.ipynb" in err, err


# --------------------------------------------------------------------------- the book's explorers
def explorer_cells(nb: dict) -> list[tuple[int, dict]]:
    return [(i, c) for i, c in enumerate(nb["cells"])
            if c["cell_type"] == "code" and "explorable(" in "".join(c["source"])]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem[:2] for p in CHAPTERS])
def test_every_explorer_has_current_saved_states(chapter):
    """Each explorable cell shows its payload, and book/explorers/ holds its states drawn from the
    notebook's code as it is now (the recipe) for the widget's controls, with every image. When
    this fails: `make explorers NB=notebooks/<chapter>.ipynb` (docs/book.md)."""
    nb = json.loads(chapter.read_text(encoding="utf-8"))
    for index, cell in explorer_cells(nb):
        payloads = [o["data"][site.EXPLORER] for o in cell.get("outputs", [])
                    if site.EXPLORER in o.get("data", {})]
        assert len(payloads) == 1, \
            f"{chapter.name}: cell {cell.get('id')} was not run since it became an explorer"
        data, why = site.saved_states(nb, index, payloads[0], chapter.stem)
        assert data is not None, (f"{chapter.stem}/{payloads[0]['name']}: {why}; run "
                                  f"`make explorers NB=notebooks/{chapter.name}`")
        assert data["chapter"] == chapter.stem and data["name"] == payloads[0]["name"]
        assert len(data["states"]) == int(np.prod([len(c["values"]) for c in data["controls"]]))
        checks = [c for c in nb["cells"][index + 1:index + 2]
                  if "remove-cell" in c["metadata"].get("tags", [])]
        assert checks and ".verify(" in "".join(checks[0]["source"]), \
            f"{chapter.name}: the explorer cell {cell.get('id')} needs a hidden check after it"


def test_explorer_names_are_unique_and_no_states_are_left_over():
    names = []
    for chapter in CHAPTERS:
        nb = json.loads(chapter.read_text(encoding="utf-8"))
        for _, cell in explorer_cells(nb):
            names += re.findall(r'name="([\w-]+)"', "".join(cell["source"]))
    assert len(names) == len(set(names)), names
    kept = {p.stem for p in site.STATES.glob("*/*.json")}
    assert kept <= set(names), f"states of explorers that no longer exist: {kept - set(names)}"


def test_the_executor_stamps_the_recipe_and_drops_what_no_explorer_uses(drawn_states, tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import execute
    finally:
        sys.path.pop(0)
    import nbformat

    folder, explored = drawn_states
    nb = nbformat.from_dict(notebook_with(explored.payload) | {"nbformat": 4, "nbformat_minor": 5})
    (folder / "img" / "0123456789abcdef.webp").write_bytes(b"old")
    (folder / "99_test" / "gone.json").write_text("{}")
    written = execute.stamp_states(nb, "99_test", folder, began=0.0)
    assert written == [folder / "99_test" / "grid.json"]
    assert json.loads(written[0].read_text())["recipe"] == recipe(nb["cells"], 1)
    assert not (folder / "99_test" / "gone.json").exists()
    assert not (folder / "img" / "0123456789abcdef.webp").exists()
    with pytest.raises(RuntimeError, match="wrote no states in this run"):
        execute.stamp_states(nb, "99_test", folder, began=2e9)


def test_writing_back_some_cells_keeps_the_widget_models_the_other_cells_show():
    """`scripts/execute.py --cells` keeps the old outputs of the cells it does not write back: a
    widget view among them names a model of the old run, which must stay in the saved state (or
    JupyterLab shows "model not found" on open); models nothing names any more are dropped."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import execute
    finally:
        sys.path.pop(0)
    import nbformat

    def notebook(view, models):
        cell = nbformat.v4.new_code_cell("ui", outputs=[nbformat.v4.new_output(
            "display_data", data={execute.WIDGET_VIEW: {"model_id": view, "version_major": 2}})])
        nb = nbformat.v4.new_notebook(cells=[cell])
        nb.metadata["widgets"] = {execute.WIDGET_STATE: {"state": models}}
        return nb

    old = notebook("a", {"a": {"state": {"children": ["IPY_MODEL_b"]}}, "b": {"state": {}}, "x": {}})
    new = notebook("a", {"c": {"state": {"layout": "IPY_MODEL_d"}}, "d": {"state": {}}})  # a new run
    execute.keep_widget_models(new, old)  # the view kept its old output, so it names model "a"
    assert set(new.metadata["widgets"][execute.WIDGET_STATE]["state"]) == {"a", "b"}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem[:2] for p in CHAPTERS])
def test_every_saved_widget_view_names_a_saved_model(chapter):
    """A chapter opens with its widgets drawn only when each view's model is in the notebook's
    saved widget state (JupyterLab's check of the same, on open, is tests/test_lab.py's)."""
    nb = json.loads(chapter.read_text(encoding="utf-8"))
    state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    views = [o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] for c in nb["cells"]
             for o in c.get("outputs", []) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views and not [v for v in views if v not in state.get("state", {})], views
