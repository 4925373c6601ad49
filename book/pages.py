"""The site's pages that are made, not written: the glossary and the references gathered from the
chapters, the benchmark page (results/bench.md) with the method notes it links to, and the table
of contents (``_toc.yml``) that orders them after the chapters."""

from __future__ import annotations

import json
import re
from pathlib import Path

from book import ROOT
from book.chapters import chapter_title, glossary_rows, markdown_text, section

CHAPTERS_CAPTION, REFERENCE_CAPTION = "Chapters", "Reference"


def glossary_page(books: list[tuple[Path, dict]]) -> str:
    terms: dict[str, dict] = {}
    for path, nb in books:
        number = int(path.name[:2])
        for english, chinese in glossary_rows(nb):
            entry = terms.setdefault(english.casefold(), {"en": english, "zh": [], "ch": []})
            if chinese not in entry["zh"]:
                entry["zh"].append(chinese)
            if (number, path) not in entry["ch"]:
                entry["ch"].append((number, path))
    lines = [
        "# Glossary (English-Chinese)",
        "",
        "The terms of every chapter's glossary table in one list, sorted alphabetically, with the",
        "chapters that introduce them. 本书各章术语表的汇总（英汉对照）。",
        "",
        "| English | 中文 | Chapter |",
        "|---|---|---|",
    ]
    for key in sorted(terms, key=lambda k: re.sub(r"[^0-9a-z]+", " ", k).strip()):
        entry = terms[key]
        links = ", ".join(f"[{n}](notebooks/{p.name})" for n, p in entry["ch"])
        cells = [entry["en"], "；".join(entry["zh"]), links]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if not terms:
        lines += ["", "No chapter has a glossary table yet."]
    return "\n".join(lines) + "\n"


def references_page(books: list[tuple[Path, dict]]) -> str:
    lines = [
        "# References",
        "",
        "The papers and books each chapter cites, gathered chapter by chapter.",
        "",
    ]
    for path, nb in books:
        body = section(markdown_text(nb), "references")
        if body:
            title = chapter_title(nb, path)
            lines += [f"## {title}", "", f"Cited in [the chapter](notebooks/{path.name}):", ""]
            lines += [body, ""]
    return "\n".join(lines) + "\n"


def bench_page(root: Path = ROOT) -> str:
    """The benchmark page: results/bench.md (from `make bench`) or a placeholder."""
    bench = root / "results" / "bench.md"
    if not bench.exists():
        return (
            "# Benchmark results\n\n"
            "No benchmark results yet. Run `make bench` to measure the attention layers and the\n"
            "models of the book on your machine; it writes `results/bench.md`, which this page\n"
            "shows after the next `make book`.\n"
        )
    lines = bench.read_text(encoding="utf-8").strip().splitlines()
    note = ["", "*Measured by `make bench`, which writes `results/bench.md`.*", ""]
    if lines and re.match(r"^#\s", lines[0]):
        return "\n".join(lines[:1] + note + lines[1:]) + "\n"
    out, fence = [], False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        # One level down, below this page's own title.
        out.append("#" + line if not fence and re.match(r"^#{1,5}\s", line) else line)
    return "\n".join(["# Benchmark results", *note, *out]) + "\n"


def bench_docs(root: Path = ROOT) -> list[str]:
    """The docs/*.md pages that results/bench.md links to (its method notes), if they exist."""
    bench = root / "results" / "bench.md"
    if not bench.exists():
        return []
    names = re.findall(r"\]\(\.\./docs/([\w.-]+)\.md\)", bench.read_text(encoding="utf-8"))
    return sorted({n for n in names if (root / "docs" / f"{n}.md").is_file()})


def english_only_pages(root: Path = ROOT) -> list[str]:
    """The pages no catalogue translates (the benchmark results and their method notes): the
    Chinese site shows them in English, marked as such."""
    return ["results/bench", *[f"docs/{n}" for n in bench_docs(root)]]


def page_title(text: str, default: str) -> str:
    """The first level-1 heading of a markdown page, without inline code's backticks."""
    match = re.search(r"^#\s+(.+?)\s*$", text, flags=re.M)
    return match.group(1).replace("`", "") if match else default


def toc(books: list[tuple[Path, dict]], bench_sections: list[str] = (), captions: dict | None = None,
        titles: dict | None = None) -> str:
    """The ``_toc.yml`` of the site. ``captions`` gives the navigation's captions in the site's
    language (default: English), ``titles`` a navigation title for a page ("results/bench": ...)
    where it must differ from the page's own heading."""
    captions, titles = captions or {}, titles or {}

    def entry(indent: str, key: str, name: str) -> list[str]:
        line = [f"{indent}- {key}: {name}"]
        if name in titles:
            line.append(f"{indent}  title: {_yaml_string(titles[name])}")
        return line

    lines = ["format: jb-book", "root: intro", "parts:"]
    if books:
        lines += [f"  - caption: {_yaml_string(captions.get(CHAPTERS_CAPTION, CHAPTERS_CAPTION))}",
                  "    chapters:"]
        for p, _ in books:
            lines += entry("      ", "file", f"notebooks/{p.stem}")
    lines += [f"  - caption: {_yaml_string(captions.get(REFERENCE_CAPTION, REFERENCE_CAPTION))}",
              "    chapters:"]
    for name in ("glossary", "references"):
        lines += entry("      ", "file", name)
    lines += entry("      ", "file", "results/bench")
    if bench_sections:
        lines += ["        sections:"]
        for n in bench_sections:
            lines += entry("          ", "file", f"docs/{n}")
    return "\n".join(lines) + "\n"


def _yaml_string(text: str) -> str:
    """``text`` as a YAML scalar (a JSON string is one)."""
    return json.dumps(text, ensure_ascii=False)
