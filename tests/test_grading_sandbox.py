"""Grading a class you can trust: adversarial submissions, sandbox, crashes, parallel runs.

One class is graded once (two jobs, LIMIT s per cell and per call) and many tests read its grade table: every
source notebook (full marks), untouched student versions (0) of three assignments, the
attacks of ``tests/attacks.py`` (each with its expected points per exercise; among
them every route to a call that answers an exercise), one submission per assignment that calls
what its exercise rules out, submissions through symbolic and hard links, files that are
not notebooks, and answers hard-coded to the self-checks. The grader reads a *copy* of the
sources and the attacks aim at decoy files next to it, so a broken defence can only damage
``tmp_path``.
"""
import csv
import hashlib
import os
import re
import shutil
from pathlib import Path

import attacks  # tests/attacks.py, beside this file
import nbformat
import pytest

from coursegrader import grading, sandbox
from coursegrader.run import grade
from coursegrader.spec import Spec
from coursegrader.spec import TestCell as Part  # not collected as a test class

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "assignments" / "source"
NAMES = sorted(p.name for p in SOURCE.iterdir() if p.is_dir())
CODE = [ROOT / d for d in ("attnlib", "scripts", "coursegrader", "assignments")]  # must not change

pytestmark = pytest.mark.slow
# The time limit per cell and per call while the class is graded: at least 3x the slowest cell of
# any source on a loaded machine. Measured with a second CPU-bound process beside it on the 2-core
# box (record_timing of nbclient, every source): ch08's ex4 test cell 4.2 s, ch02's ex4 (best_width)
# 3.4 s; ch07's ex4 cell took 21 s for 9 separate calls (about 2.4 s each); ch09's ex2 hidden
# tests up to 6.7 s and an honest ex3 answer in blocks of 16 queries up to 10 s (the first operator
# counter loads its machinery), hence 30 s; setup cells have their own limit. Runaway code is
# tested on a tiny notebook with a short limit (below), not here.
LIMIT = 30
CH03 = attacks.NAME
IDLE = NAMES[:1] + NAMES[-1:]  # untouched student versions graded (the others are like them)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return {(r["student"], r["assignment"]): r for r in csv.DictReader(fh)}


def digest(*roots: Path, skip: Path | None = None) -> dict:
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if skip is not None and p.is_relative_to(skip):
                continue
            if p.is_file() and not p.is_symlink():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def sleepers() -> list[str]:
    found = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and b"4242.5" in (p / "cmdline").read_bytes():
                found.append(p.name)
        except OSError:
            pass
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    why = sandbox.probe()
    if why:  # e.g. a CI image without user namespaces: make grade refuses there too
        pytest.skip(f"no sandbox can run on this machine: {why}")
    tmp = tmp_path_factory.mktemp("class")
    source = tmp / "source"
    shutil.copytree(SOURCE, source)
    decoys = tmp / "repo"
    decoys.mkdir()
    (decoys / "Makefile").write_text("grade:\n\ttrue\n")
    (decoys / "gradebook.db").write_bytes(b"SQLite format 3\x00")
    subs, out = tmp / "submitted", tmp / "out"
    targets = [source, source / CH03 / f"{CH03}.ipynb", subs / "solver", decoys, decoys / "Makefile",
               decoys / "gradebook.db", out]
    expected = attacks.write_class(subs, source, host_paths=targets)
    for name in NAMES:  # ch03's untouched version is the attack "untouched"
        todo = [("solver", nbformat.read(SOURCE / name / f"{name}.ipynb", as_version=4))]
        todo += [("idle", attacks.untouched(SOURCE, name))] if name in IDLE else []
        for student, nb in todo:
            (subs / student / name).mkdir(parents=True)
            nbformat.write(nb, subs / student / name / f"{name}.ipynb")
    (subs / "textfile").mkdir()
    (subs / "textfile" / f"{CH03}.txt").write_text("my answers: 42\n")
    (subs / "corrupt" / CH03).mkdir(parents=True)
    truncated = (SOURCE / CH03 / f"{CH03}.ipynb").read_text()[:700]
    (subs / "corrupt" / CH03 / f"{CH03}.ipynb").write_text(truncated)
    (subs / "renamed").mkdir()
    shutil.copy(SOURCE / CH03 / f"{CH03}.ipynb", subs / "renamed" / f"{CH03} (1).ipynb")
    for student in attacks.CH09_ATTACKS:
        (subs / student / attacks.CH09).mkdir(parents=True)
        nbformat.write(attacks.ch09_attack(SOURCE, student),
                       subs / student / attacks.CH09 / f"{attacks.CH09}.ipynb")
    for name in NAMES:
        (subs / "cheat" / name).mkdir(parents=True)
        nbformat.write(attacks.cheat(SOURCE, name), subs / "cheat" / name / f"{name}.ipynb")
    links = {"link_source": source / CH03, "link_other_student": subs / "solver" / CH03,
             "link_etc": Path("/etc"), "link_loop": subs / "link_loop" / CH03}
    for student, target in links.items():
        (subs / student).mkdir()
        (subs / student / CH03).symlink_to(target)
    (subs / "link_student_folder").symlink_to(subs / "solver")
    (subs / "link_notebook" / CH03).mkdir(parents=True)
    (subs / "link_notebook" / CH03 / f"{CH03}.ipynb").symlink_to(source / CH03 / f"{CH03}.ipynb")
    (subs / "hard_link" / CH03).mkdir(parents=True)
    os.link(source / CH03 / f"{CH03}.ipynb", subs / "hard_link" / CH03 / f"{CH03}.ipynb")
    for student in ("twin", "hard_link_twin"):  # two students hand in one file: neither is graded
        (subs / student / CH03).mkdir(parents=True)
    nbformat.write(attacks.untouched(SOURCE, CH03), subs / "twin" / CH03 / f"{CH03}.ipynb")
    os.link(subs / "twin" / CH03 / f"{CH03}.ipynb", subs / "hard_link_twin" / CH03 / f"{CH03}.ipynb")
    (subs / "hard_coded" / CH03).mkdir(parents=True)
    nbformat.write(hard_coded(SOURCE), subs / "hard_coded" / CH03 / f"{CH03}.ipynb")
    (subs / "borrows" / CH03).mkdir(parents=True)
    nbformat.write(borrows(SOURCE), subs / "borrows" / CH03 / f"{CH03}.ipynb")
    before = digest(tmp, *CODE, skip=out)
    lines = []
    run = grade(subs, out, timeout=LIMIT, source=source, jobs=2, log=lines.append)
    return {"tmp": tmp, "out": out, "run": run, "rows": read_csv(run.csv), "expected": expected,
            "before": before, "lines": lines, "source": source, "subs": subs}


@pytest.mark.parametrize("attack", sorted(attacks.ATTACKS))
def test_each_attack_gets_exactly_its_expected_points(graded, attack):
    row = graded["rows"][attack, CH03]
    got = tuple(int(float(row[f"ex{k}"])) for k in range(1, 5))
    assert (row["status"], row["sandbox"], got) == ("graded", "yes", graded["expected"][attack]), row["notes"]
    assert row["max_total"] == "10"


@pytest.mark.parametrize("name", NAMES)
def test_every_source_scores_full_marks_and_its_student_version_zero(graded, name):
    solver = graded["rows"]["solver", name]
    assert solver["status"] == "graded" and solver["notes"] == "", solver["notes"]
    assert float(solver["total"]) == float(solver["max_total"]) > 0
    if name not in IDLE and name != CH03:
        return
    idle = graded["rows"]["idle" if name in IDLE else "untouched", name]
    assert idle["status"] == "graded" and float(idle["total"]) == 0
    assert idle["notes"].count("not answered") == sum(1 for k in idle if k.startswith("ex") and idle[k])
    feedback = (graded["run"].feedback / "solver" / f"{name}.md").read_text()
    assert f"Score: {solver['total']} / {solver['max_total']}" in feedback


@pytest.mark.parametrize("attack", sorted(attacks.ANSWER_ROUTES))
def test_every_route_to_the_answer_is_named(graded, attack):
    row = graded["rows"][attack, CH03]
    _, used = attacks.ANSWER_ROUTES[attack]
    assert re.search(rf"uses {re.escape(used)}( \(.*?\))?, which ", row["notes"]), row["notes"]
    if "in a cell" not in used:
        assert row["notes"].count(" uses ") == 1, row["notes"]  # exercise 4 only


@pytest.mark.parametrize("name", NAMES)
def test_a_call_that_answers_the_exercise_costs_it_and_says_so(graded, name):
    row = graded["rows"]["cheat", name]
    _, _, points, used = attacks.CHEATS[name]
    got = tuple(int(float(row[f"ex{k}"])) for k in range(1, len(points) + 1))
    assert (row["status"], got) == ("graded", points), row["notes"]
    ex = points.index(0) + 1
    # the note names the exercise and the line of its own cell that made the call
    assert re.search(rf"ex{ex} uses {re.escape(used)} \(ex{ex}_solution, line \d+: `[^`]+`\), which this "
                     "exercise asks you to write yourself", row["notes"]), row["notes"]
    feedback = (graded["run"].feedback / "cheat" / f"{name}.md").read_text()
    assert f"ex{ex} uses {used}" in feedback
    assert graded["rows"]["solver", name]["notes"] == ""  # the honest solution: full marks, no note


@pytest.mark.parametrize("student", sorted(attacks.CH09_ATTACKS))
def test_ch09_counts_the_operators_run_in_the_sandbox(graded, student):
    """Chapter 9's hidden tests count the operators the student's function runs (a copy of the
    key/value heads, keys scored outside the window): they run in the sandbox, which records them
    for the tests' counters. An answer that is right but copies the heads (five ways) or scores
    every key and masks loses exactly that exercise, as in the notebook; so does one that hides its
    operators from the count or looks for it. The model solution keeps full marks (above)."""
    row = graded["rows"][student, attacks.CH09]
    _, _, points, said = attacks.CH09_ATTACKS[student]
    got = tuple(int(float(row[f"ex{k}"])) for k in range(1, len(points) + 1))
    assert (row["status"], row["sandbox"], got) == ("graded", "yes", points), row["notes"]
    ex = points.index(0) + 1
    assert said in row["notes"] and row["notes"].startswith(f"ex{ex}"), row["notes"]
    assert " | " not in row["notes"], row["notes"]  # that exercise's note only


@pytest.mark.parametrize("student, where, why", [
    ("link_source", "link_source/" + CH03, "symbolic link"),
    ("link_other_student", "link_other_student/" + CH03, "symbolic link"),
    ("link_etc", "link_etc/" + CH03, "symbolic link"),
    ("link_loop", "link_loop/" + CH03, "symbolic link"),
    ("link_student_folder", "link_student_folder", "symbolic link"),
    ("link_notebook", f"{CH03}.ipynb", "symbolic link"),
    ("hard_link", f"{CH03}.ipynb", f"hard link to the instructor's file {CH03}/{CH03}.ipynb"),
    ("hard_link_twin", f"{CH03}.ipynb", "hard link to the notebook of hard_link_twin and twin"),
    ("twin", f"{CH03}.ipynb", "hard link to the notebook of hard_link_twin and twin"),
])
def test_no_submission_is_read_through_a_link(graded, student, where, why):
    row = graded["rows"][student, CH03]
    assert (row["status"], row["total"]) == ("refused", "0"), row
    assert row["notes"].startswith(f"not graded: {where} is a {why}") and "submit the notebook itself" in \
        row["notes"], row["notes"]
    assert not (graded["run"].folder / "work" / student / CH03 / "submission" / f"{CH03}.ipynb").exists()


def test_no_file_outside_the_output_folder_changed(graded):
    after = digest(graded["tmp"], *CODE, skip=graded["out"])
    assert after == graded["before"]


def test_nothing_the_submissions_started_is_still_running(graded):
    assert sleepers() == []
    assert not list(Path("/sys/fs/cgroup/pids").glob(f"attnbook-grade-{os.getpid()}-*"))


def test_feedback_never_quotes_the_hidden_tests(graded):
    hidden = set()
    for name in NAMES:
        nb = nbformat.read(SOURCE / name / f"{name}.ipynb", as_version=4)
        for c in nb.cells:
            _, _, text = c.source.partition("### BEGIN HIDDEN TESTS")
            hidden |= {ln.strip() for ln in text.splitlines() if len(ln.strip()) > 12}
    for path in graded["run"].feedback.rglob("*.md"):
        text = path.read_text()
        assert "HIDDEN" not in text and not [ln for ln in hidden if ln in text], path


def test_the_notes_say_what_happened(graded):
    rows = graded["rows"]

    def notes(student):
        return rows[student, CH03]["notes"]

    assert "memory limit" in notes("memory_hog")
    assert "points already earned were kept" in notes("killed_in_call")
    assert "ValueError: student bug" in notes("raises")
    assert "ex4_solution appears 2 times" in notes("duplicated_cell") and "is the one graded" in \
        notes("duplicated_cell")
    assert "test cell ex2_tests was missing; the original ran" in notes("deletes_test")
    assert "self-check failed" in notes("prints_passed")
    # the process limit held: the fork loop stopped long before its 400 children
    log = (graded["run"].folder / "work" / "fork_bomb" / CH03 / "sandbox0.log").read_text()
    forked = int(log.split("forked ")[1].split()[0])
    assert forked <= sandbox.PROCESSES + 8  # a root grader's pids cgroup allows 8 more
    flood = graded["run"].folder / "work" / "output_flood" / CH03 / "sandbox0.log"
    assert flood.stat().st_size <= sandbox.OUTPUT
    assert "found []" in (graded["run"].folder / "work" / "snoops" / CH03 / "sandbox0.log").read_text()


def test_files_that_are_not_notebooks_and_renamed_notebooks(graded):
    rows = graded["rows"]
    text, corrupt, renamed = rows["textfile", CH03], rows["corrupt", CH03], rows["renamed", CH03]
    assert text["status"] == corrupt["status"] == "not a notebook"
    assert text["total"] == corrupt["total"] == "0"
    assert "found: ch03_scoring_functions.txt" in text["notes"]
    assert "not a readable notebook" in corrupt["notes"] and "JSON" in corrupt["notes"]
    assert renamed["total"] == "10" and "graded ch03_scoring_functions (1).ipynb as" in renamed["notes"]


def test_progress_is_written_per_test_cell(graded):
    lines = (graded["run"].folder / "work" / "killed_in_call" / CH03 / "progress.jsonl").read_text()
    assert [ln.count('"points": 0.0') for ln in lines.splitlines()] == [0, 0, 1, 0]


def test_counts_printed_match_what_was_done(graded):
    run, rows = graded["run"], graded["rows"]
    students = {s for s, _ in rows}
    handed = [r for r in rows.values() if r["status"] != "no submission"]
    assert run.summary().startswith(f"graded {len(handed)} submissions, {len(students)} students, "
                                    f"{len(rows)} rows")
    assert len(graded["lines"]) == len(rows) + 1


def test_a_second_run_keeps_the_first(graded, tmp_path):
    first = graded["run"]
    one = tmp_path / "one"
    (one / "solver").mkdir(parents=True)
    shutil.copy(SOURCE / NAMES[0] / f"{NAMES[0]}.ipynb", one / "solver" / f"{NAMES[0]}.ipynb")
    second = grade(one, graded["out"], timeout=30, source=graded["source"], jobs=1, log=lambda *a: None,
                   student="solver", assignment=NAMES[0])
    assert second.folder != first.folder and first.csv.is_file() and second.csv.is_file()
    assert ("solver", CH03) in read_csv(first.csv)
    assert list(read_csv(second.csv)) == [("solver", NAMES[0])]
    assert (first.feedback / "raises" / f"{CH03}.md").is_file()
    assert (graded["out"] / "latest").resolve() == second.folder.resolve()


def test_no_sandbox_refuses_with_a_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "bwrap", lambda: None)
    (tmp_path / "s" / "x").mkdir(parents=True)
    with pytest.raises(SystemExit, match="bubblewrap.*--no-sandbox"):
        grade(tmp_path / "s", tmp_path / "out", log=lambda *a: None)


# answers that return what each self-check expects, whatever the inputs
HARD_CODED = {
    "ex1_solution": "def my_masked_softmax(X, valid_lens=None):\n"
                    "    return torch.tensor([[[0.5, 0.5, 0, 0]], [[1 / 3, 1 / 3, 1 / 3, 0]]])",
    "ex2_solution": "def general_score(queries, keys, W):\n    return torch.full((1, 2, 4), 15.0)",
    "ex3_solution": "def general_attention(queries, keys, values, W, valid_lens=None):\n"
                    "    return torch.tensor([[[1.0, 2.0]]]), torch.tensor([[[0.5, 0.5, 0.0]]])",
    "ex4_solution": "def scaled_dot_attention(queries, keys, values, valid_lens=None):\n"
                    "    return torch.tensor([[[2.0, 3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0, 13.0]]])",
}


def hard_coded(source):
    nb = nbformat.read(source / CH03 / f"{CH03}.ipynb", as_version=4)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in HARD_CODED:
            c.source = HARD_CODED[gid]
    return nb


BORROWS = """def my_masked_softmax(X, valid_lens=None):
    return attnlib.masked_softmax(X, valid_lens)
"""


def borrows(source):
    """ch03 whose exercise 1 calls attnlib.masked_softmax; exercises 3 and 4 call the student's
    own my_masked_softmax, as the reference solution does."""
    nb = nbformat.read(source / CH03 / f"{CH03}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1_solution")
    cell.source = BORROWS
    return nb


def test_a_ruled_out_call_costs_only_the_exercise_whose_code_makes_it(graded):
    row = graded["rows"]["borrows", CH03]
    got = tuple(int(float(row[f"ex{k}"])) for k in range(1, 5))
    assert got == (0, 2, 3, 2), row["notes"]
    assert row["notes"].count(" uses ") == 1, row["notes"]
    assert ("ex1 uses attnlib.masked_softmax (ex1_solution, line 2: "
            "`return attnlib.masked_softmax(X, valid_lens)`), which this exercise asks you to write "
            "yourself") in row["notes"], row["notes"]


def test_answers_fitted_to_the_self_checks_are_flagged_to_the_instructor_only(graded):
    row = graded["rows"]["hard_coded", CH03]
    assert (row["status"], row["total"]) == ("graded", "0"), row["notes"]
    assert row["flags"] == " | ".join(f"ex{n}: {grading.HARD_CODED}" for n in (1, 2, 3, 4))
    assert "self-check failed" not in row["notes"] and row["notes"].count("hidden tests failed") == 4
    assert "hard-coded" in (graded["run"].folder / "report.md").read_text()
    feedback = (graded["run"].feedback / "hard_coded" / f"{CH03}.md").read_text()
    assert "hard-coded" not in feedback and "fitted" not in feedback
    pair = graded["run"].folder / "work" / "hard_coded" / CH03
    assert "hard-coded" not in (pair / "autograded" / f"{CH03}.ipynb").read_text()
    # no honest submission is flagged (chapter 9's copies pass every check of values, and their
    # hidden test cell, one unit, fails on the count: they are flagged, rightly for a look)
    assert [s for (s, _), r in graded["rows"].items() if r["flags"] and s not in attacks.CH09_ATTACKS] == \
        ["hard_coded"]


def test_one_fitted_exercise_is_flagged_whatever_the_others_did():
    """The flag is per exercise: ex2 fitted (its self-check passed, its hidden tests failed) is
    flagged beside a right ex1 and a wrong ex3; ex3's self-check failed and ex4's code raised."""
    tests = [Part(f"ex{n}_tests", n, 1.0, "assert True", "### BEGIN HIDDEN TESTS\nassert x")
             for n in (1, 2, 3, 4)]
    spec = Spec("a", {}, [], {}, {}, tests)
    verdicts = [grading.Verdict("ex1_tests", 1, 1.0, 1.0),
                grading.Verdict("ex2_tests", 2, 1.0, failed="hidden tests", why="hidden tests failed"),
                grading.Verdict("ex3_tests", 3, 1.0, failed="self-check", why="self-check failed"),
                grading.Verdict("ex4_tests", 4, 1.0, failed="hidden tests", why="raised", by_student=True)]
    assert grading._flags(spec, verdicts) == [f"ex2: {grading.HARD_CODED}"]


def test_the_autograded_notebook_shows_verdicts_and_never_the_hidden_tests(graded):
    """What formgrader and nbgrader generate_feedback read: the student's cells, the source's
    metadata (not the student's edits), each test cell's verdict, no hidden test."""
    work = graded["run"].folder / "work"
    nb = nbformat.read(work / "edits_metadata" / CH03 / "autograded" / f"{CH03}.ipynb", as_version=4)
    meta = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]
            for c in nb.cells if "nbgrader" in c.metadata}
    assert meta["ex1_tests"]["points"] == 3 and meta["ex4_tests"]["locked"] and "ex9_tests" not in meta
    ex4 = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex4_tests")
    assert ex4.source.startswith("# Self-check") and "print('ok')" not in ex4.source
    assert ex4.outputs[0]["text"].startswith("0 of 2 points: self-check failed")
    # the solver handed in the instructor's notebook itself: its test cells lose their hidden part
    solver = nbformat.read(work / "solver" / CH03 / "autograded" / f"{CH03}.ipynb", as_version=4)
    text = nbformat.writes(solver)
    assert "BEGIN HIDDEN TESTS" not in text and "torch.manual_seed(34)" not in text
    lines = [o["text"] for c in solver.cells if c.cell_type == "code" for o in c.outputs]
    assert lines == ["passed: 3 of 3 points\n", "passed: 2 of 2 points\n", "passed: 3 of 3 points\n",
                     "passed: 2 of 2 points\n"]


def test_a_failing_submission_leaves_its_traceback_for_the_instructor(graded):
    text = (graded["run"].folder / "work" / "raises" / CH03 / "tracebacks.txt").read_text()
    assert "raise ValueError('student bug')" in text and "ValueError: student bug" in text
    assert "Traceback" not in (graded["run"].feedback / "raises" / f"{CH03}.md").read_text()


def tiny_assignment(folder: Path) -> Path:
    """A two-exercise assignment that grades in a moment: f adds one, g doubles (1 point each)."""
    from coursegrader.course import RULE

    def cell(gid, source, **meta):
        c = nbformat.v4.new_code_cell(source)
        c.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True, "grade_id": gid,
                                  "schema_version": 3, **meta}
        return c

    nb = nbformat.v4.new_notebook(cells=[
        cell("setup", "start = 0"), cell("own_work_rule", RULE.read_text()),
        cell("answers", 'ANSWERS = {"f": [], "g": []}\nwatch_answers(ANSWERS)'),
        cell("ex1_solution", "def f(n):\n    return n + 1", solution=True, locked=False),
        cell("ex1_tests", "assert f(1) == 2\n### BEGIN HIDDEN TESTS\n# hint: f adds one\nassert f(5) == 6\n"
             "### END HIDDEN TESTS", grade=True, points=1),
        cell("ex2_solution", "def g(n):\n    return 2 * n", solution=True, locked=False),
        cell("ex2_tests", "assert g(1) == 2\n### BEGIN HIDDEN TESTS\n# hint: g doubles\nassert g(3) == 6\n"
             "### END HIDDEN TESTS", grade=True, points=1)])
    (folder / "tiny").mkdir(parents=True)
    nbformat.write(nb, folder / "tiny" / "tiny.ipynb")
    return folder


def test_a_runaway_cell_or_call_is_stopped_at_the_limit_and_costs_its_exercise_only(tmp_path):
    """On a tiny assignment with a 2 s limit (its cells take milliseconds): a cell that never
    ends and a function that loops on the hidden inputs are stopped; the other exercise keeps
    its point."""
    why = sandbox.probe()
    if why:
        pytest.skip(f"no sandbox can run on this machine: {why}")
    source = tiny_assignment(tmp_path / "source")
    runaway = {"loops": ("ex1_solution", "while True:\n    pass"),
               "slow": ("ex2_solution", "def g(n):\n    while n > 2:\n        pass\n    return 2 * n")}
    for student, (gid, text) in runaway.items():
        nb = nbformat.read(source / "tiny" / "tiny.ipynb", as_version=4)
        next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == gid).source = text
        (tmp_path / "subs" / student / "tiny").mkdir(parents=True)
        nbformat.write(nb, tmp_path / "subs" / student / "tiny" / "tiny.ipynb")
    run = grade(tmp_path / "subs", tmp_path / "out", timeout=2, source=source, jobs=2, log=lambda *a: None)
    rows = {s: r for (s, _), r in read_csv(run.csv).items()}
    assert (rows["loops"]["ex1"], rows["loops"]["ex2"]) == ("0", "1"), rows["loops"]["notes"]
    assert (rows["slow"]["ex1"], rows["slow"]["ex2"]) == ("1", "0"), rows["slow"]["notes"]
    for student in runaway:
        assert "stopped after the 2 s time limit per cell" in rows[student]["notes"], rows[student]["notes"]
    assert sleepers() == []
