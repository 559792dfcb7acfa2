"""More elementwise binary and ternary ops: rounding division, pow, maximum / minimum, fmod /
remainder, atan2, logical and bitwise ops, where, lerp, addcmul and addcdiv (OneFlow's names), and
their gradient rows (PyTorch's derivatives.yaml formulas).

As in ops/math.py, the arithmetic ops take one dtype (Note [Math ops take one
dtype]) and the ``scalar_*`` ops carry their Python scalar as OneFlow's
``int_operand`` / ``float_operand`` / ``has_float_operand`` attrs. The logical
ops look only at truthiness, which promotion never changes, so they take inputs
of any two dtypes without casts. Rounding division is piecewise constant: its
grads are zeros. The logical and bitwise ops have bool / integer outputs, are
defined ``no_grad`` and need none.
"""

from __future__ import annotations

import math
from functools import partial

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import broadcast_shapes, not_implemented_row, same_dtype, same_shape
from oneflow_lite.ops.math import SCALAR_ATTRS, binary_shape, dz_to_x, pass_dout, same_input_dtypes, scalar_operand
from oneflow_lite.ops.unary import as_mask

_BOOL = dt.bool_


def _bool_dtype(ctx):
    return _BOOL


def _masked(mask, g):
    """``g`` where ``mask`` is False, 0 where it is True."""
    return F.where(mask, 0.0, g)


for _op in ("broadcast_floordiv", "broadcast_truncdiv", "broadcast_pow", "broadcast_maximum", "broadcast_minimum",
            "broadcast_fmod", "broadcast_floor_mod", "broadcast_atan2"):
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape, infer_dtype=same_input_dtypes)


# Rounding division is piecewise constant: zero grads.
def _zeros_x(x_meta):
    return F.zeros_of(x_meta)


def _zeros_y(y_meta):
    return F.zeros_of(y_meta)


def _zeros_in(in_meta):
    return F.zeros_of(in_meta)


for _op, _name in (("broadcast_floordiv", "FloorDivide"), ("broadcast_truncdiv", "TruncDivide")):
    derivative(_op, name=_name, x=_zeros_x, y=_zeros_y)


# z = x ** y: dx = dz * y * x ** (y - 1) (0 where y == 0), dy = dz * z * log(x) (0 where x == 0 and y >= 0).
def _pow_dx(dz, x, y, x_meta):
    return F.reduce_to(_masked(F.eq(y, 0), F.mul(dz, F.mul(y, F.pow(x, F.sub(y, 1))))), x_meta.shape)


def _pow_dy(dz, x, y, z, y_meta):
    at_zero = F.logical_and(F.eq(x, 0), F.ge(y, 0))
    return F.reduce_to(_masked(at_zero, F.mul(dz, F.mul(z, F.log(x)))), y_meta.shape)


derivative("broadcast_pow", name="Pow", x=_pow_dx, y=_pow_dy)


def _max_min_grad(x_loses, y_loses, needs, dz, x, y, x_meta, y_meta):
    """The grad goes to the larger (smaller) operand and is split evenly on ties; NaN takes it on both
    sides (PyTorch's masks). ``x_loses`` / ``y_loses`` name the comparisons where an operand gets none."""
    shared = F.where(F.eq(x, y), F.mul_scalar(dz, 0.5), dz)
    return (F.reduce_to(_masked(getattr(F, x_loses)(x, y), shared), x_meta.shape) if needs[0] else None,
            F.reduce_to(_masked(getattr(F, y_loses)(x, y), shared), y_meta.shape) if needs[1] else None)


# A joint row: the shared part is computed once for both operands.
derivative("broadcast_maximum", name="Maximum", joint=partial(_max_min_grad, "lt", "gt"))
derivative("broadcast_minimum", name="Minimum", joint=partial(_max_min_grad, "gt", "lt"))


def _mod_dy(rounding_div, dz, x, y, y_meta):
    """z = x - q * y with q = x / y rounded (``rounding_div``: trunc for fmod, floor for remainder):
    dx = dz, dy = -dz * q."""
    return F.reduce_to(F.neg(F.mul(dz, getattr(F.ops, rounding_div)(x, y))), y_meta.shape)


derivative("broadcast_fmod", name="Fmod", x=dz_to_x, y=partial(_mod_dy, "broadcast_truncdiv"))
derivative("broadcast_floor_mod", name="Remainder", x=dz_to_x, y=partial(_mod_dy, "broadcast_floordiv"))


def _atan2_grad(needs, dz, x, y, x_meta, y_meta):
    """z = atan2(x, y): dx = dz * y / (x^2 + y^2), dy = -dz * x / (x^2 + y^2)."""
    scaled = F.div(dz, F.add(F.mul(x, x), F.mul(y, y)))
    return (F.reduce_to(F.mul(scaled, y), x_meta.shape) if needs[0] else None,
            F.reduce_to(F.neg(F.mul(scaled, x)), y_meta.shape) if needs[1] else None)


derivative("broadcast_atan2", name="Atan2", joint=_atan2_grad)

# Integer and bool results: not differentiable.
for _op in ("broadcast_bitwise_and", "broadcast_bitwise_or", "broadcast_bitwise_xor"):
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape, infer_dtype=same_input_dtypes,
                     no_grad=True)
for _op in ("broadcast_logical_and", "broadcast_logical_or", "broadcast_logical_xor"):
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape, infer_dtype=_bool_dtype,
                     no_grad=True)

# ``scalar_reverse_pow`` is ``operand ** in``; the others are ``in <op> operand``.
for _op in ("scalar_floordiv", "scalar_truncdiv", "scalar_pow", "scalar_reverse_pow", "scalar_fmod",
            "scalar_floor_mod"):
    register_user_op(_op, inputs=["in"], outputs=["out"], attrs=SCALAR_ATTRS, infer_shape=same_shape,
                     infer_dtype=same_dtype)

for _op, _name in (("scalar_floordiv", "ScalarFloorDivide"), ("scalar_truncdiv", "ScalarTruncDivide")):
    derivative(_op, name=_name, in_=_zeros_in)
for _op, _name in (("scalar_fmod", "ScalarFmod"), ("scalar_floor_mod", "ScalarRemainder")):
    derivative(_op, name=_name, in_=pass_dout)


def _scalar_pow_grad(dout, in_, in_meta, int_operand, float_operand, has_float_operand):
    """out = x ** s: dx = dout * s * x ** (s - 1), zeros when s == 0."""
    s = scalar_operand(int_operand, float_operand, has_float_operand)
    if s == 0:
        return F.zeros_of(in_meta)
    return F.mul(dout, F.mul_scalar(F.pow(in_, s - 1), s))


def _scalar_reverse_pow_grad(dout, in_, out, int_operand, float_operand, has_float_operand):
    """out = s ** x: dx = dout * out * log(s). For s == 0 that is 0 where x >= 0 (as PyTorch) and
    dout * inf * -inf elsewhere, computed as dout / -0.0 (division is quiet: no 0 * inf warnings)."""
    s = scalar_operand(int_operand, float_operand, has_float_operand)
    if s == 0:
        return _masked(F.ge(in_, 0), F.div_scalar(dout, -0.0))
    return F.mul_scalar(F.mul(dout, out), math.log(s) if s > 0 else math.nan)


derivative("scalar_pow", name="ScalarPow", in_=_scalar_pow_grad)
derivative("scalar_reverse_pow", name="ScalarReversePow", in_=_scalar_reverse_pow_grad)

register_user_op("bitwise_not", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype,
                 no_grad=True)


# ---- where ---------------------------------------------------------------------------------------
def _where_shape(ctx):
    return broadcast_shapes(ctx.op_type, ctx.shape("condition"), ctx.shape("x"), ctx.shape("y"))


def _where_dtype(ctx):
    c, a, b = ctx.dtype("condition"), ctx.dtype("x"), ctx.dtype("y")
    if c is not _BOOL:
        raise ctx.error(f"expected condition to be a boolean tensor, but got a tensor with dtype {c.name}")
    if a is not b:
        raise ctx.error(f"expected x and y to have the same dtype, but got {a.name} and {b.name} "
                        f"(functors cast to a common dtype first)")
    return a


register_user_op("where", inputs=["condition", "x", "y"], outputs=["out"], infer_shape=_where_shape,
                 infer_dtype=_where_dtype)
# out = where(c, x, y): dx = dout where c, dy = dout where not c (each reduced to its shape).
derivative("where", name="Where",
           x=lambda dout, condition, x_meta: F.reduce_to(F.where(condition, dout, 0.0), x_meta.shape),
           y=lambda dout, condition, y_meta: F.reduce_to(_masked(condition, dout), y_meta.shape))


# ---- lerp, addcmul, addcdiv ------------------------------------------------------------------------
def _same_dtypes(*names):
    def infer(ctx):
        first = ctx.dtype(names[0])
        for name in names[1:]:
            d = ctx.dtype(name)
            if d is not first:
                raise ctx.error(f"expected dtype {first.name} for `{name}` but got dtype {d.name}")
        return first
    return infer


def _broadcast_of(*names):
    def infer(ctx):
        return broadcast_shapes(ctx.op_type, *[ctx.shape(n) for n in names])
    return infer


register_user_op("lerp", inputs=["start", "end", "weight"], outputs=["out"],
                 infer_shape=_broadcast_of("start", "end", "weight"), infer_dtype=_same_dtypes("start", "end", "weight"))
register_user_op("scalar_lerp", inputs=["start", "end"], outputs=["out"], attrs={"weight": ("double", 0.0)},
                 infer_shape=_broadcast_of("start", "end"), infer_dtype=_same_dtypes("start", "end"))
# out = start + w * (end - start): dstart = dout * (1 - w), dend = dout * w, dw = dout * (end - start).
derivative("lerp", name="Lerp",
           start=lambda dout, weight, start_meta: F.reduce_to(F.mul(dout, F.sub(1, weight)), start_meta.shape),
           end=lambda dout, weight, end_meta: F.reduce_to(F.mul(dout, weight), end_meta.shape),
           weight=lambda dout, start, end, weight_meta: F.reduce_to(F.mul(dout, F.sub(end, start)), weight_meta.shape))
derivative("scalar_lerp", name="ScalarLerp",
           start=lambda dout, weight, start_meta: F.reduce_to(F.mul_scalar(dout, 1.0 - weight), start_meta.shape),
           end=lambda dout, weight, end_meta: F.reduce_to(F.mul_scalar(dout, weight), end_meta.shape))
# out = input + value * tensor1 * tensor2 (addcmul) or input + value * tensor1 / tensor2 (addcdiv);
# ``value`` is a scalar operand as in the scalar ops.
for _op in ("addcmul", "addcdiv"):
    register_user_op(_op, inputs=["input", "tensor1", "tensor2"], outputs=["out"], attrs=SCALAR_ATTRS,
                     infer_shape=_broadcast_of("input", "tensor1", "tensor2"),
                     infer_dtype=_same_dtypes("input", "tensor1", "tensor2"))


def _times_value(dout, attrs):
    """``dout * value``: addcmul and addcdiv carry ``value`` as the scalar ops' operand attrs."""
    return F.ops.scalar_mul(dout, attrs=attrs)


def _dout_to_input(dout, input_meta):
    return F.reduce_to(dout, input_meta.shape)


# addcmul: dinput = dout, dtensor1 = dout * v * tensor2, dtensor2 = dout * v * tensor1.
derivative("addcmul", name="Addcmul", input=_dout_to_input,
           tensor1=lambda dout, tensor2, tensor1_meta, attrs:
           F.reduce_to(F.mul(_times_value(dout, attrs), tensor2), tensor1_meta.shape),
           tensor2=lambda dout, tensor1, tensor2_meta, attrs:
           F.reduce_to(F.mul(_times_value(dout, attrs), tensor1), tensor2_meta.shape))
# addcdiv: dinput = dout, dtensor1 = dout * v / tensor2, dtensor2 = -dout * v * tensor1 / tensor2^2.
derivative("addcdiv", name="Addcdiv", input=_dout_to_input,
           tensor1=lambda dout, tensor2, tensor1_meta, attrs:
           F.reduce_to(F.div(_times_value(dout, attrs), tensor2), tensor1_meta.shape),
           tensor2=lambda dout, tensor1, tensor2, tensor2_meta, attrs:
           F.reduce_to(F.neg(F.div(F.mul(F.div(_times_value(dout, attrs), tensor2), tensor1), tensor2)),
                       tensor2_meta.shape))


# ---- more elementwise binary ops -------------------------------------------------------------------------
# More elementwise binary ops: hypot, logaddexp / logaddexp2, xlogy, fmax / fmin, nextafter, the regularised
# incomplete gamma functions, gcd / lcm, heaviside and the bit shifts (a self-contained family for now; their
# place is ops/binary.py).
#
# As the other binary ops they take one dtype (Note [Math ops take one dtype] in ops/math.py): the functors
# promote first. Gradients follow PyTorch's ``derivatives.yaml``: ``fmax`` / ``fmin`` pass the gradient to the
# input they returned (the other one where that is NaN); ``nextafter`` passes it to ``x`` unchanged; ``igamma`` /
# ``igammac`` are differentiable in ``other`` only, and ``heaviside`` not at all (backward raises, as in PyTorch);
# integer ops (gcd, lcm, shifts) are not differentiable.


for _op in ("broadcast_hypot", "broadcast_logaddexp", "broadcast_logaddexp2", "broadcast_xlogy", "broadcast_fmax",
            "broadcast_fmin", "broadcast_nextafter", "broadcast_igamma", "broadcast_igammac", "broadcast_heaviside"):
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape, infer_dtype=same_input_dtypes)
for _op in ("broadcast_gcd", "broadcast_lcm", "broadcast_bitwise_left_shift", "broadcast_bitwise_right_shift"):
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape, infer_dtype=same_input_dtypes,
                     no_grad=True)


def _to(grad, meta):
    """``grad`` summed to the shape of the input it belongs to (undoing broadcasting)."""
    return F.reduce_to(grad, meta.shape)


def _sigmoid_of_difference(dz, a, b, exp):
    """``dz / (1 + exp(b - a))``: the share of ``a`` in ``logaddexp(a, b)``."""
    return F.div(dz, F.add_scalar(exp(F.sub(b, a)), 1.0))


derivative("broadcast_hypot", name="Hypot",
           x=lambda dz, x, z, x_meta: _to(F.div(F.mul(dz, x), z), x_meta),
           y=lambda dz, y, z, y_meta: _to(F.div(F.mul(dz, y), z), y_meta))
derivative("broadcast_logaddexp", name="Logaddexp",
           x=lambda dz, x, y, x_meta: _to(_sigmoid_of_difference(dz, x, y, F.exp), x_meta),
           y=lambda dz, x, y, y_meta: _to(_sigmoid_of_difference(dz, y, x, F.exp), y_meta))
derivative("broadcast_logaddexp2", name="Logaddexp2",
           x=lambda dz, x, y, x_meta: _to(_sigmoid_of_difference(dz, x, y, F.ops.exp2), x_meta),
           y=lambda dz, x, y, y_meta: _to(_sigmoid_of_difference(dz, y, x, F.ops.exp2), y_meta))
# d/dx = xlogy(x != 0, y) (NaN where y is NaN, 0 where x is 0); d/dy = x / y.
derivative("broadcast_xlogy", name="Xlogy",
           x=lambda dz, x, y, x_meta: _to(F.mul(dz, F.ops.broadcast_xlogy(as_mask(F.ne(x, 0.0), x), y)), x_meta),
           y=lambda dz, x, y, y_meta: _to(F.div(F.mul(dz, x), y), y_meta))


def _fmax_mask(x, y, compare):
    """Where ``fmax`` / ``fmin`` returned ``x``: ``x <compare> y`` (``ge`` / ``le``), or ``y`` is NaN."""
    return F.logical_or(getattr(F, compare)(x, y), F.isnan(y))


def _masked_reduced(dz, mask, meta):
    return _to(F.mul(dz, as_mask(mask, dz)), meta)


def _fmax_rows(compare):
    return {"x": lambda dz, x, y, x_meta: _masked_reduced(dz, _fmax_mask(x, y, compare), x_meta),
            "y": lambda dz, x, y, y_meta: _masked_reduced(dz, F.logical_not(_fmax_mask(x, y, compare)), y_meta)}


derivative("broadcast_fmax", name="Fmax", **_fmax_rows("ge"))
derivative("broadcast_fmin", name="Fmin", **_fmax_rows("le"))
derivative("broadcast_nextafter", name="Nextafter", x=lambda dz, x_meta: _to(dz, x_meta))


def _igamma_rows(sign, name):
    """``d igamma(a, x) / dx = x^(a - 1) exp(-x) / Gamma(a)`` (negated for igammac); no gradient for ``a``."""
    def joint(needs, dz, x, y, y_meta):
        if needs[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        if not needs[1]:
            return None, None
        log_density = F.sub(F.sub(F.mul(F.add_scalar(x, -1.0), F.log(y)), y), F.ops.lgamma(x))
        return None, _to(F.mul_scalar(F.mul(dz, F.exp(log_density)), sign), y_meta)
    return joint


derivative("broadcast_igamma", name="Igamma", joint=_igamma_rows(1.0, "igamma"))
derivative("broadcast_igammac", name="Igammac", joint=_igamma_rows(-1.0, "igammac"))
derivative("broadcast_heaviside", name="Heaviside",
           joint=not_implemented_row("the derivative for 'heaviside' is not implemented."))
