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
``torch.return_types`` (so do median, mode, kthvalue, cummax, aminmax, histogram
and the decompositions of functors/linalg.py).

Statistics and searching: ``median`` / ``nanmedian`` / ``mode`` / ``kthvalue`` /
``cummax`` / ``cummin`` / ``logcumsumexp`` (Note [Order statistics] in
ops/reduce.py), ``quantile`` / ``nanquantile`` (a sort, then a gather and lerp),
``nansum``, ``nanmean``, ``std_mean``, ``var_mean``, ``aminmax``, ``msort``,
``histc``, ``histogram``, ``bincount``, ``searchsorted``, ``bucketize``, ``unique``,
``unique_consecutive`` (value-dependent shapes: Note [Value-dependent shapes] in
ops/index.py), ``trapezoid``, ``cumulative_trapezoid``.
"""

from __future__ import annotations

import builtins
import collections
import functools
import math

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import Tensor, _wrap_dim
from oneflow_lite.functors.promotion import TORCH_NAMES, cast, cast_into, common_dtype, get_default_dtype
from oneflow_lite.functors.registry import composite, functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.autocast import fp32_function
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.common import broadcast_shapes

_int64 = dt.int64
_CACHE_SIZE = 1024


def _named_tuple(name, fields=("values", "indices")):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "oneflow_lite.return_types"
    cls.__qualname__ = name

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"oneflow_lite.return_types.{name}(\n{body})"
    cls.__repr__ = __repr__
    return cls


class return_types:
    """Named tuples returned by functions with several results (PyTorch's ``torch.return_types``)."""

    max = _named_tuple("max")
    min = _named_tuple("min")
    sort = _named_tuple("sort")
    topk = _named_tuple("topk")
    median = _named_tuple("median")
    nanmedian = _named_tuple("nanmedian")
    mode = _named_tuple("mode")
    kthvalue = _named_tuple("kthvalue")
    cummax = _named_tuple("cummax")
    cummin = _named_tuple("cummin")
    aminmax = _named_tuple("aminmax", ("min", "max"))
    histogram = _named_tuple("histogram", ("hist", "bin_edges"))
    histogramdd = _named_tuple("histogramdd", ("hist", "bin_edges"))
    slogdet = _named_tuple("slogdet", ("sign", "logabsdet"))
    linalg_slogdet = _named_tuple("linalg_slogdet", ("sign", "logabsdet"))
    qr = _named_tuple("qr", ("Q", "R"))
    linalg_qr = _named_tuple("linalg_qr", ("Q", "R"))
    svd = _named_tuple("svd", ("U", "S", "V"))
    linalg_svd = _named_tuple("linalg_svd", ("U", "S", "Vh"))
    linalg_eigh = _named_tuple("linalg_eigh", ("eigenvalues", "eigenvectors"))
    triangular_solve = _named_tuple("triangular_solve", ("solution", "cloned_coefficient"))
    lu_unpack = _named_tuple("lu_unpack", ("P", "L", "U"))
    linalg_lu = _named_tuple("linalg_lu", ("P", "L", "U"))
    linalg_lu_factor = _named_tuple("linalg_lu_factor", ("LU", "pivots"))
    linalg_lu_factor_ex = _named_tuple("linalg_lu_factor_ex", ("LU", "pivots", "info"))
    linalg_inv_ex = _named_tuple("linalg_inv_ex", ("inverse", "info"))
    linalg_cholesky_ex = _named_tuple("linalg_cholesky_ex", ("L", "info"))
    linalg_solve_ex = _named_tuple("linalg_solve_ex", ("result", "info"))
    linalg_lstsq = _named_tuple("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
    geqrf = _named_tuple("geqrf", ("a", "tau"))


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
    dims. ``dtype`` casts the input first. ``"nuc"`` is the nuclear norm (the sum of
    the singular values) over two dims (a 2-D input when ``dim`` is None).
    """

    def __init__(self):
        self.op = _reduce_op("vector_norm")
        self._attrs = {}

    def __call__(self, x, p=None, dim=None, keepdim=False, dtype=None):
        if p is None or type(p) is str:
            p = self._string_order("fro" if p is None else p, dim)
            if p == "nuc":
                return self._nuclear(x, dim, keepdim, dtype)
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
            if dt.promote_types(d, dtype) is not dtype:
                raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({TORCH_NAMES[d]}) should be "
                                   f"convertible without narrowing to the specified dtype ({TORCH_NAMES[dtype]})")
            x = cast(x, dtype)
        extra = (("ord", float(p)),)
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, "norm", x._meta.ndim, dim, keepdim, extra))[0]

    @staticmethod
    def _nuclear(x, dim, keepdim, dtype):
        if dtype is not None:
            x = cast(x, dtype)
        if dim is None:
            if x._meta.ndim != 2:
                dims = " ".join(str(i) for i in range(x._meta.ndim))
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims} (the nuclear norm of a "
                                   f"{x._meta.ndim}-D tensor needs dim)")
            dim = (0, 1)
        return F.nuclear_norm(x, dim, keepdim)

    @staticmethod
    def _string_order(p, dim):
        if p == "fro":
            if dim is not None and len(dim) > 2:
                raise RuntimeError(f"norm(): the 'fro' norm takes at most 2 dims, got dim={list(dim)}")
            return 2.0
        if p == "nuc":
            return p
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
        if dim is not None and not len(dim) and self.op_type != "hash_tensor":
            # no dim reduced (PyTorch 2.x): each element's truth, in the dtype all / any give
            truth = F.ne(x, 0)
            return cast(truth, x._meta.dtype) if x._meta.dtype is dt.uint8 else truth
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, self.name, x._meta.ndim, dim, keepdim))[0]


@functor("ReduceAny")
class ReduceAnyFunctor(ReduceAllFunctor):
    """``any(input, dim=None, keepdim=False)``: whether some element is non-zero (False for an empty one)."""

    op_type = "reduce_any"
    name = "any"


@functor("HashTensor")
class HashTensorFunctor(ReduceAllFunctor):
    """``hash_tensor(input, dim=None, keepdim=False, *, mode=0)``: PyTorch's xor hash, a uint64 per reduced
    slice: each element upcast to float64 / int64 (uint64 for bool and unsigned), its bits xor-ed."""

    op_type = "hash_tensor"
    name = "hash_tensor"

    def __call__(self, x, dim=None, keepdim=False, mode=0):
        if mode != 0:
            raise RuntimeError(f"Unknown hash_tensor mode: {mode} (only mode 0, the xor reduction, exists)")
        _empty_check(self.name, x, dim)
        return super().__call__(x, dim, keepdim)


# ---- scans ---------------------------------------------------------------------------------------
class _Scan:
    """``cumsum(input, dim, *, dtype=None)``: integer and bool inputs accumulate in int64."""

    name = ""

    def __init__(self):
        self.op = OpBuilder(self.name).input("x").output("y").build()
        self._attrs = {}

    def __call__(self, x, dim, dtype=None, inplace=False):
        if inplace and dtype is not None and dtype is not x._meta.dtype:
            raise RuntimeError(f"{self.name}_: Bad in-place call: input tensor dtype {x._meta.dtype.name} and output "
                               f"tensor dtype {dtype.name} should match")
        src = cast(x, _accumulating_dtype(x, dtype) if not inplace or dtype is not None else x._meta.dtype)
        d = _wrap_dim(dim, src._meta.ndim, self.name)
        y = dispatch(self.op, (src,), cached_attrs(self._attrs, ("dim",), (d,)))[0]
        return cast_into(y, x) if inplace else y


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



# ---- aminmax, nansum, nanmean, std_mean, var_mean -------------------------------------------------------
@composite("Aminmax")
def aminmax(x, dim=None, keepdim=False):
    """``aminmax(input, *, dim=None, keepdim=False)``: named tuple (min, max) over ``dim`` (every dim when None)."""
    shape = x._meta.shape
    if dim is None:
        empty = x._meta.numel == 0
    else:
        d = _wrap_dim(dim, len(shape), "aminmax")
        empty = bool(shape) and shape[d] == 0
    if empty:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    dims = () if dim is None else (dim,)
    return return_types.aminmax(F.amin(x, dims, keepdim), F.amax(x, dims, keepdim))


def _without_nan(x):
    """``x`` with its NaNs as 0 (x itself for non-floating dtypes)."""
    if not x._meta.dtype.is_floating_point:
        return x
    return F.where(F.isnan(x), 0.0, x)


@composite("Nansum")
def nansum(x, dim=None, keepdim=False, dtype=None):
    """``nansum(input, dim=None, keepdim=False, *, dtype=None)``: ``sum`` treating NaN as 0."""
    return F.sum(_without_nan(x), dim, keepdim, dtype=dtype)


@composite("Nanmean")
def nanmean(x, dim=None, keepdim=False, dtype=None):
    """``nanmean(input, dim=None, keepdim=False, *, dtype=None)``: the mean of the non-NaN elements."""
    d = x._meta.dtype if dtype is None else dtype
    for t in (x._meta.dtype, d):
        if not t.is_floating_point:
            raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                               f"{TORCH_NAMES[t]}")
    x = cast(x, d)
    count = F.sum(F.logical_not(F.isnan(x)), dim, keepdim, dtype=d)
    return F.div(F.sum(_without_nan(x), dim, keepdim), count)


def _with_mean(name):
    def fn(x, dim=None, unbiased=None, keepdim=False, correction=None):
        spread = getattr(F, name)(x, dim, unbiased, keepdim, correction=correction)
        return spread, F.mean(x, dim, keepdim)
    fn.__name__ = fn.__qualname__ = name + "_mean"
    fn.__doc__ = (f"``{name}_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None)``: the tuple "
                  f"({name}, mean) over ``dim``.")
    return fn


std_mean = composite("StdMean")(_with_mean("std"))
var_mean = composite("VarMean")(_with_mean("var"))
composite("StdMeanUnbiased")(lambda x, unbiased: std_mean(x, None, unbiased))
composite("VarMeanUnbiased")(lambda x, unbiased: var_mean(x, None, unbiased))


# ---- median, nanmedian, mode, kthvalue, cummax, cummin, logcumsumexp (Note [Order statistics]) ------------
class _Median:
    """``median(input)``: the lower median of every element (NaN when there is one); ``nanmedian`` ignores
    the NaNs."""

    ignore_nan = False

    def __init__(self):
        self.op = _reduce_op("reduce_median")
        self._attrs = {}

    def __call__(self, x):
        return dispatch(self.op, (x,), _reduce_attrs(self._attrs, "median", x._meta.ndim, None, False,
                                                     (("ignore_nan", self.ignore_nan),)))[0]


@functor("Median")
class MedianFunctor(_Median):
    pass


@functor("NanMedian")
class NanMedianFunctor(_Median):
    ignore_nan = True


class _AlongDim:
    """``median(input, dim=-1, keepdim=False)`` and friends: named tuple (values, indices) along ``dim``."""

    op_type = name = ""
    result = None
    extra = ()  # (attr name, value) pairs fixed per function

    def __init__(self):
        self.op = OpBuilder(self.op_type).input("input").output("values").output("indices").build()
        self._attrs = {}

    def run(self, x, dim, keepdim, more=()):
        d = _wrap_dim(dim, x._meta.ndim, self.name)
        names = ("dim", "keepdim") + tuple(n for n, _ in self.extra) + tuple(n for n, _ in more)
        values = (d, keepdim) + tuple(v for _, v in self.extra) + tuple(v for _, v in more)
        return self.result(*dispatch(self.op, (x,), cached_attrs(self._attrs, names, values)))

    def __call__(self, x, dim=-1, keepdim=False):
        return self.run(x, dim, keepdim)


@functor("MedianDim")
class MedianDimFunctor(_AlongDim):
    op_type, name, result, extra = "median_dim", "median", return_types.median, (("ignore_nan", False),)


@functor("NanMedianDim")
class NanMedianDimFunctor(_AlongDim):
    op_type, name, result, extra = "median_dim", "nanmedian", return_types.nanmedian, (("ignore_nan", True),)


@functor("Mode")
class ModeFunctor(_AlongDim):
    op_type, name, result = "mode", "mode", return_types.mode


@functor("Kthvalue")
class KthvalueFunctor(_AlongDim):
    """``kthvalue(input, k, dim=-1, keepdim=False)``: the k-th smallest element along ``dim`` (1-based)."""

    op_type, name, result = "kthvalue", "kthvalue", return_types.kthvalue

    def __call__(self, x, k, dim=-1, keepdim=False):
        return self.run(x, dim, keepdim, (("k", k),))


class _CumulativeExtreme:
    """``cummax(input, dim)``: named tuple (values, indices) of the running max along ``dim``."""

    name = ""
    result = None

    def __init__(self):
        self.op = OpBuilder(self.name).input("x").output("values").output("indices").build()
        self._attrs = {}

    def __call__(self, x, dim):
        d = _wrap_dim(dim, x._meta.ndim, self.name)
        return self.result(*dispatch(self.op, (x,), cached_attrs(self._attrs, ("dim",), (d,))))


@functor("Cummax")
class CummaxFunctor(_CumulativeExtreme):
    name, result = "cummax", return_types.cummax


@functor("Cummin")
class CumminFunctor(_CumulativeExtreme):
    name, result = "cummin", return_types.cummin


@functor("Logcumsumexp")
class LogcumsumexpFunctor:
    """``logcumsumexp(input, dim)``: ``log(cumsum(exp(input)))`` along ``dim``, computed stably."""

    def __init__(self):
        self.op = OpBuilder("logcumsumexp").input("x").output("y").build()
        self._attrs = {}

    def __call__(self, x, dim):
        d = _wrap_dim(dim, x._meta.ndim, "logcumsumexp")
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("dim",), (d,)))[0]


@composite("Msort")
def msort(x):
    """``msort(input)``: ``sort(input, dim=0).values``."""
    return F.sort(x, 0)[0]


# ---- quantile, nanquantile --------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_checks(name, x, q, interpolation):
    d = x._meta.dtype
    if d not in (dt.float32, dt.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if x._meta.numel == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    if q._meta.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if q._meta.dtype is not d:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if q._meta.device.device_type.has_storage:
        values = q.numpy()
        if values.size and not ((values >= 0).all() and (values <= 1).all()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")


def _quantile_ranks(sorted_x, q, ignore_nan):
    """The (fractional) sorted position of each quantile in each row: ``q * (n - 1)`` with n the row's
    size (its count of non-NaN values when ``ignore_nan``); the last position (a NaN) when a row holds NaN
    (every value is NaN, with ``ignore_nan``)."""
    n = sorted_x._meta.shape[-1]
    d = sorted_x._meta.dtype
    if ignore_nan:
        valid = F.sum(F.logical_not(F.isnan(sorted_x)), -1, True, dtype=d)
        ranks = F.mul(q, F.sub(valid, 1.0))
        return F.where(F.eq(valid, 0.0), float(n - 1), ranks)
    last_is_nan = F.isnan(F.narrow(sorted_x, -1, n - 1, 1))  # NaN sorts last
    return F.where(last_is_nan, float(n - 1), F.mul(q, float(n - 1)))


def _interpolate(sorted_x, ranks, interpolation):
    if interpolation in ("lower", "higher", "nearest"):
        fn = {"lower": F.floor, "higher": F.ceil, "nearest": F.round}[interpolation]
        return F.gather(sorted_x, -1, F.cast(fn(ranks), _int64))
    below, above = F.floor(ranks), F.ceil(ranks)
    weight = F.full_like(ranks, 0.5) if interpolation == "midpoint" else F.sub(ranks, below)
    low = F.gather(sorted_x, -1, F.cast(below, _int64))
    high = F.gather(sorted_x, -1, F.cast(above, _int64))
    return F.lerp(low, high, weight)


def _quantile(name, ignore_nan, x, q, dim=None, keepdim=False, interpolation="linear"):
    """Sort along ``dim`` (of the flattened input when None), pick or interpolate the sorted values at the
    quantiles' ranks, put the quantiles' dim first (PyTorch's layout)."""
    scalar = not isinstance(q, Tensor)
    if scalar:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        q = F.full((1,), float(q), dtype=x._meta.dtype, device=x._meta.device)
    _quantile_checks(name, x, q, interpolation)
    shape = x._meta.shape
    if dim is None:
        rows, kept = F.reshape(x, (1, -1)), (1,) * len(shape)
    else:
        d = _wrap_dim(dim, len(shape), name)
        order = [i for i in range(len(shape)) if i != d] + [d]
        rows = F.permute(x, order) if shape else F.reshape(x, (1,))
        kept = tuple(1 if i == d else s for i, s in enumerate(shape))
    sorted_x = F.sort(rows, -1)[0]
    lead = tuple(sorted_x._meta.shape[:-1])
    ranks = _quantile_ranks(sorted_x, F.reshape(q, (1,) * len(lead) + (-1,)), ignore_nan)
    out = _interpolate(sorted_x, F.expand(ranks, lead + (q._meta.numel,)), interpolation)
    out = F.permute(out, [len(lead)] + list(range(len(lead))))  # quantiles first
    if dim is None:
        out = F.reshape(out, (-1,) + kept) if keepdim else F.reshape(out, (-1,))
    elif keepdim:
        out = F.reshape(out, (-1,) + kept)
    return F.reshape(out, tuple(out._meta.shape[1:])) if scalar or q._meta.ndim == 0 else out


composite("Quantile")(fp32_function(functools.partial(_quantile, "quantile", False)))
composite("NanQuantile")(fp32_function(functools.partial(_quantile, "nanquantile", True)))


# ---- histc, histogram, bincount, searchsorted, bucketize, unique -----------------------------------------
def _check_has_data(name, t, what):
    if not t._meta.device.device_type.has_storage:
        raise RuntimeError(f"{name}: the output shape depends on the values of {what}, which a tensor on "
                           f"'{t._meta.device}' does not hold")


@functor("Histc")
class HistcFunctor:
    """``histc(input, bins=100, min=0, max=0)``: counts in ``bins`` equal bins over [min, max] (the data's range
    when both are equal), in the input's floating dtype."""

    def __init__(self):
        self.op = OpBuilder("histc").input("input").output("out").build()
        self._attrs = {}

    def __call__(self, x, bins=100, min=0.0, max=0.0):
        attrs = cached_attrs(self._attrs, ("bins", "min", "max"), (bins, float(min), float(max)))
        return dispatch(self.op, (x,), attrs)[0]


@functor("Histogram")
class HistogramFunctor:
    """``histogram(input, bins, *, range=None, weight=None, density=False)``: named tuple (hist, bin_edges);
    ``bins`` is a count of equal bins (over ``range``, else the data's) or a 1-D tensor of edges."""

    def __init__(self):
        self.ops = {}
        self._attrs = {}

    def _op(self, with_bins, with_weight):
        key = (with_bins, with_weight)
        op = self.ops.get(key)
        if op is None:
            b = OpBuilder("histogram").input("input")
            if with_bins:
                b = b.input("bins")
            if with_weight:
                b = b.input("weight")
            op = self.ops[key] = b.output("hist").output("bin_edges").build()
        return op

    def __call__(self, x, bins, range=None, weight=None, density=False):
        edges = isinstance(bins, Tensor)
        if range is not None and len(range) != 2:
            raise RuntimeError(f"torch.histogram(): range should have 2 elements, got {len(range)}")
        lo, hi = (0.0, 0.0) if range is None else range
        attrs = cached_attrs(self._attrs, ("bin_count", "min", "max", "has_range", "density", "with_edges"),
                             (1 if edges else bins, float(lo), float(hi), range is not None and not edges, density,
                              edges))
        inputs = (x,) + ((bins,) if edges else ()) + (() if weight is None else (weight,))
        return return_types.histogram(*dispatch(self._op(edges, weight is not None), inputs, attrs))


@functor("Bincount")
class BincountFunctor:
    """``bincount(input, weights=None, minlength=0)``: the count (or the weight sum) of each value of a 1-D
    non-negative integer tensor, ``max(input) + 1`` long at least (``minlength``)."""

    def __init__(self):
        self.op = OpBuilder("bincount").input("input").output("out").build()
        self.op_weights = OpBuilder("bincount").input("input").input("weights").output("out").build()
        self._attrs = {}

    def __call__(self, x, weights=None, minlength=0):
        if minlength < 0:
            raise RuntimeError("bincount: minlength should be >= 0")
        m = x._meta
        if m.ndim != 1 or m.dtype.is_floating_point or m.dtype is dt.bool_:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        _check_has_data("bincount", x, "input")
        size = minlength
        if m.numel:
            if F.amin(x).item() < 0:
                raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
            size = builtins.max(minlength, F.amax(x).item() + 1)
        attrs = cached_attrs(self._attrs, ("size",), (size,))
        if weights is None:
            return dispatch(self.op, (x,), attrs)[0]
        return dispatch(self.op_weights, (x, weights), attrs)[0]


@functor("Searchsorted")
class SearchsortedFunctor:
    """``searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None)``: the
    index in the innermost dim of ``sorted_sequence`` where each value would be inserted to keep it sorted
    (after equal elements with ``right`` / ``side='right'``); a number gives a 0-d result."""

    def __init__(self):
        self.op = OpBuilder("searchsorted").input("sorted_sequence").input("values").output("out").build()
        self.op_sorter = (OpBuilder("searchsorted").input("sorted_sequence").input("values").input("sorter")
                          .output("out").build())
        self._attrs = {}

    def __call__(self, seq, values, out_int32=False, right=False, side=None, sorter=None):
        if side is not None:
            if side not in ("left", "right"):
                raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
            if right and side == "left":
                raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of "
                                   "left while right was True")
            right = side == "right"
        if not isinstance(values, Tensor):
            values = F.full((), values, dtype=seq._meta.dtype, device=seq._meta.device)
        d = common_dtype(seq, values)
        attrs = cached_attrs(self._attrs, ("right", "out_int32"), (right, out_int32))
        inputs = (cast(seq, d), cast(values, d))
        if sorter is None:
            return dispatch(self.op, inputs, attrs)[0]
        return dispatch(self.op_sorter, inputs + (sorter,), attrs)[0]


@composite("Bucketize")
def bucketize(x, boundaries, out_int32=False, right=False):
    """``bucketize(input, boundaries, *, out_int32=False, right=False)``: the bucket of each element of
    ``input`` among the 1-D sorted ``boundaries``: ``searchsorted(boundaries, input)``."""
    if boundaries._meta.ndim != 1:
        raise RuntimeError(f"bucketize: boundaries tensor must be 1 dimension, but got dim({boundaries._meta.ndim})")
    return F.searchsorted(boundaries, x, out_int32=out_int32, right=right)


class _Unique:
    """``unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None)``: the sorted unique
    elements (or slices along ``dim``), with the inverse indices and the counts when asked."""

    consecutive = False
    name = "unique"

    def __init__(self):
        self.count_op = OpBuilder("unique_count").input("input").output("out").build()
        self.op = OpBuilder("unique").input("input").output("output").output("inverse").output("counts").build()
        self._attrs = {}

    def run(self, x, return_inverse, return_counts, dim):
        _check_has_data(self.name, x, "input")
        names = ("dim", "has_dim", "consecutive")
        values = (0 if dim is None else dim, dim is not None, self.consecutive)
        count = dispatch(self.count_op, (x,), cached_attrs(self._attrs, names, values))[0].item()
        out, inverse, counts = dispatch(self.op, (x,), cached_attrs(self._attrs, names + ("count",),
                                                                    values + (count,)))
        if not (return_inverse or return_counts):
            return out
        return (out,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())

    def __call__(self, x, sorted=True, return_inverse=False, return_counts=False, dim=None):
        return self.run(x, return_inverse, return_counts, dim)


@functor("Unique")
class UniqueFunctor(_Unique):
    pass


@functor("UniqueConsecutive")
class UniqueConsecutiveFunctor(_Unique):
    """``unique_consecutive(input, return_inverse=False, return_counts=False, dim=None)``: one element of each
    run of equal consecutive elements (or slices along ``dim``)."""

    consecutive = True
    name = "unique_consecutive"

    def __call__(self, x, return_inverse=False, return_counts=False, dim=None):
        return self.run(x, return_inverse, return_counts, dim)


@composite("Argwhere")
def argwhere(x):
    """``argwhere(input)``: the (n, ndim) int64 coordinates of the non-zero elements (``nonzero``)."""
    return F.nonzero(x)


# ---- trapezoid, cumulative_trapezoid ------------------------------------------------------------------
# Note [Trapezoid spacing]
# As PyTorch: ``dim`` is wrapped against y, then x gives the spacings along that (positive) dim of x itself: a
# 1-D x is laid along ``dim`` (one value per sample); an x with fewer dims than y is left-padded with 1s; an x
# with as many dims or more is used as it is. The spacings and y's pair sums broadcast together afterwards, and
# the sum / cumsum runs along ``dim`` of that broadcast (so an x of more dims than y adds leading dims).
def _pairs(t, d, op):
    """``op(t[1:], t[:-1])`` along ``d`` (empty when ``t`` has fewer than two entries there: Python slicing)."""
    n = t._meta.shape[d]
    k = max(n - 1, 0)
    return op(F.narrow(t, d, min(n, 1), k), F.narrow(t, d, 0, k))


def _spacing(name, x, ndim, d, n):
    """The spacings of the sample points ``x`` along ``d`` (Note [Trapezoid spacing])."""
    xm = x._meta
    if xm.ndim == 0:
        raise RuntimeError(f"{name}: diff expects input to be at least one-dimensional (x is 0-d)")
    if xm.ndim == 1:
        if xm.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        x = F.reshape(x, (1,) * d + (n,) + (1,) * (ndim - 1 - d))
    elif xm.ndim < ndim:
        x = F.reshape(x, (1,) * (ndim - xm.ndim) + tuple(xm.shape))
    return _pairs(x, d, F.sub)


def _trapezoid_parts(name, y, x, dx, dim):
    """(the sum terms ``(y[1:] + y[:-1]) / 2`` times the spacing, the dim) of the trapezoid rule; (None, dim)
    for ``trapezoid`` of no samples (zeros of y's dtype, before any other check, as PyTorch)."""
    ndim = y._meta.ndim
    if ndim == 0:
        raise IndexError(f"{name}: Dimension out of range (expected to be in range of [-1, 0], but got {dim})")
    d = _wrap_dim(dim, ndim, name)
    n = y._meta.shape[d]
    if n == 0 and name == "trapezoid":
        return None, d
    if y._meta.dtype is dt.bool_ or (x is not None and x._meta.dtype is dt.bool_):
        what = "`y`" if x is None else "`x` or `y`"
        raise RuntimeError(f"{name}: received a bool input for {what}, but bool is not supported")
    if isinstance(dx, bool):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
    if not y._meta.dtype.is_floating_point:
        y = cast(y, get_default_dtype())
    mids = F.mul(_pairs(y, d, F.add), 0.5)
    if x is None:
        return F.mul(mids, 1.0 if dx is None else dx), d
    if not x._meta.dtype.is_floating_point:  # spacings of integer points: differences that do not wrap
        x = cast(x, mids._meta.dtype)
    spacing = _spacing(name, x, ndim, d, n)
    broadcast_shapes(f"{name} (the spacings of x and the samples of y)", spacing._meta.shape, mids._meta.shape)
    return F.mul(mids, spacing), d


def _trapezoid(y, x, dx, dim):
    parts, d = _trapezoid_parts("trapezoid", y, x, dx, dim)
    if parts is None:
        shape = tuple(s for i, s in enumerate(y._meta.shape) if i != d)
        return F.zeros(shape, dtype=y._meta.dtype, device=y._meta.device)
    return F.sum(parts, d)


def _cumulative_trapezoid(y, x, dx, dim):
    parts, d = _trapezoid_parts("cumulative_trapezoid", y, x, dx, dim)
    return F.cumsum(parts, d)


@composite("Trapezoid")
def trapezoid(y, x, dim=-1):
    """``trapezoid(y, x, *, dim=-1)``: the trapezoid rule along ``dim`` at the points ``x`` (1-D, or shaped
    like ``y``)."""
    return _trapezoid(y, x, None, dim)


@composite("TrapezoidDx")
def trapezoid_dx(y, dx=None, dim=-1):
    """``trapezoid(y, *, dx=None, dim=-1)``: the trapezoid rule along ``dim`` for points spaced ``dx`` (1)."""
    return _trapezoid(y, None, dx, dim)


@composite("TrapzDx")
def trapz_dx(y, dx=1, dim=-1):
    """``trapz(y, *, dx=1, dim=-1)``: PyTorch's older spelling, whose ``dx`` is a float (a bool converts)."""
    return _trapezoid(y, None, float(dx), dim)


@composite("CumulativeTrapezoid")
def cumulative_trapezoid(y, x, dim=-1):
    """``cumulative_trapezoid(y, x, *, dim=-1)``: the running trapezoid rule along ``dim`` (one element fewer
    than ``y`` there)."""
    return _cumulative_trapezoid(y, x, None, dim)


@composite("CumulativeTrapezoidDx")
def cumulative_trapezoid_dx(y, dx=None, dim=-1):
    """``cumulative_trapezoid(y, *, dx=None, dim=-1)``: the running trapezoid rule for points spaced ``dx``."""
    return _cumulative_trapezoid(y, None, dx, dim)


# ---- [compat t1] isin, gradient, histogramdd -----------------------------------------------------------------
def _isin(elements, test_elements, invert):
    """Whether each element of ``elements`` equals one of ``test_elements`` (compared in their common dtype):
    a binary search of the sorted test elements, so the cost is O((E + T) log T)."""
    for t in (elements, test_elements):
        if t._meta.dtype is dt.bool_:
            raise RuntimeError("isin(): Unsupported input type encountered for isin(): Bool")
    d = dt.promote_types(elements._meta.dtype, test_elements._meta.dtype)
    m = elements._meta
    if test_elements._meta.numel == 0:
        found = F.zeros(m.shape, dtype=dt.bool_, device=m.device)
    else:
        ordered = F.sort(F.reshape(cast(test_elements, d), (-1,)))[0]
        values = cast(elements, d)
        at = F.clamp(F.searchsorted(ordered, F.reshape(values, (-1,))), None, ordered._meta.numel - 1)
        found = F.reshape(F.eq(F.index_select(ordered, 0, at), F.reshape(values, (-1,))), m.shape)
    return F.logical_not(found) if invert else found


@composite("Isin")
def isin(elements, test_elements, assume_unique=False, invert=False):
    """``isin(elements, test_elements, *, assume_unique=False, invert=False)``: a bool tensor of ``elements``'
    shape, True where the element is in ``test_elements`` (False with ``invert``); ``assume_unique`` is a hint."""
    return _isin(elements, test_elements, invert)


def _no_bool_scalar(value):
    if isinstance(value, bool):
        raise RuntimeError("isin(): Unsupported input type encountered for isin(): Bool")


@composite("IsinScalar")
def isin_scalar(elements, test_element, assume_unique=False, invert=False):
    """``isin`` against one number."""
    _no_bool_scalar(test_element)
    return _isin(elements, F.scalar_tensor(test_element, device=elements._meta.device), invert)


@composite("IsinScalarTensor")
def isin_scalar_tensor(element, test_elements, assume_unique=False, invert=False):
    """``isin`` of one number: a 0-d bool tensor."""
    _no_bool_scalar(element)
    return _isin(F.scalar_tensor(element, device=test_elements._meta.device), test_elements, invert)


def _edge_slice(x, dim, start, length):
    return F.narrow(x, dim, start, length)


def _uniform_gradient(f, dim, h, edge_order):
    """``f``'s derivative along ``dim`` with samples ``h`` apart: central differences inside, one-sided ones of
    ``edge_order`` at the two ends (NumPy's ``gradient``)."""
    n = f._meta.shape[dim]
    inner = F.div(F.sub(_edge_slice(f, dim, 2, n - 2), _edge_slice(f, dim, 0, n - 2)), 2.0 * h)
    f0, f1, fl, fm = (_edge_slice(f, dim, i, 1) for i in (0, 1, n - 1, n - 2))
    if edge_order == 1:
        first, last = F.div(F.sub(f1, f0), h), F.div(F.sub(fl, fm), h)
    else:
        f2, fk = _edge_slice(f, dim, 2, 1), _edge_slice(f, dim, n - 3, 1)
        first = F.div(F.sub(F.sub(F.mul(f1, 4.0), F.mul(f0, 3.0)), f2), 2.0 * h)
        last = F.div(F.add(F.sub(F.mul(fl, 3.0), F.mul(fm, 4.0)), fk), 2.0 * h)
    return F.cat([first, inner, last], dim)


def _coordinate_gradient(f, dim, coords, edge_order):
    """``f``'s derivative along ``dim`` sampled at the 1-D ``coords`` (second-order accurate inside, NumPy's
    formulas for uneven spacing)."""
    n = f._meta.shape[dim]
    view = [1] * f._meta.ndim
    view[dim] = -1
    dx = F.diff(cast(coords, f._meta.dtype))
    d1, d2 = (F.reshape(_edge_slice(dx, 0, i, n - 2), view) for i in (0, 1))
    a = F.div(F.neg(d2), F.mul(d1, F.add(d1, d2)))
    b = F.div(F.sub(d2, d1), F.mul(d1, d2))
    c = F.div(d1, F.mul(d2, F.add(d1, d2)))
    parts = [F.mul(_edge_slice(f, dim, i, n - 2), w) for i, w in enumerate((a, b, c))]
    inner = F.add(F.add(parts[0], parts[1]), parts[2])
    f0, f1, fl, fm = (_edge_slice(f, dim, i, 1) for i in (0, 1, n - 1, n - 2))
    if edge_order == 1:
        first = F.div(F.sub(f1, f0), F.reshape(_edge_slice(dx, 0, 0, 1), [1] * f._meta.ndim))
        last = F.div(F.sub(fl, fm), F.reshape(_edge_slice(dx, 0, n - 2, 1), [1] * f._meta.ndim))
    else:
        first = _second_order_edge(f, dim, dx, (0, 1, 2), (0, 1), True)
        last = _second_order_edge(f, dim, dx, (n - 3, n - 2, n - 1), (n - 3, n - 2), False)
    return F.cat([first, inner, last], dim)


def _second_order_edge(f, dim, dx, at, steps, first):
    """The one-sided second-order derivative at the first (or last) sample, with uneven steps."""
    h1, h2 = (float(dx[i].item()) for i in steps)
    if first:
        w = (-(2 * h1 + h2) / (h1 * (h1 + h2)), (h1 + h2) / (h1 * h2), -h1 / (h2 * (h1 + h2)))
    else:
        w = (h2 / (h1 * (h1 + h2)), -(h2 + h1) / (h1 * h2), (2 * h2 + h1) / (h2 * (h1 + h2)))
    terms = [F.mul(_edge_slice(f, dim, i, 1), wi) for i, wi in zip(at, w)]
    return F.add(F.add(terms[0], terms[1]), terms[2])


def _gradient_args(x, spacing, dim, edge_order):
    """(dims, per-dim spacing) of a ``gradient`` call, checked as PyTorch checks them."""
    name = x._meta.dtype.name
    if name.startswith("uint") or (x._meta.dtype is dt.bool_ and x._meta.ndim):  # differences wrap or are xor
        raise RuntimeError(f"torch.gradient does not support {name} input.")  # (a 0-d bool has none to take)
    ndim = x._meta.ndim
    dims = list(range(ndim)) if dim is None else [_wrap_dim(d, ndim, "gradient") for d in dim]
    repeated = [d for i, d in enumerate(dims) if d in dims[:i]]
    if repeated:
        raise RuntimeError(f"gradient: dim {repeated[0]} appears multiple times in the list of dims")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if isinstance(spacing, (tuple, list)):
        if len(spacing) != len(dims):
            where = ("since dim argument was not given" if dim is None else
                     f"to match the length of the dim argument ({len(dims)})")
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to 'self.dim() = {len(dims)}', {where}, but got a list of length "
                               f"{len(spacing)}")
        steps = list(spacing)
    else:
        steps = [1.0 if spacing is None else spacing] * len(dims)
    for d in dims:
        if x._meta.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    return dims, steps


@composite("Gradient")
def gradient(x, spacing=None, dim=None, edge_order=1):
    """``gradient(input, *, spacing=1, dim=None, edge_order=1)``: the derivative of the sampled function along
    each of ``dim`` (all dims when None), one tensor per dim. ``spacing``: a number (the step of every dim), one
    number per dim, or one 1-D tensor of coordinates per dim. Integer input gives the default float dtype."""
    dims, steps = _gradient_args(x, spacing, dim, edge_order)
    f = x if x._meta.dtype.is_floating_point else cast(x, get_default_dtype())
    out = []
    for d, step in zip(dims, steps):
        if isinstance(step, Tensor):
            if step._meta.ndim != 1 or step._meta.shape[0] != f._meta.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and of size "
                                   f"{f._meta.shape[d]} along dim {d}, got coordinates of size "
                                   f"{list(step._meta.shape)}")
            out.append(_coordinate_gradient(f, d, step, edge_order))
        else:
            out.append(_uniform_gradient(f, d, float(step), edge_order))
    return tuple(out)


def _describe_bins(b) -> str:
    return f"shape {list(b._meta.shape)}" if isinstance(b, Tensor) else type(b).__name__


def _histogramdd_edges(points, bins, range_, d):
    """One 1-D tensor of bin edges per dim of the (n, d) ``points``."""
    if isinstance(bins, (tuple, list)) and bins and isinstance(bins[0], Tensor):
        if len(bins) != d:
            raise RuntimeError(f"torch.histogramdd: expected {d} sequences of bin edges for each of the {d} "
                               f"dimensions, but got {len(bins)}")
        for i, b in enumerate(bins):
            if not isinstance(b, Tensor) or b._meta.ndim != 1 or b._meta.shape[0] < 1:
                raise RuntimeError(f"torch.histogramdd: bins[{i}] must be a 1-D tensor of at least one edge, got "
                                   f"{_describe_bins(b)}")
        return [cast(b, points._meta.dtype) for b in bins]
    counts = list(bins) if isinstance(bins, (tuple, list)) else [bins] * d
    if len(counts) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if range_ is not None and len(range_) != 2 * d:
        raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should have {2 * d} elements, "
                           f"but got {len(range_)}")
    edges = []
    for i, n in enumerate(counts):
        if range_ is not None:
            lo, hi = float(range_[2 * i]), float(range_[2 * i + 1])
        elif points._meta.shape[0]:
            lo, hi = (float(v.item()) for v in F.aminmax(F.select(points, 1, i)))
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for "
                               f"dimension {i}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(F.linspace(lo, hi, int(n) + 1, dtype=points._meta.dtype, device=points._meta.device))
    return edges


@composite("Histogramdd")
def histogramdd(x, bins, range=None, weight=None, density=False):  # noqa: A002  (PyTorch's names)
    """``histogramdd(input, bins, *, range=None, weight=None, density=False)``: the histogram of the points in
    the last dim of ``input`` (…, D); ``bins`` is a count for every dim, one count per dim, or one tensor of
    edges per dim; bins are [left, right) but the last, which holds its right edge. Returns (hist, bin_edges)."""
    if not x._meta.dtype.is_floating_point:
        raise NotImplementedError(f"histogramdd: not implemented for '{TORCH_NAMES[x._meta.dtype]}' input; "
                                  f"expected a floating tensor")
    if x._meta.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    d = x._meta.shape[-1]
    points = F.reshape(x, (math.prod(x._meta.shape[:-1]), d))  # -1 is ambiguous for d = 0
    edges = _histogramdd_edges(points, bins, range, d)
    sizes = [e._meta.shape[0] - 1 for e in edges]
    flat = F.zeros((points._meta.shape[0],), dtype=_int64, device=x._meta.device)
    inside = F.ones((points._meta.shape[0],), dtype=dt.bool_, device=x._meta.device)
    for i, e in enumerate(edges):
        coord = F.select(points, 1, i)
        idx = F.sub(F.bucketize(coord, e, right=True), 1)
        idx = F.where(F.eq(coord, e[-1]), sizes[i] - 1, idx)  # the last bin holds its right edge
        inside = F.logical_and(inside, F.logical_and(F.ge(idx, 0), F.lt(idx, sizes[i])))
        flat = F.add(F.mul(flat, sizes[i]), F.clamp(idx, 0, max(sizes[i] - 1, 0)))
    w = F.ones((points._meta.shape[0],), dtype=x._meta.dtype, device=x._meta.device) if weight is None else \
        cast(F.reshape(weight, (-1,)), x._meta.dtype)
    w = F.where(inside, w, 0.0)
    hist = cast(F.bincount(flat, w, math.prod(sizes)), x._meta.dtype)
    hist = F.reshape(hist, sizes)
    if density:
        volume = None
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = -1
            width = F.reshape(F.diff(e), shape)
            volume = width if volume is None else F.mul(volume, width)
        hist = F.div(F.div(hist, F.sum(hist)), volume)
    return return_types.histogramdd(hist, tuple(edges))
