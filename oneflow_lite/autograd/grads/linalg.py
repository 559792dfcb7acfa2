"""Grad functions of ``linear``, ``baddbmm`` and ``einsum`` (``mm`` / ``bmm`` / ``dot`` are ``matmul``,
``outer`` is a multiply: their grads are those ops')."""

from __future__ import annotations

from math import prod

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import matmul, mul, mul_scalar, reduce_to, reshape, transpose
from oneflow_lite.functors.registry import get_functor

_einsum = get_functor("Einsum")


@register_op_grad("linear")
class LinearGrad(OpExprGradFunction):
    """y = x @ W.T + b with x (*, in). W (out, in): dx = dy @ W, dW = dy2.T @ x2 (the batch dims flattened:
    reshapes only when x is not 2-D); W (in,): dx = dy[..., None] * W, dW = dy2 @ x2. db = dy summed to b's
    shape (for a (out,) bias one ``sum`` over the batch dims)."""

    name = "Linear"

    def capture(self, state, inputs, outputs, attrs):
        needs = state.needs_input_grad
        x, w = inputs[0], inputs[1]
        state.x_shape, state.w_shape = x._meta.shape, w._meta.shape
        state.b_shape = inputs[2]._meta.shape if len(inputs) > 2 else None
        state.save_for_backward(w if needs[0] else None, x if needs[1] else None)

    def apply(self, state, out_grads):
        dy = out_grads[0]
        w, x = state.saved_tensors
        x_shape, w_shape = state.x_shape, state.w_shape
        dx = dw = db = None
        if w is not None:
            if len(w_shape) == 2:
                dx = matmul(dy, w)
            else:
                dx = mul(reshape(dy, (*x_shape[:-1], 1)), w)
        if x is not None:
            dy2 = dy
            if len(x_shape) != 2:
                rows = prod(x_shape[:-1])
                x = reshape(x, (rows, x_shape[-1]))
                dy2 = reshape(dy, (rows, w_shape[0]) if len(w_shape) == 2 else (rows,))
            dw = matmul(transpose(dy2, 0, 1), x) if len(w_shape) == 2 else matmul(dy2, x)
        if state.b_shape is not None and state.needs_input_grad[2]:
            db = reduce_to(dy, state.b_shape)
        return (dx, dw) if state.b_shape is None else (dx, dw, db)


@register_op_grad("baddbmm")
class BaddbmmGrad(OpExprGradFunction):
    """out = beta * input + alpha * b1 @ b2: d_input = beta * dy summed to input's shape,
    d_b1 = alpha * dy @ b2^T, d_b2 = alpha * b1^T @ dy."""

    name = "Baddbmm"

    def capture(self, state, inputs, outputs, attrs):
        needs = state.needs_input_grad
        state.alpha, state.beta = attrs["alpha"], attrs["beta"]
        state.in_shape = inputs[0]._meta.shape
        state.save_for_backward(inputs[2] if needs[1] else None, inputs[1] if needs[2] else None)

    def apply(self, state, out_grads):
        dy = out_grads[0]
        b2, b1 = state.saved_tensors
        alpha, beta = state.alpha, state.beta
        d_in = d1 = d2 = None
        if state.needs_input_grad[0]:
            d_in = reduce_to(dy if beta == 1 else mul_scalar(dy, beta), state.in_shape)
        if b2 is not None:
            d1 = matmul(dy, transpose(b2, 1, 2))
            d1 = d1 if alpha == 1 else mul_scalar(d1, alpha)
        if b1 is not None:
            d2 = matmul(transpose(b1, 1, 2), dy)
            d2 = d2 if alpha == 1 else mul_scalar(d2, alpha)
        return (d_in, d1, d2)


@register_op_grad("einsum")
class EinsumGrad(OpExprGradFunction):
    """The gradient of operand i is the einsum of dy with the other operands whose output is operand i's
    subscripts (and shape): ``out,others->sub_i`` (Note [Normalised einsum equations] in ops/linalg.py)."""

    name = "Einsum"

    def capture(self, state, inputs, outputs, attrs):
        lhs, out = attrs["equation"].split("->")
        state.subs, state.out = lhs.split(","), out
        state.shapes = tuple(t._meta.shape for t in inputs)
        needs = state.needs_input_grad
        # operand j is needed for the gradient of every other operand
        state.save_for_backward(*(t if any(needs[:j] + needs[j + 1:]) else None for j, t in enumerate(inputs)))

    def apply(self, state, out_grads):
        dy = out_grads[0]
        saved = state.saved_tensors
        subs = state.subs
        grads = []
        for i, need in enumerate(state.needs_input_grad):
            if not need:
                grads.append(None)
                continue
            others = [j for j in range(len(subs)) if j != i]
            equation = ",".join([state.out] + [subs[j] for j in others]) + "->" + subs[i]
            grads.append(_einsum.raw(equation, [dy] + [saved[j] for j in others], state.shapes[i]))
        return tuple(grads)
