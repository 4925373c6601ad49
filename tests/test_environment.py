"""The set-up: lock file, conda file, import hygiene, and JupyterLab as `make lab` starts it."""
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest

from bench.lab import free_port

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)")


def lock_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            match = PIN.match(line)
            assert match, f"requirements.lock line is not an exact pin: {line!r}"
            pins[match[1].lower().replace("_", "-")] = match[2]
    return pins


def test_lock_pins_the_documented_stack():
    pins = lock_pins()
    assert pins["torch"] == "2.14.1" and pins["torchvision"] == "0.29.2" and pins["d2l"] == "1.0.3"
    for name in ("jupyterlab", "ipywidgets", "matplotlib", "nbval", "sacrebleu", "nbgrader"):
        assert name in pins


def test_installed_environment_matches_the_lock():
    wrong = {name: (version, metadata.version(name)) for name, version in lock_pins().items()
             if metadata.version(name) != version}
    assert not wrong, f"installed versions differ from requirements.lock: {wrong}"


def test_environment_yml_agrees_with_the_lock():
    pins = lock_pins()
    text = (ROOT / "environment.yml").read_text()
    found = re.findall(r"^\s*- ([A-Za-z0-9_.\-]+)(?:==|=)([0-9][^\s]*)\s*$", text, re.M)
    found = [(n.lower(), v) for n, v in found if n.lower() != "python"]
    assert len(found) >= 20
    mismatched = {n: (v, pins.get(n)) for n, v in found if pins.get(n) != v}
    assert not mismatched, f"environment.yml versions differ from requirements.lock: {mismatched}"


def test_import_attnlib_is_light():
    code = ("import sys, attnlib; heavy = {'d2l', 'matplotlib', 'torchvision', 'pandas', 'scipy'};"
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def api(port: int, token: str, path: str, method: str = "GET", body=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


def wait_for(predicate, timeout: float, what: str, process=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process exited with {process.returncode} while waiting for {what}")
        try:
            result = predicate()
            if result:
                return result
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def run_in_kernel(port: int, token: str, kernel_id: str, code: str, timeout: float = 90) -> str:
    """Execute ``code`` through the kernel's websocket, as JupyterLab does; return its stdout."""
    import websocket  # websocket-client, a jupyter_server dependency

    ws = websocket.create_connection(
        f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?token={token}", timeout=timeout)
    msg_id = secrets.token_hex(8)
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "username": "test", "session": secrets.token_hex(8),
                   "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
    out = []
    try:
        while True:
            msg = json.loads(ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                raise AssertionError("\n".join(msg["content"]["traceback"]))
            elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return "".join(out)
    finally:
        ws.close()


@pytest.mark.slow
def test_make_lab_serves_the_notebooks_and_starts_the_project_kernel(tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    args = (f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
            f"--ServerApp.port_retries=0 --IdentityProvider.token={token}")
    log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(["make", "-s", "lab", f"LAB_ARGS={args}"], cwd=ROOT, stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True)
    try:
        try:
            wait_for(lambda: api(port, token, "/api/status"), 120, "the JupyterLab server", lab)
        except AssertionError:
            log.flush()
            raise AssertionError((tmp_path / "lab.log").read_text()[-3000:]) from None
        listing = api(port, token, "/api/contents")
        served = sorted(item["name"] for item in listing["content"] if item["type"] == "notebook")
        assert served == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
        specs = api(port, token, "/api/kernelspecs")
        assert specs["default"] == "python3"
        argv0 = specs["kernelspecs"]["python3"]["spec"]["argv"][0]
        assert Path(os.path.abspath(argv0)).is_relative_to(ROOT / ".venv"), argv0
        kernel = api(port, token, "/api/kernels", "POST", {"name": "python3"})
        printed = run_in_kernel(port, token, kernel["id"], "import sys, attnlib; print(sys.prefix)")
        assert Path(printed.strip()) == ROOT / ".venv"
        api(port, token, f"/api/kernels/{kernel['id']}", "DELETE")
        api(port, token, "/api/shutdown", "POST")
        lab.wait(timeout=60)
    finally:
        if lab.poll() is None:
            os.killpg(lab.pid, signal.SIGTERM)
            lab.wait(timeout=30)
        log.close()
