"""Grad functions of the arithmetic, matmul and reduction ops.

Comparison ops have bool outputs, so they are never recorded (only floating
outputs require grad) and need no grad function.
"""

from __future__ import annotations

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import (
    div,
    div_scalar,
    expand_reduced,
    matmul,
    mul,
    mul_scalar,
    neg,
    reduce_to,
    reshape,
    scalar_operand,
    transpose,
)


# ---- tensor-tensor (broadcasting) ------------------------------------------------------------------
class _Broadcast(OpExprGradFunction):
    """Remembers the input shapes; the grad of each operand is reduced back to its shape."""

    def capture(self, state, inputs, outputs, attrs):
        state.x_shape = inputs[0]._meta.shape
        state.y_shape = inputs[1]._meta.shape


@register_op_grad("broadcast_add")
class BroadcastAddGrad(_Broadcast):
    name = "Add"

    def apply(self, state, out_grads):
        dz = out_grads[0]
        nx, ny = state.needs_input_grad
        return (reduce_to(dz, state.x_shape) if nx else None, reduce_to(dz, state.y_shape) if ny else None)


@register_op_grad("broadcast_sub")
class BroadcastSubGrad(_Broadcast):
    name = "Sub"

    def apply(self, state, out_grads):
        dz = out_grads[0]
        nx, ny = state.needs_input_grad
        return (reduce_to(dz, state.x_shape) if nx else None,
                reduce_to(neg(dz), state.y_shape) if ny else None)


@register_op_grad("broadcast_mul")
class BroadcastMulGrad(_Broadcast):
    name = "Mul"

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        nx, ny = state.needs_input_grad
        state.save_for_backward(inputs[1] if nx else None, inputs[0] if ny else None)

    def apply(self, state, out_grads):
        dz = out_grads[0]
        y, x = state.saved_tensors
        return (None if y is None else reduce_to(mul(dz, y), state.x_shape),
                None if x is None else reduce_to(mul(dz, x), state.y_shape))


@register_op_grad("broadcast_div")
class BroadcastDivGrad(_Broadcast):
    """z = x / y: dx = dz / y, dy = -dz * z / y."""

    name = "Div"

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        ny = state.needs_input_grad[1]
        state.save_for_backward(inputs[1], outputs[0] if ny else None)

    def apply(self, state, out_grads):
        dz = out_grads[0]
        y, z = state.saved_tensors
        nx, ny = state.needs_input_grad
        return (reduce_to(div(dz, y), state.x_shape) if nx else None,
                reduce_to(neg(div(mul(dz, z), y)), state.y_shape) if ny else None)


# ---- tensor-scalar ---------------------------------------------------------------------------------
@register_op_grad("scalar_add")
class ScalarAddGrad(OpExprGradFunction):
    name = "ScalarAdd"

    def capture(self, state, inputs, outputs, attrs):
        pass

    def apply(self, state, out_grads):
        return (out_grads[0] if state.needs_input_grad[0] else None,)


@register_op_grad("scalar_mul")
class ScalarMulGrad(OpExprGradFunction):
    name = "ScalarMul"

    def capture(self, state, inputs, outputs, attrs):
        state.operand = scalar_operand(attrs)

    def apply(self, state, out_grads):
        return (mul_scalar(out_grads[0], state.operand) if state.needs_input_grad[0] else None,)


@register_op_grad("scalar_div")
class ScalarDivGrad(OpExprGradFunction):
    name = "ScalarDiv"

    def capture(self, state, inputs, outputs, attrs):
        state.operand = scalar_operand(attrs)

    def apply(self, state, out_grads):
        return (div_scalar(out_grads[0], state.operand) if state.needs_input_grad[0] else None,)


@register_op_grad("scalar_reverse_div")
class ScalarReverseDivGrad(OpExprGradFunction):
    """out = s / x: dx = -dout * out / x."""

    name = "ScalarReverseDiv"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[0], outputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        x, out = state.saved_tensors
        return (neg(div(mul(out_grads[0], out), x)),)


# ---- unary -----------------------------------------------------------------------------------------
@register_op_grad("negative")
class NegativeGrad(OpExprGradFunction):
    name = "Neg"

    def capture(self, state, inputs, outputs, attrs):
        pass

    def apply(self, state, out_grads):
        return (neg(out_grads[0]) if state.needs_input_grad[0] else None,)


@register_op_grad("exp")
class ExpGrad(OpExprGradFunction):
    name = "Exp"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(outputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (y,) = state.saved_tensors
        return (mul(out_grads[0], y),)


# ---- matmul ----------------------------------------------------------------------------------------
@register_op_grad("matmul")
class MatMulGrad(OpExprGradFunction):
    """PyTorch's matmul cases: a 1-D ``a`` is a row (1, k), a 1-D ``b`` a column (k, 1); then
    da = dout @ b^T and db = a^T @ dout, each summed over broadcast batch dims and reshaped back."""

    name = "MatMul"

    def capture(self, state, inputs, outputs, attrs):
        na, nb = state.needs_input_grad
        state.save_for_backward(inputs[1] if na else None, inputs[0] if nb else None)
        state.a_shape = inputs[0]._meta.shape
        state.b_shape = inputs[1]._meta.shape
        state.out_shape = outputs[0]._meta.shape

    def apply(self, state, out_grads):
        b, a = state.saved_tensors
        a_shape, b_shape = state.a_shape, state.b_shape
        a2_shape = a_shape if len(a_shape) > 1 else (1, a_shape[0])
        b2_shape = b_shape if len(b_shape) > 1 else (b_shape[0], 1)
        dout = out_grads[0]
        # dout with the dims dropped for 1-D operands put back: (..., n, m)
        kept = tuple(state.out_shape)
        if len(a_shape) == 1 and len(b_shape) == 1:
            kept = (1, 1)
        elif len(b_shape) == 1:
            kept = (*kept, 1)
        elif len(a_shape) == 1:
            kept = (*kept[:-1], 1, kept[-1])
        if kept != tuple(dout._meta.shape):
            dout = reshape(dout, kept)
        da = db = None
        if b is not None:
            b2 = b if len(b_shape) > 1 else reshape(b, b2_shape)
            da = matmul(dout, transpose(b2, -2, -1))
            da = reduce_to(da, a2_shape)
            if a2_shape != a_shape:
                da = reshape(da, a_shape)
        if a is not None:
            a2 = a if len(a_shape) > 1 else reshape(a, a2_shape)
            db = matmul(transpose(a2, -2, -1), dout)
            db = reduce_to(db, b2_shape)
            if b2_shape != b_shape:
                db = reshape(db, b_shape)
        return (da, db)


# ---- reductions ------------------------------------------------------------------------------------
@register_op_grad("reduce_sum")
class ReduceSumGrad(OpExprGradFunction):
    """dx = dout broadcast back over the reduced dims: an ``expand`` (a read-only view, as PyTorch's
    ``sum_backward``), after a reshape to the kept shape when a reduced dim that ``expand`` cannot add back
    (one after a kept dim) was dropped."""

    name = "Sum"

    def capture(self, state, inputs, outputs, attrs):
        m = inputs[0]._meta
        state.in_shape = m.shape
        axes = {a + m.ndim if a < 0 else a for a in attrs["axis"]}
        state.kept_shape = tuple(1 if i in axes else d for i, d in enumerate(m.shape))

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        return (expand_reduced(out_grads[0], state.kept_shape, state.in_shape),)
