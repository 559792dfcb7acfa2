"""Grad functions of the shape ops (reshape, transpose, slice) and of slice_grad."""

from __future__ import annotations

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import OpCaller, reshape, slice_
from oneflow_lite.framework.attr import AttrMap

_permute = OpCaller("transpose")
_slice_grad = OpCaller("slice_grad")


@register_op_grad("reshape")
class ReshapeGrad(OpExprGradFunction):
    name = "Reshape"

    def capture(self, state, inputs, outputs, attrs):
        state.in_shape = tuple(inputs[0]._meta.shape)

    def apply(self, state, out_grads):
        return (reshape(out_grads[0], state.in_shape) if state.needs_input_grad[0] else None,)


@register_op_grad("transpose")
class TransposeGrad(OpExprGradFunction):
    name = "Transpose"

    def capture(self, state, inputs, outputs, attrs):
        perm = attrs["perm"]
        inverse = [0] * len(perm)
        for i, p in enumerate(perm):
            inverse[p] = i
        state.attrs = AttrMap({"perm": tuple(inverse)})

    def apply(self, state, out_grads):
        return (_permute(out_grads[0], attrs=state.attrs) if state.needs_input_grad[0] else None,)


@register_op_grad("slice")
class SliceGrad(OpExprGradFunction):
    name = "Slice"

    def capture(self, state, inputs, outputs, attrs):
        state.attrs = AttrMap({"like_shape": tuple(inputs[0]._meta.shape), "start": attrs["start"],
                               "stop": attrs["stop"], "step": attrs["step"]})

    def apply(self, state, out_grads):
        return (_slice_grad(out_grads[0], attrs=state.attrs) if state.needs_input_grad[0] else None,)


@register_op_grad("slice_grad")
class SliceGradGrad(OpExprGradFunction):
    name = "SliceGrad"

    def capture(self, state, inputs, outputs, attrs):
        state.slices = (attrs["start"], attrs["stop"], attrs["step"])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        return (slice_(out_grads[0], *state.slices),)
