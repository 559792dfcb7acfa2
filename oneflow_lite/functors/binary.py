"""Functors of floor_divide, pow, maximum / minimum, fmod / remainder, atan2, the logical and
bitwise ops, where, lerp, addcmul and addcdiv; hypot, logaddexp / logaddexp2, xlogy, fmax / fmin,
nextafter, igamma / igammac, gcd / lcm, heaviside and the bit shifts (the ops of ops/binary.py),
and the composites copysign, ldexp, float_power and rsub.

They promote as functors/math.py does (its ``Binary`` / ``ScalarBinary`` bases).
A Python scalar goes to a ``scalar_*`` op where one exists; elsewhere (``2 % t``,
``t & 1``, ``where(c, t, 0.0)``) it becomes a 0-d tensor of the call's common
dtype, PyTorch's wrapped number (``wrap_scalar``).
"""

from __future__ import annotations

import math
import warnings
from functools import partial

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.math import Binary, ScalarBinary, ScalarOp, binary_op, check_int64, run
from oneflow_lite.functors.promotion import (
    TORCH_NAMES,
    cast,
    check_converts,
    check_inplace_dtype,
    common_dtype,
    floating,
    integer_mask,
    opmath_dtype,
    scalar_dtype,
    tensors_dtype,
    wrap_scalar,
)
from oneflow_lite.functors.registry import composite, functor, get_functor, register_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.functors.unary import inplace_source, write_result
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.common import broadcast_shapes

_bool = dt.bool_
_uint8 = dt.uint8
_result_type = dt.result_type


def _scalar_left(name, value, x):
    """``op(s, x)`` for the functional function ``name``: ``s`` wrapped as a 0-d tensor of the common dtype,
    then ``name(s, x)``."""
    check_int64(name, value)
    return getattr(F, name)(wrap_scalar(value, scalar_dtype(x._meta.dtype, value), x._meta.device), x)


# ---- floor_divide ----------------------------------------------------------------------------------
@functor("FloorDivide")
class FloorDivideFunctor(Binary):
    """``floor_divide(x, y)``: ``div(x, y, rounding_mode="floor")`` (PyTorch >= 1.13)."""

    name, op_type = "floor_divide", "broadcast_floordiv"


@functor("ScalarFloorDivide")
class ScalarFloorDivideFunctor(ScalarBinary):
    name, op_type, divides = "floor_divide", "scalar_floordiv", True


composite("ScalarFloorDivideLeft")(partial(_scalar_left, "floor_divide"))


# ---- pow ---------------------------------------------------------------------------------------------
@functor("Pow")
class PowFunctor(Binary):
    """``pow(x, y)``; integers to negative integer powers follow Note [Integer powers] (kernels/cpu/binary.py)."""

    name, op_type = "pow", "broadcast_pow"


@functor("ScalarPow")
class ScalarPowFunctor(ScalarBinary):
    """``pow(x, s)``: PyTorch refuses an integer (or bool) tensor to a negative integer power."""

    name, op_type = "pow", "scalar_pow"

    def __call__(self, x, value, inplace=False):
        xd = x._meta.dtype
        if not xd.is_floating_point and type(value) is not float and value < 0:
            raise RuntimeError("pow: Integers to negative integer powers are not allowed.")
        return self._apply(self.op, scalar_dtype(xd, value), x, value, inplace)


@functor("ScalarReversePow")
class ScalarReversePowFunctor:
    """``pow(s, x)``: ``s ** x`` in the common dtype of ``s`` and ``x``."""

    def __init__(self):
        self.op = ScalarOp("scalar_reverse_pow")

    def __call__(self, value, x):
        check_int64("pow", value)
        return self.op(cast(x, scalar_dtype(x._meta.dtype, value)), value)


# ---- maximum, minimum, atan2 --------------------------------------------------------------------------
@functor("Maximum")
class MaximumFunctor(Binary):
    name, op_type = "maximum", "broadcast_maximum"


@functor("Minimum")
class MinimumFunctor(Binary):
    name, op_type = "minimum", "broadcast_minimum"


@functor("Atan2")
class Atan2Functor(Binary):
    name, op_type = "atan2", "broadcast_atan2"
    result = staticmethod(floating)


# ---- fmod, remainder --------------------------------------------------------------------------------
@functor("Fmod")
class FmodFunctor(Binary):
    """``fmod(x, y)``: C's fmod, the result has the sign of ``x``."""

    name, op_type = "fmod", "broadcast_fmod"


@functor("ScalarFmod")
class ScalarFmodFunctor(ScalarBinary):
    name, op_type, divides = "fmod", "scalar_fmod", True


@functor("Remainder")
class RemainderFunctor(Binary):
    """``remainder(x, y)``: Python's ``%``, the result has the sign of ``y``."""

    name, op_type = "remainder", "broadcast_floor_mod"


@functor("ScalarRemainder")
class ScalarRemainderFunctor(ScalarBinary):
    name, op_type, divides = "remainder", "scalar_floor_mod", True


composite("ScalarRemainderLeft")(partial(_scalar_left, "remainder"))


# ---- logical and bitwise ops -------------------------------------------------------------------------
class _Logical:
    """A logical op on tensors of any dtypes (truthiness); the result is bool (in place: cast to ``x``'s)."""

    def __init__(self, name):
        self.name = name
        self.op = binary_op("broadcast_" + name)

    def __call__(self, x, y, inplace=False):
        return run(self.op, (x, y), None, self.name, x if inplace else None, _bool)


def _scalar_bitwise(name, x, value, inplace=False):
    """``op(x, s)`` for the functional function ``name``: ``s`` wrapped as a 0-d tensor of the common dtype
    (the bitwise ops have no scalar op)."""
    check_int64(name, value)
    d = scalar_dtype(x._meta.dtype, value)
    return getattr(F, name)(x, wrap_scalar(value, d, x._meta.device), inplace=inplace)


for _name in ("And", "Or", "Xor"):
    _logical, _bitwise = "logical_" + _name.lower(), "bitwise_" + _name.lower()
    register_functor("Logical" + _name, partial(_Logical, _logical))
    register_functor("Bitwise" + _name, partial(Binary, _bitwise, "broadcast_" + _bitwise))
    composite(f"ScalarBitwise{_name}")(partial(_scalar_bitwise, _bitwise))
    composite(f"ScalarBitwise{_name}Left")(partial(_scalar_left, _bitwise))


@functor("BitwiseNot")
class BitwiseNotFunctor:
    """``~x``: bitwise not of integers, logical not of bool."""

    def __init__(self):
        self.op = OpBuilder("bitwise_not").input("x").output("y").build()

    def __call__(self, x, inplace=False):
        return run(self.op, (x,), None, "bitwise_not", x if inplace else None, x._meta.dtype)


# ---- where -------------------------------------------------------------------------------------------
@functor("Where")
class WhereFunctor:
    """``where(condition, x, y)``: ``x`` where ``condition`` holds, else ``y``, in their common dtype;
    the three broadcast together. An integer condition is accepted (OneFlow's; Note [Integer masks] in
    functors/promotion.py), a uint8 one with PyTorch's deprecation warning."""

    def __init__(self):
        self.op = OpBuilder("where").input("condition").input("x").input("y").output("out").build()

    def __call__(self, condition, x, y):
        d = tensors_dtype(x, y)
        return self.where(condition, cast(x, d), cast(y, d))

    def where(self, condition, x, y):
        if condition._meta.dtype is _uint8:
            warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be "
                          "removed in a future version of PyTorch. Use a boolean condition instead.",
                          UserWarning, stacklevel=4)
        return dispatch(self.op, (integer_mask(condition), x, y))[0]


@composite("WhereNonzero")
def where_nonzero(condition):
    """``where(condition)``: ``nonzero(condition, as_tuple=True)``."""
    return F.nonzero(condition, as_tuple=True)


@functor("WhereScalarX")
class WhereScalarXFunctor:
    def __init__(self):
        self.where = get_functor("Where").where

    def __call__(self, condition, value, y):
        check_int64("where", value)
        d = scalar_dtype(y._meta.dtype, value)
        check_converts("where", "value", value, opmath_dtype(d))  # 1e30 then rounds to inf
        return self.where(condition, wrap_scalar(value, d, y._meta.device), cast(y, d))


@functor("WhereScalarY")
class WhereScalarYFunctor:
    def __init__(self):
        self.where = get_functor("Where").where

    def __call__(self, condition, x, value):
        check_int64("where", value)
        d = scalar_dtype(x._meta.dtype, value)
        check_converts("where", "value", value, opmath_dtype(d))  # 1e30 then rounds to inf
        return self.where(condition, cast(x, d), wrap_scalar(value, d, x._meta.device))


@functor("WhereScalarXY")
class WhereScalarXYFunctor:
    """``where(condition, a, b)`` with two scalars: their dtype is bool, int64 or the default float."""

    def __init__(self):
        self.where = get_functor("Where").where

    def __call__(self, condition, a, b):
        check_int64("where", a)
        check_int64("where", b)
        d = _result_type(None, (), (a, b))
        device = condition._meta.device
        return self.where(condition, wrap_scalar(a, d, device), wrap_scalar(b, d, device))


# ---- lerp --------------------------------------------------------------------------------------------
@functor("Lerp")
class LerpFunctor:
    """``lerp(start, end, weight)``: ``start + weight * (end - start)``; floating tensors of one dtype
    (no promotion, as in PyTorch), broadcasting together."""

    def __init__(self):
        self.op = OpBuilder("lerp").input("start").input("end").input("weight").output("out").build()

    def __call__(self, start, end, weight, inplace=False):
        return run(self.op, (start, end, weight), None, "lerp", start if inplace else None, start._meta.dtype)


@functor("ScalarLerp")
class ScalarLerpFunctor:
    def __init__(self):
        self.op = OpBuilder("scalar_lerp").input("start").input("end").output("out").build()
        self._attrs = {}

    def __call__(self, start, end, weight, inplace=False):
        attrs = cached_attrs(self._attrs, ("weight",), (float(weight),))
        return run(self.op, (start, end), attrs, "lerp", start if inplace else None, start._meta.dtype)


# ---- addcmul, addcdiv -------------------------------------------------------------------------------
class _AddcOp:
    """``input + value * tensor1 <op> tensor2`` in the common dtype of the three tensors."""

    name = ""

    def __init__(self):
        self.op = ScalarOp(self.name, ("input", "tensor1", "tensor2"))

    def __call__(self, x, t1, t2, value=1, inplace=False):
        d = common_dtype(x, t1, t2)
        if type(value) is float and not d.is_floating_point:
            raise RuntimeError(f"{self.name}: For integral input tensors, argument value must not be a floating "
                               f"point number.")
        check_int64(self.name, value)
        check_converts(self.name, "value", value, opmath_dtype(d))
        out = None
        if inplace:
            check_inplace_dtype(self.name, d, x._meta.dtype)
            out = x
        op, attrs = self.op.bind(value)
        return run(op, (cast(x, d), cast(t1, d), cast(t2, d)), attrs, self.name, out, d)


@functor("Addcmul")
class AddcmulFunctor(_AddcOp):
    name = "addcmul"


@functor("Addcdiv")
class AddcdivFunctor(_AddcOp):
    name = "addcdiv"

    def __call__(self, x, t1, t2, value=1, inplace=False):
        if not (t1._meta.dtype.is_floating_point or t2._meta.dtype.is_floating_point):
            raise RuntimeError(
                "addcdiv: Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
                "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior "
                "is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")
        return super().__call__(x, t1, t2, value, inplace)


# ---- [compat s1] hypot, logaddexp, xlogy, fmax / fmin, nextafter, igamma, gcd / lcm, heaviside, shifts,
# copysign, ldexp, float_power, rsub (the ops of ops/binary.py: promotion as above; kernels decide dtypes)
for _functor, _name in (("Hypot", "hypot"), ("Logaddexp", "logaddexp"), ("Logaddexp2", "logaddexp2"),
                        ("Fmax", "fmax"), ("Fmin", "fmin"), ("Nextafter", "nextafter"), ("Igamma", "igamma"),
                        ("Igammac", "igammac"), ("Gcd", "gcd"), ("Lcm", "lcm"),
                        ("BitwiseLeftShift", "bitwise_left_shift"), ("BitwiseRightShift", "bitwise_right_shift")):
    register_functor(_functor, partial(Binary, _name, "broadcast_" + _name))
for _name, _fname in (("BitwiseLeftShift", "bitwise_left_shift"), ("BitwiseRightShift", "bitwise_right_shift")):
    composite(f"Scalar{_name}")(partial(_scalar_bitwise, _fname))
    composite(f"Scalar{_name}Left")(partial(_scalar_left, _fname))


class _FloatingBinary(Binary):
    result = staticmethod(floating)


register_functor("Xlogy", partial(_FloatingBinary, "xlogy", "broadcast_xlogy"))
@composite("ScalarXlogy")
def scalar_xlogy(x, value, inplace=False):
    """``xlogy(x, s)``: ``s`` as a 0-d tensor of the floating result dtype (an integer ``x`` would wrap it)."""
    check_int64("xlogy", value)
    d = scalar_dtype(x._meta.dtype, value) if inplace else floating(scalar_dtype(x._meta.dtype, value))
    return F.xlogy(x, wrap_scalar(value, d, x._meta.device), inplace=inplace)


@composite("ScalarXlogyLeft")
def scalar_xlogy_left(value, x):
    """``xlogy(s, x)``: ``s`` as a 0-d tensor of the floating result dtype."""
    check_int64("xlogy", value)
    return F.xlogy(wrap_scalar(value, floating(scalar_dtype(x._meta.dtype, value)), x._meta.device), x)


@functor("Heaviside")
class HeavisideFunctor(Binary):
    """``heaviside(input, values)``: 0 where ``input < 0``, ``values`` where it is 0, 1 where it is > 0 (and
    0 for NaN); the two must have one dtype, as in PyTorch."""

    name, op_type = "heaviside", "broadcast_heaviside"

    def __call__(self, x, values, inplace=False):
        if x._meta.dtype is not values._meta.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
        return super().__call__(x, values, inplace)


@composite("Copysign")
def copysign(x, other, inplace=False):
    """``|x|`` with the sign bit of ``other`` (so of its zeros and NaNs), in their floating common dtype."""
    mag = F.abs(cast(inplace_source(x, inplace), floating(tensors_dtype(x, other))))
    r = F.where(F.signbit(other), F.neg(mag), mag)
    return write_result("copysign", r, x) if inplace else r


@composite("ScalarCopysign")
def scalar_copysign(x, other, inplace=False):
    mag = F.abs(cast(inplace_source(x, inplace), floating(scalar_dtype(x._meta.dtype, other))))
    r = F.neg(mag) if math.copysign(1.0, other) < 0 else mag
    return write_result("copysign", r, x) if inplace else r


@composite("Ldexp")
def ldexp(x, other, inplace=False):
    """``x * 2 ** other`` (PyTorch's definition). An ``other`` that requires grad is broadcast to the result
    first, so its gradient sums the elementwise ``dy * x * 2 ** other * log 2`` (0 for an empty result) instead
    of scaling a sum by ``2 ** other`` (``0 * inf``)."""
    if other.requires_grad:
        shape = broadcast_shapes("ldexp", tuple(x._meta.shape), tuple(other._meta.shape))
        if shape != tuple(other._meta.shape):
            other = F.expand(other, shape)
    return F.mul(x, F.pow(2.0, other), inplace=inplace)


def _float_power(x, exponent, inplace):
    """``pow`` in float64; in place, the input must be float64 already."""
    xd = x._meta.dtype
    if inplace and xd is not dt.float64:
        raise RuntimeError(f"float_power_: the base given to float_power_ has dtype {TORCH_NAMES[xd]} but the "
                           f"operation's result requires dtype Double")
    return F.pow(cast(x, dt.float64), exponent, inplace=inplace)


composite("FloatPower")(lambda x, exponent, inplace=False: _float_power(x, cast(exponent, dt.float64), inplace))
# a Python exponent as a float: float_power computes in float64 (an int exponent of -2**63 has no int64 n - 1)
composite("ScalarFloatPower")(lambda x, exponent, inplace=False: _float_power(x, float(exponent), inplace))
composite("ScalarFloatPowerLeft")(lambda value, exponent: F.pow(value, cast(exponent, dt.float64)))


@composite("Rsub")
def rsub(x, other, alpha=1):
    """``other - alpha * x``."""
    return F.sub(other, x, alpha=alpha)
