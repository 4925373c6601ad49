"""Learning platforms: grades out (nbgrader ``ExportPlugin``s for Canvas and Moodle) and
hand-ins in (their bulk downloads sorted into nbgrader's ``submitted`` layout).

Export, in the course directory::

    nbgrader export --exporter=coursegrader.lms.CanvasExportPlugin --to canvas.csv
    nbgrader export --exporter=coursegrader.lms.MoodleExportPlugin --to moodle.csv

Both write one row per student of the roster and one column per assignment, the score after
the late penalty (nbgrader's ``score - late_submission_penalty``, at least 0; a missing
submission is 0), as nbgrader's own CSV exporter computes it. A submission with answers still
to be graded by hand gets an empty cell (an LMS leaves an empty cell's grade as it is), never
a partial total; ``python -m coursegrader export`` (``make export``) refuses to write while
there are such answers unless told ``--partial``, and exports only the assignments the class
received (``released``) unless told which.

* Canvas (its Gradebook's "Import"): the header Canvas's importer expects, ``Student, ID, SIS
  User ID, SIS Login ID, Section``, then a column per assignment (``NAME (CANVAS_ID)`` when
  ``CanvasExportPlugin.assignment_ids`` gives the Canvas assignment's id, so the column updates
  that assignment; a bare ``NAME`` makes Canvas create a new one), and a ``Points Possible`` row.
  ``Student`` is "Last, First"; ``ID`` the roster's ``lms_user_id`` (Canvas's user id, which
  Canvas matches first); ``SIS Login ID`` the nbgrader student id (matched when ``ID`` is empty).
* Moodle ("Import" > "CSV file" in its gradebook): the columns of Moodle's own CSV export,
  ``First name, Last name, ID number, Institution, Department, Email address``, then a column per
  assignment; ``ID number`` is the roster's ``lms_user_id``. On import, map "Email address" to
  email (or "ID number" to ID number) and each assignment column to its grade item.

Sort a download into ``SUBMITTED/STUDENT/ASSIGNMENT/``::

    python -m coursegrader sort canvas submissions.zip --assignment ch03_scoring_functions --course COURSE
    python -m coursegrader sort moodle download.zip --assignment ch03_scoring_functions --course COURSE

Canvas names each file ``name_[late_]USERID_SUBMISSIONID_FILENAME`` (the roster's
``lms_user_id`` gives the student); Moodle names each file or folder ``Full Name_PARTICIPANT_
assignsubmission_file_...`` (the student is found by full name in the roster, or through the
grading worksheet's email column with ``--worksheet``). Only ``.ipynb`` files are copied; every
other file is listed. A hand-in already there with other content is never overwritten without
``--force``, which keeps the old one under ``submitted-replaced/`` first; the same notebook
again (byte for byte, under whatever name) is left as it is. A hand-in of someone not on the
roster is reported and not copied (no student folder is named by an LMS number): add them to
the roster (with their ``lms_user_id``) and sort again.
"""
from __future__ import annotations

import csv
import datetime
import hashlib
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.plugins import ExportPlugin
from traitlets import Dict, Unicode

# --------------------------------------------------------------------------- export
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_USER_COLUMNS = ["First name", "Last name", "ID number", "Institution", "Department", "Email address"]


def _number(x: float | None) -> str:
    return "" if x is None else f"{round(float(x), 2):g}"


def released(course, gradebook) -> list[str]:
    """The assignments the class received: released to the course's exchange (``nbgrader
    release_assignment`` puts them in ``EXCHANGE/COURSE_ID/outbound/``) or handed in by someone
    (an assignment handed out through an LMS has submissions but no exchange folder)."""
    outbound = course.outbound
    return [a.name for a in sorted(gradebook.assignments, key=lambda a: a.name)
            if (outbound / a.name).is_dir() or a.num_submissions]


def pending(gradebook, assignments: list[str]) -> list[tuple[str, str, list[str]]]:
    """``(student, assignment, [grade ids])`` of every submission of ``assignments`` with answers
    still to be graded by hand (formgrader's "needs manual grade")."""
    found = []
    for name in assignments:
        for sub in gradebook.find_assignment(name).submissions:
            cells = sorted(g.name for nb in sub.notebooks for g in nb.grades if g.needs_manual_grade)
            if cells:
                found.append((sub.student.id, name, cells))
    return sorted(found)


def final_scores(plugin: ExportPlugin, gradebook) -> tuple[list, list, dict]:
    """The students and assignments the plugin exports (its ``--student``/``--assignment``), and
    ``(student, assignment) -> score after the late penalty`` (0 when nothing was handed in,
    None while an answer is still to be graded by hand: the cell stays empty)."""
    order = sorted(gradebook.students, key=lambda s: (s.last_name or "", s.first_name or "", s.id))
    students = [s for s in order if not plugin.student or s.id in map(str, plugin.student)]
    assignments = [a for a in sorted(gradebook.assignments, key=lambda a: a.name)
                   if not plugin.assignment or a.name in map(str, plugin.assignment)]
    scores = {}
    for a in assignments:
        for s in students:
            try:
                sub = gradebook.find_submission(a.name, s.id)
            except MissingEntry:
                scores[s.id, a.name] = 0.0
            else:
                scores[s.id, a.name] = None if sub.needs_manual_grade else \
                    max(0.0, sub.score - (sub.late_submission_penalty or 0.0))
    waiting = [f"{s} / {a}" for (s, a), v in scores.items() if v is None]
    if waiting:
        plugin.log.warning("not graded by hand yet, left empty: %s", ", ".join(waiting))
    return students, assignments, scores


class CanvasExportPlugin(ExportPlugin):
    """Grades as a CSV for Canvas's gradebook import."""

    section = Unicode("", help="The Section column (Canvas matches students without it too)."
                      ).tag(config=True)
    assignment_ids = Dict({}, help="Assignment name -> Canvas assignment id, so that a column updates "
                                   "that assignment instead of creating one.").tag(config=True)

    def export(self, gradebook) -> None:
        dest = self.to or "canvas.csv"
        students, assignments, scores = final_scores(self, gradebook)
        titles = [f"{a.name} ({self.assignment_ids[a.name]})" if a.name in self.assignment_ids else a.name
                  for a in assignments]
        with open(dest, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(CANVAS_STUDENT_COLUMNS + titles)
            w.writerow(["Points Possible", "", "", "", ""] + [_number(a.max_score) for a in assignments])
            for s in students:
                name = ", ".join(x for x in (s.last_name, s.first_name) if x) or s.id
                w.writerow([name, s.lms_user_id or "", "", s.id, self.section]
                           + [_number(scores[s.id, a.name]) for a in assignments])
        missing = [s.id for s in students if not s.lms_user_id]
        if missing:
            self.log.warning("no lms_user_id for %s: Canvas matches them by SIS Login ID (their nbgrader id) "
                             "or name", ", ".join(missing))
        self.log.info("Canvas gradebook CSV: %s (%d students, %d assignments)", dest, len(students),
                      len(assignments))


class MoodleExportPlugin(ExportPlugin):
    """Grades as a CSV for Moodle's gradebook import (the columns of Moodle's own export)."""

    def export(self, gradebook) -> None:
        dest = self.to or "moodle.csv"
        students, assignments, scores = final_scores(self, gradebook)
        with open(dest, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(MOODLE_USER_COLUMNS + [a.name for a in assignments])
            for s in students:
                w.writerow([s.first_name or "", s.last_name or "", s.lms_user_id or "", "", "", s.email or ""]
                           + [_number(scores[s.id, a.name]) for a in assignments])
        self.log.info("Moodle grade import CSV: %s (%d students, %d assignments)", dest, len(students),
                      len(assignments))


# --------------------------------------------------------------------------- sort downloads
CANVAS_NAME = re.compile(r"^(?P<name>[^_/]+?)_(?:(?P<late>late|LATE)_)?(?P<user>\d+)_(?P<submission>\d+)_"
                         r"(?P<file>.+)$")
MOODLE_NAME = re.compile(r"^(?P<name>.+?)_(?P<participant>\d+)_assign(?:submission|feedback)_[a-z]+_?"
                         r"(?P<file>.*)$")


@dataclass
class Sorted:
    copied: list[str] = field(default_factory=list)  # "file -> destination"
    unchanged: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # "file: why"
    unknown: list[str] = field(default_factory=list)  # not on the roster
    refused: list[str] = field(default_factory=list)  # would overwrite a different hand-in
    late: list[str] = field(default_factory=list)  # the LMS marked it late


def _unpack(download: Path, tmp: Path) -> Path:
    """A folder with the download's files: the folder itself, or a zip extracted safely (no
    absolute paths, no ``..``, no links)."""
    if download.is_dir():
        return download
    with zipfile.ZipFile(download) as z:
        for info in z.infolist():
            parts = Path(info.filename).parts
            if info.is_dir() or not parts or Path(info.filename).is_absolute() or ".." in parts:
                continue
            if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symbolic link in the archive
                continue
            target = tmp.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    return tmp


def _roster(course) -> list:
    with course.gradebook() as gb:
        return [(s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
                for s in gb.students]


def _norm(name: str) -> str:
    return re.sub(r"\s+", " ", name).strip().casefold()


def sort_download(kind: str, download: Path, assignment: str, course, into: Path | None = None,
                  worksheet: Path | None = None, force: bool = False, dry_run: bool = False) -> Sorted:
    """Copy the notebooks of an LMS download into ``into`` (default: the course's ``submitted/``)
    as ``STUDENT/ASSIGNMENT/FILE``."""
    into = Path(into) if into is not None else course.submitted
    roster = _roster(course)
    by_lms = {lms: sid for sid, _, _, _, lms in roster if lms}
    by_name = {_norm(f"{first} {last}"): sid for sid, first, last, _, _ in roster}
    by_email = {email.casefold(): sid for sid, _, _, email, _ in roster if email}
    participants = {}
    if worksheet is not None:
        with open(worksheet, newline="", encoding="utf-8-sig") as fh:
            for row in csv.DictReader(fh):
                m = re.search(r"(\d+)", row.get("Identifier", ""))
                email = (row.get("Email address") or "").casefold()
                if m and email in by_email:
                    participants[m.group(1)] = by_email[email]
    done = Sorted()
    hand_ins: dict[str, list[tuple[Path, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="coursegrader-sort-") as tmp:
        folder = _unpack(Path(download), Path(tmp))
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = str(path.relative_to(folder))
            if kind == "canvas":
                m = CANVAS_NAME.match(path.name)
                if not m:
                    done.ignored.append(f"{rel}: not named as Canvas names submissions (name_userid_id_file)")
                    continue
                student, filename = by_lms.get(m.group("user")), m.group("file")
                if m.group("late") and filename.endswith(".ipynb"):
                    done.late.append(rel)
                if student is None:
                    if filename.endswith(".ipynb"):
                        done.unknown.append(f"{rel}: Canvas user {m.group('user')} is no lms_user_id of the "
                                            "roster: not copied (add them to the roster and sort again)")
                    continue
            else:
                top = Path(rel).parts[0]
                m = MOODLE_NAME.match(top)
                if not m:
                    done.ignored.append(f"{rel}: not named as Moodle names submissions "
                                        "(Full Name_id_assignsubmission_file_...)")
                    continue
                filename = path.name if len(Path(rel).parts) > 1 else m.group("file")
                student = participants.get(m.group("participant")) or by_name.get(_norm(m.group("name")))
                if student is None:
                    if filename.endswith(".ipynb"):
                        who = f"{m.group('name')} (participant {m.group('participant')})"
                        done.unknown.append(f"{rel}: {who} "
                                            "matches no name of the roster (or give --worksheet): not copied")
                    continue
            if not filename.endswith(".ipynb"):
                done.ignored.append(f"{rel}: not a notebook (only .ipynb files are submissions)")
                continue
            hand_ins.setdefault(student, []).append((path, filename))
        for student, files in sorted(hand_ins.items()):
            dest = into / student / assignment
            new = {name: hashlib.sha256(p.read_bytes()).hexdigest() for p, name in files}
            if dest.is_dir():
                old = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                       for p in dest.iterdir() if p.is_file() and p.suffix == ".ipynb"}
                if sorted(old.values()) == sorted(new.values()):  # the same notebooks, maybe renamed
                    done.unchanged.append(str(dest))
                    continue
                if not force:
                    there = ", ".join(sorted(old)) or "no notebook"
                    done.refused.append(f"{dest} holds another hand-in ({there}); "
                                        "--force replaces it (the old one is kept under submitted-replaced/)")
                    continue
                if not dry_run:
                    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M%S")
                    keep = into.parent / "submitted-replaced" / stamp / student / assignment
                    keep.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(dest), str(keep))
            for p, name in files:
                done.copied.append(f"{p.name} -> {dest / name}")
                if not dry_run:
                    dest.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(p, dest / name)
    return done
