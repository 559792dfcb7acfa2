"""Activation functors (``flow.nn.functional``'s names, signatures and defaults).

PyTorch's dtype rules: ``sigmoid`` / ``tanh`` compute integer and bool inputs
in the default float dtype; ``relu`` takes every numeric dtype; ``hardtanh`` /
``relu6`` clamp integer tensors (PyTorch's ``hardtanh`` is ``clamp`` there, with
the bounds truncated to integers); the others take floating tensors only
(OpKernelNotFoundError otherwise, PyTorch's "not implemented for 'Long'").
"""

import math
from functools import partial

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import _wrap_dim
from oneflow_lite.functors.nn import warn_at_caller
from oneflow_lite.functors.promotion import TORCH_NAMES, check_converts, floating, opmath_dtype
from oneflow_lite.functors.registry import composite, functor, get_functor, register_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.functors.unary import Unary, unary_op
from oneflow_lite.interpreters.autocast import lower_precision_function
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
        for name, v in (("min_val", min_val), ("max_val", max_val)):
            if not math.isfinite(v):
                raise RuntimeError(f"hardtanh: {name} {v} cannot be converted to type {xd.name} without overflow")
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


# ---- celu, shrinks, threshold (ops in ops/nn.py) and compositions -------------------------------------------
def _floating_only(name, x):
    """PyTorch's "not implemented for 'Long'" for the activations without integer kernels."""
    d = x._meta.dtype
    if not d.is_floating_point:
        raise OpKernelNotFoundError(f"{name}: not implemented for '{TORCH_NAMES[d]}'; expected a floating point "
                                    f"input (float16, float32 or float64)")


@functor("Celu")
class CeluFunctor(_Activation):
    """``celu(input, alpha=1.0, inplace=False)``: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    op_type = "celu"

    def __call__(self, x, alpha=1.0, inplace=False):
        if alpha == 0:
            raise RuntimeError("celu: ZeroDivisionError: alpha cannot be 0 for CELU")
        d = x._meta.dtype
        if d.is_floating_point:  # PyTorch converts 1 / alpha to the computation type (float32 for half)
            check_converts("celu", "1 / alpha", 1.0 / alpha, opmath_dtype(d))
        return self._run(x, cached_attrs(self._attrs, ("alpha",), (alpha,)), inplace)


class _ShrinkFunctor(_Activation):
    """``<op>(input, lambd=0.5)``."""

    def __init__(self, op_type):
        self.op_type = op_type
        super().__init__()

    def __call__(self, x, lambd=0.5):
        if self.op_type == "softshrink" and lambd < 0:
            raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}")
        if x._meta.dtype.is_floating_point:
            check_converts(self.op_type, "lambd", lambd, x._meta.dtype)
        return self._run(x, cached_attrs(self._attrs, ("lambd",), (lambd,)), False)


register_functor("Hardshrink", partial(_ShrinkFunctor, "hardshrink"))
register_functor("Softshrink", partial(_ShrinkFunctor, "softshrink"))


def _int_operand(op, name, v, dtype) -> int:
    """The number ``v`` as an int of integer ``dtype``, or PyTorch's overflow error (also for inf and nan)."""
    info = np.iinfo(dtype.np_dtype)
    if not (math.isfinite(v) and info.min <= int(v) <= info.max):
        raise RuntimeError(f"{op}: {name} {v} cannot be converted to type {dtype.name} without overflow")
    return int(v)


@functor("Threshold")
class ThresholdFunctor(_Activation):
    """``threshold(input, threshold, value, inplace=False)``: ``value`` where ``x <= threshold``, else ``x``
    (integer inputs compare with the truncated threshold, as PyTorch)."""

    op_type = "threshold"

    def __call__(self, x, threshold, value, inplace=False):
        d = x._meta.dtype
        if not d.is_floating_point and d is not _bool:
            _int_operand("threshold", "threshold", threshold, d)
            _int_operand("threshold", "value", value, d)
        return self._run(x, cached_attrs(self._attrs, ("threshold_val", "value"), (threshold, value)), inplace)


@composite("Tanhshrink")
def tanhshrink(x):
    """``tanhshrink(input)``: ``x - tanh(x)``."""
    return F.sub(x, F.tanh(x))


@composite("Softsign")
def softsign(x):
    """``softsign(input)``: ``x / (1 + |x|)``."""
    return F.div(x, F.add(F.abs(x), 1))


@composite("LogSigmoid")
def logsigmoid(x):
    """``logsigmoid(input)``: ``log(1 / (1 + exp(-x)))``, computed as ``0 - softplus(-x)`` (no overflow; +0.0, not
    -0.0, for a large input, as PyTorch)."""
    _floating_only("logsigmoid", x)
    return F.sub(0.0, F.softplus(F.neg(x)))


@composite("Softmin")
def softmin(x, dim=None, _stacklevel=3, dtype=None):
    """``softmin(input, dim=None, _stacklevel=3, dtype=None)``: ``softmax(-x, dim)``; without ``dim``, PyTorch's
    legacy implicit dim with its warning (at the caller, ``_stacklevel - 3`` frames further up)."""
    if dim is None:
        warn_at_caller("Implicit dimension choice for softmin has been deprecated. Change the call to include dim=X "
                       "as an argument.", extra_levels=max(_stacklevel - 3, 0))
        dim = 0 if x._meta.ndim in (0, 1, 3) else 1
    return F.softmax(F.neg(x), dim, dtype=dtype)


@composite("Glu")
def glu(x, dim=-1):
    """``glu(input, dim=-1)``: ``a * sigmoid(b)`` for the halves ``a``, ``b`` of ``input`` along ``dim``."""
    m = x._meta
    if m.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    _floating_only("glu", x)
    d = _wrap_dim(dim, m.ndim, "glu")
    n = m.shape[d]
    if n % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {d} is size {n}")
    return F.mul(F.narrow(x, d, 0, n // 2), F.sigmoid(F.narrow(x, d, n // 2, n // 2)))


@functor("Prelu")
class PreluFunctor:
    """``prelu(input, weight)``: ``x`` where ``x > 0``, else ``weight * x``; ``weight`` has one element or one per
    channel (dim 1 of the input). PyTorch's ``_prelu_kernel``, composed of where and mul."""

    @lower_precision_function
    def __call__(self, x, weight):
        m, w = x._meta, weight._meta
        if w.ndim > 1:
            raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}")
        _floating_only("prelu", x)
        if w.numel == 1:
            w_view = F.reshape(weight, ())
        else:
            channels = m.shape[1] if m.ndim >= 2 else 1
            if w.numel != channels:
                raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                                   f"numbers = {w.numel} and channel size = {channels}.")
            w_view = F.reshape(weight, (channels,) + (1,) * (m.ndim - 2))
        return F.where(F.gt(x, 0), x, F.mul(x, w_view))


@functor("Rrelu")
class RreluFunctor:
    """``rrelu(input, lower=1/8, upper=1/3, training=False, inplace=False)``: in training, ``x * r`` where
    ``x <= 0`` with ``r ~ U(lower, upper)`` drawn per element; else ``leaky_relu`` with slope
    ``(lower + upper) / 2``. A functor rather than a composite: its random draw makes it an op of its own in
    PyTorch (``rrelu_with_noise``), and its gradient is the drawn slope."""

    def __call__(self, x, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, generator=None):
        if lower > upper:
            raise RuntimeError("rrelu: Lower bound should be less than or equal to the upper bound")
        _floating_only("rrelu", x)
        if not training:
            return F.leaky_relu(x, (lower + upper) / 2, inplace)
        m = x._meta
        noise = F.add(F.mul(F.rand(m.shape, generator=generator, dtype=m.dtype, device=m.device), upper - lower),
                      lower)
        return F.mul(x, F.where(F.le(x, 0), noise, 1.0), inplace=inplace)


@composite("GumbelSoftmax")
def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """``gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1)``: ``softmax((logits + g) / tau)`` with
    Gumbel(0, 1) noise ``g``; ``hard`` returns the one-hot of its argmax with the soft sample's gradient."""
    if eps != 1e-10:
        warn_at_caller("`eps` parameter is deprecated and has no effect.")
    _floating_only("gumbel_softmax", logits)
    gumbels = F.neg(F.log(F.neg(F.log(F.rand_like(logits)))))  # -log(Exp(1)); U = 0 gives -inf, a zero weight
    y_soft = F.softmax(F.div(F.add(logits, gumbels), tau), dim)
    if not hard:
        return y_soft
    index = F.argmax(y_soft, dim, True)
    y_hard = F.scatter(F.zeros_like(logits), dim, index, 1.0)
    return F.add(F.sub(y_hard, y_soft.detach()), y_soft)


class InplaceForm:
    """``<name>_(input, *args)``: the functional function ``name`` with ``inplace=True`` (nn.functional's
    ``relu_``, ``elu_``, ...; the torch namespace's ``dropout_``, ...), for signatures whose arguments all come
    before ``inplace``. A rule object per name: an alias of an argument, not a composition of its own."""

    def __init__(self, name):
        self.name = name
        self.fn = None

    def __call__(self, x, *args, **kwargs):
        if self.fn is None:
            self.fn = getattr(F, self.name)
        return self.fn(x, *args, inplace=True, **kwargs)


for _functor, _name in (("ReluInplace", "relu"), ("EluInplace", "elu"), ("SeluInplace", "selu"),
                        ("CeluInplace", "celu"), ("LeakyReluInplace", "leaky_relu"), ("HardtanhInplace", "hardtanh"),
                        ("ThresholdInplace", "threshold"), ("DropoutInplace", "dropout"),
                        ("AlphaDropoutInplace", "alpha_dropout"), ("FeatureDropoutInplace", "feature_dropout"),
                        ("FeatureAlphaDropoutInplace", "feature_alpha_dropout")):
    register_functor(_functor, partial(InplaceForm, _name))


@functor("RreluInplace")
class RreluInplaceFunctor:
    """``rrelu_(input, lower=1/8, upper=1/3, training=False, generator=None)``."""

    def __call__(self, x, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
        return F.rrelu(x, lower, upper, training, True, generator=generator)
