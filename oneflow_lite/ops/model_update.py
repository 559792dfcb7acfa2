"""Optimizer update ops (OneFlow's ``model_update_ops``): the arithmetic of one optimizer step for one
parameter in one op, which the optimizers run in place under ``no_grad``.

``sgd_update(model, model_diff, learning_rate?)``: OneFlow's formula, in the model's dtype::

    diff = scale * model_diff + l1 * sign(model) + l2 * model
    out  = model - learning_rate * (diff + weight_decay * model)

``learning_rate`` is the 1-element tensor input when given (an lr a graph reads at every run, cast to
the model's dtype), else the ``learning_rate_val`` attr. The cpu kernel takes floating models (float16
computed in float32 and rounded once). ``out`` is the new value of the model:
``optim.SGD`` dispatches the op with the parameter as its in-place output (OneFlow's op has no output
and writes the model), so eagerly the kernel's in-place form writes the parameter's buffer and a graph
assigns the result to the parameter's variable (Note [Optimizer steps in a graph]). Not differentiable.
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
