"""Functors of the indexing ops: gather, scatter, scatter_add, scatter_reduce, index_select, index_add,
masked_fill, masked_select, nonzero, count_nonzero and index_put (ops/index.py); and composites over them and
the advanced-indexing writer (functors/indexing.py): index_copy / index_fill / index_reduce, take /
take_along_dim, put, masked_scatter, nonzero_static, unravel_index, select_scatter / slice_scatter, and the
torch-level in-place forms (index_put_, fill_, zero_).

PyTorch's argument checks run here with PyTorch's messages, before any op runs;
dims are wrapped here, so ops see non-negative dims. ``masked_select`` and
``nonzero`` read a count first (Note [Value-dependent shapes] in ops/index.py).
"""

from __future__ import annotations

import math

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.config import warn_once
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import BATCHED_KEY_SET, LAZY_KEY_SET, Tensor, _wrap_dim
from oneflow_lite.functors.conversion import convert
from oneflow_lite.functors.indexing import _index_tensor, scalar_key, write
from oneflow_lite.functors.promotion import TORCH_NAMES, cast, check_inplace_shape, integer_mask
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.functors.shape import cached_attrs, slice_bounds
from oneflow_lite.interpreters.autocast import promote_function
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.common import broadcast_shapes
from oneflow_lite.ops.index import SCATTER_REDUCTIONS

_int64 = dt.int64
_bool = dt.bool_
_PLACEHOLDERS = LAZY_KEY_SET | BATCHED_KEY_SET  # tensors without values to read
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
    """``mask`` as a bool mask (an integer one cast: Note [Integer masks] in functors/promotion.py)."""
    mask = integer_mask(mask)
    if mask._meta.dtype is not _bool:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {mask._meta.dtype.name}")
    return mask


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
        mask = _check_mask("masked_fill", mask)
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
        mask = _check_mask("masked_fill", mask)
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
            dims = tuple(_wrap_dim(d, max(ndim, 1), "count_nonzero") for d in dim)  # a 0-d tensor has dim 0
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
        mask = integer_mask(mask)
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


# ---- [compat s3] scatter_reduce, index_reduce / index_copy / index_fill, take, put, masked_scatter ----------
def _check_same_dtype(name, x, src, message=None):
    xd, sd = x._meta.dtype, src._meta.dtype
    if xd is not sd:
        raise RuntimeError(message or f"{name}: self ({TORCH_NAMES[xd]}) and source ({TORCH_NAMES[sd]}) must "
                                      f"have the same scalar type")


@functor("ScatterReduce")
class ScatterReduceFunctor:
    """``scatter_reduce(input, dim, index, src, reduce, *, include_self=True)``: the values of ``src`` reduced
    into ``input`` where ``index`` points along ``dim`` ("sum", "prod", "mean", "amax", "amin"; without
    ``include_self`` the input's own value there does not take part)."""

    def __init__(self):
        self.op = OpBuilder("dim_scatter_reduce").input("input").input("index").input("src").output("output").build()
        self._attrs = {}

    def __call__(self, x, dim, index, src, reduce, include_self=True, inplace=False):
        if reduce not in SCATTER_REDUCTIONS:
            raise RuntimeError(f"scatter_reduce: reduce argument must be either sum, prod, mean, amax or amin, got "
                               f"{reduce}")
        _check_index_dtype("scatter_reduce", index)
        if src._meta.dtype is not x._meta.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        if reduce == "mean" and x._meta.dtype is _bool:
            raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
        d = _wrap_dim(dim, x._meta.ndim, "scatter_reduce")
        attrs = cached_attrs(self._attrs, ("dim", "reduce", "include_self"), (d, reduce, bool(include_self)))
        return _run(self.op, (x, index, src), attrs, x if inplace else None)


def _check_bounds(name, index, size, dim, allow_negative=False, error=IndexError):
    """PyTorch's bound check of index values (when they are at hand)."""
    if not index._meta.numel or not index._meta.device.device_type.has_storage \
            or index._key_set & _PLACEHOLDERS:
        return
    values = index.numpy()
    lo, hi = int(values.min()), int(values.max())
    low = -size if allow_negative else 0
    if lo < low or hi >= size:
        bad = lo if lo < low else hi
        raise error(f"{name}: index {bad} is out of bounds for dimension {dim} with size {size}")


def _index_vector(name, index):
    """A 0-d index as 1-d (PyTorch's index_* take both)."""
    return F.reshape(index, (1,)) if not index._meta.ndim else index


def _check_slices(name, x, dim, source):
    """PyTorch's shape checks of index_copy / index_reduce: ``source`` is ``x`` with ``dim`` resized."""
    if source._meta.ndim != x._meta.ndim and source._meta.ndim and x._meta.ndim:
        raise IndexError(f"{name}: When source and destination are not scalars, their dimensionality must match. "
                         f"Source dimensionality ({source._meta.ndim}), destination dimensionality "
                         f"({x._meta.ndim})")
    xs = [s for d, s in enumerate(x._meta.shape) if d != dim]
    ss = [s for d, s in enumerate(source._meta.shape) if d != dim]
    if xs != ss:
        raise RuntimeError(f"{name}: Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {' '.join(map(str, xs))} at dimension {dim} and source slice shape: "
                           f"{' '.join(map(str, ss))} at dimension 0.")


def index_copy(x, dim, index, source, inplace=False):
    """``index_copy(input, dim, index, source)``: ``input`` with the slices ``index[i]`` along ``dim`` replaced
    by the slices ``i`` of ``source``."""
    name = "index_copy_()"
    if index._meta.dtype is not _int64:
        raise RuntimeError(f"{name}: Expected a long tensor for index, but got {TORCH_NAMES[index._meta.dtype]}")
    if index._meta.ndim > 1:
        raise IndexError(f"{name}: Index should have dimension 1 or 0 (got {index._meta.ndim})")
    _check_same_dtype(name, x, source, f"{name}: self and source expected to have the same dtype, but got (self) "
                                       f"{TORCH_NAMES[x._meta.dtype]} and (source) {TORCH_NAMES[source._meta.dtype]}")
    d = _wrap_dim(dim, x._meta.ndim, "index_copy") % max(x._meta.ndim, 1)  # a 0-d tensor's dim -1 is 0
    n = index._meta.numel
    if d < source._meta.ndim and n != source._meta.shape[d]:
        raise IndexError(f"{name}: Number of indices ({n}) should be equal to source.size(dim) "
                         f"({source._meta.shape[d]})")
    if x._meta.ndim == 0:
        if source._meta.ndim > 1:  # a 0-d destination's slices are 0-d: source is 0-d or one value per index
            raise RuntimeError(f"{name}: Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: [] and source slice shape: {list(source._meta.shape[1:])}")
        _check_bounds(name, index, 1, 0)
        value = F.reshape(source, (-1,))[-1] if n else x
        return write(x, (), (), (), (), value, False, "index_copy", inplace)
    _check_slices(name, x, d, source)
    _check_bounds(name, index, x._meta.shape[d], d)
    return write(x, (), (), (d,), (_index_vector(name, index),), source, False, "index_copy", inplace)


def index_fill(x, dim, index, value, inplace=False):
    """``index_fill(input, dim, index, value)``: ``input`` with the slices ``index`` along ``dim`` set to
    ``value`` (a number or a 0-d tensor)."""
    if index._meta.dtype is not _int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index._meta.ndim > 1:
        raise RuntimeError("index_fill: Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value._meta.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value._meta.ndim} dimension(s).")
    if x._meta.ndim == 0:
        _check_bounds("index_fill_()", index, 1, 0, allow_negative=True)
        return write(x, (), (), (), (), value, False, "index_fill", inplace) if index._meta.numel else x
    d = _wrap_dim(dim, x._meta.ndim, "index_fill")
    return write(x, (), (), (d,), (_index_vector("index_fill", index),), value, False, "index_fill", inplace)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def index_reduce(x, dim, index, source, reduce, include_self=True, inplace=False):
    """``index_reduce(input, dim, index, source, reduce, *, include_self=True)``: the slices of ``source``
    reduced ("prod", "mean", "amax", "amin") into the slices ``index[i]`` of ``input`` along ``dim``."""
    name = "index_reduce_()"
    warn_once("index_reduce() is in beta and the API may change at any time.")
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                           f"{reduce}.")
    if index._meta.ndim > 1:
        raise IndexError(f"{name}: Index is supposed to be a vector, but got dim: {index._meta.ndim} with type: "
                         f"{TORCH_NAMES[index._meta.dtype]} and size: {list(index._meta.shape)}")
    _check_index_vector("index_reduce", index)
    _check_same_dtype(name, x, source)
    if x._meta.ndim == 0 or source._meta.ndim == 0:
        if x._meta.shape != source._meta.shape:
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified "
                               f"dimension. Got self.shape = {list(x._meta.shape)} source.shape = "
                               f"{list(source._meta.shape)}")
        x, source, dim = F.reshape(x, (1,)), F.reshape(source, (1,)), 0  # both 0-d: one slice
    d = _wrap_dim(dim, x._meta.ndim, "index_reduce")
    index = _index_vector(name, cast(index, _int64))
    n = index._meta.numel
    if n != source._meta.shape[d]:
        raise RuntimeError(f"{name}: Number of indices ({n}) should be equal to source.size(dim): "
                           f"({source._meta.shape[d]}), for dim: {d}")
    _check_slices(name, x, d, source)
    _check_bounds(name, index, x._meta.shape[d], d)
    view = [1] * x._meta.ndim
    view[d] = n
    full = F.expand(F.reshape(index, tuple(view)), source._meta.shape)
    return F.scatter_reduce(x, d, full, source, reduce, include_self=include_self, inplace=inplace)


for _name, _fn in (("IndexCopy", promote_function(index_copy)), ("IndexFill", index_fill),
                   ("IndexReduce", index_reduce)):
    composite(_name)(_fn)


def _flat_bounds(name, index, numel):
    if not index._meta.numel or not index._meta.device.device_type.has_storage or index._key_set & _PLACEHOLDERS:
        return
    values = index.numpy()
    for v in (int(values.min()), int(values.max())):
        if not -numel <= v < numel:
            raise IndexError(f"{name}: out of range: tried to access index {v} on a tensor of {numel} elements.")


@composite("Take")
def take(x, index):
    """``take(input, index)``: the elements of the flattened input at ``index`` (negative ones count from the
    end), in ``index``'s shape."""
    if index._meta.dtype is not _int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {TORCH_NAMES[index._meta.dtype]}")
    _flat_bounds("take", index, x._meta.numel)
    return F.reshape(x, (-1,))[index]


def _broadcast_except(a, b, dim):
    """The broadcast of shapes ``a`` and ``b`` with ``b``'s size at ``dim`` (PyTorch's take_along_dim)."""
    a = list(a)
    a[dim] = b[dim]
    out = []
    for d, (p, q) in enumerate(zip(a, b)):
        if p != q and p != 1 and q != 1:
            raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b ({q}) at non-singleton "
                               f"dimension {d}")
        out.append(q if p == 1 else p)
    return out


@composite("TakeAlongDim")
def take_along_dim(x, indices, dim=None):
    """``take_along_dim(input, indices, dim=None)``: ``gather`` along ``dim`` with ``input`` and ``indices``
    broadcast to each other except along ``dim``; without ``dim``, of the flattened tensors."""
    if indices._meta.dtype is dt.int32:  # PyTorch takes int32 indices too
        indices = cast(indices, _int64)
    elif indices._meta.dtype is not _int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long or Int but got "
                           f"{TORCH_NAMES[indices._meta.dtype]}")
    if dim is None:
        return F.gather(F.reshape(x, (-1,)), 0, F.reshape(indices, (-1,)))
    if x._meta.ndim == 0:
        raise IndexError(f"take_along_dim: Dimension specified as {dim} but tensor has no dimensions")
    if x._meta.ndim != indices._meta.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {x._meta.ndim} dimensions for input, and {indices._meta.ndim} dimensions for "
                           f"indices")
    d = _wrap_dim(dim, x._meta.ndim, "take_along_dim")
    shape = _broadcast_except(x._meta.shape, indices._meta.shape, d) if x._meta.ndim else []
    indices = F.expand(indices, tuple(shape))
    shape[d:d + 1] = x._meta.shape[d:d + 1]
    return F.gather(F.expand(x, tuple(shape)), d, indices)


def put(x, index, source, accumulate=False, inplace=False):
    """``put(input, index, source, accumulate=False)``: ``input`` (flattened) with ``source``'s elements
    written at ``index`` (added with ``accumulate``)."""
    if index._meta.dtype is not _int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {TORCH_NAMES[index._meta.dtype]}")
    xd, sd = x._meta.dtype, source._meta.dtype
    if sd is not xd:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{TORCH_NAMES[xd]} and source.dtype = {TORCH_NAMES[sd]}")
    if source._meta.numel != index._meta.numel:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source._meta.numel}, index.numel() = {index._meta.numel}")
    numel = x._meta.numel
    _flat_bounds("put", index, numel)
    values = F.reshape(source, (-1,))
    if not index._meta.numel:
        return x if inplace else F.clone(x)
    if not x._meta.ndim:
        value = F.sum(values) if accumulate else values[-1]
        return write(x, (), (), (), (), value, accumulate, "put", inplace)
    flat = F.remainder(F.reshape(index, (-1,)), numel)
    coords = []
    for size in reversed(x._meta.shape):
        coords.append(F.remainder(flat, size))
        flat = F.floor_divide(flat, size)
    ndim = x._meta.ndim
    return write(x, (), (), tuple(range(ndim)), tuple(reversed(coords)), values, accumulate, "put", inplace)


composite("Put")(put)


def masked_scatter(x, mask, source, inplace=False):
    """``masked_scatter(input, mask, source)``: ``input`` with the elements where ``mask`` (bool, broadcast) is
    True replaced, in order, by the first elements of ``source``."""
    if mask._meta.dtype is not _bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{TORCH_NAMES[mask._meta.dtype]}")
    if source._meta.dtype is not x._meta.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{TORCH_NAMES[x._meta.dtype]} and {TORCH_NAMES[source._meta.dtype]}")
    shape = broadcast_shapes("masked_scatter", x._meta.shape, mask._meta.shape)
    if inplace and shape != tuple(x._meta.shape):
        raise RuntimeError(f"masked_scatter_: mask of shape {list(mask._meta.shape)} cannot be broadcast to the "
                           f"shape of self {list(x._meta.shape)}")
    _check_has_data("masked_scatter", mask, "mask")
    mask = F.expand(mask, shape)
    count = get_functor("CountNonzero")(mask).item()
    if count > source._meta.numel:
        raise RuntimeError("masked_scatter: Number of elements of source < number of ones in mask")
    values = F.narrow(F.reshape(source, (-1,)), 0, 0, count)
    target = x if inplace else F.expand(x, shape)
    if not target._meta.ndim:
        return write(target, (), (), (), (), values[0], False, "masked_scatter", inplace) if count else target
    return write(target, (), (), (0,), (mask,), values, False, "masked_scatter", inplace)


composite("MaskedScatter")(masked_scatter)


# ---- nonzero_static, unravel_index ------------------------------------------------------------------
@composite("NonzeroStatic")
def nonzero_static(x, size, fill_value=-1):
    """``nonzero_static(input, *, size, fill_value=-1)``: ``nonzero(input)`` cut or padded (with
    ``fill_value``) to ``size`` rows."""
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    m = x._meta
    if not m.device.device_type.has_storage:  # no values to find (meta): the shape alone is static
        return F.empty((size, m.ndim), dtype=_int64, device=m.device)
    found = F.nonzero(x)
    n = found._meta.shape[0]
    if n >= size:
        return F.narrow(found, 0, 0, size)
    pad = F.full((size - n, found._meta.shape[1]), fill_value, dtype=_int64, device=x._meta.device)
    return F.cat([found, pad], 0)


@composite("UnravelIndex")
def unravel_index(indices, shape):
    """``unravel_index(indices, shape)``: the coordinates (one int64 tensor per dim) of the flat ``indices`` in
    a tensor of ``shape`` (indices are taken modulo the size, as PyTorch's arithmetic does)."""
    d = indices._meta.dtype
    if d.is_floating_point or d is _bool:
        raise TypeError(f"unravel_index: expected 'indices' to be integer dtype, but got {d}")
    if any(s < 0 for s in shape):
        raise ValueError(f"unravel_index: 'shape' cannot have negative values, but got {tuple(shape)}")
    if any(s == 0 for s in shape) and indices._meta.numel:
        raise RuntimeError("unravel_index: a dim of size 0 in 'shape' cannot hold any index (ZeroDivisionError)")
    flat = cast(indices, _int64)
    if not indices._meta.numel:  # nothing to divide (a size may be 0)
        return tuple(flat for _ in shape)
    coords = []
    for size in reversed(shape):
        coords.append(F.remainder(flat, size))
        flat = F.floor_divide(flat, size)
    return tuple(reversed(coords))


# ---- select / slice scatter ----------------------------------------------------------
def _check_src_shape(name, src, expected):
    if tuple(src._meta.shape) != tuple(expected):
        raise RuntimeError(f"{name}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._meta.shape)}, slice size = {list(expected)}")


@composite("SelectScatter")
def select_scatter(x, src, dim, index):
    """``select_scatter(input, src, dim, index)``: a copy of ``input`` with ``input.select(dim, index)``
    replaced by ``src``."""
    shape = x._meta.shape
    if not shape:
        raise IndexError("select_scatter: select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, len(shape), "select_scatter")
    if not -shape[d] <= index < shape[d]:
        raise IndexError(f"select_scatter: select(): index {index} out of range for tensor of size {list(shape)} at dimension {d}")
    _check_src_shape("select_scatter", src, shape[:d] + shape[d + 1:])
    kinds, values = (1,) * d + (0,), sum(((0, s, 1) for s in shape[:d]), ()) + (index % shape[d],)
    return F.index_put_encoded(x, kinds, values, (), (), src)


@composite("SliceScatter")
def slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    """``slice_scatter(input, src, dim=0, start=None, end=None, step=1)``: a copy of ``input`` with the slice
    ``start:end:step`` along ``dim`` replaced by ``src``."""
    axis, s, e, st = slice_bounds(x, dim, start, end, step, "slice_scatter")
    shape = x._meta.shape
    _check_src_shape("slice_scatter", src, shape[:axis] + (len(range(s, e, st)),) + shape[axis + 1:])
    kinds = (1,) * (axis + 1)
    values = sum(((0, size, 1) for size in shape[:axis]), ()) + (s, max(e, s), st)
    return F.index_put_encoded(x, kinds, values, (), (), src)


# ---- torch-level in-place functions ------------------------------------------------------------------------
@composite("IndexPutInplace")
def index_put_(x, indices, values, accumulate=False):
    """``index_put_(input, indices, values, accumulate=False)``: ``input[indices] = values`` in place."""
    return get_functor("IndexPut")(x, indices, values, accumulate, True)


@composite("Fill")
def fill(x, value):
    """``fill(input, value)``: a tensor of ``input``'s shape and dtype filled with ``value`` (a number or a 0-d
    tensor, which gets the gradient)."""
    if isinstance(value, Tensor) and value._meta.ndim:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value._meta.ndim} "
                           f"dimensions.")
    return write(x, (), (), (), (), value, False, "fill", inplace=False)


@composite("FillInplace")
def fill_(x, value):
    """``fill_(input, value)``: ``input.fill_(value)``."""
    return x.fill_(value)


@composite("ZeroInplace")
def zero_(x):
    """``zero_(input)``: ``input.zero_()``."""
    return x.zero_()
