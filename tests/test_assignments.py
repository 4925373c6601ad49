"""The classroom assignments: sources pass their own tests, student versions fail them.

Each source passes its own tests where it runs once per kernel set: under nbval in ``make test``
(the kernel of scripts/kernels.py: attnlib from its wheel, the plainest CPU kernels) and in the
grading sandbox as the "solver" (tests/test_grading_sandbox.py, this environment's kernels). Each
student version runs once, from the wheel outside the repository, where every graded test fails
with the stubs' ``NotImplementedError`` and nothing else (tests/test_package.py).

Grading itself (sandbox, adversarial submissions, parallel runs) is tested in
``tests/test_grading_sandbox.py``, the course around it in ``tests/test_course.py``. Every
course directory lives in ``tmp_path``.
"""
import os
import sys
from pathlib import Path

import nbformat
import pytest
from attacks import GQA_BROADCAST  # tests/attacks.py, beside this file

from coursegrader.course import generate
from coursegrader.run import grade

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "assignments" / "source"
NAMES = sorted(p.name for p in SOURCE.iterdir() if p.is_dir())

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _venv_on_path(monkeypatch):
    """nbgrader runs alembic and the kernel by name: this Python's bin/ first (as the Makefile)."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "1")


def source_nb(name):
    return SOURCE / name / f"{name}.ipynb"


def graded_cells(nb):
    """The autograded test cells (a written answer, graded by hand, is not one)."""
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
            and not c.metadata["nbgrader"].get("solution")]


def written_cells(nb):
    """nbgrader's manually graded answers: formgrader grades them."""
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
            and c.metadata["nbgrader"].get("solution")]


def test_nine_assignments_with_three_to_five_graded_exercises():
    assert len(NAMES) == 9 and [n[:4] for n in NAMES] == [f"ch0{i}" for i in range(1, 10)]
    for name in NAMES:
        nb = nbformat.read(source_nb(name), as_version=4)
        graded = graded_cells(nb)
        assert 3 <= len(graded) <= 5, name
        for c in graded:
            meta = c.metadata["nbgrader"]
            assert c.cell_type == "code" and meta["locked"] and meta["points"] > 0
            assert meta["schema_version"] == 3 and meta["grade_id"].endswith("_tests")
            assert "### BEGIN HIDDEN TESTS" in c.source and "### END HIDDEN TESTS" in c.source
            assert c.source.index("### BEGIN HIDDEN TESTS") > c.source.index("assert")  # visible check
        solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")
                     and c.cell_type == "code"]
        assert len(solutions) == len(graded) and all("### BEGIN SOLUTION" in c.source for c in solutions)
        assert written_cells(nb), f"{name}: no written question"
        for c in written_cells(nb):  # a written answer: graded by hand, never locked, worth points
            meta = c.metadata["nbgrader"]
            assert c.cell_type == "markdown" and not meta["locked"] and meta["points"] > 0, name
            assert meta["schema_version"] == 3 and meta["grade_id"].startswith("written")
        assert nb.metadata["kernelspec"]["name"] == "python3"


def grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


@pytest.mark.parametrize("name", NAMES)
def test_every_stated_number_of_points_is_the_cells(name):
    """The intro's total (autograded + written), each exercise's heading and each written question's
    heading and rubric state the points the cells carry."""
    nb = nbformat.read(source_nb(name), as_version=4)
    auto = {}
    for c in graded_cells(nb):
        auto[int(grade_id(c)[2:].split("_")[0])] = c.metadata["nbgrader"]["points"]
    manual = sum(c.metadata["nbgrader"]["points"] for c in written_cells(nb))
    by_id = {grade_id(c): c for c in nb.cells}
    total, auto_total = sum(auto.values()) + manual, sum(auto.values())
    stated = (f"Total: **{total:g} points**: {auto_total:g} for the exercises, graded automatically, and "
              f"{manual:g} for the written question at the end, graded by your instructor.")
    assert stated in by_id["intro"].source, name
    for ex, points in auto.items():
        assert by_id[f"ex{ex}_statement"].source.startswith(f"## Exercise {ex} ({points:g} point"), (name, ex)
    for answer in written_cells(nb):
        points = answer.metadata["nbgrader"]["points"]
        question = nb.cells[nb.cells.index(answer) - 1]  # the locked question right above its answer
        assert grade_id(question) == grade_id(answer) + "_statement" and question.cell_type == "markdown"
        assert question.metadata["nbgrader"]["locked"], name
        assert question.source.startswith(f"## Written question ({points:g} points)"), name
        model, _, rubric = answer.source.partition("**Rubric**")
        assert model.startswith("**Model answer**") and rubric.startswith(f" ({points:g} points")
        items = [float(line[2:].split(" point")[0]) for line in rubric.splitlines() if line.startswith("* ")]
        assert items and sum(items) == points, (name, items)


class TestStudentVersions:
    @pytest.fixture(scope="class")
    @classmethod
    def released(cls, tmp_path_factory):
        paths = generate(tmp_path_factory.mktemp("course"), log=lambda *a: None)
        return dict(zip(NAMES, paths, strict=True))

    @pytest.mark.parametrize("name", NAMES)
    def test_student_version_keeps_every_graded_test_and_stubs_every_solution(self, name, released):
        path = released[name]
        text = path.read_text()
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            assert marker not in text, marker
        nb = nbformat.read(path, as_version=4)
        src = nbformat.read(source_nb(name), as_version=4)
        assert len(graded_cells(nb)) == len(graded_cells(src))
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        regions = sum(c.source.count("### BEGIN SOLUTION") for c in src.cells if c.cell_type == "code")
        assert code.count("raise NotImplementedError()") == regions >= len(graded_cells(src))
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")

    @pytest.mark.parametrize("name", NAMES)
    def test_the_model_answer_and_rubric_stay_with_the_instructor(self, name, released):
        nb = nbformat.read(released[name], as_version=4)
        src = nbformat.read(source_nb(name), as_version=4)
        assert [c.source for c in written_cells(nb)] == ["YOUR ANSWER HERE"] * len(written_cells(src))
        text = released[name].read_text()
        for c in written_cells(src):
            for line in c.source.splitlines():
                assert len(line) < 40 or line not in text, line
        assert "**Model answer**" not in text and "**Rubric**" not in text


def test_every_exercise_function_declares_the_calls_that_answer_it():
    """ANSWERS (a locked cell) names every function a solution cell defines; every name resolves;
    the hidden rule cell is ownwork.py itself (``python -m coursegrader rule`` copies it)."""
    from coursegrader import ownwork
    from coursegrader.course import RULE, RULE_ID, rule_cell
    from coursegrader.spec import load_spec

    for name in NAMES:
        spec = load_spec(SOURCE, name)  # raises SpecError when a function has no entry
        assert set(spec.answers) == set(spec.functions)
        for names in spec.answers.values():
            ownwork.answer_targets(names)  # raises when a name does not resolve
        nb = nbformat.read(source_nb(name), as_version=4)
        rule = rule_cell(nb)
        assert rule.source == RULE.read_text().rstrip("\n"), f"{name}: run python -m coursegrader rule"
        assert rule.metadata["nbgrader"]["locked"] and rule.metadata["jupyter"]["source_hidden"]
        ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
        assert ids.index("setup") < ids.index(RULE_ID) < ids.index("answers") < ids.index("ex1_solution"), ids


def test_a_missing_declaration_is_a_clear_error(tmp_path):
    import shutil

    from coursegrader.spec import SpecError, load_spec

    name = NAMES[0]
    shutil.copytree(SOURCE / name, tmp_path / name)
    nb = nbformat.read(tmp_path / name / f"{name}.ipynb", as_version=4)
    answers = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answers")
    answers.source = answers.source.replace('"hard_attention"', '"not_a_function"')
    nbformat.write(nb, tmp_path / name / f"{name}.ipynb")
    with pytest.raises(SpecError, match="missing: hard_attention; not a solution's function: not_a_function"):
        load_spec(tmp_path, name)
    nb.cells.remove(answers)
    nbformat.write(nb, tmp_path / name / f"{name}.ipynb")
    with pytest.raises(SpecError, match="no locked cell declares ANSWERS"):
        load_spec(tmp_path, name)


def test_the_self_check_applies_the_rule_in_the_students_kernel():
    """A student's own run shows the same verdict as grading: the self-check of a function that
    calls what its exercise rules out fails with an error that names the call."""
    import attacks  # tests/attacks.py, beside this file
    from nbclient import NotebookClient

    nb = attacks.cheat(SOURCE, attacks.NAME)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    errors = {c.metadata["nbgrader"]["grade_id"]: o for c in nb.cells if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error" and "nbgrader" in c.metadata}
    assert list(errors) == ["ex4_tests"], list(errors)
    assert errors["ex4_tests"]["ename"] == "OwnWorkError"
    assert errors["ex4_tests"]["evalue"] == ("scaled_dot_attention uses attnlib.DotProductAttention, "
                                             "which this exercise asks you to write yourself")


def test_grading_an_assignment_without_answers_stops_with_the_reason(tmp_path):
    import shutil

    name = NAMES[0]
    shutil.copytree(SOURCE / name, tmp_path / "source" / name)
    path = tmp_path / "source" / name / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "answers"]
    nbformat.write(nb, path)
    (tmp_path / "subs" / "ana" / name).mkdir(parents=True)
    shutil.copy(source_nb(name), tmp_path / "subs" / "ana" / name)
    with pytest.raises(SystemExit, match=f"cannot grade {name}: no locked cell declares ANSWERS"):
        grade(tmp_path / "subs", tmp_path / "out", source=tmp_path / "source", no_sandbox=True,
              log=lambda *a: None)


# ----------------------------------------------------------------------------- chapter 9's skills
CH09 = "ch09_attention_at_scale"
WHOLE_MATRIX = """
def online_attention(queries, keys, values, block_size=4, update=online_update):
    s = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])  # (batch, q, k): every key at once
    p = torch.exp(s - s.amax(-1, keepdim=True))
    return (p @ values) / p.sum(-1, keepdim=True)
"""


def ch09_cells():
    nb = nbformat.read(source_nb(CH09), as_version=4)
    return {grade_id(c): c.source for c in nb.cells if grade_id(c)}


def test_ch09_online_softmax_fails_an_answer_that_scores_all_keys_at_once():
    """Exercise 1's tests hand online_attention an update of their own that counts the blocks:
    an answer that builds the whole (batch, q, k) score matrix is right, and fails both the
    self-check and the hidden tests, each with a message that says what to do."""
    cells = ch09_cells()
    visible, hidden = cells["ex1_tests"].split("### BEGIN HIDDEN TESTS")
    namespace = {}
    for source in (cells["setup"], cells["ex1_solution"], visible, hidden):  # the reference passes
        exec(source, namespace)  # noqa: S102
    exec(WHOLE_MATRIX, namespace)  # noqa: S102
    torch = namespace["torch"]
    q, k, v = torch.randn(2, 3, 8), torch.randn(2, 10, 8), torch.randn(2, 10, 5)
    assert torch.allclose(namespace["online_attention"](q, k, v), namespace["efficient"].blockwise_attention(
        q, k, v), atol=1e-5)  # right, but not blockwise
    with pytest.raises(AssertionError):
        exec(visible, namespace)  # noqa: S102
    with pytest.raises(AssertionError, match="call update once per block of block_size keys"):
        exec(hidden, namespace)  # noqa: S102


@pytest.mark.parametrize("copy, call", [
    ("k, v = k.repeat_interleave(h // g, 1), v.repeat_interleave(h // g, 1)",
     "torch.Tensor.repeat_interleave"),
    ("k, v = (t[:, :, None].expand(-1, -1, h // g, -1, -1).flatten(1, 2) for t in (k, v))",
     "torch.Tensor.expand"),
    ("k, v = torch.repeat_interleave(k, h // g, 1), torch.repeat_interleave(v, h // g, 1)",
     "torch.repeat_interleave"),
])
def test_ch09_grouped_query_attention_that_copies_the_shared_heads_is_ruled_out(copy, call):
    """Exercise 2 asks for each key/value head to be read where it is: an answer that copies it
    for every query head of its group calls what ANSWERS rules out, and the error names the call;
    the reference (the group's query heads as one longer block of queries) passes."""
    from coursegrader import ownwork
    from coursegrader.spec import load_spec

    cells = ch09_cells()
    namespace = {}
    exec(cells["setup"], namespace)  # noqa: S102
    exec(cells["ex2_solution"], namespace)  # noqa: S102
    rule = load_spec(SOURCE, CH09).answers["gqa_attention"]
    torch = namespace["torch"]
    q, k, v = torch.randn(2, 6, 3, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4)
    reference = ownwork.guarded(namespace["gqa_attention"], "gqa_attention", rule)(q, k, v)
    exec(f"""
def gqa_attention(q, k, v):
    h, g = q.shape[1], k.shape[1]
    {copy}
    return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v
""", namespace)  # noqa: S102
    assert torch.allclose(namespace["gqa_attention"](q, k, v), reference, atol=1e-6)  # right, but a copy
    with pytest.raises(ownwork.OwnWorkError, match=f"gqa_attention uses {call}, which"):
        ownwork.guarded(namespace["gqa_attention"], "gqa_attention", rule)(q, k, v)


def ch09_run(cells, exercise, answer=None, rule_name=None):
    """Run exercise ``exercise`` (2 or 3) of chapter 9 as grading does: the setup, the model
    solution or ``answer`` (its functions under their ANSWERS rule), then the visible tests and
    the hidden ones, each run separately; returns the namespace and the hidden tests' source."""
    from coursegrader import ownwork
    from coursegrader.spec import load_spec

    answers = load_spec(SOURCE, CH09).answers
    namespace = {}
    exec(cells["setup"], namespace)  # noqa: S102
    exec(cells[f"ex{exercise}_solution"], namespace)  # noqa: S102 - window_mask for exercise 3
    if answer is not None:
        exec(answer, namespace)  # noqa: S102
    for name in ("gqa_attention",) if exercise == 2 else ("window_mask", "window_attention"):
        namespace[name] = ownwork.guarded(namespace[name], name, answers[name])
    visible, hidden = cells[f"ex{exercise}_tests"].split("### BEGIN HIDDEN TESTS")
    exec(visible, namespace)  # noqa: S102
    return namespace, hidden


GQA_COPIES = {
    "cat": "k, v = (torch.cat([t[:, j:j + 1] for j in range(g) for _ in range(h // g)], 1)"
           " for t in (k, v))",
    "stack": "k, v = (torch.stack([t[:, i // (h // g)] for i in range(h)], 1) for t in (k, v))",
    "fancy index": "k, v = k[:, torch.arange(h) // (h // g)], v[:, torch.arange(h) // (h // g)]",
    "index by a list": "k, v = (t[:, [i // (h // g) for i in range(h)]] for t in (k, v))",
    "times ones": "k, v = ((t[:, :, None] * torch.ones(1, 1, h // g, 1, 1)).flatten(1, 2) for t in (k, v))",
    "plus zeros": "k, v = ((t[:, :, None] + torch.zeros(1, 1, h // g, 1, 1)).flatten(1, 2) for t in (k, v))",
    "product with a 0/1 matrix": "R = (torch.arange(h)[:, None] // (h // g) == torch.arange(g)).float()\n"
                                 "    k, v = ((R @ t.flatten(2)).unflatten(-1, t.shape[2:]) for t in (k, v))",
    "einsum with a 0/1 matrix": "R = (torch.arange(h)[:, None] // (h // g) == torch.arange(g)).float()\n"
                                "    k, v = (torch.einsum('hg,bgnd->bhnd', R, t) for t in (k, v))",
}
GQA_HONEST = {
    "einsum over the groups": """
def gqa_attention(q, k, v):
    b, h, n_q, d = q.shape
    g = k.shape[1]
    if h % g:
        raise ValueError("g must divide h")
    q = q.unflatten(1, (g, h // g))  # (b, g, h/g, n_q, d)
    w = (torch.einsum('bgiqd,bgkd->bgiqk', q, k) / math.sqrt(d)).softmax(-1)
    return torch.einsum('bgiqk,bgkd->bgiqd', w, v).flatten(1, 2)
""",
    "a loop over query heads": """
def gqa_attention(q, k, v):
    h, g = q.shape[1], k.shape[1]
    if h % g:
        raise ValueError("g must divide h")
    outs = []
    for i in range(h):
        j = i // (h // g)  # the key/value head of query head i, read where it is
        w = (q[:, i] @ k[:, j].transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
        outs.append(w @ v[:, j])
    return torch.stack(outs, 1)
""",
}


@pytest.mark.parametrize("copy", [*GQA_COPIES, "broadcast matmul"])
def test_ch09_grouped_query_attention_that_copies_by_any_other_route_fails_the_hidden_tests(copy):
    """Copies that ANSWERS cannot name (cat, stack, indexing, arithmetic, a broadcast matmul that
    copies inside torch.matmul) give the right values and pass the self-check; the hidden tests
    count what PyTorch's operators write from k and v, and fail each of them, saying why. The
    model solution (one product per group) passes them."""
    cells = ch09_cells()
    namespace, hidden = ch09_run(cells, 2)
    exec(hidden, namespace)  # noqa: S102 - the reference passes
    answer = GQA_BROADCAST if copy == "broadcast matmul" else f"""
def gqa_attention(q, k, v):
    h, g = q.shape[1], k.shape[1]
    if h % g:
        raise ValueError("g must divide h")
    {GQA_COPIES[copy]}
    return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v
"""
    namespace, hidden = ch09_run(cells, 2, answer)
    with pytest.raises(AssertionError, match="for each query head of a group: read each head where it is"):
        exec(hidden, namespace)  # noqa: S102


@pytest.mark.parametrize("answer", list(GQA_HONEST))
def test_ch09_grouped_query_attention_that_reads_each_head_where_it_is_passes_the_hidden_tests(answer):
    """Honest answers other than the model solution (an einsum over the groups, a loop over query
    heads that reads its key/value head where it is) pass the hidden tests, which count the
    products' outputs too: a query's scores are far fewer numbers than k."""
    namespace, hidden = ch09_run(ch09_cells(), 2, GQA_HONEST[answer])
    exec(hidden, namespace)  # noqa: S102


WINDOW_BY_BLOCK = """
def window_attention(q, k, v, window, block={block}):  # blocks of queries, each with the keys it reaches
    n, outs = q.shape[1], []
    for start in range(0, n, block):
        lo, hi = max(0, start - window + 1), min(n, start + block)
        s = q[:, start:hi] @ k[:, lo:hi].transpose(1, 2) / math.sqrt(q.shape[-1])  # (batch, block, keys)
        pos_q, pos_k = torch.arange(start, hi)[:, None], torch.arange(lo, hi)
        seen = (pos_k <= pos_q) & (pos_k > pos_q - window)
        outs.append(s.masked_fill(~seen, float("-inf")).softmax(-1) @ v[:, lo:hi])
    return torch.cat(outs, 1)
"""
WINDOW_SKIPS = {f"blocks of {block} queries": WINDOW_BY_BLOCK.replace("{block}", str(block))
                for block in (16, 64, 128)}
WINDOW_MASKED = {
    "masked full scores": """
def window_attention(q, k, v, window):
    n = q.shape[1]
    s = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])  # (batch, n, n)
    return s.masked_fill(~window_mask(n, n, window), float("-inf")).softmax(-1) @ v
""",
    "masked a block of rows at a time": """
def window_attention(q, k, v, window, block=64):
    n, outs = q.shape[1], []
    mask = window_mask(n, n, window)
    for i in range(0, n, block):
        s = q[:, i:i + block] @ k.transpose(1, 2) / math.sqrt(q.shape[-1])  # (batch, block, n): every key
        outs.append(s.masked_fill(~mask[i:i + block], float("-inf")).softmax(-1) @ v)
    return torch.cat(outs, 1)
""",
}


@pytest.mark.parametrize("answer", list(WINDOW_MASKED))
def test_ch09_window_attention_that_masks_a_full_computation_fails_the_hidden_tests(answer):
    """Exercise 3 assesses skipping the keys outside the window: an answer that scores every key
    and masks (at once or row by row) is right and fails the hidden tests, which count what is
    computed from the keys at two lengths; the model solution (unfold) and loops over blocks of
    16, 64 or 128 queries that slice the keys each block's windows reach pass (their cost grows
    as n (block + w), above n x n at n = 256 for the larger blocks, but linearly)."""
    cells = ch09_cells()
    for passing in (None, *WINDOW_SKIPS.values()):
        namespace, hidden = ch09_run(cells, 3, passing)
        exec(hidden, namespace)  # noqa: S102
    namespace, hidden = ch09_run(cells, 3, WINDOW_MASKED[answer])
    with pytest.raises(AssertionError, match="score only the keys inside each query's window"):
        exec(hidden, namespace)  # noqa: S102


@pytest.mark.parametrize("name", NAMES)
def test_every_hidden_assert_has_a_hint_for_the_student(name):
    """A student whose hidden test fails reads what was checked: every line of a hidden part that
    can fail (an assert, a raise) is under a `# hint:` (spec.TestCell.hint_at), which the notes,
    the autograded notebook and the feedback quote."""
    from coursegrader.spec import load_spec

    spec = load_spec(SOURCE, name)
    for test in spec.tests:
        for number, line in enumerate(test.hidden.splitlines(), start=1):
            if line.lstrip().startswith(("assert ", "raise ")):
                assert test.hint_at(number), f"{test.grade_id}, hidden line {number}: {line.strip()}"
