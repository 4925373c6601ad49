"""The book in JupyterLab as a reader meets it, in headless Chromium (Playwright).

JupyterLab is started by ``make lab`` itself (``bench.lab.BookLab``: the same trust step and
settings, a free port, a random token, temporary Jupyter folders, autosave off) on copies of the
chapters, so no committed notebook is ever rewritten. For every chapter:

1. on open, before anything runs, every saved widget view renders (with its figure) and no text
   fallback such as ``interactive(children=...`` shows;
2. Run All gives no error output, runs every code cell, and the page raises no error;
3. every widget view is live, and moving each control (slider, dropdown, toggle buttons) changes
   its figure within ``REDRAW_S`` seconds without the callback raising;
4. no label is cut off (a label's ``scrollWidth`` exceeds its ``clientWidth``).

The fixture notebooks in ``tests/fixtures/lab/`` must each fail one of these checks. ``make
test-lab CH=3`` checks chapter 3 only (``LAB_CHAPTERS="3 5"``: several).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pytest
from filelock import FileLock

from bench.lab import (
    NO_CHROMIUM,
    BookLab,
    cell_report,
    close_notebook,
    find_chromium,
    launch_chromium,
    open_lab,
    open_notebook,
    run_all,
)
from bench.notebooks import chapter_notebooks

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "lab"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
REDRAW_S = 15  # a moved control must have redrawn its figure by then (a busy 2-core machine)
RENDER_S = 30  # saved or live widget views must have rendered by then


def chapters() -> list[Path]:
    found = chapter_notebooks(ROOT)
    wanted = {int(n) for n in os.environ.get("LAB_CHAPTERS", "").replace(",", " ").split()}
    return [p for p in found if not wanted or int(p.name[:2]) in wanted]


def saved_views(nb: dict) -> tuple[int, int]:
    """(widget views saved with their model state, how many of those show a saved image)."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})

    def has_image(model_id: str, seen=()) -> bool:
        model = state.get(model_id, {})
        st = model.get("state", {})
        if any("image/png" in o.get("data", {}) for o in st.get("outputs", [])):
            return True
        kids = [c.removeprefix("IPY_MODEL_") for c in st.get("children", [])]
        return any(has_image(k, (*seen, model_id)) for k in kids if k not in seen)

    views = [o["data"][WIDGET_VIEW]["model_id"] for c in nb["cells"] for o in c.get("outputs", [])
             if WIDGET_VIEW in o.get("data", {})]
    views = [v for v in views if v in state]
    return len(views), sum(has_image(v) for v in views)


# --------------------------------------------------------------------------- in-page probes
OUTPUTS = ("const p = window.jupyterapp.shell.currentWidget; const outs = [...p.node"
           ".querySelectorAll('.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output')];")
# A widget's text fallback (its repr: JupyterLab would not render the view), and ipywidgets'
# placeholders for a view still loading or whose model is missing.
REPR = r"/^\s*[A-Za-z_]\w*\((children|value|description|layout|options)=/"
PLACEHOLDER = r"/Error displaying widget|Loading widget|model not found/"
VIEWS_JS = f"""() => {{ {OUTPUTS}
  const views = outs.filter(o => o.querySelector('.jupyter-widgets'));
  const shown = views.filter(o => o.getBoundingClientRect().height > 0);
  return {{
    views: shown.length,
    images: shown.filter(o => [...o.querySelectorAll('.widget-output img')]
                               .some(i => i.complete && i.naturalWidth > 0)).length,
    text: outs.map(o => o.textContent.trim()).filter(t => {REPR}.test(t))
              .map(t => t.slice(0, 120)),
    placeholders: outs.map(o => o.textContent.trim()).filter(t => {PLACEHOLDER}.test(t))
                      .map(t => t.slice(0, 120)),
  }}; }}"""
# Text of a label that does not fit: scrollWidth beyond clientWidth (CSS ellipsis or clipping);
# a dropdown shows one option at a time: each is measured against the room inside the box.
CUT_LABELS_JS = f"""() => {{ {OUTPUTS}
  const cut = [];
  const canvas = document.createElement('canvas').getContext('2d');
  for (const o of outs) {{
    for (const e of o.querySelectorAll('.widget-label, .widget-readout, .widget-toggle-button, '
                                        + '.widget-button, .widget-label-basic')) {{
      if (e.offsetParent && e.scrollWidth > e.clientWidth + 1) {{
        cut.push(`'${{e.textContent.trim()}}' (${{e.scrollWidth}} px in ${{e.clientWidth}} px)`);
      }}
    }}
    for (const s of o.querySelectorAll('.widget-dropdown select')) {{
      const style = getComputedStyle(s);
      canvas.font = `${{style.fontSize}} ${{style.fontFamily}}`;
      const room = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      for (const option of s.options) {{  // each one as it would show once chosen
        const need = Math.ceil(canvas.measureText(option.text).width);
        if (s.offsetParent && need > room) {{
          cut.push(`'${{option.text.replace(/\u00a0/g, ' ')}}' (${{need}} px in ${{room}} px)`);
        }}
      }}
    }}
  }}
  return cut; }}"""
KERNEL_JS = """() => { const s = window.jupyterapp.shell.currentWidget.sessionContext.session;
  return s && s.kernel ? s.kernel.status : 'gone'; }"""
# What a control redraws: the widget's Output areas (figures as PNG data, printed text).
FIGURE_JS = "v => [...v.querySelectorAll('.widget-output')].map(o => o.innerHTML).join('\\n')"
RAISED_JS = r"""v => [...v.querySelectorAll('.widget-output .jp-OutputArea-output')]
  .map(o => o.textContent).filter(t => /Traceback|\b\w*(Error|Exception)\b/.test(t))
  .map(t => t.trim().split('\n').filter(l => /(Error|Exception)\b/.test(l)).pop() || t.slice(0, 200))"""


def _wait(page, probe, ready, seconds: float):
    deadline = time.monotonic() + seconds
    while True:
        value = page.evaluate(probe)
        if ready(value) or time.monotonic() > deadline:
            return value
        page.wait_for_timeout(250)


# --------------------------------------------------------------------------- the checks
def check_saved_views(page, nb: dict) -> list[str]:
    """Before running: each saved view renders (figure included), no text fallback."""
    views, images = saved_views(nb)
    got = _wait(page, VIEWS_JS, lambda r: r["text"] or (
        r["views"] >= views and r["images"] >= images and not r["placeholders"]), RENDER_S)
    problems = [f"on open: text instead of a widget: {t}" for t in got["text"]]
    problems += [f"on open: widget not shown: {t}" for t in got["placeholders"]]
    if got["views"] < views:
        problems.append(f"on open: {got['views']} of {views} saved widget views rendered")
    elif got["images"] < images:
        problems.append(f"on open: {got['images']} of {images} saved widget figures shown")
    return problems


def move(control, kind: str) -> str:
    """Move one control to another value; return a description of the move."""
    control.scroll_into_view_if_needed()
    if kind == "slider":
        handle = control.locator(".noUi-handle").first
        now, top = handle.get_attribute("aria-valuenow"), handle.get_attribute("aria-valuemax")
        handle.focus()
        handle.press("Home" if float(now) >= float(top) else "End")
        return f"slider from {now} to {handle.get_attribute('aria-valuenow')}"
    if kind == "dropdown":
        select = control.locator("select")
        values = select.evaluate("s => [...s.options].map(o => o.value)")
        current = select.input_value()
        target = next(v for v in values if v != current)
        select.select_option(target)
        return f"dropdown from {current!r} to {target!r}"
    button = control.locator(".widget-toggle-button:not(.mod-active)").first
    text = button.text_content()
    # A click event on the element itself, as the slider's keys and the dropdown's selection are:
    # a mouse click at coordinates can land beside the button while a redraw above it still moves
    # the page (seen: "no redraw", kernel idle, the click lost).
    button.dispatch_event("click")
    return f"toggle to {text!r}"


CONTROLS = {"slider": ".widget-slider", "dropdown": ".widget-dropdown",
            "toggle": ".widget-toggle-buttons"}


def _move_and_watch(page, view, control, kind: str) -> tuple[str, bool, float]:
    """Move ``control`` once and watch ``view``'s figure: (the move, redrawn?, seconds taken)."""
    before = view.evaluate(FIGURE_JS)
    start = time.monotonic()
    how = move(control, kind)
    # Changed, then unchanged for half a second (a redraw may come in steps).
    last, changed_at = before, None
    while time.monotonic() - start < REDRAW_S:
        page.wait_for_timeout(150)
        now = view.evaluate(FIGURE_JS)
        if now != last:
            last, changed_at = now, time.monotonic()
        elif changed_at and time.monotonic() - changed_at > 0.5:
            break
    return how, last != before, (changed_at or start) - start


def check_controls(page) -> tuple[list[str], int, float]:
    """Move every control of every widget; each must redraw its figure without raising.

    A move that shows no redraw while the kernel sits idle is made again before it counts (the
    control moved back, then the same move watched once more): under a full test run a toggle's
    click was lost that way twice (the same notebook, checked just before, had redrawn), and a
    reader whose click did nothing clicks again. A callback that never redraws fails both moves.
    Returns (problems, controls moved, slowest redraw in s)."""
    problems, moved, slowest = [], 0, 0.0
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    views = panel.locator(".jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output"
                          ":has(.jupyter-widgets)")
    for v in range(views.count()):
        view = views.nth(v)
        for kind, selector in CONTROLS.items():
            controls = view.locator(selector)
            for k in range(controls.count()):
                control = controls.nth(k)
                label = (control.locator(".widget-label").first.text_content() or "").strip()
                name = f"{kind} {label!r}" if label else kind
                how, redrawn, seconds = _move_and_watch(page, view, control, kind)
                if not redrawn and not view.evaluate(RAISED_JS) and \
                        page.evaluate(KERNEL_JS) == "idle":
                    # The lost move may have changed the control but not the kernel's value, and
                    # moving on from there could go back to that very value (no change, no call):
                    # move back first, then make the watched move again.
                    move(control, kind)
                    page.wait_for_timeout(1000)
                    how, redrawn, seconds = _move_and_watch(page, view, control, kind)
                    how += ", made again"
                moved += 1
                raised = view.evaluate(RAISED_JS)
                if raised:
                    problems.append(f"{name}: the callback raised ({how}): {raised[0]}")
                elif not redrawn:
                    kernel = page.evaluate(KERNEL_JS)
                    problems.append(f"{name}: no redraw within {REDRAW_S} s ({how}; kernel "
                                    f"{kernel})")
                else:
                    slowest = max(slowest, seconds)
    return problems, moved, slowest


def check_notebook(page, name: str, nb: dict, errors: list[str]) -> tuple[list[str], dict]:
    """Every check on one notebook (already copied into the lab's folder); (problems, facts)."""
    del errors[:]
    open_notebook(page, name)
    try:
        problems = check_saved_views(page, nb)
        seconds = run_all(page)
        cells = cell_report(page)
        problems += [f"error output in {e}" for e in cells["errors"]]
        if cells["notRun"] and not cells["errors"]:
            problems.append(f"cells never ran: {cells['notRun']}")
        live = _wait(page, VIEWS_JS, lambda r: r["text"] or (
            r["views"] >= cells["views"] and not r["placeholders"]), RENDER_S)
        if live["views"] < cells["views"]:
            problems.append(f"after Run All: {live['views']} of {cells['views']} widget views live")
        problems += [f"after Run All: text instead of a widget: {t}" for t in live["text"]]
        problems += [f"after Run All: widget not shown: {t}" for t in live["placeholders"]]
        moved, count, slowest = check_controls(page)
        problems += moved
        problems += [f"label cut off: {t}" for t in page.evaluate(CUT_LABELS_JS)]
        problems += [f"page error: {e}" for e in errors]
        return problems, {"run_all_s": round(seconds, 1), "views": cells["views"],
                          "controls": count, "slowest_redraw_s": round(slowest, 1)}
    finally:
        close_notebook(page)


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def chromium():
    path = find_chromium()
    if path is None:
        pytest.fail(NO_CHROMIUM)
    return path


FIXTURE_NAMES = ["good", "raises", "no_redraw", "long_label"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, chromium):
    scratch = tmp_path_factory.mktemp("lab")
    folder = scratch / "book"
    folder.mkdir()
    for path in chapters():
        shutil.copy(path, folder)
    for name in FIXTURE_NAMES:
        shutil.copy(FIXTURES / f"{name}.ipynb", folder / f"fixture_{name}.ipynb")
    # Never signed anywhere: the good fixture plus a note that makes its content new.
    nb = json.loads((FIXTURES / "good.ipynb").read_text())
    nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "id": "untrusted",
                           "source": f"A notebook from elsewhere ({os.urandom(8).hex()})."})
    (folder / "fixture_untrusted.ipynb").write_text(json.dumps(nb))
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in chapters()}
    # Forget the chapters' signatures, so that only `make lab`'s own trust step can make them
    # trusted: once per run, since several workers each start a server (one per group of chapters).
    # Every process that opens the notary's sqlite database does so under one lock: nbformat's
    # notary, when it cannot open the database (locked by another writer on a busy machine),
    # renames it and starts an empty one, and every chapter would open untrusted.
    with trust_lock(tmp_path_factory) as shared:
        if not (shared / "lab-trust.done").exists():
            with book_notary() as notary:
                for path in chapters():
                    notary.unsign(nbformat.read(path, as_version=nbformat.NO_CONVERT))
        server = BookLab(folder, scratch)  # `make lab` signs the chapters as it starts
        (shared / "lab-trust.done").touch()
        try:
            server.sign(*(folder / f"fixture_{n}.ipynb" for n in FIXTURE_NAMES))
            server.api("/api/contents/fixture_good.ipynb")  # the server opens its notary now
        except BaseException:
            server.close()
            raise
    try:
        server.committed = before
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def trust_lock(tmp_path_factory):
    """A lock every worker of this run shares, and the folder it lives in (this run's only)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # .../pytest-N/popen-gwK: pytest-N is this run's
    with FileLock(shared / "lab-trust.lock"):
        yield shared


def book_notary():
    """The notary `make lab` signs with: its database and key inside the environment."""
    from nbformat.sign import NotebookNotary

    data = Path(sys.prefix) / "share" / "jupyter"
    return NotebookNotary(db_file=str(data / "nbsignatures.db"),
                          secret_file=str(data / "notebook_secret"))


@pytest.fixture(scope="module")
def page(lab, chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch_chromium(pw, chromium)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            tab = context.new_page()
            tab.errors = []
            tab.on("pageerror", lambda e: tab.errors.append(str(e)[:300]))
            tab.on("console", lambda m: tab.errors.append(f"console: {m.text[:300]}")
                   if m.type == "error" else None)
            open_lab(tab, lab)
            yield tab
        finally:
            browser.close()


# --------------------------------------------------------------------------- the tests
def _check(lab, page, name):
    nb = json.loads((lab.folder / name).read_text())
    return check_notebook(page, name, nb, page.errors)


def test_a_notebook_that_does_everything_right_passes(lab, page):
    problems, facts = _check(lab, page, "fixture_good.ipynb")
    assert problems == [], problems
    assert facts["controls"] == 3 and facts["views"] == 1, facts


@pytest.mark.parametrize("fixture, expected, scope", ids=["raises", "no_redraw", "long_label",
                                                          "untrusted"], argvalues=[
    ("raises", r"^toggle 'style': the callback raised .*ValueError: no figure in dots style",
     "toggle 'style'"),
    ("no_redraw", r"^dropdown 'colour': no redraw within", "dropdown 'colour'"),
    ("long_label", r"(?s)label cut off: 'number of points'.*label cut off: 'blue, the colour of",
     "label cut off"),
    ("untrusted", r"^on open: text instead of a widget: interactive\(children=", "on open"),
])
def test_each_broken_notebook_is_caught(lab, page, fixture, expected, scope, monkeypatch):
    if fixture == "no_redraw":  # its callback never draws: a short wait shows that as well as 15 s,
        monkeypatch.setattr(sys.modules[__name__], "REDRAW_S", 3)  # and the move is made twice
    problems, _ = _check(lab, page, f"fixture_{fixture}.ipynb")
    assert re.search(expected, "\n".join(problems)), problems
    assert all(p.startswith(scope) for p in problems), problems  # and by that check alone


def check_chapter(lab, page, chapter):
    problems, facts = _check(lab, page, chapter)
    print(chapter, facts)
    assert not problems, f"{chapter} in JupyterLab:\n  " + "\n  ".join(problems)
    assert facts["controls"] >= 1, f"{chapter}: no control to move"


# The chapters in three groups, each a test class: pytest-xdist (--dist loadscope) gives each class
# to one worker, which starts its own JupyterLab, so the three groups run side by side.
def chapter_group(k: int):
    group = chapters()[k::3]
    return pytest.mark.parametrize("chapter", [p.name for p in group],
                                   ids=[f"ch{int(p.name[:2])}" for p in group])


class TestChaptersGroup1:
    @chapter_group(0)
    def test_chapter_works_in_jupyterlab(self, lab, page, chapter):
        check_chapter(lab, page, chapter)


class TestChaptersGroup2:
    @chapter_group(1)
    def test_chapter_works_in_jupyterlab(self, lab, page, chapter):
        check_chapter(lab, page, chapter)


class TestChaptersGroup3:
    @chapter_group(2)
    def test_chapter_works_in_jupyterlab(self, lab, page, chapter):
        check_chapter(lab, page, chapter)


def test_make_lab_signed_the_chapters_in_the_environment_only(lab, page, tmp_path_factory):
    with trust_lock(tmp_path_factory), book_notary() as notary:
        for path in chapters():
            assert notary.check_signature(nbformat.read(path, as_version=nbformat.NO_CONVERT))
    assert not list((lab.scratch / "data").rglob("nbsignatures.db"))  # the per-user data folder
    now = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in chapters()}
    assert now == lab.committed  # signing never rewrites a notebook


NOTIFICATION = "@jupyterlab/apputils-extension:notification"


def test_no_news_or_update_popup(lab, page):
    """The settings override in .venv (`make install`, jupyter/overrides.json) is in force."""
    schema = page.evaluate("async id => (await window.jupyterapp.serviceManager.settings"
                           ".fetch(id)).schema.properties", NOTIFICATION)
    assert schema["fetchNews"]["default"] == "false"
    assert schema["checkForUpdates"]["default"] is False
    # JupyterLab asks within a second of loading when news are not switched off.
    assert "official Jupyter news" not in page.inner_text("body")
