"""Functors of the elementwise unary math ops, ``round``, ``nan_to_num`` and ``clamp`` / ``clip``; the
inverse trigonometric and hyperbolic functions, the special functions (``lgamma``, ``digamma``,
``polygamma``, ``erfinv``, ``i0``, ...), ``logit``, ``frexp``, the composites ``sinc``, ``mvlgamma``,
``deg2rad`` / ``rad2deg``, ``isposinf`` / ``isneginf`` / ``isreal``, ``positive``, ``clamp_min`` /
``clamp_max``, and the torch-level in-place functions (``torch.abs_(x)``: the function with
``inplace=True``, ``INPLACE_FUNCTIONS``).

Dtypes follow PyTorch (Note [Unary ops compute in their input's dtype] in
ops/unary.py): the float ops (``expm1``, ``log``, ``sqrt``, ``sin``, ``erf``, ...)
compute integer and bool inputs in the default float dtype; ``abs`` / ``sign`` /
``square`` keep integer dtypes (``square`` of bool is int64, as PyTorch's
``pow(x, 2)``); ``floor`` / ``ceil`` / ``round`` / ``trunc`` of an integer tensor
are a copy; ``logical_not`` and the ``is*`` tests give bool. ``inplace=True``
(the Tensor's ``sqrt_``, ``clamp_``, ...) writes the result into the input,
which must be able to hold the result's dtype.
"""

from __future__ import annotations

import collections
import math
from functools import partial

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F, functional
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.promotion import (
    TORCH_NAMES,
    cast,
    cast_into,
    check_inplace_dtype,
    check_inplace_shape,
    common_dtype,
    floating,
    opmath_dtype,
)
from oneflow_lite.functors.reduce import return_types
from oneflow_lite.functors.registry import composite, functor, register_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.unary import UNARY_FUNCTIONS

_bool = dt.bool_
_int64 = dt.int64
_result_type = dt.result_type
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def unary_op(op_type):
    return OpBuilder(op_type).input("x").output("y").build()


def write_inplace(op, x, attrs, name, d, out_d):
    """In-place: ``op(cast(x, d))`` (whose dtype is ``out_d``) written into ``x``; ``x`` must be able to hold
    ``out_d`` (PyTorch's ``can_cast``)."""
    xd = x._meta.dtype
    if out_d is not xd:
        check_inplace_dtype(name, out_d, xd)
    elif d is xd:
        return dispatch(op, (x,), attrs, (x,))[0]
    return cast_into(dispatch(op, (cast(x, d),), attrs)[0], x)


class Unary:
    """``op(x)`` computed in ``compute(x.dtype)`` (the input's dtype when ``compute`` is None); the result is
    bool when ``bool_out``. One instance per op, registered by name with the op's parameters bound."""

    def __init__(self, name, compute=None, bool_out=False):
        self.name = name
        self.compute = compute
        self.bool_out = bool_out
        self.op = unary_op(name)

    def __call__(self, x, inplace=False):
        compute = self.compute
        if inplace:
            xd = x._meta.dtype
            d = xd if compute is None else compute(xd)
            return write_inplace(self.op, x, None, self.name, d, _bool if self.bool_out else d)
        if compute is not None:
            d = compute(x._meta.dtype)
            if d is not x._meta.dtype:
                x = cast(x, d)
        return dispatch(self.op, (x,))[0]


def _square_dtype(d):
    return _int64 if d is _bool else d


def functor_name(op_type: str) -> str:
    """``log_sigmoid`` -> ``LogSigmoid``; PyTorch's capitals for ``isnan`` / ``isinf`` / ``isfinite``."""
    return _SPELLED.get(op_type) or "".join(part[:1].upper() + part[1:] for part in op_type.split("_"))


_SPELLED = {"isnan": "IsNan", "isinf": "IsInf", "isfinite": "IsFinite"}
_COMPUTE = {"input": None, "float": floating, "square": _square_dtype, "bool": None}

# A Unary functor per row of the table in ops/unary.py (Note [The table of unary functions]).
for _op, _compute in UNARY_FUNCTIONS.items():
    register_functor(functor_name(_op), partial(Unary, _op, _COMPUTE[_compute], bool_out=_compute == "bool"))


@functor("Round")
class RoundFunctor:
    """``round(input, *, decimals=0)``: half to even; integer tensors (decimals 0 only) are copied."""

    def __init__(self):
        self.op = unary_op("round")
        self._attrs = {}

    def __call__(self, x, decimals=0, inplace=False):
        attrs = None
        if decimals:
            xd = x._meta.dtype
            if not xd.is_floating_point and xd is not _bool:
                raise OpKernelNotFoundError(f"round: \"round_cpu\" not implemented for '{TORCH_NAMES[xd]}' with "
                                            f"decimals={decimals}; integer tensors round with decimals=0 only")
            attrs = cached_attrs(self._attrs, ("decimals",), (decimals,))
        if inplace:
            return dispatch(self.op, (x,), attrs, (x,))[0]
        return dispatch(self.op, (x,), attrs)[0]


_NAN_TO_NUM_ATTRS = ("nan", "has_posinf", "posinf", "has_neginf", "neginf")


@functor("NanToNum")
class NanToNumFunctor:
    """``nan_to_num(input, nan=0.0, posinf=None, neginf=None)``: None is the dtype's largest / lowest finite
    value; integer and bool tensors are copied."""

    def __init__(self):
        self.op = unary_op("nan_to_num")
        self._attrs = {}

    def __call__(self, x, nan=0.0, posinf=None, neginf=None, inplace=False):
        values = (nan, posinf is not None, 0.0 if posinf is None else posinf, neginf is not None,
                  0.0 if neginf is None else neginf)
        attrs = cached_attrs(self._attrs, _NAN_TO_NUM_ATTRS, values)
        if inplace:
            return dispatch(self.op, (x,), attrs, (x,))[0]
        return dispatch(self.op, (x,), attrs)[0]


# ---- clamp -----------------------------------------------------------------------------------------
_CLIP_ATTRS = ("has_min", "floating_min", "integral_min", "has_max", "floating_max", "integral_max")
_NO_BOUNDS = "clamp: At least one of 'min' or 'max' must not be None"


def _check_int64(which, value):
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        raise RuntimeError(f"clamp: {which} value {value} does not fit in int64 (Overflow when unpacking long)")


@functor("Clamp")
class ClampFunctor:
    """``clamp(input, min=None, max=None)`` with scalar bounds, PyTorch's dtype rules: a floating input keeps
    its dtype, an integer or bool one is promoted with the bounds (``int_tensor.clamp(0.5)`` is float). A
    bound must fit the result's dtype. In place, the result must keep the input's dtype."""

    def __init__(self):
        self.op = unary_op("clip_by_scalar")
        self._attrs = {}

    def __call__(self, x, min=None, max=None, inplace=False):
        xd = x._meta.dtype
        d = xd
        if min is None:
            if max is None:
                raise RuntimeError(_NO_BOUNDS)
            if not xd.is_floating_point:
                d = _result_type(xd, (), (max,))
        elif not xd.is_floating_point:
            d = _result_type(xd, (), (min,) if max is None else (min, max))
        if d.is_floating_point:
            values = (min is not None, 0.0 if min is None else float(min), 0,
                      max is not None, 0.0 if max is None else float(max), 0)
        else:
            _check_int64("min", min)
            _check_int64("max", max)
            values = (min is not None, 0.0, 0 if min is None else int(min),
                      max is not None, 0.0, 0 if max is None else int(max))
        attrs = cached_attrs(self._attrs, _CLIP_ATTRS, values)
        if inplace:
            if d is not xd:
                raise RuntimeError(f"clamp: result type {TORCH_NAMES[d]} can't be cast to the desired output "
                                   f"type {TORCH_NAMES[xd]}")
            return dispatch(self.op, (x,), attrs, (x,))[0]
        return dispatch(self.op, (cast(x, d),), attrs)[0]


@functor("ClampTensor")
class ClampTensorFunctor:
    """``clamp(input, min=None, max=None)`` with tensor bounds: the input and the bounds broadcast together
    and promote to their common dtype; a NaN input or bound gives NaN, ``min > max`` gives ``max``."""

    def __init__(self):
        self.both = OpBuilder("clip_by_tensor").input("x").input("min").input("max").output("y").build()
        self.lower = OpBuilder("clip_by_tensor_min").input("x").input("min").output("y").build()
        self.upper = OpBuilder("clip_by_tensor_max").input("x").input("max").output("y").build()

    def __call__(self, x, min=None, max=None, inplace=False):
        if min is None:
            if max is None:
                raise RuntimeError(_NO_BOUNDS)
            op, inputs = self.upper, (x, max)
        elif max is None:
            op, inputs = self.lower, (x, min)
        else:
            op, inputs = self.both, (x, min, max)
        d = common_dtype(*inputs)
        inputs = tuple([cast(t, d) for t in inputs])
        if not inplace:
            return dispatch(op, inputs)[0]
        xm = x._meta
        check_inplace_dtype("clamp", d, xm.dtype)
        result_shape = op.infer(tuple([t._meta for t in inputs]), None).out_metas[0].shape
        check_inplace_shape("clamp", xm.shape, result_shape)
        if d is xm.dtype:
            return dispatch(op, inputs, None, (x,))[0]
        return cast_into(dispatch(op, inputs)[0], x)


# ---- [compat s1] inverse trigonometric and hyperbolic functions, special functions ------------------------
# Aliases get functors of their own, so their op exprs carry their name (Note [Functional names of op calls]).
for _functor, _name, _compute in (("Arccos", "acos", floating), ("Arcsin", "asin", floating),
                                  ("Arctan", "atan", floating), ("Arccosh", "acosh", floating),
                                  ("Arcsinh", "asinh", floating), ("Arctanh", "atanh", floating),
                                  ("Fix", "trunc", None), ("Sgn", "sign", None), ("Absolute", "abs", None)):
    register_functor(_functor, partial(Unary, _name, _compute))


class _AttrUnary:
    """A float op with one attr: ``op(cast(x, floating), attr)``; in place as ``Unary``."""

    def __init__(self, name, attr):
        self.name, self.attr = name, attr
        self.op = unary_op(name)
        self._attrs = {}

    def run(self, x, value, inplace):
        attrs = cached_attrs(self._attrs, (self.attr,), (value,))
        d = floating(x._meta.dtype)
        if inplace:
            return write_inplace(self.op, x, attrs, self.name, d, d)
        return dispatch(self.op, (cast(x, d),), attrs)[0]


@functor("Polygamma")
class PolygammaFunctor(_AttrUnary):
    """``polygamma(n, input)``: the n-th derivative of digamma (``polygamma(0, x)`` is ``digamma(x)``)."""

    def __init__(self):
        super().__init__("polygamma", "n")

    def __call__(self, n, x, inplace=False):
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        return self.run(x, n, inplace)


@functor("Logit")
class LogitFunctor(_AttrUnary):
    """``logit(input, eps=None)``: ``log(z / (1 - z))``, ``z`` the input clamped to ``[eps, 1 - eps]`` (not
    clamped when ``eps`` is None)."""

    def __init__(self):
        super().__init__("logit", "eps")

    def __call__(self, x, eps=None, inplace=False):
        return self.run(x, -1.0 if eps is None else float(eps), inplace)


frexp_result = collections.namedtuple("frexp", ("mantissa", "exponent"))
frexp_result.__module__ = "oneflow_lite.return_types"
frexp_result.__repr__ = lambda self: f"oneflow_lite.return_types.frexp(\nmantissa={self[0]!r},\nexponent={self[1]!r})"
return_types.frexp = frexp_result  # torch.return_types.frexp, beside max, sort, ...


@functor("Frexp")
class FrexpFunctor:
    """``frexp(input)``: ``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, the mantissa in
    (-1, -0.5] or [0.5, 1) (0, inf and NaN are their own mantissa) and an int32 exponent."""

    def __init__(self):
        self.op = OpBuilder("frexp").input("x").output("mantissa").output("exponent").build()

    def __call__(self, x):
        if not x._meta.dtype.is_floating_point:
            raise RuntimeError("frexp: torch.frexp() only supports floating-point dtypes")
        return frexp_result(*dispatch(self.op, (x,)))


def inplace_source(x, inplace):
    """What an in-place composite computes from: a clone of ``x`` when autograd records through it (the ops
    it calls save their inputs, which the final write into ``x`` would modify)."""
    return F.clone(x) if inplace and x.requires_grad else x


def write_result(name, result, x):
    """An in-place composite's end: ``result`` written into ``x``, which must hold its dtype and shape."""
    check_inplace_dtype(name, result._meta.dtype, x._meta.dtype)
    check_inplace_shape(name, x._meta.shape, result._meta.shape)
    return cast_into(result, x)


@composite("Sinc")
def sinc(x, inplace=False):
    """``sin(pi x) / (pi x)``. Near 0 (``|pi x|`` below 0.4 in float32, 0.03 in float64) the Taylor series
    ``1 - p^2/6 + p^4/120 - p^6/5040`` instead: the quotient's gradient cancels there (``cos(p) p - sin(p)`` is
    ``-p^3/3``). float16 / bfloat16 compute in float32 and round once, value and gradient."""
    out_dtype = floating(x._meta.dtype)
    xf = cast(inplace_source(x, inplace), opmath_dtype(out_dtype))
    px = F.mul(xf, math.pi)
    small = F.lt(F.abs(px), 0.03 if out_dtype is dt.float64 else 0.4)
    p = F.where(small, 1.0, px)  # the quotient's divisor, never 0
    p2 = F.square(F.where(small, px, 0.0))
    series = F.rsub(F.mul(F.div(p2, 6.0), F.rsub(F.mul(F.div(p2, 20.0), F.rsub(F.div(p2, 42.0), 1.0)), 1.0)), 1.0)
    r = cast(F.where(small, series, F.div(F.sin(p), p)), out_dtype)
    return write_result("sinc", r, x) if inplace else r


def _scaled(factor, x, inplace=False):
    """``x * factor`` (integer and bool tensors give the default float dtype): deg2rad, rad2deg."""
    return F.mul(x, factor, inplace=inplace)


composite("Deg2rad")(partial(_scaled, math.pi / 180.0))
composite("Rad2deg")(partial(_scaled, 180.0 / math.pi))


@composite("Positive")
def positive(x):
    """``+x``: the tensor itself (bool tensors are refused, as PyTorch)."""
    if x._meta.dtype is _bool:
        raise RuntimeError("positive: The `+` operator, on a bool tensor is not supported.")
    return x


composite("IsPosInf")(lambda x: F.eq(x, math.inf))
composite("IsNegInf")(lambda x: F.eq(x, -math.inf))
composite("IsReal")(lambda x: F.ones_like(x, dtype=_bool))  # no complex dtypes: every element is real


@composite("Angle")
def angle(x):
    """The argument of each element as a complex number: pi for a negative one, 0 otherwise, NaN kept (ints and
    bools give the default float dtype), as PyTorch's ``angle`` on real tensors; the gradient is zero."""
    if not x._meta.dtype.is_floating_point:
        x = F.cast(x, dt.get_default_dtype())
    values = F.where(F.isnan(x), x.detach(), F.cast(F.where(F.lt(x, 0), math.pi, 0.0), x._meta.dtype))
    # x joins through a branch never taken, so the result requires grad (as PyTorch's) with a zero gradient
    return F.where(F.zeros_like(x, dtype=_bool), x, values) if x.requires_grad else values


@composite("Mvlgamma")
def mvlgamma(x, p, inplace=False):
    """The multivariate log-gamma function ``sum_i lgamma(x - i / 2) + p (p - 1) / 4 log(pi)``, i < p."""
    if p < 1:
        raise RuntimeError("mvlgamma: p has to be greater than or equal to 1")
    if x._meta.dtype is dt.bool_:
        raise RuntimeError("mvlgamma: The input tensor may not be a boolean tensor.")
    xf = cast(inplace_source(x, inplace), floating(x._meta.dtype))
    # one lgamma over x[..., None] - [0, 1/2, ..., (p-1)/2], as PyTorch: p terms per element in one op (a huge
    # p is a huge allocation, refused at once by the size check, not a loop of p ops)
    halves = F.mul(F.arange(0, p, dtype=xf._meta.dtype, device=xf._meta.device), -0.5)
    r = F.sum(F.lgamma(F.add(F.unsqueeze(xf, -1), halves)), -1)
    r = F.add(r, p * (p - 1) / 4.0 * math.log(math.pi))
    return write_result("mvlgamma", r, x) if inplace else r


def _clamp_one(which, x, bound, inplace=False):
    """``clamp_min(x, min)`` / ``clamp_max(x, max)``."""
    return F.clamp(x, bound, None, inplace=inplace) if which == "min" else F.clamp(x, None, bound, inplace=inplace)


composite("ClampMin")(partial(_clamp_one, "min"))
composite("ClampMax")(partial(_clamp_one, "max"))


# ---- torch.<name>_(input, ...): the functional call with inplace=True ----------------------------------------
# name -> the keyword names of its further arguments, in the order of its signature in functional_api.py
INPLACE_FUNCTIONS = {
    "abs": (), "absolute": (), "acos": (), "arccos": (), "acosh": (), "arccosh": (), "asin": (), "arcsin": (),
    "asinh": (), "arcsinh": (), "atan": (), "arctan": (), "atanh": (), "arctanh": (), "ceil": (), "cos": (),
    "cosh": (), "deg2rad": (), "erf": (), "erfc": (), "exp": (), "exp2": (), "expm1": (), "fix": (), "floor": (),
    "frac": (), "i0": (), "log": (), "log10": (), "log1p": (), "log2": (), "neg": (), "negative": (),
    "rad2deg": (), "reciprocal": (), "rsqrt": (), "sigmoid": (), "sin": (), "sinc": (), "sinh": (), "sqrt": (),
    "square": (), "tan": (), "tanh": (), "trunc": (), "round": ("decimals",), "logit": ("eps",),
    "nan_to_num": ("nan", "posinf", "neginf"), "clamp": ("min", "max"), "clip": ("min", "max"),
    "clamp_min": ("min",), "clamp_max": ("max",), "gcd": ("other",), "lcm": ("other",), "ldexp": ("other",),
    "xlogy": ("other",),
}


def _inplace_function(name, keywords, x, *values):
    """The functional function itself (``F.neg`` is a backward helper without ``inplace``)."""
    return functional(name)(x, inplace=True, **dict(zip(keywords, values)))


def inplace_functor_name(name):
    """``clamp_min`` -> ``ClampMinInplace``, ``log1p`` -> ``Log1pInplace`` (as in functional_api.py)."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_")) + "Inplace"


for _name, _keywords in INPLACE_FUNCTIONS.items():
    composite(inplace_functor_name(_name))(partial(_inplace_function, _name, _keywords))
