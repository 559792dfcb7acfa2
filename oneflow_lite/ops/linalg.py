"""Linear-algebra ops: ``linear``, ``baddbmm``, ``einsum``; ``diagonal`` (a view) and its adjoint
``diagonal_grad`` (also ``diag_embed``); the matrix functions and decompositions behind ``torch.linalg``
(``linalg_inv``, ``linalg_det``, ``linalg_slogdet``, ``linalg_solve``, ``linalg_solve_triangular``,
``linalg_cholesky``, ``linalg_qr``, ``linalg_svd``, ``linalg_eigh``, ``linalg_pinv``, ``matrix_exp``,
``linalg_lu_factor``, ``lu_unpack``, ``geqrf``: Note [Linear-algebra ops]).

``mm``, ``bmm`` and ``dot`` run the ``matmul`` op of ops/math.py (their functors
check PyTorch's stricter shapes first); ``outer`` is a broadcast multiply.
Like ``matmul``, these ops take one dtype: all inputs must have the same one.
The rest of the linear-algebra functions (addmm, kron, tensordot, norms, lstsq,
cond, ...) are composites of these in functors/linalg.py.

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

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.ops.common import broadcast_shapes, not_implemented_row


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


# ---- diagonal (a view) and its adjoint, which is also diag_embed ------------------------------------------
def _diagonal_dims(ctx, ndim):
    if ndim < 2:
        raise ctx.error(f"diagonal needs a tensor of at least 2 dimensions, got {ndim}")
    d1, d2 = ctx.attr("dim1"), ctx.attr("dim2")
    for d in (d1, d2):
        if not -ndim <= d < ndim:
            raise IndexError(f"diagonal: Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                             f"but got {d})")
    d1, d2 = d1 % ndim, d2 % ndim
    if d1 == d2:
        raise RuntimeError(f"diagonal: diagonal dimensions cannot be identical {ctx.attr('dim1')}, {ctx.attr('dim2')}")
    return d1, d2


def diagonal_length(s1, s2, offset) -> int:
    """The length of the ``offset`` diagonal of an ``s1`` by ``s2`` matrix."""
    return max(0, min(s1, s2 - offset) if offset >= 0 else min(s1 + offset, s2))


def _diagonal_shape(ctx):
    """``x``'s shape without ``dim1`` and ``dim2``, then the diagonal's length."""
    shape = ctx.input_metas[0].shape
    d1, d2 = _diagonal_dims(ctx, len(shape))
    rest = tuple(s for i, s in enumerate(shape) if i not in (d1, d2))
    return rest + (diagonal_length(shape[d1], shape[d2], ctx.attr("offset")),)


_DIAGONAL_ATTRS = {"offset": ("int64", 0), "dim1": ("int32", 0), "dim2": ("int32", 1)}
register_user_op("diagonal", inputs=["x"], outputs=["y"], attrs=_DIAGONAL_ATTRS,
                 infer_shape=_diagonal_shape, infer_dtype=lambda ctx: ctx.dtype("x"))


def _diagonal_grad_shape(ctx):
    """Zeros of ``like_shape`` with ``dy`` written on the diagonal (``dy`` has the diagonal's shape)."""
    like = tuple(ctx.attr("like_shape"))
    d1, d2 = _diagonal_dims(ctx, len(like))
    rest = tuple(s for i, s in enumerate(like) if i not in (d1, d2))
    expected = rest + (diagonal_length(like[d1], like[d2], ctx.attr("offset")),)
    if tuple(ctx.shape("dy")) != expected:
        raise ctx.error(f"dy must have the diagonal's shape {list(expected)}, got {list(ctx.shape('dy'))}")
    return like


register_user_op("diagonal_grad", inputs=["dy"], outputs=["dx"],
                 attrs={**_DIAGONAL_ATTRS, "like_shape": ("shape", ())},
                 infer_shape=_diagonal_grad_shape, infer_dtype=lambda ctx: ctx.dtype("dy"))
derivative("diagonal", name="Diagonal", x=lambda dy, x_meta, offset, dim1, dim2: F.diagonal_grad(
    dy, offset=offset, dim1=dim1, dim2=dim2, like_shape=tuple(x_meta.shape)))
derivative("diagonal_grad", name="DiagEmbed",
           dy=lambda ddx, offset, dim1, dim2: F.ops.diagonal(ddx, offset=offset, dim1=dim1, dim2=dim2))


# ---- matrix functions (Note [Linear-algebra ops]) ------------------------------------------------------
# Note [Linear-algebra ops]
# The decompositions and solvers take float32 / float64 matrices with any batch dims (the functors check
# PyTorch's argument rules and messages first; the infer functions check shapes again). Their kernels
# are NumPy's LAPACK routines batched over the leading dims (kernels/cpu/linalg.py); a singular or
# non-positive-definite input raises ``LinAlgError`` (framework/errors.py, ``flow.linalg.LinAlgError``)
# unless the op was built with ``check_errors=False`` (the ``_ex`` functions), whose ``info`` output holds
# LAPACK's code per matrix instead. The gradient rows are PyTorch's (FunctionsManual.cpp), written with
# functional calls (matmul, triangular solves, ...) so they are differentiable again.
def _matrix(ctx, arg, square=True):
    """The shape of input ``arg``: at least 2-D (square when ``square``)."""
    shape = tuple(ctx.shape(arg))
    if len(shape) < 2:
        raise ctx.error(f"the input tensor {arg} must have at least 2 dimensions")
    if square and shape[-1] != shape[-2]:
        raise ctx.error(f"{arg} must be batches of square matrices, but they are {shape[-2]} by {shape[-1]} "
                        f"matrices")
    return shape


def _linalg_dtype(ctx):
    d = ctx.input_metas[0].dtype
    if d not in (dt.float32, dt.float64):
        raise ctx.error(f"expected a float32 or float64 input, got {d.name}")
    for m in ctx.input_metas[1:]:
        if m.dtype is not d and m.dtype.is_floating_point:
            raise ctx.error(f"expected all inputs to have the same dtype, got {d.name} and {m.dtype.name}")
    return d


def _with_info(ctx, out_shape):
    return out_shape, tuple(ctx.input_metas[0].shape[:-2])


def mT(t):
    """The matrix transpose of ``t`` (its last two dims)."""
    return F.transpose(t, -2, -1)


def _unsqueeze2(t):
    """``t`` (...,) as (..., 1, 1), to scale a batch of matrices."""
    return F.ops.reshape(t, shape=tuple(t._meta.shape) + (1, 1))


register_user_op("linalg_inv", inputs=["A"], outputs=["out", "info"], attrs={"check_errors": ("bool", True)},
                 infer_shape=lambda ctx: _with_info(ctx, _matrix(ctx, "A")),
                 infer_dtype=lambda ctx: (_linalg_dtype(ctx), dt.int32))
derivative("linalg_inv", name="LinalgInv",
           A=lambda dout, out: None if dout is None else F.neg(F.matmul(F.matmul(mT(out), dout), mT(out))))

register_user_op("linalg_det", inputs=["A"], outputs=["out"],
                 infer_shape=lambda ctx: _matrix(ctx, "A")[:-2], infer_dtype=_linalg_dtype)


def _all_nonzero(t) -> bool:
    """Whether every element of ``t`` is non-zero (True for a tensor without data: assume the common case)."""
    if not t._meta.device.device_type.has_storage or t.is_lazy:
        return True
    return bool(F.all(F.ne(t, 0)).item())


def _cofactor_by_svd(A):
    """The cofactor matrix ``det(A) A^-T`` from the SVD ``A = U S Vh``, defined for singular ``A`` too:
    ``det(U) det(Vh) U diag(prod_{j != i} s_j) Vh``."""
    U, S, Vh = F.linalg_svd(A, full_matrices=False)
    k = S._meta.shape[-1]
    eye = F.eye(k, dtype=S._meta.dtype, device=S._meta.device)
    others = F.prod(F.add(F.mul(F.ops.reshape(S, shape=tuple(S._meta.shape[:-1]) + (1, k)), F.sub(1.0, eye)),
                          eye), -1)
    sign = F.mul(F.linalg_det(U), F.linalg_det(Vh))
    return F.mul(_unsqueeze2(sign), F.matmul(F.mul(U, F.unsqueeze(others, -2)), Vh))


def _det_grad(dout, A, out):
    """``dout * det(A) A^-T``: through the inverse when every matrix is invertible, else through the SVD (as
    PyTorch's ``linalg_det_backward``)."""
    if _all_nonzero(out):
        return F.mul(_unsqueeze2(F.mul(dout, out)), mT(F.linalg_inv(A)))
    return F.mul(_unsqueeze2(dout), _cofactor_by_svd(A))


derivative("linalg_det", name="LinalgDet", A=_det_grad)

register_user_op("linalg_slogdet", inputs=["A"], outputs=["sign", "logabsdet"],
                 infer_shape=lambda ctx: (_matrix(ctx, "A")[:-2],) * 2,
                 infer_dtype=lambda ctx: (_linalg_dtype(ctx),) * 2)
derivative("linalg_slogdet", name="LinalgSlogdet", A=lambda dlogabsdet, A: None if dlogabsdet is None else F.mul(
    _unsqueeze2(dlogabsdet), mT(F.linalg_inv(A))))


def _solve_shape(ctx):
    """A (*, n, n) and B (*, n, k), the batch dims broadcast."""
    a, b = _matrix(ctx, "A"), _matrix(ctx, "B", square=False)
    if b[-2] != a[-1]:
        raise ctx.error(f"Incompatible shapes of A and B for the equation AX = B ({a[-2]}x{a[-1]} and "
                        f"{b[-2]}x{b[-1]})")
    batch = broadcast_shapes(ctx.op_type, a[:-2], b[:-2])
    return batch + b[-2:], batch


register_user_op("linalg_solve", inputs=["A", "B"], outputs=["out", "info"], attrs={"check_errors": ("bool", True)},
                 infer_shape=_solve_shape, infer_dtype=lambda ctx: (_linalg_dtype(ctx), dt.int32))


def _solve_grad(needs, dout, A, out):
    """gB = A^-T dX, gA = -gB X^T, each summed over the batch dims it was broadcast along."""
    if dout is None:
        return None, None
    gB = F.ops.linalg_solve(mT(A), dout)[0]
    gA = F.reduce_to(F.neg(F.matmul(gB, mT(out))), tuple(A._meta.shape)) if needs[0] else None
    return gA, gB


def _solve_grad_b_shape(needs, dout, A, out, B_meta):
    gA, gB = _solve_grad(needs, dout, A, out)
    return gA, None if gB is None or not needs[1] else F.reduce_to(gB, tuple(B_meta.shape))


derivative("linalg_solve", name="LinalgSolve", joint=_solve_grad_b_shape)


def _triangular_shape(ctx):
    a, b = _matrix(ctx, "A"), _matrix(ctx, "B", square=False)
    inner = b[-2] if ctx.attr("left") else b[-1]
    if inner != a[-1]:
        side = "AX = B" if ctx.attr("left") else "XA = B"
        raise ctx.error(f"Incompatible shapes of A and B for the equation {side} ({a[-2]}x{a[-1]} and "
                        f"{b[-2]}x{b[-1]})")
    return broadcast_shapes(ctx.op_type, a[:-2], b[:-2]) + b[-2:]


register_user_op("linalg_solve_triangular", inputs=["A", "B"], outputs=["out"],
                 attrs={"upper": ("bool", False), "left": ("bool", True), "unitriangular": ("bool", False)},
                 infer_shape=_triangular_shape, infer_dtype=_linalg_dtype)


def _triangular_grad(needs, dout, A, out, B_meta, upper, left, unitriangular):
    """X = A^-1 B: gB = A^-T gX, gA = -gB X^T; X = B A^-1: gB = gX A^-T, gA = -X^T gB; gA kept on A's
    triangle (off its unit diagonal)."""
    gB = F.ops.linalg_solve_triangular(mT(A), dout, upper=not upper, left=left, unitriangular=unitriangular)
    gA = None
    if needs[0]:
        gA = F.neg(F.matmul(gB, mT(out)) if left else F.matmul(mT(out), gB))
        shift = 1 if unitriangular else 0
        gA = F.reduce_to(F.triu(gA, shift) if upper else F.tril(gA, -shift), tuple(A._meta.shape))
    return gA, F.reduce_to(gB, tuple(B_meta.shape)) if needs[1] else None


derivative("linalg_solve_triangular", name="LinalgSolveTriangular", joint=_triangular_grad)


def _solve_tri(A, B, upper, left=True, unitriangular=False):
    return F.ops.linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


register_user_op("linalg_cholesky", inputs=["A"], outputs=["L", "info"],
                 attrs={"upper": ("bool", False), "check_errors": ("bool", True)},
                 infer_shape=lambda ctx: _with_info(ctx, _matrix(ctx, "A")),
                 infer_dtype=lambda ctx: (_linalg_dtype(ctx), dt.int32))


def _cholesky_grad(dL, L, upper):
    """PyTorch's ``cholesky_backward`` (Murray 2016): ``L^-T Phi(L^T gL) L^-1``, Phi taking the lower
    triangle with the diagonal halved, made symmetric."""
    if dL is None:
        return None
    if upper:
        L, dL = mT(L), mT(dL)
    g = F.tril(F.matmul(mT(L), dL))
    g = F.mul(F.add(g, mT(F.tril(g, -1))), 0.5)
    g = _solve_tri(mT(L), g, upper=True)
    return _solve_tri(L, g, upper=False, left=False)


derivative("linalg_cholesky", name="LinalgCholesky", A=_cholesky_grad)


# ---- QR, SVD, eigh --------------------------------------------------------------------------------------
def _qr_shape(ctx):
    shape = _matrix(ctx, "A", square=False)
    mode = ctx.attr("mode")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    batch, (m, n) = shape[:-2], shape[-2:]
    k = m if mode == "complete" else min(m, n)
    q = (0,) if mode == "r" else batch + (m, k)
    return q, batch + (k, n)


register_user_op("linalg_qr", inputs=["A"], outputs=["Q", "R"], attrs={"mode": ("string", "reduced")},
                 infer_shape=_qr_shape, infer_dtype=lambda ctx: (_linalg_dtype(ctx),) * 2)


def _copyltu(M):
    """The symmetric matrix with ``M``'s lower triangle."""
    return F.add(F.tril(M), mT(F.tril(M, -1)))


def _qr_grad_tall(dQ, dR, Q, R):
    """m >= n: ``gA = [gQ + Q copyltu(M)] R^-T`` with ``M = R gR^T - gQ^T Q`` (Walter and Lehmann)."""
    M = None
    if dR is not None:
        M = F.matmul(R, mT(dR))
    if dQ is not None:
        qq = F.matmul(mT(dQ), Q)
        M = F.neg(qq) if M is None else F.sub(M, qq)
    b = F.matmul(Q, _copyltu(M))
    if dQ is not None:
        b = F.add(b, dQ)
    return _solve_tri(mT(R), b, upper=False, left=False)


def _qr_grad(dQ, dR, A, Q, R, mode):
    if dQ is None and dR is None:
        return None
    m, n = A._meta.shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise NotImplementedError("The QR decomposition is not differentiable when mode='complete' and nrows > "
                                  "ncols.")
    if m >= n:
        return _qr_grad_tall(dQ, dR, Q, R)
    # m < n: A = Q [U | V] with U square; X = Q U is the square case with gQ + Y gV^T, and gY = Q gV.
    U = F.narrow(R, -1, 0, m)
    dU = dV = None
    if dR is not None:
        dU, dV = F.narrow(dR, -1, 0, m), F.narrow(dR, -1, m, n - m)
    Y = F.narrow(A, -1, m, n - m)
    if dV is not None:
        extra = F.matmul(Y, mT(dV))
        dQ = extra if dQ is None else F.add(dQ, extra)
    gX = _qr_grad_tall(dQ, dU, Q, U)
    gY = F.matmul(Q, dV) if dV is not None else F.zeros_like(Y)
    return F.cat([gX, gY], -1)


derivative("linalg_qr", name="LinalgQr", A=_qr_grad)


def _svd_shape(ctx):
    shape = _matrix(ctx, "A", square=False)
    batch, (m, n) = shape[:-2], shape[-2:]
    k = min(m, n)
    if ctx.attr("full_matrices"):
        return batch + (m, m), batch + (k,), batch + (n, n)
    return batch + (m, k), batch + (k,), batch + (k, n)


register_user_op("linalg_svd", inputs=["A"], outputs=["U", "S", "Vh"], attrs={"full_matrices": ("bool", True)},
                 infer_shape=_svd_shape, infer_dtype=lambda ctx: (_linalg_dtype(ctx),) * 3)


def _eye_like(S):
    k = S._meta.shape[-1]
    return F.eye(k, dtype=S._meta.dtype, device=S._meta.device)


def _svd_grad(dU, dS, dVh, U, S, Vh):
    """PyTorch's ``svd_backward`` (real case): ``U [(skew(U^T gU) / E) S + S (skew(V^T gV) / E) + diag(gS)] V^T``
    ``+ (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)``, ``E_jk = s_k^2 - s_j^2`` (1 on the diagonal);
    full_matrices keeps the first min(m, n) singular vectors."""
    m, n = U._meta.shape[-2], Vh._meta.shape[-1]
    k = S._meta.shape[-1]
    if U._meta.shape[-1] != k:
        U, dU = F.narrow(U, -1, 0, k), None if dU is None else F.narrow(dU, -1, 0, k)
    if Vh._meta.shape[-2] != k:
        Vh, dVh = F.narrow(Vh, -2, 0, k), None if dVh is None else F.narrow(dVh, -2, 0, k)
    if dU is None and dVh is None:
        return None if dS is None else F.matmul(F.mul(U, F.unsqueeze(dS, -2)), Vh)
    S2 = F.mul(S, S)
    E = F.add(F.sub(F.unsqueeze(S2, -2), F.unsqueeze(S2, -1)), _eye_like(S))
    inner = F.diag_embed(dS) if dS is not None else None
    if dU is not None:
        UtgU = F.matmul(mT(U), dU)
        term = F.mul(F.div(F.sub(UtgU, mT(UtgU)), E), F.unsqueeze(S, -2))
        inner = term if inner is None else F.add(inner, term)
    if dVh is not None:
        VtgV = F.matmul(Vh, mT(dVh))
        term = F.mul(F.unsqueeze(S, -1), F.div(F.sub(VtgV, mT(VtgV)), E))
        inner = term if inner is None else F.add(inner, term)
    gA = F.matmul(F.matmul(U, inner), Vh)
    if dU is not None and m > k:
        gA = F.add(gA, F.matmul(F.div(F.sub(dU, F.matmul(U, UtgU)), F.unsqueeze(S, -2)), Vh))
    if dVh is not None and n > k:
        proj = F.sub(dVh, F.matmul(F.matmul(dVh, mT(Vh)), Vh))
        gA = F.add(gA, F.matmul(U, F.div(proj, F.unsqueeze(S, -1))))
    return gA


derivative("linalg_svd", name="LinalgSvd", A=_svd_grad)


def _eigh_shape(ctx):
    shape = _matrix(ctx, "A")
    if ctx.attr("UPLO") not in ("L", "U"):
        raise ctx.error(f"Expected UPLO argument to be 'L' or 'U', but got {ctx.attr('UPLO')}")
    return shape[:-1], shape


register_user_op("linalg_eigh", inputs=["A"], outputs=["eigenvalues", "eigenvectors"],
                 attrs={"UPLO": ("string", "L")}, infer_shape=_eigh_shape,
                 infer_dtype=lambda ctx: (_linalg_dtype(ctx),) * 2)


def _eigh_grad(deigenvalues, deigenvectors, eigenvalues, eigenvectors):
    """PyTorch's ``linalg_eig_backward`` (Hermitian case): ``V (skew(V^T gV) / 2E + diag(gL)) V^T`` with
    ``E_ij = L_j - L_i`` (1 on the diagonal)."""
    L, V = eigenvalues, eigenvectors
    if deigenvectors is None:
        return None if deigenvalues is None else F.matmul(F.mul(V, F.unsqueeze(deigenvalues, -2)), mT(V))
    VtgV = F.matmul(mT(V), deigenvectors)
    E = F.add(F.sub(F.unsqueeze(L, -2), F.unsqueeze(L, -1)), _eye_like(L))
    inner = F.div(F.mul(F.sub(VtgV, mT(VtgV)), 0.5), E)
    if deigenvalues is not None:
        inner = F.add(inner, F.diag_embed(deigenvalues))
    return F.matmul(F.matmul(V, inner), mT(V))


derivative("linalg_eigh", name="LinalgEigh", A=_eigh_grad)


# ---- pinv, matrix_exp ----------------------------------------------------------------------------------
register_user_op("linalg_pinv", inputs=["A"], outputs=["out"],
                 attrs={"atol": ("double", -1.0), "rtol": ("double", -1.0), "hermitian": ("bool", False)},
                 infer_shape=lambda ctx: (shape := _matrix(ctx, "A", square=False))[:-2] + (shape[-1], shape[-2]),
                 infer_dtype=_linalg_dtype)


def _pinv_grad(dout, A, out):
    """PyTorch's ``pinv_backward``, arranged to multiply the smallest matrices."""
    if dout is None:
        return None
    m, n = A._meta.shape[-2:]
    pinvAh, gradh = mT(out), mT(dout)
    if m <= n:
        K = F.matmul(gradh, out)
        KpinvAh = F.matmul(K, pinvAh)
        terms = (F.neg(mT(F.matmul(out, K))), KpinvAh, F.neg(F.matmul(F.matmul(A, out), KpinvAh)),
                 F.matmul(F.matmul(pinvAh, out), F.sub(gradh, F.matmul(K, A))))
    else:
        K = F.matmul(out, gradh)
        pinvAhK = F.matmul(pinvAh, K)
        terms = (F.neg(mT(F.matmul(K, out))), F.matmul(F.matmul(F.sub(gradh, F.matmul(A, K)), out), pinvAh),
                 pinvAhK, F.neg(F.matmul(F.matmul(pinvAhK, out), A)))
    return F.add(F.add(terms[0], terms[1]), F.add(terms[2], terms[3]))


derivative("linalg_pinv", name="LinalgPinv", A=_pinv_grad)

register_user_op("matrix_exp", inputs=["A"], outputs=["out"],
                 infer_shape=lambda ctx: _matrix(ctx, "A"), infer_dtype=_linalg_dtype)


def _matrix_exp_grad(dout, A):
    """The upper right block of ``exp([[A^T, G], [0, A^T]])`` (Mathias 1996), as PyTorch."""
    n = A._meta.shape[-1]
    At = mT(A)
    top = F.cat([At, dout], -1)
    bottom = F.cat([F.zeros_like(At), At], -1)
    big = F.matrix_exp(F.cat([top, bottom], -2))
    return F.narrow(F.narrow(big, -2, 0, n), -1, n, n)


derivative("matrix_exp", name="MatrixExp", A=_matrix_exp_grad)


# ---- LU ------------------------------------------------------------------------------------------------
def _lu_factor_shape(ctx):
    shape = _matrix(ctx, "A", square=False)
    return shape, shape[:-2] + (min(shape[-2:]),), shape[:-2]


register_user_op("linalg_lu_factor", inputs=["A"], outputs=["LU", "pivots", "info"],
                 attrs={"check_errors": ("bool", False)}, infer_shape=_lu_factor_shape,
                 infer_dtype=lambda ctx: (_linalg_dtype(ctx), dt.int32, dt.int32))


def _lu_factor_grad(dLU, LU, pivots):
    """PyTorch's ``linalg_lu_backward`` with ``gL = tril(gLU, -1)`` and ``gU = triu(gLU)``: for square A = P L U,
    ``gA = P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T``; wide and tall inputs solve with the square part of
    U (L) and pass the rest of gU (gL) through."""
    if dLU is None:
        return None
    m, n = LU._meta.shape[-2:]
    k = min(m, n)
    P, L, U = F.lu_unpack(LU, pivots)
    gL, gU = F.tril(F.narrow(dLU, -1, 0, k), -1), F.triu(F.narrow(dLU, -2, 0, k))
    if m == n:
        g = F.add(F.tril(F.matmul(mT(L), gL), -1), F.triu(F.matmul(gU, mT(U))))
        g = _solve_tri(mT(U), g, upper=False, left=False)
        return F.matmul(P, _solve_tri(mT(L), g, upper=True, unitriangular=True))
    if m < n:  # wide: U = [U1 | U2]
        g = F.tril(F.sub(F.matmul(mT(L), gL), F.matmul(gU, mT(U))), -1)
        g = _solve_tri(mT(F.narrow(U, -1, 0, k)), g, upper=False, left=False)
        g = F.cat([F.add(g, F.narrow(gU, -1, 0, k)), F.narrow(gU, -1, k, n - k)], -1)
        return F.matmul(P, _solve_tri(mT(L), g, upper=True, unitriangular=True))
    # tall: L = [L1; L2]
    g = F.triu(F.sub(F.matmul(gU, mT(U)), F.matmul(mT(L), gL)))
    g = _solve_tri(mT(F.narrow(L, -2, 0, k)), g, upper=True, unitriangular=True)
    g = F.cat([F.add(g, F.narrow(gL, -2, 0, k)), F.narrow(gL, -2, k, m - k)], -2)
    return F.matmul(P, _solve_tri(mT(U), g, upper=False, left=False))


derivative("linalg_lu_factor", name="LinalgLuFactor", A=_lu_factor_grad)


def _lu_unpack_shape(ctx):
    shape = _matrix(ctx, "LU_data", square=False)
    batch, (m, n) = shape[:-2], shape[-2:]
    k = min(m, n)
    if tuple(ctx.shape("LU_pivots")) != batch + (k,):
        raise ctx.error(f"LU_pivots must have shape {list(batch + (k,))}, got {list(ctx.shape('LU_pivots'))}")
    if ctx.dtype("LU_pivots") is not dt.int32:
        raise RuntimeError(f"lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype. "
                           f"Note: this function is intended to be used with the output produced by "
                           f"torch.linalg.lu_factor, got {ctx.dtype('LU_pivots').name}")
    p = batch + (m, m) if ctx.attr("unpack_pivots") else (0,)
    if not ctx.attr("unpack_data"):
        return p, (0,), (0,)
    return p, batch + (m, k), batch + (k, n)


register_user_op("lu_unpack", inputs=["LU_data", "LU_pivots"], outputs=["P", "L", "U"],
                 attrs={"unpack_data": ("bool", True), "unpack_pivots": ("bool", True)},
                 infer_shape=_lu_unpack_shape, infer_dtype=lambda ctx: (_linalg_dtype(ctx),) * 3)


def _lu_unpack_grad(dL, dU, LU_data_meta, unpack_data):
    """L is the strict lower part of LU_data (m x k), U its upper part (k x n)."""
    if not unpack_data or (dL is None and dU is None):
        return None
    m, n = LU_data_meta.shape[-2:]
    k = min(m, n)
    g = None
    if dL is not None:
        g = F.tril(dL, -1)
        if n > k:
            g = F.pad(g, [0, n - k])
    if dU is not None:
        gu = F.triu(dU)
        if m > k:
            gu = F.pad(gu, [0, 0, 0, m - k])
        g = gu if g is None else F.add(g, gu)
    return g


derivative("lu_unpack", name="LuUnpack", LU_data=_lu_unpack_grad)


# ---- geqrf: QR as LAPACK's Householder reflectors ------------------------------------------------------
def _geqrf_shape(ctx):
    shape = _matrix(ctx, "A", square=False)
    return shape, shape[:-2] + (min(shape[-2:]),)


register_user_op("geqrf", inputs=["A"], outputs=["a", "tau"], infer_shape=_geqrf_shape,
                 infer_dtype=lambda ctx: (_linalg_dtype(ctx),) * 2)
derivative("geqrf", joint=not_implemented_row(
    "the derivative of geqrf is not implemented (as in PyTorch); differentiate linalg.qr instead"))
