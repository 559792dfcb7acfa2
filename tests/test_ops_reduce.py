"""Reductions, scans and sorting: PyTorch's special cases, errors and grads, against hand-computed values.

The table-driven checks (references, meta, gradcheck) are in tests/op_specs/reduce.py.
"""

import math

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.autograd import gradcheck, gradgradcheck
from oneflow_lite.framework.errors import OpKernelNotFoundError

pytestmark = pytest.mark.filterwarnings("error")  # PyTorch is silent on empty, nan and inf reductions


def t(values, dtype=None, requires_grad=False):
    x = flow.tensor(np.asarray(values), dtype=dtype) if dtype is not None else flow.tensor(np.asarray(values))
    return x.requires_grad_() if requires_grad else x


def grad_of(fn, values):
    x = t(np.asarray(values, np.float64), requires_grad=True)
    fn(x).sum().backward()
    return x.grad.numpy()


# ---- dtypes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "prod"])
def test_integer_and_bool_accumulate_in_int64(name):
    assert getattr(flow, name)(t([1, 2, 3], flow.int8)).dtype is flow.int64
    assert getattr(flow, name)(t([True, True])).dtype is flow.int64
    assert getattr(flow, name)(t([1, 2], flow.int32), dtype=flow.float64).dtype is flow.float64


def test_prod_of_int8_does_not_wrap_in_int8():
    assert flow.prod(t([100, 100], flow.int8)).item() == 10000


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_of_integers_are_int64_unless_dtype_given(name):
    fn = getattr(flow, name)
    assert fn(t([1, 2, 3], flow.int16), 0).dtype is flow.int64
    assert fn(t([True, False, True]), 0).tolist() == ([1, 1, 2] if name == "cumsum" else [1, 0, 0])
    r = fn(t([1, 2, 3], flow.int32), 0, dtype=flow.float32)
    assert r.dtype is flow.float32
    assert r.tolist() == ([1.0, 3.0, 6.0] if name == "cumsum" else [1.0, 2.0, 6.0])


def test_all_any_give_bool_or_uint8_for_uint8():
    assert flow.all(t([1.5, 2.0])).dtype is flow.bool
    assert flow.any(t([0, 3], flow.int32), 0).dtype is flow.bool
    r = flow.all(t([[1, 0], [2, 3]], flow.uint8), 1)
    assert r.dtype is flow.uint8 and r.tolist() == [0, 1]


def test_logsumexp_of_integers_is_the_default_float():
    r = flow.logsumexp(t([0, 0], flow.int64), 0)
    assert r.dtype is flow.float32
    assert r.item() == pytest.approx(math.log(2))


def test_float16_accumulates_in_float32():
    ones = t(np.ones(5000, np.float16))
    assert flow.mean(ones).item() == 1.0
    assert flow.cumsum(ones, 0).numpy()[2999] == 3000.0  # a float16 running sum would stop at 2048
    assert flow.var(t(np.full(5000, 1.0, np.float16))).item() == 0.0


def test_max_min_keep_the_dtype_and_accept_bool():
    assert flow.max(t([1, 5, 2], flow.int16)).dtype is flow.int16
    v, i = flow.min(t([[True, False], [True, True]]), 1)
    assert v.tolist() == [False, True] and i.tolist() == [1, 0]


# ---- empty, nan, inf ---------------------------------------------------------------------------------
def test_empty_reductions_follow_pytorch():
    e = t(np.zeros((0, 3), np.float32))
    assert flow.sum(e).item() == 0
    assert flow.prod(e).item() == 1
    assert math.isnan(flow.mean(e).item())
    assert flow.mean(e, 0).tolist() != flow.mean(e, 0).tolist()  # nan everywhere
    assert flow.logsumexp(e, 0).tolist() == [-math.inf] * 3
    assert flow.all(e).item() is True and flow.any(e).item() is False
    assert math.isnan(flow.var(e).item())
    assert flow.norm(e).item() == 0.0
    assert tuple(flow.amax(e, 1).shape) == (0,)  # the reduced dim is not empty
    assert tuple(flow.max(e, 1).values.shape) == (0,)


def test_max_of_empty_raises():
    e = t(np.zeros((0, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified for "
                                           r"input.numel\(\) == 0. Specify the reduction dim"):
        flow.max(e)
    with pytest.raises(RuntimeError, match=r"amin\(\): Expected reduction dim to be specified"):
        flow.amin(e)
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero size"):
        flow.max(e, 0)
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero size"):
        flow.amax(e, (0, 1))
    with pytest.raises(RuntimeError, match=r"argmax\(\): Expected reduction dim to be specified"):
        flow.argmax(e)
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0 to have non-zero size"):
        flow.argmin(e, 0)
    with pytest.raises(IndexError, match="cannot compute the inf norm on an empty tensor"):
        flow.norm(e, math.inf)


def test_empty_errors_on_meta_too():
    e = flow.tensor(np.zeros((0, 3), np.float32), device="meta")
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        flow.max(e)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        flow.min(e, 0)


def test_nan_propagates_and_is_the_extreme():
    x = t([1.0, math.nan, 3.0, math.nan])
    assert math.isnan(flow.max(x).item()) and math.isnan(flow.amin(x).item())
    v, i = flow.max(x, 0)
    assert math.isnan(v.item()) and i.item() == 1
    assert flow.argmin(x).item() == 1
    assert flow.sort(x).indices.tolist() == [0, 2, 1, 3]
    assert flow.sort(x, descending=True).indices.tolist() == [1, 3, 2, 0]
    assert flow.topk(x, 2).indices.tolist() == [1, 3]
    assert flow.topk(x, 2, largest=False).indices.tolist() == [0, 2]


def test_logsumexp_is_stable():
    assert flow.logsumexp(t([1000.0, 1000.0]), 0).item() == pytest.approx(1000 + math.log(2))
    assert flow.logsumexp(t([-1000.0, -1000.0]), 0).item() == pytest.approx(-1000 + math.log(2))
    assert flow.logsumexp(t([math.inf, 1.0]), 0).item() == math.inf
    assert flow.logsumexp(t([-math.inf, -math.inf]), 0).item() == -math.inf
    assert math.isnan(flow.logsumexp(t([math.nan, 1.0]), 0).item())


def test_var_degrees_of_freedom():
    x = t([1.0, 2.0, 4.0])
    assert flow.var(x).item() == pytest.approx(7 / 3)
    assert flow.var(x, unbiased=False).item() == pytest.approx(14 / 9)
    assert flow.var(x, False).item() == pytest.approx(14 / 9)
    assert flow.var(x, correction=0.5).item() == pytest.approx((14 / 3) / 2.5)
    assert flow.std(x, 0, True, True).tolist() == pytest.approx([math.sqrt(7 / 3)])
    assert flow.var(x, correction=3).item() == math.inf  # N - correction is 0
    assert math.isnan(flow.var(t([2.0])).item())


def test_norm_orders():
    x = t([[3.0, -4.0], [0.0, 1.0]])
    assert flow.norm(x).item() == pytest.approx(math.sqrt(26))
    assert flow.norm(x, "fro", (0, 1)).item() == pytest.approx(math.sqrt(26))
    assert flow.norm(x, 1, 1).tolist() == [7.0, 1.0]
    assert flow.norm(x, math.inf).item() == 4.0
    assert flow.norm(x, -math.inf, 1).tolist() == [3.0, 0.0]
    assert flow.norm(x, 0).item() == 3.0
    assert flow.norm(x, 3, 1).tolist() == pytest.approx([(27 + 64) ** (1 / 3), 1.0])
    np.testing.assert_allclose(flow.norm(x, dim=1, keepdim=True).numpy(), [[5.0], [1.0]])
    assert flow.norm(t([1.0, 2.0], flow.float32), dtype=flow.float64).dtype is flow.float64


# ---- sorting --------------------------------------------------------------------------------------
def test_sort_is_stable_both_ways():
    x = t([2, 1, 2, 1, 3], flow.int32)
    assert flow.sort(x).indices.tolist() == [1, 3, 0, 2, 4]
    assert flow.sort(x, descending=True).indices.tolist() == [4, 0, 2, 1, 3]
    assert flow.argsort(x, descending=True, stable=True).tolist() == [4, 0, 2, 1, 3]
    assert flow.sort(t([True, False, True]), stable=True).values.tolist() == [False, True, True]


def test_sort_and_topk_along_a_dim():
    x = t([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    v, i = flow.sort(x, 0, True)
    assert v.tolist() == [[3.0, 5.0, 4.0], [0.0, 1.0, 2.0]] and i.tolist() == [[0, 1, 1], [1, 0, 0]]
    v, i = flow.topk(x, 2)
    assert v.tolist() == [[3.0, 2.0], [5.0, 4.0]] and i.tolist() == [[0, 2], [1, 2]]
    v, i = x.topk(1, dim=0, largest=False)
    assert v.tolist() == [[0.0, 1.0, 2.0]] and i.tolist() == [[1, 0, 0]]


def test_return_types_are_named_tuples():
    x = t([[1.0, 4.0], [3.0, 2.0]])
    r = x.max(1)
    assert isinstance(r, flow.return_types.max) and isinstance(r, tuple)
    assert r.values.tolist() == [4.0, 3.0] and r.indices.tolist() == [1, 0]
    assert type(flow.min(x, dim=0, keepdim=True)).__name__ == "min"
    assert isinstance(flow.sort(x), flow.return_types.sort)
    assert isinstance(flow.topk(x, 1), flow.return_types.topk)
    values, indices = flow.sort(x)
    assert values.tolist() == [[1.0, 4.0], [2.0, 3.0]] and indices.dtype is flow.int64


def test_max_min_of_two_tensors_are_maximum_minimum():
    a, b = t([1.0, 5.0, 2.0]), t([3.0, 2.0, math.nan])
    assert flow.max(a, b).tolist()[:2] == [3.0, 5.0] and math.isnan(flow.max(a, b).tolist()[2])
    assert a.min(b).tolist()[:2] == [1.0, 2.0]
    with pytest.raises(TypeError, match=r"max\(\) received an invalid combination of arguments"):
        flow.max(a, 1.5)


def test_return_type_repr():
    r = flow.max(t([1.0, 4.0]), 0)
    assert repr(r).startswith("oneflow_lite.return_types.max(\nvalues=tensor(4.") and "indices=tensor(1," in repr(r)


def test_select_along_dim_grad_accumulates_repeated_indices():
    from oneflow_lite.framework.op_builder import OpBuilder
    from oneflow_lite.interpreters.op_interp_util import dispatch

    op = OpBuilder("select_along_dim_grad").input("dy").input("index").output("dx").build()
    dy, index = t([[1.0, 2.0, 4.0]]), t([[0, 2, 0]], flow.int64)
    (dx,) = dispatch(op, (dy, index), {"dim": 1, "like_shape": (1, 3)})
    assert dx.tolist() == [[5.0, 0.0, 2.0]]
    with pytest.raises(IndexError, match="select_along_dim_grad: index 3 is out of bounds for dim 1 with size 3"):
        dispatch(op, (dy, t([[0, 3, 0]], flow.int64)), {"dim": 1, "like_shape": (1, 3)})
    with pytest.raises(RuntimeError, match="index has size 1 at dim 0, but like_shape has size 2"):
        dispatch(op, (dy, index), {"dim": 1, "like_shape": (2, 3)})


def test_argmax_dim_none_flattens():
    x = t([[1, 9], [9, 2]], flow.int32)
    assert flow.argmax(x).item() == 1  # the first maximum in flattened order
    assert tuple(flow.argmax(x, keepdim=True).shape) == (1, 1)
    assert flow.argmin(x, 0).tolist() == [0, 1]


def test_zero_dim_inputs():
    s = t(2.5)
    assert flow.max(s, 0).values.item() == 2.5 and flow.max(s, -1).indices.item() == 0
    assert flow.cumsum(s, 0).item() == 2.5
    assert flow.sort(s).values.item() == 2.5
    assert flow.topk(s, 1).indices.item() == 0
    assert flow.argmax(s, 0).item() == 0
    assert flow.sum(s, 0).item() == 2.5 and flow.mean(s, -1).item() == 2.5


# ---- argument errors -------------------------------------------------------------------------------
def test_dim_errors():
    x = t([[1.0, 2.0]])
    with pytest.raises(IndexError, match=r"amax: Dimension out of range \(expected to be in range of \[-2, 1\], "
                                         r"but got 2\)"):
        flow.amax(x, 2)
    with pytest.raises(IndexError, match="cumsum: Dimension out of range"):
        flow.cumsum(x, -3)
    with pytest.raises(IndexError, match="sort: Dimension out of range"):
        flow.sort(x, 5)
    with pytest.raises(RuntimeError, match=r"mean\(\): dim 1 appears multiple times in the list of dims"):
        flow.mean(x, (1, -1))
    with pytest.raises(RuntimeError, match=r"amax\(\): dim 0 appears multiple times"):
        flow.amax(t(2.0), (0, -1))
    with pytest.raises(TypeError, match="logsumexp"):
        flow.logsumexp(x)


def test_dtype_errors():
    ints = t([1, 2, 3], flow.int32)
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input dtype must be either a "
                                           r"floating point or complex dtype. Got: Int"):
        flow.mean(ints)
    assert flow.mean(ints, dtype=flow.float64).item() == 2.0
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point or complex dtype. Got: Long"):
        flow.mean(ints, dtype=flow.int64)
    with pytest.raises(RuntimeError, match=r"var\(\): std and var only support floating point"):
        flow.var(ints)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor as "
                                           "input. Got Int"):
        flow.norm(ints)
    with pytest.raises(OpKernelNotFoundError, match="argmax"):
        flow.argmax(t([True, False]))
    with pytest.raises(OpKernelNotFoundError, match="topk"):
        flow.topk(t([True, False]), 1)


def test_var_argument_errors():
    x = t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="cannot pass both correction and unbiased"):
        flow.var(x, 0, True, correction=1)
    with pytest.raises(TypeError, match="var"):
        flow.var(x, 1.5)


def test_norm_argument_errors():
    x = t(np.ones((2, 2, 2)))
    with pytest.raises(RuntimeError, match="nuclear norm of a 3-D tensor needs dim"):
        flow.norm(x, "nuc")
    with pytest.raises(RuntimeError, match="p must be a number, 'fro' or 'nuc', got 'abc'"):
        flow.norm(x, "abc")
    with pytest.raises(RuntimeError, match="'fro' norm takes at most 2 dims"):
        flow.norm(x, "fro", (0, 1, 2))
    assert flow.norm(x, 2, (0, 1, 2)).item() == pytest.approx(math.sqrt(8))


def test_topk_k_out_of_range():
    x = t([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="topk\\(\\): selected index k out of range"):
        flow.topk(x, 4)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        flow.topk(x, -1)
    assert tuple(flow.topk(x, 0).values.shape) == (0,)


# ---- grads ---------------------------------------------------------------------------------------
def test_amax_and_full_max_split_the_grad_evenly_among_ties():
    np.testing.assert_allclose(grad_of(lambda x: flow.amax(x, 1), [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]),
                               [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    assert grad_of(flow.max, [[1.0, 3.0], [3.0, 0.5]]).tolist() == [[0, 0.5], [0.5, 0]]
    assert grad_of(flow.min, [1.0, math.nan, 0.0]).tolist() == [0, 1, 0]  # the nan is the result


def test_max_with_dim_sends_the_grad_to_the_index():
    assert grad_of(lambda x: flow.max(x, 1).values, [[1.0, 3.0, 3.0]]).tolist() == [[0, 1, 0]]
    assert grad_of(lambda x: x.min(0, keepdim=True)[0] * 2, [[1.0, 0.0], [0.5, 4.0]]).tolist() == [[0, 2], [2, 0]]


def test_sort_and_topk_grads_scatter_back():
    w = t([1.0, 10.0, 100.0])
    assert grad_of(lambda x: flow.sort(x).values * w, [3.0, 1.0, 2.0]).tolist() == [100, 1, 10]
    w2 = t([1.0, 10.0])
    assert grad_of(lambda x: flow.topk(x, 2).values * w2, [3.0, 1.0, 2.0]).tolist() == [1, 0, 10]


def test_prod_and_cumprod_grads_with_zeros():
    assert grad_of(flow.prod, [2.0, 0.0, 3.0]).tolist() == [0, 6, 0]
    assert grad_of(flow.prod, [0.0, 0.0, 3.0]).tolist() == [0, 0, 0]
    assert grad_of(lambda x: flow.prod(x, 1), [[2.0, 4.0], [0.0, 5.0]]).tolist() == [[4, 2], [5, 0]]
    # y = (2, 0, 0): dx0 = 1 + x1 + x1 x2 = 1, dx1 = x0 + x0 x2 = 8, dx2 = x0 x1 = 0
    assert grad_of(lambda x: flow.cumprod(x, 0), [2.0, 0.0, 3.0]).tolist() == [1, 8, 0]
    assert grad_of(lambda x: flow.cumprod(x, 0), [0.0, 2.0, 0.0]).tolist() == [3, 0, 0]


def test_norm_and_std_grads_at_zero_are_zero():
    assert grad_of(flow.norm, [0.0, 0.0]).tolist() == [0, 0]
    assert grad_of(lambda x: flow.norm(x, 1), [0.0, -2.0]).tolist() == [0, -1]
    assert grad_of(lambda x: flow.norm(x, 3), [0.0, 0.0]).tolist() == [0, 0]
    assert grad_of(flow.std, [1.0, 1.0, 1.0]).tolist() == [0, 0, 0]


def test_norm_inf_grad_splits_among_ties():
    assert grad_of(lambda x: flow.norm(x, math.inf), [-3.0, 3.0, 1.0]).tolist() == [-0.5, 0.5, 0]


def test_double_backward():
    x = t(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    assert gradgradcheck(lambda a: flow.norm(a, dim=1), (x,))
    assert gradgradcheck(lambda a: flow.logsumexp(a, (0, 1)), (x,))
    assert gradgradcheck(lambda a: flow.max(a, 0).values, (x,))
    assert gradcheck(lambda a: flow.norm(a, 2.5, 0), (x,))


def test_double_backward_of_prod_is_a_clear_error():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = flow.autograd.grad(flow.prod(x), (x,), create_graph=True)
    with pytest.raises(NotImplementedError, match="double backward of prod is not supported"):
        g.sum().backward()


def test_non_float_outputs_do_not_require_grad():
    x = t([3.0, 1.0, 2.0], requires_grad=True)
    assert not flow.argmax(x).requires_grad
    assert not flow.all(x).requires_grad
    v, i = flow.sort(x)
    assert v.requires_grad and not i.requires_grad
