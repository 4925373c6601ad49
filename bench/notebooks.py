"""Wall time of every chapter notebook, executed headless with nbclient.

Each ``notebooks/NN_*.ipynb`` is read, executed in a fresh ``python3`` kernel with the
notebooks folder as working directory, and thrown away: the committed notebooks are
never written. The time includes starting the kernel, as a reader's "Run All" does.
"""
from __future__ import annotations

import time
from pathlib import Path


def chapter_notebooks(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def execute(path: Path, timeout: int = 600) -> dict:
    """Run one notebook in memory; return its wall time and whether it raised."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    error = None
    try:
        client.execute()
    except Exception as exc:  # noqa: BLE001 - a failing chapter is reported, not fatal
        detail = (f"{exc.ename}: {exc.evalue}" if hasattr(exc, "ename")  # a cell raised
                  else f"{type(exc).__name__}: {exc}")
        error = detail.splitlines()[0][:300] if detail else type(exc).__name__
    return {"notebook": path.name, "seconds": time.perf_counter() - start,
            "cells": sum(c.cell_type == "code" for c in nb.cells), "error": error}


def run(root: Path, log=print, paths: list[Path] | None = None) -> dict:
    """Every chapter notebook, one after the other, and the whole book's total."""
    rows = []
    for path in paths if paths is not None else chapter_notebooks(root):
        row = execute(path)
        log(f"  {row['notebook']}: {row['seconds']:.1f} s" + (f"  ERROR {row['error']}"
                                                              if row["error"] else ""))
        rows.append(row)
    return {"notebooks": rows, "total_seconds": sum(r["seconds"] for r in rows)}
