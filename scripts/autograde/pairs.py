"""One (student, assignment) pair from a submissions folder to a ``Result`` (runs in a worker)."""
from __future__ import annotations

import errno
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

if TYPE_CHECKING:
    from autograde.grader import Spec


@dataclass
class Result:
    student: str
    assignment: str
    scores: dict[int, float]
    max_score: float
    status: str
    notes: list[str]
    sandbox: str = "yes"

    @property
    def total(self) -> float:
        return sum(self.scores.values())


def _short(text: str, limit: int = 160) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip().replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


LINK = "a symbolic link, not a file: submit the notebook itself"
HARD = "a hard link to {other}, not a file of its own: submit the notebook itself (a copy, not a link)"


NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a link: ELOOP; a FIFO: no wait


class Refused(Exception):  # noqa: N818 - a submission path the grader will not follow
    pass


def _find_submission(student_dir: Path, name: str) -> Path | None:
    """The folder or file a student handed in for assignment ``name`` (None if absent). Never
    looks through a symbolic link: a linked student folder or assignment folder is returned as
    it is, for ``_stage`` to refuse."""
    if student_dir.is_symlink():
        return student_dir
    folder = student_dir / name
    if folder.is_symlink() or folder.is_dir():
        return folder
    files = [p for p in student_dir.iterdir() if p.is_symlink() or p.is_file()]
    exact = [p for p in files if p.stem == name]
    if exact:
        return exact[0]
    similar = [p for p in files if p.name.startswith(name) and p.suffix == ".ipynb"]
    return similar[0] if len(similar) == 1 else None  # e.g. "ch03_x (1).ipynb" from a download


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


def _stage(submission: Path, dest: Path, name: str, base: Path | None = None, linked: dict | None = None):
    """Copy a submission into ``dest``; return the parsed notebook (or None) and notes. Every
    path from ``base`` (the submissions folder; default: two levels up) down to the notebook is
    opened without following a symbolic link, and a hard link to one of the files ``linked``
    (``linked_files``: the instructor's, or another student's) is refused."""
    notes = []
    dest.mkdir(parents=True, exist_ok=True)
    base = Path(base) if base is not None else Path(submission).parent.parent
    try:
        refused = _copy_in(base, submission, dest, linked)
    except Refused as why:
        return None, [f"not graded: {why}"]
    target = dest / f"{name}.ipynb"
    if target.name in refused:
        return None, [f"not graded: {refused[target.name]}"]
    if not target.exists():
        notebooks = sorted(dest.glob("*.ipynb"))
        linked = sorted(n for n in refused if n.endswith(".ipynb"))
        if len(notebooks) == 1 and not linked:
            notebooks[0].rename(target)
            notes.append(f"graded {notebooks[0].name} as {target.name}")
        elif not notebooks and len(linked) == 1:
            return None, [f"not graded: {refused[linked[0]]}"]
        else:
            found = ", ".join(sorted([p.name for p in dest.iterdir()] + list(refused))) or "nothing"
            return None, [f"no notebook {target.name} in the submission (found: {found})"]
    try:
        nb = nbformat.read(target, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # any unreadable file: JSON errors, schema errors, binary junk
        return None, [f"{target.name} is not a readable notebook ({type(err).__name__}: {_short(err, 120)})"]
    return nb, notes


def grade_pair(student: str, name: str, submission: Path | None, work: Path, spec: Spec,
               timeout: float = 30.0, no_sandbox: bool = False, base: Path | None = None,
               linked: dict | None = None) -> Result:
    """Grade one (student, assignment) pair against ``spec`` (``grader.load_spec``); never raises.
    ``base``: the submissions folder, ``linked``: the files it must not be a hard link to (see
    ``_stage``)."""
    from autograde.grader import grade_notebook  # imports torch: ``generate`` never needs it

    max_score = sum(spec.points.values())
    zero = dict.fromkeys(spec.points, 0.0)
    sandbox = "no" if no_sandbox else "yes"
    if submission is None:
        return Result(student, name, zero, max_score, "no submission", ["nothing handed in"], sandbox)
    try:
        nb, notes = _stage(submission, work / "submission", name, base, linked)
        if nb is None:
            status = "refused" if notes[0].startswith("not graded") else "not a notebook"
            return Result(student, name, zero, max_score, status, notes, sandbox)
        scores, more = grade_notebook(spec, nb, work, timeout, no_sandbox)
        return Result(student, name, scores, max_score, "graded", notes + more, sandbox)
    except Exception as err:  # noqa: BLE001 - one submission never stops the run
        return Result(student, name, zero, max_score, "grading failed",
                      [f"internal error: {type(err).__name__}: {_short(err)}"], sandbox)


def write_feedback(result: Result, points: dict[int, float], path: Path) -> None:
    """The student's feedback file: score, points per exercise (``points``: the maximum of
    each), and the notes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {result.assignment}: feedback for {result.student}", "",
             f"**Score: {result.total:g} / {result.max_score:g}** ({result.status})", "",
             "| exercise | points | out of |", "|---|---|---|"]
    lines += [f"| {k} | {result.scores.get(k, 0.0):g} | {p:g} |" for k, p in sorted(points.items())]
    lines += ["", "## Notes", ""]
    lines += [f"- {n}" for n in result.notes] or ["- every test passed"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def worker_init(path: str) -> None:
    sys.path.insert(0, path)
    import torch

    torch.set_num_threads(1)  # one pair per core: the workers are the parallelism
