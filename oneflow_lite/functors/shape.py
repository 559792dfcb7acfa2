"""Shape functors: ``reshape`` / ``view``, ``transpose``, ``permute``, ``t``, ``slice``, ``narrow``,
``flatten``, ``unflatten``, ``squeeze``, ``unsqueeze``, ``expand`` / ``expand_as`` / ``broadcast_to``,
``repeat``, ``tile``, ``cat``, ``stack``, ``split``, ``chunk``, ``unbind``, ``flip``, ``roll``,
``tril``, ``triu``, ``pad``, ``contiguous``, ``clone``.

Memory: the ops PyTorch returns as views return NumPy views of the input on cpu,
sharing memory (and the version counter) with it (Note [Shape ops and views] in
kernels/cpu/shape.py); ``reshape`` and friends copy only when the input's strides
cannot express the new shape, e.g. after a transpose. ``view`` is an alias of
``reshape``: it never fails for a non-viewable input but copies, as ``reshape`` does.
Like PyTorch, ``flatten`` with nothing to flatten, ``t`` of a 0-d or 1-d tensor and
``contiguous`` of a contiguous tensor return the input itself.
"""

from __future__ import annotations

from math import copysign, prod

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.strides import viewable
from oneflow_lite.framework.tensor import Tensor, _wrap_dim
from oneflow_lite.functors.promotion import cast
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.interpreters.op_interp_util import dispatch

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
        if not sizes:
            raise RuntimeError("split_with_sizes expects at least one split size")
        return self.raw(x, sizes, _split_axis(x, dim, "split"))


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
