"""nn.Graph.add_optimizer: the optimizer step (and the lr scheduler) inside a graph give the same
training as the same loop run eagerly, float64."""

import numpy as np
import pytest

import oneflow_lite as flow


def _model(seed):
    flow.manual_seed(seed)
    return flow.nn.Sequential(flow.nn.Linear(6, 8), flow.nn.ReLU(), flow.nn.Linear(8, 3)).double()


def _data(steps):
    rng = np.random.default_rng(7)
    return [(flow.tensor(rng.standard_normal((5, 6))), flow.tensor(rng.integers(0, 3, 5))) for _ in range(steps)]


class TrainGraph(flow.nn.Graph):
    def __init__(self, model, opt, sch=None):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, lr_sch=sch)

    def build(self, x, y):
        loss = flow.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


def _eager_losses(model, opt, sch, data):
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = flow.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if sch is not None:
            sch.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("make_opt, with_scheduler", [
    (lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9), False),
    (lambda p: flow.optim.SGD(p, lr=0.1), True),
    (lambda p: flow.optim.Adam(p, lr=0.01), True),
])
def test_graph_training_with_add_optimizer_matches_eager(make_opt, with_scheduler):
    data = _data(6)
    eager_model, graph_model = _model(0), _model(0)
    eager_opt, graph_opt = make_opt(eager_model.parameters()), make_opt(graph_model.parameters())
    eager_sch = flow.optim.lr_scheduler.StepLR(eager_opt, step_size=2, gamma=0.5) if with_scheduler else None
    graph_sch = flow.optim.lr_scheduler.StepLR(graph_opt, step_size=2, gamma=0.5) if with_scheduler else None
    graph = TrainGraph(graph_model, graph_opt, graph_sch)

    expected = _eager_losses(eager_model, eager_opt, eager_sch, data)
    got = [graph(x, y).item() for x, y in data]
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    for (name, p), (_, q) in zip(eager_model.named_parameters(), graph_model.named_parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
    if with_scheduler:
        assert float(graph_opt.param_groups[0]["lr"]) == pytest.approx(eager_opt.param_groups[0]["lr"])


def test_add_optimizer_errors():
    model = _model(0)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    other = flow.optim.SGD(model.parameters(), lr=0.1)
    graph = TrainGraph(model, opt)
    with pytest.raises(TypeError, match=r"add_optimizer\(\): expected a flow\.optim\.Optimizer, got int"):
        graph.add_optimizer(3)
    with pytest.raises(ValueError, match=r"lr_sch must be a scheduler of the optimizer being added"):
        graph.add_optimizer(other, lr_sch=flow.optim.lr_scheduler.StepLR(opt, step_size=1))
    x, y = _data(1)[0]
    graph(x, y)
    with pytest.raises(RuntimeError, match=r"has already been captured; add optimizers before its first call"):
        graph.add_optimizer(other)


def test_module_used_twice_in_a_sequential_runs_twice_in_a_graph():
    flow.manual_seed(3)
    shared = flow.nn.Linear(4, 4).double()
    model = flow.nn.Sequential(shared, flow.nn.Tanh(), shared)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    x = flow.tensor(np.random.default_rng(0).standard_normal((2, 4)))
    w, b = shared.weight.numpy(), shared.bias.numpy()
    expected = np.tanh(x.numpy() @ w.T + b) @ w.T + b
    np.testing.assert_allclose(G()(x).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(model(x).numpy(), expected, rtol=1e-12)


def test_scheduled_lr_is_a_named_variable_not_a_folded_constant():
    """The scheduler rewrites the lr tensor after every run: folding it would recompile the plan at every run."""
    model = _model(0)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    graph = TrainGraph(model, opt, flow.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5))
    x, y = _data(1)[0]
    graph(x, y)
    graph(x, y)
    lr_ops = [op for op in graph.job.net.op if op.name == "optimizer0_param_group0_lr"]
    assert len(lr_ops) == 1 and lr_ops[0].WhichOneof("op_type") == "variable_conf"
    assert "optimizer0_param_group0_lr: variable -> optimizer0_param_group0_lr/out: float64[]" in repr(graph)


class _MSEGraph(flow.nn.Graph):
    def __init__(self, model, opt, zero_grad_first=False):
        super().__init__()
        self.model = model
        self.opt = opt
        self.zero_grad_first = zero_grad_first
        self.add_optimizer(opt)

    def build(self, x, y):
        if self.zero_grad_first:
            self.opt.zero_grad(set_to_none=False)
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss


def _numpy_sgd_momentum_step(W, b, bufs, X, Y, lr, momentum):
    """One SGD-with-momentum step of mean((X W^T + b - Y)^2), written out in NumPy."""
    d = 2 * (X @ W.T + b - Y) / (X.shape[0] * W.shape[0])
    grads = (d.T @ X, d.sum(0))
    new = []
    for i, (p, g) in enumerate(zip((W, b), grads)):
        bufs[i] = g if bufs[i] is None else momentum * bufs[i] + g
        new.append(p - lr * bufs[i])
    return new[0], new[1], grads


@pytest.mark.parametrize("zero_grad_first", [False, True])
def test_alternating_eager_and_graph_steps_train_like_numpy(zero_grad_first):
    # The graph owns its gradients: eager .grad left by eager steps is neither added into the graph's
    # updates nor changed by them (an earlier version accumulated the stale eager grad at every run).
    flow.manual_seed(3)
    model = flow.nn.Linear(4, 3).double()
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    graph = _MSEGraph(model, opt, zero_grad_first)
    rng = np.random.default_rng(11)
    W, b = model.weight.numpy().copy(), model.bias.numpy().copy()
    bufs = [None, None]
    for step in range(8):
        X, Y = rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
        x, y = flow.tensor(X), flow.tensor(Y)
        eager_grad_before = None if model.weight.grad is None else model.weight.grad.numpy().copy()
        if step % 3 == 1:  # graph steps at 1, 4, 7; eager at the others (two in a row too)
            graph(x, y)
            if eager_grad_before is None:
                assert model.weight.grad is None
            else:
                np.testing.assert_array_equal(model.weight.grad.numpy(), eager_grad_before)
            W, b, _ = _numpy_sgd_momentum_step(W, b, bufs, X, Y, 0.1, 0.9)
        else:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            W, b, grads = _numpy_sgd_momentum_step(W, b, bufs, X, Y, 0.1, 0.9)
            np.testing.assert_allclose(model.weight.grad.numpy(), grads[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(model.weight.numpy(), W, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(model.bias.numpy(), b, rtol=1e-12, atol=1e-14)
