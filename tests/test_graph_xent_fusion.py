"""The fused softmax cross-entropy (Note [Fused softmax cross-entropy] in graph/xent_fusion.py): a graph with the
fusion against the same graph without it and against NumPy formulas written here (loss, gradients, SGD steps),
reductions, ignore_index, out-of-range targets, special values, the cases left unfused, and the graph without numba."""

import sys

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.graph import jit

pytest.importorskip("numba")
F = flow.nn.functional
_rng = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FLOW_KERNEL_CACHE", str(tmp_path_factory.getbasetemp() / "kernel_cache"))


def np_cross_entropy(z, t, reduction="mean", ignore_index=-100):
    """Loss and d loss / d z of softmax cross-entropy, in float64."""
    z = z.astype(np.float64)
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    logp = z - z.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    losses = np.where(valid, -logp[np.arange(len(t)), safe], 0.0)
    count = valid.sum() if reduction == "mean" else 1
    grad = np.exp(logp)
    grad[np.arange(len(t)), safe] -= 1
    grad = np.where(valid[:, None], grad, 0.0) / count
    return losses.sum() / count, grad


class _Train(flow.nn.Graph):
    def __init__(self, model, lr, fuse, **loss_args):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=lr))
        self.config.allow_fuse_softmax_cross_entropy(fuse)
        self.loss_args = loss_args

    def build(self, x, t):
        loss = F.cross_entropy(self.model(x), t, **self.loss_args)
        loss.backward()
        return loss


def _ops(g):
    return [n.op_type for n in g._last.ir.nodes if n.kind == "user"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss_args", [{}, {"reduction": "sum"}, {"ignore_index": 3}],
                         ids=["mean", "sum", "ignore_index"])
def test_a_training_step_matches_the_unfused_graph_and_numpy(dtype, loss_args):
    w0, b0 = _rng.standard_normal((5, 6)).astype(dtype), _rng.standard_normal(5).astype(dtype)
    x, t = _rng.standard_normal((8, 6)).astype(dtype), np.array([0, 3, 4, 1, 3, 2, 0, 4])
    models = []
    for _ in range(2):
        m = flow.nn.Linear(6, 5).to(getattr(flow, np.dtype(dtype).name))
        m.weight.numpy()[...], m.bias.numpy()[...] = w0, b0
        models.append(m)
    steps = [_Train(m, 0.5, fuse, **loss_args) for m, fuse in zip(models, (True, False))]
    w, b = w0.astype(np.float64), b0.astype(np.float64)
    tol = {"rtol": 2e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-13}
    for _ in range(3):
        losses = [g(flow.tensor(x), flow.tensor(t)) for g in steps]
        loss, dz = np_cross_entropy(x.astype(np.float64) @ w.T + b, t, **loss_args)
        w, b = w - 0.5 * dz.T @ x, b - 0.5 * dz.sum(0)
        np.testing.assert_allclose(losses[0].numpy(), loss, **tol)
        np.testing.assert_allclose(losses[0].numpy(), losses[1].numpy(), **tol)
    np.testing.assert_allclose(models[0].weight.numpy(), w, **tol)
    np.testing.assert_allclose(models[0].bias.numpy(), b, **tol)
    np.testing.assert_allclose(models[0].weight.numpy(), models[1].weight.numpy(), **tol)
    ops = _ops(steps[0])
    assert "fused_softmax_cross_entropy" in ops and "fused_softmax_cross_entropy_grad" in ops
    assert not {"log_softmax", "nll", "nll_grad", "log_softmax_grad"} & set(ops)


def test_an_inference_graph_fuses_the_forward_pair():
    g = flow.nn.Graph.trace(lambda z, t: F.cross_entropy(z, t))
    g.config.allow_fuse_softmax_cross_entropy(True)
    z, t = _rng.standard_normal((4, 7)), np.array([6, 0, 2, 2])
    np.testing.assert_allclose(g(flow.tensor(z), flow.tensor(t)).numpy(), np_cross_entropy(z, t)[0], rtol=1e-13)
    assert _ops(g) == ["fused_softmax_cross_entropy"]
    assert "fuse softmax cross-entropy: 1 log_softmax + nll (and their grads) fused" in repr(g)


def test_special_values_agree_with_the_unfused_graph():
    z = _rng.standard_normal((5, 4))
    z[1, 2], z[2, 0], z[3, :] = np.nan, np.inf, -np.inf
    z[4, 1] = 1e300
    t = np.array([0, 1, 2, 3, 1])
    graphs = [flow.nn.Graph.trace(lambda z, t: F.cross_entropy(z, t, reduction="sum")) for _ in range(2)]
    graphs[0].config.allow_fuse_softmax_cross_entropy(True)
    with np.errstate(all="ignore"):
        fused, plain = (g(flow.tensor(z), flow.tensor(t)).numpy() for g in graphs)
    assert np.isnan(fused) and np.isnan(plain)
    z[1:4] = 0.0
    with np.errstate(all="ignore"):
        fused, plain = (g(flow.tensor(z), flow.tensor(t)).numpy() for g in graphs)
    np.testing.assert_allclose(fused, plain, rtol=1e-13)
    np.testing.assert_allclose(fused, np_cross_entropy(z, t, "sum")[0], rtol=1e-13)


def test_an_out_of_range_target_raises_nll_s_error():
    g = flow.nn.Graph.trace(lambda z, t: F.cross_entropy(z, t))
    g.config.allow_fuse_softmax_cross_entropy(True)
    with pytest.raises(IndexError, match="nll_loss: Target 9 is out of bounds."):
        g(flow.tensor(_rng.standard_normal((3, 4))), flow.tensor(np.array([1, 9, 0])))


@pytest.mark.parametrize("case", ["weight", "none", "log_probs_returned", "three_dims"])
def test_the_cases_left_unfused(case):
    z, t = _rng.standard_normal((4, 3)), np.array([0, 1, 2, 1])
    if case == "weight":
        def f(z, t):
            return F.cross_entropy(z, t, weight=flow.tensor(np.array([1.0, 2.0, 0.5])))
    elif case == "none":
        def f(z, t):
            return F.cross_entropy(z, t, reduction="none")
    elif case == "log_probs_returned":
        def f(z, t):
            logp = F.log_softmax(z, dim=1)
            return F.nll_loss(logp, t), logp
    else:
        z, t = _rng.standard_normal((2, 3, 2)), np.array([[0, 1], [2, 2]])

        def f(z, t):
            return F.cross_entropy(z, t)
    fused, plain = flow.nn.Graph.trace(f), flow.nn.Graph.trace(f)
    fused.config.allow_fuse_softmax_cross_entropy(True)
    got, expected = fused(flow.tensor(z), flow.tensor(t)), plain(flow.tensor(z), flow.tensor(t))
    for a, b in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert "fused_softmax_cross_entropy" not in _ops(fused)


def test_without_numba_the_graph_runs_unfused(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.setattr(jit, "_numba_state", [])
    g = flow.nn.Graph.trace(lambda z, t: F.cross_entropy(z, t))
    g.config.allow_fuse_softmax_cross_entropy(True)
    z, t = _rng.standard_normal((4, 3)), np.array([0, 1, 2, 1])
    np.testing.assert_allclose(g(flow.tensor(z), flow.tensor(t)).numpy(), np_cross_entropy(z, t)[0], rtol=1e-13)
    assert "fused_softmax_cross_entropy" not in _ops(g)
    assert "fuse softmax cross-entropy: numba is not installed, 1 cross-entropy(s) left unfused" in repr(g)
