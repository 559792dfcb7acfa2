"""[numerics] Right values at the edges, against hand-computed values (no PyTorch needed).

One test per class of the issue: NaN and Inf stay in their own windows, reductions that do not overflow,
NaN rules of the ops that clamp or order, requires_grad through type promotion, no silent copies, size
checks before allocation, PyTorch's argument checks.
"""

import math

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.interpreters.eager_local import set_allocation_limit

nan, inf = math.nan, math.inf
F = flow.nn.functional


def _same(got, expected, atol=0.0):
    np.testing.assert_allclose(np.asarray(got.numpy(), np.float64), np.asarray(expected, np.float64),
                               rtol=1e-5, atol=atol, equal_nan=True)


# ---- NaN and Inf stay in their own windows ------------------------------------------------------------------
@pytest.mark.parametrize("special", [nan, inf, -inf])
def test_adaptive_avg_pool_and_area_keep_a_special_value_in_its_window(special):
    x = flow.tensor([[[special, 1.0, 2.0, 3.0]]])
    for y in (F.adaptive_avg_pool1d(x, 2), F.interpolate(x, size=2, mode="area")):
        _same(y, [[[special, 2.5]]])
    x2 = flow.tensor([[[[special, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]]])
    _same(F.adaptive_avg_pool2d(x2, (1, 2)), [[[[special, 4.5]]]])
    x3 = flow.tensor(np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2))
    x3[0, 0, 0, 0, 0] = special
    _same(F.adaptive_avg_pool3d(x3, (2, 1, 1)), [[[[[special]], [[5.5]]]]])


def test_a_nan_in_one_window_leaves_the_gradient_of_the_others_finite():
    x = flow.tensor([[[nan, 1.0, 2.0, 3.0]]], requires_grad=True)
    F.adaptive_avg_pool1d(x, 2).sum().backward()
    _same(x.grad, [[[0.5, 0.5, 0.5, 0.5]]])


def test_softmax_and_logsumexp_with_infinities():
    _same(flow.logsumexp(flow.tensor([inf, 1.0]), 0), inf)
    _same(flow.logsumexp(flow.tensor([-inf, -inf]), 0), -inf)
    _same(flow.logsumexp(flow.tensor([1e30, 1e30]), 0), 1e30)
    _same(flow.log_softmax(flow.tensor([-inf, 1.0]), 0), [-inf, 0.0])
    _same(flow.softmax(flow.tensor([-inf, 0.0, 0.0]), 0), [0.0, 0.5, 0.5])
    _same(flow.softmax(flow.tensor([[nan, 0.0], [0.0, 0.0]]), 1), [[nan, nan], [0.5, 0.5]])  # row by row


# ---- reductions that do not overflow ------------------------------------------------------------------------
def test_std_of_huge_float32_values_is_finite():
    x = np.array([1e30, 1.0, 2.0])
    expected = math.sqrt(((x - x.mean()) ** 2).sum() / 2)  # 5.7735e29
    _same(flow.std(flow.tensor(x, dtype=flow.float32)), expected)
    y = flow.tensor(x, dtype=flow.float32, requires_grad=True)
    flow.std(y).backward()
    _same(y.grad, (x - x.mean()) / (2 * expected))
    _same(flow.var(flow.tensor([1e19, -1e19])), 2e38)  # the squares overflow float32, the variance does not


def test_float16_reductions_accumulate_in_float32():
    assert flow.sum(flow.ones(5000, dtype=flow.float16)).item() == 5000  # float16 steps by 4 above 4096
    assert flow.mean(flow.full((100000,), 1000.0, dtype=flow.float16)).item() == 1000
    _same(flow.var(flow.tensor([100.0, -100.0, 0.0], dtype=flow.float16)), 10000.0)
    assert flow.cumsum(flow.ones(5000, dtype=flow.float16), 0)[-1].item() == 5000


def test_integer_sums_accumulate_in_int64():
    s = flow.sum(flow.full((1000,), 100, dtype=flow.int8))
    assert s.dtype == flow.int64 and s.item() == 100000


@pytest.mark.parametrize("p", [3.0, 100.0, 0.5, -2.0])
def test_norms_scale_instead_of_overflowing(p):
    for values in ([4.379], [4.379, 1.0], [1e30, 1e30, 3e29], [1e-30, 2e-30]):
        x = np.array(values, np.float64)
        m = np.abs(x).max() if p > 0 else np.abs(x).min()
        expected = m * ((np.abs(x) / m) ** p).sum() ** (1 / p)
        t = flow.tensor(x, dtype=flow.float32, requires_grad=True)
        y = flow.linalg.vector_norm(t, p)
        _same(y, expected)
        y.backward()
        _same(t.grad, np.sign(x) * (np.abs(x) / expected) ** (p - 1), atol=1e-37)  # float32's range


def test_the_2_norm_of_huge_values_and_its_gradient():
    t = flow.tensor([3e30, 4e30], requires_grad=True)
    y = flow.linalg.vector_norm(t)
    _same(y, 5e30)
    y.backward()
    _same(t.grad, [0.6, 0.8])
    _same(F.normalize(flow.tensor([[3e30, 4e30]]), dim=1), [[0.6, 0.8]])


def test_inf_norm_of_a_slice_holding_nan():
    t = flow.tensor([[nan, 1.0, -2.0], [1.0, 3.0, -3.0]], requires_grad=True)
    y = flow.linalg.vector_norm(t, inf, dim=1)
    _same(y, [nan, 3.0])
    y.sum().backward()
    _same(t.grad, [[0.0, 0.0, 0.0], [0.0, 0.5, -0.5]])  # PyTorch's: no element equals the NaN norm


def test_layer_norm_of_a_row_whose_squares_overflow():
    x = np.array([1e30, 1.0, 2.0, 3.0, 4.0])
    expected = (x - x.mean()) / np.sqrt(((x - x.mean()) ** 2).mean() + 1e-5)
    _same(F.layer_norm(flow.tensor(x, dtype=flow.float32), (5,)), expected)


# ---- NaN rules of clamping and ordering ---------------------------------------------------------------------
def test_clip_with_a_nan_bound_has_gradient_zero():
    x = flow.tensor([1.0, -2.0], requires_grad=True)
    y = flow.clip(x, max=nan)
    _same(y, [nan, nan])
    y.sum().backward()
    _same(x.grad, [0.0, 0.0])


def test_maximum_minimum_propagate_nan_fmax_fmin_ignore_it():
    a, b = flow.tensor([nan, 1.0, nan]), flow.tensor([2.0, nan, nan])
    _same(flow.maximum(a, b), [nan, nan, nan])
    _same(flow.minimum(a, b), [nan, nan, nan])
    _same(flow.fmax(a, b), [2.0, 1.0, nan])
    _same(flow.fmin(a, b), [2.0, 1.0, nan])


def test_nan_orders_above_every_number():
    x = flow.tensor([3.0, nan, -inf, 1.0])
    values, indices = flow.sort(x)
    _same(values, [-inf, 1.0, 3.0, nan])
    assert indices.tolist() == [2, 3, 0, 1]
    _same(flow.sort(x, descending=True)[0], [nan, 3.0, 1.0, -inf])
    assert flow.argmax(x).item() == 1 and flow.argmin(x).item() == 1  # NaN wins both, as in PyTorch
    _same(flow.max(x), nan)
    _same(flow.topk(x, 2)[0], [nan, 3.0])


# ---- requires_grad through type promotion -------------------------------------------------------------------
def test_promotion_keeps_requires_grad():
    ints = flow.ones(3, dtype=flow.int64)
    leaf = flow.zeros(0, requires_grad=True)
    out = flow.cat([ints, leaf])
    assert out.requires_grad and out.dtype == flow.float32 and out.tolist() == [1.0, 1.0, 1.0]
    out.sum().backward()
    assert tuple(leaf.grad.shape) == (0,)
    w = flow.ones(3, requires_grad=True)
    for y in (ints + w, ints * w, flow.where(ints > 0, ints, w), flow.stack([ints, w])):
        assert y.requires_grad and y.dtype == flow.float32


# ---- no silent copies ---------------------------------------------------------------------------------------
def test_view_of_a_transposed_tensor_raises_and_points_to_reshape():
    t = flow.ones(3, 4).T
    with pytest.raises(RuntimeError, match=r"view size is not compatible .* Use \.reshape"):
        t.view(12)
    assert tuple(t.reshape(12).shape) == (12,)


def test_a_view_that_strides_can_express_shares_memory():
    base = flow.zeros(4, 6)
    v = base[:, ::2].view(4, 3, 1)  # a sliced, non-contiguous tensor whose new shape needs no copy
    v.fill_(1.0)
    assert base.numpy()[:, ::2].sum() == 12 and base.numpy()[:, 1::2].sum() == 0
    t = flow.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)
    w = t.view(4, 6)  # dims 0 and 1 of the permuted tensor merge (stride 12 = 3 * 4)
    w.mul_(0)
    assert t.numpy().sum() == 0


# ---- size checks before allocation --------------------------------------------------------------------------
def test_a_huge_request_names_the_op_the_shape_and_the_bytes():
    with pytest.raises(MemoryError, match=r"constant: .*shape \(1000000, 1000000\).*4000000000000 bytes"):
        flow.zeros(10**6, 10**6)
    previous = set_allocation_limit(1 << 20)
    try:
        with pytest.raises(MemoryError, match=r"expand: .*\(1024, 1024\) and dtype float32: 4194304 bytes"):
            flow.ones(1, 1024).expand(1024, 1024).contiguous()
    finally:
        set_allocation_limit(previous)


# ---- PyTorch's argument checks ------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error", [
    (lambda: flow.tensor(1.0).size(0), IndexError),
    (lambda: flow.unflatten(flow.tensor(1.0), 0, (1,)), IndexError),
    (lambda: F.pad(flow.ones(1, 1, 3), (3, 3), mode="reflect"), RuntimeError),
    (lambda: F.max_pool1d(flow.ones(1, 1, 3), 5), RuntimeError),
    (lambda: flow.arange(0, 5, 0.5, dtype=flow.int64), RuntimeError),
    (lambda: flow.masked_fill(flow.ones(3, dtype=flow.int8), flow.tensor([True, False, True]), 1000), RuntimeError),
    (lambda: F.group_norm(flow.ones(1, 2, 1), 2), ValueError),
    (lambda: flow.pow(flow.tensor([2]), -1), RuntimeError),
    (lambda: flow.where(flow.tensor([True]), flow.tensor([1], dtype=flow.int16), 2 ** 31), RuntimeError),
    (lambda: flow.where(flow.tensor([True]), 1e300, flow.ones(1, dtype=flow.float32)), RuntimeError),
    (lambda: flow.randint(-2 ** 40, 5, (2,), dtype=flow.float16), RuntimeError),
    (lambda: flow.cross(flow.ones(3), flow.ones(2, 3)), RuntimeError),
    (lambda: flow.masked_select(flow.ones(2), flow.tensor([1.0, 0.0])), RuntimeError),
    (lambda: flow.cov(flow.ones(3), fweights=flow.tensor([1.0, 2.0, 1.0])), RuntimeError),
    (lambda: flow.cov(flow.ones(3), fweights=flow.tensor([1, -2, 1])), RuntimeError),
    (lambda: flow.nanmean(flow.tensor([8]), dtype=flow.float64), RuntimeError),
    (lambda: flow.sum(flow.tensor(2.0), [-1, 0]), RuntimeError),
    (lambda: flow.index_copy(flow.tensor(4), 0, flow.tensor(0), flow.ones(1, 3, dtype=flow.int64)), RuntimeError),
    (lambda: F.pad(flow.tensor([4], dtype=flow.uint8), [1, 1], "constant", -0.5), RuntimeError),
    (lambda: flow.addcmul(flow.ones(1, dtype=flow.uint8), flow.ones(1, dtype=flow.uint8),
                          flow.ones(1, dtype=flow.uint8), value=300), RuntimeError),
    (lambda: flow.isclose(flow.ones(2), flow.ones(2), nan), RuntimeError),
    (lambda: flow.linspace(-2.0, 0, 3, dtype=flow.uint8), RuntimeError),
    (lambda: flow.linalg.vector_norm(flow.ones(3, dtype=flow.float64), dtype=flow.float32), RuntimeError),
])
def test_checks_pytorch_makes(call, error):
    with pytest.raises(error, match=r"^(size|unflatten|pad|max_pool1d|arange|masked_fill|group_norm|pow|where|"
                                    r"randint|cross|masked_select|cov|nanmean|sum|index_copy|addcmul|isclose|linspace|"
                                    r"linalg.vector_norm)"):
        call()


def test_all_and_any_over_no_dims_keep_each_elements_truth():
    x = flow.tensor([[1.0, 0.0], [nan, -2.0]])
    expected = np.array([[True, False], [True, True]])
    for fn in (flow.all, flow.any):
        got = fn(x, [])
        assert got.dtype == flow.bool and got.numpy().tolist() == expected.tolist()
    assert flow.all(flow.tensor([3, 0], dtype=flow.uint8), []).numpy().tolist() == [1, 0]
    assert flow.all(flow.tensor([3, 0], dtype=flow.uint8), []).dtype == flow.uint8
    assert not flow.all(x).item() and flow.any(x).item()  # dim=None still reduces every dim


def test_adjoint_of_a_0d_tensor_is_itself_and_cross_needs_equal_ndims():
    assert flow.adjoint(flow.tensor(6.0)).item() == 6.0 and flow.tensor(6.0).mT.item() == 6.0
    a, b = np.array([[1.0, 0, 0], [0, 1, 0]]), np.array([[0.0, 1, 0]])
    np.testing.assert_array_equal(flow.cross(flow.tensor(a), flow.tensor(b)).numpy(), np.cross(a, b))


@pytest.mark.parametrize("cross", [flow.cross, flow.linalg.cross, flow.Tensor.cross],
                         ids=["cross", "linalg.cross", "Tensor.cross"])
def test_cross_takes_one_dtype_as_pytorch(cross):
    """PyTorch's cross kernel takes one dtype: no promotion (empty inputs too), and no bool."""
    name = "linalg.cross" if cross is flow.linalg.cross else "cross"
    a, b = flow.tensor([1, 2, 3]), flow.tensor([4, 5, 6], dtype=flow.int8)
    with pytest.raises(RuntimeError, match=rf"^{name}: expected input and other to have the same dtype, but got "
                                           r"int64 and int8"):
        cross(a, b)
    with pytest.raises(RuntimeError, match="same dtype, but got float32 and float64"):
        cross(flow.zeros(0, 3), flow.zeros(0, 3, dtype=flow.float64))
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        cross(flow.ones(3, dtype=flow.bool), flow.ones(3, dtype=flow.bool))
    assert cross(a, flow.tensor([4, 5, 6])).tolist() == [2 * 6 - 3 * 5, 3 * 4 - 1 * 6, 1 * 5 - 2 * 4]
    assert cross(flow.zeros(0, 3), flow.zeros(0, 3)).shape == (0, 3)
    with pytest.raises(RuntimeError, match="(length|size) 3"):  # the shape checks come first, as in PyTorch
        cross(flow.tensor([1, 2, 3, 4]), flow.tensor([1, 2, 3, 4], dtype=flow.int8))


@pytest.mark.parametrize("call", [
    lambda a: flow.linalg.svd(a), lambda a: flow.linalg.svdvals(a), lambda a: flow.linalg.pinv(a),
    lambda a: flow.linalg.matrix_rank(a), lambda a: flow.linalg.matrix_norm(a, ord=2),
    lambda a: flow.linalg.lstsq(a, flow.ones(3, 2, dtype=flow.float64)),
])
@pytest.mark.parametrize("special", [np.inf, np.nan])
def test_svd_of_non_finite_input_raises_instead_of_looping(call, special):
    """LAPACK's gesdd (OpenBLAS) never returns on a 3x4 matrix holding Inf; PyTorch refuses such input."""
    a = np.ones((3, 4), np.float64)
    a[1, 2] = special
    with pytest.raises(flow.linalg.LinAlgError, match="failed to converge because the input matrix contained "
                                                       "non-finite values"):
        call(flow.tensor(a))


def test_a_shared_helper_error_names_the_op_it_was_called_from():
    """Note [Errors name their op]: type promotion does not know its caller; the functional layer names it,
    once (the innermost function: hstack runs cat)."""
    a, b = flow.ones(2, dtype=flow.uint16), flow.ones(2, dtype=flow.int8)
    with pytest.raises(RuntimeError, match=r"^add: Promotion for uint16, uint32, uint64 types is not supported"):
        flow.add(a, b)
    with pytest.raises(RuntimeError, match=r"^cat: Promotion for uint16"):
        flow.hstack([a, b])
    with pytest.raises(RuntimeError, match=r"^Promotion for uint16"):
        flow.promote_types(flow.uint16, flow.int8)  # not a functional function: PyTorch's message as it is


def test_pytorch_scalar_operand_rule_for_unsigned_and_float_values():
    """framework/dtype.py converts(): an int down to -max wraps into an unsigned dtype (PyTorch), a float is
    compared before truncation, and isclose compares bools as numbers."""
    u8 = flow.tensor([1, 2], dtype=flow.uint8)
    assert flow.where(flow.tensor([True, False]), u8, -1).numpy().tolist() == [1, 255]
    with pytest.raises(RuntimeError, match="where: value -256 cannot be converted to type uint8"):
        flow.where(flow.tensor([True, False]), u8, -256)
    assert flow.where(flow.tensor([True, False]), u8, -0.5).numpy().tolist() == [1.0, -0.5]  # a float result
    got = flow.isclose(flow.tensor([True, False]), flow.tensor([False, False]), atol=1.5)
    assert got.numpy().tolist() == [True, True]
    assert flow.xlogy(2 ** 31, flow.tensor([0], dtype=flow.int32)).item() == -inf  # 2**31 * log(0), no wrap


def test_diff_of_order_0_is_the_input_without_prepend_or_append():
    x = flow.tensor([[1.0, 4.0, 9.0]])
    got = flow.diff(x, 0, prepend=flow.zeros(1, 2))
    assert got.numpy().tolist() == [[1.0, 4.0, 9.0]]
    assert flow.diff(x, 1, prepend=flow.zeros(1, 1)).numpy().tolist() == [[1.0, 3.0, 5.0]]


# ---- window counts, empty unique slices, integer linspace / range (issue #20's parity fuzz) ------------------
@pytest.mark.parametrize("shape,dim,size,step", [((1, 3), 0, 0, 3), ((1, 3), 0, 1, 5), ((5,), 0, 0, 2),
                                                  ((5,), 0, 5, 1), ((5,), 0, 5, 7), ((4, 2), 1, 0, 1),
                                                  ((4, 2), 0, 2, 3), ((3,), 0, 2, 2 ** 40)])
def test_unfold_makes_one_window_every_step_that_fits(shape, dim, size, step):
    x_np = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    n = (shape[dim] - size) // step + 1  # the windows that fit, however large the step
    windows = [np.take(x_np, range(i * step, i * step + size), axis=dim) for i in range(n)]
    expected = np.moveaxis(np.stack(windows, axis=dim), dim + 1, -1)
    x = flow.tensor(x_np)
    for got in (x.unfold(dim, size, step), flow.unfold_copy(x, dim, size, step)):
        assert tuple(got.shape) == expected.shape
        np.testing.assert_array_equal(got.numpy(), expected)


def test_unique_along_the_only_empty_dim_and_pytorchs_refusals():
    x = flow.zeros(4, 4, 0, 4, 3, dtype=flow.int16)
    for fn in (flow.unique_consecutive, lambda t, *a: flow.unique(t, True, *a)):
        out, inverse, counts = fn(x, True, True, -3)
        assert (tuple(out.shape), tuple(inverse.shape), tuple(counts.shape)) == ((4, 4, 0, 4, 3), (0,), (0,))
    out, inverse = flow.unique_consecutive(flow.zeros(0, dtype=flow.int64), True, False, 0)
    assert (tuple(out.shape), tuple(inverse.shape)) == ((0,), (0,))
    with pytest.raises(RuntimeError, match=r"unique_consecutive: There are 0 sized dimensions, and they aren't "
                                           r"selected"):
        flow.unique_consecutive(x, dim=1)
    with pytest.raises(RuntimeError, match=r"unique: There are 0 sized dimensions, and they aren't selected"):
        flow.unique(flow.zeros(2, 0, 3), dim=0)
    with pytest.raises(RuntimeError, match=r"unique: Number of zero sized dimensions is more than one"):
        flow.unique(flow.zeros(0, 0), dim=1)
    assert flow.unique_consecutive(flow.zeros(0, 0)).shape == (0,)  # without dim: the flattened (no) elements


def _integer_linspace(start, end, steps):
    """PyTorch's integer linspace: the bounds truncated first, then its symmetric float formula, truncated."""
    start, end = math.trunc(start), math.trunc(end)
    step = (end - start) / (steps - 1)
    return [math.trunc(start + step * i if i < steps // 2 else end - step * (steps - 1 - i)) for i in range(steps)]


@pytest.mark.parametrize("start,end,steps,dtype", [(0.5, 3.7, 3, flow.int8), (0.5, 3.7, 5, flow.int64),
                                                   (-0.5, -3.7, 5, flow.int64), (-2.7, 3.7, 4, flow.int32)])
def test_integer_linspace_truncates_its_bounds_first(start, end, steps, dtype):
    expected = _integer_linspace(start, end, steps)
    assert flow.linspace(start, end, steps, dtype=dtype).tolist() == expected
    assert flow.linspace(0.5, 3.7, 3, dtype=flow.int8).tolist() == [0, 1, 3]  # (0 + 1.5 truncates to 1)
    # logspace likewise: base ** linspace(trunc(start), trunc(end)), truncated
    powers = [math.trunc(10.0 ** (math.trunc(start) + (math.trunc(end) - math.trunc(start)) / (steps - 1) * i))
              for i in range(steps)]
    got = flow.logspace(start, end, steps, dtype=flow.int64).tolist()
    assert got[0] == powers[0] and got[-1] == powers[-1]
    np.testing.assert_allclose(got, powers, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:.*range is deprecated")
@pytest.mark.parametrize("start,end,step,expected", [(2, -0.5369, -2.9709, [2, 0]), (0.5, 5.5, 1.5, [0, 1, 2, 3, 4, 5]),
                                                     (-3.5, 5.9, 2.9, [-3, -1, 1, 3, 5]), (0.7, -0.9, -1.5, [0])])
def test_integer_range_truncates_bounds_and_step_first(start, end, step, expected):
    got = flow.range(start, end, step, dtype=flow.int16)
    assert got.dtype == flow.int16 and got.tolist() == expected
    assert flow.range(start, end, step).tolist() == pytest.approx(  # a float dtype keeps the float step
        [start + i * step for i in range(math.floor((end - start) / step) + 1)], rel=1e-6)


@pytest.mark.filterwarnings("ignore:.*range is deprecated")
def test_integer_range_whose_step_truncates_to_zero_raises():
    with pytest.raises(RuntimeError, match="range: step must be nonzero"):
        flow.range(0.2, 0.9, 0.5, dtype=flow.int32)
    with pytest.raises(RuntimeError, match="arange: step must be nonzero"):
        flow.arange(0.2, 0.9, 0.5, dtype=flow.int64)


@pytest.mark.parametrize("dtype", [flow.int32, flow.int16, flow.uint8])
def test_integer_arange_counts_in_double_and_steps_from_the_truncated_start(dtype):
    # PyTorch's rule for integer dtypes other than int64 (Note [Integer aranges]): ceil((end - start) / step)
    # elements from the given floats, valued trunc(start) + i * trunc(step)
    assert flow.arange(-0.5, 2, 1, dtype=dtype).tolist() == [0, 1, 2]  # 3 elements: 0 - 0.5 ... 2
    assert flow.arange(2.9, -0.5, -1.5, dtype=dtype if dtype is not flow.uint8 else flow.int8).tolist() == [2, 1, 0]
    assert flow.arange(0.1, 0.9, 0.3, dtype=dtype).tolist() == [0, 0, 0]  # a step truncated to 0 repeats start
    assert flow.arange(5e-324, dtype=dtype).tolist() == [0]
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        flow.arange(0.5, 0.2, 1, dtype=dtype)


def test_int64_arange_truncates_bounds_and_step_first():
    assert flow.arange(-0.5, 2, 1, dtype=flow.int64).tolist() == [0, 1]
    assert flow.arange(2.9, -0.5, -1.5, dtype=flow.int64).tolist() == [2, 1]
    assert flow.arange(5e-324, dtype=flow.int64).tolist() == []
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        flow.arange(0.5, 0.2, 1, dtype=flow.int64)  # the signs of the given bounds, before truncation


@pytest.mark.filterwarnings("ignore:.*range is deprecated")
def test_range_counts_as_pytorch_past_2_to_the_53():
    # PyTorch: int64((end - start) / step + 1) in double, which rounds (here to an even count) before truncating
    n = flow.range(-2.936069965362549, 2, 2.354627979496215e-16, device="meta").shape[0]
    assert n == int((2 - -2.936069965362549) / 2.354627979496215e-16 + 1) == 20963268967943916


def test_linspace_of_no_step_checks_no_bound():
    assert flow.linspace(-math.inf, 1.0, 0, dtype=flow.int8).tolist() == []
    with pytest.raises(RuntimeError, match="start -inf cannot be converted to type int8"):
        flow.linspace(-math.inf, 1.0, 1, dtype=flow.int8)


def test_trigamma_at_its_poles_is_inf():
    x = flow.tensor([0.0, -1.0, -2.0, -32768.0, -0.5, -math.inf], dtype=flow.float64)
    got = flow.polygamma(1, x).numpy()
    assert got[:4].tolist() == [math.inf] * 4  # PyTorch: inf at 0, then 6.6e32, 1.6e32, 6.1e23 (sin(pi k) != 0)
    assert got[4] == pytest.approx(math.pi ** 2 / 2 + 4, rel=1e-12)  # psi1(-1/2) = psi1(1/2) + 1 / (1/2)^2
    assert math.isnan(got[5])


def _sum_to(g, shape):
    """The gradient ``g`` of a broadcast result summed back to an input of ``shape``."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    return g.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1), keepdims=True)


@pytest.mark.parametrize("a,b", [(np.zeros(0), np.array(inf)), (np.array([[0.0], [1.0]]), np.array([200.0, 1.0])),
                                 (np.array([0.0, 1.0]), np.array([inf, 1.0])), (np.ones(2), np.array(3.0))])
@pytest.mark.parametrize("dtype", [flow.float16, flow.float32])
def test_ldexp_gradient_sums_the_elementwise_products(a, b, dtype):
    np_dtype = np.float16 if dtype is flow.float16 else np.float32
    x = flow.tensor(a, dtype=dtype, requires_grad=True)
    e = flow.tensor(b, dtype=dtype, requires_grad=True)
    flow.ldexp(x, e).sum().backward()
    with np.errstate(all="ignore"):  # d/dx = 2**e and d/de = x * 2**e * log 2 per element of the result, summed
        shape = np.broadcast_shapes(a.shape, b.shape)
        pow2 = np.broadcast_to(np.exp2(b.astype(np_dtype)), shape)
        dx, de = _sum_to(pow2, a.shape), _sum_to(a.astype(np_dtype) * pow2 * np_dtype(math.log(2)), b.shape)
    np.testing.assert_allclose(e.grad.numpy().astype(np.float64), de, rtol=2e-3, equal_nan=True)
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), dx, rtol=2e-3, equal_nan=True)
    if a.size == 0:
        assert e.grad.item() == 0.0  # an empty sum, not 0 * inf


def test_inverse_solve_and_det_of_a_matrix_holding_nan_are_nan_per_matrix():
    # LAPACK's getrf runs through a NaN pivot (info 0): the matrix's results are NaN, its neighbours are computed
    batch = flow.tensor([[[nan, 1.0], [1.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]]], dtype=flow.float64)
    inv_12_34 = [[-2.0, 1.0], [1.5, -0.5]]  # by hand: adj / det, det = -2
    nan_block = [[nan, nan], [nan, nan]]
    for got in (flow.linalg.inv(batch), flow.linalg.matrix_power(batch, -1), flow.inverse(batch),
                flow.linalg.inv_ex(batch).inverse):
        _same(got, [nan_block, inv_12_34])
    assert flow.linalg.inv_ex(batch).info.tolist() == [0, 0]
    _same(flow.linalg.inv(batch[0]), nan_block)
    rhs = flow.ones(2, 2, 1, dtype=flow.float64)
    _same(flow.linalg.solve(batch, rhs), [[[nan], [nan]], [[-1.0], [1.0]]])  # [1, 2; 3, 4] x = [1, 1]: x = (-1, 1)
    assert flow.linalg.solve_ex(batch, rhs).info.tolist() == [0, 0]
    _same(flow.linalg.det(batch), [nan, -2.0])  # NumPy's det gives 0 for the first
    sign, logabsdet = flow.linalg.slogdet(batch)
    _same(logabsdet, [nan, math.log(2.0)])
    assert sign.tolist()[1] == -1.0
    _same(flow.logdet(batch), [nan, nan])  # a negative determinant has no real log


def test_a_singular_matrix_beside_a_nan_one_still_raises_naming_its_batch_element():
    batch = flow.tensor([[[nan, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]], dtype=flow.float64)
    with pytest.raises(RuntimeError, match=r"linalg.inv: \(Batch element 1\): The diagonal element 2 is zero"):
        flow.linalg.inv(batch)
    with pytest.raises(RuntimeError, match=r"linalg.solve: \(Batch element 1\): The solver failed"):
        flow.linalg.solve(batch, flow.ones(2, 2, dtype=flow.float64))
    inverse, info = flow.linalg.inv_ex(batch)
    assert info.tolist() == [0, 2]
    assert np.isnan(inverse.numpy()[0]).all()
    result, info = flow.linalg.solve_ex(batch, flow.ones(2, 2, 1, dtype=flow.float64))
    assert info.tolist() == [0, 2] and np.isnan(result.numpy()[0]).all()


def _log_polygamma(n, x, terms=2000):
    """log|polygamma(n, x)| = lgamma(n + 1) - (n + 1) log x + log sum_k (x / (x + k))^(n + 1), for n large
    enough that the sum's first terms decide it (here directly summed in math)."""
    s = n + 1
    return math.lgamma(n + 1) - s * math.log(x) + math.log(math.fsum(math.exp(-s * math.log1p(k / x))
                                                                     for k in range(terms)))


@pytest.mark.parametrize("n,x", [(200, 100.0), (170, 100.0), (171, 100.0), (300, 50.0), (1000, 600.0)])
def test_polygamma_of_a_large_order_in_log_space(n, x):
    # n! overflows (n > 170) or zeta(n + 1, x) underflows, their product is finite; sign (-1)^(n + 1) for x > 0
    expected = (1 if n % 2 else -1) * math.exp(_log_polygamma(n, x))
    got = flow.polygamma(n, flow.tensor([x], dtype=flow.float64)).item()
    assert got == pytest.approx(expected, rel=1e-11) and got != 0.0
    mpmath = pytest.importorskip("mpmath")
    assert got == pytest.approx(float(mpmath.polygamma(n, x)), rel=1e-11)


def test_polygamma_of_a_huge_order_overflows_with_its_sign():
    assert flow.polygamma(2 ** 40, flow.tensor([2.0])).item() == -inf  # n even: -n! zeta(n + 1, 2), huge
    assert flow.polygamma(2 ** 40 + 1, flow.tensor([2.0])).item() == inf
    assert flow.polygamma(2 ** 40, flow.tensor([1e15], dtype=flow.float64)).item() == 0.0  # x^-(n+1) wins
    assert flow.polygamma(201, flow.tensor([1e300], dtype=flow.float64)).item() == 0.0
    # small orders and x <= 0 keep the direct product: polygamma(2, 1) = -2 zeta(3), polygamma(3, 1) = pi^4 / 15
    _same(flow.polygamma(2, flow.tensor([1.0], dtype=flow.float64)), [-2.4041138063191885])
    _same(flow.polygamma(3, flow.tensor([1.0], dtype=flow.float64)), [math.pi ** 4 / 15])
    got = flow.polygamma(171, flow.tensor([0.0, -2.0, inf, nan], dtype=flow.float64)).tolist()
    assert got[:2] == [inf, inf] and math.isnan(got[2]) and math.isnan(got[3])


@pytest.mark.parametrize("n,x", [(172, -1.5), (200, -3.5), (180, -0.5)])
def test_polygamma_of_a_large_order_at_a_negative_half_integer(n, x):
    # n even, s = n + 1 odd: the terms (x + k)^-s for x + k in [x, -x] cancel in pairs, leaving -n! zeta(s, 1 - x)
    # (x = -1.5: (-1.5)^-s + (-0.5)^-s + 0.5^-s + 1.5^-s = 0, then 2.5^-s + ...)
    expected = -math.exp(_log_polygamma(n, 1 - x))
    got = flow.polygamma(n, flow.tensor([x], dtype=flow.float64)).item()
    assert got == pytest.approx(expected, rel=1e-11)


def test_polygamma_of_a_huge_order_near_a_negative_pole():
    # n even, x = -0.0889: the term x^-(n+1) (negative, huge) dominates, times -n!: +inf (the direct sum gave
    # inf - inf = NaN; PyTorch's float32 rounds n + 1 = 2**40 + 1 to an even exponent and answers -inf)
    assert flow.polygamma(2 ** 40, flow.tensor([-0.0889], dtype=flow.float64)).item() == inf
    assert flow.polygamma(2 ** 40 + 1, flow.tensor([-0.0889], dtype=flow.float64)).item() == inf
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(400):  # the nearest terms cancel to ~120 digits: mpmath needs the extra precision
        for n, x in ((171, -0.3), (201, -2.7), (500, -0.51), (200, -1.5)):
            expected = mpmath.polygamma(n, mpmath.mpf(x))
            got = flow.polygamma(n, flow.tensor([x], dtype=flow.float64)).item()
            if abs(expected) > mpmath.mpf("1.7e308"):
                assert got == math.copysign(inf, expected)
            else:
                assert got == pytest.approx(float(expected), rel=1e-10)


# ---- parity round 4 (40 random calls per function against PyTorch 2.13) -----------------------------------
def test_logit_clamps_below_eps_first_as_pytorch():
    # eps > 0.5 makes [eps, 1 - eps] empty: below eps goes to eps, then above 1 - eps to 1 - eps
    lo, hi = math.log(0.7 / 0.3), math.log(0.3 / 0.7)
    got = flow.logit(flow.tensor([0.0, 0.3, 1.0, 0.5], dtype=flow.float64), eps=0.7).numpy()
    np.testing.assert_allclose(got, [lo, lo, hi, lo], rtol=1e-12)


def test_bce_with_logits_gradient_at_infinite_logits():
    # d/dx = sigmoid(x) - t: 0 - 0 at -inf with t = 0, 1 - 0 at inf; sigmoid(-x) no longer exp(-(inf - inf))
    x = flow.tensor([-math.inf, math.inf, -3.0], requires_grad=True)
    t = flow.tensor([0.0, 0.0, 0.25])
    F.binary_cross_entropy_with_logits(x, t, reduction="sum").backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 1.0, 1 / (1 + math.exp(3)) - 0.25], rtol=1e-6)


def test_polygamma_of_a_huge_order_on_a_0_d_tensor():
    assert flow.polygamma(2 ** 40, flow.tensor(4, dtype=flow.uint16)).item() == -math.inf  # (-1)^(n+1) n! / 4^(n+1)


def test_diff_of_order_0_reads_dim_only_with_prepend_or_append():
    assert flow.diff(flow.zeros(0, 0, dtype=flow.int8), 0, -3).shape == (0, 0)  # PyTorch: the input, unchecked dim
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.diff(flow.zeros(0, 0), 0, -3, append=flow.zeros(0, 0))


def test_gradient_of_a_0_d_bool_is_empty():
    assert flow.gradient(flow.tensor(False)) == ()


def test_scalar_checks_of_hinge_margin_logspace_bounds_and_where():
    x = flow.tensor([1.0, 2.0], dtype=flow.float16)
    with pytest.raises(RuntimeError, match="hinge_embedding_loss: margin 1e[+]30 cannot be converted to type float16"):
        F.hinge_embedding_loss(x, flow.tensor([1, -1]), 1e30)
    with pytest.raises(RuntimeError, match="logspace: end -1.5 cannot be converted to type uint8"):
        flow.logspace(1, -1.5, 3, dtype=flow.uint8)
    # where checks a number against float32 for a float16 tensor (PyTorch computes in float32): 1e30 rounds to inf
    assert flow.where(x > 1, x, 1e30).tolist() == [math.inf, 2.0]
    with pytest.raises(RuntimeError, match="where: value 1e[+]300 cannot be converted to type float32"):
        flow.where(x > 1, x, 1e300)


def test_cov_weights_need_one_per_observation():
    with pytest.raises(RuntimeError, match="expected fweights to have the same numel as there are observations in "
                                           "the input but got 1 != 3"):
        flow.cov(flow.tensor([9.0, 6.0, 9.0]), fweights=flow.tensor([5]))
    # weighted: mean (1 + 4 + 4) / 4 = 2.25, sum w (x - mean)^2 = 4.75, / (4 - 1)
    got = flow.cov(flow.tensor([[1.0, 2.0, 4.0]], dtype=flow.float64), fweights=flow.tensor([1, 2, 1]))
    assert got.item() == pytest.approx(4.75 / 3, rel=1e-12)


def test_float_power_of_a_huge_int_exponent_differentiates():
    x = flow.tensor(0.0, requires_grad=True)
    y = flow.float_power(x, -2 ** 63)  # 0 ** -2**63 = inf; d/dx = n x**(n - 1) = -2**63 * inf
    y.backward()
    assert y.item() == math.inf and x.grad.item() == -math.inf


def test_inner_of_empty_tensors_and_take_along_dim_of_0_d():
    a = flow.zeros(0, 1, 0, 0, dtype=flow.int8)
    assert flow.inner(a, a).shape == (0, 1, 0, 0, 1, 0)
    with pytest.raises(IndexError, match="take_along_dim: Dimension specified as 0 but tensor has no dimensions"):
        flow.take_along_dim(flow.tensor(True), flow.tensor(0), 0)


def test_cov_takes_the_result_type_of_input_and_aweights():
    x = flow.tensor([1.0, 3.0], dtype=flow.float16)
    got = flow.cov(x, aweights=flow.tensor([1.0, 3.0], dtype=flow.float64))
    # weighted mean 2.5; sum w (x - m)^2 = 2.25 + 0.75 = 3; correction 1 with aweights: / (4 - 10 / 4)
    assert got.dtype is flow.float64 and got.item() == pytest.approx(3.0 / (4 - 10 / 4), rel=1e-12)
    assert flow.cov(flow.tensor([1, 2]), aweights=flow.tensor([0.5, 0.5], dtype=flow.float16)).dtype is flow.float16


def test_index_copy_into_0_d_with_dim_minus_1():
    a, b = flow.tensor(0.5, requires_grad=True), flow.tensor(3.5, requires_grad=True)
    y = flow.index_copy(a, -1, flow.tensor(0), b)
    y.backward()
    assert y.item() == 3.5 and a.grad.item() == 0.0 and b.grad.item() == 1.0


@pytest.mark.parametrize("value", [-0.5, 255.5, 256, -256])
def test_fill_compares_a_float_before_truncating_it(value):
    x = flow.tensor([1, 2], dtype=flow.uint8)
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8 without overflow"):
        x.fill_(value)
    assert x.tolist() == [1, 2]
    assert flow.tensor([1, 2], dtype=flow.uint8).fill_(254.9).tolist() == [254, 254]


def test_checks_of_the_final_parity_round():
    half = flow.ones(2, dtype=flow.float16)
    # addcmul checks value against float32 for half tensors (PyTorch's computation type): 1e30 rounds to inf
    assert flow.addcmul(half, half, half, value=1e30).tolist() == [math.inf, math.inf]
    with pytest.raises(RuntimeError, match="celu: 1 / alpha 1e[+]40 cannot be converted to type float32"):
        F.celu(flow.ones(2), 1e-40)
    with pytest.raises(ValueError, match="running_mean and running_var must either both be None or neither"):
        F.instance_norm(flow.ones(2, 1, 3), running_var=flow.ones(1))
    a = flow.ones(1, 2, 1, dtype=flow.float64)
    with pytest.raises(RuntimeError, match="Expected tau to have one dimension less than input"):
        flow.ormqr(a, flow.ones(4, 1, 2, 1, dtype=flow.float64), a)
    assert flow.split(flow.zeros(0, 2), []) == ()  # no piece of an empty dim
    with pytest.raises(RuntimeError, match="split_with_sizes expects at least one split size"):
        flow.split(flow.zeros(3, 2), [])


def test_poisson_nll_full_keeps_the_input_dtype():
    # PyTorch adds Stirling's term (float32 from int64 targets) into the float16 loss in place: each float16 op
    # rounds once (exp, t * x, the difference), then the sum with the float32 term rounds once more
    x, t = flow.tensor([1.3, 1.3], dtype=flow.float16), flow.tensor([2, 0])
    got = F.poisson_nll_loss(x, t, full=True, reduction="none")
    h = np.float16
    xv = float(h(1.3))
    loss = [float(h(float(h(math.exp(xv))) - float(h(tv * xv)))) for tv in (2, 0)]
    stirling = 2 * math.log(2) - 2 + 0.5 * math.log(2 * math.pi * 2)
    want = [h(loss[0] + stirling), h(loss[1])]
    assert got.dtype is flow.float16 and got.tolist() == [float(w) for w in want]


def test_rms_norm_takes_a_negative_eps_as_given():
    # sqrt(mean(x**2) + eps): was math.sqrt(eps) raising "math domain error"
    x = np.array([[0.28, -3.8, -2.45, -3.73], [0.84, 2.5, 2.4, 0.98]])
    got = F.rms_norm(flow.tensor(x, dtype=flow.float64), [2, 4], None, -1.0).numpy()
    np.testing.assert_allclose(got, x / np.sqrt((x * x).mean() - 1.0), rtol=1e-12)
    assert np.isnan(F.rms_norm(flow.tensor([[0.1, 0.2]]), [2], None, -1.0).numpy()).all()  # 0.025 - 1 < 0
