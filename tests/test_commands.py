"""The Makefile's documented promises: what `make help` lists, and who installs system packages.

`make book`/`make test` (through book-deps) and `make system-deps` are run against stand-ins for
`id`, `apt-get`, `sudo` and `fc-list` on a PATH of their own, so nothing is installed and the test
sees every call the recipe makes, and in which order.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None or os.name != "posix", reason="needs make (POSIX)")

FAKES = {
    "id": 'echo "$FAKE_UID"',
    "apt-get": 'echo "[apt-get $*]"; echo "apt-get $*" >> "$CALLS"',
    "sudo": 'echo "sudo" >> "$CALLS"; exec "$@"',
    "fc-list": '[ -n "$FAKE_FONT" ] && echo "wqy-zenhei.ttc: WenQuanYi Zen Hei"; exit 0',
    "python": "exit 0",  # book-deps' MathJax step: not what this test is about
}


def make(tmp_path, target, uid, chrome="", font=""):
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        for name, body in FAKES.items():
            (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
            (bin_dir / name).chmod(0o755)
        for tool in ("grep", "env"):
            (bin_dir / tool).symlink_to(shutil.which(tool))
    calls = tmp_path / f"calls-{target}-{uid}"
    calls.touch()
    env = {"PATH": str(bin_dir), "FAKE_UID": str(uid), "CALLS": str(calls), "CHROME": chrome,
           "FAKE_FONT": font, "HOME": str(tmp_path)}
    done = subprocess.run([MAKE, "-s", "-o", ".venv/.installed", f"BIN={bin_dir}", target],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, calls.read_text().splitlines()


def test_book_deps_as_a_user_names_what_is_missing_and_never_calls_sudo(tmp_path):
    out, calls = make(tmp_path, "book-deps", uid=1000)
    assert calls == []  # neither apt-get nor sudo
    assert "chromium" in out and "fonts-wqy-zenhei" in out and "make system-deps" in out


def test_book_deps_as_root_says_what_and_why_before_installing(tmp_path):
    out, calls = make(tmp_path, "book-deps", uid=0)
    assert calls == ["apt-get update -qq", "apt-get install -y -qq chromium fonts-wqy-zenhei"]
    said = out.index("installing chromium fonts-wqy-zenhei")
    assert said < out.index("[apt-get update")
    assert "headless browser" in out[said:] and "Chinese font" in out[said:]


def test_system_deps_uses_sudo_only_when_asked_and_not_root(tmp_path):
    _, calls = make(tmp_path, "system-deps", uid=1000)
    assert calls == ["sudo", "apt-get update -qq", "sudo",
                     "apt-get install -y -qq chromium fonts-wqy-zenhei"]
    _, calls = make(tmp_path, "system-deps", uid=0)
    assert "sudo" not in calls and len(calls) == 2


def test_nothing_is_installed_when_a_browser_and_a_font_are_there(tmp_path):
    chrome = tmp_path / "my-chrome"
    chrome.write_text("#!/bin/sh\n")
    chrome.chmod(0o755)
    for target in ("book-deps", "system-deps"):
        out, calls = make(tmp_path, target, uid=0, chrome=str(chrome), font="yes")
        assert calls == [], target
    _, calls = make(tmp_path, "system-deps", uid=0, chrome=str(chrome))  # only the font missing
    assert calls[-1] == "apt-get install -y -qq fonts-wqy-zenhei"


def test_make_help_lists_every_target_and_the_lab_options():
    text = subprocess.run([MAKE, "-s", "help"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    phony = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith(".PHONY:"):
            phony.update(line.split(":", 1)[1].split())
    internal = {"help", "book-deps"}
    listed = set(re.findall(r"make ([a-z][a-z0-9-]*)", text))
    assert phony - internal <= listed, sorted(phony - internal - listed)
    assert 'LAB_ARGS="--port 8890 --no-browser"' in text


@pytest.mark.slow
def test_execute_writes_outputs_quietly_and_leaves_a_failing_notebook_alone(tmp_path):
    import sys

    import nbformat

    good, bad = tmp_path / "01_good.ipynb", tmp_path / "02_bad.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nprint(os.path.basename(os.getcwd()))")]
    nbformat.write(nb, good)
    nb.cells.append(nbformat.v4.new_code_cell("raise ValueError('boom')"))
    nbformat.write(nb, bad)
    before = bad.read_bytes()
    run = [sys.executable, str(ROOT / "scripts" / "execute.py")]
    done = subprocess.run([*run, str(good)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no kernel WARNING (TCP) or ERROR (KeyboardInterrupt) lines
    out = nbformat.read(good, as_version=4).cells[0].outputs
    assert out[0]["text"] == f"{tmp_path.name}\n"  # ran in the notebook's folder
    failed = subprocess.run([*run, str(good), str(bad)], capture_output=True, text=True,
                            timeout=300)
    assert failed.returncode == 1 and "boom" in failed.stderr
    assert bad.read_bytes() == before  # not written


@pytest.mark.slow
def test_execute_hides_a_clean_kernel_exits_teardown_chatter_but_not_a_hung_kernels(tmp_path):
    # ipykernel can log a traceback while it stops (a race in its own teardown); whatever a
    # kernel writes to its stderr after the shutdown request is shown only if it exits unclean.
    import sys

    import nbformat

    def run(exit_hook: str) -> subprocess.CompletedProcess:
        path = tmp_path / "chatter.ipynb"
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(
            "import atexit, os, time\n"
            "def last_words():\n"
            "    os.write(2, b'said while stopping\\n')\n"
            f"    {exit_hook}\n"
            "atexit.register(last_words)")]
        nbformat.write(nb, path)
        return subprocess.run([sys.executable, str(ROOT / "scripts" / "execute.py"), str(path)],
                              capture_output=True, text=True, timeout=300)

    clean = run("pass")
    assert clean.returncode == 0 and clean.stderr == ""
    hung = run("time.sleep(60)")  # outlives the shutdown wait (5 s): SIGTERM, exit status -15
    assert hung.returncode == 0 and hung.stderr == "said while stopping\n"
