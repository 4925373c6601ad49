"""Train the presets whose weights ship with attnlib and save them in attnlib/pretrained/ (``make models``).

    python scripts/pretrain.py [PRESET ...] [--seed N ...] [--replace]
        # default: every preset of attnlib.presets.PRETRAINED with each of its shipped seeds
        # (0, and those in PRETRAINED_SEEDS), and char_lm, chapter 8's language model

Each preset in ``attnlib.presets.PRETRAINED`` is trained on the CPU by exactly the call the chapters
make, ``train_preset(name, TranslationData(**DATA_DEFAULTS), device="cpu", seed=seed)`` (one torch
thread), with seed 0 and, for the presets in ``attnlib.presets.PRETRAINED_SEEDS``, the other seeds
chapter 5 compares. The shipped file records the recipe it was made from (``attnlib.presets.recipe``:
preset, settings, seed, data and the code of the modules training depends on);
``tests/test_training.py`` fails when the recipe has changed since. Run this script then:

* when the fresh model is within ``attnlib.presets.SHIPPED_TOLERANCE`` of the shipped one (its loss
  curve and held-out BLEU), training still yields models of the shipped quality: the shipped weights
  are kept, so the chapters' outputs stay as they are, and only their recipe is updated;
* otherwise, or with ``--replace``, the fresh weights replace them (re-execute chapters 4, 5 and 7,
  which load them).

Chapter 8's character language model (``char_lm``, ``attnlib.lm.CHAR_LM``) is trained by
``attnlib.lm.train_char_lm`` and kept likewise when its held-out perplexity is within
``attnlib.lm.CHAR_LM_TOLERANCE`` of the shipped model's (re-execute chapter 8 otherwise).

``make models`` runs this script with PyTorch's AVX2 CPU kernels forced (``ATEN_CPU_CAPABILITY=avx2``,
with oneDNN and MKL held to AVX2), the kernels that wrote the shipped weights. Another CPU, or other
kernels, need not reproduce them bit for bit (docs/reproducibility.md), which is why the weights are
only replaced when training really changed.
"""
from __future__ import annotations

import argparse
import time

import torch

from attnlib import lm
from attnlib.data import TranslationData
from attnlib.presets import (
    DATA_DEFAULTS,
    PRETRAINED,
    build_model,
    compare_with_shipped,
    pretrained_path,
    recipe,
    save_trained,
    shipped_weights,
    train_preset,
)
from attnlib.training import History


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help=f"some of {', '.join(PRETRAINED)} (default: all)")
    parser.add_argument("--seed", type=int, nargs="+", dest="seeds",
                        help="only these seeds of the presets (default: each one's shipped seeds)")
    parser.add_argument("--replace", action="store_true",
                        help="write the fresh weights even when they match the shipped ones' quality")
    args = parser.parse_args()
    names = args.presets or [*PRETRAINED, "char_lm"]
    if set(names) - {*PRETRAINED, "char_lm"}:
        parser.error(f"no shipped weights for {sorted(set(names) - {*PRETRAINED, 'char_lm'})}; "
                     f"choose from {', '.join(PRETRAINED)}, char_lm")
    if args.seeds is not None:
        missing = [f"{name} seed {seed}" for name in names for seed in args.seeds
                   if (name, seed) not in shipped_weights()]
        if not args.presets or missing:
            parser.error(f"--seed needs presets that ship those seeds (no weights ship for "
                         f"{', '.join(missing) or 'char_lm'}): "
                         f"{', '.join(f'{name} seed {seed}' for name, seed in shipped_weights())}")
    runs = [(name, seed) for name, seed in shipped_weights()
            if name in names and (args.seeds is None or seed in args.seeds)]
    if "char_lm" in names:
        pretrain_char_lm(args.replace)
    data = TranslationData(**DATA_DEFAULTS)
    for name, seed in runs:
        start = time.perf_counter()
        model, history = train_preset(name, data, device="cpu", cache=False, pretrained=False, seed=seed)
        path = pretrained_path(name, data, seed=seed)
        problems = (compare_with_shipped(name, data, model, history, seed=seed) if path.exists()
                    else ["none shipped"])
        if not problems and not args.replace:
            saved = torch.load(path, map_location="cpu", weights_only=True)
            model = build_model(name, data)
            model.load_state_dict(saved["model"])
            history = History(**saved["history"])
            what = "trains to the shipped quality: kept the shipped weights, updated their recipe"
        else:
            what = (f"wrote fresh weights ({'; '.join(problems) or '--replace'}): "
                    f"re-execute {'chapters 4, 5 and 7' if seed == 0 else 'chapter 5'}")
        stem = path.stem.rsplit("-", 1)[0]  # NAME or NAME-seedN, before the recipe's hash
        for old in path.parent.glob(f"{stem}-*.pt"):  # this preset and seed's files of older recipes
            if old.stem.rsplit("-", 1)[0] == stem:
                old.unlink()
        save_trained(model, history, path, recipe(name, data, seed=seed))
        print(f"{name} seed {seed}: {what}; {history.summary()}; {path.name}, "
              f"{time.perf_counter() - start:.0f} s")


def pretrain_char_lm(replace: bool) -> None:
    """Train chapter 8's language model on the CPU and ship it (or keep the shipped one's weights)."""
    start = time.perf_counter()
    train_s, val_s, vocab = lm.char_lm_data()
    path = lm.char_lm_path(train_s, vocab)
    model, losses = lm.train_char_lm(train_s, vocab, device="cpu")  # the chapter's lines, every thread
    ppl = lm.perplexity(model, val_s, vocab)
    what = f"wrote fresh weights ({'--replace' if replace else 'none shipped'}): re-execute chapter 8"
    if path.exists() and not replace:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        shipped = lm.build_char_lm(vocab)
        shipped.load_state_dict(saved["model"])
        then = lm.perplexity(shipped, val_s, vocab)
        if abs(ppl - then) <= lm.CHAR_LM_TOLERANCE:
            model, losses = shipped, list(saved["losses"])
            what = "trains to the shipped quality: kept the shipped weights, updated their recipe"
        else:
            what = f"wrote fresh weights (perplexity {ppl:.3f}, shipped {then:.3f}): re-execute chapter 8"
    for old in path.parent.glob("char_lm-*.pt"):
        old.unlink()
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "losses": losses,
                "recipe": lm.char_lm_recipe(train_s, vocab)}, tmp)
    tmp.replace(path)
    print(f"char_lm: {what}; held-out perplexity {ppl:.3f}; {path.name}, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
