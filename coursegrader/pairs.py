"""One (student, assignment) pair, from its hand-in to a folder of results (runs in a worker,
on this machine or as one task of a batch job).

``grade_pair`` writes, in the pair's folder ``WORK``:

* ``result.json``: the ``Result`` (scores per exercise and per test cell, notes, flags);
* ``autograded/``: what nbgrader's ``autograded/STUDENT/ASSIGNMENT/`` folder gets (the
  autograded notebook, ``autograded.py``, and the hand-in's ``timestamp.txt`` and
  ``submission_secret.txt``, which ``nbgrader release_feedback`` needs);
* ``submission/``: the staged copy; ``progress.jsonl`` (each test's verdict as soon as it is
  known); ``sandbox*.log`` (what the student's code printed); ``tracebacks.txt`` (for the
  instructor: the student's tracebacks and the failing tests', hidden lines included).

Nothing here touches the gradebook: ``gradebook.record`` does, from these folders.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from coursegrader import autograded
from coursegrader.result import GRADED, Result, short
from coursegrader.spec import Spec
from coursegrader.submissions import stage
from coursegrader.zh import say


def grade_pair(student: str, name: str, submission: Path | None, work: Path, spec: Spec,
               timeout: float = 30.0, no_sandbox: bool = False, base: Path | None = None,
               linked: dict | None = None) -> Result:
    """Grade one (student, assignment) pair against ``spec`` (``spec.load_spec``) into ``work``;
    never raises. ``base``: the submissions folder, ``linked``: the files a notebook must not be
    a hard link to (``submissions.stage``)."""
    from coursegrader.grading import grade_notebook  # imports torch: listing pairs never needs it

    zero = dict.fromkeys(spec.points, 0.0)
    result = Result(student, name, dict(zero), spec.auto_points, GRADED, [], "no" if no_sandbox else "yes",
                    manual_points=spec.manual_points, source_sha256=spec.source_sha256)
    work.mkdir(parents=True, exist_ok=True)
    try:
        if submission is None:
            result.status, result.notes = "no submission", [say("nothing handed in", spec.lang)]
            return result
        staged = stage(submission, work / "submission", name, base, linked)
        result.sha256, result.submitted_at = staged.sha256, staged.timestamp
        if staged.nb is None:
            result.status = "refused" if staged.refused else "not a notebook"
            result.notes = [say(n, spec.lang) for n in staged.notes]
            return result
        graded = grade_notebook(spec, staged.nb, work, timeout, no_sandbox)
        if spec.lang != "en":  # what students read, and the reports, in the course's language
            staged.notes = [say(n, spec.lang) for n in staged.notes]
            graded.notes = [say(n, spec.lang) for n in graded.notes]
            graded.exercise_notes = {k: say(v, spec.lang) for k, v in graded.exercise_notes.items()}
            graded.flags = [say(f, spec.lang) for f in graded.flags]
            for v in graded.verdicts:
                v.why = say(v.why, spec.lang)
        result.scores, result.notes = graded.scores, staged.notes + graded.notes
        result.cell_scores = {v.grade_id: v.earned for v in graded.verdicts}
        result.exercise_notes, result.flags = graded.exercise_notes, graded.flags
        if graded.tracebacks:
            (work / "tracebacks.txt").write_text("\n\n".join(graded.tracebacks) + "\n", encoding="utf-8")
        mine = {f"ex{k}: {v}" for k, v in graded.exercise_notes.items()} | set(graded.exercise_notes.values())
        general = [n for n in result.notes if n not in mine]
        folder = work / "autograded"
        folder.mkdir(exist_ok=True)
        nb = autograded.build(spec, staged.nb, result, graded.verdicts, general, graded.cell_tracebacks)
        nbformat.write(nb, folder / f"{name}.ipynb")
        for extra, path in staged.nbgrader_files.items():
            shutil.copyfile(path, folder / extra)
        return result
    except Exception as err:  # noqa: BLE001 - one submission never stops the run
        result.scores, result.status = dict(zero), "grading failed"
        result.notes = [f"internal error: {type(err).__name__}: {short(err)}"]
        return result
    finally:
        result.save(work / "result.json")


def worker_init() -> None:
    """A worker process of ``run.grade``: one torch thread (the workers are the parallelism)."""
    import torch

    torch.set_num_threads(1)
