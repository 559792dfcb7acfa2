"""Activation ops, the ``*_grad`` ops of their backward formulas, and their gradient rows.

Every ``<act>_grad(dy, x)`` (``sigmoid_grad`` and ``tanh_grad`` take the output
``y`` instead of ``x``) has its forward op's attrs and computes ``dy * act'(x)``
in one kernel, as OneFlow's grad ops do. Their own gradients (double backward)
are composed of functional calls: ``act_grad`` is linear in ``dy``, so d/d(dy) is
``act_grad`` of the incoming grad again, and d/dx is ``ddx * dy * act''(x)`` with
``act''`` written below from functional ops (no row where it is zero almost
everywhere), so every order of derivative works.
"""

import math

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import same_dtype, same_shape
from oneflow_lite.ops.unary import as_mask

register_user_op("relu", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)


def _relu_grad_shape(ctx):
    dy, y = ctx.shape("dy"), ctx.shape("y")
    if tuple(dy) != tuple(y):
        raise ctx.error(f"dy and y must have the same shape, got {list(dy)} and {list(y)}")
    if ctx.dtype("dy") is not ctx.dtype("y"):
        raise ctx.error(f"dy and y must have the same dtype, got {ctx.dtype('dy').name} and {ctx.dtype('y').name}")
    return same_shape(ctx)


register_user_op("relu_grad", inputs=["dy", "y"], outputs=["dx"], infer_shape=_relu_grad_shape,
                 infer_dtype=same_dtype)


# ``relu_grad(dy, y)``: ``dy`` where ``y > 0``, else 0 (one op instead of a comparison, a cast and a multiply);
# it is linear in dy (with the mask of y) and piecewise constant in y.
derivative("relu", x=lambda dy, y: F.relu_grad(dy, y))
derivative("relu_grad", dy=lambda ddx, y: F.relu_grad(ddx, y))


def _grad_shape(ctx):
    dy, x = ctx.input_metas
    if dy.shape != x.shape:
        raise ctx.error(f"dy and its forward tensor must have the same shape, got {list(dy.shape)} and "
                        f"{list(x.shape)}")
    if dy.dtype is not x.dtype:
        raise ctx.error(f"dy and its forward tensor must have the same dtype, got {dy.dtype.name} and "
                        f"{x.dtype.name}")
    return dy.shape


def _gelu_shape(ctx):
    if ctx.attr("approximate") not in ("none", "tanh"):
        raise ctx.error(f"approximate argument must be either none or tanh, got {ctx.attr('approximate')!r}")
    return ctx.input_metas[-1].shape if ctx.op_type == "gelu" else _grad_shape(ctx)


ACTIVATION_ATTRS = {
    "sigmoid": {},
    "tanh": {},
    "hardtanh": {"min_val": ("double", -1.0), "max_val": ("double", 1.0)},
    "leaky_relu": {"alpha": ("double", 0.01)},
    "elu": {"alpha": ("double", 1.0)},
    "selu": {},
    "gelu": {"approximate": ("string", "none")},  # "none" (erf) or "tanh"
    "silu": {},
    "mish": {},
    "softplus": {"beta": ("double", 1.0), "threshold": ("double", 20.0)},
    "hardsigmoid": {},
    "hardswish": {},
}
for _op, _attrs in ACTIVATION_ATTRS.items():
    _gelu = _op == "gelu"
    register_user_op(_op, inputs=["x"], outputs=["y"], attrs=_attrs, infer_shape=_gelu_shape if _gelu else same_shape,
                     infer_dtype=same_dtype)
    register_user_op(_op + "_grad", inputs=["dy", "y" if _op in ("sigmoid", "tanh") else "x"], outputs=["dx"],
                     attrs=_attrs, infer_shape=_gelu_shape if _gelu else _grad_shape, infer_dtype=same_dtype)


# gelu and its derivative at once, (y, gelu'(x)): made by the graph's GELU fusion after capture (Note
# [Derivatives in the forward] in graph/passes.py), which turns each gelu_grad(dy, x) into dy * gelu'(x).
def _two_same_shapes(ctx):
    if ctx.attr("approximate") not in ("none", "tanh"):
        raise ctx.error(f"approximate argument must be either none or tanh, got {ctx.attr('approximate')!r}")
    return ctx.shape("x"), ctx.shape("x")


def _two_same_dtypes(ctx):
    return ctx.dtype("x"), ctx.dtype("x")


register_user_op("gelu_with_derivative", inputs=["x"], outputs=["y", "derivative"],
                 attrs=ACTIVATION_ATTRS["gelu"], no_grad=True, infer_shape=_two_same_shapes,
                 infer_dtype=_two_same_dtypes)


# ---- gradient rows -----------------------------------------------------------------------------------
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _one_minus(a):
    return F.add_scalar(F.neg(a), 1.0)


def _d2_exp_below_zero(x, scale):
    """``scale * exp(x)`` where x <= 0, else 0: elu's act'' (scale alpha) and selu's (alpha * scale)."""
    return F.mul_scalar(F.mul(F.exp(x), as_mask(F.le(x, 0.0), x)), scale)


def _d2_softplus(x, attrs):
    beta = attrs["beta"]
    z = F.mul_scalar(x, beta)
    s = F.sigmoid(z)
    return F.mul(F.mul_scalar(F.mul(s, _one_minus(s)), beta), as_mask(F.le(z, attrs["threshold"]), x))


def _d2_silu(x, attrs):
    s = F.sigmoid(x)
    return F.mul(F.mul(s, _one_minus(s)), F.add_scalar(F.mul(x, _one_minus(F.mul_scalar(s, 2.0))), 2.0))


def _d2_mish(x, attrs):
    """(1 - T^2) S (2 + x (1 - S - 2 T S)) with T = tanh(softplus(x)), S = sigmoid(x)."""
    t = F.tanh(F.softplus(x, 1.0, 20.0))
    s = F.sigmoid(x)
    inner = F.add_scalar(F.mul(x, _one_minus(F.add(s, F.mul_scalar(F.mul(t, s), 2.0)))), 2.0)
    return F.mul(F.mul(_one_minus(F.mul(t, t)), s), inner)


def _d2_gelu(x, attrs):
    x2 = F.mul(x, x)
    if attrs["approximate"] == "tanh":
        # (1 - t^2) (u' - x t u'^2 + x u'' / 2), u = K (x + C x^3), u' = K (1 + 3 C x^2), u'' = 6 K C x
        t = F.tanh(F.mul_scalar(F.add(x, F.mul_scalar(F.mul(x2, x), _GELU_C)), _GELU_K))
        du = F.mul_scalar(F.add_scalar(F.mul_scalar(x2, 3.0 * _GELU_C), 1.0), _GELU_K)
        inner = F.add(F.add(du, F.neg(F.mul(F.mul(x, t), F.mul(du, du)))), F.mul_scalar(x2, 3.0 * _GELU_K * _GELU_C))
        return F.mul(_one_minus(F.mul(t, t)), inner)
    phi = F.mul_scalar(F.exp(F.mul_scalar(x2, -0.5)), _INV_SQRT_2PI)  # the normal pdf
    return F.mul(phi, F.add_scalar(F.neg(x2), 2.0))


def _d2_hardswish(x, attrs):
    return F.mul_scalar(as_mask(F.mul(F.ge(x, -3.0), F.le(x, 3.0)), x), 1.0 / 3.0)


# act''(x, attrs) of the activations whose grad op takes x; None: zero almost everywhere
_SECOND_DERIVATIVES = {
    "hardtanh": None, "leaky_relu": None, "hardsigmoid": None,
    "hardswish": _d2_hardswish,
    "elu": lambda x, attrs: _d2_exp_below_zero(x, attrs["alpha"]),
    "selu": lambda x, attrs: _d2_exp_below_zero(x, _SELU_ALPHA * _SELU_SCALE),
    "softplus": _d2_softplus,
    "silu": _d2_silu,
    "mish": _d2_mish,
    "gelu": _d2_gelu,
}
# d(act')/dy of the activations whose grad op takes y: sigmoid' = y (1 - y), tanh' = 1 - y^2
_OUTPUT_SECOND_DERIVATIVES = {
    "sigmoid": lambda y: _one_minus(F.mul_scalar(y, 2.0)),
    "tanh": lambda y: F.mul_scalar(y, -2.0),
}


def _camel(op):
    """``leaky_relu`` -> ``LeakyRelu``, as node names are made: the grad op's node is ``LeakyReluBackwardBackward``."""
    return "".join(part.capitalize() for part in op.split("_"))


def _activation_rows(op, second):
    """Rows of ``op``: dx = ``<op>_grad(dy, x)`` with the forward's attrs; and of ``<op>_grad``, linear in dy:
    d/d(dy) = ``<op>_grad(ddx, x)``, d/dx = ``ddx * dy * act''(x)`` (no row when ``second`` is None). An op
    without attrs has rows without ``attrs``, so its capture reads none."""
    grad_op = op + "_grad"
    if ACTIVATION_ATTRS[op]:
        derivative(op, x=lambda dy, x, attrs: getattr(F.ops, grad_op)(dy, x, attrs=attrs))
        rows = {"dy": lambda ddx, x, attrs: getattr(F.ops, grad_op)(ddx, x, attrs=attrs),
                "x": lambda ddx, dy, x, attrs: F.mul(F.mul(ddx, dy), second(x, attrs))}
    else:
        derivative(op, x=lambda dy, x: getattr(F.ops, grad_op)(dy, x))
        rows = {"dy": lambda ddx, x: getattr(F.ops, grad_op)(ddx, x),
                "x": lambda ddx, dy, x: F.mul(F.mul(ddx, dy), second(x, None))}
    if second is None:
        del rows["x"]
    derivative(grad_op, name=_camel(op) + "Backward", **rows)


def _output_activation_rows(op, d_dy):
    """Rows of ``op``: dx = ``<op>_grad(dy, y)``; and of ``<op>_grad``, linear in dy: d/d(dy) =
    ``<op>_grad(ddx, y)``, d/dy = ``ddx * dy * d(act')/dy``."""
    grad_op = op + "_grad"
    derivative(op, x=lambda dy, y: getattr(F.ops, grad_op)(dy, y))
    derivative(grad_op, name=_camel(op) + "Backward", dy=lambda ddx, y: getattr(F.ops, grad_op)(ddx, y),
               y=lambda ddx, dy, y: F.mul(F.mul(ddx, dy), d_dy(y)))


for _op, _second in _SECOND_DERIVATIVES.items():
    _activation_rows(_op, _second)
for _op, _d_dy in _OUTPUT_SECOND_DERIVATIVES.items():
    _output_activation_rows(_op, _d_dy)
