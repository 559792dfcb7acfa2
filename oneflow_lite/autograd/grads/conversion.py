"""Grad functions of the conversion ops: cast (dtype) and copy (device)."""

from __future__ import annotations

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import cast, copy


@register_op_grad("cast")
class CastGrad(OpExprGradFunction):
    """The grad goes back in the input's dtype."""

    name = "Cast"

    def capture(self, state, inputs, outputs, attrs):
        state.dtype = inputs[0]._meta.dtype

    def apply(self, state, out_grads):
        return (cast(out_grads[0], state.dtype) if state.needs_input_grad[0] else None,)


@register_op_grad("copy")
class CopyGrad(OpExprGradFunction):
    """The grad goes back to the input's device."""

    name = "Copy"

    def capture(self, state, inputs, outputs, attrs):
        state.device = inputs[0]._meta.device

    def apply(self, state, out_grads):
        return (copy(out_grads[0], state.device) if state.needs_input_grad[0] else None,)
