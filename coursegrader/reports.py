"""What a grading run leaves for people to read: its run folder and the class's grade table.

Each run writes ``OUT/runs/STAMP/`` (earlier runs are kept; ``OUT/latest`` points at the newest):
``grades.csv`` (a row per pair graded in this run: points per exercise, autograded total and
maximum, the points left to formgrader, status, notes, and flags for the instructor),
``report.md`` (for the instructor: what was graded, skipped, flagged, not on the roster, in the
wrong place, and manual grades a resubmission made obsolete), ``feedback/STUDENT/ASSIGNMENT.md``
(the notes for the student) and ``work/STUDENT/ASSIGNMENT/`` (the pair's folder,
``pairs.grade_pair``). ``OUT/grades.csv`` is the class table as it stands: with a course, one
row per student of the roster and assignment, from the gradebook (a missing submission is a 0
row); without one, the newest row of every pair any run graded.
"""
from __future__ import annotations

import csv
import datetime
from pathlib import Path

from coursegrader.result import Result
from coursegrader.zh import say


def new_run_folder(out: Path) -> Path:
    """``OUT/runs/STAMP`` (never an existing one) and ``OUT/latest`` pointing at it."""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M%S")
    folder, n = out / "runs" / stamp, 1
    while folder.exists():
        n += 1
        folder = out / "runs" / f"{stamp}_{n}"
    folder.mkdir(parents=True)
    latest = out / "latest"
    if latest.is_symlink() or not latest.exists():
        latest.unlink(missing_ok=True)
        latest.symlink_to(folder.relative_to(out))
    return folder


COLUMNS = ["total", "max_total", "manual_max", "status", "sandbox", "submitted_at", "flags", "notes"]


def write_csv(path: Path, results: list[Result]) -> None:
    """A row per result: ``student, assignment, ex1 .. exN, total, max_total, manual_max, status,
    sandbox, submitted_at, flags, notes`` (``exK`` empty for an assignment with fewer exercises;
    read it by column name)."""
    width = max((max(r.scores, default=0) for r in results), default=0)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "assignment", *[f"ex{k}" for k in range(1, width + 1)], *COLUMNS])
        for r in results:
            per = [f"{r.scores[k]:g}" if k in r.scores else "" for k in range(1, width + 1)]
            w.writerow([r.student, r.assignment, *per, f"{r.total:g}", f"{r.max_score:g}",
                        f"{r.manual_points:g}", r.status, r.sandbox, r.submitted_at or "",
                        " | ".join(r.flags), " | ".join(r.notes)])


def write_feedback(result: Result, points: dict[int, float], path: Path, lang: str = "en") -> None:
    """The student's feedback file: score, points per exercise (``points``: the maximum of
    each), the points graded by hand, and the notes (never the instructor's flags); ``lang``
    ``"zh"``: in Chinese (the notes are already in the course's language)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    zh = lang == "zh"
    lines = [f"# {result.assignment}：{result.student} 的反馈" if zh else
             f"# {result.assignment}: feedback for {result.student}", "",
             f"**{'得分' if zh else 'Score'}: {result.total:g} / {result.max_score:g}** ({result.status})",
             "",
             "| 练习 | 得分 | 满分 |" if zh else "| exercise | points | out of |", "|---|---|---|"]
    lines += [f"| {k} | {result.scores.get(k, 0.0):g} | {p:g} |" for k, p in sorted(points.items())]
    if result.manual_points:
        lines += ["", f"书面回答（{result.manual_points:g} 分）由教师手工评分。" if zh else
                  f"Written answers ({result.manual_points:g} points) are graded by hand."]
    lines += ["", "## 说明" if zh else "## Notes", ""]
    lines += [f"- {n}" for n in result.notes] or [f"- {say('every test passed', lang)}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def folder_table(out: Path) -> list[dict]:
    """The class table of a folder of runs without a gradebook: the newest row of every
    (student, assignment) pair over ``OUT/runs/*/grades.csv``."""
    rows: dict[tuple[str, str], dict] = {}
    for path in sorted((out / "runs").glob("*/grades.csv")):
        with open(path, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                rows[row["student"], row["assignment"]] = {"run": path.parent.name, **row}
    return [rows[k] for k in sorted(rows)]


def course_table(course) -> list[dict]:
    """The class table from the gradebook: a row per student of the roster and assignment."""
    table = []
    with course.gradebook() as gb:
        assignments = sorted(gb.assignments, key=lambda a: a.name)
        for student in sorted(gb.students, key=lambda s: s.id):
            for a in assignments:
                row = {"student": student.id, "assignment": a.name, "max_score": f"{a.max_score:g}"}
                try:
                    sub = gb.find_submission(a.name, student.id)
                except Exception:  # noqa: BLE001 - MissingEntry: nothing handed in
                    row.update(status="missing", submitted_at="", seconds_late="0", raw_score="0",
                               late_penalty="0", score="0", needs_manual_grade="")
                else:
                    penalty = sub.late_submission_penalty or 0.0
                    row.update(status="needs manual grading" if sub.needs_manual_grade else "graded",
                               submitted_at=str(sub.timestamp or ""),
                               seconds_late=f"{sub.total_seconds_late:g}",
                               raw_score=f"{sub.score:g}", late_penalty=f"{penalty:g}",
                               score=f"{max(0.0, sub.score - penalty):g}",
                               needs_manual_grade="yes" if sub.needs_manual_grade else "no")
                table.append(row)
    return table


def write_table(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(k for row in rows for k in row)) or ["student", "assignment"]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fields)
        w.writeheader()
        w.writerows(rows)


def write_report(path: Path, run) -> None:
    """``report.md``: for the instructor, everything the run found that needs a look."""
    lines = [f"# Grading run {path.parent.name}", "", run.summary(), ""]

    def section(title: str, items: list[str]) -> None:
        if items:
            lines.extend([f"## {title}", "", *[f"- {i}" for i in items], ""])

    section("Flagged for the instructor (not shown to students)",
            [f"{r.student} / {r.assignment}: {'; '.join(r.flags)}" for r in run.results if r.flags])
    section("Not graded as usual", [f"{r.student} / {r.assignment}: {r.status}: {' | '.join(r.notes)}"
                                    for r in run.results if r.status not in ("graded", "no submission")])
    section("Graded but not on the roster (not in the gradebook; add them with `nbgrader db student "
            "add ID` and grade again, or grade with --add-unknown)",
            [f"{s} / {a}" for s, a in run.unknown])
    section("Files in the wrong place (not graded; expected SUBMITTED/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb)",
            [f"{m.path}: {m.why}" for m in run.misplaced])
    section("Manual grades and comments a resubmission made obsolete (cleared in the gradebook)",
            [f"{s.student} / {s.assignment} / {s.cell}: " + ", ".join(
                x for x in (f"manual score {s.manual_score:g}" if s.manual_score is not None else "",
                            f"extra credit {s.extra_credit:g}" if s.extra_credit is not None else "",
                            f"comment {s.manual_comment!r}" if s.manual_comment else "") if x)
             for s in run.superseded])
    section("Tracebacks (for the instructor)",
            [f"{r.student} / {r.assignment}: work/{r.student}/{r.assignment}/tracebacks.txt"
             for r in run.results
             if (run.folder / "work" / r.student / r.assignment / "tracebacks.txt").is_file()])
    path.write_text("\n".join(lines), encoding="utf-8")
