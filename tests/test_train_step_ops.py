"""The ops of an eager training step (issue #7, workload W5): which ops one MLP step dispatches, and the
grad formulas, kernels and optimizer op that keep that list short, against NumPy and hand-computed values.

Ops are recorded with a Python dispatch mode active for the duration of the step (as in
test_ops_coverage.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.autograd import gradcheck, gradgradcheck
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.interpreters.op_interp_util import dispatch

F = flow.nn.functional


class _Recorder(flow.DispatchMode):
    """The (op type, in place) of every op dispatched inside the ``with`` block."""

    def __enter__(self):
        self.ops = []
        return super().__enter__()

    def __flow_dispatch__(self, op, types, args, kwargs):
        self.ops.append((op.name, "out" in kwargs))
        return op(*args, **kwargs)

    @property
    def types(self):
        return [t for t, _ in self.ops]


def _mlp(n_in=3, n_hidden=4, n_out=2, dtype=flow.float32):
    flow.manual_seed(0)
    return flow.nn.Sequential(flow.nn.Linear(n_in, n_hidden), flow.nn.ReLU(), flow.nn.Linear(n_hidden, n_out)).to(
        dtype=dtype)


# ---- the ops of one step ----------------------------------------------------------------------------------
def test_an_mlp_train_step_dispatches_twenty_ops():
    model = _mlp()
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    x = flow.tensor(np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32))
    t = flow.tensor([1, 0])

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), t).backward()
        opt.step()

    step()  # .grad None -> set: the same ops as every later step
    with _Recorder() as rec:
        step()
    assert rec.types == [
        "linear", "relu", "linear", "log_softmax", "nll",  # forward: "mean" inside nll
        "constant",  # the engine's seed, ones
        "nll_grad", "log_softmax_grad",
        "matmul", "transpose", "matmul", "reduce_sum",  # fc2: dx, dW (no reshapes), db (no keepdims, no copy)
        "relu_grad",
        "transpose", "matmul", "reduce_sum",  # fc1: dW, db (x needs no grad)
        "sgd_update", "sgd_update", "sgd_update", "sgd_update",  # one in-place op per parameter
    ]
    assert [inplace for op, inplace in rec.ops if op == "sgd_update"] == [True] * 4


def test_the_step_matches_numpy():
    rng = np.random.default_rng(1)
    model = _mlp(5, 7, 3, flow.float64)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    w1, b1, w2, b2 = (p.numpy().copy() for p in model.parameters())
    xa, ta = rng.standard_normal((4, 5)), np.array([2, 0, 1, 2])
    for _ in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(model(flow.tensor(xa)), flow.tensor(ta))
        loss.backward()
        opt.step()
        h = xa @ w1.T + b1
        r = np.maximum(h, 0)
        z = r @ w2.T + b2
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        np.testing.assert_allclose(loss.item(), -np.log(p[np.arange(4), ta]).mean(), rtol=1e-12)
        g = p.copy()
        g[np.arange(4), ta] -= 1
        g /= 4
        gh = (g @ w2) * (h > 0)
        for a, grad in ((w1, gh.T @ xa), (b1, gh.sum(0)), (w2, g.T @ r), (b2, g.sum(0))):
            a -= 0.1 * grad
        for got, want in zip(model.parameters(), (w1, b1, w2, b2)):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)


# ---- reduction grads: expand views ----------------------------------------------------------------------
def test_sum_backward_is_an_expand_and_accumulates_into_an_owned_grad():
    x = flow.tensor(np.arange(6.0).reshape(2, 3)).requires_grad_()
    with _Recorder() as rec:
        x.sum().backward()
    assert rec.types == ["reduce_sum", "constant", "expand", "copy"]  # the read-only view is copied into .grad
    first = x.grad
    assert first.numpy().flags.writeable and first.numpy().base is None
    x.sum().backward()  # accumulated in place into the same buffer
    assert x.grad is first
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 5.0))


@pytest.mark.parametrize("dim, keepdim", [(None, False), ((0,), False), ((1,), False), ((1,), True),
                                          ((0, 2), False), ((2,), False), ((-1, 0), True)])
def test_sum_and_mean_grads_by_hand(dim, keepdim):
    a = np.random.default_rng(2).standard_normal((2, 3, 4))
    w = np.random.default_rng(3).standard_normal(a.sum(axis=dim, keepdims=keepdim).shape)
    for reduce, scale in ((flow.sum, 1.0), (flow.mean, None)):
        x = flow.tensor(a).requires_grad_()
        y = reduce(x) if dim is None else reduce(x, dim, keepdim)
        (y * flow.tensor(w)).sum().backward()
        kept = w if keepdim or dim is None else np.expand_dims(w, tuple(d % 3 for d in dim))
        count = a.size // w.size
        expected = np.broadcast_to(kept, a.shape) * (scale if scale is not None else 1.0 / count)
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-15)


def test_sum_and_mean_grads_pass_gradcheck_twice():
    x = flow.tensor(np.random.default_rng(4).standard_normal((3, 2, 4))).requires_grad_()
    for fn in (lambda t: (t.sum(1) ** 2).sum(), lambda t: (t.mean((0, 2), keepdim=True) * t).sum(),
               lambda t: t.sum() * t.mean(2).sum()):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


def test_an_expanded_grad_flows_through_later_grad_functions():
    x = flow.tensor(np.array([[1.0, -2.0], [3.0, 4.0]])).requires_grad_()
    y = flow.relu(x).sum(1)  # relu_grad receives the expand view of the sum's grad
    (y * flow.tensor([2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 0.0], [3.0, 3.0]])


# ---- linear / broadcast grads ---------------------------------------------------------------------------
@pytest.mark.parametrize("x_shape, w_shape, b_shape", [
    ((4, 3), (2, 3), (2,)), ((5, 4, 3), (2, 3), (2,)), ((3,), (2, 3), (2,)), ((4, 3), (3,), ()),
    ((2, 4, 3), (3,), (1,)), ((4, 3), (2, 3), (4, 1)), ((4, 3), (2, 3), (1, 2)), ((4, 3), (2, 3), None),
])
def test_linear_grads_pass_gradcheck(x_shape, w_shape, b_shape):
    rng = np.random.default_rng(5)
    args = [flow.tensor(rng.standard_normal(s)).requires_grad_() for s in (x_shape, w_shape)]
    if b_shape is not None:
        args.append(flow.tensor(rng.standard_normal(b_shape)).requires_grad_())
    assert gradcheck(lambda *a: F.linear(*a), tuple(args))
    assert gradgradcheck(lambda *a: F.linear(*a), tuple(args))


def test_bias_grads_are_owned_by_the_leaf_without_a_copy():
    lin = _mlp(3, 4, 2, flow.float64)[0]
    x = flow.tensor(np.ones((5, 3)))
    with _Recorder() as rec:
        lin(x).sum().backward()
    assert "copy" not in rec.types and "reshape" not in rec.types
    np.testing.assert_array_equal(lin.bias.grad.numpy(), np.full(4, 5.0))
    np.testing.assert_array_equal(lin.weight.grad.numpy(), np.full((4, 3), 5.0))


@pytest.mark.parametrize("x_shape, y_shape", [((2, 3, 4), (3, 1)), ((2, 3, 4), (4,)), ((3, 1), (2, 1, 4)),
                                              ((1, 1), (2, 3)), ((1,), ()), ((2, 0), (1, 0))])
def test_broadcast_operands_get_grads_of_their_shape(x_shape, y_shape):
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal(x_shape), rng.standard_normal(y_shape)
    x, y = flow.tensor(a).requires_grad_(), flow.tensor(b).requires_grad_()
    out_shape = np.broadcast_shapes(x_shape, y_shape)
    w = rng.standard_normal(out_shape)
    ((x * y) * flow.tensor(w)).sum().backward()

    def summed(g, shape):  # by hand: sum the broadcast dims away
        lead = g.ndim - len(shape)
        g = g.sum(tuple(range(lead)))
        return g.sum(tuple(i for i, d in enumerate(shape) if d == 1), keepdims=True).reshape(shape)

    np.testing.assert_allclose(x.grad.numpy(), summed(w * b, x_shape), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), summed(w * a, y_shape), rtol=1e-14, atol=1e-14)


# ---- relu_grad ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (64, 256)])  # below and above the bit-mask size (Note [relu_grad ...])
def test_relu_grad_is_dy_where_y_is_positive_else_plus_zero(dtype, shape):
    rng = np.random.default_rng(7)
    dy = rng.standard_normal(shape).astype(dtype)
    y = np.maximum(rng.standard_normal(shape), 0).astype(dtype)
    dy.flat[:6] = [np.nan, np.nan, np.inf, -np.inf, -1.0, -0.0]
    y.flat[:6] = [1.0, 0.0, 0.0, 0.0, 0.0, 2.0]
    y.flat[6] = np.nan  # relu(nan): dropped, as y > 0 is False (OneFlow's relu_grad)
    op = OpBuilder("relu_grad").input("dy").input("y").output("dx").build()
    for _ in range(2):
        dx = dispatch(op, (flow.tensor(dy), flow.tensor(y)))[0].numpy()
        expected = np.where(y > 0, dy, dtype(0))
        assert dx.dtype == dtype and dx.flags.c_contiguous and dx.base is None
        np.testing.assert_array_equal(dx.view(f"i{dx.itemsize}"), expected.view(f"i{dx.itemsize}"))  # bit for bit


def test_relu_grad_of_a_broadcast_dy():
    y = np.maximum(np.random.default_rng(8).standard_normal((64, 64)), 0).astype(np.float32)
    x = flow.tensor(y).requires_grad_()
    flow.relu(x).sum().backward()  # dy is a (64, 64) expand view of a 0-d one
    np.testing.assert_array_equal(x.grad.numpy(), (y > 0).astype(np.float32))


# ---- nll with its reduction (Note [The reduction of nll]) -----------------------------------------------
def _logp(rng, shape):
    z = rng.standard_normal(shape)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


@pytest.mark.parametrize("targets, ignore_index", [([0, 3, 1, 1, 2], 2), ([0, 3, 1, 1, 3], 2),
                                                   ([0, 3, 1, 1, 2], -100), ([2, 2, 2, 2, 2], 2)])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_reductions_by_hand(targets, ignore_index, reduction):
    lp = _logp(np.random.default_rng(9), (5, 4))
    t = np.array(targets)
    keep = t != ignore_index
    per = np.where(keep, -lp[np.arange(5), np.where(keep, t, 0)], 0.0)
    with np.errstate(invalid="ignore"):
        expected = {"none": per, "sum": per.sum(), "mean": per.sum() / keep.sum()}[reduction]
    x = flow.tensor(lp).requires_grad_()
    loss = F.nll_loss(x, flow.tensor(t), ignore_index=ignore_index, reduction=reduction)
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-14)
    g = np.random.default_rng(10).standard_normal(per.shape) if reduction == "none" else np.float64(1.5)
    loss.backward(flow.tensor(g))
    dx = np.zeros((5, 4))
    with np.errstate(divide="ignore"):  # every target ignored: 1.5 / 0, but no element takes it
        scale = g / keep.sum() if reduction == "mean" else g
    dx[np.arange(5)[keep], t[keep]] = -(np.broadcast_to(scale, (5,))[keep])
    np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-14)


def test_nll_uint8_targets_and_a_zero_total_weight():
    lp = _logp(np.random.default_rng(11), (3, 4))
    t = np.array([1, 3, 1], np.uint8)
    loss = F.nll_loss(flow.tensor(lp), flow.tensor(t))
    np.testing.assert_allclose(loss.item(), -lp[[0, 1, 2], [1, 3, 1]].mean(), rtol=1e-14)
    x = flow.tensor(lp).requires_grad_()
    w = flow.tensor(np.array([1.0, 0.0, 1.0, 0.0]))  # every target's class weighs 0: 0 / 0, as PyTorch
    loss = F.nll_loss(x, flow.tensor(t), weight=w)
    assert np.isnan(loss.item())
    loss.backward()
    assert np.isnan(x.grad.numpy()[[0, 1, 2], [1, 3, 1]]).all()  # -0 * 1 / 0
    assert (x.grad.numpy()[:, [0, 2]] == 0).all()


def test_nll_ops_check_their_reduction_and_out_grad():
    x, t = flow.tensor(np.zeros((2, 3))), flow.tensor([0, 1])
    nll = OpBuilder("nll").input("input").input("target").output("output").build()
    with pytest.raises(RuntimeError, match=r"nll.*reduction must be one of 'none', 'sum', 'mean', got 'max'"):
        dispatch(nll, (x, t), AttrMap({"reduction": "max"}))
    grad = OpBuilder("nll_grad").input("out_grad").input("target").output("in_grad").build()
    with pytest.raises(RuntimeError, match=r"nll_grad.*out_grad must have shape \[\] \(a reduced loss\) \[\], "
                                           r"got \[2\]"):
        dispatch(grad, (flow.tensor([1.0, 1.0]), t), AttrMap({"reduction": "mean", "like_shape": (2, 3)}))
    with pytest.raises(RuntimeError, match=r"nll_grad.*out_grad must have the target's shape \[2\], got \[\]"):
        dispatch(grad, (flow.tensor(1.0), t), AttrMap({"reduction": "none", "like_shape": (2, 3)}))


# ---- sgd_update -----------------------------------------------------------------------------------------
_SGD = OpBuilder("sgd_update").input("model").input("model_diff").output("out").build()
_SGD_LR = OpBuilder("sgd_update").input("model").input("model_diff").input("learning_rate").output("out").build()


def test_sgd_update_in_place_writes_the_parameters_buffer():
    p = flow.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    buffer, version = p.numpy(), p._version
    g = flow.tensor(np.array([0.5, -1.0, 2.0], np.float32))
    attrs = AttrMap({"learning_rate_val": 0.1})
    for k in range(1, 3):  # the general path, then the fast path
        assert dispatch(_SGD, (p, g), attrs, (p,))[0] is p
        assert p.numpy() is buffer and p._version == version + k
    expected = np.array([1.0, 2.0, 3.0], np.float32)
    for _ in range(2):
        expected -= np.float32(0.1) * np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_array_equal(p.numpy(), expected)


def test_sgd_update_errors():
    p, g = flow.tensor(np.zeros((2, 3))), flow.tensor(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match=r"sgd_update.*model_diff must have the model's shape \[2, 3\], got \[3\]"):
        dispatch(_SGD, (p, flow.tensor(np.zeros(3))))
    with pytest.raises(RuntimeError, match=r"sgd_update.*model_diff must have the model's dtype \(float64\), got "
                                           r"float32"):
        dispatch(_SGD, (p, flow.tensor(np.zeros((2, 3), np.float32))))
    with pytest.raises(RuntimeError, match=r"sgd_update.*learning_rate must have one element, got shape \[2\]"):
        dispatch(_SGD_LR, (p, g, flow.tensor([0.1, 0.2])))
    with pytest.raises(RuntimeError, match=r"sgd_update.*learning_rate must have a floating dtype, got int64"):
        dispatch(_SGD_LR, (p, g, flow.tensor(1)))
    p.requires_grad_()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        dispatch(_SGD, (p, g), None, (p,))  # outside no_grad, as any in-place op on a leaf
    np.testing.assert_array_equal(p.numpy(), np.zeros((2, 3)))


@pytest.mark.parametrize("dtype, rtol", [(np.float16, 1e-3), (np.float32, 1e-6), (np.float64, 1e-15)])
@pytest.mark.parametrize("kwargs", [{"lr": 0.1}, {"lr": 0.1, "maximize": True}, {"lr": 0.1, "weight_decay": 0.2},
                                    {"lr": 0.05, "momentum": 0.9, "nesterov": True}])
def test_sgd_steps_in_every_floating_dtype(dtype, rtol, kwargs):
    w0 = np.array([[0.3, -0.8, 1.2], [0.5, 2.0, -1.1]])
    g = np.array([[0.5, -1.0, 2.0], [-0.3, 0.7, -2.5]])
    w = flow.tensor(w0.astype(dtype)).requires_grad_()
    opt = flow.optim.SGD([w], **kwargs)
    ref, buf = w0.astype(dtype).astype(np.float64), None
    for _ in range(3):
        w.grad = flow.tensor(g.astype(dtype))
        opt.step()
        d = -g if kwargs.get("maximize") else g
        d = d + kwargs.get("weight_decay", 0.0) * ref
        if kwargs.get("momentum"):
            buf = d if buf is None else kwargs["momentum"] * buf + d
            d = d + kwargs["momentum"] * buf
        ref = ref - kwargs["lr"] * d
        assert w.dtype == flow.tensor(w0.astype(dtype)).dtype
        np.testing.assert_allclose(w.numpy().astype(np.float64), ref, rtol=rtol, atol=rtol)


def test_a_graph_writes_sgd_updates_straight_into_the_parameters():
    model = _mlp(3, 4, 2, flow.float64)
    eager = _mlp(3, 4, 2, flow.float64)
    opt, eager_opt = flow.optim.SGD(model.parameters(), lr=0.1), flow.optim.SGD(eager.parameters(), lr=0.1)

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x, t):
            loss = F.cross_entropy(self.model(x), t)
            loss.backward()
            return loss

    graph = Step()
    rng = np.random.default_rng(12)
    buffers = [p.numpy() for p in model.parameters()]
    for _ in range(3):
        x, t = flow.tensor(rng.standard_normal((5, 3))), flow.tensor(rng.integers(0, 2, 5))
        loss = graph(x, t)
        eager_opt.zero_grad()
        eager_loss = F.cross_entropy(eager(x), t)
        eager_loss.backward()
        eager_opt.step()
        assert loss.item() == eager_loss.item()
        for p, q in zip(model.parameters(), eager.parameters()):
            np.testing.assert_array_equal(p.numpy(), q.numpy())
    assert all(p.numpy() is b for p, b in zip(model.parameters(), buffers))
    assert "_copyto(" not in graph.plan_source
    assert any("in-place assigns: 4 of 4" in r for r in graph._last.reports)


class _Fc(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = flow.nn.Linear(3, 2).double()


def test_a_graph_computes_sgd_updates_in_the_dead_gradients_buffer():
    """Note [Writers that consume an input]: lr * grad goes into the gradient's buffer, unless the gradient is
    an output of the graph or may be a graph input's memory."""
    flow.manual_seed(0)
    module = _Fc()
    w = module.fc.weight

    class Step(flow.nn.Graph):
        def __init__(self, return_grad):
            super().__init__()
            self.module = module
            self.return_grad = return_grad

        def build(self, x):
            loss = (self.module.fc(x) ** 2).sum()
            loss.backward()
            grad = w.grad
            with flow.no_grad():
                flow.optim.sgd.sgd_update(w, grad, 0.5)
            return (loss, grad) if self.return_grad else loss

    rng = np.random.default_rng(13)
    for return_grad in (False, True):
        graph = Step(return_grad)
        for _ in range(3):
            xa = rng.standard_normal((4, 3))
            w0, b = w.numpy().copy(), module.fc.bias.numpy()
            grad = 2 * (xa @ w0.T + b).T @ xa
            out = graph(flow.tensor(xa))
            np.testing.assert_allclose(w.numpy(), w0 - 0.5 * grad, rtol=1e-12)
            if return_grad:  # an output: never scratch
                np.testing.assert_allclose(out[1].numpy(), grad, rtol=1e-12)
        consumed = any("computing in the buffer of an input that dies there" in r for r in graph._last.reports)
        assert consumed is not return_grad


@pytest.mark.parametrize("transposed", [False, True])
def test_a_gradient_that_may_be_a_graph_inputs_memory_is_checked_at_run_time(transposed):
    flow.manual_seed(0)
    module = _Fc()
    w = module.fc.weight

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.module = module

        def build(self, g):
            with flow.no_grad():  # reshape: a view of a contiguous g, a copy of a transposed one
                flow.optim.sgd.sgd_update(w, g.reshape(2, 3), 0.25)
            return g * 1.0

    graph = Step()
    ga = np.arange(6.0).reshape(2, 3) if transposed else np.arange(6.0).reshape(3, 2)
    g = flow.tensor(ga).transpose(0, 1) if transposed else flow.tensor(ga)
    expected = w.numpy().copy()
    for _ in range(3):
        out = graph(g)
        expected -= 0.25 * g.numpy().reshape(2, 3)
        np.testing.assert_allclose(w.numpy(), expected, rtol=1e-12)
        np.testing.assert_array_equal(out.numpy(), g.numpy())
        np.testing.assert_array_equal(g.numpy(), ga.T if transposed else ga)  # the input was never written
    assert "base is None" in graph.plan_source and "WC_" in graph.plan_source  # checked at run time
