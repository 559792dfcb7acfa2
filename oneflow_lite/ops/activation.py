"""Activation ops, and the ``*_grad`` ops of their backward formulas.

Every ``<act>_grad(dy, x)`` (``sigmoid_grad`` and ``tanh_grad`` take the output
``y`` instead of ``x``) has its forward op's attrs and computes ``dy * act'(x)``
in one kernel, as OneFlow's grad ops do; their own grad functions (double
backward) are composed of functional ops (autograd/grads/unary.py).
"""

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import same_dtype, same_shape

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
