"""Grad functions of the reductions, scans and sorts (ops/reduce.py).

Note [Reduction grads]
A reduction's output grad is first given back the reduced dims as size 1
(``kept`` shape), so it broadcasts against the input. Then:

- mean: ``dy / N``; logsumexp: ``dy * exp(x - y)``; var: ``dy * 2 (x - mean) / (N - correction)``;
  std: the var formula with ``dy / (2 std)``, 0 where std is 0 (as PyTorch).
- amax / amin and ``max()`` / ``min()``: the grad is split evenly among the elements equal to the
  result (NaN counting as equal to a NaN result), as PyTorch's ``evenly_distribute_backward``.
- ``max(dim)`` / ``min(dim)``, sort and topk: the grad goes to the selected indices
  (``select_along_dim_grad``, whose own grad is ``select_along_dim``, so double backward works).
- cumsum: the reversed cumulative sum, ``sum(dy) - cumsum(dy) + dy`` along the dim.
- the 2-norm: ``x * dy / y`` (0 where y is 0); other orders, prod and cumprod use backward ops
  (``vector_norm_grad``, ``reduce_prod_grad``, ``cumprod_grad``) that are exact with zeros in the
  input; differentiating those three again (double backward) raises NotImplementedError.

Everything but the three backward ops is made of functional calls, so it is differentiable again.
"""

from __future__ import annotations

import math

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import (
    OpCaller,
    add,
    cast,
    div,
    div_scalar,
    expand_reduced,
    mul,
    mul_scalar,
    reshape,
)
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.functors.registry import get_functor

_sub = get_functor("Sub")
_exp = get_functor("Exp")
_eq = get_functor("Equal")
_ne = get_functor("NotEqual")
_eq_scalar = get_functor("ScalarEqual")
_ne_scalar = get_functor("ScalarNotEqual")
_sum = get_functor("ReduceSum")
_mean = get_functor("ReduceMean")
_cumsum = get_functor("Cumsum")

_select = OpCaller("select_along_dim")
_select_grad = OpCaller("select_along_dim_grad")
_prod_grad = OpCaller("reduce_prod_grad")
_cumprod_grad = OpCaller("cumprod_grad")
_norm_grad = OpCaller("vector_norm_grad")


def sub(a, b):
    return _sub(a, b, 1, False)


def _kept(g, kept):
    """``g`` reshaped to the kept shape (reduced dims as size 1)."""
    return g if tuple(g._meta.shape) == kept else reshape(g, kept)


def _nonzero_mask(t):
    """1 where ``t`` is non-zero, else 0, in ``t``'s dtype."""
    return cast(_ne_scalar(t, 0), t._meta.dtype)


def _safe_divisor(t):
    """``t`` with its zeros replaced by 1."""
    return add(t, cast(_eq_scalar(t, 0), t._meta.dtype))


class _Reduce(OpExprGradFunction):
    """Remembers the input meta, the reduced dims and the kept shape."""

    def capture(self, state, inputs, outputs, attrs):
        m = inputs[0]._meta
        axes = tuple(sorted(a + m.ndim if a < 0 else a for a in attrs["axis"])) if m.ndim else ()
        state.in_meta = m
        state.axes = axes
        state.kept = tuple(1 if i in axes else d for i, d in enumerate(m.shape))
        state.count = math.prod(m.shape[a] for a in axes)


@register_op_grad("reduce_mean")
class ReduceMeanGrad(_Reduce):
    name = "Mean"

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        dy = out_grads[0]
        if state.count:
            dy = div_scalar(dy, state.count)
        return (expand_reduced(dy, state.kept, state.in_meta.shape),)


@register_op_grad("reduce_prod")
class ReduceProdGrad(_Reduce):
    name = "Prod"

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[0])
            state.attrs = AttrMap({"axis": state.axes})

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (x,) = state.saved_tensors
        return (_prod_grad(_kept(out_grads[0], state.kept), x, attrs=state.attrs),)


class _EvenlySplit(_Reduce):
    """amax / amin: the grad split evenly among the elements equal to the result (Note [Reduction grads])."""

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[0], outputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        x, y = state.saved_tensors
        yk = _kept(y, state.kept)
        both_nan = mul(_ne(x, x), _ne(yk, yk))  # bool * bool is and, bool + bool is or
        mask = cast(add(_eq(x, yk), both_nan), x._meta.dtype)
        count = _sum(mask, state.axes, True, None)
        return (mul(div(_kept(out_grads[0], state.kept), count), mask),)


@register_op_grad("reduce_max")
class ReduceMaxGrad(_EvenlySplit):
    name = "Amax"


@register_op_grad("reduce_min")
class ReduceMinGrad(_EvenlySplit):
    name = "Amin"


class _ToIndices(OpExprGradFunction):
    """The grad of outputs selected by indices along ``dim`` (max / min with a dim, sort, topk) goes back to
    those indices."""

    keepdim = True

    def capture(self, state, inputs, outputs, attrs):
        if not state.needs_input_grad[0]:
            return
        m = inputs[0]._meta
        state.ndim = m.ndim
        if m.ndim:
            d = attrs["dim"]
            d = d + m.ndim if d < 0 else d
            state.dim = d
            state.attrs = AttrMap({"dim": d, "like_shape": tuple(m.shape)})
            kept = tuple(outputs[1]._meta.shape)
            if not self.keepdim and not attrs["keepdim"]:
                kept = kept[:d] + (1,) + kept[d:]
            state.kept = kept
        state.save_for_backward(outputs[1])

    def apply(self, state, out_grads):
        dy = out_grads[0]
        if not state.needs_input_grad[0] or dy is None:
            return (None,)
        if not state.ndim:
            return (dy,)
        (index,) = state.saved_tensors
        return (_select_grad(_kept(dy, state.kept), _kept(index, state.kept), attrs=state.attrs),)


@register_op_grad("reduce_max_dim")
class ReduceMaxDimGrad(_ToIndices):
    name = "Max"
    keepdim = False


@register_op_grad("reduce_min_dim")
class ReduceMinDimGrad(_ToIndices):
    name = "Min"
    keepdim = False


@register_op_grad("sort")
class SortGrad(_ToIndices):
    name = "Sort"


@register_op_grad("topk")
class TopKGrad(_ToIndices):
    name = "TopK"


@register_op_grad("select_along_dim")
class SelectAlongDimGrad(OpExprGradFunction):
    name = "SelectAlongDim"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.attrs = AttrMap({"dim": attrs["dim"], "like_shape": tuple(inputs[0]._meta.shape)})
            state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (index,) = state.saved_tensors
        return (_select_grad(out_grads[0], index, attrs=state.attrs), None)


@register_op_grad("select_along_dim_grad")
class SelectAlongDimGradGrad(OpExprGradFunction):
    name = "SelectAlongDimGrad"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.attrs = AttrMap({"dim": attrs["dim"]})
            state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (index,) = state.saved_tensors
        return (_select(out_grads[0], index, attrs=state.attrs), None)


# ---- logsumexp, var, std, norm ----------------------------------------------------------------------
@register_op_grad("reduce_logsumexp")
class ReduceLogSumExpGrad(_Reduce):
    name = "LogSumExp"

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[0], outputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        x, y = state.saved_tensors
        return (mul(_kept(out_grads[0], state.kept), _exp(sub(x, _kept(y, state.kept)))),)


class _Deviation(_Reduce):
    """Saves the input and the reciprocal degrees of freedom ``1 / (N - correction)`` (inf when not positive)."""

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        if state.needs_input_grad[0]:
            dof = state.count - attrs["correction"]
            state.inv_dof = 1.0 / dof if dof > 0 else math.inf
            state.save_for_backward(inputs[0], outputs[0])

    def deviation(self, state, x):
        return sub(x, _mean(x, state.axes, True, None))


@register_op_grad("reduce_var")
class ReduceVarGrad(_Deviation):
    name = "Var"

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        x, _ = state.saved_tensors
        g = mul(_kept(out_grads[0], state.kept), self.deviation(state, x))
        return (mul_scalar(g, 2.0 * state.inv_dof),)


@register_op_grad("reduce_std")
class ReduceStdGrad(_Deviation):
    name = "Std"

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        x, y = state.saved_tensors
        yk = _kept(y, state.kept)
        g = mul(div(_kept(out_grads[0], state.kept), _safe_divisor(yk)), _nonzero_mask(yk))
        return (mul_scalar(mul(g, self.deviation(state, x)), state.inv_dof),)


@register_op_grad("vector_norm")
class VectorNormGrad(_Reduce):
    name = "Norm"

    def capture(self, state, inputs, outputs, attrs):
        super().capture(state, inputs, outputs, attrs)
        if state.needs_input_grad[0]:
            state.ord = attrs["ord"]
            state.attrs = AttrMap({"axis": state.axes, "ord": state.ord})
            state.save_for_backward(inputs[0], outputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        x, y = state.saved_tensors
        dy, yk = _kept(out_grads[0], state.kept), _kept(y, state.kept)
        if state.ord == 2:
            return (mul(x, div(dy, _safe_divisor(yk))),)
        return (_norm_grad(dy, x, yk, attrs=state.attrs),)


# ---- scans -------------------------------------------------------------------------------------
@register_op_grad("cumsum")
class CumsumGrad(OpExprGradFunction):
    name = "Cumsum"

    def capture(self, state, inputs, outputs, attrs):
        m = inputs[0]._meta
        state.dim = (attrs["dim"] + m.ndim if attrs["dim"] < 0 else attrs["dim"]) if m.ndim else None

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        dy = out_grads[0]
        if state.dim is None:
            return (dy,)
        d = state.dim
        return (add(sub(_sum(dy, (d,), True, None), _cumsum(dy, d, None)), dy),)


@register_op_grad("cumprod")
class CumprodGrad(OpExprGradFunction):
    name = "Cumprod"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.attrs = AttrMap({"dim": attrs["dim"]})
            state.save_for_backward(inputs[0])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (x,) = state.saved_tensors
        return (_cumprod_grad(out_grads[0], x, attrs=state.attrs),)


class _NoDoubleBackward(OpExprGradFunction):
    """A backward op whose own derivative is not implemented: using it is a clear error."""

    what = ""

    def capture(self, state, inputs, outputs, attrs):
        pass

    def apply(self, state, out_grads):
        raise NotImplementedError(f"double backward of {self.what} is not supported (the derivative of "
                                  f"'{self.name}' is not implemented)")


@register_op_grad("reduce_prod_grad")
class ReduceProdGradGrad(_NoDoubleBackward):
    name, what = "reduce_prod_grad", "prod"


@register_op_grad("cumprod_grad")
class CumprodGradGrad(_NoDoubleBackward):
    name, what = "cumprod_grad", "cumprod"


@register_op_grad("vector_norm_grad")
class VectorNormGradGrad(_NoDoubleBackward):
    name, what = "vector_norm_grad", "norm with an order other than 2 and 0"
