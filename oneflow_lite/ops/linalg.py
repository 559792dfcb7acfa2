"""Linear-algebra ops: ``linear``, ``baddbmm`` and ``einsum``.

``mm``, ``bmm`` and ``dot`` run the ``matmul`` op of ops/math.py (their functors
check PyTorch's stricter shapes first); ``outer`` is a broadcast multiply.
Like ``matmul``, these ops take one dtype: all inputs must have the same one.

Note [Normalised einsum equations]
The ``einsum`` op takes an equation with one letter per dim of every operand, an
explicit ``->`` output and no ``...`` or spaces: the functor expands ellipses and
the implicit output of PyTorch's syntax, and stretches size-1 dims that broadcast
(``expand``), so every letter has one size among the operands here. The output
may repeat a letter (the result is zero off that diagonal) and may use letters
no operand has (the result is broadcast along them); their sizes then come from
the ``out_shape`` attr. PyTorch's einsum never needs this, but the gradient of an
operand is an einsum whose output is that operand's subscripts, which can repeat
a letter (``ii->``) or hold one summed away in the forward (``ij->i``), so with it
einsum's backward is einsum again, to any order.
"""

from __future__ import annotations

from math import prod
from string import ascii_letters

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import Arg, register_user_op


def _broadcasts_to(shape, target) -> bool:
    """Whether ``shape`` broadcasts to ``target`` without changing it."""
    lead = len(target) - len(shape)
    return lead >= 0 and all(d == 1 or d == target[lead + i] for i, d in enumerate(shape))


def _same_dtype(ctx, names):
    dtypes = [ctx.dtype(n) for n in names if ctx.has_input(n)]
    if any(d is not dtypes[0] for d in dtypes):
        raise ctx.error(f"expected {', '.join(n for n in names if ctx.has_input(n))} to have the same dtype, "
                        f"but got {', '.join(d.name for d in dtypes)}")
    return dtypes[0]


# ---- linear --------------------------------------------------------------------------------------
def _linear_shape(ctx):
    """``x @ weight.T + bias``: x (*, in), weight (out, in) or (in,), bias broadcastable to the result."""
    x, w = ctx.shape("x"), ctx.shape("weight")
    if not x or not w:
        raise ctx.error(f"both arguments to linear need to be at least 1D, but they are {len(x)}D and {len(w)}D")
    if len(w) > 2:
        raise ctx.error(f"weight must be 1-D (in_features) or 2-D (out_features, in_features), got {len(w)}-D")
    if x[-1] != w[-1]:
        rows = 1
        for d in x[:-1]:
            rows *= d
        cols = w[0] if len(w) == 2 else 1
        raise ctx.error(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x[-1]} and {w[-1]}x{cols})")
    out = (*x[:-1], w[0]) if len(w) == 2 else tuple(x[:-1])
    if ctx.has_input("bias"):
        b = ctx.shape("bias")
        if not _broadcasts_to(b, out):
            raise ctx.error(f"bias of shape {list(b)} does not broadcast to the output shape {list(out)}")
    return out


register_user_op("linear", inputs=["x", "weight", Arg("bias", optional=True)], outputs=["out"],
                 infer_shape=_linear_shape, infer_dtype=lambda ctx: _same_dtype(ctx, ("x", "weight", "bias")))


def _linear_dx(dout, weight):
    """W (out, in): dx = dy @ W; W (in,): dx = dy[..., None] * W."""
    if weight._meta.ndim == 2:
        return F.matmul(dout, weight)
    return F.mul(F.ops.reshape(dout, shape=(*dout._meta.shape, 1)), weight)


def _linear_dweight(dout, x, weight_meta):
    """W (out, in): dW = dy2.T @ x2; W (in,): dW = dy2 @ x2, with the batch dims flattened (reshapes only when
    x is not 2-D)."""
    x_shape, w_shape = x._meta.shape, weight_meta.shape
    dy2 = dout
    if len(x_shape) != 2:
        rows = prod(x_shape[:-1])
        x = F.ops.reshape(x, shape=(rows, x_shape[-1]))
        dy2 = F.ops.reshape(dout, shape=(rows, w_shape[0]) if len(w_shape) == 2 else (rows,))
    return F.matmul(F.transpose(dy2, 0, 1), x) if len(w_shape) == 2 else F.matmul(dy2, x)


# db = dy summed to b's shape (for a (out,) bias one ``sum`` over the batch dims)
derivative("linear", x=_linear_dx, weight=_linear_dweight,
           bias=lambda dout, bias_meta: F.reduce_to(dout, bias_meta.shape))


# ---- baddbmm -------------------------------------------------------------------------------------
def _baddbmm_shape(ctx):
    """``beta * input + alpha * (batch1 @ batch2)``: batch1 (b, n, m), batch2 (b, m, p), input broadcasts
    to (b, n, p)."""
    b1, b2 = ctx.shape("batch1"), ctx.shape("batch2")
    if len(b1) != 3:
        raise ctx.error(f"batch1 must be a 3D tensor, got {len(b1)}D")
    if len(b2) != 3:
        raise ctx.error(f"batch2 must be a 3D tensor, got {len(b2)}D")
    if b2[0] != b1[0] or b2[1] != b1[2]:
        raise ctx.error(f"Expected size for first two dimensions of batch2 tensor to be: [{b1[0]}, {b1[2]}] but "
                        f"got: [{b2[0]}, {b2[1]}].")
    out = (b1[0], b1[1], b2[2])
    inp = ctx.shape("input")
    if not _broadcasts_to(inp, out):
        raise ctx.error(f"input of shape {list(inp)} does not broadcast to the shape of batch1 @ batch2, "
                        f"{list(out)}")
    return out


register_user_op("baddbmm", inputs=["input", "batch1", "batch2"], outputs=["out"],
                 attrs={"alpha": ("double", 1.0), "beta": ("double", 1.0)}, infer_shape=_baddbmm_shape,
                 infer_dtype=lambda ctx: _same_dtype(ctx, ("input", "batch1", "batch2")))


def _scaled(t, k):
    return t if k == 1 else F.mul_scalar(t, k)


# d_input = beta * dy summed to input's shape, d_batch1 = alpha * dy @ batch2^T, d_batch2 = alpha * batch1^T @ dy
derivative("baddbmm",
           input=lambda dout, beta, input_meta: F.reduce_to(_scaled(dout, beta), input_meta.shape),
           batch1=lambda dout, batch2, alpha: _scaled(F.matmul(dout, F.transpose(batch2, 1, 2)), alpha),
           batch2=lambda dout, batch1, alpha: _scaled(F.matmul(F.transpose(batch1, 1, 2), dout), alpha))


# ---- einsum --------------------------------------------------------------------------------------
_LETTERS = frozenset(ascii_letters)


def parse_normalised(op, equation, n_operands):
    """``(operand subscripts, output subscripts)`` of a normalised equation (Note [Normalised einsum
    equations]); ValueError when it is not one."""
    lhs, arrow, out = equation.partition("->")
    subs = lhs.split(",")
    if not arrow or len(subs) != n_operands or not all(_LETTERS.issuperset(s) for s in (*subs, out)):
        raise ValueError(f"{op}: equation {equation!r} is not normalised: it needs one letter per dim of each of "
                         f"the {n_operands} operand(s) and an explicit '->' (the einsum functor normalises "
                         f"PyTorch's syntax)")
    return subs, out


def _einsum_shape(ctx):
    metas = ctx.input_metas
    try:
        subs, out = parse_normalised(ctx.op_type, ctx.attrs["equation"], len(metas))
    except ValueError as e:
        raise RuntimeError(str(e)) from None
    sizes = {}
    for k, (s, m) in enumerate(zip(subs, metas)):
        if len(s) != m.ndim:
            raise ctx.error(f"the number of subscripts in the equation ({len(s)}) does not match the number of "
                            f"dimensions ({m.ndim}) for operand {k}")
        for letter, d in zip(s, m.shape):
            seen = sizes.setdefault(letter, d)
            if seen != d:
                raise ctx.error(f"subscript {letter} has size {d} for operand {k} which does not match the "
                                f"previously seen size {seen}")
    given = ctx.attrs["out_shape"]
    if given and len(given) != len(out):
        raise ctx.error(f"out_shape {list(given)} needs one size per output subscript of {out!r}")
    shape = []
    for i, letter in enumerate(out):
        d = given[i] if given else sizes.get(letter)
        if d is None:
            raise ctx.error(f"output subscript {letter} does not appear in the equation for any input operand")
        seen = sizes.setdefault(letter, d)
        if seen != d:
            raise ctx.error(f"output subscript {letter} has size {d} in out_shape but {seen} elsewhere")
        shape.append(d)
    return tuple(shape)


def _einsum_dtype(ctx):
    metas = ctx.input_metas
    d = metas[0].dtype
    for i, m in enumerate(metas):
        if m.dtype is not d:
            raise ctx.error(f"expected all operands to have the same dtype, but got {d.name} (operand 0) and "
                            f"{m.dtype.name} (operand {i})")
    return d


register_user_op("einsum", inputs=[Arg("in", variadic=True)], outputs=["out"],
                 attrs={"equation": ("string", "->"), "out_shape": ("shape", ())},
                 infer_shape=_einsum_shape, infer_dtype=_einsum_dtype)
