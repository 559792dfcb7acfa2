"""State after failure: a call that raises leaves nothing behind.

After a failed op call, a failed registration, an exception inside ``nn.Graph.build``, a failed backward, a
failed ``load_state_dict`` / ``Optimizer.load_state_dict`` / ``flow.load``, a snapshot of the process's
state compares equal to the one taken before: this thread's grad mode, lazy (capture) mode, included and
excluded dispatch keys, autocast and anomaly mode, the dispatcher's tables, fallbacks, kernels and
composites, the op and functor registries; and the tensors, module parameters and optimizer state
involved. The next eager call, backward and graph capture work.
"""

import io

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import ExcludeDispatchKeyGuard
from oneflow_lite.framework import op_registry
from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.functors import registry as functors
from oneflow_lite.interpreters.lazy import current_build_ctx


def snapshot() -> dict:
    """What a failure must not change, as plain comparable values."""
    return {
        "grad": flow.is_grad_enabled(), "included": tls.included(), "excluded": tls.excluded(),
        "active": tls.ACTIVE[0], "lazy": current_build_ctx(), "autocast": flow.is_autocast_enabled(),
        "anomaly": flow.is_anomaly_enabled(), "default dtype": flow.get_default_dtype(),
        "tables": {op: e.dispatch_state for op, e in DISPATCHER._entries.items()},
        "impls": {op: {k: tuple(v) for k, v in e.impls.items()} for op, e in DISPATCHER._entries.items()},
        "kernels": {op: dict(e.kernels) for op, e in DISPATCHER._entries.items()},
        "fallbacks": {k: tuple(v) for k, v in DISPATCHER._fallbacks.items()},
        "device fallbacks": {k: tuple(v) for k, v in DISPATCHER._device_fallbacks.items()},
        "composites": dict(DISPATCHER._composites), "ops": tuple(op_registry.registered_op_types()),
        "functors": tuple(functors._factories), "library": tuple(flow.library.defined_ops()),
    }


def assert_unchanged(before: dict, after: dict) -> None:
    for key, value in before.items():
        now = after[key]
        if key in ("tables", "impls", "kernels"):  # an op seen for the first time gets an entry: compare the rest
            value = {op: v for op, v in value.items()}
            now = {op: now[op] for op in value}
        assert now == value, f"{key} changed"


def next_capture_works():
    """An eager call, a backward and a fresh graph capture, checked against NumPy."""
    x = flow.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    y = (x.relu() * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [[2.0, 0.0], [6.0, 8.0]])

    class G(flow.nn.Graph):
        def build(self, a):
            return (a * 2).relu()

    out = G()(flow.tensor([-1.0, 2.0]))
    np.testing.assert_allclose(out.numpy(), [0.0, 4.0])


@pytest.fixture
def state():
    before = snapshot()
    yield before
    assert_unchanged(before, snapshot())
    next_capture_works()


# ---- failed op calls --------------------------------------------------------------------------------------------
def _leaf():
    return flow.tensor([1.0, 2.0], requires_grad=True)


FAILING_CALLS = {
    "broadcast": lambda: flow.add(flow.ones(2, 3), flow.ones(4)),
    "dim out of range": lambda: flow.sum(flow.ones(2), dim=5),
    "no kernel": lambda: flow.nn.functional.softmax(flow.ones(2, dtype=flow.int64), 0),  # relu has bfloat16 now
    "devices": lambda: flow.matmul(flow.ones(2, 2), flow.ones(2, 2, device="meta")),
    "wrong argument type": lambda: flow.relu("x"),
    "view of a transposed tensor": lambda: flow.ones(2, 3).t().view(6),
    "in-place on a leaf requiring grad": lambda: _leaf().add_(1.0),
    "in-place on an expanded tensor": lambda: flow.ones(1, 3).expand(2, 3).add_(1.0),
    "huge allocation": lambda: flow.zeros(2 ** 40, 2 ** 20),
    "integer to a negative power": lambda: flow.pow(flow.tensor([2, 3]), -1),
}


@pytest.mark.parametrize("call", FAILING_CALLS.values(), ids=FAILING_CALLS.keys())
def test_a_failed_call_changes_nothing(call, state):
    with pytest.raises((TypeError, ValueError, IndexError, RuntimeError, MemoryError)):
        call()


@pytest.mark.parametrize("guard", ["no_grad", "exclude autograd", "autocast", "include python"])
def test_a_failed_call_inside_a_guard_restores_the_guard_on_exit(guard, state):
    guards = {"no_grad": flow.no_grad, "exclude autograd": lambda: ExcludeDispatchKeyGuard(DispatchKey.Autograd),
              "autocast": lambda: flow.autocast("cpu"),
              "include python": lambda: tls.IncludeDispatchKeyGuard(DispatchKey.Profiler)}
    inner = None
    with pytest.raises(RuntimeError), guards[guard]():
        inner = snapshot()
        flow.add(flow.ones(2, 3), flow.ones(4))
    assert inner is not None


def test_a_failed_in_place_call_leaves_its_tensor_and_version_unchanged(state):
    x = flow.tensor([1.0, 2.0, 3.0])
    v = x._version
    for bad in (lambda: x.add_(flow.ones(5)), lambda: x.mul_(flow.ones(2, 3)), lambda: x.clamp_(min="a"),
                lambda: flow.tensor([1, 2]).add_(1.5), lambda: x.index_add_(0, flow.tensor([7]), flow.ones(1))):
        with pytest.raises((RuntimeError, TypeError, IndexError)):
            bad()
        assert x.numpy().tolist() == [1.0, 2.0, 3.0] and x._version == v


def test_a_kernel_raising_leaves_the_dispatcher_as_it_was(state):
    with flow.library.scoped("saf"):
        flow.library.define("saf::boom(Tensor x) -> Tensor")

        def boom(x):
            raise ValueError("saf::boom: the kernel failed")
        flow.library.impl("saf::boom", "cpu", boom)
        flow.library.register_fake("saf::boom", lambda x: flow.empty_like(x))
        inner = snapshot()
        for _ in range(2):  # the second call takes any cached path
            with pytest.raises(ValueError, match="the kernel failed"):
                flow.ops.saf.boom(flow.ones(2))
        assert_unchanged(inner, snapshot())


# ---- failed registrations ----------------------------------------------------------------------------------------
def _noop(*args):
    return args


FAILING_REGISTRATIONS = {
    "kernel of an undefined op": lambda: DISPATCHER.register_kernel("no_such_op_saf", "cpu", _noop),
    "kernel on an unknown device": lambda: DISPATCHER.register_kernel("relu", "no_such_device", _noop),
    "handler that is not callable": lambda: DISPATCHER.register_impl("relu", DispatchKey.CPU, "not callable"),
    "fallback at an alias key": lambda: DISPATCHER.register_fallback(DispatchKey.CompositeImplicitAutograd, _noop),
    "op defined twice": lambda: op_registry.register_user_op("relu", inputs=["x"], outputs=["y"],
                                                             infer_shape=_noop, infer_dtype=_noop),
    "functor registered twice": lambda: functors.register_functor("Relu", _noop),
    "bad schema": lambda: flow.library.define("saf::f(Tensr x) -> Tensor"),
    "impl of an undefined library op": lambda: flow.library.impl("saf::nothing", "cpu", _noop),
}


@pytest.mark.parametrize("register", FAILING_REGISTRATIONS.values(), ids=FAILING_REGISTRATIONS.keys())
def test_a_failed_registration_changes_nothing(register, state):
    with pytest.raises((RegistrationError, ValueError, TypeError, RuntimeError, KeyError, LookupError)):
        register()


# ---- nn.Graph.build --------------------------------------------------------------------------------------------
class Flaky(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.lin = flow.nn.Linear(2, 2)
        self.fail = "raise"

    def build(self, x):
        y = self.lin(x).relu()
        if self.fail == "raise":
            raise ValueError("build failed on purpose")
        if self.fail == "bad op":
            return flow.add(y, flow.ones(5))
        if self.fail == "bad output":
            return "not a tensor"
        return y


@pytest.mark.parametrize("fail", ["raise", "bad op", "bad output"])
def test_an_exception_inside_build_leaves_no_capture_behind(fail, state):
    g = Flaky()
    params = {k: v.numpy().copy() for k, v in g.lin.state_dict().items()}
    with pytest.raises((ValueError, RuntimeError, TypeError)):
        g(flow.ones(3, 2))
    assert current_build_ctx() is None and flow.is_grad_enabled()
    for k, v in g.lin.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), params[k])
    g.fail = None  # the same graph object captures and runs once its build works
    x = flow.ones(3, 2)
    np.testing.assert_allclose(g(x).numpy(), g.lin(x).relu().numpy(), rtol=1e-6)


# ---- failed backward ---------------------------------------------------------------------------------------------
class _Bad(flow.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, dy):
        raise ValueError("backward failed on purpose")


def _hook_raises(g):
    raise RuntimeError("hook failed on purpose")


FAILING_BACKWARDS = {
    "non-scalar without gradient": lambda w: (w * 2).backward(),
    "a Function's backward raises": lambda w: _Bad.apply(w).sum().backward(),
    "a leaf's hook raises": lambda w: _leaf_with_hook(w),
    "a hook raises on an intermediate": lambda w: _with_hook(w).sum().backward(),
    "twice without retain_graph": lambda w: _twice((w * w).sum()),
    "a gradient of the wrong shape": lambda w: (w * 2).backward(flow.ones(5)),
}


def _with_hook(w):
    y = w * 3
    y.register_hook(_hook_raises)
    return y


def _leaf_with_hook(w):
    v = flow.tensor([2.0, 3.0], requires_grad=True)
    v.register_hook(_hook_raises)
    (w * v).sum().backward()


def _twice(loss):
    loss.backward()
    loss.backward()


@pytest.mark.parametrize("fail", FAILING_BACKWARDS.values(), ids=FAILING_BACKWARDS.keys())
def test_a_failed_backward_changes_nothing(fail, state):
    w = flow.tensor([1.0, -1.0], requires_grad=True)
    with pytest.raises((RuntimeError, ValueError)):
        fail(w)
    assert flow.is_grad_enabled()
    (w * w).sum().backward()  # the next backward works
    assert w.grad is not None


def test_a_failed_backward_of_a_model_leaves_its_parameters_and_optimizer_alone(state):
    model = flow.nn.Linear(3, 2)
    opt = flow.optim.Adam(model.parameters(), lr=0.1)
    model(flow.ones(4, 3)).sum().backward()
    opt.step()
    params = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    opt_state = _opt_state(opt)
    with pytest.raises(ValueError):
        _Bad.apply(model(flow.ones(4, 3))).sum().backward()
    assert {k: v.numpy().tolist() for k, v in model.state_dict().items()} == \
        {k: v.tolist() for k, v in params.items()}
    assert _opt_state(opt) == opt_state


# ---- failed loads ------------------------------------------------------------------------------------------------
def _opt_state(opt) -> str:
    """The optimizer's state dict, printed (tensors as lists) for comparison."""
    def plain(v):
        if isinstance(v, flow.Tensor):
            return v.numpy().tolist()
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v
    return repr(plain(opt.state_dict()))


def _model():
    return flow.nn.Sequential(flow.nn.Linear(3, 4), flow.nn.BatchNorm1d(4), flow.nn.Linear(4, 2))


def _bad_state_dicts(good):
    wrong_shape = dict(good)
    wrong_shape["2.weight"] = flow.ones(3, 3)
    missing = {k: v for k, v in good.items() if k != "0.bias"}
    extra = {**good, "9.weight": flow.ones(1)}
    not_tensor = {**good, "0.weight": "abc"}
    return {"wrong shape last": wrong_shape, "missing key": missing, "unexpected key": extra,
            "not a tensor": not_tensor, "not a dict": [1, 2]}


@pytest.mark.parametrize("which", ["wrong shape last", "missing key", "unexpected key", "not a tensor",
                                   "not a dict"])
def test_a_failed_load_state_dict_changes_no_parameter(which, state):
    model = _model()
    source = _model()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    bad = _bad_state_dicts(source.state_dict())[which]
    with pytest.raises((RuntimeError, TypeError)):
        model.load_state_dict(bad)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    model.load_state_dict(source.state_dict())  # a good one still loads
    np.testing.assert_array_equal(model[0].weight.numpy(), source[0].weight.numpy())


def test_a_failed_optimizer_load_state_dict_changes_nothing(state):
    model = flow.nn.Linear(3, 2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(flow.ones(2, 3)).sum().backward()
    opt.step()
    before = _opt_state(opt)
    good = opt.state_dict()
    other = flow.optim.SGD([flow.nn.Parameter(flow.ones(1))], lr=0.5).state_dict()
    broken = {"state": good["state"], "param_groups": [{**good["param_groups"][0], "params": [0, 1, 2]}]}
    for bad in (other, broken, {"state": {}}, "not a dict"):
        with pytest.raises((ValueError, KeyError, TypeError, RuntimeError)):
            opt.load_state_dict(bad)
        assert _opt_state(opt) == before
    opt.step()  # still steps


def test_a_failed_flow_load_changes_nothing(tmp_path, state):
    model = _model()
    buf = io.BytesIO()
    flow.save(model.state_dict(), buf)
    path = tmp_path / "m.pt"
    path.write_bytes(buf.getvalue()[:-40])
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with pytest.raises(RuntimeError, match="flow.load"):
        model.load_state_dict(flow.load(path))
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
