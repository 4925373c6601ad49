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


def answer_targets(names):
    """``{id: dotted name}`` of every object and code object a list of dotted names covers: a
    function, a builtin, or a class with the methods of its bases from the same module; and
    ``"torch": True`` when one is a torch builtin (which only a torch function mode sees from
    every caller; the mode costs time, so it watches only then)."""
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
    return found


_active = []  # (function name, targets, hits) of the guards open now, innermost last


def _check(obj):
    """Record and refuse ``obj`` (a callable or a code object) if an open guard forbids it."""
    hit = False
    for label, targets, hits in _active:
        name = targets.get(id(obj))
        if name is None and isinstance(obj, types.BuiltinMethodType) and obj.__self__ is not None:
            name = targets.get(id(getattr(type(obj.__self__), obj.__name__, None)))  # x.softmax(...)
        if name is not None:
            hits.append(name)
            hit = hit or f"{label} uses {name}, which this exercise asks you to write yourself"
    if hit:
        raise OwnWorkError(hit)


def _profile(frame, event, arg):
    if event == "call":
        _check(frame.f_code)
    elif event == "c_call" and not frame.f_code.co_filename.startswith(_TORCH):
        _check(arg)  # torch's own C calls: the listed torch builtins are the mode's to see


class _TorchCalls(TorchFunctionMode):
    """Sees every torch function, however it is reached (a C caller, ``operator.call``, ...)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        _check(func)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def own_work(label, targets):
    """While the block runs, calls of the ``targets`` (``answer_targets``) record their name in
    the list this yields and raise ``OwnWorkError`` (in this thread and threads started meanwhile)."""
    hits = []
    # entered and left outside the profile: the mode's own calls are no hits
    with _TorchCalls() if targets.get("torch") else contextlib.nullcontext():
        _active.append((label, targets, hits))
        outer, outer_threads = sys.getprofile(), threading.getprofile()
        sys.setprofile(_profile)
        threading.setprofile(_profile)
        try:
            yield hits
        finally:
            sys.setprofile(outer)
            threading.setprofile(outer_threads)
            _active.pop()


def guarded(fn, label, names):
    """``fn`` that runs under ``own_work(label, names)`` and fails if it used one of ``names``.
    Called from another exercise function, it runs under that one's rule alone (as graded)."""
    targets = answer_targets(names)

    def call(*args, **kwargs):
        if _active:
            return fn(*args, **kwargs)
        with own_work(label, targets) as hits:
            result = fn(*args, **kwargs)
        if hits:
            raise OwnWorkError(f"{label} uses {hits[0]}, which this exercise asks you to write yourself")
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
