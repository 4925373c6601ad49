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
  const start = () => {
    const boxes = [...document.querySelectorAll(BOXES)];
    const observer = new ResizeObserver((entries) => entries.forEach((e) => mark(e.target)));
    boxes.forEach((box) => { mark(box); observer.observe(box); });
  };
  window.addEventListener("load", () => {
    const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
    (typeset || Promise.resolve()).then(start);
  });
})();
