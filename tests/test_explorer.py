"""attnlib.explorer: a widget's every state as data, and book.widgets: the site's explorer."""
import base64
import io
import json

import ipywidgets as widgets
import matplotlib
import numpy as np
import pytest
from PIL import Image

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnlib.explorer import control_grid, export, heatmaps, render, same_view, state  # noqa: E402
from book import widgets as site  # noqa: E402

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


CONTROLS = {
    "n": widgets.IntSlider(value=3, min=2, max=4, description="size"),
    "scale": widgets.SelectionSlider(options=[0.5, 1.0], value=1.0, description="scale"),
    "unused": widgets.Dropdown(options=["a", "b"], value="a", description="unused"),
}


@pytest.fixture(scope="module")
def data():
    return export(draw, CONTROLS)


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


def test_export_covers_every_state_and_stores_each_distinct_view_once(data):
    assert len(data["states"]) == 3 * 2 * 2
    assert len(data["views"]) == 3 * 2  # 'unused' changes nothing: its two values share a view
    assert len(data["images"]) == 6
    assert plt.get_fignums() == []  # every figure drawn was closed
    a, b = state(data, n=2, scale=0.5, unused="a"), state(data, n=4, scale=1.0, unused="b")
    assert a != b and state(data, n=2, scale=0.5, unused="b") == a
    assert b["text"] == "total 12.00\n"
    image = base64.b64decode(data["images"][b["figures"][0]["img"]])
    assert image[:4] == b"RIFF" and image[8:12] == b"WEBP"


def test_a_heatmap_says_where_it_lies_its_values_tokens_and_labels(data):
    heat = state(data, n=3, scale=1.0, unused="a")["figures"][0]["heat"]
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


def test_same_view_compares_with_a_fresh_drawing(data):
    assert same_view(data, draw, n=4, scale=0.5, unused="b")
    drifted = json.loads(json.dumps(data))
    view = state(drifted, n=4, scale=0.5, unused="b")
    view["figures"][0]["heat"][0]["v"][0] = 9
    assert not same_view(drifted, draw, n=4, scale=0.5, unused="b")


def test_too_many_states_is_refused_with_the_sizes():
    with pytest.raises(ValueError, match="n 3 x scale 2 x unused 2"):
        export(draw, CONTROLS, max_states=10)


def test_render_captures_text_and_figures_without_showing_them():
    drawn = render(draw, {"n": 2})
    assert drawn["text"] == "total 0.60\n" and len(drawn["figures"]) == 1
    show, plt.show = plt.show, lambda: None  # the same drawing as matplotlib's PNG: the same pixels
    try:
        draw(n=2)
    finally:
        plt.show = show
    buf = io.BytesIO()
    plt.gcf().savefig(buf, format="png", facecolor="white")
    plt.close("all")
    own = np.asarray(Image.open(buf).convert("RGBA"))
    kept = np.asarray(Image.open(io.BytesIO(drawn["figures"][0]["img"])).convert("RGBA"))
    assert np.array_equal(own, kept)
    assert drawn["figures"][0]["about"] == "n = 2"


def test_the_site_gets_labelled_controls_the_first_figure_and_every_image(data):
    saved = {}
    zh = {"size": "大小", "Showing {settings}.": "当前显示：{settings}。"}
    outputs = site.explorer(data, saved.__setitem__, lambda e: zh.get(e, e))
    assert set(saved) == {f"{k}.webp" for k in data["images"]}
    box = outputs[0]["data"]["text/html"]
    assert '<label class="explorer-control"><span>大小</span><input type="range"' in box
    assert 'aria-valuetext="3"' in box and "<select" in box and "当前显示：大小 = 3" in box
    payload = json.loads(box.split('class="explorer-data">')[1].split("</script>")[0])
    assert payload["states"] == data["states"] and payload["base"] == "../_static/explorer/"
    first = state(data, n=3, scale=1.0, unused="a")
    shown = Image.open(io.BytesIO(base64.b64decode(outputs[1]["data"]["image/png"])))
    kept = Image.open(io.BytesIO(base64.b64decode(data["images"][first["figures"][0]["img"]])))
    assert shown.format == "PNG" and np.array_equal(np.asarray(shown), np.asarray(kept))
    assert "total 3.60" in outputs[-1]["data"]["text/html"]


def test_a_notebook_explorer_view_becomes_an_explorer_only_when_images_can_be_saved(data):
    out = {"output_type": "display_data", "metadata": {},
           "data": {site.WIDGET_VIEW: {"model_id": "m"}, site.EXPLORER: data, "text/plain": "ui"}}
    nb = {"metadata": {}, "cells": [{"cell_type": "code", "outputs": [out], "source": ""}]}
    site.static_widgets(json.loads(json.dumps(nb)))  # no place for images: a snapshot's note
    nb2 = json.loads(json.dumps(nb))
    assert site.static_widgets(nb2, save=lambda name, data: None) == 1
    assert "explorer-data" in nb2["cells"][0]["outputs"][0]["data"]["text/html"]


def test_what_the_function_returns_is_shown_as_ipywidgets_shows_it():
    def summary(k=1):
        print("drawn")
        return {"k": k, "twice": 2 * k}

    drawn = render(summary, {"k": 3})
    assert drawn == {"figures": [], "text": "drawn\n{'k': 3, 'twice': 6}\n"}
