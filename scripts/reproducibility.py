"""Retrain the Transformers that ship with attnlib and measure how far this machine's float path
takes them from the shipped run (``make reproducibility``; the numbers behind docs/reproducibility.md).

    python scripts/reproducibility.py LABEL     # one variant: this process's CPU kernels as set by env

Run it once per float path, e.g. ``ATEN_CPU_CAPABILITY=default python scripts/reproducibility.py
default``: each run retrains every preset in ``attnlib.presets.PRETRAINED`` exactly as
``make models`` does (seed 0, one CPU thread), scores greedy translations of the held-out split,
compares the weights with the shipped ones, and stores the result under LABEL in
``results/reproducibility.json``. Seeds 1 and 2 come from ``make quality`` (attnlib's quality.json).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

import torch

from attnlib.data import TranslationData
from attnlib.decoding import translate
from attnlib.metrics import corpus_bleu
from attnlib.presets import DATA_DEFAULTS, PRETRAINED, pretrained_path, train_preset

OUT = Path(__file__).resolve().parents[1] / "results" / "reproducibility.json"
ENV = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "OMP_NUM_THREADS")


def held_out_bleu(model, data) -> float:
    return corpus_bleu(translate(model, data, [p.src for p in data.test]), [p.tgt_text for p in data.test])


def measure(name: str, data) -> dict:
    shipped = torch.load(pretrained_path(name, data), map_location="cpu", weights_only=True)
    model, history = train_preset(name, data, device="cpu", cache=False, pretrained=False)
    weights = shipped["model"]
    diffs = {k: ((v - weights[k]).abs().max() / weights[k].abs().max().clamp_min(1e-12)).item()
             for k, v in model.state_dict().items() if v.is_floating_point()}
    return {"train_loss": history.train_loss, "val_loss": history.val_loss,
            "bleu": held_out_bleu(model.eval(), data),
            "bitwise_equal_to_shipped": all(torch.equal(v, shipped["model"][k])
                                            for k, v in model.state_dict().items()),
            "max_relative_weight_difference": max(diffs.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label", help="a name for this float path, e.g. default, avx2, avx512")
    label = parser.parse_args().label
    data = TranslationData(**DATA_DEFAULTS)
    result = {"cpu_capability": torch.backends.cpu.get_cpu_capability(), "machine": platform.machine(),
              "processor": platform.processor() or platform.machine(), "torch": torch.__version__,
              "env": {k: os.environ[k] for k in ENV if k in os.environ},
              "presets": {name: measure(name, data) for name in PRETRAINED}}
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    results[label] = result
    OUT.write_text(json.dumps(results, indent=1) + "\n")
    for name, r in result["presets"].items():
        print(f"{label} ({result['cpu_capability']}) {name}: final loss {r['train_loss'][-1]:.4f}, "
              f"val {r['val_loss'][-1]:.4f}, BLEU {r['bleu']:.2f}, bitwise {r['bitwise_equal_to_shipped']}, "
              f"max rel diff {r['max_relative_weight_difference']:.3g}", flush=True)


if __name__ == "__main__":
    main()
