"""Reductions, scans and sorting: definitions and gradient rows (OneFlow's op names where it has them).

Reductions over several dims (``reduce_mean``, ``reduce_prod``, ``reduce_max``,
``reduce_min``, ``reduce_all``, ``reduce_any``, ``reduce_logsumexp``,
``reduce_var``, ``reduce_std``, ``vector_norm``) take ``reduce_sum``'s attrs:
``axis`` (non-negative after the functor, no repeats; every dim for a full
reduction) and ``keepdims``. Ops along one dim (``reduce_max_dim`` /
``reduce_min_dim`` with values and indices, ``argmax`` / ``argmin``,
``cumsum`` / ``cumprod``, ``sort``, ``arg_sort``, ``topk``) take ``dim``.

Shape errors follow PyTorch: a max / min / argmax over a dim of size zero is an
IndexError naming the function (there is no identity to return), and so is a
-inf / inf / negative-order norm of an empty slice. Like every infer error, they
are raised on meta tensors too.

Order statistics (``reduce_median``, ``median_dim``, ``kthvalue``, ``mode``,
``cummax`` / ``cummin``, ``logcumsumexp``) follow Note [Order statistics]; the
histograms, ``bincount``, ``searchsorted`` and ``unique`` have no gradient.

The backward ops (``select_along_dim`` / ``select_along_dim_grad``,
``reduce_prod_grad``, ``cumprod_grad``, ``vector_norm_grad``) exist for the
gradient rows, which stand after the ops they differentiate.

Note [Reduction grads]
A reduction's output grad is first given back the reduced dims as size 1
(``kept`` shape), so it broadcasts against the input. Then:

- mean: ``dy / N``; logsumexp: ``dy * exp(x - y)``; var: ``dy * 2 (x - mean) / (N - correction)``;
  std: the var formula with ``dy / (2 std)``, 0 where std is 0 (as PyTorch).
- amax / amin and ``max()`` / ``min()``: the grad is split evenly among the elements equal to the
  result (NaN counting as equal to a NaN result), as PyTorch's ``evenly_distribute_backward``.
- ``max(dim)`` / ``min(dim)``, sort and topk: the grad goes to the selected indices
  (``select_along_dim_grad``, whose own grad is ``select_along_dim``, so double backward works).
- cumsum: the reversed cumulative sum, ``sum(dy) - cumsum(dy) + dy`` along the dim.
- the 2-norm: ``x * dy / y`` (0 where y is 0); other orders, prod and cumprod use backward ops
  (``vector_norm_grad``, ``reduce_prod_grad``, ``cumprod_grad``) that are exact with zeros in the
  input; differentiating those three again (double backward) raises NotImplementedError.

Everything but the three backward ops is made of functional calls, so it is differentiable again.
The reduced dims, the kept shape and the count come from the input's meta and the ``axis`` attr
when backward runs (``reduced_dims``, cached), so the forward computes nothing for them. Casts,
reshapes and reductions over given dims call the op (``F.ops.cast``, ...): the functional
function's parsing of a dtype, shape or dim list costs microseconds per call, for the same result.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.ops.common import not_implemented_row, same_dtype, same_shape

_BOOL = dt.bool_
_UINT8 = dt.uint8
_INT64 = dt.int64

# The PyTorch function named in the errors of an op's inference.
_PUBLIC = {"reduce_max": "amax", "reduce_min": "amin", "reduce_max_dim": "max", "reduce_min_dim": "min",
           "argmax": "argmax", "argmin": "argmin", "vector_norm": "linalg.vector_norm", "hash_tensor": "hash_tensor"}

_REDUCE_ATTRS = {"axis": ("list_int32", ()), "keepdims": ("bool", False)}


def reduce_axes(ctx, shape) -> set:
    """The set of reduced dims of a reduce op, validated: each in [-ndim, ndim), none repeated."""
    ndim = len(shape)
    n = max(ndim, 1)  # a 0-d tensor takes dims -1 and 0
    axes = set()
    for a in ctx.attr("axis"):
        if not -n <= a < n:
            raise ctx.error(f"axis {a} is out of range for a tensor of {ndim} dimension(s)")
        a = a + ndim if a < 0 else a
        if a in axes:
            raise ctx.error(f"dim {a} appears multiple times in the list of dims")
        axes.add(a)
    if ndim == 0:
        axes.clear()
    return axes


def _reduced_shape(ctx, shape, axes):
    if ctx.attr("keepdims"):
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_shape(ctx):
    shape = ctx.input_metas[0].shape
    return _reduced_shape(ctx, shape, reduce_axes(ctx, shape))


def _nonempty_reduce_shape(ctx):
    """A reduction without an identity (max, min): no reduced dim may have size zero."""
    shape = ctx.input_metas[0].shape
    axes = reduce_axes(ctx, shape)
    for a in sorted(axes):
        if shape[a] == 0:
            raise IndexError(f"{_PUBLIC[ctx.op_type]}(): Expected reduction dim {a} to have non-zero size.")
    return _reduced_shape(ctx, shape, axes)


def _bool_or_uint8(ctx):
    """all / any give bool, or uint8 for a uint8 input (PyTorch's uint8 compatibility)."""
    return _UINT8 if ctx.input_metas[0].dtype is _UINT8 else _BOOL


for _op in ("reduce_mean", "reduce_prod", "reduce_logsumexp", "reduce_var", "reduce_std"):
    _attrs = dict(_REDUCE_ATTRS)
    if _op in ("reduce_var", "reduce_std"):
        _attrs["correction"] = ("double", 1.0)
    register_user_op(_op, inputs=["input_tensor"], outputs=["output_tensor"], attrs=_attrs,
                     infer_shape=_reduce_shape, infer_dtype=same_dtype)
for _op in ("reduce_max", "reduce_min"):
    register_user_op(_op, inputs=["input_tensor"], outputs=["output_tensor"], attrs=_REDUCE_ATTRS,
                     infer_shape=_nonempty_reduce_shape, infer_dtype=same_dtype)
for _op in ("reduce_all", "reduce_any"):
    register_user_op(_op, inputs=["input_tensor"], outputs=["output_tensor"], attrs=_REDUCE_ATTRS,
                     infer_shape=_reduce_shape, infer_dtype=_bool_or_uint8, no_grad=True)
# hash_tensor: the xor of the elements' bits, each read as a 64-bit float / integer (a uint64 result)
register_user_op("hash_tensor", inputs=["input_tensor"], outputs=["output_tensor"], attrs=_REDUCE_ATTRS,
                 infer_shape=_nonempty_reduce_shape, infer_dtype=lambda ctx: dt.uint64, no_grad=True)


def _grad_like_x_shape(ctx):
    """``dy`` has the reduced shape of ``x`` with the reduced dims kept (size 1); ``dx`` has x's shape."""
    x, dy = ctx.shape("x"), ctx.shape("dy")
    axes = reduce_axes(ctx, x)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x))
    if tuple(dy) != kept:
        raise ctx.error(f"dy must have shape {list(kept)} (x's shape with the reduced dims kept), got {list(dy)}")
    if ctx.dtype("dy") is not ctx.dtype("x"):
        raise ctx.error(f"dy and x must have the same dtype, got {ctx.dtype('dy').name} and {ctx.dtype('x').name}")
    return x


register_user_op("reduce_prod_grad", inputs=["dy", "x"], outputs=["dx"], attrs={"axis": ("list_int32", ())},
                 infer_shape=_grad_like_x_shape, infer_dtype=same_dtype)


# ---- gradient rows of the reductions (Note [Reduction grads]) ------------------------------------------
@functools.lru_cache(maxsize=256)
def reduced_dims(shape, axis) -> tuple:
    """``(axes, kept, count)`` of a reduction over ``shape`` (an input meta's shape) by its ``axis`` attr: the
    reduced dims (non-negative, sorted), the kept shape (those dims as size 1) and the number of elements
    each output element reduces."""
    ndim = len(shape)
    axes = tuple(sorted(a + ndim if a < 0 else a for a in axis)) if ndim else ()
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return axes, kept, math.prod(shape[a] for a in axes)


def _kept(g, kept):
    """``g`` reshaped to the kept shape (reduced dims as size 1)."""
    return g if g._meta.shape == kept else F.ops.reshape(g, shape=kept)


def _nonzero_mask(t):
    """1 where ``t`` is non-zero, else 0, in ``t``'s dtype."""
    return F.ops.cast(F.ne(t, 0), dtype=t._meta.dtype)


def _safe_divisor(t):
    """``t`` with its zeros replaced by 1."""
    return F.add(t, F.ops.cast(F.eq(t, 0), dtype=t._meta.dtype))


def _mean_grad(doutput_tensor, input_tensor_meta, axis):
    shape = input_tensor_meta.shape
    _, kept, count = reduced_dims(shape, axis)
    dy = F.div_scalar(doutput_tensor, count) if count else doutput_tensor
    return F.expand_reduced(dy, kept, shape)


def _prod_grad(doutput_tensor, input_tensor, axis):
    axes, kept, _ = reduced_dims(input_tensor._meta.shape, axis)
    return F.reduce_prod_grad(_kept(doutput_tensor, kept), input_tensor, axis=axes)


def _evenly_split(doutput_tensor, input_tensor, output_tensor, axis):
    """amax / amin: the grad split evenly among the elements equal to the result."""
    x = input_tensor
    axes, kept, _ = reduced_dims(x._meta.shape, axis)
    yk = _kept(output_tensor, kept)
    both_nan = F.mul(F.ne(x, x), F.ne(yk, yk))  # bool * bool is and, bool + bool is or
    mask = F.ops.cast(F.add(F.eq(x, yk), both_nan), dtype=x._meta.dtype)
    count = F.ops.reduce_sum(mask, axis=axes, keepdims=True)
    return F.mul(F.div(_kept(doutput_tensor, kept), count), mask)


def _logsumexp_grad(doutput_tensor, input_tensor, output_tensor, axis):
    _, kept, _ = reduced_dims(input_tensor._meta.shape, axis)
    return F.mul(_kept(doutput_tensor, kept), F.exp(F.sub(input_tensor, _kept(output_tensor, kept))))


def _deviation(x, axis, correction):
    """``(x - mean(x), 1 / (N - correction), kept)``: the reciprocal degrees of freedom are inf when not
    positive."""
    axes, kept, count = reduced_dims(x._meta.shape, axis)
    dof = count - correction
    return F.sub(x, F.ops.reduce_mean(x, axis=axes, keepdims=True)), (1.0 / dof if dof > 0 else math.inf), kept


def _var_grad(doutput_tensor, input_tensor, axis, correction):
    dev, inv_dof, kept = _deviation(input_tensor, axis, correction)
    return F.mul_scalar(F.mul(_kept(doutput_tensor, kept), dev), 2.0 * inv_dof)


def _std_grad(doutput_tensor, input_tensor, output_tensor, axis, correction):
    dev, inv_dof, kept = _deviation(input_tensor, axis, correction)
    yk = _kept(output_tensor, kept)
    g = F.mul(F.div(_kept(doutput_tensor, kept), _safe_divisor(yk)), _nonzero_mask(yk))
    return F.mul_scalar(F.mul(g, dev), inv_dof)


derivative("reduce_mean", name="Mean", input_tensor=_mean_grad)
derivative("reduce_prod", name="Prod", input_tensor=_prod_grad)
derivative("reduce_max", name="Amax", input_tensor=_evenly_split)
derivative("reduce_min", name="Amin", input_tensor=_evenly_split)
derivative("reduce_logsumexp", name="LogSumExp", input_tensor=_logsumexp_grad)
derivative("reduce_var", name="Var", input_tensor=_var_grad)
derivative("reduce_std", name="Std", input_tensor=_std_grad)


def _no_double_backward(op_type, what):
    """The rows of a backward op whose own derivative is not implemented: reaching it raises."""
    derivative(op_type, joint=not_implemented_row(
        f"double backward of {what} is not supported (the derivative of '{op_type}' is not implemented)"))


_no_double_backward("reduce_prod_grad", "prod")


# ---- vector_norm ---------------------------------------------------------------------------------------
def _vector_norm_shape(ctx):
    """An inf or negative-order norm has no identity: an empty slice is an error."""
    shape = ctx.input_metas[0].shape
    axes = reduce_axes(ctx, shape)
    order = ctx.attr("ord")
    if order < 0 or math.isinf(order):
        n = math.prod(shape[a] for a in axes) if shape else 1
        if n == 0:
            raise IndexError(f"linalg.vector_norm cannot compute the {order:g} norm on an empty tensor because the "
                             f"operation does not have an identity")
    return _reduced_shape(ctx, shape, axes)


register_user_op("vector_norm", inputs=["input_tensor"], outputs=["output_tensor"],
                 attrs={**_REDUCE_ATTRS, "ord": ("double", 2.0)},
                 infer_shape=_vector_norm_shape, infer_dtype=same_dtype)


def _norm_grad_shape(ctx):
    shape = _grad_like_x_shape(ctx)
    if tuple(ctx.shape("y")) != tuple(ctx.shape("dy")):
        raise ctx.error(f"y and dy must have the same shape, got {list(ctx.shape('y'))} and "
                        f"{list(ctx.shape('dy'))}")
    return shape


register_user_op("vector_norm_grad", inputs=["dy", "x", "y"], outputs=["dx"],
                 attrs={"axis": ("list_int32", ()), "ord": ("double", 2.0)},
                 infer_shape=_norm_grad_shape, infer_dtype=same_dtype)


def _norm_grad(doutput_tensor, input_tensor, output_tensor, axis, ord):
    """The 2-norm: ``x * dy / y`` (0 where y is 0); other orders: vector_norm_grad."""
    axes, kept, _ = reduced_dims(input_tensor._meta.shape, axis)
    dy, yk = _kept(doutput_tensor, kept), _kept(output_tensor, kept)
    if ord == 2:
        return F.mul(input_tensor, F.div(dy, _safe_divisor(yk)))
    return F.vector_norm_grad(dy, input_tensor, yk, axis=axes, ord=ord)


derivative("vector_norm", name="Norm", input_tensor=_norm_grad)
_no_double_backward("vector_norm_grad", "norm with an order other than 2 and 0")


# ---- along one dim -----------------------------------------------------------------------------
def wrap_dim(ctx, dim, ndim):
    """``dim`` in [0, ndim) (0 for a 0-d tensor, whose only dims are -1 and 0)."""
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(f"{ctx.op_type}: Dimension out of range (expected to be in range of [{lo}, {hi}], but got "
                         f"{dim})")
    return dim + ndim if dim < 0 else dim


def _dim_reduced_shape(ctx):
    shape = ctx.input_metas[0].shape
    ndim = len(shape)
    d = wrap_dim(ctx, ctx.attr("dim"), ndim)
    if ndim and shape[d] == 0:
        public = "nanmedian" if ctx.attrs.get("ignore_nan") else _PUBLIC[ctx.op_type]
        raise IndexError(f"{public}(): Expected reduction dim {d} to have non-zero size.")
    if not ndim:
        return ()
    if ctx.attr("keepdim"):
        return tuple(1 if i == d else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i != d)


def _values_and_indices_shape(ctx):
    shape = _dim_reduced_shape(ctx)
    return shape, shape


def _values_and_indices_dtype(ctx):
    return ctx.input_metas[0].dtype, _INT64


for _op in ("reduce_max_dim", "reduce_min_dim"):
    register_user_op(_op, inputs=["input"], outputs=["values", "indices"],
                     attrs={"dim": ("int32", 0), "keepdim": ("bool", False)},
                     infer_shape=_values_and_indices_shape, infer_dtype=_values_and_indices_dtype)


def _arg_reduce_shape(ctx):
    """With ``flatten`` the whole tensor is reduced (``keepdim`` then keeps every dim as 1)."""
    if not ctx.attr("flatten"):
        return _dim_reduced_shape(ctx)
    shape = ctx.input_metas[0].shape
    if math.prod(shape) == 0:
        raise RuntimeError(f"{ctx.op_type}(): Expected reduction dim to be specified for input.numel() == 0.")
    return (1,) * len(shape) if ctx.attr("keepdim") else ()


def _int64(ctx):
    return _INT64


for _op in ("argmax", "argmin"):
    register_user_op(_op, inputs=["in"], outputs=["out"],
                     attrs={"dim": ("int32", 0), "keepdim": ("bool", False), "flatten": ("bool", False)},
                     infer_shape=_arg_reduce_shape, infer_dtype=_int64, no_grad=True)


def _along_dim_shape(ctx):
    shape = ctx.input_metas[0].shape
    wrap_dim(ctx, ctx.attr("dim"), len(shape))
    return shape


for _op in ("cumsum", "cumprod"):
    register_user_op(_op, inputs=["x"], outputs=["y"], attrs={"dim": ("int32", 0)},
                     infer_shape=_along_dim_shape, infer_dtype=same_dtype)


def _cumprod_grad_shape(ctx):
    x, dy = ctx.shape("x"), ctx.shape("dy")
    wrap_dim(ctx, ctx.attr("dim"), len(x))
    if tuple(x) != tuple(dy) or ctx.dtype("x") is not ctx.dtype("dy"):
        raise ctx.error(f"dy and x must have the same shape and dtype, got {list(dy)} {ctx.dtype('dy').name} and "
                        f"{list(x)} {ctx.dtype('x').name}")
    return same_shape(ctx)


register_user_op("cumprod_grad", inputs=["dy", "x"], outputs=["dx"], attrs={"dim": ("int32", 0)},
                 infer_shape=_cumprod_grad_shape, infer_dtype=same_dtype)


def _cumsum_grad(dy, x_meta, dim):
    """The reversed cumulative sum: ``sum(dy) - cumsum(dy) + dy`` along the dim."""
    ndim = x_meta.ndim
    if not ndim:
        return dy
    d = dim + ndim if dim < 0 else dim
    return F.add(F.sub(F.ops.reduce_sum(dy, axis=(d,), keepdims=True), F.cumsum(dy, d)), dy)


derivative("cumsum", name="Cumsum", x=_cumsum_grad)
derivative("cumprod", name="Cumprod", x=lambda dy, x, dim: F.cumprod_grad(dy, x, dim=dim))
_no_double_backward("cumprod_grad", "cumprod")


def _sort_shape(ctx):
    shape = _along_dim_shape(ctx)
    return shape, shape


register_user_op("sort", inputs=["in"], outputs=["values", "indices"],
                 attrs={"dim": ("int32", -1), "descending": ("bool", False)},
                 infer_shape=_sort_shape, infer_dtype=_values_and_indices_dtype)
register_user_op("arg_sort", inputs=["in"], outputs=["out"],
                 attrs={"dim": ("int32", -1), "descending": ("bool", False)},
                 infer_shape=_along_dim_shape, infer_dtype=_int64, no_grad=True)


def _topk_shape(ctx):
    shape = ctx.input_metas[0].shape
    ndim = len(shape)
    d = wrap_dim(ctx, ctx.attr("dim"), ndim)
    k = ctx.attr("k")
    size = shape[d] if ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk(): selected index k out of range (k={k}, and the size of dim {d} is {size})")
    out = tuple(k if i == d else s for i, s in enumerate(shape))
    return out, out


register_user_op("topk", inputs=["in"], outputs=["values", "indices"],
                 attrs={"k": ("int64", 1), "dim": ("int32", -1), "largest": ("bool", True), "sorted": ("bool", True)},
                 infer_shape=_topk_shape, infer_dtype=_values_and_indices_dtype)


# ---- select_along_dim: the backward of the ops that select along a dim -----------------------------------
def _check_index(ctx, index_shape, shape, d, what):
    if ctx.dtype("index") is not _INT64:
        raise ctx.error(f"index must be int64, got {ctx.dtype('index').name}")
    if len(index_shape) != len(shape):
        raise ctx.error(f"index ({len(index_shape)}-d) must have as many dims as {what} ({len(shape)}-d)")
    for i, (a, b) in enumerate(zip(index_shape, shape)):
        if i != d and a != b:
            raise ctx.error(f"index has size {a} at dim {i}, but {what} has size {b}")


def _select_along_dim_shape(ctx):
    """``y[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``dim`` (NumPy's take_along_axis)."""
    shape, index = ctx.shape("x"), ctx.shape("index")
    _check_index(ctx, index, shape, wrap_dim(ctx, ctx.attr("dim"), len(shape)), "x")
    return index


register_user_op("select_along_dim", inputs=["x", "index"], outputs=["y"], attrs={"dim": ("int32", 0)},
                 infer_shape=_select_along_dim_shape, infer_dtype=same_dtype)


def _select_along_dim_grad_shape(ctx):
    """Zeros of ``like_shape`` with ``dy`` added at ``index`` along ``dim``: the adjoint of select_along_dim."""
    like, dy = ctx.attr("like_shape"), ctx.shape("dy")
    d = wrap_dim(ctx, ctx.attr("dim"), len(like))
    if tuple(ctx.shape("index")) != tuple(dy):
        raise ctx.error(f"dy and index must have the same shape, got {list(dy)} and {list(ctx.shape('index'))}")
    _check_index(ctx, dy, like, d, "like_shape")
    return like


register_user_op("select_along_dim_grad", inputs=["dy", "index"], outputs=["dx"],
                 attrs={"dim": ("int32", 0), "like_shape": ("shape", ())},
                 infer_shape=_select_along_dim_grad_shape, infer_dtype=same_dtype)


def _to_indices(dvalues, indices, x_meta, dim, keepdim):
    """The grad of values selected along ``dim`` (max / min with a dim, sort, topk) goes back to their
    ``indices``; ``keepdim`` False: the dim was dropped."""
    if dvalues is None:
        return None
    ndim = x_meta.ndim
    if not ndim:
        return dvalues
    d = dim + ndim if dim < 0 else dim
    kept = tuple(indices._meta.shape)
    if not keepdim:
        kept = kept[:d] + (1,) + kept[d:]
    return F.select_along_dim_grad(_kept(dvalues, kept), _kept(indices, kept), dim=d, like_shape=tuple(x_meta.shape))


for _op, _name in (("reduce_max_dim", "Max"), ("reduce_min_dim", "Min")):
    derivative(_op, name=_name, input=lambda dvalues, indices, input_meta, dim, keepdim:
               _to_indices(dvalues, indices, input_meta, dim, keepdim))
for _op, _name in (("sort", "Sort"), ("topk", "TopK")):
    derivative(_op, name=_name, in_=lambda dvalues, indices, in_meta, dim:
               _to_indices(dvalues, indices, in_meta, dim, True))
derivative("select_along_dim",
           x=lambda dy, index, x_meta, dim: F.select_along_dim_grad(dy, index, dim=dim, like_shape=tuple(x_meta.shape)))
derivative("select_along_dim_grad", dy=lambda ddx, index, dim: F.select_along_dim(ddx, index, dim=dim))


# ---- median, kthvalue, mode, cummax / cummin, logcumsumexp (Note [Order statistics]) --------------------
# Note [Order statistics]
# ``reduce_median`` is ``median()`` / ``nanmedian()`` over every dim: its grad is split evenly among the
# elements equal to the result, as amax's (PyTorch's ``evenly_distribute_backward``). ``median_dim``,
# ``kthvalue``, ``mode``, ``cummax`` and ``cummin`` select elements: their grad goes to the selected
# indices (``select_along_dim_grad``), so double backward works. The order is the stable sort order
# (NaN last): the lower median of n elements is the one at (n - 1) // 2, a slice holding NaN has the
# median NaN at its first NaN (``ignore_nan`` drops the NaNs first); mode is the smallest of the most
# frequent values, at its last index (as PyTorch's cpu kernel); cummax / cummin point at the last
# element equal to the running extreme, and at the NaN once one is met.
_PUBLIC.update({"median_dim": "median", "kthvalue": "kthvalue", "mode": "mode"})
register_user_op("reduce_median", inputs=["input_tensor"], outputs=["output_tensor"],
                 attrs={**_REDUCE_ATTRS, "ignore_nan": ("bool", False)},
                 infer_shape=_reduce_shape, infer_dtype=same_dtype)
derivative("reduce_median", name="Median", input_tensor=_evenly_split)


def _kthvalue_shape(ctx):
    shape = ctx.input_metas[0].shape
    d = wrap_dim(ctx, ctx.attr("dim"), len(shape))
    size = shape[d] if shape else 1
    if not 1 <= ctx.attr("k") <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _values_and_indices_shape(ctx)


_ALONG = {"dim": ("int32", -1), "keepdim": ("bool", False)}
register_user_op("median_dim", inputs=["input"], outputs=["values", "indices"],
                 attrs={**_ALONG, "ignore_nan": ("bool", False)},
                 infer_shape=_values_and_indices_shape, infer_dtype=_values_and_indices_dtype)
register_user_op("mode", inputs=["input"], outputs=["values", "indices"], attrs=_ALONG,
                 infer_shape=_values_and_indices_shape, infer_dtype=_values_and_indices_dtype)
register_user_op("kthvalue", inputs=["input"], outputs=["values", "indices"], attrs={**_ALONG, "k": ("int64", 1)},
                 infer_shape=_kthvalue_shape, infer_dtype=_values_and_indices_dtype)
for _op, _name in (("median_dim", "Median"), ("mode", "Mode"), ("kthvalue", "Kthvalue")):
    derivative(_op, name=_name, input=lambda dvalues, indices, input_meta, dim, keepdim:
               _to_indices(dvalues, indices, input_meta, dim, keepdim))

for _op in ("cummax", "cummin"):
    register_user_op(_op, inputs=["x"], outputs=["values", "indices"], attrs={"dim": ("int32", 0)},
                     infer_shape=_sort_shape, infer_dtype=_values_and_indices_dtype)
    derivative(_op, x=lambda dvalues, indices, x_meta, dim: _to_indices(dvalues, indices, x_meta, dim, True))

register_user_op("logcumsumexp", inputs=["x"], outputs=["y"], attrs={"dim": ("int32", 0)},
                 infer_shape=_along_dim_shape, infer_dtype=same_dtype)


def _logcumsumexp_grad(dy, x, y, dim):
    """PyTorch's ``logcumsumexp_backward``: the reversed log-cumsum-exp of ``log|dy| - y``, split by the sign
    of ``dy``, so every term stays in range. Log 0 is a very negative finite number (a quarter of the
    dtype's lowest, so sums with it neither overflow nor, differentiated again, give -inf - -inf)."""
    if not x._meta.ndim:
        return dy
    d = dim % x._meta.ndim
    lowest = float(np.finfo(x._meta.dtype.np_dtype).min) / 4

    def reversed_lcse(t):
        return F.flip(F.logcumsumexp(F.flip(t, [d]), d), [d])
    log_abs = F.log(F.abs(dy))
    positive = F.where(F.gt(dy, 0), log_abs, lowest)
    negative = F.where(F.lt(dy, 0), log_abs, lowest)
    return F.sub(F.exp(F.add(reversed_lcse(F.sub(positive, y)), x)),
                 F.exp(F.add(reversed_lcse(F.sub(negative, y)), x)))


derivative("logcumsumexp", name="Logcumsumexp", x=_logcumsumexp_grad)


# ---- histograms, bincount, searchsorted, unique (no gradient) ---------------------------------------------
def _histc_shape(ctx):
    bins = ctx.attr("bins")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins}")
    if ctx.attr("min") > ctx.attr("max"):
        raise RuntimeError("torch.histc: max must be larger than min")
    return (bins,)


register_user_op("histc", inputs=["input"], outputs=["out"],
                 attrs={"bins": ("int64", 100), "min": ("double", 0.0), "max": ("double", 0.0)},
                 infer_shape=_histc_shape, infer_dtype=same_dtype, no_grad=True)


def _histogram_shape(ctx):
    """``bins`` given as edges (a 1-D input) or as a count (``bin_count``), over ``[min, max]`` when
    ``has_range`` (else the data's range)."""
    if ctx.has_input("bins") != ctx.attr("with_edges"):
        raise ctx.error("the with_edges attr must say whether the bins input is given")
    if ctx.has_input("bins"):
        edges = ctx.shape("bins")
        if len(edges) != 1 or edges[0] < 1:
            raise RuntimeError(f"torch.histogram(): bins tensor should have one dimension and at least 1 element, "
                               f"but got {len(edges)} dimensions and shape {list(edges)}")
        n = edges[0] - 1
    else:
        n = ctx.attr("bin_count")
        if n <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {n} for dimension 0")
    if ctx.attr("has_range") and ctx.attr("min") > ctx.attr("max"):
        raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {ctx.attr('min')} max "
                           f"{ctx.attr('max')} for dimension 0")
    for name in ("bins", "weight"):
        if ctx.has_input(name) and ctx.dtype(name) is not ctx.dtype("input"):
            raise RuntimeError(f"torch.histogram(): input tensor and {name} tensor should have the same dtype, but "
                               f"got input {ctx.dtype('input').name} and {name} {ctx.dtype(name).name}")
    if ctx.has_input("weight") and tuple(ctx.shape("weight")) != tuple(ctx.shape("input")):
        raise RuntimeError(f"torch.histogram(): if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(ctx.shape('input'))} and weight with shape {list(ctx.shape('weight'))}")
    return (n,), (n + 1,)


register_user_op("histogram", inputs=["input", Arg("bins", optional=True), Arg("weight", optional=True)],
                 outputs=["hist", "bin_edges"],
                 attrs={"bin_count": ("int64", 100), "min": ("double", 0.0), "max": ("double", 0.0),
                        "has_range": ("bool", False), "density": ("bool", False), "with_edges": ("bool", False)},
                 infer_shape=_histogram_shape, infer_dtype=lambda ctx: (same_dtype(ctx), same_dtype(ctx)),
                 no_grad=True)


def _bincount_dtype(ctx):
    """int64 counts; with weights their sum: float32 / float64 weights keep their dtype, others are double."""
    if not ctx.has_input("weights"):
        return _INT64
    d = ctx.dtype("weights")
    return d if d in (dt.float32, dt.float64) else dt.float64


def _bincount_shape(ctx):
    x = ctx.shape("input")
    if len(x) != 1 or ctx.dtype("input").is_floating_point or ctx.dtype("input") is _BOOL:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if ctx.has_input("weights") and tuple(ctx.shape("weights")) != tuple(x):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    return (ctx.attr("size"),)


register_user_op("bincount", inputs=["input", Arg("weights", optional=True)], outputs=["out"],
                 attrs={"size": ("int64", 0)}, infer_shape=_bincount_shape, infer_dtype=_bincount_dtype,
                 no_grad=True)


def _searchsorted_shape(ctx):
    seq, values = ctx.shape("sorted_sequence"), ctx.shape("values")
    if len(seq) == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if len(seq) != 1 and tuple(seq[:-1]) != tuple(values[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq)} and input value tensor {list(values)}")
    if ctx.has_input("sorter"):
        if tuple(ctx.shape("sorter")) != tuple(seq):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq)}and got sorter tensor {list(ctx.shape('sorter'))}")
        if ctx.dtype("sorter") is not _INT64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype")
    return values


register_user_op("searchsorted", inputs=["sorted_sequence", "values", Arg("sorter", optional=True)],
                 outputs=["out"], attrs={"right": ("bool", False), "out_int32": ("bool", False)},
                 infer_shape=_searchsorted_shape,
                 infer_dtype=lambda ctx: dt.int32 if ctx.attr("out_int32") else _INT64, no_grad=True)

_UNIQUE_ATTRS = {"dim": ("int32", 0), "has_dim": ("bool", False), "consecutive": ("bool", False)}


def _unique_dim(ctx):
    """The dim ``unique`` works along (None: the flattened input)."""
    if not ctx.attr("has_dim"):
        return None
    shape = ctx.input_metas[0].shape
    if not shape:
        raise IndexError(f"{ctx.op_type}: Dimension out of range (expected to be in range of [-1, 0], but got "
                         f"{ctx.attr('dim')})")
    d = wrap_dim(ctx, ctx.attr("dim"), len(shape))
    if 0 in shape:  # PyTorch's checks: the unique slices of an empty tensor are defined along its only empty dim
        name = "unique_consecutive" if ctx.attr("consecutive") else "unique"
        if shape.count(0) > 1:
            raise RuntimeError(f"{name}: Number of zero sized dimensions is more than one, so unique cannot be "
                               f"applied (input shape {list(shape)}, dim={ctx.attr('dim')})")
        if shape[d] != 0:
            raise RuntimeError(f"{name}: There are 0 sized dimensions, and they aren't selected, so unique cannot "
                               f"be applied (input shape {list(shape)}, dim={ctx.attr('dim')})")
    return d


def _unique_count_shape(ctx):
    _unique_dim(ctx)
    return ()


register_user_op("unique_count", inputs=["input"], outputs=["out"], attrs=_UNIQUE_ATTRS,
                 infer_shape=_unique_count_shape, infer_dtype=_int64, no_grad=True)


def _unique_shape(ctx):
    """(the unique values, the inverse indices, the counts) of ``count`` unique elements (or slices along
    ``dim``); Note [Value-dependent shapes] in ops/index.py."""
    shape = ctx.input_metas[0].shape
    d = _unique_dim(ctx)
    n = ctx.attr("count")
    if d is None:
        return (n,), tuple(shape), (n,)
    return tuple(n if i == d else s for i, s in enumerate(shape)), (shape[d],), (n,)


register_user_op("unique", inputs=["input"], outputs=["output", "inverse", "counts"],
                 attrs={**_UNIQUE_ATTRS, "count": ("int64", 0)}, infer_shape=_unique_shape,
                 infer_dtype=lambda ctx: (same_dtype(ctx), _INT64, _INT64), no_grad=True)
