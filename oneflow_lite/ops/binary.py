"""More elementwise binary and ternary ops: rounding division, pow, maximum / minimum, fmod /
remainder, atan2, logical and bitwise ops, where, lerp, addcmul and addcdiv (OneFlow's names).

As in ops/math.py, the arithmetic ops take one dtype (Note [Math ops take one
dtype]) and the ``scalar_*`` ops carry their Python scalar as OneFlow's
``int_operand`` / ``float_operand`` / ``has_float_operand`` attrs. The logical
ops look only at truthiness, which promotion never changes, so they take inputs
of any two dtypes without casts.
"""

from __future__ import annotations

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import broadcast_shapes, same_dtype, same_shape
from oneflow_lite.ops.math import SCALAR_ATTRS, binary_shape, same_input_dtypes

_BOOL = dt.bool_


def _bool_dtype(ctx):
    return _BOOL


for _op in ("broadcast_floordiv", "broadcast_truncdiv", "broadcast_pow", "broadcast_maximum", "broadcast_minimum",
            "broadcast_fmod", "broadcast_floor_mod", "broadcast_atan2"):
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape, infer_dtype=same_input_dtypes)

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
# out = input + value * tensor1 * tensor2 (addcmul) or input + value * tensor1 / tensor2 (addcdiv);
# ``value`` is a scalar operand as in the scalar ops.
for _op in ("addcmul", "addcdiv"):
    register_user_op(_op, inputs=["input", "tensor1", "tensor2"], outputs=["out"], attrs=SCALAR_ATTRS,
                     infer_shape=_broadcast_of("input", "tensor1", "tensor2"),
                     infer_dtype=_same_dtypes("input", "tensor1", "tensor2"))
