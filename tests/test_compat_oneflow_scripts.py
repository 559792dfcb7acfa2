"""What OneFlow scripts (the OneFlow tutorials, Oneflow-Inc/models) do that PyTorch scripts do not: saving into a
directory that the script created, ``global_dst_rank`` / ``global_src_rank``, ``flow.save(graph, dir)`` after
``graph.load_state_dict``, and (N, 1) class-index targets for ``CrossEntropyLoss``."""

import os
import re

import numpy as np
import pytest

import oneflow_lite as flow
import oneflow_lite.nn as nn


def test_save_into_an_existing_directory_and_load_it(tmp_path):
    path = tmp_path / "best_model"
    os.mkdir(path)  # OneFlow scripts create the directory, then save into it
    m = nn.Linear(3, 2)
    flow.save(m.state_dict(), str(path))
    assert os.listdir(path) == [flow.serialization.DIRECTORY_ENTRY]
    state = flow.load(str(path))
    np.testing.assert_array_equal(state["weight"].numpy(), m.weight.detach().numpy())
    np.testing.assert_array_equal(state["bias"].numpy(), m.bias.detach().numpy())
    m2 = nn.Linear(3, 2)
    m2.load_state_dict(flow.load(path))  # a PathLike too
    np.testing.assert_array_equal(m2.weight.detach().numpy(), m.weight.detach().numpy())


def test_load_of_a_directory_without_a_saved_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="flow.load: .* is a directory without the 'snapshot.npz'"):
        flow.load(str(tmp_path))


def test_global_ranks_of_save_and_load(tmp_path):
    path = str(tmp_path / "w")
    flow.save({"a": flow.tensor([1.0, 2.0])}, path, global_dst_rank=0)
    np.testing.assert_array_equal(flow.load(path, global_src_rank=0)["a"].numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match=r"flow.save: global_dst_rank must be a rank of this job of 1 process\(es\) \(an int in 0..0\), got 1"):
        flow.save({}, str(tmp_path / "x"), global_dst_rank=1)
    with pytest.raises(ValueError, match=r"flow.load: global_src_rank must be a rank of this job of 1 process\(es\) \(an int in 0..0\), got -1"):
        flow.load(path, global_src_rank=-1)
    assert not os.path.exists(tmp_path / "x")


class _TrainGraph(nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss


def test_save_a_graph_into_a_directory_after_loading_its_state(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 3)).astype(np.float32), rng.standard_normal((8, 1)).astype(np.float32)
    model = nn.Linear(3, 1)
    graph = _TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    graph(flow.tensor(x), flow.tensor(y))
    flow.save(graph.state_dict(), str(tmp_path / "ckpt"))
    graph.load_state_dict(flow.load(str(tmp_path / "ckpt")))  # the next call captures again
    w, b = model.weight.detach().numpy().copy(), model.bias.detach().numpy().copy()
    flow.save(graph, str(tmp_path / "served"))  # OneFlow: a directory for serving
    assert os.listdir(tmp_path / "served") == ["graph.npz"]
    np.testing.assert_array_equal(model.weight.detach().numpy(), w)  # saving ran nothing
    loaded = nn.Graph.load(str(tmp_path / "served"))
    loss = loaded(flow.tensor(x), flow.tensor(y))
    np.testing.assert_allclose(loss.item(), np.mean((x @ w.T + b - y) ** 2), rtol=1e-5)


def test_save_of_a_graph_never_called_says_so(tmp_path):
    model = nn.Linear(3, 1)
    graph = _TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(RuntimeError, match="call the graph once"):
        flow.save(graph, str(tmp_path / "g"))


def _log_softmax(x):
    return x - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)) - x.max(1, keepdims=True)


def test_cross_entropy_takes_n_by_1_class_indices_as_oneflow():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    t = np.array([[0], [3], [1], [1], [2]])
    expected = -_log_softmax(x.astype(np.float64))[np.arange(5), t[:, 0]]
    xt = flow.tensor(x, requires_grad=True)
    loss = nn.CrossEntropyLoss()(xt, flow.tensor(t))
    np.testing.assert_allclose(loss.item(), expected.mean(), rtol=1e-5)
    loss.backward()
    p = np.exp(_log_softmax(x.astype(np.float64)))
    p[np.arange(5), t[:, 0]] -= 1
    np.testing.assert_allclose(xt.grad.numpy(), p / 5, rtol=1e-4, atol=1e-6)
    none = flow.nn.functional.cross_entropy(flow.tensor(x), flow.tensor(t), reduction="none")
    assert none.shape == (5, 1)
    np.testing.assert_allclose(none.numpy()[:, 0], expected, rtol=1e-5)
    # (N, C, L) logits with (N, 1, L) indices: the class dim is dim 1
    x3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    t3 = rng.integers(0, 3, (2, 1, 4))
    ref = -np.take_along_axis(_log_softmax_dim1(x3.astype(np.float64)), t3, 1).mean()
    np.testing.assert_allclose(flow.nn.functional.cross_entropy(flow.tensor(x3), flow.tensor(t3)).item(), ref,
                               rtol=1e-5)
    with pytest.raises(RuntimeError):  # a target of another element count is still an error
        flow.nn.functional.cross_entropy(flow.tensor(x), flow.tensor(np.zeros((5, 2), np.int64)))


def _log_softmax_dim1(x):
    return x - np.log(np.exp(x).sum(1, keepdims=True))


def test_graph_config_cudnn_conv_heuristic_search_algo_is_recorded():
    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = nn.Conv2d(2, 3, 3)
            self.config.enable_cudnn_conv_heuristic_search_algo(False)  # Oneflow-Inc/models' ResNet-50 graphs

        def build(self, x):
            return self.m(x)

    g = G()
    assert g.config.as_dict()["cudnn_conv_heuristic_search_algo"] is False
    x = flow.randn(1, 2, 5, 5)
    np.testing.assert_allclose(g(x).numpy(), g.m(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match=r"enable_cudnn_conv_heuristic_search_algo\(\): mode must be a bool"):
        g.config.enable_cudnn_conv_heuristic_search_algo(1)


def test_distributed_data_parallel_reads_its_modules_attributes():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lr = 0.01
            self.w = nn.Parameter(flow.tensor([[0.0], [0.0]]))

        def forward(self, x):
            return flow.matmul(x, self.w)

    model = Model()
    m = nn.parallel.DistributedDataParallel(model)  # OneFlow's returns the module: scripts read m.lr, m.w
    assert m.lr == 0.01 and m.w is model.w and m.module is model
    assert [n for n, _ in m.named_parameters()] == ["module.w"]  # PyTorch's wrapper, its state-dict keys
    with pytest.raises(AttributeError, match="'DistributedDataParallel' object has no attribute 'nope' \\(nor has "
                                             "its module, a Model\\)"):
        m.nope


def test_oneflow_ddp_example_on_one_process(capsys):
    import runpy
    import pathlib
    runpy.run_path(str(pathlib.Path(__file__).parent / "programs" / "oneflow_ddp_train.py"), run_name="__main__")
    out = capsys.readouterr().out
    x, y, w = np.array([[1.0, 2.0], [2.0, 3.0]]), np.array([[8.0], [13.0]]), np.zeros((2, 1))
    for _ in range(500):  # rank 0's batch: SGD(lr=0.01) on the summed squared error
        w -= 0.01 * 2 * x.T @ (x @ w - y)
    got = [float(v) for v in re.findall(r"\[\[?\s*(-?[\d.]+)\]", out.split("w:")[-1])]
    np.testing.assert_allclose(got, w[:, 0], rtol=1e-3)
    assert out.count(" loss:") == 10


def test_cross_entropy_same_shape_integer_target_is_still_an_error():
    # a target of the input's shape holds class probabilities (PyTorch), even with one class
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities"):
        flow.nn.functional.cross_entropy(flow.randn(4, 1), flow.zeros(4, 1, dtype=flow.int64))
