"""Train the presets whose weights ship with attnlib and save them in attnlib/pretrained/ (``make models``).

    python scripts/pretrain.py [PRESET ...]   # default: every preset in attnlib.presets.PRETRAINED

Each preset in ``attnlib.presets.PRETRAINED`` is trained on the CPU by exactly the call the chapters
make, ``train_preset(name, TranslationData(**DATA_DEFAULTS), device="cpu")`` (seed 0, one torch
thread), and saved where that call looks first; the preset's older files are removed. Run it when a
change to attnlib changes what training yields: ``tests/test_training.py`` retrains the presets and
fails until the shipped weights match again.
"""
from __future__ import annotations

import argparse
import time

from attnlib.data import TranslationData
from attnlib.presets import DATA_DEFAULTS, PRETRAINED, pretrained_path, save_trained, train_preset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help=f"some of {', '.join(PRETRAINED)} (default: all)")
    names = parser.parse_args().presets or list(PRETRAINED)
    if set(names) - set(PRETRAINED):
        parser.error(f"no shipped weights for {sorted(set(names) - set(PRETRAINED))}; "
                     f"choose from {', '.join(PRETRAINED)}")
    data = TranslationData(**DATA_DEFAULTS)
    for name in names:
        start = time.perf_counter()
        model, history = train_preset(name, data, device="cpu", cache=False, pretrained=False)
        path = pretrained_path(name, data)
        for old in path.parent.glob(f"{name}-*.pt"):
            old.unlink()
        save_trained(model, history, path)
        print(f"{name}: {history.summary()}; wrote {path} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
