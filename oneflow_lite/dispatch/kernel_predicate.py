"""Readable predicates that say which dtypes a per-device kernel accepts.

A kernel registered with ``predicate=dtype_in("x", flow.float32, flow.float64)``
matches a call whose input ``x`` has one of those dtypes. Predicates combine
with ``&`` and ``|``, and print as the text the no-kernel error shows.
"""

from __future__ import annotations


class KernelMatchContext:
    """The dtypes of one call, by argument: what predicates look at."""

    __slots__ = ("_in_slices", "_out_slices", "input_dtypes", "output_dtypes")

    def __init__(self, op_expr, input_dtypes, output_dtypes):
        self._in_slices = op_expr.input_arg_tuple.slices
        self._out_slices = op_expr.output_arg_tuple.slices
        self.input_dtypes = input_dtypes
        self.output_dtypes = output_dtypes

    def input_dtype(self, name, index=0):
        slc = self._in_slices.get(name)
        if slc is None or index >= slc[1]:
            return None
        return self.input_dtypes[slc[0] + index]

    def output_dtype(self, name, index=0):
        slc = self._out_slices.get(name)
        if slc is None or index >= slc[1]:
            return None
        return self.output_dtypes[slc[0] + index]


class KernelPredicate:
    __slots__ = ("_fn", "_text")

    def __init__(self, fn, text):
        self._fn = fn
        self._text = text

    def __call__(self, ctx: KernelMatchContext) -> bool:
        return self._fn(ctx)

    def __and__(self, other):
        return KernelPredicate(lambda ctx: self._fn(ctx) and other._fn(ctx), f"({self._text} and {other._text})")

    def __or__(self, other):
        return KernelPredicate(lambda ctx: self._fn(ctx) or other._fn(ctx), f"({self._text} or {other._text})")

    def __str__(self):
        return self._text

    __repr__ = __str__


def _names(dtypes):
    return "{" + ", ".join(d.name for d in dtypes) + "}"


ANY_DTYPE = KernelPredicate(lambda ctx: True, "any dtype")


def dtype_in(arg: str, *dtypes) -> KernelPredicate:
    """Input ``arg`` (every tensor of it, if variadic) has one of ``dtypes``."""
    allowed = frozenset(dtypes)

    def check(ctx):
        start, count = ctx._in_slices.get(arg, (0, 0))
        return count > 0 and all(d in allowed for d in ctx.input_dtypes[start:start + count])
    return KernelPredicate(check, f"dtype({arg}) in {_names(dtypes)}")


def inputs_dtype_in(*dtypes) -> KernelPredicate:
    """Every input tensor has one of ``dtypes``."""
    allowed = frozenset(dtypes)
    return KernelPredicate(lambda ctx: all(d in allowed for d in ctx.input_dtypes),
                           f"dtype(all inputs) in {_names(dtypes)}")


def output_dtype_in(arg: str, *dtypes) -> KernelPredicate:
    """Output ``arg`` has one of ``dtypes``."""
    allowed = frozenset(dtypes)
    return KernelPredicate(lambda ctx: ctx.output_dtype(arg) in allowed, f"dtype({arg}) in {_names(dtypes)}")
