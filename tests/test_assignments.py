"""The classroom assignments: sources pass their own tests, student versions fail them.

Grading itself (sandbox, adversarial submissions, parallel runs) is tested in
``tests/test_grading_sandbox.py``. Every course directory lives in ``tmp_path``.
"""
import importlib.util
import os
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "assignments" / "source"
NAMES = sorted(p.name for p in SOURCE.iterdir() if p.is_dir())

spec = importlib.util.spec_from_file_location("assignments_cli", ROOT / "scripts" / "assignments.py")
cli = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = cli  # dataclasses look their module up while the file runs
spec.loader.exec_module(cli)

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _venv_on_path(monkeypatch):
    """nbgrader runs alembic and the kernel by name: this Python's bin/ first (as the Makefile)."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "1")


def source_nb(name):
    return SOURCE / name / f"{name}.ipynb"


def graded_cells(nb):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def test_nine_assignments_with_three_to_five_graded_exercises():
    assert len(NAMES) == 9 and [n[:4] for n in NAMES] == [f"ch0{i}" for i in range(1, 10)]
    for name in NAMES:
        nb = nbformat.read(source_nb(name), as_version=4)
        graded = graded_cells(nb)
        assert 3 <= len(graded) <= 5, name
        for c in graded:
            meta = c.metadata["nbgrader"]
            assert meta["locked"] and not meta["solution"] and meta["points"] > 0
            assert meta["schema_version"] == 3 and meta["grade_id"].endswith("_tests")
            assert "### BEGIN HIDDEN TESTS" in c.source and "### END HIDDEN TESTS" in c.source
            assert c.source.index("### BEGIN HIDDEN TESTS") > c.source.index("assert")  # visible check
        solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert len(solutions) == len(graded) and all("### BEGIN SOLUTION" in c.source for c in solutions)
        assert nb.metadata["kernelspec"]["name"] == "python3"


class TestSources:
    @pytest.mark.parametrize("name", NAMES)
    def test_source_passes_all_its_tests(self, name):
        from nbgrader.validator import Validator

        assert Validator().validate(str(source_nb(name))) == {}


class TestStudentVersions:
    @pytest.fixture(scope="class")
    @classmethod
    def released(cls, tmp_path_factory):
        paths = cli.generate(tmp_path_factory.mktemp("course"))
        return dict(zip(NAMES, paths, strict=True))

    @pytest.mark.parametrize("name", NAMES)
    def test_student_version_fails_every_graded_test(self, name, released):
        from nbgrader.validator import Validator

        path = released[name]
        text = path.read_text()
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            assert marker not in text, marker
        nb = nbformat.read(path, as_version=4)
        src = nbformat.read(source_nb(name), as_version=4)
        assert len(graded_cells(nb)) == len(graded_cells(src))
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        regions = sum(c.source.count("### BEGIN SOLUTION") for c in src.cells)
        assert code.count("raise NotImplementedError()") == regions >= len(graded_cells(src))
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
        assert Validator(invert=True).validate(str(path)) == {}
