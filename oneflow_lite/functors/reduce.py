"""Functors of the reductions, scans and sorts (``sum`` is in functors/math.py).

``dim`` is an int or a tuple of ints where PyTorch takes one (None or an empty
tuple reduces every dim), negative dims count from the end, ``keepdim`` keeps
the reduced dims as size 1. The op attrs of a call (non-negative dims) are made
once per distinct (ndim, dim, keepdim, ...) and reused.

Dtypes follow PyTorch: ``sum`` / ``prod`` / ``cumsum`` / ``cumprod`` of integer
and bool tensors are int64 unless ``dtype=`` says otherwise (the input is cast to
it first); ``mean``, ``var``, ``std`` and ``norm`` need a floating input;
``logsumexp`` of integers is the default float dtype; ``all`` / ``any`` give bool
(uint8 for uint8 input); ``max`` / ``min`` / ``amax`` / ``amin`` / ``sort`` /
``topk`` keep the dtype; indices are int64.

``max(input, dim)``, ``min(input, dim)``, ``sort`` and ``topk`` return named tuples
``(values, indices)``: ``flow.return_types.max`` and friends, as PyTorch's
``torch.return_types``.
"""

from __future__ import annotations

import collections

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import _wrap_dim
from oneflow_lite.functors.promotion import TORCH_NAMES, cast, get_default_dtype
from oneflow_lite.functors.registry import composite, functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch

_int64 = dt.int64
_CACHE_SIZE = 1024


def _named_tuple(name):
    cls = collections.namedtuple(name, ("values", "indices"))
    cls.__module__ = "oneflow_lite.return_types"
    cls.__qualname__ = name
    cls.__repr__ = lambda self: f"oneflow_lite.return_types.{name}(\nvalues={self[0]!r},\nindices={self[1]!r})"
    return cls


class return_types:
    """Named tuples ``(values, indices)`` returned by ``max`` / ``min`` with a dim, ``sort`` and ``topk``."""

    max = _named_tuple("max")
    min = _named_tuple("min")
    sort = _named_tuple("sort")
    topk = _named_tuple("topk")


def reduce_dims(name: str, ndim: int, dim) -> tuple:
    """The non-negative reduced dims of ``dim`` (None or empty: every dim); errors name ``name``."""
    if not dim:
        return tuple(range(ndim))
    axes = []
    for d in dim:
        a = _wrap_dim(d, ndim, name)
        if not ndim:
            a = 0  # a 0-d tensor's dims -1 and 0 are the same
        if a in axes:
            raise RuntimeError(f"{name}(): dim {a} appears multiple times in the list of dims")
        axes.append(a)
    return tuple(axes) if ndim else ()


def _reduce_attrs(cache, name, ndim, dim, keepdim, extra=()):
    """The ``AttrMap`` ``{axis, keepdims, **extra}`` of a call, made once per distinct arguments."""
    key = (ndim, dim, keepdim, extra)
    attrs = cache.get(key)
    if attrs is None:
        values = {"axis": reduce_dims(name, ndim, dim), "keepdims": keepdim}
        values.update(extra)
        if len(cache) >= _CACHE_SIZE:
            cache.clear()
        attrs = cache[key] = AttrMap(values)
    return attrs


def _reduce_op(op_type):
    return OpBuilder(op_type).input("input_tensor").output("output_tensor").build()


def _empty_check(name, x, dim):
    """PyTorch's error for a reduction without identity over every dim of an empty tensor."""
    if not dim and x._meta.numel == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           f"reduction dim with the 'dim' argument.")


def _accumulating_dtype(x, dtype):
    """``dtype``, or int64 for integer and bool inputs (sum, prod, cumsum, cumprod)."""
    if dtype is not None:
        return dtype
    d = x._meta.dtype
    return d if d.is_floating_point else _int64


# ---- mean, prod -----------------------------------------------------------------------------------
@functor("ReduceMean")
class ReduceMeanFunctor:
    """``mean(input, dim=None, keepdim=False, *, dtype=None)``: floating inputs only (or a floating ``dtype``)."""

    def __init__(self):
        self.op = _reduce_op("reduce_mean")
        self._attrs = {}

    def __call__(self, x, dim=None, keepdim=False, dtype=None):
        if dtype is not None:
            if not dtype.is_floating_point:
                raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either a floating "
                                   f"point or complex dtype. Got: {TORCH_NAMES[dtype]}")
            x = cast(x, dtype)
        elif not x._meta.dtype.is_floating_point:
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                               f"complex dtype. Got: {TORCH_NAMES[x._meta.dtype]}")
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, "mean", x._meta.ndim, dim, keepdim))[0]


@functor("ReduceProd")
class ReduceProdFunctor:
    """``prod(input, dim=None, keepdim=False, *, dtype=None)``: one dim, or every dim when None."""

    def __init__(self):
        self.op = _reduce_op("reduce_prod")
        self._attrs = {}

    def __call__(self, x, dim=None, keepdim=False, dtype=None):
        x = cast(x, _accumulating_dtype(x, dtype))
        dims = None if dim is None else (dim,)
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, "prod", x._meta.ndim, dims, keepdim))[0]


# ---- max, min, amax, amin, argmax, argmin ----------------------------------------------------------
class _Extreme:
    """``max(input)``: the largest element as a 0-d tensor (an error for an empty tensor)."""

    name = op_type = ""

    def __init__(self):
        self.op = _reduce_op(self.op_type)
        self._attrs = {}

    def __call__(self, x):
        _empty_check(self.name, x, None)
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, self.name, x._meta.ndim, None, False))[0]


@functor("Max")
class MaxFunctor(_Extreme):
    name, op_type = "max", "reduce_max"


@functor("Min")
class MinFunctor(_Extreme):
    name, op_type = "min", "reduce_min"


class _ExtremeDim:
    """``max(input, dim, keepdim=False)``: named tuple (values, indices) of the first extreme along ``dim``."""

    name = op_type = ""
    result = None

    def __init__(self):
        self.op = OpBuilder(self.op_type).input("input").output("values").output("indices").build()
        self._attrs = {}

    def __call__(self, x, dim, keepdim=False):
        d = _wrap_dim(dim, x._meta.ndim, self.name)
        return self.result(*dispatch(self.op, (x,), cached_attrs(self._attrs, ("dim", "keepdim"), (d, keepdim))))


@functor("MaxDim")
class MaxDimFunctor(_ExtremeDim):
    name, op_type, result = "max", "reduce_max_dim", return_types.max


@functor("MinDim")
class MinDimFunctor(_ExtremeDim):
    name, op_type, result = "min", "reduce_min_dim", return_types.min


class _AExtreme:
    """``amax(input, dim=(), keepdim=False)``: the max over ``dim`` (every dim when empty)."""

    name = op_type = ""

    def __init__(self):
        self.op = _reduce_op(self.op_type)
        self._attrs = {}

    def __call__(self, x, dim=(), keepdim=False):
        _empty_check(self.name, x, dim)
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, self.name, x._meta.ndim, dim, keepdim))[0]


@functor("Amax")
class AmaxFunctor(_AExtreme):
    name, op_type = "amax", "reduce_max"


@functor("Amin")
class AminFunctor(_AExtreme):
    name, op_type = "amin", "reduce_min"


class _ArgExtreme:
    """``argmax(input, dim=None, keepdim=False)``: int64 index of the first extreme; ``dim=None`` flattens."""

    name = ""

    def __init__(self):
        self.op = OpBuilder(self.name).input("in").output("out").build()
        self._attrs = {}
        self._flat = {k: AttrMap({"flatten": True, "keepdim": k}) for k in (False, True)}

    def __call__(self, x, dim=None, keepdim=False):
        if dim is None:
            attrs = self._flat[keepdim]
        else:
            attrs = cached_attrs(self._attrs, ("dim", "keepdim"), (_wrap_dim(dim, x._meta.ndim, self.name), keepdim))
        return dispatch(self.op, (x,), attrs)[0]


@functor("ArgMax")
class ArgMaxFunctor(_ArgExtreme):
    name = "argmax"


@functor("ArgMin")
class ArgMinFunctor(_ArgExtreme):
    name = "argmin"


# ---- var, std, logsumexp, norm ----------------------------------------------------------------------
class _VarStd:
    """``var(input, dim=None, unbiased=None, keepdim=False, *, correction=None)``: the sum of squared
    deviations over ``N - correction``; ``unbiased=False`` is ``correction=0``, the default is 1."""

    name = op_type = ""

    def __init__(self):
        self.op = _reduce_op(self.op_type)
        self._attrs = {}

    def __call__(self, x, dim=None, unbiased=None, keepdim=False, correction=None):
        d = x._meta.dtype
        if not d.is_floating_point:
            raise RuntimeError(f"{self.name}(): std and var only support floating point and complex dtypes, got "
                               f"{TORCH_NAMES[d]}")
        if correction is None:
            correction = 0.0 if unbiased is False else 1.0
        elif unbiased is not None:
            raise RuntimeError(f"{self.name}(): cannot pass both correction and unbiased arguments")
        elif type(correction) is bool:
            raise TypeError(f"{self.name}(): correction must be a number, not bool")
        extra = (("correction", float(correction)),)
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, self.name, x._meta.ndim, dim, keepdim, extra))[0]


@functor("Var")
class VarFunctor(_VarStd):
    name, op_type = "var", "reduce_var"


@functor("Std")
class StdFunctor(_VarStd):
    name, op_type = "std", "reduce_std"


@composite("VarUnbiased")
def var_unbiased(x, unbiased):
    """``var(input, unbiased)``: over every dim."""
    return F.var(x, None, unbiased)


@composite("StdUnbiased")
def std_unbiased(x, unbiased):
    """``std(input, unbiased)``: over every dim."""
    return F.std(x, None, unbiased)


@functor("LogSumExp")
class LogSumExpFunctor:
    """``logsumexp(input, dim, keepdim=False)``: ``log(sum(exp(input)))``, computed stably; integer and bool
    inputs give the default float dtype."""

    def __init__(self):
        self.op = _reduce_op("reduce_logsumexp")
        self._attrs = {}

    def __call__(self, x, dim, keepdim=False):
        d = x._meta.dtype
        if not d.is_floating_point:
            x = cast(x, get_default_dtype())
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, "logsumexp", x._meta.ndim, dim, keepdim))[0]


@functor("Norm")
class NormFunctor:
    """``norm(input, p="fro", dim=None, keepdim=False, *, dtype=None)`` as ``torch.norm``.

    A number ``p`` is the vector norm over ``dim`` (every dim when None):
    ``sum(|x|^p)^(1/p)``, the max / min of ``|x|`` for inf / -inf, the count of
    non-zeros for 0. ``"fro"`` (and ``p=None``) is the 2-norm over at most two
    dims. ``dtype`` casts the input first. The nuclear norm (``"nuc"``) is not
    supported.
    """

    def __init__(self):
        self.op = _reduce_op("vector_norm")
        self._attrs = {}

    def __call__(self, x, p=None, dim=None, keepdim=False, dtype=None):
        if p is None or type(p) is str:
            p = self._string_order("fro" if p is None else p, dim)
        elif type(p) is bool:
            raise TypeError("norm(): p must be a number or one of 'fro', 'nuc', not bool")
        d = x._meta.dtype
        if not d.is_floating_point:
            raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                               f"{TORCH_NAMES[d]}")
        if dtype is not None:
            if not dtype.is_floating_point:
                raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex. Got "
                                   f"{TORCH_NAMES[dtype]}")
            x = cast(x, dtype)
        extra = (("ord", float(p)),)
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, "norm", x._meta.ndim, dim, keepdim, extra))[0]

    @staticmethod
    def _string_order(p, dim):
        if p == "fro":
            if dim is not None and len(dim) > 2:
                raise RuntimeError(f"norm(): the 'fro' norm takes at most 2 dims, got dim={list(dim)}")
            return 2.0
        if p == "nuc":
            raise NotImplementedError("norm(): the nuclear norm (p='nuc') is not supported")
        raise RuntimeError(f"norm(): p must be a number, 'fro' or 'nuc', got {p!r}")


@functor("ReduceAll")
class ReduceAllFunctor:
    """``all(input, dim=None, keepdim=False)``: whether every element is non-zero (True for an empty one)."""

    op_type = "reduce_all"
    name = "all"

    def __init__(self):
        self.op = _reduce_op(self.op_type)
        self._attrs = {}

    def __call__(self, x, dim=None, keepdim=False):
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, self.name, x._meta.ndim, dim, keepdim))[0]


@functor("ReduceAny")
class ReduceAnyFunctor(ReduceAllFunctor):
    """``any(input, dim=None, keepdim=False)``: whether some element is non-zero (False for an empty one)."""

    op_type = "reduce_any"
    name = "any"


# ---- scans ---------------------------------------------------------------------------------------
class _Scan:
    """``cumsum(input, dim, *, dtype=None)``: integer and bool inputs accumulate in int64."""

    name = ""

    def __init__(self):
        self.op = OpBuilder(self.name).input("x").output("y").build()
        self._attrs = {}

    def __call__(self, x, dim, dtype=None):
        x = cast(x, _accumulating_dtype(x, dtype))
        d = _wrap_dim(dim, x._meta.ndim, self.name)
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("dim",), (d,)))[0]


@functor("Cumsum")
class CumsumFunctor(_Scan):
    name = "cumsum"


@functor("Cumprod")
class CumprodFunctor(_Scan):
    name = "cumprod"


# ---- sort, argsort, topk -------------------------------------------------------------------------
@functor("Sort")
class SortFunctor:
    """``sort(input, dim=-1, descending=False, *, stable=False)``: named tuple (values, indices). The sort is
    always stable (Note [Sort order] in kernels/cpu/reduce.py)."""

    def __init__(self):
        self.op = OpBuilder("sort").input("in").output("values").output("indices").build()
        self._attrs = {}

    def __call__(self, x, dim=-1, descending=False, stable=False):
        d = _wrap_dim(dim, x._meta.ndim, "sort")
        attrs = cached_attrs(self._attrs, ("dim", "descending"), (d, descending))
        return return_types.sort(*dispatch(self.op, (x,), attrs))


@functor("ArgSort")
class ArgSortFunctor:
    """``argsort(input, dim=-1, descending=False, *, stable=False)``: the int64 indices that sort ``input``."""

    def __init__(self):
        self.op = OpBuilder("arg_sort").input("in").output("out").build()
        self._attrs = {}

    def __call__(self, x, dim=-1, descending=False, stable=False):
        d = _wrap_dim(dim, x._meta.ndim, "argsort")
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("dim", "descending"), (d, descending)))[0]


@functor("TopK")
class TopKFunctor:
    """``topk(input, k, dim=-1, largest=True, sorted=True)``: named tuple (values, indices) of the ``k``
    largest (smallest) elements along ``dim``, always in sorted order."""

    def __init__(self):
        self.op = OpBuilder("topk").input("in").output("values").output("indices").build()
        self._attrs = {}

    def __call__(self, x, k, dim=-1, largest=True, sorted=True):
        d = _wrap_dim(dim, x._meta.ndim, "topk")
        attrs = cached_attrs(self._attrs, ("k", "dim", "largest", "sorted"), (k, d, largest, sorted))
        return return_types.topk(*dispatch(self.op, (x,), attrs))

