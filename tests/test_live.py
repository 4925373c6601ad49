"""The book's models in the reader's browser (book/live.py, book/_js/live.js, docs/book.md).

The export: ONNX Runtime (Python) runs the exported graph as the page does, greedily, and gets
``attnlib.greedy_decode``'s tokens and attention on sentences the explorers do not precompute; a
recipe that changed (attnlib's training code, so stale weights) is never exported. The page, in
headless Chromium from ``file://`` and over http, both editions: what the reader types is
translated into the same tokens as ``greedy_decode``, bad input gets its message, a browser without
WebAssembly keeps the precomputed explorer, the box passes axe-core and works from the keyboard.
"""

from __future__ import annotations

import base64
import functools
import gzip
import http.server
import json
import re
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from test_book import AXE_TAGS, _QuietHandler, axe, axe_js, browser, build_sites  # noqa: F401 (fixtures)

from book import live

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "book"
PAGE = "notebooks/07_transformer.html"

# Sentences the chapter's explorer does not precompute (its nine are in book/explorers/07_*): test
# sentences, one with words the model never saw, one as long as the model reads (23 words).
SENTENCES = [
    "my small dog is not red .",
    "the man washes my bike .",
    "call the woman .",
    "i'm home and zebras sing .",
    "the good cake under my schools is big and the man washes my book in the small bikes .",
]


@pytest.fixture(scope="module")
def exported():
    """The exports the site serves (build/live/, made or checked fresh), read back."""
    out = live.build()

    def payload(name):
        text = (out / f"{name}.js").read_text(encoding="utf-8")
        return json.loads(text[text.index("] = ") + 4: text.rindex(";")])

    return {name: payload(name) for name in (*live.MODELS, live.LM_MODEL, "ort-runtime")}


@pytest.fixture(scope="module")
def chapter_model():
    model, data, _ = live.shipped_model("transformer")
    return model, data


@pytest.fixture(scope="module")
def pre_ln_model():
    model, _, _ = live.shipped_model("transformer_pre_ln")
    return model


@pytest.fixture(scope="module")
def bahdanau_model():
    model, _, _ = live.shipped_model("bahdanau")
    return model


def sessions(meta):
    """ONNX Runtime sessions of an export (one graph, or the Bahdanau model's encoder and step)."""
    import onnxruntime

    return {part: onnxruntime.InferenceSession(gzip.decompress(base64.b64decode(meta[part])),
                                               providers=["CPUExecutionProvider"])
            for part in ("onnx", "encoder", "step") if part in meta}


def ort_greedy(session, meta, tokens):
    """The page's decoding (live.js), in Python: one graph run per token."""
    S, index = meta["steps"], {t: i for i, t in enumerate(meta["src_vocab"])}
    ids = [index.get(t, meta["unk"]) for t in tokens] + [meta["eos"]]
    src = np.zeros((1, S), np.int64)
    src[0, :len(ids)] = ids
    tgt = np.zeros((1, S), np.int64)
    tgt[0, 0] = meta["bos"]
    out = []
    for step in range(S):
        logits, enc, dec, cross = session.run(None, {"src": src, "src_valid_len": np.array([len(ids)]),
                                                     "tgt": tgt})
        out.append(int(logits[0, step].argmax()))
        if out[-1] == meta["eos"] or step + 1 >= S:
            break
        tgt[0, step + 1] = out[-1]
    return out, cross[:, :, :len(out), :len(ids)]


def ort_greedy_gru(encoder, step, meta, tokens):
    """The page's decoding of the Bahdanau model (live.js), in Python: the encoder once on the
    unpadded source, then one decoder step per token with the GRU state."""
    index = {t: i for i, t in enumerate(meta["src_vocab"])}
    ids = np.array([[index.get(t, meta["unk"]) for t in tokens] + [meta["eos"]]], np.int64)
    enc_outputs, hidden = encoder.run(None, {"src": ids})
    y, out, rows = meta["bos"], [], []
    for _ in range(meta["steps"]):
        logits, hidden, weights = step.run(None, {"y": np.array([[y]], np.int64), "hidden": hidden,
                                                  "enc_outputs": enc_outputs})
        out.append(y := int(logits[0, 0].argmax()))
        rows.append(weights[0, 0, 0])
        if y == meta["eos"]:
            break
    return out, np.stack(rows)[None, None]  # (1, 1, steps, n)


@pytest.mark.parametrize("name", live.MODELS)
def test_onnx_runtime_decodes_like_attnlib(name, exported, chapter_model, pre_ln_model, bahdanau_model):
    import attnlib

    meta = exported[name]
    data = chapter_model[1]
    model = {"transformer": chapter_model[0], "transformer_pre_ln": pre_ln_model,
             "bahdanau": bahdanau_model}[name]
    graphs = sessions(meta)
    outputs = set()
    for sentence in SENTENCES:
        tokens = sentence.split()
        if name == "bahdanau":
            ids, cross = ort_greedy_gru(graphs["encoder"], graphs["step"], meta, tokens)
        else:
            ids, cross = ort_greedy(graphs["onnx"], meta, tokens)
        want = attnlib.greedy_decode(model, data, tuple(tokens))
        got = [meta["tgt_vocab"][i] for i in ids]
        assert got == want.target_labels, sentence
        np.testing.assert_allclose(cross, want.attention.numpy(), atol=1e-4)
        outputs.add(" ".join(got))
    assert len(outputs) == len(SENTENCES)  # different sentences, different translations


def test_the_graph_equals_pytorch_on_a_batch_of_positions(exported, chapter_model):
    """Every output of the graph (logits, the three attentions) against the PyTorch module on
    a padded prefix: the causal mask hides the padding, so the prefix positions match."""
    import onnxruntime

    meta = exported["transformer"]
    model, data = chapter_model
    session = onnxruntime.InferenceSession(gzip.decompress(base64.b64decode(meta["onnx"])),
                                           providers=["CPUExecutionProvider"])
    src, valid = data.encode_src("the woman washes the big car .")
    tgt = torch.zeros(1, data.num_steps, dtype=torch.int64)
    tgt[0, :4] = torch.tensor([data.tgt_vocab.bos, *data.tgt_vocab[["la", "femme", "lave"]]])
    with torch.no_grad():
        want = live.TranslationGraph(model)(src, valid, tgt)
    got = session.run(None, {"src": src.numpy(), "src_valid_len": valid.numpy(), "tgt": tgt.numpy()})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-4)
    assert got[3][:, :, :, int(valid):].max() == 0  # no weight on the source's padding


def test_the_bahdanau_graphs_equal_pytorch_on_every_output(exported, bahdanau_model, chapter_model):
    """The encoder's annotations and state, and a decoder step's logits, state and weights, against
    the PyTorch modules, from a state that is not the initial one (two steps in)."""
    meta, data = exported["bahdanau"], chapter_model[1]
    graphs = sessions(meta)
    src, valid = data.encode_src("the woman washes the big car .")
    src = src[:, :int(valid)]
    encoder, step = live.BahdanauEncoderGraph(bahdanau_model), live.BahdanauStepGraph(bahdanau_model)
    with torch.no_grad():
        want_enc = encoder(src)
        got_enc = graphs["encoder"].run(None, {"src": src.numpy()})
        hidden = want_enc[1]
        for token in ("<bos>", "la"):
            y = torch.tensor([[data.tgt_vocab[token]]])
            want = step(y, hidden, want_enc[0])
            got = graphs["step"].run(None, {"y": y.numpy(), "hidden": hidden.numpy(),
                                            "enc_outputs": want_enc[0].numpy()})
            hidden = want[1]
    for g, w in zip([*got_enc, *got], [*want_enc, *want], strict=True):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-4)
    # the packed encoder that greedy_decode runs on the padded source gives the same annotations
    padded, _ = data.encode_src("the woman washes the big car .")
    with torch.no_grad():
        packed, _ = bahdanau_model.encoder(padded, valid)  # (steps, 1, h)
    np.testing.assert_allclose(got_enc[0][0], packed[:int(valid), 0].numpy(), atol=1e-5)


@pytest.fixture(scope="module")
def char_lm():
    model, vocab, _ = live.shipped_char_lm()
    return model, vocab


def lm_prompt(vocab, text):
    return torch.tensor([[vocab.bos] + vocab[list(text)]])  # (1, steps)


def test_the_language_model_graph_equals_pytorch(exported, char_lm):
    """Logits and every head's weights on a padded prompt, and greedy generation run like the page
    (one graph run per character) against attnlib.lm.sample at temperature 0."""
    from attnlib import lm

    model, vocab = char_lm
    meta = exported[live.LM_MODEL]
    session = sessions(meta)["onnx"]
    T = meta["steps"]
    for text in ("tom is ", "where did you p", "i"):
        prompt = lm_prompt(vocab, text)
        n = prompt.shape[1]
        ids = np.full((1, T), vocab.pad, np.int64)
        ids[0, :n] = prompt.numpy()
        logits, weights = session.run(None, {"ids": ids})
        with torch.no_grad():
            want_logits, want_weights = live.LanguageModelGraph(model)(prompt)
        np.testing.assert_allclose(logits[:, :n], want_logits.numpy(), atol=1e-4)
        np.testing.assert_allclose(weights[:, :, :n, :n], want_weights.numpy(), atol=1e-4)
        assert weights[:, :, :n, n:].max() == 0  # causal: no weight on what comes after
        out = list(prompt[0].tolist())  # greedy, as the page at temperature 0
        while len(out) < T:
            ids[0, :len(out)] = out
            nxt = int(session.run(None, {"ids": ids})[0][0, len(out) - 1].argmax())
            if nxt == vocab.eos:
                break
            out.append(nxt)
        want = lm.sample(model, prompt, T - n, temperature=0, stop=vocab.eos)[0].tolist()
        assert out == [i for i in want if i != vocab.eos], text


def test_a_changed_recipe_is_stale_and_stale_weights_are_refused(monkeypatch, exported):
    import attnlib.presets

    assert live.is_fresh()
    real = attnlib.presets.recipe
    monkeypatch.setattr(attnlib.presets, "recipe", lambda *a, **k: {**real(*a, **k), "code": {}})
    assert not live.is_fresh()  # the build exports again ...
    with pytest.raises(SystemExit, match="make models"):  # ... and refuses weights of another recipe
        live.shipped_model("transformer")


def test_runtime_and_model_sizes(exported):
    sizes = {f.name: f.stat().st_size for f in live.OUT.glob("*.js")}
    assert sum(sizes.values()) < 20e6, sizes
    assert exported["ort-runtime"]["version"] == live.ORT_VERSION
    assert exported["transformer"]["onnx"] != exported["transformer_pre_ln"]["onnx"]
    assert sizes["bahdanau.js"] < 0.5e6, sizes  # the site has room for small models only
    assert sizes["char_lm.js"] < 0.5e6, sizes


# --------------------------------------------------------------------------- the page
@pytest.fixture(scope="module")
def sites():
    build_sites()
    return SITE


@pytest.fixture(scope="module")
def server(sites):
    handler = functools.partial(_QuietHandler, directory=str(sites))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def open_box(chromium, url, init_script=None):
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors, remote = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    base = re.match(r"https?://[^/]+|file://", url)[0]  # the site's own host (both editions)
    page.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:", "file:"))
            else remote.append(r.url))
    if init_script:
        page.add_init_script(init_script)
    page.goto(url, wait_until="load", timeout=60_000)
    # The site lays out only what is near the screen (_css/render.css; tested in test_book.py):
    # here every section is, so that the box's text reads as a reader scrolled to it sees it.
    page.add_style_tag(content="* { content-visibility: visible !important; }")
    box = page.locator("div.live")
    box.scroll_into_view_if_needed()
    return context, page, box, errors, remote


def lay_out_everything(page):
    """Every section laid out and no colour fading in, so that axe reads the box and the page
    around it (whose colours its contrast is measured against) as they settle (as
    tests/test_book.py does before axe)."""
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; "
                               "animation: none !important; content-visibility: visible "
                               "!important; }")
    page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


# axe-core on the live box alone (its form, status, output, heatmap and readout): these tests are
# about the box before and after use; the whole page, the box as it loads included, is checked by
# tests/test_book.py and tests/test_book_zh.py.
BOX_AXE_JS = axe_js("document.querySelector('div.live') "
                    "?? (() => { throw new Error('the page has no live box'); })()")


def submit(page, box, text, timeout=60_000):
    box.locator("input[type=text]").fill(text)
    page.evaluate("document.querySelector('div.live').liveResult = null")
    box.locator("input[type=text]").press("Enter")
    page.wait_for_function("['done', 'error'].includes(document.querySelector('div.live').dataset.state)",
                           timeout=timeout)
    return page.evaluate("""(() => { const r = document.querySelector('div.live').liveResult;
      return r && {src: r.srcTokens, labels: r.labels, ms: r.ms, finished: r.finished,
                   cross: Array.from(r.maps.cross.data), dims: r.maps.cross.dims}; })()""")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["file", "http"])
def test_the_page_translates_what_the_reader_types_as_attnlib(how, sites, server, browser,  # noqa: F811
                                                              chapter_model, pre_ln_model, bahdanau_model):
    import attnlib

    model, data = chapter_model
    url = (SITE / PAGE).as_uri() if how == "file" else f"{server}/{PAGE}"
    context, page, box, errors, remote = open_box(browser, url)
    try:
        assert box.get_attribute("data-state") == "idle"  # nothing loaded with the page
        assert not page.evaluate("'ort' in window")
        timings = []
        for sentence in SENTENCES:
            r = submit(page, box, sentence.upper() if sentence.startswith("call") else sentence)
            assert r is not None, box.locator(".live-status").inner_text()
            want = attnlib.greedy_decode(model, data, sentence)
            assert r["src"] == want.src_tokens and r["labels"] == want.target_labels, sentence
            cross = np.array(r["cross"], np.float32).reshape(r["dims"])
            L, H, rows, cols = want.attention.shape
            np.testing.assert_allclose(cross[:, :, :rows, :cols], want.attention.numpy(), atol=1e-4)
            timings.append(r["ms"])
            out = box.locator(".live-output").inner_text()
            assert " ".join(want.tokens) in out
        print(f"\n{how}: translation times after loading (ms): {[round(t) for t in timings]}")
        # the same sentence through the pre-LN model: switching the model translates it again
        box.locator("[data-live-control=model]").select_option("transformer_pre_ln")
        page.wait_for_function("(document.querySelector('div.live').liveResult || {}).model"
                               " === 'transformer_pre_ln'", timeout=60_000)
        labels = page.evaluate("document.querySelector('div.live').liveResult.labels")
        assert labels == attnlib.greedy_decode(pre_ln_model, data, SENTENCES[-1]).target_labels
        # the heatmap: layer, head and kind choices redraw it; the readout follows the keyboard
        box.locator("[data-live-control=kind]").select_option("enc_self")
        assert "encoder self-attention, layer 2, head 1" in box.locator(".live-maptitle").inner_text()
        box.locator(".live-heat").focus()
        page.keyboard.press("ArrowRight")
        assert re.search(r"weight \d\.\d{3}", box.locator(".live-readout").inner_text())
        # chapter 4's Bahdanau model on the same sentence, then on others: its tokens and its one map
        box.locator("[data-live-control=model]").select_option("bahdanau")
        page.wait_for_function("(document.querySelector('div.live').liveResult || {}).model"
                               " === 'bahdanau'", timeout=60_000)
        assert box.locator("[data-live-control=kind]").is_disabled()
        assert "Bahdanau's additive attention" in box.locator(".live-maptitle").inner_text()
        first = page.evaluate("document.querySelector('div.live').liveResult.totalMs")  # loading too
        gru_timings = []
        for sentence in SENTENCES[::-1]:
            r = submit(page, box, sentence)
            want = attnlib.greedy_decode(bahdanau_model, data, sentence)
            assert r["src"] == want.src_tokens and r["labels"] == want.target_labels, sentence
            assert r["dims"][:2] == [1, 1]
            cross = np.array(r["cross"], np.float32).reshape(r["dims"])
            np.testing.assert_allclose(cross, want.attention.numpy(), atol=1e-4)
            gru_timings.append(r["ms"])
        print(f"{how}: Bahdanau, first with loading {first:.0f} ms, then after loading (ms): "
              f"{[round(t) for t in gru_timings]}")
        box.locator(".live-heat").focus()
        page.keyboard.press("ArrowDown")
        assert re.search(r"weight \d\.\d{3}", box.locator(".live-readout").inner_text())
        box.locator("[data-live-control=model]").select_option("transformer")  # back: all three maps
        page.wait_for_function("(document.querySelector('div.live').liveResult || {}).model"
                               " === 'transformer'", timeout=60_000)
        assert not box.locator("[data-live-control=kind]").is_disabled()
        assert not errors and not remote, (errors, remote)
    finally:
        context.close()


@pytest.mark.slow
def test_bad_input_gets_a_clear_message(sites, server, browser, chapter_model):  # noqa: F811
    import attnlib

    model, data = chapter_model
    context, page, box, errors, _ = open_box(browser, f"{server}/{PAGE}")
    try:
        status, note = box.locator(".live-status"), box.locator(".live-input-note")
        submit(page, box, "   ")
        assert status.inner_text() == live.LIVE_WORDS["empty"]
        assert submit(page, box, "xylophones quibble") is None
        assert status.inner_text() == live.LIVE_WORDS["allunknown"]
        assert submit(page, box, "我的狗很大") is None
        assert "other scripts" in note.inner_text()
        long = " ".join(["the man washes my book and"] * 5) + " ."  # 31 words
        r = submit(page, box, long)
        assert "cut to the first 23" in note.inner_text()
        want = attnlib.greedy_decode(model, data, tuple(long.split()[:23]))
        assert r["labels"] == want.target_labels
        assert not errors, errors
    finally:
        context.close()


@pytest.mark.slow
@pytest.mark.parametrize("where", [PAGE, "notebooks/08_beyond_translation.html"])
def test_without_webassembly_the_explorer_stays(where, sites, browser):  # noqa: F811
    context, page, box, errors, _ = open_box(browser, (SITE / where).as_uri(),
                                             "delete window.WebAssembly")
    try:
        assert box.get_attribute("data-state") == "unsupported"
        assert "WebAssembly" in box.locator(".live-status").inner_text()
        assert box.locator("input[type=text]").is_disabled()
        assert page.locator("div.explorer").count() >= 1
    finally:
        context.close()


@pytest.mark.slow
def test_the_box_passes_axe_and_the_chinese_box_speaks_chinese(sites, server, browser, axe):  # noqa: F811
    """In each edition, the translation box passes axe-core (WCAG 2.0/2.1 A and AA, on the box
    alone: BOX_AXE_JS) before its first use and again after a translation drew its output and
    heatmap; the box speaks the page's language; nothing fails in the console or comes from
    another host."""
    for url, chinese in ((f"{server}/{PAGE}", False), (f"{server}/zh/{PAGE}", True)):
        context, page, box, errors, remote = open_box(browser, url)
        try:
            assert not errors, errors
            lay_out_everything(page)
            page.add_script_tag(path=str(axe))  # the box before its first use
            assert page.evaluate(BOX_AXE_JS, AXE_TAGS) == []
            errors.clear()  # axe's own re-fetch of the theme's stylesheets may 404
            r = submit(page, box, "the man washes my bike .")
            assert r is not None and r["labels"][-1] == "<eos>"
            text = box.inner_text()
            assert bool(re.search(r"[\u4e00-\u9fff]{4}", text)) == chinese, text[:300]
            assert not errors and not remote, (errors, remote)  # before axe, whose own
            page.add_script_tag(path=str(axe))  # re-fetch of the theme's stylesheets may 404
            violations = page.evaluate(BOX_AXE_JS, AXE_TAGS)
            assert violations == [], violations
            if not chinese:  # what axe reads is the box: a control of it that loses its label fails
                page.evaluate("(() => { const s = document.querySelector('div.live "
                              "[data-live-control=model]'); s.closest('label').before(s); })()")
                violations = page.evaluate(BOX_AXE_JS, AXE_TAGS)
                assert "select-name" in [v["id"] for v in violations], violations
        finally:
            context.close()


@pytest.mark.slow
def test_both_editions_share_one_copy_of_the_runtime(sites):
    assert (SITE / "_static" / live.LIVE_DIR / "ort-runtime.js").is_file()
    assert not (SITE / "zh" / "_static" / live.LIVE_DIR).exists()
    zh = (SITE / "zh" / PAGE).read_text(encoding="utf-8")
    assert 'data-base="../../_static/live/"' in zh


# --------------------------------------------------------------------------- chapter 8's language model
LM_PAGE = "notebooks/08_beyond_translation.html"


def generate_on_page(page, box, prompt, temperature, seed, timeout=60_000):
    box.locator("input[type=text]").fill(prompt)
    page.evaluate("""([t, s]) => { const b = document.querySelector('div.live'); b.liveResult = null;
      b.querySelector('[data-live-control=temperature]').value = t;
      b.querySelector('[data-live-control=seed]').value = s; }""", [str(temperature), str(seed)])
    box.locator("input[type=text]").press("Enter")
    page.wait_for_function("['done', 'error'].includes(document.querySelector('div.live').dataset.state)",
                           timeout=timeout)
    return page.evaluate("""(() => { const r = document.querySelector('div.live').liveResult;
      return r && {ids: r.ids, drawn: r.drawn, uniforms: r.uniforms, first: r.firstProbs, text: r.text,
                   ms: r.ms, totalMs: r.totalMs, query: r.query, dims: r.weights.dims,
                   weights: Array.from(r.weights.data)}; })()""")


def replay(model, vocab, prompt_ids, uniforms, temperature):
    """attnlib's distribution (lm.next_token_probs) sampled with the page's uniform numbers: the
    first character whose cumulative probability passes each number."""
    from attnlib import lm

    ids, drawn = list(prompt_ids), []
    for u in uniforms:
        with torch.no_grad():
            probs = lm.next_token_probs(model(torch.tensor([ids]))[:, -1], temperature)[0].double()
        drawn.append(int(torch.searchsorted(probs.cumsum(0), torch.tensor([u], dtype=torch.float64),
                                            right=True)))
        if drawn[-1] == vocab.eos:
            break
        ids.append(drawn[-1])
    return drawn


@pytest.mark.slow
@pytest.mark.parametrize("how", ["file", "http"])
def test_the_language_model_generates_from_the_prompt_as_attnlib(how, sites, server, browser,  # noqa: F811
                                                                 char_lm):
    from attnlib import lm
    from attnlib.recording import record_attention

    model, vocab = char_lm
    url = (SITE / LM_PAGE).as_uri() if how == "file" else f"{server}/{LM_PAGE}"
    context, page, box, errors, remote = open_box(browser, url)
    try:
        assert box.get_attribute("data-state") == "idle" and not page.evaluate("'ort' in window")
        timings = []
        for prompt in ("tom is ", "Where did you"):  # temperature 0: attnlib's greedy sampling
            r = generate_on_page(page, box, prompt, 0, 0)
            assert r is not None, box.locator(".live-status").inner_text()
            ids = lm_prompt(vocab, prompt.lower())
            want = lm.sample(model, ids, 48 - ids.shape[1], temperature=0, stop=vocab.eos)
            text = "".join(vocab.to_tokens([i for i in want[0, 1:].tolist() if i != vocab.eos]))
            assert r["text"] == text, (r["text"], text)
            timings.append(r["totalMs"])
        for prompt, t, seed in (("i want ", 1.0, 3), ("she ", 1.5, 0), ("we are ", 0.5, 7)):
            r = generate_on_page(page, box, prompt, t, seed)
            prompt_ids = lm_prompt(vocab, prompt)[0].tolist()
            assert r["drawn"] == replay(model, vocab, prompt_ids, r["uniforms"], t), (prompt, t, r["text"])
            with torch.no_grad():
                first = lm.next_token_probs(model(torch.tensor([prompt_ids]))[:, -1], t)[0]
            np.testing.assert_allclose(r["first"], first.numpy(), atol=1e-5)
            again = generate_on_page(page, box, prompt, t, seed)  # the same seed, the same text
            assert again["text"] == r["text"]
            timings.append(r["ms"])
        print(f"\n{how}: language model, Enter to text (ms, the first with loading): "
              f"{[round(x) for x in timings]}")
        # the map: the step that chose the last character, every layer and head over what it saw
        q = r["query"]
        W = np.array(r["weights"], np.float32).reshape(r["dims"])[:, :, q, :q + 1]  # (L, H, q + 1)
        with torch.no_grad(), record_attention(model) as rec:
            model(torch.tensor([r["ids"][:q + 1]]))
            want = torch.stack([rec.last(f"blks.{i}.attention")[0, :, q] for i in range(len(model.blks))])
        np.testing.assert_allclose(W, want.numpy(), atol=1e-4)
        rows = page.evaluate("Array.from(document.querySelectorAll("
                             "'div.live svg.live-map > text[text-anchor=end]'), t => t.textContent)")
        assert rows[:2] == ["layer 1, head 1", "layer 1, head 2"] and len(rows) == 8
        box.locator(".live-heat").focus()
        page.keyboard.press("ArrowRight")
        assert re.search(r"weight \d\.\d{3}", box.locator(".live-readout").inner_text())
        assert not errors and not remote, (errors, remote)
    finally:
        context.close()


@pytest.mark.slow
def test_the_language_model_box_says_what_it_did_to_the_prompt_passes_axe_and_speaks_chinese(
        sites, server, browser, axe):  # noqa: F811
    """In each edition, the language model's box passes axe-core (on the box alone: BOX_AXE_JS)
    before its first use and after two prompts; a prompt too long is cut and one with characters
    the model does not know is said so; the box speaks the page's language."""
    for url, chinese in ((f"{server}/{LM_PAGE}", False), (f"{server}/zh/{LM_PAGE}", True)):
        context, page, box, errors, remote = open_box(browser, url)
        try:
            lay_out_everything(page)
            page.add_script_tag(path=str(axe))
            assert page.evaluate(BOX_AXE_JS, AXE_TAGS) == []
            errors.clear()
            note = box.locator(".live-input-note")
            r = generate_on_page(page, box, "the man washes my bike and the woman reads the long book ", 0, 0)
            assert r is not None and len(r["ids"]) <= 48
            if not chinese:
                assert "cut to the first 46" in note.inner_text()
            generate_on_page(page, box, "tom ~ ", 0, 0)
            assert "~" in note.inner_text()
            text = box.inner_text()
            assert bool(re.search(r"[\u4e00-\u9fff]{4}", text)) == chinese, text[:300]
            assert not errors and not remote, (errors, remote)
            page.add_script_tag(path=str(axe))
            violations = page.evaluate(BOX_AXE_JS, AXE_TAGS)
            assert violations == [], violations
        finally:
            context.close()
