"""Grad functions of the ops in ops/binary.py (PyTorch's derivatives.yaml formulas).

Rounding division is piecewise constant: its grads are zeros. The logical and
bitwise ops have bool / integer outputs, are defined ``no_grad`` and need none.
"""

from __future__ import annotations

import math

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import (
    add,
    div,
    div_scalar,
    mul,
    mul_scalar,
    neg,
    reduce_to,
    scalar_operand,
    zeros,
)
from oneflow_lite.functors.registry import get_functor

_where = get_functor("Where")
_where_scalar_x = get_functor("WhereScalarX")
_where_scalar_y = get_functor("WhereScalarY")
_pow = get_functor("Pow")
_scalar_pow = get_functor("ScalarPow")
_scalar_sub = get_functor("ScalarSub")
_scalar_sub_left = get_functor("ScalarSubLeft")
_sub = get_functor("Sub")
_div = get_functor("Div")
_eq = get_functor("Equal")
_lt = get_functor("Less")
_gt = get_functor("Greater")
_scalar_eq = get_functor("ScalarEqual")
_scalar_ge = get_functor("ScalarGreaterEqual")
_logical_and = get_functor("LogicalAnd")


def _log(x):
    return get_functor("Log")(x)  # looked up when first needed: the unary ops register it


def _masked(mask, g):
    """``g`` where ``mask`` is False, 0 where it is True."""
    return _where_scalar_x(mask, 0.0, g)


def _zeros_like(meta):
    return zeros(meta.shape, meta.dtype, meta.device)


class _Broadcast(OpExprGradFunction):
    """Remembers the input shapes; the grad of each operand is reduced back to its shape."""

    def capture(self, state, inputs, outputs, attrs):
        state.x_shape = inputs[0]._meta.shape
        state.y_shape = inputs[1]._meta.shape


class _SaveInputs(_Broadcast):
    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        state.save_for_backward(inputs[0], inputs[1])


# ---- rounding division: zero grads -------------------------------------------------------------------
class _ZeroGrad(OpExprGradFunction):
    def capture(self, state, inputs, outputs, attrs):
        state.metas = tuple(t._meta for t in inputs)

    def apply(self, state, out_grads):
        return tuple(_zeros_like(m) if n else None for m, n in zip(state.metas, state.needs_input_grad))


for _op, _name in (("broadcast_floordiv", "FloorDivide"), ("broadcast_truncdiv", "TruncDivide"),
                   ("scalar_floordiv", "ScalarFloorDivide"), ("scalar_truncdiv", "ScalarTruncDivide")):
    register_op_grad(_op)(type(_name + "Grad", (_ZeroGrad,), {"name": _name}))


# ---- pow ---------------------------------------------------------------------------------------------
@register_op_grad("broadcast_pow")
class BroadcastPowGrad(_Broadcast):
    """z = x ** y: dx = dz * y * x ** (y - 1) (0 where y == 0), dy = dz * z * log(x) (0 where x == 0
    and y >= 0)."""

    name = "Pow"

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        state.save_for_backward(inputs[0], inputs[1], outputs[0] if state.needs_input_grad[1] else None)

    def apply(self, state, out_grads):
        dz = out_grads[0]
        x, y, z = state.saved_tensors
        nx, ny = state.needs_input_grad
        dx = dy = None
        if nx:
            dx = reduce_to(_masked(_scalar_eq(y, 0, False), mul(dz, mul(y, _pow(x, _scalar_sub(y, 1, 1, False))))),
                           state.x_shape)
        if ny:
            at_zero = _logical_and(_scalar_eq(x, 0, False), _scalar_ge(y, 0, False))
            dy = reduce_to(_masked(at_zero, mul(dz, mul(z, _log(x)))), state.y_shape)
        return (dx, dy)


@register_op_grad("scalar_pow")
class ScalarPowGrad(OpExprGradFunction):
    """out = x ** s: dx = dout * s * x ** (s - 1), zeros when s == 0."""

    name = "ScalarPow"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.exponent = scalar_operand(attrs)
            state.save_for_backward(inputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (x,) = state.saved_tensors
        s = state.exponent
        if s == 0:
            return (_zeros_like(x._meta),)
        return (mul(out_grads[0], mul_scalar(_scalar_pow(x, s - 1, False), s)),)


@register_op_grad("scalar_reverse_pow")
class ScalarReversePowGrad(OpExprGradFunction):
    """out = s ** x: dx = dout * out * log(s). For s == 0 that is 0 where x >= 0 (as PyTorch) and
    dout * inf * -inf elsewhere, computed as dout / -0.0 (division is quiet: no 0 * inf warnings)."""

    name = "ScalarReversePow"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.base = scalar_operand(attrs)
            state.save_for_backward(inputs[0], outputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        x, out = state.saved_tensors
        s = state.base
        if s == 0:
            return (_masked(_scalar_ge(x, 0, False), div_scalar(out_grads[0], -0.0)),)
        return (mul_scalar(mul(out_grads[0], out), math.log(s) if s > 0 else math.nan),)


# ---- maximum, minimum --------------------------------------------------------------------------------
class _MaxMinGrad(_SaveInputs):
    """The grad goes to the larger (smaller) operand and is split evenly on ties; NaN takes it on both
    sides (PyTorch's masks)."""

    x_loses = y_loses = None

    def apply(self, state, out_grads):
        dz = out_grads[0]
        x, y = state.saved_tensors
        nx, ny = state.needs_input_grad
        shared = _where(_eq(x, y, False), mul_scalar(dz, 0.5), dz)
        return (reduce_to(_masked(self.x_loses(x, y, False), shared), state.x_shape) if nx else None,
                reduce_to(_masked(self.y_loses(x, y, False), shared), state.y_shape) if ny else None)


@register_op_grad("broadcast_maximum")
class BroadcastMaximumGrad(_MaxMinGrad):
    name = "Maximum"
    x_loses, y_loses = staticmethod(_lt), staticmethod(_gt)


@register_op_grad("broadcast_minimum")
class BroadcastMinimumGrad(_MaxMinGrad):
    name = "Minimum"
    x_loses, y_loses = staticmethod(_gt), staticmethod(_lt)


# ---- fmod, remainder ---------------------------------------------------------------------------------
class _ModGrad(_SaveInputs):
    """z = x - q * y with q = div(x, y, rounding_mode): dx = dz, dy = -dz * q."""

    rounding_mode = ""

    def apply(self, state, out_grads):
        dz = out_grads[0]
        x, y = state.saved_tensors
        nx, ny = state.needs_input_grad
        return (reduce_to(dz, state.x_shape) if nx else None,
                reduce_to(neg(mul(dz, _div(x, y, False, self.rounding_mode))), state.y_shape) if ny else None)


@register_op_grad("broadcast_fmod")
class BroadcastFmodGrad(_ModGrad):
    name, rounding_mode = "Fmod", "trunc"


@register_op_grad("broadcast_floor_mod")
class BroadcastFloorModGrad(_ModGrad):
    name, rounding_mode = "Remainder", "floor"


class _ScalarModGrad(OpExprGradFunction):
    def capture(self, state, inputs, outputs, attrs):
        pass

    def apply(self, state, out_grads):
        return (out_grads[0] if state.needs_input_grad[0] else None,)


register_op_grad("scalar_fmod")(type("ScalarFmodGrad", (_ScalarModGrad,), {"name": "ScalarFmod"}))
register_op_grad("scalar_floor_mod")(type("ScalarFloorModGrad", (_ScalarModGrad,), {"name": "ScalarRemainder"}))


# ---- atan2 -------------------------------------------------------------------------------------------
@register_op_grad("broadcast_atan2")
class BroadcastAtan2Grad(_SaveInputs):
    """z = atan2(x, y): dx = dz * y / (x^2 + y^2), dy = -dz * x / (x^2 + y^2)."""

    name = "Atan2"

    def apply(self, state, out_grads):
        dz = out_grads[0]
        x, y = state.saved_tensors
        nx, ny = state.needs_input_grad
        scaled = div(dz, add(mul(x, x), mul(y, y)))
        return (reduce_to(mul(scaled, y), state.x_shape) if nx else None,
                reduce_to(neg(mul(scaled, x)), state.y_shape) if ny else None)


# ---- where -------------------------------------------------------------------------------------------
@register_op_grad("where")
class WhereGrad(OpExprGradFunction):
    """out = where(c, x, y): dx = dout where c, dy = dout where not c (each reduced to its shape)."""

    name = "Where"

    def capture(self, state, inputs, outputs, attrs):
        state.x_shape = inputs[1]._meta.shape
        state.y_shape = inputs[2]._meta.shape
        state.save_for_backward(inputs[0])

    def apply(self, state, out_grads):
        dout = out_grads[0]
        (c,) = state.saved_tensors
        _, nx, ny = state.needs_input_grad
        return (None,
                reduce_to(_where_scalar_y(c, dout, 0.0), state.x_shape) if nx else None,
                reduce_to(_masked(c, dout), state.y_shape) if ny else None)


# ---- lerp --------------------------------------------------------------------------------------------
@register_op_grad("lerp")
class LerpGrad(OpExprGradFunction):
    """out = start + w * (end - start): dstart = dout * (1 - w), dend = dout * w, dw = dout * (end - start)."""

    name = "Lerp"

    def capture(self, state, inputs, outputs, attrs):
        state.shapes = tuple(t._meta.shape for t in inputs)
        start, end, weight = inputs
        nw = state.needs_input_grad[2]
        state.save_for_backward(start if nw else None, end if nw else None, weight)

    def apply(self, state, out_grads):
        dout = out_grads[0]
        start, end, w = state.saved_tensors
        ns, ne, nw = state.needs_input_grad
        s_shape, e_shape, w_shape = state.shapes
        return (reduce_to(mul(dout, _scalar_sub_left(1, w, 1)), s_shape) if ns else None,
                reduce_to(mul(dout, w), e_shape) if ne else None,
                reduce_to(mul(dout, _sub(end, start, 1, False)), w_shape) if nw else None)


@register_op_grad("scalar_lerp")
class ScalarLerpGrad(_Broadcast):
    name = "ScalarLerp"

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        state.weight = attrs["weight"]

    def apply(self, state, out_grads):
        dout = out_grads[0]
        ns, ne = state.needs_input_grad
        w = state.weight
        return (reduce_to(mul_scalar(dout, 1.0 - w), state.x_shape) if ns else None,
                reduce_to(mul_scalar(dout, w), state.y_shape) if ne else None)


# ---- addcmul, addcdiv ---------------------------------------------------------------------------------
class _AddcGrad(OpExprGradFunction):
    """Both ops: dt1 needs t2, dt2 needs t1 (and t2 for addcdiv)."""

    def capture(self, state, inputs, outputs, attrs):
        state.shapes = tuple(t._meta.shape for t in inputs)
        state.value = scalar_operand(attrs)
        _, n1, n2 = state.needs_input_grad
        state.save_for_backward(inputs[1] if n2 else None, inputs[2] if n1 or n2 else None)


@register_op_grad("addcmul")
class AddcmulGrad(_AddcGrad):
    """out = input + v * t1 * t2: dinput = dout, dt1 = dout * v * t2, dt2 = dout * v * t1."""

    name = "Addcmul"

    def apply(self, state, out_grads):
        dout = out_grads[0]
        t1, t2 = state.saved_tensors
        ni, n1, n2 = state.needs_input_grad
        shape_i, shape_1, shape_2 = state.shapes
        scaled = mul_scalar(dout, state.value) if n1 or n2 else None
        return (reduce_to(dout, shape_i) if ni else None,
                reduce_to(mul(scaled, t2), shape_1) if n1 else None,
                reduce_to(mul(scaled, t1), shape_2) if n2 else None)


@register_op_grad("addcdiv")
class AddcdivGrad(_AddcGrad):
    """out = input + v * t1 / t2: dinput = dout, dt1 = dout * v / t2, dt2 = -dout * v * t1 / t2^2."""

    name = "Addcdiv"

    def apply(self, state, out_grads):
        dout = out_grads[0]
        t1, t2 = state.saved_tensors
        ni, n1, n2 = state.needs_input_grad
        shape_i, shape_1, shape_2 = state.shapes
        scaled = div(mul_scalar(dout, state.value), t2) if n1 or n2 else None
        return (reduce_to(dout, shape_i) if ni else None,
                reduce_to(scaled, shape_1) if n1 else None,
                reduce_to(neg(div(mul(scaled, t1), t2)), shape_2) if n2 else None)
