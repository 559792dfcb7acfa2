"""Shape functors: ``reshape`` / ``view``, ``transpose``, ``permute``, ``t``, ``slice``, ``narrow``,
``flatten``, ``unflatten``, ``squeeze``, ``unsqueeze``, ``expand`` / ``expand_as`` / ``broadcast_to``,
``repeat``, ``tile``, ``cat``, ``stack``, ``split``, ``chunk``, ``unbind``, ``flip``, ``roll``,
``tril``, ``triu``, ``pad``, ``contiguous``, ``clone``; and, as composites of those (the [compat s3] block),
PyTorch's further shape functions: ``atleast_*d``, ``block_diag``, ``broadcast_tensors`` / ``broadcast_shapes``,
``meshgrid``, ``cartesian_prod``, ``combinations``, ``h/v/d/column_stack``, ``tensor_split`` and ``h/v/dsplit``,
``movedim``, ``rot90``, ``diff``, ``repeat_interleave``, ``vander``, ``select`` and the ``*_copy`` functions; with
the strided views ``as_strided`` / ``as_strided_scatter`` and ``Tensor.unfold`` (ops/shape.py).

Memory: the ops PyTorch returns as views return NumPy views of the input on cpu,
sharing memory (and the version counter) with it (Note [Shape ops and views] in
kernels/cpu/shape.py); ``reshape`` and friends copy only when the input's strides
cannot express the new shape, e.g. after a transpose. ``view`` is an alias of
``reshape``: it never fails for a non-viewable input but copies, as ``reshape`` does.
Like PyTorch, ``flatten`` with nothing to flatten, ``t`` of a 0-d or 1-d tensor and
``contiguous`` of a contiguous tensor return the input itself.
"""

from __future__ import annotations

import itertools
import os
import sys
import warnings
from functools import partial
from math import copysign, prod

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.strides import viewable
from oneflow_lite.framework.storage import tensor_geometry
from oneflow_lite.framework.tensor import Tensor, _wrap_dim
from oneflow_lite.framework.tensor_meta import Size, make_meta
from oneflow_lite.functors.conversion import convert
from oneflow_lite.functors.promotion import TORCH_NAMES, cast, check_converts
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.interpreters.eager_local import get_allocation_limit
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.shape import check_geometry, dtype_torch_name, view_dtype_shape

_ATTR_CACHE_SIZE = 1024


def cached_attrs(cache: dict, names: tuple, values: tuple) -> AttrMap:
    """The call-time ``AttrMap`` of ``names`` = ``values``, made once per distinct values.

    A functor keeps one ``cache`` dict; reusing the map saves building and hashing
    it on every call. ``values`` must be canonical attr values (ints, tuples,
    ``flow.dtype``, ``flow.device``), and must differ whenever the maps differ
    (``True`` and ``1`` are equal keys).
    """
    attrs = cache.get(values)
    if attrs is None:
        if len(cache) >= _ATTR_CACHE_SIZE:
            cache.clear()
        attrs = cache[values] = AttrMap(zip(names, values))
    return attrs


@functor("Reshape")
class ReshapeFunctor:
    """``reshape(input, shape)``: one ``-1`` is inferred; a view when the strides allow it."""

    def __init__(self):
        self.op = OpBuilder("reshape").input("in").output("out").build()
        self._attrs = {}

    def __call__(self, x, shape):
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("shape",), (shape,)))[0]


@functor("Transpose")
class TransposeFunctor:
    """``transpose(input, dim0, dim1)``: swaps two dims (negative dims count from the end); a view."""

    def __init__(self):
        self.op = OpBuilder("transpose").input("input").output("output").build()
        self._attrs = {}  # (ndim, dim0, dim1) -> AttrMap(perm=...)

    def __call__(self, x, dim0, dim1):
        ndim = x._meta.ndim
        attrs = self._attrs.get((ndim, dim0, dim1))
        if attrs is None:
            d0 = _wrap_dim(dim0, ndim, "transpose")
            d1 = _wrap_dim(dim1, ndim, "transpose")
            perm = list(range(ndim))
            if ndim:
                perm[d0], perm[d1] = d1, d0
            if len(self._attrs) >= _ATTR_CACHE_SIZE:
                self._attrs.clear()
            attrs = self._attrs[(ndim, dim0, dim1)] = AttrMap({"perm": tuple(perm)})
        return dispatch(self.op, (x,), attrs)[0]


@functor("Slice")
class SliceFunctor:
    """``slice(input, start, stop, step)``: per-dim Python slicing with positive steps; a view."""

    def __init__(self):
        self.op = OpBuilder("slice").input("x").output("y").build()
        self._attrs = {}

    def __call__(self, x, start, stop, step):
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("start", "stop", "step"),
                                                    (tuple(start), tuple(stop), tuple(step))))[0]


def _wrap(dim, ndim, name):
    """``dim`` made non-negative (``_wrap_dim``; a 0-d tensor's dims -1 and 0 are both 0)."""
    d = _wrap_dim(dim, ndim, name)
    return d if ndim else 0


def _unary(op_type, inp="in", out="out"):
    return OpBuilder(op_type).input(inp).output(out).build()


def cached(cache: dict, key, make):
    """``cache[key]``, made by ``make()`` on first use (the cache is cleared when it grows too large)."""
    value = cache.get(key, cache)
    if value is cache:
        if len(cache) >= _ATTR_CACHE_SIZE:
            cache.clear()
        value = cache[key] = make()
    return value


class VariadicOp:
    """The op exprs of a variadic op, one per tensor count (an expr's counts are fixed when it is built)."""

    def __init__(self, op_type, inp, out, variadic_output=False):
        self._spec = (op_type, inp, out, variadic_output)
        self._exprs = {}

    def __call__(self, n):
        op = self._exprs.get(n)
        if op is None:
            op_type, inp, out, variadic_output = self._spec
            builder = OpBuilder(op_type)
            op = self._exprs[n] = (builder.input(inp).output(out, n) if variadic_output
                                   else builder.input(inp, n).output(out)).build()
        return op


def _wrap_dims(dims, ndim, name):
    """``dims`` wrapped, each at most once (PyTorch's error for a repeat)."""
    out = []
    for d in dims:
        d = _wrap(d, ndim, name)
        if d in out:
            raise RuntimeError(f"{name}: dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(out)


# ---- permutations ------------------------------------------------------------------------------
@functor("Permute")
class PermuteFunctor:
    """``permute(input, dims)``: dims as a tuple or varargs; a view."""

    def __init__(self):
        self.op = _unary("transpose", "input", "output")
        self._attrs = {}

    def _perm(self, ndim, dims):
        if len(dims) != ndim:
            raise RuntimeError(f"permute(): number of dimensions in the tensor input does not match the length of "
                               f"the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to "
                               f"len(dims) = {len(dims)}")
        perm = tuple(_wrap(d, ndim, "permute") for d in dims)
        if len(set(perm)) != ndim:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        return AttrMap({"perm": perm})

    def __call__(self, x, dims):
        ndim = x._meta.ndim
        return dispatch(self.op, (x,), cached(self._attrs, (ndim, dims), lambda: self._perm(ndim, dims)))[0]


@functor("T")
class TFunctor:
    """``t(input)``: transposes a 2-d tensor; a 0-d or 1-d tensor is returned as is."""

    def __init__(self):
        self.op = _unary("transpose", "input", "output")
        self.attrs = AttrMap({"perm": (1, 0)})

    def __call__(self, x):
        ndim = x._meta.ndim
        if ndim < 2:
            return x
        if ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D")
        return dispatch(self.op, (x,), self.attrs)[0]


def _reversed_dims(self):
    """``Tensor.T``: the dims in reverse order (the transpose of a matrix); 0-d and 1-d tensors as they are."""
    ndim = self._meta.ndim
    return self if ndim < 2 else get_functor("Permute")(self, tuple(range(ndim - 1, -1, -1)))


# ---- reshapes ------------------------------------------------------------------------------------
@functor("Flatten")
class FlattenFunctor:
    """``flatten(input, start_dim=0, end_dim=-1)``: a 0-d input gives shape (1,); a view when possible."""

    def __init__(self):
        self.op = _unary("flatten")
        self._attrs = {}  # (ndim, start, end) -> AttrMap, or None when nothing is flattened

    def _make(self, ndim, start_dim, end_dim):
        start = _wrap(start_dim, ndim, "flatten")
        end = _wrap(end_dim, ndim, "flatten")
        if start > end:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        return None if ndim and start == end else AttrMap({"start_dim": start, "end_dim": end})

    def __call__(self, x, start_dim=0, end_dim=-1):
        ndim = x._meta.ndim
        attrs = cached(self._attrs, (ndim, start_dim, end_dim), lambda: self._make(ndim, start_dim, end_dim))
        return x if attrs is None else dispatch(self.op, (x,), attrs)[0]


@composite("Unflatten")
def unflatten(x, dim, sizes):
    """``unflatten(input, dim, sizes)``: dim ``dim`` becomes ``sizes`` (one may be -1); a view when possible."""
    shape = x._meta.shape
    if not shape:
        raise IndexError(f"unflatten: Dimension specified as {dim} but tensor has no dimensions")
    d = _wrap(dim, len(shape), "unflatten")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    size = shape[d]
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten: only one dimension can be inferred")
    known = prod(s for s in sizes if s != -1)
    if -1 in sizes and known and size % known == 0:
        sizes = tuple(size // known if s == -1 else s for s in sizes)
    if -1 in sizes or any(s < 0 for s in sizes) or prod(sizes) != size:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({size}) in the input tensor")
    return F.reshape(x, (*shape[:d], *sizes, *shape[d + 1:]))


@functor("Squeeze")
class SqueezeFunctor:
    """``squeeze(input, dim=None)``: drops the size-1 dims among ``dim`` (all when None); a view."""

    def __init__(self):
        self.op = _unary("squeeze")
        self._attrs = {}

    def _make(self, ndim, dim):
        axes = tuple(range(ndim)) if dim is None else _wrap_dims(dim, ndim, "squeeze")
        return AttrMap({"axes": axes if ndim else ()})

    def __call__(self, x, dim=None):
        ndim = x._meta.ndim
        return dispatch(self.op, (x,), cached(self._attrs, (ndim, dim), lambda: self._make(ndim, dim)))[0]


@functor("Unsqueeze")
class UnsqueezeFunctor:
    """``unsqueeze(input, dim)``: a size-1 dim inserted at ``dim`` (in [-ndim - 1, ndim]); a view."""

    def __init__(self):
        self.op = _unary("expand_dims")
        self._attrs = {}

    def __call__(self, x, dim):
        ndim = x._meta.ndim
        attrs = cached(self._attrs, (ndim, dim),
                        lambda: AttrMap({"axis": _wrap(dim, ndim + 1, "unsqueeze")}))
        return dispatch(self.op, (x,), attrs)[0]


# ---- expand, repeat ------------------------------------------------------------------------------
@functor("Expand")
class ExpandFunctor:
    """``expand(input, size)`` / ``broadcast_to(input, size)``: -1 keeps a dim, size-1 dims stretch, new dims
    go in front; a read-only broadcast view."""

    def __init__(self):
        self.op = _unary("expand")
        self._attrs = {}

    def __call__(self, x, size):
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("expand_shape",), (tuple(size),)))[0]


@composite("ExpandAs")
def expand_as(x, other):
    """``expand_as(input, other)``: ``expand(input, other.shape)``."""
    return F.expand(x, other._meta.shape)


@functor("Repeat")
class RepeatFunctor:
    """``repeat(input, repeats)``: tiles the input ``repeats[i]`` times along dim i (at least ndim entries;
    extra ones add leading dims); a copy."""

    def __init__(self):
        self.op = _unary("repeat")
        self._attrs = {}

    def __call__(self, x, repeats):
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("repeats",), (tuple(repeats),)))[0]


@composite("Tile")
def tile(x, dims):
    """``tile(input, dims)``: ``repeat`` with ``dims`` padded by leading 1s to the input's ndim."""
    lead = x._meta.ndim - len(dims)
    return F.repeat(x, (1,) * lead + tuple(dims) if lead > 0 else dims)


# ---- joining and splitting -------------------------------------------------------------------------
def _common_dtype(tensors):
    d = tensors[0]._meta.dtype
    for t in tensors:
        if t._meta.dtype is not d:
            d = dt.promote_types(d, t._meta.dtype)
    return d


@functor("Cat")
class CatFunctor:
    """``cat(tensors, dim=0)``: inputs promoted to their common dtype. As in PyTorch, 1-d empty tensors
    (shape (0,)) are skipped whatever the others' shapes (they only take part in the dtype)."""

    def __init__(self):
        self.ops = VariadicOp("cat", "in", "out")
        self._attrs = {}

    def raw(self, tensors, axis):
        """Concatenate tensors of one dtype along the non-negative ``axis``."""
        return dispatch(self.ops(len(tensors)), tensors, cached_attrs(self._attrs, ("axis",), (axis,)))[0]

    def __call__(self, tensors, dim=0):
        if not tensors:
            raise RuntimeError("cat(): expected a non-empty list of Tensors")
        d = _common_dtype(tensors)
        kept = [t for t in tensors if t._meta.shape != (0,)] or [tensors[0]]
        for i, t in enumerate(tensors):
            if not t._meta.ndim:
                raise RuntimeError(f"cat(): zero-dimensional tensor (at position {i}) cannot be concatenated")
        axis = _wrap(dim, kept[0]._meta.ndim, "cat")
        if len(kept) < len(tensors) and kept[0]._meta.shape != (0,) and not any(t.requires_grad for t in kept) \
                and any(t.requires_grad for t in tensors):
            # the result requires grad when a skipped empty tensor does (as an empty slice, so a backward reaches it)
            like = list(kept[0]._meta.shape)
            like[axis] = 0
            kept = [F.reshape(t, tuple(like)) if t._meta.shape == (0,) else t for t in tensors
                    if t._meta.shape != (0,) or t.requires_grad]
        return self.raw([cast(t, d) for t in kept], axis)


@functor("Stack")
class StackFunctor:
    """``stack(tensors, dim=0)``: equal-shaped tensors joined along a new dim, promoted to their common dtype."""

    def __init__(self):
        self.ops = VariadicOp("stack", "in", "out")
        self._attrs = {}

    def raw(self, tensors, axis):
        return dispatch(self.ops(len(tensors)), tensors, cached_attrs(self._attrs, ("axis",), (axis,)))[0]

    def __call__(self, tensors, dim=0):
        if not tensors:
            raise RuntimeError("stack expects a non-empty TensorList")
        d = _common_dtype(tensors)
        axis = _wrap(dim, tensors[0]._meta.ndim + 1, "stack")
        return self.raw([cast(t, d) for t in tensors], axis)


def _split_axis(x, dim, name):
    ndim = x._meta.ndim
    if not ndim:
        raise RuntimeError(f"{name} expects at least a 1-dimensional tensor")
    return _wrap(dim, ndim, name)


@functor("SplitWithSizes")
class SplitWithSizesFunctor:
    """``split(input, sizes, dim=0)``: pieces of the given sizes (summing to the dim's size); views."""

    def __init__(self):
        self.ops = VariadicOp("split", "x", "out", variadic_output=True)
        self._attrs = {}

    def raw(self, x, sizes, axis):
        sizes = tuple(sizes)
        return dispatch(self.ops(len(sizes)), (x,), cached_attrs(self._attrs, ("axis", "sizes"), (axis, sizes)))

    def __call__(self, x, sizes, dim=0):
        axis = _split_axis(x, dim, "split")
        if not sizes:  # PyTorch: no pieces of a dim of size 0 (they sum to it), an error otherwise
            if x._meta.shape[axis] == 0:
                return ()
            raise RuntimeError("split_with_sizes expects at least one split size")
        return self.raw(x, sizes, axis)


@composite("Split")
def split(x, split_size, dim=0):
    """``split(input, split_size, dim=0)``: pieces of ``split_size`` (the last may be smaller); views."""
    axis = _split_axis(x, dim, "split")
    size = x._meta.shape[axis]
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0 and size:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
    n = max(-(-size // split_size), 1) if split_size else 1
    return F.split(x, (split_size,) * (n - 1) + (size - split_size * (n - 1),), axis)


@composite("Chunk")
def chunk(x, chunks, dim=0):
    """``chunk(input, chunks, dim=0)``: ``split`` by ``ceil(size / chunks)`` (so maybe fewer than ``chunks``)."""
    axis = _split_axis(x, dim, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = x._meta.shape[axis]
    if not size:  # PyTorch keeps the number of chunks here: that many empty pieces
        if chunks > 2 ** 24:
            raise MemoryError(f"chunk: {chunks} empty pieces of dim {dim} would not fit in memory")
        return F.split(x, (0,) * chunks, axis)
    step = -(-size // chunks)
    n = -(-size // step)
    return F.split(x, (step,) * (n - 1) + (size - step * (n - 1),), axis)


@functor("Unbind")
class UnbindFunctor:
    """``unbind(input, dim=0)``: the slices along ``dim`` with that dim removed; views."""

    def __init__(self):
        self.ops = VariadicOp("unbind", "x", "out", variadic_output=True)
        self._attrs = {}

    def raw(self, x, axis):
        n = x._meta.shape[axis]
        if not n:
            return ()
        return dispatch(self.ops(n), (x,), cached_attrs(self._attrs, ("axis",), (axis,)))

    def __call__(self, x, dim=0):
        ndim = x._meta.ndim
        if not ndim:
            raise IndexError("unbind: Dimension specified as 0 but tensor has no dimensions")
        return self.raw(x, _wrap(dim, ndim, "unbind"))


@functor("Narrow")
class NarrowFunctor:
    """``narrow(input, dim, start, length)``: ``length`` elements from ``start`` (may be negative); a view."""

    def __init__(self):
        self.slice = get_functor("Slice")

    def __call__(self, x, dim, start, length):
        shape = x._meta.shape
        if not shape:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        axis = _wrap(dim, len(shape), "narrow")
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        size = shape[axis]
        if not -size <= start <= size:
            raise IndexError(f"narrow(): start out of range (expected to be in range of [{-size}, {size}], but got "
                             f"{start})")
        if start < 0:
            start += size
        if start + length > size:
            raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}).")
        starts, stops = [0] * len(shape), list(shape)
        starts[axis], stops[axis] = start, start + length
        return self.slice(x, starts, stops, [1] * len(shape))


# ---- flip, roll, tril, triu ----------------------------------------------------------------------
@functor("Flip")
class FlipFunctor:
    """``flip(input, dims)``: reverses the order along ``dims``; a copy, as in PyTorch."""

    def __init__(self):
        self.op = _unary("flip", "x", "y")
        self._attrs = {}

    def __call__(self, x, dims):
        ndim = x._meta.ndim
        return dispatch(self.op, (x,), cached(self._attrs, (ndim, dims), lambda: _flip_attrs(dims, ndim)))[0]


def _flip_attrs(dims, ndim):
    wrapped = _wrap_dims(dims, ndim, "flip")  # a 0-d tensor's dims -1 / 0 and repeats are checked all the same
    return AttrMap({"dims": wrapped if ndim else ()})


@functor("Roll")
class RollFunctor:
    """``roll(input, shifts, dims=None)``: shifts elements along ``dims`` with wrap-around; without dims,
    rolls the flattened tensor by its single shift; a copy."""

    def __init__(self):
        self.op = _unary("roll")
        self._attrs = {}

    def _make(self, ndim, shifts, dims):
        dims = () if dims is None else tuple(_wrap(d, ndim, "roll") for d in dims)
        if not shifts or (len(shifts) != len(dims) and not (not dims and len(shifts) == 1)):
            raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
        if not ndim:  # one element: any roll leaves it in place
            shifts, dims = (0,), ()
        return AttrMap({"shifts": tuple(shifts), "dims": dims})

    def __call__(self, x, shifts, dims=None):
        ndim = x._meta.ndim
        return dispatch(self.op, (x,), cached(self._attrs, (ndim, shifts, dims),
                                               lambda: self._make(ndim, shifts, dims)))[0]


class _Triangle:
    """``tril`` / ``triu(input, diagonal=0)`` of the last two dims (in place with ``inplace=True``)."""

    op_type = ""

    def __init__(self):
        self.op = _unary(self.op_type)
        self._attrs = {}

    def __call__(self, x, diagonal=0, inplace=False):
        attrs = cached_attrs(self._attrs, ("diagonal",), (diagonal,))
        if inplace:
            return dispatch(self.op, (x,), attrs, (x,))[0]
        return dispatch(self.op, (x,), attrs)[0]


@functor("Tril")
class TrilFunctor(_Triangle):
    op_type = "tril"


@functor("Triu")
class TriuFunctor(_Triangle):
    op_type = "triu"


# ---- pad -------------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "replicate", "circular")
_PAD_ATTRS = ("mode", "padding_before", "padding_after", "value")


@functor("Pad")
class PadFunctor:
    """``pad(input, pad, mode="constant", value=None)``: ``pad`` lists (before, after) pairs from the last dim
    backwards, as in PyTorch. "constant" fills with ``value`` (0 by default) and takes negative padding
    (cropping); "reflect", "replicate" and "circular" pad any number of trailing dims (see Note [Pad modes])."""

    def __init__(self):
        self.op = _unary("pad", "x", "y")
        self._attrs = {}

    def _make(self, ndim, pad, mode, value):
        if len(pad) % 2:
            raise RuntimeError("pad: Padding length must be divisible by 2")
        if len(pad) > 2 * ndim:
            raise RuntimeError(f"pad: Padding length should be less than or equal to two times the input dimension "
                               f"but got padding length {len(pad)} and input of dimension {ndim}")
        if mode not in _PAD_MODES:
            raise RuntimeError(f"pad: Unrecognised padding mode {mode}; expected one of {', '.join(_PAD_MODES)}")
        if mode != "constant" and value:
            raise RuntimeError(f'pad: Padding mode "{mode}" doesn\'t take in value argument')
        before, after = [0] * ndim, [0] * ndim
        for i in range(len(pad) // 2):
            before[ndim - 1 - i], after[ndim - 1 - i] = pad[2 * i], pad[2 * i + 1]
        return AttrMap(zip(_PAD_ATTRS, (mode, tuple(before), tuple(after), 0.0 if value is None else value)))

    def __call__(self, x, pad, mode="constant", value=None):
        if value is not None:
            check_converts("pad", "value", value, x._meta.dtype)
        ndim = x._meta.ndim
        key = (ndim, pad, mode, value, value is not None and copysign(1.0, value) < 0)  # -0.0 == 0.0 as a key
        return dispatch(self.op, (x,), cached(self._attrs, key, lambda: self._make(ndim, pad, mode, value)))[0]


# ---- copies ----------------------------------------------------------------------------------------
@functor("Clone")
class CloneFunctor:
    """``clone(input)``: a copy on the same device (differentiable)."""

    def __init__(self):
        self.copy = get_functor("Copy")

    def __call__(self, x):
        return self.copy(x, x._meta.device)


@functor("Contiguous")
class ContiguousFunctor:
    """``contiguous(input)``: the input itself when its memory is C-contiguous, else a C-contiguous copy.
    A tensor without a NumPy buffer (meta, or lazy in a graph being captured) counts as contiguous."""

    def __init__(self):
        self.copy = get_functor("Copy")

    def __call__(self, x):
        return x if _is_contiguous(x) else self.copy(x, x._meta.device)


def _is_contiguous(self) -> bool:
    """Whether the tensor's memory is C-contiguous (a tensor without a NumPy buffer counts as contiguous)."""
    a = self._array
    return type(a) is not np.ndarray or a.flags.c_contiguous



# ---- [compat s3] PyTorch's further shape functions (composites of the ops above) ---------------------------
_CPU = Device("cpu")
# the functors and the interpreters' wrappers (fp32_function, ...) a functional call passes through
_INTERNAL_DIRS = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
                  os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interpreters") + os.sep)


def _constant(array: np.ndarray, device) -> Tensor:
    """A tensor holding ``array`` (an index computed here from shapes or values) on ``device``."""
    t = Tensor._make(array, make_meta(array.shape, dt.from_numpy_dtype(array.dtype), _CPU))
    return t if device is _CPU else convert(t, device)


def warn_at_caller(message, category=UserWarning, extra_levels=0):
    """Warn at the first frame outside the functors (the functional API's caller: a user line, or a layer's
    forward), whichever path the call took (a first call resolves its overload, later ones do not);
    ``extra_levels`` goes further up (PyTorch's ``_stacklevel`` beyond its default)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL_DIRS):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1 + extra_levels)


def _values(t: Tensor, name: str, what: str) -> np.ndarray:
    """The values of ``t`` (a tensor whose values decide a shape), or an error naming ``name``."""
    if not t._meta.device.device_type.has_storage:
        raise RuntimeError(f"{name}: the output shape depends on the values of {what}, which a tensor on "
                           f"'{t._meta.device}' does not hold")
    return t.numpy()


@composite("Atleast1d")
def atleast_1d(x):
    """``atleast_1d(input)``: a 0-d tensor as shape (1,); others as they are."""
    return F.reshape(x, (1,)) if not x._meta.ndim else x


@composite("Atleast2d")
def atleast_2d(x):
    """``atleast_2d(input)``: 0-d as (1, 1), 1-d (n,) as (1, n); others as they are."""
    ndim = x._meta.ndim
    return F.reshape(x, (1, 1)) if not ndim else F.unsqueeze(x, 0) if ndim == 1 else x


@composite("Atleast3d")
def atleast_3d(x):
    """``atleast_3d(input)``: 0-d as (1, 1, 1), (n,) as (1, n, 1), (m, n) as (m, n, 1); others as they are."""
    ndim = x._meta.ndim
    if ndim == 0:
        return F.reshape(x, (1, 1, 1))
    if ndim == 1:
        return F.reshape(x, (1, x._meta.shape[0], 1))
    return F.unsqueeze(x, -1) if ndim == 2 else x


def _each(fn, tensors):
    """``fn`` of each tensor (the tuple forms of ``atleast_1d`` and friends)."""
    return tuple(fn(t) for t in tensors)


for _name, _fn in (("Atleast1dTuple", atleast_1d), ("Atleast2dTuple", atleast_2d), ("Atleast3dTuple", atleast_3d)):
    composite(_name)(partial(_each, _fn))


def broadcast_shapes(*shapes) -> Size:
    """The shape tensors of ``shapes`` broadcast to (ints are 1-d shapes); PyTorch's errors."""
    result = []  # from the last dim backwards
    for i, shape in enumerate(shapes):
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
            shape = (int(shape),)
        if not isinstance(shape, (tuple, list)) or not all(
                isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got "
                               f"{shape}")
        for k, s in enumerate(reversed(shape)):
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
            if k == len(result):
                result.append(s)
            elif result[k] == 1 or s == result[k]:
                result[k] = s
            elif s != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s} at {-1 - k}! Mismatching "
                                   f"argument at index {i} had {tuple(shape)}; but expected shape should be "
                                   f"broadcastable to {list(reversed(result))}")
    return Size(reversed(result))


@composite("BroadcastTensors")
def broadcast_tensors(tensors):
    """``broadcast_tensors(*tensors)``: each tensor expanded (a view) to their common shape."""
    shape = tuple(tensors[0]._meta.shape) if tensors else ()
    for t in tensors[1:]:
        other = t._meta.shape
        n = max(len(shape), len(other))
        a, b = (1,) * (n - len(shape)) + shape, (1,) * (n - len(other)) + tuple(other)
        for d, (p, q) in enumerate(zip(a, b)):
            if p != q and p != 1 and q != 1:
                raise RuntimeError(f"broadcast_tensors: The size of tensor a ({p}) must match the size of tensor b ({q}) at "
                                   f"non-singleton dimension {d}")
        shape = tuple(q if p == 1 else p for p, q in zip(a, b))
    return tuple(F.expand(t, shape) for t in tensors)


@composite("BlockDiag")
def block_diag(tensors):
    """``block_diag(*tensors)``: the 0-d, 1-d and 2-d inputs (as 1 x 1, 1 x n, m x n) on the diagonal of one
    matrix, zeros elsewhere, in the inputs' common dtype."""
    mats = []
    for i, t in enumerate(tensors):
        ndim = t._meta.ndim
        if ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{ndim} dimensions")
        mats.append(t if ndim == 2 else F.reshape(t, (1, -1)))
    if not mats:
        return F.zeros((1, 0))
    d = _common_dtype(mats)
    cols = sum(m._meta.shape[1] for m in mats)
    left, rows = 0, []
    for m in mats:
        width = m._meta.shape[1]
        rows.append(F.pad(cast(m, d), (left, cols - left - width)))
        left += width
    return F.cat(rows, 0)


def _check_1d(name, tensors):
    for t in tensors:
        if t._meta.ndim != 1:
            raise RuntimeError(f"{name}: Expect a 1D vector, but got shape {list(t._meta.shape)}")


@composite("Meshgrid")
def meshgrid(tensors, indexing=None):
    """``meshgrid(*tensors, indexing=None)``: 0-d / 1-d tensors expanded (views) to the grid of their lengths;
    ``indexing="xy"`` swaps the first two dims (Cartesian), "ij" (the default, with PyTorch's warning when not
    given) keeps them."""
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warn_at_caller("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                        "argument.")
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if t._meta.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
        if t._meta.dtype is not tensors[0]._meta.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t._meta.device is not tensors[0]._meta.device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    tensors = list(tensors)
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    shape = tuple(t._meta.numel for t in tensors)
    grids = []
    for i, t in enumerate(tensors):
        view = [1] * len(shape)
        view[i] = -1
        grids.append(F.expand(F.reshape(t, tuple(view)), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


@composite("CartesianProd")
def cartesian_prod(tensors):
    """``cartesian_prod(*tensors)``: every combination of the 1-d inputs' elements, one per row."""
    _check_1d("cartesian_prod", tensors)
    if len(tensors) == 1:
        return tensors[0]
    return F.stack([F.reshape(g, (-1,)) for g in F.meshgrid(tensors, indexing="ij")], 1)


@composite("Combinations")
def combinations(x, r=2, with_replacement=False):
    """``combinations(input, r=2, with_replacement=False)``: the length-``r`` combinations of the 1-d input's
    elements (as ``itertools.combinations``), one per row."""
    _check_1d("combinations", (x,))
    if r < 0:
        raise RuntimeError(f"combinations: Expect a non-negative number, but got {r}")
    if r == 0:
        return F.reshape(x[:0], (0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = np.array(list(pick(range(x._meta.shape[0]), r)), np.int64).reshape(-1, r)
    return F.reshape(F.index_select(x, 0, _constant(index.reshape(-1), x._meta.device)), index.shape)


def _nonempty(name, tensors):
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")


@composite("Hstack")
def hstack(tensors):
    """``hstack(tensors)``: concatenated along dim 1 (dim 0 for 1-d tensors), 0-d tensors as 1-d."""
    _nonempty("hstack", tensors)
    tensors = [atleast_1d(t) for t in tensors]
    return F.cat(tensors, 0 if tensors[0]._meta.ndim == 1 else 1)


@composite("Vstack")
def vstack(tensors):
    """``vstack(tensors)`` / ``row_stack``: concatenated along dim 0, 0-d and 1-d tensors as rows."""
    _nonempty("vstack", tensors)
    return F.cat([atleast_2d(t) for t in tensors], 0)


@composite("Dstack")
def dstack(tensors):
    """``dstack(tensors)``: concatenated along dim 2, after ``atleast_3d``."""
    _nonempty("dstack", tensors)
    return F.cat([atleast_3d(t) for t in tensors], 2)


@composite("ColumnStack")
def column_stack(tensors):
    """``column_stack(tensors)``: 0-d and 1-d tensors as columns, concatenated along dim 1."""
    _nonempty("column_stack", tensors)
    return F.cat([F.reshape(t, (-1, 1)) if t._meta.ndim <= 1 else t for t in tensors], 1)


# ---- splitting ------------------------------------------------------------------------------------------
def _tensor_split_axis(x, dim):
    if not x._meta.ndim:
        raise RuntimeError(f"tensor_split expected at least a 1-dimensional tensor, but got a tensor with "
                           f"{x._meta.ndim} dims")
    return _wrap(dim, x._meta.ndim, "tensor_split")


_MAX_PIECES = 2 ** 24  # a split into more tensors than this is refused before building the list of sizes


@composite("TensorSplitSections")
def tensor_split_sections(x, sections, dim=0):
    """``tensor_split(input, sections, dim=0)``: ``sections`` pieces, the first ``size % sections`` one
    longer; views."""
    axis = _tensor_split_axis(x, dim)
    if sections <= 0:
        raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {sections}")
    if sections > _MAX_PIECES:
        raise MemoryError(f"tensor_split: {sections} sections would be {sections} tensors (at most {_MAX_PIECES})")
    size = x._meta.shape[axis]
    small, big = divmod(size, sections)
    return F.split(x, [small + 1] * big + [small] * (sections - big), axis)


@composite("TensorSplitIndices")
def tensor_split_indices(x, indices, dim=0):
    """``tensor_split(input, indices, dim=0)``: the pieces ``[0:i0], [i0:i1], ..., [ik:]`` (Python slicing:
    negative indices count from the end, out-of-range ones clamp); views."""
    axis = _tensor_split_axis(x, dim)
    size = x._meta.shape[axis]
    bounds = (None, *indices, None)
    pieces = []
    for start, stop in itertools.pairwise(bounds):
        s, e, _ = slice(start, stop).indices(size)
        pieces.append(F.narrow(x, axis, s, max(e - s, 0)))
    return tuple(pieces)


@composite("TensorSplitTensor")
def tensor_split_tensor(x, indices_or_sections, dim=0):
    """``tensor_split(input, tensor_indices_or_sections, dim=0)``: a 0-d int64 tensor is a number of sections,
    a 1-d one the indices."""
    t = indices_or_sections
    if t._meta.dtype is not dt.int64:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                           f"{TORCH_NAMES[t._meta.dtype]}")
    if t._meta.ndim > 1:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                           f"one-dimensional tensor, but got a tensor with {t._meta.ndim} dims")
    values = _values(t, "tensor_split", "tensor_indices_or_sections")
    if not t._meta.ndim:
        return tensor_split_sections(x, int(values), dim)
    return tensor_split_indices(x, tuple(int(v) for v in values), dim)


def _directional_split(name, min_ndim, dim, x, indices_or_sections):
    """``hsplit`` / ``vsplit`` / ``dsplit``: ``tensor_split`` along ``dim``, equal parts for an int."""
    ndim = x._meta.ndim
    if ndim < min_ndim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_ndim} dimension, but got a tensor "
                           f"with {ndim} dimensions!")
    if name == "hsplit" and ndim == 1:
        dim = 0
    if isinstance(indices_or_sections, int):
        size = x._meta.shape[dim]
        if indices_or_sections <= 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {indices_or_sections}!")
        return tensor_split_sections(x, indices_or_sections, dim)
    return tensor_split_indices(x, indices_or_sections, dim)


for _name, _args in (("Hsplit", ("hsplit", 1, 1)), ("Vsplit", ("vsplit", 2, 0)), ("Dsplit", ("dsplit", 3, 2))):
    composite(_name)(partial(_directional_split, *_args))


@composite("SplitWithSizesChecked")
def split_with_sizes(x, split_sizes, dim=0):
    """``split_with_sizes(input, split_sizes, dim=0)``: pieces of the given sizes (summing to the dim's size);
    views."""
    axis = _split_axis(x, dim, "split_with_sizes")
    size = x._meta.shape[axis]
    if any(s < 0 for s in split_sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={list(split_sizes)}")
    if sum(split_sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at "
                           f"dimension {axis}), but got split_sizes={list(split_sizes)}")
    if not split_sizes:  # a dim of size 0 split into no pieces
        return ()
    return F.split(x, tuple(split_sizes), axis)


# ---- moving dims, rotating, flipping ------------------------------------------------------------------------
@composite("Movedim")
def movedim(x, source, destination):
    """``movedim(input, source, destination)`` / ``moveaxis``: the dims ``source`` moved to the positions
    ``destination``, the others keeping their order; a view."""
    ndim = x._meta.ndim
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
                           f"contain the same number of dims as destination ({list(destination)} dims)")
    src = [_wrap(d, ndim, "movedim") for d in source]
    dst = [_wrap(d, ndim, "movedim") for d in destination]
    for name, given, wrapped in (("source", source, src), ("destination", destination, dst)):
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(given)})")
    perm = [-1] * ndim
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(ndim) if i not in src)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return F.permute(x, tuple(perm)) if ndim else x


@composite("Ravel")
def ravel(x):
    """``ravel(input)``: the elements as a 1-d tensor (a view when the layout allows)."""
    return F.reshape(x, (-1,))


@composite("Rot90")
def rot90(x, k=1, dims=(0, 1)):
    """``rot90(input, k=1, dims=[0, 1])``: rotated by 90 degrees ``k`` times, from ``dims[0]`` towards
    ``dims[1]``; a copy."""
    ndim = x._meta.ndim
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if ndim < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {ndim}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == ndim:
        raise RuntimeError(f"rot90: expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = "
                           f"{dims[1]}")
    d0, d1 = _wrap(dims[0], ndim, "rot90"), _wrap(dims[1], ndim, "rot90")
    k %= 4
    if k == 1:
        return F.transpose(F.flip(x, (d1,)), d0, d1)
    if k == 2:
        return F.flip(x, (d0, d1))
    if k == 3:
        return F.transpose(F.flip(x, (d0,)), d0, d1)
    return F.clone(x)


@composite("Fliplr")
def fliplr(x):
    """``fliplr(input)``: reversed along dim 1 (at least 2-d); a copy."""
    if x._meta.ndim < 2:
        raise RuntimeError("fliplr: Input must be >= 2-d.")
    return F.flip(x, (1,))


@composite("Flipud")
def flipud(x):
    """``flipud(input)``: reversed along dim 0 (at least 1-d); a copy."""
    if x._meta.ndim < 1:
        raise RuntimeError("flipud: Input must be >= 1-d.")
    return F.flip(x, (0,))


@composite("Adjoint")
def adjoint(x):
    """``adjoint(input)``: the last two dims swapped (the conjugate transpose of real matrices); a view."""
    if x._meta.ndim == 1:  # a 0-d tensor is its own adjoint, as in PyTorch
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return F.transpose(x, -2, -1) if x._meta.ndim else F.reshape(x, ())


# ---- diff, repeat_interleave, vander, constant_pad_nd ------------------------------------------------------------
def _check_diff_operand(x, t, axis):
    if t._meta.ndim != x._meta.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for d, (a, b) in enumerate(zip(x._meta.shape, t._meta.shape)):
        if d != axis and a != b:
            raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match that of input "
                               f"except along the differencing dimension; input.size({d}) = {a}, but got "
                               f"tensor.size({d}) = {b}")


@composite("Diff")
def diff(x, n=1, dim=-1, prepend=None, append=None):
    """``diff(input, n=1, dim=-1, prepend=None, append=None)``: the ``n``-th forward difference along ``dim``
    (``logical_xor`` of neighbours for bool), after concatenating ``prepend`` and ``append``."""
    if not x._meta.ndim:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"diff: order must be non-negative but got {n}")
    if n == 0 and prepend is None and append is None:  # PyTorch returns the input before it reads dim
        return F.clone(x)
    axis = _wrap(dim, x._meta.ndim, "diff")
    parts = [t for t in (prepend, x, append) if t is not None]
    for t in parts:
        _check_diff_operand(x, t, axis)
    if n == 0:  # PyTorch returns the input itself, without prepend / append (having checked them)
        return F.clone(x)
    if len(parts) > 1:
        x = F.cat(parts, axis)
    for _ in range(n):
        length = x._meta.shape[axis]
        if not length:
            break
        hi, lo = F.narrow(x, axis, 1, length - 1), F.narrow(x, axis, 0, length - 1)
        x = F.logical_xor(hi, lo) if x._meta.dtype is dt.bool_ else F.sub(hi, lo)
    return x


def _repeat_index(counts: np.ndarray, output_size) -> np.ndarray:
    if counts.size and counts.min() < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    total = int(counts.sum())
    if output_size is not None and output_size != total:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {total} but got {output_size}")
    if total * 8 > get_allocation_limit():  # the int64 index built here, before any op checks its output
        raise MemoryError(f"repeat_interleave: {total} repeated elements need an index of {total * 8} bytes, more "
                          f"than the allocation limit of {get_allocation_limit()} bytes")
    return np.repeat(np.arange(counts.size, dtype=np.int64), counts)


def _repeat_counts(repeats: Tensor) -> np.ndarray:
    d = repeats._meta.dtype
    if d.is_floating_point or d is dt.bool_:
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{TORCH_NAMES[d]}'")
    return _values(repeats, "repeat_interleave", "repeats").astype(np.int64).reshape(-1)


def _repeat_along(x, counts, dim, output_size):
    """``x`` with entry i along ``dim`` repeated ``counts[i]`` times (dim None: of the flattened ``x``)."""
    if dim is None:
        x, axis = F.reshape(x, (-1,)), 0
    elif not x._meta.ndim:  # PyTorch flattens a 0-d input only without a dim
        raise IndexError(f"repeat_interleave: Dimension specified as {dim} but tensor has no dimensions")
    else:
        axis = _wrap(dim, x._meta.ndim, "repeat_interleave")
    size = x._meta.shape[axis]
    if counts.size == 1:
        counts = np.full(size, counts[0], np.int64)
    elif counts.size != size:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts.size} and input.size({axis}) = {size}")
    return F.index_select(x, axis, _constant(_repeat_index(counts, output_size), x._meta.device))


@composite("RepeatInterleave")
def repeat_interleave(x, repeats, dim=None, output_size=None):
    """``repeat_interleave(input, repeats, dim=None, *, output_size=None)``: each element (along ``dim``,
    of the flattened input without it) repeated ``repeats[i]`` times (a 0-d / 1-element ``repeats`` for all)."""
    if repeats._meta.ndim > 1:
        raise RuntimeError("repeat_interleave: repeats must be 0-dim or 1-dim tensor")
    return _repeat_along(x, _repeat_counts(repeats), dim, output_size)


@composite("RepeatInterleaveInt")
def repeat_interleave_int(x, repeats, dim=None, output_size=None):
    """``repeat_interleave(input, repeats: int, dim=None, *, output_size=None)``: each element repeated
    ``repeats`` times."""
    if repeats < 0:
        raise RuntimeError("repeat_interleave: Repeats must be non-negative")
    return _repeat_along(x, np.array([repeats], np.int64), dim, output_size)


@composite("RepeatInterleaveIndices")
def repeat_interleave_indices(repeats, output_size=None):
    """``repeat_interleave(repeats, *, output_size=None)``: ``i`` repeated ``repeats[i]`` times, in repeats'
    dtype (int32 or int64, as PyTorch)."""
    if repeats._meta.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    index = _constant(_repeat_index(_repeat_counts(repeats), output_size), repeats._meta.device)
    return cast(index, repeats._meta.dtype) if repeats._meta.dtype is dt.int32 else index


@composite("Vander")
def vander(x, N=None, increasing=False):
    """``vander(x, N=None, increasing=False)``: the Vandermonde matrix of the 1-d ``x``: columns
    ``x ** (N-1), ..., x ** 0`` (ascending with ``increasing``); integer and bool inputs give int64."""
    if x._meta.ndim != 1:
        raise RuntimeError("vander: x must be a one-dimensional tensor.")
    n = x._meta.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not x._meta.dtype.is_floating_point:
        x = cast(x, dt.int64)
    if n == 0:
        return F.zeros((x._meta.shape[0], 0), dtype=x._meta.dtype, device=x._meta.device)
    ones = F.ones_like(F.unsqueeze(x, 1))
    if n == 1:
        out = ones
    else:  # the running product of x along n - 1 columns, as PyTorch (one op, however large n is)
        powers = F.cumprod(F.expand(F.unsqueeze(x, 1), (x._meta.shape[0], n - 1)), 1)
        out = F.cat([ones, powers], 1)
    return out if increasing else F.flip(out, (1,))


@composite("ConstantPadNd")
def constant_pad_nd(x, pad, value=0):
    """``constant_pad_nd(input, pad, value=0)``: ``pad(input, pad, "constant", value)``."""
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    return F.pad(x, pad, "constant", float(value))


# ---- select, strided views and the *_copy functions -----------------------------------------------------------
@composite("Select")
def select(x, dim, index):
    """``select(input, dim, index)``: the slice at ``index`` along ``dim``, that dim removed; a view."""
    shape = x._meta.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    axis = _wrap(dim, len(shape), "select")
    size = shape[axis]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(shape)} at dimension "
                         f"{axis}")
    return F.squeeze(F.narrow(x, axis, index % size, 1), (axis,))


def slice_bounds(x, dim, start, end, step, name):
    """``(axis, start, stop, step)`` of the slice ``start:end:step`` along ``dim`` (Python slicing)."""
    if not x._meta.ndim:
        raise RuntimeError(f"{name}() cannot be applied to a 0-dim tensor.")
    axis = _wrap(dim, x._meta.ndim, name)
    if step <= 0:
        raise RuntimeError(f"{name}: slice step must be positive")
    return (axis, *slice(start, end, step).indices(x._meta.shape[axis]))


def _slice(x, dim, start, end, step):
    axis, s, e, st = slice_bounds(x, dim, start, end, step, "slice")
    shape = x._meta.shape
    starts, stops, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], stops[axis], steps[axis] = s, max(e, s), st
    return get_functor("Slice")(x, starts, stops, steps)


@composite("ViewDtype")
def view_dtype(x, dtype):
    """``Tensor.view(dtype)``: the same bytes read as ``dtype``, a view that does not require grad (as in
    PyTorch, even for the same dtype); PyTorch's checks and messages."""
    src = x._meta.dtype
    view_dtype_shape(x._meta.shape, src, dtype, RuntimeError)
    if src.itemsize != dtype.itemsize:
        what = f"to view {dtype_torch_name(src)} as {dtype_torch_name(dtype)} (different element sizes)"
        strides, offset = tensor_geometry(x)
        checks = [("stride(-1)", strides[-1], "must be 1", strides[-1] == 1)]
        ratio = dtype.itemsize // src.itemsize
        if ratio > 1:
            checks.append(("storage_offset()", offset, f"must be divisible by {ratio}", offset % ratio == 0))
            checks += [(f"stride({i})", st, f"must be divisible by {ratio}", st % ratio == 0)
                       for i, st in enumerate(strides[:-1])]
        for name, got, rule, ok in checks:
            if not ok:
                raise RuntimeError(f"self.{name} {rule} {what}, but got {got}")
    return F.ops.view_dtype(x, dtype=dtype)


@functor("AsStrided")
class AsStridedFunctor:
    """``as_strided(input, size, stride, storage_offset=None)``: a view of the input's storage with the given
    sizes, strides and offset (default: the input's own), all in elements (Note [Storage of a tensor])."""

    def __init__(self):
        self.op = _unary("as_strided", "input", "output")
        self._attrs = {}

    def __call__(self, x, size, stride, storage_offset=None):
        in_stride, in_offset = tensor_geometry(x)
        offset = in_offset if storage_offset is None else storage_offset
        check_geometry(_AS_STRIDED_ERROR, size, stride, offset)
        attrs = cached_attrs(self._attrs, _GEOMETRY_ATTRS, (tuple(size), tuple(stride), offset, in_stride, in_offset))
        return dispatch(self.op, (x,), attrs)[0]


@functor("AsStridedScatter")
class AsStridedScatterFunctor:
    """``as_strided_scatter(input, src, size, stride, storage_offset=None)``: a copy of ``input`` with ``src``
    written where ``input.as_strided(size, stride, storage_offset)`` would look."""

    def __init__(self):
        self.op = OpBuilder("as_strided_scatter").input("input").input("src").output("output").build()
        self._attrs = {}

    def __call__(self, x, src, size, stride, storage_offset=None):
        in_stride, in_offset = tensor_geometry(x)
        offset = in_offset if storage_offset is None else storage_offset
        check_geometry(_AS_STRIDED_SCATTER_ERROR, size, stride, offset)
        if tuple(src._meta.shape) != tuple(size):
            raise RuntimeError(f"as_strided_scatter: expected src to have a size equal to the slice of self. "
                               f"src size = {list(src._meta.shape)}, slice size = {list(size)}")
        src = cast(src, x._meta.dtype)
        attrs = cached_attrs(self._attrs, _GEOMETRY_ATTRS, (tuple(size), tuple(stride), offset, in_stride, in_offset))
        return dispatch(self.op, (x, src), attrs)[0]


_GEOMETRY_ATTRS = ("size", "stride", "storage_offset", "in_stride", "in_offset")


def _error_of(op):
    """A RuntimeError factory whose messages start with ``op``'s name (for check_geometry)."""
    return lambda message: RuntimeError(f"{op}: {message}")


_AS_STRIDED_ERROR, _AS_STRIDED_SCATTER_ERROR = _error_of("as_strided"), _error_of("as_strided_scatter")


@functor("UnfoldTensor")
class UnfoldTensorFunctor:
    """``Tensor.unfold(dimension, size, step)``: the windows of ``size`` elements every ``step`` along
    ``dimension``, as a new last dim; a view."""

    def __init__(self):
        self.op = _unary("unfold_tensor", "x", "y")
        self._attrs = {}

    def __call__(self, x, dimension, size, step):
        shape = x._meta.shape
        dim = _wrap(dimension, len(shape), "unfold")
        length = shape[dim] if shape else 1
        if size > length:
            raise RuntimeError(f"unfold: maximum size for tensor at dimension {dim} is {length} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"unfold: step is {step} but must be > 0")
        if size < 0:
            raise RuntimeError(f"unfold: size is {size} but must be >= 0")
        attrs = cached_attrs(self._attrs, ("dimension", "size", "step"), (dim, size, step))
        return dispatch(self.op, (x,), attrs)[0]


def _copy_of(view):
    """The ``*_copy`` form of a view function: the view, copied (contiguous, sharing no memory)."""
    def copy_fn(x, *args):
        out = view(x, *args)
        return tuple(F.clone(t) for t in out) if isinstance(out, tuple) else F.clone(out)
    return copy_fn


def _expand_copy(x, size, implicit=False):
    return F.expand(x, size)


def _squeeze(x, dim=None):
    return F.squeeze(x, dim)


_COPIES = {
    "AliasCopy": lambda x: x, "AsStridedCopy": lambda x, *a: get_functor("AsStrided")(x, *a),
    "DetachCopy": lambda x: x.detach(), "ExpandCopy": _expand_copy, "PermuteCopy": lambda x, d: F.permute(x, d),
    "SelectCopy": select, "SliceCopy": _slice, "SplitCopy": lambda x, *a: F.split(x, *a),
    "SplitWithSizesCopy": split_with_sizes, "SqueezeCopy": _squeeze, "TCopy": lambda x: F.t(x),
    "TransposeCopy": lambda x, a, b: F.transpose(x, a, b), "UnbindCopy": lambda x, d=0: F.unbind(x, d),
    "UnfoldCopy": lambda x, *a: get_functor("UnfoldTensor")(x, *a),
    "UnsqueezeCopy": lambda x, d: F.unsqueeze(x, d), "ViewCopy": lambda x, s: F.reshape(x, s),
    "NarrowCopy": lambda x, *a: F.narrow(x, *a),
}
for _name, _view in _COPIES.items():
    composite(_name)(_copy_of(_view))


@composite("Detach")
def detach(x):
    """``detach(input)``: ``input.detach()``."""
    return x.detach()


@composite("DetachInplace")
def detach_(x):
    """``detach_(input)``: ``input.detach_()``."""
    return x.detach_()


@composite("AsStridedInplace")
def as_strided_(x, size, stride, storage_offset=None):
    """``as_strided_(input, size, stride, storage_offset=None)``: ``input.as_strided_(...)``."""
    return x.as_strided_(size, stride, storage_offset)


@composite("ResizeAsInplace")
def resize_as_(x, the_template):
    """``resize_as_(input, the_template)``: ``input.resize_as_(the_template)``."""
    return x.resize_as_(the_template)


Tensor.T = property(_reversed_dims)
Tensor.is_contiguous = _is_contiguous


# ---- view ------------------------------------------------------------------------------------------
_VIEW_ERROR = ("view: view size is not compatible with input tensor's size and stride (at least one dimension "
               "spans across two contiguous subspaces). Use .reshape(...) instead.")


@functor("View")
class ViewFunctor:
    """``view(input, shape)``: ``reshape`` that never copies (Note [View never copies] in framework/strides.py)."""

    def __init__(self):
        self.reshape = get_functor("Reshape")

    def __call__(self, x, shape):
        a = x._array
        if type(a) is np.ndarray and not a.flags.c_contiguous and not viewable(a, shape):
            raise RuntimeError(_VIEW_ERROR)
        return self.reshape(x, shape)
