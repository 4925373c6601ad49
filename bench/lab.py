"""The book's JupyterLab, driven in headless Chromium with Playwright.

Used by ``tests/test_lab.py`` (the book as a reader meets it), ``tests/test_book.py`` (the static
website) and the benchmark (``bench/notebooks.py``: a chapter's Run All time in JupyterLab).

``BookLab`` starts JupyterLab exactly as ``make lab`` does (the same make target, so the same trust
step and settings), bound to 127.0.0.1 on a free port with a random token, with its own temporary
Jupyter config, data, runtime, settings and workspace folders and autosave off. It serves a folder
of copies, never the committed notebooks. ``close()`` stops the server and every kernel it started,
also after a failure.

The browser is the system Chromium (``find_chromium``): Playwright drives it through
``executable_path``, so no browser is ever downloaded.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

NO_CHROMIUM = (
    "No Chrome or Chromium found for the browser checks of the book. On Debian/Ubuntu run "
    "`sudo apt-get install chromium` (`make test` does it when run as root); elsewhere install "
    "Google Chrome or Chromium, or point $CHROME at its executable."
)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-extensions",
                 "--disable-sync", "--mute-audio", "--hide-scrollbars"]


def find_chromium() -> str | None:
    """``$CHROME``, else chromium / google-chrome on PATH, else the macOS apps; None if none."""
    candidates = [os.environ.get("CHROME", "")]
    candidates += [shutil.which(n) or "" for n in
                   ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")]
    candidates += ["/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
                   "/Applications/Chromium.app/Contents/MacOS/Chromium"]
    return next((p for p in candidates if p and os.access(p, os.X_OK)), None)


def launch_chromium(playwright, executable: str):
    """A headless system Chromium under Playwright (no downloaded browser)."""
    return playwright.chromium.launch(executable_path=executable, headless=True,
                                      args=CHROMIUM_ARGS)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Settings of the test's own (temporary) settings folder: never saves a notebook by itself, and
# lays every cell out (the default 'contentVisibility' skips the layout of cells out of view, which
# would hide a cut-off label from the check).
TEST_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


class BookLab:
    """JupyterLab started by ``make lab`` on ``folder`` (copies of notebooks), in ``scratch``."""

    def __init__(self, folder: Path, scratch: Path, timeout: float = 180):
        self.folder, self.scratch = Path(folder), Path(scratch)
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        dirs = {name: scratch / name for name in ("config", "data", "runtime", "settings",
                                                  "workspaces")}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        for name, settings in TEST_SETTINGS.items():
            (dirs["settings"] / name).parent.mkdir(parents=True, exist_ok=True)
            (dirs["settings"] / name).write_text(json.dumps(settings))
        self.env = {**os.environ, "JUPYTER_CONFIG_DIR": str(dirs["config"]),
                    "JUPYTER_DATA_DIR": str(dirs["data"]),
                    "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
                    "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
                    "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]),
                    "JUPYTER_PREFER_ENV_PATH": "1"}
        args = (f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={self.port} "
                f"--ServerApp.port_retries=0 --IdentityProvider.token={self.token} "
                "--LabApp.expose_app_in_browser=True")
        self.log_path = scratch / "lab.log"
        self._log = self.log_path.open("w")
        # -o: a test or a benchmark never (re)installs the environment it runs in.
        self.proc = subprocess.Popen(
            ["make", "-s", "-o", ".venv/.installed", "lab", f"LAB_DIR={self.folder}",
             f"LAB_ARGS={args}"], cwd=ROOT, env=self.env, stdout=self._log,
            stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_until_up(timeout)
        except BaseException:
            self.close()
            raise

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return json.loads(raw) if raw else None

    def _wait_until_up(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"make lab exited with {self.proc.returncode}:\n{self.log()}")
            try:
                self.api("/api/status")
                return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"JupyterLab did not answer within {timeout} s:\n{self.log()}")

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def sign(self, *paths: Path) -> None:
        """Trust these notebooks with the book's notary (the one `make lab` signs with)."""
        subprocess.run([str(ROOT / ".venv" / "bin" / "jupyter"), "trust", "--log-level=WARN",
                        *map(str, paths)], env=self.env, check=True, capture_output=True)

    def close(self) -> None:
        """Stop the server and its kernels: politely first, then by signal, never left running."""
        import psutil

        try:
            family = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            family = []
        if self.proc.poll() is None:
            try:
                self.api("/api/shutdown", "POST")  # shuts its kernels down too
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, sig)  # make and JupyterLab (their own session)
                    self.proc.wait(timeout=wait)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
        # Kernels run in sessions of their own: end any that outlived the server.
        alive = [p for p in family if p.is_running()]
        for p in alive:
            p.terminate()
        _, alive = psutil.wait_procs(alive, timeout=10)
        for p in alive:
            p.kill()
        self._log.close()


# --------------------------------------------------------------------------- one notebook
# Every helper below runs in the JupyterLab page (``window.jupyterapp``, exposed by BookLab).
READY_JS = """name => { const p = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  return !!(p && p.context && p.context.path === name && p.context.isReady
            && p.sessionContext && p.sessionContext.session && p.sessionContext.session.kernel
            && p.content.widgets.length); }"""
IDLE_JS = """() => { const p = window.jupyterapp.shell.currentWidget;
  const kernel = p.sessionContext.session && p.sessionContext.session.kernel;
  return !kernel || kernel.status === 'idle'; }"""
# Error outputs, code cells that never ran, and widget views among the outputs (1-based cells).
CELLS_JS = """() => { const p = window.jupyterapp.shell.currentWidget;
  const code = p.content.widgets.map((c, i) => [c, i]).filter(([c]) => c.model.type === 'code');
  return {
    errors: code.flatMap(([c, i]) => c.model.outputs.toJSON().filter(o => o.output_type === 'error')
                 .map(o => `cell ${i + 1}: ${o.ename}: ${o.evalue}`.slice(0, 300))),
    notRun: code.filter(([c]) => c.model.sharedModel.getSource().trim()
                                  && c.model.executionCount === null).map(([c, i]) => i + 1),
    views: code.reduce((n, [c]) => n + c.model.outputs.toJSON()
                 .filter(o => o.data && o.data['application/vnd.jupyter.widget-view+json']).length, 0),
  }; }"""
# Run > Run All Cells. Its promise settles once every cell has run, or after the first error.
RUN_ALL_JS = """() => { window.__bookRunAll = null;
  window.jupyterapp.commands.execute('notebook:run-all-cells').then(
    ok => { window.__bookRunAll = {ok: ok}; },
    err => { window.__bookRunAll = {error: String(err)}; }); }"""


def open_lab(page, lab: BookLab, timeout: float = 180) -> None:
    """Load JupyterLab (an empty workspace) in ``page``."""
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    page.wait_for_function("() => !!window.jupyterapp", timeout=timeout * 1000, polling=250)
    page.evaluate("async () => { await window.jupyterapp.restored; }")


def open_notebook(page, name: str, timeout: float = 180) -> None:
    """File > Open ``name`` (a path in the lab's folder); wait until its kernel is up."""
    page.evaluate("path => { window.jupyterapp.commands.execute('docmanager:open', {path}); }",
                  name)
    page.wait_for_function(READY_JS, arg=name, timeout=timeout * 1000, polling=250)


def close_notebook(page) -> None:
    """Shut the current notebook's kernel down and close it without saving."""
    page.evaluate("""async () => { const p = window.jupyterapp.shell.currentWidget;
      if (p && p.sessionContext) { await p.sessionContext.shutdown(); }
      if (p) { p.dispose(); } }""")


def run_all(page, timeout: float = 900) -> float:
    """Run > Run All Cells; wait until it has finished (or stopped at an error). Seconds taken."""
    start = time.perf_counter()
    page.evaluate(RUN_ALL_JS)
    page.wait_for_function("() => window.__bookRunAll !== null", timeout=timeout * 1000,
                           polling=250)
    page.wait_for_function(IDLE_JS, timeout=60_000, polling=250)
    return time.perf_counter() - start


def cell_report(page) -> dict:
    """The open notebook's error outputs, code cells not run, and number of widget views."""
    return page.evaluate(CELLS_JS)
