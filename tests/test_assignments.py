"""The classroom assignments: sources pass, student versions fail, grading is safe in bulk.

Each class is one xdist scope (``--dist loadscope``), so the four groups run in parallel.
Every gradebook and course directory lives in ``tmp_path``; nothing is written to build/.
"""
import csv
import hashlib
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


def cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return {(r["student"], r["assignment"]): r for r in csv.DictReader(fh)}


def test_seven_assignments_with_three_to_five_graded_exercises():
    assert len(NAMES) == 7 and [n[:4] for n in NAMES] == [f"ch0{i}" for i in range(1, 8)]
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


class TestGradeFullAndZero:
    @pytest.fixture(scope="class")
    @classmethod
    def released(cls, tmp_path_factory):
        return dict(zip(NAMES, cli.generate(tmp_path_factory.mktemp("course")), strict=True))

    @pytest.mark.parametrize("name", NAMES)
    def test_source_gets_full_marks_and_student_version_zero(self, name, released, tmp_path):
        released = released[name]
        subs = tmp_path / "submitted"
        for student, nb_path in (("solver", source_nb(name)), ("idle", released)):
            (subs / student / name).mkdir(parents=True)
            (subs / student / name / f"{name}.ipynb").write_bytes(nb_path.read_bytes())
        cli.grade(subs, tmp_path / "out", log=lambda *a: None)
        rows = read_csv(tmp_path / "out" / "grades.csv")
        solver, idle = rows["solver", name], rows["idle", name]
        assert solver["status"] == "graded" and solver["notes"] == ""
        assert float(solver["total"]) == float(solver["max_total"]) > 0
        assert idle["status"] == "graded" and float(idle["total"]) == 0
        assert idle["notes"].count("not answered") == sum(1 for k in idle if k.startswith("ex") and idle[k])
        feedback = (tmp_path / "out" / "feedback" / "solver" / f"{name}.md").read_text()
        assert f"Score: {solver['total']} / {solver['max_total']}" in feedback


BROKEN = "ch03_scoring_functions"


def _broken_submissions(root: Path):
    """One perfect student and one for every way a submission can go wrong."""
    def src():
        return nbformat.read(source_nb(BROKEN), as_version=4)

    def put(student, nb):
        (root / student / BROKEN).mkdir(parents=True)
        nbformat.write(nb, root / student / BROKEN / f"{BROKEN}.ipynb")

    put("a_perfect", src())
    nb = src()
    cell(nb, "ex1_solution").source = ("def my_masked_softmax(X, valid_lens=None):\n"
                                       "    raise ValueError('student bug')")
    put("raises", nb)
    nb = src()
    cell(nb, "ex2_solution").source = "while True:\n    pass"
    put("loops", nb)
    nb = src()  # a wrong answer hidden behind an edited test cell and inflated points
    cell(nb, "ex4_solution").source = ("def scaled_dot_attention(queries, keys, values, valid_lens=None):\n"
                                       "    return values[:, :queries.shape[1]]")
    cell(nb, "ex4_tests").source = "print('all tests passed')"
    cell(nb, "ex1_tests").metadata["nbgrader"]["points"] = 100
    put("edits_tests", nb)
    nb = src()
    nb.cells.remove(cell(nb, "ex2_tests"))
    put("deletes_test", nb)
    (root / "textfile").mkdir()
    (root / "textfile" / f"{BROKEN}.txt").write_text("my answers: 42\n")
    (root / "corrupt" / BROKEN).mkdir(parents=True)
    (root / "corrupt" / BROKEN / f"{BROKEN}.ipynb").write_text(source_nb(BROKEN).read_text()[:700])
    (root / "renamed").mkdir()  # a single notebook under another name is graded as the assignment
    nbformat.write(src(), root / "renamed" / f"{BROKEN} (1).ipynb")


def _digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


class TestBrokenSubmissions:
    @pytest.fixture(scope="class")
    @classmethod
    def graded(cls, tmp_path_factory):
        tmp = tmp_path_factory.mktemp("broken")
        subs = tmp / "submitted"
        _broken_submissions(subs)
        before = _digest(subs)
        cli.grade(subs, tmp / "out", timeout=5, log=lambda *a: None)
        return tmp, read_csv(tmp / "out" / "grades.csv"), before

    def row(self, graded, student):
        return graded[1][student, BROKEN]

    def test_every_student_has_one_row_and_originals_are_untouched(self, graded):
        tmp, rows, before = graded
        assert sorted(s for s, _ in rows) == sorted(p.name for p in (tmp / "submitted").iterdir())
        assert _digest(tmp / "submitted") == before

    def test_perfect_student_graded_in_the_same_run_gets_full_marks(self, graded):
        r = self.row(graded, "a_perfect")
        assert r["total"] == r["max_total"] == "10" and r["notes"] == ""
        r = self.row(graded, "renamed")
        assert r["total"] == "10" and "graded ch03_scoring_functions (1).ipynb as" in r["notes"]

    def test_exception_costs_only_the_exercises_that_use_the_broken_code(self, graded):
        r = self.row(graded, "raises")
        assert (r["ex1"], r["ex2"], r["ex3"], r["ex4"]) == ("0", "2", "0", "0")
        assert "ValueError: student bug" in r["notes"]

    def test_infinite_loop_is_stopped_and_the_rest_is_graded(self, graded):
        r = self.row(graded, "loops")
        assert (r["ex1"], r["ex2"], r["ex4"]) == ("3", "0", "2")
        assert "ex2: your solution cell failed: stopped after the 5 s time limit" in r["notes"]

    def test_edited_test_cells_are_restored_from_the_gradebook(self, graded):
        tmp, rows, _ = graded
        r = rows["edits_tests", BROKEN]
        assert r["max_total"] == "10" and r["ex1"] == "3" and r["ex4"] == "0" and r["total"] == "8"
        assert "ex4: tests failed: AssertionError" in r["notes"]
        nb = nbformat.read(tmp / "out" / "course" / "autograded" / "edits_tests" / BROKEN / f"{BROKEN}.ipynb",
                           as_version=4)
        original = nbformat.read(source_nb(BROKEN), as_version=4)
        assert cell(nb, "ex4_tests").source == cell(original, "ex4_tests").source

    def test_deleted_test_cell_scores_zero_with_a_reason(self, graded):
        r = self.row(graded, "deletes_test")
        assert (r["ex1"], r["ex2"], r["ex3"], r["ex4"]) == ("3", "0", "3", "2")
        assert "ex2: test cell ex2_tests was deleted" in r["notes"]

    def test_files_that_are_not_notebooks_score_zero_with_a_reason(self, graded):
        tmp, rows, _ = graded
        text, corrupt = rows["textfile", BROKEN], rows["corrupt", BROKEN]
        assert text["total"] == corrupt["total"] == "0"
        assert text["status"] == corrupt["status"] == "not a notebook"
        assert "found: ch03_scoring_functions.txt" in text["notes"]
        assert "not a readable notebook" in corrupt["notes"] and "JSON" in corrupt["notes"]
        feedback = (tmp / "out" / "feedback" / "corrupt" / f"{BROKEN}.md").read_text()
        assert "not a readable notebook" in feedback
