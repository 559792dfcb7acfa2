"""Elementwise arithmetic and comparison ops, matmul and reduce_sum (OneFlow's names).

Note [Math ops take one dtype]
As in OneFlow, the binary ops (``broadcast_add`` ...) require both inputs to have
the same dtype: type promotion is the functors' job (functors/promotion.py),
which insert ``cast`` ops, so kernels see one dtype. The scalar ops
(``scalar_add`` ...) carry their Python scalar as real op attrs, OneFlow's
``int_operand`` / ``float_operand`` / ``has_float_operand``; the kernel converts
it to the input's dtype (integers wrap, see Note [Scalar operands] in
kernels/cpu/math.py).
"""

from __future__ import annotations

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import broadcast_shapes, same_dtype, same_shape

_BOOL = dt.bool_


def binary_shape(ctx):
    """The broadcast shape of inputs ``x`` and ``y``."""
    return broadcast_shapes(ctx.op_type, ctx.shape("x"), ctx.shape("y"))


def same_input_dtypes(ctx):
    """The dtype of ``x``, which must equal ``y``'s (Note [Math ops take one dtype])."""
    a, b = ctx.dtype("x"), ctx.dtype("y")
    if a is not b:
        raise ctx.error(f"inputs x and y must have the same dtype, got {a.name} and {b.name} "
                        f"(functors cast to a common dtype first)")
    return a


def _bool_of_same_input_dtypes(ctx):
    same_input_dtypes(ctx)
    return _BOOL


def _bool_dtype(ctx):
    return _BOOL


_BINARY = ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div")
_COMPARISONS = ("broadcast_equal", "broadcast_not_equal", "broadcast_less", "broadcast_less_equal",
                "broadcast_greater", "broadcast_greater_equal")
for _op in _BINARY:
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape,
                     infer_dtype=same_input_dtypes)
for _op in _COMPARISONS:  # bool results: not differentiable
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape,
                     infer_dtype=_bool_of_same_input_dtypes, no_grad=True)

SCALAR_ATTRS = {"int_operand": ("int64", 0), "float_operand": ("double", 0.0), "has_float_operand": ("bool", False)}
_SCALAR = ("scalar_add", "scalar_mul", "scalar_div", "scalar_reverse_div")
_SCALAR_COMPARISONS = ("scalar_logical_equal", "scalar_logical_not_equal", "scalar_logical_less",
                       "scalar_logical_less_equal", "scalar_logical_greater", "scalar_logical_greater_equal")
for _op in _SCALAR:
    register_user_op(_op, inputs=["in"], outputs=["out"], attrs=SCALAR_ATTRS, infer_shape=same_shape,
                     infer_dtype=same_dtype)
for _op in _SCALAR_COMPARISONS:
    register_user_op(_op, inputs=["in"], outputs=["out"], attrs=SCALAR_ATTRS, infer_shape=same_shape,
                     infer_dtype=_bool_dtype, no_grad=True)

register_user_op("negative", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)
register_user_op("exp", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)


# ---- matmul ------------------------------------------------------------------------------------
def _dims(shape) -> str:
    return "x".join(str(d) for d in shape)


def _matmul_shape(ctx):
    """PyTorch's ``matmul`` shapes: dot, mv, 1-D x 2-D, mm, and batched with broadcast batch dims."""
    a, b = ctx.shape("a"), ctx.shape("b")
    na, nb = len(a), len(b)
    if na == 0 or nb == 0:
        raise ctx.error(f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D")
    if na == 1 and nb == 1:
        if a[0] != b[0]:
            raise ctx.error(f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the "
                            f"same number of elements, but got {a[0]} and {b[0]} elements respectively")
        return ()
    if nb == 1 and na == 2:
        if a[1] != b[0]:
            raise ctx.error(f"size mismatch, got input ({a[0]}), mat ({_dims(a)}), vec ({b[0]})")
        return (a[0],)
    # A 1-D a is a row (1, k), a 1-D b a column (k, 1); the added dim is dropped from the result.
    ma = a if na > 1 else (1, a[0])
    mb = b if nb > 1 else (b[0], 1)
    if ma[-1] != mb[-2]:
        raise ctx.error(f"mat1 and mat2 shapes cannot be multiplied ({_dims(ma)} and {_dims(mb)})")
    batch_a, batch_b = ma[:-2], mb[:-2]
    n = max(len(batch_a), len(batch_b))
    batch = []
    for i in range(-n, 0):
        da = batch_a[i] if -i <= len(batch_a) else 1
        db = batch_b[i] if -i <= len(batch_b) else 1
        if da != db and da != 1 and db != 1:
            raise ctx.error(f"The size of tensor a ({da}) must match the size of tensor b ({db}) at "
                            f"non-singleton dimension {n + i} of the batch dimensions (shapes {_dims(a)} "
                            f"and {_dims(b)})")
        batch.append(da if db == 1 else db)
    return (*batch, *(ma[-2:-1] if na > 1 else ()), *(mb[-1:] if nb > 1 else ()))


def _matmul_dtype(ctx):
    a, b = ctx.dtype("a"), ctx.dtype("b")
    if a is not b:
        raise ctx.error(f"expected a and b to have the same dtype, but got: {a.name} != {b.name}")
    return a


register_user_op("matmul", inputs=["a", "b"], outputs=["out"], infer_shape=_matmul_shape, infer_dtype=_matmul_dtype)


# ---- reduce_sum --------------------------------------------------------------------------------
def _reduce_shape(ctx):
    """Reduce over ``axis`` (each in [-ndim, ndim), no repeats); ``keepdims`` keeps them as size 1."""
    shape = ctx.shape("input_tensor")
    ndim = len(shape)
    axes = set()
    for a in ctx.attr("axis"):
        if not -ndim <= a < ndim:
            raise ctx.error(f"axis {a} is out of range for a tensor of {ndim} dimension(s)")
        a = a + ndim if a < 0 else a
        if a in axes:
            raise ctx.error(f"dim {a} appears multiple times in the list of dims")
        axes.add(a)
    if ctx.attr("keepdims"):
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


register_user_op("reduce_sum", inputs=["input_tensor"], outputs=["output_tensor"],
                 attrs={"axis": ("list_int32", ()), "keepdims": ("bool", False)},
                 infer_shape=_reduce_shape, infer_dtype=same_dtype)
