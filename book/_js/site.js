// The book's additions to the theme's pages (docs/book.md): diagrams open full size with one tap,
// switching language keeps the reader's section, Back returns to the paragraph the reader left, and
// the search finds Chinese compound terms typed without spaces, also from a site opened from disk.
(() => {
  "use strict";

  const words = () => window.BOOK_WORDS || {};
  const say = (text) => words()[text] || text;

  // ---------------------------------------------------------------- search
  // Sphinx's search looks each query word up in the index, whose Chinese words jieba cut out of the
  // pages (book/build.py gives it the glossary's terms as a dictionary). A reader types a Chinese
  // phrase without spaces ("旋转位置编码"): it is cut here into the index's longest words, as jieba
  // cut the pages. A query word the index holds whole is kept whole.
  const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]/;
  const defaultSplit = (query) => query
    .split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)
    .filter((term) => term);
  const indexed = () => {
    const index = typeof Search !== "undefined" ? Search._index : null; // eslint-disable-line no-undef
    return index ? (t) => t in index.terms || t in index.titleterms : null;
  };
  function segment(word, has) {
    if (!has || !CJK.test(word) || has(word.toLowerCase())) return [word];
    const pieces = [];
    // runs of Chinese characters are cut; anything else in the word stays as it was typed
    for (const run of word.match(/[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/g)) {
      if (!CJK.test(run)) { pieces.push(run); continue; }
      let i = 0;
      while (i < run.length) {
        let len = Math.min(8, run.length - i);
        while (len > 1 && !has(run.slice(i, i + len))) len -= 1;
        if (len > 1) pieces.push(run.slice(i, i + len)); // a lone character is no index word
        i += len;
      }
    }
    return pieces.length ? pieces : [word];
  }
  window.splitQuery = (query) => defaultSplit(query).flatMap((word) => segment(word, indexed()));

  // A result's excerpt is read from the page's text (Sphinx's Search.htmlToText, on the page it
  // fetched, where MathJax has not run): that text held the page's header and footer (the download
  // menu, the page's contents for print, "Previous"/"Next"), the code cells and every formula's
  // TeX. The excerpt is read from the article's prose only, with each inline formula as plain
  // symbols ("x_1, …, x_n ∈ R^d") and each display formula left out.
  const SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", theta: "θ", lambda: "λ",
    mu: "μ", xi: "ξ", pi: "π", sigma: "σ", tau: "τ", phi: "φ", omega: "ω", Theta: "Θ",
    Sigma: "Σ", ell: "ℓ", in: "∈", times: "×", cdot: "·", ldots: "…", dots: "…", cdots: "⋯",
    vdots: "⋮", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈",
    infty: "∞", to: "→", rightarrow: "→", leftarrow: "←", sum: "∑", partial: "∂", top: "ᵀ",
    sqrt: "√", pm: "±", prod: "∏", propto: "∝", odot: "⊙", otimes: "⊗", circ: "∘", sim: "∼",
    lceil: "⌈", rceil: "⌉", lfloor: "⌊", rfloor: "⌋", langle: "⟨", rangle: "⟩", mid: "∣",
    nabla: "∇", setminus: "∖", varepsilon: "ε", imath: "i", lvert: "|", rvert: "|",
  };
  const plainFormula = (tex) => tex
    .replace(/^\s*\\\(|\\\)\s*$/g, "")
    .replace(/\\[tdc]?frac\{([^{}]*)\}\{([^{}]*)\}/g, "$1/$2")
    .replace(/\^\{?\\top\}?/g, "ᵀ")
    .replace(/\\([a-zA-Z]+)/g, (m, name) => (name in SYMBOLS ? SYMBOLS[name]
      : /^(math[a-z]+|text[a-z]*|operatorname|boldsymbol|big[lr]?|Big[lr]?|left|right|bar|hat|tilde|overleftarrow)$/.test(name) ? ""
        : name))
    .replace(/\\[,;:! ]/g, " ")
    .replace(/\\([{}_%#&$])/g, "$1")
    .replace(/[{}]/g, "")
    .replace(/\s+/g, " ")
    .trim();
  const EXCERPT_LEAVES_OUT = [".headerlink", "script", "style", ".language-switch", "div.math",
    ".cell_input", ".cell_output", ".explorer", "figure", "table", ".toctree-wrapper"];
  function excerptText(html, anchor) {
    const page = new DOMParser().parseFromString(html, "text/html");
    const article = page.querySelector("article.bd-article") || page.querySelector('[role="main"]');
    if (!article) return "";
    article.querySelectorAll(EXCERPT_LEAVES_OUT.join(", ")).forEach((e) => e.remove());
    article.querySelectorAll("span.math").forEach((e) => e.replaceWith(plainFormula(e.textContent)));
    // block elements end with a space, so that a heading and the paragraph after it do not run
    // together ("Summary" + "A head..." as "SummaryA head...")
    article.querySelectorAll("h1, h2, h3, h4, h5, h6, p, li, dt, dd").forEach((e) => e.append(" "));
    let part = null;
    try { part = anchor ? article.querySelector(anchor) : null; } catch (e) { /* not a selector */ }
    return (part || article).textContent.replace(/\s+/g, " ").trim();
  }
  const patchSearch = () => {
    if (typeof Search !== "undefined") Search.htmlToText = excerptText; // eslint-disable-line no-undef
  };
  patchSearch();
  window.bookExcerptText = excerptText; // for the site's browser test

  // A page opened from disk (file://) may not read the other pages (the browser's rule): the
  // results are listed without their excerpts, and the page says why.
  // (documentation_options.js declares it with const: a global name, not a property of window)
  if (location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false; // eslint-disable-line no-undef
  }

  const ready = (fn) => (document.readyState === "loading"
    ? document.addEventListener("DOMContentLoaded", fn) : fn());

  // ---------------------------------------------------------------- where the reader is
  // The block (paragraph, cell, heading, ...) at the top of the screen, under the pinned header:
  // Back returns to it, and the language link goes to its section.
  const TOP_BLOCKS = "article.bd-article section[id] > *:not(section)";
  // the block under the top line, found by what is drawn there (a block the browser has not laid
  // out, far from the screen, reports no true position)
  const blockAt = (line) => {
    const article = document.querySelector("article.bd-article");
    if (!article) return null; // the search page, the index
    const box = article.getBoundingClientRect();
    for (const dy of [1, 8, 24, 48, 96]) {
      const hit = document.elementFromPoint(box.left + box.width / 4, line + dy);
      const block = hit && hit.closest(TOP_BLOCKS);
      if (block) return block;
    }
    return null;
  };
  // the reader's top line: under the theme's header bars that stay pinned (sticky) at the top
  const pinnedBottom = () => Math.max(0, ...[...document.querySelectorAll(".bd-header, .bd-header-article")]
    .filter((e) => ["sticky", "fixed"].includes(getComputedStyle(e).position))
    .map((e) => e.offsetHeight)) + 1;

  // ---------------------------------------------------------------- Back
  // Back (or Forward) to a chapter returns to the paragraph or cell the reader left. The browser
  // restores a pixel offset, which lands elsewhere on a chapter: sections and cells far from the
  // screen take an estimated height until they are laid out (_css/render.css), and the estimates
  // then differ from the heights of the visit before (on a phone, 390 px, Back on chapter 7 landed
  // 2,800 px off). So the page keeps, in its history entry, the block at the top of the screen (its
  // section's anchor and its place among that section's children) and how far above the top it
  // began, and scrolls back to that block.
  ready(() => {
    if (!("scrollRestoration" in history) || !document.querySelector("article.bd-article")) return;
    history.scrollRestoration = "manual"; // kept in this page's history entry
    window.addEventListener("pagehide", () => {
      const line = pinnedBottom();
      const block = blockAt(line);
      if (!block) return;
      const section = block.parentElement;
      const place = { section: section.id, child: [...section.children].indexOf(block),
        offset: line - block.getBoundingClientRect().top };
      history.replaceState({ ...(history.state || {}), bookPlace: place }, "");
    });
    const place = history.state && history.state.bookPlace;
    const section = place && document.getElementById(place.section);
    const block = section && section.children[place.child];
    if (!block) return;
    // A block in a section the browser skips (content-visibility) reports a stale position: the
    // block and its sections are laid out while it is put back. The blocks around it take their
    // true heights only once laid out near the screen, and images, formulas and widgets arrive
    // later: the block is put back in place at each frame for 4 s, unless the reader scrolls first.
    const shown = [];
    for (let e = block; e && e.matches("article.bd-article *"); e = e.parentElement) {
      if (getComputedStyle(e).contentVisibility === "auto") {
        e.style.contentVisibility = "visible";
        shown.push(e);
      }
    }
    const until = performance.now() + 4000;
    let reader = false;
    ["wheel", "touchstart", "keydown", "mousedown"].forEach((type) =>
      window.addEventListener(type, () => { reader = true; }, { once: true, passive: true }));
    const settle = () => {
      const off = block.getBoundingClientRect().top - pinnedBottom() + place.offset;
      if (Math.abs(off) > 0.5) window.scrollBy(0, off);
      if (!reader && performance.now() < until) requestAnimationFrame(settle);
      else shown.forEach((e) => { e.style.contentVisibility = ""; });
    };
    settle();
  });

  ready(() => {
    patchSearch(); // searchtools.js may come after this script
    const results = document.getElementById("search-results");
    if (results && location.protocol === "file:") {
      const note = document.createElement("p");
      note.className = "search-file-note";
      note.textContent = say("Opened from disk, the search lists the pages without excerpts: a page read from a file may not read the others. Serve the site (python -m http.server -d build/book) to see them.");
      results.before(note);
    }

    // ---------------------------------------------------------------- language
    // The link to the other language goes to the section the reader is in: both editions give a
    // section the same anchor (book/_ext/language_switch.py).
    document.querySelectorAll(".language-switch a").forEach((link) => {
      const go = () => {
        const base = link.getAttribute("href").split("#")[0];
        const block = blockAt(pinnedBottom());
        const here = block ? block.parentElement.id : location.hash.slice(1);
        link.setAttribute("href", here ? `${base}#${here}` : base);
      };
      link.addEventListener("click", go);
      link.addEventListener("focus", go);
      link.addEventListener("mouseenter", go);
    });

    // ---------------------------------------------------------------- diagrams
    // A diagram opens full size in a dialog with one tap (or Enter); Escape, the close button or
    // the browser's Back closes it. Without JavaScript the link opens the drawing itself.
    const diagrams = document.querySelectorAll("figure.diagram img");
    if (!diagrams.length) return;
    const dialog = document.createElement("dialog");
    dialog.className = "diagram-viewer";
    dialog.setAttribute("aria-label", say("Diagram, full size"));
    const close = document.createElement("button");
    close.type = "button";
    close.className = "diagram-viewer-close";
    close.textContent = say("Close");
    const pane = document.createElement("div");
    pane.className = "diagram-viewer-pane";
    dialog.append(close, pane);
    document.body.appendChild(dialog);
    close.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      pane.replaceChildren(); // no image without a source left in the page
      if (history.state && history.state.diagram) history.back();
    });
    window.addEventListener("popstate", () => { if (dialog.open) dialog.close(); });
    diagrams.forEach((img) => {
      const link = document.createElement("a");
      link.className = "diagram-open";
      link.href = img.getAttribute("src");
      link.title = say("Open the diagram full size");
      img.replaceWith(link);
      link.appendChild(img);
      link.addEventListener("click", (e) => {
        e.preventDefault();
        const big = document.createElement("img");
        pane.replaceChildren(big);
        big.src = img.src;
        big.alt = img.alt;
        // at least the drawing's own size, and a fifth larger on a narrow screen, so that its
        // smallest labels are read at 9 CSS pixels or more
        const natural = img.naturalWidth || 720;
        big.style.width = `${Math.max(natural * 1.25, Math.min(window.innerWidth - 32, 1400))}px`;
        history.pushState({ diagram: true }, "");
        dialog.showModal();
        pane.scrollTo(0, 0);
      });
    });
  });
})();
