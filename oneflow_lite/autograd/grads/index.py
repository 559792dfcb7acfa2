"""Grad functions of the indexing ops (ops/index.py).

Each backward is itself made of indexing ops, so double backward works:
gather <-> scatter_add, index_select <-> index_add, masked_select <->
masked_select_grad, index <-> tensor_setitem (accumulating). Writes
(scatter, masked_fill, tensor_setitem) pass the gradient to the written tensor
except where they wrote, and to the written values where they landed.
count_nonzero and nonzero have integer outputs (never recorded); backward through
dim_scatter_mul (``reduce="multiply"``) raises, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import OpCaller, cast, mul, reduce_to, reshape, zeros
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.functors.indexing import index_encoded, write
from oneflow_lite.functors.registry import get_functor

_gather = get_functor("DimGather")
_scatter = get_functor("DimScatter")
_scatter_scalar = get_functor("DimScatterScalar")
_index_select = get_functor("IndexSelect")
_index_add = get_functor("IndexAdd")
_masked_fill = get_functor("MaskedFill")
_sum = get_functor("ReduceSum")
_slice_grad = OpCaller("slice_grad")
_masked_select = OpCaller("masked_select")
_masked_select_grad = OpCaller("masked_select_grad")


def _fit(g, shape):
    """``g`` (the block of ``shape`` starting at 0 that an index addressed) zero-padded to ``shape``."""
    gs = g._meta.shape
    if gs == shape:
        return g
    if not gs or not shape:  # one element either way
        return reshape(g, shape)
    n = len(shape)
    return _slice_grad(g, attrs=AttrMap({"like_shape": tuple(shape), "start": (0,) * n, "stop": tuple(gs),
                                         "step": (1,) * n}))


def _reduce_to_value(g, shape):
    """``g`` (the shape of an indexing result) summed to a value of ``shape`` broadcast into it (leading 1s of
    ``shape`` may exceed ``g``'s dims)."""
    stripped = tuple(shape)
    while stripped and stripped[0] == 1:
        stripped = stripped[1:]
    g = reduce_to(g, stripped)
    return g if stripped == tuple(shape) else reshape(g, shape)


# ---- gather / scatter -------------------------------------------------------------------------------
@register_op_grad("dim_gather")
class DimGatherGrad(OpExprGradFunction):
    """dx = scatter_add(zeros, dim, index, dy)."""

    name = "Gather"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.dim = attrs["dim"]
            state.x_meta = inputs[0]._meta
            state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (index,) = state.saved_tensors
        m = state.x_meta
        return (_scatter(zeros(m.shape, m.dtype, m.device), state.dim, index, out_grads[0], "add", False), None)


class _ScatterGrad(OpExprGradFunction):
    """dx = dy, zeroed where the update wrote (``overwrites``); dsrc = gather(dy) padded to src's shape."""

    overwrites = True

    def capture(self, state, inputs, outputs, attrs):
        state.dim = attrs["dim"]
        state.src_shape = inputs[2]._meta.shape if len(inputs) > 2 else None
        state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        g = out_grads[0]
        (index,) = state.saved_tensors
        needs = state.needs_input_grad
        dx = None
        if needs[0]:
            dx = _scatter_scalar(g, state.dim, index, 0, None, False) if self.overwrites else g
        if len(needs) < 3:
            return (dx, None)
        dsrc = _fit(_gather(g, state.dim, index), state.src_shape) if needs[2] else None
        return (dx, None, dsrc)


@register_op_grad("dim_scatter_update")
class DimScatterUpdateGrad(_ScatterGrad):
    name = "Scatter"


@register_op_grad("dim_scatter_add")
class DimScatterAddGrad(_ScatterGrad):
    name = "ScatterAdd"
    overwrites = False


@register_op_grad("dim_scatter_update_scalar")
class DimScatterUpdateScalarGrad(_ScatterGrad):
    name = "Scatter"


@register_op_grad("dim_scatter_add_scalar")
class DimScatterAddScalarGrad(_ScatterGrad):
    name = "ScatterAdd"
    overwrites = False


@register_op_grad("dim_scatter_mul")
class DimScatterMulGrad(OpExprGradFunction):
    """Not differentiable (as in PyTorch): backward through it raises."""

    name = "ScatterMul"

    def capture(self, state, inputs, outputs, attrs):
        pass

    def apply(self, state, out_grads):
        raise NotImplementedError("the derivative for 'scatter' with reduce='multiply' is not implemented")


@register_op_grad("dim_scatter_mul_scalar")
class DimScatterMulScalarGrad(DimScatterMulGrad):
    pass


# ---- index_select / index_add -------------------------------------------------------------------------
@register_op_grad("index_select")
class IndexSelectGrad(OpExprGradFunction):
    """dx = index_add(zeros, dim, index, dy)."""

    name = "IndexSelect"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.dim = attrs["dim"]
            state.x_meta = inputs[0]._meta
            state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (index,) = state.saved_tensors
        m = state.x_meta
        return (_index_add(zeros(m.shape, m.dtype, m.device), state.dim, index, out_grads[0], 1, False), None)


@register_op_grad("index_add")
class IndexAddGrad(OpExprGradFunction):
    """dx = dy; dsource = index_select(dy, dim, index)."""

    name = "IndexAdd"

    def capture(self, state, inputs, outputs, attrs):
        state.dim = attrs["dim"]
        state.source_shape = inputs[2]._meta.shape
        state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        g = out_grads[0]
        (index,) = state.saved_tensors
        nx, _, ns = state.needs_input_grad
        ds = None
        if ns:
            ds = _index_select(g, state.dim, index)
            if ds._meta.shape != state.source_shape:  # a 0-d input: source () or (1,)
                ds = reshape(ds, state.source_shape)
        return (g if nx else None, None, ds)


# ---- masked_fill / masked_select ------------------------------------------------------------------------
@register_op_grad("masked_fill")
class MaskedFillGrad(OpExprGradFunction):
    """dx = dy where the mask is False (summed back to x's shape when x was broadcast)."""

    name = "MaskedFill"

    def capture(self, state, inputs, outputs, attrs):
        state.x_shape = inputs[0]._meta.shape
        state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        (mask,) = state.saved_tensors
        dx = reduce_to(_masked_fill(out_grads[0], mask, 0, False), state.x_shape) if state.needs_input_grad[0] else None
        return (dx, None)


@register_op_grad("masked_fill_tensor")
class MaskedFillTensorGrad(MaskedFillGrad):
    """As masked_fill; dvalue = the sum of dy where the mask is True."""

    def apply(self, state, out_grads):
        g = out_grads[0]
        (mask,) = state.saved_tensors
        dx = reduce_to(_masked_fill(g, mask, 0, False), state.x_shape) if state.needs_input_grad[0] else None
        dv = _sum(mul(g, cast(mask, g._meta.dtype)), None, False, None) if state.needs_input_grad[2] else None
        return (dx, None, dv)


@register_op_grad("masked_select")
class MaskedSelectGrad(OpExprGradFunction):
    """dx = dy scattered to where the mask is True (masked_select_grad), summed back to x's shape."""

    name = "MaskedSelect"

    def capture(self, state, inputs, outputs, attrs):
        x, mask = inputs
        state.x_shape = x._meta.shape
        state.attrs = AttrMap({"like_shape": tuple(np.broadcast_shapes(x._meta.shape, mask._meta.shape))})
        state.save_for_backward(mask)

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (mask,) = state.saved_tensors
        return (reduce_to(_masked_select_grad(out_grads[0], mask, attrs=state.attrs), state.x_shape), None)


@register_op_grad("masked_select_grad")
class MaskedSelectGradGrad(OpExprGradFunction):
    """d(dy) = masked_select(ddx, mask), with the count known: dy's length."""

    name = "MaskedSelectGrad"

    def capture(self, state, inputs, outputs, attrs):
        state.attrs = AttrMap({"count": inputs[0]._meta.shape[0]})
        state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (mask,) = state.saved_tensors
        return (_masked_select(out_grads[0], mask, attrs=state.attrs), None)


# ---- advanced indexing ------------------------------------------------------------------------------
@register_op_grad("index")
class IndexGrad(OpExprGradFunction):
    """dx = zeros with dy added at the indexed positions (repeated indices accumulate)."""

    name = "Index"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.x_meta = inputs[0]._meta
            state.dims = attrs["dims"]
            state.save_for_backward(*inputs[1:])

    def apply(self, state, out_grads):
        n = len(state.needs_input_grad)
        if not state.needs_input_grad[0]:
            return (None,) * n
        m = state.x_meta
        dx = write(zeros(m.shape, m.dtype, m.device), (), (), state.dims, state.saved_tensors, out_grads[0],
                   accumulate=True, inplace=False)
        return (dx,) + (None,) * (n - 1)


class _SetitemGrad(OpExprGradFunction):
    name = "Setitem"
    first_index = 1

    def capture(self, state, inputs, outputs, attrs):
        state.index = (attrs["kinds"], attrs["values"], attrs["adv_dims"])
        state.accumulate = attrs["accumulate"]
        state.save_for_backward(*inputs[self.first_index:])

    def _dx(self, state, g, indices):
        if not state.needs_input_grad[0]:
            return None
        return g if state.accumulate else write(g, *state.index, indices, 0, inplace=False)


@register_op_grad("tensor_setitem")
class TensorSetitemGrad(_SetitemGrad):
    """dref = dy, zeroed where written (unless accumulating); dvalue = dy[index] summed to value's shape."""

    first_index = 2

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        state.value_shape = inputs[1]._meta.shape

    def apply(self, state, out_grads):
        g = out_grads[0]
        indices = state.saved_tensors
        dv = None
        if state.needs_input_grad[1]:
            dv = _reduce_to_value(index_encoded(g, *state.index, indices), state.value_shape)
        return (self._dx(state, g, indices), dv) + (None,) * len(indices)


@register_op_grad("tensor_setitem_scalar")
class TensorSetitemScalarGrad(_SetitemGrad):
    """dref = dy, zeroed where written."""

    def apply(self, state, out_grads):
        indices = state.saved_tensors
        return (self._dx(state, out_grads[0], indices),) + (None,) * len(indices)
