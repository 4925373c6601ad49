"""Hand-ins and specs, without grading: which file is a student's notebook, what is listed as
ignored or misplaced, and what the source notebook declares (hand-graded cells, hints)."""
import re
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


def test_the_chinese_course_reads_its_verdicts_and_notes_in_chinese(tmp_path):
    """A source whose statements are Chinese (book.i18n's) makes a Chinese spec; the grader's
    phrases become Chinese there, the names of calls, cells and hints stay as they are."""
    from coursegrader import zh
    from coursegrader.reports import write_feedback
    from coursegrader.result import Result

    shutil.copytree(SOURCE / CH03, tmp_path / CH03)
    path = tmp_path / CH03 / f"{CH03}.ipynb"
    assert load_spec(tmp_path, CH03).lang == "en"
    nb = nbformat.read(path, as_version=4)
    next(c for c in nb.cells if c.cell_type == "markdown").source = "## 练习 1（3 分）"
    nbformat.write(nb, path)
    assert load_spec(tmp_path, CH03).lang == "zh"
    notes = {
        "ex4: hidden tests failed: AssertionError (hint: divide by sqrt(d))":
            "ex4: 隐藏测试未通过：AssertionError（提示：divide by sqrt(d)）",
        "ex1 uses attnlib.masked_softmax (ex1_solution, line 2: `return attnlib.masked_softmax(X)`), "
        "which this exercise asks you to write yourself":
            "ex1 使用了 attnlib.masked_softmax (ex1_solution, line 2: `return attnlib.masked_softmax(X)`)，"
            "而这道练习要求你自己实现它",
        "ex2: your solution cell failed: stopped after the 30 s time limit per cell":
            "ex2: 你的解答单元格出错：超过每个单元格 30 秒的时间限制，已被终止",
        "ex3: not answered (raise NotImplementedError is still there)":
            "ex3: 未作答（raise NotImplementedError 仍在原处）",
    }
    for english, chinese in notes.items():
        assert zh.say(english, "zh") == chinese
        assert zh.say(english, "en") == english
    assert zh.verdict(0, 2, "self-check failed: AssertionError", "zh") == \
        "0 / 2 分：自检未通过：AssertionError\n"
    assert zh.verdict(3, 3, None, "zh") == "通过：3 / 3 分\n"
    result = Result("ana", CH03, {1: 3.0, 2: 0.0}, 5.0, "graded", [zh.say(list(notes)[0], "zh")], "yes",
                    manual_points=3.0)
    write_feedback(result, {1: 3.0, 2: 2.0}, tmp_path / "ana.md", "zh")
    text = (tmp_path / "ana.md").read_text()
    assert "的反馈" in text and "得分" in text and "隐藏测试未通过" in text
    assert "书面回答（3 分）由教师手工评分" in text
    assert not re.search(r"\b(feedback for|Score|Written answers|Notes)\b", text)
