"""Canvas and Moodle: the exports (nbgrader export plugins) against the formats' documented
headers, and sorting their bulk downloads into nbgrader's ``submitted`` layout.

Canvas's gradebook importer (``GradebookImporter`` in canvas-lms) takes a header whose first
column holds "Student" and second "ID", optionally "SIS User ID" and "SIS Login ID" next, then
"Section" as the last student column, then one column per assignment (``Title (id)`` updates
assignment ``id``); a row whose first cell holds "Points Possible" gives the assignments'
points. Moodle imports a CSV in the format of its own export (``First name, Last name, ID
number, Institution, Department, Email address`` and one column per grade item) and maps one of
those columns to the user ("Email address" -> email, "ID number" -> ID number).
"""
import csv
import shutil
import zipfile
from pathlib import Path

import pytest

from coursegrader.course import Course, write_config
from coursegrader.lms import CanvasExportPlugin, MoodleExportPlugin, sort_download

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's add_submission
ROSTER = [("ana", "Ana", "Alves", "ana@example.org", "1001"),
          ("bob", "Bob", "de la Cruz, Jr.", "bob@example.org", None),  # a comma in a name; no LMS id
          ("cleo", "Cleo", "Costa", "cleo@example.org", "1003")]


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """A course directory whose gradebook has the roster, two assignments (5 and 3 points) and
    grades: ana 4/5 on time and 3/3 late (penalty 1.5); bob 2/5; cleo nothing. Made once (a new
    gradebook costs nbgrader an ``alembic`` process); each test gets a copy of its own."""
    root = tmp_path_factory.mktemp("graded") / "course"
    root.mkdir()
    write_config(root)
    c = Course(root)
    with c.gradebook() as gb:
        for sid, first, last, email, lms in ROSTER:
            gb.add_student(sid, first_name=first, last_name=last, email=email, lms_user_id=lms)
        for name, points in (("a1", 5), ("a2", 3)):
            gb.add_assignment(name)
            gb.add_notebook(name, name)
            gb.add_grade_cell("ex1_tests", name, name, max_score=points, cell_type="code")
        graded = (("ana", "a1", 4, None), ("ana", "a2", 3, 1.5), ("bob", "a1", 2, None))
        for sid, name, score, penalty in graded:
            gb.add_submission(name, sid)
            grade = gb.find_grade("ex1_tests", name, name, sid)
            grade.auto_score, grade.needs_manual_grade = score, False  # as make grade records it
            gb.find_submission_notebook(name, name, sid).late_submission_penalty = penalty
        gb.db.commit()
    return c


@pytest.fixture
def course(graded_course, tmp_path):
    """A copy of ``graded_course`` that the test may change (its gradebook, config, pin and link)."""
    root = tmp_path / "course"
    shutil.copytree(graded_course.root, root, symlinks=True)
    return Course(root)


def rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_canvas_export_has_the_header_and_rows_canvas_imports(course, tmp_path):
    out = tmp_path / "canvas.csv"
    with course.gradebook() as gb:
        CanvasExportPlugin(to=str(out), section="ML 101", assignment_ids={"a2": "777"}).export(gb)
    table = rows(out)
    header = table[0]
    # the importer's checks: "Student", "ID", the SIS columns, "Section" closing the student columns
    assert "Student" in header[0] and "ID" in header[1]
    assert header[2:5] == ["SIS User ID", "SIS Login ID", "Section"]
    assert header[5:] == ["a1", "a2 (777)"]  # "(777)": the column updates Canvas assignment 777
    assert table[1][0] == "Points Possible" and table[1][5:] == ["5", "3"]
    assert table[2:] == [["Alves, Ana", "1001", "", "ana", "ML 101", "4", "1.5"],
                         ["Costa, Cleo", "1003", "", "cleo", "ML 101", "0", "0"],
                         ["de la Cruz, Jr., Bob", "", "", "bob", "ML 101", "2", "0"]]


def test_moodle_export_has_the_columns_of_moodle_s_own_export(course, tmp_path):
    out = tmp_path / "moodle.csv"
    with course.gradebook() as gb:
        MoodleExportPlugin(to=str(out), assignment=["a2"]).export(gb)
    table = rows(out)
    assert table[0] == ["First name", "Last name", "ID number", "Institution", "Department",
                        "Email address", "a2"]
    assert table[1:] == [["Ana", "Alves", "1001", "", "", "ana@example.org", "1.5"],
                         ["Cleo", "Costa", "1003", "", "", "cleo@example.org", "0"],
                         ["Bob", "de la Cruz, Jr.", "", "", "", "bob@example.org", "0"]]


def test_export_writes_what_the_class_received_and_refuses_partial_totals(course, tmp_path, capsys):
    """make export: a column per assignment released or handed in (a3, in the gradebook only,
    is left out); a hand-graded answer still waiting stops it, saying whose; --partial writes
    the rest and leaves that cell empty, never a partial total."""
    from coursegrader.cli import main

    with course.gradebook() as gb:
        gb.add_assignment("a3")
        gb.find_grade("ex1_tests", "a1", "a1", "bob").needs_manual_grade = True
        gb.db.commit()
    out = tmp_path / "canvas.csv"
    args = ["export", "canvas", "--course", str(course.root), "--to", str(out)]
    assert main(args + ["--assignment", "a1"]) == 2 and not out.exists()
    assert "exporting a1 (left out: a2, a3)" in capsys.readouterr().out
    assert main(args) == 2 and not out.exists()
    said = capsys.readouterr().out
    assert "exporting a1, a2 (left out: a3)" in said
    assert "bob / a1: ex1_tests" in said and "PARTIAL=1" in said
    assert main(args + ["--partial"]) == 0
    table = rows(out)
    assert table[0][5:] == ["a1", "a2"]
    assert table[4] == ["de la Cruz, Jr., Bob", "", "", "bob", "", "", "0"]



def test_feedback_older_than_its_autograded_notebook_is_out_of_date(course):
    """After a regrade rewrote ana's autograded notebook, her feedback is stale; bob's is not."""
    import os

    for student, regraded in (("ana", True), ("bob", False)):
        graded = course.folder("autograded", student, "a1") / "a1.ipynb"
        html = course.folder("feedback", student, "a1") / "a1.html"
        for path, when in ((graded, 2000 if regraded else 1000), (html, 1500)):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
            os.utime(path, (when, when))
    assert course.stale_feedback() == [("ana", "a1")]



def test_the_course_is_graded_by_the_grader_it_was_set_up_with(course):
    """A course records its grader's version; after a git pull changed it, every command stops
    and names the commit to check out, until the instructor pins the new one."""
    import json

    from coursegrader.cli import main
    from coursegrader.course import PIN

    course.check_pin()
    pinned = json.loads((course.root / PIN).read_text())
    (course.root / PIN).write_text(json.dumps({**pinned, "sha256": "0" * 64, "commit": "abc1234"}))
    with pytest.raises(SystemExit, match="git checkout abc1234"):
        course.check_pin()
    with pytest.raises(SystemExit, match="grading code changed"):
        main(["export", "canvas", "--course", str(course.root)])
    assert main(["pin", "--course", str(course.root)]) == 0
    course.check_pin()


NB = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def canvas_zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def test_sorting_a_canvas_download(course, tmp_path):
    a = "ch03_scoring_functions"
    download = canvas_zip(tmp_path / "submissions.zip", {
        f"alvesana_1001_555_{a}.ipynb": NB,
        f"costacleo_late_1003_556_{a}-1.ipynb": NB,  # Canvas's LATE mark and a resubmission's -1
        f"costacleo_late_1003_557_{a}.html": "<html/>",
        f"someone_9999_558_{a}.ipynb": NB,  # not on the roster
        "notes.txt": "not a submission",
        "../escape.ipynb": NB,  # never written outside the download
    })
    done = sort_download("canvas", download, a, course)
    sub = course.submitted
    assert sorted(str(p.relative_to(sub)) for p in sub.rglob("*") if p.is_file()) == [
        f"ana/{a}/{a}.ipynb", f"cleo/{a}/{a}-1.ipynb"]  # no folder named by an LMS number
    assert done.late == [f"costacleo_late_1003_556_{a}-1.ipynb"]
    assert [i.split(":")[0] for i in done.ignored] == [f"costacleo_late_1003_557_{a}.html", "notes.txt"]
    assert done.unknown == [f"someone_9999_558_{a}.ipynb: Canvas user 9999 is no lms_user_id of the roster: "
                            "not copied (add them to the roster and sort again)"]
    assert not (tmp_path / "escape.ipynb").exists()
    # the same download again changes nothing; another one is refused until --force, which keeps the old
    again = sort_download("canvas", download, a, course)
    assert again.copied == [] and len(again.unchanged) == 2
    # the same notebook handed in again under another name is the same hand-in, not another one
    renamed_zip = canvas_zip(tmp_path / "renamed.zip", {f"costacleo_1003_601_{a}.ipynb": NB})
    renamed = sort_download("canvas", renamed_zip, a, course)
    assert (renamed.copied, renamed.refused, len(renamed.unchanged)) == ([], [], 1)
    v2 = NB.replace("[]", '[{"cell_type": "markdown", "id": "x", "metadata": {}, "source": "v2"}]', 1)
    newer = canvas_zip(tmp_path / "newer.zip", {f"alvesana_1001_600_{a}.ipynb": v2})
    refused = sort_download("canvas", newer, a, course)
    assert refused.copied == [] and "holds another hand-in" in refused.refused[0]
    assert (sub / "ana" / a / f"{a}.ipynb").read_text() == NB
    forced = sort_download("canvas", newer, a, course, force=True)
    assert len(forced.copied) == 1 and "v2" in (sub / "ana" / a / f"{a}.ipynb").read_text()
    kept = list((course.root / "submitted-replaced").glob(f"*/ana/{a}/{a}.ipynb"))
    assert len(kept) == 1 and kept[0].read_text() == NB


def test_sorting_a_moodle_download(course, tmp_path):
    a = "ch03_scoring_functions"
    download = tmp_path / "moodle"
    (download / "Ana Alves_111_assignsubmission_file_").mkdir(parents=True)  # "download in folders"
    (download / "Ana Alves_111_assignsubmission_file_" / f"{a}.ipynb").write_text(NB)
    (download / f"Cleo  COSTA_222_assignsubmission_file_{a}.ipynb").write_text(NB)  # flat; case, spaces
    (download / "C Costa_333_assignsubmission_file_").mkdir()
    (download / "C Costa_333_assignsubmission_file_" / "mine.ipynb").write_text(NB)
    (download / "Nobody Here_444_assignsubmission_file_").mkdir()
    (download / "Nobody Here_444_assignsubmission_file_" / "x.ipynb").write_text(NB)
    worksheet = tmp_path / "worksheet.csv"
    worksheet.write_text("Identifier,Full name,Email address,Status\n"
                         "Participant 333,C Costa,bob@example.org,x\n")
    done = sort_download("moodle", download, a, course, worksheet=worksheet)
    sub = course.submitted
    assert sorted(str(p.relative_to(sub)) for p in sub.rglob("*") if p.is_file()) == [
        f"ana/{a}/{a}.ipynb", f"bob/{a}/mine.ipynb", f"cleo/{a}/{a}.ipynb"]
    assert len(done.unknown) == 1 and "Nobody Here (participant 444)" in done.unknown[0]
