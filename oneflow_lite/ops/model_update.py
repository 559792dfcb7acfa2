"""Optimizer update ops (OneFlow's ``model_update_ops``): the arithmetic of one optimizer step for one
parameter in one op, which the optimizers run in place under ``no_grad``: ``sgd_update``, ``adam_update``
(Adam and AdamW), ``momentum_update`` (SGD with momentum) and ``rmsprop_update``.

``sgd_update(model, model_diff, learning_rate?)``: OneFlow's formula, in the model's dtype::

    diff = scale * model_diff + l1 * sign(model) + l2 * model
    out  = model - learning_rate * (diff + weight_decay * model)

``learning_rate`` is the 1-element tensor input when given (an lr a graph reads at every run, cast to
the model's dtype), else the ``learning_rate_val`` attr. The cpu kernel takes floating models (float16
computed in float32 and rounded once). ``out`` is the new value of the model:
``optim.SGD`` dispatches the op with the parameter as its in-place output (OneFlow's op has no output
and writes the model), so eagerly the kernel's in-place form writes the parameter's buffer and a graph
assigns the result to the parameter's variable (Note [Optimizer steps in a graph]). Not differentiable.

Note [Update ops write their state]
``adam_update``, ``momentum_update`` and ``rmsprop_update`` also update optimizer state (moments, a
momentum buffer): as in OneFlow, whose ops mark those inputs mutable, their kernels write the state
inputs in place, and their one output is the new model, written in place like ``sgd_update``'s. An op
writing several outputs in place would cost a new array and a copy per output (neither the eager
interpreter nor the graph compiler writes a multi-output op in place), which would make the fused step
slower than the ops it replaces. So the state tensors are written behind the dispatcher's back: their
versions are not bumped, and a graph binds them as variables it never assigns. The ops are only for the
optimizers, which own the state: each is called once per parameter and step, never folded (the model
is a trainable variable, so no call has constant inputs only). Scalars that change every step come as
tensors (the step count, a scheduled lr), so the attrs of a call stay the same from step to step.
"""

from __future__ import annotations

from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.ops.common import same_dtype


def _dims(shape) -> str:
    return str(list(shape))


def _sgd_update_shape(ctx):
    shape, dtype = ctx.shape("model"), ctx.dtype("model")
    if ctx.shape("model_diff") != shape:
        raise ctx.error(f"model_diff must have the model's shape {_dims(shape)}, got {_dims(ctx.shape('model_diff'))}")
    if ctx.dtype("model_diff") is not dtype:
        raise ctx.error(f"model_diff must have the model's dtype ({dtype.name}), got {ctx.dtype('model_diff').name}")
    if ctx.has_input("learning_rate"):
        lr_shape, lr_dtype = ctx.shape("learning_rate"), ctx.dtype("learning_rate")
        if any(d != 1 for d in lr_shape):
            raise ctx.error(f"learning_rate must have one element, got shape {_dims(lr_shape)}")
        if not lr_dtype.is_floating_point:
            raise ctx.error(f"learning_rate must have a floating dtype, got {lr_dtype.name}")
    return shape


register_user_op("sgd_update", inputs=["model", "model_diff", Arg("learning_rate", optional=True)], outputs=["out"],
                 attrs={"learning_rate_val": ("double", 0.0), "scale": ("double", 1.0), "l1": ("double", 0.0),
                        "l2": ("double", 0.0), "weight_decay": ("double", 0.0)},
                 no_grad=True, infer_shape=_sgd_update_shape, infer_dtype=same_dtype)


def _update_shape(ctx, *state: str):
    """The shape of an update op whose ``state`` inputs (those given) have the model's shape and dtype, and whose
    ``learning_rate`` and ``step`` (when given) are 1-element floating tensors."""
    shape, dtype = ctx.shape("model"), ctx.dtype("model")
    for name in ("model_diff", *state):
        if not ctx.has_input(name):
            continue
        if ctx.shape(name) != shape:
            raise ctx.error(f"{name} must have the model's shape {_dims(shape)}, got {_dims(ctx.shape(name))}")
        if ctx.dtype(name) is not dtype:
            raise ctx.error(f"{name} must have the model's dtype ({dtype.name}), got {ctx.dtype(name).name}")
    for name in ("learning_rate", "step", "skip_if"):
        if ctx.has_input(name):
            if any(d != 1 for d in ctx.shape(name)):
                raise ctx.error(f"{name} must have one element, got shape {_dims(ctx.shape(name))}")
            if (name == "skip_if") == ctx.dtype(name).is_floating_point:
                kind = "an integer or bool" if name == "skip_if" else "a floating"
                raise ctx.error(f"{name} must have {kind} dtype, got {ctx.dtype(name).name}")
    return shape


def _given_when(ctx, name: str, when: str, flag: bool) -> None:
    """Input ``name`` must be given exactly when ``flag`` (the attr condition ``when``) holds."""
    if ctx.has_input(name) != flag:
        raise ctx.error(f"{name} must be given exactly when {when}; {when} is {flag} but {name} is "
                        f"{'missing' if flag else 'given'}")


def _adam_update_shape(ctx):
    _given_when(ctx, "max_v", "amsgrad", bool(ctx.attr("amsgrad")))
    _given_when(ctx, "step", "do_bias_correction", bool(ctx.attr("do_bias_correction")))
    return _update_shape(ctx, "m", "v", "max_v")


def _momentum_update_shape(ctx):
    return _update_shape(ctx, "momentum")


def _rmsprop_update_shape(ctx):
    _given_when(ctx, "mean_gradient", "centered", bool(ctx.attr("centered")))
    _given_when(ctx, "momentum_buffer", "momentum > 0", ctx.attr("momentum") > 0)
    return _update_shape(ctx, "mean_square", "mean_gradient", "momentum_buffer")


_LR_ATTRS = {"learning_rate_val": ("double", 0.0), "scale": ("double", 1.0), "l2": ("double", 0.0)}

# Note [skip_if]
# ``adam_update``, ``momentum_update`` and ``rmsprop_update`` take OneFlow's optional ``skip_if``, a one-element
# integer or bool tensor read when the op runs: when it is non-zero the op changes nothing (the model's new
# value is the old one, the state inputs are not written). nn.Graph's dynamic loss scaling passes the count of
# non-finite gradients (Note [Graph AMP] in graph/amp.py), so a step with an inf or NaN gradient is skipped
# inside the job, without reading the count into Python. It is the last input; the kernels find it by its
# dtype (the other one-element inputs, ``step`` and ``learning_rate``, are floating).
_SKIP_IF = Arg("skip_if", optional=True)

# adam_update: m, v (and max_v with amsgrad) are written in place (Note [Update ops write their state]).
#   g = scale * model_diff + l2 * model;  m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
#   max_v = max(max_v, v) (amsgrad; used for v below);  with t = step: bc1 = 1 - beta1^t, bc2 = 1 - beta2^t
#   model = model * (1 - lr * weight_decay) - lr / bc1 * m / (sqrt(v) / sqrt(bc2) + epsilon)
register_user_op("adam_update", inputs=["model", "model_diff", "m", "v", Arg("max_v", optional=True),
                                        Arg("step", optional=True), Arg("learning_rate", optional=True), _SKIP_IF],
                 outputs=["out"], attrs={**_LR_ATTRS, "beta1": ("double", 0.9), "beta2": ("double", 0.999),
                                         "epsilon": ("double", 1e-8), "weight_decay": ("double", 0.0),
                                         "amsgrad": ("bool", False), "do_bias_correction": ("bool", True)},
                 no_grad=True, infer_shape=_adam_update_shape, infer_dtype=same_dtype)

# momentum_update: the momentum buffer b is written in place.
#   g = scale * model_diff + l2 * model;  b = beta * b + (1 - dampening) * g
#   model = model - lr * (g + beta * b if nesterov else b)
register_user_op("momentum_update", inputs=["model", "model_diff", "momentum", Arg("learning_rate", optional=True),
                                            _SKIP_IF],
                 outputs=["out"], attrs={**_LR_ATTRS, "beta": ("double", 0.9), "dampening": ("double", 0.0),
                                         "nesterov": ("bool", False)},
                 no_grad=True, infer_shape=_momentum_update_shape, infer_dtype=same_dtype)

# rmsprop_update: mean_square v (mean_gradient a when centered, momentum_buffer b when momentum > 0) in place.
#   g = scale * model_diff + l2 * model;  v = decay_rate * v + (1 - decay_rate) * g * g
#   a = lerp(a, g, 1 - decay_rate);  d = sqrt(v - a * a if centered else v) + epsilon
#   b = momentum * b + g / d; model = model - lr * b   (momentum > 0);   model = model - lr * g / d   (otherwise)
register_user_op("rmsprop_update", inputs=["model", "model_diff", "mean_square", Arg("mean_gradient", optional=True),
                                           Arg("momentum_buffer", optional=True), Arg("learning_rate", optional=True),
                                           _SKIP_IF],
                 outputs=["out"], attrs={**_LR_ATTRS, "decay_rate": ("double", 0.99), "epsilon": ("double", 1e-8),
                                         "centered": ("bool", False), "momentum": ("double", 0.0)},
                 no_grad=True, infer_shape=_rmsprop_update_shape, infer_dtype=same_dtype)
