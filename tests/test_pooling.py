"""attnlib.pooling: Nadaraya-Watson attention pooling (chapter 2)."""
import pytest
import torch
from torch import nn

import attnlib as A
from attnlib.pooling import KERNELS, NWKernelRegression, kernel_weights, leave_one_out, loo_cv_mse


def f(x):
    return 2 * torch.sin(x) + x ** 0.8


@pytest.fixture
def data():
    """The chapter's set-up: 50 sorted noisy samples of f on [0, 5], test grid 0, 0.1, ..., 4.9."""
    torch.manual_seed(0)
    x_train, _ = torch.sort(torch.rand(50) * 5)
    y_train = f(x_train) + torch.normal(0.0, 0.5, (50,))
    x_test = torch.arange(0, 5, 0.1)
    return x_train, y_train, x_test, f(x_test)


def seed_weights(queries, keys, w):
    """The source notes' formula: softmax(-((x - x_i) w)^2 / 2) over the keys."""
    return torch.softmax(-((queries.unsqueeze(-1) - keys) * w) ** 2 / 2, dim=-1)


# --- weights --------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("width", [0.01, 0.1, 0.5, 3.0])
def test_rows_sum_to_one_or_are_all_zero(data, kernel, width):
    x_train, _, x_test, _ = data
    queries = torch.cat([x_test, torch.tensor([-10.0, 20.0])])  # two far outside the data
    w = kernel_weights(queries, x_train, kernel, width)
    assert w.shape == (len(queries), len(x_train))
    assert torch.isfinite(w).all() and (w >= 0).all()
    sums = w.sum(-1)
    assert torch.all(torch.isclose(sums, torch.ones(())) | (sums == 0))
    if kernel in ("gaussian", "constant"):  # infinite support: never an empty row
        assert torch.allclose(sums, torch.ones(()))


@pytest.mark.parametrize("kernel", ["boxcar", "epanechnikov"])
def test_empty_window_gives_zero_row_not_nan(kernel):
    keys = torch.tensor([0.0, 1.0, 2.0])
    queries = torch.tensor([0.1, 10.0])  # the second has no key within one width
    w = kernel_weights(queries, keys, kernel, width=0.5)
    assert torch.equal(w[1], torch.zeros(3))
    assert torch.isclose(w[0].sum(), torch.tensor(1.0))
    y_hat = NWKernelRegression(kernel, width=0.5)(queries, keys, torch.tensor([1.0, 2.0, 3.0]))
    assert torch.isfinite(y_hat).all() and y_hat[1] == 0


def test_boxcar_is_a_uniform_average_inside_the_window():
    keys = torch.tensor([0.0, 0.4, 0.9, 3.0])
    w = kernel_weights(torch.tensor([0.5]), keys, "boxcar", width=0.5)
    assert torch.allclose(w, torch.tensor([[1 / 3, 1 / 3, 1 / 3, 0.0]]))


def test_epanechnikov_weights_follow_one_minus_u_squared():
    keys = torch.tensor([0.0, 0.5, 2.0])
    w = kernel_weights(torch.tensor([0.0]), keys, "epanechnikov", width=1.0)
    k = torch.tensor([1.0, 0.75, 0.0])
    assert torch.allclose(w[0], k / k.sum())


def test_constant_kernel_is_average_pooling(data):
    x_train, y_train, x_test, _ = data
    y_hat = NWKernelRegression("constant")(x_test, x_train, y_train)
    assert torch.allclose(y_hat, y_train.mean().expand(len(x_test)))


@pytest.mark.parametrize("w", [0.3, 1.0, 4.0])
def test_gaussian_matches_the_seed_formula(data, w):
    x_train, y_train, x_test, _ = data
    expected = seed_weights(x_test, x_train, w)
    assert torch.allclose(kernel_weights(x_test, x_train, "gaussian", 1 / w), expected, atol=1e-6)
    y_hat = NWKernelRegression(width=1 / w)(x_test, x_train, y_train)
    assert torch.allclose(y_hat, expected @ y_train, atol=1e-5)


def test_per_query_keys_match_shared_keys(data):
    x_train, y_train, x_test, _ = data
    net = NWKernelRegression(width=0.3)
    shared = net(x_test, x_train, y_train)  # matmul path
    tiled = net(x_test, x_train.repeat(len(x_test), 1), y_train.repeat(len(x_test), 1))  # bmm path
    assert torch.allclose(shared, tiled, atol=1e-6)


# --- parity with d2l ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def d2l_nw(d2l):
    """d2l-zh 2.0's NWKernelRegression (section 10.2 of the Chinese book, the source notes).

    d2l 1.0.3's ``torch.py`` does not export this class, so it is rebuilt here as in the
    book, with the softmax taken by d2l's own ``masked_softmax``.
    """

    class D2LNWKernelRegression(nn.Module):
        def __init__(self, w):
            super().__init__()
            self.w = nn.Parameter(torch.tensor([float(w)]))

        def forward(self, queries, keys, values):
            queries = queries.repeat_interleave(keys.shape[1]).reshape((-1, keys.shape[1]))
            scores = -((queries - keys) * self.w) ** 2 / 2
            self.attention_weights = d2l.masked_softmax(scores.unsqueeze(0), None)[0]
            return torch.bmm(self.attention_weights.unsqueeze(1), values.unsqueeze(-1)).reshape(-1)

    return D2LNWKernelRegression


@pytest.mark.parametrize("w", [0.5, 2.0, 7.0])
def test_matches_d2l_nw_kernel_regression_forward_and_gradient(data, d2l_nw, w):
    x_train, y_train, _, _ = data
    keys, values = leave_one_out(x_train, y_train)
    ours, theirs = NWKernelRegression(width=1 / w, learnable=True), d2l_nw(w)
    y_ours, y_theirs = ours(x_train, keys, values), theirs(x_train, keys, values)
    assert torch.allclose(y_ours, y_theirs, atol=1e-5)
    ((y_ours - y_train) ** 2).sum().backward()
    ((y_theirs - y_train) ** 2).sum().backward()
    assert torch.allclose(ours.w.grad, theirs.w.grad, rtol=1e-4, atol=1e-5)
    with A.record_attention(ours) as rec:
        ours(x_train, keys, values)
    assert torch.allclose(rec.last("NWKernelRegression")[0, 0], theirs.attention_weights, atol=1e-6)


def test_d2l_style_training_gives_the_same_width(data, d2l_nw):
    """Five SGD steps (lr 0.5, summed loss) as in the book end at the same w."""
    x_train, y_train, _, _ = data
    keys, values = leave_one_out(x_train, y_train)
    nets = [NWKernelRegression(width=1 / 0.8, learnable=True), d2l_nw(0.8)]
    for net in nets:
        opt = torch.optim.SGD(net.parameters(), lr=0.5)
        for _ in range(5):
            opt.zero_grad()
            ((net(x_train, keys, values) - y_train) ** 2).sum().backward()
            opt.step()
    assert torch.allclose(nets[0].w.abs(), nets[1].w.abs(), rtol=1e-3)


# --- learning the width ---------------------------------------------------------------------

@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_learnable_width_gets_finite_gradients(data, kernel):
    x_train, y_train, _, _ = data
    keys, values = leave_one_out(x_train, y_train)
    net = NWKernelRegression(kernel, width=0.5, learnable=True)
    ((net(x_train, keys, values) - y_train) ** 2).mean().backward()
    assert net.w.grad is not None and torch.isfinite(net.w.grad).all() and net.w.grad.abs() > 0
    assert NWKernelRegression(width=0.5).w is None  # fixed width: nothing to train


@pytest.mark.parametrize("kernel", ["boxcar", "constant"])
def test_flat_kernels_refuse_a_learnable_width_but_work_fixed(data, kernel):
    """Their weights do not move with the width, so loss.backward() would fail with PyTorch's
    "does not require grad"; the module says why in __init__ instead, and a fixed width works."""
    x_train, y_train, _, _ = data
    keys, values = leave_one_out(x_train, y_train)
    w = torch.tensor([2.0], requires_grad=True)
    loss = ((kernel_weights(x_train, keys, kernel, 1.0 / w) * values).sum(-1) - y_train).pow(2).sum()
    assert not loss.requires_grad  # the reason: no path from the loss back to the width
    with pytest.raises(ValueError, match=rf"kernel '{kernel}' cannot have a learnable width"):
        NWKernelRegression(kernel, width=0.5, learnable=True)
    fixed = NWKernelRegression(kernel, width=0.5)(x_train, keys, values)  # (n,)
    assert fixed.shape == y_train.shape and torch.isfinite(fixed).all()


def train(net, x, keys, values, y, epochs=5, lr=0.5):
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    losses = []
    for _ in range(epochs):
        opt.zero_grad()
        loss = ((net(x, keys, values) - y) ** 2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        losses.append(float(((net(x, keys, values) - y) ** 2).sum()))
    return losses


def test_training_lowers_the_loss_and_beats_average_pooling(data):
    x_train, y_train, x_test, y_truth = data
    keys, values = leave_one_out(x_train, y_train)
    net = NWKernelRegression(width=1.0, learnable=True)
    losses = train(net, x_train, keys, values, y_train)
    assert losses[-1] < 0.8 * losses[0]
    assert net.width < 1.0
    with torch.no_grad():
        test_mse = float(((net(x_test, x_train, y_train) - y_truth) ** 2).mean())
    assert test_mse < 0.5 * float(((y_train.mean() - y_truth) ** 2).mean())


def test_without_leave_one_out_the_width_collapses(data):
    """With itself among the keys, each point's best 'neighbour' is itself: width -> 0 wins."""
    x_train, y_train, _, _ = data
    n = len(x_train)
    net = NWKernelRegression(width=1.0, learnable=True)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    widths, losses = [], []
    for _ in range(20):
        opt.zero_grad()
        loss = ((net(x_train, x_train.expand(n, n), y_train.expand(n, n)) - y_train) ** 2).sum()
        loss.backward()
        opt.step()
        widths.append(net.width)
        losses.append(loss.item())
    assert all(b < a for a, b in zip(widths, widths[1:], strict=False))  # keeps shrinking
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False))
    # The optimum it heads for: a tiny width copies every label (training loss ~ 0) ...
    tiny = kernel_weights(x_train, x_train, "gaussian", 1e-3)
    assert tiny.diagonal().min() > 0.99
    assert float(((tiny @ y_train - y_train) ** 2).sum()) < 1e-3
    # ... while leave-one-out scores the same tiny width as poor, worse than a moderate width.
    assert float(loo_cv_mse(x_train, y_train, "gaussian", [1e-3])) > 1.5 * float(
        loo_cv_mse(x_train, y_train, "gaussian", [0.3]))


# --- leave-one-out helpers ------------------------------------------------------------------

def test_leave_one_out_drops_exactly_the_diagonal():
    x, y = torch.arange(5.0), torch.arange(5.0) * 10
    keys, values = leave_one_out(x, y)
    assert keys.shape == values.shape == (5, 4)
    for i in range(5):
        assert i not in keys[i].tolist()
        assert sorted(keys[i].tolist() + [float(i)]) == x.tolist()
    assert torch.equal(values, keys * 10)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_loo_cv_mse_matches_an_explicit_loop(data, kernel):
    x, y, _, _ = data
    widths = [0.05, 0.3, 1.5]
    got = loo_cv_mse(x, y, kernel, widths)
    assert got.shape == (3,)
    for j, width in enumerate(widths):
        errs = []
        for i in range(len(x)):
            rest = torch.arange(len(x)) != i
            w = kernel_weights(x[i:i + 1], x[rest], kernel, width)
            errs.append(float((w @ y[rest] - y[i]) ** 2))
        assert abs(float(got[j]) - sum(errs) / len(errs)) < 1e-4


def test_cross_validated_width_has_lower_test_error_than_extremes(data):
    x_train, y_train, x_test, y_truth = data
    widths = torch.logspace(-1.5, 0.5, 21).tolist()
    cv = loo_cv_mse(x_train, y_train, "gaussian", widths)
    best = widths[int(cv.argmin())]
    assert widths[0] < best < widths[-1]  # an interior minimum

    def test_mse(width):
        y_hat = kernel_weights(x_test, x_train, "gaussian", width) @ y_train
        return float(((y_hat - y_truth) ** 2).mean())

    assert test_mse(best) < min(test_mse(widths[0]), test_mse(widths[-1]))


# --- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call, exc, match", [
    (lambda: kernel_weights(torch.rand(3), torch.rand(4), "tophat"), ValueError,
     r"kernel must be one of \['boxcar', 'constant', 'epanechnikov', 'gaussian'\], got 'tophat'"),
    (lambda: NWKernelRegression("Gaussian"), ValueError, r"kernel must be one of .*got 'Gaussian'"),
    (lambda: kernel_weights(torch.rand(3), torch.rand(4), width=0), ValueError,
     r"width must be positive, got 0"),
    (lambda: kernel_weights(torch.rand(3), torch.rand(4), width=-0.5), ValueError,
     r"width must be positive, got -0.5"),
    (lambda: kernel_weights(torch.rand(3), torch.rand(4), width=torch.tensor([-1.0])), ValueError,
     r"width must be positive, got \[-1.0\]"),
    (lambda: kernel_weights(torch.rand(3), torch.rand(4), width="wide"), TypeError,
     r"width must be a number, got str"),
    (lambda: NWKernelRegression(width=0.0), ValueError, r"width must be positive, got 0.0"),
    (lambda: NWKernelRegression("boxcar", learnable=True), ValueError,
     r"kernel 'boxcar' cannot have a learnable width: .*no gradient"),
    (lambda: NWKernelRegression("constant", width=0.5, learnable=True), ValueError,
     r"kernel 'constant' cannot have a learnable width"),
    (lambda: loo_cv_mse(torch.rand(5), torch.rand(5), widths=[0.5, 0]), ValueError,
     r"width must be positive, got 0"),
    (lambda: loo_cv_mse(torch.rand(5), torch.rand(5), widths=[]), ValueError,
     r"widths must hold at least one width"),
    (lambda: kernel_weights(torch.rand(3, 1), torch.rand(4)), ValueError,
     r"queries must have shape \(n_queries,\) \(1-D\), got a 2-D tensor of shape \(3, 1\)"),
    (lambda: kernel_weights(torch.rand(3), torch.rand(4, 5)), ValueError,
     r"keys of shape \(4, 5\) must have one row per query \(queries has shape \(3,\)\)"),
    (lambda: kernel_weights([0.1, 0.2], torch.rand(4)), TypeError,
     r"queries must be a torch.Tensor of shape \(n_queries,\), got list"),
    (lambda: NWKernelRegression()(torch.rand(3), torch.rand(4), torch.rand(5)), ValueError,
     r"values must match keys: keys \(4,\), values \(5,\)"),
    (lambda: NWKernelRegression()(torch.rand(3), torch.rand(3, 4), torch.rand(4)), ValueError,
     r"values must match keys: keys \(3, 4\), values \(4,\)"),
    (lambda: NWKernelRegression()(torch.rand(3), [0.0, 1.0], torch.rand(2)), TypeError,
     r"keys must be a torch.Tensor of shape \(n_keys,\) or \(n_queries, n_keys\), got list"),
    (lambda: leave_one_out(torch.rand(5), torch.rand(4)), ValueError,
     r"x and y must have the same shape \(n,\) with n >= 2, got x \(5,\) and y \(4,\)"),
    (lambda: leave_one_out(torch.rand(5, 2), torch.rand(5, 2)), ValueError,
     r"x must have shape \(n,\)"),
])
def test_readable_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
