"""The nbgrader course both graders build on: the assignments, their grade ids, ``nbgrader``.

``generate`` copies ``assignments/source`` and ``assignments/nbgrader_config.py`` into a
fresh nbgrader course directory and runs ``nbgrader generate_assignment`` for every
assignment: the student versions land in ``OUT/release/ASSIGNMENT/ASSIGNMENT.ipynb``
(solutions replaced by ``raise NotImplementedError()``, hidden tests removed) and the
gradebook in ``OUT/gradebook.db``. ``assignments.py generate`` calls it, and so does the
``--legacy`` grader, whose ``nbgrader autograde`` needs that course directory.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "assignments" / "source"
CONFIG = ROOT / "assignments" / "nbgrader_config.py"
EXERCISE = re.compile(r"^ex(\d+)_")  # grade ids exN_solution and exN_tests: exercise N


def assignment_names(source: Path = SOURCE) -> list[str]:
    """Every folder of ``source`` that holds a notebook of its own name, sorted."""
    return sorted(p.name for p in source.iterdir() if (p / f"{p.name}.ipynb").is_file())


def nbgrader_env() -> dict:
    """nbgrader runs ``alembic`` and the kernel by name: put this Python's bin/ first."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def nbgrader_command(course: Path, args: list[str]) -> list[str]:
    """``nbgrader ARGS`` on the course directory ``course`` and its own gradebook."""
    return [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}",
            f"--CourseDirectory.db_url=sqlite:///{course / 'gradebook.db'}"]


def nbgrader(course: Path, args: list[str]) -> tuple[int, str]:
    """Run ``nbgrader ARGS`` on ``course``; returns ``(returncode, combined output)``."""
    done = subprocess.run(nbgrader_command(course, args), cwd=course, env=nbgrader_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return done.returncode, done.stdout


def generate(out: Path, source: Path = SOURCE, names: list[str] | None = None) -> list[Path]:
    """Build a fresh course directory in ``out`` and the student versions in ``out/release``."""
    names = names or assignment_names(source)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copy(CONFIG, out / "nbgrader_config.py")
    for name in names:
        shutil.copytree(source / name, out / "source" / name,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    rc, log = nbgrader(out, ["generate_assignment", "*", "--force"])  # one process for all
    released = [out / "release" / name / f"{name}.ipynb" for name in names]
    if rc != 0 or not all(p.is_file() for p in released):
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{log}")
    return released


RULE = Path(__file__).with_name("ownwork.py")  # the exercise rule; every source notebook holds a copy
RULE_ID = "own_work_rule"  # grade id of that copy: a locked cell with its input hidden


def rule_cell(nb) -> dict | None:
    """The cell of ``nb`` that holds the copy of ``ownwork.py`` (None if it has none)."""
    return next((c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == RULE_ID), None)


def sync_rule(source: Path = SOURCE) -> list[Path]:
    """Copy ``ownwork.py`` into the rule cell of every source notebook; the ones it changed."""
    import nbformat

    changed = []
    for name in assignment_names(source):
        path = source / name / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        cell = rule_cell(nb)
        if cell is None:
            raise RuntimeError(f"{path} has no cell with grade id {RULE_ID} (docs/instructors.md)")
        if cell.source != RULE.read_text().rstrip("\n"):
            cell.source = RULE.read_text().rstrip("\n")
            nbformat.write(nb, path)
            changed.append(path)
    return changed
