"""Hand-ins and specs, without grading: which file is a student's notebook, what is listed as
ignored or misplaced, and what the source notebook declares (hand-graded cells, hints)."""
import shutil
from pathlib import Path

import nbformat
from nbformat.v4 import new_markdown_cell

from coursegrader.spec import load_spec
from coursegrader.submissions import find_submission, scan_layout, stage

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "assignments" / "source"
CH03 = "ch03_scoring_functions"
NB = (SOURCE / CH03 / f"{CH03}.ipynb").read_text()


def test_a_notebook_wins_over_its_namesakes_whatever_the_directory_order(tmp_path):
    """The instructor's trial: hank's .ipynb with an .html beside it scored 0 'not a notebook'."""
    hank = tmp_path / "submitted" / "hank"
    hank.mkdir(parents=True)
    (hank / f"{CH03}.html").write_text("<html/>")
    (hank / f"{CH03}.pdf").write_bytes(b"%PDF")
    (hank / f"{CH03}.ipynb").write_text(NB)
    found = find_submission(hank, CH03)
    assert found == hank / f"{CH03}.ipynb"
    staged = stage(found, tmp_path / "stage", CH03)
    assert staged.nb is not None and not staged.refused
    assert staged.notes == [f"ignored (only the notebook {CH03}.ipynb is graded): {CH03}.html, {CH03}.pdf"]
    only_html = tmp_path / "submitted" / "ivy"
    only_html.mkdir()
    (only_html / f"{CH03}.html").write_text("<html/>")
    staged = stage(find_submission(only_html, CH03), tmp_path / "stage2", CH03)
    assert staged.nb is None
    assert staged.notes == [f"no notebook {CH03}.ipynb in the submission (found: {CH03}.html)"]


def test_a_collected_folder_lists_other_files_and_keeps_nbgrader_s(tmp_path):
    folder = tmp_path / "submitted" / "cleo" / CH03
    folder.mkdir(parents=True)
    (folder / f"{CH03}.ipynb").write_text(NB)
    (folder / f"{CH03}.html").write_text("<html/>")
    (folder / "timestamp.txt").write_text("2027-03-20 10:00:00.000000 UTC")
    (folder / "submission_secret.txt").write_text("s")
    staged = stage(find_submission(folder.parent, CH03), tmp_path / "stage", CH03,
                   base=tmp_path / "submitted")
    assert staged.timestamp == "2027-03-20 10:00:00.000000 UTC"
    assert sorted(staged.nbgrader_files) == ["submission_secret.txt", "timestamp.txt"]
    assert staged.notes == [f"ignored (only the notebook {CH03}.ipynb is graded): {CH03}.html"]


def test_files_in_the_wrong_place_are_named_with_the_layout_expected(tmp_path):
    sub = tmp_path / "submitted"
    (sub / "ana" / CH03).mkdir(parents=True)
    (sub / "ana" / CH03 / f"{CH03}.ipynb").write_text(NB)
    (sub / "ana" / "homework.ipynb").write_text(NB)
    (sub / "ana" / CH03 / "extra").mkdir()
    (sub / f"ivan_12345_67890_{CH03}.ipynb").write_text(NB)
    found = {m.path: m.why for m in scan_layout(sub, [CH03, "ch01_attention_cues"])}
    assert sorted(found) == [f"ana/{CH03}/extra/", "ana/homework.ipynb", f"ivan_12345_67890_{CH03}.ipynb"]
    assert "SUBMITTED/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb" in found["ana/homework.ipynb"]
    assert "coursegrader sort canvas" in found[f"ivan_12345_67890_{CH03}.ipynb"]


def test_the_spec_leaves_written_answers_to_formgrader_and_knows_the_hints(tmp_path):
    shutil.copytree(SOURCE / CH03, tmp_path / CH03)
    path = tmp_path / CH03 / f"{CH03}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells  # the source's own written question: replaced by a 2-point one
                if not c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("written")]
    written = new_markdown_cell("YOUR ANSWER HERE", id="written1")
    written.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": 2,
                                    "grade_id": "written1", "schema_version": 3}
    nb.cells.append(written)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex4_tests")
    hidden = "".join(ln for ln in cell.source.splitlines(True) if not ln.startswith(("# hint:", "#  ")))
    cell.source = hidden.replace("### BEGIN HIDDEN TESTS\n", "### BEGIN HIDDEN TESTS\n# hint: the scaling\n")
    nbformat.write(nb, path)
    spec = load_spec(tmp_path, CH03)
    assert [(m.grade_id, m.points, m.cell_type) for m in spec.manual] == [("written1", 2.0, "markdown")]
    assert spec.auto_points == 10 and spec.manual_points == 2 and "written1" not in spec.solutions
    ex4 = next(t for t in spec.tests if t.grade_id == "ex4_tests")
    assert ex4.hint_at(None) == "the scaling" and ex4.hint_at(1) is None and ex4.hint_at(5) == "the scaling"
    shown = {c.grade_id: c.source for c in spec.cells}
    assert shown["written1"] is None and "HIDDEN" not in shown["ex4_tests"]  # not the answer, not the tests
