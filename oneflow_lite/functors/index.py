"""Functors of the indexing ops: gather, scatter, scatter_add, index_select, index_add, masked_fill,
masked_select, nonzero, count_nonzero and index_put (ops/index.py).

PyTorch's argument checks run here with PyTorch's messages, before any op runs;
dims are wrapped here, so ops see non-negative dims. ``masked_select`` and
``nonzero`` read a count first (Note [Value-dependent shapes] in ops/index.py).
"""

from __future__ import annotations

import math

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import _wrap_dim
from oneflow_lite.functors.conversion import convert
from oneflow_lite.functors.indexing import _index_tensor, scalar_key, write
from oneflow_lite.functors.promotion import TORCH_NAMES, check_inplace_shape
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.common import broadcast_shapes

_int64 = dt.int64
_bool = dt.bool_
_SCALAR_NAMES = ("int_operand", "float_operand", "has_float_operand")


def _scalar_attrs(cache, names, values, value):
    """Cached attrs of ``names`` = ``values`` plus the Python scalar ``value`` (-0.0 kept apart from 0.0)."""
    key = scalar_key(value)
    sign = (math.copysign(1.0, value),) if type(value) is float else ()
    return cached_attrs(cache, names + _SCALAR_NAMES, (*values, *key, *sign))


def _run(op, inputs, attrs, out):
    """``op`` on ``inputs``; written into ``out`` (an in-place call) when given."""
    return dispatch(op, inputs, attrs, None if out is None else (out,))[0]


def _check_index_dtype(name, index, allowed=(_int64,)):
    if index._meta.dtype not in allowed:
        expected = " or ".join(d.name for d in allowed)
        raise RuntimeError(f"{name}(): Expected dtype {expected} for index, got {index._meta.dtype.name}")


# ---- gather / scatter -------------------------------------------------------------------------------
@functor("DimGather")
class DimGatherFunctor:
    """``gather(input, dim, index)``: ``out[i][j] = input[index[i][j]][j]`` (for dim 0)."""

    def __init__(self):
        self.op = OpBuilder("dim_gather").input("input").input("index").output("output").build()
        self._attrs = {}

    def __call__(self, x, dim, index, sparse_grad=False):
        if sparse_grad:
            raise NotImplementedError("gather(): sparse_grad=True is not supported (there are no sparse "
                                      "tensors); use sparse_grad=False")
        _check_index_dtype("gather", index)
        d = _wrap_dim(dim, x._meta.ndim, "gather")
        return dispatch(self.op, (x, index), cached_attrs(self._attrs, ("dim",), (d,)))[0]


_REDUCE_OPS = {None: "dim_scatter_update", "add": "dim_scatter_add", "multiply": "dim_scatter_mul"}


def _check_reduce(reduce):
    if reduce not in _REDUCE_OPS:
        raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got {reduce!r}")


@functor("DimScatter")
class DimScatterFunctor:
    """``scatter(input, dim, index, src, *, reduce=None)``: ``out[index[i][j]][j] = src[i][j]`` (dim 0);
    ``reduce`` "add" / "multiply" combines with the value there instead."""

    def __init__(self):
        self.ops = {r: OpBuilder(t).input("input").input("index").input("src").output("output").build()
                    for r, t in _REDUCE_OPS.items()}
        self._attrs = {}

    def __call__(self, x, dim, index, src, reduce=None, inplace=False):
        _check_reduce(reduce)
        _check_index_dtype("scatter", index)
        if src._meta.dtype is not x._meta.dtype:
            raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype, got "
                               f"{x._meta.dtype.name} and {src._meta.dtype.name}")
        d = _wrap_dim(dim, x._meta.ndim, "scatter")
        return _run(self.ops[reduce], (x, index, src), cached_attrs(self._attrs, ("dim",), (d,)),
                    x if inplace else None)


@functor("DimScatterScalar")
class DimScatterScalarFunctor:
    """``scatter(input, dim, index, value, *, reduce=None)``: writes the number ``value`` (cast to
    ``input``'s dtype) where ``index`` points."""

    def __init__(self):
        self.ops = {r: OpBuilder(t + "_scalar").input("input").input("index").output("output").build()
                    for r, t in _REDUCE_OPS.items()}
        self._attrs = {}

    def __call__(self, x, dim, index, value, reduce=None, inplace=False):
        _check_reduce(reduce)
        _check_index_dtype("scatter", index)
        d = _wrap_dim(dim, x._meta.ndim, "scatter")
        return _run(self.ops[reduce], (x, index), _scalar_attrs(self._attrs, ("dim",), (d,), value),
                    x if inplace else None)


@composite("DimScatterAdd")
def scatter_add(x, dim, index, src, inplace=False):
    """``scatter_add(input, dim, index, src)``: ``out[index[i][j]][j] += src[i][j]`` (dim 0)."""
    if src._meta.dtype is not x._meta.dtype:
        raise RuntimeError(f"scatter_add(): Expected self.dtype to be equal to src.dtype, got "
                           f"{x._meta.dtype.name} and {src._meta.dtype.name}")
    _check_index_dtype("scatter_add", index)
    return F.scatter(x, dim, index, src, reduce="add", inplace=inplace)


# ---- index_select / index_add -------------------------------------------------------------------------
_INDEX_DTYPES = (dt.int32, dt.int64)


def _check_index_vector(name, index):
    _check_index_dtype(name, index, _INDEX_DTYPES)
    if index._meta.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, got {index._meta.ndim} dims")


@functor("IndexSelect")
class IndexSelectFunctor:
    """``index_select(input, dim, index)``: the entries ``index`` (1-D, values in [0, size)) along ``dim``."""

    def __init__(self):
        self.op = OpBuilder("index_select").input("input").input("index").output("output").build()
        self._attrs = {}

    def __call__(self, x, dim, index):
        _check_index_vector("index_select", index)
        d = _wrap_dim(dim, x._meta.ndim, "index_select")
        return dispatch(self.op, (x, index), cached_attrs(self._attrs, ("dim",), (d,)))[0]


@functor("IndexAdd")
class IndexAddFunctor:
    """``index_add(input, dim, index, source, *, alpha=1)``: ``out[index[i]] += alpha * source[i]`` along
    ``dim`` (repeated indices accumulate)."""

    def __init__(self):
        self.op = OpBuilder("index_add").input("input").input("index").input("source").output("output").build()
        self._attrs = {}

    def __call__(self, x, dim, index, source, alpha=1, inplace=False):
        _check_index_vector("index_add", index)
        xd, sd = x._meta.dtype, source._meta.dtype
        if sd is not xd:
            raise RuntimeError(f"index_add(): self ({TORCH_NAMES[xd]}) and source ({TORCH_NAMES[sd]}) must have "
                               f"the same scalar type")
        if type(alpha) is float and not xd.is_floating_point:
            raise RuntimeError("index_add(): For integral input tensors, argument alpha must not be a floating "
                               "point number.")
        d = _wrap_dim(dim, x._meta.ndim, "index_add")
        if alpha != 1:
            source = get_functor("ScalarMul")(source, alpha, False)
        return _run(self.op, (x, index, source), cached_attrs(self._attrs, ("dim",), (d,)),
                    x if inplace else None)


# ---- masked_fill ------------------------------------------------------------------------------------
def _check_mask(name, mask):
    if mask._meta.dtype is not _bool:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {mask._meta.dtype.name}")


def _inplace_shape(name, op, inputs, attrs, x):
    if any(t._meta.shape != x._meta.shape for t in inputs):
        check_inplace_shape(name, x._meta.shape,
                            op.infer(tuple([t._meta for t in inputs]), attrs).out_metas[0].shape)


@functor("MaskedFill")
class MaskedFillFunctor:
    """``masked_fill(input, mask, value)``: ``value`` (a number, cast to ``input``'s dtype) where ``mask``
    (bool, broadcast with ``input``) is True."""

    def __init__(self):
        self.op = OpBuilder("masked_fill").input("x").input("mask").output("y").build()
        self._attrs = {}

    def __call__(self, x, mask, value, inplace=False):
        _check_mask("masked_fill", mask)
        attrs = _scalar_attrs(self._attrs, (), (), value)
        if inplace:
            _inplace_shape("masked_fill_", self.op, (x, mask), attrs, x)
        return _run(self.op, (x, mask), attrs, x if inplace else None)


@functor("MaskedFillTensor")
class MaskedFillTensorFunctor:
    """``masked_fill(input, mask, value)`` with a 0-d tensor ``value`` (differentiable in it)."""

    def __init__(self):
        self.op = OpBuilder("masked_fill_tensor").input("x").input("mask").input("value").output("y").build()

    def __call__(self, x, mask, value, inplace=False):
        _check_mask("masked_fill", mask)
        if value._meta.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._meta.ndim} dimension(s).")
        value = convert(value, x._meta.device, x._meta.dtype)
        if inplace:
            _inplace_shape("masked_fill_", self.op, (x, mask, value), None, x)
        return _run(self.op, (x, mask, value), None, x if inplace else None)


# ---- count_nonzero, masked_select, nonzero (Note [Value-dependent shapes]) ---------------------------------
def _check_has_data(name, t, what):
    if not t._meta.device.device_type.has_storage:
        raise RuntimeError(f"{name}: the output shape depends on the values of {what}, which a tensor on "
                           f"'{t._meta.device}' does not hold")


@functor("CountNonzero")
class CountNonzeroFunctor:
    """``count_nonzero(input, dim=None)``: the number of nonzero values (over ``dim``), as int64."""

    def __init__(self):
        self.op = OpBuilder("count_nonzero").input("input").output("output").build()
        self._attrs = {}

    def __call__(self, x, dim=None):
        dims = ()
        if dim:
            ndim = x._meta.ndim
            dims = tuple(_wrap_dim(d, ndim, "count_nonzero") for d in dim)
            if len(set(dims)) != len(dims):
                raise RuntimeError(f"count_nonzero: dim {dims[len(set(dims))]} appears multiple times in the list "
                                   f"of dims")
            if ndim == 0:
                dims = ()
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("dims",), (dims,)))[0]


@functor("MaskedSelect")
class MaskedSelectFunctor:
    """``masked_select(input, mask)``: the 1-D tensor of ``input``'s values where ``mask`` is True (both
    broadcast)."""

    def __init__(self):
        self.op = OpBuilder("masked_select").input("input").input("mask").output("output").build()
        self._attrs = {}

    def __call__(self, x, mask):
        if mask._meta.dtype is not _bool:
            raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask._meta.dtype.name}")
        _check_has_data("masked_select", mask, "mask")
        shape = broadcast_shapes("masked_select", x._meta.shape, mask._meta.shape)
        count = 0
        numel = mask._meta.numel
        if numel:
            count = get_functor("CountNonzero")(mask).item() * (math.prod(shape) // numel)
        return dispatch(self.op, (x, mask), cached_attrs(self._attrs, ("count",), (count,)))[0]


@functor("Nonzero")
class NonzeroFunctor:
    """``nonzero(input, *, as_tuple=False)``: the (n, ndim) int64 coordinates of the nonzero values, or with
    ``as_tuple`` one 1-D tensor per dim (a 0-d input counts as 1-D)."""

    def __init__(self):
        self.op = OpBuilder("nonzero").input("input").output("output").build()
        self._attrs = {}

    def __call__(self, x, as_tuple=False):
        _check_has_data("nonzero", x, "input")
        if as_tuple and x._meta.ndim == 0:
            x = get_functor("Reshape")(x, (1,))
        count = get_functor("CountNonzero")(x).item()
        out = dispatch(self.op, (x,), cached_attrs(self._attrs, ("count",), (count,)))[0]
        if not as_tuple:
            return out
        return tuple(out[:, i] for i in range(x._meta.ndim))


# ---- index_put ------------------------------------------------------------------------------------
@functor("IndexPut")
class IndexPutFunctor:
    """``index_put(input, indices, values, accumulate=False)``: ``input[indices] = values`` (``+=`` with
    ``accumulate``, repeated indices adding up) on a copy, or in place with ``inplace``."""

    def __call__(self, x, indices, values, accumulate=False, inplace=False):
        xd, vd = x._meta.dtype, values._meta.dtype
        if vd is not xd:
            raise RuntimeError(f"index_put: Index put requires the source and destination dtypes match, got "
                               f"{TORCH_NAMES[xd]} for the destination and {TORCH_NAMES[vd]} for the source.")
        device = x._meta.device
        tensors, dims = [], []
        dim = 0
        for t in indices:
            t = _index_tensor(t, device, "index_put")
            if t._meta.dtype is _bool and not t._meta.ndim:
                raise IndexError("index_put: a 0-d bool index is not supported; use a 1-d mask")
            dims.append(dim)
            tensors.append(t)
            dim += t._meta.ndim if t._meta.dtype is _bool else 1
        if dim > x._meta.ndim:
            raise IndexError(f"index_put: too many indices for tensor of dimension {x._meta.ndim} (got {dim})")
        return write(x, (), (), tuple(dims), tuple(tensors), values, accumulate, "index_put", inplace)
