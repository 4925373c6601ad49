/* The formulas on the site: how MathJax draws them, the keyboard focus on a formula drawn late,
 * and the mark on a formula that scrolls. */

/* MathJax's configuration, read when tex-svg.js starts (this file starts it, below). This script
 * runs after the `window.MathJax = {...}` Sphinx writes (html_js_files come after it). A chapter
 * has up to about 230 formulas, and drawing them all was the largest task before the page became
 * interactive: MathJax's ui/lazy draws each one when it scrolls into view. Their TeX is
 * still read at once (ui/lazy would put that off too; it is the smaller part of the work), so that
 * every formula's MathML, which a screen reader reads, is there from the start, and the TeX
 * extensions the formulas need are loaded before the reader prints: ui/lazy draws every formula on
 * "beforeprint", which must finish without waiting for a file. A macro MathJax does not know is a
 * TeX error (without the package "noundefined", which would draw its name in red instead), so the
 * site's browser test finds a misspelt one. */
{
  const config = (window.MathJax = window.MathJax || {});
  const options = config.options || {};
  const readNow = (math) => { math.lazyCompile = false; };
  config.loader = { ...config.loader, load: [...((config.loader || {}).load || []), "ui/lazy"] };
  config.tex = { ...config.tex, packages: { "[-]": ["noundefined"] } };
  config.options = {
    ...options,
    renderActions: {
      ...options.renderActions,
      // after MathJax finds the formulas (priority 10), before it reads their TeX (20)
      readTexNow: [11, (doc) => { for (const math of doc.math) readNow(math); }, readNow],
    },
  };
}

/* MathJax itself starts once the page is interactive: book/_ext/offline_book.py leaves its tag
 * unrun, and it is started here after DOMContentLoaded (the explorers are set up then). MathJax
 * draws nothing before the load event, which waits for it. */
{
  const start = () => document.querySelectorAll('script[type="text/x-book-after-ready"]').forEach((tag) => {
    const script = document.createElement("script");
    script.src = tag.src;
    tag.replaceWith(script);
  });
  // (started during DOMContentLoaded, so that the load event waits for it)
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
}

/* A formula not yet drawn can take the keyboard focus (each formula is focusable); drawing it
 * replaces its <mjx-container>, which would drop the focus to the page. It moves to the drawn
 * formula. */
document.addEventListener("focusin", (e) => {
  const undrawn = e.target;
  if (!(undrawn instanceof Element) || !undrawn.matches("mjx-container")
      || undrawn.querySelector("mjx-lazy") === null) return;
  const box = undrawn.parentNode;
  const observer = new MutationObserver(() => {
    if (undrawn.isConnected) return;
    observer.disconnect();
    const drawn = box.querySelector("mjx-container");
    if (drawn !== null && document.activeElement === document.body) drawn.focus({ preventScroll: true });
  });
  observer.observe(box, { childList: true, subtree: true });
  // A focusout while the formula stays in the page: the focus moved on, nothing to hand over.
  // (Chrome also fires one on the formula being replaced, while it is still in the page: hence the
  // check after the current task's DOM changes, not in the event.)
  undrawn.addEventListener("focusout", () => queueMicrotask(() => {
    if (undrawn.isConnected) observer.disconnect();
  }), { once: true });
});

/* A formula wider than its box scrolls inside it (accessible.css). This marks each one that does
 * with the class "formula-scrolls", which draws a shadow at the edge that hides more of it: phones
 * and many laptops show no scrollbar until one scrolls. The marks follow the box's width (a
 * rotated phone, a resized window) and MathJax drawing a formula as it scrolls into view (it draws
 * lazily, replacing what is inside div.math and span.math). Formulas that fit get no mark and no
 * shadow. */
(() => {
  // Observed: the boxes Sphinx wrote, which stay. Marked: the box that scrolls (accessible.css).
  const BOXES = "div.math, span.math";
  const scroller = (box) => (box.matches("div.math") ? box.querySelector("mjx-container") : box);
  // The drawing's own width, not scrollWidth: a glyph's ink may stick out of its <svg> by a few
  // pixels (an arrow's head, an italic f), which makes a formula that fits scrollable by as much.
  const wider = (box) => {
    const svg = box.querySelector("svg");
    return svg !== null && svg.getBoundingClientRect().width > box.clientWidth + 1;
  };
  const mark = (box) => {
    const s = scroller(box);
    if (s !== null) s.classList.toggle("formula-scrolls", wider(s));
  };
  // A box is marked when the observer first sees it laid out, and again at each change of size:
  // measuring every box at once would make the browser lay out the whole chapter, which it skips
  // below the screen (_css/render.css).
  const start = () => {
    const observer = new ResizeObserver((entries) => entries.forEach((e) => mark(e.target)));
    document.querySelectorAll(BOXES).forEach((box) => observer.observe(box));
  };
  window.addEventListener("load", () => {
    const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
    (typeset || Promise.resolve()).then(start);
  });
})();
