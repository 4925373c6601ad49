"""Chapter 8's SNAIL: causal convolutions, attention blocks and the recall task."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnlib.snail import (
    IGNORE,
    SNAIL,
    CausalConv1d,
    CausalTransformerTagger,
    TCBlock,
    make_recall_task,
)


def test_causal_conv_matches_left_padded_conv1d():
    torch.manual_seed(0)
    c = CausalConv1d(3, 5, kernel_size=3, dilation=2)
    conv = nn.Conv1d(3, 5, 3, dilation=2)
    with torch.no_grad():
        conv.weight.copy_(c.linear.weight.reshape(5, 3, 3).transpose(1, 2))
        conv.bias.copy_(c.linear.bias)
    X = torch.randn(2, 9, 3)
    ref = conv(F.pad(X.transpose(1, 2), (4, 0))).transpose(1, 2)
    assert torch.allclose(c(X), ref, atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda: TCBlock(4, 16, 3),
    lambda: SNAIL(6, 6, 16, num_hiddens=8, filters=4, value_size=8),
    lambda: CausalTransformerTagger(6, 6, num_hiddens=8, ffn_num_hiddens=16, num_heads=2),
])
def test_future_never_changes_the_past(make):
    torch.manual_seed(0)
    model = make().eval()
    X = torch.randint(6, (2, 16)) if not isinstance(model, TCBlock) else torch.randn(2, 16, 4)
    X2 = X.clone()
    X2[:, 10:] = (X2[:, 10:] + 1) % 6 if X.dtype == torch.long else X2[:, 10:] + 1
    a, b = model(X), model(X2)
    assert torch.allclose(a[:, :10], b[:, :10], atol=1e-6)
    assert not torch.allclose(a[:, 10:], b[:, 10:], atol=1e-4)


def test_tc_block_sees_the_whole_sequence():
    block = TCBlock(4, 16, 3)
    assert block.out_channels == 4 + 4 * 3  # dilations 1, 2, 4, 8
    X = torch.zeros(1, 16, 4, requires_grad=True)
    block(X)[0, -1].sum().backward()
    assert bool((X.grad[0].abs().sum(-1) > 0).all())  # the last output depends on every input


def test_recall_task_labels():
    _, Y = make_recall_task(1, 8, 4, torch.Generator().manual_seed(0))
    assert Y.shape == (1, 8)
    gen = torch.Generator().manual_seed(0)
    X, Y = make_recall_task(200, 12, 5, gen)
    for x, y in zip(X.tolist(), Y.tolist(), strict=True):
        for t in range(12):
            earlier = [j for j in range(t) if x[j] == x[t]]
            assert y[t] == (x[earlier[-1] + 1] if earlier else IGNORE)
    with pytest.raises(ValueError, match="seq_len"):
        make_recall_task(3, 0, 4)


def test_snail_learns_recall_without_positions(one_thread):
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = SNAIL(8, 8, 16, num_hiddens=16, filters=8, value_size=16)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(120):
        X, Y = make_recall_task(64, 16, 8, gen)
        loss = F.cross_entropy(model(X).flatten(0, 1), Y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    X, Y = make_recall_task(500, 16, 8, torch.Generator().manual_seed(1))
    with torch.no_grad():
        pred = model.eval()(X).argmax(-1)
    ok = Y != IGNORE
    assert (pred[ok] == Y[ok]).float().mean() > 0.9
