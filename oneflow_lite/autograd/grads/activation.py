"""Grad functions of activation ops."""

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import OpCaller

relu_grad = OpCaller("relu_grad", ("dy", "y"), "dx")


@register_op_grad("relu")
class ReluGrad(OpExprGradFunction):
    """dx = dy where y > 0 (``relu_grad``), from the saved output."""

    name = "Relu"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(outputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (y,) = state.saved_tensors
        return (relu_grad(out_grads[0], y),)


@register_op_grad("relu_grad")
class ReluGradGrad(OpExprGradFunction):
    """relu_grad is linear in dy (with the mask of y) and piecewise constant in y."""

    name = "ReluGrad"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (y,) = state.saved_tensors
        return (relu_grad(out_grads[0], y), None)
