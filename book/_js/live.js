/* The book's models in the reader's browser (book/live.py writes the boxes and the files; docs/book.md).
 *
 * A box <div class="live"> takes an English sentence, and the chapter's Transformer, exported to ONNX
 * from the weights the chapter loads, translates it with ONNX Runtime Web (WebAssembly, one thread):
 * greedy decoding, one graph run per token, as attnlib.greedy_decode; chapter 4's Bahdanau model runs
 * its encoder graph once, then its decoder-step graph per token, carrying the GRU state. Nothing loads until the reader
 * first uses the box. The runtime and the model come as classic scripts (gzip, base64), which a page
 * opened from file:// can load, where it could fetch no file and import no module. */
(function () {
  "use strict";
  var runtime = null; // the promise of ONNX Runtime Web, once started
  var models = {}; // model name -> the promise of {ort, session, meta}, once started

  function words(box) {
    return JSON.parse(box.querySelector("script.live-words").textContent);
  }
  function fmt(text, values) {
    return text.replace(/\{(\w+)\}/g, function (_, k) { return values[k] === undefined ? "" : values[k]; });
  }
  function script(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }
  function gunzip(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).arrayBuffer().then(function (buf) { return new Uint8Array(buf); });
  }

  function loadRuntime(base) {
    if (runtime) return runtime;
    runtime = Promise.all([script(base + "ort.wasm.min.js"), script(base + "ort-runtime.js")]).then(function () {
      var rt = window.ATTN_LIVE.runtime;
      return gunzip(rt.wasm).then(function (wasm) {
        var ort = window.ort;
        ort.env.wasm.numThreads = 1; // no cross-origin isolation on file:// or a plain server
        ort.env.wasm.proxy = false;
        ort.env.wasm.wasmBinary = wasm;
        ort.env.wasm.wasmPaths = {mjs: URL.createObjectURL(new Blob([rt.glue], {type: "text/javascript"}))};
        return ort;
      });
    });
    runtime.catch(function () { runtime = null; }); // a later try starts again
    return runtime;
  }

  function load(base, name) {
    if (models[name]) return models[name];
    models[name] = Promise.all([loadRuntime(base), script(base + name + ".js")]).then(function (got) {
      var ort = got[0], meta = window.ATTN_LIVE[name];
      var parts = meta.arch === "gru" ? ["encoder", "step"] : ["onnx"];
      return Promise.all(parts.map(function (part) {
        return gunzip(meta[part]).then(function (bytes) {
          return ort.InferenceSession.create(bytes, {executionProviders: ["wasm"]});
        });
      })).then(function (sessions) {
        meta.index = {};
        (meta.src_vocab || meta.vocab).forEach(function (t, i) { meta.index[t] = i; });
        var model = {ort: ort, meta: meta, name: name};
        parts.forEach(function (part, i) { model[part === "onnx" ? "session" : part] = sessions[i]; });
        return model;
      });
    });
    models[name].catch(function () { delete models[name]; });
    return models[name];
  }

  /* The book's data: lower case, a space before , . ! ? (d2l's preprocessing), split on spaces. */
  function tokenize(text) {
    text = text.replace(/[\u202f\u00a0]/g, " ").toLowerCase();
    var out = "";
    for (var i = 0; i < text.length; i++) {
      var c = text[i];
      out += (i > 0 && ",.!?".indexOf(c) >= 0 && text[i - 1] !== " ") ? " " + c : c;
    }
    return out.split(/\s+/).filter(function (t) { return t; });
  }
  function nonLatin(text) {
    try { return /(?=\p{L})(?!\p{Script=Latin})./u.test(text); } catch (e) { return /[^\u0000-\u024f\s]/.test(text); }
  }

  function argmax(data, start, n) {
    var best = 0;
    for (var j = 1; j < n; j++) if (data[start + j] > data[start + best]) best = j;
    return best;
  }

  /* Chapter 4's Bahdanau model, as greedy_decode steps its decoder: the encoder once on the source
   * (unpadded, so its GRUs read just these tokens), then one decoder step per emitted token with the
   * previous token and the GRU state; each step's attention weights are one row of the map. */
  async function translateGRU(model, tokens) {
    var ort = model.ort, m = model.meta, S = m.steps, V = m.tgt_vocab.length;
    var srcIds = tokens.map(function (t) { return t in m.index ? m.index[t] : m.unk; }).concat([m.eos]);
    var n = srcIds.length;
    var enc = await model.encoder.run({src: new ort.Tensor("int64", BigInt64Array.from(srcIds.map(BigInt)), [1, n])});
    var hidden = enc.hidden, out = [], rows = [];
    var y = m.bos;
    for (var step = 0; step < S; step++) {
      var r = await model.step.run({y: new ort.Tensor("int64", BigInt64Array.from([BigInt(y)]), [1, 1]),
                                    hidden: hidden, enc_outputs: enc.enc_outputs});
      var next = argmax(r.logits.data, 0, V);
      out.push(next);
      rows.push(r.weights.data);
      hidden = r.hidden_out;
      if (next === m.eos) break;
      y = next;
    }
    var finished = out[out.length - 1] === m.eos;
    var body = finished ? out.slice(0, -1) : out;
    var words = body.map(function (i) { return m.tgt_vocab[i]; });
    var cross = new Float32Array(rows.length * n);
    rows.forEach(function (row, i) { cross.set(row, i * n); });
    return {srcTokens: srcIds.map(function (i) { return m.src_vocab[i]; }), tokens: words, finished: finished,
            steps: out.length, labels: words.concat(finished ? ["<eos>"] : []), arch: "gru",
            maps: {cross: {dims: [1, 1, rows.length, n], data: cross}}};
  }

  async function translate(model, tokens) {
    if (model.meta.arch === "gru") return translateGRU(model, tokens);
    var ort = model.ort, m = model.meta, S = m.steps;
    var srcIds = tokens.map(function (t) { return t in m.index ? m.index[t] : m.unk; }).concat([m.eos]);
    var src = new BigInt64Array(S), tgt = new BigInt64Array(S);
    srcIds.forEach(function (id, i) { src[i] = BigInt(id); });
    tgt[0] = BigInt(m.bos);
    var feeds = {src: new ort.Tensor("int64", src, [1, S]),
                 src_valid_len: new ort.Tensor("int64", BigInt64Array.from([BigInt(srcIds.length)]), [1])};
    var out = [], result = null, V = m.tgt_vocab.length;
    for (var step = 0; step < S; step++) {
      feeds.tgt = new ort.Tensor("int64", tgt.slice(), [1, S]);
      result = await model.session.run(feeds);
      var next = argmax(result.logits.data, step * V, V);
      out.push(next);
      if (next === m.eos || step + 1 >= S) break;
      tgt[step + 1] = BigInt(next);
    }
    var finished = out[out.length - 1] === m.eos;
    var body = finished ? out.slice(0, -1) : out;
    var words = body.map(function (i) { return m.tgt_vocab[i]; });
    var srcTokens = srcIds.map(function (i) { return m.src_vocab[i]; });
    var tgtIn = ["<bos>"].concat(words).slice(0, out.length);
    return {srcTokens: srcTokens, tokens: words, finished: finished, steps: out.length,
            labels: words.concat(finished ? ["<eos>"] : []), tgtIn: tgtIn,
            maps: {enc_self: result.enc_self, dec_self: result.dec_self, cross: result.cross}};
  }

  /* One (queries, keys) matrix of weights (L, H, Q, K) for layer l and head h (from 0). */
  function matrix(tensor, l, h, rows, cols) {
    var d = tensor.dims, Q = d[2], K = d[3], base = (l * d[1] + h) * Q * K, m = [];
    for (var i = 0; i < rows; i++) {
      var row = [];
      for (var j = 0; j < cols; j++) row.push(tensor.data[base + i * K + j]);
      m.push(row);
    }
    return m;
  }

  function colour(v) { // white to the explorers' dark blue, by the weight in [0, 1]
    var a = [255, 255, 255], b = [8, 48, 107], t = Math.max(0, Math.min(1, v));
    return "rgb(" + a.map(function (x, k) { return Math.round(x + (b[k] - x) * t); }).join(",") + ")";
  }

  function svgEl(name, attrs) {
    var el = document.createElementNS("http://www.w3.org/2000/svg", name);
    for (var k in attrs) el.setAttribute(k, attrs[k]);
    return el;
  }

  function draw(box, w) {
    var r = box.liveResult;
    if (!r) return;
    var gru = r.arch === "gru"; // one attention: the decoder's over the source, one layer, one head
    ["kind", "layer", "head"].forEach(function (c) { box.querySelector("[data-live-control=" + c + "]").disabled = gru; });
    var kind = gru ? "cross" : box.querySelector("[data-live-control=kind]").value;
    var l = gru ? 0 : +box.querySelector("[data-live-control=layer]").value;
    var h = gru ? 0 : +box.querySelector("[data-live-control=head]").value;
    var rowsL = {enc_self: r.srcTokens, dec_self: r.tgtIn, cross: r.labels}[kind];
    var colsL = {enc_self: r.srcTokens, dec_self: r.tgtIn, cross: r.srcTokens}[kind];
    var m = matrix(r.maps[kind], l, h, rowsL.length, colsL.length);
    var title = gru ? w.gru_title : fmt(w.title, {kind: w[kind], layer: l + 1, head: h + 1});
    paint(box, w, title, rowsL, colsL, m);
  }

  /* A heatmap of m (rows x cols, weights in [0, 1]) with its labels, title and the readout under the
   * pointer or the arrow keys. */
  function paint(box, w, title, rowsL, colsL, m) {
    var cell = 28, left = 8 + 7.5 * Math.max.apply(null, rowsL.map(function (s) { return s.length; }));
    var top = 8 + 7.5 * Math.max.apply(null, colsL.map(function (s) { return s.length; }));
    var W = left + cell * colsL.length + 4, H = top + cell * rowsL.length + 4;
    var svg = svgEl("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
                            "aria-label": title, "class": "live-map"});
    colsL.forEach(function (t, j) {
      var x = left + cell * (j + 0.5), tx = svgEl("text", {x: x, y: top - 6, transform: "rotate(-60 " + x + " " + (top - 6) + ")"});
      tx.textContent = t; svg.appendChild(tx);
    });
    rowsL.forEach(function (t, i) {
      var tx = svgEl("text", {x: left - 6, y: top + cell * (i + 0.5) + 4, "text-anchor": "end"});
      tx.textContent = t; svg.appendChild(tx);
      m[i].forEach(function (v, j) {
        var rect = svgEl("rect", {x: left + cell * j, y: top + cell * i, width: cell - 1, height: cell - 1,
                                  fill: colour(v), "data-i": i, "data-j": j});
        svg.appendChild(rect);
      });
    });
    var cursor = svgEl("rect", {"class": "live-cursor", width: cell - 1, height: cell - 1, fill: "none", visibility: "hidden"});
    svg.appendChild(cursor);
    var holder = box.querySelector(".live-heat");
    holder.replaceChildren(svg);
    box.querySelector(".live-maptitle").textContent = title;
    var readout = box.querySelector(".live-readout");
    function show(i, j) {
      box.liveCell = [i, j];
      cursor.setAttribute("x", left + cell * j); cursor.setAttribute("y", top + cell * i);
      cursor.setAttribute("visibility", "visible");
      readout.textContent = fmt(w.readout, {query: rowsL[i], key: colsL[j], w: m[i][j].toFixed(3)});
    }
    svg.addEventListener("mousemove", function (e) {
      var t = e.target;
      if (t.hasAttribute && t.hasAttribute("data-i")) show(+t.getAttribute("data-i"), +t.getAttribute("data-j"));
    });
    holder.onkeydown = function (e) {
      var c = box.liveCell || [0, 0], moves = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]};
      if (!(e.key in moves)) return;
      e.preventDefault();
      show(Math.max(0, Math.min(rowsL.length - 1, c[0] + moves[e.key][0])),
           Math.max(0, Math.min(colsL.length - 1, c[1] + moves[e.key][1])));
    };
    box.liveCell = null;
    readout.textContent = w.pointer;
  }

  /* What both boxes share: their parts, their status line, and the first use, which loads the model
   * (once; a page without WebAssembly says so and disables the box instead). */
  function parts(box) {
    var p = {w: words(box), base: box.getAttribute("data-base"), form: box.querySelector("form"),
             input: box.querySelector("input[type=text]"), status: box.querySelector(".live-status"),
             output: box.querySelector(".live-output"), note: box.querySelector(".live-input-note")};
    p.state = function (s, text) { box.setAttribute("data-state", s); p.status.textContent = text; };
    p.supported = typeof WebAssembly === "object" && typeof DecompressionStream !== "undefined" &&
      typeof BigInt64Array !== "undefined";
    if (!p.supported) {
      p.state("unsupported", p.w.unsupported);
      p.form.querySelectorAll("input, button").forEach(function (el) { el.disabled = true; });
    }
    p.start = function (name, ready) { // a promise of the model; the status says loading, ready or why not
      if (box.getAttribute("data-state") === "idle") p.state("loading", p.w.loading);
      return load(p.base, name).then(function (model) {
        if (box.getAttribute("data-state") === "loading") p.state("ready", ready);
        return model;
      }, function (err) {
        p.state("error", fmt(p.w.error, {why: err && err.message ? err.message : String(err)}));
        throw err;
      });
    };
    return p;
  }

  function setup(box) {
    var p = parts(box), w = p.w, form = p.form, input = p.input, output = p.output, note = p.note;
    var state = p.state;
    if (!p.supported) return;
    var choice = box.querySelector("[data-live-control=model]");
    function start() { return p.start(choice.value, w.ready); }
    input.addEventListener("focus", function () { start().catch(function () {}); }, {once: true});
    box.querySelectorAll("select").forEach(function (s) {
      if (s !== choice) s.addEventListener("change", function () { draw(box, w); });
    });
    choice.addEventListener("change", function () { // the same sentence, through the other model
      if (box.liveResult && input.value.trim()) form.requestSubmit();
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var text = input.value.trim(), tokens = tokenize(text), notes = [];
      if (!tokens.length) { note.textContent = ""; state("done", w.empty); return; }
      var t0 = performance.now();
      state("loading", w.loading);
      start().then(function (model) {
        var m = model.meta, max = m.steps - 1, unknown = tokens.filter(function (t) { return !(t in m.index); });
        if (nonLatin(text)) notes.push(w.nonlatin);
        if (tokens.length > max) { notes.push(fmt(w.truncated, {max: max, n: tokens.length})); tokens = tokens.slice(0, max); }
        unknown = tokens.filter(function (t) { return !(t in m.index); });
        if (unknown.length) notes.push(fmt(w.unknown, {words: unknown.join(" ")}));
        note.textContent = notes.join(" ");
        if (unknown.length === tokens.length) { state("done", w.allunknown); return null; }
        state("running", w.running);
        var t1 = performance.now();
        return translate(model, tokens).then(function (r) {
          r.ms = performance.now() - t1; r.totalMs = performance.now() - t0; r.model = model.name;
          box.liveResult = r;
          output.textContent = fmt(w.output, {src: r.srcTokens.slice(0, -1).join(" "), out: r.tokens.join(" ")}) +
            (r.finished ? "" : " " + w.unfinished);
          draw(box, w);
          state("done", fmt(w.done, {ms: Math.round(r.ms)}));
        });
      }).catch(function (err) {
        state("error", fmt(w.error, {why: err && err.message ? err.message : String(err)}));
      });
    });
    state("idle", w.idle);
  }

  /* Chapter 8's character language model: the reader's prompt, continued one character per graph
   * run, drawn from softmax(logits / temperature) (the arg-max at temperature 0, as attnlib.lm.sample)
   * with uniform numbers from a seeded generator, so that the same seed gives the same text. */
  function uniforms(seed) { // mulberry32: 32-bit state, uniform numbers in [0, 1)
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function probabilities(logits, start, n, temperature) { // softmax(z / T) in double precision
    var max = -Infinity, p = new Array(n), sum = 0;
    for (var j = 0; j < n; j++) max = Math.max(max, logits[start + j]);
    for (j = 0; j < n; j++) { p[j] = Math.exp((logits[start + j] - max) / temperature); sum += p[j]; }
    for (j = 0; j < n; j++) p[j] /= sum;
    return p;
  }
  function draw1(p, u) { // the first index whose cumulative probability passes u
    var c = 0;
    for (var j = 0; j < p.length; j++) { c += p[j]; if (u < c) return j; }
    return p.length - 1;
  }

  async function generate(model, ids, temperature, seed) {
    var ort = model.ort, m = model.meta, T = m.steps, V = m.vocab.length, next = uniforms(seed);
    var drawn = [], first = null, result = null, used = [];
    ids = ids.slice();
    while (ids.length < T) {
      var padded = new BigInt64Array(T);
      ids.forEach(function (id, i) { padded[i] = BigInt(id); });
      result = await model.session.run({ids: new ort.Tensor("int64", padded, [1, T])});
      var at = (ids.length - 1) * V, id;
      if (temperature === 0) id = argmax(result.logits.data, at, V);
      else {
        var p = probabilities(result.logits.data, at, V, temperature), u = next();
        if (first === null) first = p;
        used.push(u);
        id = draw1(p, u);
      }
      drawn.push(id);
      if (id === m.eos) break;
      ids.push(id);
    }
    return {ids: ids, drawn: drawn, uniforms: used, firstProbs: first, weights: result.weights,
            query: ids.length - (drawn[drawn.length - 1] === m.eos ? 1 : 2)};
  }

  function label(c) { return c === " " ? "_" : c; }

  function drawLM(box, w) {
    var r = box.liveResult, m = r.meta, d = r.weights.dims, q = r.query;
    var cols = r.ids.slice(0, q + 1).map(function (i) { return label(m.vocab[i]); });
    var rows = [], mat = [];
    for (var l = 0; l < d[0]; l++) {
      for (var h = 0; h < d[1]; h++) {
        rows.push(fmt(w.lm_row, {layer: l + 1, head: h + 1}));
        mat.push(matrix(r.weights, l, h, q + 1, q + 1)[q]);
      }
    }
    var last = r.drawn[r.drawn.length - 1];
    paint(box, w, fmt(w.lm_title, {c: label(m.vocab[last])}), rows, cols, mat);
  }

  function setupLM(box) {
    var p = parts(box), w = p.w, form = p.form, input = p.input, output = p.output, note = p.note;
    var state = p.state;
    var temp = box.querySelector("[data-live-control=temperature]"), seed = box.querySelector("[data-live-control=seed]");
    var shown = box.querySelector("output");
    if (!p.supported) return;
    temp.addEventListener("input", function () { shown.textContent = (+temp.value).toFixed(1); });
    function start() { return p.start("char_lm", w.lm_ready); }
    input.addEventListener("focus", function () { start().catch(function () {}); }, {once: true});
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var t0 = performance.now();
      state("loading", w.loading);
      start().then(function (model) {
        var m = model.meta, notes = [], raw = input.value.replace(/^\s+/, "");
        // the book's data: lower case, a space before , . ! ? (as the chapter's sentences)
        var text = "", low = raw.replace(/[\u202f\u00a0]/g, " ").toLowerCase();
        for (var i = 0; i < low.length; i++) {
          text += (i > 0 && ",.!?".indexOf(low[i]) >= 0 && low[i - 1] !== " ") ? " " + low[i] : low[i];
        }
        var chars = Array.from(text), max = m.steps - 2;
        if (nonLatin(text)) notes.push(w.nonlatin);
        if (chars.length > max) { notes.push(fmt(w.lm_truncated, {max: max, n: chars.length})); chars = chars.slice(0, max); }
        var unknown = chars.filter(function (c) { return !(c in m.index); });
        if (unknown.length) notes.push(fmt(w.lm_unknown, {chars: unknown.join(" ")}));
        note.textContent = notes.join(" ");
        var ids = [m.bos].concat(chars.map(function (c) { return c in m.index ? m.index[c] : m.unk; }));
        var temperature = +temp.value, s = Math.max(0, Math.floor(+seed.value || 0));
        state("running", w.lm_running);
        var t1 = performance.now();
        return generate(model, ids, temperature, s).then(function (r) {
          r.ms = performance.now() - t1; r.totalMs = performance.now() - t0; r.model = "char_lm";
          r.meta = m; r.prompt = ids; r.temperature = temperature; r.seed = s;
          var promptText = ids.slice(1).map(function (i) { return m.vocab[i]; }).join("");
          var more = r.drawn.filter(function (i) { return i !== m.eos; }).map(function (i) { return m.vocab[i]; }).join("");
          r.text = promptText + more;
          box.liveResult = r;
          var strong = document.createElement("strong");
          strong.textContent = more;
          output.replaceChildren(document.createTextNode(promptText), strong,
                                 document.createTextNode(r.drawn[r.drawn.length - 1] === m.eos ? "" : " " + w.lm_unfinished));
          drawLM(box, w);
          state("done", fmt(w.lm_done, {ms: Math.round(r.ms), n: r.drawn.length}));
        });
      }).catch(function (err) {
        state("error", fmt(w.error, {why: err && err.message ? err.message : String(err)}));
      });
    });
    state("idle", w.idle);
  }

  function init() {
    document.querySelectorAll("div.live").forEach(function (box) {
      (box.classList.contains("live-lm") ? setupLM : setup)(box);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
