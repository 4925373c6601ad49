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

import torch
from torch.utils._python_dispatch import _disable_current_modes

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
        if not torch._C._len_torch_dispatch_stack():
            return self.session.call(self.student_function, args, kwargs)
        # a test counts the operators (a TorchDispatchMode of its own): they run in the sandbox,
        # which records them, and the test's modes see them here as if the function ran here
        with _disable_current_modes() as modes:
            result, trace = self.session.call(self.student_function, args, kwargs, count=True)
            replay(trace, (list(args), dict(kwargs)), modes)
        return result

    def __repr__(self):
        return f"<student function {self.student_function}>"


def _tensors(value, out: list) -> list:
    """The tensors in ``value`` (lists, tuples and dicts, in order), as the runner's recorder
    numbers the arguments."""
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, out)
    elif type(value) is dict:
        for v in value.values():
            _tensors(v, out)
    return out


class Replayed:
    """One operator the student's function ran in the sandbox, handed to the tests' modes: it
    has the operator's ``is_view`` and, when called, gives the modes below (or, at the bottom,
    the tensors that stand for its outputs)."""

    def __init__(self, is_view: bool, below):
        self.is_view, self._below = is_view, below

    def __call__(self, *args, **kwargs):
        return self._below()

    def __repr__(self):
        return f"<operator run in the sandbox{' (a view)' if self.is_view else ''}>"


def replay(trace, args, modes: list) -> None:
    """Show each operator of ``trace`` (recorded in the sandbox) to the dispatch ``modes`` (top
    first), as PyTorch would have if the function had run here: its inputs and outputs are tensors
    of the recorded shapes that share memory as the recorded ones did, the arguments' being the
    test's own tensors (so a mode that watches ``k`` sees what was computed from it). Stand-ins
    hold one element each, whatever their shape."""
    arg_ids, ops = trace
    given = _tensors(args, [])
    canon = {sid: given[i] for sid, i in arg_ids if i < len(given)}

    def tensor(sid, shape=None):
        base = canon.setdefault(sid, torch.empty(1))
        return base if shape is None else base.as_strided(shape, (0,) * len(shape))

    def show(level, is_view, inputs, outputs):
        if level == len(modes):
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        op = Replayed(is_view, lambda: show(level + 1, is_view, inputs, outputs))
        return modes[level].__torch_dispatch__(op, (torch.Tensor,), tuple(inputs), {})

    for is_view, ins, outs in ops:
        inputs = [tensor(sid) for sid in ins]
        show(0, is_view, inputs, [tensor(sid, shape) for sid, shape in outs])


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
                 answers: dict[str, list[str]] | None = None, exercises: dict[str, int] | None = None,
                 record: bool = False):
        self.steps, self.work, self.timeout, self.no_sandbox = steps, work, timeout, no_sandbox
        # record the operators of every call, not only of those a test counts: from inside, a
        # counted call then looks like any other (an assignment whose tests count operators)
        self.record = record
        self.answers, self.exercises = answers or {}, exercises or {}
        self.box: Sandbox | None = None
        self.outcome: dict[int, str] = {}  # step index -> "ok" or why it failed
        self.tracebacks: list[str] = []  # the student's tracebacks, for the instructor
        self.cell_tracebacks: dict[str, str] = {}  # step label -> its traceback
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
                    self.box.forbid(self.answers, SETUP_TIMEOUT, self.exercises, self.record)
                    forbidden = True
                self.box.run(step.source, step.timeout or self.timeout, step.label, step.exercise)
                self.outcome[i] = "ok"
            except StudentError as err:
                self.outcome[i] = student_error(err)
                self.tracebacks.append(f"{step.label} raised:\n{err.where or err}")
                self.cell_tracebacks[step.label] = self.tracebacks[-1]
            except SandboxError as err:
                self.outcome[i] = sandbox_error(err, self.timeout)
                self.tracebacks.append(f"{step.label}: {self.outcome[i]}")
                self.box.close()
                return self._start()
        if not forbidden:
            self.box.forbid(self.answers, SETUP_TIMEOUT, self.exercises, self.record)

    def ensure(self) -> None:
        if self.box is None or not self.box.alive:
            self._start()

    def call(self, name: str, args, kwargs, count: bool = False):
        """The function's result (with ``count``: and the trace of its operators)."""
        self.ensure()
        try:
            if not (count or self.record):
                return self.box.call(name, args, kwargs, self.timeout)
            result, trace = self.box.call(name, args, kwargs, self.timeout, record=True)
            return (result, trace) if count else result
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
