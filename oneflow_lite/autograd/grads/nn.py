"""Grad functions of the neural-network ops (ops/nn.py).

Backward runs the ops' ``*_grad`` ops (fused formulas). Twice differentiable: softmax / log_softmax
(the grad functions of their grad ops are written with functors) and the ops linear in their input,
``nll``, ``nll_smooth`` and ``dropout`` (the adjoint of the grad op is the forward op). The other
``*_grad`` ops have no grad function, so a double backward through them raises the engine's
"derivative ... is not implemented" error.
"""

from __future__ import annotations

from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grads.util import mul, neg, reduce_to, zeros
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.nn import LOSS_OPS, LOSSES_WITH_TARGET_GRAD

_sum = get_functor("ReduceSum")
_sub = get_functor("Sub")
_exp = get_functor("Exp")


class _Caller:
    """Runs one op (all its outputs) with call-time attrs. Inputs given as None are left out (optional
    inputs); one op expr per combination of given inputs, built on first use."""

    def __init__(self, op_type, inputs, outputs):
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self._ops = {}

    def __call__(self, *inputs, attrs=None):
        given = tuple(t is not None for t in inputs)
        op = self._ops.get(given)
        if op is None:
            builder = OpBuilder(self.op_type)
            for name, g in zip(self.inputs, given):
                if g:
                    builder.input(name)
            for name in self.outputs:
                builder.output(name)
            op = self._ops[given] = builder.build()
        return dispatch(op, [t for t in inputs if t is not None], attrs)


_AXIS = ("axis",)
_axis_attrs: dict = {}


def _sum_keep(x, axis):
    return _sum(x, (axis,), True, None)


# ---- softmax / log_softmax --------------------------------------------------------------------------
_softmax_grad = _Caller("softmax_grad", ("y", "dy"), ("dx",))
_log_softmax_grad = _Caller("log_softmax_grad", ("y", "dy"), ("dx",))


class _SoftmaxGradBase(OpExprGradFunction):
    """dx = ``<op>_grad(y, dy)`` from the saved output."""

    grad_op = None

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(outputs[0])
            state.attrs = cached_attrs(_axis_attrs, _AXIS, (attrs["axis"],))

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0] or out_grads[0] is None:
            return (None,)
        (y,) = state.saved_tensors
        return (self.grad_op(y, out_grads[0], attrs=state.attrs)[0],)


@register_op_grad("softmax")
class SoftmaxGrad(_SoftmaxGradBase):
    name = "Softmax"
    grad_op = _softmax_grad


@register_op_grad("safe_softmax")
class SafeSoftmaxGrad(_SoftmaxGradBase):
    """A fully masked row is 0, where softmax_grad gives 0 too."""

    name = "SafeSoftmax"
    grad_op = _softmax_grad


@register_op_grad("log_softmax")
class LogSoftmaxGrad(_SoftmaxGradBase):
    name = "LogSoftmax"
    grad_op = _log_softmax_grad


class _SoftmaxGradGradBase(OpExprGradFunction):
    def capture(self, state, inputs, outputs, attrs):
        state.axis = attrs["axis"]
        state.attrs = cached_attrs(_axis_attrs, _AXIS, (state.axis,))
        state.save_for_backward(inputs[0], inputs[1])


@register_op_grad("softmax_grad")
class SoftmaxGradGrad(_SoftmaxGradGradBase):
    """dx = y * (dy - s), s = sum(dy * y): for an incoming g, grad_dy = softmax_grad(y, g) and
    grad_y = g * (dy - s) - dy * sum(g * y)."""

    name = "SoftmaxGrad"

    def apply(self, state, out_grads):
        g = out_grads[0]
        ny, ndy = state.needs_input_grad
        if g is None:
            return (None, None)
        y, dy = state.saved_tensors
        grad_y = grad_dy = None
        if ny:
            s = _sum_keep(mul(dy, y), state.axis)
            grad_y = _sub(mul(g, _sub(dy, s, 1, False)), mul(dy, _sum_keep(mul(g, y), state.axis)), 1, False)
        if ndy:
            grad_dy = _softmax_grad(y, g, attrs=state.attrs)[0]
        return (grad_y, grad_dy)


@register_op_grad("log_softmax_grad")
class LogSoftmaxGradGrad(_SoftmaxGradGradBase):
    """dx = dy - exp(y) * sum(dy): grad_dy = g - sum(g * exp(y)) and grad_y = -g * exp(y) * sum(dy)."""

    name = "LogSoftmaxGrad"

    def apply(self, state, out_grads):
        g = out_grads[0]
        ny, ndy = state.needs_input_grad
        if g is None:
            return (None, None)
        y, dy = state.saved_tensors
        p = _exp(y)
        grad_y = neg(mul(mul(g, p), _sum_keep(dy, state.axis))) if ny else None
        grad_dy = _sub(g, _sum_keep(mul(g, p), state.axis), 1, False) if ndy else None
        return (grad_y, grad_dy)


# ---- nll / nll_smooth (linear in the input) --------------------------------------------------------------
_nll = _Caller("nll", ("input", "target", "weight"), ("output",))
_nll_grad = _Caller("nll_grad", ("out_grad", "target", "weight"), ("in_grad",))
_nll_smooth = _Caller("nll_smooth", ("input", "target", "weight"), ("output",))
_nll_smooth_grad = _Caller("nll_smooth_grad", ("out_grad", "target", "weight"), ("in_grad",))
_CLASS_LOSS = ("ignore_index", "reduction")
_CLASS_LOSS_GRAD = ("ignore_index", "reduction", "like_shape")
_class_loss_attrs: dict = {}
_class_loss_grad_attrs: dict = {}


def _no_weight_grad(state, name):
    if len(state.needs_input_grad) > 2 and state.needs_input_grad[2]:
        raise RuntimeError(f"{name}: the derivative for 'weight' is not implemented.")


class _ClassLossGrad(OpExprGradFunction):
    """d input = ``grad_op(d output, target, weight)`` with the same ``ignore_index`` and ``reduction``, a
    scatter of the output grads into the classes (Note [The reduction of nll] in ops/nn.py)."""

    grad_op = None
    loss_name = ""

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[1], inputs[2] if len(inputs) > 2 else None)
            state.attrs = cached_attrs(_class_loss_grad_attrs, _CLASS_LOSS_GRAD,
                                       (attrs["ignore_index"], attrs["reduction"], tuple(inputs[0]._meta.shape)))

    def apply(self, state, out_grads):
        _no_weight_grad(state, self.loss_name)
        none = (None,) * len(state.needs_input_grad)
        if not state.needs_input_grad[0] or out_grads[0] is None:
            return none
        target, weight = state.saved_tensors
        return (self.grad_op(out_grads[0], target, weight, attrs=state.attrs)[0], *none[1:])


@register_op_grad("nll")
class NllGrad(_ClassLossGrad):
    name = "NllLoss"
    grad_op = _nll_grad
    loss_name = "nll_loss"


@register_op_grad("nll_smooth")
class NllSmoothGrad(_ClassLossGrad):
    name = "NllSmooth"
    grad_op = _nll_smooth_grad
    loss_name = "cross_entropy"


class _ClassLossGradGrad(_ClassLossGrad):
    """The grad op is linear in ``out_grad``: its adjoint (``grad_op`` here) is the forward op with the same
    ``reduction`` (a "mean" scales both by one over the same total weight), which gathers g."""

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[1], inputs[2] if len(inputs) > 2 else None)
            state.attrs = cached_attrs(_class_loss_attrs, _CLASS_LOSS, (attrs["ignore_index"], attrs["reduction"]))


@register_op_grad("nll_grad")
class NllGradGrad(_ClassLossGradGrad):
    name = "NllLossGrad"
    grad_op = _nll
    loss_name = "nll_loss"


@register_op_grad("nll_smooth_grad")
class NllSmoothGradGrad(_ClassLossGradGrad):
    name = "NllSmoothGrad"
    grad_op = _nll_smooth
    loss_name = "cross_entropy"


# ---- elementwise losses ---------------------------------------------------------------------------------
def _loss_grad_function(op_type):
    """The grad function of an elementwise loss op: its ``_grad`` op for the input; for the target its
    ``_target_grad`` op, or ``-dx`` where the loss depends on ``input - target`` only. Each grad is
    summed back to its operand's shape."""
    names = tuple(LOSS_OPS[op_type])
    grad_op = _Caller(op_type + "_grad", ("dy", "input", "target", "pos_weight"), ("dx",))
    target_op = (_Caller(op_type + "_target_grad", ("dy", "input", "target", "pos_weight"), ("dtarget",))
                 if op_type in LOSSES_WITH_TARGET_GRAD else None)
    cache: dict = {}

    class LossGrad(OpExprGradFunction):
        name = "".join(p.capitalize() for p in op_type.split("_"))

        def capture(self, state, inputs, outputs, attrs):
            needs = state.needs_input_grad
            if needs[0] or needs[1]:
                state.save_for_backward(*inputs)
                state.shapes = tuple(t._meta.shape for t in inputs[:2])
                state.attrs = cached_attrs(cache, names, tuple(attrs[n] for n in names)) if names else None

        def apply(self, state, out_grads):
            needs = state.needs_input_grad
            if len(needs) > 2 and needs[2]:
                raise RuntimeError(f"{op_type}: the derivative for 'pos_weight' is not implemented.")
            dy = out_grads[0]
            none = (None,) * len(needs)
            if dy is None or not (needs[0] or needs[1]):
                return none
            x, t, *pos_weight = state.saved_tensors
            pw = pos_weight[0] if pos_weight else None
            dx = dt = None
            full_dx = grad_op(dy, x, t, pw, attrs=state.attrs)[0] if needs[0] or target_op is None else None
            if needs[0]:
                dx = reduce_to(full_dx, state.shapes[0])
            if needs[1]:
                full_dt = neg(full_dx) if target_op is None else target_op(dy, x, t, pw, attrs=state.attrs)[0]
                dt = reduce_to(full_dt, state.shapes[1])
            return (dx, dt, *none[2:])

    LossGrad.__name__ = LossGrad.__qualname__ = LossGrad.name + "Grad"
    return LossGrad


for _op in LOSS_OPS:
    register_op_grad(_op)(_loss_grad_function(_op))


# ---- dropout ------------------------------------------------------------------------------------------
_dropout = _Caller("dropout", ("in", "mask"), ("out",))
_scale_attrs: dict = {}


@register_op_grad("dropout")
class DropoutGrad(OpExprGradFunction):
    """dropout is linear in its input: dx = dropout(dy, mask) (so it is its own double backward)."""

    name = "Dropout"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[1])
            state.attrs = cached_attrs(_scale_attrs, ("scale",), (attrs["scale"],))

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0] or out_grads[0] is None:
            return (None, None)
        (mask,) = state.saved_tensors
        return (_dropout(out_grads[0], mask, attrs=state.attrs)[0], None)


# ---- layer_norm ----------------------------------------------------------------------------------------
_layer_norm_grad = _Caller("layer_norm_grad", ("dy", "x", "mean", "inv_variance", "gamma"), ("dx",))
_layer_norm_param_grad = _Caller("layer_norm_param_grad", ("dy", "x", "mean", "inv_variance"),
                                 ("gamma_diff", "beta_diff"))
_begin_attrs: dict = {}


@register_op_grad("layer_norm")
class LayerNormGrad(OpExprGradFunction):
    """dx from ``layer_norm_grad``; d gamma = sum(dy * x_hat), d beta = sum(dy) over the leading dims."""

    name = "LayerNorm"

    def capture(self, state, inputs, outputs, attrs):
        scale, center = attrs["scale"], attrs["center"]
        state.gamma_pos = 1 if scale else None
        state.beta_pos = (2 if scale else 1) if center else None
        gamma = inputs[1] if scale else None
        state.save_for_backward(inputs[0], outputs[1], outputs[2], gamma)
        state.attrs = cached_attrs(_begin_attrs, ("begin_norm_axis",), (attrs["begin_norm_axis"],))

    def apply(self, state, out_grads):
        needs = state.needs_input_grad
        grads = [None] * len(needs)
        dy = out_grads[0]
        if dy is None:
            return tuple(grads)
        x, mean, inv, gamma = state.saved_tensors
        if needs[0]:
            grads[0] = _layer_norm_grad(dy, x, mean, inv, gamma, attrs=state.attrs)[0]
        gp, bp = state.gamma_pos, state.beta_pos
        if (gp is not None and needs[gp]) or (bp is not None and needs[bp]):
            d_gamma, d_beta = _layer_norm_param_grad(dy, x, mean, inv, attrs=state.attrs)
            if gp is not None and needs[gp]:
                grads[gp] = d_gamma
            if bp is not None and needs[bp]:
                grads[bp] = d_beta
        return tuple(grads)


# ---- batch_norm --------------------------------------------------------------------------------------
_bn_stats_grad = _Caller("batch_norm_stats_grad", ("x", "mean", "mean_diff", "var_diff"), ("dx",))
_bn_elemt_grad = _Caller("batch_norm_elemt_grad", ("dy", "x", "mean", "var", "weight"),
                         ("dx", "mean_diff", "var_diff", "weight_diff", "bias_diff"))
_eps_attrs: dict = {}


@register_op_grad("batch_norm_stats")
class BatchNormStatsGrad(OpExprGradFunction):
    """mean = sum(x) / n, var = sum((x - mean)^2) / n per channel: dx = (d mean + 2 d var (x - mean)) / n."""

    name = "BatchNormStats"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[0], outputs[0])

    def apply(self, state, out_grads):
        d_mean, d_var = out_grads
        if not state.needs_input_grad[0] or (d_mean is None and d_var is None):
            return (None,)
        x, mean = state.saved_tensors
        m = mean._meta
        if d_mean is None:
            d_mean = zeros(m.shape, m.dtype, m.device)
        if d_var is None:
            d_var = zeros(m.shape, m.dtype, m.device)
        return (_bn_stats_grad(x, mean, d_mean, d_var)[0],)


@register_op_grad("batch_norm_elemt")
class BatchNormElemtGrad(OpExprGradFunction):
    """y = (x - mean) / sqrt(var + eps) * weight + bias: every input's grad from ``batch_norm_elemt_grad``."""

    name = "BatchNormElemt"

    def capture(self, state, inputs, outputs, attrs):
        state.has_bias = attrs["center"]
        state.save_for_backward(inputs[0], inputs[1], inputs[2], inputs[3] if attrs["scale"] else None)
        state.attrs = cached_attrs(_eps_attrs, ("epsilon",), (attrs["epsilon"],))

    def apply(self, state, out_grads):
        needs = state.needs_input_grad
        dy = out_grads[0]
        if dy is None:
            return (None,) * len(needs)
        x, mean, var, weight = state.saved_tensors
        dx, d_mean, d_var, d_weight, d_bias = _bn_elemt_grad(dy, x, mean, var, weight, attrs=state.attrs)
        # the inputs: x, mean, var, then weight and bias when given
        grads = (dx, d_mean, d_var) + ((d_weight,) if weight is not None else ()) + ((d_bias,) if state.has_bias else ())
        return tuple(g if n else None for g, n in zip(grads, needs))


# ---- embedding ----------------------------------------------------------------------------------------
_embedding_grad = _Caller("embedding_grad", ("dy", "indices"), ("dx",))
_embedding_attrs: dict = {}


@register_op_grad("embedding")
class EmbeddingGrad(OpExprGradFunction):
    """d weight: each output row's grad added into the row it was taken from; row padding_idx stays zero."""

    name = "Embedding"

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[1])
            state.attrs = cached_attrs(_embedding_attrs, ("num_weights", "padding_idx", "scale_grad_by_freq"),
                                       (inputs[0]._meta.shape[0], attrs["padding_idx"], attrs["scale_grad_by_freq"]))

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0] or out_grads[0] is None:
            return (None, None)
        (indices,) = state.saved_tensors
        return (_embedding_grad(out_grads[0], indices, attrs=state.attrs)[0], None)



# ---- backward ops without a second derivative ---------------------------------------------------------
class _NoHigherOrderGrad(OpExprGradFunction):
    """The grad function of a backward-only op whose own derivative (double backward through the
    forward op) is not implemented: recording is allowed, differentiating it raises, naming the op."""

    def capture(self, state, inputs, outputs, attrs):
        pass

    def apply(self, state, out_grads):
        raise RuntimeError(f"the derivative for '{self.op_type}' is not implemented: double backward through "
                           f"'{self.forward_op}' is not supported")


for _grad_op, _forward_op in (
        ("batch_norm_elemt_grad", "batch_norm"), ("batch_norm_stats_grad", "batch_norm"),
        ("binary_cross_entropy_grad", "binary_cross_entropy"),
        ("binary_cross_entropy_target_grad", "binary_cross_entropy"),
        ("binary_cross_entropy_with_logits_grad", "binary_cross_entropy_with_logits"),
        ("binary_cross_entropy_with_logits_target_grad", "binary_cross_entropy_with_logits"),
        ("embedding_grad", "embedding"), ("huber_loss_grad", "huber_loss"), ("kl_div_loss_grad", "kl_div"),
        ("kl_div_loss_target_grad", "kl_div"), ("l1_loss_grad", "l1_loss"), ("layer_norm_grad", "layer_norm"),
        ("layer_norm_param_grad", "layer_norm"), ("mse_loss_grad", "mse_loss"),
        ("smooth_l1_loss_grad", "smooth_l1_loss")):
    register_op_grad(_grad_op)(type(f"{_grad_op}_NoHigherOrder", (_NoHigherOrderGrad,),
                                    {"op_type": _grad_op, "forward_op": _forward_op,
                                     "name": "".join(p.title() for p in _grad_op.split("_"))}))
