"""Tensor methods and operators, built from the functional API's functions.

``x.relu()``, ``x + y``, ``x @ y``, ``x.sum(1)``, ... call the same
``FunctionalFunction`` objects as ``flow.relu`` and friends, so argument checking,
overloads and errors are identical. Binary operators return ``NotImplemented``
for operands that are neither tensors nor numbers, so Python can try the other
side (and ``t == None`` is ``False``, as in PyTorch).
"""

from __future__ import annotations

import numbers

import numpy as np

from oneflow_lite import functional as F
from oneflow_lite.framework.tensor import Tensor

_OPERAND = (Tensor, numbers.Number, np.generic)

# method name -> functional function name (the tensor is the first argument)
METHODS = {
    "relu": "relu", "add": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg", "exp": "exp",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "matmul": "matmul", "sum": "sum", "reshape": "reshape", "transpose": "transpose",
    "view": "reshape",
}
# in-place method -> functional function name, called with inplace=True
INPLACE_METHODS = {"relu_": "relu", "add_": "add", "sub_": "sub", "mul_": "mul", "div_": "div"}
# operator -> (functional function name, whether the tensor is the right operand)
OPERATORS = {
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("sub", False), "__rsub__": ("sub", True),
    "__mul__": ("mul", False), "__rmul__": ("mul", True),
    "__truediv__": ("div", False), "__rtruediv__": ("div", True),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    "__eq__": ("eq", False), "__ne__": ("ne", False),
    "__lt__": ("lt", False), "__le__": ("le", False), "__gt__": ("gt", False), "__ge__": ("ge", False),
}
INPLACE_OPERATORS = {"__iadd__": "add", "__isub__": "sub", "__imul__": "mul", "__itruediv__": "div"}


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
    if reflected:
        def op(self, other):
            return fn(other, self) if isinstance(other, _OPERAND) else NotImplemented
    else:
        def op(self, other):
            return fn(self, other) if isinstance(other, _OPERAND) else NotImplemented
    op.__name__ = name
    return op


def _inplace_operator(fn, name):
    def op(self, other):
        return fn(self, other, inplace=True) if isinstance(other, _OPERAND) else NotImplemented
    op.__name__ = name
    return op


def _attach():
    for name, fname in METHODS.items():
        setattr(Tensor, name, _method(getattr(F, fname)))
    for name, fname in INPLACE_METHODS.items():
        setattr(Tensor, name, _inplace_method(getattr(F, fname), name))
    for name, (fname, reflected) in OPERATORS.items():
        setattr(Tensor, name, _operator(getattr(F, fname), reflected, name))
    for name, fname in INPLACE_OPERATORS.items():
        setattr(Tensor, name, _inplace_operator(getattr(F, fname), name))
    Tensor.__neg__ = lambda self: F.neg(self)
    Tensor.__hash__ = object.__hash__  # defining __eq__ would otherwise drop hashing
    # As torch.Tensor: NumPy scalars and arrays defer to the tensor's reflected operators, so
    # ``np.float32(2) * t`` is a Tensor, not an ndarray made through ``__array__``.
    Tensor.__array_priority__ = 1000


_attach()
