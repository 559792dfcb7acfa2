"""Python dispatch modes (``flow.DispatchMode``, the handler at the Python key): what a mode sees, stacking,
results, errors, per-thread state, and that the key sets are left as they were."""

import threading

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import DispatchKey as K
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.introspection import dump_table
from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.interpreters.python_mode import DispatchOp, active_modes

PYTHON = 1 << K.Python


class LogMode(flow.DispatchMode):
    """Logs (tag, op name, input shapes, kwargs) and runs the op."""

    def __init__(self, log=None, tag="log"):
        self.log = [] if log is None else log
        self.tag = tag

    def __flow_dispatch__(self, op, types, args, kwargs):
        self.log.append((self.tag, op.name, [tuple(a.shape) for a in args], dict(kwargs)))
        return op(*args, **kwargs)

    def names(self):
        return [name for _, name, _, _ in self.log]


def _state():
    return tls.included(), tls.excluded(), active_modes()


def test_mode_sees_each_op_with_inputs_and_attrs():
    x = flow.tensor([[1.0, -2.0], [3.0, -4.0]])
    with LogMode() as mode:
        y = flow.sum(flow.relu(x), dim=1)
    np.testing.assert_array_equal(y.numpy(), [1.0, 3.0])
    assert mode.log == [("log", "relu", [(2, 2)], {}),
                        ("log", "reduce_sum", [(2, 2)], {"axis": (1,), "keepdims": False})]
    assert _state() == (0, 0, ())


def test_mode_runs_below_autograd_and_sees_backward_ops():
    x = flow.tensor([1.0, -2.0, 3.0], requires_grad=True)
    seen_grad_fn = []

    class Probe(LogMode):
        def __flow_dispatch__(self, op, types, args, kwargs):
            out = super().__flow_dispatch__(op, types, args, kwargs)
            seen_grad_fn.append(out.grad_fn)  # autograd records after the mode returns
            return out

    with Probe() as mode:
        y = flow.relu(x)
        assert y.grad_fn is not None and y.grad_fn.name() == "ReluBackward"
        y.sum().backward()
    assert seen_grad_fn[0] is None
    assert mode.names()[:2] == ["relu", "reduce_sum"]
    assert "relu_grad" in mode.names()  # the backward formula's op
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 1.0])


def test_backward_outside_the_mode_is_not_seen():
    x = flow.tensor([1.0, -2.0], requires_grad=True)
    with LogMode() as mode:
        y = flow.relu(x).sum()
    y.backward()
    assert mode.names() == ["relu", "reduce_sum"]


def test_modes_stack_innermost_first_without_recursion():
    log = []
    x = flow.tensor([1.0, -1.0])
    with LogMode(log, "outer"), LogMode(log, "inner"):
        flow.relu(x)
    assert [(tag, name) for tag, name, _, _ in log] == [("inner", "relu"), ("outer", "relu")]
    assert _state() == (0, 0, ())


def test_ops_called_in_a_handler_go_to_the_next_mode_only():
    log = []

    class Doubling(flow.DispatchMode):
        """Runs every relu, then adds its result to itself (a functional call inside the handler)."""

        def __flow_dispatch__(self, op, types, args, kwargs):
            out = op(*args, **kwargs)
            return flow.add(out, out) if op.name == "relu" else out

    x = flow.tensor([2.0, -1.0])
    with LogMode(log, "outer"), Doubling():
        y = flow.relu(x)
    np.testing.assert_array_equal(y.numpy(), [4.0, 0.0])
    assert [name for _, name, _, _ in log] == ["relu", "broadcast_add"]


def test_handler_result_is_the_call_result_and_is_differentiated():
    class ZeroRelu(flow.DispatchMode):
        def __flow_dispatch__(self, op, types, args, kwargs):
            out = op(*args, **kwargs)
            return flow.zeros_like(out) if op.name == "relu" else out

    x = flow.tensor([1.0, 2.0], requires_grad=True)
    with ZeroRelu():
        y = flow.relu(x)
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0])
    assert y.grad_fn.name() == "ReluBackward"  # recorded by autograd above the mode
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])  # relu_grad of the zeros the mode returned


def test_op_object():
    captured = []

    class Capture(flow.DispatchMode):
        def __flow_dispatch__(self, op, types, args, kwargs):
            captured.append((op, types, args, kwargs))
            return op(*args, **kwargs)

    x, w = flow.tensor([[1.0, 2.0]]), flow.tensor([[1.0], [2.0]])
    with Capture():
        flow.matmul(x, w)
    op, types, args, kwargs = captured[0]
    assert isinstance(op, DispatchOp) and op.name == "matmul" and str(op) == "matmul"
    assert isinstance(op.op_expr, UserOpExpr) and op.op_expr.op_type_name == "matmul"
    assert repr(op) == f"DispatchOp('matmul', op_name='{op.op_expr.op_name}')"
    assert types == (flow.Tensor,) and len(args) == 2 and kwargs == {}
    assert op == DispatchOp(op.op_expr) and hash(op) == hash(DispatchOp(op.op_expr))
    out = op(*args)  # outside a mode: an ordinary dispatch
    np.testing.assert_array_equal(out.numpy(), [[5.0]])
    with pytest.raises(TypeError, match=r"matmul: argument 1 must be a Tensor, got float"):
        op(x, 1.0)


def test_in_place_call_gets_out_and_writes_it():
    x = flow.tensor([1.0, 2.0])
    y = flow.tensor([10.0, 20.0])
    with LogMode() as mode:
        x.add_(y)
    np.testing.assert_array_equal(x.numpy(), [11.0, 22.0])
    (_, name, shapes, kwargs), = mode.log
    assert name == "broadcast_add" and shapes == [(2,), (2,)]
    assert len(kwargs["out"]) == 1 and kwargs["out"][0] is x


def test_mode_sees_the_ops_of_a_custom_function_forward():
    class Square(flow.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = flow.tensor([3.0], requires_grad=True)
    with LogMode() as mode:
        y = Square.apply(x)
    assert mode.names() == ["broadcast_mul"]
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0])


def test_mode_on_meta_tensors():
    x = flow.empty(2, 3, device="meta")
    with LogMode() as mode:
        y = flow.relu(x)
    assert y.device.type == "meta" and mode.names() == ["relu"]


def test_mode_sees_ops_captured_by_a_graph():
    lin = flow.nn.Linear(3, 2)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def build(self, x):
            return flow.relu(self.lin(x))

    g = G()
    x = flow.randn(4, 3)
    with LogMode() as mode:
        y = g(x)
    assert mode.names() == ["linear", "relu"]  # the capture; the compiled run dispatches nothing
    with LogMode() as mode:
        g(x)
    assert mode.names() == []
    np.testing.assert_allclose(y.numpy(), np.maximum(x.numpy() @ lin.weight.numpy().T + lin.bias.numpy(), 0),
                               rtol=1e-6)


def test_exception_in_handler_restores_key_sets_and_stack():
    class Boom(flow.DispatchMode):
        def __flow_dispatch__(self, op, types, args, kwargs):
            raise ValueError(f"boom in {op}")

    x = flow.tensor([1.0], requires_grad=True)
    outer = LogMode()
    with outer:
        before = _state()
        assert before[0] == PYTHON and before[2] == (outer,)
        with pytest.raises(ValueError, match="boom in relu"):
            with Boom():
                flow.relu(x)
        assert _state() == before
        flow.relu(x)  # the outer mode still works
    assert outer.names() == ["relu"]
    assert _state() == (0, 0, ())
    with pytest.raises(ValueError, match="boom"):
        with Boom():
            flow.neg(x)
    assert _state() == (0, 0, ())


def test_exception_in_the_with_block_restores_key_sets():
    with pytest.raises(KeyError):
        with LogMode():
            assert tls.included() == PYTHON
            raise KeyError("x")
    assert _state() == (0, 0, ())


def test_mode_inside_no_grad_and_guards_keeps_them():
    x = flow.tensor([1.0], requires_grad=True)
    with flow.no_grad():
        outside = _state()
        with LogMode() as mode:
            y = flow.relu(x)
        assert _state() == outside
    assert not y.requires_grad and mode.names() == ["relu"]


def test_bad_results_name_the_mode_and_op():
    class Wrong(flow.DispatchMode):
        def __init__(self, result):
            self.result = result

        def __flow_dispatch__(self, op, types, args, kwargs):
            return self.result(op(*args, **kwargs))

    x = flow.tensor([1.0])
    with pytest.raises(TypeError, match=r"Wrong.__flow_dispatch__ returned int for op 'relu'; expected a Tensor or a "
                                        r"tuple of 1 Tensors"):
        with Wrong(lambda out: 3):
            flow.relu(x)
    with pytest.raises(RuntimeError, match=r"Wrong.__flow_dispatch__ returned 2 tensor\(s\) for op 'relu', which has "
                                           r"1 output\(s\)"):
        with Wrong(lambda out: (out, out)):
            flow.relu(x)
    assert _state() == (0, 0, ())


def test_base_mode_must_implement_flow_dispatch():
    with pytest.raises(NotImplementedError, match=r"DispatchMode must implement __flow_dispatch__"):
        with flow.DispatchMode():
            flow.relu(flow.tensor([1.0]))
    assert _state() == (0, 0, ())


def test_enter_twice_and_exit_out_of_order_are_errors():
    a, b = LogMode(), LogMode()
    with a:
        with pytest.raises(RuntimeError, match="this mode is already active on this thread"):
            a.__enter__()
        b.__enter__()
        with pytest.raises(RuntimeError, match="this mode is not the innermost active mode on this thread "
                                               r"\(the innermost is LogMode\)"):
            a.__exit__(None, None, None)
        b.__exit__(None, None, None)
    assert _state() == (0, 0, ())


def test_modes_are_per_thread():
    x = flow.tensor([1.0, -1.0])
    other = {}

    def worker():
        other["state"] = _state()
        flow.relu(x)

    with LogMode() as mode:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        flow.neg(x)
    assert other["state"] == (0, 0, ())
    assert mode.names() == ["negative"]


def test_a_mode_in_another_thread_is_not_seen_here():
    started, release = threading.Event(), threading.Event()
    mode = LogMode()

    def worker():
        with mode:
            started.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    started.wait(5)
    try:
        flow.relu(flow.tensor([1.0]))
        assert _state() == (0, 0, ())
    finally:
        release.set()
        t.join()
    assert mode.log == []


@pytest.mark.parametrize("key, handler", [(K.Python, "python_mode_interpreter"), (K.Profiler, "profiler_interpreter")])
def test_failed_registration_leaves_the_tables_as_they_were(key, handler):
    table, fallbacks = dump_table("relu"), DISPATCHER.fallbacks()
    with pytest.raises(RegistrationError, match=rf"register_fallback\({key.name}\): expected a callable handler, "
                                                r"got 42"):
        DISPATCHER.register_fallback(key, 42)
    assert dump_table("relu") == table and DISPATCHER.fallbacks() == fallbacks
    assert f"\n{key.name}: {handler} [fallback]" in table
