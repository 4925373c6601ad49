"""The Chinese edition (book/i18n.py, docs/translating.md): complete, current, faithful catalogues.

* every catalogue is complete (nothing untranslated or fuzzy) and current with its English source,
  and its translations use the glossary's Chinese terms: one test per catalogue, so a failure names
  the catalogue, then the chapter's cell and the paragraph's first words;
* the machinery: splitting and reassembling markdown is lossless, ``update`` keeps, reuses, fuzzes
  and retires translations as documented, ``check`` catches drift and glossary misses;
* the Chinese notebooks share every code cell and output with the English ones, so they are not
  executed again: the English chapters' one nbval run checks the code both editions run, and the
  tests here prove the Chinese copy is that code with those outputs and every message translated;
* a Chinese assignment is graded by the same tests as the English one.
"""

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest

from book import i18n

ROOT = Path(__file__).resolve().parents[1]

SOURCES = {s.catalogue: s for s in i18n.sources()}


@pytest.fixture(scope="module")
def terms():
    return i18n.glossary()


@pytest.mark.parametrize("catalogue", sorted(SOURCES))
def test_catalogue_is_complete_and_current(catalogue, terms):
    found = i18n.problems(SOURCES[catalogue], terms)
    shown = "\n  ".join(found[:15]) + (f"\n  ... and {len(found) - 15} more" if len(found) > 15 else "")
    assert not found, (
        f"{catalogue} ({SOURCES[catalogue].label}): {len(found)} problems "
        f"(translate with docs/translating.md; `make i18n-check CAT={catalogue}`):\n  {shown}"
    )


# --------------------------------------------------------------------------- the machinery
def _markdown_cells():
    for path in [s.path for s in SOURCES.values() if s.kind == "notebook"]:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                yield path.name, i18n._text(cell)


def test_reassembling_the_english_blocks_gives_the_english_back():
    for name, text in _markdown_cells():
        assert i18n.translate_markdown(text, lambda n, b: b.text) == text, name


def test_blocks_leave_display_maths_and_code_out_and_keep_inline_maths_in():
    text = "# Title\n\nSome $x^2$ prose\nand `code`.\n\n$$\ny = x\n$$\n\n```python\nprint(1)\n```\n\n" \
           "* one item\n  continued\n* two\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n"
    found = i18n.blocks(text)
    assert [(b.kind, b.text) for b in found] == [
        ("heading", "Title"),
        ("paragraph", "Some $x^2$ prose\nand `code`."),
        ("list item", "one item\ncontinued"),
        ("list item", "two"),
        ("table", "| a | b |\n| --- | --- |\n| 1 | 2 |"),
    ]
    out = i18n.translate_markdown(text, lambda n, b: f"T{n}\nline" if b.kind == "list item" else f"T{n}")
    assert out.startswith("# T0\n\nT1\n\n$$\ny = x\n$$\n\n```python\nprint(1)\n```\n\n"
                          "* T2\n  line\n* T3\n  line\n")


def _notebook(tmp_path, paragraphs, caption="A caption."):
    cells = [{"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "\n\n".join(paragraphs)},
             {"cell_type": "code", "id": "c1", "execution_count": 1, "source": "1 + 1",
              "metadata": {"mystnb": {"figure": {"caption": caption}}}, "outputs": []}]
    path = tmp_path / "99_test.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return i18n.Source("99_test.po", path, "notebook")


def test_update_keeps_reuses_fuzzes_and_retires(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "LOCALE", tmp_path / "locale")
    source = _notebook(tmp_path, ["# The query", "A key and a value.", "Gone soon."])
    po = i18n.merge(source, i18n._load(source.po))
    assert [e.msgctxt for e in po] == ["m1:0", "m1:1", "m1:2", "c1:caption"]
    assert all(not e.translated() for e in po)
    for e, zh in zip(po, ["查询", "一个键和一个值。", "很快消失。", "一条图注。"], strict=True):
        e.msgstr = zh
    source.po.parent.mkdir(parents=True)
    po.save(str(source.po))
    assert i18n.problems(source) == []
    # The English changes: a new first paragraph moves the others; one is edited, one vanishes.
    source = _notebook(tmp_path, ["# The query", "New words.", "A key and a value!"])
    problems = i18n.problems(source)
    assert any(p.startswith("out of date: cell m1, paragraph 1 \"New words.\"") for p in problems), problems
    po = i18n.merge(source, i18n._load(source.po))
    entries = {e.msgctxt: e for e in po if not e.obsolete}
    assert entries["m1:0"].msgstr == "查询" and not entries["m1:0"].fuzzy  # unchanged
    assert entries["m1:1"].msgstr == "一个键和一个值。" and entries["m1:1"].fuzzy  # same place, new English
    assert entries["m1:2"].msgstr == "一个键和一个值。" and entries["m1:2"].fuzzy  # near match, moved
    assert entries["m1:2"].previous_msgid == "A key and a value."
    assert [e.msgid for e in po if e.obsolete] == ["A key and a value.", "Gone soon."]  # kept for reuse
    assert entries["c1:caption"].msgstr == "一条图注。"
    po.save(str(source.po))
    problems = i18n.problems(source)
    assert sum(p.startswith("fuzzy") for p in problems) == 2 and not any("out of date" in p for p in problems)
    # The same English already translated in another catalogue is reused (a translation memory).
    other = _notebook(tmp_path, ["# The query", "Brand new."])
    po = i18n.merge(other, polib.POFile(), memory={"Brand new.": "全新的。"})
    assert [(e.msgstr, e.fuzzy) for e in po][:2] == [("", False), ("全新的。", False)]


def test_glossary_check_names_the_message_and_the_term():
    po = polib.POFile()
    po.append(polib.POEntry(msgctxt="m1:3", msgid="Each query is compared with every key.",
                            msgstr="每个询问都与每个键比较。", comment="cell m1, paragraph 3"))
    po.append(polib.POEntry(msgctxt="m1:4", msgid="*Attention Is All You Need.* (query)",
                            msgstr="*Attention Is All You Need.* (query)"))  # a citation kept as is
    po.append(polib.POEntry(msgctxt="m1:5", msgid="Leave-one-out cross-validation picks the width.",
                            msgstr="留一交叉验证选出宽度。"))  # the longer term, not also the shorter
    po.append(polib.POEntry(msgctxt="m1:6", msgid="Call `model.key(x)` on $key$.", msgstr="调用。"))
    terms = {"query": ["查询"], "key": ["键"], "queries": ["x"], "leave-one-out": ["留一法"],
             "leave-one-out cross-validation": ["留一交叉验证"]}
    assert i18n.glossary_problems(po, terms) == [
        "m1:3 (cell m1, paragraph 3) \"Each query is compared with every key.\": "
        "'query' must be translated as 查询"
    ]


def test_glossary_comes_from_the_chapters_tables(terms):
    assert terms["attention pooling"][0] == "注意力汇聚"
    assert "聚焦式注意力" in terms["focused (selective) attention"]
    assert terms["masked softmax"][0] == "掩蔽softmax"


# --------------------------------------------------------------------------- Chinese notebooks
@pytest.fixture(scope="module")
def generated():
    return i18n.generate(log=lambda *_: None)


def _pairs(generated):
    english = {s.path.name: s.path for s in SOURCES.values() if s.kind == "notebook"}
    for path in [p for p in generated if p.suffix == ".ipynb"]:
        yield json.loads(english[path.name].read_text(encoding="utf-8")), json.loads(path.read_text("utf-8"))


def test_chinese_notebooks_share_code_cells_and_outputs(generated):
    notebooks = [p for p in generated if p.suffix == ".ipynb"]
    assert len(notebooks) == sum(s.kind == "notebook" for s in SOURCES.values())
    for en, zh in _pairs(generated):
        assert zh["metadata"] == en["metadata"] and len(zh["cells"]) == len(en["cells"])
        for a, b in zip(en["cells"], zh["cells"], strict=True):
            assert a["cell_type"] == b["cell_type"] and a.get("id") == b.get("id")
            if a["cell_type"] == "code":
                mystnb_a = a["metadata"].pop("mystnb", None)
                mystnb_b = b["metadata"].pop("mystnb", None)
                assert a == b  # source, outputs, execution count, tags
                assert (mystnb_a is None) == (mystnb_b is None)


def test_chinese_chapter_one_is_in_chinese(generated):
    nb = json.loads((i18n.NOTEBOOKS_ZH / "01_attention_cues.ipynb").read_text(encoding="utf-8"))
    text = "".join(i18n._text(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert text.startswith("# 1. 注意力提示：查询、键和值")
    assert "$$\nf\\big(\\mathbf{q}" in text  # display maths shared with the English
    captions = [c["metadata"]["mystnb"]["image"]["alt"] for c in nb["cells"] if "mystnb" in c["metadata"]]
    assert captions and all("热图" in a or "图" in a for a in captions)


# --------------------------------------------------------------------------- Chinese assignments
@pytest.mark.slow
def test_a_chinese_submission_is_graded_by_the_same_tests(tmp_path):
    name = "ch01_attention_cues"
    run = [sys.executable, str(ROOT / "scripts" / "assignments.py")]
    subprocess.run([*run, "generate", "--lang", "zh", "--out", str(tmp_path / "course")], check=True,
                   capture_output=True)
    released = tmp_path / "course" / "release" / name / f"{name}.ipynb"
    source_zh = i18n.ASSIGNMENTS_ZH / name / f"{name}.ipynb"
    source_en = ROOT / "assignments" / "source" / name / f"{name}.ipynb"
    zh, en = (json.loads(p.read_text(encoding="utf-8")) for p in (source_zh, source_en))
    assert [c["source"] for c in zh["cells"] if c["cell_type"] == "code"] == \
        [c["source"] for c in en["cells"] if c["cell_type"] == "code"]
    assert "练习 1（3 分）" in released.read_text(encoding="utf-8")
    for student, notebook in (("solved", source_zh), ("unsolved", released)):
        folder = tmp_path / "submitted" / student / name
        folder.mkdir(parents=True)
        shutil.copy(notebook, folder / f"{name}.ipynb")
    subprocess.run([*run, "grade", str(tmp_path / "submitted"), "--out", str(tmp_path / "grades"),
                    "--assignment", name, "--jobs", "1", "--no-sandbox"], check=True, capture_output=True)
    with open(tmp_path / "grades" / "latest" / "grades.csv", encoding="utf-8") as fh:
        rows = {r["student"]: r for r in csv.DictReader(fh)}
    assert float(rows["solved"]["total"]) == float(rows["solved"]["max_total"]) == 8
    assert float(rows["unsolved"]["total"]) == 0
