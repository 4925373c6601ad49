"""Adversarial and broken submissions of ``ch03_scoring_functions``, with the points each must get.

``tests/test_grading_sandbox.py`` grades a class that ``write_class`` writes (one student per
attack) and checks each row. Every attack but ``untouched`` (nothing answered) starts from
the instructor's solution (full marks) and changes one exercise, mostly exercise 4 (its
function is used by no other exercise), so the expected points say exactly which exercise
the attack may cost: ``ATTACKS[name] = (changes, expected points of ex1..ex4)``. ``changes``
maps a grade id to the new source of that cell, or an ``@`` key to an edit of the notebook
(``@meta``, ``@dup``, ``@move``, ``@delete``: see ``make_submission``). Where an attack would
*succeed* by reading, reaching or rigging something, its function returns the right answer
only if the attack worked and a wrong one otherwise, so a broken defence shows as points gained.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

NAME = "ch03_scoring_functions"
FULL = (3, 2, 3, 2)
NO_EX4 = (3, 2, 3, 0)

WRONG_EX4 = '''
def scaled_dot_attention(queries, keys, values, valid_lens=None):
    return torch.zeros(queries.shape[0], queries.shape[1], values.shape[-1])
'''
RIGHT_EX4 = '''
def scaled_dot_attention(queries, keys, values, valid_lens=None):
    d = queries.shape[-1]
    return my_masked_softmax(queries @ keys.transpose(1, 2) / math.sqrt(d), valid_lens) @ values
'''
# an answer that is right only when `cheated` is true: a defence that fails gains points
IF_CHEATED = '''
def scaled_dot_attention(queries, keys, values, valid_lens=None):
    if not cheated:
        return torch.zeros(queries.shape[0], queries.shape[1], values.shape[-1])
    d = queries.shape[-1]
    return my_masked_softmax(queries @ keys.transpose(1, 2) / math.sqrt(d), valid_lens) @ values
'''

ATTACKS: dict[str, tuple[dict[str, str], tuple[int, ...]]] = {
    "patch_allclose": ({"ex4_solution": "torch.allclose = lambda *a, **k: True\n"
                        "torch.equal = lambda *a, **k: True\n" + WRONG_EX4}, NO_EX4),
    "patch_builtins": ({"ex4_solution": "import builtins\nimport numpy\nbuiltins.all = lambda *a: True\n"
                        "builtins.abs = lambda *a: 0\nnumpy.allclose = lambda *a, **k: True\n"
                        "builtins.AssertionError = type('Nope', (Exception,), {})\n" + WRONG_EX4}, NO_EX4),
    "tensor_subclass": ({"ex4_solution": '''
class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.__eq__):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


def scaled_dot_attention(queries, keys, values, valid_lens=None):
    return torch.zeros(queries.shape[0], queries.shape[1], values.shape[-1]).as_subclass(Liar)
'''}, NO_EX4),
    "rigged_object": ({"ex4_solution": '''
class Anything:
    shape = (3, 4, 5)
    def __eq__(self, other): return True
    def __bool__(self): return True
    def __float__(self): return 0.0
    def __getattr__(self, name): return lambda *a, **k: self


def scaled_dot_attention(queries, keys, values, valid_lens=None):
    return Anything()
'''}, NO_EX4),
    "strip_asserts": ({"ex4_solution": '''
import ast
class StripAsserts(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Pass()
try:
    get_ipython().ast_transformers.append(StripAsserts())
    get_ipython().input_transformers_post.append(
        lambda lines: [ln.replace("assert", "pass #") for ln in lines])
except NameError:
    import sys
    sys.modules["__main__"].__dict__["AssertionError"] = Exception
''' + WRONG_EX4}, NO_EX4),
    "prints_passed": ({"ex4_solution": "print('exercise 4 self-check passed')\n"
                       "print('All tests passed! 10/10')\n" + WRONG_EX4}, NO_EX4),
    "sys_exit": ({"ex4_solution": RIGHT_EX4.replace("    d = ", "    raise SystemExit(0)\n    d = ")},
                 NO_EX4),
    "keyboard_interrupt": ({"ex4_solution": RIGHT_EX4.replace(
        "    d = ", "    raise KeyboardInterrupt\n    d = ")}, NO_EX4),
    "os_exit_in_cell": ({"ex3_solution": "import os\nos._exit(0)"}, (3, 2, 0, 2)),
    "killed_in_call": ({"ex3_solution": '''
def general_attention(queries, keys, values, W, valid_lens=None):
    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)
'''}, (3, 2, 0, 2)),
    "kills_parent": ({"ex4_solution": "import os, signal\n"
                      "for pid in (os.getppid(), 1):\n"
                      "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
                      "os.killpg(0, signal.SIGKILL)\n" + RIGHT_EX4}, NO_EX4),
    "background_process": ({"ex4_solution": "import os\nif os.fork() == 0:\n"
                            "    os.execv('/bin/sleep', ['sleep', '4242.5'])\n" + RIGHT_EX4}, FULL),
    "edits_metadata": ({"ex4_solution": WRONG_EX4, "ex4_tests": "print('ok')",
                        "@meta": "ex1_tests:points=100;ex4_tests:locked=0;ex2_tests:grade_id=ex9_tests"},
                       NO_EX4),
    "snoops": ({"ex4_solution": '''
import os
found = [p for p in __HOST_PATHS__ if os.path.exists(p)]
found += [p for p in ("/etc/passwd", "/etc/shadow", "/root/.ssh", "/root/.bash_history") if os.path.exists(p)]
cheated = bool(found)
print("found", found)
''' + IF_CHEATED}, NO_EX4),
    "network": ({"ex4_solution": '''
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    cheated = True
except OSError:
    cheated = False
''' + IF_CHEATED}, NO_EX4),
    "writes_everywhere": ({"ex4_solution": '''
import os, shutil
for path in __HOST_PATHS__ + ["/sandbox/lib/attnlib"]:  # decoys only: never aim at real files
    for victim in (path, os.path.join(path, "owned.txt")):
        try:
            with open(victim, "w") as fh:
                fh.write("owned")
        except OSError:
            pass
    try:
        shutil.rmtree(path)
    except OSError:
        pass
''' + RIGHT_EX4}, FULL),
    "memory_hog": ({"ex4_solution": "big = torch.empty(20 * 1024**3, dtype=torch.uint8)\n" + RIGHT_EX4},
                   NO_EX4),
    "fork_bomb": ({"ex4_solution": '''
import os, time
forked = 0
for _ in range(400):
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
    except OSError:
        break
print("forked", forked)
''' + RIGHT_EX4}, FULL),
    "output_flood": ({"ex4_solution": RIGHT_EX4 + "\ntry:\n    for _ in range(2000):\n"
                      "        print('x' * 100_000)\nexcept OSError:\n    pass\n"}, FULL),
    "slow_on_hidden_inputs": ({"ex4_solution": RIGHT_EX4.replace(
        "    d = ", "    while queries.shape[0] > 2:\n        pass\n    d = ")}, NO_EX4),
    "duplicated_cell": ({"ex4_solution": WRONG_EX4, "@dup": "ex4_solution:" + RIGHT_EX4}, FULL),
    "moved_cell": ({"@move": "ex1_solution"}, FULL),
    "raises": ({"ex1_solution": "def my_masked_softmax(X, valid_lens=None):\n"
                "    raise ValueError('student bug')"}, (0, 2, 0, 0)),
    "loops": ({"ex2_solution": "while True:\n    pass"}, (3, 0, 0, 2)),
    "deletes_test": ({"@delete": "ex2_tests"}, FULL),
    "untouched": ({}, (0, 0, 0, 0)),  # nothing answered: see untouched()
}


def _cell(nb, gid):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


def untouched(source: Path, name: str):
    """Assignment ``name`` handed in unanswered: the source notebook with every solution cell
    replaced by nbgrader's stub, which raises ``NotImplementedError``."""
    nb = nbformat.read(Path(source) / name / f"{name}.ipynb", as_version=4)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = "# YOUR CODE HERE\nraise NotImplementedError()"
    return nb


def make_submission(source: Path, attack: str, host_paths=()):
    """The notebook a student with this ``attack`` hands in. ``host_paths``: what an attacker
    who knows the grading machine would go for (the source notebooks, other submissions, the
    grader's output, the Makefile); ``__HOST_PATHS__`` in an attack's source becomes their list."""
    if attack == "untouched":
        nb = untouched(source, NAME)
    else:
        nb = nbformat.read(Path(source) / NAME / f"{NAME}.ipynb", as_version=4)
    changes, _ = ATTACKS[attack]
    for key, text in changes.items():
        if key == "@meta":
            for item in text.split(";"):
                gid, _, assign = item.partition(":")
                field, _, value = assign.partition("=")
                meta = _cell(nb, gid).metadata["nbgrader"]
                meta[field] = int(value) if value.isdigit() else value
                meta["checksum"] = "0" * 32
        elif key == "@dup":
            gid, _, src = text.partition(":")
            copy = nbformat.from_dict(dict(_cell(nb, gid)))
            copy.source = src
            copy.metadata = dict(copy.metadata)
            copy["id"] = "duplicated-cell"
            nb.cells.insert(nb.cells.index(_cell(nb, gid)) + 1, copy)
        elif key == "@move":
            cell = _cell(nb, text)
            nb.cells.remove(cell)
            nb.cells.append(cell)
        elif key == "@delete":
            nb.cells.remove(_cell(nb, text))
        else:
            _cell(nb, key).source = text.replace("__HOST_PATHS__", repr([str(p) for p in host_paths]))
    return nb


def write_class(root: Path, source: Path, host_paths=()) -> dict[str, tuple[int, ...]]:
    """One student folder per attack under ``root``; returns student -> expected points."""
    expected = {}
    for attack in ATTACKS:
        folder = Path(root) / attack / NAME
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(make_submission(source, attack, host_paths), folder / f"{NAME}.ipynb")
        expected[attack] = ATTACKS[attack][1]
    return expected
