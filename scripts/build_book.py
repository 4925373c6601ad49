"""Build the book as an offline static website in build/book/ (Jupyter Book 1, execution off).

    python scripts/build_book.py                 # stage, then build build/book/ (index.html)
    python scripts/build_book.py --deps-only     # only fetch MathJax and axe-core (network once)
    python scripts/build_book.py --lang zh       # the Chinese site in build/book/zh/ (see build_zh)

The build never runs a notebook: the site shows exactly the committed outputs that nbval checks.
Everything the pages load is served from the build, so they render with no network:

* MathJax 3 comes from the npm registry tarball (pinned version, integrity hash checked), is cached
  under ``<sys.prefix>/share/`` and copied into the site; Sphinx's ``mathjax_path`` points at it.
  The SVG output is used, so no web fonts are needed (they would be blocked from ``file://``).
* ipywidgets outputs become a static snapshot: the control values and the figure the widget's
  Output area held when the notebook was executed. No widget manager or require.js is loaded.

Chapters are whatever ``notebooks/[0-9][0-9]_*.ipynb`` exist, in numeric order. The glossary and
the references pages are gathered from the chapters' "Glossary" tables and "References" sections;
the benchmark page shows ``results/bench.md`` when it exists.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import io
import json
import re
import shutil
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import diagrams  # noqa: E402  (a chapter's diagram cells become numbered figures)

BOOK = ROOT / "book"
STAGE = ROOT / "build" / "book-src"
SITE = ROOT / "build" / "book"
DOCTREES = ROOT / "build" / "book-doctrees"
STAMP = SITE / ".inputs-sha256"
CODE_STAMP = SITE / ".code-sha256"

MATHJAX_VERSION = "3.2.2"
MATHJAX_INTEGRITY = (  # the "dist.integrity" of https://registry.npmjs.org/mathjax/3.2.2
    "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/"
    "O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="
)
MATHJAX_CACHE = Path(sys.prefix) / "share" / f"mathjax-{MATHJAX_VERSION}"
# The parts of es5/ the SVG build can load: the bundle itself and what it loads on demand
# (TeX extensions via autoload, the menu, accessibility and speech). CHTML fonts are left out.
MATHJAX_KEEP = ("tex-svg.js", "input/", "output/svg", "ui/", "a11y/", "sre/", "adaptors/")

# axe-core, the accessibility rules engine tests/test_book.py runs in every page. Not part of the
# site: the test injects the cached copy into each page (nothing is fetched at test time).
AXE_VERSION = "4.11.4"
AXE_INTEGRITY = (  # the "dist.integrity" of https://registry.npmjs.org/axe-core/4.11.4
    "sha512-KunSNx+TVpkAw/6ULfhnx+HWRecjqZGTOyquAoWHYLRSdK1tB5Ihce1ZW+UY3fj33bYAFWPu7W/"
    "GRSmmrCGuxA=="
)
AXE_CACHE = Path(sys.prefix) / "share" / f"axe-core-{AXE_VERSION}"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


# --------------------------------------------------------------------------- npm packages
def fetch_npm(name: str, version: str, integrity: str, cache: Path, keep) -> Path:
    """Download the npm registry tarball of ``name@version`` once, check its integrity hash and
    unpack into ``cache`` the files whose path inside ``package/`` satisfies ``keep(path)``
    (``package/`` itself is dropped). Returns ``cache``; later calls do not touch the network."""
    done = cache / ".complete"
    if done.exists() and done.read_text() == integrity + "\n":
        return cache
    url = f"https://registry.npmjs.org/{name}/-/{name}-{version}.tgz"
    print(f"fetching {name} {version} from {url}", flush=True)
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except OSError as err:
        sys.exit(
            f"error: could not download {name} ({err}). The book needs it once; run "
            f"`make book-deps` with network access, after which builds and tests work offline."
        )
    algo, expected = integrity.split("-", 1)
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != expected:
        sys.exit(f"error: {name} tarball integrity mismatch: {algo}-{got} != {integrity}")
    tmp = cache.with_name(cache.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            rel = member.name.removeprefix("package/")
            target = keep(rel) if member.isfile() else None
            if target:
                (tmp / target).parent.mkdir(parents=True, exist_ok=True)
                (tmp / target).write_bytes(tar.extractfile(member).read())
    shutil.rmtree(cache, ignore_errors=True)
    tmp.rename(cache)
    done.write_text(integrity + "\n")
    return cache


def fetch_mathjax() -> Path:
    """The pinned MathJax's es5 build (the parts the site loads), cached; returns its folder."""

    def keep(rel: str) -> str | None:
        if rel == "LICENSE":
            return rel
        if rel.startswith("es5/") and rel[4:].startswith(MATHJAX_KEEP):
            return rel.removeprefix("es5/")
        return None

    return fetch_npm("mathjax", MATHJAX_VERSION, MATHJAX_INTEGRITY, MATHJAX_CACHE, keep)


def fetch_axe() -> Path:
    """The pinned axe-core (``axe.min.js`` and its licence), cached; returns the script's path."""
    cache = fetch_npm(
        "axe-core",
        AXE_VERSION,
        AXE_INTEGRITY,
        AXE_CACHE,
        lambda rel: rel if rel in ("axe.min.js", "LICENSE") else None,
    )
    return cache / "axe.min.js"


# --------------------------------------------------------------------------- notebooks
def chapters() -> list[Path]:
    """The chapter notebooks present now, in numeric order."""
    return sorted(
        ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"), key=lambda p: (int(p.name[:2]), p.name)
    )


def chapter_assets() -> list[Path]:
    """Images kept next to the notebooks (for markdown like ``![](figures/x.png)``)."""
    suffixes = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}
    return sorted(
        p
        for p in (ROOT / "notebooks").rglob("*")
        if p.is_file() and p.suffix.lower() in suffixes and ".ipynb_checkpoints" not in p.parts
    )


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def markdown_text(nb: dict) -> str:
    return "\n\n".join(_source(c) for c in nb["cells"] if c["cell_type"] == "markdown")


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


def _widget_tree(state: dict, model_id: str, seen: set | None = None) -> dict:
    """Walk a widget tree. Returns the control settings ('description = value'), the texts of
    label/HTML widgets, the outputs held by Output widgets and a progress bar's 'value/max'."""
    found = {"controls": [], "texts": [], "outputs": [], "progress": ""}
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state:
        return found
    seen.add(model_id)
    name = state[model_id].get("model_name", "")
    st = state[model_id].get("state", {})
    if name == "OutputModel":
        found["outputs"] = [
            o for o in st.get("outputs", []) if WIDGET_VIEW not in o.get("data", {})
        ]
    elif name in ("LabelModel", "HTMLModel", "HTMLMathModel"):
        text = html.unescape(re.sub(r"<[^>]+>", "", str(st.get("value", "")))).strip()
        found["texts"] = [text] if text else []
    elif name in ("FloatProgressModel", "IntProgressModel"):
        found["progress"] = f"{st.get('value', 0):g}/{st.get('max', 0):g}"
    elif "_options_labels" in st and st.get("index") is not None:
        index, labels = st["index"], st["_options_labels"]
        value = ", ".join(labels[i] for i in index) if isinstance(index, list) else labels[index]
        found["controls"] = [f"{st.get('description') or 'choice'} = {value}"]
    elif "value" in st:
        value = st["value"]
        value = f"{value:.4g}" if isinstance(value, float) else value
        found["controls"] = [f"{st.get('description') or name.removesuffix('Model')} = {value}"]
    for child in st.get("children", []):
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            sub = _widget_tree(state, child.removeprefix("IPY_MODEL_"), seen)
            for key in ("controls", "texts", "outputs"):
                found[key] = found[key] + sub[key]
            found["progress"] = found["progress"] or sub["progress"]
    return found


def _snapshot(tree: dict) -> list[dict]:
    """Static outputs standing in for one widget view."""
    if tree["progress"]:  # e.g. tqdm.auto's bar: its final text, as tqdm prints it in a terminal
        text = " ".join(tree["texts"]) or tree["progress"]
        return [{"output_type": "stream", "name": "stdout", "text": text + "\n"}]
    what = (
        "Static snapshot of an interactive widget" if tree["outputs"] else "An interactive widget"
    )
    settings = "; ".join(html.escape(c) for c in tree["controls"])
    note = (
        f'<p class="widget-snapshot"><em>{what}</em>{f" at {settings}" if settings else ""}. '
        "Run the notebook (<code>make lab</code>) to move the controls.</p>"
    )
    return [
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": note}},
        *tree["outputs"],
    ]


def static_widgets(nb: dict) -> int:
    """Replace widget views with static snapshots and drop the widget state (so no widget
    JavaScript is loaded). Returns the number of views replaced."""
    meta = nb.get("metadata", {}).pop("widgets", {}) or {}
    state = meta.get(WIDGET_STATE, {}).get("state", {})
    count = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        new_outputs = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                new_outputs.append(out)
            else:
                count += 1
                new_outputs += _snapshot(_widget_tree(state, view.get("model_id", "")))
        cell["outputs"] = new_outputs
    return count


# --------------------------------------------------------------------------- figure texts
# A figure's caption and text alternative live in its cell's metadata, where MyST-NB reads them:
# {"mystnb": {"figure": {"caption": ...}, "image": {"alt": ...}}} (docs/book.md).
IMAGE_MIME = ("image/png", "image/svg+xml", "image/jpeg", "image/gif")
MIN_CAPTION, MIN_ALT = 15, 40  # characters: shorter texts cannot say what a figure shows


def cell_figures(cell: dict, state: dict) -> int:
    """How many figures a code cell shows: its image outputs, and the images held by the Output
    areas of the widgets it displays (``state``: the notebook's saved widget state)."""
    count = 0
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        count += any(m in data for m in IMAGE_MIME)
        view = data.get(WIDGET_VIEW)
        if view is not None:
            held = _widget_tree(state, view.get("model_id", ""))["outputs"]
            count += sum(any(m in o.get("data", {}) for m in IMAGE_MIME) for o in held)
    return count


def text_problem(text, minimum: int) -> str | None:
    """Why ``text`` cannot serve as a figure's caption or text alternative; None if it can."""
    if not isinstance(text, str) or not text.strip():
        return "is missing"
    text = text.strip()
    if re.search(r"\.(?:png|svg|jpe?g|gif|webp|pdf)\b|_images/", text, flags=re.I):
        return f"looks like a file name: {text!r}"
    if any(re.search(r"\d", run) and re.search(r"[a-f]", run, flags=re.I)
           for run in re.findall(r"[0-9a-f]{12,}", text, flags=re.I)):
        return f"looks like a hash: {text!r}"
    if len(text) < minimum:
        return f"is too short to describe a figure ({len(text)} characters, at least {minimum})"
    return None


def figure_text_problems(cell: dict, state: dict) -> list[str]:
    """What a code cell that shows a figure lacks: one figure, a caption, a text alternative."""
    count = cell_figures(cell, state) if cell.get("cell_type") == "code" else 0
    if not count:
        return []
    meta = cell.get("metadata", {}).get("mystnb", {})
    meta = meta if isinstance(meta, dict) else {}
    figure, image = meta.get("figure", {}), meta.get("image", {})
    caption = figure.get("caption") if isinstance(figure, dict) else None
    alt = image.get("alt") if isinstance(image, dict) else None
    problems = []
    if count > 1:
        problems.append(f"shows {count} figures, which would share one caption: one per cell")
    for what, text, minimum in (("caption", caption, MIN_CAPTION), ("alt text", alt, MIN_ALT)):
        why = text_problem(text, minimum)
        if why:
            problems.append(f"its {what} {why}")
    if alt and caption and alt.strip() == caption.strip():
        problems.append("its alt text only repeats the caption: say what the figure shows")
    return problems


def notebook_figure_problems(nb: dict) -> list[tuple[int, list[str]]]:
    """(cell index, problems) for each cell of ``nb`` whose figure lacks a caption or alt text."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    found = [(i, figure_text_problems(cell, state)) for i, cell in enumerate(nb["cells"])]
    return [(i, problems) for i, problems in found if problems]


# --------------------------------------------------------------------------- pages
def _write(path: Path, text: str | bytes) -> None:
    """Write only when the content changes, so Sphinx rebuilds only what changed."""
    data = text.encode() if isinstance(text, str) else text
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


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


def toc(books: list[tuple[Path, dict]], bench_sections: list[str] = ()) -> str:
    lines = ["format: jb-book", "root: intro", "parts:"]
    if books:
        lines += ["  - caption: Chapters", "    chapters:"]
        lines += [f"      - file: notebooks/{p.stem}" for p, _ in books]
    lines += [
        "  - caption: Reference",
        "    chapters:",
        "      - file: glossary",
        "      - file: references",
        "      - file: results/bench",
    ]
    if bench_sections:
        lines += ["        sections:"] + [f"          - file: docs/{n}" for n in bench_sections]
    return "\n".join(lines) + "\n"


def stage() -> None:
    """Write the Jupyter Book source tree into build/book-src/."""
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
        "favicon.svg",
        "docs",
    }
    STAGE.mkdir(parents=True, exist_ok=True)
    for stale in STAGE.iterdir():
        if stale.name not in wanted:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    for name in ("_config.yml", "intro.md", "favicon.svg"):
        _write(STAGE / name, (BOOK / name).read_bytes())
    _write(STAGE / "_toc.yml", toc(books, bench_docs()))
    _write(STAGE / "glossary.md", glossary_page(books))
    _write(STAGE / "references.md", references_page(books))
    # results/: the benchmark page plus the files it may link to (figures, CSV).
    keep = {"bench.md"}
    if (ROOT / "results").is_dir():
        for f in (ROOT / "results").iterdir():
            if f.is_file() and f.name != "bench.md" and f.stat().st_size < 20_000_000:
                _write(STAGE / "results" / f.name, f.read_bytes())
                keep.add(f.name)
    _write(STAGE / "results" / "bench.md", bench_page())
    keep_docs = {f"{n}.md" for n in bench_docs()}
    for name in keep_docs:
        _write(STAGE / "docs" / name, (ROOT / "docs" / name).read_bytes())
    # Chapters (widgets made static); the library sources they link to become downloads.
    keep_nb = set()
    for path, nb in books:
        if missing := notebook_figure_problems(nb):
            print(
                f"note: {path.name}: {len(missing)} figure cell(s) without a proper caption or alt "
                f"text (cells {', '.join(str(i) for i, _ in missing)}); docs/book.md says how "
                "to write them",
                flush=True,
            )
        static_widgets(nb)
        if diagrams.stage_notebook(nb, STAGE / "notebooks", "en", _write):
            keep_nb.add("diagrams")
        _write(STAGE / "notebooks" / path.name, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        keep_nb.add(path.name)
    for asset in chapter_assets():
        rel = asset.relative_to(ROOT / "notebooks")
        _write(STAGE / "notebooks" / rel, asset.read_bytes())
        keep_nb.add(rel.parts[0])
    for f in (ROOT / "attnlib").glob("*.py"):
        _write(STAGE / "attnlib" / f.name, f.read_bytes())
    for folder, names in (("notebooks", keep_nb), ("results", keep), ("docs", keep_docs)):
        for f in (STAGE / folder).glob("*"):
            if f.name not in names:
                shutil.rmtree(f) if f.is_dir() else f.unlink()
    for folder, pattern in (("_ext", "*.py"), ("_css", "*.css")):
        for f in (BOOK / folder).glob(pattern):
            _write(STAGE / folder / f.name, f.read_bytes())
    mathjax = STAGE / "_vendor" / "mathjax"
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


def code_digest() -> str:
    """A hash of what turns pages into HTML (the configuration, the extension, this script):
    when it changes, every page is read again (Sphinx alone re-reads only changed sources)."""
    return _digest([*sorted(BOOK.rglob("*")), Path(__file__)], MATHJAX_VERSION)


def inputs_digest() -> str:
    """A hash of everything the site is built from, to skip a build that would change nothing."""
    files = [
        *chapters(),
        *chapter_assets(),
        *sorted(ROOT.glob("attnlib/*.py")),
        *[ROOT / "docs" / f"{n}.md" for n in bench_docs()],
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
    sphinx_build(STAGE, SITE, DOCTREES, fresh)
    STAMP.write_text(digest)
    CODE_STAMP.write_text(code_digest())
    print(f"built the book in {time.perf_counter() - start:.1f} s: open {SITE / 'index.html'}")
    return SITE


# --------------------------------------------------------------------------- Chinese edition
SITE_ZH = SITE / "zh"
STAGE_ZH = ROOT / "build" / "book-src-zh"
STAGE_BASE = ROOT / "build" / "book-src-zh-base"  # the English tree the Chinese one starts from
DOCTREES_ZH = ROOT / "build" / "book-doctrees-zh"
SNAPSHOT = re.compile(
    r'<p class="widget-snapshot"><em>(.*?)</em>(?: at (.*?))?\. Run the notebook.*?</p>', re.S
)


def _snapshot_zh(nb: dict) -> None:
    """The static widget notes of a chapter in Chinese."""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            note = out.get("data", {}).get("text/html")
            if isinstance(note, str) and "widget-snapshot" in note:
                match = SNAPSHOT.search(note)
                what = "交互控件的静态快照" if "snapshot" in match.group(1) else "一个交互控件"
                at = f"（{match.group(2)}）" if match.group(2) else ""
                out["data"]["text/html"] = (f'<p class="widget-snapshot"><em>{what}</em>{at}。运行笔记本'
                                            "（<code>make lab LANG=zh</code>）即可拖动控件。</p>")


def stage_zh() -> str:
    """build/book-src-zh/: the staged book with the Chinese notebooks (``scripts/i18n.py generate``
    writes them) and the pages translated from the catalogues. Returns the Chinese title."""
    import i18n  # scripts/i18n.py

    global STAGE
    english_stage, STAGE = STAGE, STAGE_BASE  # the English tree, staged apart from build/book-src/
    try:  # so that building both sites at once (two test workers) never shares a folder
        stage()
    finally:
        STAGE = english_stage
    for f in STAGE_BASE.rglob("*"):
        if f.is_file():
            _write(STAGE_ZH / f.relative_to(STAGE_BASE), f.read_bytes())
    by_id = i18n.all_translations()
    for path in chapters():
        nb = json.loads((i18n.NOTEBOOKS_ZH / path.name).read_text(encoding="utf-8"))
        static_widgets(nb)
        _snapshot_zh(nb)
        diagrams.stage_notebook(nb, STAGE_ZH / "notebooks", "zh", _write)
        _write(STAGE_ZH / "notebooks" / path.name, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    for name in ("intro.md", "glossary.md", "references.md"):
        text = (STAGE_BASE / name).read_text(encoding="utf-8")
        _write(STAGE_ZH / name, i18n.translate_page(text, by_id))
    title = re.search(r"^#\s+(.+)$", (STAGE_ZH / "intro.md").read_text(encoding="utf-8"), re.M)
    return title.group(1) if title else "Attention"


def build_zh(force: bool = False) -> Path:
    """Stage and build the Chinese site into build/book/zh/ (Sphinx ``language = zh_CN``)."""
    start = time.perf_counter()
    title = stage_zh()
    sphinx_build(STAGE_ZH, SITE_ZH, DOCTREES_ZH, force, language="zh_CN", html_title=title,
                 # MyST-NB's toggle of hidden code (it has no zh_CN translation of its own)
                 nb_code_prompt_show="显示代码", nb_code_prompt_hide="隐藏代码")
    print(f"built the Chinese book in {time.perf_counter() - start:.1f} s: open {SITE_ZH / 'index.html'}")
    return SITE_ZH


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--deps-only",
        action="store_true",
        help="only fetch and cache MathJax (for the site) and axe-core (for its browser test)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild every page")
    parser.add_argument("--lang", choices=["en", "zh"], default="en",
                        help="zh: the Chinese site in build/book/zh/ (after scripts/i18n.py generate)")
    args = parser.parse_args()
    if args.deps_only:
        print(f"MathJax {MATHJAX_VERSION} is in {fetch_mathjax()}")
        print(f"axe-core {AXE_VERSION} is in {fetch_axe()}")
    elif args.lang == "zh":
        build_zh(force=args.force)
    else:
        build(force=args.force)


if __name__ == "__main__":
    main()
