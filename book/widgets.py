"""Saved ipywidgets views as static snapshots for the website.

A widget cell's output is a view of a model in the notebook's saved widget state. The site loads
no widget JavaScript: each view becomes a note naming the controls' values, followed by what the
widget's Output areas held when the notebook was executed (its figure)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

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


def static_widgets(nb: dict, say: Callable[[str], str] = str) -> int:
    """Replace widget views with static snapshots and drop the widget state (so no widget
    JavaScript is loaded). Returns the number of views replaced."""
    meta = nb.get("metadata", {}).pop("widgets", {}) or {}
    state = meta.get(WIDGET_STATE, {}).get("state", {})
    count = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        new_outputs = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                new_outputs.append(out)
            else:
                count += 1
                new_outputs += snapshot(widget_tree(state, view.get("model_id", "")), say)
        cell["outputs"] = new_outputs
    return count
