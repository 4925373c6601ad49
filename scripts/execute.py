"""Run chapter notebooks top to bottom and save their outputs in place (``make execute``).

    python scripts/execute.py [NOTEBOOK ...]   # default: every notebooks/NN_*.ipynb
    python scripts/execute.py NOTEBOOK --cells ID [ID ...]   # run all, write back these cells
    python scripts/execute.py --explorers [NOTEBOOK ...]   # and draw every explorer's states

With ``--cells`` the whole notebook runs as always, but only the named cells (their cell ids)
take the new outputs; every other cell keeps the outputs it had, so a change to one cell does
not rewrite the numbers of a chapter that trains models. The notebook's saved widget state is
the new run's (a widget cell's view names a model in it).

With ``--explorers`` (``make explorers``; default: every chapter with an explorer) the kernel also
draws every state of each explorer (``attnlib.explorer``) into ``book/explorers/``, the website's
data, from this very run (a chapter that trains a model draws with the model it just trained).
Each states file is then stamped with the notebook's recipe (its code cells up to the widget's),
the files of explorers that no longer exist are deleted, and so are the images no explorer uses.
Only the explorers' cells take the new outputs (as with ``--cells``), unless ``--cells`` says
otherwise.

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
* The kernel's own log (its process's stderr: cells' output travels over IOPub instead) is copied
  to this script's stderr when the kernel stops, all of it up to the shutdown request, and what
  it logged while stopping only if it did not exit cleanly. ipykernel 7.4 can log a harmless
  "ZMQError: Socket operation on non-socket" traceback while it stops (its control thread flushes
  stdout as its IOPub thread closes; ipython/ipykernel#1518 fixed one path of that race).
"""
from __future__ import annotations

import argparse
import json
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
STATES = ROOT / "book" / "explorers"  # the explorers' saved states (docs/book.md)
# The kernels check their explorers against them (attnlib.explorer.STATES_ENV, named here because
# attnlib, which loads torch, is imported only to draw states: see explorer_module).
os.environ.setdefault("ATTNBOOK_STATES", str(STATES))


def explorer_module():
    """``attnlib.explorer``, from this checkout (imported only by ``--explorers``)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from attnlib import explorer

    return explorer


class CleanShutdownKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` on IPC sockets whose ``shutdown_kernel`` sends no SIGINT and
    shows the kernel's log, less a clean exit's teardown (see the module docstring)."""

    def __init__(self, **kwargs):
        # A private folder for the sockets and the kernel's log, named by an absolute path:
        # jupyter_client's default ("kernel-ipc-N") is relative, so a kernel in another working
        # directory misses it.
        self._dir = tempfile.mkdtemp(prefix="nb-kernel-")
        self._log, self._shown = Path(self._dir, "kernel.log"), 0  # bytes of it shown so far
        if os.name == "posix" and "transport" not in kwargs:
            kwargs.update(transport="ipc", ip=os.path.join(self._dir, "kernel"))
        # SIGTERM after 5 s, not jupyter_client's 2.5: on a busy machine a kernel can take
        # seconds to exit, and a clean exit's teardown is not shown (see show_log's caller)
        kwargs.setdefault("shutdown_wait_time", 10.0)
        super().__init__(**kwargs)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        with open(self._log, "ab") as log:  # appends, whatever this process reads meanwhile
            kw.setdefault("stderr", log)
            await super()._async_launch_kernel(kernel_cmd, **kw)

    def show_log(self) -> None:
        """Copy to stderr what the kernel logged since the last call."""
        if self._log.exists():
            with open(self._log, "rb") as log:
                log.seek(self._shown)
                text = log.read()
            self._shown += len(text)
            sys.stderr.write(text.decode(errors="replace"))

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        self.show_log()  # all of it up to the shutdown request
        if now or restart:  # a forced stop or a restart: jupyter_client's own way
            await super().shutdown_kernel(now=now, restart=restart)
            return
        self.shutting_down = True
        process = getattr(self.provisioner, "process", None)  # a local kernel's Popen
        await self.request_shutdown()  # shutdown_request on the control channel
        await self.finish_shutdown()  # waits; SIGTERM, then SIGKILL, only if it hangs
        if process is not None and process.returncode == 0 and self._log.exists():
            self._shown = self._log.stat().st_size  # a clean exit: its teardown is not shown
        await self.cleanup_resources()

    async def cleanup_resources(self, restart: bool = False) -> None:
        await super().cleanup_resources(restart=restart)
        if not restart:  # also reached when the kernel died or never started
            self.show_log()
            shutil.rmtree(self._dir, ignore_errors=True)


def execute(path: Path, timeout: int = 600, cells: list[str] | None = None,
            explorers: Path | None = None) -> float:
    """Execute ``path`` and write it back (only the outputs of the cells with the ids ``cells``,
    when given); return the seconds it took. Raises on a failing cell. Given a folder
    ``explorers``, the kernel draws every explorer's states there (see the module docstring)."""
    nb = nbformat.read(path, as_version=4)
    if explorers is not None and cells is None:
        cells = [c.get("id") for c in nb.cells if explorer_cell(c)]
    if cells:
        missing = set(cells) - {c.get("id") for c in nb.cells}
        if missing:
            raise ValueError(f"{path}: no cell with id {', '.join(sorted(missing))}")
        old = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            kernel_manager_class=CleanShutdownKernelManager,
                            resources={"metadata": {"path": str(path.parent)}})
    start, began = time.perf_counter(), time.time()
    # The kernel inherits this process's environment: the notebook's path, as jupyter_server gives
    # it (an explorer's payload names its chapter from it), and with ``explorers`` the folder.
    saved_env = {"JPY_SESSION_NAME": os.environ.get("JPY_SESSION_NAME")}
    os.environ["JPY_SESSION_NAME"] = str(path)
    if explorers is not None:
        explorer = explorer_module()
        saved_env |= {k: os.environ.get(k) for k in (explorer.ENV, explorer.CHAPTER_ENV)}
        os.environ[explorer.ENV] = str(explorers)
        os.environ[explorer.CHAPTER_ENV] = path.stem
    try:
        client.execute()
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    seconds = time.perf_counter() - start
    if explorers is not None:
        stamp_states(nb, path.stem, explorers, began)
    if cells:
        for cell, before in zip(nb.cells, old.cells, strict=True):
            if cell.cell_type == "code" and cell.get("id") not in cells:
                cell.outputs = before.outputs
                cell.execution_count = before.execution_count
                cell.metadata = before.metadata
        keep_widget_models(nb, old)
    nbformat.write(nb, path)
    return seconds


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def keep_widget_models(nb, old) -> None:
    """The saved widget state of ``nb`` after ``--cells``: a widget view that kept its old output
    names a model of the old run, so the models of both runs are merged, then cut down to those
    the notebook's views reach (a view whose model is missing shows "model not found")."""
    def state_of(notebook) -> dict:
        return notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})

    models = {**state_of(old), **state_of(nb)}
    todo = [o["data"][WIDGET_VIEW]["model_id"] for c in nb.cells for o in c.get("outputs", [])
            if WIDGET_VIEW in o.get("data", {})]
    reached = set()
    while todo:  # a model names its children, layouts and styles as "IPY_MODEL_<id>"
        model_id = todo.pop()
        if model_id in reached or model_id not in models:
            continue
        reached.add(model_id)
        todo += [ref.removeprefix("IPY_MODEL_") for ref in _strings(models[model_id])
                 if ref.startswith("IPY_MODEL_")]
    if reached:
        saved = nb.metadata.setdefault("widgets", {}).setdefault(WIDGET_STATE, {"version_major": 2,
                                                                              "version_minor": 0})
        saved["state"] = {k: v for k, v in models.items() if k in reached}


def _strings(value):
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def explorer_cell(cell) -> bool:
    """Whether a code cell makes an explorer (calls ``explorable(``)."""
    return cell.get("cell_type") == "code" and "explorable(" in "".join(cell.get("source", ""))


def stamp_states(nb, chapter: str, folder: Path, began: float) -> list[Path]:
    """After a run with ``--explorers``: stamp each explorer's states file with the notebook's
    recipe, delete the chapter's states files no explorer wrote, then the images no states file
    uses. Raises RuntimeError when an explorer cell wrote no states in this run."""
    explorer = explorer_module()
    written = []
    for index, cell in enumerate(nb.cells):
        payloads = [o["data"][explorer.MIME] for o in cell.get("outputs", [])
                    if explorer.MIME in o.get("data", {})]
        if explorer_cell(cell) and not payloads:
            raise RuntimeError(f"{chapter}: cell {cell.get('id')} calls explorable() but shows no explorer")
        for payload in payloads:
            path = explorer.states_path(chapter, payload["name"], folder)
            if not path.exists() or path.stat().st_mtime < began:
                raise RuntimeError(f"{chapter}: explorer {payload['name']} wrote no states in this run")
            data = json.loads(path.read_text(encoding="utf-8"))
            data["recipe"] = explorer.recipe(nb.cells, index)
            path.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
                            + "\n", encoding="utf-8")
            written.append(path)
    for old in (folder / chapter).glob("*.json"):
        if old not in written:
            old.unlink()
    used = set()
    for states in folder.glob("*/*.json"):
        data = json.loads(states.read_text(encoding="utf-8"))
        used |= {f["img"] for view in data["views"] for f in view["figures"]}
    for image in (folder / explorer.IMAGES).glob("*.webp"):
        if image.stem not in used:
            image.unlink()
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to run (default: every notebooks/NN_*.ipynb)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell")
    parser.add_argument("--cells", nargs="+", metavar="ID",
                        help="write back only these cells' outputs (cell ids), keep the others'")
    parser.add_argument("--explorers", action="store_true",
                        help="draw every explorer's states into book/explorers/ (the website's data)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.explorers and not args.notebooks:
        paths = [p for p in paths if any(explorer_cell(c) for c in nbformat.read(p, as_version=4).cells)]
    folder = STATES if args.explorers else None
    total = 0.0
    for path in paths:
        path = path.resolve()
        if path.is_relative_to(Path.cwd()):
            path = path.relative_to(Path.cwd())
        print(f"{path}: running", end="", flush=True)
        try:
            seconds = execute(path, args.timeout, args.cells, folder)
        except RuntimeError as err:  # an explorer that wrote no states
            print(f"\n{path}: {err}; the notebook was not written.", file=sys.stderr)
            return 1
        except CellExecutionError as err:
            print(f"\n{path}: a cell raised; the notebook was not written.\n{err}", file=sys.stderr)
            return 1
        total += seconds
        print(f", written in {seconds:.0f} s", flush=True)
    print(f"{len(paths)} notebook(s) executed in {total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
