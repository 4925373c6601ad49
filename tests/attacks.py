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

``ANSWER_ROUTES`` are attacks whose exercise 4 calls what the exercise asks the student to
write (``attnlib.DotProductAttention``, ``F.scaled_dot_product_attention``, ...) by one route
each, and otherwise answers right: each must cost exercise 4 and name the call (``USED``).
``CHEATS`` holds one such submission for every assignment (``cheat``): a function that
calls what its exercise rules out, and otherwise answers right.
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
    "duplicated_cell": ({"ex4_solution": WRONG_EX4, "@dup": "ex4_solution:" + RIGHT_EX4}, FULL),
    "moved_cell": ({"@move": "ex1_solution"}, FULL),
    "raises": ({"ex1_solution": "def my_masked_softmax(X, valid_lens=None):\n"
                "    raise ValueError('student bug')"}, (0, 2, 0, 0)),
    "deletes_test": ({"@delete": "ex2_tests"}, FULL),
    "untouched": ({}, (0, 0, 0, 0)),  # nothing answered: see untouched()
}

# exercise 4 answered by the library it asks the student to write, one route per attack
MASK = ("    mask = None if valid_lens is None else "
        "torch.arange(keys.shape[1]) < valid_lens.reshape(queries.shape[0], -1, 1)\n")
SDPA = "(queries, keys, values, attn_mask=mask)\n"


def _ex4(body: str) -> str:
    return "def scaled_dot_attention(queries, keys, values, valid_lens=None):\n" + body


def _first(line: str, solution: str) -> str:
    """``solution`` (an exercise 4 answer) that runs ``line`` first."""
    return solution.replace("    d = ", f"    {line}\n    d = ")


DPA = "    return {}().eval()(queries, keys, values, valid_lens)\n"
ANSWER_ROUTES: dict[str, tuple[dict[str, str], str]] = {  # attack -> (changes, the call named)
    "answer_alias": ({"ex3_solution+": "dpa = attnlib.DotProductAttention\n",  # an earlier cell
                      "ex4_solution": _ex4(DPA.format("dpa"))}, "attnlib.DotProductAttention"),
    "answer_getattr": ({"ex4_solution": _ex4(DPA.format('getattr(attnlib, "DotProduct" + "Attention")'))},
                       "attnlib.DotProductAttention"),
    "answer_importlib": ({"ex4_solution": "import importlib\n" + _ex4(
        DPA.format('importlib.import_module("attnlib.scoring").DotProductAttention'))},
        "attnlib.DotProductAttention"),
    "answer_import_as": ({"ex4_solution": "from attnlib import DotProductAttention as Mine\n" +
                          _ex4(DPA.format("Mine"))}, "attnlib.DotProductAttention"),
    "answer_subclass": ({"ex4_solution": "class Mine(attnlib.DotProductAttention):\n    pass\n\n\n" +
                         _ex4(DPA.format("Mine"))}, "attnlib.DotProductAttention"),
    "answer_functional": ({"ex4_solution": "import torch.nn.functional as F\n" + _ex4(
        MASK + "    return F.scaled_dot_product_attention" + SDPA)},
        "torch.nn.functional.scaled_dot_product_attention"),
    "answer_c_function": ({"ex4_solution": "sdpa = torch._C._nn.scaled_dot_product_attention\n" + _ex4(
        MASK + "    return sdpa" + SDPA)}, "torch.nn.functional.scaled_dot_product_attention"),
    "answer_operator_call": ({"ex4_solution": "import operator\nimport torch.nn.functional as F\n" + _ex4(
        MASK + "    return operator.call(F.scaled_dot_product_attention, queries, keys, values, "
        "attn_mask=mask)\n")}, "torch.nn.functional.scaled_dot_product_attention"),
    "answer_library_sdp": ({"ex4_solution": _ex4(
        MASK + "    return attnlib.scaled_dot_product(queries, keys, values, mask)[0]\n")},
        "attnlib.scaled_dot_product"),
    "answer_worker_thread": ({"ex4_solution": """
import queue, threading
import torch.nn.functional as F
jobs, results = queue.Queue(), queue.Queue()
def work():
    while True:
        job = jobs.get()
        results.put(F.scaled_dot_product_attention(*job[:3], attn_mask=job[3]))
threading.Thread(target=work, daemon=True).start()
""" + _ex4(MASK + "    jobs.put((queries, keys, values, mask))\n    return results.get()\n")},
        "a thread started in a cell that still runs"),
    "answer_thread": ({"ex4_solution": "import threading\nimport torch.nn.functional as F\n" + _ex4(
        MASK + "    out = []\n    t = threading.Thread(target=lambda: out.append("
        "F.scaled_dot_product_attention" + SDPA.strip() + "))\n    t.start()\n    t.join()\n"
        "    return out[0]\n")}, "_thread.start_new_thread"),
    "answer_swallowed": ({"ex4_solution": _first(
        "try:\n        attnlib.DotProductAttention()\n    except Exception:\n        pass", RIGHT_EX4)},
        "attnlib.DotProductAttention"),
    # with the profile off, attnlib.masked_softmax (Python code, no torch function of its own)
    # is seen by nothing else: the audit hook must name the switch
    "answer_setprofile": ({"ex4_solution": "import sys\n" + _first("sys.setprofile(None)", RIGHT_EX4.replace(
        "my_masked_softmax(", "attnlib.masked_softmax("))}, "sys.setprofile"),
    "answer_gc": ({"ex4_solution": "import gc\n" + _first("gc.get_objects()", RIGHT_EX4)}, "gc.get_objects"),
    "answer_frames_in_cell": ({"ex4_solution": "import sys\nsys._getframe(0).f_back\n" + RIGHT_EX4},
                              "sys._getframe (in a cell)"),
}
for _name, (_changes, _used) in ANSWER_ROUTES.items():
    ATTACKS[_name] = (_changes, (0, 0, 0, 0) if "in a cell" in _used else NO_EX4)

# one submission per assignment whose function calls what its exercise rules out:
# assignment -> (solution grade id, its new source, points per exercise, the call named)
CHEATS: dict[str, tuple[str, str, tuple[int, ...], str]] = {
    "ch01_attention_cues": ("ex1_solution", '''
def softmax_t(scores, temperature=1.0):
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return torch.softmax(scores / temperature, dim=-1)
''', (0, 2, 3), "torch.softmax"),
    "ch02_attention_pooling": ("ex4_solution", '''
def best_width(x, y, widths):
    widths = [float(w) for w in widths]
    return widths[int(attnlib.loo_cv_mse(x, y, "epanechnikov", widths).argmin())]
''', (3, 2, 3, 0), "attnlib.loo_cv_mse"),
    "ch03_scoring_functions": ("ex4_solution", _ex4(DPA.format("attnlib.DotProductAttention")),
                               (3, 2, 3, 0), "attnlib.DotProductAttention"),
    "ch04_bahdanau_attention": ("ex3_solution", '''
def bahdanau_lstm_step(attention, cell, x_emb, state, enc_outputs, enc_valid_lens=None):
    attnlib.Seq2SeqAttentionDecoder(10, x_emb.shape[-1], enc_outputs.shape[-1], 1)
    h_prev, c_prev = state
    context, weights = bahdanau_context(attention, h_prev, enc_outputs, enc_valid_lens)
    h, c = cell(torch.cat((context, x_emb), dim=-1), (h_prev, c_prev))
    return (h, c), weights
''', (3, 3, 0), "attnlib.Seq2SeqAttentionDecoder"),
    "ch05_multihead_attention": ("ex3_solution", '''
def multihead_forward(mha, queries, keys, values, valid_lens=None):
    out = mha(queries, keys, values, valid_lens)
    h = mha.num_heads
    q, k = split_heads(mha.W_q(queries), h), split_heads(mha.W_k(keys), h)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if valid_lens is not None:
        mask = torch.arange(k.shape[2]) < valid_lens.reshape(-1, 1, 1, 1)
        scores = scores.masked_fill(~mask, float("-inf"))
    return out, torch.softmax(scores, dim=-1)
''', (2, 2, 0), "attnlib.MultiHeadAttention"),
    "ch06_positional_encoding": ("ex2_solution", '''
def rotation(k, d):
    return attnlib.offset_rotation(k, d, torch.float64)
''', (2, 0, 3), "attnlib.offset_rotation"),
    "ch07_transformer": ("ex2_solution", '''
def causal_self_attention(X):
    return torch.nn.functional.scaled_dot_product_attention(X, X, X, is_causal=True)
''', (2, 0, 2, 3), "torch.nn.functional.scaled_dot_product_attention"),
    "ch08_beyond_translation": ("ex4_solution", '''
def sampling_probs(logits, temperature, top_k=None):
    return lm.next_token_probs(logits, temperature, top_k)
''', (2, 3, 2, 0), "attnlib.lm.next_token_probs"),
    "ch09_attention_at_scale": ("ex3_solution", '''
def window_mask(num_queries, num_keys, window):
    return attnlib.sliding_window_mask(num_queries, num_keys, window)
''', (3, 2, 0, 3), "attnlib.sliding_window_mask"),
}


def cheat(source: Path, name: str):
    """The source notebook of assignment ``name`` with ``CHEATS[name]`` in place."""
    gid, text, _, _ = CHEATS[name]
    nb = nbformat.read(Path(source) / name / f"{name}.ipynb", as_version=4)
    _cell(nb, gid).source = text
    return nb


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
        elif key.endswith("+"):  # appended to the cell as the source has it
            _cell(nb, key[:-1]).source += "\n" + text
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


# Right values, but one key/value head broadcast against its group: torch.matmul copies it.
GQA_BROADCAST = """
def gqa_attention(q, k, v):
    b, h, n_q, d = q.shape
    g = k.shape[1]
    if h % g:
        raise ValueError("g must divide h")
    q = q.unflatten(1, (g, h // g))  # (b, g, h/g, n_q, d) against (b, g, 1, n, d): torch.matmul copies
    w = (q @ k.unsqueeze(2).transpose(-2, -1) / math.sqrt(d)).softmax(-1)
    return (w @ v.unsqueeze(2)).flatten(1, 2)
"""

# ch09's exercises 2 and 3 are graded by counting the operators the student's function runs (the
# hidden tests' TorchDispatchModes): answers that are right but copy the key/value heads, or score
# every key and mask, must lose exactly that exercise through the sandbox too, and so must answers
# that try to hide their operators from the count or to see it. student -> (solution grade id, its
# new source, points per exercise, what the notes say)
CH09 = "ch09_attention_at_scale"
_GQA = '''
def gqa_attention(q, k, v):
    h, g = q.shape[1], k.shape[1]
    if h % g:
        raise ValueError("g must divide h")
    {copy}
    return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v
'''
_WINDOW_MASK = '''
def window_mask(num_queries, num_keys, window):
    pos_q = torch.arange(num_keys - num_queries, num_keys)[:, None]
    pos_k = torch.arange(num_keys)[None, :]
    return (pos_k <= pos_q) & (pos_k > pos_q - window)
'''
COPIED = "hidden tests failed: AssertionError (hint: the tests count what PyTorch's operators"
HIDDEN_OPS = "which could get round the check of the calls it rules out"
CH09_ATTACKS: dict[str, tuple[str, str, tuple[int, ...], str]] = {
    "gqa_cat": ("ex2_solution", _GQA.format(copy="k, v = (torch.cat([t[:, j:j + 1] for j in range(g) "
                                                 "for _ in range(h // g)], 1) for t in (k, v))"),
                (3, 0, 2, 3), COPIED),
    "gqa_stack": ("ex2_solution", _GQA.format(copy="k, v = (torch.stack([t[:, i // (h // g)] for i in "
                                                   "range(h)], 1) for t in (k, v))"), (3, 0, 2, 3), COPIED),
    "gqa_indexing": ("ex2_solution", _GQA.format(copy="k, v = k[:, torch.arange(h) // (h // g)], "
                                                      "v[:, torch.arange(h) // (h // g)]"),
                     (3, 0, 2, 3), COPIED),
    "gqa_repeat_interleave": ("ex2_solution", _GQA.format(copy="k, v = k.repeat_interleave(h // g, 1), "
                                                               "v.repeat_interleave(h // g, 1)"),
                              (3, 0, 2, 3), "uses torch.Tensor.repeat_interleave"),
    "gqa_broadcast_matmul": ("ex2_solution", GQA_BROADCAST, (3, 0, 2, 3), COPIED),
    "window_without_skipping": ("ex3_solution", _WINDOW_MASK + '''
def window_attention(q, k, v, window, block=64):  # a block of queries at a time, but every key for each
    n, outs = q.shape[1], []
    mask = window_mask(n, n, window)
    for i in range(0, n, block):
        s = q[:, i:i + block] @ k.transpose(1, 2) / math.sqrt(q.shape[-1])  # (batch, block, n)
        outs.append(s.masked_fill(~mask[i:i + block], float("-inf")).softmax(-1) @ v)
    return torch.cat(outs, 1)
''', (3, 2, 0, 3), "hidden tests failed: AssertionError (hint: the tests watch the operators PyTorch "
                  "runs and count every element computed from the keys"),
    # a cell patches torch's Python side of the modes (the recorder does not go through it)
    "gqa_patches_modes": ("ex2_solution", '''
import torch.utils._python_dispatch as pd
pd._push_mode = lambda mode: None
pd.TorchDispatchMode.__enter__ = lambda self: self
pd.TorchDispatchMode.__exit__ = lambda self, *exc: None
''' + _GQA.format(copy="k, v = k[:, torch.arange(h) // (h // g)], v[:, torch.arange(h) // (h // g)]"),
        (3, 0, 2, 3), COPIED),
    # the copy made with the modes taken off (torch's own helper, which pushes them back)
    "gqa_hides_the_copy": ("ex2_solution", '''
from torch.utils._python_dispatch import _disable_current_modes
''' + _GQA.format(copy="with _disable_current_modes():\n"
                       "        k, v = k[:, torch.arange(h) // (h // g)], v[:, torch.arange(h) // (h // g)]"),
        (3, 0, 2, 3), "uses the count's dispatch mode was taken off during the call, " + HIDDEN_OPS),
    # the copy made below the mode (the Python dispatch key excluded) and returned as it is
    "window_below_the_mode": ("ex3_solution", _WINDOW_MASK + '''
def window_attention(q, k, v, window):
    n = q.shape[1]
    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):
        s = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        return s.masked_fill(~window_mask(n, n, window), float("-inf")).softmax(-1) @ v
''', (3, 2, 0, 3), "uses a result that no operator the tests saw computed, " + HIDDEN_OPS),
    # a copy only when nothing counts: the function looks for the tests' mode
    "gqa_looks_for_the_count": ("ex2_solution", _GQA.format(
        copy="if not torch._C._len_torch_dispatch_stack():\n"
             "        k, v = k[:, torch.arange(h) // (h // g)], v[:, torch.arange(h) // (h // g)]"),
        (3, 0, 2, 3), "uses torch._C._len_torch_dispatch_stack"),
    # the copy, then the record emptied through torch's helper that hands out the modes
    "gqa_empties_the_record": ("ex2_solution", _GQA.format(
        copy="k, v = k[:, torch.arange(h) // (h // g)], v[:, torch.arange(h) // (h // g)]\n"
             "    for mode in torch.utils._python_dispatch._get_current_dispatch_mode_stack():\n"
             "        for name in ('ops', 'trace', 'written', 'computed'):\n"
             "            if isinstance(getattr(mode, name, None), list):\n"
             "                getattr(mode, name).clear()"),
        (3, 0, 2, 3), "uses torch.utils._python_dispatch._get_current_dispatch_mode_stack"),
}


def ch09_attack(source: Path, student: str):
    """The ch09 source notebook with ``CH09_ATTACKS[student]`` in place."""
    gid, text, _, _ = CH09_ATTACKS[student]
    nb = nbformat.read(Path(source) / CH09 / f"{CH09}.ipynb", as_version=4)
    _cell(nb, gid).source = text
    return nb
