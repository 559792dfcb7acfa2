"""``Tensor.__getitem__`` / ``__setitem__`` and the in-place writers ``copy_``, ``fill_``, ``zero_``.

Note [Basic indexing as ops]
The basic part of an index (ints, slices with positive steps, None, Ellipsis)
becomes at most two ops: one ``slice`` (start / stop / step per dim; an int ``i``
is the slice ``i:i+1``) and one ``reshape`` that drops the int-indexed dims and
inserts the ``None`` dims. Both return NumPy views on cpu, so the result shares
memory with the indexed tensor, as PyTorch's basic indexing does. A plain
``x[...]`` or ``x[:]`` is still one ``slice`` op: a new tensor viewing ``x``.

Advanced indices (integer tensors, bool masks, and lists / NumPy arrays of them)
follow PyTorch: the basic part is applied first (ints select, so they never count
as advanced indices, unlike NumPy), then one ``index`` op takes the integer
tensors, bool masks being turned into their coordinates by ``nonzero``. A Python
bool (or a 0-d bool tensor) adds a dim of size 1 and indexes it with ``[0]``
(True) or nothing (False). A list holding a tensor, a sequence, a slice, None or
Ellipsis is an index tuple, as in PyTorch. Integer tensors (copies, not views) of
any shape index one dim; 0-d ones drop it. See Note [Advanced indexing ops] in
ops/index.py.

``x[index] = value`` is one in-place ``tensor_setitem`` op on ``x`` (bool masks
stay masks: the op's output shape is ``x``'s, so it needs no count and also runs
on ``meta``). The value (a tensor, cast to ``x``'s dtype, or a Python number) must
broadcast to ``x[index]``'s shape. Autograd records the write on ``x`` itself, so
a leaf that requires grad refuses it with PyTorch's message. ``copy_``, ``fill_``
and ``zero_`` are ``x[...] = value``.
"""

from __future__ import annotations

import math
import operator
import threading
import warnings

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.conversion import convert
from oneflow_lite.functors.creation import tensor
from oneflow_lite.functors.promotion import cast
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch

_INT = (int, np.integer)
_BOOL = (bool, np.bool_)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SEQUENCE_ITEMS = (Tensor, list, tuple, np.ndarray, slice)
_ARRAY_LIKE = (Tensor, list, tuple, range, np.ndarray)
_INDEX_DTYPES = (dt.int64, dt.int32, dt.bool_)


# ---- parsing ------------------------------------------------------------------------------------
def _as_tuple(index) -> tuple:
    """PyTorch's ``treatSequenceAsTuple``: a short list holding a tensor, a sequence, a slice, None or
    Ellipsis is a tuple of indices; any other list is one index."""
    if type(index) is tuple:
        return index
    if type(index) is list and len(index) < 32:
        for item in index:
            if item is None or item is Ellipsis or isinstance(item, _SEQUENCE_ITEMS):
                return tuple(index)
    return (index,)


def _index_tensor(item, device) -> Tensor:
    """A Tensor / list / range / NumPy array index as an int32, int64 or bool tensor on ``device``."""
    if isinstance(item, Tensor):
        t = item
    else:
        empty = isinstance(item, (list, tuple, range)) and not np.asarray(item, dtype=object).size
        try:
            t = tensor(item, dtype=dt.int64) if empty else tensor(item)
        except (TypeError, ValueError) as e:
            raise IndexError(f"cannot use {type(item).__name__} {item!r} as an index: {e}") from None
    d = t._meta.dtype
    if d is dt.uint8:
        warnings.warn("indexing with dtype uint8 is now deprecated, please use a dtype bool instead.",
                      UserWarning, stacklevel=4)
        t = cast(t, dt.bool_)
    elif d not in _INDEX_DTYPES:
        raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {d.name}")
    if t._meta.device is not device:
        t = convert(t, device)
    return t


def _bool_index(value: bool, device) -> Tensor:
    """The index of the new size-1 dim a Python bool adds: ``[0]`` for True, ``[]`` for False."""
    return tensor([0] if value else [], dtype=dt.int64, device=device)


class _NewDim:
    """A Python bool or 0-d bool mask in an index: a new dim of size 1, indexed by ``index``."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _mask_mismatch(mask_shape, shape, dim) -> IndexError:
    for i, (a, b) in enumerate(zip(mask_shape, shape[dim:])):
        if a != b:
            return IndexError(f"The shape of the mask {list(mask_shape)} at index {i} does not match the shape of "
                              f"the indexed tensor {list(shape)} at index {dim + i}")
    return IndexError(f"too many indices for tensor of dimension {len(shape)}")


def _bad_item(item) -> IndexError:
    return IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                      f"indices (got {type(item).__name__})")


def _parse(x, index, encode):
    """Split ``index`` into its basic part and its advanced indices (see Note [Basic indexing as ops]).

    Returns ``(starts, stops, steps, view_shape, identity, kinds, values, adv)``: the slice of every dim
    of ``x``, the shape after the basic part, whether that part is the identity, its encoding (when
    ``encode``; Note [Advanced indexing ops]) and ``adv``, a list of (dim of the view, index tensor).
    """
    return _lay_out(_index_items(x, index), x._meta.shape, encode)


def _index_items(x, index) -> list:
    """The items of ``index``, one per dim they index or add: the Ellipsis expanded to full slices, Python
    bools as ``_NewDim``, sequences as index tensors on ``x``'s device; errors for too many indices."""
    shape = x._meta.shape
    device = x._meta.device
    ndim = len(shape)
    consumed = 0
    ellipsis_at = -1
    parsed = []
    for item in _as_tuple(index):
        if item is None or isinstance(item, slice):
            consumed += item is not None
        elif item is Ellipsis:
            if ellipsis_at >= 0:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis_at = len(parsed)
            continue
        elif isinstance(item, _BOOL):
            item = _NewDim(_bool_index(bool(item), device))
        elif isinstance(item, _INT):
            consumed += 1
        elif isinstance(item, _ARRAY_LIKE):
            item = _index_tensor(item, device)
            m = item._meta
            if m.dtype is not dt.bool_:
                consumed += 1
            elif m.ndim:
                consumed += m.ndim
            else:  # a 0-d mask acts as a Python bool
                item = _NewDim(get_functor("Reshape")(item, (1,)))
        else:
            raise _bad_item(item)
        parsed.append(item)
    if consumed > ndim:
        if ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python to convert a "
                             "0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if ellipsis_at >= 0:
        parsed[ellipsis_at:ellipsis_at] = [slice(None)] * (ndim - consumed)
    return parsed


def _slice_of(item, size, dim):
    """``(start, stop, step, keeps_dim)`` of an int or slice ``item`` indexing dim ``dim`` of size ``size``;
    an int selects ``i:i+1`` and drops the dim."""
    if isinstance(item, slice):
        if item.step is not None and operator.index(item.step) <= 0:
            raise ValueError("step must be greater than zero")
        return (*item.indices(size), True)
    i = operator.index(item)
    if not -size <= i < size:
        raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
    start = i + size if i < 0 else i
    return start, start + 1, 1, False


def _lay_out(parsed, shape, encode):
    """``_parse``'s result from the items of ``_index_items`` indexing a tensor of ``shape``."""
    starts, stops, steps, out_shape, adv = [], [], [], [], []
    kinds, values = ([], []) if encode else (None, None)
    identity = True
    dim = 0
    for item in parsed:
        if item is None or type(item) is _NewDim:
            if item is not None:
                adv.append((len(out_shape), item.index))
            out_shape.append(1)
            if encode:
                kinds.append(2)
            continue
        if isinstance(item, Tensor):
            k = 1
            if item._meta.dtype is dt.bool_:
                k = item._meta.ndim
                if item._meta.shape != shape[dim:dim + k]:
                    raise _mask_mismatch(item._meta.shape, shape, dim)
            adv.append((len(out_shape), item))
            for size in shape[dim:dim + k]:
                starts.append(0)
                stops.append(size)
                steps.append(1)
                out_shape.append(size)
                if encode:
                    kinds.append(1)
                    values.extend((0, size, 1))
            dim += k
            continue
        size = shape[dim]
        start, stop, step, keeps_dim = _slice_of(item, size, dim)
        if keeps_dim:
            out_shape.append(len(range(start, stop, step)))
            identity = identity and start == 0 and stop == size and step == 1
            if encode:
                kinds.append(1)
                values.extend((start, stop, step))
        else:
            identity = False
            if encode:
                kinds.append(0)
                values.append(start)
        starts.append(start)
        stops.append(stop)
        steps.append(step)
        dim += 1
    for size in shape[dim:]:
        starts.append(0)
        stops.append(size)
        steps.append(1)
        out_shape.append(size)
    return starts, stops, steps, tuple(out_shape), identity, kinds, values, adv


# ---- getitem ------------------------------------------------------------------------------------
class _IndexOps:
    """The op exprs of advanced indexing, one per number of index tensors (built on first use)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._index = {}
        self._setitem = {}
        self._setitem_scalar = {}
        self.index_attrs = {}
        self.setitem_attrs = {}

    def _get(self, cache, n, build):
        op = cache.get(n)
        if op is None:
            with self._lock:
                op = cache.get(n)
                if op is None:
                    op = cache[n] = build(n)
        return op

    def index(self, n):
        return self._get(self._index, n, lambda n: OpBuilder("index").input("input").input("indices", n)
                         .output("output").build())

    def setitem(self, n):
        def build(n):
            b = OpBuilder("tensor_setitem").input("ref").input("value")
            return (b.input("indices", n) if n else b).output("out").build()
        return self._get(self._setitem, n, build)

    def setitem_scalar(self, n):
        def build(n):
            b = OpBuilder("tensor_setitem_scalar").input("ref")
            return (b.input("indices", n) if n else b).output("out").build()
        return self._get(self._setitem_scalar, n, build)


OPS = _IndexOps()


def _view(x, starts, stops, steps, out_shape, identity, keep_self=False):
    """The basic part as ``slice`` + ``reshape`` views (``x`` itself when ``keep_self`` and nothing changes)."""
    shape = x._meta.shape
    result = x
    if not identity or (out_shape == shape and not keep_self):
        result = get_functor("Slice")(x, starts, stops, steps)
    if result._meta.shape != out_shape:
        result = get_functor("Reshape")(result, out_shape)
    return result


def _advanced(view, adv):
    """The ``index`` op on ``view`` with ``adv`` (bool masks become their nonzero coordinates)."""
    dims, tensors = [], []
    for d, t in adv:
        if t._meta.dtype is dt.bool_:
            coords = get_functor("Nonzero")(t, True)
            dims.extend(range(d, d + len(coords)))
            tensors.extend(coords)
        else:
            dims.append(d)
            tensors.append(t)
    attrs = cached_attrs(OPS.index_attrs, ("dims",), (tuple(dims),))
    return dispatch(OPS.index(len(tensors)), (view, *tensors), attrs)[0]


def getitem(self, index):
    """``x[index]``: ints, slices with positive steps, None, Ellipsis (a view), integer tensors and bool
    masks (a copy); see Note [Basic indexing as ops]."""
    starts, stops, steps, out_shape, identity, _, _, adv = _parse(self, index, False)
    if not adv:
        return _view(self, starts, stops, steps, out_shape, identity)
    return _advanced(_view(self, starts, stops, steps, out_shape, identity, keep_self=True), adv)


def index_encoded(x, kinds, values, adv_dims, indices):
    """``x`` indexed by an index in ``tensor_setitem``'s encoding (for its grad function)."""
    shape = x._meta.shape
    starts, stops, steps, out_shape = [], [], [], []
    identity = True
    dim = k = 0
    for kind in kinds:
        if kind == 2:
            out_shape.append(1)
            continue
        if kind == 0:
            start, stop, step = values[k], values[k] + 1, 1
            k += 1
            identity = False
        else:
            start, stop, step = values[k:k + 3]
            k += 3
            out_shape.append(len(range(start, stop, step)))
            identity = identity and start == 0 and stop == shape[dim] and step == 1
        starts.append(start)
        stops.append(stop)
        steps.append(step)
        dim += 1
    for size in shape[dim:]:
        starts.append(0)
        stops.append(size)
        steps.append(1)
        out_shape.append(size)
    view = _view(x, starts, stops, steps, tuple(out_shape), identity, keep_self=bool(adv_dims))
    return _advanced(view, list(zip(adv_dims, indices))) if adv_dims else view


# ---- setitem ------------------------------------------------------------------------------------
_SETITEM_NAMES = ("kinds", "values", "adv_dims", "accumulate")
_SCALAR_NAMES = _SETITEM_NAMES + ("int_operand", "float_operand", "has_float_operand")


def scalar_key(value) -> tuple:
    """Canonical (int_operand, float_operand, has_float_operand) of a Python scalar; raises for non-int64 ints."""
    if type(value) is float:
        return 0, value, True
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise RuntimeError(f"value {value} does not fit in int64 (Overflow when unpacking long)")
    return int(value), 0.0, False


def _is_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def _scalar(value):
    return value.item() if isinstance(value, np.generic) else value


def write(x, kinds, values, adv_dims, indices, value, accumulate=False, name="__setitem__", inplace=True):
    """``x[index] = value`` (``+=`` with ``accumulate``), the index in encoded form: in place (returns ``x``),
    or on a copy of ``x`` (returned) when not ``inplace``."""
    meta = x._meta
    out = (x,) if inplace else None
    if isinstance(value, Tensor):
        value = convert(value, meta.device, meta.dtype)
        attrs = cached_attrs(OPS.setitem_attrs, _SETITEM_NAMES, (kinds, values, adv_dims, accumulate))
        return dispatch(OPS.setitem(len(indices)), (x, value, *indices), attrs, out)[0]
    if not _is_scalar(value):
        raise TypeError(f"{name}: can't assign a {type(value).__name__} to a {x.type()}")
    value = _scalar(value)
    key = scalar_key(value)
    sign = (math.copysign(1.0, value),) if type(value) is float else ()  # keeps -0.0 apart from 0.0 in the cache
    attrs = cached_attrs(OPS.setitem_attrs, _SCALAR_NAMES, (kinds, values, adv_dims, False, *key, *sign))
    return dispatch(OPS.setitem_scalar(len(indices)), (x, *indices), attrs, out)[0]


def setitem(self, index, value):
    """``x[index] = value``: ``value`` a tensor (cast to ``x``'s dtype, broadcast) or a number; in place."""
    _, _, _, _, _, kinds, values, adv = _parse(self, index, True)
    write(self, tuple(kinds), tuple(values), tuple(d for d, _ in adv), tuple(t for _, t in adv), value)


def _check_copy_shape(src_shape, shape):
    if len(src_shape) > len(shape):
        raise RuntimeError(f"copy_: the number of sizes of self {list(shape)} must be greater or equal to the number "
                           f"of dimensions of src {list(src_shape)}")
    for i, (a, b) in enumerate(zip(reversed(src_shape), reversed(shape))):
        if a != 1 and a != b:
            raise RuntimeError(f"copy_: The size of tensor src ({a}) must match the size of tensor self ({b}) at "
                               f"non-singleton dimension {len(shape) - 1 - i}")


def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast to this tensor's dtype, moved to its device) into this tensor; returns it."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    if not isinstance(non_blocking, bool):
        raise TypeError(f"copy_(): argument 'non_blocking' must be bool, not {type(non_blocking).__name__}")
    _check_copy_shape(src._meta.shape, self._meta.shape)
    return write(self, (), (), (), (), src, name="copy_")


def fill_(self, value):
    """Fill this tensor with ``value`` (a number or a 0-d tensor); returns it."""
    if isinstance(value, Tensor):
        if value._meta.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._meta.ndim} dimensions.")
    elif not _is_scalar(value):
        raise TypeError(f"fill_(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    return write(self, (), (), (), (), value, name="fill_")


def zero_(self):
    """Fill this tensor with zeros; returns it."""
    return write(self, (), (), (), (), 0, name="zero_")


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
Tensor.copy_ = copy_
Tensor.fill_ = fill_
Tensor.zero_ = zero_
