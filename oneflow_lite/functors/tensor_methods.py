"""Tensor methods and operators, built from the functional API's functions.

The methods, and the unary operators ``__neg__`` / ``__invert__`` / ``__abs__`` / ``__pos__``,
are the entries of the functional API declared with ``method(...)``
(functors/functional_api.py); the binary operators are listed here, and
``x.where(condition, y)`` / ``x.polygamma(n)`` (which take ``x`` second) and
``__contains__`` / ``__reversed__`` / ``__complex__`` are written here.

``x.relu()``, ``x + y``, ``x @ y``, ``x.sum(1)``, ... call the same
functions as ``flow.relu`` and friends, so argument checking,
overloads and errors are identical. Binary operators return ``NotImplemented``
for operands that are neither tensors nor numbers, so Python can try the other
side (and ``t == None`` is ``False``, as in PyTorch).
"""

from __future__ import annotations

import numbers

import numpy as np

from oneflow_lite import functional as F
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.functional_api import FUNCTIONAL_API, Entry

_OPERAND = (Tensor, numbers.Number, np.generic)

# operator -> (functional function name, whether the tensor is the right operand)
OPERATORS = {
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("sub", False), "__rsub__": ("sub", True),
    "__mul__": ("mul", False), "__rmul__": ("mul", True),
    "__truediv__": ("div", False), "__rtruediv__": ("div", True),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    "__eq__": ("eq", False), "__ne__": ("ne", False),
    "__lt__": ("lt", False), "__le__": ("le", False), "__gt__": ("gt", False), "__ge__": ("ge", False),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__pow__": ("pow", False), "__rpow__": ("pow", True), "__mod__": ("remainder", False),
    "__rmod__": ("remainder", True), "__and__": ("bitwise_and", False), "__rand__": ("bitwise_and", True),
    "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", True), "__xor__": ("bitwise_xor", False),
    "__rxor__": ("bitwise_xor", True), "__lshift__": ("bitwise_left_shift", False),
    "__rlshift__": ("bitwise_left_shift", True), "__rshift__": ("bitwise_right_shift", False),
    "__rrshift__": ("bitwise_right_shift", True),
}
INPLACE_OPERATORS = {"__iadd__": "add", "__isub__": "sub", "__imul__": "mul", "__itruediv__": "div",
                     "__idiv__": "div", "__ifloordiv__": "floor_divide", "__ipow__": "pow", "__imod__": "remainder",
                     "__iand__": "bitwise_and", "__ior__": "bitwise_or", "__ixor__": "bitwise_xor",
                     "__ilshift__": "bitwise_left_shift", "__irshift__": "bitwise_right_shift"}


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _inplace_method(fn, name):
    def method(self, *args, **kwargs):
        return fn(self, *args, inplace=True, **kwargs)
    method.__name__ = name
    method.__doc__ = f"In-place version of :meth:`{fn.__name__}`."
    return method


def _operator(fn, reflected, name):
    # Two tensors: the functional function's plan for the two types when it has one (Note [Functional
    # fast path]), which saves a call layer on the hottest path. `type(other) is Tensor` first: the
    # isinstance check against the numbers.Number ABC costs more than the rest of the operator's work.
    plans_get = fn._plans.get
    if reflected:
        def op(self, other):
            if type(other) is Tensor:
                plan = plans_get((Tensor, type(self)))
                if plan is not None and not plan[1]:
                    return plan[0](other, self)
                return fn(other, self)
            return fn(other, self) if isinstance(other, _OPERAND) else NotImplemented
    else:
        def op(self, other):
            if type(other) is Tensor:
                plan = plans_get((type(self), Tensor))
                if plan is not None and not plan[1]:
                    return plan[0](self, other)
                return fn(self, other)
            return fn(self, other) if isinstance(other, _OPERAND) else NotImplemented
    op.__name__ = name
    return op


def _inplace_operator(fn, name):
    def op(self, other):
        return fn(self, other, inplace=True) if isinstance(other, _OPERAND) else NotImplemented
    op.__name__ = name
    return op


def _contains(self, element):
    """``element in x``: whether any element of ``x`` equals it (a number or a tensor, as PyTorch)."""
    if not isinstance(element, _OPERAND):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "  # noqa: TRY004
                           f"{type(element)}.")
    return bool(F.any(F.eq(self, element)).item())


def _reversed(self):
    """``reversed(x)``: ``x`` flipped along its first dim (a 0-d tensor is itself)."""
    return self if self._meta.ndim == 0 else F.flip(self, [0])


def _complex(self):
    """``complex(x)`` of a one-element tensor (a real value: complex dtypes are not provided)."""
    return complex(self.item())


def _attach_extras():
    """Methods whose call differs from the functional one: ``x.where(c, y)`` is ``where(c, x, y)``,
    ``x.polygamma(n)`` is ``polygamma(n, x)``; and the container protocol."""
    Tensor.where = lambda self, condition, y: F.where(condition, self, y)
    Tensor.polygamma = lambda self, n: F.polygamma(n, self)
    Tensor.polygamma_ = lambda self, n: F.polygamma(n, self, inplace=True)
    Tensor.__contains__ = _contains
    Tensor.__reversed__ = _reversed
    Tensor.__complex__ = _complex


def _attach():
    for fname, entry in FUNCTIONAL_API.items():
        if isinstance(entry, Entry):  # method variants (functional_api.method)
            fn = getattr(F, fname)
            for name in (fname, *entry.also):
                setattr(Tensor, name, _method(fn))
            if entry.inplace:
                setattr(Tensor, fname + "_", _inplace_method(fn, fname + "_"))
    for name, (fname, reflected) in OPERATORS.items():
        setattr(Tensor, name, _operator(getattr(F, fname), reflected, name))
    for name, fname in INPLACE_OPERATORS.items():
        setattr(Tensor, name, _inplace_operator(getattr(F, fname), name))
    _attach_extras()
    Tensor.__hash__ = object.__hash__  # defining __eq__ would otherwise drop hashing
    # As torch.Tensor: NumPy scalars and arrays defer to the tensor's reflected operators, so
    # ``np.float32(2) * t`` is a Tensor, not an ndarray made through ``__array__``.
    Tensor.__array_priority__ = 1000


_attach()
