"""Grad functions of the convolution, pooling and upsampling ops (Notes [Convolution ops] and [Pooling ops] in
ops/conv.py).

Every backward op here is linear in its gradient input and has a grad function of its own (the forward op or
a gather), so double backward works throughout.
"""

from __future__ import annotations

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import OpCaller, slice_
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.functors.registry import get_functor

_sum = get_functor("ReduceSum")

_CONV_KEYS = ("padding_before", "padding_after", "strides", "dilation_rate", "groups")
_conv = {nd: OpCaller(f"conv{nd}d") for nd in (1, 2, 3)}
_conv_data_grad = OpCaller("conv_data_grad")
_conv_filter_grad = OpCaller("conv_filter_grad")


def _conv_attrs(attrs):
    return {k: attrs[k] for k in _CONV_KEYS}


def _crop_to(t, shape):
    """``t`` cut to ``shape`` at the end of each dim (a conv's output may be longer than the ``dy`` it stands for,
    Note [Convolution ops])."""
    if tuple(t._meta.shape) == tuple(shape):
        return t
    return slice_(t, [0] * len(shape), list(shape), [1] * len(shape))


class _ConvGrad(OpExprGradFunction):
    """dx = conv_data_grad(dy, w), dw = conv_filter_grad(dy, x), db = dy summed over all but the channel dim."""

    def capture(self, state, inputs, outputs, attrs):
        needs = state.needs_input_grad
        x, w = inputs[0], inputs[1]
        state.save_for_backward(w if needs[0] else None, x if needs[1] else None)
        conv = _conv_attrs(attrs)
        state.data_attrs = AttrMap({**conv, "input_size": x._meta.shape[2:]}) if needs[0] else None
        state.filter_attrs = AttrMap({**conv, "kernel_size": w._meta.shape[2:]}) if needs[1] else None
        state.has_bias = len(inputs) == 3
        state.ndim = x._meta.ndim

    def apply(self, state, out_grads):
        dy = out_grads[0]
        w, x = state.saved_tensors
        dx = None if w is None else _conv_data_grad(dy, w, attrs=state.data_attrs)
        dw = None if x is None else _conv_filter_grad(dy, x, attrs=state.filter_attrs)
        if not state.has_bias:
            return (dx, dw)
        db = _sum(dy, [0, *range(2, state.ndim)], False, None) if state.needs_input_grad[2] else None
        return (dx, dw, db)


for _nd in (1, 2, 3):
    register_op_grad(f"conv{_nd}d")(type(f"Conv{_nd}dGrad", (_ConvGrad,), {"name": f"Conv{_nd}d"}))


@register_op_grad("conv_data_grad")
class ConvDataGradGrad(OpExprGradFunction):
    """dx = conv_data_grad(dy, w) is linear in both: d(dy) = conv(g, w) (cut to dy), d(w) = conv_filter_grad(dy, g)."""

    name = "ConvDataGrad"

    def capture(self, state, inputs, outputs, attrs):
        needs = state.needs_input_grad
        dy, w = inputs
        state.save_for_backward(w if needs[0] else None, dy if needs[1] else None)
        conv = _conv_attrs(attrs)
        state.conv_attrs = AttrMap(conv)
        state.filter_attrs = AttrMap({**conv, "kernel_size": w._meta.shape[2:]})
        state.dy_shape = dy._meta.shape
        state.nd = len(attrs["input_size"])

    def apply(self, state, out_grads):
        g = out_grads[0]
        w, dy = state.saved_tensors
        ddy = None if w is None else _crop_to(_conv[state.nd](g, w, attrs=state.conv_attrs), state.dy_shape)
        dw = None if dy is None else _conv_filter_grad(dy, g, attrs=state.filter_attrs)
        return (ddy, dw)


@register_op_grad("conv_filter_grad")
class ConvFilterGradGrad(OpExprGradFunction):
    """dw = conv_filter_grad(dy, x) is linear in both: d(dy) = conv(x, h) (cut to dy), d(x) = conv_data_grad(dy, h)."""

    name = "ConvFilterGrad"

    def capture(self, state, inputs, outputs, attrs):
        needs = state.needs_input_grad
        dy, x = inputs
        state.save_for_backward(x if needs[0] else None, dy if needs[1] else None)
        conv = _conv_attrs(attrs)
        state.conv_attrs = AttrMap(conv)
        state.data_attrs = AttrMap({**conv, "input_size": x._meta.shape[2:]})
        state.dy_shape = dy._meta.shape
        state.nd = x._meta.ndim - 2

    def apply(self, state, out_grads):
        h = out_grads[0]
        x, dy = state.saved_tensors
        ddy = None if x is None else _crop_to(_conv[state.nd](x, h, attrs=state.conv_attrs), state.dy_shape)
        dx = None if dy is None else _conv_data_grad(dy, h, attrs=state.data_attrs)
        return (ddy, dx)


# ---- pooling -------------------------------------------------------------------------------------
class _MaxPoolGrad(OpExprGradFunction):
    """dx: dy scattered to the saved indices (``max_pool{n}d_grad``)."""

    nd = 0

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(outputs[1])
            state.attrs = AttrMap({"input_size": inputs[0]._meta.shape[-self.nd:]})

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (indices,) = state.saved_tensors
        return (_max_pool_grad[self.nd](out_grads[0], indices, attrs=state.attrs),)


class _MaxPoolGradGrad(OpExprGradFunction):
    """``max_pool{n}d_grad(dy, indice)`` is linear in dy: its gradient picks g at the indices."""

    nd = 0

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[1])

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (indices,) = state.saved_tensors
        return (_max_pool_gather[self.nd](out_grads[0], indices), None)


class _MaxPoolGatherGrad(OpExprGradFunction):
    """``max_pool{n}d_gather(x, indice)`` is linear in x: its gradient scatters back (``max_pool{n}d_grad``)."""

    nd = 0

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[1])
            state.attrs = AttrMap({"input_size": inputs[0]._meta.shape[-self.nd:]})

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None, None)
        (indices,) = state.saved_tensors
        return (_max_pool_grad[self.nd](out_grads[0], indices, attrs=state.attrs), None)


class _LinearGrad(OpExprGradFunction):
    """The grad of a linear op of one input: its adjoint op, with the forward attrs (``keys``) plus
    ``input_size`` (the input's trailing ``nd`` dims)."""

    adjoint: OpCaller
    keys: tuple = ()
    nd = 0

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.attrs = AttrMap({**{k: attrs[k] for k in self.keys},
                                   "input_size": inputs[0]._meta.shape[-self.nd:]})

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        return (self.adjoint(out_grads[0], attrs=state.attrs),)


class _AdjointGrad(OpExprGradFunction):
    """The grad of a backward op (``*_grad(dy)``, linear in dy): the forward op with the attrs but
    ``input_size`` (and ``output_size`` set to dy's trailing dims when ``output_size`` is True)."""

    forward: OpCaller
    keys: tuple = ()
    output_size = False
    nd = 0

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            a = {k: attrs[k] for k in self.keys}
            if self.output_size:
                a["output_size"] = inputs[0]._meta.shape[-self.nd:]
            state.attrs = AttrMap(a)

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        return (self.forward(out_grads[0], attrs=state.attrs),)


_AVG_KEYS = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
_max_pool_grad, _max_pool_gather = {}, {}
for _nd in (1, 2, 3):
    _max_pool_grad[_nd] = OpCaller(f"max_pool{_nd}d_grad")
    _max_pool_gather[_nd] = OpCaller(f"max_pool{_nd}d_gather")
    _mp, _avg, _ada = f"MaxPool{_nd}d", f"AvgPool{_nd}d", f"AdaptiveAvgPool{_nd}d"
    register_op_grad(f"max_pool{_nd}d")(type(_mp + "Grad", (_MaxPoolGrad,), {"name": _mp, "nd": _nd}))
    register_op_grad(f"max_pool{_nd}d_grad")(
        type(_mp + "GradGrad", (_MaxPoolGradGrad,), {"name": _mp + "Grad", "nd": _nd}))
    register_op_grad(f"max_pool{_nd}d_gather")(
        type(_mp + "GatherGrad", (_MaxPoolGatherGrad,), {"name": _mp + "Gather", "nd": _nd}))
    register_op_grad(f"avg_pool{_nd}d")(type(_avg + "Grad", (_LinearGrad,), {
        "name": _avg, "nd": _nd, "keys": _AVG_KEYS,
        "adjoint": OpCaller(f"avg_pool{_nd}d_grad")}))
    register_op_grad(f"avg_pool{_nd}d_grad")(type(_avg + "GradGrad", (_AdjointGrad,), {
        "name": _avg + "Grad", "nd": _nd, "keys": _AVG_KEYS, "forward": OpCaller(f"avg_pool{_nd}d")}))
    register_op_grad(f"adaptive_avg_pool{_nd}d")(type(_ada + "Grad", (_LinearGrad,), {
        "name": _ada, "nd": _nd, "adjoint": OpCaller(f"adaptive_avg_pool{_nd}d_grad")}))
    register_op_grad(f"adaptive_avg_pool{_nd}d_grad")(type(_ada + "GradGrad", (_AdjointGrad,), {
        "name": _ada + "Grad", "nd": _nd, "output_size": True,
        "forward": OpCaller(f"adaptive_avg_pool{_nd}d")}))


# ---- upsampling ----------------------------------------------------------------------------------
class _UpsampleGrad(_LinearGrad):
    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.attrs = AttrMap({**{k: attrs[k] for k in self.keys}, "input_size": inputs[0]._meta.shape[2:]})


for _mode, _extra in (("nearest", "exact"), ("linear", "align_corners")):
    _keys = ("output_size", "scales", _extra)
    _cls = "Upsample" + _mode.capitalize()
    register_op_grad(f"upsample_{_mode}")(type(_cls + "Grad", (_UpsampleGrad,), {
        "name": _cls, "keys": _keys, "adjoint": OpCaller(f"upsample_{_mode}_grad")}))
    register_op_grad(f"upsample_{_mode}_grad")(type(_cls + "GradGrad", (_AdjointGrad,), {
        "name": _cls + "Grad", "keys": _keys, "forward": OpCaller(f"upsample_{_mode}")}))
