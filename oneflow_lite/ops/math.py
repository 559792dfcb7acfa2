"""Elementwise arithmetic and comparison ops, matmul and reduce_sum (OneFlow's names), and their
gradient rows (PyTorch's derivatives.yaml formulas). Comparison ops have bool outputs: they are
defined ``no_grad`` and need none.

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
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
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


# The grad of a broadcast operand is reduced back to the operand's shape (F.reduce_to). In these two rows,
# on the hottest backward path (W6), a ``dz`` with the operand's meta (metas are interned) is returned
# without the call.
def dz_to_x(dz, x_meta):
    """The grad of ``x`` in ``z = x + ...``: ``dz`` reduced to ``x``'s shape."""
    return dz if dz._meta is x_meta else F.reduce_to(dz, x_meta.shape)


def dz_to_y(dz, y_meta):
    """The grad of ``y`` in ``z = ... + y``: ``dz`` reduced to ``y``'s shape."""
    return dz if dz._meta is y_meta else F.reduce_to(dz, y_meta.shape)


derivative("broadcast_add", name="Add", x=dz_to_x, y=dz_to_y)
derivative("broadcast_sub", name="Sub", x=dz_to_x, y=lambda dz, y_meta: F.reduce_to(F.neg(dz), y_meta.shape))
derivative("broadcast_mul", name="Mul",
           x=lambda dz, y, x_meta: F.reduce_to(F.mul(dz, y), x_meta.shape),
           y=lambda dz, x, y_meta: F.reduce_to(F.mul(dz, x), y_meta.shape))
# z = x / y: dx = dz / y, dy = -dz * z / y.
derivative("broadcast_div", name="Div",
           x=lambda dz, y, x_meta: F.reduce_to(F.div(dz, y), x_meta.shape),
           y=lambda dz, y, z, y_meta: F.reduce_to(F.neg(F.div(F.mul(dz, z), y)), y_meta.shape))

SCALAR_ATTRS = {"int_operand": ("int64", 0), "float_operand": ("double", 0.0), "has_float_operand": ("bool", False)}
_SCALAR = ("scalar_add", "scalar_mul", "scalar_div", "scalar_reverse_div")
_SCALAR_COMPARISONS = ("scalar_logical_equal", "scalar_logical_not_equal", "scalar_logical_less",
                       "scalar_logical_less_equal", "scalar_logical_greater", "scalar_logical_greater_equal")
for _op in _SCALAR:
    register_user_op(_op, inputs=["in"], outputs=["out"], attrs=SCALAR_ATTRS, infer_shape=same_shape,
                     infer_dtype=same_dtype)


def scalar_operand(int_operand, float_operand, has_float_operand):
    """The Python scalar of a ``scalar_*`` op, from its three attrs (a row takes them by name)."""
    return float_operand if has_float_operand else int_operand


def pass_dout(dout):
    """The row of an input whose grad is the output's grad unchanged (``x + s``)."""
    return dout


derivative("scalar_add", name="ScalarAdd", in_=pass_dout)
# On the hottest backward path (W6): the operand is picked inline, and F.mul_scalar calls the functor (faster
# per call than the op by type with the forward's attrs, F.ops.scalar_mul(dout, attrs=attrs)).
derivative("scalar_mul", name="ScalarMul", in_=lambda dout, int_operand, float_operand, has_float_operand:
           F.mul_scalar(dout, float_operand if has_float_operand else int_operand))
derivative("scalar_div", name="ScalarDiv", in_=lambda dout, int_operand, float_operand, has_float_operand:
           F.div_scalar(dout, float_operand if has_float_operand else int_operand))
# out = s / x: dx = -dout * out / x.
derivative("scalar_reverse_div", name="ScalarReverseDiv",
           in_=lambda dout, in_, out: F.neg(F.div(F.mul(dout, out), in_)))
for _op in _SCALAR_COMPARISONS:
    register_user_op(_op, inputs=["in"], outputs=["out"], attrs=SCALAR_ATTRS, infer_shape=same_shape,
                     infer_dtype=_bool_dtype, no_grad=True)

register_user_op("negative", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)
register_user_op("exp", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)
derivative("negative", name="Neg", x=lambda dy: F.neg(dy))
derivative("exp", x=lambda dy, y: F.mul(dy, y))


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


# PyTorch's matmul cases: a 1-D ``a`` is a row (1, k), a 1-D ``b`` a column (k, 1); then da = dout @ b^T and
# db = a^T @ dout, each summed over broadcast batch dims and reshaped back.
def _as_matrices(dout, a_shape, b_shape):
    """For a 1-D operand: ``dout`` with the dims the matmul dropped put back (..., n, m), and the operands'
    shapes as matrices."""
    kept = dout._meta.shape
    if len(a_shape) == 1 and len(b_shape) == 1:
        kept = (1, 1)
    elif len(b_shape) == 1:
        kept = (*kept, 1)
    else:
        kept = (*kept[:-1], 1, kept[-1])
    a2 = a_shape if len(a_shape) > 1 else (1, a_shape[0])
    b2 = b_shape if len(b_shape) > 1 else (b_shape[0], 1)
    return F.reshape(dout, kept), a2, b2


def _matmul_da(dout, b, a_meta, b_meta):
    a_shape, b_shape = a_meta.shape, b_meta.shape
    if len(a_shape) > 1 and len(b_shape) > 1:
        return F.reduce_to(F.matmul(dout, F.transpose(b, -2, -1)), a_shape)
    dout, a2, b2 = _as_matrices(dout, a_shape, b_shape)
    if b2 != b_shape:
        b = F.reshape(b, b2)
    da = F.reduce_to(F.matmul(dout, F.transpose(b, -2, -1)), a2)
    return da if a2 == a_shape else F.reshape(da, a_shape)


def _matmul_db(dout, a, a_meta, b_meta):
    a_shape, b_shape = a_meta.shape, b_meta.shape
    if len(a_shape) > 1 and len(b_shape) > 1:
        return F.reduce_to(F.matmul(F.transpose(a, -2, -1), dout), b_shape)
    dout, a2, b2 = _as_matrices(dout, a_shape, b_shape)
    if a2 != a_shape:
        a = F.reshape(a, a2)
    db = F.reduce_to(F.matmul(F.transpose(a, -2, -1), dout), b2)
    return db if b2 == b_shape else F.reshape(db, b_shape)


derivative("matmul", name="MatMul", a=_matmul_da, b=_matmul_db)


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


def _reduce_sum_grad(doutput_tensor, input_tensor_meta, axis):
    """dx = dout broadcast back over the reduced dims: an ``expand`` (a read-only view, as PyTorch's
    ``sum_backward``), after a reshape to the kept shape when a reduced dim that ``expand`` cannot add back
    (one after a kept dim) was dropped."""
    shape = input_tensor_meta.shape
    kept = list(shape)
    for a in axis:  # each in [-ndim, ndim), checked by the forward
        kept[a] = 1
    return F.expand_reduced(doutput_tensor, tuple(kept), shape)


derivative("reduce_sum", name="Sum", input_tensor=_reduce_sum_grad)
