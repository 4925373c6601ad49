"""Shared fixtures. d2l is imported lazily (about 14 s) and only by the parity tests."""
import pytest
import torch


@pytest.fixture(scope="session")
def d2l():
    from d2l import torch as d2l_torch

    return d2l_torch


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on one torch thread: on a shared 2-core CPU, extra OpenMP threads wait on
    each other and slow small ops down many times. Restores the thread count afterwards."""
    from attnlib.training import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def copy_linear_weights(src, dst, names):
    """Copy ``weight`` (and ``bias``) of the named linear layers from ``src`` to ``dst``."""
    with torch.no_grad():
        for name in names:
            a, b = getattr(src, name), getattr(dst, name)
            b.weight.copy_(a.weight)
            if a.bias is not None:
                b.bias.copy_(a.bias)
