"""Neural-network functors: softmax / log_softmax, the losses, dropout, layer / group / batch norm,
embedding, one_hot and scaled_dot_product_attention, with PyTorch's signatures, defaults and errors.

The losses run one elementwise op per call and apply ``reduction`` with ``sum`` and a division
(Note [Loss ops are elementwise] in ops/nn.py); ``cross_entropy`` is ``log_softmax`` then ``nll``,
as in PyTorch, and ``nll`` reduces in its kernel (Note [The reduction of nll]). ``group_norm`` is
``layer_norm`` over (N, G, -1), and training-mode ``batch_norm`` is ``batch_norm_stats`` then
``batch_norm_elemt``, so autograd differentiates through the batch statistics; the running
statistics are updated in place by a no-grad op.
"""

from __future__ import annotations

import math
import warnings

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.generator import using_generator
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import _wrap_dim
from oneflow_lite.functors.promotion import TORCH_NAMES, cast, tensors_dtype
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch

_bool = dt.bool_
_int64 = dt.int64


class _Functors:
    """Other functors, looked up on first use (their modules may register after this one)."""

    def __getattr__(self, name):
        f = get_functor(name)
        setattr(self, name, f)
        return f


_fn = _Functors()


def _op(op_type, inputs, outputs):
    builder = OpBuilder(op_type)
    for name in inputs:
        builder.input(name)
    for name in outputs:
        builder.output(name)
    return builder.build()


def _dims(shape) -> str:
    return str(list(shape))


def _sum(x):
    return _fn.ReduceSum(x, None, False, None)


def _sum_dim(x, dim, keepdim=False):
    return _fn.ReduceSum(x, (dim,), keepdim, None)


def _mul(a, b):
    return _fn.Mul(a, b, False)


def _reshape(x, shape):
    return _fn.Reshape(x, tuple(shape))


# ---- reduction ------------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce) -> str:
    """PyTorch's ``_Reduction.legacy_get_string``: the deprecated size_average / reduce flags."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  UserWarning, stacklevel=4)
    return ret


def _reduction(name, reduction, size_average=None, reduce=None, allowed=("none", "mean", "sum")) -> str:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in allowed:
        raise ValueError(f"{name}: {reduction} is not a valid value for reduction; expected one of "
                         f"{', '.join(repr(r) for r in allowed)}")
    return reduction


def _reduce(loss, reduction):
    """``loss`` reduced: "none" as is, "sum", or "mean" (the sum over the element count: nan when empty)."""
    if reduction == "none":
        return loss
    total = _sum(loss)
    if reduction == "sum":
        return total
    return _fn.ScalarDiv(total, loss._meta.numel, False)


def _warn_broadcast(x, t):
    warnings.warn(f"Using a target size ({t._meta.shape}) that is different to the input size ({x._meta.shape}). "
                  f"This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                  f"same size.", UserWarning, stacklevel=4)


# ---- softmax / log_softmax ------------------------------------------------------------------------
class _SoftmaxBase:
    """``op(input, dim=None, *, dtype=None)``: dim None picks PyTorch's legacy implicit dim, with its warning."""

    name = op_type = ""

    def __init__(self):
        self.op = _op(self.op_type, ("in",), ("out",))
        self._attrs = {}  # (ndim, dim) -> AttrMap(axis=...)

    def __call__(self, x, dim=None, dtype=None, _stacklevel=3):
        ndim = x._meta.ndim
        if dim is None:
            dim = 0 if ndim in (0, 1, 3) else 1
            warnings.warn(f"Implicit dimension choice for {self.name} has been deprecated. Change the call to "
                          f"include dim=X as an argument.", UserWarning, stacklevel=_stacklevel)
        attrs = self._attrs.get((ndim, dim))
        if attrs is None:
            attrs = self._attrs[(ndim, dim)] = AttrMap({"axis": _wrap_dim(dim, ndim, self.name)})
        if dtype is not None:
            x = cast(x, dtype)
        return dispatch(self.op, (x,), attrs)[0]


@functor("Softmax")
class SoftmaxFunctor(_SoftmaxBase):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (max subtracted)."""

    name, op_type = "softmax", "softmax"


@functor("LogSoftmax")
class LogSoftmaxFunctor(_SoftmaxBase):
    """``x - logsumexp(x)`` along ``dim``."""

    name, op_type = "log_softmax", "log_softmax"


# ---- nll_loss / cross_entropy ----------------------------------------------------------------------
class _ClassOp:
    """A class loss op of (input, target, weight?) with ``ignore_index`` and ``reduction`` attrs (Note [The
    reduction of nll] in ops/nn.py): one expr with weight, one without."""

    def __init__(self, op_type):
        self.op = _op(op_type, ("input", "target"), ("output",))
        self.op_w = _op(op_type, ("input", "target", "weight"), ("output",))
        self._attrs = {}

    def __call__(self, x, target, weight, ignore_index, reduction):
        attrs = cached_attrs(self._attrs, ("ignore_index", "reduction"), (ignore_index, reduction))
        if weight is None:
            return dispatch(self.op, (x, target), attrs)[0]
        return dispatch(self.op_w, (x, target, weight), attrs)[0]


def _check_input_dims(x):
    if x._meta.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")


@functor("NLLLoss")
class NLLLossFunctor:
    """``nll_loss``: ``-weight[t] * input[n, t, ...]`` per element, 0 where ``t == ignore_index``; "mean"
    divides the sum by the total weight of the targets (nan when every target is ignored)."""

    def __init__(self):
        self.nll = _ClassOp("nll")

    def __call__(self, x, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        reduction = _reduction("nll_loss", reduction, size_average, reduce)
        _check_input_dims(x)
        return self.nll(x, target, weight, ignore_index, reduction)


@functor("CrossEntropy")
class CrossEntropyFunctor:
    """``cross_entropy``: class indices (``nll_loss`` of ``log_softmax``) or, when the target has the
    input's shape, class probabilities; ``label_smoothing`` mixes in the uniform distribution (PyTorch's
    formulas, including its "mean" denominators)."""

    def __init__(self):
        self.nll = _ClassOp("nll")
        self.smooth = _ClassOp("nll_smooth")
        self.log_softmax = LogSoftmaxFunctor()

    def __call__(self, x, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        reduction = _reduction("cross_entropy", reduction, size_average, reduce)
        _check_input_dims(x)
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        m = x._meta
        class_dim = 0 if m.ndim == 1 else 1
        num_classes = m.shape[class_dim]
        logp = self.log_softmax(x, class_dim)
        if target._meta.shape == m.shape:
            return self._probabilities(logp, target, weight, ignore_index, reduction, label_smoothing, class_dim)
        loss = self.nll(logp, target, weight, ignore_index, reduction)
        if label_smoothing == 0.0:
            return loss
        smooth = self.smooth(logp, target, weight, ignore_index, reduction)
        return _fn.Add(_fn.ScalarMul(loss, 1 - label_smoothing, False),
                       _fn.ScalarMul(smooth, label_smoothing / num_classes, False), 1, False)

    @staticmethod
    def _probabilities(logp, target, weight, ignore_index, reduction, label_smoothing, class_dim):
        td = target._meta.dtype
        if not td.is_floating_point:
            raise RuntimeError(f"cross_entropy: Expected floating point type for target with class probabilities, "
                               f"got {TORCH_NAMES[td]}")
        if ignore_index >= 0:
            raise RuntimeError("cross_entropy: ignore_index is not supported for floating point target")
        m = logp._meta
        num_classes = m.shape[class_dim]
        if label_smoothing > 0.0 and num_classes:
            target = _fn.ScalarAdd(_fn.ScalarMul(target, 1 - label_smoothing, False),
                                   label_smoothing / num_classes, 1, False)
        prod = _mul(logp, target)
        if weight is not None:
            if weight._meta.shape != (num_classes,):
                raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {num_classes} "
                                   f"classes or no classes but got weight tensor of shape: {_dims(weight.shape)}")
            prod = _mul(prod, _reshape(weight, _class_view(m.ndim, num_classes)))
        if reduction == "none":
            return _fn.Neg(_sum_dim(prod, class_dim))
        total = _fn.Neg(_sum(prod))
        if reduction == "sum":
            return total
        return _fn.ScalarDiv(total, m.numel // num_classes if num_classes else 0, False)


def _class_view(ndim, num_classes):
    """The shape that broadcasts a (C,) weight over an (N, C, d...) tensor (or a (C,) one)."""
    return (num_classes,) if ndim == 1 else (1, num_classes) + (1,) * (ndim - 2)


# ---- elementwise losses -----------------------------------------------------------------------------
class _ElementwiseLoss:
    """A loss op of input and target in their common dtype (PyTorch's promotion), then ``reduction``."""

    name = op_type = ""
    attr_names: tuple = ()
    warn_broadcast = True

    def __init__(self):
        self.op = _op(self.op_type, ("input", "target"), ("out",))
        self._attrs = {}

    def _loss(self, x, t, attr_values=()):
        if self.warn_broadcast and x._meta.shape != t._meta.shape:
            _warn_broadcast(x, t)
        d = tensors_dtype(x, t)
        attrs = cached_attrs(self._attrs, self.attr_names, attr_values) if self.attr_names else None
        return dispatch(self.op, (cast(x, d), cast(t, d)), attrs)[0]


@functor("MseLoss")
class MseLossFunctor(_ElementwiseLoss):
    """``(input - target) ** 2``."""

    name, op_type = "mse_loss", "mse_loss"

    def __call__(self, x, t, size_average=None, reduce=None, reduction="mean"):
        reduction = _reduction(self.name, reduction, size_average, reduce)
        return _reduce(self._loss(x, t), reduction)


@functor("L1Loss")
class L1LossFunctor(_ElementwiseLoss):
    """``|input - target|``."""

    name, op_type = "l1_loss", "l1_loss"

    def __call__(self, x, t, size_average=None, reduce=None, reduction="mean"):
        reduction = _reduction(self.name, reduction, size_average, reduce)
        return _reduce(self._loss(x, t), reduction)


@functor("SmoothL1Loss")
class SmoothL1LossFunctor(_ElementwiseLoss):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``; beta 0 is L1)."""

    name, op_type = "smooth_l1_loss", "smooth_l1_loss"
    attr_names = ("beta",)

    def __call__(self, x, t, size_average=None, reduce=None, reduction="mean", beta=1.0):
        reduction = _reduction(self.name, reduction, size_average, reduce)
        if beta < 0:
            raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
        return _reduce(self._loss(x, t, (beta,)), reduction)


@functor("HuberLoss")
class HuberLossFunctor(_ElementwiseLoss):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)`` (``d = input - target``)."""

    name, op_type = "huber_loss", "huber_loss"
    attr_names = ("delta",)

    def __call__(self, x, t, reduction="mean", delta=1.0):
        reduction = _reduction(self.name, reduction)
        if delta <= 0:
            raise RuntimeError("huber_loss does not support non-positive values for delta.")
        return _reduce(self._loss(x, t, (delta,)), reduction)


@functor("KLDiv")
class KLDivFunctor(_ElementwiseLoss):
    """``target * (log(target) - input)`` (0 where target is 0), or ``exp(target) * (target - input)``
    with ``log_target``; "batchmean" divides the sum by the batch size."""

    name, op_type = "kl_div", "kl_div_loss"
    attr_names = ("log_target",)
    warn_broadcast = False

    def __call__(self, x, t, size_average=None, reduce=None, reduction="mean", log_target=False):
        reduction = _reduction(self.name, reduction, size_average, reduce, ("none", "mean", "sum", "batchmean"))
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          UserWarning, stacklevel=3)
        loss = self._loss(x, t, (log_target,))
        if reduction != "batchmean":
            return _reduce(loss, reduction)
        total = _sum(loss)
        return total if x._meta.ndim == 0 else _fn.ScalarDiv(total, x._meta.shape[0], False)


def _check_same_size(x, t, message):
    if x._meta.shape != t._meta.shape:
        raise ValueError(message.format(t._meta.shape, x._meta.shape))


def _apply_weight(name, loss, weight):
    """``loss * weight``, the weight broadcast to the loss's shape (so it also gets a gradient)."""
    if weight is None:
        return loss
    out = _mul(loss, weight)
    if out._meta.shape != loss._meta.shape:
        raise RuntimeError(f"{name}: weight of shape {_dims(weight.shape)} cannot be broadcast to the input's "
                           f"shape {_dims(loss.shape)}")
    return out


@functor("BinaryCrossEntropy")
class BinaryCrossEntropyFunctor(_ElementwiseLoss):
    """``-(t log(x) + (1 - t) log(1 - x))`` with each log clamped to >= -100, as PyTorch does."""

    name, op_type = "binary_cross_entropy", "binary_cross_entropy"
    warn_broadcast = False

    def __call__(self, x, t, weight=None, size_average=None, reduce=None, reduction="mean"):
        reduction = _reduction(self.name, reduction, size_average, reduce)
        _check_same_size(x, t, "Using a target size ({}) that is different to the input size ({}) is deprecated. "
                               "Please ensure they have the same size.")
        return _reduce(_apply_weight(self.name, self._loss(x, t), weight), reduction)


@functor("BinaryCrossEntropyWithLogits")
class BinaryCrossEntropyWithLogitsFunctor:
    """``(1 - t) x + (1 + (pos_weight - 1) t) log(1 + exp(-x))``, computed stably; ``pos_weight``
    broadcasts over the input (one per class along the last dim)."""

    name = "binary_cross_entropy_with_logits"

    def __init__(self):
        self.op = _op("binary_cross_entropy_with_logits", ("input", "target"), ("out",))
        self.op_pw = _op("binary_cross_entropy_with_logits", ("input", "target", "pos_weight"), ("out",))

    def __call__(self, x, t, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        reduction = _reduction(self.name, reduction, size_average, reduce)
        _check_same_size(x, t, "Target size ({}) must be the same as input size ({})")
        d = tensors_dtype(x, t)
        if pos_weight is None:
            loss = dispatch(self.op, (cast(x, d), cast(t, d)))[0]
        else:
            d = dt.promote_types(d, pos_weight._meta.dtype)
            loss = dispatch(self.op_pw, (cast(x, d), cast(t, d), cast(pos_weight, d)))[0]
            if loss._meta.shape != x._meta.shape:
                raise RuntimeError(f"{self.name}: pos_weight of shape {_dims(pos_weight.shape)} cannot be broadcast "
                                   f"to the input's shape {_dims(x.shape)}")
        return _reduce(_apply_weight(self.name, loss, weight), reduction)


# ---- dropout ----------------------------------------------------------------------------------------
@functor("Dropout")
class DropoutFunctor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (training only).

    The mask is drawn from ``generator`` or the device's default generator. Not training, ``p == 0``
    or an empty input return the input itself, as PyTorch does.
    """

    def __init__(self):
        self.mask_op = _op("random_mask_like", ("like",), ("out",))
        self.op = _op("dropout", ("in", "mask"), ("out",))
        self._mask_attrs = {}
        self._attrs = {}

    def __call__(self, x, p=0.5, training=True, inplace=False, generator=None):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        if not training or p == 0.0 or x._meta.numel == 0:
            return x
        rate = cached_attrs(self._mask_attrs, ("rate",), (p,))
        if generator is None:
            mask = dispatch(self.mask_op, (x,), rate)[0]
        else:
            if generator.device is not x._meta.device and x._meta.device.device_type.has_storage:
                raise RuntimeError(f"dropout: Expected a '{x._meta.device.type}' device type for generator but "
                                   f"found '{generator.device.type}'")
            with using_generator(generator):
                mask = dispatch(self.mask_op, (x,), rate)[0]
        # p == 1 drops everything: x * 0, so a NaN stays NaN (PyTorch multiplies by a zero tensor).
        attrs = cached_attrs(self._attrs, ("scale",), (0.0 if p == 1.0 else 1.0 / (1.0 - p),))
        if inplace:
            return dispatch(self.op, (x, mask), attrs, (x,))[0]
        return dispatch(self.op, (x, mask), attrs)[0]


# ---- normalisation ----------------------------------------------------------------------------------
class _LayerNormOps:
    """The layer_norm exprs for each combination of gamma / beta, and their attrs."""

    _NAMES = ("begin_norm_axis", "epsilon", "scale", "center")

    def __init__(self):
        self.ops = {}
        for scale in (False, True):
            for center in (False, True):
                inputs = ("x",) + (("gamma",) if scale else ()) + (("beta",) if center else ())
                self.ops[(scale, center)] = _op("layer_norm", inputs, ("y", "mean", "inv_variance"))
        self._attrs = {}

    def __call__(self, x, begin_norm_axis, gamma, beta, eps):
        scale, center = gamma is not None, beta is not None
        attrs = cached_attrs(self._attrs, self._NAMES, (begin_norm_axis, eps, scale, center))
        inputs = (x,) + ((gamma,) if scale else ()) + ((beta,) if center else ())
        return dispatch(self.ops[(scale, center)], inputs, attrs)[0]


@functor("LayerNorm")
class LayerNormFunctor:
    """Normalise over the trailing ``normalized_shape`` dims: ``(x - mean) / sqrt(var + eps) * weight + bias``
    (biased variance)."""

    def __init__(self):
        self.layer_norm = _LayerNormOps()

    def __call__(self, x, normalized_shape, weight=None, bias=None, eps=1e-5):
        shape = x._meta.shape
        k = len(normalized_shape)
        if k == 0:
            raise RuntimeError(f"layer_norm: Expected normalized_shape to be at least 1-dimensional, i.e., containing "
                               f"at least one element, but got normalized_shape = {_dims(normalized_shape)}")
        if k > len(shape) or tuple(shape[len(shape) - k:]) != tuple(normalized_shape):
            raise RuntimeError(f"layer_norm: Given normalized_shape={_dims(normalized_shape)}, expected input with "
                               f"shape [*, {', '.join(map(str, normalized_shape))}], but got input of size"
                               f"{_dims(shape)}")
        for name, t in (("weight", weight), ("bias", bias)):
            if t is not None and tuple(t._meta.shape) != tuple(normalized_shape):
                raise RuntimeError(f"layer_norm: Expected {name} to be of same shape as normalized_shape, but got "
                                   f"{name} of shape {_dims(t.shape)} and normalized_shape = "
                                   f"{_dims(normalized_shape)}")
        return self.layer_norm(x, len(shape) - k, weight, bias, eps)


@composite("GroupNorm")
def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each group of ``C / num_groups`` channels (and all spatial positions) of each sample,
    then scale and shift per channel: ``layer_norm`` over the input viewed as (N, G, -1)."""
    shape = x._meta.shape
    if len(shape) < 2:
        raise RuntimeError(f"group_norm: Expected at least 2 dimensions for input tensor but received "
                           f"{len(shape)}")
    n, c = shape[0], shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by num_groups, but "
                           f"got input of shape {_dims(shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._meta.shape) != (c,):
            raise RuntimeError(f"group_norm: Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {_dims(t.shape)} and input of "
                               f"shape {_dims(shape)}")
    group_size = math.prod(shape[1:]) // num_groups
    grouped = F.reshape(x, (n, num_groups, group_size))
    y = F.reshape(F.layer_norm(grouped, (group_size,), None, None, eps), shape)
    channel = (c,) + (1,) * (len(shape) - 2)
    if weight is not None:
        y = F.mul(y, F.reshape(weight, channel))
    if bias is not None:
        y = F.add(y, F.reshape(bias, channel))
    return y


@functor("BatchNorm")
class BatchNormFunctor:
    """Normalise each channel (dim 1) by the batch's statistics (``training``) or the running ones.

    Training normalises with the biased batch variance and updates ``running_mean`` / ``running_var``
    in place: ``(1 - momentum) * running + momentum * batch``, with the unbiased variance, as PyTorch.
    """

    def __init__(self):
        self.stats = _op("batch_norm_stats", ("x",), ("mean", "var"))
        self.update = _op("running_stat_update", ("running", "value"), ("out",))
        self.elemt = {}
        for scale in (False, True):
            for center in (False, True):
                inputs = ("x", "mean", "var") + (("weight",) if scale else ()) + (("bias",) if center else ())
                self.elemt[(scale, center)] = _op("batch_norm_elemt", inputs, ("y",))
        self._attrs = {}
        self._update_attrs = {}

    def __call__(self, x, running_mean=None, running_var=None, weight=None, bias=None, training=False,
                 momentum=0.1, eps=1e-5):
        m = x._meta
        if m.ndim < 2:
            raise ValueError(f"batch_norm: expected an input of 2 or more dimensions (N, C, ...), got {m.ndim}D input")
        c = m.shape[1]
        for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                        ("bias", bias)):
            if t is not None:
                if t._meta.numel != c:
                    raise RuntimeError(f"batch_norm: {name} should contain {c} elements not {t._meta.numel}")
                if t._meta.dtype is not m.dtype:
                    raise RuntimeError(f"batch_norm: {name} has dtype {t.dtype.name} but the input has "
                                       f"{m.dtype.name}; they must match")
        if weight is not None and weight._meta.ndim != 1:
            weight = _reshape(weight, (c,))
        if bias is not None and bias._meta.ndim != 1:
            bias = _reshape(bias, (c,))
        if training:
            per_channel = m.numel // c if c else 0
            if per_channel == 1:
                raise ValueError(f"batch_norm: Expected more than 1 value per channel when training, got input "
                                 f"size {_dims(m.shape)}")
            mean, var = dispatch(self.stats, (x,))
            if per_channel:
                self._update(running_mean, mean, momentum, 1.0)
                self._update(running_var, var, momentum, per_channel / (per_channel - 1))
        else:
            if running_mean is None or running_var is None:
                raise RuntimeError(f"batch_norm: {'running_mean' if running_mean is None else 'running_var'} must "
                                   f"be defined in evaluation mode")
            mean, var = running_mean, running_var
        scale, center = weight is not None, bias is not None
        attrs = cached_attrs(self._attrs, ("epsilon", "scale", "center"), (eps, scale, center))
        inputs = (x, mean, var) + ((weight,) if scale else ()) + ((bias,) if center else ())
        return dispatch(self.elemt[(scale, center)], inputs, attrs)[0]

    def _update(self, running, value, momentum, value_scale):
        if running is not None:
            attrs = cached_attrs(self._update_attrs, ("momentum", "value_scale"), (momentum, value_scale))
            dispatch(self.update, (running, value), attrs, (running,))


# ---- embedding / one_hot ----------------------------------------------------------------------------
@functor("Embedding")
class EmbeddingFunctor:
    """Rows of ``weight`` picked by the integer ``input``; the gradient of row ``padding_idx`` stays zero."""

    def __init__(self):
        self.op = _op("embedding", ("weight", "indices"), ("out",))
        self._attrs = {}

    def __call__(self, indices, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 sparse=False):
        d = indices._meta.dtype
        if d is not _int64 and d is not dt.int32:
            raise RuntimeError(f"embedding: Expected tensor for argument #1 'indices' to have one of the following "
                               f"scalar types: Long, Int; but got {TORCH_NAMES[d]} instead (while checking "
                               f"arguments for embedding)")
        if weight._meta.ndim != 2:
            raise RuntimeError(f"embedding: 'weight' must be 2-D, got shape {_dims(weight.shape)}")
        num = weight._meta.shape[0]
        if padding_idx is None:
            padding_idx = -1
        elif not -num <= padding_idx < num:
            raise ValueError(f"embedding: Padding_idx must be within num_embeddings (got {padding_idx} for "
                             f"{num} embeddings)")
        elif padding_idx < 0:
            padding_idx += num
        if max_norm is not None:
            raise NotImplementedError("embedding: max_norm is not supported (it renormalizes rows of weight in "
                                      "place); renormalize the weight explicitly before the lookup")
        if sparse:
            raise NotImplementedError("embedding: sparse gradients are not supported; use sparse=False")
        attrs = cached_attrs(self._attrs, ("padding_idx", "scale_grad_by_freq"), (padding_idx, scale_grad_by_freq))
        return dispatch(self.op, (weight, indices), attrs)[0]


@functor("OneHot")
class OneHotFunctor:
    """An int64 tensor of shape ``input.shape + (num_classes,)``, 1 at each value's class; ``num_classes=-1``
    uses ``input.max() + 1`` (read from the data, so not on meta)."""

    def __init__(self):
        self.op = _op("one_hot", ("indices",), ("out",))
        self.count = _op("one_hot_num_classes", ("indices",), ("out",))
        self._attrs = {}

    def __call__(self, x, num_classes=-1):
        m = x._meta
        if m.dtype is not _int64:
            raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
        if num_classes == -1:
            if not m.device.device_type.has_storage:
                raise RuntimeError(f"one_hot: num_classes=-1 infers the number of classes from the values of the "
                                   f"input, which a tensor on '{m.device}' does not hold; pass num_classes")
            num_classes = dispatch(self.count, (x,))[0].item()
        elif num_classes < -1:
            raise RuntimeError(f"one_hot: num_classes should be -1 or non-negative, got {num_classes}")
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("depth",), (num_classes,)))[0]


# ---- attention ----------------------------------------------------------------------------------------
@functor("ScaledDotProductAttention")
class ScaledDotProductAttentionFunctor:
    """``softmax(q @ k^T * scale + bias) @ v`` (PyTorch's math reference), ``scale`` defaulting to
    ``1 / sqrt(E)``. A bool ``attn_mask`` allows attention where True, a float one is added; ``is_causal``
    allows key ``j <= i`` for query ``i``. Fully masked rows give 0 (PyTorch's ``_safe_softmax``).
    ``enable_gqa`` lets ``Hq`` query heads share ``Hk`` key / value heads (``Hq % Hk == 0``)."""

    def __init__(self):
        self.bias_op = _op("attn_mask_bias", (), ("out",))
        self.mask_bias_op = _op("attn_mask_bias", ("mask",), ("out",))
        self.softmax = _op("safe_softmax", ("in",), ("out",))
        self._softmax_attrs = cached_attrs({}, ("axis",), (-1,))
        self._bias_attrs = {}

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        qm, km, vm = q._meta, k._meta, v._meta
        if not qm.dtype is km.dtype is vm.dtype:
            raise RuntimeError(f"scaled_dot_product_attention: Expected query, key, and value to have the same "
                               f"dtype, but got query.dtype: {qm.dtype.name}, key.dtype: {km.dtype.name} and "
                               f"value.dtype: {vm.dtype.name} instead.")
        if not qm.dtype.is_floating_point:
            raise OpKernelNotFoundError(f"scaled_dot_product_attention: not implemented for dtype {qm.dtype.name}; "
                                        f"query, key and value must be float16, float32 or float64")
        if min(qm.ndim, km.ndim, vm.ndim) < 2:
            raise RuntimeError(f"scaled_dot_product_attention: query, key and value need at least 2 dimensions "
                               f"(..., L or S, E), got {qm.ndim}, {km.ndim} and {vm.ndim}")
        if is_causal and attn_mask is not None:
            raise RuntimeError("scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        seq_q, seq_k, e = qm.shape[-2], km.shape[-2], qm.shape[-1]
        if km.shape[-1] != e or vm.shape[-2] != seq_k:
            raise RuntimeError(f"scaled_dot_product_attention: expected key of shape (..., S, {e}) and value of "
                               f"shape (..., S, Ev) for query of shape {_dims(qm.shape)}, got key "
                               f"{_dims(km.shape)} and value {_dims(vm.shape)}")
        if scale is None:
            scale = 1.0 / math.sqrt(e) if e else math.inf
        grouped = enable_gqa
        if grouped:
            q, k, v = self._group(q, k, v)
        scores = _fn.ScalarMul(_fn.MatMul(q, _fn.Transpose(k, -2, -1)), scale, False)
        if grouped:  # (..., Hk, G, L, S) -> (..., Hq, L, S), where the mask applies
            s = scores._meta.shape
            scores = _reshape(scores, (*s[:-4], s[-4] * s[-3], seq_q, seq_k))
        bias = None
        if attn_mask is not None:
            md = attn_mask._meta.dtype
            if md is _bool:
                attrs = cached_attrs(self._bias_attrs, ("causal_shape", "dtype"), ((), qm.dtype))
                bias = dispatch(self.mask_bias_op, (attn_mask,), attrs)[0]
            elif md is qm.dtype:
                bias = attn_mask
            else:
                raise RuntimeError(f"scaled_dot_product_attention: Expected attn_mask dtype to be bool or to match "
                                   f"query dtype ({qm.dtype.name}), but got {md.name}")
        elif is_causal:
            attrs = cached_attrs(self._bias_attrs, ("causal_shape", "dtype", "device"),
                                 ((seq_q, seq_k), qm.dtype, qm.device))
            bias = dispatch(self.bias_op, (), attrs)[0]
        if bias is not None:
            scores = _fn.Add(scores, bias, 1, False)
        attn = dispatch(self.softmax, (scores,), self._softmax_attrs)[0]
        if dropout_p > 0.0:
            attn = _fn.Dropout(attn, dropout_p, True, False, None)
        if not grouped:
            return _fn.MatMul(attn, v)
        a = attn._meta.shape
        hk = k._meta.shape[-4]
        out = _fn.MatMul(_reshape(attn, (*a[:-3], hk, a[-3] // hk, seq_q, seq_k)), v)
        o = out._meta.shape
        return _reshape(out, (*o[:-4], a[-3], seq_q, o[-1]))

    @staticmethod
    def _group(q, k, v):
        """Views putting query head ``h`` with key / value head ``h // (Hq // Hk)``: q as (..., Hk, G, L, E),
        k and v as (..., Hk, 1, S, E)."""
        qs, ks, vs = q._meta.shape, k._meta.shape, v._meta.shape
        if min(len(qs), len(ks), len(vs)) < 3:
            raise RuntimeError("scaled_dot_product_attention: enable_gqa needs query, key and value of at least 3 "
                               "dimensions (..., heads, L or S, E)")
        hq, hk = qs[-3], ks[-3]
        if vs[-3] != hk or hk == 0 or hq % hk:
            raise RuntimeError(f"scaled_dot_product_attention: enable_gqa needs the number of query heads ({hq}) to "
                               f"be a multiple of the number of key / value heads ({hk} and {vs[-3]})")
        return (_reshape(q, (*qs[:-3], hk, hq // hk, *qs[-2:])), _reshape(k, (*ks[:-3], hk, 1, *ks[-2:])),
                _reshape(v, (*vs[:-3], hk, 1, *vs[-2:])))
