"""Neural-network ops: softmax, log_softmax, cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss,
huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits, kl_div, dropout, layer_norm, group_norm,
batch_norm, embedding, one_hot, scaled_dot_product_attention.

References compute in float64 with NumPy (explicit loops where the op is an indexing one) and round to
the input's dtype. PyTorch's deprecation warnings (a target broadcast to the input, kl_div's "mean") are
silenced here; test_ops_nn.py checks them.
"""

import math
import warnings

import numpy as np
from opinfo import ALL, OpSpec, Sample, make, register, unary_shapes

import oneflow_lite as flow
from oneflow_lite import nn

F = nn.functional
_rng = np.random.default_rng(2024)


def _quiet(fn):
    """``fn`` with PyTorch's UserWarnings about broadcast targets and kl_div's "mean" silenced."""
    def call(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(*args, **kwargs)
    return call


def _out(r, like):
    return np.asarray(r).astype(like.dtype)


def _f64(a):
    return None if a is None else np.asarray(a, dtype=np.float64)


def _grad_subset(samples, *names):
    """gradcheck samples: the float64 samples whose name contains one of ``names``."""
    def pick():
        return [s for s in samples(flow.float64) if any(n in s.name for n in names)]
    return pick


def _broadcast_sums(samples):
    """gradcheck samples of a binary loss: the non-empty broadcasting pairs, reduced by "sum"."""
    def pick():
        return [s for s in samples(flow.float64) if s.kwargs.get("reduction") == "sum" and s.args[0].size
                and s.args[1].size and s.args[0].shape != s.args[1].shape]
    return pick


def _reduce(loss, reduction):
    with np.errstate(all="ignore"):
        if reduction == "none":
            return loss
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / loss.size


# ---- softmax / log_softmax --------------------------------------------------------------------------
def _softmax_ref(x, dim=None, dtype=None):
    out = x.dtype if dtype is None else dtype.np_dtype
    x64 = np.atleast_1d(x.astype(np.float64))
    if x64.size:
        e = np.exp(x64 - x64.max(dim, keepdims=True))
        x64 = e / e.sum(dim, keepdims=True)
    return x64.reshape(x.shape).astype(out)


def _log_softmax_ref(x, dim=None, dtype=None):
    out = x.dtype if dtype is None else dtype.np_dtype
    x64 = np.atleast_1d(x.astype(np.float64))
    if x64.size:
        s = x64 - x64.max(dim, keepdims=True)
        x64 = s - np.log(np.exp(s).sum(dim, keepdims=True))
    return x64.reshape(x.shape).astype(out)


def _softmax_samples(dtype):
    for shape in unary_shapes():
        for dim in sorted({0, -1, len(shape) - 1} if shape else {0, -1}):
            yield Sample((make(shape, dtype),), {"dim": dim}, name=f"{shape} dim={dim}")
    yield Sample((make((2, 3, 4), dtype),), {"dim": 1}, name="3-d dim=1")
    if dtype is flow.float32:
        yield Sample((make((3, 4), dtype),), {"dim": 1, "dtype": flow.float64}, name="dtype=float64")


# ---- nll_loss / cross_entropy ----------------------------------------------------------------------
def _nll_parts(logp, target, weight, ignore_index):
    """Per-element loss and weight by an explicit loop (input (C,) or (N, C, d...))."""
    lp = logp.astype(np.float64)
    if lp.ndim == 1:
        lp, target = lp[None], np.asarray(target).reshape(1)
    c = lp.shape[1]
    w = np.ones(c) if weight is None else weight.astype(np.float64)
    out, wt = np.zeros(target.shape), np.zeros(target.shape)
    smooth = np.zeros(target.shape)
    for idx in np.ndindex(target.shape):
        t = int(target[idx])
        if t == ignore_index:
            continue
        pos = (idx[0], slice(None)) + idx[1:]
        out[idx] = -w[t] * lp[pos][t]
        wt[idx] = w[t]
        smooth[idx] = -(w * lp[pos]).sum()
    return out, wt, smooth


def _nll_reduce(out, wt, reduction, shape):
    with np.errstate(all="ignore"):
        if reduction == "none":
            return out.reshape(shape)
        if reduction == "sum":
            return out.sum()
        return out.sum() / wt.sum()


def _nll_ref(x, target, weight=None, ignore_index=-100, reduction="mean"):
    out, wt, _ = _nll_parts(x, target, weight, ignore_index)
    return _out(_nll_reduce(out, wt, reduction, np.shape(target)), x)


def _cross_entropy_ref(x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    class_dim = 0 if x.ndim == 1 else 1
    c = x.shape[class_dim]
    logp = _log_softmax_ref(x.astype(np.float64), class_dim)
    if target.shape == x.shape:  # class probabilities
        t = target.astype(np.float64) * (1 - label_smoothing) + label_smoothing / c
        w = 1.0 if weight is None else weight.astype(np.float64).reshape((c,) + (1,) * (x.ndim - 1 - class_dim))
        prod = logp * t * w
        with np.errstate(all="ignore"):
            if reduction == "none":
                r = -prod.sum(class_dim)
            elif reduction == "sum":
                r = -prod.sum()
            else:
                r = -prod.sum() / (x.size // c if c else 0)
        return _out(r, np.promote_types(x.dtype, target.dtype).type(0))
    out, wt, smooth = _nll_parts(logp, target, weight, ignore_index)
    loss = _nll_reduce(out, wt, reduction, target.shape)
    if label_smoothing:
        loss = (1 - label_smoothing) * loss + label_smoothing / c * _nll_reduce(smooth, wt, reduction, target.shape)
    return _out(loss, x)


def _targets(shape, num_classes, ignore=None):
    t = _rng.integers(0, max(num_classes, 1), size=shape).astype(np.int64)
    if ignore is not None and t.size:
        t.reshape(-1)[:: 3] = ignore
    return t


def _class_samples(dtype, probabilities=True, smoothing=True):
    x = make((4, 5), dtype)
    yield Sample((x, _targets((4,), 5)), name="(N, C)")
    for reduction in ("none", "sum", "mean"):
        yield Sample((x, _targets((4,), 5, ignore=-100)), {"reduction": reduction}, grad_args=(0,),
                     name=f"ignore_index {reduction}")
        yield Sample((x, _targets((4,), 5, ignore=2)), {"weight": make((5,), dtype, 0.5, 2), "ignore_index": 2,
                                                       "reduction": reduction}, grad_args=(0,),
                     name=f"weight {reduction}")
        yield Sample((make((2, 3, 2, 2), dtype), _targets((2, 2, 2), 3, ignore=-1)),
                     {"ignore_index": -1, "reduction": reduction}, grad_args=(0,), name=f"(N, C, d1, d2) {reduction}")
    yield Sample((make((5,), dtype), np.array(3)), name="(C,) with a 0-d target")
    yield Sample((make((0, 3), dtype), _targets((0,), 3)), name="empty batch mean")
    yield Sample((make((0, 3), dtype), _targets((0,), 3)), {"reduction": "sum"}, name="empty batch sum")
    yield Sample((x, np.full((4,), -100)), name="all ignored: nan")
    for reduction in ("sum", "mean"):  # a total weight of 0: "mean" is 0 / 0
        yield Sample((x, _targets((4,), 5)), {"weight": np.zeros(5, dtype.np_dtype), "reduction": reduction},
                     name=f"zero class weights {reduction}")
    if smoothing:
        for reduction in ("none", "mean"):
            yield Sample((x, _targets((4,), 5, ignore=-100)), {"label_smoothing": 0.2, "reduction": reduction},
                         grad_args=(0,), name=f"label smoothing {reduction}")
            yield Sample((make((2, 3, 4), dtype), _targets((2, 4), 3, ignore=1)),
                         {"label_smoothing": 0.1, "weight": make((3,), dtype, 0.5, 2), "ignore_index": 1,
                          "reduction": reduction}, grad_args=(0,), name=f"smoothing, weight, (N, C, d) {reduction}")
    if probabilities:
        p = make((4, 5), dtype, 0, 1)
        for reduction in ("none", "sum", "mean"):
            yield Sample((x, p), {"reduction": reduction}, name=f"probabilities {reduction}")
        yield Sample((make((2, 3, 2), dtype), make((2, 3, 2), dtype, 0, 1)),
                     {"weight": make((3,), dtype, 0.5, 2), "label_smoothing": 0.3}, grad_args=(0, 1),
                     name="probabilities, weight, smoothing")


def _nll_samples(dtype):
    for s in _class_samples(dtype, probabilities=False, smoothing=False):
        s.args = (_log_softmax_ref(s.args[0], 0 if s.args[0].ndim == 1 else 1), *s.args[1:])
        yield s


# ---- elementwise losses ---------------------------------------------------------------------------------
_LOSS_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), ()), ((5,), ()), ((0, 3), (0, 3)),
               ((2, 0), (1, 0))]


def _pair_samples(kwargs_list=({},), low=None, high=None, t_low=None, t_high=None):
    def samples(dtype):
        for xs, ts in _LOSS_PAIRS:
            for kwargs in kwargs_list:
                for reduction in ("none", "mean", "sum"):
                    yield Sample((make(xs, dtype, low, high), make(ts, dtype, t_low, t_high)),
                                 {**kwargs, "reduction": reduction}, name=f"{xs} {ts} {kwargs} {reduction}")
        if dtype is flow.float32:
            yield Sample((make((3,), dtype), make((3,), flow.float64)), {"reduction": "none"}, name="promotion")
    return samples


def _pairwise_ref(fn):
    def ref(x, t, reduction="mean", **kwargs):
        dtype = np.promote_types(x.dtype, t.dtype)
        with np.errstate(all="ignore"):
            loss = fn(x.astype(np.float64), t.astype(np.float64), **kwargs)
        return _reduce(loss, reduction).astype(dtype)
    return ref


def _smooth_l1(x, t, beta=1.0):
    d = np.abs(x - t)
    return d if beta == 0 else np.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta)


def _huber(x, t, delta=1.0):
    d = np.abs(x - t)
    return np.where(d < delta, 0.5 * d ** 2, delta * (d - 0.5 * delta))


def _kl_div(x, t, log_target=False):
    if log_target:
        return np.exp(t) * (t - x)
    return np.where(t > 0, t * (np.log(np.where(t > 0, t, 1)) - x), 0.0)


def _kl_div_ref(x, t, reduction="mean", log_target=False):
    with np.errstate(all="ignore"):
        loss = _kl_div(x.astype(np.float64), t.astype(np.float64), log_target)
        if reduction == "batchmean":
            r = loss.sum() / (x.shape[0] if x.ndim else 1)
        else:
            r = _reduce(loss, reduction)
    return _out(r, np.promote_types(x.dtype, t.dtype).type(0))


def _kl_samples(dtype):
    for xs, ts in _LOSS_PAIRS:
        for log_target in (False, True):
            for reduction in ("none", "sum", "mean", "batchmean"):
                t = make(ts, dtype, -2, 0) if log_target else make(ts, dtype, 0.05, 1)
                yield Sample((make(xs, dtype, -3, 0), t), {"reduction": reduction, "log_target": log_target},
                             name=f"{xs} {ts} log_target={log_target} {reduction}")
    x = make((4,), dtype, -3, 0)
    yield Sample((x, np.array([0.0, 0.5, 0.0, 1.0], dtype.np_dtype)), {"reduction": "none"}, name="zero targets")


def _bce_ref(x, t, weight=None, reduction="mean"):
    x64, t64 = x.astype(np.float64), t.astype(np.float64)
    with np.errstate(all="ignore"):
        loss = -(t64 * np.maximum(np.log(x64), -100) + (1 - t64) * np.maximum(np.log(1 - x64), -100))
    if weight is not None:
        loss = loss * weight
    return _out(_reduce(loss, reduction), x)


def _bce_samples(dtype):
    for shape in unary_shapes():
        for reduction in ("none", "mean", "sum"):
            yield Sample((make(shape, dtype, 0.05, 0.95), make(shape, dtype, 0, 1)), {"reduction": reduction},
                         name=f"{shape} {reduction}")
    yield Sample((make((3, 4), dtype, 0.05, 0.95), make((3, 4), dtype, 0, 1), make((4,), dtype, 0.5, 2)),
                 name="weight broadcast")
    yield Sample((np.array([0.0, 1.0, 0.0, 1.0], dtype.np_dtype), np.array([0.0, 1.0, 1.0, 0.0], dtype.np_dtype)),
                 {"reduction": "none"}, name="log clamped to -100")


def _bce_logits_ref(x, t, weight=None, reduction="mean", pos_weight=None):
    x64, t64 = x.astype(np.float64), t.astype(np.float64)
    sig = 1 / (1 + np.exp(-x64))
    pw = 1.0 if pos_weight is None else pos_weight.astype(np.float64)
    with np.errstate(all="ignore"):
        loss = -(pw * t64 * np.log(sig) + (1 - t64) * np.log(1 - sig))
    if weight is not None:
        loss = loss * weight
    return _out(_reduce(loss, reduction), x)


def _bce_logits_samples(dtype):
    for shape in unary_shapes():
        for reduction in ("none", "mean", "sum"):
            yield Sample((make(shape, dtype), make(shape, dtype, 0, 1)), {"reduction": reduction},
                         name=f"{shape} {reduction}")
    yield Sample((make((3, 4), dtype), make((3, 4), dtype, 0, 1)),
                 {"weight": make((3, 1), dtype, 0.5, 2), "pos_weight": make((4,), dtype, 0.5, 3)},
                 name="weight and pos_weight")
    yield Sample((make((2, 3), dtype), make((2, 3), dtype, 0, 1)), {"pos_weight": make((), dtype, 1, 3),
                                                                   "reduction": "none"}, name="0-d pos_weight")


# ---- dropout ---------------------------------------------------------------------------------------------
def _dropout_fn(x, p=0.5, training=True):
    """dropout with a freshly seeded generator, so repeated calls (gradcheck) drop the same elements."""
    return F.dropout(x, p, training, generator=flow.Generator().manual_seed(7))


def _dropout_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype),), {"p": 0.3}, name=f"{shape}")
    yield Sample((make((3, 4), dtype),), {"p": 0.0}, name="p=0")
    yield Sample((make((3, 4), dtype),), {"p": 0.5, "training": False}, name="eval")


# ---- normalisation ------------------------------------------------------------------------------------
def _layer_norm_ref(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    x64 = x.astype(np.float64)
    mean = x64.mean(axes, keepdims=True)
    y = (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(axes, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return _out(y, x)


def _layer_norm_samples(dtype):
    yield Sample((make((3, 5), dtype), (5,)), name="(3, 5)")
    yield Sample((make((2, 3, 4), dtype), (3, 4), make((3, 4), dtype), make((3, 4), dtype)), name="affine")
    yield Sample((make((2, 3, 4), dtype), (4,)), {"weight": make((4,), dtype)}, name="weight only")
    yield Sample((make((2, 3, 4), dtype), (4,)), {"bias": make((4,), dtype), "eps": 1e-2}, name="bias only, eps")
    yield Sample((make((4,), dtype), (4,), make((4,), dtype), make((4,), dtype)), name="1-d")
    yield Sample((make((0, 4), dtype), (4,), make((4,), dtype), make((4,), dtype)), name="empty batch")


def _group_norm_ref(x, num_groups, weight=None, bias=None, eps=1e-5):
    if x.size == 0:
        return x.copy()
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, num_groups, -1)
    mean = g.mean(2, keepdims=True)
    y = ((g - mean) / np.sqrt(((g - mean) ** 2).mean(2, keepdims=True) + eps)).reshape(x.shape)
    view = (c,) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(view)
    if bias is not None:
        y = y + bias.reshape(view)
    return _out(y, x)


def _group_norm_samples(dtype):
    yield Sample((make((2, 6, 3), dtype), 3, make((6,), dtype), make((6,), dtype)), name="(2, 6, 3) G=3")
    yield Sample((make((2, 4, 2, 3), dtype), 2), {"weight": make((4,), dtype)}, name="4-d weight only")
    yield Sample((make((3, 4), dtype), 4), {"bias": make((4,), dtype), "eps": 1e-3}, name="2-d G=C")
    yield Sample((make((2, 4, 5), dtype), 1), name="G=1")
    yield Sample((make((0, 4, 2), dtype), 2), name="empty batch")


def _batch_norm_ref(x, running_mean=None, running_var=None, weight=None, bias=None, training=False,
                    momentum=0.1, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    view = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    x64 = x.astype(np.float64)
    if training:
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # an empty batch: nan statistics
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, var = x64.mean(axes), x64.var(axes)
    else:
        mean, var = running_mean.astype(np.float64), running_var.astype(np.float64)
    y = (x64 - mean.reshape(view)) / np.sqrt(var.reshape(view) + eps)
    if weight is not None:
        y = y * weight.reshape(view)
    if bias is not None:
        y = y + bias.reshape(view)
    return _out(y, x)


def _batch_norm_samples(dtype):
    def stats(c):
        return make((c,), dtype, -1, 1), make((c,), dtype, 0.5, 2)
    for training in (True, False):
        rm, rv = stats(3)
        yield Sample((make((4, 3), dtype), rm, rv), {"training": training}, grad_args=(0,), name=f"(N, C) {training}")
        rm, rv = stats(3)
        yield Sample((make((2, 3, 4, 2), dtype), rm, rv, make((3,), dtype), make((3,), dtype)),
                     {"training": training, "momentum": 0.3, "eps": 1e-3}, grad_args=(0, 3, 4),
                     name=f"4-d affine {training}")
        rm, rv = stats(2)
        yield Sample((make((3, 2, 5), dtype), rm, rv), {"weight": make((2,), dtype), "training": training},
                     grad_args=(0,), name=f"3-d weight only {training}")
    yield Sample((make((3, 2, 5), dtype), None, None), {"training": True}, name="no running stats")
    rm, rv = stats(3)
    yield Sample((make((0, 3, 2), dtype), rm, rv), {"training": True}, name="empty batch")


# ---- embedding / one_hot ---------------------------------------------------------------------------------
def _embedding_ref(indices, weight, padding_idx=None, scale_grad_by_freq=False):
    return weight[indices]


def _embedding_samples(dtype):
    w = make((6, 3), dtype)
    yield Sample((_targets((4,), 6), w), grad_args=(1,), name="1-d")
    yield Sample((_targets((2, 3), 6).astype(np.int32), w), {"padding_idx": 0}, grad_args=(1,),
                 name="2-d int32 padding_idx")
    yield Sample((np.array(5), w), {"padding_idx": -1}, grad_args=(1,), name="0-d index")
    yield Sample((_targets((0, 2), 6), w), grad_args=(1,), name="empty")
    yield Sample((np.array([1, 1, 2, 1]), w), {"scale_grad_by_freq": True}, grad_args=(1,), name="scale_grad_by_freq")


def _embedding_grad_samples():
    """Without padding_idx and scale_grad_by_freq, which change the gradient by design (test_ops_nn.py)."""
    return [s for s in _embedding_samples(flow.float64) if not s.kwargs]


def _one_hot_ref(x, num_classes=-1):
    return (x[..., None] == np.arange(num_classes)).astype(np.int64)


def _one_hot_samples(dtype):
    yield Sample((_targets((4,), 5),), {"num_classes": 5}, name="1-d")
    yield Sample((_targets((2, 3), 3), 7), name="2-d positional num_classes")
    yield Sample((np.array(2),), {"num_classes": 3}, name="0-d")
    yield Sample((_targets((0,), 3),), {"num_classes": 4}, name="empty")
    yield Sample((np.array([2, 0, 2]),), {"num_classes": 3}, name="max class")


# ---- scaled_dot_product_attention ---------------------------------------------------------------------------
def _sdpa_ref(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    if enable_gqa:
        rep = q.shape[-3] // k.shape[-3]
        k64, v64 = np.repeat(k64, rep, axis=-3), np.repeat(v64, rep, axis=-3)
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q64 @ np.swapaxes(k64, -1, -2) * s
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    if is_causal:
        allowed = np.arange(seq_k)[None, :] <= np.arange(seq_q)[:, None]
        scores = np.where(allowed, scores, -np.inf)
    if attn_mask is not None:
        scores = np.where(attn_mask, scores, -np.inf) if attn_mask.dtype == np.bool_ else scores + attn_mask
    m = scores.max(-1, keepdims=True)
    masked_row = np.isneginf(m)
    e = np.exp(scores - np.where(masked_row, 0, m))
    with np.errstate(all="ignore"):
        attn = np.where(masked_row, 0, e / e.sum(-1, keepdims=True))
    return _out(attn @ v64, q)


def _sdpa_samples(dtype):
    q, k, v = make((2, 3, 4, 5), dtype), make((2, 3, 6, 5), dtype), make((2, 3, 6, 7), dtype)
    yield Sample((q, k, v), name="4-d")
    yield Sample((make((4, 5), dtype), make((6, 5), dtype), make((6, 3), dtype)), name="2-d")
    yield Sample((q, q, q), {"is_causal": True}, name="causal")
    yield Sample((make((2, 3, 4, 5), dtype), k, v), {"is_causal": True}, name="causal L < S")
    mask = _rng.random((4, 6)) < 0.7
    mask[1] = False  # a fully masked row gives 0
    yield Sample((q, k, v, mask), name="bool mask")
    yield Sample((q, k, v, make((3, 1, 6), dtype)), {"scale": 0.5}, name="float mask, scale")
    yield Sample((make((2, 4, 3, 5), dtype), make((2, 2, 6, 5), dtype), make((2, 2, 6, 3), dtype)),
                 {"enable_gqa": True}, name="grouped query attention")
    yield Sample((make((2, 0, 5), dtype), make((2, 3, 5), dtype), make((2, 3, 4), dtype)), name="empty queries")


register(
    OpSpec("softmax", _softmax_ref, _softmax_samples, method="softmax", gradgrad=True),
    OpSpec("log_softmax", _log_softmax_ref, _softmax_samples, method="log_softmax", gradgrad=True),
    OpSpec("cross_entropy", _cross_entropy_ref, _class_samples, gradgrad=True,
           grad_samples=_grad_subset(_class_samples, "weight sum", "(N, C, d1, d2) mean", "label smoothing mean",
                                     "smoothing, weight", "probabilities sum", "probabilities, weight")),
    OpSpec("nll_loss", _nll_ref, _nll_samples, gradgrad=True,
           grad_samples=_grad_subset(_nll_samples, "weight mean", "(N, C, d1, d2) none", "0-d target")),
    OpSpec("mse_loss", _pairwise_ref(lambda x, t: (x - t) ** 2), _pair_samples(), op=_quiet(F.mse_loss),
           grad_samples=_broadcast_sums(_pair_samples())),
    OpSpec("l1_loss", _pairwise_ref(lambda x, t: np.abs(x - t)), _pair_samples(), op=_quiet(F.l1_loss),
           grad_samples=_broadcast_sums(_pair_samples())),
    OpSpec("smooth_l1_loss", _pairwise_ref(_smooth_l1), _pair_samples(({}, {"beta": 0.5}, {"beta": 0.0})),
           op=_quiet(F.smooth_l1_loss), grad_samples=_broadcast_sums(_pair_samples(({}, {"beta": 0.5})))),
    OpSpec("huber_loss", _pairwise_ref(_huber), _pair_samples(({}, {"delta": 0.5}, {"delta": 2.0})),
           op=_quiet(F.huber_loss), grad_samples=_broadcast_sums(_pair_samples(({}, {"delta": 0.5})))),
    OpSpec("kl_div", _kl_div_ref, _kl_samples, op=_quiet(F.kl_div), grad_samples=_broadcast_sums(_kl_samples)),
    OpSpec("binary_cross_entropy", _bce_ref, _bce_samples,
           grad_samples=_grad_subset(_bce_samples, "(3, 4) sum", "weight broadcast")),
    OpSpec("binary_cross_entropy_with_logits", _bce_logits_ref, _bce_logits_samples,
           grad_samples=_grad_subset(_bce_logits_samples, "(3, 4) sum", "pos_weight")),
    OpSpec("dropout", lambda x, p=0.5, training=True: x.copy(), _dropout_samples, op=_dropout_fn, random=True,
           gradgrad=True),
    OpSpec("layer_norm", _layer_norm_ref, _layer_norm_samples, atol=1e-5, rtol=1e-4),
    OpSpec("group_norm", _group_norm_ref, _group_norm_samples, atol=1e-5, rtol=1e-4),
    OpSpec("batch_norm", _batch_norm_ref, _batch_norm_samples, atol=1e-5, rtol=1e-4),
    OpSpec("embedding", _embedding_ref, _embedding_samples, dtypes=ALL, grad_samples=_embedding_grad_samples),
    OpSpec("one_hot", _one_hot_ref, _one_hot_samples, dtypes=(flow.int64,), differentiable=False,
           unsupported_error=RuntimeError),
    OpSpec("scaled_dot_product_attention", _sdpa_ref, _sdpa_samples, atol=1e-5, rtol=1e-4,
           grad_samples=_grad_subset(_sdpa_samples, "4-d", "causal L < S", "mask", "grouped")),
)
