"""The book's recorded measurements: ``attnlib/quality.json``, written by ``make quality``.

Chapters 4 and 7 quote runs too long for a reading session (several seeds on 20,000 real
pairs; d2l's own experiment with d2l's own code) from this file, and print them with the
helpers below, so both chapters read the numbers the same way. The file ships inside the
package (package data), so a chapter opened anywhere attnlib is installed finds it;
``results/quality.md`` is the same measurements as a report to read.
"""
from __future__ import annotations

import json
import statistics
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

#: The file name of the measurements, inside the package; ``make quality`` writes it.
QUALITY_FILE = "quality.json"
#: The shipped measurements (a path inside the installed package).
QUALITY_JSON = files(__package__) / QUALITY_FILE

#: How the tables name the run that used d2l 1.0.3's encoder, loop, decoding and BLEU.
D2L_CODE = "d2l's code"

#: What the d2l-zh book prints for its 600-pair experiment on a V100: (loss range, tokens/s).
D2L_BOOK = {"bahdanau": ("0.019-0.022", "5,141"), "transformer": ("0.030-0.033", "5,118")}


def load_quality(path: str | Path | Traversable = QUALITY_JSON) -> dict:
    """The measurements of ``make quality`` as a dict (``"d2l"``, ``"real"``, ...)."""
    path = Path(path) if isinstance(path, str) else path
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run `make quality` to measure it")
    return json.loads(path.read_text(encoding="utf-8"))


def mean_std(values, digits: int = 1) -> str:
    """``"m"`` for one value, ``"m ± s"`` (sample standard deviation) for several."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("mean_std needs at least one value")
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def d2l_tables(quality: dict, d2l_data, model: str):
    """d2l's experiment for ``model`` (``"bahdanau"`` or ``"transformer"``) as recorded.

    Returns ``(runs, speed, sentences)``: the runs by label (``"attnlib"`` and
    :data:`D2L_CODE`), a pandas table of loss and speed beside the d2l book's numbers (d2l prints
    cross-entropy per token divided by ``num_steps``; both columns are shown), and a table of
    d2l's four sentences with each run's translation and BLEU. ``d2l_data`` (the 600-pair
    :class:`attnlib.data.FraEngData`) says which sentences were in training.
    """
    import pandas as pd

    if model not in D2L_BOOK:
        raise ValueError(f"model must be one of {sorted(D2L_BOOK)}, got {model!r}")
    runs = {(D2L_CODE if r["code"] == "d2l" else "attnlib"): r
            for r in quality["d2l"]["runs"] if r["model"] == model}
    steps = quality["d2l"]["data"]["num_steps"]
    book_loss, book_speed = D2L_BOOK[model]
    low, high = (float(x) for x in book_loss.split("-"))
    speed = pd.DataFrame({
        **{label: {"loss as printed": f"{r['loss']:.3f}",
                   "cross-entropy per token": f"{r['loss'] * (steps if label == D2L_CODE else 1):.3f}",
                   "tokens/s (last epoch)": f"{r['tokens_per_sec_last_epoch']:,.0f}"}
           for label, r in runs.items()},
        "the d2l book (V100)": {"loss as printed": book_loss,
                                "cross-entropy per token": f"{low * steps:.2f}-{high * steps:.2f}",
                                "tokens/s (last epoch)": book_speed}})
    sentences = pd.DataFrame([
        {"English": s, "in the 600 training pairs": "yes" if d2l_data.is_seen(s) else "no",
         **{label: f"{r['sentences'][s]['translation']} ({r['sentences'][s]['bleu']:.3f})"
            for label, r in runs.items()}}
        for s in runs["attnlib"]["sentences"]])
    return runs, speed, sentences
