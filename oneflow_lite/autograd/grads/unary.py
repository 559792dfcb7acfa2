"""Grad functions of the elementwise unary ops, clamping and the activations (but relu).

First derivatives follow PyTorch's derivatives.yaml. The activations' ``*_grad``
ops compute ``dy * act'(x)`` in one kernel; their own grad functions (double
backward) are composed of functional calls: ``act_grad`` is linear in ``dy``, so
d/d(dy) is ``act_grad`` of the incoming grad again, and d/dx is
``ddx * dy * act''(x)`` with ``act''`` written below from functional ops (None
where it is zero almost everywhere), so every order of derivative works.
``sign``, ``floor``, ``ceil``, ``round`` and ``trunc`` have zero gradient.
"""

from __future__ import annotations

import math

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import OpCaller, add, cast, div, mul, mul_scalar, neg, reduce_to, zeros
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.ops.activation import ACTIVATION_ATTRS
from oneflow_lite.ops.unary import CLIP_ATTRS

_scalar_add = get_functor("ScalarAdd")
_sign = get_functor("Sign")
_sin = get_functor("Sin")
_cos = get_functor("Cos")
_exp = get_functor("Exp")
_tanh = get_functor("Tanh")
_sigmoid = get_functor("Sigmoid")
_softplus = get_functor("Softplus")
_isfinite = get_functor("IsFinite")
_lt = get_functor("Less")
_le = get_functor("LessEqual")
_gt = get_functor("Greater")
_ge = get_functor("GreaterEqual")
_scalar_le = get_functor("ScalarLessEqual")
_scalar_ge = get_functor("ScalarGreaterEqual")

_LN2 = math.log(2.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def add_scalar(a, s):
    return _scalar_add(a, s, 1, False)


def one_minus(a):
    return add_scalar(neg(a), 1.0)


def as_mask(b, like):
    """A bool tensor as 0 / 1 in ``like``'s dtype."""
    return cast(b, like._meta.dtype)


def _both(a, b):
    """Logical and of two bool tensors (bool ``mul``)."""
    return mul(a, b)


# ---- y = f(x) with dx = formula(dy, x or y) ---------------------------------------------------------
class _UnaryGrad(OpExprGradFunction):
    save_output = False

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(outputs[0] if self.save_output else inputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (t,) = state.saved_tensors
        return (self.formula(out_grads[0], t),)


def _unary_grad(op_type, name, formula, save_output=False):
    register_op_grad(op_type)(type(name + "Grad", (_UnaryGrad,),
                                   {"name": name, "formula": staticmethod(formula), "save_output": save_output}))


_unary_grad("abs", "Abs", lambda dy, x: mul(dy, _sign(x)))
_unary_grad("expm1", "Expm1", lambda dy, y: mul(dy, add_scalar(y, 1.0)), save_output=True)
_unary_grad("log", "Log", lambda dy, x: div(dy, x))
_unary_grad("log1p", "Log1p", lambda dy, x: div(dy, add_scalar(x, 1.0)))
_unary_grad("log2", "Log2", lambda dy, x: div(dy, mul_scalar(x, _LN2)))
_unary_grad("sqrt", "Sqrt", lambda dy, y: div(dy, mul_scalar(y, 2.0)), save_output=True)
_unary_grad("rsqrt", "Rsqrt", lambda dy, y: mul(dy, mul_scalar(mul(mul(y, y), y), -0.5)), save_output=True)
_unary_grad("square", "Square", lambda dy, x: mul(dy, mul_scalar(x, 2.0)))
_unary_grad("sin", "Sin", lambda dy, x: mul(dy, _cos(x)))
_unary_grad("cos", "Cos", lambda dy, x: neg(mul(dy, _sin(x))))
_unary_grad("tan", "Tan", lambda dy, y: mul(dy, add_scalar(mul(y, y), 1.0)), save_output=True)
_unary_grad("reciprocal", "Reciprocal", lambda dy, y: neg(mul(dy, mul(y, y))), save_output=True)
_unary_grad("erf", "Erf", lambda dy, x: mul(dy, mul_scalar(_exp(neg(mul(x, x))), _TWO_OVER_SQRT_PI)))
_unary_grad("nan_to_num", "NanToNum", lambda dy, x: mul(dy, as_mask(_isfinite(x), dy)))


class _ZeroGrad(OpExprGradFunction):
    def capture(self, state, inputs, outputs, attrs):
        pass

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        m = out_grads[0]._meta
        return (zeros(m.shape, m.dtype, m.device),)


for _op, _name in (("sign", "Sign"), ("floor", "Floor"), ("ceil", "Ceil"), ("round", "Round"),
                   ("trunc", "Trunc")):
    register_op_grad(_op)(type(_name + "Grad", (_ZeroGrad,), {"name": _name}))


# ---- clamp -----------------------------------------------------------------------------------------
_CLIP_NAMES = tuple(CLIP_ATTRS)
_clip_by_scalar_grad = OpCaller("clip_by_scalar_grad")
_clip_attrs: dict = {}


@register_op_grad("clip_by_scalar")
class ClipByScalarGrad(OpExprGradFunction):
    """dx = dy except where x < min or x > max (PyTorch's clamp_backward: the bounds pass the gradient)."""

    name = "Clamp"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[0])
            state.attrs = cached_attrs(_clip_attrs, _CLIP_NAMES, tuple([attrs[n] for n in _CLIP_NAMES]))

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (x,) = state.saved_tensors
        return (_clip_by_scalar_grad(out_grads[0], x, attrs=state.attrs),)


@register_op_grad("clip_by_scalar_grad")
class ClipByScalarGradGrad(OpExprGradFunction):
    """Linear in dy with a mask of x, piecewise constant in x."""

    name = "ClampBackward"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[1])
            state.attrs = cached_attrs(_clip_attrs, _CLIP_NAMES, tuple([attrs[n] for n in _CLIP_NAMES]))

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (x,) = state.saved_tensors
        return (_clip_by_scalar_grad(out_grads[0], x, attrs=state.attrs), None)


class _ClipByTensorGrad(OpExprGradFunction):
    """PyTorch's clamp backward with tensor bounds: each input gets dy where it decides the output (the
    input where ``min <= x <= max``, ``min`` where x < min < max, ``max`` where x > max or max < min), reduced
    to its own shape."""

    name = "Clamp"

    def capture(self, state, inputs, outputs, attrs):
        state.save_for_backward(*inputs)
        state.shapes = tuple([t._meta.shape for t in inputs])

    @staticmethod
    def masked(dy, mask, shape):
        return reduce_to(mul(dy, as_mask(mask, dy)), shape)


@register_op_grad("clip_by_tensor")
class ClipByTensorGrad(_ClipByTensorGrad):
    def apply(self, state, out_grads):
        dy = out_grads[0]
        x, lo, hi = state.saved_tensors
        sx, slo, shi = state.shapes
        nx, nlo, nhi = state.needs_input_grad
        return (self.masked(dy, _both(_ge(x, lo), _le(x, hi)), sx) if nx else None,
                self.masked(dy, _both(_lt(x, lo), _lt(lo, hi)), slo) if nlo else None,
                self.masked(dy, add(_gt(x, hi), _lt(hi, lo)), shi) if nhi else None)


@register_op_grad("clip_by_tensor_min")
class ClipByTensorMinGrad(_ClipByTensorGrad):
    def apply(self, state, out_grads):
        dy = out_grads[0]
        x, lo = state.saved_tensors
        sx, slo = state.shapes
        nx, nlo = state.needs_input_grad
        return (self.masked(dy, _ge(x, lo), sx) if nx else None, self.masked(dy, _lt(x, lo), slo) if nlo else None)


@register_op_grad("clip_by_tensor_max")
class ClipByTensorMaxGrad(_ClipByTensorGrad):
    def apply(self, state, out_grads):
        dy = out_grads[0]
        x, hi = state.saved_tensors
        sx, shi = state.shapes
        nx, nhi = state.needs_input_grad
        return (self.masked(dy, _le(x, hi), sx) if nx else None, self.masked(dy, _gt(x, hi), shi) if nhi else None)


# ---- activations -----------------------------------------------------------------------------------
def _d2_elu(x, attrs, alpha_scale):
    return mul_scalar(mul(_exp(x), as_mask(_scalar_le(x, 0.0), x)), alpha_scale)


def _d2_softplus(x, attrs):
    beta = attrs["beta"]
    z = mul_scalar(x, beta)
    s = _sigmoid(z)
    return mul(mul_scalar(mul(s, one_minus(s)), beta), as_mask(_scalar_le(z, attrs["threshold"]), x))


def _d2_silu(x, attrs):
    s = _sigmoid(x)
    return mul(mul(s, one_minus(s)), add_scalar(mul(x, one_minus(mul_scalar(s, 2.0))), 2.0))


def _d2_mish(x, attrs):
    """(1 - T^2) S (2 + x (1 - S - 2 T S)) with T = tanh(softplus(x)), S = sigmoid(x)."""
    t = _tanh(_softplus(x, 1.0, 20.0))
    s = _sigmoid(x)
    inner = add_scalar(mul(x, one_minus(add(s, mul_scalar(mul(t, s), 2.0)))), 2.0)
    return mul(mul(one_minus(mul(t, t)), s), inner)


def _d2_gelu(x, attrs):
    x2 = mul(x, x)
    if attrs["approximate"] == "tanh":
        # (1 - t^2) (u' - x t u'^2 + x u'' / 2), u = K (x + C x^3), u' = K (1 + 3 C x^2), u'' = 6 K C x
        t = _tanh(mul_scalar(add(x, mul_scalar(mul(x2, x), _GELU_C)), _GELU_K))
        du = mul_scalar(add_scalar(mul_scalar(x2, 3.0 * _GELU_C), 1.0), _GELU_K)
        inner = add(add(du, neg(mul(mul(x, t), mul(du, du)))), mul_scalar(x2, 3.0 * _GELU_K * _GELU_C))
        return mul(one_minus(mul(t, t)), inner)
    phi = mul_scalar(_exp(mul_scalar(x2, -0.5)), _INV_SQRT_2PI)  # the normal pdf
    return mul(phi, add_scalar(neg(x2), 2.0))


def _d2_hardswish(x, attrs):
    return mul_scalar(as_mask(_both(_scalar_ge(x, -3.0), _scalar_le(x, 3.0)), x), 1.0 / 3.0)


_SECOND_DERIVATIVES = {
    "hardtanh": None, "leaky_relu": None, "hardsigmoid": None,
    "hardswish": _d2_hardswish,
    "elu": lambda x, attrs: _d2_elu(x, attrs, attrs["alpha"]),
    "selu": lambda x, attrs: _d2_elu(x, attrs, _SELU_ALPHA * _SELU_SCALE),
    "softplus": _d2_softplus,
    "silu": _d2_silu,
    "mish": _d2_mish,
    "gelu": _d2_gelu,
}
_NAMES = {"hardtanh": "Hardtanh", "leaky_relu": "LeakyRelu", "hardsigmoid": "Hardsigmoid", "hardswish": "Hardswish",
          "elu": "Elu", "selu": "Selu", "softplus": "Softplus", "silu": "Silu", "mish": "Mish", "gelu": "Gelu"}


class _ActivationGrad(OpExprGradFunction):
    """y = act(x): dx = ``act_grad(dy, x)`` with the forward's attrs."""

    names: tuple = ()
    grad_op: OpCaller

    def __init__(self):
        self._attrs = {}

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[-1])
            names = self.names
            state.attrs = cached_attrs(self._attrs, names, tuple([attrs[n] for n in names])) if names else None

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (x,) = state.saved_tensors
        return (self.grad_op(out_grads[0], x, attrs=state.attrs),)


class _ActivationGradGrad(_ActivationGrad):
    """dx = act_grad(dy, x): d/d(dy) = act_grad(ddx, x), d/dx = ddx * dy * act''(x)."""

    second = None

    def capture(self, state, inputs, outputs, attrs):
        n_dy, n_x = state.needs_input_grad
        if n_x and self.second is None:
            n_x = False
        if n_dy or n_x:
            state.save_for_backward(inputs[1], inputs[0] if n_x else None)
            names = self.names
            state.attrs = cached_attrs(self._attrs, names, tuple([attrs[n] for n in names])) if names else None

    def apply(self, state, out_grads):
        n_dy, n_x = state.needs_input_grad
        if not (n_dy or n_x):
            return (None, None)
        ddx = out_grads[0]
        x, dy = state.saved_tensors
        g_dy = self.grad_op(ddx, x, attrs=state.attrs) if n_dy else None
        g_x = None
        if dy is not None:
            g_x = mul(mul(ddx, dy), self.second(x, state.attrs))
        return (g_dy, g_x)


for _op, _second in _SECOND_DERIVATIVES.items():
    _names = tuple(ACTIVATION_ATTRS[_op])
    _caller = OpCaller(_op + "_grad")
    register_op_grad(_op)(type(_NAMES[_op] + "Grad", (_ActivationGrad,),
                               {"name": _NAMES[_op], "names": _names, "grad_op": _caller}))
    register_op_grad(_op + "_grad")(type(_NAMES[_op] + "GradGrad", (_ActivationGradGrad,),
                                         {"name": _NAMES[_op] + "Backward", "names": _names, "grad_op": _caller,
                                          "second": None if _second is None else staticmethod(_second)}))


# ---- sigmoid and tanh: their grad ops take the output y ---------------------------------------------
_sigmoid_grad = OpCaller("sigmoid_grad")
_tanh_grad = OpCaller("tanh_grad")


class _OutputGrad(OpExprGradFunction):
    """y = act(x): dx = ``act_grad(dy, y)``."""

    grad_op: OpCaller

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(outputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (y,) = state.saved_tensors
        return (self.grad_op(out_grads[0], y),)


class _OutputGradGrad(OpExprGradFunction):
    """dx = act_grad(dy, y): d/d(dy) = act_grad(ddx, y); d/dy = ddx * dy * d(act')/dy."""

    grad_op: OpCaller
    d_dy = None

    def capture(self, state, inputs, outputs, attrs):
        n_dy, n_y = state.needs_input_grad
        if n_dy or n_y:
            state.save_for_backward(inputs[1], inputs[0] if n_y else None)

    def apply(self, state, out_grads):
        n_dy, n_y = state.needs_input_grad
        if not (n_dy or n_y):
            return (None, None)
        ddx = out_grads[0]
        y, dy = state.saved_tensors
        return (self.grad_op(ddx, y) if n_dy else None,
                mul(mul(ddx, dy), self.d_dy(y)) if dy is not None else None)


register_op_grad("sigmoid")(type("SigmoidGrad", (_OutputGrad,), {"name": "Sigmoid", "grad_op": _sigmoid_grad}))
register_op_grad("tanh")(type("TanhGrad", (_OutputGrad,), {"name": "Tanh", "grad_op": _tanh_grad}))
# sigmoid' = y (1 - y): d/dy = 1 - 2y;  tanh' = 1 - y^2: d/dy = -2y
register_op_grad("sigmoid_grad")(type("SigmoidGradGrad", (_OutputGradGrad,), {
    "name": "SigmoidBackward", "grad_op": _sigmoid_grad,
    "d_dy": staticmethod(lambda y: one_minus(mul_scalar(y, 2.0)))}))
register_op_grad("tanh_grad")(type("TanhGradGrad", (_OutputGradGrad,), {
    "name": "TanhBackward", "grad_op": _tanh_grad, "d_dy": staticmethod(lambda y: mul_scalar(y, -2.0))}))
