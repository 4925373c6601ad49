"""The book's models in the reader's browser: ONNX exports of the shipped weights, and the page
parts that run them with ONNX Runtime Web (``book/_js/live.js``, docs/book.md).

    python -m book.live          # export (or check fresh) build/live/, what `make onnx` runs

Chapter 7's Transformer (``attnlib/pretrained/``, the weights the chapter loads) becomes one ONNX
graph, :class:`TranslationGraph`: the padded source ids, their valid length and a padded target
prefix in; the next-token logits at every target position and the three kinds of attention
weights out. The page decodes greedily with it, one graph run per emitted token, exactly as
``attnlib.greedy_decode`` does with the key/value cache: the causal mask keeps every position
blind to the padding after it, so the logits at position ``t`` are those of the prefix alone.

Chapter 4's Bahdanau model (also shipped) becomes two graphs, as its decoder runs: the encoder
(:class:`BahdanauEncoderGraph`, the source's ids in, its annotations and final state out) once
per sentence, then one decoder step (:class:`BahdanauStepGraph`: the previous token, the state
and the annotations in; the logits, the new state and the attention weights out) per emitted token,
as ``greedy_decode`` steps the decoder with its state.

Chapter 8's character language model (shipped too, ``attnlib.lm.shipped_lm``) becomes one graph,
:class:`LanguageModelGraph`: the padded character ids in, the logits at every position and the
self-attention weights out; the page samples from it one character per run (``live.js``), with the
reader's temperature.

The export is tied to its inputs by a recipe (:func:`recipe`): the weights' own recipe (the code
of ``attnlib.presets.TRAINING_CODE``, the data, the settings), the weights file and this module.
Shipped weights made from another recipe (attnlib's model code changed since ``make models``)
are refused, never exported; a recipe that changed re-exports (a few seconds).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import json
import sys
import warnings
from pathlib import Path
from unittest import mock

from book import ROOT
from book.vendor import fetch_npm

OUT = ROOT / "build" / "live"  # the exports and the runtime as the site serves them (_static/live/)
LIVE_DIR = "live"  # in the site: _static/live/

ORT_VERSION = "1.30.0"
ORT_INTEGRITY = (  # the "dist.integrity" of https://registry.npmjs.org/onnxruntime-web/1.30.0
    "sha512-q0y+JrrtukXSzsBWEMccVfqX25LRmosXHF+CaRJmg8pZClzcV7svNc4rKY3jL02Vb7QmRMDs1SigqR4CXAfKYQ=="
)
ORT_CACHE = Path(sys.prefix) / "share" / f"onnxruntime-web-{ORT_VERSION}"
# The WebAssembly-only build (no WebGPU/WebGL, no JSPI): its loader, the Emscripten glue it
# imports and the one SIMD binary that every browser with WebAssembly SIMD runs (one thread).
# (The package, MIT licensed by Microsoft, ships no licence file: docs/book.md credits it.)
ORT_FILES = ("dist/ort.wasm.min.js", "dist/ort-wasm-simd-threaded.mjs", "dist/ort-wasm-simd-threaded.wasm")



def fetch_ort() -> Path:
    """The pinned onnxruntime-web's WebAssembly build, cached like MathJax (``book.vendor``)."""
    return fetch_npm("onnxruntime-web", ORT_VERSION, ORT_INTEGRITY, ORT_CACHE,
                     lambda rel: rel.removeprefix("dist/") if rel in ORT_FILES else None)


def _torch():
    import torch

    return torch


class TranslationGraph(_torch().nn.Module):
    """``(src (1, S), src_valid_len (1,), tgt (1, T))`` -> ``logits (1, T, vocab)`` and the weights
    ``enc_self (L, H, S, S)``, ``dec_self (L, H, T, T)``, ``cross (L, H, T, S)``.

    ``tgt`` is ``<bos>`` and the tokens emitted so far, padded to ``T`` positions; the logits at
    position ``t`` choose token ``t + 1``. The decoder runs without a key/value cache (one call on
    the whole prefix), which gives the cached decoder's results (``attnlib.decoding``)."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model.eval()
        self.names = {kind: [n for n, m in model.named_modules() if id(m) in ids]
                      for kind, ids in (
                          ("enc_self", {id(b.attention) for b in model.encoder.blks}),
                          ("dec_self", {id(b.attention1) for b in model.decoder.blks}),
                          ("cross", {id(b.attention2) for b in model.decoder.blks}))}

    def forward(self, src, src_valid_len, tgt):
        from attnlib.recording import record_attention

        with record_attention(self.model) as rec:
            enc = self.model.encoder(src, src_valid_len)  # (1, S, d)
            state = self.model.decoder.init_state(enc, src_valid_len)
            logits, _ = self.model.decoder(tgt, state)  # (1, T, vocab)
            weights = [_torch().cat([rec.last(n) for n in self.names[kind]])  # (L, H, queries, keys)
                       for kind in ("enc_self", "dec_self", "cross")]
        return (logits, *weights)


class BahdanauEncoderGraph(_torch().nn.Module):
    """``src (1, n)`` -> ``enc_outputs (1, n, num_hiddens)``, ``hidden (num_layers, 1, num_hiddens)``.

    The source comes unpadded (its ``n`` ids, ``<eos>`` included), so the GRU reads exactly its
    tokens: what the packed sequence that ``greedy_decode`` feeds it reads, with no packing in
    the graph (whose lengths live in Python)."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model.eval()

    def forward(self, src):
        outputs, hidden = self.model.encoder(src)  # (n, 1, h) time first, (layers, 1, h)
        return outputs.transpose(0, 1), hidden  # (1, n, h)


class BahdanauStepGraph(_torch().nn.Module):
    """``(y (1, 1), hidden (num_layers, 1, h), enc_outputs (1, n, h))`` -> ``logits (1, 1, vocab)``,
    the new ``hidden`` and the step's attention weights ``(1, 1, 1, n)``: one call of the decoder
    on the previous token with its state, as ``greedy_decode`` makes per emitted token."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model.eval()

    def forward(self, y, hidden, enc_outputs):
        from attnlib.recording import record_attention

        with record_attention(self.model.decoder) as rec:  # no lengths: the source has no padding
            logits, (_, hidden, _) = self.model.decoder(y, [enc_outputs, hidden, None])
            weights = rec.last("attention")  # (1, 1, 1, n): (batch, heads, queries, keys)
        return logits, hidden, weights


class LanguageModelGraph(_torch().nn.Module):
    """``ids (1, T)`` -> ``logits (1, T, vocab)`` and the self-attention ``weights (L, H, T, T)``.

    ``ids`` is ``<bos>``, the prompt and the characters drawn so far, padded to ``T`` positions
    (the model's ``max_len``); the causal mask keeps every position blind to the padding after it,
    so the logits at position ``t`` are those of the prefix alone."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model.eval()
        self.names = [f"blks.{i}.attention" for i in range(len(model.blks))]

    def forward(self, ids):
        from attnlib.recording import record_attention

        with record_attention(self.model) as rec:
            logits = self.model(ids)  # (1, T, vocab)
            weights = _torch().cat([rec.last(n) for n in self.names])  # (L, H, T, T)
        return logits, weights


# --------------------------------------------------------------------------- the models
def _data():
    from attnlib import TranslationData
    from attnlib.presets import DATA_DEFAULTS

    return TranslationData(**DATA_DEFAULTS)


def shipped_model(name: str = "transformer", data=None):
    """The shipped weights of preset ``name`` in the model the chapters build; refuses weights made
    from another recipe (``attnlib.presets.recipe``): they are not the model the chapters run."""
    torch = _torch()
    from attnlib.presets import build_model, pretrained_path
    from attnlib.presets import recipe as weights_recipe

    data = data or _data()
    path = pretrained_path(name, data)
    if not path.exists():
        sys.exit(f"error: no shipped weights for {name!r} ({path.relative_to(ROOT)}): run `make models`")
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if saved.get("recipe") != weights_recipe(name, data):
        sys.exit(f"error: the shipped weights {path.relative_to(ROOT)} were made from another recipe "
                 "(attnlib's training code changed since `make models`): the site cannot export a "
                 "model the chapters no longer run. Run `make models`, then `make onnx`.")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = build_model(name, data)
    model.load_state_dict(saved["model"])
    return model.eval(), data, path


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def recipe(name: str = "transformer", data=None) -> dict:
    """What the export of preset ``name`` follows from: the weights' recipe, the weights file's
    hash, this module's code and the exporter's versions."""
    torch = _torch()
    from attnlib.presets import pretrained_path
    from attnlib.presets import recipe as weights_recipe

    data = data or _data()
    path = pretrained_path(name, data)
    return {"weights": weights_recipe(name, data),
            "weights_sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else None,
            "export_code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16],
            "torch": torch.__version__.split("+")[0], "onnxscript": _version("onnxscript")}


@contextlib.contextmanager
def _without_value_checks():
    """attnlib's checks of the ids (within the vocabulary) and of the valid lengths (within the
    keys) read tensor values in Python, which a graph cannot hold: the export leaves them out.
    They check the input, not the computation; the page feeds only ids of the vocabulary and
    lengths it counted (live.js). Whether a length of 0 may empty a row is read from the lengths
    too: the graph answers yes, and keeps the guard that turns such a row into zeros."""
    import attnlib.lm
    import attnlib.multihead
    import attnlib.scoring
    import attnlib.seq2seq
    import attnlib.transformer

    with mock.patch.object(attnlib.transformer, "check_token_ids", lambda *args: None), \
            mock.patch.object(attnlib.lm, "check_token_ids", lambda *args: None), \
            mock.patch.object(attnlib.seq2seq, "check_token_ids", lambda *args: None), \
            mock.patch.object(attnlib.scoring, "check_lengths", lambda *args: None), \
            mock.patch.object(attnlib.multihead, "may_hide_every_key", lambda *args: True):
        yield


def export_translation(path: Path, name: str = "transformer") -> dict:
    """Write the ONNX graph of preset ``name`` to ``path``; return what the page needs besides it
    (vocabularies, sizes, special ids)."""
    torch = _torch()
    model, data, _ = shipped_model(name)
    S = data.num_steps
    src, valid = data.encode_src("i'm home .")
    tgt = torch.zeros(1, S, dtype=torch.int64)
    tgt[0, 0] = data.tgt_vocab.bos
    for coder in (model.encoder, model.decoder):  # the graph sees S positions: keep their encodings
        pe = coder.pos_encoding  # only (the table's 1000 rows would weigh 0.5 MB in the page)
        pe.P, pe.max_len = pe.P[:, :S].clone(), S  # (1, S, num_hiddens)
    graph = TranslationGraph(model).eval()
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), _without_value_checks():
        # torch.export's exporter: the sizes are fixed (S source and S target positions), so they
        # stay Python ints, which attnlib's argument checks want.
        program = torch.onnx.export(graph, (src, valid, tgt), dynamo=True,
                          input_names=["src", "src_valid_len", "tgt"],
                          output_names=["logits", "enc_self", "dec_self", "cross"], verbose=False)
        program.save(str(path), external_data=False)
    blks = model.decoder.blks
    return {"name": name, "steps": S, "layers": len(blks), "heads": blks[0].attention2.num_heads,
            "src_vocab": data.src_vocab.idx_to_token, "tgt_vocab": data.tgt_vocab.idx_to_token,
            "pad": data.tgt_vocab.pad, "bos": data.tgt_vocab.bos, "eos": data.tgt_vocab.eos,
            "unk": data.src_vocab.unk}


def export_bahdanau(out: Path, name: str = "bahdanau") -> dict:
    """Write the encoder's and the decoder step's ONNX graphs of preset ``name`` to
    ``out/{name}-encoder.onnx`` and ``out/{name}-step.onnx``; return what the page needs besides."""
    torch = _torch()
    model, data, _ = shipped_model(name)
    src, valid = data.encode_src("i'm home .")
    src = src[:, :int(valid)]  # (1, n): the ids without padding
    encoder, step = BahdanauEncoderGraph(model).eval(), BahdanauStepGraph(model).eval()
    out.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), _without_value_checks(), warnings.catch_warnings():
        enc_outputs, hidden = encoder(src)
        # The encoder by the TorchScript exporter, which writes ONNX's own GRU operator with a free
        # source length (torch.export's lowering of the GRU keeps the example's length). Its
        # warnings: that it is the older exporter, and about batches of other sizes (the page's is 1).
        warnings.filterwarnings("ignore", message=".*(legacy TorchScript|batch_size other than 1)")
        torch.onnx.export(encoder, (src,), str(out / f"{name}-encoder.onnx"), dynamo=False,
                          input_names=["src"], output_names=["enc_outputs", "hidden"],
                          dynamic_axes={"src": {1: "n"}, "enc_outputs": {1: "n"}})
        n = torch.export.Dim("n", min=1, max=data.num_steps)
        y = torch.tensor([[data.tgt_vocab.bos]])
        program = torch.onnx.export(step, (y, hidden, enc_outputs), dynamo=True,
                                    input_names=["y", "hidden", "enc_outputs"],
                                    output_names=["logits", "hidden_out", "weights"],
                                    dynamic_shapes=(None, None, {1: n}), verbose=False)
        program.save(str(out / f"{name}-step.onnx"), external_data=False)
    return {"name": name, "arch": "gru", "steps": data.num_steps, "layers": 1, "heads": 1,
            "src_vocab": data.src_vocab.idx_to_token, "tgt_vocab": data.tgt_vocab.idx_to_token,
            "pad": data.tgt_vocab.pad, "bos": data.tgt_vocab.bos, "eos": data.tgt_vocab.eos,
            "unk": data.src_vocab.unk}


def shipped_char_lm():
    """Chapter 8's language model from its shipped weights, with its data; refuses weights made
    from another recipe (``attnlib.lm.char_lm_recipe``)."""
    torch = _torch()
    from attnlib import lm

    train_s, val_s, vocab = lm.char_lm_data()
    path = lm.char_lm_path(train_s, vocab)
    if not path.exists():
        sys.exit(f"error: no shipped weights for char_lm ({path.relative_to(ROOT)}): run `make models`")
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if saved.get("recipe") != lm.char_lm_recipe(train_s, vocab):
        sys.exit(f"error: the shipped weights {path.relative_to(ROOT)} were made from another recipe "
                 "(attnlib's training code changed since `make models`): run `make models`, then "
                 "`make onnx`.")
    model, _ = lm.shipped_lm(train_s, vocab)
    return model, vocab, path


def lm_recipe() -> dict:
    """What the export of chapter 8's language model follows from (as :func:`recipe`)."""
    torch = _torch()
    from attnlib import lm

    train_s, _, vocab = lm.char_lm_data()
    path = lm.char_lm_path(train_s, vocab)
    return {"weights": lm.char_lm_recipe(train_s, vocab),
            "weights_sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else None,
            "export_code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16],
            "torch": torch.__version__.split("+")[0], "onnxscript": _version("onnxscript")}


def export_lm(path: Path) -> dict:
    """Write the ONNX graph of chapter 8's language model to ``path``; return what the page needs."""
    torch = _torch()
    model, vocab, _ = shipped_char_lm()
    T = model.max_len
    ids = torch.full((1, T), vocab.pad, dtype=torch.int64)
    ids[0, :4] = torch.tensor([vocab.bos, *vocab[list("tom")]])
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), _without_value_checks():
        program = torch.onnx.export(LanguageModelGraph(model).eval(), (ids,), dynamo=True,
                                    input_names=["ids"], output_names=["logits", "weights"], verbose=False)
        program.save(str(path), external_data=False)
    return {"name": LM_MODEL, "arch": "lm", "steps": T, "layers": len(model.blks),
            "heads": model.blks[0].attention.num_heads, "vocab": vocab.idx_to_token,
            "pad": vocab.pad, "bos": vocab.bos, "eos": vocab.eos, "unk": vocab.unk}


def _b64gz(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, 9, mtime=0)).decode("ascii")


def _script(variable: str, payload: dict) -> str:
    """A classic script that hands ``payload`` to live.js: what a page opened from ``file://`` can
    load (a browser fetches no file:// URL and imports no module from one)."""
    return (f"(window.ATTN_LIVE = window.ATTN_LIVE || {{}})[{json.dumps(variable)}] = "
            + json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + ";\n")


#: The live translation models: chapter 7's Transformer (post-LN, as in the paper), the pre-LN
#: variant the chapter compares it with and chapter 4's Bahdanau model, all shipped
#: (``attnlib.presets.PRETRAINED``).
MODELS = ("transformer", "transformer_pre_ln", "bahdanau")
#: Chapter 8's character language model, which generates from the reader's prompt.
LM_MODEL = "char_lm"


def wanted() -> dict:
    """The recipe of every export and of the runtime: what ``build/live/recipe.json`` must hold."""
    return {**{name: recipe(name) for name in MODELS}, LM_MODEL: lm_recipe(), "ort": ORT_INTEGRITY}


def build(out: Path = OUT, force: bool = False) -> Path:
    """Export the live models and lay out the runtime in ``out`` (the site's ``_static/live/``),
    unless ``out`` already holds them for the same recipe. Returns ``out``."""
    stamp = out / "recipe.json"
    want = wanted()
    if not force and stamp.exists() and json.loads(stamp.read_text()) == want:
        return out
    out.mkdir(parents=True, exist_ok=True)
    for name in MODELS:
        if name == "bahdanau":
            meta = export_bahdanau(out, name)
            graphs = {part: out / f"{name}-{part}.onnx" for part in ("encoder", "step")}
        else:
            graphs = {"onnx": out / f"{name}.onnx"}
            meta = export_translation(graphs["onnx"], name)
        for key, onnx_path in graphs.items():  # the page loads the script below: no .onnx in the site
            meta[key] = _b64gz(onnx_path.read_bytes())
            onnx_path.unlink()
        (out / f"{name}.js").write_text(_script(name, {**meta, "recipe": want[name]}))
    meta = export_lm(out / f"{LM_MODEL}.onnx")
    meta["onnx"] = _b64gz((out / f"{LM_MODEL}.onnx").read_bytes())
    (out / f"{LM_MODEL}.onnx").unlink()
    (out / f"{LM_MODEL}.js").write_text(_script(LM_MODEL, {**meta, "recipe": want[LM_MODEL]}))
    ort = fetch_ort()
    (out / "ort.wasm.min.js").write_bytes((ort / "ort.wasm.min.js").read_bytes())
    (out / "ort-runtime.js").write_text(_script("runtime", {
        "version": ORT_VERSION,
        "glue": (ort / "ort-wasm-simd-threaded.mjs").read_text(encoding="utf-8"),
        "wasm": _b64gz((ort / "ort-wasm-simd-threaded.wasm").read_bytes())}))
    stamp.write_text(json.dumps(want, indent=1, sort_keys=True) + "\n")
    return out


def is_fresh(out: Path = OUT) -> bool:
    """Does ``out`` hold the exports of the current recipe?"""
    stamp = out / "recipe.json"
    return stamp.exists() and json.loads(stamp.read_text()) == wanted()


# --------------------------------------------------------------------------- the page
# The box's words (the Chinese site translates them: book/interface.py lists them). {...} are filled
# in by live.js; keep them.
LIVE_WORDS = {
    "note": "Type an English sentence: the chapter's Transformer, the very weights above, translates "
            "it in your browser (ONNX Runtime Web, nothing leaves the page) and shows its attention. "
            "Switch to the pre-LN variant, or to chapter 4's Bahdanau model, to see how another model "
            "reads the same sentence.",
    "label": "English sentence",
    "button": "Translate",
    "hint": "The sentence is lower-cased and split into words as the book's data is; a word the "
            "model never saw in training becomes <unk>. It knows {n} English words, in short "
            "sentences like the ones above.",
    "model": "model",
    "transformer": "post-LN, as in the paper (the chapter's model)",
    "transformer_pre_ln": "pre-LN (the chapter's comparison)",
    "bahdanau": "Bahdanau's GRU with additive attention (chapter 4)",
    "layer": "layer",
    "head": "head",
    "attention": "attention",
    "enc_self": "encoder self-attention",
    "dec_self": "decoder self-attention",
    "cross": "encoder-decoder attention",
    "title": "{kind}, layer {layer}, head {head}",
    "gru_title": "Bahdanau's additive attention: each output word (row) over the source words",
    "idle": "The model loads when you first use the box (about 6 MB).",
    "loading": "Loading the model and ONNX Runtime Web...",
    "ready": "The model is ready: type a sentence and press Enter.",
    "running": "Translating...",
    "done": "Translated in your browser in {ms} ms (greedy decoding, one run of the model per word).",
    "error": "The model could not run here ({why}). The precomputed figure above still works.",
    "unsupported": "This browser cannot run WebAssembly, which the live model needs: the "
                   "precomputed figure above still works.",
    "empty": "Type a sentence first.",
    "allunknown": "None of these words is in the model's vocabulary, so there is nothing to "
                  "translate: try a sentence like the ones above.",
    "unknown": "Unknown to the model, read as <unk>: {words}.",
    "truncated": "The model reads at most {max} words (and <eos>): your {n} were cut to the first {max}.",
    "nonlatin": "The model was trained on English only: words in other scripts are unknown to it.",
    "output": "{src} → {out}",
    "unfinished": "(stopped at the model's length limit before <eos>)",
    "readout": "query {query}, key {key}: weight {w}",
    "pointer": "Point at a cell, or focus the figure and use the arrow keys, to read its weight.",
    "figure": "Attention weights of the sentence you typed",
    # chapter 8's language model
    "lm_note": "Type the start of a sentence: chapter 8's character language model (the weights "
               "that ship with the book, trained as the chapter trains it) continues it in your "
               "browser, one character at a time, drawn at the temperature you choose, and shows "
               "what it attended to when it chose the last character.",
    "lm_label": "prompt",
    "lm_button": "Generate",
    "temperature": "temperature",
    "seed": "seed",
    "lm_hint": "The prompt is lower-cased as the book's sentences are. At temperature 0 the model "
               "always takes its most likely character; the higher the temperature, the more often "
               "it takes less likely ones. The same prompt, temperature and seed give the same text.",
    "lm_ready": "The model is ready: type a prompt and press Enter.",
    "lm_running": "Generating...",
    "lm_done": "Generated {n} characters in your browser in {ms} ms (one run of the model per "
               "character).",
    "lm_truncated": "The model reads at most {max} characters of prompt: your {n} were cut to the "
                    "first {max}.",
    "lm_unknown": "Characters the model never saw in training, read as <unk>: {chars}.",
    "lm_unfinished": "(stopped at the model's length limit)",
    "lm_title": "The step that chose the last character, {c}: each layer and head (rows) over the "
                "characters before it",
    "lm_row": "layer {layer}, head {head}",
    "lm_figure": "Attention weights of the generated text",
}
PLACEHOLDER = "my small dog is not red ."  # English on both sites: the model reads English
CHAPTER = "07_transformer"  # the live translation sits under this chapter's explorer "attention"
LM_CHAPTER = "08_beyond_translation"  # the live language model under this chapter's explorer "sampling"
LM_PLACEHOLDER = "tom is "


def box(say=str, static: str = "../_static/", vocab_size: int | None = None) -> str:
    """The HTML of the live translation box (``say`` translates its words; ``static`` is the
    page's way to ``_static/``)."""
    import html

    w = {k: say(v) for k, v in LIVE_WORDS.items()}
    if vocab_size is None:
        vocab_size = len(_data().src_vocab) - 4  # without <pad> <bos> <eos> <unk>
    e = {k: html.escape(v) for k, v in w.items()}

    def select(name, options, chosen=0):
        opts = "".join(f'<option value="{v}"{" selected" * (i == chosen)}>{html.escape(str(t))}</option>'
                       for i, (v, t) in enumerate(options))
        control = "kind" if name == "attention" else name
        return (f'<label class="explorer-control"><span>{e[name]}</span>'
                f'<select data-live-control="{control}">{opts}</select></label>')

    from attnlib.presets import TRANSFORMER_DEFAULTS

    layers, heads = TRANSFORMER_DEFAULTS["num_blks"], TRANSFORMER_DEFAULTS["num_heads"]
    return (
        f'<div class="live" data-state="idle" data-base="{static}{LIVE_DIR}/" role="group" '
        f'aria-label="{e["figure"]}">'
        f'<p class="explorer-note">{e["note"]}</p>'
        f'<form class="live-form"><label><span>{e["label"]}</span> '
        f'<input type="text" name="sentence" autocomplete="off" spellcheck="false" '
        f'placeholder="{html.escape(PLACEHOLDER)}" aria-describedby="live-hint"></label> '
        f'<button type="submit">{e["button"]}</button></form>'
        f'<p class="live-hint" id="live-hint">{html.escape(w["hint"].format(n=vocab_size))}</p>'
        f'<p class="live-input-note" aria-live="polite"></p>'
        f'<p class="live-status" role="status">{e["idle"]}</p>'
        f'<p class="live-output" aria-live="polite"></p>'
        + select("model", [(name, w[name]) for name in MODELS])
        + select("layer", [(i, i + 1) for i in range(layers)], layers - 1)
        + select("head", [(i, i + 1) for i in range(heads)])
        + select("attention", [(k, w[k]) for k in ("cross", "enc_self", "dec_self")])
        + f'<p class="live-maptitle"></p><div class="live-heat" role="group" tabindex="0" '
        f'aria-label="{e["figure"]}"></div>'
        f'<p class="live-readout" aria-live="polite"></p>'
        f'<noscript><p>{e["unsupported"]}</p></noscript>'
        '<script type="application/json" class="live-words">'
        + json.dumps(w, ensure_ascii=False).replace("</", "<\\/") + "</script>"
        f'<script src="{static}live.js"></script></div>'
    )


def lm_box(say=str, static: str = "../_static/") -> str:
    """The HTML of chapter 8's live language model box (as :func:`box`)."""
    import html

    w = {k: say(v) for k, v in LIVE_WORDS.items()}
    e = {k: html.escape(v) for k, v in w.items()}
    return (
        f'<div class="live live-lm" data-state="idle" data-base="{static}{LIVE_DIR}/" role="group" '
        f'aria-label="{e["lm_figure"]}">'
        f'<p class="explorer-note">{e["lm_note"]}</p>'
        f'<form class="live-form"><label><span>{e["lm_label"]}</span> '
        f'<input type="text" name="prompt" autocomplete="off" spellcheck="false" '
        f'placeholder="{html.escape(LM_PLACEHOLDER)}" aria-describedby="live-lm-hint"></label> '
        f'<label class="live-small"><span>{e["temperature"]}</span> <input type="range" min="0" max="2" '
        f'step="0.1" value="0.8" data-live-control="temperature"> <output>0.8</output></label> '
        f'<label class="live-small"><span>{e["seed"]}</span> <input type="number" min="0" step="1" '
        f'value="0" data-live-control="seed"></label> '
        f'<button type="submit">{e["lm_button"]}</button></form>'
        f'<p class="live-hint" id="live-lm-hint">{e["lm_hint"]}</p>'
        f'<p class="live-input-note" aria-live="polite"></p>'
        f'<p class="live-status" role="status">{e["idle"]}</p>'
        f'<p class="live-output" aria-live="polite"></p>'
        f'<p class="live-maptitle"></p><div class="live-heat" role="group" tabindex="0" '
        f'aria-label="{e["lm_figure"]}"></div>'
        f'<p class="live-readout" aria-live="polite"></p>'
        f'<noscript><p>{e["unsupported"]}</p></noscript>'
        '<script type="application/json" class="live-words">'
        + json.dumps(w, ensure_ascii=False).replace("</", "<\\/") + "</script>"
        f'<script src="{static}live.js"></script></div>'
    )


def insert(nb: dict, chapter: str, say=str, static: str = "../_static/") -> bool:
    """Put the live box after the explorer ``attention`` of chapter 7 (the translation) or
    ``sampling`` of chapter 8 (the language model) in ``nb`` (staged, its widgets already made
    explorers); True if it was put."""
    where = {CHAPTER: ("attention", box), LM_CHAPTER: ("sampling", lm_box)}
    if chapter not in where:
        return False
    name, make = where[chapter]
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            text = "".join(out.get("data", {}).get("text/html", ""))
            if 'class="explorer-data"' in text and f'"chapter":"{chapter}"' in text \
                    and f'"name":"{name}"' in text:
                cell["outputs"].append({"output_type": "display_data", "metadata": {},
                                        "data": {"text/html": make(say, static)}})
                return True
    return False


def main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m book.live", description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="export even if the recipe is unchanged")
    args = parser.parse_args(argv)
    out = build(force=args.force)
    sizes = {f.name: f.stat().st_size for f in sorted(out.iterdir())}
    for name, size in sizes.items():
        print(f"{size / 1e6:8.3f} MB  {out.relative_to(ROOT) / name}")
    print(f"{sum(sizes.values()) / 1e6:8.3f} MB  in all")


if __name__ == "__main__":
    main()
