// The chapters' explorers (book/widgets.py): the controls of a widget, working with no kernel.
// Each state's figures were drawn by the widget's own function when the notebook ran
// (attnlib.explorer); moving a control swaps in that state's images, text alternative and printed
// text. Pointing at, or focusing, a cell of a heatmap says its row, column and value.
(() => {
  "use strict";

  const fill = (template, values) => template.replace(/\{(\w+)\}/g, (m, k) => (k in values ? values[k] : m));
  // A sentence whose last value already ends in a full stop ("go .") gets no second one ("go ..").
  const sentence = (template, values) => {
    const text = fill(template, values);
    return /[.。]$/.test(String(values.settings || "")) && /\{settings\}[.。]$/.test(template)
      ? text.slice(0, -1) : text;
  };

  function setUp(box) {
    const data = JSON.parse(box.querySelector("script.explorer-data").textContent);
    const cell = box.closest(".cell_output") || box.parentElement;
    const images = Array.from(cell.querySelectorAll("img"));
    const textBox = cell.querySelector("pre.explorer-text");
    const status = box.querySelector(".explorer-status");
    const inputs = Array.from(box.querySelectorAll("[data-control]"));
    const firstAlt = images.map((img) => img.alt);
    let first = null;
    box.explorer = data;

    const indices = () => inputs.map((el) => (el.type === "checkbox" ? (el.checked ? 1 : 0) : Number(el.value)));
    const settings = (idx) => data.controls.map((c, i) => `${c.label} = ${c.labels[idx[i]]}`)
      .join(data.words["; "] || "; ");
    // The cell's caption says what the figure shows: the chapter's own caption for the state the
    // page opens with, the current setting and the figure's titles after any move.
    const caption = cell.querySelector("figcaption .caption-text");
    const firstCaption = caption ? caption.textContent : "";
    const stateOf = (idx) => {
      let k = 0;
      data.controls.forEach((c, i) => { k = k * c.labels.length + idx[i]; });
      return data.states[k];
    };

    function show() {
      const idx = indices();
      inputs.forEach((el, i) => {
        if (el.type === "range") {
          const label = data.controls[i].labels[idx[i]];
          el.setAttribute("aria-valuetext", label);
          const out = el.nextElementSibling;
          if (out) out.textContent = label;
        }
      });
      const viewIndex = stateOf(idx);
      if (first === null) first = viewIndex;
      const view = data.views[viewIndex];
      const said = settings(idx);
      view.figures.forEach((fig, i) => {
        const img = images[i];
        if (!img) return;
        img.src = data.base + fig.img + ".webp";
        img.alt = viewIndex === first && firstAlt[i]
          ? firstAlt[i] : fill(data.words["{settings}: {about}"], { settings: said, about: fig.about });
        img.dataset.view = String(viewIndex);
        img.dataset.figure = String(i);
      });
      if (textBox) textBox.textContent = view.text;
      if (caption) {
        caption.textContent = viewIndex === first ? firstCaption : sentence(data.words["Shown: {settings}."], {
          settings: [said, ...view.figures.map((f) => f.about).filter(Boolean)].join(data.words["; "] || "; "),
        });
      }
      status.textContent = sentence(data.words["Showing {settings}."], { settings: said });
      box.dataset.state = String(viewIndex);
      showHeads(idx);
    }

    // A head is one click away: where a control is named "head", a row of buttons, one per head,
    // each showing that head's figure for the other controls' values (BertViz's head view).
    const headIndex = data.controls.findIndex((c) => c.name === "head" && c.kind === "slider");
    let headButtons = [];
    if (headIndex >= 0) {
      const c = data.controls[headIndex];
      const strip = document.createElement("div");
      strip.className = "explorer-heads";
      strip.setAttribute("role", "group");
      strip.setAttribute("aria-label", fill(data.words["Choose a {control}"], { control: c.label }));
      headButtons = c.labels.map((label, j) => {
        const button = document.createElement("button");
        button.type = "button";
        button.dataset.head = String(j);
        const thumb = document.createElement("img");
        thumb.alt = "";
        thumb.loading = "lazy";
        const name = document.createElement("span");
        name.textContent = `${c.label} ${label}`;
        button.append(thumb, name);
        button.addEventListener("click", () => {
          const input = inputs[headIndex];
          input.value = String(j);
          input.dispatchEvent(new Event("input", { bubbles: true }));
        });
        strip.appendChild(button);
        return button;
      });
      status.before(strip);
    }
    function showHeads(idx) {
      headButtons.forEach((button, j) => {
        const other = idx.slice();
        other[headIndex] = j;
        const fig = data.views[stateOf(other)].figures[0];
        const thumb = button.querySelector("img");
        if (fig && thumb.getAttribute("src") !== data.base + fig.img + ".webp") thumb.src = data.base + fig.img + ".webp";
        button.setAttribute("aria-pressed", String(j === idx[headIndex]));
      });
    }

    inputs.forEach((el) => el.addEventListener("input", show));
    inputs.forEach((el) => el.addEventListener("change", show));
    // The state the page was built with; the browser may give the controls other values (a page
    // restored by Back or Forward, or a reload, keeps what the reader chose): show what they say.
    first = data.states[data.first];
    images.forEach((img, i) => {
      img.dataset.view = String(first);
      img.dataset.figure = String(i);
      heatmapPointer(img, data);
    });
    box.dataset.state = String(first);
    // A figure whose heatmap cells are too small to point at (chapter 9's masks: 36 columns in a
    // fifth of the figure) can be enlarged: it then scrolls sideways in its own box, its cells at
    // least 14 CSS pixels wide, and the readout still names the cell under the finger.
    const smallest = Math.min(...data.views.flatMap((v) => v.figures.flatMap(
      (f) => (f.heat || []).map((h) => (h.box[2] - h.box[0]) / h.n[1]))));
    if (smallest < 0.03) {
      const zoom = document.createElement("button");
      zoom.type = "button";
      zoom.className = "explorer-zoom-button";
      zoom.textContent = data.words["Enlarge the figure"];
      zoom.setAttribute("aria-pressed", "false");
      zoom.addEventListener("click", () => {
        const on = zoom.getAttribute("aria-pressed") !== "true";
        zoom.setAttribute("aria-pressed", String(on));
        cell.querySelectorAll(".explorer-figure").forEach((wrap) => {
          const pane = wrap.parentElement;
          pane.classList.toggle("explorer-zoomed", on);
          wrap.style.width = on ? `${Math.ceil(14 / smallest)}px` : "";
        });
      });
      status.before(zoom);
    }
    // Controls the browser restored to other values than the page's (Back, Forward, a reload)
    // are shown as they say, at once and whenever the page is shown again.
    const sync = () => { if (Number(box.dataset.state) !== stateOf(indices())) show(); };
    showHeads(indices());
    sync();
    window.addEventListener("pageshow", sync);
    box.dataset.ready = "true";
  }

  // Hover and keyboard focus on a heatmap's cells.
  function heatmapPointer(img, data) {
    const wrap = document.createElement("span");
    wrap.className = "explorer-figure";
    img.parentNode.insertBefore(wrap, img);
    wrap.appendChild(img);
    const tip = document.createElement("span");
    tip.className = "explorer-tip";
    tip.setAttribute("role", "status");
    tip.hidden = true;
    const mark = document.createElement("span");
    mark.className = "explorer-mark";
    mark.hidden = true;
    wrap.append(mark, tip);
    let cursor = null; // [heatmap, row, col] chosen by the keyboard

    const heats = () => data.views[Number(img.dataset.view)].figures[Number(img.dataset.figure)]?.heat || [];
    const updateFocusable = () => {
      if (heats().length) {
        img.tabIndex = 0;
        img.setAttribute("aria-describedby", tip.id || (tip.id = `tip-${Math.random().toString(36).slice(2)}`));
      } else {
        img.removeAttribute("tabindex");
      }
    };
    updateFocusable();
    new MutationObserver(() => { updateFocusable(); hide(); }).observe(img, { attributes: true, attributeFilter: ["src"] });

    // The axes' own names in the book's words: "query"/"key" wherever an axis holds queries or
    // keys (the chapters write "Queries", "queries", "keys; cache keeps 12"), translated on the
    // Chinese site. An axis name is used only where both axes have one (or the rows are queries,
    // whose columns are keys); an image's lone axis label ("test digit") does not name its rows.
    const w = data.words;
    const axisName = (label) => {
      const name = String(label || "").trim();
      if (/^quer(y|ies)\b/i.test(name)) return w.query;
      if (/^keys?\b/i.test(name)) return w.key;
      return w[name] || name;
    };
    function describe(h, r, c) {
      const v = h.v[r * h.n[1] + c];
      // A cell the axis names (a token, a tick label) by that name, any other by its index from 0,
      // as matplotlib's axes count (chapter 9's cache rows label only their first and last cell).
      const at = (names, i) => names?.[i] ?? String(i);
      const row = at(h.rows, r);
      const col = at(h.cols, c);
      let rowName = axisName(h.lab[0]);
      let colName = axisName(h.lab[1]);
      if (rowName === w.query && !colName) colName = w.key;
      if (!rowName || !colName) { rowName = w.row; colName = w.column; }
      const valueName = axisName(h.lab[2]) || w.value;
      const head = h.title ? `${h.title}: ` : "";
      return `${head}${rowName} ${row}, ${colName} ${col}: ${valueName} ${v === null ? "–" : v}`;
    }
    // The readout sits inside the figure's width, below the cell it names (above it when the cell
    // is near the figure's foot), so it never covers that cell nor widens the page.
    function place(cellBox) {
      const width = wrap.clientWidth;
      const height = wrap.clientHeight;
      tip.style.maxWidth = `${Math.max(width, 160)}px`;
      tip.style.left = "0px";
      tip.style.top = "0px";
      const tw = tip.offsetWidth;
      const th = tip.offsetHeight;
      const [left, top, right, bottom] = cellBox.map((f, i) => f * (i % 2 ? height : width));
      const x = Math.max(0, Math.min(width - tw, (left + right) / 2 - tw / 2));
      const below = bottom + 4 + th <= height || top - 4 - th < 0;
      tip.style.left = `${x}px`;
      tip.style.top = `${below ? bottom + 4 : top - 4 - th}px`;
    }
    function showCell(k, r, c) {
      const h = heats()[k];
      if (!h) return;
      const [x0, y0, x1, y1] = h.box;
      const cw = (x1 - x0) / h.n[1];
      const ch = (y1 - y0) / h.n[0];
      Object.assign(mark.style, {
        left: `${100 * (x0 + c * cw)}%`, top: `${100 * (y0 + r * ch)}%`,
        width: `${100 * cw}%`, height: `${100 * ch}%`,
      });
      mark.hidden = false;
      tip.textContent = describe(h, r, c);
      tip.hidden = false;
      place([x0 + c * cw, y0 + r * ch, x0 + (c + 1) * cw, y0 + (r + 1) * ch]);
      shown = true;
    }
    let shown = false;
    function hide() { mark.hidden = true; tip.hidden = true; shown = false; }
    // Escape dismisses the readout (WCAG 1.4.13), under the pointer or the keyboard's cursor.
    document.addEventListener("keydown", (e) => { if (e.key === "Escape" && shown) hide(); });
    function cellAt(fx, fy) {
      const hs = heats();
      for (let k = 0; k < hs.length; k++) {
        const [x0, y0, x1, y1] = hs[k].box;
        if (fx >= x0 && fx < x1 && fy >= y0 && fy < y1) {
          return [k, Math.floor((fy - y0) / (y1 - y0) * hs[k].n[0]), Math.floor((fx - x0) / (x1 - x0) * hs[k].n[1])];
        }
      }
      return null;
    }
    img.addEventListener("mousemove", (e) => {
      const rect = img.getBoundingClientRect();
      const hit = cellAt((e.clientX - rect.left) / rect.width, (e.clientY - rect.top) / rect.height);
      if (hit) showCell(...hit); else hide();
    });
    img.addEventListener("click", (e) => {
      const rect = img.getBoundingClientRect();
      const hit = cellAt((e.clientX - rect.left) / rect.width, (e.clientY - rect.top) / rect.height);
      if (hit) showCell(...hit); else hide();
    });
    img.addEventListener("mouseleave", () => { if (cursor) showCell(...cursor); else hide(); });
    img.addEventListener("focus", () => {
      if (!heats().length) return;
      cursor = cursor && heats()[cursor[0]] ? cursor : [0, 0, 0];
      showCell(...cursor);
    });
    img.addEventListener("blur", () => { cursor = null; hide(); });
    img.addEventListener("keydown", (e) => {
      const hs = heats();
      if (!cursor || !hs.length) return;
      let [k, r, c] = cursor;
      const move = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
      if (move) {
        r += move[0]; c += move[1];
      } else if (e.key === "PageDown" || e.key === "PageUp") {
        k = (k + (e.key === "PageDown" ? 1 : hs.length - 1)) % hs.length; // the next heatmap
      } else {
        return;
      }
      e.preventDefault();
      const n = hs[k].n;
      cursor = [k, Math.max(0, Math.min(n[0] - 1, r)), Math.max(0, Math.min(n[1] - 1, c))];
      showCell(...cursor);
    });
  }

  const start = () => {
    document.querySelectorAll(".explorer").forEach(setUp);
    // When the page's explorers became operable (the site's browser test reports it).
    document.documentElement.dataset.explorersReady = String(Math.round(performance.now()));
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
