"""Hand-ins: where a student's notebook for an assignment is, reading it safely, and the files
that are not where the layout says.

The layout is nbgrader's ``submitted`` folder: ``SUBMITTED/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb``
(``nbgrader collect`` writes it, with ``timestamp.txt`` and ``submission_secret.txt`` beside the
notebook); ``SUBMITTED/STUDENT/ASSIGNMENT.ipynb`` is accepted too. Only ``.ipynb`` files are
submissions: other files beside one are listed as ignored, never graded in its place. Files that
fit nowhere (at the top level, or under a student's folder with no assignment's name) are
reported by ``scan_layout`` with the layout expected.

A submission is read only through real folders and files: every level from the submissions
folder down is opened with ``O_NOFOLLOW`` and the notebook is copied from the file that was
checked, so a symbolic link (to the sources, another student, ``/etc``) is refused, and so is a
hard link to one of the instructor's files or to another student's notebook (``linked_files``).
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursegrader.result import short

LINK = "a symbolic link, not a file: submit the notebook itself"
HARD = "a hard link to {other}, not a file of its own: submit the notebook itself (a copy, not a link)"
NBGRADER_FILES = ("timestamp.txt", "submission_secret.txt")  # what nbgrader's exchange adds
NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a link: ELOOP; a FIFO: no wait
LAYOUT = "SUBMITTED/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb"


class Refused(Exception):  # noqa: N818 - a submission path the grader will not follow
    pass


def find_submission(student_dir: Path, name: str) -> Path | None:
    """The folder or file a student handed in for assignment ``name`` (None if absent). Never
    looks through a symbolic link: a linked student folder or assignment folder is returned as
    it is, for ``stage`` to refuse. Among loose files the notebook ``name.ipynb`` wins, then a
    single ``name*.ipynb`` (``name (1).ipynb`` from a download), then any other file named
    ``name.*`` (which grades as "not a notebook", with its name)."""
    if student_dir.is_symlink():
        return student_dir
    folder = student_dir / name
    if folder.is_symlink() or folder.is_dir():
        return folder
    files = sorted(p for p in student_dir.iterdir() if p.is_symlink() or p.is_file())
    exact = [p for p in files if p.name == f"{name}.ipynb"]
    if exact:
        return exact[0]
    similar = [p for p in files if p.name.startswith(name) and p.suffix == ".ipynb"]
    if len(similar) == 1:
        return similar[0]  # e.g. "ch03_x (1).ipynb" from a download
    other = [p for p in files if p.stem == name]
    return other[0] if other else None


def _open_below(base: Path, path: Path) -> int:
    """A file descriptor of ``path``, opened from ``base`` one name at a time, never through a
    symbolic link (``O_NOFOLLOW`` at every level): ``Refused`` names the first link."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for depth, part in enumerate(Path(path).relative_to(base).parts, start=1):
            try:
                new = os.open(part, NOFOLLOW, dir_fd=fd)
            except OSError as err:
                if err.errno == errno.ELOOP:
                    where = "/".join(Path(path).relative_to(base).parts[:depth])
                    raise Refused(f"{where} is {LINK}") from None
                raise
            os.close(fd)
            fd = new
        return fd
    except BaseException:
        os.close(fd)
        raise


def linked_files(source: Path, submissions: Path, handed: dict) -> dict[tuple[int, int], str]:
    """``(st_dev, st_ino) -> whose file it is`` for the files a notebook must not be a hard link
    to: every file of ``source`` (the instructor's), and every notebook that appears in more than
    one submission of ``handed`` (student -> assignment -> path). Never follows a link."""
    owners: dict[tuple[int, int], set[str]] = {}
    for student, per in handed.items():
        for path in per.values():
            if path is None or path.is_symlink():
                continue
            for p in (sorted(path.iterdir()) if path.is_dir() else [path]):
                if p.suffix == ".ipynb" and not p.is_symlink() and p.is_file():
                    info = p.lstat()
                    owners.setdefault((info.st_dev, info.st_ino), set()).add(student)
    found = {key: f"the notebook of {' and '.join(sorted(who))}"
             for key, who in owners.items() if len(who) > 1}
    for p in Path(source).rglob("*"):
        if p.is_file() and not p.is_symlink():
            info = p.lstat()
            found[info.st_dev, info.st_ino] = "the instructor's file " + str(p.relative_to(source))
    return found


def _copy_file(fd: int, what: str, dest: Path, linked: dict | None = None) -> None:
    """Copy the open regular file ``fd`` (what was checked is what is read) to ``dest``, unless
    it is one of the files ``linked`` (``linked_files``) under another name."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{what} is not a regular file")
    if info.st_nlink > 1 and (info.st_dev, info.st_ino) in (linked or {}):
        raise Refused(f"{what} is {HARD.format(other=linked[info.st_dev, info.st_ino])}")
    with os.fdopen(os.dup(fd), "rb") as src, open(dest, "wb") as out:
        while chunk := src.read(1 << 20):
            out.write(chunk)


def _copy_in(base: Path, submission: Path, dest: Path, linked: dict | None = None) -> dict[str, str]:
    """Copy the regular files of ``submission`` (a folder or one file) into ``dest``; returns
    why each entry that was left out was left out (links, hard links, folders)."""
    refused = {}
    fd = _open_below(base, submission)
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            _copy_file(fd, submission.name, dest / submission.name, linked)
            return refused
        for entry in sorted(os.listdir(fd)):
            try:
                try:
                    child = os.open(entry, NOFOLLOW, dir_fd=fd)
                except OSError as err:
                    raise Refused(f"{entry} is {LINK}" if err.errno == errno.ELOOP else
                                  f"{entry} cannot be read ({err.strerror})") from None
                try:
                    if not stat.S_ISDIR(os.fstat(child).st_mode):
                        _copy_file(child, entry, dest / entry, linked)
                finally:
                    os.close(child)
            except Refused as why:
                refused[entry] = str(why)
        return refused
    finally:
        os.close(fd)


@dataclass
class Staged:
    """A submission copied into the grader's folder."""

    nb: object | None  # the parsed notebook (None: nothing gradable)
    notes: list[str]  # for the student: renamed notebook, ignored files, or why it is not graded
    refused: bool = False  # a link: not graded
    sha256: str | None = None  # of the notebook graded, as handed in
    timestamp: str | None = None  # nbgrader's timestamp.txt, if the hand-in has one
    nbgrader_files: dict[str, Path] = field(default_factory=dict)  # timestamp.txt, ... (staged copies)


def stage(submission: Path, dest: Path, name: str, base: Path | None = None,
          linked: dict | None = None) -> Staged:
    """Copy a submission into ``dest`` and parse its notebook. Every path from ``base`` (the
    submissions folder; default: two levels up) down to the notebook is opened without following
    a symbolic link, and a hard link to one of the files ``linked`` (``linked_files``: the
    instructor's, or another student's) is refused."""
    dest.mkdir(parents=True, exist_ok=True)
    base = Path(base) if base is not None else Path(submission).parent.parent
    try:
        refused = _copy_in(base, submission, dest, linked)
    except Refused as why:
        return Staged(None, [f"not graded: {why}"], refused=True)
    target = dest / f"{name}.ipynb"
    notes = []
    if target.name in refused:
        return Staged(None, [f"not graded: {refused[target.name]}"], refused=True)
    if not target.exists():
        notebooks = sorted(dest.glob("*.ipynb"))
        links = sorted(n for n in refused if n.endswith(".ipynb"))
        if len(notebooks) == 1 and not links:
            notebooks[0].rename(target)
            notes.append(f"graded {notebooks[0].name} as {target.name}")
        elif not notebooks and len(links) == 1:
            return Staged(None, [f"not graded: {refused[links[0]]}"], refused=True)
        else:
            found = ", ".join(sorted([p.name for p in dest.iterdir()] + list(refused))) or "nothing"
            return Staged(None, [f"no notebook {target.name} in the submission (found: {found})"])
    staged = Staged(None, notes, sha256=hashlib.sha256(target.read_bytes()).hexdigest())
    for extra in NBGRADER_FILES:
        if (dest / extra).is_file():
            staged.nbgrader_files[extra] = dest / extra
    if "timestamp.txt" in staged.nbgrader_files:
        staged.timestamp = staged.nbgrader_files["timestamp.txt"].read_text(errors="replace").strip() or None
    ignored = sorted(p.name for p in dest.iterdir() if p != target and p.name not in NBGRADER_FILES)
    if not Path(submission).is_dir():  # a loose notebook: list its namesakes (x.html beside x.ipynb)
        ignored += sorted(p.name for p in Path(submission).parent.iterdir()
                          if p.stem == name and p.name != Path(submission).name)
    if ignored:
        staged.notes.append(f"ignored (only the notebook {target.name} is graded): {', '.join(ignored)}")
    try:
        staged.nb = nbformat.read(target, as_version=4)
        nbformat.validate(staged.nb)
    except Exception as err:  # any unreadable file: JSON errors, schema errors, binary junk
        staged.nb = None
        staged.notes = [f"{target.name} is not a readable notebook ({type(err).__name__}: {short(err, 120)})"]
    return staged


def fingerprint(submission: Path | None, name: str, base: Path) -> str | None:
    """The sha256 of the notebook ``stage`` would grade, read as safely as ``stage`` reads it
    (None when there is nothing to read, or only through a link): how the grader tells whether
    a hand-in changed since it was graded without grading it."""
    if submission is None:
        return None
    try:
        fd = _open_below(base, submission)
    except (Refused, OSError):
        return None
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            names = [n for n in sorted(os.listdir(fd)) if n.endswith(".ipynb")]
            pick = f"{name}.ipynb" if f"{name}.ipynb" in names else (names[0] if len(names) == 1 else None)
            if pick is None:
                return None
            child = os.open(pick, NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        with os.fdopen(os.dup(fd), "rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def timestamp_of(submission: Path | None, base: Path) -> str | None:
    """The text of the hand-in's ``timestamp.txt`` (None if it has none), read without links."""
    if submission is None:
        return None
    try:
        fd = _open_below(base, submission)
    except (Refused, OSError):
        return None
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            return None
        child = os.open("timestamp.txt", NOFOLLOW, dir_fd=fd)
        try:
            if not stat.S_ISREG(os.fstat(child).st_mode):
                return None
            with os.fdopen(os.dup(child), "rb") as fh:
                return fh.read(200).decode(errors="replace").strip() or None
        finally:
            os.close(child)
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass
class Misplaced:
    path: str  # relative to the submissions folder
    why: str


def scan_layout(submissions: Path, names: list[str]) -> list[Misplaced]:
    """Every file or folder of ``submissions`` that is not part of a hand-in in the layout
    ``SUBMITTED/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb`` (or ``SUBMITTED/STUDENT/ASSIGNMENT.ipynb``),
    with what is wrong with it. Never follows a link."""
    found = []
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith("."):
            continue
        if not entry.is_dir() or entry.is_symlink():
            if entry.is_symlink():
                continue  # a linked student folder: graded as "refused", with the reason
            hint = ""
            if entry.suffix == ".ipynb" and any(n in entry.name for n in names):
                hint = (" (an LMS download? `python -m coursegrader sort canvas|moodle` sorts one "
                        "into this layout)")
            found.append(Misplaced(entry.name, f"a file at the top level, where only student folders "
                                               f"belong; expected {LAYOUT}{hint}"))
            continue
        for item in sorted(entry.iterdir()):
            if item.is_symlink():
                continue
            stem = item.name if item.is_dir() else item.stem
            if stem in names or any(item.name.startswith(n) and item.suffix == ".ipynb" for n in names):
                if item.is_dir():
                    for sub in sorted(item.iterdir()):
                        if sub.is_dir() and not sub.is_symlink() and sub.name != ".ipynb_checkpoints":
                            found.append(Misplaced(f"{entry.name}/{item.name}/{sub.name}/",
                                                   "a folder inside an assignment folder: not read; "
                                                   f"expected {LAYOUT}"))
                continue
            if item.name.startswith(".") or (item.is_file() and any(item.stem.startswith(n) for n in names)):
                continue  # hidden files; x.html beside x.ipynb is listed with that hand-in
            found.append(Misplaced(f"{entry.name}/{item.name}",
                                   f"matches no assignment ({', '.join(names)}); expected {LAYOUT}"))
    return found
