"""Tensor methods and operators, built from the functional API's functions.

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

_OPERAND = (Tensor, numbers.Number, np.generic)

# method name -> functional function name (the tensor is the first argument)
METHODS = {
    "relu": "relu", "add": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg", "exp": "exp",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "matmul": "matmul", "sum": "sum", "reshape": "reshape", "transpose": "transpose",
    "view": "reshape",
    # shape and linear algebra (functors/shape.py, functors/linalg.py)
    "permute": "permute", "t": "t", "flatten": "flatten", "unflatten": "unflatten", "squeeze": "squeeze",
    "unsqueeze": "unsqueeze", "expand": "expand", "expand_as": "expand_as", "broadcast_to": "broadcast_to",
    "repeat": "repeat", "tile": "tile", "split": "split", "chunk": "chunk", "unbind": "unbind",
    "narrow": "narrow", "flip": "flip", "roll": "roll", "tril": "tril", "triu": "triu",
    "contiguous": "contiguous", "clone": "clone", "mm": "mm", "bmm": "bmm", "dot": "dot", "outer": "outer",
    "baddbmm": "baddbmm",
    # elementwise binary and ternary ops
    "floor_divide": "floor_divide", "pow": "pow", "maximum": "maximum", "minimum": "minimum", "fmod": "fmod",
    "remainder": "remainder", "atan2": "atan2", "arctan2": "arctan2", "logical_and": "logical_and",
    "logical_or": "logical_or", "logical_xor": "logical_xor", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "bitwise_not": "bitwise_not", "lerp": "lerp",
    "addcmul": "addcmul", "addcdiv": "addcdiv",
    # elementwise unary math, activations and clamping
    "abs": "abs", "__abs__": "abs", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "square": "square", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
    "sigmoid": "sigmoid", "sign": "sign", "floor": "floor", "ceil": "ceil", "round": "round", "trunc": "trunc",
    "reciprocal": "reciprocal", "erf": "erf", "logical_not": "logical_not", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite", "clamp": "clamp", "clip": "clip", "nan_to_num": "nan_to_num",
    # reductions, scans and sorting
    "mean": "mean", "prod": "prod", "max": "max", "min": "min", "amax": "amax", "amin": "amin",
    "argmax": "argmax", "argmin": "argmin", "var": "var", "std": "std", "logsumexp": "logsumexp", "norm": "norm",
    "all": "all", "any": "any", "cumsum": "cumsum", "cumprod": "cumprod", "sort": "sort", "argsort": "argsort",
    "topk": "topk",
    # neural-network ops with a Tensor method
    "softmax": "softmax", "log_softmax": "log_softmax",
    # indexing, scatter / gather
    "gather": "gather", "scatter": "scatter", "scatter_add": "scatter_add", "index_select": "index_select",
    "index_add": "index_add", "index_put": "index_put", "masked_fill": "masked_fill",
    "masked_select": "masked_select", "nonzero": "nonzero", "count_nonzero": "count_nonzero",
}
# in-place method -> functional function name, called with inplace=True
INPLACE_METHODS = {
    "tril_": "tril", "triu_": "triu",
    "abs_": "abs", "expm1_": "expm1", "log_": "log", "log1p_": "log1p", "log2_": "log2", "sqrt_": "sqrt",
    "rsqrt_": "rsqrt", "square_": "square", "sin_": "sin", "cos_": "cos", "tan_": "tan", "tanh_": "tanh",
    "sigmoid_": "sigmoid", "sign_": "sign", "floor_": "floor", "ceil_": "ceil", "round_": "round", "trunc_": "trunc",
    "reciprocal_": "reciprocal", "erf_": "erf", "logical_not_": "logical_not", "clamp_": "clamp", "clip_": "clip",
    "nan_to_num_": "nan_to_num",
    "floor_divide_": "floor_divide", "pow_": "pow", "fmod_": "fmod", "remainder_": "remainder", "atan2_": "atan2",
    "arctan2_": "arctan2", "logical_and_": "logical_and", "logical_or_": "logical_or", "logical_xor_": "logical_xor",
    "bitwise_and_": "bitwise_and", "bitwise_or_": "bitwise_or", "bitwise_xor_": "bitwise_xor",
    "bitwise_not_": "bitwise_not", "lerp_": "lerp", "addcmul_": "addcmul", "addcdiv_": "addcdiv",
    "eq_": "eq", "ne_": "ne", "lt_": "lt", "le_": "le", "gt_": "gt", "ge_": "ge",
    "scatter_": "scatter", "scatter_add_": "scatter_add", "index_add_": "index_add", "index_put_": "index_put",
    "masked_fill_": "masked_fill",
    "relu_": "relu", "add_": "add", "sub_": "sub", "mul_": "mul", "div_": "div"}
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
    "__rxor__": ("bitwise_xor", True),
}
INPLACE_OPERATORS = {"__iadd__": "add", "__isub__": "sub", "__imul__": "mul", "__itruediv__": "div",
                     "__ifloordiv__": "floor_divide", "__ipow__": "pow", "__imod__": "remainder",
                     "__iand__": "bitwise_and", "__ior__": "bitwise_or", "__ixor__": "bitwise_xor"}


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
    Tensor.__invert__ = lambda self: F.bitwise_not(self)
    Tensor.where = lambda self, condition, y: F.where(condition, self, y)  # x.where(c, y) is where(c, x, y)
    Tensor.__hash__ = object.__hash__  # defining __eq__ would otherwise drop hashing
    # As torch.Tensor: NumPy scalars and arrays defer to the tensor's reflected operators, so
    # ``np.float32(2) * t`` is a Tensor, not an ndarray made through ``__array__``.
    Tensor.__array_priority__ = 1000


_attach()
