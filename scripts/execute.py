"""Run chapter notebooks top to bottom and save their outputs in place (``make execute``).

    python scripts/execute.py [NOTEBOOK ...]   # default: every notebooks/NN_*.ipynb
    python scripts/execute.py NOTEBOOK --cells ID [ID ...]   # run all, write back these cells

With ``--cells`` the whole notebook runs as always, but only the named cells (their cell ids)
take the new outputs; every other cell keeps the outputs it had, so a change to one cell does
not rewrite the numbers of a chapter that trains models. The notebook's saved widget state is
the new run's (a widget cell's view names a model in it).

Each notebook runs in a fresh ``python3`` kernel with its own folder as working directory, as
``jupyter nbconvert --to notebook --execute --inplace`` does, and is written back only when every
cell ran; a cell that raises stops the run with that cell's error and exit code 1, leaving the
notebook as it was. Two differences from nbconvert keep a successful run quiet:

* The kernel talks to this script over local IPC sockets (on POSIX), not TCP, so ipykernel has no
  reason to warn that "Kernel is running over TCP without encryption".
* The kernel is stopped with a shutdown request alone. ``jupyter_client``'s ``shutdown_kernel``
  sends SIGINT first (it interrupts before every shutdown); a kernel still finishing a message
  when the signal lands logs "ERROR | KeyboardInterrupt caught in kernel", although nothing went
  wrong. A kernel that does not exit after the request still gets SIGTERM and then SIGKILL.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent


class CleanShutdownKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` on IPC sockets whose ``shutdown_kernel`` sends no SIGINT."""

    def __init__(self, **kwargs):
        self._ipc_dir = None
        if os.name == "posix" and "transport" not in kwargs:
            # Sockets in a private folder, named by an absolute path: jupyter_client's default
            # ("kernel-ipc-N") is relative, so a kernel in another working directory misses it.
            self._ipc_dir = tempfile.mkdtemp(prefix="nb-ipc-")
            kwargs.update(transport="ipc", ip=os.path.join(self._ipc_dir, "kernel"))
        super().__init__(**kwargs)

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        if now or restart:  # a forced stop or a restart: jupyter_client's own way
            await super().shutdown_kernel(now=now, restart=restart)
            return
        self.shutting_down = True
        await self.request_shutdown()  # shutdown_request on the control channel
        await self.finish_shutdown()  # waits; SIGTERM, then SIGKILL, only if it hangs
        await self.cleanup_resources()

    async def cleanup_resources(self, restart: bool = False) -> None:
        await super().cleanup_resources(restart=restart)
        if self._ipc_dir and not restart:
            shutil.rmtree(self._ipc_dir, ignore_errors=True)


def execute(path: Path, timeout: int = 600, cells: list[str] | None = None) -> float:
    """Execute ``path`` and write it back (only the outputs of the cells with the ids ``cells``,
    when given); return the seconds it took. Raises on a failing cell."""
    nb = nbformat.read(path, as_version=4)
    if cells:
        missing = set(cells) - {c.get("id") for c in nb.cells}
        if missing:
            raise ValueError(f"{path}: no cell with id {', '.join(sorted(missing))}")
        old = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            kernel_manager_class=CleanShutdownKernelManager,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    if cells:
        for cell, before in zip(nb.cells, old.cells, strict=True):
            if cell.cell_type == "code" and cell.get("id") not in cells:
                cell.outputs = before.outputs
                cell.execution_count = before.execution_count
                cell.metadata = before.metadata
    nbformat.write(nb, path)
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to run (default: every notebooks/NN_*.ipynb)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell")
    parser.add_argument("--cells", nargs="+", metavar="ID",
                        help="write back only these cells' outputs (cell ids), keep the others'")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    total = 0.0
    for path in paths:
        path = path.resolve()
        if path.is_relative_to(Path.cwd()):
            path = path.relative_to(Path.cwd())
        print(f"{path}: running", end="", flush=True)
        try:
            seconds = execute(path, args.timeout, args.cells)
        except CellExecutionError as err:
            print(f"\n{path}: a cell raised; the notebook was not written.\n{err}", file=sys.stderr)
            return 1
        total += seconds
        print(f", written in {seconds:.0f} s", flush=True)
    print(f"{len(paths)} notebook(s) executed in {total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
