"""Saved ipywidgets views on the website: explorers that work with no kernel, or static snapshots.

A widget cell's output is a view of a model in the notebook's saved widget state. The site loads
no widget JavaScript. A view made by ``attnlib.explorer.explorable`` carries a small payload
(:data:`EXPLORER`: which explorer, its controls) naming its saved states, ``book/explorers/
<chapter>/<name>.json`` with the images ``book/explorers/img/<key>.webp`` (``make explorers``
draws them). It becomes the same controls in HTML, the first state's figures (the cell's figure,
with its caption and alt text) and every state's images in ``_static/explorer/`` (lossless WebP),
which ``book/_js/explorer.js`` swaps in as the controls move. States that are missing, or stale
(the notebook's code up to the widget changed since they were drawn, or their controls are not
the widget's), are not shown: the view falls back to a static snapshot, and the build says so.
Any other view becomes a note naming the controls' values, followed by what the widget's Output
areas held when the notebook was executed (its figure)."""

from __future__ import annotations

import base64
import html
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from book import ROOT

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
EXPLORER = "application/vnd.attnbook.explorer+json"  # attnlib.explorer.MIME
EXPLORER_DIR = "explorer"  # the states' images: _static/explorer/<key>.webp
STATES = ROOT / "book" / "explorers"  # <chapter>/<name>.json, img/<key>.webp (docs/book.md)

# The snapshot's note, in English; the Chinese site passes ``say`` (book.interface) to translate it.
SNAPSHOT_AT = ("<em>Static snapshot of an interactive widget</em> at {settings}. Run the notebook "
               "(<code>make lab</code>) to move the controls.")
SNAPSHOT = ("<em>Static snapshot of an interactive widget</em>. Run the notebook "
            "(<code>make lab</code>) to move the controls.")
WIDGET_AT = ("<em>An interactive widget</em> at {settings}. Run the notebook (<code>make lab</code>) "
             "to move the controls.")
WIDGET = "<em>An interactive widget</em>. Run the notebook (<code>make lab</code>) to move the controls."
NOTES = (SNAPSHOT_AT, SNAPSHOT, WIDGET_AT, WIDGET)


def widget_tree(state: dict, model_id: str, seen: set | None = None) -> dict:
    """Walk a widget tree. Returns the control settings ('description = value'), the texts of
    label/HTML widgets, the outputs held by Output widgets and a progress bar's 'value/max'."""
    found = {"controls": [], "texts": [], "outputs": [], "progress": ""}
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state:
        return found
    seen.add(model_id)
    name = state[model_id].get("model_name", "")
    st = state[model_id].get("state", {})
    if name == "OutputModel":
        found["outputs"] = [
            o for o in st.get("outputs", []) if WIDGET_VIEW not in o.get("data", {})
        ]
    elif name in ("LabelModel", "HTMLModel", "HTMLMathModel"):
        text = html.unescape(re.sub(r"<[^>]+>", "", str(st.get("value", "")))).strip()
        found["texts"] = [text] if text else []
    elif name in ("FloatProgressModel", "IntProgressModel"):
        found["progress"] = f"{st.get('value', 0):g}/{st.get('max', 0):g}"
    elif "_options_labels" in st and st.get("index") is not None:
        index, labels = st["index"], st["_options_labels"]
        value = ", ".join(labels[i] for i in index) if isinstance(index, list) else labels[index]
        found["controls"] = [f"{st.get('description') or 'choice'} = {value}"]
    elif "value" in st:
        value = st["value"]
        value = f"{value:.4g}" if isinstance(value, float) else value
        found["controls"] = [f"{st.get('description') or name.removesuffix('Model')} = {value}"]
    for child in st.get("children", []):
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            sub = widget_tree(state, child.removeprefix("IPY_MODEL_"), seen)
            for key in ("controls", "texts", "outputs"):
                found[key] = found[key] + sub[key]
            found["progress"] = found["progress"] or sub["progress"]
    return found


def snapshot(tree: dict, say: Callable[[str], str] = str) -> list[dict]:
    """Static outputs standing in for one widget view; ``say`` translates the note."""
    if tree["progress"]:  # e.g. tqdm.auto's bar: its final text, as tqdm prints it in a terminal
        text = " ".join(tree["texts"]) or tree["progress"]
        return [{"output_type": "stream", "name": "stdout", "text": text + "\n"}]
    settings = "; ".join(html.escape(c) for c in tree["controls"])
    if tree["outputs"]:
        note = SNAPSHOT_AT if settings else SNAPSHOT
    else:
        note = WIDGET_AT if settings else WIDGET
    note = f'<p class="widget-snapshot">{say(note).format(settings=settings)}</p>'
    return [
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": note}},
        *tree["outputs"],
    ]


# The explorer's own words (the Chinese site translates them; book/interface.py lists them).
EXPLORER_WORDS = (
    "Interactive figure: move the controls to redraw it.",
    "Showing {settings}.",
    "{settings}: {about}",
    "Choose a {control}",
    # what pointing at a heatmap's cell says when its axes have no labels of their own
    "row",
    "column",
    "value",
    # the names of a heatmap's axes that hold queries and keys, in every chapter
    "query",
    "key",
    # the caption after the controls moved: {settings} is the setting and the figure's titles
    "Shown: {settings}.",
    # between two settings in the status line and the caption ("sentence = go .; head = 1")
    "; ",
    # the button that enlarges a figure whose heatmap cells are too small to point at
    "Enlarge the figure",
)


# An axis that holds queries or keys ("Queries", "keys; cache keeps 12"): explorer.js names it
# with the words "query" and "key"; any other axis label is translated as it is.
QUERY_OR_KEY_AXIS = re.compile(r"(?i)^(quer(y|ies)|keys?)\b")


def axis_labels(data: dict) -> list[str]:
    """The labels of the heatmaps' axes (and colour bars) in an explorer's saved states that name
    what the readout says, other than queries and keys (what the Chinese site translates)."""
    return list(dict.fromkeys(
        label.strip() for v in data["views"] for f in v["figures"] for h in f.get("heat") or []
        for label in h["lab"] if label.strip() and not QUERY_OR_KEY_AXIS.match(label.strip())))


def sentence(template: str, settings: str) -> str:
    """``template`` with ``{settings}``; no second full stop after a setting that ends in one
    ("sentence = go ." is not followed by "."; explorer.js does the same)."""
    text = template.format(settings=settings)
    if settings.endswith((".", "。")) and template.endswith(("{settings}.", "{settings}。")):
        text = text[:-1]
    return text


# What a widget's function returned, as Python prints it (a tensor, a record): the figure already
# shows it, and its repr is not what a reader reads.
RAW_REPR = re.compile(r"^(tensor\(|[A-Z]\w*\(\w+=)")


def reader_text(text: str) -> str:
    """The text under an explorer's figure: what the function printed, without a raw repr."""
    return "" if RAW_REPR.match(text.strip()) else text


def png(webp: bytes) -> str:
    """A lossless WebP image as a base64 PNG of the same pixels."""
    import io

    from PIL import Image

    out = io.BytesIO()
    with Image.open(io.BytesIO(webp)) as image:
        image.save(out, format="png")
    return base64.b64encode(out.getvalue()).decode("ascii")


def explorer_labels(data: dict) -> list[str]:
    """The labels of an explorer's controls (what the Chinese site translates)."""
    return [c["label"] for c in data["controls"]]


def saved_states(nb: dict, index: int, payload: dict, chapter: str,
                 states: Path = STATES) -> tuple[dict | None, str]:
    """The saved states of the explorer whose payload is in cell ``index`` of ``nb`` (chapter
    ``chapter``), or None and why they cannot be shown: missing, drawn from other code (their
    recipe is not the notebook's now) or for other controls."""
    from attnlib.explorer import recipe

    path = states / chapter / f"{payload['name']}.json"
    if not path.exists():
        return None, f"no saved states ({path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})"
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("recipe") != recipe(nb["cells"], index):
        return None, "stale states: the chapter's code up to the widget changed since they were drawn"
    if data["controls"] != payload["controls"]:
        return None, "stale states: drawn for other controls than the widget's"
    missing = [f["img"] for v in data["views"] for f in v["figures"]
               if not (states / "img" / f"{f['img']}.webp").exists()]
    if missing:
        return None, f"{len(missing)} images missing from {states / 'img'}"
    return data, ""


def explorer(data: dict, save: Callable[[str, bytes], None], say: Callable[[str], str] = str,
             static: str = "../_static/", states: Path = STATES) -> list[dict]:
    """The outputs standing in for one explorer with the saved states ``data``: its controls
    (HTML), the first state's figures (images, so the cell's caption and alt text make them a
    figure) and printed text; every state's images (``states/img/``) are passed to ``save(file
    name, bytes)`` for ``_static/explorer/``."""
    def image(key: str) -> bytes:
        return (states / "img" / f"{key}.webp").read_bytes()

    for key in dict.fromkeys(f["img"] for v in data["views"] for f in v["figures"]):
        save(f"{key}.webp", image(key))
    controls = [dict(c, label=say(c["label"])) for c in data["controls"]]
    index = 0
    for c in controls:
        index = index * len(c["values"]) + c["index"]
    views = [dict(v, text=reader_text(v["text"])) for v in data["views"]]
    first = views[data["states"][index]]
    words = {w: say(w) for w in (*EXPLORER_WORDS, *axis_labels(data))}
    payload = {"controls": [{k: c[k] for k in ("name", "label", "kind", "labels", "index")}
                            for c in controls],
               "states": data["states"], "first": index, "views": views, "words": words,
               "base": static + EXPLORER_DIR + "/", "chapter": data["chapter"], "name": data["name"]}
    parts = []
    for i, c in enumerate(controls):
        name = html.escape(c["label"])
        labels = [html.escape(str(label)) for label in c["labels"]]
        if c["kind"] == "select":
            options = "".join(f'<option value="{j}"{" selected" * (j == c["index"])}>{label}</option>'
                              for j, label in enumerate(labels))
            field = f'<select data-control="{i}">{options}</select>'
        elif c["kind"] == "checkbox":
            field = f'<input type="checkbox" data-control="{i}"{" checked" * c["index"]}>'
        else:
            field = (f'<input type="range" data-control="{i}" min="0" max="{len(labels) - 1}" '
                     f'step="1" value="{c["index"]}" aria-valuetext="{labels[c["index"]]}">'
                     f'<output aria-hidden="true">{labels[c["index"]]}</output>')
        parts.append(f'<label class="explorer-control"><span>{name}</span>{field}</label>')
    settings = words["; "].join(f'{c["label"]} = {c["labels"][c["index"]]}' for c in controls)
    box = (
        '<div class="explorer" role="group" aria-label="'
        + html.escape(words[EXPLORER_WORDS[0]]) + '">'
        + f'<p class="explorer-note">{html.escape(words[EXPLORER_WORDS[0]])}</p>'
        + "".join(parts)
        + '<p class="explorer-status" aria-live="polite">'
        + html.escape(sentence(words[EXPLORER_WORDS[1]], settings)) + "</p>"
        + '<script type="application/json" class="explorer-data">'
        + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
        + "</script></div>"
    )
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {"text/html": box}}]
    for f in first["figures"]:  # as PNG, which MyST-NB makes the cell's figure (the same pixels)
        outputs.append({"output_type": "display_data", "metadata": {},
                        "data": {"image/png": png(image(f["img"])), "text/plain": "<Figure>"}})
    text = html.escape(first["text"])
    outputs.append({"output_type": "display_data", "metadata": {},
                    "data": {"text/html": f'<pre class="explorer-text">{text}</pre>'}})
    return outputs


def warn(message: str) -> None:
    """A build warning no one can miss (stderr, its own line)."""
    print(f"\nWARNING: {message}\n", file=sys.stderr, flush=True)


def static_widgets(nb: dict, say: Callable[[str], str] = str,
                   save: Callable[[str, bytes], None] | None = None, static: str = "../_static/",
                   chapter: str | None = None, states: Path = STATES) -> int:
    """Replace widget views with explorers (given ``save`` and the notebook's ``chapter``, see
    :func:`explorer`; ``static`` is the chapter page's way to the folder that holds ``explorer/``)
    or static snapshots, and drop the widget state (so no widget JavaScript is loaded). An
    explorer whose states are missing or stale becomes a snapshot, with a warning. Returns the
    number of views replaced."""
    meta = nb.get("metadata", {}).pop("widgets", {}) or {}
    state = meta.get(WIDGET_STATE, {}).get("state", {})
    count = 0
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        new_outputs = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                new_outputs.append(out)
                continue
            count += 1
            if EXPLORER in out["data"] and save is not None and chapter:
                payload = out["data"][EXPLORER]
                data, why = saved_states(nb, index, payload, chapter, states)
                if data is not None:
                    new_outputs += explorer(data, save, say, static, states)
                    continue
                warn(f"{chapter}: the explorer {payload['name']!r} is shown as a static snapshot on "
                     f"the website: {why}. Run `make explorers NB=notebooks/{chapter}.ipynb`.")
            new_outputs += snapshot(widget_tree(state, view.get("model_id", "")), say)
        cell["outputs"] = new_outputs
    return count
