"""Shape functors: ``reshape`` / ``view``, ``transpose`` and ``slice``.

Memory: the results are NumPy views of the input on cpu (``reshape`` copies only
when the input's strides cannot express the new shape, e.g. after a transpose),
so they share memory with the input as PyTorch's views do.
"""

from __future__ import annotations

from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import _wrap_dim
from oneflow_lite.functors.registry import functor
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
