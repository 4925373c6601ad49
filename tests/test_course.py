"""A whole term, as an instructor runs it with nbgrader: every step through nbgrader's own
commands and a temporary exchange, grading through the book's sandbox (``coursegrader``).

The course has two assignments, copies of ch01 (with a written answer cell, as the book's
assignments carry one, graded by hand in formgrader) and ch03 (with a hint in its hidden
tests). The roster has four students; ``zed`` is not on it.

1. ``make assignments`` (``coursegrader generate``), roster (``nbgrader db student import``),
   ``nbgrader release_assignment``; students ``fetch_assignment`` and ``submit``: ana on time,
   cleo with an ``.html`` beside her notebook and a ch03 that misses the ``1/sqrt(d)`` scaling,
   bob after the ch03 due date, zed (not on the roster), dev not at all; due dates
   (``nbgrader db assignment add --duedate``), ``nbgrader collect``.
2. ``make grade`` (``coursegrader grade --course``), then a manual score and comments as
   formgrader's API stores them; bob resubmits ch03, ``collect --update``, grade again (only
   his pair changes, his obsolete comment is reported, ana's manual score stays); a forced
   regrade of ana keeps her manual score too.
3. ``nbgrader generate_feedback`` / ``release_feedback``; each student ``fetch_feedback``.
4. The exports (nbgrader's CSV, Canvas, Moodle): every number checked.
5. The same pairs graded as separate batch tasks (``grade-pair``) and merged (``record``)
   give the same gradebook as one ``grade``.

Most commands run in this process, each in its own folder with ``nbgrader_env()`` and its output
caught, everything put back after it: nbgrader's through its App, as nbgrader's own test suite
runs its command line, and ``coursegrader``'s through ``coursegrader.cli.main``. Each
``python -m nbgrader`` spends about 2.4 s of CPU importing nbgrader, and a term runs about 40
commands: one import instead of 40 is most of what this module costs. The command lines
themselves are still run as instructors run them: the roster import and ``nbgrader autograde``
(``python -m nbgrader``), the batch tasks (``python -m coursegrader grade-pair``), ``make
feedback`` and the Makefile's course targets; the grading workers, the sandboxes and the nbgrader
commands that ``coursegrader`` starts are processes of their own, as in a course.
"""
import contextlib
import csv
import datetime
import io
import logging
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell

from coursegrader import cli, feedback, gradebook
from coursegrader.course import Course, generate, nbgrader_env, write_config
from coursegrader.sandbox import probe

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "assignments" / "source"
CH01, CH03 = "ch01_attention_cues", "ch03_scoring_functions"
HINT = "check the 1/sqrt(d) scaling"
ROSTER = [("ana", "Ana", "Alves", "ana@example.org", "1001"),
          ("bob", "Bob", "Brown", "bob@example.org", "1002"),
          ("cleo", "Cleo", "Costa", "cleo@example.org", "1003"),
          ("dev", "Dev", "Dias", "dev@example.org", "1004")]

pytestmark = pytest.mark.slow


def is_written(cell) -> bool:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "").startswith("written")


def make_source(folder: Path) -> Path:
    """ch01 with a written answer of its own (nbgrader's manually graded answer cell, 2 points)
    and ch03 with a hint and without its written question (the numbers below are autograded)."""
    for name in (CH01, CH03):
        shutil.copytree(SOURCE / name, folder / name)
    path = folder / CH01 / f"{CH01}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if not is_written(c)]
    answer = "### BEGIN SOLUTION\nA lower temperature sharpens the weights.\n### END SOLUTION"
    written = new_markdown_cell(answer, id="written1")
    written.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": 2,
                                    "grade_id": "written1", "schema_version": 3}
    nb.cells.append(written)
    nbformat.write(nb, path)
    path = folder / CH03 / f"{CH03}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if not is_written(c)]
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex4_tests")
    hidden = re.sub(r"^\s*#( hint:|\s{2,}).*\n", "", cell.source, flags=re.M)  # the source's hints give way
    cell.source = hidden.replace("### BEGIN HIDDEN TESTS\n", f"### BEGIN HIDDEN TESTS\n# hint: {HINT}\n")
    nbformat.write(nb, path)
    return folder


@contextlib.contextmanager
def as_a_command(cwd: Path):
    """This process as ``python -m ...`` run in ``cwd`` with ``nbgrader_env()`` would be: that
    working directory and environment (``os.environ`` itself, so subprocesses inherit it),
    ``sys.path``, stdout and stderr caught (logging's handlers are made while the command
    starts, on the ``sys.stderr`` of that moment). Everything is put back after, and the log
    handlers made on the caught streams are removed."""
    env, old_env, old_cwd, old_path = nbgrader_env(), dict(os.environ), os.getcwd(), list(sys.path)
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield out, err
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
        sys.path[:] = old_path
        for logger in list(logging.root.manager.loggerDict.values()):
            for handler in getattr(logger, "handlers", [])[:]:
                if getattr(handler, "stream", None) in (out, err):
                    logger.removeHandler(handler)
                    handler.close()


def exit_status(main) -> int:
    """Run ``main()`` as ``python`` runs a program and return its exit status: what it returns
    (None: 0), a ``SystemExit``'s code (a message is printed, status 1), or 1 with the traceback
    printed for an uncaught error."""
    try:
        return main() or 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001 - as python does with an uncaught error: traceback, status 1
        traceback.print_exc()
        return 1


def nbgrader(cwd: Path, *args: str, check: bool = True) -> str:
    """``nbgrader ARGS`` in ``cwd``, run in this process as nbgrader's own test suite runs its
    command line (``nbgrader.tests.run_nbgrader``: ``NbGraderApp.instance()``, ``initialize``,
    ``start``, ``reset``); returns what it printed and logged."""
    from jupyter_core.application import NoStart
    from nbgrader.apps.nbgraderapp import NbGraderApp

    def main() -> None:
        app = NbGraderApp.instance()
        try:
            app.initialize(list(args))
            app.start()
        except NoStart:
            pass
        finally:
            app.reset()  # the app and its subcommand's singletons and log handlers go

    with as_a_command(cwd) as (out, err):
        code = exit_status(main)
    said = out.getvalue() + err.getvalue()
    assert not check or code == 0, f"nbgrader {' '.join(args)}: exit status {code}\n{said[-6000:]}"
    return said


def nbgrader_cli(cwd: Path, *args: str, check: bool = True) -> str:
    """``python -m nbgrader ARGS`` in ``cwd``: the command line itself, as instructors run it."""
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=600)
    assert not check or done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def coursegrader(*args: str) -> str:
    """``python -m coursegrader ARGS`` run in this process (``coursegrader.cli.main``); its
    grading workers, sandboxes and nbgrader commands are still processes of their own."""
    with as_a_command(ROOT) as (out, err):
        code = exit_status(lambda: cli.main(list(args)))
    said = out.getvalue() + err.getvalue()
    assert code == 0, f"coursegrader {' '.join(args)}: exit status {code}\n{said[-8000:]}"
    return out.getvalue()


def coursegrader_cli(*args: str) -> str:
    """``python -m coursegrader ARGS``: the command line itself."""
    done = subprocess.run([sys.executable, "-m", "coursegrader", *args], cwd=ROOT, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


class Student:
    """A student's own folder, cache and commands (``--student`` stands for their login)."""

    def __init__(self, tmp: Path, name: str, exchange: Path):
        self.name, self.home = name, tmp / "students" / name
        self.home.mkdir(parents=True)
        self.args = ["--course=attention-book", f"--Exchange.root={exchange}",
                     f"--Exchange.cache={self.home / '.cache'}", f"--student={name}"]

    def fetch(self, assignment: str) -> Path:
        nbgrader(self.home, "fetch_assignment", assignment, *self.args)
        return self.home / assignment / f"{assignment}.ipynb"

    def answer(self, assignment: str, source: Path, changes: dict[str, str] | None = None) -> None:
        """Fill the fetched notebook with the source's solutions, then ``changes`` (grade id -> text)."""
        path = self.home / assignment / f"{assignment}.ipynb"
        nb = nbformat.read(path, as_version=4)
        solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in
                     nbformat.read(source / assignment / f"{assignment}.ipynb", as_version=4).cells
                     if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}
        for c in nb.cells:
            gid = c.metadata.get("nbgrader", {}).get("grade_id")
            if gid in (changes or {}):
                c.source = changes[gid]
            elif gid in solutions:
                c.source = solutions[gid]
        nbformat.write(nb, path)

    def submit(self, assignment: str) -> None:
        nbgrader(self.home, "submit", assignment, *self.args)

    def fetch_feedback(self, assignment: str) -> list[Path]:
        nbgrader(self.home, "fetch_feedback", assignment, *self.args)
        return sorted(self.home.glob(f"{assignment}/feedback/*/*.html"))


def formgrader_sets(course: Course, student: str, assignment: str, cell: str, manual_score=None,
                    comment=None) -> None:
    """What formgrader's API stores when an instructor types a score or a comment."""
    with course.gradebook() as gb:
        if manual_score is not None:
            grade = gb.find_grade(cell, assignment, assignment, student)
            grade.manual_score = manual_score
            grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        if comment is not None:
            gb.find_comment(cell, assignment, assignment, student).manual_comment = comment
        gb.db.commit()


def read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def utc(when: datetime.datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    why = probe()
    if why:
        pytest.skip(f"no sandbox can run on this machine: {why}")
    started = time.monotonic()
    tmp = tmp_path_factory.mktemp("term")
    source = make_source(tmp / "source")
    exchange, root = tmp / "exchange", tmp / "course"
    # 1. the course, the roster, the release
    generate(root, source=source, log=lambda *a: None)
    with open(root / "nbgrader_config.py", "a", encoding="utf-8") as fh:  # as the guide says to edit it
        fh.write(f'\nc.Exchange.root = {str(exchange)!r}\n'
                 'c.AssignLatePenalties.plugin_class = "coursegrader.late.PerDayPenalty"\n'
                 "c.PerDayPenalty.fraction_per_day = 0.10\n")
    with open(root / "roster.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "first_name", "last_name", "email", "lms_user_id"])
        w.writerows(ROSTER)
    nbgrader_cli(root, "db", "student", "import", "roster.csv")  # the command line itself, once
    for name in (CH01, CH03):
        nbgrader(root, "release_assignment", name)
    ana, bob, cleo, dev, zed = (Student(tmp, n, exchange) for n in ("ana", "bob", "cleo", "dev", "zed"))
    for s in (ana, bob, cleo, zed):
        s.fetch(CH01)
    for s in (ana, bob, cleo):
        s.fetch(CH03)
    ana.answer(CH01, source, {"written1": "A lower temperature makes the weights peakier."})
    ana.answer(CH03, source)
    cleo.answer(CH01, source)
    (cleo.home / CH01 / f"{CH01}.html").write_text("<html>an export of my notebook</html>")
    unscaled = ("def scaled_dot_attention(queries, keys, values, valid_lens=None):\n"
                "    return my_masked_softmax(queries @ keys.transpose(1, 2), valid_lens) @ values\n")
    cleo.answer(CH03, source, {"ex4_solution": unscaled})
    zed.answer(CH01, source)
    bob.answer(CH01, source)  # his written answer stays "YOUR ANSWER HERE"
    bob.answer(CH03, source, {"ex2_solution": "def general_score(queries, keys, W):\n"
                                              "    return 2 * queries @ W @ keys.transpose(1, 2)\n"})
    for s, name in ((ana, CH01), (ana, CH03), (cleo, CH01), (cleo, CH03), (zed, CH01), (bob, CH01)):
        s.submit(name)
    due = datetime.datetime.now(datetime.UTC)
    time.sleep(1.5)
    bob.submit(CH03)  # after the due date of ch03
    nbgrader(root, "db", "assignment", "add", CH01, f"--duedate={utc(due + datetime.timedelta(days=7))}")
    nbgrader(root, "db", "assignment", "add", CH03, f"--duedate={utc(due)}")
    for name in (CH01, CH03):
        nbgrader(root, "collect", name)
    snapshot = tmp / "snapshot"  # the course as collected: the batch-job route grades a copy
    shutil.copytree(root, snapshot, symlinks=True)
    course = Course(root)
    # 2. grade; manual grades; a resubmission; a forced regrade
    out = {"tmp": tmp, "root": root, "course": course, "source": source, "exchange": exchange,
           "students": (ana, bob, cleo, dev, zed), "snapshot": snapshot}
    out["first"] = coursegrader("grade", "--course", str(root), "--jobs", "2")
    out["dump_first"] = gradebook.dump(course)
    out["autograded_first"] = {p.relative_to(root): p.read_bytes()
                               for p in sorted((root / "autograded").rglob("*")) if p.is_file()}
    formgrader_sets(course, "ana", CH01, "written1", manual_score=1.5)
    formgrader_sets(course, "ana", CH01, "ex1_solution", comment="Neat and stable.")
    formgrader_sets(course, "bob", CH03, "ex2_solution", comment="W goes between q and k once.")
    out["dump_manual"] = gradebook.dump(course)
    time.sleep(1.0)
    bob.answer(CH03, source)  # fixed, still after the due date
    bob.submit(CH03)
    nbgrader(root, "collect", "--update", CH03)
    out["second"] = coursegrader("grade", "--course", str(root), "--jobs", "2")
    out["dump_second"] = gradebook.dump(course)
    out["third"] = coursegrader("grade", "--course", str(root), "--force", "--student", "ana",
                                "--assignment", CH01)
    out["dump_third"] = gradebook.dump(course)
    # 3. feedback through the exchange
    for name in (CH01, CH03):
        nbgrader(root, "generate_feedback", name)
        nbgrader(root, "release_feedback", name)
    out["feedback"] = {(s.name, n): s.fetch_feedback(n) for s in (ana, bob, cleo) for n in (CH01, CH03)}
    # 4. the exports: bob's written answer graded (0), cleo's still waiting, so her ch01 cell is empty
    formgrader_sets(course, "bob", CH01, "written1", manual_score=0)
    out["exports"] = {kind: coursegrader("export", kind, "--course", str(root), "--partial",
                                         "--to", str(tmp / f"{kind}.csv"))
                      for kind in ("csv", "canvas", "moodle")}
    out["seconds"] = time.monotonic() - started
    print(f"\nthe term (without the batch route) took {out['seconds']:.0f} s")
    return out


def runs(course: Course) -> list[Path]:
    return sorted((course.reports / "runs").iterdir())


def rows(course: Course, run: Path) -> dict:
    with open(run / "grades.csv", newline="", encoding="utf-8") as fh:
        return {(r["student"], r["assignment"]): r for r in csv.DictReader(fh)}


def test_the_first_grade_grades_each_hand_in_and_records_the_roster_s(term):
    first = rows(term["course"], runs(term["course"])[0])
    assert sorted(first) == [("ana", CH01), ("ana", CH03), ("bob", CH01), ("bob", CH03), ("cleo", CH01),
                             ("cleo", CH03), ("zed", CH01)]
    assert {k: (r["total"], r["max_total"], r["manual_max"]) for k, r in first.items()} == {
        ("ana", CH01): ("8", "8", "2"), ("ana", CH03): ("10", "10", "0"), ("bob", CH01): ("8", "8", "2"),
        ("bob", CH03): ("5", "10", "0"), ("cleo", CH01): ("8", "8", "2"), ("cleo", CH03): ("8", "10", "0"),
        ("zed", CH01): ("8", "8", "2")}
    assert "zed / ch01_attention_cues" in term["first"] and "NOT ON THE ROSTER" in term["first"]
    recorded = {(s, a) for s, a, *_ in term["dump_first"]["submissions"]}
    assert recorded == {(s, a) for s in ("ana", "bob", "cleo") for a in (CH01, CH03)}
    assert [s[0] for s in term["dump_first"]["students"]] == ["ana", "bob", "cleo", "dev"]  # zed not added


def test_written_answers_are_left_to_formgrader(term):
    for student, _, _, _, _, _, grades, _ in term["dump_first"]["submissions"]:
        by = {g[0]: g for g in grades}
        if "written1" in by:
            assert by["written1"] == ("written1", None, None, None, True), (student, by["written1"])
        assert all(not g[4] for name, g in by.items() if name != "written1")  # autograded: no review needed


def test_cleo_s_html_is_listed_and_her_hint_shown_never_the_hidden_test(term):
    first = rows(term["course"], runs(term["course"])[0])
    assert "ignored (only the notebook ch01_attention_cues.ipynb is graded): ch01_attention_cues.html" in \
        first["cleo", CH01]["notes"]
    assert first["cleo", CH03]["notes"] == f"ex4: hidden tests failed: AssertionError (hint: {HINT})"
    html = term["feedback"]["cleo", CH03][0].read_text()
    assert HINT in html and "BEGIN HIDDEN" not in html and "torch.manual_seed(34)" not in html
    assert "att(q, k, v, lens)" not in html  # a line of the hidden tests
    # the instructor's traceback of the failing hidden test, beside the gradebook in formgrader's lab
    tb = (term["root"] / "grading" / "tracebacks" / CH03 / "cleo.txt").read_text()
    assert "ex4_tests (hidden tests)" in tb and "AssertionError" in tb
    # and on formgrader's page of her submission, under the failing test cell: never in her feedback
    page = formgrader_page(term["root"], "cleo", CH03)
    tests = page[page.index("ex4_tests"):]
    assert feedback.HEADING in tests and "ex4_tests (hidden tests)" in tests and "att(q, k, v, lens)" in tests
    assert feedback.HEADING not in html and "ex4_tests (hidden tests)" not in html
    # the own-work rule's 150 lines are left out of both (its ANSWERS cell stays)
    assert "OwnWorkError" not in page and "OwnWorkError" not in html and "ANSWERS" in page


def formgrader_page(root: Path, student: str, assignment: str) -> str:
    """The HTML formgrader shows for a submission (its SubmissionHandler: the autograded notebook
    through nbconvert's HTMLExporter with formgrader's template and the course's config)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    config = Course(root).config
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": assignment, "notebook_id": assignment, "submission_id": "x", "index": 0,
                 "total": 1, "base_url": "/", "student": student, "last_name": "", "first_name": "",
                 "notebook_path": f"/autograded/{student}/{assignment}/{assignment}.ipynb"}
    path = root / "autograded" / student / assignment / f"{assignment}.ipynb"
    return HTMLExporter(config=config).from_filename(str(path), resources=resources)[0]


def test_a_manual_score_survives_later_grading_and_a_resubmission_changes_one_row(term):
    second = rows(term["course"], runs(term["course"])[1])
    assert sorted(second) == [("bob", CH03), ("zed", CH01)]  # zed: graded again, still not on the roster
    assert second["bob", CH03]["total"] == "10"
    before = {s[:2]: s for s in term["dump_manual"]["submissions"]}
    after = {s[:2]: s for s in term["dump_second"]["submissions"]}
    changed = [k for k in before if before[k] != after[k]]
    assert changed == [("bob", CH03)]
    assert "OBSOLETE bob / ch03_scoring_functions / ex2_solution" in term["second"]
    assert "W goes between q and k once." in (runs(term["course"])[1] / "report.md").read_text()
    bob = dict((g[0], g) for g in after["bob", CH03][6])
    assert bob["ex2_tests"][1:3] == (2.0, None)
    # a forced regrade of ana's ch01 keeps what the instructor entered
    assert "graded 1 submission" in term["third"]
    ana = {g[0]: g for g in {s[:2]: s for s in term["dump_third"]["submissions"]}["ana", CH01][6]}
    comments = {c[0]: c for c in {s[:2]: s for s in term["dump_third"]["submissions"]}["ana", CH01][7]}
    assert ana["written1"][2] == 1.5 and ana["written1"][4] is False
    assert comments["ex1_solution"][2] == "Neat and stable."
    assert term["dump_third"] == term["dump_second"]


def test_formgrader_shows_every_submission_with_the_book_s_scores(term):
    """formgrader reads nbgrader's API: every recorded submission autograded, its notebook there."""
    from nbgrader.apps.api import NbGraderAPI

    api = NbGraderAPI(coursedir=term["course"].coursedir, config=term["course"].config)
    subs = {s["student"]: s for s in api.get_submissions(CH01)}
    # zed's collected hand-in is listed as not autograded: formgrader too shows who is not on the roster
    assert sorted(subs) == ["ana", "bob", "cleo", "zed"] and not subs.pop("zed")["autograded"]
    assert all(s["autograded"] for s in subs.values())
    assert (subs["ana"]["score"], subs["bob"]["score"], subs["cleo"]["score"]) == (9.5, 8.0, 8.0)
    # bob's written answer got its 0 before the exports; cleo's still waits
    assert subs["cleo"]["needs_manual_grade"] and not subs["ana"]["needs_manual_grade"]
    assert sorted(nb["student"] for nb in api.get_notebook_submissions(CH03, CH03)) == ["ana", "bob", "cleo"]


def test_each_student_gets_their_own_feedback_through_the_exchange(term):
    fb = term["feedback"]
    assert [len(fb[s, n]) for s in ("ana", "bob", "cleo") for n in (CH01, CH03)] == [1] * 6
    ana = fb["ana", CH01][0].read_text()
    assert "Neat and stable." in ana and "Score: 9.5 / 10.0" in ana
    bob = fb["bob", CH03][0].read_text()
    assert "Score: 9.0 / 10.0" in bob and "Neat and stable." not in bob


def test_make_feedback_refreshes_exactly_the_feedback_a_regrade_made_stale(term):
    """The feedback was generated and released (above). A regrade of one pair (forced, as after a
    fixed test) leaves its feedback out of date: make grade names it and the command that
    refreshes it; make feedback generates and releases again exactly that feedback, and the
    others stay as they were, byte for byte; run again, it has nothing to do."""
    root, course = term["root"], term["course"]
    htmls = sorted(root.glob("feedback/*/*/*.html"))
    released = sorted(term["exchange"].rglob("feedback/*.html"))
    assert len(htmls) == 6 and len(released) == 6 and course.stale_feedback() == []
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in htmls + released}
    time.sleep(1.0)
    out = coursegrader("grade", "--course", str(root), "--force", "--student", "cleo", "--assignment", CH03)
    assert f"FEEDBACK OUT OF DATE cleo / {CH03}: generated before this grade" in out, out
    assert out.count("FEEDBACK OUT OF DATE") == 1 and f"make feedback COURSE={root}" in out, out
    assert course.stale_feedback() == [("cleo", CH03)]
    done = make_feedback(root)
    assert f"refreshed cleo / {CH03}" in done and "1 feedback file refreshed" in done, done
    changed = sorted(p for p, (mtime, _) in before.items() if p.stat().st_mtime_ns != mtime)
    cleo = root / "feedback" / "cleo" / CH03 / f"{CH03}.html"
    assert [p for p in changed if p.is_relative_to(root)] == [cleo]
    assert len([p for p in changed if p.is_relative_to(term["exchange"])]) == 1  # hers, released again
    assert HINT in cleo.read_text() and feedback.HEADING not in cleo.read_text()
    assert course.stale_feedback() == []
    assert "every feedback file is up to date" in make_feedback(root)


def make_feedback(root: Path) -> str:
    """``make feedback COURSE=root`` (the real target; its ``python -m coursegrader feedback``
    where the book's .venv is not built and make would install it first)."""
    if not (ROOT / ".venv" / ".installed").exists():
        return coursegrader("feedback", "--course", str(root))
    done = subprocess.run(["make", "feedback", f"COURSE={root}"], cwd=ROOT, capture_output=True, text=True,
                          env={**nbgrader_env(), "MAKEFLAGS": ""})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_every_number_of_the_exports(term):
    tmp = term["tmp"]
    nb = {(r[3], r[0]): r for r in read_csv(tmp / "csv.csv")[1:]}
    expected = {  # (student, assignment): raw score, late penalty, score, max
        ("ana", CH01): (9.5, 0.0, 9.5), ("ana", CH03): (10.0, 0.0, 10.0), ("bob", CH01): (8.0, 0.0, 8.0),
        ("bob", CH03): (10.0, 1.0, 9.0), ("cleo", CH01): (8.0, 0.0, 8.0), ("cleo", CH03): (8.0, 0.0, 8.0),
        ("dev", CH01): (0.0, 0.0, 0.0), ("dev", CH03): (0.0, 0.0, 0.0)}
    assert sorted(nb) == sorted(expected)  # the whole roster, nobody else
    for key, (raw, penalty, score) in expected.items():
        row = nb[key]
        assert tuple(float(x) for x in row[7:11]) == (raw, penalty, score, 10.0), key
        assert (row[2] == "") == (key[0] == "dev"), key  # a submission has its timestamp
    canvas = read_csv(tmp / "canvas.csv")
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", CH01, CH03]
    assert canvas[1] == ["Points Possible", "", "", "", "", "10", "10"]
    assert canvas[2:] == [["Alves, Ana", "1001", "", "ana", "", "9.5", "10"],
                          ["Brown, Bob", "1002", "", "bob", "", "8", "9"],
                          ["Costa, Cleo", "1003", "", "cleo", "", "", "8"],  # written1 not graded yet
                          ["Dias, Dev", "1004", "", "dev", "", "0", "0"]]
    assert "cleo / ch01_attention_cues: written1" in term["exports"]["canvas"]
    moodle = read_csv(tmp / "moodle.csv")
    assert moodle[0] == ["First name", "Last name", "ID number", "Institution", "Department", "Email address",
                         CH01, CH03]
    assert moodle[1:] == [["Ana", "Alves", "1001", "", "", "ana@example.org", "9.5", "10"],
                          ["Bob", "Brown", "1002", "", "", "bob@example.org", "8", "9"],
                          ["Cleo", "Costa", "1003", "", "", "cleo@example.org", "", "8"],
                          ["Dev", "Dias", "1004", "", "", "dev@example.org", "0", "0"]]
    with open(term["course"].reports / "grades.csv", newline="", encoding="utf-8") as fh:
        table = {(r["student"], r["assignment"]): r for r in csv.DictReader(fh)}
    assert table["bob", CH03]["score"] == "9" and table["dev", CH01]["status"] == "missing"


def test_batch_tasks_and_a_merge_give_the_gradebook_of_one_grade_run(term):
    """Each pair of ch03 graded by its own command (as a Slurm array task would), the results
    merged with ``record``: the gradebook's ch03 records and autograded notebooks equal those
    the single ``grade`` run wrote."""
    snapshot, results = term["snapshot"], term["tmp"] / "batch"
    listing = coursegrader("pairs", "--course", str(snapshot), "--assignment", CH03)
    (term["tmp"] / "pairs.txt").write_text(listing)
    tasks = listing.splitlines()
    assert [t.split("\t")[0] for t in tasks] == ["ana", "bob", "cleo"]

    def task(i: int) -> str:
        return coursegrader_cli("grade-pair", "--course", str(snapshot), "--out", str(results / f"task-{i}"),
                                "--pairs", str(term["tmp"] / "pairs.txt"), "--index", str(i))

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(task, range(len(tasks))))
    folders = [str(results / f"task-{i}") for i in range(len(tasks))]
    coursegrader("record", *folders, "--course", str(snapshot))
    merged = gradebook.dump(Course(snapshot))
    assert merged["students"] == term["dump_first"]["students"]
    ch03 = [s for s in term["dump_first"]["submissions"] if s[1] == CH03]
    assert [s for s in merged["submissions"] if s[1] == CH03] == ch03
    for rel, data in term["autograded_first"].items():
        if rel.parts[2] == CH03:
            assert (snapshot / rel).read_bytes() == data, rel


def test_regenerating_after_a_typo_fix_keeps_the_term(term):
    """make assignments again, after fixing a typo in a statement: the course's submissions,
    autograded notebooks, feedback, roster, due dates and grades are all still there."""
    root, source = term["root"], term["source"]
    before = {p: p.read_bytes() for d in ("submitted", "autograded", "feedback")
              for p in (root / d).rglob("*") if p.is_file()}
    dump = gradebook.dump(term["course"])
    path = source / CH01 / f"{CH01}.ipynb"
    path.write_text(path.read_text().replace("Write `softmax_t(scores, temperature)`", "Write `softmax_t`"))
    log = []
    generate(root, source=source, log=log.append)
    assert any(line.startswith(f"generated {CH01}") for line in log) and not any(CH03 in ln for ln in log[:1])
    assert any(f"{CH01} was released: students have the old version" in ln for ln in log), log
    assert "Write `softmax_t`" in (root / "release" / CH01 / f"{CH01}.ipynb").read_text()
    assert {p: p.read_bytes() for p in before} == before
    assert gradebook.dump(term["course"]) == dump
    with term["course"].gradebook() as gb:
        assert gb.find_assignment(CH03).duedate is not None
    # a course copy edited by hand is not overwritten without force
    edited = root / "source" / CH03 / f"{CH03}.ipynb"
    edited.write_text(edited.read_text().replace("Exercise 4 (2 points)", "Exercise 4 (2 points!)"))
    (source / CH03 / f"{CH03}.ipynb").write_text((source / CH03 / f"{CH03}.ipynb").read_text() + " ")
    with pytest.raises(SystemExit, match=re.escape(f"source/{CH03}/{CH03}.ipynb")):
        generate(root, source=source, log=lambda *a: None)
    assert "2 points!" in edited.read_text()


def test_nbgrader_s_own_autograde_is_switched_off_and_touches_nothing(term):
    root = term["root"]
    before = {p: p.read_bytes() for p in (root / "autograded").rglob("*") if p.is_file()}
    text = nbgrader_cli(root, "autograde", CH01, "--force", check=False)  # what the instructor sees
    assert "graded by the book's sandboxed grader" in text and "Traceback" not in text
    assert {p: p.read_bytes() for p in (root / "autograded").rglob("*") if p.is_file()} == before


def test_a_command_run_in_this_process_fails_with_its_output_and_leaves_nothing_behind(tmp_path):
    """The in-process runs above: a failing command fails the test with what it logged, and the
    working directory, environment, ``sys.path``, nbgrader's app singletons and the log handlers
    are what they were before it."""
    from nbgrader.apps import NbGraderApp, ReleaseAssignmentApp

    root = tmp_path / "course"
    root.mkdir()
    write_config(root)
    nbgrader(root, "db", "student", "list")  # nbgrader's imports done, as after the term's first command
    before = (dict(os.environ), os.getcwd(), list(sys.path))
    with pytest.raises(AssertionError, match=r"(?s)release_assignment nope: exit status 1\n.*"
                                             r"Assignment not found at: .*release/\./nope"):
        nbgrader(root, "release_assignment", "nope")
    assert (dict(os.environ), os.getcwd(), list(sys.path)) == before
    assert not NbGraderApp.initialized() and not ReleaseAssignmentApp.initialized()
    apps = {name: [h for h in lg.handlers if type(h) is logging.StreamHandler]  # pytest's own are subclasses
            for name, lg in logging.root.manager.loggerDict.items() if name.endswith("App")}
    assert "ReleaseAssignmentApp" in apps and not any(apps.values())  # nothing logs into a finished command
    assert "There are 0 students in the database" in nbgrader(root, "db", "student", "list")


def test_make_targets_run_the_course_commands(tmp_path):
    """The Makefile's course targets (dry run; `install` is skipped when .venv is built)."""
    if not (ROOT / ".venv" / ".installed").exists():
        pytest.skip("make's targets need the book's .venv")
    course = tmp_path / "c"
    command = ["make", "-n", "assignments", "grade", "export", f"COURSE={course}", "JOBS=3", "FORCE=1",
               "STUDENT=ana", "LMS=moodle"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "MAKEFLAGS": ""})
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert f"-m coursegrader generate --course {course} --force" in text
    assert f"-m coursegrader grade {course}/submitted --course {course} --jobs 3 --force --student ana" \
        in text
    assert f"-m coursegrader export moodle --course {course}" in text
    assert "pip install" not in text


def test_a_stale_chinese_statement_stops_the_chinese_course(tmp_path):
    """make assignments LANG=zh refuses when an English statement changed after its translation:
    the Chinese one would still say the old thing."""
    from book import i18n
    from coursegrader.cli import stale_translations

    catalogue = f"assignments/{CH01}.po"
    assert stale_translations([i18n.Source(catalogue, SOURCE / CH01 / f"{CH01}.ipynb", "notebook")]) == []
    changed = tmp_path / f"{CH01}.ipynb"
    text = (SOURCE / CH01 / f"{CH01}.ipynb").read_text()
    assert "Write `softmax_t(scores, temperature)`" in text
    changed.write_text(text.replace("Write `softmax_t(scores, temperature)`", "Write `softmax_t(scores, t)`"))
    found = stale_translations([i18n.Source(catalogue, changed, "notebook")])
    assert found and all(f.startswith(catalogue) for f in found) and "out of date" in found[0]


def test_the_chinese_course_has_its_own_default_course_id(monkeypatch, tmp_path):
    """Both courses can share one exchange: make assignments LANG=zh names a new course
    attention-book-zh, the English one attention-book (their config's CourseDirectory.course_id)."""
    from book import i18n
    from coursegrader import cli

    made = {}
    monkeypatch.setattr(i18n, "generate", lambda **_: [])
    monkeypatch.setattr(cli, "generate", lambda course, **kw: made.setdefault(str(course), kw["course_id"]))
    for lang in ("en", "zh"):
        assert cli.main(["generate", "--lang", lang, "--course", str(tmp_path / lang)]) == 0
    assert made == {str(tmp_path / "en"): "attention-book", str(tmp_path / "zh"): "attention-book-zh"}
