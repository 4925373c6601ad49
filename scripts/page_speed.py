"""How soon the chapter pages are interactive, and what runs before, in headless Chromium.

    python scripts/page_speed.py                         # build/book, every chapter, both editions
    python scripts/page_speed.py --reps 3 --against /tmp/old/book   # paired with another build

Each chapter page of both editions is opened from disk (file://) at 1280 x 900 and on a
390 x 844 phone, in a fresh browser context, ``--reps`` times; with ``--against`` the other
build's page is opened right before or after it (the order alternates), so that the two meet the
same machine load. Printed per page: "ready", when the page is interactive (DOMContentLoaded, or
the explorers' set-up where the page has one: ``data-explorers-ready``), the load event, and when
the last long task (over 50 ms) before the measurement ended; then the distribution per edition
and screen, and the machine's load average. The numbers depend on the machine and its load: the
site's tests assert what makes a page fast, never a time (docs/book.md, "Speed").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.lab import find_chromium, launch_chromium  # noqa: E402

LONG_TASKS = """window.__long = []; try { new PerformanceObserver(l => l.getEntries().forEach(
  e => window.__long.push([Math.round(e.startTime), Math.round(e.duration)])))
  .observe({type: 'longtask', buffered: true}); } catch (e) {}"""
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def measure(browser, page_file: Path, viewport: dict) -> dict:
    context = browser.new_context(viewport=viewport, device_scale_factor=1,
                                  has_touch=viewport["width"] < 600)
    try:
        page = context.new_page()
        page.add_init_script(LONG_TASKS)
        page.goto(page_file.resolve().as_uri(), wait_until="load", timeout=120_000)
        page.wait_for_function("document.documentElement.dataset.explorersReady !== undefined"
                               " || !document.querySelector('.explorer')")
        page.wait_for_timeout(600)
        t = page.evaluate("""() => { const n = performance.getEntriesByType('navigation')[0];
          return {dcl: Math.round(n.domContentLoadedEventEnd), load: Math.round(n.loadEventEnd),
                  explorers: Number(document.documentElement.dataset.explorersReady || -1),
                  long: window.__long}; }""")
    finally:
        context.close()
    t["ready"] = max(t["dcl"], t["explorers"])
    t["last_long"] = max([s + d for s, d in t["long"]] or [0])
    return t


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=Path("build/book"))
    parser.add_argument("--against", type=Path, help="another build of the site, measured in pairs")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("only", nargs="*", help="only the pages whose path holds one of these")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    sites = {"site": args.site} | ({"against": args.against} if args.against else {})
    pages = [p.relative_to(args.site) for pattern in ("notebooks/[0-9]*.html", "zh/notebooks/[0-9]*.html")
             for p in sorted(args.site.glob(pattern))
             if not args.only or any(o in str(p.relative_to(args.site)) for o in args.only)]
    rows = []
    with sync_playwright() as pw:
        browser = launch_chromium(pw, find_chromium())
        for rep in range(args.reps):
            for rel in pages:
                for screen, viewport in VIEWPORTS.items():
                    order = list(sites) if rep % 2 == 0 else list(sites)[::-1]
                    for name in order:
                        load_average = os.getloadavg()[0]
                        t = measure(browser, sites[name] / rel, viewport)
                        t.update(site=name, page=str(rel), screen=screen, rep=rep,
                                 load_average=round(load_average, 1))
                        rows.append(t)
                        print(f"{name:7s} {str(rel):45s} {screen:7s} ready {t['ready']:5d} ms, load "
                              f"{t['load']:5d} ms, last long task ends {t['last_long']:5d} ms "
                              f"(load average {load_average:.1f})", flush=True)
        browser.close()
    if args.json:
        args.json.write_text(json.dumps(rows))
    print(f"load average {min(r['load_average'] for r in rows)} to {max(r['load_average'] for r in rows)}"
          f" ({os.cpu_count()} CPUs)")
    for name in sites:
        for edition in ("en", "zh"):
            for screen in VIEWPORTS:
                ready = sorted(r["ready"] for r in rows if r["site"] == name and r["screen"] == screen
                               and r["page"].startswith("zh/") == (edition == "zh"))
                if ready:
                    p90 = ready[int(0.9 * (len(ready) - 1))]
                    print(f"{name:7s} {edition} {screen:7s} ready: median {statistics.median(ready):5.0f} ms,"
                          f" 90th percentile {p90:5d} ms, max {ready[-1]:5d} ms,"
                          f" {sum(r > 1500 for r in ready)} of {len(ready)} over 1.5 s")


if __name__ == "__main__":
    main()
