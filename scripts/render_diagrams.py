"""The book's diagrams (diagrams/, docs/diagrams.md): render them, check them, put them in chapters.

    python scripts/render_diagrams.py [render]    # write diagrams/svg/{en,zh}/*.svg and refresh every
                                           # chapter's diagram cells (make diagrams)
    python scripts/render_diagrams.py check       # exit 1 unless every file and cell is a fresh render
    python scripts/render_diagrams.py insert NAME --after CELL_ID
                                           # a pending diagram (diagrams/pending.json) into its chapter
    python scripts/render_diagrams.py preview [NAME ...]
                                           # PNGs of both editions on light and dark pages, at the
                                           # page's width and at a phone's, in build/diagrams-preview/

Rendering writes a file only when its text changes, so an unchanged diagram leaves the tree alone.
Labels without a Chinese translation are listed (``make i18n``, then translate
``locale/zh_CN/LC_MESSAGES/diagrams.po``); their Chinese SVG keeps the English label until then.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import diagrams  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"


def chapter_path(number: int) -> Path | None:
    found = sorted(NOTEBOOKS.glob(f"{number:02d}_*.ipynb"))
    return found[0] if found else None


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _dump(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def renders() -> tuple[dict[tuple[str, str], str], list[tuple[str, str]]]:
    """Every diagram in both editions: ({(name, lang): svg}, labels lacking a translation)."""
    zh, missing, out = diagrams.translations(), [], {}
    for name in diagrams.registry():
        for lang in diagrams.LANGS:
            out[(name, lang)] = diagrams.render(name, lang, zh, missing if lang == "zh" else None)
    return out, missing


def stale(fresh: dict[tuple[str, str], str] | None = None) -> list[str]:
    """What is not a fresh render: SVG files and chapters' diagram cells (empty when all is)."""
    fresh = fresh if fresh is not None else renders()[0]
    problems = []
    for (name, lang), svg in fresh.items():
        path = diagrams.svg_path(name, lang)
        if not path.exists() or path.read_text(encoding="utf-8") != svg:
            problems.append(f"{path.relative_to(ROOT)} differs from a fresh render of {name}")
    known = {p.name for p in (diagrams.SVG / "en").glob("*.svg")} | {
        p.name for p in (diagrams.SVG / "zh").glob("*.svg")
    }
    for extra in sorted(known - {f"{name}.svg" for name, _ in fresh}):
        problems.append(f"diagrams/svg/*/{extra} has no source in diagrams/ (delete it)")
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = _load(path)
        for index, cell in diagrams.chapter_cells(nb):
            name = diagrams.cell_name(cell)
            if (name, "en") not in fresh:
                problems.append(f"{path.name} cell {index} shows {name!r}, which no diagram source draws")
                continue
            copy = json.loads(json.dumps(cell))
            if diagrams.refresh_cell(copy, "en", fresh[(name, "en")]):
                problems.append(
                    f"{path.name} cell {index} ({name}) is not the fresh render: run `make diagrams`"
                )
    return problems


def render_all(log=print) -> int:
    fresh, missing = renders()
    written = 0
    for (name, lang), svg in fresh.items():
        path = diagrams.svg_path(name, lang)
        if not path.exists() or path.read_text(encoding="utf-8") != svg:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(svg, encoding="utf-8")
            written += 1
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = _load(path)
        changed = [
            diagrams.refresh_cell(cell, "en", fresh[(diagrams.cell_name(cell), "en")])
            for _, cell in diagrams.chapter_cells(nb)
        ]
        if any(changed):
            path.write_text(_dump(nb), encoding="utf-8")
            log(f"refreshed {sum(changed)} diagram cell(s) of {path.name}")
    log(f"{len(fresh) // 2} diagrams, {written} SVG file(s) written in diagrams/svg/")
    if missing:
        log(
            f"{len(missing)} label(s) without a Chinese translation (make i18n, then translate "
            "locale/zh_CN/LC_MESSAGES/diagrams.po):"
        )
        for name, label in missing[:20]:
            log(f"    {name}: {label!r}")
    return 0


def insert(name: str, after: str, caption: str | None, alt: str | None) -> int:
    """Put diagram ``name`` into its chapter after the cell with id ``after``."""
    spec = diagrams.registry()[name]
    entry = next((e for e in diagrams.pending() if e["name"] == name), {})
    caption, alt = caption or entry.get("caption"), alt or entry.get("alt")
    if not caption or not alt:
        sys.exit(
            f"error: {name} needs a caption and an alt text (--caption, --alt, or diagrams/pending.json)"
        )
    path = chapter_path(spec.chapter)
    nb = _load(path)
    ids = [c.get("id") for c in nb["cells"]]
    if after not in ids:
        sys.exit(f"error: {path.name} has no cell with id {after!r}")
    if any(diagrams.cell_name(c) == name for c in nb["cells"]):
        sys.exit(f"error: {path.name} already shows {name}")
    cell = diagrams.new_cell(name, caption, alt)
    nb["cells"].insert(ids.index(after) + 1, cell)
    path.write_text(_dump(nb), encoding="utf-8")
    if entry:
        data = json.loads(diagrams.PENDING.read_text(encoding="utf-8"))
        data["diagrams"] = [e for e in data["diagrams"] if e["name"] != name]
        diagrams.PENDING.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"inserted {name} into {path.name} after cell {after} (cell id {cell['id']})")
    return 0


def preview(names: list[str]) -> int:
    """Screenshots of the renders in headless Chromium: light and dark page, 760 px and a phone's 390 px."""
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    from bench.lab import find_chromium, launch_chromium

    out = ROOT / "build" / "diagrams-preview"
    out.mkdir(parents=True, exist_ok=True)
    names = names or list(diagrams.registry())
    with sync_playwright() as pw:
        browser = launch_chromium(pw, find_chromium())
        for width in (760, 390):
            page = browser.new_page(viewport={"width": width, "height": 600}, device_scale_factor=1)
            for name in names:
                for lang in diagrams.LANGS:
                    src = diagrams.data_url(diagrams.svg_path(name, lang).read_text(encoding="utf-8"))
                    for mode, bg in (("light", "#ffffff"), ("dark", "#121212")):
                        page.set_content(
                            f'<html><body style="margin:20px;background:{bg}">'
                            f'<img src="{src}" style="max-width:100%;height:auto"></body></html>'
                        )
                        page.wait_for_load_state("load")
                        shot = out / f"{name}.{lang}.{mode}.{width}.png"
                        page.screenshot(path=str(shot), full_page=True)
            page.close()
        browser.close()
    print(f"wrote {len(names) * 8} screenshots to {out.relative_to(ROOT)}/")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("render", help="write every SVG and refresh the chapters' diagram cells")
    sub.add_parser("check", help="exit 1 unless every SVG and diagram cell is a fresh render")
    ins = sub.add_parser("insert", help="put a diagram into its chapter after a cell")
    ins.add_argument("name")
    ins.add_argument("--after", required=True, help="the id of the cell it follows")
    ins.add_argument("--caption")
    ins.add_argument("--alt")
    pre = sub.add_parser("preview", help="screenshots in build/diagrams-preview/")
    pre.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    if args.command in (None, "render"):
        return render_all()
    if args.command == "check":
        problems = stale()
        for p in problems:
            print(p)
        return 1 if problems else 0
    if args.command == "insert":
        return insert(args.name, args.after, args.caption, args.alt)
    return preview(args.names)


if __name__ == "__main__":
    sys.exit(main())
