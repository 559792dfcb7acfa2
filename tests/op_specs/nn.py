"""Neural-network ops: softmax, log_softmax, cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss,
huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits, kl_div, dropout, layer_norm, group_norm,
batch_norm, embedding, one_hot, scaled_dot_product_attention; the nn sweep's distances (normalize,
cosine_similarity, pairwise_distance, pdist), dropout variants, gumbel_softmax, instance_norm,
local_response_norm, rms_norm, margin / embedding / likelihood losses, embedding_bag and ctc_loss.

References compute in float64 with NumPy (explicit loops where the op is an indexing one) and round to
the input's dtype. PyTorch's deprecation warnings (a target broadcast to the input, kl_div's "mean") are
silenced here; test_ops_nn.py checks them.
"""

import math
import warnings

import numpy as np
from opinfo import ALL, FLOATS, NUMERIC, OpSpec, Sample, make, register, unary_shapes

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.framework.generator import using_generator

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
    xlogy = np.where((t == 0) & ~np.isnan(t), 0.0, t * np.log(np.where(t == 0, 1, t)))  # PyTorch's xlogy(t, t)
    return xlogy - t * x


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
    for name, v in (("input", x64), ("target", t64)):
        if not ((v >= 0) & (v <= 1)).all():  # NaN included, as PyTorch
            raise ValueError(f"binary_cross_entropy: {name} outside [0, 1]")
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
    with np.errstate(all="ignore"):  # PyTorch's stable form: (1 - t) x + (1 + (pw - 1) t) softplus(-x)
        m = np.maximum(-x64, 0)
        softplus_neg = np.log(np.exp(-m) + np.exp(-x64 - m)) + m
        if pos_weight is not None:
            softplus_neg = (1 + (pos_weight.astype(np.float64) - 1) * t64) * softplus_neg
        loss = (1 - t64) * x64 + softplus_neg
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


# ---- the nn sweep: distances ---------------------------------------------------------------------------------
def _pnorm(d, p, axis, keepdims=False):
    a = np.abs(d)
    if p == math.inf:
        return a.max(axis, keepdims=keepdims)
    if p == 0:
        return (a != 0).sum(axis, keepdims=keepdims).astype(np.float64)
    return (a ** p).sum(axis, keepdims=keepdims) ** (1.0 / p)


def _normalize_ref(x, p=2.0, dim=1, eps=1e-12):
    x64 = x.astype(np.float64)
    return (x64 / np.maximum(_pnorm(x64, p, dim, True), eps)).astype(x.dtype)


def _normalize_samples(dtype):
    yield Sample((make((3, 4), dtype),), name="(3, 4)")
    yield Sample((make((2, 3, 4), dtype),), {"p": 1.0, "dim": -1}, name="p=1 dim=-1")
    yield Sample((make((2, 3, 4), dtype),), {"p": 3.0, "dim": 0}, name="p=3 dim=0")
    yield Sample((make((4,), dtype),), {"dim": 0}, name="1-d")
    yield Sample((np.zeros((2, 3), dtype.np_dtype),), {"eps": 1e-3}, name="zeros: eps")
    yield Sample((make((2, 3), dtype),), {"p": math.inf}, name="p=inf")


def _cosine_similarity_ref(x1, x2, dim=1, eps=1e-8):
    a, b = np.broadcast_arrays(x1.astype(np.float64), x2.astype(np.float64))
    na = np.maximum(np.sqrt((a * a).sum(dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(dim, keepdims=True)), eps)
    return ((a / na) * (b / nb)).sum(dim).astype(np.promote_types(x1.dtype, x2.dtype))


def _cosine_similarity_samples(dtype):
    yield Sample((make((3, 4), dtype), make((3, 4), dtype)), name="(3, 4)")
    yield Sample((make((3, 4), dtype), make((4,), dtype)), {"dim": -1}, name="broadcast dim=-1")
    yield Sample((make((2, 3, 4), dtype), make((2, 3, 4), dtype)), {"dim": 0}, name="3-d dim=0")
    yield Sample((make((4,), dtype), make((4,), dtype)), {"dim": 0}, name="1-d")
    if dtype is not flow.float16:  # eps = 1e-8 is 0 in float16: 0 / 0 (nan), as in PyTorch
        yield Sample((np.zeros((2, 3), dtype.np_dtype), make((2, 3), dtype)), name="a zero vector")


def _native_sub(a, b):
    """``a - b`` in the inputs' promoted dtype (integers wrap around, as in PyTorch), then in float64."""
    with np.errstate(all="ignore"):
        return np.subtract(a, b).astype(np.float64)


def _pairwise_distance_ref(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = _native_sub(x1, x2) + eps
    if d.ndim == 0:
        return np.asarray(_pnorm(d.reshape(1), p, 0)).astype(_float_dtype(x1))
    return np.asarray(_pnorm(d, p, -1, keepdim)).astype(_float_dtype(np.zeros(0, np.promote_types(x1.dtype, x2.dtype))))


def _pairwise_distance_samples(dtype):
    yield Sample((make((3, 4), dtype), make((3, 4), dtype)), name="(3, 4)")
    yield Sample((make((3, 4), dtype), make((4,), dtype)), {"keepdim": True}, name="broadcast keepdim")
    for p in (1.0, 3.0, math.inf, 0.0):
        yield Sample((make((2, 5), dtype), make((2, 5), dtype)), {"p": p}, name=f"p={p}")
    yield Sample((make((4,), dtype), make((4,), dtype)), {"eps": 0.0}, name="1-d eps=0")
    yield Sample((make((), dtype), make((), dtype)), name="0-d")


def _pdist_ref(x, p=2.0):
    n = x.shape[0]
    x64 = x.astype(np.float64)
    out = [_pnorm(x64[i] - x64[j], p, 0) for i in range(n) for j in range(i + 1, n)]
    return np.asarray(out, dtype=np.float64).reshape(-1).astype(x.dtype)


def _pdist_samples(dtype):
    yield Sample((make((4, 3), dtype),), name="(4, 3)")
    yield Sample((make((5, 2), dtype),), {"p": 1.0}, name="p=1")
    yield Sample((make((3, 4), dtype),), {"p": math.inf}, name="p=inf")
    yield Sample((make((1, 3), dtype),), name="one row: empty")


# ---- the nn sweep: dropout variants (a fixed generator, so gradcheck sees one mask) ---------------------------
def _seeded(fn):
    def call(*args, **kwargs):
        with using_generator(flow.Generator().manual_seed(7)):
            return fn(*args, **kwargs)
    return call


def _feature_dropout_samples(dtype):
    yield Sample((make((2, 3, 4), dtype),), {"p": 0.4, "training": True}, name="3-d")
    yield Sample((make((2, 3, 2, 2), dtype),), {"p": 0.5, "training": True}, name="4-d")
    yield Sample((make((2, 3, 4), dtype),), {"p": 0.5, "training": False}, name="eval")
    yield Sample((make((0, 3, 4), dtype),), {"p": 0.5, "training": True}, name="empty")


def _dropout_nd_samples(ndims):
    def samples(dtype):
        for ndim in ndims:
            yield Sample((make((2, 3, 2, 2, 2)[:ndim], dtype),), {"p": 0.4}, name=f"{ndim}-d")
        yield Sample((make((2, 3, 2, 2, 2)[:ndims[-1]], dtype),), {"p": 0.4, "training": False}, name="eval")
    return samples


def _alpha_dropout_samples(dtype):
    yield Sample((make((3, 4), dtype),), {"p": 0.3, "training": True}, name="(3, 4)")
    yield Sample((make((5,), dtype),), {"p": 0.6, "training": True}, name="1-d")
    yield Sample((make((3, 4), dtype),), {"p": 0.3}, name="eval (the default)")


def _identity_ref(x, *args, **kwargs):
    return x.copy()


def _gumbel_ref(logits, tau=1.0, hard=False, dim=-1):
    return logits.copy()


def _gumbel_samples(dtype):
    yield Sample((make((3, 5), dtype),), name="soft")
    yield Sample((make((3, 5), dtype),), {"tau": 0.5, "hard": True}, name="hard")
    yield Sample((make((2, 3, 4), dtype),), {"dim": 1}, name="dim=1")


# ---- the nn sweep: normalisation ----------------------------------------------------------------------------
def _instance_norm_ref(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                       momentum=0.1, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    view = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    x64 = x.astype(np.float64)
    if use_input_stats:
        mean, var = x64.mean(axes, keepdims=True), x64.var(axes, keepdims=True)
    else:
        mean, var = running_mean.astype(np.float64).reshape(view), running_var.astype(np.float64).reshape(view)
    y = (x64 - mean) / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight.reshape(view)
    if bias is not None:
        y = y + bias.reshape(view)
    return _out(y, x)


def _instance_norm_samples(dtype):
    yield Sample((make((2, 3, 5), dtype),), name="(2, 3, 5)")
    yield Sample((make((2, 3, 2, 3), dtype), make((3,), dtype), make((3,), dtype, 0.5, 2), make((3,), dtype),
                  make((3,), dtype)), {"momentum": 0.3, "eps": 1e-3}, name="running stats, affine")
    yield Sample((make((2, 3, 4), dtype), make((3,), dtype), make((3,), dtype, 0.5, 2)), {"use_input_stats": False},
                 name="running statistics")
    yield Sample((make((1, 2, 2, 2, 2), dtype),), {"weight": make((2,), dtype)}, name="5-d weight only")


def _local_response_norm_ref(x, size, alpha=1e-4, beta=0.75, k=1.0):
    if x.size == 0:  # returned as is
        return x.copy()
    x64 = x.astype(np.float64)
    c = x.shape[1]
    sq = x64 ** 2
    div = np.zeros_like(x64)
    for ch in range(c):
        lo, hi = max(ch - size // 2, 0), min(ch + (size - 1) // 2, c - 1)
        div[:, ch] = sq[:, lo:hi + 1].sum(1) / size
    if x.dtype.kind != "f":  # an integer average pool truncates, as PyTorch's
        div = np.trunc(div)
    return (x64 / (k + alpha * div) ** beta).astype(_float_dtype(x))


def _local_response_norm_samples(dtype):
    yield Sample((make((2, 5, 3), dtype), 3), name="3-d size 3")
    yield Sample((make((2, 4, 3, 2), dtype), 2), {"alpha": 0.5, "beta": 0.5, "k": 2.0}, name="4-d size 2")
    yield Sample((make((1, 3, 2, 2, 2), dtype), 5), {"alpha": 1.0}, name="5-d size 5")
    yield Sample((make((0, 3, 2), dtype), 2), name="empty")


def _rms_norm_ref(x, normalized_shape, weight=None, eps=None):
    if eps is None:
        eps = np.finfo(x.dtype).eps
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 ** 2).mean(axes, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return _out(y, x)


def _rms_norm_samples(dtype):
    yield Sample((make((3, 5), dtype), (5,)), name="(3, 5)")
    yield Sample((make((2, 3, 4), dtype), (3, 4), make((3, 4), dtype)), name="weight, 2 dims")
    yield Sample((make((4,), dtype), (4,)), {"eps": 1e-2}, name="1-d eps")
    yield Sample((make((0, 4), dtype), (4,), make((4,), dtype)), name="empty batch")


# ---- the nn sweep: margin, embedding and likelihood losses ---------------------------------------------------
def _float_dtype(like):
    """The result dtype of a loss of ``like``: its own when floating, else the default float32."""
    return like.dtype if like.dtype.kind == "f" else np.dtype(np.float32)


def _loss_out(loss, reduction, like):
    return np.asarray(_reduce(loss, reduction)).astype(_float_dtype(like))


def _cosine_embedding_ref(x1, x2, target, margin=0.0, reduction="mean"):
    a, b = x1.astype(np.float64), x2.astype(np.float64)
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    loss = np.where(target == 1, 1 - cos, 0.0) + np.where(target == -1, np.maximum(cos - margin, 0.0), 0.0)
    return _loss_out(loss, reduction, x1)


def _signs(shape):
    return _rng.choice([-1, 1], size=shape).astype(np.int64)


def _reductions(make_args, kwargs_list=({},)):
    def samples(dtype):
        for kwargs in kwargs_list:
            for reduction in ("none", "mean", "sum"):
                yield Sample(make_args(dtype), {**kwargs, "reduction": reduction}, name=f"{kwargs} {reduction}")
    return samples


def _cosine_embedding_samples(dtype):
    yield from _reductions(lambda d: (make((4, 3), d), make((4, 3), d), _signs((4,))), ({}, {"margin": 0.3}))(dtype)
    yield Sample((make((3,), dtype), make((3,), dtype), np.array(-1)), {"margin": -0.5}, name="1-d, 0-d target")


def _hinge_embedding_ref(x, target, margin=1.0, reduction="mean"):
    x64 = x.astype(np.float64)
    loss = np.where(target != 1, np.maximum(margin - x64, 0.0), 0.0) + np.where(target != -1, x64, 0.0)
    return _loss_out(loss, reduction, x)


def _margin_ranking_ref(x1, x2, target, margin=0.0, reduction="mean"):
    with np.errstate(all="ignore"):
        scaled = np.multiply(np.negative(target), np.subtract(x1, x2))  # in the inputs' dtype, as PyTorch
    loss = np.maximum(scaled.astype(np.float64) + margin, 0.0)
    return _loss_out(loss, reduction, x1)


def _soft_margin_ref(x, target, reduction="mean"):
    z = -target.astype(np.float64) * x.astype(np.float64)
    return _loss_out(np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z))), reduction, x)


def _multilabel_soft_margin_ref(x, target, weight=None, reduction="mean"):
    x64, t = x.astype(np.float64), target.astype(np.float64)
    with np.errstate(all="ignore"):  # log sigmoid(x) = -logaddexp(0, -x): no overflow for large |x|
        loss = -(t * -np.logaddexp(0, -x64) + (1 - t) * -np.logaddexp(0, x64))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / x.shape[-1]
    return _out(loss if reduction == "none" else loss.mean() if reduction == "mean" else loss.sum(), x)


def _multilabel_soft_margin_samples(dtype):
    yield from _reductions(lambda d: (make((3, 4), d), make((3, 4), d, 0, 1)))(dtype)
    yield Sample((make((3, 4), dtype), make((3, 4), dtype, 0, 1)), {"weight": make((4,), dtype, 0.5, 2)},
                 name="weight")


def _multi_margin_ref(x, target, p=1, margin=1.0, weight=None, reduction="mean"):
    x2 = x.astype(np.float64).reshape(-1, x.shape[-1] if x.ndim else 1)
    t = np.asarray(target).reshape(-1)
    loss = np.zeros(x2.shape[0])
    for n in range(x2.shape[0]):
        for i in range(x2.shape[1]):
            z = margin - x2[n, t[n]] + x2[n, i]
            if i != t[n] and z > 0:
                loss[n] += z ** p * (1.0 if weight is None else weight[t[n]])
    loss /= x2.shape[1]
    if reduction == "none":
        return _out(loss.reshape(np.shape(target)), x)
    return _out(loss.sum() if reduction == "sum" else loss.mean(), x)


def _multi_margin_samples(dtype):
    x = make((4, 5), dtype)
    t = _targets((4,), 5)
    for reduction in ("none", "mean", "sum"):
        yield Sample((x, t), {"reduction": reduction}, name=f"p=1 {reduction}")
        yield Sample((x, t), {"p": 2, "margin": 0.5, "weight": make((5,), dtype, 0.5, 2), "reduction": reduction},
                     grad_args=(0,), name=f"p=2 weight {reduction}")
    yield Sample((make((5,), dtype), np.array([2])), {"reduction": "none"}, name="1-d input")


def _multilabel_margin_ref(x, target, reduction="mean"):
    x2 = x.astype(np.float64).reshape(-1, x.shape[-1])
    t2 = target.reshape(-1, x.shape[-1])
    loss = np.zeros(x2.shape[0])
    for n in range(x2.shape[0]):
        targets = []
        for v in t2[n]:
            if v < 0:
                break
            targets.append(int(v))
        for j in targets:
            for i in range(x2.shape[1]):
                if i not in targets:
                    z = 1 - (x2[n, j] - x2[n, i])
                    loss[n] += z if z > 0 else 0.0  # PyTorch's kernel: a NaN term is left out
    loss /= x2.shape[1]
    if reduction == "none":
        return _out(loss if x.ndim > 1 else loss.reshape(()), x)
    return _out(loss.sum() if reduction == "sum" else loss.mean(), x)


def _multilabel_margin_samples(dtype):
    t = np.array([[0, 1, -1, 2], [3, -1, 0, 0], [1, 1, 2, -1], [-1, 0, 0, 0], [0, 1, 2, 3]])
    for reduction in ("none", "mean", "sum"):
        yield Sample((make((5, 4), dtype), t), {"reduction": reduction}, name=reduction)
    yield Sample((make((4,), dtype), np.array([2, 0, -1, 1])), {"reduction": "none"}, name="1-d")


def _poisson_nll_ref(x, target, log_input=True, full=False, eps=1e-8, reduction="mean"):
    x64, t = x.astype(np.float64), target.astype(np.float64)
    loss = np.exp(x64) - t * x64 if log_input else x64 - t * np.log(x64 + eps)
    if full:
        with np.errstate(all="ignore"):
            stirling = t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t)
        loss = loss + np.where(t > 1, stirling, 0.0)
    return _loss_out(loss, reduction, x)


def _poisson_nll_samples(dtype):
    yield from _reductions(lambda d: (make((3, 4), d), make((3, 4), d, 0, 4)), ({}, {"full": True}))(dtype)
    yield Sample((make((3, 4), dtype, 0.1, 3), make((3, 4), dtype, 0, 4)), {"log_input": False, "full": True},
                 name="log_input=False")


def _gaussian_nll_ref(x, target, var, full=False, eps=1e-6, reduction="mean"):
    x64, t = x.astype(np.float64), target.astype(np.float64)
    v = np.asarray(var, dtype=np.float64)
    if v.ndim and v.shape != x.shape and v.shape == x.shape[:-1]:
        v = v[..., None]
    if (v < 0).any():
        raise ValueError("gaussian_nll_loss: var has negative entries")
    v = np.maximum(v, eps)
    loss = 0.5 * (np.log(v) + (x64 - t) ** 2 / v)
    if full:
        loss = loss + 0.5 * np.log(2 * np.pi)
    return _loss_out(np.broadcast_to(loss, np.broadcast_shapes(loss.shape, x.shape)), reduction, x)


def _gaussian_nll_samples(dtype):
    yield from _reductions(lambda d: (make((3, 4), d), make((3, 4), d), make((3, 4), d, 0.1, 2)),
                           ({}, {"full": True}))(dtype)
    yield Sample((make((3, 4), dtype), make((3, 4), dtype), make((3,), dtype, 0.1, 2)), name="homoscedastic (N,)")
    yield Sample((make((3, 4), dtype), make((3, 4), dtype), make((3, 1), dtype, 0.1, 2)), name="(N, 1) var")
    yield Sample((make((3, 4), dtype), make((3, 4), dtype), 0.5), {"reduction": "sum"}, name="float var")
    yield Sample((make((3, 4), dtype), make((3, 4), dtype), make((3, 4), dtype, 0, 1e-3)), {"eps": 1e-2},
                 grad_args=(0, 1), name="var clamped to eps")


def _triplet_ref(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
    def dist(a, b):
        return _pnorm(_native_sub(a, b) + eps, p, -1)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = np.minimum(d_neg, dist(positive, negative))
    return _loss_out(np.maximum(margin + dist(anchor, positive) - d_neg, 0.0), reduction, anchor)


def _triplet_samples(dtype):
    yield from _reductions(lambda d: (make((4, 3), d), make((4, 3), d), make((4, 3), d)),
                           ({}, {"swap": True, "p": 1.0, "margin": 0.5}))(dtype)
    yield Sample((make((3,), dtype), make((3,), dtype), make((3,), dtype)), {"margin": 2.0}, name="1-d")


# ---- the nn sweep: embedding_bag -------------------------------------------------------------------------------
def _embedding_bag_ref(input, weight, offsets=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                       mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                       padding_idx=None):
    if input.ndim == 2:
        bags = [list(range(i * input.shape[1], (i + 1) * input.shape[1])) for i in range(input.shape[0])]
        idx = input.reshape(-1)
        psw = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    else:
        idx, psw = input, per_sample_weights
        starts = list(offsets[:-1] if include_last_offset else offsets)
        ends = starts[1:] + [len(idx)]
        bags = [list(range(s, e)) for s, e in zip(starts, ends)]
    out = np.zeros((len(bags), weight.shape[1]))
    for b, positions in enumerate(bags):
        rows = [weight[idx[p]].astype(np.float64) * (1.0 if psw is None else psw[p]) for p in positions
                if idx[p] != padding_idx]
        if rows:
            out[b] = np.max(rows, 0) if mode == "max" else np.sum(rows, 0) / (len(rows) if mode == "mean" else 1)
    return _out(out, weight)


def _embedding_bag_samples(dtype):
    w = make((10, 3), dtype)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    yield Sample((idx, w, np.array([0, 4])), grad_args=(1,), name="mean")
    yield Sample((idx, w, np.array([0, 4, 4, 8])), {"mode": "max"}, grad_args=(1,), name="max, an empty bag")
    yield Sample((idx, w, np.array([0, 3, 8])), {"mode": "sum", "include_last_offset": True}, grad_args=(1,),
                 name="sum, include_last_offset")
    yield Sample((idx, w, np.array([0, 3])), {"mode": "sum", "per_sample_weights": make((8,), dtype)},
                 grad_args=(1,), name="per_sample_weights")
    yield Sample((idx.reshape(2, 4).astype(np.int32), w), {"padding_idx": 4}, grad_args=(1,),
                 name="2-d input, padding_idx")
    yield Sample((np.array([], np.int64), w, np.array([0, 0])), {"mode": "sum"}, grad_args=(1,), name="empty bags")


# ---- the nn sweep: ctc_loss (of log_softmax(logits), the way models call it) -----------------------------------
def _ctc_fn(logits, targets, input_lengths, target_lengths, **kwargs):
    return F.ctc_loss(F.log_softmax(logits, 2), targets, input_lengths, target_lengths, **kwargs)


def _ctc_nll(lp, target, blank):
    """The negative log-likelihood of one sample by the textbook alpha recursion, in probability space."""
    ext = [blank]
    for label in target:
        ext += [int(label), blank]
    p = np.exp(lp)
    alpha = np.zeros(len(ext))
    alpha[0] = p[0, blank]
    if len(ext) > 1:
        alpha[1] = p[0, ext[1]]
    for t in range(1, lp.shape[0]):
        new = np.zeros_like(alpha)
        for s in range(len(ext)):
            a = alpha[s] + (alpha[s - 1] if s >= 1 else 0.0)
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                a += alpha[s - 2]
            new[s] = a * p[t, ext[s]]
        alpha = new
    total = alpha[-1] + (alpha[-2] if len(ext) > 1 else 0.0)
    return np.inf if total <= 0 else -np.log(total)  # a NaN total stays NaN


def _ctc_ref(logits, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    lp = _log_softmax_ref(logits.astype(np.float64), 2)
    il, tl = np.asarray(input_lengths), np.asarray(target_lengths)
    offsets = np.concatenate([[0], np.cumsum(tl)])
    nll = []
    for n in range(lp.shape[1]):
        target = targets[n, :tl[n]] if targets.ndim == 2 else targets[offsets[n]:offsets[n + 1]]
        nll.append(0.0 if il[n] == 0 and tl[n] == 0 else _ctc_nll(lp[:il[n], n], target, blank) if il[n] else np.inf)
    nll = np.array(nll)
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    if reduction == "mean":
        return _out((nll / np.maximum(tl, 1)).mean(), logits)
    return _out(nll.sum() if reduction == "sum" else nll, logits)


def _ctc_samples(dtype):
    logits = make((8, 3, 5), dtype)
    targets = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [2, 3, 1, 4]])
    il, tl = np.array([8, 6, 5]), np.array([4, 2, 3])
    for reduction in ("none", "mean", "sum"):
        yield Sample((logits, targets, il, tl), {"reduction": reduction}, grad_args=(0,), name=f"padded {reduction}")
    concatenated = np.concatenate([targets[n, :tl[n]] for n in range(3)])
    yield Sample((logits, concatenated, il, tl), {"reduction": "none"}, grad_args=(0,), name="concatenated")
    yield Sample((logits, targets, il, tl), {"blank": 4, "reduction": "sum"}, grad_args=(0,), name="blank=4")
    yield Sample((logits, targets, np.array([8, 2, 0]), np.array([4, 2, 0])), {"reduction": "none"},
                 grad_args=(0,), name="impossible and empty")
    yield Sample((logits, targets, np.array([8, 2, 5]), tl), {"reduction": "none", "zero_infinity": True},
                 grad_args=(0,), name="zero_infinity")


register(
    OpSpec("normalize", _normalize_ref, _normalize_samples, atol=1e-5, rtol=1e-4, unsupported_error=RuntimeError,
           op=F.normalize),
    OpSpec("cosine_similarity", _cosine_similarity_ref, _cosine_similarity_samples, atol=1e-5, rtol=1e-4,
           unsupported_error=RuntimeError),
    OpSpec("pairwise_distance", _pairwise_distance_ref, _pairwise_distance_samples, atol=1e-5, rtol=1e-4,
           unsupported_error=RuntimeError, dtypes=NUMERIC,
           grad_samples=_grad_subset(_pairwise_distance_samples, "(3, 4)", "keepdim", "p=1.0", "p=3.0")),
    OpSpec("pdist", _pdist_ref, _pdist_samples, atol=1e-5, rtol=1e-4, unsupported_error=RuntimeError),
    OpSpec("alpha_dropout", _identity_ref, _alpha_dropout_samples, op=_seeded(F.alpha_dropout), random=True),
    OpSpec("feature_alpha_dropout", _identity_ref, _feature_dropout_samples, op=_seeded(F.feature_alpha_dropout),
           random=True),
    OpSpec("feature_dropout", _identity_ref,
           lambda d: [Sample(s.args, {"p": s.kwargs["p"], "train": s.kwargs["training"]}, name=s.name)
                      for s in _feature_dropout_samples(d)], op=_seeded(flow.feature_dropout), random=True),
    OpSpec("dropout1d", _identity_ref, _dropout_nd_samples((2, 3)), op=_seeded(F.dropout1d), random=True),
    OpSpec("dropout2d", _identity_ref, _dropout_nd_samples((4,)), op=_seeded(F.dropout2d), random=True),
    OpSpec("dropout3d", _identity_ref, _dropout_nd_samples((4, 5)), op=_seeded(F.dropout3d), random=True),
    OpSpec("gumbel_softmax", _gumbel_ref, _gumbel_samples, op=_seeded(F.gumbel_softmax), random=True,
           grad_samples=_grad_subset(_gumbel_samples, "soft", "dim=1")),  # hard: a straight-through estimator
    OpSpec("instance_norm", _instance_norm_ref, _instance_norm_samples, atol=1e-5, rtol=1e-4,
           grad_samples=_grad_subset(_instance_norm_samples, "(2, 3, 5)", "5-d")),
    OpSpec("local_response_norm", _local_response_norm_ref, _local_response_norm_samples, atol=1e-5, rtol=1e-4,
           dtypes=FLOATS + (flow.int64,)),
    OpSpec("rms_norm", _rms_norm_ref, _rms_norm_samples, atol=1e-5, rtol=1e-4),
    OpSpec("cosine_embedding_loss", _cosine_embedding_ref, _cosine_embedding_samples, atol=1e-5, rtol=1e-4,
           dtypes=ALL),
    OpSpec("hinge_embedding_loss", _hinge_embedding_ref,
           _reductions(lambda d: (make((3, 4), d), _signs((3, 4))), ({}, {"margin": 0.5})),
           unsupported_error=RuntimeError),
    OpSpec("margin_ranking_loss", _margin_ranking_ref,
           _reductions(lambda d: (make((5,), d), make((5,), d), _signs((5,)).astype(d.np_dtype)),
                       ({}, {"margin": 0.3})), dtypes=NUMERIC, unsupported_error=RuntimeError),
    OpSpec("soft_margin_loss", _soft_margin_ref,
           _reductions(lambda d: (make((3, 4), d), _signs((3, 4)).astype(d.np_dtype))), unsupported_error=RuntimeError),
    OpSpec("multilabel_soft_margin_loss", _multilabel_soft_margin_ref,
           _multilabel_soft_margin_samples),
    OpSpec("multi_margin_loss", _multi_margin_ref, _multi_margin_samples, atol=1e-5, rtol=1e-4),
    OpSpec("multilabel_margin_loss", _multilabel_margin_ref, _multilabel_margin_samples, atol=1e-5, rtol=1e-4),
    OpSpec("poisson_nll_loss", _poisson_nll_ref, _poisson_nll_samples, atol=1e-5, rtol=1e-4, dtypes=NUMERIC,
           unsupported_error=RuntimeError),
    OpSpec("gaussian_nll_loss", _gaussian_nll_ref, _gaussian_nll_samples, atol=1e-5, rtol=1e-4,
           unsupported_error=RuntimeError),
    OpSpec("triplet_margin_loss", _triplet_ref, _triplet_samples, atol=1e-5, rtol=1e-4, dtypes=NUMERIC,
           unsupported_error=RuntimeError),
    OpSpec("embedding_bag", _embedding_bag_ref, _embedding_bag_samples, meta=False, atol=1e-5, rtol=1e-4,
           unsupported_error=RuntimeError),
    OpSpec("ctc_loss", _ctc_ref, _ctc_samples, op=_ctc_fn, atol=1e-5, rtol=1e-4,
           grad_samples=_grad_subset(_ctc_samples, "padded", "concatenated", "blank=4", "zero_infinity")),
)
