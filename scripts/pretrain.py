"""Train the presets whose weights ship with attnlib and save them in attnlib/pretrained/ (``make models``).

    python scripts/pretrain.py [PRESET ...] [--replace]   # default: all of attnlib.presets.PRETRAINED

Each preset in ``attnlib.presets.PRETRAINED`` is trained on the CPU by exactly the call the chapters
make, ``train_preset(name, TranslationData(**DATA_DEFAULTS), device="cpu")`` (seed 0, one torch
thread). The shipped file records the recipe it was made from (``attnlib.presets.recipe``: preset,
settings, data and the code of the modules training depends on); ``tests/test_training.py`` fails when
the recipe has changed since. Run this script then:

* when the fresh model is within ``attnlib.presets.SHIPPED_TOLERANCE`` of the shipped one (its loss
  curve and held-out BLEU), training still yields models of the shipped quality: the shipped weights
  are kept, so the chapters' outputs stay as they are, and only their recipe is updated;
* otherwise, or with ``--replace``, the fresh weights replace them (re-execute chapters 4, 5 and 7,
  which load them).

Another CPU never reproduces the shipped weights bit for bit (docs/reproducibility.md), which is why
the weights are only replaced when training really changed.
"""
from __future__ import annotations

import argparse
import time

import torch

from attnlib.data import TranslationData
from attnlib.presets import (
    DATA_DEFAULTS,
    PRETRAINED,
    build_model,
    compare_with_shipped,
    pretrained_path,
    recipe,
    save_trained,
    train_preset,
)
from attnlib.training import History


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help=f"some of {', '.join(PRETRAINED)} (default: all)")
    parser.add_argument("--replace", action="store_true",
                        help="write the fresh weights even when they match the shipped ones' quality")
    args = parser.parse_args()
    names = args.presets or list(PRETRAINED)
    if set(names) - set(PRETRAINED):
        parser.error(f"no shipped weights for {sorted(set(names) - set(PRETRAINED))}; "
                     f"choose from {', '.join(PRETRAINED)}")
    data = TranslationData(**DATA_DEFAULTS)
    for name in names:
        start = time.perf_counter()
        model, history = train_preset(name, data, device="cpu", cache=False, pretrained=False)
        path = pretrained_path(name, data)
        problems = compare_with_shipped(name, data, model, history) if path.exists() else ["none shipped"]
        if not problems and not args.replace:
            saved = torch.load(path, map_location="cpu", weights_only=True)
            model = build_model(name, data)
            model.load_state_dict(saved["model"])
            history = History(**saved["history"])
            what = "trains to the shipped quality: kept the shipped weights, updated their recipe"
        else:
            what = (f"wrote fresh weights ({'; '.join(problems) or '--replace'}): "
                    "re-execute chapters 4, 5 and 7")
        for old in path.parent.glob(f"{name}-*.pt"):
            old.unlink()
        save_trained(model, history, path, recipe(name, data))
        print(f"{name}: {what}; {history.summary()}; {path.name}, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
