"""The functional calls of backward formulas, and helpers shared by the grad functions.

Backward formulas call functors (never kernels), so backward is itself
differentiable and can be captured in a graph. They call the functor objects
directly, with every argument of the functional signature in order, which skips
the functional API's overload resolution (a few microseconds per call).
"""

from __future__ import annotations

from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET
from oneflow_lite.framework.calls import add_resolver, functional, register_call
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import find, lookup
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.indexing import index_encoded, write
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch

_add = get_functor("Add")
_mul = get_functor("Mul")
_scalar_mul = get_functor("ScalarMul")
_div = get_functor("Div")
_scalar_div = get_functor("ScalarDiv")
_neg = get_functor("Neg")
_matmul = get_functor("MatMul")
_sum = get_functor("ReduceSum")
_reshape = get_functor("Reshape")
_expand = get_functor("Expand")
_transpose = get_functor("Transpose")
_slice = get_functor("Slice")
_zeros = get_functor("Zeros")
_cast = get_functor("Cast")
_copy = get_functor("Copy")


def add(a, b):
    return _add(a, b, 1, False)


def mul(a, b):
    return _mul(a, b, False)


def mul_scalar(a, s):
    return _scalar_mul(a, s, False)


def div(a, b):
    return _div(a, b, False)


def div_scalar(a, s):
    return _scalar_div(a, s, False)


def neg(a):
    return _neg(a)


def matmul(a, b):
    return _matmul(a, b)


def reshape(a, shape):
    return _reshape(a, tuple(shape))


def transpose(a, dim0, dim1):
    return _transpose(a, dim0, dim1)


def slice_(a, start, stop, step):
    return _slice(a, start, stop, step)


def zeros(shape, dtype, device):
    return _zeros(tuple(shape), dtype, device)


def cast(a, dtype):
    return _cast(a, dtype)


def copy(a, device):
    return _copy(a, device)


class OpCaller:
    """Runs one op by type: ``caller(*inputs, attrs=None, **attr_values)`` with the inputs in the
    definition's order (trailing optional ones may be left out); the result is the output tensor, or a
    tuple for several outputs. For backward formulas without a functional form (``relu_grad``, a
    transpose by a whole permutation, ``slice_grad``); ``F.<op_type>`` is one (Note [Calls by name]).
    Builds its op exprs on first use, one per number of inputs given."""

    def __init__(self, op_type):
        self.op_type = op_type
        self._ops = {}
        self._attrs = {}

    def _op(self, n):
        op = self._ops.get(n)
        if op is None:
            definition = lookup(self.op_type)
            if any(a.variadic for a in definition.inputs + definition.outputs):
                raise TypeError(f"F.{self.op_type}: an op with a variadic argument cannot be called by type")
            if n > len(definition.inputs) or any(not a.optional for a in definition.inputs[n:]):
                raise TypeError(f"F.{self.op_type}: {n} input(s) given; the op takes "
                                f"{', '.join(a.name for a in definition.inputs)}")
            builder = OpBuilder(self.op_type)
            for a in definition.inputs[:n]:
                builder.input(a.name)
            for a in definition.outputs:
                builder.output(a.name)
            op = self._ops[n] = builder.build()
        return op

    def __call__(self, *inputs, attrs: AttrMap | None = None, out: tuple | None = None, **attr_values):
        """``out``: existing tensors to write the outputs into (a global one's layout asks for that signature)."""
        if attr_values:
            attrs = cached_attrs(self._attrs, tuple(attr_values), tuple(attr_values.values()))
        res = dispatch(self._op(len(inputs)), inputs, attrs, out)
        return res[0] if len(res) == 1 else res


def _op_caller(op_type):
    return OpCaller(op_type) if find(op_type) is not None else None


add_resolver("op", _op_caller)


def reduce_to(g, shape):
    """``g`` summed over the dims that broadcasting added or stretched, so it has ``shape``.

    The gradient of a broadcast operand: one ``sum`` over the added (leading) dims, which drops
    them, and one keeping the stretched dims as size 1. Both results own their memory, so the
    engine can hand them to a leaf's ``.grad`` without a copy (Note [Stealing the gradient]).
    """
    gs = g._meta.shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if lead:
        g = _sum(g, tuple(range(lead)), False, None)
    stretched = tuple(i for i, d in enumerate(shape) if d == 1 and gs[lead + i] != 1)
    if stretched:
        g = _sum(g, stretched, True, None)
    return g


def expand_reduced(g, kept_shape, shape):
    """The grad ``g`` of a reduction over ``shape`` broadcast back to ``shape`` as an ``expand`` view.

    ``kept_shape`` is ``shape`` with the reduced dims as size 1. ``g`` has that shape (keepdims) or the
    reduced dims dropped; it is reshaped to ``kept_shape`` first unless the dropped dims are leading ones,
    which ``expand`` adds back by itself. The view is read-only: the engine copies it before storing it in
    a leaf's ``.grad`` (Note [Stealing the gradient]).
    """
    gs = g._meta.shape
    if gs == shape:
        return g
    if gs != kept_shape and gs != kept_shape[len(kept_shape) - len(gs):]:
        g = _reshape(g, kept_shape)
    return _expand(g, shape)


def zeros_of(meta):
    """Zeros with ``meta``'s shape, dtype and device (the gradient of a piecewise-constant op); a global
    meta's placement and SBP."""
    if meta.key_set & GLOBAL_KEY_SET:
        return get_functor("GlobalFull")(meta.shape, 0, meta.dtype, meta.placement, meta.nd_sbp)
    return _zeros(tuple(meta.shape), meta.dtype, meta.device)


def _tensor_pair_fast(name, fast):
    """``F.<name>``: ``fast(a, b)`` for two tensors, else the functional function (same results, fewer layers)."""
    slow = None

    def call(a, b, *rest, **kwargs):
        if type(a) is Tensor and type(b) is Tensor and not rest and not kwargs:
            return fast(a, b)
        nonlocal slow
        if slow is None:
            slow = functional(name)
        return slow(a, b, *rest, **kwargs)
    call.__name__ = name
    return call


# The fast helpers of backward formulas, as F.<name> (Note [Calls by name]): the functors called directly.
# Those named like a functional function behave as it does.
for _name, _fn in (("add", add), ("mul", mul), ("div", div)):
    register_call(_name, _tensor_pair_fast(_name, _fn))
for _name, _fn in (("mul_scalar", mul_scalar), ("div_scalar", div_scalar), ("reduce_to", reduce_to),
                   ("expand_reduced", expand_reduced), ("zeros_of", zeros_of)):
    register_call(_name, _fn)


# ---- index family (ops/index.py): tensor_setitem's encoded index, read, and written out of place ----------
def index_put_encoded(x, kinds, values, adv_dims, indices, value, accumulate=False):
    """A copy of ``x`` with ``x[index] = value`` (``+=`` with ``accumulate``), the index in tensor_setitem's
    encoding (Note [Advanced indexing ops])."""
    return write(x, kinds, values, adv_dims, indices, value, accumulate, inplace=False)


register_call("index_encoded", index_encoded)
register_call("index_put_encoded", index_put_encoded)


# ---- unary, activation, linalg and conversion rows ------------------------------------------------------
# The functors of first-order formulas called directly, as their functional functions (whose argument
# checks cost 0.1 - 0.2 us a call; the functional ``cast`` parses its DataType, microseconds; ``add`` tries
# its Tensor overload first): F.add_scalar(a, s) is ``a + s``; F.copy(a, device) has no functional form.
_scalar_add = get_functor("ScalarAdd")


def add_scalar(a, s):
    return _scalar_add(a, s, 1, False)


for _name, _fn in (("add_scalar", add_scalar), ("cast", cast), ("copy", copy), ("neg", neg)):
    register_call(_name, _fn)
for _name, _functor in (("sign", "Sign"), ("sin", "Sin"), ("cos", "Cos"), ("exp", "Exp"), ("isfinite", "IsFinite")):
    register_call(_name, get_functor(_functor).__call__)


# ---- binary, math and shape families ------------------------------------------------------------------
def _reshape_call(*args, **kwargs):
    """``F.reshape``: the functor for a Tensor and a tuple shape (what the functional function hands it),
    else the functional function."""
    if len(args) == 2 and not kwargs and type(args[0]) is Tensor and isinstance(args[1], tuple):
        return _reshape(args[0], tuple(args[1]))
    return functional("reshape")(*args, **kwargs)


def _transpose_call(*args, **kwargs):
    """``F.transpose``: the functor for a Tensor and two int dims, else the functional function."""
    if len(args) == 3 and not kwargs and type(args[0]) is Tensor and type(args[1]) is int and type(args[2]) is int:
        return _transpose(*args)
    return functional("transpose")(*args, **kwargs)


_where = get_functor("Where")
_where_scalar_x = get_functor("WhereScalarX")
_where_scalar_y = get_functor("WhereScalarY")


def _where_call(*args, **kwargs):
    """``F.where``: the functor of the overload for a condition and two tensors, or a float and a tensor in
    either order (the masks of many backward formulas), else the functional function."""
    if len(args) == 3 and not kwargs and type(args[0]) is Tensor:
        c, a, b = args
        if type(b) is Tensor:
            if type(a) is Tensor:
                return _where(c, a, b)
            if type(a) is float:
                return _where_scalar_x(c, a, b)
        elif type(a) is Tensor and type(b) is float:
            return _where_scalar_y(c, a, b)
    return functional("where")(*args, **kwargs)


# Fast calls the rows of several families make (matmul's, the reshape-like ops', the masks of max / min, pow
# and where; linalg's, reduce's).
register_call("matmul", _tensor_pair_fast("matmul", matmul))
register_call("reshape", _reshape_call)
register_call("transpose", _transpose_call)
register_call("where", _where_call)
# The joining and splitting calls of the shape rows (cat <-> split, stack <-> unbind): the functors' unchecked
# ``raw`` forms. A row hands them the axis its op ran with and tensors of one dtype, so the functional
# functions' argument parsing, promotion and dim checks would be repeated work.
register_call("cat_raw", get_functor("Cat").raw)
register_call("stack_raw", get_functor("Stack").raw)
register_call("split_raw", get_functor("SplitWithSizes").raw)
register_call("unbind_raw", get_functor("Unbind").raw)
