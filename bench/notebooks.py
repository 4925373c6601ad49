"""Wall time of every chapter notebook, executed headless with nbclient.

Each ``notebooks/NN_*.ipynb`` is read, executed in a fresh ``python3`` kernel with the
notebooks folder as working directory, and thrown away: the committed notebooks are
never written. The time includes starting the kernel, as a reader's "Run All" does.

With ``lab=True`` each chapter is also run as a reader runs it: opened in the book's JupyterLab
(``make lab``, in headless Chromium, ``bench/lab.py``) and timed from Run > Run All Cells until the
last cell has run (its kernel is already started then). Both numbers stand side by side in the
report; the browser and the page's rendering of every output make the second one larger.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock


def chapter_notebooks(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def execute(path: Path, timeout: int = 600, executed_to: Path | None = None) -> dict:
    """Run one notebook in memory; return its wall time and whether it raised. With
    ``executed_to`` (a folder), the executed copy is written there, to read what it printed."""
    import nbformat
    from nbclient import NotebookClient

    scripts = str(Path(__file__).resolve().parents[1] / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    from execute import CleanShutdownKernelManager  # the kernel `make execute` uses: IPC, quiet

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            kernel_manager_class=CleanShutdownKernelManager,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    error = None
    try:
        client.execute()
    except Exception as exc:  # noqa: BLE001 - a failing chapter is reported, not fatal
        detail = (f"{exc.ename}: {exc.evalue}" if hasattr(exc, "ename")  # a cell raised
                  else f"{type(exc).__name__}: {exc}")
        error = detail.splitlines()[0][:300] if detail else type(exc).__name__
    if executed_to is not None:
        nbformat.write(nb, executed_to / path.name)
    return {"notebook": path.name, "seconds": time.perf_counter() - start,
            "cells": sum(c.cell_type == "code" for c in nb.cells), "error": error}


def lab_run_all(paths: list[Path], log=print, timeout: float = 900) -> dict[str, dict]:
    """Run All of each notebook in the book's JupyterLab (copies; one server, one browser).

    Returns ``{name: {"seconds": Run All's wall time or None, "error": None or a message}}``;
    a notebook that fails (or a missing Chromium) is reported, never fatal."""
    import shutil

    from . import lab

    out = {p.name: {"seconds": None, "error": lab.NO_CHROMIUM} for p in paths}
    executable = lab.find_chromium()
    if executable is None:
        return out
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="bench-lab-") as scratch:
        folder = Path(scratch) / "book"
        folder.mkdir()
        for path in paths:
            shutil.copy(path, folder)
        server = lab.BookLab(folder, Path(scratch))
        try:
            with sync_playwright() as pw:
                browser = lab.launch_chromium(pw, executable)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                lab.open_lab(page, server)
                for path in paths:
                    row = out[path.name] = {"seconds": None, "error": None}
                    try:
                        lab.open_notebook(page, path.name)
                        row["seconds"] = lab.run_all(page, timeout=timeout)
                        row["error"] = next(iter(lab.cell_report(page)["errors"]), None)
                    except Exception as exc:  # noqa: BLE001 - a failing chapter is reported
                        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                    finally:
                        try:  # shut its kernel down, whatever happened, before the next chapter
                            lab.close_notebook(page)
                        except Exception:  # noqa: BLE001 - the page may be gone; the server's close ends it
                            pass
                    seconds = f"{row['seconds']:.1f} s" if row["seconds"] is not None else "-"
                    log(f"  {path.name} in JupyterLab: {seconds}"
                        + (f"  ERROR {row['error']}" if row["error"] else ""))
                browser.close()
        finally:
            server.close()
    return out


@contextlib.contextmanager
def _fresh_cache():
    """A reader's first pass through the book: ``attnlib.train_preset``'s cache starts empty
    (``ATTNLIB_CACHE``, inherited by the kernels started inside), whatever earlier runs left in
    ``~/.cache/attnlib``. Chapters 5 and 7 load the two Transformers that ship with attnlib, as a
    reader's do; every other model trains."""
    with tempfile.TemporaryDirectory(prefix="attnlib-cache-") as cache, \
            mock.patch.dict(os.environ, {"ATTNLIB_CACHE": cache}):
        yield


def run(root: Path, log=print, paths: list[Path] | None = None, lab: bool = False) -> dict:
    """Every chapter notebook, one after the other, and the whole book's total; with ``lab``,
    also each one's Run All time in JupyterLab (``lab_seconds``, ``lab_error``)."""
    rows = []
    paths = paths if paths is not None else chapter_notebooks(root)
    with _fresh_cache():
        for path in paths:
            row = execute(path)
            log(f"  {row['notebook']}: {row['seconds']:.1f} s" + (f"  ERROR {row['error']}"
                                                                  if row["error"] else ""))
            rows.append(row)
    result = {"notebooks": rows, "total_seconds": sum(r["seconds"] for r in rows)}
    if lab:
        with _fresh_cache():
            timed = lab_run_all(paths, log=log)
        for row in rows:
            row["lab_seconds"] = timed[row["notebook"]]["seconds"]
            row["lab_error"] = timed[row["notebook"]]["error"]
        result["lab_total_seconds"] = sum(r["lab_seconds"] or 0.0 for r in rows)
    return result


def main(argv=None) -> int:
    """``python -m bench.notebooks OUT [NN ...]``: run chapters NN (default: all) as a reader's
    first pass, each executed copy and ``notebook_times.json`` written to OUT (the lent GPU's run,
    ``bench/gpu_run.sh``)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m bench.notebooks", description=main.__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("chapters", nargs="*", help="chapter numbers, e.g. 05 07 09")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    paths = [p for p in chapter_notebooks(root)
             if not args.chapters or p.name[:2] in {c.zfill(2) for c in args.chapters}]
    args.out.mkdir(parents=True, exist_ok=True)
    times = {}
    with _fresh_cache():
        for path in paths:
            row = execute(path, executed_to=args.out)
            times[row["notebook"]] = {"seconds": round(row["seconds"], 1), "error": row["error"]}
            print(row["notebook"], times[row["notebook"]], flush=True)
            (args.out / "notebook_times.json").write_text(json.dumps(times, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
