"""Grad functions of the shape ops of functors/shape.py beyond reshape / transpose / slice:
flatten, squeeze, expand_dims, expand, repeat, cat, stack, split, unbind, flip, roll, tril, triu,
pad and pad_grad.

The joining and splitting ops are each other's gradients: cat <-> split, stack <-> unbind
(the engine gives a multi-output node zeros for the outputs that got no gradient).
"""

from __future__ import annotations

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import OpCaller, reduce_to, reshape
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.functors.registry import get_functor

_sum = get_functor("ReduceSum")
_cat = get_functor("Cat")
_stack = get_functor("Stack")
_split = get_functor("SplitWithSizes")
_unbind = get_functor("Unbind")
_flip = get_functor("Flip")
_roll = get_functor("Roll")
_tril = get_functor("Tril")
_triu = get_functor("Triu")
_pad = OpCaller("pad")
_pad_grad = OpCaller("pad_grad")


class _ReshapeBack(OpExprGradFunction):
    """The gradient of a reshape-like op: the output gradient reshaped to the input's shape."""

    def capture(self, state, inputs, outputs, attrs):
        state.in_shape = tuple(inputs[0]._meta.shape)

    def apply(self, state, out_grads):
        return (reshape(out_grads[0], state.in_shape) if state.needs_input_grad[0] else None,)


@register_op_grad("flatten")
class FlattenGrad(_ReshapeBack):
    name = "Flatten"


@register_op_grad("squeeze")
class SqueezeGrad(_ReshapeBack):
    name = "Squeeze"


@register_op_grad("expand_dims")
class ExpandDimsGrad(_ReshapeBack):
    name = "Unsqueeze"


@register_op_grad("expand")
class ExpandGrad(OpExprGradFunction):
    """Summed over the dims expand added or stretched."""

    name = "Expand"

    def capture(self, state, inputs, outputs, attrs):
        state.in_shape = tuple(inputs[0]._meta.shape)

    def apply(self, state, out_grads):
        return (reduce_to(out_grads[0], state.in_shape) if state.needs_input_grad[0] else None,)


@register_op_grad("repeat")
class RepeatGrad(OpExprGradFunction):
    """dy of shape (r0 * s0, r1 * s1, ...) viewed as (r0, s0, r1, s1, ...) and summed over the r dims."""

    name = "Repeat"

    def capture(self, state, inputs, outputs, attrs):
        shape = tuple(inputs[0]._meta.shape)
        repeats = attrs["repeats"]
        padded = (1,) * (len(repeats) - len(shape)) + shape
        state.in_shape = shape
        state.split_shape = tuple(d for pair in zip(repeats, padded) for d in pair)
        state.axes = tuple(range(0, 2 * len(repeats), 2))

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        g = _sum(reshape(out_grads[0], state.split_shape), state.axes, False, None)
        return (reshape(g, state.in_shape),)


@register_op_grad("cat")
class CatGrad(OpExprGradFunction):
    name = "Cat"

    def capture(self, state, inputs, outputs, attrs):
        state.axis = attrs["axis"]
        state.sizes = tuple(t._meta.shape[state.axis] for t in inputs)

    def apply(self, state, out_grads):
        pieces = _split.raw(out_grads[0], state.sizes, state.axis)
        return tuple(g if need else None for g, need in zip(pieces, state.needs_input_grad))


@register_op_grad("split")
class SplitGrad(OpExprGradFunction):
    name = "Split"

    def capture(self, state, inputs, outputs, attrs):
        state.axis = attrs["axis"]

    def apply(self, state, out_grads):
        return (_cat.raw(list(out_grads), state.axis) if state.needs_input_grad[0] else None,)


@register_op_grad("stack")
class StackGrad(OpExprGradFunction):
    name = "Stack"

    def capture(self, state, inputs, outputs, attrs):
        state.axis = attrs["axis"]

    def apply(self, state, out_grads):
        pieces = _unbind.raw(out_grads[0], state.axis)
        return tuple(g if need else None for g, need in zip(pieces, state.needs_input_grad))


@register_op_grad("unbind")
class UnbindGrad(OpExprGradFunction):
    name = "Unbind"

    def capture(self, state, inputs, outputs, attrs):
        state.axis = attrs["axis"]

    def apply(self, state, out_grads):
        return (_stack.raw(list(out_grads), state.axis) if state.needs_input_grad[0] else None,)


@register_op_grad("flip")
class FlipGrad(OpExprGradFunction):
    name = "Flip"

    def capture(self, state, inputs, outputs, attrs):
        state.dims = attrs["dims"]

    def apply(self, state, out_grads):
        return (_flip(out_grads[0], state.dims) if state.needs_input_grad[0] else None,)


@register_op_grad("roll")
class RollGrad(OpExprGradFunction):
    """Rolled back by the opposite shifts."""

    name = "Roll"

    def capture(self, state, inputs, outputs, attrs):
        state.shifts = tuple(-s for s in attrs["shifts"])
        state.dims = attrs["dims"]

    def apply(self, state, out_grads):
        return (_roll(out_grads[0], state.shifts, state.dims) if state.needs_input_grad[0] else None,)


class _TriangleGrad(OpExprGradFunction):
    """The gradient is masked like the forward."""

    functor = None

    def capture(self, state, inputs, outputs, attrs):
        state.diagonal = attrs["diagonal"]

    def apply(self, state, out_grads):
        return (self.functor(out_grads[0], state.diagonal, False) if state.needs_input_grad[0] else None,)


@register_op_grad("tril")
class TrilGrad(_TriangleGrad):
    name = "Tril"
    functor = _tril


@register_op_grad("triu")
class TriuGrad(_TriangleGrad):
    name = "Triu"
    functor = _triu


class _PadAdjoint(OpExprGradFunction):
    """pad and pad_grad are each other's adjoints (Note [Pad modes] in ops/shape.py)."""

    caller = None

    def capture(self, state, inputs, outputs, attrs):
        state.attrs = AttrMap({name: attrs[name] for name in ("mode", "padding_before", "padding_after")})

    def apply(self, state, out_grads):
        return (self.caller(out_grads[0], attrs=state.attrs) if state.needs_input_grad[0] else None,)


@register_op_grad("pad")
class PadGrad(_PadAdjoint):
    name = "Pad"
    caller = _pad_grad


@register_op_grad("pad_grad")
class PadGradGrad(_PadAdjoint):
    name = "PadGrad"
    caller = _pad
