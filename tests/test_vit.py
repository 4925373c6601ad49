"""Chapter 8's Vision Transformer: patches, model, attention rollout."""
import inspect

import pytest
import torch

from attnlib import record_attention
from attnlib.vit import ViT, attention_rollout, patchify, unpatchify


def test_patchify_round_trip_and_order():
    images = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    patches = patchify(images, 4)
    assert patches.shape == (2, 4, 3 * 16)
    assert torch.equal(unpatchify(patches, 4, 8, 8), images)
    # patch 1 is the top-right 4x4 block of channel 0, row-major
    assert torch.equal(patches[0, 1, :16], images[0, 0, :4, 4:].flatten())


def test_patchify_errors():
    with pytest.raises(ValueError, match="patch_size"):
        patchify(torch.zeros(1, 1, 8, 8), 3)
    with pytest.raises(ValueError, match="4-D"):
        patchify(torch.zeros(8, 8), 2)


def test_vit_shapes_and_recorded_attention():
    torch.manual_seed(0)
    model = ViT(img_size=8, patch_size=2, num_classes=10, num_hiddens=16, num_heads=2).eval()
    x = torch.randn(5, 1, 8, 8)
    with record_attention(model) as rec:
        logits = model(x)
    assert logits.shape == (5, 10)
    weights = [rec.last(name) for name in rec.names()]
    assert [tuple(w.shape) for w in weights] == [(5, 2, 17, 17)] * 2
    with pytest.raises(ValueError, match="8x8"):
        model(torch.randn(1, 1, 6, 6))


def test_rollout_rows_sum_to_one_and_identity():
    torch.manual_seed(0)
    layers = [torch.softmax(torch.randn(2, 3, 5, 5), -1) for _ in range(3)]
    R = attention_rollout(layers)
    assert R.shape == (2, 5, 5)
    assert torch.allclose(R.sum(-1), torch.ones(2, 5), atol=1e-6)
    eye = torch.eye(5).expand(2, 3, 5, 5)
    assert torch.allclose(attention_rollout([eye, eye]), torch.eye(5).expand(2, 5, 5))
    # one layer without the residual is just the head average
    assert torch.allclose(attention_rollout(layers[:1], residual=False), layers[0].mean(1))
    with pytest.raises(ValueError, match="at least one"):
        attention_rollout([])


def test_rollout_listing_is_the_computation():
    # chapter 8 shows attention_rollout's source: its argument checks live in one helper call
    source = inspect.getsource(attention_rollout)
    assert "raise" not in source and source.count("check") == 1, source
    with pytest.raises(ValueError, match=r"attentions\[2\] has shape \(1, 2, 4, 4\), unlike"):
        attention_rollout([torch.rand(1, 2, 3, 3).softmax(-1)] * 2 + [torch.rand(1, 2, 4, 4)])


def test_vit_learns_digits_quickly(one_thread):
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16  # (n, 1, 8, 8)
    y = torch.tensor(digits.target)
    torch.manual_seed(0)
    perm = torch.randperm(len(y))
    train, test = perm[:1400], perm[1400:]
    model = ViT(8, 2, 10, num_hiddens=32, ffn_num_hiddens=64, num_heads=4)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(8):
        for idx in train.split(64):
            loss = torch.nn.functional.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(X[test]).argmax(-1) == y[test]).float().mean().item()
    assert acc > 0.85
