# The rule behind the self-checks and the grader: while one of your exercise functions runs,
# the calls that ANSWERS lists for it (they would answer the exercise for you) raise
# OwnWorkError, however they are reached, and the exercise scores 0 when graded.
import contextlib
import importlib
import inspect
import os
import sys
import threading
import types

import torch.overrides
from torch.overrides import TorchFunctionMode

_TORCH = os.path.dirname(os.path.dirname(torch.overrides.__file__)) + os.sep  # torch's own code


class OwnWorkError(RuntimeError):
    """An exercise function called something that answers the exercise for it."""


def _resolve(dotted):
    """The object a dotted name such as ``torch.nn.functional.softmax`` names."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"cannot find {dotted}")


def answer_targets(names, direct=False):
    """``{id: dotted name}`` of every object and code object a list of dotted names covers: a
    function, a builtin, or a class with the methods of its bases from the same module; and
    ``"torch": True`` when one is a torch builtin (which only a torch function mode sees from
    every caller; the mode costs time, so it watches only then). ``direct``: the targets count
    only when the student's own code calls them (``"direct"``: their ids)."""
    found = {}
    for name in names:
        obj = _resolve(name)
        items = [obj]
        if isinstance(obj, type):
            items += [v for c in obj.__mro__ if c.__module__ == obj.__module__ for v in vars(c).values()]
        for item in items:
            item = getattr(item, "__func__", getattr(item, "fget", item))  # static/class methods, properties
            if isinstance(item, types.FunctionType):  # its own code, not a decorator's shared wrapper
                found[id(inspect.unwrap(item).__code__)] = name
            elif callable(item) and not isinstance(item, type):  # a builtin (C) function or method
                found[id(item)] = name
                owner = getattr(item, "__module__", None) or getattr(getattr(item, "__objclass__", None),
                                                                    "__module__", "")
                if str(owner).startswith("torch"):
                    found["torch"] = True
    if direct:
        found["direct"] = {k for k in found if k != "torch"}
    return found


_active = []  # (function name, targets, hits, owner) of the guards open now, innermost last
_mode_caller = [None]  # the frame that called into the torch mode (the profile sees it)


def _lookup(obj, targets):
    name = targets.get(id(obj))
    if name is None and isinstance(obj, types.BuiltinMethodType) and obj.__self__ is not None:
        name = targets.get(id(getattr(type(obj.__self__), obj.__name__, None)))  # x.softmax(...)
    return name


def _maker(frame, owner):
    """The exercise whose own code made a call, from ``frame`` outwards: ``(owner(code), file,
    line)`` of the first frame that ``owner`` knows as the student's code (None if none is)."""
    while owner is not None and frame is not None:
        found = owner(frame.f_code)
        if found is not None:
            return found, frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def _check(obj, frame=None):
    """Record and refuse ``obj`` (a callable or a code object, called from ``frame``) if an open
    guard forbids it. A call made by the code of another exercise's function that its own rule
    forbids too is that exercise's fault: recorded for it, and let through."""
    hit = False
    for label, targets, hits, owner in _active:
        name = _lookup(obj, targets)
        if name is None:
            continue
        if id(obj) in targets.get("direct", ()) and not (owner and frame and owner(frame.f_code)):
            continue  # watched only where the student's own code calls it (torch calls it too)
        made = _maker(frame, owner)
        where = made[1:] if made else (None, None)
        if made and made[0][0] not in (None, label) and _lookup(obj, made[0][1]):
            hits.append((made[0][0], name, *where))
            continue
        hits.append((label, name, *where))
        hit = hit or f"{label} uses {name}, which this exercise asks you to write yourself"
    if hit:
        raise OwnWorkError(hit)


def _profile(frame, event, arg):
    if event == "call":
        if frame.f_code is _TorchCalls.__torch_function__.__code__:
            _mode_caller[0] = frame.f_back
        _check(frame.f_code, frame.f_back)
    elif event == "c_call" and not frame.f_code.co_filename.startswith(_TORCH):
        _check(arg, frame)  # torch's own C calls: the listed torch builtins are the mode's to see


class _TorchCalls(TorchFunctionMode):
    """Sees every torch function, however it is reached (a C caller, ``operator.call``, ...)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        caller, _mode_caller[0] = _mode_caller[0], None
        _check(func, caller)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def own_work(label, targets, owner=None):
    """While the block runs, calls of the ``targets`` (``answer_targets``) raise ``OwnWorkError``
    (in this thread and threads started meanwhile) and add ``(label, name, file, line)`` to the
    list this yields. ``owner(code)`` says whose code a frame runs: ``(label, targets)`` of an
    exercise function, ``(None, {})`` for the student's other code, None for code not theirs."""
    hits = []
    # entered and left outside the profile: the mode's own calls are no hits
    with _TorchCalls() if targets.get("torch") else contextlib.nullcontext():
        _active.append((label, targets, hits, owner))
        outer, outer_threads = sys.getprofile(), threading.getprofile()
        sys.setprofile(_profile)
        threading.setprofile(_profile)
        try:
            yield hits
        finally:
            sys.setprofile(outer)
            threading.setprofile(outer_threads)
            _active.pop()


_cells = {}  # notebook cell file -> (label, targets) of the exercise function defined there


def guarded(fn, label, names):
    """``fn`` that runs under ``own_work(label, names)`` and fails if it used one of ``names``.
    Called from another exercise function, it runs under that one's rule alone (as graded), and
    a call its own code makes is its own exercise's fault, not the caller's."""
    targets = answer_targets(names)
    file = fn.__code__.co_filename
    _cells[file] = (label, targets) if _cells.get(file, (label,))[0] == label else (None, {})

    def call(*args, **kwargs):
        if _active:
            return fn(*args, **kwargs)
        with own_work(label, targets, lambda code: _cells.get(code.co_filename)) as hits:
            result = fn(*args, **kwargs)
        if any(h[0] == label for h in hits):
            name = next(h[1] for h in hits if h[0] == label)
            raise OwnWorkError(f"{label} uses {name}, which this exercise asks you to write yourself")
        return result
    call.__wrapped__, call.__name__, call.__doc__, call.own_work = fn, fn.__name__, fn.__doc__, True
    return call


def guard_functions(namespace, answers):
    """Put every function ``answers`` names in ``namespace`` under its rule (once)."""
    for label, names in answers.items():
        fn = namespace.get(label)
        if callable(fn) and not getattr(fn, "own_work", False):
            namespace[label] = guarded(fn, label, names)


def watch_answers(answers):
    """In Jupyter: after every cell, put the exercise functions under their rule."""
    try:
        shell = get_ipython()  # noqa: F821 - defined in a notebook's kernel only
    except NameError:
        return
    hooks = shell.events.callbacks["post_run_cell"]
    hooks[:] = [h for h in hooks if not getattr(h, "own_work", False)]

    def hook(*_):
        guard_functions(shell.user_ns, answers)
    hook.own_work = True
    shell.events.register("post_run_cell", hook)
