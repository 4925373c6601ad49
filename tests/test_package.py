"""attnlib as a package: what `make dist` builds, and the book run from the wheel alone.

Readers open the chapters where there is no clone of this repository (Colab, Kaggle, a
JupyterHub): only the wheel and `pip install`. So the wheel must carry everything the chapters
read, and nothing in attnlib, nor in a chapter, may look above its own folder. The slow tests
build the sdist and the wheel from a copy of the tracked files and check what they hold. The
chapters and the assignment sources run once per `make test` with attnlib from the wheel (nbval,
in the kernel `scripts/kernels.py` writes: checked here); every assignment's student version is
copied to a folder outside the repository and run there, with the locked packages of this
environment and attnlib from the wheel only.
"""
import ast
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import attnlib
from coursegrader.spec import is_manual

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(attnlib.__file__).parent
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ASSIGNMENTS = sorted(p.name for p in (ROOT / "assignments" / "source").iterdir()
                     if (p / f"{p.name}.ipynb").is_file())
#: What the chapters read besides code, each under attnlib/ in the wheel.
DATA = ["quality.json", "corpora/tatoeba_fra_eng/fra.txt", "corpora/tatoeba_fra_eng/README.md"]


def tracked(under: str = "") -> list[str]:
    """The files git tracks (under ``under``), as paths relative to the repository."""
    out = subprocess.run(["git", "ls-files", "-z", "--", under or "."], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


def build(srcdir: Path, outdir: Path, *what: str) -> None:
    """``python -m build --no-isolation`` (as `make dist`): offline, with the locked setuptools."""
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(outdir),
                           *what, str(srcdir)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def names(archive: Path) -> list[str]:
    """The files (not folders) in a wheel, or in an sdist without its top folder."""
    if archive.suffix == ".whl":
        return sorted(n for n in zipfile.ZipFile(archive).namelist() if not n.endswith("/"))
    with tarfile.open(archive) as tar:
        return sorted(m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile())


def code_files(files: list[str]) -> list[str]:
    """The package's files, without the metadata that names the build (RECORD, egg-info)."""
    return [f for f in files if f.startswith("attnlib/")]


# ------------------------------------------------------------------ attnlib stays in its folder
def test_nothing_in_attnlib_resolves_a_path_above_its_folder():
    """No ``parents[...]``, ``.parent.parent``, ``..`` or ``os.pardir`` in attnlib's code, and
    every path attnlib's modules hold lies inside the package."""
    climbing = []
    for source in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            up = (isinstance(node, ast.Attribute) and node.attr in ("parents", "pardir")
                  or isinstance(node, ast.Attribute) and node.attr == "parent"
                  and isinstance(node.value, ast.Attribute) and node.value.attr == "parent"
                  or isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and any(part == ".." for part in node.value.replace("\\", "/").split("/")))
            if up:
                climbing.append(f"{source.name}:{node.lineno}")
    assert not climbing, f"attnlib looks above its own folder at {climbing}"
    for name in [f"attnlib.{p.stem}" for p in sorted(PACKAGE.glob("[a-z]*.py"))]:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, Path):
                assert Path(value).resolve().is_relative_to(PACKAGE), f"{name}.{attr} = {value}"


def test_the_quality_measurements_are_package_data():
    from attnlib.results import QUALITY_JSON, load_quality

    assert Path(str(QUALITY_JSON)).parent == PACKAGE
    assert "runs" in load_quality()


def test_no_chapter_or_assignment_looks_above_its_folder():
    """A chapter travels alone (Colab, a JupyterHub): its code names no file of the repository
    (a ``..`` path, or a folder of the checkout such as ``book/`` or ``attnlib/``)."""
    folders = ("attnlib/", "book/", "notebooks/", "assignments/", "results/", "diagrams/")
    found = []
    for path in [*CHAPTERS, *(ROOT / "assignments" / "source" / n / f"{n}.ipynb" for n in ASSIGNMENTS)]:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            for node in ast.walk(ast.parse(_python(cell.source))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                        ".." in node.value.replace("\\", "/").split("/") and "/" in node.value
                        or node.value.startswith(folders)):
                    found.append(f"{path.name}, cell {cell.get('id')}: {node.value!r}")
    assert not found, found


def _python(source: str) -> str:
    """A code cell without its IPython magics and shell escapes (they are not Python)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


@pytest.mark.slow
def test_the_kernel_make_test_runs_the_notebooks_in_uses_the_wheel_and_plain_kernels():
    """The kernel nbval runs the chapters and assignment sources in (conftest.py, ATTNBOOK_KERNEL):
    attnlib from the installed wheel, no folder of the checkout on its path, the plainest CPU
    kernels. Without ATTNBOOK_KERNEL (pytest started by hand) nbval uses this environment."""
    import json

    from jupyter_client.manager import start_new_kernel

    name = os.environ.get("ATTNBOOK_KERNEL")
    if not name:
        pytest.skip("make test names the notebooks' kernel in ATTNBOOK_KERNEL (scripts/kernels.py)")
    km, kc = start_new_kernel(kernel_name=name, cwd=str(ROOT / "notebooks"))
    try:
        code = ("import json, sys, torch, attnlib; print(json.dumps([attnlib.__file__, sys.path, "
                "torch.backends.cpu.get_cpu_capability()]))")
        out = []
        reply = kc.execute_interactive(code, timeout=120, output_hook=lambda m: out.append(
            m["content"]["text"]) if m["msg_type"] == "stream" else None)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    where, path, capability = json.loads("".join(out))
    assert not Path(where).is_relative_to(PACKAGE), where  # not the checkout's attnlib
    assert Path(where).parent.name == "attnlib" and "site" in Path(where).parts, where
    assert not [p for p in path if Path(p).is_absolute() and Path(p).resolve().is_relative_to(ROOT)
                and not Path(p).resolve().is_relative_to(Path(where).parents[1])
                and not Path(p).resolve().is_relative_to(Path(sys.prefix).resolve())
                and Path(p).resolve() != (ROOT / "notebooks")], path
    assert capability == "DEFAULT", capability


# ------------------------------------------------------------------ the sdist and the wheel
@pytest.fixture(scope="session")
def dists(tmp_path_factory):
    """The sdist and the wheel as `make dist` builds them (the wheel from the sdist), and a
    wheel built straight from the source tree, all from a copy of the files git tracks, so that
    neither untracked files nor this checkout's build outputs can slip in."""
    tmp = tmp_path_factory.mktemp("dist")
    src = tmp / "src"
    for rel in tracked():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    build(src, tmp / "dist")
    build(src, tmp / "direct", "--wheel")
    sdist, = (tmp / "dist").glob("*.tar.gz")
    wheel, = (tmp / "dist").glob("*.whl")
    direct, = (tmp / "direct").glob("*.whl")
    return {"sdist": sdist, "wheel": wheel, "direct": direct, "tmp": tmp}


@pytest.mark.slow
def test_the_wheel_holds_attnlib_and_every_data_file_git_tracks(dists):
    files = names(dists["wheel"])
    tracked_data = sorted(p for p in tracked("attnlib") if not p.endswith(".py"))
    assert tracked_data, "no data files found under attnlib/"
    assert sorted(set(tracked_data) - set(files)) == []  # package-data covers every data file
    for rel in DATA:
        assert f"attnlib/{rel}" in files
    assert any(f.startswith("attnlib/pretrained/") and f.endswith(".pt") for f in files)
    modules = sorted(f"attnlib/{p.name}" for p in PACKAGE.glob("*.py"))
    assert [f for f in files if f.endswith(".py")] == modules
    outside = [f for f in files if not f.startswith(("attnlib/", "attnlib-0.1.0.dist-info/"))]
    assert outside == [], "the wheel holds more than attnlib and its metadata"
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    meta = zipfile.ZipFile(dists["wheel"]).read("attnlib-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in meta
    assert "attnlib-0.1.0.dist-info/licenses/LICENSE" in files
    assert 'extra == "book"' in meta and "Requires-Dist: scikit-learn" in meta


@pytest.mark.slow
def test_the_sdist_holds_the_sources_and_data_and_no_tests_or_build_outputs(dists):
    files = names(dists["sdist"])
    for rel in ("pyproject.toml", "README.md", "LICENSE", *[f"attnlib/{d}" for d in DATA]):
        assert rel in files
    assert any(f.startswith("attnlib/pretrained/") and f.endswith(".pt") for f in files)
    for folder in ("tests/", "notebooks/", "assignments/", "scripts/", "bench/", "results/",
                   ".venv/", "build/", "dist/", ".git/"):
        assert not [f for f in files if f.startswith(folder)], folder
    assert not [f for f in files if f.endswith((".ipynb", ".pyc", ".whl"))]
    # the sdist is complete: the wheel built from it (make dist's) is the wheel of the source tree
    assert code_files(names(dists["wheel"])) == code_files(names(dists["direct"]))


# ------------------------------------------------------------------ the book, run from the wheel
# scripts/execute.py's kernel manager: IPC sockets, a clean shutdown (no KeyboardInterrupt noise)
_spec = importlib.util.spec_from_file_location("execute_script", ROOT / "scripts" / "execute.py")
execute = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execute)


@pytest.fixture(scope="session")
def outside(dists, tmp_path_factory):
    """The wheel installed into a fresh folder (``pip install --no-deps --target``), a folder for
    the notebooks outside the repository, and the environment their kernels get."""
    tmp = tmp_path_factory.mktemp("outside")
    assert not tmp.resolve().is_relative_to(ROOT)
    target = tmp / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-index", "--target", str(target), str(dists["wheel"])],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    env = {"PYTHONPATH": str(target), "ATTNLIB_CACHE": str(tmp / "cache"),
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
           "JUPYTER_PREFER_ENV_PATH": "1"}
    return {"target": target, "work": tmp / "work", "env": env}


def run_outside(path: Path, outside, monkeypatch, allow_errors: bool = False):
    """Run the notebook ``path`` (already copied outside the repository) in a fresh kernel,
    in its own folder, with attnlib from the wheel; return the executed notebook. A first
    injected cell checks that attnlib is the wheel's, that no folder of the repository (other
    than the environment's own packages) is on ``sys.path`` and that the book's tools told the
    kernel nothing (no ``ATTNBOOK_`` variable: no saved explorer states, as on Colab)."""
    for key, value in outside["env"].items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("ATTNBOOK_")]:  # set by conftest.py
        monkeypatch.delenv(key)
    nb = nbformat.read(path, as_version=4)
    check = (f"import os, sys, attnlib\n"
             f"assert attnlib.__file__.startswith({str(outside['target'])!r}), attnlib.__file__\n"
             f"assert not [p for p in sys.path if p.startswith({str(ROOT)!r})"
             f" and not p.startswith(sys.prefix)], sys.path\n"
             f"assert not [k for k in os.environ if k.startswith('ATTNBOOK_')], os.environ")
    nb.cells.insert(0, nbformat.v4.new_code_cell(check))
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=allow_errors,
                   kernel_manager_class=execute.CleanShutdownKernelManager,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    assert not nb.cells[0].outputs, nb.cells[0].outputs
    return nb


@pytest.fixture(scope="session")
def released(outside):
    """The assignments' student versions, as `make assignments` writes them, in a course folder
    outside the repository."""
    course = outside["work"] / "course"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "assignments.py"), "generate",
                           "--out", str(course)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {name: course / "release" / name / f"{name}.ipynb" for name in ASSIGNMENTS}


@pytest.mark.slow
class TestAssignmentsFromTheWheel:
    """Every student version (`make assignments`) runs from a folder outside the repository: every
    cell but the graded tests runs, and those fail only with the stubs' ``NotImplementedError``."""

    @pytest.mark.parametrize("name", ASSIGNMENTS)
    def test_student_version_runs_outside_the_repository(self, name, released, outside, monkeypatch):
        nb = run_outside(released[name], outside, monkeypatch, allow_errors=True)
        errors = {i: o["ename"] for i, c in enumerate(nb.cells) for o in c.get("outputs", [])
                  if o["output_type"] == "error"}
        graded = {i for i, c in enumerate(nb.cells)  # the tests: the written answer is graded by hand
                  if (meta := c.metadata.get("nbgrader", {})).get("grade") and not is_manual(meta)}
        assert graded and set(errors) == graded, errors
        assert set(errors.values()) == {"NotImplementedError"}, errors
