"""The Chinese edition: gettext catalogues of the book's prose, and the Chinese notebooks made from them.

    python -m book.i18n update      # extract the English prose, merge into locale/zh_CN/LC_MESSAGES/*.po
    python -m book.i18n generate    # write build/zh/notebooks/ and build/zh/assignments/source/
    python -m book.i18n check [CATALOGUE ...]   # what a translator still has to do (exit 1 if anything)

The English notebooks and pages are the source. Every prose unit a reader sees is one message:
each heading, paragraph, top-level list item, table and blockquote of a markdown cell (or page),
and each figure's caption and alt text (``metadata.mystnb``). Display maths (``$$`` blocks) and
fenced code are not messages: they are copied as they are, like code cells and outputs. Each
message's ``msgctxt`` says where it is (``CELL_ID:BLOCK`` in a notebook, ``BLOCK`` in a page; the
``#:`` reference names the file), so a check can name the chapter and the paragraph. The website's
interface (the theme's buttons, the navigation; ``book.interface``) has a catalogue of its own.

``update`` keeps every existing translation. A message whose English changed is marked fuzzy with
the old translation as a starting point (the translation of the closest old English, else of the
message that stood in the same place; the old English is kept as ``#| msgid``); a message that
moved keeps its translation; a message that vanished is kept as obsolete (``#~``) so that its
translation can be reused; a new message is added empty, unless the same English is translated in
another catalogue (the assignments share their instructions, for one), whose translation it takes.
docs/translating.md is the workflow.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import polib
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

import diagrams  # the diagrams' labels, and the Chinese SVG of a diagram cell (docs/diagrams.md)
from book import ROOT, interface
from book.chapters import chapter_assets, chapters, glossary_rows
from book.pages import glossary_page, references_page

LOCALE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"
BUILD = ROOT / "build" / "zh"
NOTEBOOKS_ZH = BUILD / "notebooks"
ASSIGNMENTS_ZH = BUILD / "assignments" / "source"
LANGUAGE = "zh_CN"

_MD = MarkdownIt("commonmark").enable("table").use(dollarmath_plugin, double_inline=True)
_MESSAGE_BLOCKS = {"heading_open", "paragraph_open", "table_open", "blockquote_open", "html_block"}
_PREFIX = re.compile(r"^(#{1,6}[ \t]+|[ \t]*(?:[*+-]|\d{1,9}[.)])[ \t]+)")


# --------------------------------------------------------------------------- markdown blocks
@dataclass
class Block:
    """Lines ``start:end`` of a markdown text; ``prefix`` (a heading's ``## `` or a list item's
    ``* ``) is not part of the message, and the item's continuation lines are indented by it."""

    start: int
    end: int
    prefix: str
    text: str
    kind: str
    lazy: bool = False  # a list item whose continuation lines are not indented (lazy continuation)


def blocks(text: str) -> list[Block]:
    """The translatable blocks of a markdown text, in order."""
    lines = text.split("\n")
    found = []
    tokens = _MD.parse(text)
    for tok in tokens:
        if tok.map is None:
            continue
        if tok.level == 0 and tok.type in _MESSAGE_BLOCKS:
            kind = tok.type.removesuffix("_open")
        elif tok.level == 1 and tok.type == "list_item_open":
            kind = "list item"
        else:
            continue
        start, end = tok.map
        while end > start and not lines[end - 1].strip():
            end -= 1
        body = lines[start:end]
        prefix, lazy = "", False
        if kind in ("heading", "list item"):
            match = _PREFIX.match(body[0])
            if match:
                prefix = match.group(1)
                width = len(prefix)
                lazy = any(ln.strip() and ln[:width].strip() for ln in body[1:])
                body = [body[0][width:]] + [
                    ln[width:] if ln[:width].strip() == "" else ln.lstrip() for ln in body[1:]
                ]
        found.append(Block(start, end, prefix, "\n".join(body), kind, lazy))
    return found


def translate_markdown(text: str, translate) -> str:
    """``text`` with each block replaced by ``translate(number, block)`` (None: keep the English)."""
    lines = text.split("\n")
    found = blocks(text)
    for number in reversed(range(len(found))):
        block = found[number]
        new = translate(number, block)
        if new is None:
            continue
        new_lines = new.split("\n")
        indent = " " * len(block.prefix)
        new_lines = [block.prefix + new_lines[0]] + [
            (indent + ln if ln.strip() and block.kind == "list item" and not block.lazy else ln)
            for ln in new_lines[1:]
        ]
        lines[block.start : block.end] = new_lines
    return "\n".join(lines)


# --------------------------------------------------------------------------- sources
@dataclass
class Unit:
    """One message: where it is (``ctx``), its English, and a short description for people."""

    ctx: str
    msgid: str
    where: str


@dataclass
class Source:
    catalogue: str  # the .po file's path under LOCALE, e.g. "01_attention_cues.po"
    path: Path  # the English source
    kind: str  # "notebook", "page", "generated" (glossary, references), "diagrams" or "interface"

    @property
    def po(self) -> Path:
        return LOCALE / self.catalogue

    @property
    def label(self) -> str:
        return str(self.path.relative_to(ROOT)) if self.path.is_relative_to(ROOT) else self.catalogue


def _text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _cell_id(cell: dict, index: int) -> str:
    return cell.get("id") or f"cell{index}"


def sources() -> list[Source]:
    """Every English source that has a catalogue: chapters, assignments, pages."""
    found = [Source(f"{p.stem}.po", p, "notebook") for p in chapters()]
    for folder in sorted((ROOT / "assignments" / "source").iterdir()):
        nb = folder / f"{folder.name}.ipynb"
        if nb.is_file():
            found.append(Source(f"assignments/{folder.name}.po", nb, "notebook"))
    found.append(Source("intro.po", ROOT / "book" / "intro.md", "page"))
    found.append(Source("instructors.po", ROOT / "docs" / "instructors.md", "page"))
    found.append(Source("glossary.po", ROOT / "build" / "book-src" / "glossary.md", "generated"))
    found.append(Source("diagrams.po", ROOT / "diagrams", "diagrams"))
    found.append(Source("interface.po", ROOT / "book" / "interface.py", "interface"))
    return found


def generated_pages() -> dict[str, str]:
    """The site's pages made from the chapters (book.pages): name -> English markdown."""
    books = [(p, json.loads(p.read_text(encoding="utf-8"))) for p in chapters()]
    return {"glossary": glossary_page(books), "references": references_page(books)}


def chapter_messages() -> set[str]:
    """Every English message of the chapter notebooks (the references page repeats some)."""
    return {u.msgid for s in sources() if s.catalogue[:2].isdigit() for u in units(s)}


def units(source: Source) -> list[Unit]:
    """The messages of one source, in reading order."""
    out: list[Unit] = []
    if source.kind == "notebook":
        nb = json.loads(source.path.read_text(encoding="utf-8"))
        for index, cell in enumerate(nb["cells"]):
            cid = _cell_id(cell, index)
            if cell["cell_type"] == "markdown" and not diagrams.cell_name(cell):  # a diagram's
                for n, block in enumerate(blocks(_text(cell))):  # text is its image, made from the alt
                    out.append(Unit(f"{cid}:{n}", block.text, f"cell {cid}, {block.kind} {n}"))
            mystnb = cell.get("metadata", {}).get("mystnb", {})
            caption = mystnb.get("figure", {}).get("caption")
            alt = mystnb.get("image", {}).get("alt")
            if caption:
                out.append(Unit(f"{cid}:caption", caption, f"cell {cid}, figure caption"))
            if alt:
                out.append(Unit(f"{cid}:alt", alt, f"cell {cid}, figure alt text"))
    elif source.kind == "page":
        for n, block in enumerate(blocks(source.path.read_text(encoding="utf-8"))):
            out.append(Unit(str(n), block.text, f"{block.kind} {n}"))
    elif source.kind == "diagrams":  # every label of every diagram, with the diagram as context
        for name in diagrams.registry():
            out += [Unit(name, label, f"diagram {name}") for label in diagrams.labels(name)]
    elif source.kind == "interface":  # msgctxt: the domain that reads the message
        out = [Unit(domain, english, where) for domain, english, where in interface.messages()]
    else:  # the glossary and references pages: their own words, not the tables or the chapters'
        known = chapter_messages()
        for page, text in generated_pages().items():
            for n, block in enumerate(blocks(text)):
                if block.kind != "table" and block.text not in known:
                    out.append(Unit(f"{page}:{n}", block.text, f"{page} page, {block.kind} {n}"))
    return out


# --------------------------------------------------------------------------- update
def _new_catalogue() -> polib.POFile:
    po = polib.POFile(wrapwidth=0)
    po.metadata = {
        "Project-Id-Version": "attention-textbook",
        "Language": LANGUAGE,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }
    return po


def _load(path: Path) -> polib.POFile:
    return polib.pofile(str(path), wrapwidth=0) if path.exists() else _new_catalogue()


def merge(source: Source, old: polib.POFile, memory: dict[str, str] | None = None) -> polib.POFile:
    """A fresh catalogue for ``source``'s messages, carrying over what ``old`` knows; a new message
    whose English is translated in another catalogue (``memory``: English -> Chinese) reuses it."""
    memory = memory or {}
    done = [e for e in old if e.msgstr and not e.fuzzy]  # translated, current or obsolete
    by_key = {(e.msgctxt, e.msgid): e for e in old if not e.obsolete}
    by_id = {e.msgid: e for e in done}
    # The interface's msgctxt is a domain, not a place: no translation of "the same place" there.
    by_ctx = {} if source.kind == "interface" else {e.msgctxt: e for e in old if not e.obsolete and e.msgstr}
    po = _new_catalogue()
    po.metadata.update({k: v for k, v in old.metadata.items() if k in ("Last-Translator", "Language-Team")})
    used = set()
    for unit in units(source):
        entry = polib.POEntry(msgctxt=unit.ctx, msgid=unit.msgid, msgstr="",
                              occurrences=[(source.label, unit.ctx)], comment=unit.where)
        same = by_key.get((unit.ctx, unit.msgid))
        moved = by_id.get(unit.msgid)
        changed = by_ctx.get(unit.ctx)
        if same is not None and (same.msgstr or unit.msgid not in memory):
            entry.msgstr, entry.flags = same.msgstr, list(same.flags)
            entry.previous_msgid = same.previous_msgid
            entry.tcomment = same.tcomment
            used.add(id(same))
        elif moved is not None:
            entry.msgstr, entry.tcomment = moved.msgstr, moved.tcomment
            used.add(id(moved))
        elif unit.msgid in memory:
            entry.msgstr = memory[unit.msgid]
        else:
            close = difflib.get_close_matches(unit.msgid, list(by_id), n=1, cutoff=0.7)
            near = by_id[close[0]] if close else changed  # a near-identical English, else same place
            if near is not None:
                entry.msgstr, entry.flags = near.msgstr, ["fuzzy"]
                entry.previous_msgid = near.msgid
                used.add(id(near))
        po.append(entry)
    current = {(e.msgctxt, e.msgid) for e in po}
    current_ids = {e.msgid for e in po}
    for e in old:  # vanished messages with a translation stay, obsolete, for reuse
        if e.msgstr and (e.msgctxt, e.msgid) not in current and e.msgid not in current_ids:
            e.obsolete, e.occurrences = True, []
            if not any(o.obsolete and o.msgid == e.msgid for o in po):
                po.append(e)
    return po


def update(names: list[str] | None = None, log=print) -> list[Path]:
    """Extract and merge every catalogue (or those named); returns the files written."""
    written = []
    memory = all_translations()
    for source in sources():
        if names and source.catalogue not in names:
            continue
        old = _load(source.po)
        po = merge(source, old, memory)
        text = po.__unicode__()
        if not source.po.exists() or source.po.read_text(encoding="utf-8") != text:
            source.po.parent.mkdir(parents=True, exist_ok=True)
            source.po.write_text(text, encoding="utf-8")
            written.append(source.po)
        log(f"{source.catalogue:<40} {_summary(po)}")
    return written


def _summary(po: polib.POFile) -> str:
    active = [e for e in po if not e.obsolete]
    return (f"{len(active)} messages, {len(po.translated_entries())} translated, "
            f"{len(po.fuzzy_entries())} fuzzy, {len(po.untranslated_entries())} untranslated, "
            f"{len(po.obsolete_entries())} obsolete")


# --------------------------------------------------------------------------- check
def glossary() -> dict[str, list[str]]:
    """English term (lower case) -> its accepted Chinese forms, from every chapter's glossary table.
    A form like "聚焦式注意力（选择性注意力）" also accepts its parts."""
    terms: dict[str, list[str]] = {}
    for path in chapters():
        for english, chinese in glossary_rows(json.loads(path.read_text(encoding="utf-8"))):
            forms = terms.setdefault(english.casefold(), [])
            for form in [chinese, *re.split(r"[（）()；;/、]", chinese)]:
                if form.strip() and form.strip() not in forms:
                    forms.append(form.strip())
    return terms


def glossary_problems(po: polib.POFile, terms: dict[str, list[str]] | None = None) -> list[str]:
    """Messages whose English uses a glossary term and whose translation lacks its Chinese form.
    Inline code and maths are not prose; a translation identical to the English (a citation kept
    as it is) is not checked."""
    terms = glossary() if terms is None else terms
    longest_first = sorted(terms, key=len, reverse=True)
    problems = []
    for e in po.translated_entries():
        if e.msgstr == e.msgid:
            continue
        english_text = re.sub(r"`[^`]*`|\$[^$]*\$", " ", e.msgid)  # code and maths are not prose
        for english in longest_first:  # "leave-one-out" inside "leave-one-out cross-validation"
            pattern = r"(?<!\w)" + re.escape(english) + r"(?!\w)"  # is the longer term's
            if re.search(pattern, english_text, flags=re.I):
                english_text = re.sub(pattern, "\0", english_text, flags=re.I)
                if not any(f in e.msgstr for f in terms[english]):
                    problems.append(f"{where(e)}: '{english}' must be translated as {terms[english][0]}")
    return problems


def first_words(text: str, n: int = 8) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" ..." if len(words) > n else "")


def where(entry: polib.POEntry) -> str:
    return f"{entry.msgctxt} ({entry.comment}) \"{first_words(entry.msgid)}\""


def problems(source: Source, terms: dict[str, list[str]] | None = None) -> list[str]:
    """Everything that keeps ``source``'s catalogue from being complete and current."""
    if not source.po.exists():
        return [f"no catalogue {source.po.relative_to(ROOT)}: run `make i18n`"]
    po = _load(source.po)
    out = []
    have = {(e.msgctxt, e.msgid) for e in po if not e.obsolete}
    want = units(source)
    for u in want:
        if (u.ctx, u.msgid) not in have:
            out.append(f"out of date: {u.where} \"{first_words(u.msgid)}\" changed in the English: "
                       "run `make i18n`, then translate it")
    wanted = {(u.ctx, u.msgid) for u in want}
    out += [f"out of date: {where(e)} is no longer in the English: run `make i18n`"
            for e in po if not e.obsolete and (e.msgctxt, e.msgid) not in wanted]
    out += [f"untranslated: {where(e)}" for e in po.untranslated_entries()]
    out += [f"fuzzy (the English changed; check the translation, then remove the fuzzy flag): {where(e)}"
            for e in po.fuzzy_entries()]
    out += glossary_problems(po, terms)
    return out


def check(names: list[str] | None = None, log=print) -> int:
    terms = glossary()
    bad = 0
    for source in sources():
        if names and source.catalogue not in names and source.label not in names:
            continue
        found = problems(source, terms)
        po = _load(source.po)
        log(f"{source.catalogue:<40} {_summary(po) if source.po.exists() else 'missing'}")
        for p in found:
            log(f"    {p}")
        if po.obsolete_entries():
            log(f"    note: {len(po.obsolete_entries())} obsolete entries (#~) kept for reuse; delete them "
                "when you no longer need them")
        bad += bool(found)
    return 1 if bad else 0


# --------------------------------------------------------------------------- generate
def translations(source: Source) -> dict[str, str]:
    """msgctxt -> Chinese, for the translated, non-fuzzy messages of ``source``'s catalogue."""
    po = _load(source.po)
    return {e.msgctxt: e.msgstr for e in po.translated_entries()}


def all_translations() -> dict[str, str]:
    """English -> Chinese over the catalogues of the book's text (for pages assembled from several
    sources); the interface's words are not the book's text."""
    out = {}
    for source in sources():
        if source.po.exists() and source.kind != "interface":
            out.update({e.msgid: e.msgstr for e in _load(source.po).translated_entries()})
    return out


def interface_translations() -> dict[tuple[str, str], str]:
    """(domain, English) -> Chinese for the website's interface (``book.interface``)."""
    po = _load(LOCALE / "interface.po")
    return {(e.msgctxt, e.msgid): e.msgstr for e in po.translated_entries()}


def write_interface_catalogues(folder: Path) -> list[Path]:
    """Compile the interface's ``sphinx`` and ``booktheme`` domains into
    ``folder/zh_CN/LC_MESSAGES/{sphinx,booktheme}.mo`` (Sphinx's ``locale_dirs`` layout); only
    files whose bytes change are written. Returns the paths."""
    zh = interface_translations()
    written = []
    for domain in ("sphinx", "booktheme"):
        po = _new_catalogue()
        for (ctx, english), chinese in zh.items():
            if ctx == domain:
                po.append(polib.POEntry(msgid=english, msgstr=chinese))
        path = folder / LANGUAGE / "LC_MESSAGES" / f"{domain}.mo"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".mo.tmp")
        po.save_as_mofile(str(tmp))
        if path.exists() and path.read_bytes() == tmp.read_bytes():
            tmp.unlink()
        else:
            tmp.replace(path)
        written.append(path)
    return written


def translate_notebook(nb: dict, zh: dict[str, str]) -> dict:
    """The notebook with its markdown and figure texts in Chinese; code cells untouched."""
    for index, cell in enumerate(nb["cells"]):
        cid = _cell_id(cell, index)
        if cell["cell_type"] == "markdown" and not diagrams.cell_name(cell):
            text = translate_markdown(_text(cell), lambda n, b, cid=cid: zh.get(f"{cid}:{n}"))
            cell["source"] = text.splitlines(keepends=True)
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        for key, field, ctx in (("figure", "caption", "caption"), ("image", "alt", "alt")):
            if f"{cid}:{ctx}" in zh and field in mystnb.get(key, {}):
                mystnb[key][field] = zh[f"{cid}:{ctx}"]
        if diagrams.cell_name(cell):  # the Chinese SVG, with the Chinese alt text
            diagrams.localise_cell(cell)
    return nb


def translate_page(text: str, zh_by_id: dict[str, str]) -> str:
    """A generated page (glossary, references) with every block a catalogue knows in Chinese."""
    return translate_markdown(text, lambda n, b: zh_by_id.get(b.text))


def _copy(src: Path, dst: Path) -> None:
    """Copy unless ``dst`` already holds the same bytes (tests may be reading it meanwhile)."""
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def _dump(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def generate(log=print) -> list[Path]:
    """Write the Chinese notebooks, assignment sources and the instructors' guide under build/zh/;
    returns them."""
    written = []
    for source in sources():
        if source.kind != "notebook":
            continue
        nb = translate_notebook(json.loads(source.path.read_text(encoding="utf-8")), translations(source))
        if source.catalogue.startswith("assignments/"):
            out = ASSIGNMENTS_ZH / source.path.parent.name / source.path.name
            for extra in source.path.parent.iterdir():  # data files beside the assignment
                if extra.is_file() and extra.suffix != ".ipynb":
                    _copy(extra, out.parent / extra.name)
        else:
            out = NOTEBOOKS_ZH / source.path.name
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.exists() or out.read_text(encoding="utf-8") != _dump(nb):
            out.write_text(_dump(nb), encoding="utf-8")
        written.append(out)
    for source in sources():  # pages outside the site (the instructors' guide): build/zh/NAME.md
        if source.kind == "page" and source.path.parent != ROOT / "book":
            zh = translations(source)
            text = translate_markdown(source.path.read_text(encoding="utf-8"),
                                      lambda n, b, zh=zh: zh.get(str(n)))
            out = BUILD / source.path.name
            if not out.exists() or out.read_text(encoding="utf-8") != text:
                out.write_text(text, encoding="utf-8")
            written.append(out)
    for asset in chapter_assets():  # figures next to the notebooks
        _copy(asset, NOTEBOOKS_ZH / asset.relative_to(ROOT / "notebooks"))
    log(f"wrote {len(written)} Chinese notebooks and pages under {BUILD.relative_to(ROOT)}/")
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    u = sub.add_parser("update", help="extract the English prose and merge it into the catalogues")
    u.add_argument("catalogues", nargs="*", help="e.g. 02_attention_pooling.po (default: all)")
    sub.add_parser("generate", help="write the Chinese notebooks and assignment sources into build/zh/")
    c = sub.add_parser("check", help="list untranslated, fuzzy, out-of-date messages and glossary misses")
    c.add_argument("catalogues", nargs="*", help="e.g. 01_attention_cues.po (default: all)")
    args = parser.parse_args(argv)
    if args.command == "update":
        update(args.catalogues)
        return 0
    if args.command == "generate":
        generate()
        return 0
    return check(args.catalogues)


if __name__ == "__main__":
    sys.exit(main())
