"""record_attention keeps weights only inside its block; show_heatmaps draws what it says."""
import matplotlib

matplotlib.use("Agg")  # tests only; notebooks keep the inline backend
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import attnlib as A  # noqa: E402


class TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.blks = nn.ModuleList([A.TransformerEncoderBlock(8, 16, 2) for _ in range(2)])

    def forward(self, X, valid_lens=None):
        for blk in self.blks:
            X = blk(X, valid_lens)
        return X


def test_records_every_layer_and_head_then_forgets():
    model = TwoLayers().eval()
    X = torch.randn(3, 5, 8)
    with A.record_attention(model) as rec:
        out = model(X, torch.tensor([5, 2, 0]))
    assert rec.names() == ["blks.0.attention", "blks.1.attention"]
    W = rec.last("blks.1.attention")
    assert W.shape == (3, 2, 5, 5) and not W.requires_grad
    assert torch.equal(W[1, :, :, 2:], torch.zeros(2, 5, 3))
    assert torch.equal(W[2], torch.zeros(2, 5, 5))
    torch.testing.assert_close(out, model(X, torch.tensor([5, 2, 0])))  # same result unrecorded
    for m in model.modules():  # nothing O(n^2) left behind
        if isinstance(m, A.AttentionModule):
            assert m.attention_weights is None and not m.recording


def test_stack_joins_decoding_steps():
    mha = A.MultiHeadAttention(8, 2).eval()
    with A.record_attention(mha) as rec:
        for t in range(1, 4):
            X = torch.randn(1, t, 8)
            mha(X[:, -1:], X, X)
    assert len(rec["MultiHeadAttention"]) == 3
    S = rec.stack("MultiHeadAttention")
    assert S.shape == (1, 2, 3, 3) and torch.equal(S[0, :, 0, 1:], torch.zeros(2, 2))


def test_record_errors():
    with pytest.raises(ValueError, match="contains no AttentionModule"):
        with A.record_attention(nn.Linear(2, 2)):
            pass
    with pytest.raises(TypeError, match="nn.Module"):
        with A.record_attention("model"):
            pass
    with A.record_attention(A.DotProductAttention()) as rec:
        pass
    with pytest.raises(KeyError, match="was not called"):
        rec.last("DotProductAttention")


def test_heatmap_grid_labels_crop_and_shared_scale():
    M = torch.rand(2, 3, 6, 7)
    fig = A.show_heatmaps(M, xlabel="Keys", ylabel="Queries", titles=["h1", "h2", "h3"],
                          x_labels=list("abcde"), y_labels=list("uvwx"), row_labels=["L1", "L2"])
    axes = fig.axes[:6]
    assert len(fig.axes) == 7  # 6 heatmaps and one colour bar
    image = axes[0].images[0]
    assert image.get_array().shape == (4, 5)  # padding cropped
    assert {ax.images[0].get_clim() for ax in axes} == {(0.0, float(M[:, :, :4, :5].max()))}
    assert [t.get_text() for t in axes[3].get_xticklabels()] == list("abcde")
    assert axes[0].get_title() == "h1" and axes[3].get_ylabel().startswith("L2")
    assert image.get_cmap().name == "viridis"
    assert fig.axes[6].get_ylabel() == "attention weight"  # the colour bar says what it measures
    plt.close(fig)


def _lightness(cmap_name: str, n: int = 256) -> np.ndarray:
    """What a greyscale print shows of ``cmap_name``: relative luminance along the map."""
    rgb = matplotlib.colormaps[cmap_name](np.linspace(0, 1, n))[:, :3]
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def test_weights_get_a_sequential_map_that_reads_in_greyscale():
    fig = A.show_heatmaps(torch.softmax(torch.randn(4, 5), dim=-1))
    image = fig.axes[0].images[0]
    lightness = _lightness(image.get_cmap().name)
    assert (np.diff(lightness) > 0).all()  # darker means less weight, on paper too
    assert image.get_clim()[0] == 0.0
    plt.close(fig)


def test_signed_values_get_a_diverging_map_centred_on_zero():
    M = torch.tensor([[-0.5, 0.2], [1.5, float("nan")]])
    fig = A.show_heatmaps(M, xlabel="dimension", ylabel="position")  # signed: detected
    image, bar = fig.axes[0].images[0], fig.axes[1]
    assert image.get_clim() == (-1.5, 1.5) and bar.get_ylabel() == "value"
    lightness = _lightness(image.get_cmap().name)
    middle = len(lightness) // 2
    assert (np.diff(lightness[:middle]) > 0).all() and (np.diff(lightness[middle:]) < 0).all()
    fig2 = A.show_heatmaps(torch.rand(3, 3), signed=True, colorbar_label="score")
    low, high = fig2.axes[0].images[0].get_clim()
    assert low == -high and fig2.axes[1].get_ylabel() == "score"
    fig3 = A.show_heatmaps(M, signed=False, cmap="magma", vmin=-1.0, vmax=2.0)
    assert fig3.axes[0].images[0].get_cmap().name == "magma"
    assert fig3.axes[0].images[0].get_clim() == (-1.0, 2.0)
    plt.close("all")


def test_heatmap_accepts_d2l_call_and_2d():
    fig = A.show_heatmaps(torch.eye(10).reshape(1, 1, 10, 10), xlabel="Keys", ylabel="Queries")
    assert len(fig.axes) == 2
    fig2 = A.show_heatmaps(torch.eye(3))
    assert fig2.axes[0].images[0].get_array().shape == (3, 3)
    with pytest.raises(ValueError, match="x_labels has 4 entries"):
        A.show_heatmaps(torch.eye(3), x_labels=list("abcd"))
    plt.close("all")


def test_pair_attention_one_labelled_figure_per_pair_cropped_to_the_sentence():
    pairs = [A.Pair(("i", "run", "."), ("je", "cours", "."), ((0,), (1,), (2,))),
             A.Pair(("go", "."), ("va", "!"), ((0,), (1,)))]
    weights = [torch.rand(6, 7), torch.rand(6, 7)]  # padded, as teacher_forced_attention gives them
    figs = A.show_pair_attention(weights, pairs, "title")
    assert len(figs) == 2
    ax = figs[1].axes[0]
    assert ax.images[0].get_array().shape == (3, 3)  # ("va", "!", <eos>) x ("go", ".", <eos>)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["go", ".", "<eos>"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["va", "!", "<eos>"]
    assert ax.get_title() == "title"
    plt.close("all")


def test_best_device_is_a_torch_device():
    device = A.best_device()
    assert device.type == ("cuda" if torch.cuda.is_available() else device.type)
    torch.zeros(1, device=device)
