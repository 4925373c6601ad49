"""``python -m coursegrader COMMAND``: the book's course tools (docs/instructors.md).

    generate     build or update a course directory: student versions, gradebook (make assignments)
    grade        grade submissions in the sandbox and record them in the gradebook (make grade)
    sort         sort a Canvas or Moodle bulk download into the course's submitted/ folder
    extension    grant a student more time for an assignment (the course's extensions.csv)
    feedback     generate and release again the feedback a regrade made stale (make feedback)
    export       the class's grades for Canvas, Moodle or as nbgrader's CSV (make export)
    pairs        list the pairs a grade run would grade (a batch job's work list)
    grade-pair   grade one pair into a results folder, no gradebook (one task of a batch job)
    record       record a batch job's results folders in the gradebook
    pin          grade a course with the book's grader as it is now (it keeps the one it was set up with)
    rule         copy ownwork.py into every source notebook's rule cell
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

from coursegrader.course import ROOT, SOURCE, Course, generate, nbgrader_command, nbgrader_env, sync_rule

STARTED = time.monotonic()


def _grade_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per cell and per call (default 30)")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run student code without bubblewrap (recorded in the grade table)")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m coursegrader", description=__doc__.split("\n\n")[0],
                                  formatter_class=argparse.RawDescriptionHelpFormatter,
                                  epilog=__doc__.split("\n\n", 1)[1])
    sub = top.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="build or update a course directory from the sources")
    g.add_argument("--course", "--out", dest="course", type=Path, default=ROOT / "build" / "assignments",
                   help="the course directory (default build/assignments)")
    g.add_argument("--lang", choices=["en", "zh"], default="en",
                   help="zh: the Chinese statements (python -m book.i18n; code and tests identical)")
    g.add_argument("--source", type=Path, default=SOURCE,
                   help="the assignment sources (default assignments/source; --lang zh: the Chinese ones)")
    g.add_argument("--course-id", help="the course id of a new course's config (default attention-book; "
                                       "--lang zh: attention-book-zh, so both can share one exchange)")
    g.add_argument("--force", action="store_true",
                   help="overwrite course copies of sources edited by hand (kept in source-replaced/)")

    r = sub.add_parser("grade", help="grade submissions (and record them in the course's gradebook)")
    r.add_argument("submissions", type=Path, nargs="?",
                   help="SUBMITTED/STUDENT/ASSIGNMENT/*.ipynb (default: the course's submitted/)")
    r.add_argument("--course", type=Path,
                   help="the course whose gradebook gets the grades (default: the course whose "
                        "submitted/ folder SUBMISSIONS is)")
    r.add_argument("--out", type=Path,
                   help="reports (default: COURSE/grading, or build/grades without a course)")
    r.add_argument("--jobs", type=int, help="pairs graded at once (default: all cores)")
    r.add_argument("--student", help="grade this student only")
    r.add_argument("--assignment", help="grade this assignment only")
    r.add_argument("--force", action="store_true",
                   help="grade again pairs that did not change since recorded")
    r.add_argument("--add-unknown", action="store_true",
                   help="add students who are not on the roster to the gradebook")
    _grade_options(r)

    s = sub.add_parser("sort", help="sort a Canvas or Moodle bulk download into submitted/")
    s.add_argument("lms", choices=["canvas", "moodle"])
    s.add_argument("download", type=Path, help="the downloaded .zip, or the folder it was extracted to")
    s.add_argument("--assignment", required=True)
    s.add_argument("--course", type=Path, required=True)
    s.add_argument("--into", type=Path, help="default: the course's submitted/ folder")
    s.add_argument("--worksheet", type=Path,
                   help="Moodle's grading worksheet (matches participants by email)")
    s.add_argument("--force", action="store_true",
                   help="replace hand-ins already there (the old ones are kept)")
    s.add_argument("--dry-run", action="store_true", help="say what would be copied, copy nothing")

    e = sub.add_parser("extension", help="grant STUDENT more time for ASSIGNMENT")
    e.add_argument("student")
    e.add_argument("assignment")
    e.add_argument("--days", type=float, default=0.0)
    e.add_argument("--hours", type=float, default=0.0)
    e.add_argument("--course", type=Path, required=True)

    f = sub.add_parser("feedback", help="regenerate (and release again) the feedback a regrade made stale")
    f.add_argument("--course", type=Path, required=True)

    x = sub.add_parser("export", help="the class's grades for an LMS (late penalties refreshed first)")
    x.add_argument("format", choices=["canvas", "moodle", "csv"])
    x.add_argument("--course", type=Path, required=True)
    x.add_argument("--to", type=Path, help="the CSV file (default COURSE/grading/FORMAT.csv)")
    x.add_argument("--assignment", action="append",
                   help="export this assignment (repeat for more; default: those released or handed in)")
    x.add_argument("--partial", action="store_true",
                   help="write even though some answers are not graded by hand yet (their cells stay empty)")

    p = sub.add_parser("pairs", help="list the (student, assignment) pairs grade would grade")
    p.add_argument("--course", type=Path, required=True)
    p.add_argument("--student")
    p.add_argument("--assignment")
    p.add_argument("--force", action="store_true")

    o = sub.add_parser("grade-pair", help="grade one pair into a results folder (no gradebook)")
    o.add_argument("--course", type=Path, required=True)
    o.add_argument("--out", type=Path, required=True, help="the results folder (a run folder)")
    o.add_argument("--student")
    o.add_argument("--assignment")
    o.add_argument("--pairs", type=Path, help="a list from `pairs`: grade line number --index (from 0)")
    o.add_argument("--index", type=int, help="with --pairs: $SLURM_ARRAY_TASK_ID, $JOB_COMPLETION_INDEX")
    _grade_options(o)

    c = sub.add_parser("record", help="record results folders (grade-pair's) in the gradebook")
    c.add_argument("folders", type=Path, nargs="+")
    c.add_argument("--course", type=Path, required=True)
    c.add_argument("--add-unknown", action="store_true")

    n = sub.add_parser("pin", help="grade the course with the book's grader as it is now "
                                   "(after a deliberate update)")
    n.add_argument("--course", type=Path, required=True)

    sub.add_parser("rule", help="copy coursegrader/ownwork.py into every source notebook's rule cell")
    return top


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    return COMMANDS[args.command](args)


def stale_translations(sources) -> list[str]:
    """What keeps the Chinese statements of ``sources`` (``book.i18n.Source``s of assignments)
    from saying what the English ones say: messages whose English changed since they were
    translated (the old translation would be used), untranslated or fuzzy ones."""
    from book import i18n

    found = []
    for source in sources:
        found += [f"{source.catalogue}: {p}" for p in i18n.problems(source, {})
                  if p.startswith(("out of date", "untranslated", "fuzzy", "no catalogue"))]
    return found


def _generate(args) -> int:
    source = args.source
    course_id = args.course_id or ("attention-book-zh" if args.lang == "zh" else "attention-book")
    if args.lang == "zh":  # the sources with translated markdown, from the catalogues
        sys.path.insert(0, str(ROOT))
        from book import i18n

        stale = stale_translations([s for s in i18n.sources() if s.catalogue.startswith("assignments/")])
        if stale:  # a student must never be graded against a statement they did not see
            raise SystemExit("error: the Chinese assignments are not up to date with the English ones, so "
                             "Chinese students would read another statement than the one graded:\n  "
                             + "\n  ".join(stale) + "\nUpdate and translate the catalogues (make i18n "
                             "CAT=assignments/NAME.po, docs/translating.md), then run this again.")
        i18n.generate(log=lambda *_: None)
        source = i18n.ASSIGNMENTS_ZH
    generate(args.course, source=source, force=args.force, course_id=course_id)
    print(f"student versions: {args.course.resolve() / 'release'}/ASSIGNMENT/ (generated; nothing is "
          "released until `nbgrader release_assignment ASSIGNMENT` or formgrader's Release button)")
    return 0


def _grade(args) -> int:
    from coursegrader.run import grade

    if args.submissions is None and args.course is None:
        parser().error("grade needs SUBMISSIONS or --course")
    run = grade(args.submissions, args.out, args.timeout, jobs=args.jobs or None, no_sandbox=args.no_sandbox,
                student=args.student, assignment=args.assignment, course=args.course, force=args.force,
                add_unknown=args.add_unknown)
    print(run.summary())
    if run.course is not None:
        print(f"gradebook:   {run.course.db_url} (nbgrader export, formgrader)")
    else:
        print("no course: the grades are in the reports only (grade --course COURSE records them)")
    print(f"class table: {run.table}")
    print(f"this run:    {run.csv}, {run.folder / 'report.md'}")
    print(f"feedback:    {run.feedback}/STUDENT/ASSIGNMENT.md"
          + (" (and nbgrader generate_feedback from autograded/)" if run.course else ""))
    for r in run.results:
        for flag in r.flags:
            print(f"FLAG {r.student} / {r.assignment}: {flag}")
    for s, a in run.unknown:
        print(f"NOT ON THE ROSTER {s} / {a}: graded, not recorded (--add-unknown records them)")
    for m in run.misplaced:
        print(f"MISPLACED {m.path}: {m.why}")
    for s in run.superseded:
        what = "comment" if s.manual_score is None and s.extra_credit is None else "manual grade"
        value = f"comment {s.manual_comment!r}" if what == "comment" else f"score {s.manual_score:g}" \
            if s.manual_score is not None else f"extra credit {s.extra_credit:g}"
        print(f"OBSOLETE {s.student} / {s.assignment} / {s.cell}: the {what} for the previous hand-in "
              f"was cleared ({value}; kept in report.md)")
    if run.course is not None:
        stale = run.course.stale_feedback()
        for student, assignment in stale:
            print(f"FEEDBACK OUT OF DATE {student} / {assignment}: generated before this grade")
        if stale:
            print(f"refresh it: make feedback COURSE={run.course.root} "
                  f"(python -m coursegrader feedback --course {run.course.root}: generates it again and "
                  "releases it again where it came through the exchange)")
    earlier = sorted(p for p in run.folder.parent.iterdir() if p != run.folder)
    if earlier:
        print(f"earlier runs are kept: {', '.join(str(p) for p in earlier[-3:])}"
              f"{' (and more)' if len(earlier) > 3 else ''}")
    return 0


def _sort(args) -> int:
    from coursegrader.lms import sort_download

    done = sort_download(args.lms, args.download, args.assignment, Course(args.course), args.into,
                         args.worksheet, args.force, args.dry_run)
    verb = "would copy" if args.dry_run else "copied"
    for line in done.copied:
        print(f"{verb} {line}")
    for what, items in (("unchanged", done.unchanged), ("IGNORED", done.ignored),
                        ("NOT ON THE ROSTER", done.unknown), ("REFUSED", done.refused),
                        ("marked late by the LMS", done.late)):
        for item in items:
            print(f"{what}: {item}")
    print(f"{len(done.copied)} notebooks {verb}, {len(done.ignored)} files ignored, "
          f"{len(done.unknown)} not on the roster, {len(done.refused)} refused")
    return 1 if done.refused else 0


def _extension(args) -> int:
    from nbgrader.api import MissingEntry

    course = Course(args.course)
    course.check_pin()
    path = course.root / "extensions.csv"
    rows = []
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.DictReader(fh)
                    if (r["student_id"], r["assignment"]) != (args.student, args.assignment)]
    rows.append({"student_id": args.student, "assignment": args.assignment,
                 "days": f"{args.days:g}", "hours": f"{args.hours:g}"})
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, ["student_id", "assignment", "days", "hours"])
        w.writeheader()
        w.writerows(rows)
    with course.gradebook() as gb:
        try:
            gb.grant_extension(args.assignment, args.student, days=args.days, hours=args.hours)
            print(f"granted in the gradebook and in {path}")
        except MissingEntry:
            print(f"written to {path}; make grade applies it when {args.student} hands in {args.assignment}")
    from coursegrader.gradebook import refresh_penalties

    refresh_penalties(course)
    return 0


def _feedback(args) -> int:
    course = Course(args.course)
    course.check_pin()
    stale = course.stale_feedback()
    for student, assignment in stale:
        for step in ("generate_feedback", "release_feedback"):
            if step == "release_feedback" and not (
                    course.submitted / student / assignment / "submission_secret.txt").is_file():
                print(f"{student} / {assignment}: not from the exchange: send "
                      f"{course.folder('feedback', student, assignment)} through your platform")
                continue
            extra = ["--force"] if step == "generate_feedback" else []
            command = nbgrader_command(course.root, [step, assignment, "--student", student, *extra])
            done = subprocess.run(command, cwd=course.root, env=nbgrader_env())
            if done.returncode:
                return done.returncode
        print(f"refreshed {student} / {assignment}")
    print(f"{len(stale)} feedback file{'s' if len(stale) > 1 else ''} refreshed" if stale
          else "every feedback file is up to date")
    return 0


EXPORTERS = {"canvas": "coursegrader.lms.CanvasExportPlugin", "moodle": "coursegrader.lms.MoodleExportPlugin",
             "csv": "nbgrader.plugins.CsvExportPlugin"}


def _export(args) -> int:
    from coursegrader.gradebook import refresh_penalties
    from coursegrader.lms import pending, released

    course = Course(args.course)
    course.check_pin()
    refresh_penalties(course)  # the scores as they are now, manual grades included
    with course.gradebook() as gb:
        known = sorted(a.name for a in gb.assignments)
        names = args.assignment or released(course, gb)
        unknown = sorted(set(names) - set(known))
        if unknown:
            raise SystemExit(f"error: no assignment {', '.join(unknown)} in the gradebook "
                             f"({', '.join(known)})")
        if not names:
            raise SystemExit("error: no assignment was released or handed in yet, so there is nothing to "
                             "export; name one with ASSIGNMENTS=... (--assignment NAME)")
        waiting = pending(gb, names)
    print(f"exporting {', '.join(names)}" + (f" (left out: "
                                             f"{', '.join(sorted(set(known) - set(names)))})"
                                             if set(known) - set(names) else ""))
    if waiting:
        print(f"{len(waiting)} submissions have answers not graded by hand yet (formgrader):")
        for student, assignment, cells in waiting:
            print(f"  {student} / {assignment}: {', '.join(cells)}")
        if args.format != "csv" and not args.partial:
            print("error: nothing written: their totals are not final. Grade them in formgrader, or "
                  "export the rest now with PARTIAL=1 (--partial), which leaves their cells empty.")
            return 2
    to = (args.to or course.reports / f"{args.format}.csv").resolve()
    to.parent.mkdir(parents=True, exist_ok=True)
    chosen = [f"--ExportPlugin.assignment={name}" for name in names]
    done = subprocess.run(nbgrader_command(course.root, ["export", f"--exporter={EXPORTERS[args.format]}",
                                                         f"--to={to}", *chosen]),
                          cwd=course.root, env=nbgrader_env())
    if done.returncode == 0:
        print(f"wrote {to}" + (" (cells of submissions still to grade by hand are empty)"
                               if waiting and args.format != "csv" else ""))
    return done.returncode


def _pairs(args) -> int:
    from coursegrader.run import load_specs, plan

    course = Course(args.course)
    course.check_pin()
    draft = plan(course.submitted, course.source, None, args.student, args.assignment)
    todo = plan(course.submitted, course.source, course, args.student, args.assignment, args.force,
                load_specs(course.source, draft.names))
    for p in todo.pairs:
        print(f"{p.student}\t{p.assignment}")
    print(f"{len(todo.pairs)} pairs to grade, {len(todo.skipped)} unchanged", file=sys.stderr)
    return 0


def _grade_pair(args) -> int:
    from coursegrader.pairs import grade_pair
    from coursegrader.run import load_specs, plan
    from coursegrader.sandbox import probe
    from coursegrader.submissions import find_submission, linked_files

    course = Course(args.course)
    course.check_pin()
    student, assignment = args.student, args.assignment
    if args.pairs is not None:
        lines = [ln.split("\t") for ln in args.pairs.read_text().splitlines() if ln.strip()]
        student, assignment = lines[args.index]
    if not (student and assignment):
        parser().error("grade-pair needs --student and --assignment, or --pairs and --index")
    why = probe(args.no_sandbox)
    if why:
        raise SystemExit(f"error: cannot sandbox the submissions: {why}")
    spec = load_specs(course.source, [assignment])[assignment]
    everyone = plan(course.submitted, course.source, None, None, assignment)
    submission = find_submission(course.submitted / student, assignment) \
        if (course.submitted / student).exists() else None
    linked = linked_files(course.source, course.submitted, everyone.handed)
    r = grade_pair(student, assignment, submission, args.out.resolve() / "work" / student / assignment, spec,
                   args.timeout, args.no_sandbox, course.submitted, linked)
    print(f"{r.student} {r.assignment} {r.total:g}/{r.max_score:g} {r.status}")
    return 0


def _record(args) -> int:
    from coursegrader.run import record_folders

    course = Course(args.course)
    course.check_pin()
    rec, late = record_folders(course, args.folders, args.add_unknown)
    print(f"recorded {len(rec.recorded)} pairs in {course.db_url} ({late} late submissions)")
    for s, a in rec.unknown:
        print(f"NOT ON THE ROSTER {s} / {a}: not recorded (--add-unknown records them)")
    for s in rec.superseded:
        print(f"OBSOLETE {s.student} / {s.assignment} / {s.cell}: manual grade or comment cleared "
              f"(score {s.manual_score}, extra credit {s.extra_credit}, comment {s.manual_comment!r})")
    return 0


def _pin(args) -> int:
    from coursegrader.course import pin

    version = pin(Course(args.course).root)
    print(f"{args.course} is graded from now on by the grader at commit {version['commit']}")
    return 0


def _rule(args) -> int:
    changed = sync_rule()
    print("\n".join(f"updated {p}" for p in changed) or "every rule cell is up to date")
    return 0


COMMANDS = {"generate": _generate, "grade": _grade, "sort": _sort, "extension": _extension,
            "export": _export, "feedback": _feedback, "pairs": _pairs, "grade-pair": _grade_pair,
            "record": _record, "pin": _pin, "rule": _rule}
