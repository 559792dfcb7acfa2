"""The grad function of ``einsum`` (``linear`` and ``baddbmm`` have gradient rows in ops/linalg.py; ``mm`` /
``bmm`` / ``dot`` are ``matmul``, ``outer`` is a multiply: their grads are those ops')."""

from __future__ import annotations

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.functors.registry import get_functor

_einsum = get_functor("Einsum")


# A class: it saves operand j only when another operand needs a gradient; rows save a variadic input whole.
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
