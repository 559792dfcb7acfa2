"""The new optimizers and schedules in an nn.Graph (Note [Optimizer steps in a graph]):
``add_optimizer(opt, lr_sch=...)`` trains like the same loop run eagerly, float64, including
schedules that cycle the momentum or Adam's beta1, and the plan is compiled once."""

import numpy as np
import pytest

import oneflow_lite as flow
import oneflow_lite.graph.graph as graph_module

O, S = flow.optim, flow.optim.lr_scheduler


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
        sch.step()
        losses.append(loss.item())
    return losses


def _two_d(params):
    return [p for p in params if p.ndim == 2]


CASES = [
    # NAdam's mu_product is a float32 0-d tensor (PyTorch's scalar dtype): the graph's float64 mu and the eager
    # step's Python mu may round it differently by one float32 ulp
    ("NAdam+OneCycleLR", lambda p: O.NAdam(p, lr=0.01), lambda o: S.OneCycleLR(o, max_lr=0.05, total_steps=10), 1e-5),
    ("RAdam+OneCycleLR", lambda p: O.RAdam(p), lambda o: S.OneCycleLR(o, max_lr=0.05, total_steps=10), 1e-10),
    ("Adamax+OneCycleLR-3", lambda p: O.Adamax(p), lambda o: S.OneCycleLR(o, max_lr=0.05, total_steps=10,
                                                                         three_phase=True), 1e-10),
    ("SGD-nesterov+OneCycleLR", lambda p: O.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
     lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=10, anneal_strategy="linear"), 1e-10),
    ("Adam+CyclicLR", lambda p: O.Adam(p), lambda o: S.CyclicLR(o, 0.001, 0.02, step_size_up=3), 1e-10),
    ("Muon+OneCycleLR", lambda p: O.Muon(_two_d(p), lr=0.02), lambda o: S.OneCycleLR(o, max_lr=0.05, total_steps=10),
     1e-10),
    ("ASGD+CosineAnnealingWarmRestarts", lambda p: O.ASGD(p, lr=0.1, t0=3),
     lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2), 1e-10),
    ("Adadelta+PolynomialLR", lambda p: O.Adadelta(p), lambda o: S.PolynomialLR(o, total_iters=6), 1e-10),
    ("Adagrad+MultiplicativeLR", lambda p: O.Adagrad(p, lr=0.1, lr_decay=0.01),
     lambda o: S.MultiplicativeLR(o, lambda e: 0.9), 1e-10),
    ("Rprop+ConstantLR", lambda p: O.Rprop(p), lambda o: S.ConstantLR(o), 1e-10),
    ("Adafactor+ChainedScheduler", lambda p: O.Adafactor(p, lr=0.05),
     lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.5, total_iters=3), S.ExponentialLR(o, 0.9)]), 1e-10),
]


@pytest.mark.parametrize("make_opt, make_sch, rtol", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_add_optimizer_with_a_schedule_matches_eager(make_opt, make_sch, rtol, monkeypatch):
    compiles = []
    compile_entry = graph_module._Entry.compile
    monkeypatch.setattr(graph_module._Entry, "compile", lambda self: (compiles.append(1), compile_entry(self))[1])
    data = _data(8)
    eager_model, graph_model = _model(0), _model(0)
    eager_opt, graph_opt = make_opt(list(eager_model.parameters())), make_opt(list(graph_model.parameters()))
    eager_sch, graph_sch = make_sch(eager_opt), make_sch(graph_opt)
    graph = TrainGraph(graph_model, graph_opt, graph_sch)

    expected = _eager_losses(eager_model, eager_opt, eager_sch, data)
    got = [graph(x, y).item() for x, y in data]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-12)
    for (name, p), (_, q) in zip(eager_model.named_parameters(), graph_model.named_parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=rtol, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(graph_sch.get_last_lr(), eager_sch.get_last_lr(), rtol=1e-12)
    assert len(compiles) == 1  # scheduled values are read at every run, never folded into constants


def test_cycled_beta1_is_a_tensor_updated_in_place():
    model = _model(0)
    opt = O.NAdam(model.parameters(), lr=0.01, betas=(0.9, 0.99))
    sch = S.OneCycleLR(opt, max_lr=0.05, total_steps=10)
    graph = TrainGraph(model, opt, sch)
    x, y = _data(1)[0]
    graph(x, y)
    beta1 = opt.param_groups[0]["betas"][0]
    assert isinstance(beta1, flow.Tensor) and opt.param_groups[0]["betas"][1] == 0.99
    graph(x, y)
    assert opt.param_groups[0]["betas"][0] is beta1
    assert beta1.item() == pytest.approx(sch._anneal_func(0.95, 0.85, 2 / 2.0))
    sd = opt.state_dict()  # tensor hyperparameters survive a state dict round trip
    opt2 = O.NAdam(_model(1).parameters())
    opt2.load_state_dict(sd)
    assert float(opt2.param_groups[0]["betas"][0]) == beta1.item()


def test_reduce_lr_on_plateau_between_graph_runs():
    data = _data(6)
    metrics = [1.0, 2.0, 2.0, 2.0, 0.5, 0.5]
    eager_model, graph_model = _model(0), _model(0)
    eager_opt = O.RAdam(eager_model.parameters(), lr=0.01)
    graph_opt = O.RAdam(graph_model.parameters(), lr=flow.tensor(0.01, dtype=flow.float64))
    eager_sch = S.ReduceLROnPlateau(eager_opt, patience=1, factor=0.5)
    graph_sch = S.ReduceLROnPlateau(graph_opt, patience=1, factor=0.5)
    graph = TrainGraph(graph_model, graph_opt)
    for (x, y), m in zip(data, metrics):
        eager_opt.zero_grad()
        flow.nn.functional.cross_entropy(eager_model(x), y).backward()
        eager_opt.step()
        eager_sch.step(m)
        graph(x, y)
        graph_sch.step(m)
    assert eager_sch.get_last_lr() == graph_sch.get_last_lr() == [0.005]
    for p, q in zip(eager_model.parameters(), graph_model.parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-10, atol=1e-12)
