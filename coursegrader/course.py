"""The nbgrader course directory: its settings, its gradebook, ``nbgrader`` run on it, and
``generate``, which builds or updates it from the book's assignment sources.

A course directory is nbgrader's: ``nbgrader_config.py``, ``source/``, ``release/``,
``submitted/`` (``nbgrader collect`` fills it), ``autograded/``, ``feedback/``, the gradebook
(``gradebook.db``, or the database the config's ``CourseDirectory.db_url`` names), and
``grading/``, the book grader's reports. ``generate`` writes the course's own
``nbgrader_config.py`` once (it loads the book's settings, ``assignments/nbgrader_config.py``,
then holds yours: course id, exchange, late-work policy, LMS export) and never rewrites it;
it copies the sources and runs ``nbgrader generate_assignment`` only for assignments whose
source changed, and it never deletes anything: a course copy of a source that was edited by
hand is overwritten only with ``force`` (and kept under ``source-replaced/`` first), and
``submitted/``, ``autograded/``, ``feedback/``, ``grading/`` and the gradebook are left alone.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "assignments" / "source"
BOOK_CONFIG = ROOT / "assignments" / "nbgrader_config.py"
PIN = ".coursegrader-version.json"  # the grader the course was set up with (grader_version)
MANIFEST = ".coursegrader-sources.json"  # what generate last copied into source/: name -> file -> sha256
RULE = Path(__file__).with_name("ownwork.py")  # the exercise rule; every source notebook holds a copy
RULE_ID = "own_work_rule"  # grade id of that copy: a locked cell with its input hidden

COURSE_CONFIG = '''\
"""nbgrader settings of this course. Written once by `make assignments` (python -m coursegrader
generate) and never rewritten: edit it. docs/instructors.md explains each setting."""
import os
import sys

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

# The book's settings first (stub text, cell time limits): {book_config}
BOOK = {book!r}
sys.path.insert(0, BOOK)  # coursegrader: the LMS exporters, the late-work plugin, this file's checks
load_subconfig(os.path.join(BOOK, "assignments", "nbgrader_config.py"))  # noqa: F821

# Your course: its id names it in the exchange (nbgrader release_assignment, fetch_assignment, ...).
c.CourseDirectory.course_id = {course_id!r}

# The exchange students fetch from and submit to (nbgrader's default: /srv/nbgrader/exchange).
# c.Exchange.root = "/srv/nbgrader/exchange"

# The gradebook: sqlite in this folder unless you name another database (PostgreSQL for a course
# graded by many machines at once: docs/instructors.md, "Beyond one machine").
# c.CourseDirectory.db_url = "postgresql://grader@db.example.org/attention"

# Late work. Due dates: nbgrader db assignment add ASSIGNMENT --duedate="2027-03-20 23:59:59 UTC".
# A submission's time is its timestamp.txt (nbgrader submit writes it). nbgrader's built-in
# policies are "none" (the default) and "zero"; the book's PerDayPenalty takes a share of the
# score for each day late or part of one:
# c.LateSubmissionPlugin.penalty_method = "zero"
# c.AssignLatePenalties.plugin_class = "coursegrader.late.PerDayPenalty"
# c.PerDayPenalty.fraction_per_day = 0.10

# Grading runs in the book's sandbox (make grade). nbgrader's own autograde, from the command
# line or formgrader's Autograde button, would run the students' code and the hidden tests in
# one unprotected kernel and replace what make grade wrote; this setting makes it stop at once.
c.Autograde.pre_convert_hook = "coursegrader.noautograde.refuse"

# LMS export (nbgrader export --exporter=coursegrader.lms.CanvasExportPlugin --to canvas.csv):
# c.CanvasExportPlugin.section = "ML 101 - Section 2"
# c.CanvasExportPlugin.assignment_ids = {{"ch01_attention_cues": "123456"}}
'''


def grader_version() -> dict:
    """The grading code as it is now: sha256 over ``coursegrader/*.py`` and the book's nbgrader
    settings, and the git commit of the checkout (for the message that names it)."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")) + [BOOK_CONFIG]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except OSError:
        commit = ""
    return {"sha256": digest.hexdigest(), "commit": commit or "unknown"}


def pin(root: Path) -> dict:
    """Record in the course ``root`` the grader that grades it from now on."""
    version = grader_version()
    (Path(root) / PIN).write_text(json.dumps(version, indent=1) + "\n", encoding="utf-8")
    return version


def assignment_names(source: Path = SOURCE) -> list[str]:
    """Every folder of ``source`` that holds a notebook of its own name, sorted."""
    return sorted(p.name for p in Path(source).iterdir() if (p / f"{p.name}.ipynb").is_file())


def nbgrader_env() -> dict:
    """nbgrader runs ``alembic`` and the kernel by name: this Python's bin/ first; the book's
    root on ``PYTHONPATH`` (the course config names ``coursegrader`` plugins)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def nbgrader_command(course: Path, args: list[str]) -> list[str]:
    """``nbgrader ARGS`` on the course directory ``course`` (its config names the gradebook)."""
    return [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}"]


def nbgrader(course: Path, args: list[str], env: dict | None = None) -> tuple[int, str]:
    """Run ``nbgrader ARGS`` on ``course``; returns ``(returncode, combined output)``."""
    done = subprocess.run(nbgrader_command(course, args), cwd=course, env=env or nbgrader_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return done.returncode, done.stdout


class Course:
    """An nbgrader course directory and its settings (its ``nbgrader_config.py``)."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        if not (self.root / "nbgrader_config.py").is_file():
            raise SystemExit(f"error: {self.root} is not a course directory (no nbgrader_config.py); "
                             "make one with `make assignments COURSE=...` (python -m coursegrader generate)")
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config.loader import PyFileConfigLoader

        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        self.config = PyFileConfigLoader("nbgrader_config.py", path=str(self.root)).load_config()
        self.coursedir = CourseDirectory(config=self.config, root=str(self.root))

    def check_pin(self) -> None:
        """Stop unless the grading code is the one the course was set up with (a ``git pull``
        in the book's checkout mid-term must not change how the term is graded)."""
        path = self.root / PIN
        if not path.is_file():
            pin(self.root)  # a course set up before versions were recorded: from now on
            return
        pinned, now = json.loads(path.read_text(encoding="utf-8")), grader_version()
        if pinned.get("sha256") != now["sha256"]:
            raise SystemExit(
                f"error: the grading code changed since this course was set up: it was set up with the "
                f"book at commit {pinned.get('commit')}, the checkout {ROOT} is at {now['commit']} "
                f"(coursegrader/ or assignments/nbgrader_config.py differ). Grade the term with the "
                f"grader it started with: `git checkout {pinned.get('commit')}` in {ROOT} (or a copy of "
                f"the book at that commit). To grade with the new grader from now on, run "
                f"`python -m coursegrader pin --course {self.root}`.")

    @staticmethod
    def is_course(path: Path) -> bool:
        return (Path(path) / "nbgrader_config.py").is_file()

    @property
    def course_id(self) -> str:
        return self.coursedir.course_id

    @property
    def db_url(self) -> str:
        return self.coursedir.db_url

    @property
    def source(self) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.source_directory, ".", ".")).resolve()

    @property
    def submitted(self) -> Path:
        return self.root / self.coursedir.submitted_directory

    def folder(self, step: str, student: str, assignment: str) -> Path:
        """``autograded/STUDENT/ASSIGNMENT`` and the like, as the config lays them out."""
        return Path(self.coursedir.format_path(getattr(self.coursedir, f"{step}_directory"),
                                               student, assignment))

    @property
    def outbound(self) -> Path:
        """Where ``nbgrader release_assignment`` puts the released assignments: the exchange's
        ``COURSE_ID/outbound/``."""
        root = self.config.Exchange.get("root", "/srv/nbgrader/exchange")
        return Path(root) / self.course_id / "outbound"

    @property
    def reports(self) -> Path:
        return self.root / "grading"

    def stale_feedback(self) -> list[tuple[str, str]]:
        """``(student, assignment)`` of every feedback file (``nbgrader generate_feedback``'s
        ``feedback/STUDENT/ASSIGNMENT/ASSIGNMENT.html``) older than the autograded notebook it
        was made from: a regrade (``make grade``) changed what it should say."""
        stale = []
        for html in sorted(self.root.glob("feedback/*/*/*.html")):
            student, assignment = html.parent.parent.name, html.parent.name
            graded = self.folder("autograded", student, assignment) / f"{assignment}.ipynb"
            if html.name == f"{assignment}.html" and graded.is_file() and \
                    graded.stat().st_mtime > html.stat().st_mtime:
                stale.append((student, assignment))
        return stale

    def gradebook(self):
        """nbgrader's ``Gradebook`` of the course (a new database is made with ``alembic``, which
        nbgrader runs by name: this Python's ``bin/`` goes first on ``PATH``)."""
        from nbgrader.api import Gradebook

        bin_dir = str(Path(sys.executable).parent)
        if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
            os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
        return Gradebook(self.db_url, self.course_id)


# ----------------------------------------------------------------------------- generate
def _files(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file below ``folder`` (checkpoints left out)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and ".ipynb_checkpoints" not in p.parts}


def write_config(root: Path, course_id: str = "attention-book") -> bool:
    """Write the course's ``nbgrader_config.py`` unless it has one; whether it wrote it. Also
    link ``coursegrader`` into the course directory: nbgrader imports a plugin named on its
    command line (``nbgrader export --exporter=coursegrader.lms.CanvasExportPlugin``) from the
    directory it runs in, before it reads the config."""
    link = root / "coursegrader"
    if not link.exists() and not link.is_symlink():
        link.symlink_to(Path(__file__).resolve().parent, target_is_directory=True)
    path = root / "nbgrader_config.py"
    if path.exists():
        return False
    pin(root)
    path.write_text(COURSE_CONFIG.format(book=str(ROOT), course_id=course_id,
                                         book_config="assignments/nbgrader_config.py"), encoding="utf-8")
    return True


def generate(out: Path, source: Path = SOURCE, names: list[str] | None = None, force: bool = False,
             course_id: str = "attention-book", log=print, env: dict | None = None) -> list[Path]:
    """Build or update the course directory ``out`` from ``source``: the student versions land in
    ``out/release/ASSIGNMENT/ASSIGNMENT.ipynb`` (solutions replaced by stubs, hidden tests
    removed) and the assignments, their cells and points in the gradebook. Returns the released
    notebooks. Refuses (``SystemExit``, saying which files) to overwrite a course copy of a
    source that was edited by hand, unless ``force``."""
    out, source = Path(out).resolve(), Path(source).resolve()
    names = names or assignment_names(source)
    out.mkdir(parents=True, exist_ok=True)
    if Course.is_course(out):
        Course(out).check_pin()
    if write_config(out, course_id):
        log(f"wrote {out / 'nbgrader_config.py'} (the course's settings: yours to edit)")
    manifest_path = out / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    todo, conflicts = [], []
    for name in names:
        new, dest = _files(source / name), out / "source" / name
        have = _files(dest) if dest.is_dir() else None
        released = out / "release" / name / f"{name}.ipynb"
        if have is not None and all(have.get(f) == h for f, h in new.items()):
            if not released.is_file():
                todo.append(name)
            continue
        edited = have is not None and have != manifest.get(name) and \
            any(f in have and have[f] != h for f, h in new.items())
        if edited:
            conflicts.append((name, sorted(f for f, h in new.items() if f in have and have[f] != h)))
            if not force:
                continue
            keep = out / "source-replaced" / datetime.datetime.now().strftime("%Y-%m-%d_%H%M%S") / name
            shutil.copytree(dest, keep)
            log(f"kept the course's own copy of {name} in {keep}")
        todo.append(name)
    if conflicts and not force:
        lines = [f"  {out / 'source' / n / f}" for n, files in conflicts for f in files]
        raise SystemExit("error: these files of the course differ from the book's sources and were "
                         "edited since they were copied; generating would overwrite them:\n"
                         + "\n".join(lines) + "\nMove your edits into assignments/source/, or run "
                         "again with FORCE=1 (make assignments FORCE=1; --force), which keeps a copy "
                         "of them under source-replaced/ first.")
    for name in todo:
        (out / "source" / name).mkdir(parents=True, exist_ok=True)
        shutil.copytree(source / name, out / "source" / name, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        manifest[name] = _files(out / "source" / name)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    fresh = not (out / "release").exists() or todo == names
    batches = [["*"]] if fresh and todo else [[n] for n in todo]
    for batch in batches:
        rc, text = nbgrader(out, ["generate_assignment", *batch, "--force"], env)
        if rc != 0:
            hint = ("\nnbgrader keeps an assignment's cells fixed once it has submissions: a test or "
                    "answer cell cannot be added or removed mid-term (edit its text instead)."
                    if "because there are submissions" in text else "")
            raise RuntimeError(f"nbgrader generate_assignment {' '.join(batch)} failed:\n"
                               f"{text[-4000:]}{hint}")
    outbound = Course(out).outbound
    for name in todo:
        log(f"generated {name} -> {out / 'release' / name} (not released)")
        if (outbound / name).is_dir():
            log(f"  {name} was released: students have the old version until you hand out the new one "
                f"with `nbgrader release_assignment {name} --force` (run in {out})")
        elif (out / "submitted").is_dir() and any((out / "submitted").glob(f"*/{name}")):
            log(f"  {name} has submissions but was not released through the exchange: hand the new "
                f"version out as you handed out the old one")
    if not todo:
        log(f"every assignment in {out} is up to date with {source}")
    released = [out / "release" / name / f"{name}.ipynb" for name in names]
    missing = [p for p in released if not p.is_file()]
    if missing:
        raise RuntimeError(f"nbgrader generate_assignment did not write {', '.join(map(str, missing))}")
    return released


# ----------------------------------------------------------------------------- the rule cell
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
