"""Neural-network ops: softmax / log_softmax, the losses, dropout, normalisation, embedding, one_hot
and the attention mask bias, with the ``*_grad`` ops of their backward formulas (OneFlow's op names
where OneFlow has the op).

Note [Loss ops are elementwise]
A loss op computes the unreduced loss of each element (input and target broadcast); the functor
applies ``reduction`` with ``reduce_sum`` and a division, so each loss op's grad is an elementwise
formula and the reduction's grad comes from those ops. The class losses are the exception (Note
[The reduction of nll]).

Note [The reduction of nll]
``nll`` and ``nll_smooth`` (cross_entropy's label-smoothing term) take PyTorch's ``reduction``
("none", "sum" or "mean") as an attr and reduce in their kernels, as PyTorch's ``nll_loss_forward``
does: "mean" divides the summed loss by the total weight of the targets that are not
``ignore_index`` (nan when there is none), which the kernel computes from the target and the class
weights. Their grad ops take the same attr and recompute that total, so a "mean" cross_entropy is
two ops forward (log_softmax, nll) and two backward, instead of a sum, a second sum over the weights
and a division with their grads. Unlike PyTorch's, the ops do not return the total weight: every
floating output of an op requires grad, so backward would make a zero gradient for it at every step.

Note [Gradients of the nn ops]
Each op's gradient rows (after its definition) run its ``*_grad`` ops (fused formulas). Twice
differentiable: softmax / log_softmax (the rows of their grad ops are written with functional
calls) and the ops linear in their input, ``nll``, ``nll_smooth`` and ``dropout`` (the adjoint of the
grad op is the forward op). The other ``*_grad`` ops have a row that raises when differentiated
(``_no_double_backward``): recording them is allowed, and a double backward through them raises an
error naming the op.

Note [Optional inputs of kernels]
A kernel receives the arrays of the inputs a call gave, in order, so one trailing optional input
is simply a missing argument. Ops with two optional inputs (``layer_norm``, ``batch_norm_elemt``)
carry OneFlow's ``scale`` (gamma / weight given) and ``center`` (beta / bias given) attrs, and the
infer functions check that they agree with the inputs.
"""

from __future__ import annotations

from functools import partial

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.framework.tensor import LAZY_KEY_SET
from oneflow_lite.ops.common import broadcast_shapes, same_dtype, same_shape

_BOOL = dt.bool_
_INT64 = dt.int64


def _dims(shape) -> str:
    return str(list(shape))


def _check_axis(ctx, name="axis"):
    ndim = ctx.input_metas[0].ndim
    axis = ctx.attrs[name]
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not lo <= axis <= hi:
        raise ctx.error(f"{name} {axis} is out of range for a tensor of {ndim} dimension(s)")


def _same_as(ctx, first, *others):
    """The first input's shape; every other named input must have its shape and dtype."""
    shape, dtype = ctx.shape(first), ctx.dtype(first)
    for name in others:
        if ctx.shape(name) != shape:
            raise ctx.error(f"{name} must have the shape of {first} {_dims(shape)}, got {_dims(ctx.shape(name))}")
        if ctx.dtype(name) is not dtype:
            raise ctx.error(f"{name} must have the dtype of {first} ({dtype.name}), got {ctx.dtype(name).name}")
    return shape


def _given(*inputs):
    """``inputs`` without the trailing optional input when it is not given (None): the inputs of a call by type."""
    return inputs if inputs[-1] is not None else inputs[:-1]


def _raises(message):
    """A gradient row for a derivative that is not implemented: recording is allowed, differentiating raises."""
    def row():
        raise RuntimeError(message)
    return row


def _no_double_backward(grad_op, forward_op):
    """The row of a backward-only op whose own derivative (double backward through the forward op) is not
    implemented (Note [Gradients of the nn ops])."""
    derivative(grad_op, joint=_raises(f"the derivative for '{grad_op}' is not implemented: double backward through "
                                      f"'{forward_op}' is not supported"))


# ---- softmax / log_softmax --------------------------------------------------------------------
def _softmax_shape(ctx):
    _check_axis(ctx)
    return same_shape(ctx)


def _softmax_grad_shape(ctx):
    _check_axis(ctx)
    return _same_as(ctx, "y", "dy")


for _op in ("softmax", "log_softmax"):
    register_user_op(_op, inputs=["in"], outputs=["out"], attrs={"axis": ("int32", -1)},
                     infer_shape=_softmax_shape, infer_dtype=same_dtype)
    register_user_op(_op + "_grad", inputs=["y", "dy"], outputs=["dx"], attrs={"axis": ("int32", -1)},
                     infer_shape=_softmax_grad_shape, infer_dtype=same_dtype)
# softmax giving 0 instead of nan on rows that are all -inf (PyTorch's ``_safe_softmax``, which
# scaled_dot_product_attention uses for fully masked rows); its gradient is softmax's.
register_user_op("safe_softmax", inputs=["in"], outputs=["out"], attrs={"axis": ("int32", -1)},
                 infer_shape=_softmax_shape, infer_dtype=same_dtype)


def _softmax_backward(grad_op, dout, out, attrs):
    """d in = ``grad_op(out, dout)`` with the forward's axis (a fully masked row of safe_softmax is 0, where
    softmax_grad gives 0 too)."""
    return getattr(F.ops, grad_op)(out, dout, attrs=attrs)


for _op, _grad_op in (("softmax", "softmax_grad"), ("safe_softmax", "softmax_grad"),
                      ("log_softmax", "log_softmax_grad")):
    derivative(_op, in_=partial(_softmax_backward, _grad_op))


def _sum_keep(x, axis):
    return F.sum(x, (axis,), True)


def _softmax_grad_y(ddx, y, dy, axis):
    """dx = y * (dy - s), s = sum(dy * y): for an incoming g, grad_y = g * (dy - s) - dy * sum(g * y) (and
    grad_dy = softmax_grad(y, g))."""
    s = _sum_keep(F.mul(dy, y), axis)
    return F.sub(F.mul(ddx, F.sub(dy, s)), F.mul(dy, _sum_keep(F.mul(ddx, y), axis)))


def _log_softmax_grad_backward(needs, ddx, y, dy, axis):
    """dx = dy - exp(y) * sum(dy): grad_y = -g * exp(y) * sum(dy) and grad_dy = g - sum(g * exp(y))."""
    gp = F.mul(ddx, F.exp(y))
    return (F.neg(F.mul(gp, _sum_keep(dy, axis))) if needs[0] else None,
            F.sub(ddx, _sum_keep(gp, axis)) if needs[1] else None)


derivative("softmax_grad", y=_softmax_grad_y, dy=lambda ddx, y, attrs: F.ops.softmax_grad(y, ddx, attrs=attrs))
derivative("log_softmax_grad", joint=_log_softmax_grad_backward)


# ---- activations with attrs: celu, hardshrink, softshrink, threshold ----------------------------------
# Each ``<op>(x)`` has a ``<op>_grad(dy, x)`` with the same attrs computing ``dy * op'(x)``. The shrink and
# threshold ops are piecewise linear: their grad op is linear in dy with a mask of x (its own adjoint) and
# has no derivative in x. celu's second derivative is ``exp(x / alpha) / alpha`` where ``x <= 0``.
def _act_grad_shape(ctx):
    return _same_as(ctx, "x", "dy")


NN_ACTIVATION_ATTRS = {
    "celu": {"alpha": ("double", 1.0)},
    "hardshrink": {"lambd": ("double", 0.5)},
    "softshrink": {"lambd": ("double", 0.5)},
    "threshold": {"threshold_val": ("double", 0.0), "value": ("double", 0.0)},
}
for _op, _attrs in NN_ACTIVATION_ATTRS.items():
    register_user_op(_op, inputs=["x"], outputs=["y"], attrs=_attrs, infer_shape=same_shape, infer_dtype=same_dtype)
    register_user_op(_op + "_grad", inputs=["dy", "x"], outputs=["dx"], attrs=_attrs, infer_shape=_act_grad_shape,
                     infer_dtype=same_dtype)


def _act_backward(grad_op, dy, x, attrs):
    return getattr(F.ops, grad_op)(dy, x, attrs=attrs)


def _celu_second(ddx, dy, x, alpha):
    """d/dx of ``dy * celu'(x)``: ``ddx * dy * exp(x / alpha) / alpha`` where ``x <= 0``, else 0."""
    d2 = F.where(F.le(x, 0.0), F.div(F.exp(F.div(x, alpha)), alpha), 0.0)
    return F.mul(F.mul(ddx, dy), d2)


def _act_grad_adjoint(grad_op, ddx, x, attrs):
    """The grad op is linear in dy: d/d dy of ``grad_op(dy, x)`` applied to ddx is ``grad_op(ddx, x)``."""
    return getattr(F.ops, grad_op)(ddx, x, attrs=attrs)


for _op in NN_ACTIVATION_ATTRS:
    derivative(_op, x=partial(_act_backward, _op + "_grad"))
    derivative(_op + "_grad", dy=partial(_act_grad_adjoint, _op + "_grad"),
               **({"x": _celu_second} if _op == "celu" else {}))


# ---- nll ----------------------------------------------------------------------------------------
def _check_nll_target(ctx, input_shape, target_shape):
    """PyTorch's shape rules of ``nll_loss``: input (C,) with a 0-d target, or (N, C, d1, ...) with
    target (N, d1, ...)."""
    if len(input_shape) == 0:
        raise ctx.error("Expected 1 or more dimensions (got 0)")
    if len(input_shape) == 1:
        if len(target_shape) != 0:
            raise ctx.error(f"size mismatch (got input: {_dims(input_shape)}, target: {_dims(target_shape)})")
        return
    if len(target_shape) == 0 or target_shape[0] != input_shape[0]:
        got = target_shape[0] if target_shape else "none, a 0-d target"
        raise ctx.error(f"Expected input batch_size ({input_shape[0]}) to match target batch_size ({got}).")
    if len(input_shape) == 2 and len(target_shape) != 1:
        raise ctx.error("0D or 1D target tensor expected, multi-target not supported")
    if tuple(target_shape[1:]) != tuple(input_shape[2:]):
        raise ctx.error(f"Expected target size {_dims((input_shape[0], *input_shape[2:]))}, "
                        f"got {_dims(target_shape)}")


def _check_class_weight(ctx, num_classes, dtype):
    if ctx.has_input("weight"):
        w = ctx.shape("weight")
        if len(w) != 1 or w[0] != num_classes:
            raise ctx.error(f"weight tensor should be defined either for all {num_classes} classes or no classes "
                            f"but got weight tensor of shape: {_dims(w)}")
        if ctx.dtype("weight") is not dtype:
            raise ctx.error(f"weight must have the dtype of the input ({dtype.name}), got {ctx.dtype('weight').name}")


def _check_nll_target_dtype(ctx):
    d = ctx.dtype("target")
    if d is not _INT64 and d is not dt.uint8:
        raise ctx.error(f"expected scalar type Long but found {d.name} (target)")


_REDUCTIONS = ("none", "sum", "mean")


def _nll_reduction(ctx):
    """The ``reduction`` attr, checked."""
    r = ctx.attrs["reduction"]
    if r not in _REDUCTIONS:
        raise ctx.error(f"reduction must be one of 'none', 'sum', 'mean', got {r!r}")
    return r


def _nll_shape(ctx):
    """The target's shape, or () when reduced (Note [The reduction of nll])."""
    x, t = ctx.shape("input"), ctx.shape("target")
    _check_nll_target(ctx, x, t)
    _check_nll_target_dtype(ctx)
    _check_class_weight(ctx, x[0] if len(x) == 1 else x[1], ctx.dtype("input"))
    return t if _nll_reduction(ctx) == "none" else ()


_CLASS_LOSS_ATTRS = {"ignore_index": ("int64", -100), "reduction": ("string", "none")}
register_user_op("nll", inputs=["input", "target", Arg("weight", optional=True)], outputs=["output"],
                 attrs=_CLASS_LOSS_ATTRS, infer_shape=_nll_shape, infer_dtype=same_dtype)


def _nll_grad_shape(ctx):
    like, t = ctx.attrs["like_shape"], ctx.shape("target")
    _check_nll_target(ctx, like, t)
    _check_nll_target_dtype(ctx)
    expected = t if _nll_reduction(ctx) == "none" else ()
    if ctx.shape("out_grad") != expected:
        what = "the target's shape" if expected else "shape [] (a reduced loss)"
        raise ctx.error(f"out_grad must have {what} {_dims(expected)}, got {_dims(ctx.shape('out_grad'))}")
    _check_class_weight(ctx, like[0] if len(like) == 1 else like[1], ctx.dtype("out_grad"))
    return like


_CLASS_LOSS_GRAD_ATTRS = {**_CLASS_LOSS_ATTRS, "like_shape": ("shape", ())}
register_user_op("nll_grad", inputs=["out_grad", "target", Arg("weight", optional=True)], outputs=["in_grad"],
                 attrs=_CLASS_LOSS_GRAD_ATTRS, infer_shape=_nll_grad_shape, infer_dtype=same_dtype)


# The label-smoothing term of cross_entropy: -sum_c weight[c] * input[n, c, ...] per element, 0 where the
# target is ignore_index (PyTorch's ``smooth_loss``), reduced as nll; its grad op spreads -weight[c] * dy
# over the classes.
register_user_op("nll_smooth", inputs=["input", "target", Arg("weight", optional=True)], outputs=["output"],
                 attrs=_CLASS_LOSS_ATTRS, infer_shape=_nll_shape, infer_dtype=same_dtype)
register_user_op("nll_smooth_grad", inputs=["out_grad", "target", Arg("weight", optional=True)], outputs=["in_grad"],
                 attrs=_CLASS_LOSS_GRAD_ATTRS, infer_shape=_nll_grad_shape, infer_dtype=same_dtype)


def _class_loss_backward(grad_op, doutput, target, weight, input_meta, ignore_index, reduction):
    """d input = ``grad_op(d output, target, weight)`` with the same ``ignore_index`` and ``reduction``, a scatter of
    the output grads into the classes (Note [The reduction of nll])."""
    return getattr(F.ops, grad_op)(*_given(doutput, target, weight), ignore_index=ignore_index, reduction=reduction,
                                   like_shape=tuple(input_meta.shape))


def _class_loss_adjoint(forward_op, din_grad, target, weight, ignore_index, reduction):
    """The grad op is linear in ``out_grad``: its adjoint is the forward op with the same ``reduction`` (a "mean"
    scales both by one over the same total weight), which gathers g."""
    return getattr(F.ops, forward_op)(*_given(din_grad, target, weight), ignore_index=ignore_index,
                                      reduction=reduction)


for _op, _name, _grad_name, _loss in (("nll", "NllLoss", "NllLossGrad", "nll_loss"),
                                      ("nll_smooth", None, None, "cross_entropy")):
    _no_weight_grad = _raises(f"{_loss}: the derivative for 'weight' is not implemented.")
    derivative(_op, name=_name, input=partial(_class_loss_backward, _op + "_grad"), weight=_no_weight_grad)
    derivative(_op + "_grad", name=_grad_name, out_grad=partial(_class_loss_adjoint, _op), weight=_no_weight_grad)


# ---- elementwise losses (Note [Loss ops are elementwise]) -------------------------------------------
def _same_dtypes(ctx, names):
    d = ctx.dtype(names[0])
    for n in names[1:]:
        if ctx.has_input(n) and ctx.dtype(n) is not d:
            raise ctx.error(f"{names[0]} and {n} must have the same dtype, got {d.name} and {ctx.dtype(n).name} "
                            f"(functors cast to a common dtype first)")
    return d


def _loss_shape(ctx):
    shapes = [ctx.shape("input"), ctx.shape("target")]
    if ctx.has_input("pos_weight"):
        shapes.append(ctx.shape("pos_weight"))
    return broadcast_shapes(ctx.op_type, *shapes)


def _loss_dtype(ctx):
    return _same_dtypes(ctx, ("input", "target", "pos_weight"))


def _loss_grad_shape(ctx):
    shape = _loss_shape(ctx)
    if tuple(ctx.shape("dy")) != tuple(shape):
        raise ctx.error(f"dy must have the broadcast shape of the inputs {_dims(shape)}, got {_dims(ctx.shape('dy'))}")
    return shape


def _loss_grad_dtype(ctx):
    return _same_dtypes(ctx, ("dy", "input", "target", "pos_weight"))


# op type -> attrs; the ops with a target gradient of their own (the others' is -dx) have a *_target_grad op.
LOSS_OPS = {
    "mse_loss": {},
    "l1_loss": {},
    "smooth_l1_loss": {"beta": ("double", 1.0)},
    "huber_loss": {"delta": ("double", 1.0)},
    "kl_div_loss": {"log_target": ("bool", False)},
    "binary_cross_entropy": {},
    "binary_cross_entropy_with_logits": {},
}
LOSSES_WITH_TARGET_GRAD = ("kl_div_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits")

for _op, _attrs in LOSS_OPS.items():
    _extra = [Arg("pos_weight", optional=True)] if _op == "binary_cross_entropy_with_logits" else []
    register_user_op(_op, inputs=["input", "target", *_extra], outputs=["out"], attrs=_attrs,
                     infer_shape=_loss_shape, infer_dtype=_loss_dtype)
    register_user_op(_op + "_grad", inputs=["dy", "input", "target", *_extra], outputs=["dx"], attrs=_attrs,
                     infer_shape=_loss_grad_shape, infer_dtype=_loss_grad_dtype)
    if _op in LOSSES_WITH_TARGET_GRAD:
        register_user_op(_op + "_target_grad", inputs=["dy", "input", "target", *_extra], outputs=["dtarget"],
                         attrs=_attrs, infer_shape=_loss_grad_shape, infer_dtype=_loss_grad_dtype)


def _loss_backward(op_type, grad_op, target_op, needs, dout, input, target, pos_weight, input_meta, target_meta,
                   attrs):
    """The input's gradient from the loss's ``grad_op``; the target's from its ``target_op``, or ``-dx`` where the
    loss depends on ``input - target`` only. Each is summed back to its operand's shape."""
    if len(needs) > 2 and needs[2]:
        raise RuntimeError(f"{op_type}: the derivative for 'pos_weight' is not implemented.")
    args = _given(dout, input, target, pos_weight)
    full_dx = getattr(F.ops, grad_op)(*args, attrs=attrs) if needs[0] or target_op is None else None
    dt = None
    if needs[1]:
        full_dt = F.neg(full_dx) if target_op is None else getattr(F.ops, target_op)(*args, attrs=attrs)
        dt = F.reduce_to(full_dt, target_meta.shape)
    dx = F.reduce_to(full_dx, input_meta.shape) if needs[0] else None
    return (dx, dt) if len(needs) == 2 else (dx, dt, None)


def _loss_row(op_type):
    """The joint row of an elementwise loss (the target's gradient may share the input's)."""
    target_op = op_type + "_target_grad" if op_type in LOSSES_WITH_TARGET_GRAD else None
    row = partial(_loss_backward, op_type, op_type + "_grad", target_op)
    if op_type == "binary_cross_entropy_with_logits":
        return row
    return lambda needs, dout, input, target, input_meta, target_meta, attrs: row(
        needs, dout, input, target, None, input_meta, target_meta, attrs)


for _op in LOSS_OPS:
    derivative(_op, joint=_loss_row(_op))
    _user_op = "kl_div" if _op == "kl_div_loss" else _op
    _no_double_backward(_op + "_grad", _user_op)
    if _op in LOSSES_WITH_TARGET_GRAD:
        _no_double_backward(_op + "_target_grad", _user_op)


# ---- dropout --------------------------------------------------------------------------------------
def _bool_dtype(ctx):
    return _BOOL


def _check_rate(ctx):
    rate = ctx.attrs["rate"]
    if not 0.0 <= rate <= 1.0:
        raise ctx.error(f"rate must be in [0, 1], got {rate}")
    return same_shape(ctx)


register_user_op("random_mask_like", inputs=["like"], outputs=["out"], attrs={"rate": ("double", 0.0)},
                 no_grad=True, infer_shape=_check_rate, infer_dtype=_bool_dtype)


def _dropout_shape(ctx):
    shape = ctx.shape("in")
    if ctx.shape("mask") != shape:
        raise ctx.error(f"mask must have the input's shape {_dims(shape)}, got {_dims(ctx.shape('mask'))}")
    if ctx.dtype("mask") is not _BOOL:
        raise ctx.error(f"mask must be a bool tensor, got {ctx.dtype('mask').name}")
    return shape


register_user_op("dropout", inputs=["in", "mask"], outputs=["out"], attrs={"scale": ("double", 1.0)},
                 infer_shape=_dropout_shape, infer_dtype=same_dtype)
# dropout is linear in its input: dx = dropout(dy, mask) (so it is its own double backward).
derivative("dropout", in_=lambda dout, mask, attrs: F.ops.dropout(dout, mask, attrs=attrs))


# ---- layer_norm -----------------------------------------------------------------------------------
def _stat_dtype(d):
    """Means and inverse standard deviations of float16 data are kept in float32."""
    return dt.float32 if d is dt.float16 else d


def _check_flags(ctx, flags):
    for attr, name in flags:
        if ctx.attrs[attr] != ctx.has_input(name):
            raise ctx.error(f"attr {attr}={ctx.attrs[attr]} does not match whether input '{name}' is given "
                            f"(Note [Optional inputs of kernels])")


def _begin_norm_axis(ctx, x):
    axis = ctx.attrs["begin_norm_axis"]
    if not 0 <= axis < len(x):
        raise ctx.error(f"begin_norm_axis {axis} is out of range for a tensor of {len(x)} dimension(s)")
    return axis


def _layer_norm_shape(ctx):
    _check_flags(ctx, (("scale", "gamma"), ("center", "beta")))
    x = ctx.shape("x")
    axis = _begin_norm_axis(ctx, x)
    for name in ("gamma", "beta"):
        if ctx.has_input(name):
            if tuple(ctx.shape(name)) != tuple(x[axis:]):
                raise ctx.error(f"{name} must have the normalized shape {_dims(x[axis:])}, got "
                                f"{_dims(ctx.shape(name))}")
            if ctx.dtype(name) is not ctx.dtype("x"):
                raise ctx.error(f"{name} must have the dtype of x ({ctx.dtype('x').name}), got {ctx.dtype(name).name}")
    return x, x[:axis], x[:axis]


def _layer_norm_dtype(ctx):
    d = ctx.dtype("x")
    return d, _stat_dtype(d), _stat_dtype(d)


register_user_op("layer_norm", inputs=["x", Arg("gamma", optional=True), Arg("beta", optional=True)],
                 outputs=["y", "mean", "inv_variance"],
                 attrs={"begin_norm_axis": ("int64", 1), "epsilon": ("double", 1e-5), "center": ("bool", False),
                        "scale": ("bool", False)},
                 infer_shape=_layer_norm_shape, infer_dtype=_layer_norm_dtype)


def _check_layer_norm_stats(ctx):
    x = _same_as(ctx, "x", "dy")
    axis = _begin_norm_axis(ctx, x)
    for name in ("mean", "inv_variance"):
        if tuple(ctx.shape(name)) != tuple(x[:axis]) or ctx.dtype(name) is not _stat_dtype(ctx.dtype("x")):
            raise ctx.error(f"{name} must have shape {_dims(x[:axis])} and dtype {_stat_dtype(ctx.dtype('x')).name}, "
                            f"got {_dims(ctx.shape(name))} and {ctx.dtype(name).name}")
    return x, axis


def _layer_norm_grad_shape(ctx):
    x, axis = _check_layer_norm_stats(ctx)
    if ctx.has_input("gamma") and tuple(ctx.shape("gamma")) != tuple(x[axis:]):
        raise ctx.error(f"gamma must have the normalized shape {_dims(x[axis:])}, got {_dims(ctx.shape('gamma'))}")
    return x


def _layer_norm_param_grad_shape(ctx):
    x, axis = _check_layer_norm_stats(ctx)
    return x[axis:], x[axis:]


def _two_of_same_dtype(ctx):
    d = ctx.input_metas[0].dtype
    return d, d


register_user_op("layer_norm_grad", inputs=["dy", "x", "mean", "inv_variance", Arg("gamma", optional=True)],
                 outputs=["dx"], attrs={"begin_norm_axis": ("int64", 1)},
                 infer_shape=_layer_norm_grad_shape, infer_dtype=same_dtype)
register_user_op("layer_norm_param_grad", inputs=["dy", "x", "mean", "inv_variance"],
                 outputs=["gamma_diff", "beta_diff"], attrs={"begin_norm_axis": ("int64", 1)},
                 infer_shape=_layer_norm_param_grad_shape, infer_dtype=_two_of_same_dtype)


def _layer_norm_backward(needs, dy, x, mean, inv_variance, gamma, center, begin_norm_axis):
    """dx from ``layer_norm_grad``; d gamma = sum(dy * x_hat), d beta = sum(dy) over the leading dims, both from
    one ``layer_norm_param_grad``. The inputs: x, then gamma and beta when given."""
    dx = (F.ops.layer_norm_grad(*_given(dy, x, mean, inv_variance, gamma), begin_norm_axis=begin_norm_axis)
          if needs[0] else None)
    param_needs = needs[1:]
    if not any(param_needs):
        return (dx, *[None] * len(param_needs))
    d_gamma, d_beta = F.ops.layer_norm_param_grad(dy, x, mean, inv_variance, begin_norm_axis=begin_norm_axis)
    params = ((d_gamma,) if gamma is not None else ()) + ((d_beta,) if center else ())
    return (dx, *[g if n else None for g, n in zip(params, param_needs)])


derivative("layer_norm", joint=_layer_norm_backward)
_no_double_backward("layer_norm_grad", "layer_norm")
_no_double_backward("layer_norm_param_grad", "layer_norm")


# ---- batch_norm (channels at dim 1) -----------------------------------------------------------------
def _channels(ctx, x):
    if len(x) < 2:
        raise ctx.error(f"expected an input of at least 2 dimensions (N, C, ...), got {_dims(x)}")
    return x[1]


def _check_channel_vectors(ctx, names, c, dtype):
    for name in names:
        if ctx.has_input(name):
            if tuple(ctx.shape(name)) != (c,):
                raise ctx.error(f"{name} should contain {c} elements, got shape {_dims(ctx.shape(name))}")
            if ctx.dtype(name) is not dtype:
                raise ctx.error(f"{name} must have the dtype of the input ({dtype.name}), got {ctx.dtype(name).name}")


def _bn_stats_shape(ctx):
    c = _channels(ctx, ctx.shape("x"))
    return (c,), (c,)


register_user_op("batch_norm_stats", inputs=["x"], outputs=["mean", "var"], infer_shape=_bn_stats_shape,
                 infer_dtype=_two_of_same_dtype)
# mean = sum(x) / n, var = sum((x - mean)^2) / n per channel: dx = (d mean + 2 d var (x - mean)) / n.
derivative("batch_norm_stats", x=lambda dmean, dvar, x, mean: F.ops.batch_norm_stats_grad(x, mean, dmean, dvar))


def _bn_stats_grad_shape(ctx):
    x = ctx.shape("x")
    _check_channel_vectors(ctx, ("mean", "mean_diff", "var_diff"), _channels(ctx, x), ctx.dtype("x"))
    return x


register_user_op("batch_norm_stats_grad", inputs=["x", "mean", "mean_diff", "var_diff"], outputs=["dx"],
                 infer_shape=_bn_stats_grad_shape, infer_dtype=same_dtype)
_no_double_backward("batch_norm_stats_grad", "batch_norm")


def _bn_elemt_shape(ctx):
    _check_flags(ctx, (("scale", "weight"), ("center", "bias")))
    x = ctx.shape("x")
    _check_channel_vectors(ctx, ("mean", "var", "weight", "bias"), _channels(ctx, x), ctx.dtype("x"))
    return x


register_user_op("batch_norm_elemt", inputs=["x", "mean", "var", Arg("weight", optional=True),
                                              Arg("bias", optional=True)],
                 outputs=["y"], attrs={"epsilon": ("double", 1e-5), "center": ("bool", False), "scale": ("bool", False)},
                 infer_shape=_bn_elemt_shape, infer_dtype=same_dtype)


def _bn_elemt_grad_shape(ctx):
    x = _same_as(ctx, "x", "dy")
    c = _channels(ctx, x)
    _check_channel_vectors(ctx, ("mean", "var", "weight"), c, ctx.dtype("x"))
    return x, (c,), (c,), (c,), (c,)


def _five_of_same_dtype(ctx):
    return (ctx.dtype("x"),) * 5


register_user_op("batch_norm_elemt_grad", inputs=["dy", "x", "mean", "var", Arg("weight", optional=True)],
                 outputs=["dx", "mean_diff", "var_diff", "weight_diff", "bias_diff"],
                 attrs={"epsilon": ("double", 1e-5)}, infer_shape=_bn_elemt_grad_shape, infer_dtype=_five_of_same_dtype)


def _batch_norm_elemt_backward(needs, dy, x, mean, var, weight, center, epsilon):
    """y = (x - mean) / sqrt(var + eps) * weight + bias: every input's grad from one ``batch_norm_elemt_grad``.
    The inputs: x, mean, var, then weight and bias when given."""
    dx, d_mean, d_var, d_weight, d_bias = F.ops.batch_norm_elemt_grad(*_given(dy, x, mean, var, weight),
                                                                      epsilon=epsilon)
    grads = (dx, d_mean, d_var) + ((d_weight,) if weight is not None else ()) + ((d_bias,) if center else ())
    return [g if n else None for g, n in zip(grads, needs)]


derivative("batch_norm_elemt", joint=_batch_norm_elemt_backward)
_no_double_backward("batch_norm_elemt_grad", "batch_norm")


def _running_stat_shape(ctx):
    return _same_as(ctx, "running", "value")


register_user_op("running_stat_update", inputs=["running", "value"], outputs=["out"], no_grad=True,
                 attrs={"momentum": ("double", 0.1), "value_scale": ("double", 1.0)},
                 infer_shape=_running_stat_shape, infer_dtype=same_dtype)


# ---- embedding ------------------------------------------------------------------------------------
def _check_indices(ctx):
    d = ctx.dtype("indices")
    if d is not _INT64 and d is not dt.int32:
        raise ctx.error(f"indices must be int64 or int32, got {d.name}")


def _embedding_shape(ctx):
    w = ctx.shape("weight")
    if len(w) != 2:
        raise ctx.error(f"'weight' must be 2-D, got shape {_dims(w)}")
    _check_indices(ctx)
    return (*ctx.shape("indices"), w[1])


# padding_idx (-1: none) and scale_grad_by_freq only change the gradient; they are attrs so backward
# (and a captured graph) sees them.
register_user_op("embedding", inputs=["weight", "indices"], outputs=["out"],
                 attrs={"padding_idx": ("int64", -1), "scale_grad_by_freq": ("bool", False)},
                 infer_shape=_embedding_shape, infer_dtype=same_dtype)


def _embedding_grad_shape(ctx):
    _check_indices(ctx)
    dy, idx = ctx.shape("dy"), ctx.shape("indices")
    if len(dy) != len(idx) + 1 or tuple(dy[:-1]) != tuple(idx):
        raise ctx.error(f"dy must have shape indices.shape + (embedding_dim,), got {_dims(dy)} for indices "
                        f"{_dims(idx)}")
    return ctx.attrs["num_weights"], dy[-1]


register_user_op("embedding_grad", inputs=["dy", "indices"], outputs=["dx"],
                 attrs={"num_weights": ("int64", 0), "padding_idx": ("int64", -1),
                        "scale_grad_by_freq": ("bool", False)},
                 infer_shape=_embedding_grad_shape, infer_dtype=same_dtype)
def _embedding_weight_grad(dout, indices, weight_meta, padding_idx, scale_grad_by_freq):
    """d weight: each output row's grad added into the row it was taken from; row padding_idx stays zero. A
    global weight split by rows gets it in its layout, each rank computing only its rows (Note
    [Vocab-parallel embedding] in interpreters/sbp_rules_nn.py); not in a graph capture, where the op's
    signature decides."""
    m = weight_meta
    out = None
    if m.key_set & GLOBAL_KEY_SET and not dout._key_set & LAZY_KEY_SET and any(
            s.kind == "S" and s.dim == 0 for s in m.nd_sbp):
        out = (F.zeros(m.shape, dtype=m.dtype, placement=m.placement, sbp=m.nd_sbp),)
    return F.ops.embedding_grad(dout, indices, out=out, num_weights=m.shape[0], padding_idx=padding_idx,
                                scale_grad_by_freq=scale_grad_by_freq)


derivative("embedding", weight=_embedding_weight_grad)
_no_double_backward("embedding_grad", "embedding")


# ---- one_hot ----------------------------------------------------------------------------------------
def _int64_dtype(ctx):
    return _INT64


def _one_hot_shape(ctx):
    depth = ctx.attrs["depth"]
    if depth < 0:
        raise ctx.error(f"depth must be non-negative, got {depth}")
    return (*ctx.shape("indices"), depth)


register_user_op("one_hot", inputs=["indices"], outputs=["out"], attrs={"depth": ("int64", 0)}, no_grad=True,
                 infer_shape=_one_hot_shape, infer_dtype=_int64_dtype)


def _scalar_shape(ctx):
    return ()


# The number of classes one_hot infers (max + 1): a value, read with .item() (its shape depends on it).
register_user_op("one_hot_num_classes", inputs=["indices"], outputs=["out"], no_grad=True,
                 infer_shape=_scalar_shape, infer_dtype=_int64_dtype)


# ---- attention mask bias ------------------------------------------------------------------------------
def _attn_bias_shape(ctx):
    causal = ctx.attrs["causal_shape"]
    if ctx.has_input("mask"):
        if ctx.dtype("mask") is not _BOOL:
            raise ctx.error(f"mask must be a bool tensor, got {ctx.dtype('mask').name}")
        mask = ctx.shape("mask")
        return broadcast_shapes(ctx.op_type, mask, causal) if causal else mask
    if len(causal) != 2:
        raise ctx.error(f"without a mask, causal_shape must be (L, S), got {_dims(causal)}")
    return causal


def _attn_bias_dtype(ctx):
    d = ctx.attrs["dtype"]
    if not d.is_floating_point:
        raise ctx.error(f"dtype must be floating, got {d.name}")
    return d


# 0 where attention is allowed, -inf where not: not by the bool mask (if given) or above the diagonal
# of the (L, S) causal_shape (if given).
register_user_op("attn_mask_bias", inputs=[Arg("mask", optional=True)], outputs=["out"], no_grad=True,
                 attrs={"causal_shape": ("shape", ()), "dtype": ("data_type", dt.float32),
                        "device": ("device", "cpu")},
                 infer_shape=_attn_bias_shape, infer_dtype=_attn_bias_dtype)


# ---- scaled_dot_product_attention ------------------------------------------------------------------------
# Note [Fused attention]
# ``scaled_dot_product_attention(query, key, value, mask?)`` computes softmax(query key^T * scale + bias) value
# in one kernel: the scores, the causal mask (``is_causal``: key j <= query i, top-left aligned) or the given
# ``mask`` (bool: attend where True; floating: added), the softmax (0 on a row masked everywhere, PyTorch's
# ``_safe_softmax``) and the weighted sum, in place on one (..., L, S) buffer. It returns that softmax,
# ``attn``, as a second output: backward reads it instead of recomputing the scores. query (..., L, E), key
# (..., S, E) and value (..., S, Ev) have the same leading dims. ``scaled_dot_product_attention_grad``
# gives dquery, dkey and dvalue in one kernel from dout and dattn (dattn is zeros unless a double backward
# differentiates through attn). Its own rows (double backward) are functional formulas, so every order of
# derivative works. The functor (functors/nn.py) uses the op where it applies and the composite of matmuls
# and a softmax elsewhere (dropout, grouped heads, broadcast batch dims, dispatch modes, autocast, vmap).
def _attention_shapes(ctx, q, k, v):
    if len(q) < 2 or len(k) != len(q) or len(v) != len(q):
        raise ctx.error(f"query, key and value must have the same number of dimensions (at least 2), got "
                        f"{_dims(q)}, {_dims(k)} and {_dims(v)}")
    if q[:-2] != k[:-2] or q[:-2] != v[:-2] or k[-1] != q[-1] or v[-2] != k[-2]:
        raise ctx.error(f"expected query (..., L, E), key (..., S, E) and value (..., S, Ev) with the same leading "
                        f"dims, got {_dims(q)}, {_dims(k)} and {_dims(v)}")
    for name in ("key", "value"):
        if ctx.dtype(name) is not ctx.dtype("query"):
            raise ctx.error(f"{name} must have the dtype of query ({ctx.dtype('query').name}), got "
                            f"{ctx.dtype(name).name}")
    if not ctx.dtype("query").is_floating_point:
        raise ctx.error(f"query, key and value must be floating, got {ctx.dtype('query').name}")


def _attention_shape(ctx):
    q, k, v = ctx.shape("query"), ctx.shape("key"), ctx.shape("value")
    _attention_shapes(ctx, q, k, v)
    scores = (*q[:-1], k[-2])
    if ctx.has_input("mask"):
        if ctx.attrs["is_causal"]:
            raise ctx.error("mask must not be given with is_causal=True")
        md = ctx.dtype("mask")
        if md is not _BOOL and md is not ctx.dtype("query"):
            raise ctx.error(f"mask must be bool or have the dtype of query ({ctx.dtype('query').name}), got {md.name}")
        if broadcast_shapes(ctx.op_type, ctx.shape("mask"), scores) != scores:
            raise ctx.error(f"mask of shape {_dims(ctx.shape('mask'))} does not broadcast to the scores "
                            f"{_dims(scores)}")
    return (*q[:-1], v[-1]), scores


def _attention_dtype(ctx):
    d = ctx.dtype("query")
    return d, d


register_user_op("scaled_dot_product_attention", inputs=["query", "key", "value", Arg("mask", optional=True)],
                 outputs=["out", "attn"], attrs={"scale": ("double", 1.0), "is_causal": ("bool", False)},
                 infer_shape=_attention_shape, infer_dtype=_attention_dtype)


def _attention_grad_shape(ctx):
    q, k, v = ctx.shape("query"), ctx.shape("key"), ctx.shape("value")
    _attention_shapes(ctx, q, k, v)
    expected = {"dout": (*q[:-1], v[-1]), "dattn": (*q[:-1], k[-2]), "attn": (*q[:-1], k[-2])}
    for name, shape in expected.items():
        if ctx.shape(name) != shape or ctx.dtype(name) is not ctx.dtype("query"):
            raise ctx.error(f"{name} must have shape {_dims(shape)} and dtype {ctx.dtype('query').name}, got "
                            f"{_dims(ctx.shape(name))} and {ctx.dtype(name).name}")
    return q, k, v


def _three_of_query_dtype(ctx):
    d = ctx.dtype("query")
    return d, d, d


register_user_op("scaled_dot_product_attention_grad", inputs=["dout", "dattn", "query", "key", "value", "attn"],
                 outputs=["dquery", "dkey", "dvalue"], attrs={"scale": ("double", 1.0)},
                 infer_shape=_attention_grad_shape, infer_dtype=_three_of_query_dtype)


def _attention_backward(needs, dout, dattn, query, key, value, attn, scale):
    """dquery, dkey, dvalue from one grad op; the mask (when given) gets none."""
    dq, dk, dv = F.ops.scaled_dot_product_attention_grad(dout, dattn, query, key, value, attn, scale=scale)
    return (dq if needs[0] else None, dk if needs[1] else None, dv if needs[2] else None,
            *[None] * (len(needs) - 3))


def _t(x):
    return F.transpose(x, -2, -1)


def _attention_grad_backward(needs, ddquery, ddkey, ddvalue, dout, dattn, query, key, value, attn, scale):
    """The derivatives of the grad op's outputs (dQ = c dS K, dK = c dS^T Q, dV = P^T dO, with dP = dO V^T + dA,
    dS = P (dP - rowsum(P dP))) with respect to its inputs, for incoming gQ, gK, gV (absent ones are zeros)."""
    sum_keep = partial(_sum_keep, axis=-1)
    dp = F.add(F.matmul(dout, _t(value)), dattn)
    r = sum_keep(F.mul(attn, dp))
    ds = F.mul(attn, F.sub(dp, r))
    g_ds = F.mul_scalar(F.add(F.matmul(ddquery, _t(key)), F.matmul(query, _t(ddkey))), scale)
    pg = F.mul(attn, g_ds)
    g_dp = F.sub(pg, F.mul(attn, sum_keep(pg)))
    g_attn = F.sub(F.add(F.matmul(dout, _t(ddvalue)), F.mul(g_ds, F.sub(dp, r))), F.mul(sum_keep(pg), dp))
    grads = (F.add(F.matmul(attn, ddvalue), F.matmul(g_dp, value)),  # dout
             g_dp,  # dattn
             F.mul_scalar(F.matmul(ds, ddkey), scale),  # query
             F.mul_scalar(F.matmul(_t(ds), ddquery), scale),  # key
             F.matmul(_t(g_dp), dout),  # value
             g_attn)  # attn
    return tuple(g if n else None for g, n in zip(grads, needs))


derivative("scaled_dot_product_attention", name="ScaledDotProductAttention", joint=_attention_backward)
derivative("scaled_dot_product_attention_grad", name="ScaledDotProductAttentionBackward",
           joint=_attention_grad_backward)


# ---- ctc_loss -------------------------------------------------------------------------------------------------
# Note [CTC loss]
# ``ctc_loss(log_probs (T, N, C), targets, input_lengths (N,), target_lengths (N,))`` gives each sample's negative
# log-likelihood of its target under the connectionist temporal classification alignment model (Graves et al.
# 2006), by the log-space alpha recursion over the target extended with blanks; ``targets`` is (N, S) padded or
# the targets concatenated (1-D). With ``zero_infinity`` an impossible alignment (inf loss) gives 0 and a zero
# gradient. ``ctc_loss_grad`` recomputes alpha, runs the beta recursion and gives PyTorch's gradient,
# ``(exp(log_probs) - posterior occupancy of each class) * dloss`` (0 for t >= input_length). That is the
# gradient with respect to the logits of a log_softmax (the form PyTorch returns for log_probs): the
# derivative of the loss with respect to log_probs taken as free values is ``-occupancy`` instead; the two
# agree after log_softmax's backward, the way every CTC model calls it. The recursions loop over time and are
# vectorised over the batch and the extended target.
def _check_integral(ctx, name):
    if ctx.dtype(name) not in (_INT64, dt.int32):
        raise ctx.error(f"{name} must be integral (int64 or int32), got {ctx.dtype(name).name}")


def _ctc_shape(ctx):
    lp = ctx.shape("log_probs")
    if len(lp) != 3:
        raise ctx.error(f"log_probs must be (T, N, C), got shape {_dims(lp)}")
    if not ctx.dtype("log_probs").is_floating_point:
        raise ctx.error(f"log_probs must be floating, got {ctx.dtype('log_probs').name}")
    n, c = lp[1], lp[2]
    blank = ctx.attrs["blank"]
    if not 0 <= blank < c:
        raise ctx.error("blank must be in label range")
    for name in ("input_lengths", "target_lengths"):
        _check_integral(ctx, name)
        if tuple(ctx.shape(name)) != (n,):
            raise ctx.error(f"{name} must be of size batch_size ({n}), got shape {_dims(ctx.shape(name))}")
    _check_integral(ctx, "targets")
    t = ctx.shape("targets")
    if len(t) not in (1, 2) or (len(t) == 2 and t[0] != n):
        raise ctx.error(f"targets must be (N, S) with N = {n} or 1-D (concatenated), got shape {_dims(t)}")
    return (n,)


_CTC_ARGS = ["log_probs", "targets", "input_lengths", "target_lengths"]
_CTC_ATTRS = {"blank": ("int64", 0), "zero_infinity": ("bool", False)}
register_user_op("ctc_loss", inputs=_CTC_ARGS, outputs=["loss"], attrs=_CTC_ATTRS, infer_shape=_ctc_shape,
                 infer_dtype=same_dtype)


def _ctc_grad_shape(ctx):
    n = _ctc_shape(ctx)
    if tuple(ctx.shape("dloss")) != n or ctx.dtype("dloss") is not ctx.dtype("log_probs"):
        raise ctx.error(f"dloss must have shape {_dims(n)} and the dtype of log_probs, got {_dims(ctx.shape('dloss'))} "
                        f"and {ctx.dtype('dloss').name}")
    return ctx.shape("log_probs")


def _ctc_grad_dtype(ctx):
    return ctx.dtype("log_probs")


register_user_op("ctc_loss_grad", inputs=["dloss", *_CTC_ARGS], outputs=["dlog_probs"], attrs=_CTC_ATTRS,
                 infer_shape=_ctc_grad_shape, infer_dtype=_ctc_grad_dtype)
derivative("ctc_loss", log_probs=lambda dloss, log_probs, targets, input_lengths, target_lengths, attrs:
           F.ops.ctc_loss_grad(dloss, log_probs, targets, input_lengths, target_lengths, attrs=attrs))
_no_double_backward("ctc_loss_grad", "ctc_loss")
