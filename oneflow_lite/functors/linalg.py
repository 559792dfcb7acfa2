"""Linear-algebra functors: ``mm``, ``bmm``, ``dot`` (the ``matmul`` op after PyTorch's stricter shape
checks), ``outer`` (a broadcast multiply, so it promotes and takes bool as ``mul`` does), ``linear``,
``baddbmm`` and ``einsum``; diagonals and ``trace``; ``addmm`` / ``addbmm`` / ``addmv`` / ``addr``, ``mv``,
``inner``, ``kron``, ``tensordot``, ``multi_dot``, ``cross``, ``cov``; and the ``torch.linalg`` functions
(``flow.linalg``, oneflow_lite/linalg.py) with their ``torch.*`` aliases: PyTorch's argument checks and
messages first (``check_matrix``), then one op of ops/linalg.py or a composite of them.

``mm``, ``bmm``, ``dot``, ``linear``, ``baddbmm`` and ``einsum`` need all their
tensors to have one dtype, as PyTorch's do (``matmul`` checks the same).
"""

from __future__ import annotations

import builtins
import math
from collections import Counter
from string import ascii_letters

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import BATCHED_KEY_SET, LAZY_KEY_SET, Tensor, _wrap_dim
from oneflow_lite.interpreters.autocast import fp32_function, lower_precision_function, without_autocast
from oneflow_lite.functors.creation import tensor
from oneflow_lite.functors.promotion import TORCH_NAMES, cast, cast_into, check_inplace_shape, get_default_dtype
from oneflow_lite.functors.reduce import return_types
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.functors.shape import VariadicOp, cached, cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.common import broadcast_shapes


def _matmul_op():
    return OpBuilder("matmul").input("a").input("b").output("out").build()


def _check_same_dtype(name, a, b, first, second):
    da, db = a._meta.dtype, b._meta.dtype
    if da is not db:
        raise RuntimeError(f"{name}: expected {first} and {second} to have the same dtype, but got: "
                           f"{da.name} != {db.name}")


@functor("Mm")
class MmFunctor:
    """``mm(input, mat2)``: the product of two matrices."""

    def __init__(self):
        self.op = _matmul_op()

    @lower_precision_function
    def __call__(self, a, b):
        if a._meta.ndim != 2:
            raise RuntimeError(f"mm: self must be a matrix, got a {a._meta.ndim}-D tensor")
        if b._meta.ndim != 2:
            raise RuntimeError(f"mm: mat2 must be a matrix, got a {b._meta.ndim}-D tensor")
        _check_same_dtype("mm", a, b, "self", "mat2")
        return dispatch(self.op, (a, b))[0]


@functor("Bmm")
class BmmFunctor:
    """``bmm(input, mat2)``: (b, n, m) @ (b, m, p) -> (b, n, p), without broadcasting."""

    def __init__(self):
        self.op = _matmul_op()

    @lower_precision_function
    def __call__(self, a, b):
        sa, sb = a._meta.shape, b._meta.shape
        if len(sa) != 3:
            raise RuntimeError(f"bmm: batch1 must be a 3D tensor, got {len(sa)}D")
        if len(sb) != 3:
            raise RuntimeError(f"bmm: batch2 must be a 3D tensor, got {len(sb)}D")
        if sb[0] != sa[0] or sb[1] != sa[2]:
            raise RuntimeError(f"bmm: Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{sa[0]}, {sa[2]}] but got: [{sb[0]}, {sb[1]}].")
        _check_same_dtype("bmm", a, b, "batch1", "batch2")
        return dispatch(self.op, (a, b))[0]


@functor("Dot")
class DotFunctor:
    """``dot(input, tensor)``: the inner product of two 1-d tensors of equal size (a 0-d result)."""

    def __init__(self):
        self.op = _matmul_op()

    @without_autocast
    def __call__(self, a, b):
        na, nb = a._meta.ndim, b._meta.ndim
        if na != 1 or nb != 1:
            raise RuntimeError(f"dot: 1D tensors expected, but got {na}D and {nb}D tensors")
        da, db = a._meta.dtype, b._meta.dtype
        if da is not db:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {TORCH_NAMES[da]} and "
                               f"{TORCH_NAMES[db]}")
        return dispatch(self.op, (a, b))[0]


@composite("Outer")
def outer(a, b):
    """``outer(input, vec2)``: ``input[:, None] * vec2`` for 1-d tensors (promoting like ``mul``)."""
    for name, t in (("self", a), ("vec2", b)):
        if t._meta.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t._meta.ndim}-D")
    return F.mul(F.reshape(a, (a._meta.shape[0], 1)), b)


@functor("Linear")
class LinearFunctor:
    """``linear(input, weight, bias=None)``: ``input @ weight.T + bias`` (one op); weight (out, in) or (in,)."""

    def __init__(self):
        self.op = OpBuilder("linear").input("x").input("weight").output("out").build()
        self.op_bias = OpBuilder("linear").input("x").input("weight").input("bias").output("out").build()

    def __call__(self, x, weight, bias=None):
        if bias is None:
            return dispatch(self.op, (x, weight))[0]
        return dispatch(self.op_bias, (x, weight, bias))[0]


@functor("Baddbmm")
class BaddbmmFunctor:
    """``baddbmm(input, batch1, batch2, *, beta=1, alpha=1)``: ``beta * input + alpha * (batch1 @ batch2)``;
    with ``beta`` 0 the input's values are ignored (NaN and inf included), as in PyTorch."""

    def __init__(self):
        self.op = OpBuilder("baddbmm").input("input").input("batch1").input("batch2").output("out").build()
        self._attrs = {}

    def __call__(self, x, batch1, batch2, beta=1, alpha=1, inplace=False):
        d = x._meta.dtype
        for name, value in (("beta", beta), ("alpha", alpha)):
            if type(value) is bool and d.name != "bool":
                raise RuntimeError(f"baddbmm: Boolean {name} only supported for Boolean results.")
            if type(value) is float and not d.is_floating_point:
                raise RuntimeError(f"baddbmm: For integral input tensors, argument {name} must not be a floating "
                                   f"point number.")
        attrs = cached_attrs(self._attrs, ("alpha", "beta"), (float(alpha), float(beta)))
        out = dispatch(self.op, (x, batch1, batch2), attrs)[0]
        if inplace:
            check_inplace_shape("baddbmm_", x._meta.shape, out._meta.shape)
            return cast_into(out, x)
        return out


# ---- einsum ----------------------------------------------------------------------------------------
def _parse_term(term, what):
    """(letters before the ellipsis, whether there is one, letters after it) of one subscript term."""
    head, ellipsis, tail = term.partition("...")
    if "..." in tail:
        raise RuntimeError(f"einsum(): found more than one ellipsis for {what}")
    for c in head + tail:
        if c == ".":
            raise RuntimeError(f"einsum(): found '.' for {what} that is not part of any ellipsis")
        if c not in ascii_letters:
            raise RuntimeError(f"einsum(): invalid subscript given in the equation string: {c!r}; subscripts must "
                               f"be in [a-zA-Z]")
    return head, bool(ellipsis), tail


def _normalise(equation, shapes):
    """PyTorch's einsum syntax as a normalised equation (Note [Normalised einsum equations] in ops/linalg.py):
    returns it with, per operand, the shape to expand it to first (None when it needs none)."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    parsed = [_parse_term(t, f"operand {k}") for k, t in enumerate(terms)]
    ell_dims = []
    for k, ((head, ellipsis, tail), shape) in enumerate(zip(parsed, shapes)):
        n = len(head) + len(tail)
        if ellipsis:
            if n > len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) is more than the number "
                                   f"of dimensions ({len(shape)}) for operand {k}")
        elif n != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) does not match the number "
                               f"of dimensions ({len(shape)}) for operand {k} and no ellipsis was given")
        ell_dims.append(len(shape) - n if ellipsis else 0)
    counts = Counter(c for head, _, tail in parsed for c in head + tail)
    n_ell = max(ell_dims)
    free = [c for c in ascii_letters if c not in counts]
    if len(free) < n_ell:
        raise RuntimeError(f"einsum(): the ellipsis covers {n_ell} dimensions but only {len(free)} subscript letters "
                           f"are unused")
    ell = "".join(free[:n_ell])
    terms = [head + ell[n_ell - e:] + tail for (head, _, tail), e in zip(parsed, ell_dims)]
    if arrow:
        head, ellipsis, tail = _parse_term(rhs, "the output")
        for i, c in enumerate(head + tail):
            if c not in counts:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   f"operand")
            if c in (head + tail)[:i]:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
        out = head + (ell if ellipsis else "") + tail
    else:  # the ellipsis dims, then the letters used once, in alphabetical order
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    sizes = {}
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        own = {}
        for c, d in zip(term, shape):
            if own.setdefault(c, d) != d:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but the sizes don't match, "
                                   f"{own[c]} != {d}")
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = d
            elif d != 1 and d != seen:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes: subscript {c} has size "
                                   f"{d} for operand {k} which does not broadcast with previously seen size {seen}")
    targets = []
    for term, shape in zip(terms, shapes):
        target = tuple(sizes[c] for c in term)
        targets.append(None if target == tuple(shape) else target)
    return ",".join(terms) + "->" + out, tuple(targets) if any(t is not None for t in targets) else None


@functor("Einsum")
class EinsumFunctor:
    """``einsum(equation, *operands)`` (or a list of operands): PyTorch's syntax with ``...`` (broadcast, and
    summed when the output leaves it out), an implicit output (the ellipsis dims, then the letters used
    once, sorted) and size-1 dims that broadcast."""

    def __init__(self):
        self.ops = VariadicOp("einsum", "in", "out")
        self.expand = get_functor("Expand")
        self._plans = {}  # (equation, operand shapes) -> (normalised equation, expand targets)
        self._attrs = {}

    def raw(self, equation, operands, out_shape=()):
        """Run a normalised equation (see Note [Normalised einsum equations]) on operands of one dtype."""
        attrs = cached_attrs(self._attrs, ("equation", "out_shape"), (equation, tuple(out_shape)))
        return dispatch(self.ops(len(operands)), operands, attrs)[0]

    def __call__(self, equation, operands):
        if not operands:
            raise RuntimeError("einsum(): must specify the equation string and at least one operand")
        shapes = tuple([t._meta.shape for t in operands])
        normalised, targets = cached(self._plans, (equation, shapes), lambda: _normalise(equation, shapes))
        if targets is not None:
            operands = [t if s is None else self.expand(t, s) for t, s in zip(operands, targets)]
        return self.raw(normalised, operands)


# ---- PyTorch's argument checks of the linalg functions -----------------------------------------------
_REAL = (dt.float32, dt.float64)


def check_float(name, *tensors):
    """float32 / float64 tensors of one dtype (PyTorch's linalg messages)."""
    first = tensors[0]._meta.dtype
    for t in tensors:
        d = t._meta.dtype
        if d is dt.float16:
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got Half")
        if d not in _REAL:
            raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {TORCH_NAMES[d]}")
        if d is not first:
            raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of type "
                               f"{TORCH_NAMES[first]} and B of type {TORCH_NAMES[d]} instead")


def check_matrix(name, A, square=True, what="A", floating=True):
    m = A._meta
    if m.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")
    if square and m.shape[-1] != m.shape[-2]:
        raise RuntimeError(f"{name}: {what} must be batches of square matrices, but they are {m.shape[-2]} by "
                           f"{m.shape[-1]} matrices")
    if floating:
        check_float(name, A)


def mT(t):
    """The matrix transpose (last two dims) of ``t``."""
    return F.transpose(t, -2, -1)


class _LinalgOp:
    """A functor running one op of ops/linalg.py, built once, with attrs cached per distinct values."""

    op_type = ""
    inputs = ("A",)
    outputs = ("out",)

    def __init__(self):
        b = OpBuilder(self.op_type)
        for name in self.inputs:
            b = b.input(name)
        for name in self.outputs:
            b = b.output(name)
        self.op = b.build()
        self._attrs = {}

    def run(self, inputs, names=(), values=()):
        return dispatch(self.op, inputs, cached_attrs(self._attrs, names, values) if names else None)


# ---- diagonal, diag, diag_embed, diagflat, trace -------------------------------------------------------
@functor("Diagonal")
class DiagonalFunctor(_LinalgOp):
    """``diagonal(input, offset=0, dim1=0, dim2=1)``: the ``offset`` diagonal over ``dim1`` and ``dim2`` as its
    last dim, a view of ``input``."""

    op_type, inputs, outputs = "diagonal", ("x",), ("y",)

    def __call__(self, x, offset=0, dim1=0, dim2=1):
        return self.run((x,), ("offset", "dim1", "dim2"), (offset, dim1, dim2))[0]


@functor("DiagEmbed")
class DiagEmbedFunctor(_LinalgOp):
    """``diag_embed(input, offset=0, dim1=-2, dim2=-1)``: matrices (over ``dim1``, ``dim2`` of the result) with
    the last dim of ``input`` on their ``offset`` diagonal, zeros elsewhere."""

    op_type, inputs, outputs = "diagonal_grad", ("dy",), ("dx",)

    def __call__(self, x, offset=0, dim1=-2, dim2=-1):
        shape = x._meta.shape
        ndim = len(shape) + 1
        d1, d2 = _wrap_dim(dim1, ndim, "diag_embed"), _wrap_dim(dim2, ndim, "diag_embed")
        if d1 == d2:
            raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
        n = (shape[-1] if shape else 1) + abs(offset)
        like = list(shape[:-1])
        for d in sorted((d1, d2)):
            like.insert(d, n)
        if not shape:
            x = F.reshape(x, (1,))
        return self.run((x,), ("offset", "dim1", "dim2", "like_shape"), (offset, d1, d2, tuple(like)))[0]


@composite("Diag")
def diag(x, diagonal=0):
    """``diag(input, diagonal=0)``: a 1-D input as the ``diagonal`` of a square matrix; a 2-D input's
    ``diagonal`` (a copy)."""
    nd = x._meta.ndim
    if nd == 1:
        return F.diag_embed(x, diagonal, 0, 1)
    if nd == 2:
        return F.clone(F.diagonal(x, diagonal))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


@composite("Diagflat")
def diagflat(x, offset=0):
    """``diagflat(input, offset=0)``: the flattened input as the ``offset`` diagonal of a square matrix."""
    return F.diag_embed(F.reshape(x, (-1,)), offset, 0, 1)


@composite("DiagonalCopy")
def diagonal_copy(x, offset=0, dim1=0, dim2=1):
    """``diagonal_copy(input, offset=0, dim1=0, dim2=1)``: ``diagonal`` as a new tensor."""
    return F.clone(F.diagonal(x, offset, dim1, dim2))


@composite("DiagonalScatter")
def diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    """``diagonal_scatter(input, src, offset=0, dim1=0, dim2=1)``: a copy of ``input`` with ``src`` on its
    ``offset`` diagonal over ``dim1``, ``dim2`` (``src`` embedded by ``diagonal``'s adjoint, chosen by a mask)."""
    d = F.diagonal(x, offset, dim1, dim2)
    if src._meta.shape != d._meta.shape:
        raise RuntimeError(f"diagonal_scatter: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._meta.shape)}, slice size = {list(d._meta.shape)}")
    nd = x._meta.ndim
    attrs = {"offset": offset, "dim1": dim1 % nd, "dim2": dim2 % nd, "like_shape": tuple(x._meta.shape)}
    on_diagonal = F.ops.diagonal_grad(F.ones_like(d, dtype=dt.bool_), **attrs)
    return F.where(on_diagonal, F.ops.diagonal_grad(cast(src, x._meta.dtype), **attrs), x)


@composite("FillDiagonal")
def fill_diagonal_(x, fill_value, wrap=False):
    """``Tensor.fill_diagonal_(fill_value, wrap=False)``: writes ``fill_value`` on the main diagonal (all dims
    equal, or a tall matrix, whose diagonal restarts every n + 1 rows with ``wrap``)."""
    shape = x._meta.shape
    if len(shape) < 2:
        raise RuntimeError("fill_diagonal_: dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("fill_diagonal_: all dimensions of input must be of equal length")
    mask = np.zeros(shape, bool)
    n = min(shape)
    idx = np.arange(n)
    mask[(idx,) * len(shape)] = True
    if wrap and len(shape) == 2 and shape[0] > shape[1] + 1:
        rows = np.arange(shape[0])
        block = rows % (shape[1] + 1)
        mask[rows[block < shape[1]], block[block < shape[1]]] = True
    return F.masked_fill(x, tensor(mask, device=x._meta.device), fill_value, inplace=True)


@composite("Trace")
@fp32_function
def trace(x):
    """``trace(input)``: the sum of a matrix's diagonal (int64 for integer inputs)."""
    if x._meta.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x._meta.ndim}")
    if x._meta.dtype is dt.bool_:
        raise OpKernelNotFoundError("\"trace\" not implemented for 'Bool'")
    return F.sum(F.diagonal(x))


# ---- addmm, addbmm, addmv, addr, mv, vdot, inner, kron, tensordot, chain_matmul, multi_dot -------------------
def _combine(name, x, product, beta, alpha, inplace):
    """``beta * input + alpha * product`` with PyTorch's rules: ``input`` broadcasts to the product's shape,
    with ``beta`` 0 its values are ignored (NaN included); ``inplace`` writes into ``input``."""
    d = product._meta.dtype
    for arg, value in (("beta", beta), ("alpha", alpha)):
        if type(value) is bool and d is not dt.bool_:
            raise RuntimeError(f"{name}: Boolean {arg} only supported for Boolean results.")
        if type(value) is float and not d.is_floating_point:
            raise RuntimeError(f"{name}: For integral input tensors, argument {arg} must not be a floating point "
                               f"number.")
    shape = product._meta.shape
    if broadcast_shapes(name, x._meta.shape, shape) != tuple(shape):
        raise RuntimeError(f"{name}: the input of shape {list(x._meta.shape)} does not broadcast to the product's "
                           f"shape {list(shape)}")
    out = product if alpha == 1 else F.mul(product, alpha)
    if beta != 0:
        out = F.add(out, x if beta == 1 else F.mul(x, beta))
    elif x._meta.shape != shape:
        out = F.expand(out, shape)
    if inplace:
        check_inplace_shape(name, x._meta.shape, shape)
        return cast_into(out, x)
    return out


@composite("Addmm")
@lower_precision_function
def addmm(x, mat1, mat2, beta=1, alpha=1, inplace=False):
    """``addmm(input, mat1, mat2, *, beta=1, alpha=1)``: ``beta * input + alpha * (mat1 @ mat2)``."""
    return _combine("addmm", x, F.mm(mat1, mat2), beta, alpha, inplace)


@composite("Addbmm")
@lower_precision_function
def addbmm(x, batch1, batch2, beta=1, alpha=1, inplace=False):
    """``addbmm(input, batch1, batch2, *, beta=1, alpha=1)``: ``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    products = F.bmm(batch1, batch2)
    return _combine("addbmm", x, F.sum(products, 0, dtype=products._meta.dtype), beta, alpha, inplace)


@composite("Addmv")
def addmv(x, mat, vec, beta=1, alpha=1, inplace=False):
    """``addmv(input, mat, vec, *, beta=1, alpha=1)``: ``beta * input + alpha * (mat @ vec)``."""
    return _combine("addmv", x, F.mv(mat, vec), beta, alpha, inplace)


@composite("AddmvInplace")
def addmv_(x, mat, vec, beta=1, alpha=1):
    """``addmv_(input, mat, vec, *, beta=1, alpha=1)``: ``addmv`` written into ``input``."""
    return addmv(x, mat, vec, beta, alpha, True)


@composite("Addr")
def addr(x, vec1, vec2, beta=1, alpha=1, inplace=False):
    """``addr(input, vec1, vec2, *, beta=1, alpha=1)``: ``beta * input + alpha * outer(vec1, vec2)``."""
    for arg, v in (("vec1", vec1), ("vec2", vec2)):
        if v._meta.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {arg}, but got {v._meta.ndim}-D")
    return _combine("addr", x, F.outer(vec1, vec2), beta, alpha, inplace)


@composite("Mv")
@without_autocast
def mv(mat, vec):
    """``mv(input, vec)``: the product of a matrix and a vector."""
    if mat._meta.ndim != 2 or vec._meta.ndim != 1:
        raise RuntimeError(f"mv: vector + matrix @ vector expected, got 1, {mat._meta.ndim}, {vec._meta.ndim}")
    if mat._meta.shape[1] != vec._meta.shape[0]:
        raise RuntimeError(f"mv: size mismatch, got input ({mat._meta.shape[0]}), mat ({mat._meta.shape[0]}x"
                           f"{mat._meta.shape[1]}), vec ({vec._meta.shape[0]})")
    _check_same_dtype("mv", mat, vec, "self", "vec")
    return F.matmul(mat, vec)


@composite("Vdot")
def vdot(a, b):
    """``vdot(input, other)``: the dot product of two 1-D tensors (``dot`` for real tensors)."""
    return F.dot(a, b)


@composite("Inner")
def inner(a, b):
    """``inner(input, other)``: sums over the last dims: (*a, n) x (*b, n) -> (*a, *b); a 0-d operand
    multiplies."""
    if a._meta.ndim == 0 or b._meta.ndim == 0:
        return F.mul(a, b)
    sa, sb = a._meta.shape, b._meta.shape
    if sa[-1] != sb[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(sa)} and {list(sb)}")
    rows_a, rows_b = math.prod(sa[:-1]), math.prod(sb[:-1])  # explicit: -1 is ambiguous with no element
    out = F.matmul(F.reshape(a, (rows_a, sa[-1])), mT(F.reshape(b, (rows_b, sb[-1]))))
    return F.reshape(out, tuple(sa[:-1]) + tuple(sb[:-1]))


@composite("Kron")
def kron(a, b):
    """``kron(input, other)``: the Kronecker product; the shorter shape is padded with leading ones."""
    n = builtins.max(a._meta.ndim, b._meta.ndim)
    sa = (1,) * (n - a._meta.ndim) + tuple(a._meta.shape)
    sb = (1,) * (n - b._meta.ndim) + tuple(b._meta.shape)
    ai = F.reshape(a, tuple(v for s in sa for v in (s, 1)))
    bi = F.reshape(b, tuple(v for s in sb for v in (1, s)))
    return F.reshape(F.mul(ai, bi), tuple(x * y for x, y in zip(sa, sb)))


def tensordot(a, b, dims=2):
    """``tensordot(a, b, dims=2)``: contracts the last ``dims`` dims of ``a`` with the first ``dims`` of ``b``,
    or the dims listed in ``dims = (dims_a, dims_b)`` (lists, or a 2-row tensor)."""
    na, nb = a._meta.ndim, b._meta.ndim
    if isinstance(dims, Tensor):
        dims = dims.tolist()
        dims = dims if isinstance(dims, list) and dims and isinstance(dims[0], list) else int(dims)
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > builtins.min(na, nb):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(na - dims, na)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {len(da)} and {len(db)}")
    da = [_wrap_dim(d, na, "tensordot") for d in da]
    db = [_wrap_dim(d, nb, "tensordot") for d in db]
    sa, sb = a._meta.shape, b._meta.shape
    for x, y in zip(da, db):
        if sa[x] != sb[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa[x]} in dim {x} and "
                               f"second has size {sb[y]} in dim {y}")
    free_a = [i for i in range(na) if i not in da]
    free_b = [i for i in range(nb) if i not in db]
    k = math.prod(sa[d] for d in da)
    left = F.reshape(F.permute(a, free_a + da), (-1, k))
    right = F.reshape(F.permute(b, db + free_b), (k, -1))
    return F.reshape(F.mm(left, right), tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b))


def _chain_order(shapes):
    """The split of each sub-chain that multiplies it with the fewest scalar products (matrix-chain DP)."""
    n = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _multiply_chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return F.mm(_multiply_chain(mats, split, i, k), _multiply_chain(mats, split, k + 1, j))


@composite("MultiDot")
def multi_dot(tensors):
    """``linalg.multi_dot(tensors)``: the product of matrices in the cheapest order; the first may be 1-D
    (a row vector) and the last 1-D (a column vector)."""
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    mats = list(tensors)
    first_vec, last_vec = mats[0]._meta.ndim == 1, mats[-1]._meta.ndim == 1
    if mats[0]._meta.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {mats[0]._meta.ndim}D")
    if mats[-1]._meta.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {mats[-1]._meta.ndim}D")
    for i, t in enumerate(mats[1:-1], 1):
        if t._meta.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t._meta.ndim}D")
    if first_vec:
        mats[0] = F.reshape(mats[0], (1, -1))
    if last_vec:
        mats[-1] = F.reshape(mats[-1], (-1, 1))
    for i in range(n - 1):
        if mats[i]._meta.shape[1] != mats[i + 1]._meta.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i]._meta.shape)} "
                               f"and {list(tensors[i + 1]._meta.shape)} cannot be multiplied")
    out = _multiply_chain(mats, _chain_order([t._meta.shape for t in mats]), 0, n - 1)
    if first_vec or last_vec:
        out = F.reshape(out, tuple(s for s, drop in zip(out._meta.shape, (first_vec, last_vec)) if not drop))
    return out


@composite("ChainMatmul")
def chain_matmul(matrices):
    """``chain_matmul(*matrices)``: the product of 2-D matrices in the cheapest order."""
    for i, t in enumerate(matrices):
        if t._meta.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected all tensors to be 2D, but tensor {i} is {t._meta.ndim}D")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        return F.clone(matrices[0])
    return F.linalg_multi_dot(matrices)


@composite("Vecdot")
@lower_precision_function
def vecdot(x, y, dim=-1):
    """``linalg.vecdot(x, y, *, dim=-1)``: ``sum(x * y, dim)`` of floating tensors (broadcasting)."""
    for t in (x, y):
        if not t._meta.dtype.is_floating_point:
            raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                               f"{TORCH_NAMES[t._meta.dtype]}")
    return F.sum(F.mul(x, y), dim)


def _cross(name, a, b, dim):
    if a._meta.ndim != b._meta.ndim:  # broadcasting, but not over a missing leading dim (PyTorch)
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    if not a._meta.ndim:
        raise RuntimeError(f"{name}: inputs must have at least one dimension of length 3, got 0-d tensors")
    if dim is None:  # PyTorch's default: the first dim of size 3 of the input (not of the broadcast shape)
        dim = next((i for i, s in enumerate(a._meta.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"{name}: no dimension of size 3 in input")
    shape = broadcast_shapes(name, a._meta.shape, b._meta.shape)
    if a._meta.shape != shape:
        a = F.expand(a, shape)
    if b._meta.shape != shape:
        b = F.expand(b, shape)
    d = _wrap_dim(dim, len(shape), name)
    if a._meta.shape[d] != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got {a._meta.shape[d]} and "
                           f"{b._meta.shape[d]}")
    da, db = a._meta.dtype, b._meta.dtype
    if da is not db:  # PyTorch's kernel takes one dtype: no promotion (empty inputs too)
        raise RuntimeError(f"{name}: expected input and other to have the same dtype, but got {da.name} and "
                           f"{db.name}")
    if da is dt.bool_:
        raise OpKernelNotFoundError(f"{name}: not implemented for 'Bool'")
    return F.sub(F.mul(F.roll(a, -1, d), F.roll(b, 1, d)), F.mul(F.roll(a, 1, d), F.roll(b, -1, d)))


composite("Cross")(lambda a, b, dim=None: _cross("cross", a, b, dim))
composite("LinalgCross")(lambda a, b, dim=-1: _cross("linalg.cross", a, b, dim))


# ---- cov, corrcoef --------------------------------------------------------------------------------------
def _check_cov_weights(fweights, aweights):
    """PyTorch's dtype checks of cov's weights, and their sign where the values are at hand."""
    if fweights is not None and (fweights._meta.dtype.is_floating_point or fweights._meta.dtype is dt.bool_):
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                           f"{TORCH_NAMES[fweights._meta.dtype]} dtype")
    if aweights is not None and not aweights._meta.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                           f"{TORCH_NAMES[aweights._meta.dtype]} dtype")
    for arg, t in (("fweights", fweights), ("aweights", aweights)):
        if t is not None and t._meta.numel and not _all_true(F.ge(t, 0)):
            raise RuntimeError(f"cov(): {arg} cannot be negative")


@composite("Cov")
def cov(x, correction=1, fweights=None, aweights=None):
    """``cov(input, *, correction=1, fweights=None, aweights=None)``: the covariance matrix of the variables
    (rows) of ``input`` over its observations (columns), weighted as ``torch.cov``."""
    if x._meta.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{x._meta.ndim} dimensions")
    if x._meta.dtype is dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    if aweights is not None and aweights._meta.dtype.is_floating_point:  # PyTorch: the result type of both
        x = cast(x, dt.promote_types(x._meta.dtype, aweights._meta.dtype))
    if not x._meta.dtype.is_floating_point:
        x = cast(x, get_default_dtype())
    for arg, t in (("fweights", fweights), ("aweights", aweights)):
        if t is not None and t._meta.ndim > 1:
            raise RuntimeError(f"cov(): expected {arg} to have one or fewer dimensions but got {arg} with "
                               f"{t._meta.ndim} dimensions")
    _check_cov_weights(fweights, aweights)
    x = F.reshape(x, (1, -1)) if x._meta.ndim < 2 else x
    n = x._meta.shape[1]
    for arg, t in (("fweights", fweights), ("aweights", aweights)):
        if t is not None and t._meta.numel != n:
            raise RuntimeError(f"cov(): expected {arg} to have the same numel as there are observations in the "
                               f"input but got {t._meta.numel} != {n}")
    w = fweights
    if aweights is not None:
        w = aweights if w is None else F.mul(w, aweights)
    if w is None:
        avg, w_sum = F.mean(x, 1), float(n)
        factor = n - correction
    else:
        w = cast(w, x._meta.dtype)
        w_sum = F.sum(w)
        avg = F.div(F.sum(F.mul(x, w), 1), w_sum)
        if correction == 0:
            factor = w_sum
        elif aweights is None:
            factor = F.sub(w_sum, correction)
        else:
            factor = F.sub(w_sum, F.div(F.mul(F.sum(F.mul(w, cast(aweights, x._meta.dtype))), correction), w_sum))
    factor = builtins.max(factor, 0) if not isinstance(factor, Tensor) else F.clamp(factor, 0)
    xm = F.sub(x, F.unsqueeze(avg, 1))
    c = F.matmul(xm if w is None else F.mul(xm, w), mT(xm))
    c = F.div(c, factor) if isinstance(factor, Tensor) else F.div(c, float(factor))
    return F.reshape(c, ()) if c._meta.shape == (1, 1) else c


@composite("Corrcoef")
def corrcoef(x):
    """``corrcoef(input)``: Pearson's correlation coefficients of the rows of ``input``, clipped to [-1, 1]. A
    floating row is first divided by its largest ``|x|`` (the coefficients do not change), so its squared
    deviations do not overflow where the coefficients are finite."""
    if x._meta.dtype.is_floating_point and x._meta.numel:
        m = F.amax(F.abs(x), -1, True)
        x = F.div(x, F.where(F.logical_and(F.gt(m, 0), F.lt(m, math.inf)), m, 1.0))
    c = F.cov(x)
    if c._meta.ndim == 0:
        return F.div(c, c)
    std = F.sqrt(F.diagonal(c))
    c = F.div(F.div(c, F.unsqueeze(std, 1)), F.unsqueeze(std, 0))
    return F.clamp(c, -1, 1)


# ---- inverse, determinants, solvers (Note [Linear-algebra ops] in ops/linalg.py) -----------------------------
@functor("LinalgInv")
class LinalgInvFunctor(_LinalgOp):
    """``linalg.inv(A)``: the inverse of each square matrix; LinAlgError for a singular one."""

    op_type, outputs = "linalg_inv", ("out", "info")

    @fp32_function
    def __call__(self, A):
        check_matrix("linalg.inv", A)
        return self.run((A,), ("check_errors",), (True,))[0]


@functor("LinalgInvEx")
class LinalgInvExFunctor(LinalgInvFunctor):
    """``linalg.inv_ex(A, *, check_errors=False)``: named tuple (inverse, info); info > 0 marks a singular
    matrix (its first zero pivot) instead of an error."""

    @fp32_function
    def __call__(self, A, check_errors=False):
        check_matrix("linalg.inv_ex", A)
        return return_types.linalg_inv_ex(*self.run((A,), ("check_errors",), (check_errors,)))


@functor("LinalgDet")
class LinalgDetFunctor(_LinalgOp):
    """``linalg.det(A)``: the determinant of each square matrix."""

    op_type = "linalg_det"

    def __call__(self, A):
        check_matrix("linalg.det", A)
        return self.run((A,))[0]


class _Slogdet(_LinalgOp):
    """``linalg.slogdet(A)``: named tuple (sign, logabsdet) of each square matrix's determinant."""

    op_type, outputs, result = "linalg_slogdet", ("sign", "logabsdet"), return_types.linalg_slogdet

    def __call__(self, A):
        check_matrix("linalg.slogdet", A)
        return self.result(*self.run((A,)))


@functor("LinalgSlogdet")
class LinalgSlogdetFunctor(_Slogdet):
    pass


@functor("Slogdet")
class SlogdetFunctor(_Slogdet):
    result = return_types.slogdet


@composite("Logdet")
def logdet(A):
    """``logdet(input)``: ``log(det(A))``: NaN for a negative determinant, -inf for a zero one."""
    sign, logabs = F.linalg_slogdet(A)
    return F.where(F.lt(sign, 0), math.nan, logabs)


@functor("LinalgSolveEx")
class LinalgSolveExFunctor(_LinalgOp):
    """``linalg.solve_ex(A, B, *, left=True, check_errors=False)``: named tuple (result, info) of ``A X = B``
    (``X A = B`` when not ``left``); B may be a (batch of) vector(s)."""

    op_type, inputs, outputs = "linalg_solve", ("A", "B"), ("out", "info")
    name = "linalg.solve_ex"

    def solve(self, A, B, left, check_errors):
        check_matrix(self.name, A)
        check_float(self.name, A, B)
        sa, sb = A._meta.shape, B._meta.shape
        vector = len(sb) == 1 or (len(sb) == len(sa) - 1 and tuple(sb) == tuple(sa[:-1]))
        if vector and not left:
            raise RuntimeError(f"{self.name}: Vector broadcasting of the left hand side is not supported for "
                               f"left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)")
        if vector:
            B = F.unsqueeze(B, -1)
        elif not left:
            A, B = mT(A), mT(B)
        if B._meta.ndim < 2:
            raise RuntimeError(f"{self.name}: The input tensor B must have at least 2 dimensions.")
        out, info = self.run((A, B), ("check_errors",), (check_errors,))
        if vector:
            out = F.squeeze(out, -1)
        elif not left:
            out = mT(out)
        return out, info

    @fp32_function
    def __call__(self, A, B, left=True, check_errors=False):
        return return_types.linalg_solve_ex(*self.solve(A, B, left, check_errors))


@functor("LinalgSolve")
class LinalgSolveFunctor(LinalgSolveExFunctor):
    """``linalg.solve(A, B, *, left=True)``: ``X`` with ``A X = B`` (``X A = B`` when not ``left``)."""

    name = "linalg.solve"

    @fp32_function
    def __call__(self, A, B, left=True):
        return self.solve(A, B, left, True)[0]


@functor("LinalgSolveTriangular")
class LinalgSolveTriangularFunctor(_LinalgOp):
    """``linalg.solve_triangular(A, B, *, upper, left=True, unitriangular=False)``: ``X`` with ``A X = B``
    (``X A = B``) reading only the ``upper`` (or lower) triangle of ``A``."""

    op_type, inputs = "linalg_solve_triangular", ("A", "B")

    @fp32_function
    def __call__(self, A, B, upper, left=True, unitriangular=False):
        name = "linalg.solve_triangular"
        check_matrix(name, A)
        check_matrix(name, B, square=False, what="B")
        check_float(name, A, B)
        return self.run((A, B), ("upper", "left", "unitriangular"), (upper, left, unitriangular))[0]


def _solve_triangular(A, B, upper, left=True, unitriangular=False):
    return F.linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


@composite("TriangularSolve")
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """``triangular_solve(b, A, upper=True, transpose=False, unitriangular=False)``: named tuple (solution,
    cloned_coefficient) of ``op(A) X = b``, ``op`` transposing when ``transpose``."""
    for what, t in (("b", b), ("A", A)):
        if t._meta.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {what} to have at least 2 dimensions, but it has "
                               f"{t._meta.ndim} dimensions instead")
    coefficient = mT(A) if transpose else A
    x = _solve_triangular(coefficient, b, upper != transpose, unitriangular=unitriangular)
    return return_types.triangular_solve(x, F.clone(A))


class _Cholesky(_LinalgOp):
    op_type, outputs = "linalg_cholesky", ("L", "info")
    name = "linalg.cholesky"

    def factor(self, A, upper, check_errors):
        check_matrix(self.name, A)
        return self.run((A,), ("upper", "check_errors"), (upper, check_errors))


@functor("LinalgCholesky")
class LinalgCholeskyFunctor(_Cholesky):
    """``linalg.cholesky(A, *, upper=False)``: ``L`` lower triangular with ``A = L L^T`` (``U^T U`` when
    ``upper``); LinAlgError when ``A`` is not positive-definite."""

    @fp32_function
    def __call__(self, A, upper=False):
        return self.factor(A, upper, True)[0]


@functor("LinalgCholeskyEx")
class LinalgCholeskyExFunctor(_Cholesky):
    """``linalg.cholesky_ex(A, *, upper=False, check_errors=False)``: named tuple (L, info); a matrix that is
    not positive-definite has info > 0 and a NaN factor (LAPACK leaves a partial one there)."""

    name = "linalg.cholesky_ex"

    @fp32_function
    def __call__(self, A, upper=False, check_errors=False):
        return return_types.linalg_cholesky_ex(*self.factor(A, upper, check_errors))


@composite("CholeskySolve")
@fp32_function
def cholesky_solve(B, L, upper=False):
    """``cholesky_solve(B, L, upper=False)``: ``X`` with ``A X = B`` for ``A = L L^T`` (``U^T U``)."""
    for what, t in (("b", B), ("u", L)):
        if t._meta.ndim < 2:
            raise RuntimeError(f"cholesky_solve: {what} should have at least 2 dimensions, but has "
                               f"{t._meta.ndim} dimensions instead")
    low = mT(L) if upper else L
    return _solve_triangular(mT(low), _solve_triangular(low, B, False), True)


@composite("CholeskyInverse")
@fp32_function
def cholesky_inverse(L, upper=False):
    """``cholesky_inverse(L, upper=False)``: the inverse of ``A = L L^T`` (``U^T U``) from its factor."""
    check_matrix("cholesky_inverse", L)
    n = L._meta.shape[-1]
    return cholesky_solve(F.eye(n, dtype=L._meta.dtype, device=L._meta.device), L, upper)


# ---- QR, SVD, eigh, pinv, rank, powers, exponential ----------------------------------------------------
@functor("LinalgQr")
class LinalgQrFunctor(_LinalgOp):
    """``linalg.qr(A, mode='reduced')``: named tuple (Q, R); ``mode`` 'complete' gives a square Q, 'r' an
    empty Q."""

    op_type, outputs = "linalg_qr", ("Q", "R")

    @fp32_function
    def __call__(self, A, mode="reduced", result=return_types.linalg_qr):
        check_matrix("linalg.qr", A, square=False)
        return result(*self.run((A,), ("mode",), (mode,)))


@composite("Qr")
def qr(A, some=True):
    """``qr(input, some=True)``: named tuple (Q, R); ``some=False`` is mode 'complete'."""
    return get_functor("LinalgQr")(A, "reduced" if some else "complete", return_types.qr)


@functor("LinalgSvd")
class LinalgSvdFunctor(_LinalgOp):
    """``linalg.svd(A, full_matrices=True, *, driver=None)``: named tuple (U, S, Vh) with ``A = U diag(S) Vh``,
    S descending."""

    op_type, outputs = "linalg_svd", ("U", "S", "Vh")

    @fp32_function
    def __call__(self, A, full_matrices=True, driver=None):
        check_matrix("linalg.svd", A, square=False)
        if driver is not None:
            raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                               "cuSOLVER backend.")
        return return_types.linalg_svd(*self.run((A,), ("full_matrices",), (full_matrices,)))


@composite("LinalgSvdvals")
def svdvals(A, driver=None):
    """``linalg.svdvals(A, *, driver=None)``: the singular values, descending."""
    check_matrix("linalg.svdvals", A, square=False)
    return F.linalg_svd(A, False, driver=driver)[1]


@composite("Svd")
def svd(A, some=True, compute_uv=True):
    """``svd(input, some=True, compute_uv=True)``: named tuple (U, S, V) with ``A = U diag(S) V^T``; without
    ``compute_uv`` U and V are zeros (m x m, n x n)."""
    check_matrix("svd", A, square=False)
    if not compute_uv:
        m, n = A._meta.shape[-2:]
        batch = tuple(A._meta.shape[:-2])
        zeros = [F.zeros(batch + (k, k), dtype=A._meta.dtype, device=A._meta.device) for k in (m, n)]
        return return_types.svd(zeros[0], svdvals(A), zeros[1])
    U, S, Vh = F.linalg_svd(A, not some)
    return return_types.svd(U, S, mT(Vh))


@functor("LinalgEigh")
class LinalgEighFunctor(_LinalgOp):
    """``linalg.eigh(A, UPLO='L')``: named tuple (eigenvalues ascending, eigenvectors) of symmetric matrices,
    reading the lower (``'U'``: upper) triangle."""

    op_type, outputs = "linalg_eigh", ("eigenvalues", "eigenvectors")

    @fp32_function
    def __call__(self, A, UPLO="L"):
        check_matrix("linalg.eigh", A)
        return return_types.linalg_eigh(*self.run((A,), ("UPLO",), (UPLO,)))


@composite("LinalgEigvalsh")
def eigvalsh(A, UPLO="L"):
    """``linalg.eigvalsh(A, UPLO='L')``: the eigenvalues of symmetric matrices, ascending."""
    return F.linalg_eigh(A, UPLO)[0]


@functor("LinalgPinv")
class LinalgPinvFunctor(_LinalgOp):
    """``linalg.pinv(A, *, atol=None, rtol=None, hermitian=False)``: the pseudo-inverse, dropping singular
    values at most ``max(atol, rtol * s_max)`` (rtol ``eps * max(m, n)`` when neither is given)."""

    op_type = "linalg_pinv"

    @fp32_function
    def __call__(self, A, atol=None, rtol=None, hermitian=False):
        check_matrix("linalg.pinv", A, square=hermitian)
        values = (-1.0 if atol is None else atol, -1.0 if rtol is None else rtol, hermitian)
        return self.run((A,), ("atol", "rtol", "hermitian"), values)[0]


composite("LinalgPinvRcond")(lambda A, rcond, hermitian=False: F.linalg_pinv(A, rtol=rcond, hermitian=hermitian))
composite("Pinverse")(lambda x, rcond=1e-15: F.linalg_pinv(x, rtol=rcond))


@composite("LinalgMatrixRank")
def matrix_rank(A, atol=None, rtol=None, hermitian=False):
    """``linalg.matrix_rank(A, *, atol=None, rtol=None, hermitian=False)``: the number of singular values
    above ``max(atol, rtol * s_max)`` (rtol as in ``pinv``), int64."""
    check_matrix("linalg.matrix_rank", A, square=hermitian)
    s = F.abs(F.linalg_eigvalsh(A)) if hermitian else svdvals(A)
    if rtol is None:
        rtol = 0.0 if atol is not None else float(np.finfo(A._meta.dtype.np_dtype).eps) * builtins.max(
            A._meta.shape[-2:])
    atol = 0.0 if atol is None else atol
    smax = F.amax(s, -1, True) if s._meta.shape[-1] else F.zeros_like(F.sum(s, -1, True))
    tol = F.clamp(F.mul(smax, rtol), min=atol)
    return F.sum(F.gt(s, tol), -1)


composite("LinalgMatrixRankTol")(lambda A, tol, hermitian=False: matrix_rank(A, tol, 0.0, hermitian))


@composite("MatrixPower")
def matrix_power(A, n):
    """``matrix_power(input, n)``: ``A^n`` by repeated squaring; ``n = 0`` the identity, ``n < 0`` powers of
    the inverse."""
    check_matrix("linalg.matrix_power", A, floating=n < 0)
    if n == 0:
        k = A._meta.shape[-1]
        return F.expand(F.eye(k, dtype=A._meta.dtype, device=A._meta.device), tuple(A._meta.shape))
    if n < 0:
        A, n = F.linalg_inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if n:
            base = F.matmul(base, base)
    return result


@functor("MatrixExp")
class MatrixExpFunctor(_LinalgOp):
    """``matrix_exp(input)``: the matrix exponential of each square matrix."""

    op_type = "matrix_exp"

    def __call__(self, A):
        check_matrix("linalg.matrix_exp", A)
        return self.run((A,))[0]


# ---- LU ----------------------------------------------------------------------------------------------
class _LuFactor(_LinalgOp):
    op_type, outputs = "linalg_lu_factor", ("LU", "pivots", "info")

    def factor(self, name, A, pivot, check_errors):
        check_matrix(name, A, square=False)
        if not pivot:
            raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")
        return self.run((A,), ("check_errors",), (check_errors,))


@functor("LinalgLuFactor")
class LinalgLuFactorFunctor(_LuFactor):
    """``linalg.lu_factor(A, *, pivot=True)``: named tuple (LU, pivots) of ``A = P L U`` in LAPACK's compact
    form (1-based int32 pivots)."""

    @fp32_function
    def __call__(self, A, pivot=True):
        LU, pivots, _ = self.factor("torch.linalg.lu_factor", A, pivot, True)
        return return_types.linalg_lu_factor(LU, pivots)


@functor("LinalgLuFactorEx")
class LinalgLuFactorExFunctor(_LuFactor):
    """``linalg.lu_factor_ex(A, *, pivot=True, check_errors=False)``: named tuple (LU, pivots, info)."""

    @fp32_function
    def __call__(self, A, pivot=True, check_errors=False):
        return return_types.linalg_lu_factor_ex(*self.factor("torch.linalg.lu_factor_ex", A, pivot, check_errors))


@functor("LuUnpack")
class LuUnpackFunctor(_LinalgOp):
    """``lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True)``: named tuple (P, L, U)."""

    op_type, inputs, outputs = "lu_unpack", ("LU_data", "LU_pivots"), ("P", "L", "U")

    def __call__(self, LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
        check_matrix("lu_unpack", LU_data, square=False, what="LU_data")
        return return_types.lu_unpack(*self.run((LU_data, LU_pivots), ("unpack_data", "unpack_pivots"),
                                                (unpack_data, unpack_pivots)))


@composite("LinalgLu")
def lu(A, pivot=True):
    """``linalg.lu(A, *, pivot=True)``: named tuple (P, L, U) with ``A = P L U``."""
    LU, pivots, _ = get_functor("LinalgLuFactorEx")(A, pivot)
    return return_types.linalg_lu(*F.lu_unpack(LU, pivots))


@composite("LinalgLuSolve")
def lu_solve(LU, pivots, B, left=True, adjoint=False):
    """``linalg.lu_solve(LU, pivots, B, *, left=True, adjoint=False)``: ``X`` with ``A X = B`` (``A^T X``,
    ``X A``, ``X A^T`` by ``left`` and ``adjoint``) from ``A``'s ``lu_factor``."""
    check_matrix("linalg.lu_solve", LU)
    check_matrix("linalg.lu_solve", B, square=False, what="B")
    P, L, U = F.lu_unpack(LU, pivots)
    if left and not adjoint:    # U^-1 L^-1 P^T B
        return _solve_triangular(U, _solve_triangular(L, F.matmul(mT(P), B), False, unitriangular=True), True)
    if left:                    # P L^-T U^-T B
        y = _solve_triangular(mT(U), B, False)
        return F.matmul(P, _solve_triangular(mT(L), y, True, unitriangular=True))
    if not adjoint:             # B U^-1 L^-1 P^T
        y = _solve_triangular(U, B, True, left=False)
        return F.matmul(_solve_triangular(L, y, False, left=False, unitriangular=True), mT(P))
    y = F.matmul(B, P)          # B P L^-T U^-T
    return _solve_triangular(mT(U), _solve_triangular(mT(L), y, True, left=False, unitriangular=True), False,
                             left=False)


composite("LuSolve")(lambda b, LU_data, LU_pivots: lu_solve(LU_data, LU_pivots, b))


@functor("Lu")
class LuFunctor(_LuFactor):
    """``lu(A, pivot=True, get_infos=False)``: (LU, pivots) or (LU, pivots, infos), as ``torch.lu``; without
    ``get_infos`` a singular matrix is an error."""

    def __call__(self, A, pivot=True, get_infos=False):
        LU, pivots, info = self.factor("torch.lu", A, pivot, not get_infos)
        return (LU, pivots, info) if get_infos else (LU, pivots)


# ---- lstsq, cond, tensorinv, tensorsolve, vander -----------------------------------------------------------
_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _all_true(t) -> bool:
    """Whether every element of ``t`` holds (True for a tensor without data: on meta, or captured in a graph)."""
    if not t._meta.device.device_type.has_storage or t._key_set & (LAZY_KEY_SET | BATCHED_KEY_SET):
        return True
    return bool(F.all(t).item())


@composite("LinalgLstsq")
def lstsq(A, B, rcond=None, driver=None):
    """``linalg.lstsq(A, B, rcond=None, *, driver=None)``: named tuple (solution, residuals, rank,
    singular_values) minimising ``|A X - B|``, the solution by the pseudo-inverse (PyTorch's cpu drivers give
    the same for full-rank inputs); residuals when m > n and A has full rank (not with 'gelsy'), rank for
    'gelsy' / 'gelsd' / 'gelss', singular values for 'gelsd' / 'gelss' (empty otherwise)."""
    name = "torch.linalg.lstsq"
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    check_matrix(name, A, square=False)
    check_float(name, A, B)
    vector = B._meta.ndim == A._meta.ndim - 1
    if vector:
        B = F.unsqueeze(B, -1)
    m, n = A._meta.shape[-2:]
    if B._meta.shape[-2] != m:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-2)")
    eps_rtol = float(np.finfo(A._meta.dtype.np_dtype).eps) * builtins.max(m, n)
    rtol = eps_rtol if rcond is None or rcond < 0 else rcond
    X = F.matmul(F.linalg_pinv(A, rtol=rtol), B)
    empty = F.zeros((0,), dtype=A._meta.dtype, device=A._meta.device)
    rank = matrix_rank(A, None, rtol) if driver != "gels" else F.zeros((0,), dtype=dt.int64, device=A._meta.device)
    singular = svdvals(A) if driver in ("gelsd", "gelss") else empty
    residuals = empty
    if m > n and driver != "gelsy" and (driver == "gels" or _all_true(F.eq(rank, n))):
        residuals = F.sum(F.square(F.sub(F.matmul(A, X), B)), -2)
        if vector:
            residuals = F.squeeze(residuals, -1)
    return return_types.linalg_lstsq(F.squeeze(X, -1) if vector else X, residuals, rank, singular)


def _cond(A, p=None):
    """``linalg.cond(A, p=None)``: the condition number ``|A|_p |A^-1|_p``; by the singular values for
    p None / 2 / -2 (any shape), by norms of the inverse otherwise (square; inf for a singular matrix)."""
    if p is None or p == 2 or p == -2:
        check_matrix("linalg.cond", A, square=False)
        s = svdvals(A)
        k = s._meta.shape[-1]
        hi, lo = F.narrow(s, -1, 0, 1), F.narrow(s, -1, k - 1, 1)
        return F.squeeze(F.div(lo, hi) if p == -2 else F.div(hi, lo), -1)
    check_matrix("linalg.cond", A)
    inverse, info = F.linalg_inv_ex(A)
    value = F.mul(F.linalg_matrix_norm(A, p), F.linalg_matrix_norm(inverse, p))
    return F.where(F.gt(info, 0), math.inf, value)


composite("LinalgCond")(_cond)


@composite("LinalgTensorinv")
def tensorinv(A, ind=2):
    """``linalg.tensorinv(A, ind=2)``: the inverse for ``tensordot(A, ., ind)``: shape
    ``A.shape[ind:] + A.shape[:ind]``."""
    if ind <= 0:
        raise RuntimeError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A._meta.shape)
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise RuntimeError(f"linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return F.reshape(F.linalg_inv(F.reshape(A, (rows, cols))), shape[ind:] + shape[:ind])


@composite("LinalgTensorsolve")
def tensorsolve(A, B, dims=None):
    """``linalg.tensorsolve(A, B, dims=None)``: ``X`` with ``tensordot(A, X, X.ndim) = B``; ``dims`` moves
    those dims of ``A`` to the end first."""
    nd = A._meta.ndim
    if dims is not None:
        moved = [_wrap_dim(d, nd, "linalg.tensorsolve") for d in dims]
        A = F.permute(A, [i for i in range(nd) if i not in moved] + moved)
    b_shape = tuple(B._meta.shape)
    x_shape = tuple(A._meta.shape[B._meta.ndim:])
    rows, cols = math.prod(b_shape), math.prod(x_shape)
    if tuple(A._meta.shape[:B._meta.ndim]) != b_shape or rows != cols:
        raise RuntimeError(f"linalg.tensorsolve: Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    x = F.linalg_solve(F.reshape(A, (rows, cols)), F.reshape(B, (rows,)))
    return F.reshape(x, x_shape)


@composite("LinalgVander")
def vander(x, N=None):
    """``linalg.vander(x, *, N=None)``: ``x[..., None] ** [0, 1, ..., N-1]`` (N = x.shape[-1] by default)."""
    if x._meta.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x._meta.shape[-1] if N is None else N
    if n < 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, but got {n}")
    if x._meta.dtype is dt.bool_:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    powers = F.arange(n, dtype=x._meta.dtype, device=x._meta.device)
    return F.pow(F.unsqueeze(x, -1), powers)


# ---- norms, dist, renorm, cdist, pdist, isclose, allclose, equal -----------------------------------------
def _matrix_norm_dims(name, A, dim):
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    nd = A._meta.ndim
    if nd < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    d0, d1 = (_wrap_dim(d, nd, name) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _svd_norm(A, d0, d1, keepdim, reduce):
    """``reduce`` over the singular values of the matrices over dims d0, d1."""
    nd = A._meta.ndim
    moved = F.permute(A, [i for i in range(nd) if i not in (d0, d1)] + [d0, d1])
    r = reduce(svdvals(moved))
    if keepdim:
        for d in sorted((d0, d1)):
            r = F.unsqueeze(r, d)
    return r


@composite("LinalgMatrixNorm")
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    """``linalg.matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None)``: 'fro', 'nuc', inf,
    -inf, 1, -1, 2 or -2 norm of the matrices over ``dim``."""
    name = "linalg.matrix_norm"
    d0, d1 = _matrix_norm_dims(name, A, dim)
    if dtype is not None:
        A = cast(A, dtype)
    if ord in ("nuc", 2, -2):  # by the SVD: float32 / float64
        check_float(name, A)
    elif not A._meta.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{TORCH_NAMES[A._meta.dtype]}")
    if ord == "fro":
        return F.linalg_vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc":
        return _svd_norm(A, d0, d1, keepdim, lambda s: F.sum(s, -1))
    if ord in (2, -2):
        return _svd_norm(A, d0, d1, keepdim, lambda s: F.amax(s, -1) if ord == 2 else F.amin(s, -1))
    if ord in (1, -1, math.inf, -math.inf):
        summed, over = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = F.sum(F.abs(A), summed, True)
        r = F.amax(sums, over, True) if ord > 0 else F.amin(sums, over, True)
        return r if keepdim else F.squeeze(r, [d0, d1])
    raise RuntimeError(f"{name}: Order {ord} not supported.")


@composite("LinalgVectorNorm")
def vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    """``linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None)``: the ``ord``-norm over
    ``dim`` (every dim when None) of ``x`` seen as a vector."""
    if type(ord) is str:
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return F.norm(x, ord, dim, keepdim, dtype=dtype)


@composite("LinalgNorm")
def linalg_norm(A, ord=None, dim=None, keepdim=False, dtype=None):
    """``linalg.norm(A, ord=None, dim=None, keepdim=False, *, dtype=None)``: a vector norm over one dim (or of
    the flattened input), a matrix norm over two."""
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype)
        return vector_norm(A, 2, dim, keepdim, dtype)
    if dim is None:
        if A._meta.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A._meta.ndim}D.")
        dim = tuple(range(A._meta.ndim))
    if len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype)
    return vector_norm(A, ord, dim, keepdim, dtype)


composite("FrobeniusNorm")(lambda x, dim=None, keepdim=False: F.norm(x, 2, dim, keepdim))
composite("NuclearNorm")(lambda x, keepdim=False: matrix_norm(x, "nuc", (0, 1), keepdim))
composite("NuclearNormDim")(lambda x, dim, keepdim=False: matrix_norm(x, "nuc", dim, keepdim))


@composite("Dist")
def dist(a, b, p=2):
    """``dist(input, other, p=2)``: the ``p``-norm of ``input - other`` (broadcasting)."""
    d = F.sub(a, b)
    if not d._meta.dtype.is_floating_point:
        raise RuntimeError(f"dist(): input dtype should be either floating point or complex. Got "
                           f"{TORCH_NAMES[d._meta.dtype]} instead.")
    return F.norm(d, p)


@composite("Renorm")
def renorm(x, p, dim, maxnorm, inplace=False):
    """``renorm(input, p, dim, maxnorm)``: each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm``
    scaled to norm ``maxnorm`` (``maxnorm / (norm + 1e-7)``, as PyTorch)."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    nd = x._meta.ndim
    if nd < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {nd} dimensions")
    d = _wrap_dim(dim, nd, "renorm")
    others = tuple(i for i in range(nd) if i != d)
    norms = F.linalg_vector_norm(x, p, others, True)
    factor = F.where(F.gt(norms, maxnorm), F.div(maxnorm, F.add(norms, 1e-7)), 1.0)
    out = F.mul(x, factor)
    return cast_into(out, x) if inplace else out


_COMPUTE_MODES = (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                  "donot_use_mm_for_euclid_dist")


@composite("Cdist")
@fp32_function
def cdist(x1, x2, p=2.0, compute_mode=None):
    """``cdist(x1, x2, p=2.0, compute_mode=None)``: the ``p``-norm distance between each row of ``x1``
    (*, P, M) and each row of ``x2`` (*, R, M): (*, P, R). Computed from the differences in every mode."""
    for t in (x1, x2):
        if t._meta.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if t is x1 else 2} got: "
                               f"{t._meta.ndim}D")
        if not t._meta.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, X{1 if t is x1 else 2} got: "
                               f"{TORCH_NAMES[t._meta.dtype]}")
    if x1._meta.shape[-1] != x2._meta.shape[-1]:
        raise RuntimeError(f"cdist: X1 and X2 must have the same number of columns. X1: {x1._meta.shape[-1]} X2: "
                           f"{x2._meta.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _COMPUTE_MODES:
        raise RuntimeError(f"cdist: {compute_mode} is not a valid value for compute_mode")
    diff = F.sub(F.unsqueeze(x1, -2), F.unsqueeze(x2, -3))
    return F.norm(diff, p, -1)


@composite("Isclose")
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False)``: ``|a - b| <= atol + rtol * |b|``
    elementwise, equal infinities close, NaN close to NaN only with ``equal_nan``."""
    da, db = a._meta.dtype, b._meta.dtype
    if da is not db:
        raise RuntimeError(f"isclose: {TORCH_NAMES[da]} did not match {TORCH_NAMES[db]}")
    if not rtol >= 0:  # NaN too
        raise RuntimeError(f"isclose: rtol must be greater than or equal to zero, but got {rtol:g}")
    if not atol >= 0:
        raise RuntimeError(f"isclose: atol must be greater than or equal to zero, but got {atol:g}")
    close = F.eq(a, b)
    if equal_nan and da.is_floating_point:
        close = F.logical_or(close, F.logical_and(F.isnan(a), F.isnan(b)))
    if not da.is_floating_point:
        a, b = cast(a, dt.float64), cast(b, dt.float64)
    finite = F.logical_and(F.isfinite(a), F.isfinite(b))  # infinities are close only when equal
    a, b = F.where(finite, a, 0.0), F.where(finite, b, 0.0)
    within = F.le(F.abs(F.sub(a, b)), F.add(F.mul(F.abs(b), rtol), atol))
    return F.logical_or(close, F.logical_and(within, finite))


@composite("Allclose")
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``allclose(input, other, ...)``: whether ``isclose`` holds everywhere (a Python bool)."""
    return bool(F.all(F.isclose(a, b, rtol, atol, equal_nan)).item())


@composite("TensorEqual")
def equal(a, b):
    """``equal(input, other)``: True when both have the same shape and elements (a Python bool)."""
    if a._meta.shape != b._meta.shape:
        return False
    return bool(F.all(F.eq(a, b)).item())


# ---- geqrf, householder_product (orgqr), ormqr -----------------------------------------------------------
@functor("Geqrf")
class GeqrfFunctor(_LinalgOp):
    """``geqrf(input)``: named tuple (a, tau): LAPACK's compact QR, R on and above the diagonal of ``a`` and
    the Householder vectors (unit leading entry implied) below it."""

    op_type, outputs = "geqrf", ("a", "tau")

    @fp32_function
    def __call__(self, A):
        check_matrix("geqrf", A, square=False)
        return return_types.geqrf(*self.run((A,)))


def _reflectors(A, tau, columns):
    """``H_1 H_2 ... H_k`` (``H_i = I - tau_i v_i v_i^T``, ``v_i`` the i-th column of ``A`` below the diagonal
    with a unit entry on it), its first ``columns`` columns; made of functional calls, so differentiable."""
    m = A._meta.shape[-2]
    k = tau._meta.shape[-1]
    batch = tuple(A._meta.shape[:-2])
    dtype, device = A._meta.dtype, A._meta.device
    q = F.expand(F.eye(m, columns, dtype=dtype, device=device), batch + (m, columns))
    below = tensor(np.tril(np.ones((m, k)), -1), dtype=dtype, device=device)
    unit = tensor(np.eye(m, k), dtype=dtype, device=device)
    vs = F.add(F.mul(F.narrow(A, -1, 0, k), below), unit)
    for i in reversed(range(k)):  # Q = H_1 (H_2 (... H_k I)): each step keeps ``columns`` columns
        v = F.narrow(vs, -1, i, 1)
        t = F.unsqueeze(F.narrow(tau, -1, i, 1), -1)
        q = F.sub(q, F.mul(t, F.matmul(v, F.matmul(mT(v), q))))
    return q


@composite("HouseholderProduct")
def householder_product(A, tau):
    """``linalg.householder_product(A, tau)`` (``orgqr``): the first n columns of the product of the
    Householder reflectors in the columns of ``A`` (m x n, m >= n) scaled by ``tau`` (k <= n)."""
    name = "torch.linalg.householder_product"
    check_matrix(name, A, square=False)
    m, n = A._meta.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau._meta.ndim != A._meta.ndim - 1 or tau._meta.shape[-1] > n:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1], and tau must "
                           f"have one dimension less than input")
    check_float(name, A, tau)
    return _reflectors(A, tau, n)


@composite("Ormqr")
def ormqr(A, tau, other, left=True, transpose=False):
    """``ormqr(input, tau, other, left=True, transpose=False)``: ``other`` multiplied by the m x m ``Q`` of
    ``geqrf``'s reflectors: ``op(Q) @ other`` (``other @ op(Q)`` when not ``left``), ``op`` transposing when
    ``transpose``."""
    check_matrix("ormqr", A, square=False)
    check_float("ormqr", A, tau, other)
    if tau._meta.ndim == 0:
        raise RuntimeError("ormqr: tau must have at least one dimension (one reflector scale per column)")
    if tau._meta.ndim != A._meta.ndim - 1:
        raise RuntimeError(f"torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {tau._meta.ndim} and input.ndim is equal to {A._meta.ndim}")
    q = _reflectors(A, tau, A._meta.shape[-2])
    if transpose:
        q = mT(q)
    return F.matmul(q, other) if left else F.matmul(other, q)


# ---- lobpcg ----------------------------------------------------------------------------------------------------
def _lobpcg_k(A, k, X, n) -> int:
    m = A._meta.shape[-1]
    if A._meta.ndim < 2 or A._meta.shape[-2] != m:
        raise ValueError(f"lobpcg: A must be a (batch of) square matrix, got shape {list(A._meta.shape)}")
    wanted = X._meta.shape[-1] if X is not None else (n if n is not None else (1 if k is None else k))
    if m < 3 * wanted:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={wanted})")
    return wanted if k is None else k


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The ``k`` largest (``largest``, the default) or smallest eigenpairs ``(E, X)`` of the symmetric problem
    ``A x = λ B x`` (``B`` symmetric positive definite; identity by default), batched over leading dims.

    PyTorch's LOBPCG iterates from the start vectors ``X`` to ``tol``; here the dense problem is solved exactly
    (``B = L Lᵀ``, ``eigh(L⁻¹ A L⁻ᵀ)``), which is what the iteration converges to: the options that steer the
    iteration (``X``'s values, ``iK``, ``niter``, ``tol``, ``method``, ``tracker``, ``ortho_*``) are accepted and
    do not change the result; eigenvectors are B-orthonormal, each up to its sign."""
    if not isinstance(A, Tensor) or not A._meta.dtype.is_floating_point:
        raise TypeError("lobpcg: A must be a floating point tensor")
    k = _lobpcg_k(A, k, X, n)
    if B is None:
        values, vectors = F.linalg_eigh(A)
    else:
        L = F.linalg_cholesky(B)
        half = F.linalg_solve_triangular(L, A, upper=False)  # L⁻¹ A
        C = F.transpose(F.linalg_solve_triangular(L, F.transpose(half, -1, -2), upper=False), -1, -2)
        values, vectors = F.linalg_eigh(C)
        vectors = F.linalg_solve_triangular(F.transpose(L, -1, -2), vectors, upper=True)  # L⁻ᵀ V
    m = A._meta.shape[-1]
    index = F.arange(m - 1, m - 1 - k, -1) if largest is None or largest else F.arange(k)
    return F.index_select(values, -1, index), F.index_select(vectors, -1, index)


# ---- grouped_mm -------------------------------------------------------------------------------------------------
def _group_bounds(offs, total: int) -> list:
    """``[(start, end), ...]`` of the groups ``offs`` (int32, increasing, ending at most at ``total``) delimits."""
    if not isinstance(offs, Tensor) or offs._meta.dtype is not dt.int32 or offs._meta.ndim != 1:
        raise RuntimeError("grouped_mm: Offsets have to be a 1-d int32 tensor")
    ends = offs.tolist()
    starts = [0, *ends[:-1]]
    if any(e < s for s, e in zip(starts, ends)) or (ends and ends[-1] > total):
        raise RuntimeError(f"grouped_mm: offsets {ends} must increase and end at most at {total}")
    return list(zip(starts, ends))


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """PyTorch's grouped GEMM of mixture-of-experts layers: 2-d ``mat_a`` (M, K) with 3-d ``mat_b`` (G, K, N)
    multiplies the rows of group g (``offs`` delimits them; rows after ``offs[-1]`` give 0) by ``mat_b[g]``;
    3-d (G, M, K) with 2-d (K, N) multiplies ``mat_a[g]`` by the columns of group g; 2-d with 2-d splits K into
    groups, giving (G, M, N); 3-d with 3-d (no ``offs``) is ``bmm``. ``out_dtype`` casts the result."""
    da, db = mat_a._meta.ndim, mat_b._meta.ndim
    if da not in (2, 3) or db not in (2, 3):
        raise RuntimeError(f"grouped_mm: mat_a and mat_b must be 2-d or 3-d, got {da}-d and {db}-d")
    if bias is not None:
        raise RuntimeError("grouped_mm: Bias not supported yet")
    if (offs is None) != (da == db == 3):
        raise RuntimeError("grouped_mm: Have to provide offsets if there is a 2d matrix, or no offset if both "
                           "matrices are 3d")
    if da == db == 3:
        out = F.bmm(mat_a, mat_b)
    elif da == 2 and db == 3:
        parts = [F.matmul(F.narrow(mat_a, 0, s, e - s), mat_b[g])
                 for g, (s, e) in enumerate(_group_bounds(offs, mat_a._meta.shape[0]))]
        rest = mat_a._meta.shape[0] - (offs.tolist() or [0])[-1]
        parts.append(F.zeros(rest, mat_b._meta.shape[-1], dtype=mat_a._meta.dtype))
        out = F.cat(parts, 0)
    elif da == 3:
        out = F.cat([F.matmul(mat_a[g], F.narrow(mat_b, 1, s, e - s))
                     for g, (s, e) in enumerate(_group_bounds(offs, mat_b._meta.shape[1]))], 1)
    else:
        out = F.stack([F.matmul(F.narrow(mat_a, 1, s, e - s), F.narrow(mat_b, 0, s, e - s))
                       for s, e in _group_bounds(offs, mat_a._meta.shape[1])])
    return out if out_dtype is None else F.cast(out, out_dtype)
