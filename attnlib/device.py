"""Picking the device to train on."""
from __future__ import annotations

import torch


def best_device() -> torch.device:
    """The fastest device available: CUDA, then Apple's MPS, then the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
