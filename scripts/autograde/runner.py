"""The only grading code that runs inside the sandbox, next to the student's code.

It executes the cells the grader sends, calls the student's functions on the inputs the
grader sends and writes back plain data. It decides nothing: the tests and their verdicts
live in the grader's own process, so whatever the student's code does to this process
(patching torch, rigging ``__eq__``, exiting, killing it) can change what comes back,
never how it is judged.

Protocol (see ``sandbox.py``): frames of an 8-byte big-endian length and a ``torch.save``
payload, read from fd ``REQ_FD`` and written to fd ``REP_FD``. Requests (from the grader,
trusted): ``("run", source)``, ``("call", name, args, kwargs)``, ``("callback_return",
value)``, ``("callback_raise", ename, message)``. Replies: ``("done",)``, ``("error",
ename, message)``, ``("return", value)``, ``("raise", ename, message)``, ``("callback",
id, args, kwargs)``.

    python runner.py REQ_FD REP_FD MEMORY_BYTES MAX_PROCESSES OUTPUT_BYTES
"""
import io
import os
import resource
import signal
import struct
import sys

CALLBACK = "\x00grader-callback:"  # an argument the grader computes on request
STUDENT = "\x00student-function:"  # an argument that is one of the student's own functions


def _limits(memory: int, processes: int, output: int) -> None:
    """Hard limits: the student's code cannot raise them again (no capabilities here)."""
    for which, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_NPROC, processes),
                         (resource.RLIMIT_FSIZE, output), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(which, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead


def main() -> None:
    req_fd, rep_fd = int(sys.argv[1]), int(sys.argv[2])
    import torch  # before the memory limit is tight: the import maps a lot of address space

    _limits(int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    reader, writer = os.fdopen(req_fd, "rb", buffering=0), os.fdopen(rep_fd, "wb", buffering=0)

    def receive():
        head = reader.read(8)
        if len(head) < 8:
            os._exit(0)  # the grader went away
        size = struct.unpack(">Q", head)[0]
        data = b""
        while len(data) < size:
            chunk = reader.read(size - len(data))
            if not chunk:
                os._exit(0)
            data += chunk
        return torch.load(io.BytesIO(data), weights_only=False)  # written by the grader

    def send(message) -> None:
        buf = io.BytesIO()
        torch.save(message, buf)
        writer.write(struct.pack(">Q", len(buf.getvalue())) + buf.getvalue())

    def plain(value, depth=0):
        """Tensors become plain CPU tensors (no subclass, no autograd); containers recurse."""
        if depth > 20:
            raise TypeError("the value is nested too deeply")
        if isinstance(value, torch.Tensor):
            return value.detach().as_subclass(torch.Tensor).to("cpu").clone()
        if isinstance(value, (bool, int, float, str, type(None))):
            return value
        if isinstance(value, (list, tuple)):
            return type(value)(plain(v, depth + 1) for v in value) if type(value) in (list, tuple) \
                else tuple(plain(v, depth + 1) for v in value)
        if isinstance(value, dict):
            return {str(k): plain(v, depth + 1) for k, v in value.items()}
        if type(value).__module__ == "numpy":
            return plain(torch.as_tensor(value), depth + 1)
        raise TypeError(f"returned a {type(value).__name__}, which the grader cannot check")

    def callback(ident):
        def call(*args, **kwargs):
            send(("callback", ident, plain(list(args)), plain(kwargs)))
            reply = receive()
            if reply[0] == "callback_return":
                return reply[1]
            raise RuntimeError(f"{reply[1]}: {reply[2]}")
        return call

    namespace = {"__name__": "__main__"}

    def resolve(value):
        if isinstance(value, str) and value.startswith(CALLBACK):
            return callback(int(value[len(CALLBACK):]))
        if isinstance(value, str) and value.startswith(STUDENT):
            return namespace[value[len(STUDENT):]]
        if type(value) in (list, tuple):
            return type(value)(resolve(v) for v in value)
        if type(value) is dict:
            return {k: resolve(v) for k, v in value.items()}
        return value

    try:  # notebooks use magics now and then: let IPython translate them when it can
        from IPython.core.inputtransformer2 import TransformerManager
        translate = TransformerManager().transform_cell
    except Exception:  # noqa: BLE001 - without IPython, cells run as plain Python
        def translate(source):
            return source

    send(("ready",))
    while True:
        message = receive()
        try:
            if message[0] == "run":
                exec(compile(translate(message[1]), "<cell>", "exec"), namespace)  # noqa: S102
                send(("done",))
            elif message[0] == "call":
                if message[1] not in namespace:
                    raise NameError(f"name '{message[1]}' is not defined")
                result = namespace[message[1]](*resolve(message[2]), **resolve(message[3]))
                send(("return", plain(result)))
        except BaseException as err:  # noqa: BLE001 - everything goes back as plain text
            text = str(err)[:2000]
            send(("error" if message[0] == "run" else "raise", type(err).__name__, text))


if __name__ == "__main__":
    main()
