"""Functors of elementwise arithmetic and comparisons, matmul and sum.

Each computes the call's common dtype (PyTorch's promotion, functors/promotion.py),
casts its inputs to it and dispatches one op of that dtype. Python scalars go
to the ``scalar_*`` ops as attrs. In-place calls (``inplace=True``) write into
the first input, which must keep its shape and be able to hold the result's dtype.
The ``Binary`` / ``ScalarBinary`` bases also serve the ops of functors/binary.py.
"""

from __future__ import annotations

from functools import partial

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import _wrap_dim
from oneflow_lite.functors.promotion import (
    cast,
    cast_into,
    check_converts,
    check_inplace_dtype,
    check_inplace_shape,
    floating,
    scalar_dtype,
    tensors_dtype,
    wrap_scalar,
)
from oneflow_lite.functors.registry import composite, functor, get_functor, register_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch

_bool = dt.bool_
_int64 = dt.int64
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def binary_op(op_type):
    return OpBuilder(op_type).input("x").input("y").output("z").build()


def _unary_op(op_type):
    return OpBuilder(op_type).input("x").output("y").build()


def run(op, inputs, attrs, name, out, d):
    """Run ``op`` on ``inputs`` (all of dtype ``d``); with ``out``, write the result into ``out`` instead."""
    if out is None:
        return dispatch(op, inputs, attrs)[0]
    om = out._meta
    for t in inputs:
        if t._meta.shape != om.shape:
            check_inplace_shape(name, om.shape, op.infer(tuple([i._meta for i in inputs]), attrs).out_metas[0].shape)
            break
    if d is om.dtype:
        return dispatch(op, inputs, attrs, (out,))[0]
    return cast_into(dispatch(op, inputs, attrs)[0], out)


def check_int64(name, value):
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        raise RuntimeError(f"{name}: scalar {value} does not fit in int64 (Overflow when unpacking long)")


def _check_alpha(name, d, alpha):
    """PyTorch's ``alpha_check``: a bool alpha needs a bool result, a float alpha a floating one; alpha must
    convert to the result's dtype without overflow."""
    t = type(alpha)
    if t is int:
        check_int64(name, alpha)
        check_converts(name, "alpha", alpha, d)
    elif t is bool:
        if d is not _bool:
            raise RuntimeError(f"{name}: Boolean alpha only supported for Boolean results.")
    elif not d.is_floating_point:
        raise RuntimeError(f"{name}: For integral input tensors, argument alpha must not be a floating point number.")


def _check_sub_bool(x_dtype, other_is_bool):
    """PyTorch's ``sub_check``: no subtraction with a bool operand (tensor or Python bool)."""
    if x_dtype is _bool and other_is_bool:
        raise RuntimeError("sub: Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if x_dtype is _bool or other_is_bool:
        raise RuntimeError("sub: Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _operand(value, alpha, sign, d):
    """``sign * alpha * value`` as a scalar operand for dtype ``d``. An int beyond int64 wraps for an
    integral ``d`` (as int64 arithmetic would) and becomes a float for a floating one."""
    p = value * alpha if alpha != 1 else value
    if sign < 0:
        p = -p
    if type(p) is int and not _INT64_MIN <= p <= _INT64_MAX:
        return float(p) if d.is_floating_point else (p - _INT64_MIN) % 2**64 + _INT64_MIN
    return p


_SCALAR_ATTRS_CACHE_SIZE = 1024


class ScalarOp:
    """A scalar op's exprs: one for an int (or bool) operand, one for a float operand.

    The call attrs of an operand are made once per distinct value (an AttrMap hashes its values
    on first use only), except for ``0.0`` and ``-0.0``, which are equal dict keys but different
    operands (Note [Typed attr map equality]), and NaN, which no lookup would find.
    """

    __slots__ = ("_attrs", "float_op", "int_op")

    def __init__(self, op_type, inputs=("in",), output="out"):
        self.int_op, self.float_op = (self._build(op_type, inputs, output, f) for f in (False, True))
        self._attrs = {}  # float value or (int value,) -> AttrMap

    @staticmethod
    def _build(op_type, inputs, output, has_float_operand):
        builder = OpBuilder(op_type)
        for name in inputs:
            builder.input(name)
        return builder.output(output).attr("has_float_operand", has_float_operand).build()

    def bind(self, value):
        """(op expr, call attrs) carrying the Python scalar ``value``."""
        cache = self._attrs
        if type(value) is float:
            attrs = cache.get(value)
            if attrs is None:
                attrs = AttrMap({"float_operand": value})
                if value and value == value:  # not a zero, not NaN
                    if len(cache) >= _SCALAR_ATTRS_CACHE_SIZE:
                        cache.clear()
                    cache[value] = attrs
            return self.float_op, attrs
        value = int(value)
        key = (value,)  # apart from the floats
        attrs = cache.get(key)
        if attrs is None:
            if len(cache) >= _SCALAR_ATTRS_CACHE_SIZE:
                cache.clear()
            attrs = cache[key] = AttrMap({"int_operand": value})
        return self.int_op, attrs

    def __call__(self, x, value):
        op, attrs = self.bind(value)
        return dispatch(op, (x,), attrs)[0]


# ---- tensor op tensor ----------------------------------------------------------------------------
class _AddSub:
    """``x + alpha * y`` / ``x - alpha * y``: scale ``y`` by ``alpha`` (scalar_mul) when it is not 1."""

    name = op_type = ""

    def __init__(self):
        self.op = binary_op(self.op_type)
        self.mul = ScalarOp("scalar_mul")

    def _compute(self, x, y, alpha, inplace):
        d = tensors_dtype(x, y)
        if type(alpha) is not int or alpha != 1:
            _check_alpha(self.name, d, alpha)
        out = None
        if inplace:
            check_inplace_dtype(self.name, d, x._meta.dtype)
            out = x
        x = cast(x, d)
        y = cast(y, d)
        if alpha != 1:
            y = self.mul(y, alpha)
        return run(self.op, (x, y), None, self.name, out, d)


# Note [Promotion fast path]
# When both tensors already have the common dtype (the same dtype), or a floating tensor meets a
# Python float, an out-of-place call casts nothing and checks nothing that could fail, so the
# functors dispatch straight away; anything else (promotion, integer scalars, alpha, in place)
# goes through the general code.
@functor("Add")
class AddFunctor(_AddSub):
    name, op_type = "add", "broadcast_add"

    def __call__(self, x, y, alpha=1, inplace=False):
        if not inplace and x._meta.dtype is y._meta.dtype and type(alpha) is int and alpha == 1:
            return dispatch(self.op, (x, y))[0]  # Note [Promotion fast path]
        return self._compute(x, y, alpha, inplace)


@functor("Sub")
class SubFunctor(_AddSub):
    name, op_type = "sub", "broadcast_sub"

    def __call__(self, x, y, alpha=1, inplace=False):
        xd, yd = x._meta.dtype, y._meta.dtype
        if xd is _bool or yd is _bool:
            _check_sub_bool(xd, yd is _bool)
        return self._compute(x, y, alpha, inplace)


class Binary:
    """``op(x, y)`` in the common dtype (``result`` adjusts it, e.g. true division gives a float).

    A subclass sets ``name`` and ``op_type``; an instance registered by name passes them instead
    (``register_functor("BitwiseAnd", partial(Binary, "bitwise_and", "broadcast_bitwise_and"))``).
    """

    name = op_type = ""
    result = staticmethod(lambda d: d)

    def __init__(self, name=None, op_type=None):
        if name is not None:
            self.name, self.op_type = name, op_type
        self.op = binary_op(self.op_type)

    def __call__(self, x, y, inplace=False):
        d = x._meta.dtype
        if not inplace and d is y._meta.dtype and self.result(d) is d:
            return dispatch(self.op, (x, y))[0]  # Note [Promotion fast path]
        return self._apply(self.op, self.result(tensors_dtype(x, y)), x, y, inplace)

    def _apply(self, op, d, x, y, inplace):
        out = None
        if inplace:
            check_inplace_dtype(self.name, d, x._meta.dtype)
            out = x
        return run(op, (cast(x, d), cast(y, d)), None, self.name, out, d)


@functor("Mul")
class MulFunctor(Binary):
    name, op_type = "mul", "broadcast_mul"


def _rounding(functor, rounding_mode):
    """The functor's op for ``rounding_mode`` "floor" or "trunc"; PyTorch's error for anything else."""
    if rounding_mode == "floor":
        return functor.floor_op
    if rounding_mode == "trunc":
        return functor.trunc_op
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                       f"'{rounding_mode}'")


@functor("Div")
class DivFunctor(Binary):
    """``div(x, y, rounding_mode=None)``: true division (a float result), or floor / trunc division in the
    common dtype (integers stay integers; Note [Integer division by zero] in kernels/cpu/binary.py)."""

    name, op_type = "div", "broadcast_div"
    result = staticmethod(floating)

    def __init__(self):
        super().__init__()
        self.floor_op = binary_op("broadcast_floordiv")
        self.trunc_op = binary_op("broadcast_truncdiv")

    def __call__(self, x, y, inplace=False, rounding_mode=None):
        if rounding_mode is None:
            return self._apply(self.op, floating(tensors_dtype(x, y)), x, y, inplace)
        return self._apply(_rounding(self, rounding_mode), tensors_dtype(x, y), x, y, inplace)


class _Compare:
    """A comparison of two tensors in their common dtype; the result is bool (in place: cast to ``x``'s)."""

    def __init__(self, name, op_type):
        self.name = name
        self.op = binary_op(op_type)

    def __call__(self, x, y, inplace=False):
        d = tensors_dtype(x, y)
        return run(self.op, (cast(x, d), cast(y, d)), None, self.name, x if inplace else None, _bool)


# ---- tensor op scalar ----------------------------------------------------------------------------
class _ScalarAddSub:
    """``x + alpha * s`` (and ``x - alpha * s`` as ``x + -(alpha * s)``)."""

    name = ""
    sign = 1

    def __init__(self):
        self.add = ScalarOp("scalar_add")

    def __call__(self, x, value, alpha=1, inplace=False):
        xd = x._meta.dtype
        if type(value) is float and xd.is_floating_point and not inplace and type(alpha) is int and alpha == 1:
            op, attrs = self.add.bind(value if self.sign > 0 else -value)  # Note [Promotion fast path]
            return dispatch(op, (x,), attrs)[0]
        if self.sign < 0 and (xd is _bool or type(value) is bool):
            _check_sub_bool(xd, type(value) is bool)
        d = scalar_dtype(xd, value)
        if type(alpha) is not int or alpha != 1:
            _check_alpha(self.name, d, alpha)
        check_int64(self.name, value)
        out = None
        if inplace:
            check_inplace_dtype(self.name, d, xd)
            out = x
        op, attrs = self.add.bind(_operand(value, alpha, self.sign, d))
        return run(op, (cast(x, d),), attrs, self.name, out, d)


@functor("ScalarAdd")
class ScalarAddFunctor(_ScalarAddSub):
    name = "add"


@functor("ScalarSub")
class ScalarSubFunctor(_ScalarAddSub):
    name, sign = "sub", -1


class ScalarBinary:
    """``op(x, s)`` in the common dtype of ``x`` and ``s`` (adjusted by ``result``). ``divides``: an
    integer division by zero raises (Note [Integer division by zero] in kernels/cpu/binary.py)."""

    name = op_type = ""
    result = staticmethod(lambda d: d)
    divides = False

    def __init__(self):
        self.op = ScalarOp(self.op_type)

    def __call__(self, x, value, inplace=False):
        d = x._meta.dtype
        if type(value) is float and d.is_floating_point and not inplace and self.result(d) is d:
            op, attrs = self.op.bind(value)  # Note [Promotion fast path]
            return dispatch(op, (x,), attrs)[0]
        return self._apply(self.op, self.result(scalar_dtype(d, value)), x, value, inplace, self.divides)

    def _apply(self, scalar_op, d, x, value, inplace, divides=False):
        check_int64(self.name, value)
        if divides and value == 0 and not d.is_floating_point and x._meta.numel:
            raise RuntimeError(f"{self.name}: ZeroDivisionError (integer division by zero)")
        out = None
        if inplace:
            check_inplace_dtype(self.name, d, x._meta.dtype)
            out = x
        op, attrs = scalar_op.bind(value)
        return run(op, (cast(x, d),), attrs, self.name, out, d)


@functor("ScalarMul")
class ScalarMulFunctor(ScalarBinary):
    name, op_type = "mul", "scalar_mul"


@functor("ScalarDiv")
class ScalarDivFunctor(ScalarBinary):
    """``div(x, s, rounding_mode=None)``, as ``Div``."""

    name, op_type = "div", "scalar_div"
    result = staticmethod(floating)

    def __init__(self):
        super().__init__()
        self.floor_op = ScalarOp("scalar_floordiv")
        self.trunc_op = ScalarOp("scalar_truncdiv")

    def __call__(self, x, value, inplace=False, rounding_mode=None):
        d = scalar_dtype(x._meta.dtype, value)
        if rounding_mode is None:
            return self._apply(self.op, floating(d), x, value, inplace)
        return self._apply(_rounding(self, rounding_mode), d, x, value, inplace, True)


class _ScalarCompare:
    """A comparison of a tensor and a Python scalar in their common dtype; the result is bool."""

    def __init__(self, name, op_type):
        self.name = name
        self.op = ScalarOp(op_type)

    def __call__(self, x, value, inplace=False):
        check_int64(self.name, value)
        op, attrs = self.op.bind(value)
        out = x if inplace else None
        return run(op, (cast(x, scalar_dtype(x._meta.dtype, value)),), attrs, self.name, out, _bool)


for _name, _fname, _binary, _scalar in (
        ("Equal", "eq", "broadcast_equal", "scalar_logical_equal"),
        ("NotEqual", "ne", "broadcast_not_equal", "scalar_logical_not_equal"),
        ("Less", "lt", "broadcast_less", "scalar_logical_less"),
        ("LessEqual", "le", "broadcast_less_equal", "scalar_logical_less_equal"),
        ("Greater", "gt", "broadcast_greater", "scalar_logical_greater"),
        ("GreaterEqual", "ge", "broadcast_greater_equal", "scalar_logical_greater_equal")):
    register_functor(_name, partial(_Compare, _fname, _binary))
    register_functor("Scalar" + _name, partial(_ScalarCompare, _fname, _scalar))


# ---- scalar op tensor ----------------------------------------------------------------------------
@functor("ScalarAddLeft")
class ScalarAddLeftFunctor:
    """``s + alpha * x``."""

    def __init__(self):
        self.add = ScalarOp("scalar_add")
        self.mul = ScalarOp("scalar_mul")

    def __call__(self, value, x, alpha=1):
        d = scalar_dtype(x._meta.dtype, value)
        if type(alpha) is not int or alpha != 1:
            _check_alpha("add", d, alpha)
        check_int64("add", value)
        x = cast(x, d)
        if alpha != 1:
            x = self.mul(x, alpha)
        return self.add(x, value)


@functor("ScalarSubLeft")
class ScalarSubLeftFunctor:
    """``s - alpha * x``, computed as ``-x + s`` (or ``x * -alpha + s``)."""

    def __init__(self):
        self.neg = _unary_op("negative")
        self.add = ScalarOp("scalar_add")
        self.mul = ScalarOp("scalar_mul")

    def __call__(self, value, x, alpha=1):
        xd = x._meta.dtype
        if xd is _bool or type(value) is bool:
            _check_sub_bool(xd, type(value) is bool)
        d = scalar_dtype(xd, value)
        if type(alpha) is not int or alpha != 1:
            _check_alpha("sub", d, alpha)
        check_int64("sub", value)
        x = cast(x, d)
        x = dispatch(self.neg, (x,))[0] if alpha == 1 else self.mul(x, -alpha)
        return self.add(x, value)


@composite("ScalarMulLeft")
def scalar_mul_left(value, x):
    """``s * x``: ``mul(x, s)``."""
    return F.mul(x, value)


@functor("ScalarDivLeft")
class ScalarDivLeftFunctor:
    """``s / x`` (true division: the result is floating); with a rounding mode, ``s`` is wrapped as a 0-d
    tensor and divided as ``Div`` does."""

    def __init__(self):
        self.op = ScalarOp("scalar_reverse_div")
        self.div = get_functor("Div")

    def __call__(self, value, x, rounding_mode=None):
        check_int64("div", value)
        d = scalar_dtype(x._meta.dtype, value)
        if rounding_mode is None:
            return self.op(cast(x, floating(d)), value)
        return self.div(wrap_scalar(value, d, x._meta.device), x, False, rounding_mode)


# ---- unary ------------------------------------------------------------------------------------
@functor("Neg")
class NegFunctor:
    def __init__(self):
        self.op = _unary_op("negative")

    def __call__(self, x, inplace=False):
        if x._meta.dtype is _bool:
            raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or `logical_not()` operator "
                               "instead.")
        if inplace:
            return dispatch(self.op, (x,), None, (x,))[0]
        return dispatch(self.op, (x,))[0]


register_functor("Negative", NegFunctor)  # an alias's own functor: Note [Functional names of op calls]


@functor("Exp")
class ExpFunctor:
    """``exp(x)``; integer and bool tensors give the default float dtype, as in PyTorch (in place: the input
    must be floating)."""

    def __init__(self):
        self.op = _unary_op("exp")

    def __call__(self, x, inplace=False):
        d = floating(x._meta.dtype)
        if inplace:
            check_inplace_dtype("exp", d, x._meta.dtype)
            return dispatch(self.op, (x,), None, (x,))[0]
        return dispatch(self.op, (cast(x, d),))[0]


# ---- matmul and sum ---------------------------------------------------------------------------
@functor("MatMul")
class MatMulFunctor:
    """PyTorch's ``matmul``: shapes and dtypes are checked by the op's inference."""

    def __init__(self):
        self.op = OpBuilder("matmul").input("a").input("b").output("out").build()

    def __call__(self, a, b):
        return dispatch(self.op, (a, b))[0]


@functor("ReduceSum")
class ReduceSumFunctor:
    """``sum(x, dim=None, keepdim=False, *, dtype=None)``.

    With ``dtype`` the input is cast to it first; otherwise integer and bool
    inputs sum in int64, as in PyTorch. ``dim`` None or empty sums everything.
    """

    def __init__(self):
        self.op = OpBuilder("reduce_sum").input("input_tensor").output("output_tensor").build()
        self._all = {}  # (ndim, keepdim) -> attrs reducing every dim
        self._dims = {}  # (axes, keepdim) -> attrs

    def __call__(self, x, dim=None, keepdim=False, dtype=None):
        m = x._meta
        if dim:
            ndim = m.ndim
            axes = []
            for d in dim:
                a = _wrap_dim(d, max(ndim, 1), "sum")  # a 0-d tensor has dim 0 (and -1)
                if a in axes:
                    raise RuntimeError(f"sum: dim {a} appears multiple times in the list of dims")
                axes.append(a)
            attrs = cached_attrs(self._dims, ("axis", "keepdims"), (tuple(axes) if ndim else (), bool(keepdim)))
        else:
            key = (m.ndim, keepdim)
            attrs = self._all.get(key)
            if attrs is None:
                attrs = self._all.setdefault(key, AttrMap({"axis": tuple(range(m.ndim)), "keepdims": keepdim}))
        if dtype is None:
            dtype = m.dtype if m.dtype.is_floating_point else _int64
        return dispatch(self.op, (cast(x, dtype),), attrs)[0]


# Aliases (divide, true_divide, multiply, subtract): functors of their own, so that their op exprs carry their
# name (Note [Functional names of op calls] in profiler/names.py).
for _name, _factory in (("Divide", DivFunctor), ("TrueDivide", DivFunctor), ("ScalarDivide", ScalarDivFunctor),
                        ("ScalarTrueDivide", ScalarDivFunctor), ("ScalarDivideLeft", ScalarDivLeftFunctor),
                        ("Multiply", MulFunctor), ("ScalarMultiply", ScalarMulFunctor), ("Subtract", SubFunctor),
                        ("ScalarSubtract", ScalarSubFunctor), ("ScalarSubtractLeft", ScalarSubLeftFunctor)):
    register_functor(_name, _factory)
for _name, _fname, _binary, _scalar in (
        ("NotEqualAlias", "not_equal", "broadcast_not_equal", "scalar_logical_not_equal"),
        ("LessAlias", "less", "broadcast_less", "scalar_logical_less"),
        ("LessEqualAlias", "less_equal", "broadcast_less_equal", "scalar_logical_less_equal"),
        ("GreaterAlias", "greater", "broadcast_greater", "scalar_logical_greater"),
        ("GreaterEqualAlias", "greater_equal", "broadcast_greater_equal", "scalar_logical_greater_equal")):
    register_functor(_name, partial(_Compare, _fname, _binary))
    register_functor("Scalar" + _name, partial(_ScalarCompare, _fname, _scalar))
