"""UserOpExpr's meta-inference and kernel caches, and the EagerLocalInterpreter's checks."""

import itertools

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.kernel_predicate import KernelPredicate
from oneflow_lite.framework import op_expr as op_expr_mod
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.errors import OpDefinitionError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_expr import FeedInputOpExpr, FetchOutputOpExpr
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.kernels.meta import meta_kernel

_ids = itertools.count()
CPU, META = flow.device("cpu"), flow.device("meta")


def _t(values, dtype=flow.float32, device=CPU):
    a = np.asarray(values, dtype=dtype.np_dtype)
    return Tensor._make(a if device.device_type.has_storage else None, make_meta(a.shape, dtype, device))


def _meta(shape, dtype=flow.float32, device=CPU):
    return make_meta(shape, dtype, device)


@pytest.fixture
def counting_op():
    """A unary op whose infer functions count their calls; attr ``k`` (int64, default 0)."""
    name = f"expr_test_op_{next(_ids)}"
    calls = []

    def infer_shape(ctx):
        calls.append((tuple(m.shape for m in ctx.input_metas), ctx.attr("k")))
        return ctx.shape("x")

    d = register_user_op(name, inputs=["x"], outputs=["y"], attrs={"k": ("int64", 0)},
                         infer_shape=infer_shape, infer_dtype=lambda ctx: ctx.dtype("x"))
    yield OpBuilder(name).input("x").output("y").build(), calls
    d.remove()


@pytest.fixture
def binary_op():
    name = f"expr_binary_op_{next(_ids)}"
    d = register_user_op(name, inputs=["x", "other"], outputs=["out"],
                         infer_shape=lambda ctx: ctx.shape("x"), infer_dtype=lambda ctx: ctx.dtype("x"))
    handles = [DISPATCHER.register_kernel(name, "cpu", lambda ctx, a, b: a + b),
               DISPATCHER.register_kernel(name, "meta", meta_kernel)]
    yield OpBuilder(name).input("x").input("other").output("out").build()
    for h in handles:
        h.remove()
    d.remove()


# ---- meta-inference cache -------------------------------------------------------------------------
def test_infer_cache_hits_on_same_metas_and_attrs(counting_op):
    expr, calls = counting_op
    m = _meta((2, 3))
    r1 = expr.infer((m,), None)
    r2 = expr.infer((_meta((2, 3)),), None)  # an equal meta is the same interned object
    assert r1 is r2 and len(calls) == 1 and expr.infer_cache_size() == 1
    assert r1.out_metas == (m,) and r1.device is CPU and r1.attrs["k"] == 0
    a1 = expr.infer((m,), AttrMap({"k": 5}))
    a2 = expr.infer((m,), AttrMap({"k": 5}))  # a new but equal AttrMap
    assert a1 is a2 and a1.attrs["k"] == 5 and len(calls) == 2


@pytest.mark.parametrize("other", [
    ((_meta((3, 2)),), None),                      # shape
    ((_meta((2, 3), flow.float64),), None),        # dtype
    ((_meta((2, 3), device=META),), None),         # device
    ((_meta((2, 3)),), AttrMap({"k": 1})),         # attrs
    ((_meta((2, 3)),), AttrMap({"k": True})),      # an attr of another type (then rejected)
])
def test_infer_cache_misses_on_a_different_key(counting_op, other):
    expr, calls = counting_op
    expr.infer((_meta((2, 3)),), None)
    metas, attrs = other
    if attrs is not None and attrs["k"] is True:
        with pytest.raises(OpDefinitionError,
                           match=r"attr 'k' \(int64\): expected an integer \(int64\), got bool True"):
            expr.infer(metas, attrs)
        assert len(calls) == 1 and expr.infer_cache_size() == 1
        return
    r = expr.infer(metas, attrs)
    assert len(calls) == 2 and expr.infer_cache_size() == 2
    assert r.out_metas[0] is metas[0]


def test_infer_cache_is_capped(counting_op, monkeypatch):
    monkeypatch.setattr(op_expr_mod, "INFER_CACHE_SIZE", 3)
    expr, calls = counting_op
    sizes = []
    for n in range(1, 8):
        expr.infer((_meta((n,)),), None)
        sizes.append(expr.infer_cache_size())
    assert max(sizes) == 3 and len(calls) == 7
    expr.clear_infer_cache()
    assert expr.infer_cache_size() == 0


def test_infer_errors_are_not_cached(counting_op):
    expr, calls = counting_op
    with pytest.raises(TypeError, match=r"expected 1 input tensor\(s\) \(x_0\), got 2"):
        expr.infer((_meta((1,)), _meta((1,))), None)
    assert expr.infer_cache_size() == 0


def test_eager_calls_go_through_the_cache(counting_op):
    expr, calls = counting_op
    with DISPATCHER.register_kernel(expr.op_type_name, "cpu", lambda ctx, x: x + ctx.attr("k")):
        for _ in range(3):
            assert dispatch(expr, (_t([1.0, 2.0]),))[0].numpy().tolist() == [1.0, 2.0]
        assert len(calls) == 1
        assert dispatch(expr, (_t([1.0, 2.0]),), AttrMap({"k": 2}))[0].numpy().tolist() == [3.0, 4.0]
        assert dispatch(expr, (_t([1.0, 2.0, 3.0]),))[0].numpy().tolist() == [1.0, 2.0, 3.0]
        assert len(calls) == 3


# ---- kernel cache ----------------------------------------------------------------------------------
def test_kernel_choice_is_cached_per_device_and_dtypes(counting_op):
    expr, _ = counting_op
    evaluations = []

    def predicate(tag):
        def check(ctx):
            evaluations.append((tag, ctx.input_dtype("x")))
            return True
        return KernelPredicate(check, tag)

    handles = [DISPATCHER.register_kernel(expr.op_type_name, "cpu", lambda ctx, x: x, predicate=predicate("cpu")),
               DISPATCHER.register_kernel(expr.op_type_name, "meta", meta_kernel, predicate=predicate("meta"))]
    try:
        for _ in range(2):
            dispatch(expr, (_t([1.0]),))
            dispatch(expr, (_t([1.0, 2.0]),))  # another shape: another inference, the same kernel choice
            dispatch(expr, (_t([1.0], flow.float64),))
            dispatch(expr, (_t([1.0], device=META),))
        assert evaluations == [("cpu", flow.float32), ("cpu", flow.float64), ("meta", flow.float32)]
        assert set(expr.kernel_cache) == {("cpu", (flow.float32,), (flow.float32,)),
                                          ("cpu", (flow.float64,), (flow.float64,)),
                                          ("meta", (flow.float32,), (flow.float32,))}
    finally:
        for h in handles:
            h.remove()


def test_kernel_registered_during_a_choice_is_picked_up_next_call(counting_op):
    expr, _ = counting_op
    op_type = expr.op_type_name
    late = []

    def register_late(ctx):
        if not late:  # another thread registers a better kernel while this call is choosing
            late.append(DISPATCHER.register_kernel(op_type, "cpu", lambda c, x: x * 10, priority=5))
        return True

    first = DISPATCHER.register_kernel(op_type, "cpu", lambda ctx, x: x, predicate=KernelPredicate(register_late, "p"))
    try:
        assert dispatch(expr, (_t([1.0]),))[0].item() == 1.0
        assert dispatch(expr, (_t([1.0]),))[0].item() == 10.0
    finally:
        for h in late + [first]:
            h.remove()


# ---- eager interpreter -----------------------------------------------------------------------------
def test_same_device_check_names_devices_and_positions(binary_op):
    with pytest.raises(RuntimeError) as info:
        dispatch(binary_op, (_t([1.0]), _t([1.0], device=META)))
    assert str(info.value) == (f"{binary_op.op_type_name}: expected all tensors to be on the same device, but found "
                               f"at least two devices: cpu:0 (input x_0, position 0) and meta (input other_0, "
                               f"position 1)")
    with pytest.raises(RuntimeError, match=r"meta \(input x_0, position 0\) and cpu:0 \(input other_0, position 1\)"):
        dispatch(binary_op, (_t([1.0], device=META), _t([1.0])))
    assert binary_op.infer_cache_size() == 0
    assert dispatch(binary_op, (_t([1.0]), _t([2.0])))[0].item() == 3.0


def test_meta_computes_nothing(binary_op):
    def exploding(ctx, a, b):
        raise AssertionError("the cpu kernel must not run for meta tensors")

    with DISPATCHER.register_kernel(binary_op.op_type_name, "cpu", exploding, priority=9):
        (y,) = dispatch(binary_op, (_t([[1.0, 2.0]], device=META), _t([[3.0, 4.0]], device=META)))
    assert y.device is META and y.shape == (1, 2) and y.dtype is flow.float32 and y._array is None
    with pytest.raises(RuntimeError, match=r"Tensor.numpy\(\): a tensor on 'meta' holds no data"):
        y.numpy()
    r = flow.relu(_t([[1.0], [-1.0], [0.0]], flow.float64, META))
    assert r.device is META and r.shape == (3, 1) and r.dtype is flow.float64


def test_in_place_outputs_are_written_and_checked(binary_op):
    x, other = _t([1.0, 2.0]), _t([10.0, 20.0])
    out = _t([0.0, 0.0])
    buffer = out.numpy()
    (res,) = dispatch(binary_op, (x, other), None, (out,))
    assert res is out and out.numpy() is buffer and buffer.tolist() == [11.0, 22.0]
    name = binary_op.op_type_name
    with pytest.raises(RuntimeError) as info:
        dispatch(binary_op, (x, other), None, (_t([0.0, 0.0, 0.0]),))
    assert str(info.value) == (f"{name}: in-place output 'out_0' has shape (3,), dtype float32, device cpu:0 but the "
                               f"result has shape (2,), dtype float32, device cpu:0")
    wrong_dtype = _t([5, 5], flow.int32)
    with pytest.raises(RuntimeError, match=rf"{name}: in-place output 'out_0' has shape \(2,\), dtype int32, "
                                           r"device cpu:0 but the result has shape \(2,\), dtype float32"):
        dispatch(binary_op, (x, other), None, (wrong_dtype,))
    assert wrong_dtype.numpy().tolist() == [5, 5]  # unchanged
    with pytest.raises(RuntimeError, match=rf"{name}: 1 output tensor\(s\) expected for an in-place call, got 2"):
        dispatch(binary_op, (x, other), None, (out, out))


def test_in_place_on_meta(binary_op):
    out = _t([0.0], device=META)
    assert dispatch(binary_op, (_t([1.0], device=META), _t([2.0], device=META)), None, (out,))[0] is out


@pytest.mark.parametrize("result, message", [
    (lambda x: x.astype(np.float64), r"kernel produced output 'y_0' with shape \(2,\) and dtype float64, but "
                                     r"inference says shape \(2,\) and dtype float32"),
    (lambda x: x[:1], r"kernel produced output 'y_0' with shape \(1,\) and dtype float32, but inference says shape "
                      r"\(2,\) and dtype float32"),
    (lambda x: [1.0, 2.0], r"kernel produced output 'y_0' with shape \(2,\) and dtype float64"),
])
def test_kernel_returning_the_wrong_dtype_or_shape(counting_op, result, message):
    expr, _ = counting_op
    with DISPATCHER.register_kernel(expr.op_type_name, "cpu", lambda ctx, x: result(x)):
        with pytest.raises(RuntimeError, match=rf"^{expr.op_type_name}: {message}"):
            dispatch(expr, (_t([1.0, 2.0]),))


def test_kernel_result_that_converts_exactly_is_accepted(counting_op):
    expr, _ = counting_op
    with DISPATCHER.register_kernel(expr.op_type_name, "cpu", lambda ctx, x: np.float32(7.0)):
        assert dispatch(expr, (_t(1.0),))[0].item() == 7.0


def test_several_outputs_each_checked():
    name = f"expr_two_out_{next(_ids)}"
    d = register_user_op(name, inputs=["x"], outputs=["a", "b"], infer_shape=lambda c: [c.shape("x"), ()],
                         infer_dtype=lambda c: [c.dtype("x"), flow.int64])
    expr = OpBuilder(name).input("x").output("a").output("b").build()
    try:
        with DISPATCHER.register_kernel(name, "cpu", lambda ctx, x: (x * 2, np.array(x.size, np.int64))):
            a, b = dispatch(expr, (_t([1.0, 2.0]),))
            assert a.numpy().tolist() == [2.0, 4.0] and b.item() == 2 and b.dtype is flow.int64
        with DISPATCHER.register_kernel(name, "cpu", lambda ctx, x: (x, np.array(1, np.int32))):
            with pytest.raises(RuntimeError, match=rf"{name}: kernel produced output 'b_0' with shape \(\) and dtype "
                                                   r"int32, but inference says shape \(\) and dtype int64"):
                dispatch(expr, (_t([1.0, 2.0]),))
    finally:
        d.remove()


def test_wrong_number_of_inputs(binary_op):
    with pytest.raises(TypeError, match=rf"{binary_op.op_type_name}: expected 2 input tensor\(s\) \(x_0, other_0\), "
                                        r"got 1"):
        dispatch(binary_op, (_t([1.0]),))


def test_feed_and_fetch_exprs_are_not_run_eagerly():
    for e in (FeedInputOpExpr("feed"), FetchOutputOpExpr("fetch")):
        with pytest.raises(RuntimeError, match=rf"EagerLocalInterpreter: {type(e).__name__} \('{e.op_type_name}'\) "
                                               r"is not supported in eager mode"):
            dispatch(e, (_t([1.0]),))
