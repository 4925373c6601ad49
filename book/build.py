"""Build the book as an offline static website (Jupyter Book 1, execution off): the English site in
build/book/, the Chinese one in build/book/zh/.

    python -m book.build                 # stage, then build build/book/ (index.html)
    python -m book.build --deps-only     # only fetch MathJax and axe-core (network once)
    python -m book.build --lang zh       # the Chinese site in build/book/zh/ (after book.i18n generate)

The build never runs a notebook: the site shows exactly the committed outputs that nbval checks.
Everything the pages load is served from the build, so they render with no network: MathJax
(``book.vendor``) is copied into the site, and ipywidgets outputs become static snapshots
(``book.widgets``), so no widget manager or require.js is loaded.

Chapters are whatever ``notebooks/[0-9][0-9]_*.ipynb`` exist, in numeric order. The glossary and
the references pages are gathered from the chapters' "Glossary" tables and "References" sections;
the benchmark page shows ``results/bench.md`` when it exists (``book.pages``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import time
from pathlib import Path

import diagrams  # a chapter's diagram cells become numbered figures (docs/diagrams.md)
from book import BOOK, ROOT, i18n, interface, live
from book.chapters import chapter_assets, chapters, glossary_rows
from book.figures import notebook_figure_problems
from book.pages import (
    CHAPTERS_CAPTION,
    REFERENCE_CAPTION,
    bench_docs,
    bench_page,
    glossary_page,
    page_title,
    references_page,
    toc,
)
from book.vendor import AXE_VERSION, MATHJAX_VERSION, fetch_axe, fetch_mathjax
from book.widgets import EXPLORER_DIR, STATES, static_widgets

STAGE = ROOT / "build" / "book-src"
SITE = ROOT / "build" / "book"
DOCTREES = ROOT / "build" / "book-doctrees"
STAMP = SITE / ".inputs-sha256"
CODE_STAMP = SITE / ".code-sha256"


def _write(path: Path, text: str | bytes) -> None:
    """Write only when the content changes, so Sphinx rebuilds only what changed."""
    data = text.encode() if isinstance(text, str) else text
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def stage(target: Path = STAGE) -> None:
    """Write the Jupyter Book source tree of the English site into ``target``."""
    books = [(p, json.loads(p.read_text(encoding="utf-8"))) for p in chapters()]
    wanted = {
        "_config.yml",
        "_toc.yml",
        "intro.md",
        "glossary.md",
        "references.md",
        "results",
        "notebooks",
        "attnlib",
        "_vendor",
        "_ext",
        "_css",
        "_js",
        "_explore",
        "favicon.svg",
        "docs",
    }
    target.mkdir(parents=True, exist_ok=True)
    for stale in target.iterdir():
        if stale.name not in wanted:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    for name in ("_config.yml", "intro.md", "favicon.svg"):
        _write(target / name, (BOOK / name).read_bytes())
    _write(target / "_toc.yml", toc(books, bench_docs()))
    _write(target / "glossary.md", glossary_page(books))
    _write(target / "references.md", references_page(books))
    # results/: the benchmark page plus the files it may link to (figures, CSV).
    keep = {"bench.md"}
    if (ROOT / "results").is_dir():
        for f in (ROOT / "results").iterdir():
            if f.is_file() and f.name != "bench.md" and f.stat().st_size < 20_000_000:
                _write(target / "results" / f.name, f.read_bytes())
                keep.add(f.name)
    _write(target / "results" / "bench.md", bench_page())
    keep_docs = {f"{n}.md" for n in bench_docs()}
    for name in keep_docs:
        _write(target / "docs" / name, (ROOT / "docs" / name).read_bytes())
    # Chapters (widgets made static); the library sources they link to become downloads.
    keep_nb = set()
    explorer_dir = target / "_explore" / EXPLORER_DIR  # html_static_path: _static/explorer/
    explorer_dir.mkdir(parents=True, exist_ok=True)
    kept_states: set[str] = set()

    def save(name: str, data: bytes) -> None:
        kept_states.add(name)
        if not (explorer_dir / name).exists():
            _write(explorer_dir / name, data)

    for path, nb in books:
        if missing := notebook_figure_problems(nb):
            print(
                f"note: {path.name}: {len(missing)} figure cell(s) without a proper caption or alt "
                f"text (cells {', '.join(str(i) for i, _ in missing)}); docs/book.md says how "
                "to write them",
                flush=True,
            )
        static_widgets(nb, save=save, chapter=path.stem)
        live.insert(nb, path.stem)  # chapter 7 translates what the reader types (book/live.py)
        if diagrams.stage_notebook(nb, target / "notebooks", "en", _write):
            keep_nb.add("diagrams")
        _write(target / "notebooks" / path.name, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        keep_nb.add(path.name)
    for asset in chapter_assets():
        rel = asset.relative_to(ROOT / "notebooks")
        _write(target / "notebooks" / rel, asset.read_bytes())
        keep_nb.add(rel.parts[0])
    for f in (ROOT / "attnlib").glob("*.py"):
        _write(target / "attnlib" / f.name, f.read_bytes())
    for folder, names in (("notebooks", keep_nb), ("results", keep), ("docs", keep_docs)):
        for f in (target / folder).glob("*"):
            if f.name not in names:
                shutil.rmtree(f) if f.is_dir() else f.unlink()
    for f in explorer_dir.glob("*"):
        if f.name not in kept_states:
            f.unlink()
    for folder, pattern in (("_ext", "*.py"), ("_css", "*.css"), ("_js", "*.js")):
        for f in (BOOK / folder).glob(pattern):
            _write(target / folder / f.name, f.read_bytes())
    # The live models and ONNX Runtime Web (book/live.py: exported again when their recipe changed)
    live_dir = target / "_explore" / live.LIVE_DIR  # _static/live/
    for f in live.build().iterdir():
        if f.suffix == ".js":
            _write(live_dir / f.name, f.read_bytes())
    mathjax = target / "_vendor" / "mathjax"
    if (
        not (mathjax / ".complete").exists()
        or (mathjax / ".complete").read_text() != (fetch_mathjax() / ".complete").read_text()
    ):
        shutil.rmtree(mathjax, ignore_errors=True)
        shutil.copytree(fetch_mathjax(), mathjax)


def _digest(files, seed: str = "") -> str:
    digest = hashlib.sha256(seed.encode())
    for f in files:
        if f.is_file():
            digest.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()


def code_digest(*extra: Path) -> str:
    """A hash of what turns pages into HTML (this package, the configuration, the extensions, the
    stylesheet, and ``extra`` files): when it changes, every page is read again (Sphinx alone
    re-reads only changed sources)."""
    files = [f for f in sorted(BOOK.rglob("*"))
             if "__pycache__" not in f.parts and not f.is_relative_to(STATES)]  # data, not code
    return _digest([*files, *extra], MATHJAX_VERSION)


def inputs_digest() -> str:
    """A hash of everything the site is built from, to skip a build that would change nothing."""
    files = [
        *chapters(),
        *chapter_assets(),
        *sorted(ROOT.glob("attnlib/*.py")),
        *sorted(ROOT.glob("attnlib/pretrained/*.pt")),  # the live models' weights (book/live.py)
        *[ROOT / "docs" / f"{n}.md" for n in bench_docs()],
        *sorted(STATES.rglob("*.json")),  # the explorers' states (their images are named by hash)
    ]
    if (ROOT / "results").is_dir():
        files += sorted((ROOT / "results").iterdir())
    return _digest(files, code_digest())


def sphinx_build(source: Path, out: Path, doctrees: Path, fresh: bool, **overrides) -> None:
    """Build the staged Jupyter Book source ``source`` into ``out`` (HTML); ``overrides`` are
    Sphinx settings (the Chinese site's ``language``)."""
    from jupyter_book.sphinx import build_sphinx

    result = build_sphinx(
        source,
        out,
        noconfig=True,
        path_config=source / "_config.yml",
        confoverrides={
            "external_toc_path": (source / "_toc.yml").as_posix(),
            "latex_individualpages": False,
            **overrides,
        },
        doctreedir=doctrees,
        freshenv=fresh,
        quiet=True,
    )
    if result != 0:
        sys.exit(f"error: the book build failed ({result!r})")


def prune(site: Path) -> None:
    """Remove from the built ``site`` what no page loads or links to: MyST-NB's third copy of each
    notebook (``jupyter_execute/``; the download menu offers ``_sources/``) and the themes'
    source maps (``*.map``, read only by a browser's developer tools)."""
    shutil.rmtree(site / "jupyter_execute", ignore_errors=True)
    for f in list((site / "_static").rglob("*.map")):
        f.unlink()


def build(force: bool = False) -> Path:
    """Stage and build the site; return build/book/. Skipped when the inputs are unchanged."""
    digest = inputs_digest()
    if (
        not force
        and STAMP.exists()
        and STAMP.read_text() == digest
        and (SITE / "index.html").exists()
    ):
        print(f"book is up to date: {SITE / 'index.html'}")
        return SITE
    start = time.perf_counter()
    stage()
    fresh = force or not CODE_STAMP.exists() or CODE_STAMP.read_text() != code_digest()
    STAMP.unlink(missing_ok=True)
    # Sphinx copies static files but never removes one: the explorers' images of states that no
    # longer exist would stay in the site.
    shutil.rmtree(SITE / "_static" / EXPLORER_DIR, ignore_errors=True)
    shutil.rmtree(SITE / "_static" / live.LIVE_DIR, ignore_errors=True)  # likewise a model no longer live
    sphinx_build(STAGE, SITE, DOCTREES, fresh)
    prune(SITE)
    STAMP.write_text(digest)
    CODE_STAMP.write_text(code_digest())
    print(f"built the book in {time.perf_counter() - start:.1f} s: open {SITE / 'index.html'}")
    return SITE


# --------------------------------------------------------------------------- Chinese edition
SITE_ZH = SITE / "zh"
STAGE_ZH = ROOT / "build" / "book-src-zh"
STAGE_BASE = ROOT / "build" / "book-src-zh-base"  # the English tree the Chinese one starts from
DOCTREES_ZH = ROOT / "build" / "book-doctrees-zh"
CODE_STAMP_ZH = SITE_ZH / ".code-sha256"
STAMP_ZH = SITE_ZH / ".inputs-sha256"
LOCALE_DIR = "_locale"  # in the Chinese source tree: the interface's catalogues for Sphinx


def stage_zh() -> dict:
    """build/book-src-zh/: the staged book with the Chinese notebooks (``book.i18n generate``
    writes them), the pages translated from the catalogues and the interface's catalogues.
    Returns the Sphinx settings of the Chinese site."""
    stage(STAGE_BASE)  # the English tree, staged apart from build/book-src/, so that building both
    for f in STAGE_BASE.rglob("*"):  # sites at once (two test workers) never shares a folder
        if f.is_file() and f.relative_to(STAGE_BASE).parts[0] != "_explore" and \
                f.relative_to(STAGE_BASE).parts[:2] != ("_vendor", "mathjax"):
            _write(STAGE_ZH / f.relative_to(STAGE_BASE), f.read_bytes())
    # The explorers' images and MathJax are the English site's (build/book/_static/): the Chinese
    # pages, in build/book/zh/, point there rather than keep a second copy.
    shutil.rmtree(STAGE_ZH / "_vendor" / "mathjax", ignore_errors=True)
    (STAGE_ZH / "_vendor").mkdir(exist_ok=True)
    shutil.rmtree(STAGE_ZH / "_explore", ignore_errors=True)
    (STAGE_ZH / "_explore").mkdir(parents=True)
    words = i18n.interface_translations()
    say = interface.sayer(words)
    by_id = i18n.all_translations()
    for path in chapters():
        nb = json.loads((i18n.NOTEBOOKS_ZH / path.name).read_text(encoding="utf-8"))
        static_widgets(nb, say, save=lambda name, data: None, static="../../_static/",
                       chapter=path.stem)
        live.insert(nb, path.stem, say, "../../_static/")
        diagrams.stage_notebook(nb, STAGE_ZH / "notebooks", "zh", _write)
        _write(STAGE_ZH / "notebooks" / path.name, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    for name in ("intro.md", "glossary.md", "references.md"):
        text = (STAGE_BASE / name).read_text(encoding="utf-8")
        _write(STAGE_ZH / name, i18n.translate_page(text, by_id))
    # The navigation: Chinese captions; the pages no catalogue translates marked as English.
    english = interface.english_page_texts()
    titles = {page: say(interface.ENGLISH_MARK) % {"title": say(page_title(text, page))}
              for page, text in english.items()}
    books = [(p, {}) for p in chapters()]
    captions = {c: say(c) for c in (CHAPTERS_CAPTION, REFERENCE_CAPTION)}
    _write(STAGE_ZH / "_toc.yml", toc(books, bench_docs(), captions, titles))
    i18n.write_interface_catalogues(STAGE_ZH / LOCALE_DIR)
    # Sphinx's Chinese search cuts the pages into words with jieba; the glossary's Chinese terms
    # are its dictionary's words too, so that "位置编码" is one word of the index as well as
    # "位置" and "编码" (_js/site.js cuts a query the same way).
    rows = [row for p in chapters() for row in glossary_rows(json.loads(p.read_text(encoding="utf-8")))]
    terms = sorted({t for _, zh in rows for t in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]{2,}", zh)})
    _write(STAGE_ZH / "_search" / "jieba_terms.txt", "".join(f"{t}\n" for t in terms))
    title = re.search(r"^#\s+(.+)$", (STAGE_ZH / "intro.md").read_text(encoding="utf-8"), re.M)
    return {
        "language": "zh_CN",
        "locale_dirs": [LOCALE_DIR],
        "html_title": title.group(1) if title else "Attention",
        "english_pages": list(english),  # book/_ext/language_switch.py
        "english_doctrees": str(DOCTREES),  # the English sections' anchors (language_switch.py)
        # relative to the Chinese site's _static/: build/book/_static/mathjax/
        "mathjax_path": "../../_static/mathjax/tex-svg.js",
        "html_search_options": {"dict": str(STAGE_ZH / "_search" / "jieba_terms.txt")},
        # MyST-NB's toggle of hidden code (it has no zh_CN translation of its own)
        "nb_code_prompt_show": "显示代码",
        "nb_code_prompt_hide": "隐藏代码",
    }


def build_zh(force: bool = False) -> Path:
    """Stage and build the Chinese site into build/book/zh/ (Sphinx ``language = zh_CN``)."""
    start = time.perf_counter()
    settings = stage_zh()
    digest = code_digest(i18n.LOCALE / "interface.po")
    # Skipped when nothing it reads changed: the staged Chinese tree, its settings, and the English
    # site's inputs (its doctrees give the sections' anchors; its _static/ serves both editions).
    staged = sorted(f for f in STAGE_ZH.rglob("*") if f.is_file())
    inputs = _digest(staged, digest + repr(sorted(settings.items())) + inputs_digest())
    if not force and STAMP_ZH.exists() and STAMP_ZH.read_text() == inputs \
            and (SITE_ZH / "index.html").exists():
        print(f"the Chinese book is up to date: {SITE_ZH / 'index.html'}")
        return SITE_ZH
    STAMP_ZH.unlink(missing_ok=True)
    fresh = force or not CODE_STAMP_ZH.exists() or CODE_STAMP_ZH.read_text() != digest
    shutil.rmtree(SITE_ZH / "_static" / "mathjax", ignore_errors=True)  # left by older builds
    sphinx_build(STAGE_ZH, SITE_ZH, DOCTREES_ZH, fresh, **settings)
    prune(SITE_ZH)
    # MyST-NB writes its copies of the notebooks next to the output folder: build/book/ here
    shutil.rmtree(SITE_ZH.parent / "jupyter_execute", ignore_errors=True)
    CODE_STAMP_ZH.write_text(digest)
    STAMP_ZH.write_text(inputs)
    print(f"built the Chinese book in {time.perf_counter() - start:.1f} s: open {SITE_ZH / 'index.html'}")
    return SITE_ZH


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m book.build", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--deps-only",
        action="store_true",
        help="only fetch and cache MathJax and onnxruntime-web (the site) and axe-core (its browser test)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild every page")
    parser.add_argument("--lang", choices=["en", "zh"], default="en",
                        help="zh: the Chinese site in build/book/zh/ (after python -m book.i18n generate)")
    args = parser.parse_args(argv)
    if args.deps_only:
        print(f"MathJax {MATHJAX_VERSION} is in {fetch_mathjax()}")
        print(f"axe-core {AXE_VERSION} is in {fetch_axe()}")
        print(f"onnxruntime-web {live.ORT_VERSION} is in {live.fetch_ort()}")
    elif args.lang == "zh":
        build_zh(force=args.force)
    else:
        build(force=args.force)


if __name__ == "__main__":
    main()
