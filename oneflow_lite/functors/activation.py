"""Activation functors (``flow.nn.functional``'s names, signatures and defaults).

PyTorch's dtype rules: ``sigmoid`` / ``tanh`` compute integer and bool inputs
in the default float dtype; ``relu`` takes every numeric dtype; ``hardtanh`` /
``relu6`` clamp integer tensors (PyTorch's ``hardtanh`` is ``clamp`` there, with
the bounds truncated to integers); the others take floating tensors only
(OpKernelNotFoundError otherwise, PyTorch's "not implemented for 'Long'").
"""

from functools import partial

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.promotion import floating
from oneflow_lite.functors.registry import composite, functor, get_functor, register_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.functors.unary import Unary, unary_op
from oneflow_lite.interpreters.op_interp_util import dispatch

_bool = dt.bool_
_uint8 = dt.uint8


@functor("Relu")
class ReluFunctor:
    def __init__(self):
        self.op = OpBuilder("relu").input("x").output("y").build()

    def __call__(self, x, inplace=False):
        if inplace:
            return dispatch(self.op, (x,), None, (x,))[0]
        return dispatch(self.op, (x,))[0]


register_functor("Sigmoid", partial(Unary, "sigmoid", floating))
register_functor("Tanh", partial(Unary, "tanh", floating))


class _Activation:
    """``op(x)`` with call-time attrs ``attrs`` (None for the op's defaults), in place when asked."""

    op_type = ""

    def __init__(self):
        self.op = unary_op(self.op_type)
        self._attrs = {}

    def _run(self, x, attrs, inplace):
        if inplace:
            return dispatch(self.op, (x,), attrs, (x,))[0]
        return dispatch(self.op, (x,), attrs)[0]


class _PlainActivation(_Activation):
    """An activation without attrs: ``(input, inplace=False)``; one instance per op."""

    def __init__(self, op_type):
        self.op_type = op_type
        super().__init__()

    def __call__(self, x, inplace=False):
        return self._run(x, None, inplace)


for _functor, _op in (("Selu", "selu"), ("Silu", "silu"), ("Mish", "mish"), ("Hardsigmoid", "hardsigmoid"),
                      ("Hardswish", "hardswish")):
    register_functor(_functor, partial(_PlainActivation, _op))


@functor("Hardtanh")
class HardtanhFunctor(_Activation):
    """``hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False)``: clamp to [min_val, max_val]; the
    gradient is zero at the bounds (unlike ``clamp``'s)."""

    op_type = "hardtanh"

    def __init__(self):
        super().__init__()
        self.clamp = get_functor("Clamp")

    def __call__(self, x, min_val=-1.0, max_val=1.0, inplace=False):
        if min_val > max_val:
            raise ValueError(f"hardtanh: min_val cannot be greater than max_val, got min_val={min_val} and "
                             f"max_val={max_val}")
        xd = x._meta.dtype
        if xd.is_floating_point or xd is _bool:  # bool: no kernel, as PyTorch's "Bool inputs not supported"
            return self._run(x, cached_attrs(self._attrs, ("min_val", "max_val"), (min_val, max_val)), inplace)
        lo, hi = int(min_val), int(max_val)
        if xd is _uint8 and (lo < 0 or hi < 0):
            raise RuntimeError("hardtanh: cannot do hardtanh on an unsigned type with negative limits")
        return self.clamp(x, lo, hi, inplace)


@composite("Relu6")
def relu6(x, inplace=False):
    """``relu6(input, inplace=False)``: ``hardtanh(input, 0, 6)``."""
    return F.hardtanh(x, 0.0, 6.0, inplace)


@functor("LeakyRelu")
class LeakyReluFunctor(_Activation):
    """``leaky_relu(input, negative_slope=0.01, inplace=False)``."""

    op_type = "leaky_relu"

    def __call__(self, x, negative_slope=0.01, inplace=False):
        return self._run(x, cached_attrs(self._attrs, ("alpha",), (negative_slope,)), inplace)


@functor("Elu")
class EluFunctor(_Activation):
    """``elu(input, alpha=1.0, inplace=False)``: ``x`` for x > 0, else ``alpha * (exp(x) - 1)``."""

    op_type = "elu"

    def __call__(self, x, alpha=1.0, inplace=False):
        return self._run(x, cached_attrs(self._attrs, ("alpha",), (alpha,)), inplace)


@functor("Softplus")
class SoftplusFunctor(_Activation):
    """``softplus(input, beta=1.0, threshold=20.0)``: ``log(1 + exp(beta x)) / beta``, ``x`` where
    ``beta x > threshold``."""

    op_type = "softplus"

    def __call__(self, x, beta=1.0, threshold=20.0):
        return self._run(x, cached_attrs(self._attrs, ("beta", "threshold"), (beta, threshold)), False)


@functor("Gelu")
class GeluFunctor(_Activation):
    """``gelu(input, *, approximate='none')``: ``x * Phi(x)`` with the exact normal cdf (erf), or its tanh
    approximation with ``approximate='tanh'``."""

    op_type = "gelu"

    def __init__(self):
        super().__init__()
        self._tanh = AttrMap({"approximate": "tanh"})

    def __call__(self, x, approximate="none"):
        if approximate == "none":
            return dispatch(self.op, (x,))[0]
        if approximate == "tanh":
            return dispatch(self.op, (x,), self._tanh)[0]
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got {approximate!r}")
