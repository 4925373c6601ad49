"""One (student, assignment) pair from a submissions folder to a ``Result`` (runs in a worker)."""
from __future__ import annotations

import re
import shutil
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


def _find_submission(student_dir: Path, name: str) -> Path | None:
    """The folder or file a student handed in for assignment ``name`` (None if absent)."""
    if (student_dir / name).is_dir():
        return student_dir / name
    files = [p for p in student_dir.iterdir() if p.is_file()]
    exact = [p for p in files if p.stem == name]
    if exact:
        return exact[0]
    similar = [p for p in files if p.name.startswith(name) and p.suffix == ".ipynb"]
    return similar[0] if len(similar) == 1 else None  # e.g. "ch03_x (1).ipynb" from a download


def _stage(submission: Path, dest: Path, name: str):
    """Copy a submission into ``dest``; return the parsed notebook (or None) and notes."""
    notes = []
    dest.mkdir(parents=True, exist_ok=True)
    if submission.is_dir():
        for p in submission.iterdir():
            if p.is_file() and not p.is_symlink():
                shutil.copy2(p, dest / p.name)
    elif not submission.is_symlink():
        shutil.copy2(submission, dest / submission.name)
    target = dest / f"{name}.ipynb"
    if not target.exists():
        notebooks = sorted(dest.glob("*.ipynb"))
        if len(notebooks) == 1:
            notebooks[0].rename(target)
            notes.append(f"graded {notebooks[0].name} as {target.name}")
        else:
            found = ", ".join(sorted(p.name for p in dest.iterdir())) or "nothing"
            return None, [f"no notebook {target.name} in the submission (found: {found})"]
    try:
        nb = nbformat.read(target, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # any unreadable file: JSON errors, schema errors, binary junk
        return None, [f"{target.name} is not a readable notebook ({type(err).__name__}: {_short(err, 120)})"]
    return nb, notes


def grade_pair(student: str, name: str, submission: Path | None, work: Path, spec: Spec,
               timeout: float = 30.0, no_sandbox: bool = False) -> Result:
    """Grade one (student, assignment) pair against ``spec`` (``grader.load_spec``); never raises."""
    from autograde.grader import grade_notebook  # imports torch: ``generate`` never needs it

    max_score = sum(spec.points.values())
    zero = dict.fromkeys(spec.points, 0.0)
    sandbox = "no" if no_sandbox else "yes"
    if submission is None:
        return Result(student, name, zero, max_score, "no submission", ["nothing handed in"], sandbox)
    try:
        nb, notes = _stage(submission, work / "submission", name)
        if nb is None:
            return Result(student, name, zero, max_score, "not a notebook", notes, sandbox)
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
