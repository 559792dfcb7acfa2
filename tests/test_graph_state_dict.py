"""nn.Graph.state_dict() / load_state_dict(): a training graph checkpointed and resumed gives the same next steps
as the uninterrupted graph; evaluation graphs share the training graph's parameters."""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn

F = nn.functional


def _model(seed):
    flow.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


def _data(steps, seed=0):
    rng = np.random.default_rng(seed)
    return [(flow.tensor(rng.standard_normal((5, 6)).astype(np.float32)), flow.tensor(rng.integers(0, 3, 5)))
            for _ in range(steps)]


class TrainGraph(nn.Graph):
    def __init__(self, model, opt, sch):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, lr_sch=sch)

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


class EvalGraph(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def _train_graph(seed, make_opt):
    model = _model(seed)
    opt = make_opt(model.parameters())
    sch = flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, TrainGraph(model, opt, sch)


@pytest.mark.parametrize("make_opt", [lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9),
                                      lambda p: flow.optim.Adam(p, lr=0.01)], ids=["sgd", "adam"])
def test_a_checkpointed_training_graph_resumes_to_identical_next_steps(tmp_path, make_opt):
    data = _data(8)
    model, g = _train_graph(0, make_opt)
    for x, y in data[:4]:
        g(x, y)
    flow.save(g.state_dict(), tmp_path / "graph.ckpt")
    expected = [g(x, y).numpy() for x, y in data[4:]]
    expected_params = [p.numpy().copy() for p in model.parameters()]

    resumed_model, resumed = _train_graph(1, make_opt)  # other initial weights: all of it comes from the file
    resumed(*data[0])  # captured before loading: it is captured again with the loaded optimizer state
    resumed.load_state_dict(flow.load(tmp_path / "graph.ckpt"))
    got = [resumed(x, y).numpy() for x, y in data[4:]]
    for a, b in zip(got + [p.numpy() for p in resumed_model.parameters()], expected + expected_params):
        np.testing.assert_array_equal(a, b)
    lr = resumed._optimizers[0][0].param_groups[0]["lr"]
    assert float(lr) == float(g._optimizers[0][0].param_groups[0]["lr"])


def test_state_dict_layout_and_errors():
    model, g = _train_graph(0, lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9))
    g(*_data(1)[0])
    state = g.state_dict()
    assert list(state) == ["model", "System-Optimizer-0", "System-LRScheduler-0"]
    assert list(state["model"]) == list(model.state_dict())
    assert set(state["System-Optimizer-0"]) == {"state", "param_groups"}
    with pytest.raises(RuntimeError, match=r"missing key\(s\) \['System-LRScheduler-0'\], unexpected key\(s\) "
                                           r"\['extra'\]"):
        g.load_state_dict({"model": state["model"], "System-Optimizer-0": state["System-Optimizer-0"], "extra": 1})
    with pytest.raises(TypeError, match=r"load_state_dict\(\): expected a dict"):
        g.load_state_dict([1])
    g.load_state_dict({"model": state["model"]}, strict=False)  # modules only: the capture stays
    assert g._last is not None and g.training and g.is_compiled
    assert EvalGraph(model).state_dict().keys() == {"model"}


def test_evaluation_graphs_share_parameters_with_the_training_graph():
    model, train = _train_graph(0, lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9))
    evaluate = EvalGraph(model)
    x_eval = _data(1, seed=5)[0][0]
    for step, (x, y) in enumerate(_data(4)):
        model.train()
        train(x, y)
        model.eval()
        got = evaluate(x_eval)  # captured once (eval mode), then it reads the parameters the training graph wrote
        np.testing.assert_array_equal(got.numpy(), model(x_eval).numpy())
        if step:
            assert len(evaluate._entries) == 1
    assert not evaluate.training and train.training
