"""cpu kernels of the neural-network ops (ops/nn.py).

float16 data is computed in float32 and rounded once at the end, as PyTorch's cpu kernels do
(``opmath``). NaN, inf and empty inputs follow IEEE and PyTorch without NumPy warnings: these
kernels do enough work per call that ``np.errstate`` (about a microsecond) is cheap.
"""

from __future__ import annotations

import math

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.dtype import ALL_DTYPES, FLOATING_DTYPES
from oneflow_lite.framework.generator import current_generator
from oneflow_lite.kernels.registration import cpu_kernel

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_errstate = np.errstate
_exp = np.exp
_log = np.log
_where = np.where
_abs = np.abs
_sign = np.sign


def _sign_or_zero(d):
    """``sign(d)`` with 0 for NaN: the gradient of ``|d|`` (PyTorch's ``sgn`` in l1_loss's backward)."""
    return np.where(np.isnan(d), d.dtype.type(0), _sign(d))
_sqrt = np.sqrt
_negative = np.negative


def _floats(name):
    return dtype_in(name, *FLOATING_DTYPES)


def _up(a):
    """``a`` in the dtype it is computed in: float32 for float16."""
    return a.astype(_F32) if a.dtype == _F16 else a


# ---- softmax / log_softmax ---------------------------------------------------------------------
# ``ufunc.reduce`` directly: ``x.max(axis)`` and ``x.sum(axis)`` are the same reductions behind a Python wrapper
# that costs more than the reduction itself on small inputs.
# The last step of each formula writes into a temporary of the formula's own (out=), saving an allocation.
_max_reduce = np.maximum.reduce
_sum_reduce = np.add.reduce
_divide = np.divide
_subtract = np.subtract
_multiply = np.multiply
_matmul = np.matmul


def row_sum(x):
    """Sums over the last axis (kept as a length-1 axis): a matrix-vector product with ones (BLAS), several
    times faster than ``add.reduce`` along short contiguous rows."""
    n = x.shape[-1]
    if n > 4096 or x.dtype.kind != "f":
        return _sum_reduce(x, -1, keepdims=True)
    return _matmul(x, np.ones((n, 1), x.dtype))


# The reference formulas (the tests compare the kernels with them).
def softmax_reference(axis, x):
    e = _exp(x - _max_reduce(x, axis, keepdims=True))
    return _divide(e, _sum_reduce(e, axis, keepdims=True), out=e)


def log_softmax_reference(axis, x):
    shifted = x - _max_reduce(x, axis, keepdims=True)
    return _subtract(shifted, _log(_sum_reduce(_exp(shifted), axis, keepdims=True)), out=shifted)


def safe_softmax_reference(axis, x):
    m = _max_reduce(x, axis, keepdims=True)
    e = _exp(x - m)
    return _where(m == -np.inf, 0, e / _sum_reduce(e, axis, keepdims=True))


def softmax_grad_reference(axis, y, dy):
    t = dy * y
    _subtract(dy, _sum_reduce(t, axis, keepdims=True), out=t)
    return _multiply(y, t, out=t)


def log_softmax_grad_reference(axis, y, dy):
    e = _exp(y)
    _multiply(e, _sum_reduce(dy, axis, keepdims=True), out=e)
    return _subtract(dy, e, out=e)


# The kernels: each pass writes into the one buffer the kernel returns; sums over the last axis are BLAS row
# sums (``row_sum``) and sums of products einsum (Note [layer_norm kernels]).
def _sums(x, axis):
    return row_sum(x) if axis == -1 or axis == x.ndim - 1 else _sum_reduce(x, axis, keepdims=True)


def _softmax(axis, x):
    e = _subtract(x, _max_reduce(x, axis, keepdims=True))
    _exp(e, out=e)
    return _divide(e, _sums(e, axis), out=e)


def _log_softmax(axis, x):
    shifted = _subtract(x, _max_reduce(x, axis, keepdims=True))
    return _subtract(shifted, _log(_sums(_exp(shifted), axis)), out=shifted)


def _safe_softmax(axis, x):
    """softmax, 0 on a row of -inf only: its max is taken as 0 there (exp gives zeros) and its sum as 1."""
    m = _max_reduce(x, axis, keepdims=True)
    empty = m == -np.inf
    masked = empty.any()
    e = _subtract(x, _where(empty, 0, m) if masked else m)
    _exp(e, out=e)
    z = _sums(e, axis)
    return _divide(e, _where(empty, 1, z) if masked else z, out=e)


def _softmax_grad(axis, y, dy):
    if axis == -1 or axis == y.ndim - 1:
        t = _subtract(dy, np.einsum("...i,...i->...", dy, y)[..., None])
    else:
        t = dy * y
        _subtract(dy, _sum_reduce(t, axis, keepdims=True), out=t)
    return _multiply(y, t, out=t)


def _log_softmax_grad(axis, y, dy):
    e = _exp(y)
    _multiply(e, _sums(dy, axis), out=e)
    return _subtract(dy, e, out=e)


def _axis_kernel(fn, name):
    """A kernel applying ``fn(axis, *arrays)`` along the ``axis`` attr (a 0-d input is one element)."""
    def kernel(ctx, *arrays):
        x = arrays[0]
        if x.size == 0:
            return np.empty(x.shape, x.dtype)
        if x.ndim == 0:
            arrays = [a.reshape(1) for a in arrays]
        if x.dtype == _F16:
            arrays = [a.astype(_F32) for a in arrays]
        with _errstate(invalid="ignore", divide="ignore"):  # rows of -inf / +inf give nan, as in PyTorch
            r = fn(ctx.attrs["axis"], *arrays)
        if x.ndim == 0:
            r = r.reshape(())
        return r if r.dtype == x.dtype else r.astype(x.dtype)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


cpu_kernel("softmax", _floats("in"))(_axis_kernel(_softmax, "softmax_cpu"))
cpu_kernel("log_softmax", _floats("in"))(_axis_kernel(_log_softmax, "log_softmax_cpu"))
cpu_kernel("safe_softmax", _floats("in"))(_axis_kernel(_safe_softmax, "safe_softmax_cpu"))
cpu_kernel("softmax_grad", _floats("dy"))(_axis_kernel(_softmax_grad, "softmax_grad_cpu"))
cpu_kernel("log_softmax_grad", _floats("dy"))(_axis_kernel(_log_softmax_grad, "log_softmax_grad_cpu"))


# ---- activations with attrs: celu, hardshrink, softshrink, threshold ---------------------------------------
def _celu(a, x):
    alpha = a["alpha"]
    return _where(x >= 0, x, np.expm1(x / alpha) * alpha)  # ±0 is itself, whatever alpha (as _elu)


def _celu_grad(a, dy, x):
    return _where(x > 0, dy, dy * _exp(x / a["alpha"]))


def _in_band(a, x):
    """``-lambd <= x <= lambd`` (False for NaN, which both shrinks pass through)."""
    lambd = a["lambd"]
    return (x >= -lambd) & (x <= lambd)


def _softshrink(a, x):
    lambd = a["lambd"]
    return _where(x > lambd, x - lambd, _where(x < -lambd, x + lambd, x * 0))


def _threshold_values(a, x):
    """The threshold and the value in ``x``'s dtype (truncated for integers, as PyTorch converts scalars)."""
    t = x.dtype.type
    if x.dtype.kind in "iu":
        return t(int(a["threshold_val"])), t(int(a["value"]))
    return t(a["threshold_val"]), t(a["value"])


def _threshold(a, x):
    th, value = _threshold_values(a, x)
    return _where(x <= th, value, x)


def _threshold_grad(a, dy, x):
    th, _ = _threshold_values(a, x)
    return _where(x <= th, dy.dtype.type(0), dy)


def _elementwise_kernel(fn, name):
    """A kernel of the elementwise formula ``fn(attrs, *arrays)`` with the first array's shape and dtype,
    float16 in float32, without NumPy warnings."""
    def kernel(ctx, *arrays):
        d = arrays[0].dtype
        if d == _F16:
            arrays = [a.astype(_F32) for a in arrays]
        with _errstate(all="ignore"):
            r = fn(ctx.attrs, *arrays)
        return r.astype(d, copy=False)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


_NN_ACTIVATIONS = {
    "celu": (_celu, _celu_grad, FLOATING_DTYPES),
    "hardshrink": (lambda a, x: _where(_in_band(a, x), x.dtype.type(0), x),
                   lambda a, dy, x: _where(_in_band(a, x), dy.dtype.type(0), dy), FLOATING_DTYPES),
    "softshrink": (_softshrink, lambda a, dy, x: _where(_in_band(a, x), dy.dtype.type(0), dy), FLOATING_DTYPES),
    "threshold": (_threshold, _threshold_grad, dt.NUMERIC_DTYPES),
}
for _op, (_fwd, _bwd, _dtypes) in _NN_ACTIVATIONS.items():
    cpu_kernel(_op, dtype_in("x", *_dtypes))(_elementwise_kernel(_fwd, _op + "_cpu"))
    cpu_kernel(_op + "_grad", _floats("dy"))(_elementwise_kernel(_bwd, _op + "_grad_cpu"))


# ---- nll (Note [The reduction of nll] in ops/nn.py) ----------------------------------------------------
_min_reduce = np.minimum.reduce
_arange = np.arange


def _nll_targets(ctx, num_classes, target, weight, dtype):
    """(safe class index, valid mask, per-element weight) of ``target`` flattened to (N, d...)."""
    t = target.reshape(1) if target.ndim == 0 else target
    t = t.astype(_I64, copy=False)
    valid = t != ctx.attrs["ignore_index"]
    bad = valid & ((t < 0) | (t >= num_classes))
    if bad.any():
        raise IndexError(f"nll_loss: Target {int(t[bad][0])} is out of bounds.")
    safe = _where(valid, t, 0)
    if weight is None or not weight.size:  # (no class can be valid when there are none)
        w = valid.astype(dtype)
    else:
        w = _where(valid, weight[safe], 0).astype(dtype, copy=False)
    return safe, valid, w


def _plain_targets(ctx, num_classes, target, weight):
    """``target`` when there is no weight and every target is a class index (none is ``ignore_index``):
    the common case, where nll is ``-x[n, t[n]]`` and the total weight is N; else None (then
    ``_nll_targets`` raises naming the first out-of-range target)."""
    if weight is not None or target.ndim != 1 or not target.size:
        return None
    lo, hi = int(_min_reduce(target)), int(_max_reduce(target))
    if lo < 0 or hi >= num_classes:
        return None
    ignore = ctx.attrs["ignore_index"]
    if lo <= ignore <= hi and (target == ignore).any():
        return None
    return target


def _reduced(out, total, reduction, dtype):
    """The per-element loss ``out`` (computed in float32 for float16) reduced, as a 0-d array of ``dtype``;
    "mean" divides by ``total``, the weight of the targets (nan when 0)."""
    if reduction == "sum":
        r = _sum_reduce(out, None)
    else:
        with _errstate(invalid="ignore", divide="ignore"):
            r = _sum_reduce(out, None) / total
    return np.asarray(r, dtype)


def _class_grad_scale(dy, reduction, w):
    """The per-element factor of a class loss's grad, before the class weight: ``-dy`` ("none": one per
    element; "sum": one value), over the total weight ``sum(w)`` for "mean"; float16 in float32."""
    g = _negative(_up(dy))
    if reduction == "mean":
        with _errstate(invalid="ignore", divide="ignore"):  # all ignored: a total of 0
            g = g / (w if type(w) is int else _sum_reduce(_up(w), None))
    return g


@cpu_kernel("nll", _floats("input"))
def nll_cpu(ctx, x, target, weight=None):
    reduction = ctx.attrs["reduction"]
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    t = _plain_targets(ctx, x2.shape[1], target, weight) if x2.ndim == 2 else None
    if t is not None:  # every weight is 1: -x[n, t[n]], exactly what the general formula gives
        picked = x2[_arange(t.shape[0]), t]
        if reduction == "none":
            return _negative(picked)
        return _reduced(_negative(_up(picked)), t.shape[0], reduction, x.dtype)
    safe, valid, w = _nll_targets(ctx, x2.shape[1], target, weight, x.dtype)
    if x2.shape[1] == 0:
        picked = np.zeros(safe.shape, x.dtype)
    else:
        picked = np.take_along_axis(x2, safe[:, None], axis=1)[:, 0]
    with _errstate(invalid="ignore"):  # -inf * 0 (ignored or zero-weight targets) is nan, where() drops it
        out = _where(valid, -picked * w, x.dtype.type(0))
    if reduction != "none":
        return _reduced(_up(out), _sum_reduce(_up(w), None), reduction, x.dtype)
    return out.reshape(()) if target.ndim == 0 else out


@cpu_kernel("nll_grad", _floats("out_grad"))
def nll_grad_cpu(ctx, dy, target, weight=None):
    reduction = ctx.attrs["reduction"]
    like = ctx.out_metas[0].shape
    dx = np.zeros(like, dy.dtype)
    dx2 = dx.reshape(1, -1) if len(like) == 1 else dx
    t = _plain_targets(ctx, dx2.shape[1], target, weight) if dx2.ndim == 2 else None
    if t is not None:  # every weight is 1
        dx2[_arange(t.shape[0]), t] = _class_grad_scale(dy, reduction, t.shape[0])
        return dx
    safe, valid, w = _nll_targets(ctx, dx2.shape[1], target, weight, dy.dtype)
    if dx2.shape[1]:
        g = _class_grad_scale(dy, reduction, w)
        if reduction == "none":
            g = g.reshape(safe.shape)
        with _errstate(invalid="ignore"):  # 0 * inf (a zero weight when the total is 0) is nan, as in PyTorch
            values = _where(valid, w * g, 0).astype(dy.dtype, copy=False)
        np.put_along_axis(dx2, safe[:, None], values[:, None], axis=1)
    return dx


def _class_weight_shape(ndim, num_classes):
    """The shape that broadcasts a (C,) class weight over an (N, C, d...) array of ``ndim`` dims."""
    return (1, num_classes) + (1,) * (ndim - 2)


@cpu_kernel("nll_smooth", _floats("input"))
def nll_smooth_cpu(ctx, x, target, weight=None):
    reduction = ctx.attrs["reduction"]
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    _, valid, w = _nll_targets(ctx, x2.shape[1], target, weight, x.dtype)
    xc = _up(x2)
    with _errstate(invalid="ignore"):  # -inf * 0 and inf - inf give nan, as in PyTorch
        if weight is not None:
            xc = xc * weight.reshape(_class_weight_shape(x2.ndim, x2.shape[1]))
        out = _where(valid, -xc.sum(1), 0)
    if reduction != "none":
        return _reduced(out, _sum_reduce(_up(w), None), reduction, x.dtype)
    return out.reshape(target.shape).astype(x.dtype, copy=False)


@cpu_kernel("nll_smooth_grad", _floats("out_grad"))
def nll_smooth_grad_cpu(ctx, dy, target, weight=None):
    reduction = ctx.attrs["reduction"]
    like = ctx.out_metas[0].shape
    like2 = (1, *like) if len(like) == 1 else like
    _, valid, w = _nll_targets(ctx, like2[1], target, weight, dy.dtype)
    g = _class_grad_scale(dy, reduction, w)
    g = _where(valid, g.reshape(valid.shape) if reduction == "none" else g, 0)[:, None]  # (N, 1, d...)
    if weight is not None:
        g = g * weight.reshape(_class_weight_shape(len(like2), like2[1]))
    return np.broadcast_to(g, like2).reshape(like).astype(dy.dtype)


# ---- elementwise losses (Note [Loss ops are elementwise] in ops/nn.py) --------------------------------
def _xlogy_self(t):
    """``t * log(t)``, 0 where ``t`` is 0 (PyTorch's ``xlogy(t, t)``)."""
    return _where(t == 0, 0, t * _log(t))


def _log_clamped(a):
    """``log(a)`` clamped to >= -100, as PyTorch's binary_cross_entropy does."""
    return np.maximum(_log(a), -100)


def _softplus_neg(x):
    """``log(1 + exp(-x))``, stably."""
    return np.log1p(_exp(-_abs(x))) + np.maximum(-x, 0)


def _smooth_l1(a, x, t):
    d = x - t
    beta = a["beta"]
    ad = _abs(d)
    return ad if beta == 0 else _where(ad < beta, 0.5 * d * d / beta, ad - 0.5 * beta)


def _smooth_l1_grad(a, dy, x, t):
    d = x - t
    beta = a["beta"]
    return dy * (_sign(d) if beta == 0 else _where(_abs(d) < beta, d / beta, _sign(d)))


def _huber(a, x, t):
    d = x - t
    delta = a["delta"]
    ad = _abs(d)
    return _where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))


def _huber_grad(a, dy, x, t):
    d = x - t
    delta = a["delta"]
    return dy * _where(_abs(d) < delta, d, delta * _sign(d))


def _kl_div(a, x, t):
    return _exp(t) * (t - x) if a["log_target"] else _xlogy_self(t) - t * x


def _kl_div_grad(a, dy, x, t):
    return -dy * (_exp(t) if a["log_target"] else t)


def _kl_div_target_grad(a, dy, x, t):
    """d/dt of t (log t - x) is log t + 1 - x: -inf at t == 0, the one-sided derivative of t log t."""
    if a["log_target"]:
        return dy * _exp(t) * (t - x + 1)
    return dy * (_log(t) + 1 - x)


def _bce(a, x, t):
    if not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")
    if not ((t >= 0) & (t <= 1)).all():
        raise RuntimeError("binary_cross_entropy: all elements of target should be between 0 and 1")
    return -(t * _log_clamped(x) + (1 - t) * _log_clamped(1 - x))


def _bce_grad(a, dy, x, t):
    return dy * (x - t) / np.maximum((1 - x) * x, 1e-12)


def _bce_target_grad(a, dy, x, t):
    return dy * (_log_clamped(1 - x) - _log_clamped(x))


def _bce_logits(a, x, t, pos_weight=None):
    sp = _softplus_neg(x)
    if pos_weight is None:
        return (1 - t) * x + sp
    return (1 - t) * x + (1 + (pos_weight - 1) * t) * sp


def _bce_logits_grad(a, dy, x, t, pos_weight=None):
    with np.errstate(over="ignore"):
        sigmoid_neg = 1 / (1 + _exp(x))  # sigmoid(-x): 1 at x = -inf, 0 at inf (no inf - inf)
    if pos_weight is None:
        return dy * ((1 - t) - sigmoid_neg)
    return dy * ((1 - t) - (1 + (pos_weight - 1) * t) * sigmoid_neg)


def _bce_logits_target_grad(a, dy, x, t, pos_weight=None):
    if pos_weight is None:
        return dy * -x
    return dy * ((pos_weight - 1) * _softplus_neg(x) - x)


_LOSS_KERNELS = {
    "mse_loss": (lambda a, x, t: (x - t) ** 2, lambda a, dy, x, t: dy * 2 * (x - t), None),
    "l1_loss": (lambda a, x, t: _abs(x - t), lambda a, dy, x, t: dy * _sign_or_zero(x - t), None),
    "smooth_l1_loss": (_smooth_l1, _smooth_l1_grad, None),
    "huber_loss": (_huber, _huber_grad, None),
    "kl_div_loss": (_kl_div, _kl_div_grad, _kl_div_target_grad),
    "binary_cross_entropy": (_bce, _bce_grad, _bce_target_grad),
    "binary_cross_entropy_with_logits": (_bce_logits, _bce_logits_grad, _bce_logits_target_grad),
}


def _loss_kernel(fn, name):
    """A kernel of the elementwise formula ``fn(attrs, *arrays)``, float16 in float32, without warnings."""
    def kernel(ctx, *arrays):
        d = arrays[0].dtype
        if d == _F16:
            arrays = [a.astype(_F32) for a in arrays]
        with _errstate(all="ignore"):
            r = fn(ctx.attrs, *arrays)
        shape = ctx.out_metas[0].shape
        if r.shape != shape:
            return np.broadcast_to(r, shape).astype(d)
        return r.astype(d, copy=False)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


for _op, (_fwd, _grad, _target_grad) in _LOSS_KERNELS.items():
    cpu_kernel(_op, _floats("input"))(_loss_kernel(_fwd, _op + "_cpu"))
    cpu_kernel(_op + "_grad", _floats("dy"))(_loss_kernel(_grad, _op + "_grad_cpu"))
    if _target_grad is not None:
        cpu_kernel(_op + "_target_grad", _floats("dy"))(_loss_kernel(_target_grad, _op + "_target_grad_cpu"))


# ---- dropout --------------------------------------------------------------------------------------
@cpu_kernel("random_mask_like", dtype_in("like", *ALL_DTYPES))
def random_mask_like_cpu(ctx, like):
    """True (keep) with probability ``1 - rate``, drawn from the current generator."""
    rate = ctx.attrs["rate"]
    shape = like.shape
    if rate == 0.0:
        return np.ones(shape, np.bool_)
    if rate == 1.0:
        return np.zeros(shape, np.bool_)
    return current_generator(ctx.device).numpy.random(shape, dtype=_F32) >= rate


@cpu_kernel("dropout", _floats("in"))
def dropout_cpu(ctx, x, mask):
    """``x * mask * scale``: a dropped NaN stays NaN (``x * 0``), as in PyTorch."""
    r = x * mask
    with _errstate(all="ignore"):
        r *= ctx.attrs["scale"]
    return r


# ---- layer_norm -------------------------------------------------------------------------------------
# Note [layer_norm kernels]
# The kernels view x as (rows, n) (n the normalized size) and make few passes: row sums as a product
# with a ones vector (BLAS), sums of products (the variance, sum(g x_hat), d gamma) as einsum (one
# read pass, no temporary), the rest in place in the one buffer each kernel returns. That is 5 passes
# forward and 6 backward, against about 10 passes and as many fresh temporaries of the reference
# kernels (``layer_norm_reference`` ...), which the tests compare them with. The sums accumulate in the
# compute dtype as BLAS and einsum do (float32 for float16 and float32), not pairwise; rows longer than
# ``_FAST_ROW`` use NumPy's pairwise sums.
_FAST_ROW = 4096


def _norm_axes(ctx, x):
    begin = ctx.attrs["begin_norm_axis"]
    return begin, tuple(range(begin, x.ndim)), math.prod(x.shape[begin:])


def layer_norm_reference(ctx, x, *params):
    attrs = ctx.attrs
    begin, axes, n = _norm_axes(ctx, x)
    gamma = params[0] if attrs["scale"] else None
    beta = params[-1] if attrs["center"] else None
    xc = _up(x)
    with _errstate(all="ignore"):  # an empty normalized shape gives nan statistics (and an empty y)
        mean = xc.sum(axes, keepdims=True) / n
        d = xc - mean
        var = (d * d).sum(axes, keepdims=True) / n
        if xc.dtype != np.float64 and not np.isfinite(var).all():  # squares past float32: the variance in float64
            var = np.square(d, dtype=np.float64).sum(axes, keepdims=True) / n
        inv = 1 / _sqrt(var + attrs["epsilon"])
    y = d * inv
    if gamma is not None:
        y *= gamma
    if beta is not None:
        y += beta
    stat = ctx.out_metas[1].np_dtype
    lead = x.shape[:begin]
    return y.astype(x.dtype, copy=False), mean.reshape(lead).astype(stat), inv.reshape(lead).astype(stat)


def _layer_norm_xhat(ctx, dy, x, mean, inv):
    begin, axes, n = _norm_axes(ctx, x)
    kept = x.shape[:begin] + (1,) * (x.ndim - begin)
    inv = inv.reshape(kept)
    return begin, axes, n, inv, (_up(x) - mean.reshape(kept)) * inv, _up(dy)


def layer_norm_grad_reference(ctx, dy, x, mean, inv, gamma=None):
    _, axes, n, inv, xhat, dy = _layer_norm_xhat(ctx, dy, x, mean, inv)
    g = dy if gamma is None else dy * gamma
    with _errstate(all="ignore"):
        dx = inv * (g - g.sum(axes, keepdims=True) / n - xhat * ((g * xhat).sum(axes, keepdims=True) / n))
    return dx.astype(x.dtype, copy=False)


def layer_norm_param_grad_reference(ctx, dy, x, mean, inv):
    begin, _, _, inv, xhat, dy = _layer_norm_xhat(ctx, dy, x, mean, inv)
    lead = tuple(range(begin))
    return (dy * xhat).sum(lead).astype(x.dtype, copy=False), dy.sum(lead).astype(x.dtype, copy=False)


def _row_dot(a, b):
    """sum(a * b) over the last axis of two (rows, n) arrays, as a (rows, 1) column."""
    if a.shape[-1] > _FAST_ROW:
        return _sum_reduce(a * b, -1, keepdims=True)
    return np.einsum("ij,ij->i", a, b)[:, None]


def _as_rows(ctx, *arrays):
    """(begin, rows, n, arrays viewed as (rows, n) in the compute dtype), or None for an empty x."""
    begin, _, n = _norm_axes(ctx, arrays[0])
    rows = math.prod(arrays[0].shape[:begin])
    if not n or not rows:
        return None
    return begin, rows, n, [_up(a).reshape(rows, n) for a in arrays]


def _column(stat, rows, dtype):
    return stat.reshape(rows, 1).astype(dtype, copy=False)


@cpu_kernel("layer_norm", _floats("x"))
def layer_norm_cpu(ctx, x, *params):
    """Note [layer_norm kernels]."""
    shaped = _as_rows(ctx, x)
    if shaped is None:
        return layer_norm_reference(ctx, x, *params)
    begin, rows, n, (x2,) = shaped
    attrs = ctx.attrs
    with _errstate(all="ignore"):
        mean = row_sum(x2)
        mean /= n
        y = np.subtract(x2, mean)
        inv = _row_dot(y, y)
        inv /= n
        if x2.dtype != np.float64 and not np.isfinite(inv).all():  # squares past float32 (or a NaN/Inf row)
            return layer_norm_reference(ctx, x, *params)
        inv += attrs["epsilon"]
        _sqrt(inv, out=inv)
        np.reciprocal(inv, out=inv)
        y *= inv
        if attrs["scale"]:
            y *= _up(params[0]).reshape(n)
        if attrs["center"]:
            y += _up(params[-1]).reshape(n)
    stat, lead = ctx.out_metas[1].np_dtype, x.shape[:begin]
    return (y.reshape(x.shape).astype(x.dtype, copy=False), mean.reshape(lead).astype(stat, copy=False),
            inv.reshape(lead).astype(stat, copy=False))


def _xhat_rows(x2, mean, inv, rows):
    """(x - mean) * inv of (rows, n) x, in a new buffer; mean and inv as (rows, 1) columns."""
    inv = _column(inv, rows, x2.dtype)
    xhat = np.subtract(x2, _column(mean, rows, x2.dtype))
    xhat *= inv
    return xhat, inv


@cpu_kernel("layer_norm_grad", _floats("dy"))
def layer_norm_grad_cpu(ctx, dy, x, mean, inv, gamma=None):
    """dx = inv (g - mean(g) - x_hat mean(g x_hat)), g = dy gamma (Note [layer_norm kernels])."""
    shaped = _as_rows(ctx, x, dy)
    if shaped is None:
        return layer_norm_grad_reference(ctx, dy, x, mean, inv, gamma)
    _, rows, n, (x2, dy2) = shaped
    with _errstate(all="ignore"):
        xhat, inv = _xhat_rows(x2, mean, inv, rows)
        g = dy2 if gamma is None else dy2 * _up(gamma).reshape(n)
        s1 = row_sum(g)
        s1 /= n
        s2 = _row_dot(g, xhat)
        s2 /= n
        dx = np.subtract(g, s1, out=None if gamma is None else g)
        xhat *= s2
        dx -= xhat
        dx *= inv
    return dx.reshape(x.shape).astype(x.dtype, copy=False)


@cpu_kernel("layer_norm_param_grad", _floats("dy"))
def layer_norm_param_grad_cpu(ctx, dy, x, mean, inv):
    """d gamma = sum over rows of dy x_hat, d beta = sum over rows of dy (Note [layer_norm kernels])."""
    shaped = _as_rows(ctx, x, dy)
    if shaped is None:
        return layer_norm_param_grad_reference(ctx, dy, x, mean, inv)
    begin, rows, n, (x2, dy2) = shaped
    with _errstate(all="ignore"):
        xhat, _ = _xhat_rows(x2, mean, inv, rows)
        if rows > _FAST_ROW:
            d_gamma, d_beta = _sum_reduce(dy2 * xhat, 0), _sum_reduce(dy2, 0)
        else:
            d_gamma, d_beta = np.einsum("ij,ij->j", dy2, xhat), _matmul(np.ones(rows, dy2.dtype), dy2)
    shape = x.shape[begin:]
    return d_gamma.reshape(shape).astype(x.dtype, copy=False), d_beta.reshape(shape).astype(x.dtype, copy=False)


# ---- batch_norm (channels at dim 1) -------------------------------------------------------------------
def _channel_layout(x):
    """(reduced axes, per-channel broadcast shape, values per channel) of an (N, C, ...) array."""
    axes = (0, *range(2, x.ndim))
    return axes, (1, x.shape[1]) + (1,) * (x.ndim - 2), x.size // x.shape[1] if x.shape[1] else 0


@cpu_kernel("batch_norm_stats", _floats("x"))
def batch_norm_stats_cpu(ctx, x):
    """Per-channel mean and biased variance."""
    axes, _, n = _channel_layout(x)
    xc = _up(x)
    with _errstate(all="ignore"):  # an empty batch gives nan
        mean = xc.sum(axes, keepdims=True) / n
        d = xc - mean
        var = (d * d).sum(axes) / n
    return mean.reshape(-1).astype(x.dtype), var.astype(x.dtype, copy=False)


@cpu_kernel("batch_norm_stats_grad", _floats("x"))
def batch_norm_stats_grad_cpu(ctx, x, mean, mean_diff, var_diff):
    _, kept, n = _channel_layout(x)
    xc = _up(x)
    with _errstate(all="ignore"):
        dx = (_up(mean_diff).reshape(kept) + _up(var_diff).reshape(kept) * 2 * (xc - _up(mean).reshape(kept))) / n
    return np.broadcast_to(dx, x.shape).astype(x.dtype)


@cpu_kernel("batch_norm_elemt", _floats("x"))
def batch_norm_elemt_cpu(ctx, x, mean, var, *params):
    attrs = ctx.attrs
    kept = _channel_layout(x)[1]
    with _errstate(all="ignore"):
        inv = 1 / _sqrt(_up(var) + attrs["epsilon"])
    scale = inv if not attrs["scale"] else inv * _up(params[0])
    shift = -_up(mean) * scale
    if attrs["center"]:
        shift = shift + _up(params[-1])
    y = _up(x) * scale.reshape(kept) + shift.reshape(kept)
    return y.astype(x.dtype, copy=False)


@cpu_kernel("batch_norm_elemt_grad", _floats("dy"))
def batch_norm_elemt_grad_cpu(ctx, dy, x, mean, var, weight=None):
    axes, kept, _ = _channel_layout(x)
    dyc = _up(dy)
    with _errstate(all="ignore"):
        inv = 1 / _sqrt(_up(var) + ctx.attrs["epsilon"])
    w = 1 if weight is None else _up(weight)
    dy_xm = (dyc * (_up(x) - _up(mean).reshape(kept))).sum(axes)
    dx = dyc * (w * inv).reshape(kept)
    dbias = dyc.sum(axes)
    d = x.dtype
    return (dx.astype(d, copy=False), (-dbias * w * inv).astype(d), (-0.5 * dy_xm * w * inv ** 3).astype(d),
            (dy_xm * inv).astype(d), dbias.astype(d))


@cpu_kernel("running_stat_update", _floats("running"))
def running_stat_update_cpu(ctx, running, value):
    attrs = ctx.attrs
    m = attrs["momentum"]
    r = _up(running) * (1 - m) + _up(value) * (attrs["value_scale"] * m)
    return r.astype(running.dtype, copy=False)


# ---- embedding --------------------------------------------------------------------------------------
def _check_embedding_indices(indices, num_weights):
    if indices.size and (indices.min() < 0 or indices.max() >= num_weights):
        raise IndexError(f"embedding: index out of range in self (indices must be in [0, {num_weights}))")


@cpu_kernel("embedding", dtype_in("weight", *ALL_DTYPES))
def embedding_cpu(ctx, weight, indices):
    _check_embedding_indices(indices, weight.shape[0])
    return weight.take(indices, axis=0)


@cpu_kernel("embedding_grad", _floats("dy"))
def embedding_grad_cpu(ctx, dy, indices):
    attrs = ctx.attrs
    num = attrs["num_weights"]
    _check_embedding_indices(indices, num)
    dim = dy.shape[-1]
    idx = indices.reshape(-1)
    values = _up(dy).reshape(-1, dim)
    if attrs["scale_grad_by_freq"]:
        values = values / np.bincount(idx, minlength=num)[idx][:, None]
    dx = np.zeros((num, dim), values.dtype)
    np.add.at(dx, idx, values)
    if attrs["padding_idx"] >= 0:
        dx[attrs["padding_idx"]] = 0
    return dx.astype(dy.dtype, copy=False)


# ---- one_hot ----------------------------------------------------------------------------------------
def _check_classes(indices, depth=None):
    if indices.size:
        if indices.min() < 0:
            raise RuntimeError("one_hot: Class values must be non-negative.")
        if depth is not None and indices.max() >= depth:
            raise RuntimeError("one_hot: Class values must be smaller than num_classes.")


@cpu_kernel("one_hot", dtype_in("indices", dt.int64))
def one_hot_cpu(ctx, indices):
    depth = ctx.attrs["depth"]
    _check_classes(indices, depth)
    return (indices[..., None] == np.arange(depth, dtype=_I64)).astype(_I64)


@cpu_kernel("one_hot_num_classes", dtype_in("indices", dt.int64))
def one_hot_num_classes_cpu(ctx, indices):
    if indices.size == 0:
        raise RuntimeError("one_hot: Can not infer total number of classes from empty tensor.")
    _check_classes(indices)
    return np.array(indices.max() + 1, _I64)


# ---- attention mask bias ------------------------------------------------------------------------------
@cpu_kernel("attn_mask_bias")
def attn_mask_bias_cpu(ctx, mask=None):
    causal = ctx.attrs["causal_shape"]
    allowed = mask
    if causal:
        tril = np.tri(causal[0], causal[1], dtype=np.bool_)
        allowed = tril if mask is None else mask & tril
    m = ctx.out_metas[0]
    return _where(allowed, m.np_dtype.type(0), m.np_dtype.type(-np.inf))


# ---- scaled_dot_product_attention (Note [Fused attention] in ops/nn.py) ----------------------------------------
_causal_biases: dict = {}  # (L, S, dtype) -> read-only (L, S): 0 where key j <= query i, -inf above


def _causal_bias(rows, cols, dtype):
    """The causal mask as a bias to add (as the composite adds ``attn_mask_bias``): an add of a contiguous
    (L, S) operand, three times faster than writing -inf through a boolean ``where``."""
    key = (rows, cols, dtype)
    b = _causal_biases.get(key)
    if b is None:
        if len(_causal_biases) >= 64:
            _causal_biases.clear()
        b = _causal_biases[key] = _where(np.tri(rows, cols, dtype=np.bool_), 0, -np.inf).astype(dtype)
        b.flags.writeable = False
    return b


# Note [Softmax shifted per head]
# Softmax is shift-invariant per row; the kernel shifts each (L, S) block of scores by the block's max, a
# contiguous reduction (0.02 ms on GPT-mid's (8, 4, 128, 128)), instead of each row's (0.29 ms: NumPy
# reduces short rows one by one). exp(s - c) <= 1 cannot overflow; it can underflow where a row's max lies
# far below its block's, so a row whose shifted exps sum below 2^-60 (its max more than 41 below the
# block's; masked everywhere: 0) is recomputed from q and k with its own max. In the rows kept, only
# probabilities below about 2^-66 (float32's smallest normal times 2^60) may lose relative precision,
# against float32's rounding of the row's larger ones. A block holding NaN takes the row-by-row path.
_UNDERFLOW = 2.0 ** -60


def _attention_scores(q, k, attrs, mask):
    """q k^T scale, masked (the causal mask or ``mask``), in a new (..., L, S) buffer."""
    s = _matmul(q, np.swapaxes(k, -1, -2))
    s *= q.dtype.type(attrs["scale"])
    if attrs["is_causal"]:
        s += _causal_bias(*s.shape[-2:], s.dtype)
    elif mask is not None:
        if mask.dtype == np.bool_:
            np.copyto(s, -np.inf, where=np.logical_not(mask))
        else:
            s += mask
    return s


def _score_rows(q, k, attrs, mask, shape, idx):
    """The masked scores of the flat rows ``idx`` of the (..., L, S) scores, as (len(idx), S)."""
    rows, cols, e = shape[-2], shape[-1], q.shape[-1]
    b, i = np.divmod(idx, rows)
    r = _matmul(k.reshape(-1, cols, e)[b], q.reshape(-1, rows, e)[b, i][:, :, None])[:, :, 0]
    r *= q.dtype.type(attrs["scale"])
    if attrs["is_causal"]:
        r += _causal_bias(rows, cols, r.dtype)[i]
    elif mask is not None:
        m = np.broadcast_to(mask, shape).reshape(-1, cols)[idx]
        if m.dtype == np.bool_:
            np.copyto(r, -np.inf, where=np.logical_not(m))
        else:
            r += m
    return r


def _softmax_by_heads_(s, q, k, attrs, mask):
    """``s`` = softmax(s) over the last axis in place, shifted by each (L, S) block's max (Note [Softmax
    shifted per head]); a row masked everywhere gives 0."""
    rows, cols = s.shape[-2:]
    c = _max_reduce(s.reshape(-1, rows * cols), 1)
    if np.isnan(c).any():
        _softmax_rows_(s, True)
        return
    c[c == -np.inf] = 0
    s -= c.reshape(s.shape[:-2] + (1, 1))
    _exp(s, out=s)
    z = row_sum(s)
    low = np.flatnonzero(z < _UNDERFLOW)
    _divide(s, z, out=s)
    if low.size:
        s.reshape(-1, cols)[low] = _safe_softmax(-1, _score_rows(q, k, attrs, mask, s.shape, low))


def _softmax_rows_(s, masked):
    """``s`` = softmax(s) over the last axis, in place, by each row's max; with ``masked``, a row of -inf
    only gives 0."""
    m = _max_reduce(s, -1, keepdims=True)
    if masked:
        empty = m == -np.inf
        if empty.any():
            m[empty] = 0
    s -= m
    _exp(s, out=s)
    z = row_sum(s)
    if masked:
        z[z == 0] = 1
    _divide(s, z, out=s)


@cpu_kernel("scaled_dot_product_attention", _floats("query"))
def scaled_dot_product_attention_cpu(ctx, q, k, v, mask=None):
    """(out, attn): attn = softmax(q k^T scale + mask), out = attn v (Note [Fused attention] in ops/nn.py)."""
    half = q.dtype == _F16
    q, k, v = _up(q), _up(k), _up(v)
    mask = None if mask is None else _up(mask)
    with _errstate(all="ignore"):  # -inf - -inf on a row masked everywhere, inf / NaN scores as in PyTorch
        s = _attention_scores(q, k, ctx.attrs, mask)
        if s.size:
            _softmax_by_heads_(s, q, k, ctx.attrs, mask)
    out = _matmul(s, v)
    return (out.astype(_F16), s.astype(_F16)) if half else (out, s)


@cpu_kernel("scaled_dot_product_attention_grad", _floats("dout"))
def scaled_dot_product_attention_grad_cpu(ctx, dout, dattn, q, k, v, attn):
    """dq, dk, dv: dv = attn^T dout; ds = attn (dp - rowsum(attn dp)) with dp = dout v^T + dattn; dq = ds k
    scale, dk = ds^T q scale."""
    half = q.dtype == _F16
    dout, dattn, q, k, v, attn = (_up(a) for a in (dout, dattn, q, k, v, attn))
    scale = q.dtype.type(ctx.attrs["scale"])
    dv = _matmul(np.swapaxes(attn, -1, -2), dout)
    with _errstate(all="ignore"):
        ds = _matmul(dout, np.swapaxes(v, -1, -2))
        ds += dattn
        r = np.einsum("...ij,...ij->...i", ds, attn)
        ds -= r[..., None]
        ds *= attn
        dq = _matmul(ds, k)
        dq *= scale
        dk = _matmul(np.swapaxes(ds, -1, -2), q)
        dk *= scale
    return (dq.astype(_F16), dk.astype(_F16), dv.astype(_F16)) if half else (dq, dk, dv)


# ---- ctc_loss (Note [CTC loss] in ops/nn.py) ------------------------------------------------------------------
_NEG_INF = -np.inf


def _logsumexp3(a, b, c):
    """Elementwise ``log(exp(a) + exp(b) + exp(c))``; -inf where all three are -inf."""
    m = np.maximum(np.maximum(a, b), c)
    m = _where(np.isfinite(m), m, 0)
    return m + _log(_exp(a - m) + _exp(b - m) + _exp(c - m))


class _CtcProblem:
    """The extended targets (blank, l1, blank, l2, ..., blank) of every sample and their log-probabilities."""

    def __init__(self, ctx, log_probs, targets, input_lengths, target_lengths):
        steps, n, classes = log_probs.shape
        self.blank = blank = ctx.attrs["blank"]
        self.il = il = input_lengths.astype(_I64)
        self.tl = tl = target_lengths.astype(_I64)
        if (il < 0).any() or (il > steps).any():
            bad = il[(il < 0) | (il > steps)][0]
            raise RuntimeError(f"ctc_loss: Expected input_lengths to have value at most {steps}, but got value {bad}")
        if (tl < 0).any():
            raise RuntimeError(f"ctc_loss: target_lengths must be non-negative, got {tl[tl < 0][0]}")
        padded = self._padded(targets.astype(_I64), tl, blank)
        if padded.size and ((padded < 0) | (padded >= classes)).any():
            bad = padded[(padded < 0) | (padded >= classes)][0]
            raise IndexError(f"ctc_loss: target {bad} is out of range for {classes} classes")
        width = 2 * padded.shape[1] + 1
        ext = np.full((n, width), blank, _I64)
        ext[:, 1::2] = padded
        s = _arange(width)
        self.ext = ext
        self.valid = s[None, :] < 2 * tl[:, None] + 1
        self.skip = np.zeros((n, width), np.bool_)  # s may come from s - 2: a label differing from the previous one
        self.skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
        self.lpl = np.take_along_axis(log_probs, np.broadcast_to(ext[None], (steps, n, width)), axis=2)

    @staticmethod
    def _padded(targets, tl, blank):
        """(N, max target length) targets, from padded (N, S) or concatenated (sum of lengths,) ones."""
        n = tl.shape[0]
        longest = int(tl.max()) if n else 0
        if targets.ndim == 2:
            if longest > targets.shape[1]:
                raise RuntimeError(f"ctc_loss: Expected tensor to have size at least {longest} at dimension 1, but "
                                   f"got size {targets.shape[1]} for argument #2 'targets'")
            return targets[:, :longest]
        total = int(tl.sum())
        if total != targets.shape[0]:
            raise RuntimeError(f"ctc_loss: Expected tensor to have size {total} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets'")
        if total == 0:
            return np.zeros((n, 0), _I64)
        pos = (np.cumsum(tl) - tl)[:, None] + _arange(longest)[None, :]
        inside = _arange(longest)[None, :] < tl[:, None]
        return _where(inside, targets[np.minimum(pos, total - 1)], blank)

    def alpha(self):
        """log alpha (T, N, 2S + 1): the log-probability of the prefixes ending at each (t, s)."""
        lpl, valid, skip = self.lpl, self.valid, self.skip
        steps, n, width = lpl.shape
        out = np.full((steps, n, width), _NEG_INF, lpl.dtype)
        if steps == 0:
            return out
        a = np.full((n, width), _NEG_INF, lpl.dtype)
        a[:, :2] = lpl[0, :, :2]
        a = _where(valid, a, _NEG_INF)
        out[0] = a
        pad = np.full((n, 2), _NEG_INF, lpl.dtype)
        for t in range(1, steps):
            shifted = np.concatenate((pad, a), axis=1)
            a = _logsumexp3(a, shifted[:, 1:-1], _where(skip, shifted[:, :-2], _NEG_INF)) + lpl[t]
            a = _where(valid, a, _NEG_INF)
            out[t] = a
        return out

    def nll(self, alpha):
        """Each sample's negative log-likelihood: the paths ending on the last label or the final blank."""
        il, tl = self.il, self.tl
        n = il.shape[0]
        rows = _arange(n)
        last = np.maximum(il - 1, 0)
        end = alpha[last, rows, 2 * tl] if alpha.shape[0] else np.full(n, _NEG_INF)
        before = _where(tl > 0, alpha[last, rows, np.maximum(2 * tl - 1, 0)], _NEG_INF) if alpha.shape[0] else end
        ll = np.logaddexp(end, before)
        ll = _where(il == 0, _where(tl == 0, 0.0, _NEG_INF), ll)
        return -ll

    def beta(self):
        """log beta (T, N, 2S + 1): the log-probability of the suffixes starting at each (t, s)."""
        lpl, valid, skip, il, tl = self.lpl, self.valid, self.skip, self.il, self.tl
        steps, n, width = lpl.shape
        out = np.full((steps, n, width), _NEG_INF, lpl.dtype)
        s = _arange(width)[None, :]
        ends = (s == 2 * tl[:, None]) | ((s == 2 * tl[:, None] - 1) & (tl[:, None] > 0))
        skip_next = np.zeros_like(skip)
        skip_next[:, :-2] = skip[:, 2:]
        b = np.full((n, width), _NEG_INF, lpl.dtype)
        pad = np.full((n, 2), _NEG_INF, lpl.dtype)
        for t in range(steps - 1, -1, -1):
            shifted = np.concatenate((b, pad), axis=1)
            rec = _logsumexp3(b, shifted[:, 1:-1], _where(skip_next, shifted[:, 2:], _NEG_INF)) + lpl[t]
            init = _where(ends, lpl[t], _NEG_INF)
            b = _where((t == il - 1)[:, None], init, _where((t < il - 1)[:, None], rec, _NEG_INF))
            b = _where(valid, b, _NEG_INF)
            out[t] = b
        return out


@cpu_kernel("ctc_loss", _floats("log_probs"))
def ctc_loss_cpu(ctx, log_probs, targets, input_lengths, target_lengths):
    with _errstate(all="ignore"):
        problem = _CtcProblem(ctx, _up(log_probs), targets, input_lengths, target_lengths)
        nll = problem.nll(problem.alpha())
    if ctx.attrs["zero_infinity"]:
        nll = _where(nll == np.inf, 0, nll)
    return nll.astype(log_probs.dtype)


@cpu_kernel("ctc_loss_grad", _floats("dloss"))
def ctc_loss_grad_cpu(ctx, dloss, log_probs, targets, input_lengths, target_lengths):
    lp = _up(log_probs)
    steps, n, classes = lp.shape
    with _errstate(all="ignore"):
        problem = _CtcProblem(ctx, lp, targets, input_lengths, target_lengths)
        alpha = problem.alpha()
        nll = problem.nll(alpha)
        ab = alpha + problem.beta()
        occupancy = _exp(ab + nll[None, :, None] - problem.lpl)  # summed per class: PyTorch's exp(lcab + nll - lp)
        occupancy = _where(ab == _NEG_INF, 0, occupancy)
        flat = ((_arange(steps)[:, None, None] * n + _arange(n)[None, :, None]) * classes + problem.ext[None])
        per_class = np.bincount(flat.ravel(), occupancy.ravel(), steps * n * classes).reshape(steps, n, classes)
        grad = (_exp(lp) - per_class) * _up(dloss)[None, :, None]
    keep = _arange(steps)[:, None] < problem.il[None, :]
    if ctx.attrs["zero_infinity"]:
        keep = keep & (nll != np.inf)[None, :]
    return _where(keep[:, :, None], grad, 0).astype(log_probs.dtype)
