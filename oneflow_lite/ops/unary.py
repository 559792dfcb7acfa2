"""Elementwise unary math ops and clamping (OneFlow's op names).

Note [Unary ops compute in their input's dtype]
A unary op's output has its input's dtype (bool for ``logical_not`` and the
``is*`` tests). PyTorch's promotion (``exp`` of an integer tensor is a float
tensor, ``square`` of bool is int64) is the functors' job (functors/unary.py),
which cast the input first, as for the binary ops (Note [Math ops take one
dtype] in ops/math.py). The kernels' dtype predicates leave out what PyTorch
does not implement (``abs`` or ``floor`` of bool, ...), which then gives
OpKernelNotFoundError.

Clamping: ``clip_by_scalar`` carries its bounds as attrs (OneFlow's
``floating_*`` / ``integral_*`` pairs, the one matching the input's dtype is
used, plus ``has_min`` / ``has_max``); ``clip_by_tensor`` (and its ``_min`` /
``_max`` forms with one bound) broadcasts the input with tensor bounds of the
same dtype.

The inverse trigonometric and hyperbolic functions, ``erfc`` / ``erfinv``,
``exp2`` / ``log10``, ``lgamma`` / ``digamma`` / ``polygamma`` (attr ``n``),
``i0`` / ``i1``, ``frac`` (``x - trunc(x)``), ``logit`` (attr ``eps``, negative: no clamp) and ``frexp`` (two
outputs) follow the same rules; ``signbit`` gives bool.

Gradients: the first derivatives follow PyTorch's ``derivatives.yaml``; ``sign``,
``floor``, ``ceil``, ``round`` and ``trunc`` have zero gradient; the clamps pass
the gradient where the input decides the output.
"""

from __future__ import annotations

import math

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import broadcast_shapes, same_dtype, same_shape

_BOOL = dt.bool_


def _bool_dtype(ctx):
    return _BOOL


# Note [The table of unary functions]
# One row per elementwise unary function: op type -> how its functor picks the dtype it computes in
# (Note [Unary ops compute in their input's dtype]): "input" (the input's), "float" (integer and bool inputs
# in the default float dtype), "square" (bool -> int64), "bool" (a bool result: not differentiable). The ops
# are defined here from it, and functors/unary.py registers a ``Unary`` functor per row (named in CamelCase:
# ``log_sigmoid`` -> ``LogSigmoid``), so a new unary function is a row here and its gradient row below, its
# kernel in kernels/cpu/unary.py, its signature in functors/functional_api.py and its spec row.
UNARY_FUNCTIONS = {
    "abs": "input", "sign": "input", "square": "square", "floor": "input", "ceil": "input", "trunc": "input",
    "expm1": "float", "log": "float", "log1p": "float", "log2": "float", "sqrt": "float", "rsqrt": "float",
    "sin": "float", "cos": "float", "tan": "float", "reciprocal": "float", "erf": "float",
    "acos": "float", "asin": "float", "atan": "float", "acosh": "float", "asinh": "float", "atanh": "float",
    "sinh": "float", "cosh": "float", "erfc": "float", "erfinv": "float", "exp2": "float", "log10": "float",
    "lgamma": "float", "digamma": "float", "i0": "float", "frac": "input",
    "logical_not": "bool", "isnan": "bool", "isinf": "bool", "isfinite": "bool", "signbit": "bool",
}
for _op, _compute in UNARY_FUNCTIONS.items():
    if _compute == "bool":  # bool results: not differentiable
        register_user_op(_op, inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=_bool_dtype,
                         no_grad=True)
    else:
        register_user_op(_op, inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)

# round half to even, at ``decimals`` decimal digits (negative: to tens, hundreds, ...)
register_user_op("round", inputs=["x"], outputs=["y"], attrs={"decimals": ("int64", 0)}, infer_shape=same_shape,
                 infer_dtype=same_dtype)

# nan -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf``; without has_posinf / has_neginf the dtype's largest /
# lowest finite value.
register_user_op("nan_to_num", inputs=["x"], outputs=["y"],
                 attrs={"nan": ("double", 0.0), "has_posinf": ("bool", False), "posinf": ("double", 0.0),
                        "has_neginf": ("bool", False), "neginf": ("double", 0.0)},
                 infer_shape=same_shape, infer_dtype=same_dtype)


def as_mask(b, like):
    """A bool tensor as 0 / 1 in ``like``'s dtype."""
    return F.cast(b, like._meta.dtype)


def _zero_grad(dy):
    return F.zeros_of(dy._meta)


_LN2 = math.log(2.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

derivative("abs", x=lambda dy, x: F.mul(dy, F.sign(x)))
derivative("expm1", x=lambda dy, y: F.mul(dy, F.add_scalar(y, 1.0)))
derivative("log", x=lambda dy, x: F.div(dy, x))
derivative("log1p", x=lambda dy, x: F.div(dy, F.add_scalar(x, 1.0)))
derivative("log2", x=lambda dy, x: F.div(dy, F.mul_scalar(x, _LN2)))
derivative("sqrt", x=lambda dy, y: F.div(dy, F.mul_scalar(y, 2.0)))
derivative("rsqrt", x=lambda dy, y: F.mul(dy, F.mul_scalar(F.mul(F.mul(y, y), y), -0.5)))
derivative("square", x=lambda dy, x: F.mul(dy, F.mul_scalar(x, 2.0)))
derivative("sin", x=lambda dy, x: F.mul(dy, F.cos(x)))
derivative("cos", x=lambda dy, x: F.neg(F.mul(dy, F.sin(x))))
derivative("tan", x=lambda dy, y: F.mul(dy, F.add_scalar(F.mul(y, y), 1.0)))
derivative("reciprocal", x=lambda dy, y: F.neg(F.mul(dy, F.mul(y, y))))
derivative("erf", x=lambda dy, x: F.mul(dy, F.mul_scalar(F.exp(F.neg(F.mul(x, x))), _TWO_OVER_SQRT_PI)))
derivative("nan_to_num", x=lambda dy, x: F.mul(dy, as_mask(F.isfinite(x), dy)))
for _op in ("sign", "floor", "ceil", "round", "trunc"):
    derivative(_op, x=_zero_grad)



CLIP_ATTRS = {"has_min": ("bool", False), "floating_min": ("double", 0.0), "integral_min": ("int64", 0),
              "has_max": ("bool", False), "floating_max": ("double", 0.0), "integral_max": ("int64", 0)}


def _check_bound(ctx, d, which):
    """The bound of kind ``which`` (min / max) must be representable in ``d`` (PyTorch's checked Scalar
    conversion); inf and NaN are fine for floating dtypes."""
    if d.is_floating_point:
        v = ctx.attr("floating_" + which)
        limit = float(dt.finfo(d).max)
        if -limit <= v <= limit or math.isnan(v) or math.isinf(v):
            return
    else:
        v = ctx.attr("integral_" + which)
        info = np.iinfo(d.np_dtype)
        if info.min <= v <= info.max:
            return
    raise ctx.error(f"{which} value {v} cannot be converted to type {d.name} without overflow")


def _clip_by_scalar_shape(ctx):
    has_min, has_max = ctx.attr("has_min"), ctx.attr("has_max")
    if not (has_min or has_max):
        raise ctx.error("at least one of has_min and has_max must be set")
    d = ctx.dtype("x")
    if d is not _BOOL:
        if has_min:
            _check_bound(ctx, d, "min")
        if has_max:
            _check_bound(ctx, d, "max")
    return same_shape(ctx)


register_user_op("clip_by_scalar", inputs=["x"], outputs=["y"], attrs=CLIP_ATTRS, infer_shape=_clip_by_scalar_shape,
                 infer_dtype=same_dtype)


def _grad_shape(ctx):
    dy, x = ctx.shape("dy"), ctx.shape("x")
    if dy != x:
        raise ctx.error(f"dy and x must have the same shape, got {list(dy)} and {list(x)}")
    if ctx.dtype("dy") is not ctx.dtype("x"):
        raise ctx.error(f"dy and x must have the same dtype, got {ctx.dtype('dy').name} and {ctx.dtype('x').name}")
    return dy


# dx = dy where min <= x <= max (a NaN x passes dy), else 0: PyTorch's clamp_backward.
register_user_op("clip_by_scalar_grad", inputs=["dy", "x"], outputs=["dx"], attrs=CLIP_ATTRS, infer_shape=_grad_shape,
                 infer_dtype=same_dtype)

# clip_by_scalar_grad is linear in dy (with a mask of x) and piecewise constant in x.
derivative("clip_by_scalar", name="Clamp", x=lambda dy, x, attrs: F.ops.clip_by_scalar_grad(dy, x, attrs=attrs))
derivative("clip_by_scalar_grad", name="ClampBackward",
           dy=lambda ddx, x, attrs: F.ops.clip_by_scalar_grad(ddx, x, attrs=attrs))


def _clip_by_tensor_shape(ctx):
    return broadcast_shapes(ctx.op_type, *[m.shape for m in ctx.input_metas])


def _clip_by_tensor_dtype(ctx):
    metas = ctx.input_metas
    d = metas[0].dtype
    for m in metas[1:]:
        if m.dtype is not d:
            raise ctx.error(f"the input and its bounds must have the same dtype, got "
                            f"{', '.join(m.dtype.name for m in metas)} (functors cast to a common dtype first)")
    return d


for _op, _inputs in (("clip_by_tensor", ["x", "min", "max"]), ("clip_by_tensor_min", ["x", "min"]),
                     ("clip_by_tensor_max", ["x", "max"])):
    register_user_op(_op, inputs=_inputs, outputs=["y"], infer_shape=_clip_by_tensor_shape,
                     infer_dtype=_clip_by_tensor_dtype)


def _masked(dy, mask, meta):
    """``dy`` where ``mask``, else 0, summed to ``meta``'s shape."""
    return F.reduce_to(F.mul(dy, as_mask(mask, dy)), meta.shape)


# PyTorch's clamp backward with tensor bounds: each input gets dy where it decides the output (the input where
# min <= x <= max, min where x < min < max, max where x > max or max < min); bool mul / add are and / or.
derivative("clip_by_tensor", name="Clamp",
           x=lambda dy, x, min, max, x_meta: _masked(dy, F.mul(F.ge(x, min), F.le(x, max)), x_meta),
           min=lambda dy, x, min, max, min_meta: _masked(dy, F.mul(F.lt(x, min), F.lt(min, max)), min_meta),
           max=lambda dy, x, min, max, max_meta: _masked(dy, F.add(F.gt(x, max), F.lt(max, min)), max_meta))
derivative("clip_by_tensor_min", name="Clamp",
           x=lambda dy, x, min, x_meta: _masked(dy, F.ge(x, min), x_meta),
           min=lambda dy, x, min, min_meta: _masked(dy, F.lt(x, min), min_meta))
derivative("clip_by_tensor_max", name="Clamp",
           x=lambda dy, x, max, x_meta: _masked(dy, F.le(x, max), x_meta),
           max=lambda dy, x, max, max_meta: _masked(dy, F.gt(x, max), max_meta))


# ---- inverse trigonometric and hyperbolic functions, special functions ---------------------------------
# Float ops (Note [Unary ops compute in their input's dtype]); the gradients follow derivatives.yaml.
# i1: the derivative of i0 (no function of its own)
register_user_op("i1", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)
# polygamma(n, x): the n-th derivative of digamma (n >= 0; the functor checks it)
register_user_op("polygamma", inputs=["x"], outputs=["y"], attrs={"n": ("int64", 0)}, infer_shape=same_shape,
                 infer_dtype=same_dtype)
_LN10 = math.log(10.0)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0


def _one_minus_square(x):
    return F.add_scalar(F.neg(F.mul(x, x)), 1.0)


derivative("acos", x=lambda dy, x: F.neg(F.mul(dy, F.rsqrt(_one_minus_square(x)))))
derivative("asin", x=lambda dy, x: F.mul(dy, F.rsqrt(_one_minus_square(x))))
derivative("atan", x=lambda dy, x: F.div(dy, F.add_scalar(F.mul(x, x), 1.0)))
derivative("acosh", x=lambda dy, x: F.mul(dy, F.rsqrt(F.add_scalar(F.mul(x, x), -1.0))))
derivative("asinh", x=lambda dy, x: F.mul(dy, F.rsqrt(F.add_scalar(F.mul(x, x), 1.0))))
derivative("atanh", x=lambda dy, x: F.div(dy, _one_minus_square(x)))
derivative("sinh", x=lambda dy, x: F.mul(dy, F.cosh(x)))
derivative("cosh", x=lambda dy, x: F.mul(dy, F.sinh(x)))
derivative("erfc", x=lambda dy, x: F.mul(dy, F.mul_scalar(F.exp(F.neg(F.mul(x, x))), -_TWO_OVER_SQRT_PI)))
derivative("erfinv", x=lambda dy, y: F.mul(dy, F.mul_scalar(F.exp(F.mul(y, y)), _SQRT_PI_OVER_2)))
derivative("exp2", x=lambda dy, y: F.mul(dy, F.mul_scalar(y, _LN2)))
derivative("log10", x=lambda dy, x: F.div(dy, F.mul_scalar(x, _LN10)))
derivative("lgamma", x=lambda dy, x: F.mul(dy, F.ops.digamma(x)))
derivative("digamma", x=lambda dy, x: F.mul(dy, F.ops.polygamma(x, n=1)))
derivative("polygamma", x=lambda dy, x, n: F.mul(dy, F.ops.polygamma(x, n=n + 1)))
derivative("i0", x=lambda dy, x: F.mul(dy, F.ops.i1(x)))
derivative("frac", x=lambda dy: dy)


def _i1_grad(dy, x, y):
    """d i1 / dx = i0(x) - i1(x) / x, 1/2 at 0 (PyTorch's i1_backward)."""
    zero = F.eq(x, 0.0)
    safe = F.where(zero, F.ones_like(x), x)
    return F.mul(dy, F.where(zero, F.full_like(x, 0.5), F.sub(F.ops.i0(safe), F.div(y, safe))))


derivative("i1", x=_i1_grad)

# logit(x, eps): log(z / (1 - z)) with z = clamp(x, eps, 1 - eps) when eps >= 0 (eps < 0: no clamp).
register_user_op("logit", inputs=["x"], outputs=["y"], attrs={"eps": ("double", -1.0)}, infer_shape=same_shape,
                 infer_dtype=same_dtype)
# dx = dy / (x (1 - x)); outside [eps, 1 - eps] 0 (with eps), NaN outside [0, 1] (without): PyTorch's
# logit_backward.
register_user_op("logit_grad", inputs=["dy", "x"], outputs=["dx"], attrs={"eps": ("double", -1.0)},
                 infer_shape=_grad_shape, infer_dtype=same_dtype)
derivative("logit", x=lambda dy, x, attrs: F.ops.logit_grad(dy, x, attrs=attrs))


def _logit_grad_x(ddx, dy, x, attrs):
    """d/dx of ``dy / (x (1 - x))``: the same masked quotient times ``(2x - 1) / (x (1 - x))``."""
    s = F.mul(x, F.add_scalar(F.neg(x), 1.0))
    return F.mul(F.ops.logit_grad(F.mul(ddx, dy), x, attrs=attrs), F.div(F.add_scalar(F.mul_scalar(x, 2.0), -1.0), s))


derivative("logit_grad", name="LogitBackward", dy=lambda ddx, x, attrs: F.ops.logit_grad(ddx, x, attrs=attrs),
           x=_logit_grad_x)


# frexp(x) = (mantissa, exponent), x = mantissa * 2^exponent, |mantissa| in [0.5, 1) (int32 exponent).
def _frexp_dtype(ctx):
    return (ctx.dtype("x"), dt.int32)


def _frexp_shape(ctx):
    s = ctx.shape("x")
    return (s, s)


register_user_op("frexp", inputs=["x"], outputs=["mantissa", "exponent"], infer_shape=_frexp_shape,
                 infer_dtype=_frexp_dtype)
derivative("frexp", x=lambda dmantissa, exponent: None if dmantissa is None else F.div(
    dmantissa, F.ops.exp2(F.cast(exponent, dmantissa._meta.dtype))))
