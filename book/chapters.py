"""The chapter notebooks as the website reads them: which exist, their markdown, the body of a
section, and the English-Chinese pairs of their glossary tables."""

from __future__ import annotations

import re
from pathlib import Path

from book import ROOT

NOTEBOOKS = ROOT / "notebooks"


def chapters() -> list[Path]:
    """The chapter notebooks present now (``notebooks/NN_*.ipynb``), in numeric order."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"), key=lambda p: (int(p.name[:2]), p.name))


def chapter_assets() -> list[Path]:
    """Images kept next to the notebooks (for markdown like ``![](figures/x.png)``)."""
    suffixes = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}
    return sorted(
        p
        for p in NOTEBOOKS.rglob("*")
        if p.is_file() and p.suffix.lower() in suffixes and ".ipynb_checkpoints" not in p.parts
    )


def cell_source(cell: dict) -> str:
    """A cell's source as one string (notebooks store it as a string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def markdown_text(nb: dict) -> str:
    return "\n\n".join(cell_source(c) for c in nb["cells"] if c["cell_type"] == "markdown")


def chapter_title(nb: dict, path: Path) -> str:
    match = re.search(r"^#\s+(.+?)\s*$", markdown_text(nb), flags=re.M)
    return match.group(1) if match else path.stem


def section(text: str, word: str) -> str:
    """The body under the first heading containing ``word``, up to the next heading as high."""
    lines, out, level = text.splitlines(), [], None
    fence = False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        heading = None if fence else re.match(r"^(#{1,6})\s+(.*)$", line)
        if level is None:
            if heading and word.lower() in heading.group(2).lower():
                level = len(heading.group(1))
            continue
        if heading and len(heading.group(1)) <= level:
            break
        out.append(line)
    return "\n".join(out).strip()


def _cells(row: str) -> list[str]:
    row = row.strip().strip("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)]


def glossary_rows(nb: dict) -> list[tuple[str, str]]:
    """(English, Chinese) pairs from the markdown table under the chapter's Glossary heading."""
    table = [
        ln
        for ln in section(markdown_text(nb), "glossary").splitlines()
        if ln.strip().startswith("|")
    ]
    if len(table) < 2:
        return []
    header = [h.lower() for h in _cells(table[0])]
    en = next((i for i, h in enumerate(header) if "english" in h), 0)
    zh = next((i for i, h in enumerate(header) if "chinese" in h or "中文" in h), 1)
    rows = []
    for line in table[1:]:
        cells = _cells(line)
        if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
            continue  # the |---|---| line
        if len(cells) > max(en, zh) and cells[en] and cells[zh]:
            rows.append((cells[en], cells[zh]))
    return rows
