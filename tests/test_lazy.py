"""Lazy capture: lazy mode, the LazyInterpreter, the job builder, lazy tensors and their errors, and autograd
over lazy tensors (a captured backward)."""

import threading

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.autograd import Function
from oneflow_lite.dispatch import DISPATCHER, DispatchKey
from oneflow_lite.dispatch.tls import included
from oneflow_lite.interpreters.lazy import JobBuildAndInferCtx, current_build_ctx, lazy_interpreter, lazy_mode


def f64(values):
    return flow.tensor(np.asarray(values, dtype=np.float64))


def ops_of(job):
    return [(op.name, op.WhichOneof("op_type"), op.user_conf.op_type_name) for op in job.net.op]


def user_op(job, name):
    (op,) = [op for op in job.net.op if op.name == name]
    return op.user_conf


def test_lazy_mode_is_a_thread_local_guard_that_includes_the_lazy_key():
    lazy_bit = 1 << DispatchKey.Lazy
    ctx = JobBuildAndInferCtx("G_0")
    seen_in_other_thread = []
    with lazy_mode(ctx):
        assert included() & lazy_bit and current_build_ctx() is ctx and ctx.is_open
        t = threading.Thread(target=lambda: seen_in_other_thread.append((included(), current_build_ctx())))
        t.start()
        t.join()
    assert not included() & lazy_bit and current_build_ctx() is None and not ctx.is_open
    assert seen_in_other_thread == [(0, None)]
    with pytest.raises(ValueError), lazy_mode(ctx):
        raise ValueError("boom")
    assert not included() & lazy_bit and current_build_ctx() is None


def test_lazy_interpreter_is_the_fallback_at_the_lazy_key():
    assert DISPATCHER.fallbacks()[DispatchKey.Lazy][-1].fn is lazy_interpreter


def test_capture_builds_op_confs_with_real_blob_names_and_attrs():
    ctx = JobBuildAndInferCtx("G_0")
    x = f64([[1.0, -2.0]])
    with lazy_mode(ctx):
        xl = ctx.add_input("_G_0_input.0", x)
        y = flow.relu(xl * 3.0)
    assert y.is_lazy and y.shape == (1, 2) and y.dtype is flow.float64 and y.device == flow.device("cpu")
    assert y._array.lbn == "relu-1/y_0"
    assert ops_of(ctx.job) == [("_G_0_input.0", "input_conf", ""), ("scalar_mul-0", "user_conf", "scalar_mul"),
                               ("relu-1", "user_conf", "relu")]
    mul = user_op(ctx.job, "scalar_mul-0")
    assert list(mul.input["in"].s) == ["_G_0_input.0/out"] and list(mul.output["out"].s) == ["scalar_mul-0/out_0"]
    assert mul.attr["float_operand"].at_double == 3.0 and mul.attr["has_float_operand"].at_bool
    assert list(user_op(ctx.job, "relu-1").input["x"].s) == ["scalar_mul-0/out_0"]
    inp = ctx.job.net.op[0].input_conf
    assert list(inp.shape.dim) == [1, 2] and inp.data_type == flow.float64.proto
    assert all(op.device_tag == "cpu" for op in ctx.job.net.op)


def test_op_names_carry_the_module_scope_and_a_job_counter():
    ctx = JobBuildAndInferCtx("G_0")
    with lazy_mode(ctx):
        x = ctx.add_input("_G_0_input.0", f64([1.0]))
        ctx.push_scope("model")
        ctx.push_scope("model.fc1")
        a = x + x
        ctx.pop_scope()
        b = -a
        ctx.pop_scope()
        flow.exp(b)
    names = [op.name for op in ctx.job.net.op]
    assert names == ["_G_0_input.0", "model.fc1-broadcast_add-0", "model-negative-1", "exp-2"]


def test_duplicate_op_names_are_rejected():
    ctx = JobBuildAndInferCtx("G_0")
    ctx.add_input("_G_0_input.0", f64([1.0]))
    with pytest.raises(RuntimeError, match=r"nn.Graph 'G_0': op name '_G_0_input.0' already exists in the job"):
        ctx.add_input("_G_0_input.0", f64([2.0]))
    assert len(ctx.job.net.op) == 1


def test_eager_tensors_become_variable_ops_once():
    ctx = JobBuildAndInferCtx("G_0", state_names={})
    w = f64([2.0, 3.0]).requires_grad_()
    c = f64([1.0, 1.0])
    with lazy_mode(ctx):
        x = ctx.add_input("_G_0_input.0", f64([1.0, 2.0]))
        y = x * w + c
        y = y * w  # w again: the same variable
    variables = [(op.name, op.variable_conf.trainable) for op in ctx.job.net.op if op.HasField("variable_conf")]
    assert variables == [("FreeEagerTensor-1", True), ("FreeEagerTensor-3", False)]
    assert ctx.variables() == {"FreeEagerTensor-1": w, "FreeEagerTensor-3": c}
    assert list(user_op(ctx.job, "broadcast_mul-4").input["y"].s) == ["FreeEagerTensor-1/out"]


def test_module_states_become_variables_named_by_path():
    w = f64([2.0])
    ctx = JobBuildAndInferCtx("G_0", state_names={id(w): "model.fc.weight"})
    with lazy_mode(ctx):
        x = ctx.add_input("_G_0_input.0", f64([1.0]))
        x * w
    assert [op.name for op in ctx.job.net.op] == ["_G_0_input.0", "model.fc.weight", "broadcast_mul-0"]


def test_reading_a_lazy_tensor_names_the_graph_and_the_op():
    ctx = JobBuildAndInferCtx("MyGraph_0")
    with lazy_mode(ctx):
        x = ctx.add_input("_MyGraph_0_input.0", f64([1.0]))
        y = flow.relu(x)
        for read in (y.numpy, y.item, y.tolist, lambda: bool(y), lambda: 1 if y else 0, lambda: float(y),
                     lambda: np.asarray(y)):
            with pytest.raises(RuntimeError, match=r"cannot read the value of a lazy tensor: it is 'y_0' of op "
                                                   r"'relu-0' in nn.Graph 'MyGraph_0' while it is being built"):
                read()
    with pytest.raises(RuntimeError, match=r"Tensor.numpy\(\): .*'relu-0' in nn.Graph 'MyGraph_0' \(its build\(\) "
                                           r"has finished\)"):
        y.numpy()
    assert "is_lazy=True, lbn='relu-0/y_0', size=(1,)" in repr(y)


def test_a_lazy_tensor_outside_its_build_is_an_error():
    ctx = JobBuildAndInferCtx("G_0")
    with lazy_mode(ctx):
        y = -ctx.add_input("_G_0_input.0", f64([1.0]))
    with pytest.raises(RuntimeError, match=r"relu: got a lazy tensor \('y_0' of op 'negative-0' in nn.Graph 'G_0'\) "
                                           r"outside its graph's build\(\)"):
        flow.relu(y)
    other = JobBuildAndInferCtx("H_0")
    with lazy_mode(other), pytest.raises(RuntimeError, match=r"nn.Graph 'H_0', op 'relu-0': input x_0 is 'y_0' of "
                                                              r"op 'negative-0' in nn.Graph 'G_0', another graph"):
        flow.relu(y)
    assert len(other.job.net.op) == 0


def test_mixed_devices_name_both_inputs_and_change_nothing():
    eager_meta = flow.zeros(2, dtype=flow.float64, device="meta")
    ctx = JobBuildAndInferCtx("G_0")
    with lazy_mode(ctx):
        x = ctx.add_input("_G_0_input.0", f64([1.0, 2.0]))
        m = flow.zeros(2, dtype=flow.float64, device="meta")
        n_ops = len(ctx.job.net.op)
        with pytest.raises(RuntimeError, match=r"nn.Graph 'G_0', op 'broadcast_add-1' \(broadcast_add\): expected all "
                                               r"tensors to be on the same device, but found at least two devices: "
                                               r"cpu:0 \(input x_0, position 0, blob '_G_0_input.0/out'\) and meta "
                                               r"\(input y_0, position 1, blob 'constant-0/out_0'\)"):
            x + m
        with pytest.raises(RuntimeError, match=r"cpu:0 \(input x_0, position 0, blob '_G_0_input.0/out'\) and meta "
                                               r"\(input y_0, position 1, eager tensor captured from outside the "
                                               r"graph\)"):
            x + eager_meta
        assert len(ctx.job.net.op) == n_ops and ctx.variables() == {}


def test_infer_errors_get_a_note_naming_the_graph_and_op():
    ctx = JobBuildAndInferCtx("G_0")
    with lazy_mode(ctx):
        x = ctx.add_input("_G_0_input.0", f64([1.0, 2.0]))
        y = ctx.add_input("_G_0_input.1", f64([1.0, 2.0, 3.0]))
        with pytest.raises(RuntimeError) as info:
            x + y
    assert "(while capturing nn.Graph 'G_0', op 'broadcast_add-0' (broadcast_add))" in info.value.__notes__
    assert [op.name for op in ctx.job.net.op] == ["_G_0_input.0", "_G_0_input.1"]


def test_in_place_ops_rebind_and_assign_at_the_end():
    ctx = JobBuildAndInferCtx("G_0")
    buf = f64([0.0, 0.0])
    with lazy_mode(ctx):
        x = ctx.add_input("_G_0_input.0", f64([1.0, 2.0]))
        old = x
        r = x.add_(1.0)
        assert r is x and x._array.lbn == "scalar_add-0/out_0" and x._version == 1
        before = buf
        buf.add_(x)  # an eager tensor: its binding moves, the tensor keeps its data
        assert buf is before and buf.numpy().tolist() == [0.0, 0.0]
        y = buf * 2.0  # reads the new value
        ctx.finish(train=False)
    assert old is x
    assert list(user_op(ctx.job, "scalar_mul-3").input["in"].s) == ["broadcast_add-1/z_0"]
    assigns = [(op.name, list(op.user_conf.input["ref"].s), list(op.user_conf.input["value"].s))
               for op in ctx.job.net.op if op.user_conf.op_type_name == "assign"]
    assert assigns == [("FreeEagerTensor-2-assign", ["FreeEagerTensor-2/out"], ["broadcast_add-1/z_0"]),
                       ("_G_0_input.0-assign", ["_G_0_input.0/out"], ["scalar_add-0/out_0"])]
    assert ctx.job.job_conf.HasField("predict_conf")
    del y


def test_in_place_output_meta_is_checked():
    from oneflow_lite.framework.op_builder import OpBuilder
    from oneflow_lite.interpreters.op_interp_util import dispatch
    relu = OpBuilder("relu").input("x").output("y").build()
    ctx = JobBuildAndInferCtx("G_0")
    with lazy_mode(ctx):
        x = ctx.add_input("_G_0_input.0", f64([1.0, 2.0]))
        out = ctx.add_input("_G_0_input.1", f64([1.0, 2.0, 3.0]))
        n_ops = len(ctx.job.net.op)
        with pytest.raises(RuntimeError, match=r"nn.Graph 'G_0', op 'relu-0' \(relu\): in-place output 'y_0' has "
                                               r"shape \(3,\), dtype float64, device cpu:0 but the result has shape "
                                               r"\(2,\)"):
            dispatch(relu, (x,), None, (out,))
        assert len(ctx.job.net.op) == n_ops and out._array.lbn == "_G_0_input.1/out"


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * x * 2.0


def test_backward_over_lazy_tensors_captures_grad_ops_and_restores_eager_state():
    w = f64([1.0, -2.0, 3.0]).requires_grad_()
    ctx = JobBuildAndInferCtx("G_0")
    with lazy_mode(ctx):
        x = ctx.add_input("_G_0_input.0", f64([0.5, 0.5, 0.5]))
        loss = Square.apply(x * w).sum()
        loss.backward()
        g = w.grad
        assert g.is_lazy and g.shape == (3,)
        ctx.add_output("_G_0_output.0", g)
        ctx.finish(train=False)
    types = [op.user_conf.op_type_name for op in ctx.job.net.op if op.HasField("user_conf")]
    assert types[:3] == ["broadcast_mul", "broadcast_mul", "reduce_sum"]
    assert "constant" in types  # the seed of backward, captured as an op
    assert types.count("broadcast_mul") >= 4  # forward, Square's forward and backward, the mul's grad
    ctx.restore_eager_state()
    assert w.grad is None and w.requires_grad and w.is_leaf


def test_an_unsupported_op_expr_is_a_clear_error():
    from oneflow_lite.framework.op_expr import FeedInputOpExpr
    ctx = JobBuildAndInferCtx("G_0")
    with lazy_mode(ctx), pytest.raises(RuntimeError, match=r"LazyInterpreter: FeedInputOpExpr \('feed_input'\) is "
                                                          r"not supported in graph capture \(nn.Graph 'G_0'\)"):
        lazy_interpreter(FeedInputOpExpr("x"), 0, (f64([1.0]),), None, None)


def test_explicit_generators_are_recorded_inside_a_graph():
    """Note [Generators in a graph]: the op drawing from ``generator=`` is recorded with it; the others are not."""
    ctx = JobBuildAndInferCtx("G_0")
    gen = flow.Generator()
    with lazy_mode(ctx):
        q = flow.rand(2, generator=gen)
        r = flow.rand(2)
    assert q.is_lazy and r.is_lazy
    assert [op.name for op in ctx.job.net.op] == ["uniform-0", "uniform-1"]
    assert ctx.op_generators == {"uniform-0": gen}


class _Call(flow.nn.Graph):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, *args):
        return self.fn(*args)


def test_a_graph_draws_from_the_generators_its_build_passed():
    """Each run draws from ``generator=`` as the eager call does (the k-th run gives the k-th eager value after
    the same seed), leaving the default generator alone; ops without one draw from the default generator."""
    gen = flow.Generator()
    x = flow.ones(6, 5)

    def make():
        return flow.randn(3, 4, generator=gen) * 2 + flow.rand(4, generator=gen), flow.nn.functional.dropout(x, 0.5)
    gen.manual_seed(5)
    flow.manual_seed(1)
    eager = [[t.numpy() for t in make()] for _ in range(3)]
    after_eager = flow.randn(3).numpy()
    graph = _Call(make)
    gen.manual_seed(5)
    flow.manual_seed(1)
    for want in eager:
        got = graph()
        np.testing.assert_array_equal(got[0].numpy(), want[0])
        np.testing.assert_array_equal(got[1].numpy(), want[1])
    np.testing.assert_array_equal(flow.randn(3).numpy(), after_eager)  # the default one advanced by dropout only
    gen.manual_seed(5)
    np.testing.assert_array_equal(graph()[0].numpy(), eager[0][0])  # reseeding restarts the graph's draws
    assert not np.array_equal(eager[0][0], eager[1][0])


def test_nested_capture_is_rejected():
    outer, inner = JobBuildAndInferCtx("A_0"), JobBuildAndInferCtx("B_0")
    with lazy_mode(outer):
        with pytest.raises(RuntimeError, match=r"nn.Graph 'B_0' cannot be captured inside the build\(\) of nn.Graph "
                                               r"'A_0'"), lazy_mode(inner):
            pass
        assert current_build_ctx() is outer
