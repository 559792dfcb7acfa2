"""Linear-algebra functors: ``mm``, ``bmm``, ``dot`` (the ``matmul`` op after PyTorch's stricter shape
checks), ``outer`` (a broadcast multiply, so it promotes and takes bool as ``mul`` does), ``linear``,
``baddbmm`` and ``einsum``.

``mm``, ``bmm``, ``dot``, ``linear``, ``baddbmm`` and ``einsum`` need all their
tensors to have one dtype, as PyTorch's do (``matmul`` checks the same).
"""

from __future__ import annotations

from collections import Counter
from string import ascii_letters

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.promotion import TORCH_NAMES
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.functors.shape import VariadicOp, cached, cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch


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

    def __call__(self, x, batch1, batch2, beta=1, alpha=1):
        d = x._meta.dtype
        for name, value in (("beta", beta), ("alpha", alpha)):
            if type(value) is bool and d.name != "bool":
                raise RuntimeError(f"baddbmm: Boolean {name} only supported for Boolean results.")
            if type(value) is float and not d.is_floating_point:
                raise RuntimeError(f"baddbmm: For integral input tensors, argument {name} must not be a floating "
                                   f"point number.")
        attrs = cached_attrs(self._attrs, ("alpha", "beta"), (float(alpha), float(beta)))
        return dispatch(self.op, (x, batch1, batch2), attrs)[0]


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
