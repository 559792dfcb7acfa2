"""More elementwise binary ops: hypot, logaddexp / logaddexp2, xlogy, fmax / fmin, nextafter, the regularised
incomplete gamma functions, gcd / lcm, heaviside and the bit shifts (a self-contained family for now; their
place is ops/binary.py).

As the other binary ops they take one dtype (Note [Math ops take one dtype] in ops/math.py): the functors
promote first. Gradients follow PyTorch's ``derivatives.yaml``: ``fmax`` / ``fmin`` pass the gradient to the
input they returned (the other one where that is NaN); ``nextafter`` passes it to ``x`` unchanged; ``igamma`` /
``igammac`` are differentiable in ``other`` only, and ``heaviside`` not at all (backward raises, as in PyTorch);
integer ops (gcd, lcm, shifts) are not differentiable.
"""

from __future__ import annotations

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import not_implemented_row
from oneflow_lite.ops.math import binary_shape, same_input_dtypes
from oneflow_lite.ops.unary import as_mask

for _op in ("broadcast_hypot", "broadcast_logaddexp", "broadcast_logaddexp2", "broadcast_xlogy", "broadcast_fmax",
            "broadcast_fmin", "broadcast_nextafter", "broadcast_igamma", "broadcast_igammac", "broadcast_heaviside"):
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape, infer_dtype=same_input_dtypes)
for _op in ("broadcast_gcd", "broadcast_lcm", "broadcast_bitwise_left_shift", "broadcast_bitwise_right_shift"):
    register_user_op(_op, inputs=["x", "y"], outputs=["z"], infer_shape=binary_shape, infer_dtype=same_input_dtypes,
                     no_grad=True)


def _to(grad, meta):
    """``grad`` summed to the shape of the input it belongs to (undoing broadcasting)."""
    return F.reduce_to(grad, meta.shape)


def _sigmoid_of_difference(dz, a, b, exp):
    """``dz / (1 + exp(b - a))``: the share of ``a`` in ``logaddexp(a, b)``."""
    return F.div(dz, F.add_scalar(exp(F.sub(b, a)), 1.0))


derivative("broadcast_hypot", name="Hypot",
           x=lambda dz, x, z, x_meta: _to(F.div(F.mul(dz, x), z), x_meta),
           y=lambda dz, y, z, y_meta: _to(F.div(F.mul(dz, y), z), y_meta))
derivative("broadcast_logaddexp", name="Logaddexp",
           x=lambda dz, x, y, x_meta: _to(_sigmoid_of_difference(dz, x, y, F.exp), x_meta),
           y=lambda dz, x, y, y_meta: _to(_sigmoid_of_difference(dz, y, x, F.exp), y_meta))
derivative("broadcast_logaddexp2", name="Logaddexp2",
           x=lambda dz, x, y, x_meta: _to(_sigmoid_of_difference(dz, x, y, F.ops.exp2), x_meta),
           y=lambda dz, x, y, y_meta: _to(_sigmoid_of_difference(dz, y, x, F.ops.exp2), y_meta))
# d/dx = xlogy(x != 0, y) (NaN where y is NaN, 0 where x is 0); d/dy = x / y.
derivative("broadcast_xlogy", name="Xlogy",
           x=lambda dz, x, y, x_meta: _to(F.mul(dz, F.ops.broadcast_xlogy(as_mask(F.ne(x, 0.0), x), y)), x_meta),
           y=lambda dz, x, y, y_meta: _to(F.div(F.mul(dz, x), y), y_meta))


def _fmax_mask(x, y, compare):
    """Where ``fmax`` / ``fmin`` returned ``x``: ``x <compare> y`` (``ge`` / ``le``), or ``y`` is NaN."""
    return F.logical_or(getattr(F, compare)(x, y), F.isnan(y))


def _masked(dz, mask, meta):
    return _to(F.mul(dz, as_mask(mask, dz)), meta)


def _fmax_rows(compare):
    return {"x": lambda dz, x, y, x_meta: _masked(dz, _fmax_mask(x, y, compare), x_meta),
            "y": lambda dz, x, y, y_meta: _masked(dz, F.logical_not(_fmax_mask(x, y, compare)), y_meta)}


derivative("broadcast_fmax", name="Fmax", **_fmax_rows("ge"))
derivative("broadcast_fmin", name="Fmin", **_fmax_rows("le"))
derivative("broadcast_nextafter", name="Nextafter", x=lambda dz, x_meta: _to(dz, x_meta))


def _igamma_rows(sign, name):
    """``d igamma(a, x) / dx = x^(a - 1) exp(-x) / Gamma(a)`` (negated for igammac); no gradient for ``a``."""
    def joint(needs, dz, x, y, y_meta):
        if needs[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        if not needs[1]:
            return None, None
        log_density = F.sub(F.sub(F.mul(F.add_scalar(x, -1.0), F.log(y)), y), F.ops.lgamma(x))
        return None, _to(F.mul_scalar(F.mul(dz, F.exp(log_density)), sign), y_meta)
    return joint


derivative("broadcast_igamma", name="Igamma", joint=_igamma_rows(1.0, "igamma"))
derivative("broadcast_igammac", name="Igammac", joint=_igamma_rows(-1.0, "igammac"))
derivative("broadcast_heaviside", name="Heaviside",
           joint=not_implemented_row("the derivative for 'heaviside' is not implemented."))
