"""The graph compiler: each pass leaves results unchanged and cuts ops, kernel steps or peak bytes; the
executor's checks; stateful ops. Results are compared with eager execution bit for bit (a graph runs the
same kernels) and with NumPy formulas."""

import ast
import itertools
import pathlib
import tracemalloc

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.graph import GraphConfig, mark_stateful, register_out_variant
from oneflow_lite.graph.ir import is_stateful
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.kernels.registration import cpu_kernel

PASSES = GraphConfig.PASSES


def f64(values):
    return flow.tensor(np.asarray(values, dtype=np.float64))


def traced(fn, **flags):
    g = flow.nn.Graph.trace(fn)
    for name, mode in flags.items():
        getattr(g.config, f"enable_{name}")(mode)
    return g


def user_ops(job):
    return [op.user_conf.op_type_name for op in job.net.op if op.HasField("user_conf")]


def assert_same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---- dead-code elimination ------------------------------------------------------------------------
def test_dce_removes_unused_ops_and_keeps_results():
    def f(x):
        unused = flow.exp(x) * 3.0
        unused.relu()
        return x + 1.0

    x = f64([1.0, -2.0])
    on, off = traced(f), traced(f, dce=False)
    assert_same(on(x), f(x))
    assert_same(off(x), f(x))
    assert user_ops(off.job) == ["exp", "scalar_mul", "relu", "scalar_add"]
    assert user_ops(on.job) == ["scalar_add"]
    assert "dead-code elimination: removed 3 op(s): exp-0, scalar_mul-1, relu-2" in repr(on)


def test_dce_keeps_random_ops_so_later_draws_match_eager():
    def f(x):
        flow.rand(4, dtype=flow.float64)  # unused, but it advances the generator
        return x + flow.rand(2, dtype=flow.float64)

    g = traced(f)
    x = f64([0.0, 0.0])
    flow.manual_seed(3)
    expected = f(x).numpy()
    flow.manual_seed(3)
    np.testing.assert_array_equal(g(x).numpy(), expected)
    assert user_ops(g.job).count("uniform") == 2


# ---- common-subexpression elimination -------------------------------------------------------------
def test_cse_merges_equal_ops_and_keeps_results():
    def f(x, y):
        a = (x + y) * (x + y)
        b = flow.relu(x) - flow.relu(x)
        return a + b + x * 2.0 + x * 2.0 + x * 3.0  # x * 3.0 differs in its attrs

    x, y = f64([1.0, -2.0]), f64([0.5, 0.5])
    on, off = traced(f), traced(f, cse=False)
    assert_same(on(x, y), f(x, y))
    assert_same(off(x, y), f(x, y))
    assert len(user_ops(off.job)) - len(user_ops(on.job)) == 3
    assert user_ops(on.job).count("scalar_mul") == 2
    assert "common-subexpression elimination: merged 3 op(s): broadcast_add-1 into broadcast_add-0" in repr(on)


def test_cse_never_merges_random_ops():
    g = traced(lambda x: x + flow.rand(3, dtype=flow.float64) - flow.rand(3, dtype=flow.float64))
    out = g(f64([0.0, 0.0, 0.0])).numpy()
    assert user_ops(g.job).count("uniform") == 2 and np.any(out != 0)


# ---- constant folding -----------------------------------------------------------------------------
def test_constant_folding_computes_ops_on_constants_once():
    c = f64([1.0, 2.0, 3.0])

    def f(x):
        scale = c * 2.0 + flow.ones(3, dtype=flow.float64)  # constants only: folded
        return x * scale + c

    x = f64([1.0, 1.0, 1.0])
    on, off = traced(f), traced(f, constant_folding=False)
    expected = f(x)
    assert_same(on(x), expected)
    assert_same(off(x), expected)
    np.testing.assert_array_equal(on(x).numpy(), [4.0, 7.0, 10.0])
    assert user_ops(off.job) == ["scalar_mul", "constant", "broadcast_add", "broadcast_mul", "broadcast_add"]
    assert user_ops(on.job) == ["broadcast_mul", "broadcast_add"]
    assert "constant folding: folded 3 op(s) into 1 constant(s): scalar_mul-0, constant-2, broadcast_add-3" in repr(on)
    folded = [op for op in on.job.net.op if op.name == "broadcast_add-3.z_0"]
    assert len(folded) == 1 and not folded[0].variable_conf.trainable


def test_folded_constants_follow_in_place_writes_and_skip_grad_requiring_tensors():
    c = f64([1.0, 2.0])
    w = f64([1.0, 1.0]).requires_grad_()
    g = traced(lambda x: x + (c * 10.0) + (w * 1.0).detach())
    x = f64([0.0, 0.0])
    assert g(x).numpy().tolist() == [11.0, 21.0]
    assert user_ops(g.job).count("scalar_mul") == 1  # w * 1.0 is not folded: w requires grad
    c.mul_(2.0)  # bumps c's version: the plan is recompiled and the constant refolded
    with flow.no_grad():
        w.add_(1.0)
    assert g(x).numpy().tolist() == [22.0, 42.0]


# ---- elementwise fusion ---------------------------------------------------------------------------
def chain20(x, y):
    h = x
    for _ in range(4):
        h = flow.tanh(-flow.relu((h + y) * y))
    return h


def test_fusion_runs_an_elementwise_chain_in_one_buffer():
    x = flow.tensor(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
    y = flow.tensor(np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32))
    on, off = traced(chain20), traced(chain20, fusion=False, memory_plan=False)
    expected = chain20(x, y)
    assert_same(on(x, y), expected)
    assert_same(off(x, y), expected)
    assert off._last.plan.num_steps == 20 and on._last.plan.num_steps == 1
    assert on._last.plan.peak_bytes < off._last.plan.peak_bytes // 10
    assert "elementwise fusion: 1 chain(s) of 20 op(s) into 1 buffer(s)" in repr(on)


def test_fusion_stops_at_shared_results_outputs_and_shape_changes():
    def f(x, y):
        a = x + 1.0
        b = flow.relu(a)  # a is read twice: b cannot overwrite it, a new chain starts
        c = a * b  # joins b's chain
        d = c + y  # c is an output, and d broadcasts to a larger shape: a new chain
        return c, -d

    x, y = f64([1.0, -2.0]), f64([[1.0], [2.0], [3.0]])
    g = traced(f)
    for got, want in zip(g(x, y), f(x, y)):
        assert_same(got, want)
    assert g._last.plan.num_steps == 3


OUT_VARIANT_CASES = [
    ("relu", flow.relu, (flow.int8, flow.int64, flow.float16, flow.float32, flow.float64)),
    ("neg", lambda x: -x, (flow.int32, flow.float16, flow.float64)),
    ("tanh", flow.tanh, (flow.float16, flow.float32, flow.float64)),
    ("exp", flow.exp, (flow.float16, flow.float32, flow.float64)),
    ("sigmoid", flow.sigmoid, (flow.float16, flow.float32, flow.float64)),
    ("add", lambda x: x + x * x, (flow.bool, flow.uint8, flow.int16, flow.float16, flow.float32)),
    ("sub", lambda x: (x - x * x) - x, (flow.int8, flow.float32, flow.float64)),
    ("div", lambda x: (x / (x - 1.0)) / x, (flow.float16, flow.float32, flow.float64)),
    ("scalar ops", lambda x: ((x + 3) * 2 - 1) * 5, (flow.int8, flow.int64, flow.float16, flow.float64)),
    ("float scalar ops", lambda x: (x * 0.1 + 1e30) / 7.0, (flow.float16, flow.float32, flow.float64)),
    ("reverse div", lambda x: 1.0 / (x * 1.0), (flow.float32, flow.float64)),
]


@pytest.mark.parametrize("name, fn, dtypes", OUT_VARIANT_CASES, ids=[c[0] for c in OUT_VARIANT_CASES])
def test_out_variants_compute_what_the_kernels_compute(name, fn, dtypes):
    values = np.array([-3.0, -1.0, -0.0, 0.0, 0.5, 2.0, 100.0, np.inf, -np.inf, np.nan, 60000.0])
    for dtype in dtypes:
        if dtype is flow.bool:
            data = np.array([True, False, True])
        elif dtype.is_floating_point:
            data = values.astype(dtype.np_dtype)
        else:
            data = np.array([-3, -1, 0, 1, 2, 100]).astype(dtype.np_dtype)
        with np.errstate(all="ignore"):
            x = flow.tensor(data)
            expected = fn(x)
            for flags in ({}, {"fusion": False}, {"fusion": False, "memory_plan": False}):
                got = traced(fn, **flags)(x)
                assert got.dtype == expected.dtype, (name, dtype, flags)
                np.testing.assert_array_equal(got.numpy(), expected.numpy(), err_msg=f"{name} {dtype} {flags}")


def test_out_variant_writers_are_registered_with_their_kernels():
    """Note [Out-variant writers]: dump_table shows a kernel's writer under it; graph/ imports no kernels."""
    lines = flow.dispatch.dump_table("relu").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("    kernel[cpu]: relu_cpu "))
    assert lines[at + 1] == "        out-variant writer: relu_out_variant"
    assert "out-variant writer: sgd_update_out_variant" in flow.dispatch.dump_table("sgd_update")
    assert "out-variant writer" not in flow.dispatch.dump_table("matmul")
    graph_dir = pathlib.Path(flow.__file__).parent / "graph"
    for path in graph_dir.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.startswith("oneflow_lite.kernels") for n in names), (path.name, names)


def test_a_graph_uses_the_writer_of_the_kernel_it_runs():
    def f(x):
        return flow.relu(x + 1.0)

    x = f64([-3.0, 0.5, 2.0])
    seen = []

    def plugin_relu(ctx, x):
        seen.append("kernel")
        return np.maximum(x, 0.0)

    def plugin_writer(ctx, input_dtypes):
        def write(out, x):
            seen.append("writer")
            np.maximum(x, 0.0, out=out)
        return write

    # a plug-in kernel without a writer: the graph runs it (not relu_cpu's writer), and fuses nothing
    with flow.dispatch.register_kernel("relu", "cpu", plugin_relu, priority=5):
        g = traced(f)
        y = g(x)
        assert seen == ["kernel"] and g._last.plan.num_steps == 2
        assert_same(y, f(x))
    seen.clear()
    # with a writer: the chain is fused and the graph calls the plug-in's writer
    with flow.dispatch.register_kernel("relu", "cpu", plugin_relu, priority=5, out_variant=plugin_writer):
        g = traced(f)
        y = g(x)
        assert seen == ["writer"] and g._last.plan.num_steps == 1
        assert_same(y, f(x))
        assert "out-variant writer: test_a_graph_uses_the_writer_of_the_kernel_it_runs.<locals>.plugin_writer" \
            in flow.dispatch.dump_table("relu")


register_user_op("graph_test_twice", inputs=["x"], outputs=["y"], no_grad=True,
                 infer_shape=lambda ctx: ctx.shape("x"), infer_dtype=lambda ctx: ctx.dtype("x"))


@cpu_kernel("graph_test_twice", dtype_in("x", flow.float64))
def _twice_kernel(ctx, x):
    return x * 2.0


def test_register_out_variant_gives_kernels_registered_elsewhere_a_writer():
    op = OpBuilder("graph_test_twice").input("x").output("y").build()

    def f(x):
        return dispatch(op, (x + 1.0,))[0]

    x = f64([1.0, -2.0])
    g = traced(f)
    assert_same(g(x), f(x))
    assert g._last.plan.num_steps == 2
    register_out_variant("graph_test_twice", lambda ctx, input_dtypes: lambda out, x: np.multiply(x, 2.0, out=out))
    g = traced(f)
    assert_same(g(x), f(x))
    assert g._last.plan.num_steps == 1
    assert "        out-variant writer: test_register_out_variant_gives_kernels_registered_elsewhere_a_writer." \
           "<locals>.<lambda>" in flow.dispatch.dump_table("graph_test_twice")
    with pytest.raises(RegistrationError, match=r"register_out_variant\('graph_test_twice', device_type='cpu'\): "
                                                r"factory must be a callable factory\(ctx, input_dtypes\), got 3"):
        register_out_variant("graph_test_twice", 3)
    with pytest.raises(RegistrationError, match=r"register_out_variant\('graph_test_bad_kernel', "
                                                r"device_type='npu'\): 'graph_test_bad_kernel' has no 'npu' kernel"):
        register_out_variant("graph_test_bad_kernel", lambda ctx, input_dtypes: None, device_type="npu")
    with pytest.raises(RegistrationError, match=r"register_kernel\('graph_test_twice', 'cpu'\): out_variant must be "
                                                r"a callable factory\(ctx, input_dtypes\) or None, got 3"):
        flow.dispatch.register_kernel("graph_test_twice", "cpu", _twice_kernel, out_variant=3)


# ---- memory plan ----------------------------------------------------------------------------------
def wide(x):
    h = x
    keep = []
    for _ in range(6):
        h = flow.exp(h * -0.5)
        keep.append(h.sum())  # h is read twice: no fusion, one buffer per step without the plan
    total = keep[0]
    for k in keep[1:]:
        total = total + k
    return total


def _run_peak(g, x) -> int:
    g(x)  # capture, compile, first run
    tracemalloc.start()
    try:
        g(x)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_plan_reuses_buffers_and_frees_early():
    x = f64(np.linspace(-1.0, 1.0, 200_000))  # 1.6 MB per intermediate
    on, off = traced(wide, fusion=False), traced(wide, fusion=False, memory_plan=False)
    assert_same(on(x), wide(x))
    assert_same(off(x), wide(x))
    plan_on, plan_off = on._last.plan, off._last.plan
    step = 1_600_000
    assert plan_off.peak_bytes >= 12 * step and plan_on.peak_bytes <= 3 * step + 1000
    assert plan_on.peak_bytes_unplanned == plan_off.peak_bytes
    # 6 products and 6 exps of 1.6 MB share 2 buffers; the 5 scalar additions of the sums share 2 more
    assert "memory plan: 4 buffer(s) allocated once for 16 op result(s) (12 reuse(s) by liveness)" in repr(on)
    assert sum(b.nbytes for b in plan_on._buffers) == 2 * step + 16
    measured_on = _run_peak(on, x) + sum(b.nbytes for b in plan_on._buffers)
    measured_off = _run_peak(off, x)
    assert measured_off >= 11 * step and measured_on <= 4 * step


def test_outputs_never_share_reused_buffers():
    g = traced(lambda x: (flow.exp(x * 2.0) * 3.0, flow.relu(x) + 1.0))
    a = g(f64([1.0, -1.0]))
    a_values = [t.numpy().copy() for t in a]
    b = g(f64([5.0, 5.0]))
    for t, v in zip(a, a_values):
        np.testing.assert_array_equal(t.numpy(), v)
    assert not any(np.shares_memory(s.numpy(), t.numpy()) for s in a for t in b)


def test_views_of_reused_buffers_keep_them_busy():
    def f(x):
        a = x * 2.0
        v = a.reshape(2, 2)  # may be a view of a's buffer
        b = x * 3.0  # must not overwrite a's buffer while v is alive
        return v.sum(0) + b.reshape(2, 2).sum(0)

    x = f64([1.0, 2.0, 3.0, 4.0])
    assert_same(traced(f)(x), f(x))


# ---- all the passes together ----------------------------------------------------------------------
def _train_step(params, x, y):
    w1, b1, w2 = params
    d = flow.relu(x @ w1 + b1) @ w2 - y
    loss = (d * d).sum() * 0.5 + (w1 * w1).sum() * 0.0
    loss.backward()
    with flow.no_grad():
        for p in params:
            p.sub_(p.grad * 0.1)
            p.grad = None
    return loss, flow.ones(2, dtype=flow.float64) * 2.0


@pytest.mark.parametrize("flags", [dict(zip(PASSES, bits)) for bits in itertools.product((True, False), repeat=5)],
                         ids=lambda f: "-".join(k for k, v in f.items() if v) or "none")
def test_every_pass_combination_gives_eager_results(flags):
    rng = np.random.default_rng(5)
    init = [rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((4, 1))]
    eager = [f64(a).requires_grad_() for a in init]
    graphed = [f64(a).requires_grad_() for a in init]
    g = traced(lambda x, y: _train_step(graphed, x, y), **flags)
    x, y = f64(rng.standard_normal((5, 3))), f64(rng.standard_normal((5, 1)))
    for _ in range(3):
        le, ce = _train_step(eager, x, y)
        lg, cg = g(x, y)
        assert_same(lg, le)
        assert_same(cg, ce)
    for a, b in zip(eager, graphed):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_changing_the_config_recompiles_without_recapturing():
    calls = []

    def f(x):
        calls.append(1)
        return flow.relu(x) + 1.0

    g = traced(f)
    x = f64([-1.0, 1.0])
    g(x)
    assert g._last.plan.num_steps == 1
    g.config.enable_fusion(False)
    g.config.enable_memory_plan(False)
    assert g(x).numpy().tolist() == [1.0, 2.0] and g._last.plan.num_steps == 2 and len(calls) == 1


# ---- executor checks ------------------------------------------------------------------------------
register_user_op("graph_test_bad_kernel", inputs=["x"], outputs=["y"], no_grad=True,
                 infer_shape=lambda ctx: ctx.shape("x"), infer_dtype=lambda ctx: ctx.dtype("x"))


@cpu_kernel("graph_test_bad_kernel", dtype_in("x", flow.float64))
def _bad_kernel(ctx, x):
    return x[:1].astype(np.float32)


def test_the_first_run_checks_kernel_results_against_inference():
    op = OpBuilder("graph_test_bad_kernel").input("x").output("y").build()
    g = traced(lambda x: dispatch(op, (x,))[0])
    with pytest.raises(RuntimeError, match=rf"nn.Graph '{g.name}', op 'graph_test_bad_kernel-0' "
                                           r"\(graph_test_bad_kernel\): kernel produced output 'y_0' with shape \(1,\) "
                                           r"and dtype float32, but inference says shape \(3,\) and dtype float64"):
        g(f64([1.0, 2.0, 3.0]))


def test_a_variable_that_changed_shape_is_an_error():
    w = f64([1.0, 2.0]).requires_grad_()
    g = traced(lambda x: x * w)
    g(f64([1.0, 1.0]))
    w._array = np.zeros(3)  # what rebinding a parameter's data to another shape does
    w._meta = make_meta((3,), flow.float64, flow.device("cpu"))
    with pytest.raises(RuntimeError, match=r"variable 'FreeEagerTensor-1' was compiled as float64\[2\] on cpu:0 but "
                                           r"is now float64\[3\] on cpu:0"):
        g(f64([1.0, 1.0]))


def test_graphs_do_not_run_on_devices_without_data():
    g = traced(lambda x: x + 1.0)
    with pytest.raises(RuntimeError, match=r"op '_.*_input.0' runs on 'meta', which holds no data"):
        g(flow.zeros(2, device="meta"))


def test_stateful_op_types():
    assert is_stateful("uniform") and is_stateful("normal") and is_stateful("random_mask_like")
    assert not is_stateful("relu") and not is_stateful("broadcast_add") and not is_stateful("constant")
    assert not is_stateful("graph_test_bad_kernel")
    mark_stateful("graph_test_bad_kernel")
    assert is_stateful("graph_test_bad_kernel")
