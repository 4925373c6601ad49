"""The sandbox of one submission as the tests see it: a ``Session`` and ``StudentFunction``s.

A ``Session`` runs the submission's cells (``Step``s) in a ``Sandbox`` and restarts it after a
crash, running again the cells that worked and skipping the one that broke it, so a crash costs
only the exercise it happened in. A ``StudentFunction`` stands in the tests' namespace for a
function the student defined: calling it runs the student's function in the sandbox, under
the exercise rule, and brings back plain data.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coursegrader.result import short
from coursegrader.sandbox import AnswerUsed, Sandbox, SandboxError, StudentError

SETUP_TIMEOUT = 300.0  # the locked setup cells import torch and attnlib
NOT_ANSWERED = "not answered (raise NotImplementedError is still there)"


@dataclass
class Step:
    label: str  # what the feedback calls it: "ex1_solution", "setup", "cell 7"
    source: str
    exercise: int | None  # the exercise whose solution this is
    timeout: float | None = None  # None: the per-cell limit
    locked: bool = False  # one of the source's locked cells (trusted)


class StudentFunction:
    """Stands for a function the student defined: a call runs it in the sandbox."""

    def __init__(self, session: Session, name: str):
        self.session, self.student_function = session, name  # the sandbox sends it by name

    @property
    def name(self) -> str:
        return self.student_function

    def __call__(self, *args, **kwargs):
        return self.session.call(self.student_function, args, kwargs)

    def __repr__(self):
        return f"<student function {self.student_function}>"


class Broken(Exception):  # noqa: N818 - a test failed because the student's process broke
    pass


class RuledOut(Exception):  # noqa: N818 - a call used what its exercise rules out
    pass


def ruled_out(exercise: int, used: AnswerUsed) -> str:
    """The note for an exercise whose function used ``used``, naming the cell and line."""
    where = f" ({used.where})" if used.where else ""
    if used.kind == "answer":
        return f"ex{exercise} uses {used.what}{where}, which this exercise asks you to write yourself"
    return f"ex{exercise} uses {used.what}{where}, which could get round the check of the calls it rules out"


_BUILTIN_ERRORS = {e.__name__: e for e in (ValueError, TypeError, IndexError, KeyError,
                                           RuntimeError, ZeroDivisionError, AttributeError,
                                           NotImplementedError, NameError, AssertionError,
                                           ArithmeticError, LookupError, OverflowError)}


class Session:
    """The sandbox of one submission, restarted (and its good cells re-run) after a crash."""

    def __init__(self, steps: list[Step], work: Path, timeout: float, no_sandbox: bool,
                 answers: dict[str, list[str]] | None = None, exercises: dict[str, int] | None = None):
        self.steps, self.work, self.timeout, self.no_sandbox = steps, work, timeout, no_sandbox
        self.answers, self.exercises = answers or {}, exercises or {}
        self.box: Sandbox | None = None
        self.outcome: dict[int, str] = {}  # step index -> "ok" or why it failed
        self.tracebacks: list[str] = []  # the student's tracebacks, for the instructor
        self.restarts = 0
        self.used: list[AnswerUsed] = []  # what the calls since the last reset used
        self.charged: list[AnswerUsed] = []  # forbidden calls that another exercise's code made

    def _start(self) -> None:
        self.close()
        self.box = Sandbox(self.work / f"sandbox{self.restarts}", self.no_sandbox)
        self.restarts += 1
        forbidden = False
        for i, step in enumerate(self.steps):
            if self.outcome.get(i, "ok") != "ok":
                continue  # it failed before: skip it this time
            try:
                if not step.locked and not forbidden:  # the trusted set-up is done
                    self.box.forbid(self.answers, SETUP_TIMEOUT, self.exercises)
                    forbidden = True
                self.box.run(step.source, step.timeout or self.timeout, step.label, step.exercise)
                self.outcome[i] = "ok"
            except StudentError as err:
                self.outcome[i] = student_error(err)
                self.tracebacks.append(f"{step.label} raised:\n{err.where or err}")
            except SandboxError as err:
                self.outcome[i] = sandbox_error(err, self.timeout)
                self.tracebacks.append(f"{step.label}: {self.outcome[i]}")
                self.box.close()
                return self._start()
        if not forbidden:
            self.box.forbid(self.answers, SETUP_TIMEOUT, self.exercises)

    def ensure(self) -> None:
        if self.box is None or not self.box.alive:
            self._start()

    def call(self, name: str, args, kwargs):
        self.ensure()
        try:
            return self.box.call(name, args, kwargs, self.timeout)
        except AnswerUsed as err:
            self.used.append(err)
            raise RuledOut(err.what) from None
        except StudentError as err:
            cls = _BUILTIN_ERRORS.get(err.ename, RuntimeError)  # a test may expect ValueError
            exc = cls(err.message if cls.__name__ == err.ename else f"{err.ename}: {err.message}")
            exc.from_student = student_error(err)
            exc.student_traceback = err.where
            raise exc from None
        except SandboxError as err:
            self.box.close()
            raise Broken(f"{name}: " + sandbox_error(err, self.timeout)) from None
        finally:
            if self.box is not None:
                self.charged += self.box.charges
                self.box.charges = []

    def close(self) -> None:
        if self.box is not None:
            self.box.close()
            self.box = None


def student_error(err: StudentError) -> str:
    if err.ename == "NotImplementedError":
        return NOT_ANSWERED
    return _memory_note(f"{err.ename}: {short(err.message, 120)}" if err.message else err.ename)


def sandbox_error(err: SandboxError, timeout: float) -> str:
    if err.kind == "timeout":
        return f"stopped after the {timeout:g} s time limit per cell"
    if err.kind == "died":
        return f"{err}; the points already earned were kept"
    return f"the grader could not read what it returned ({err})"


def _memory_note(text: str) -> str:
    low = text.lower()
    if "can't allocate memory" in low or "memoryerror" in low or "cannot allocate" in low:
        return text + " (memory limit)"
    return text
