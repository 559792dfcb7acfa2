"""nn.Graph mixed precision ([graph2], Note [Graph AMP] in graph/amp.py): ``config.enable_amp`` captures build()
under autocast, ``set_grad_scaler`` does the loss scaling in the job, and the thread's autocast state is part of
a graph's cache key. The references are eager training steps with ``flow.autocast`` and ``flow.amp.GradScaler``
on a copy of the model, compared step by step."""

import copy
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
import oneflow_lite.nn.functional as F
from oneflow_lite import nn
from oneflow_lite.autograd import engine
from oneflow_lite.dispatch import tls
from oneflow_lite.optim.optimizer import fused_updates
from oneflow_lite.utils.data.datasets import digits

F16 = flow.float16


def _ops(graph) -> list:
    return [op.user_conf.op_type_name for op in graph.captured_job.net.op if op.user_conf.op_type_name]


def _mlp(seed=0):
    flow.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def _batches(n, size=32):
    x, y = digits(train=True, flatten=True).tensors
    return [(x[i * size:(i + 1) * size], y[i * size:(i + 1) * size]) for i in range(n)]


class TrainGraph(nn.Graph):
    def __init__(self, model, optimizer, scaler=None, amp=True, **amp_options):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)
        if amp:
            self.config.enable_amp(True, **amp_options)
        if scaler is not None:
            self.set_grad_scaler(scaler)

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


def _eager_step(model, optimizer, scaler, x, y, dtype=F16):
    optimizer.zero_grad()
    with flow.autocast("cpu", dtype=dtype):
        loss = F.cross_entropy(model(x), y)
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return loss


def _same(a, b) -> bool:
    return all(np.array_equal(p.numpy(), q.numpy()) for p, q in zip(a.parameters(), b.parameters()))


# ---- enable_amp -----------------------------------------------------------------------------------------------------
def test_enable_amp_captures_build_under_float16_autocast_by_default():
    hooks = (len(engine._backward_entry_hooks), len(engine._backward_observers))
    model = _mlp()
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    assert g.config.amp_enabled and g.config.capture_options()["amp_dtype"] is F16  # OneFlow's default
    assert "amp=float16" in repr(g.config)
    (x, y), = _batches(1)
    eager = copy.deepcopy(model)
    loss = g(x, y)
    ops = _ops(g)
    assert ops[:11] == ["cast", "cast", "cast", "linear", "relu", "cast", "cast", "linear", "log_softmax", "cast", "nll"]
    assert loss.dtype is flow.float32
    eager_loss = _eager_step(eager, flow.optim.SGD(eager.parameters(), lr=0.1), None, x, y)
    assert loss.item() == eager_loss.item() and _same(model, eager)
    assert all(p.dtype is flow.float32 for p in model.parameters())
    assert tls.included() == 0  # nothing left behind by the capture
    assert (len(engine._backward_entry_hooks), len(engine._backward_observers)) == hooks  # the capture's are gone


class Float32Head(nn.Module):
    """A float32 region inside the autocast one: its matmuls must stay float32 in backward too."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(64, 32)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        h = F.relu(self.body(x))
        with flow.autocast("cpu", enabled=False):
            return self.head(h.float())


def test_backward_of_an_amp_graph_runs_outside_autocast():
    """As an eager step (``with autocast: loss = ...`` then ``loss.backward()``): the backward of the head's
    float32 linear computes in float32. Under autocast its matmuls would be cast to float16."""
    flow.manual_seed(0)
    model = Float32Head()
    reference = copy.deepcopy(model)
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    for x, y in _batches(3):
        loss = g(x, y)
        assert loss.item() == _eager_step(reference, flow.optim.SGD(reference.parameters(), lr=0.1), None, x,
                                          y).item()
        assert _same(model, reference)
    ops = _ops(g)
    backward = ops[ops.index("nll") + 1:ops.index("sgd_update")]
    assert backward.count("cast") == 3  # the head's input back to float16, the body's weight and bias to float32


def test_enable_amp_bfloat16_and_its_errors():
    model = _mlp()
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1), dtype=flow.bfloat16)
    eager = copy.deepcopy(model)
    for x, y in _batches(3):
        loss = g(x, y)
        eager_loss = _eager_step(eager, flow.optim.SGD(eager.parameters(), lr=0.1), None, x, y, flow.bfloat16)
        assert loss.item() == eager_loss.item()
    assert "linear" in _ops(g) and _same(model, eager)
    with pytest.raises(ValueError, match=r"GraphConfig.enable_amp\(\): dtype must be one of flow.float16, "
                                         r"flow.bfloat16, got .*float32"):
        g.config.enable_amp(True, dtype=flow.float32)
    with pytest.raises(TypeError, match=r"GraphConfig.enable_amp\(\): mode must be a bool, got int"):
        g.config.enable_amp(1)


def test_turning_amp_off_captures_again_without_casts():
    model = _mlp()
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    batch = _batches(1)[0]
    g(*batch)
    assert "cast" in _ops(g)
    g.config.enable_amp(False)
    g(*batch)
    assert "cast" not in _ops(g) and len(g._entries) == 1


# ---- the autocast state is part of the cache key --------------------------------------------------------------------
def test_a_graph_captured_without_autocast_is_not_reused_under_autocast():
    lin = nn.Linear(4, 3)
    g = flow.nn.Graph.trace(lambda x: lin(x))
    x = flow.randn(2, 4)
    assert g(x).dtype is flow.float32 and "cast" not in _ops(g)
    with flow.autocast("cpu", dtype=F16):
        out = g(x)
        expected = lin(x)
        assert out.dtype is F16 and "cast" in _ops(g)
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
        assert g(x).dtype is F16  # the autocast capture is reused under the same autocast
    with flow.autocast("cpu", dtype=flow.bfloat16):
        assert g(x).dtype is flow.bfloat16  # another autocast dtype, another capture
    assert g(x).dtype is flow.float32 and len(g._entries) == 3  # the first capture is reused without autocast
    with flow.autocast("cpu", dtype=F16), flow.autocast("cpu", enabled=False):
        assert g(x).dtype is flow.float32 and len(g._entries) == 3  # disabled inside: the plain capture


# ---- set_grad_scaler ------------------------------------------------------------------------------------------------
def test_dynamic_grad_scaler_in_the_job_equals_eager_grad_scaler_step_by_step():
    """Digits MLP, float16 autocast, SGD with momentum: an initial scale of 2**20 overflows float16 in the first
    steps (skipped, backed off), then grows every 3 clean steps. The graph's losses, scales, parameters and
    momentum buffers equal the eager ones after every step: bit for bit against the eager step op by op (the
    graph captures the step without the fused update ops, Note [Graph AMP]), and to float32 rounding against
    the default eager step."""
    model = _mlp()
    reference, fused_reference = copy.deepcopy(model), copy.deepcopy(model)
    kwargs = {"init_scale": 2.0 ** 20, "growth_interval": 3}
    scaler, eager_scaler, fused_scaler = (flow.amp.GradScaler("cpu", **kwargs) for _ in range(3))
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    eager_opt = flow.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    fused_opt = flow.optim.SGD(fused_reference.parameters(), lr=0.1, momentum=0.9)
    g = TrainGraph(model, optimizer, scaler)
    scales, skipped = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float16 overflows in the first steps, on both sides
        for x, y in _batches(14):
            before = [p.numpy().copy() for p in model.parameters()]
            loss = g(x, y)
            with fused_updates(False):
                eager_loss = _eager_step(reference, eager_opt, eager_scaler, x, y)
            _eager_step(fused_reference, fused_opt, fused_scaler, x, y)
            assert loss.item() == eager_loss.item()
            assert scaler.get_scale() == eager_scaler.get_scale() == fused_scaler.get_scale()
            assert scaler.state_dict() == eager_scaler.state_dict()
            assert _same(model, reference)
            for p, q in zip(model.parameters(), fused_reference.parameters()):
                np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
            skipped += all(np.array_equal(b, p.numpy()) for b, p in zip(before, model.parameters()))
            scales.append(scaler.get_scale())
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_array_equal(optimizer.state[p]["momentum_buffer"].numpy(),
                                      eager_opt.state[q]["momentum_buffer"].numpy())
    assert skipped >= 1 and min(scales) < 2.0 ** 20 and scales[-1] > min(scales)  # skipped, backed off, grew
    ops = _ops(g)
    for op in ("fused_cast_scale", "multi_count_not_finite", "where", "dynamic_loss_scale_schedule"):
        assert op in ops
    names = {op.name for op in g.captured_job.net.op}
    assert {"System-GradScaler-Scale", "System-GradScaler-GoodStepCounter"} <= names


def test_a_step_with_inf_gradients_is_skipped_and_the_scale_backs_off():
    model = _mlp()
    optimizer = flow.optim.Adam(model.parameters(), lr=1e-3)
    scaler = flow.amp.GradScaler("cpu", init_scale=2.0 ** 40, backoff_factor=0.25)  # 2**40 overflows float16
    g = TrainGraph(model, optimizer, scaler)
    before = [p.numpy().copy() for p in model.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g(*_batches(1)[0])
    assert all(np.array_equal(b, p.numpy()) for b, p in zip(before, model.parameters()))
    assert scaler.get_scale() == 2.0 ** 38 and scaler.state_dict()["_growth_tracker"] == 0
    assert all(optimizer.state[p]["step"].item() == 0 for p in model.parameters())  # the step count too
    steps = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y in _batches(30):
            scale = scaler.get_scale()
            g(x, y)
            steps += scaler.get_scale() == scale  # not backed off: the step ran
    assert 2.0 ** 14 <= scaler.get_scale() <= 2.0 ** 20 and steps >= 10
    assert optimizer.state[model[0].weight]["step"].item() == steps
    assert not any(np.array_equal(b, p.numpy()) for b, p in zip(before, model.parameters()))


def test_adam_with_a_grad_scaler_equals_eager():
    model = _mlp(1)
    reference = copy.deepcopy(model)
    scaler, eager_scaler = flow.amp.GradScaler("cpu", growth_interval=2), flow.amp.GradScaler("cpu", growth_interval=2)
    optimizer = flow.optim.Adam(model.parameters(), lr=1e-3)
    eager_opt = flow.optim.Adam(reference.parameters(), lr=1e-3)
    g = TrainGraph(model, optimizer, scaler)
    for x, y in _batches(5):
        loss = g(x, y)
        np.testing.assert_allclose(loss.item(), _eager_step(reference, eager_opt, eager_scaler, x, y).item(),
                                   rtol=1e-5)
        assert scaler.get_scale() == eager_scaler.get_scale()
    # a captured Adam step keeps its step count and bias corrections as tensors (Note [Optimizer steps in a
    # graph]), an eager one reads them as Python floats: equal to float32 rounding
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6, atol=1e-7)
    assert scaler.get_scale() == 2.0 ** 18


def test_static_grad_scaler_equals_eager():
    model = _mlp(2)
    reference = copy.deepcopy(model)
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    eager_opt = flow.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    g = TrainGraph(model, optimizer, flow.amp.StaticGradScaler(1024.0))
    eager_scaler = flow.amp.StaticGradScaler(1024.0)
    for x, y in _batches(4):
        assert g(x, y).item() == _eager_step(reference, eager_opt, eager_scaler, x, y).item()
        assert _same(model, reference)
    ops = _ops(g)
    assert "fused_cast_scale" in ops and "multi_count_not_finite" not in ops and "where" not in ops
    assert eager_scaler.get_scale() == 1024.0
    with pytest.raises(ValueError, match="StaticGradScaler's scale_factor must > 0.0"):
        flow.amp.StaticGradScaler(0.0)


def test_grad_scaler_state_is_in_the_graph_state_dict_and_resumes():
    model = _mlp(3)
    scaler = flow.amp.GradScaler("cpu", init_scale=64.0, growth_interval=2)
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1), scaler)
    batches = _batches(5)
    for x, y in batches[:3]:
        g(x, y)
    state = copy.deepcopy(g.state_dict())
    assert state["System-GradScaler"] == {"scale": 128.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                          "growth_interval": 2, "_growth_tracker": 1}
    g(*batches[3])
    assert scaler.get_scale() == 256.0
    g.load_state_dict(state)
    assert scaler.get_scale() == 128.0 and scaler.state_dict()["_growth_tracker"] == 1
    g(*batches[3])
    assert scaler.get_scale() == 256.0  # the job reads the restored state


def test_set_grad_scaler_errors_and_a_cuda_scaler():
    model = _mlp()

    class NoOptimizer(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.set_grad_scaler(flow.amp.GradScaler("cpu"))

        def build(self, x):
            return self.model(x)

    with pytest.raises(RuntimeError, match=r"nn.Graph 'NoOptimizer_\d+': set_grad_scaler\(\) scales the loss of a "
                                           r"training graph, but no optimizer was added"):
        NoOptimizer()(flow.randn(2, 64))
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1), amp=False)
    with pytest.raises(TypeError, match=r"set_grad_scaler\(\): expected a flow.amp.GradScaler or "
                                        r"flow.amp.StaticGradScaler, got float"):
        g.set_grad_scaler(2.0)
    with pytest.warns(UserWarning, match="CUDA is not available"):
        cuda_scaler = flow.amp.GradScaler(init_scale=8.0)  # OneFlow's spelling: no device
    assert not cuda_scaler.is_enabled()
    g.set_grad_scaler(cuda_scaler)
    assert cuda_scaler.is_enabled()  # the graph scales on its own device
    g(*_batches(1)[0])
    assert "multi_count_not_finite" in _ops(g)
    g.set_grad_scaler(flow.amp.GradScaler("cpu", enabled=False))  # a disabled scaler: no scaling
    g(*_batches(1)[0])
    assert "multi_count_not_finite" not in _ops(g)


def test_digits_mlp_trains_in_a_graph_with_amp_and_a_grad_scaler():
    from oneflow_lite.utils.data import DataLoader

    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    # lr 0.05: at 0.1 with momentum 0.9 the test accuracy swings between 0.89 and 0.97 from epoch to epoch (in
    # float32 too), so the last epoch's figure depended on the rounding of single matmuls; at 0.05 it is >= 0.956
    # for seeds 0 to 5.
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), flow.amp.GradScaler("cpu"))
    train = DataLoader(digits(train=True, flatten=True), batch_size=32, shuffle=True)
    for _ in range(8):
        for x, y in train:
            g(x, y)
    test = digits(train=False, flatten=True)
    with flow.no_grad(), flow.autocast("cpu", dtype=F16):
        accuracy = (model(test.tensors[0]).argmax(dim=1) == test.tensors[1]).float().mean().item()
    assert accuracy >= 0.95, accuracy


def test_a_saved_graph_with_a_grad_scaler_loads_and_continues_identically(tmp_path):
    """The scale and the growth tracker are 0-d variables of the saved job (a 0-d variable loads as 0-d)."""
    model = _mlp(4)
    scaler = flow.amp.GradScaler("cpu", init_scale=256.0, growth_interval=1)
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1), scaler)
    batches = _batches(3)
    g(*batches[0])
    g.save(tmp_path / "amp.npz")
    loaded = flow.nn.Graph.load(tmp_path / "amp.npz")
    assert loaded.variables()["System-GradScaler-Scale"].shape == ()
    twin = copy.deepcopy(model)  # the loaded graph trains its own copy of the variables
    for x, y in batches[1:]:
        assert loaded(x, y).item() == g(x, y).item()
    assert loaded.variables()["System-GradScaler-Scale"].item() == scaler.get_scale() == 2048.0
    assert np.array_equal(loaded.variables()["model.0.weight"].numpy(), model[0].weight.numpy())
    assert not _same(twin, model)


def test_an_amp_inference_graph_exports_its_casts_to_onnx(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    model = _mlp(5)

    class Infer(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.config.enable_amp(True)

        def build(self, x):
            return self.model(x)

    g = Infer()
    x = _batches(1)[0][0]
    out = g(x)
    assert out.dtype is F16
    proto = g.export_onnx(tmp_path / "amp.onnx")
    onnx.checker.check_model(proto)
    assert [n.op_type for n in proto.graph.node].count("Cast") == 5
    session = ort.InferenceSession(str(tmp_path / "amp.onnx"))
    (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    np.testing.assert_allclose(got.astype(np.float32), out.numpy().astype(np.float32), rtol=2e-3, atol=2e-3)


# ---- the fused update ops skip themselves (allow_fuse_model_update_ops; Note [skip_if] in ops/model_update.py) -------
class FusedUpdateGraph(TrainGraph):
    def __init__(self, model, optimizer, scaler):
        super().__init__(model, optimizer, scaler)
        self.config.allow_fuse_model_update_ops(True)


_OPTIMIZERS = {
    "adam": (lambda p: flow.optim.Adam(p, lr=1e-3), "adam_update", ("exp_avg", "exp_avg_sq", "step")),
    "sgd momentum": (lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9), "momentum_update", ("momentum_buffer",)),
    "rmsprop centered": (lambda p: flow.optim.RMSprop(p, lr=1e-3, centered=True, momentum=0.5), "rmsprop_update",
                         ("square_avg", "grad_avg", "momentum_buffer")),
}


def _state_arrays(optimizer, params, names):
    return [[optimizer.state[p][n].numpy().copy() for n in names] for p in params]


def _assert_same_state(optimizer, params, eager_opt, eager_params, names):
    """The graph's optimizer state equals the eager one bit for bit; before the eager optimizer's first step (all
    skipped) it has no state, and the graph's (made when the step was captured) is still all zero."""
    mine = _state_arrays(optimizer, params, names)
    if not eager_opt.state:
        assert all(not np.any(a) for s in mine for a in s)
        return
    for s, t in zip(mine, _state_arrays(eager_opt, eager_params, names)):
        for a, b in zip(s, t):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(_OPTIMIZERS))
def test_fused_updates_skip_an_inf_step_inside_the_graph_bit_equal_to_eager(name):
    """An initial scale of 2**20 overflows float16: the first steps have inf gradients. The graph's fused update ops
    take the not-finite count as ``skip_if`` (no ``where`` over the parameters or their state, no host read of the
    count): a skipped step leaves parameters and optimizer state bit for bit as they were, and every step equals
    the eager GradScaler step (the same fused ops, eagerly) bit for bit: parameters, state, scale."""
    make, op_type, state_names = _OPTIMIZERS[name]
    model = _mlp(3)
    reference = copy.deepcopy(model)
    kwargs = {"init_scale": 2.0 ** 20, "growth_interval": 2}
    scaler, eager_scaler = flow.amp.GradScaler("cpu", **kwargs), flow.amp.GradScaler("cpu", **kwargs)
    optimizer, eager_opt = make(model.parameters()), make(reference.parameters())
    g = FusedUpdateGraph(model, optimizer, scaler)
    params, eager_params = list(model.parameters()), list(reference.parameters())
    skipped = ran = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, y in _batches(12):
            before = [p.numpy().copy() for p in params]
            state_before = _state_arrays(optimizer, params, state_names) if optimizer.state else None
            scale = scaler.get_scale()
            loss = g(x, y)
            eager_loss = _eager_step(reference, eager_opt, eager_scaler, x, y)
            assert loss.item() == eager_loss.item() or (np.isnan(loss.item()) and np.isnan(eager_loss.item()))
            assert scaler.get_scale() == eager_scaler.get_scale()
            assert _same(model, reference)
            _assert_same_state(optimizer, params, eager_opt, eager_params, state_names)
            if scaler.get_scale() < scale:  # backed off: an inf gradient, the step skipped
                skipped += 1
                assert all(np.array_equal(b, p.numpy()) for b, p in zip(before, params))
                if state_before is not None:
                    for s, t in zip(state_before, _state_arrays(optimizer, params, state_names)):
                        assert all(np.array_equal(a, b) for a, b in zip(s, t))
            else:
                ran += 1
    assert skipped >= 1 and ran >= 2
    updates = [op for op in g.captured_job.net.op if op.user_conf.op_type_name == op_type]
    assert len(updates) == len(params) and all("skip_if" in op.user_conf.input for op in updates)
    # only the step counts (Adam's and RMSprop's, written by an add_, not by the update op) are kept by a where
    step_counts = sum("step" in optimizer.state[p] for p in params)
    assert step_counts == (0 if name == "sgd momentum" else len(params))
    assert _ops(g).count("where") == step_counts


def test_allow_fuse_model_update_ops_recaptures_a_graph_with_a_grad_scaler():
    model = _mlp(4)
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), flow.amp.GradScaler("cpu"))
    x, y = _batches(1)[0]
    g(x, y)
    assert "where" in _ops(g) and "momentum_update" not in _ops(g)  # unfused, undone by where
    g.config.allow_fuse_model_update_ops(True)
    assert g.config.capture_options()["fuse_model_update_ops"] is True
    g(x, y)
    assert "where" not in _ops(g) and "momentum_update" in _ops(g)
