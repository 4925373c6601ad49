"""The model sizes and training settings that the chapters and ``scripts/quality.py`` share.

One place for the numbers, so a chapter's model is the one whose quality
``make quality`` measured (``results/quality.md``). Each preset holds the model's
constructor arguments and the training settings (``num_epochs``, ``lr``)::

    data = TranslationData(**DATA_DEFAULTS)
    model = build_model("bahdanau", data)
    history = train_seq2seq(model, data, **training_args("bahdanau"))

Every model sees the same data (:data:`DATA_DEFAULTS`), so their scores compare.
"""
from __future__ import annotations

import ast
import hashlib
import io
import os
import tokenize
import warnings
from dataclasses import asdict
from pathlib import Path

import torch

from ._checks import check_int
from .device import best_device
from .seq2seq import (
    EncoderDecoder,
    LuongAttentionDecoder,
    Seq2SeqAttentionDecoder,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)
from .training import History, as_device, check_data, check_training, run_side_by_side, train_seq2seq
from .transformer import TransformerDecoder, TransformerEncoder

#: The corpus every chapter trains on (arguments of ``attnlib.data.TranslationData``).
DATA_DEFAULTS = dict(batch_size=128, num_steps=24, num_pairs=6000, min_freq=1, seed=0)

#: With one GRU layer ``dropout`` acts only on the attention weights (a GRU drops out between its
#: layers, and there is no second one). The encoder reads one way, as Cho et al.'s, Sutskever et
#: al.'s and Luong et al.'s do; ``bidirectional=True`` is Bahdanau et al.'s (the papers' networks
#: are larger: 1000-unit GRUs, or stacks of 4 LSTM layers).
_RNN = dict(embed_size=32, num_hiddens=64, num_layers=1, dropout=0.1, bidirectional=False)

#: Cho et al.'s baseline: the decoder sees the source through one fixed vector, fed at every step.
NO_ATTENTION_DEFAULTS = dict(_RNN, num_epochs=12, lr=0.005)
#: Bahdanau et al.: bidirectional encoder, additive attention with the previous state. No dropout
#: on the attention weights: dropping a weight hides that source word from the step, so the model
#: learns to spread its attention over the neighbouring annotations. ``make quality`` measures both
#: settings over three seeds (``scripts/quality.py --what dropout``; ``results/quality.md``).
BAHDANAU_DEFAULTS = dict(_RNN, dropout=0.0, bidirectional=True, num_epochs=12, lr=0.005)
#: Luong et al.: attention after the GRU step, dot or general score. The dropout on the weights
#: is kept: without it the general score trains badly (its training loss stays near 0.2 and its
#: weights saturate), an optimisation failure rather than overfitting (the same ablation).
LUONG_DOT_DEFAULTS = dict(_RNN, score="dot", num_epochs=15, lr=0.005)
LUONG_GENERAL_DEFAULTS = dict(_RNN, score="general", num_epochs=15, lr=0.005)
#: The Transformer (post-LN as in the paper), and its pre-LN variant.
TRANSFORMER_DEFAULTS = dict(num_hiddens=64, ffn_num_hiddens=128, num_heads=4, num_blks=2,
                            dropout=0.1, pre_norm=False, num_epochs=8, lr=0.005)
TRANSFORMER_PRE_LN_DEFAULTS = dict(TRANSFORMER_DEFAULTS, pre_norm=True)

PRESETS = {
    "no_attention": NO_ATTENTION_DEFAULTS,
    "bahdanau": BAHDANAU_DEFAULTS,
    "luong_dot": LUONG_DOT_DEFAULTS,
    "luong_general": LUONG_GENERAL_DEFAULTS,
    "transformer": TRANSFORMER_DEFAULTS,
    "transformer_pre_ln": TRANSFORMER_PRE_LN_DEFAULTS,
}

_TRAINING_KEYS = ("num_epochs", "lr")


def _preset(name: str, overrides: dict) -> dict:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    unknown = set(overrides) - set(PRESETS[name])
    if unknown:
        raise ValueError(f"preset {name!r} has no setting(s) {sorted(unknown)}; "
                         f"it has {sorted(PRESETS[name])}")
    return {**PRESETS[name], **overrides}


def training_args(name: str, **overrides) -> dict:
    """``num_epochs`` and ``lr`` of preset ``name``, for :func:`attnlib.training.train_seq2seq`."""
    p = _preset(name, overrides)
    check_training(p["num_epochs"], p["lr"])
    return {k: p[k] for k in _TRAINING_KEYS}


def build_model(name: str, data, **overrides) -> EncoderDecoder:
    """The encoder-decoder of preset ``name`` sized for ``data``'s vocabularies.

    ``overrides`` replace preset settings (e.g. ``num_hiddens=32``). Seed torch before
    calling it to fix the initial weights.
    """
    p = _preset(name, overrides)
    check_data(data)
    src_v, tgt_v = len(data.src_vocab), len(data.tgt_vocab)
    if name.startswith("transformer"):
        args = [p[k] for k in ("num_hiddens", "ffn_num_hiddens", "num_heads", "num_blks", "dropout")]
        return EncoderDecoder(TransformerEncoder(src_v, *args, pre_norm=p["pre_norm"]),
                              TransformerDecoder(tgt_v, *args, pre_norm=p["pre_norm"]))
    sizes = [p[k] for k in ("embed_size", "num_hiddens", "num_layers", "dropout")]
    encoder = Seq2SeqEncoder(src_v, *sizes, bidirectional=p["bidirectional"])
    if name == "no_attention":
        decoder = Seq2SeqDecoder(tgt_v, *sizes)
    elif name == "bahdanau":
        decoder = Seq2SeqAttentionDecoder(tgt_v, *sizes)
    else:
        decoder = LuongAttentionDecoder(tgt_v, *sizes, score=p["score"])
    return EncoderDecoder(encoder, decoder)


def train_preset(name: str, data, device=None, cache: bool = True, pretrained: bool = True,
                 seed: int = 0, **overrides):
    """Build preset ``name`` with ``seed`` and train it with its settings; return ``(model, history)``.

    ``seed`` fixes the initial weights (``torch.manual_seed(seed)`` before :func:`build_model`)
    and the dropout and batch order (``train_seq2seq(..., seed=seed)``): another seed is another
    run of the same recipe, as chapter 5 compares three of them (seeds 0, 1 and 2).

    The same call always gives the same model, so it is trained once and then loaded
    (``history.cached`` is then True):

    * ``pretrained``: the weights that ship with attnlib (:data:`PRETRAINED_DIR`, written by
      ``make models`` with this very call on the CPU, with PyTorch's AVX2 kernels forced:
      ``ATEN_CPU_CAPABILITY=avx2``, docs/reproducibility.md) when they were made from the same
      :func:`recipe`: preset, settings, seed, data and the code of the modules involved (seed 0
      of each preset in :data:`PRETRAINED`, and the seeds in :data:`PRETRAINED_SEEDS`). Chapters 4,
      5 and 7 study these very models, so they load them on every device: the Transformer takes
      about a minute to train on one CPU core (seconds on a GPU), and a model trained with other
      CPU kernels (your CPU's own, or AVX2 on another processor, whose math libraries may choose
      other code paths) or on a GPU is another model, about as good, whose heads and numbers are
      not the ones the chapters describe. When a shipped file
      exists but was made from another recipe (attnlib's training code changed since ``make
      models`` last ran), a :class:`UserWarning` says so, and the call trains instead (or loads
      what it trained here earlier, from the cache).
    * ``cache``: the weights and the :class:`~attnlib.training.History` are saved under
      :func:`cache_dir`, and the next call with the same preset, settings, seed, data, device
      type, torch and attnlib loads them. A file saved by another version of attnlib's code can never
      be loaded again, so saving removes such files of the same preset.

    ``overrides`` go to :func:`build_model` and :func:`training_args`. The global random state is
    left as it was, loaded or not.
    """
    check_int("seed", seed, minimum=0)
    model_args = {k: v for k, v in overrides.items() if k not in _TRAINING_KEYS}
    train_args = training_args(name, **{k: v for k, v in overrides.items() if k in _TRAINING_KEYS})
    device = as_device(device) if device is not None else best_device()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the initial weights
        model = build_model(name, data, **model_args)
    fingerprint = _fingerprint(name, data, device, overrides, seed=seed)
    source = _source_hash()
    path = cache_dir() / f"{name}-{source}-{fingerprint}.pt"
    shipped = pretrained_path(name, data, seed=seed, **overrides)
    shipped_ok = pretrained and shipped.exists()
    made_from = recipe(name, data, seed=seed, **overrides) if shipped_ok else None
    shipped_stale = False  # shipped weights that no longer follow from attnlib's code
    for saved_path, use in ((shipped, shipped_ok), (path, cache and path.exists())):
        if use:
            try:
                saved = torch.load(saved_path, map_location=device, weights_only=True)
                if saved_path == shipped and saved.get("recipe") != made_from:
                    shipped_stale = True  # say, attnlib's model code changed: not loaded
                    continue
                if shipped_stale:
                    _warn_stale(shipped, name, seed, "loading the model trained here earlier instead")
                model.load_state_dict(saved["model"])
                return model.to(device).eval(), History(**{**saved["history"], "cached": True})
            except Exception:  # an unreadable or stale file: train (again) and overwrite the cache
                pass
    if shipped_stale:
        _warn_stale(shipped, name, seed, "training it instead")
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        history = train_seq2seq(model, data, device=device, progress=False, seed=seed,  # dropout, batches
                                **train_args)
    if cache:
        save_trained(model, history, path)
        for stale in path.parent.glob(f"{name}-*.pt"):  # written by another attnlib: never loaded again
            if not stale.name.startswith(f"{name}-{source}-"):
                stale.unlink(missing_ok=True)
    return model, history


def _warn_stale(shipped: Path, name: str, seed: int, instead: str) -> None:
    # The "training it instead" call is outside train_preset's try, so a warnings filter set to
    # "error" raises it to the caller; the "loading ... earlier" call is inside it, where such a
    # filter makes the call train instead (and then raise).
    warnings.warn(f"the shipped weights {shipped.name} of preset {name!r} (seed {seed}) are stale: they "
                  f"were made from another recipe than attnlib's code gives now, so they are not loaded; "
                  f"{instead} (`make models` updates the shipped weights)", UserWarning, stacklevel=3)


def save_trained(model: EncoderDecoder, history: History, path: Path, recipe: dict | None = None) -> None:
    """Write ``model``'s weights and ``history`` (and the :func:`recipe` that made them, for
    shipped weights) where :func:`train_preset` loads them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    saved = {"model": model.state_dict(), "history": asdict(history)}
    torch.save(saved if recipe is None else {**saved, "recipe": recipe}, tmp)
    os.replace(tmp, path)  # atomic: a chapter running beside this one never reads half a file


#: Trained weights that ship with attnlib, for the presets chapters load (``make models``).
PRETRAINED_DIR = Path(__file__).parent / "pretrained"
#: The presets with shipped weights, trained on :data:`DATA_DEFAULTS`: chapter 5 studies the
#: Transformer, chapter 7 compares it with its pre-LN variant, chapter 4 shows Bahdanau's fully
#: trained model beside its own short runs, and the website translates with all three (book/live.py).
PRETRAINED = ("bahdanau", "transformer", "transformer_pre_ln")
#: The other seeds whose weights ship, beside seed 0 of each preset in :data:`PRETRAINED`: chapter 5
#: compares the heads of seeds 0, 1 and 2 to see which of their roles the seed decides, and loads all
#: three, so that a reader on a CPU does not wait a minute or two for each and the text describes these
#: runs.
PRETRAINED_SEEDS = {"transformer": (1, 2)}


def pretrained_path(name: str, data, seed: int = 0, **overrides) -> Path:
    """Where the shipped weights of preset ``name`` trained with ``seed`` on the CPU on ``data`` are
    (or would be): ``NAME-HASH.pt`` for seed 0, ``NAME-seedN-HASH.pt`` for seed N."""
    fingerprint = _fingerprint(name, data, torch.device("cpu"), overrides, False, seed)
    return PRETRAINED_DIR / (f"{name}-seed{seed}-{fingerprint}.pt" if seed else f"{name}-{fingerprint}.pt")


def shipped_weights() -> list[tuple[str, int]]:
    """``(preset, seed)`` of every translator whose weights ship with attnlib: seed 0 of each
    preset in :data:`PRETRAINED`, then the seeds in :data:`PRETRAINED_SEEDS`."""
    return [(name, 0) for name in PRETRAINED] + [(name, seed) for name, seeds in PRETRAINED_SEEDS.items()
                                                 for seed in seeds]


#: The modules whose code decides what training a preset yields: the models' layers, the training
#: loop, the data it reads and what they import. (The rest of attnlib, plotting or decoding, say,
#: cannot change it.)
TRAINING_CODE = ("_checks", "data", "device", "multihead", "positional", "presets", "recording",
                 "scoring", "seq2seq", "training", "transformer")


def _code_only(path: Path) -> bytes:
    """The source of ``path`` without its comments, docstrings, blank lines and line-end spaces:
    what training runs, so that an edited comment or docstring leaves the shipped weights current.

    Spans come from ``ast`` (docstrings) and ``tokenize`` (comments), whose positions every Python
    version reports alike; line endings are normalised, so a Windows checkout hashes the same."""
    source = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    lines = [line.encode() for line in source.split("\n")]  # ast's columns count UTF-8 bytes
    spans = []  # (first line, first byte, last line, end byte), lines counted from 1
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            doc = body[0]
            spans.append((doc.lineno, doc.col_offset, doc.end_lineno, doc.end_col_offset))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            (row, col), (end_row, end_col) = tok.start, tok.end
            text = source.split("\n")[row - 1]
            spans.append((row, len(text[:col].encode()), end_row, len(text[:end_col].encode())))
    for first, start, last, end in sorted(spans, reverse=True):  # from the end: earlier spans stay put
        lines[first - 1:last] = [lines[first - 1][:start] + lines[last - 1][end:]]
    return b"\n".join(line.rstrip() for line in lines if line.strip())


def recipe(name: str, data, seed: int = 0, **overrides) -> dict:
    """What the trained weights of preset ``name`` on ``data`` follow from, as text that every
    machine computes alike: the preset and its settings, the seed (left out for seed 0, so that
    recipes written before seeds existed stay current), a hash of the data, and a hash of the
    code of each module in :data:`TRAINING_CODE` (its comments and docstrings left out).

    Two machines that share a recipe train models about as good, not the same bits: the shipped
    weights were written with PyTorch's AVX2 CPU kernels, and a minute of training with other CPU
    kernels (a CPU's own AVX-512 ones, say) or on a GPU takes other floating-point paths
    (docs/reproducibility.md).
    """
    settings = _preset(name, overrides)
    return {"preset": name, "settings": dict(sorted(settings.items())), **({"seed": seed} if seed else {}),
            "data": _fingerprint(name, data, torch.device("cpu"), overrides, False),
            "code": code_hashes(TRAINING_CODE)}


def code_hashes(modules) -> dict:
    """``{"attnlib/MODULE.py": hash}`` of each of attnlib's ``modules``, comments and docstrings
    left out (:func:`_code_only`): the code part of a shipped model's recipe."""
    return {f"attnlib/{module}.py": hashlib.sha256(_code_only(Path(__file__).parent / f"{module}.py"))
            .hexdigest()[:16] for module in modules}


#: How far a preset retrained on another float path may land from its shipped run: every epoch's
#: mean training loss (absolute) and the held-out corpus BLEU. Measured spread across CPU kernels and
#: seeds 0-2: at most 0.017 and 1.6 (docs/reproducibility.md); the margins leave room for CPUs not seen.
SHIPPED_TOLERANCE = {"loss": 0.04, "bleu": 4.0}


def compare_with_shipped(name: str, data, model: EncoderDecoder, history: History,
                         seed: int = 0) -> list[str]:
    """How a freshly trained preset ``name`` (with ``seed``) differs from its shipped weights beyond
    :data:`SHIPPED_TOLERANCE`, one message per difference (empty: a model of the same quality).

    Bitwise equality cannot be asked for: training is chaotic, and another CPU (or other CPU
    kernels, ``ATEN_CPU_CAPABILITY``) takes other floating-point paths through it."""
    from .decoding import translate  # decoding and sacrebleu only for this check
    from .metrics import corpus_bleu

    saved = torch.load(pretrained_path(name, data, seed=seed), map_location="cpu", weights_only=True)
    shipped = build_model(name, data)
    shipped.load_state_dict(saved["model"])
    problems = [f"epoch {epoch}: training loss {now:.3f}, shipped {then:.3f}"
                for epoch, (now, then) in enumerate(zip(history.train_loss, saved["history"]["train_loss"],
                                                        strict=True), 1)
                if abs(now - then) > SHIPPED_TOLERANCE["loss"]]
    sources, refs = [p.src for p in data.test], [p.tgt_text for p in data.test]
    bleu_now = corpus_bleu(translate(model.cpu().eval(), data, sources), refs)
    bleu_then = corpus_bleu(translate(shipped.eval(), data, sources), refs)
    if abs(bleu_now - bleu_then) > SHIPPED_TOLERANCE["bleu"]:
        problems.append(f"held-out BLEU {bleu_now:.1f}, shipped {bleu_then:.1f}")
    return problems


def train_presets(names, data, device=None, workers: int | None = None, **kwargs) -> dict:
    """:func:`train_preset` for every preset in ``names``; return ``{name: (model, history)}``.

    On a CPU with several cores the presets train at once, one per core
    (:func:`~attnlib.training.run_side_by_side`), and each model is exactly the one that
    training them in turn gives. ``kwargs`` (``cache``, ``pretrained``, settings) go to every
    :func:`train_preset` call.
    """
    names = list(names)
    device = as_device(device) if device is not None else best_device()
    jobs = [dict(name=name, data=data, device=device, **kwargs) for name in names]
    return dict(zip(names, run_side_by_side(train_preset, jobs, device, workers), strict=True))


def cache_dir() -> Path:
    """Where :func:`train_preset` keeps trained models: ``$ATTNLIB_CACHE``, else
    ``$XDG_CACHE_HOME/attnlib`` (``~/.cache/attnlib``). Delete it to retrain."""
    if os.environ.get("ATTNLIB_CACHE"):
        return Path(os.environ["ATTNLIB_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnlib"


def _source_hash() -> str:
    """A hash of attnlib's code: any change to it may change what training yields."""
    h = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        h.update(source.read_bytes())
    return h.hexdigest()[:8]


def _fingerprint(name: str, data, device: torch.device, overrides: dict, with_torch: bool = True,
                 seed: int = 0) -> str:
    """A hash of what else the trained weights depend on (:func:`_source_hash` is the code).

    Shipped weights leave torch's version out: another torch may train other last digits, but
    the weights stay the preset trained on the data. Seed 0 adds nothing, so its hashes (and the
    shipped seed-0 file names) are those from before ``train_preset`` took a seed."""
    h = hashlib.sha256(repr((name, sorted(PRESETS[name].items()), sorted(overrides.items()),
                             device.type, torch.__version__ if with_torch else None, data.batch_size,
                             data.src_vocab.idx_to_token, data.tgt_vocab.idx_to_token)
                            + ((seed,) if seed else ())).encode())
    for split in ("train", "val"):  # the tensors the batches come from, as TranslationData built them
        for t in data._arrays.get(split) or ():
            h.update(t.numpy().tobytes())
    return h.hexdigest()[:16]


# ----------------------------------------------------------------------------- real data
#: Real Tatoeba pairs (arguments of ``attnlib.data.FraEngData``): 20,000 training pairs, 1,000
#: held-out English sentences (with all their translations) for test, 500 for validation.
#: Sized for ``make quality`` on a 2-core CPU; the models keep their presets' sizes.
REAL_DATA_DEFAULTS = dict(batch_size=128, num_steps=20, num_train=20000, num_test=1000,
                          num_val=500, min_freq=2, seed=0)
#: A short run on real pairs that a chapter trains in seconds: 3,000 training pairs drawn from the
#: 10,000 shortest of the file (``num_steps=8``), 200 held-out English sentences.
REAL_SMALL = dict(batch_size=64, num_steps=8, max_pairs=10000, num_train=3000, num_test=200,
                  num_val=50, min_freq=2, seed=0)
#: Epochs and learning rate on real data, for ``train_seq2seq``.
REAL_TRAINING = {name: dict(num_epochs=4, lr=0.005)
                 for name in ("no_attention", "bahdanau", "luong_dot", "transformer")}

#: d2l-zh's experiment: the first 600 pairs, all for training, d2l's sizes (arguments of
#: ``FraEngData`` and of ``build_model``'s overrides) and training settings.
D2L_DATA = dict(batch_size=64, num_steps=10, max_pairs=600, num_test=0, num_val=0, min_freq=2)
D2L_MODELS = {
    "bahdanau": dict(embed_size=32, num_hiddens=32, num_layers=2, dropout=0.1,
                     bidirectional=False),
    "transformer": dict(num_hiddens=32, ffn_num_hiddens=64, num_heads=4, num_blks=2, dropout=0.1),
}
D2L_TRAINING = {"bahdanau": dict(num_epochs=250, lr=0.005),
                "transformer": dict(num_epochs=200, lr=0.005)}
