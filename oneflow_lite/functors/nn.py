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

import numpy as np

from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import DispatchKey, key_set
from oneflow_lite.dispatch.tls import ExcludeDispatchKeyGuard
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.generator import using_generator
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, Tensor, _wrap_dim
from oneflow_lite.functors.creation import tensor
from oneflow_lite.functors.promotion import TORCH_NAMES, cast, check_converts, overflowed_narrow, tensors_dtype
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.functors.shape import cached_attrs, warn_at_caller
from oneflow_lite.interpreters.autocast import fp32_function
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


def _check_input_dims(name, x):
    if x._meta.ndim == 0:
        raise ValueError(f"{name}: Expected 1 or more dimensions (got 0)")


@functor("NLLLoss")
class NLLLossFunctor:
    """``nll_loss``: ``-weight[t] * input[n, t, ...]`` per element, 0 where ``t == ignore_index``; "mean"
    divides the sum by the total weight of the targets (nan when every target is ignored)."""

    def __init__(self):
        self.nll = _ClassOp("nll")

    def __call__(self, x, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        reduction = _reduction("nll_loss", reduction, size_average, reduce)
        _check_input_dims("nll_loss", x)
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
        _check_input_dims("cross_entropy", x)
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        m = x._meta
        class_dim = 0 if m.ndim == 1 else 1
        num_classes = m.shape[class_dim]
        if _flat_indices(target, m, num_classes):
            loss = self(x, _reshape(target, m.shape[:class_dim] + m.shape[class_dim + 1:]), weight, None,
                        ignore_index, None, reduction, label_smoothing)
            return _reshape(loss, target._meta.shape) if reduction == "none" else loss
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


def _flat_indices(target, m, num_classes) -> bool:
    """Whether ``target`` holds class indices for an input of meta ``m`` in another shape of as many elements,
    with as many dims as the input (OneFlow flattens the target: its tutorials pass (N, 1) indices for (N, C)
    logits); ``cross_entropy`` then reads it in the input's shape without the class dim."""
    t = target._meta
    return (t.ndim == m.ndim and t.ndim > 1 and t.shape != m.shape and not t.dtype.is_floating_point
            and t.dtype is not _bool and num_classes > 0 and t.numel == m.numel // num_classes)


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
        if not beta >= 0:  # NaN too
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


def _check_same_size(name, x, t, message):
    if x._meta.shape != t._meta.shape:
        raise ValueError(f"{name}: " + message.format(t._meta.shape, x._meta.shape))


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
        _check_same_size(self.name, x, t, "Using a target size ({}) that is different to the input size ({}) is "
                                          "deprecated. Please ensure they have the same size.")
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
        _check_same_size(self.name, x, t, "Target size ({}) must be the same as input size ({})")
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
            raise ValueError(f"dropout: dropout probability has to be between 0 and 1, but got {p}")
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
# Note [Mixed-precision normalisation]
# PyTorch's cpu batch_norm, group_norm and layer_norm (and instance_norm, a batch_norm) take a float16 /
# bfloat16 input with float32 parameters (weight, bias, running statistics): they compute in float32 and return
# the input's dtype, the parameters are not rounded, and the running statistics stay float32. That is how a
# float32 BatchNorm / GroupNorm / LayerNorm / InstanceNorm module runs after a lower-precision op under
# ``flow.autocast`` (none of them is on an autocast list; a float32 input stays float32). The functors do the same:
# the input is cast to float32 (a recorded, differentiable cast), normalised with the float32 parameters, and
# the result cast back once. Parameters of mixed dtypes (some float32, some the input's) are an error, as in
# PyTorch.
_float32 = dt.float32
_LOWER_PRECISION = (dt.float16, dt.bfloat16)


def _mixed_precision(op: str, x_dtype, params) -> bool:
    """Whether a normalisation of a ``x_dtype`` input with these ``(name, tensor or None)`` parameters runs in
    float32 (Note [Mixed-precision normalisation]): the input is float16 / bfloat16 and the given parameters are
    all float32. Raises when a parameter has another dtype than the input's (or than float32 in that case)."""
    given = [(name, t._meta.dtype) for name, t in params if t is not None]
    mixed = x_dtype in _LOWER_PRECISION and bool(given) and all(d is _float32 for _, d in given)
    expected = _float32 if mixed else x_dtype
    for name, d in given:
        if d is not expected:
            also = (f" (or float32 for all of {', '.join(n for n, _ in given)})"
                    if x_dtype in _LOWER_PRECISION else "")
            raise RuntimeError(f"{op}: {name} has dtype {d.name} but the input has {x_dtype.name}; they must "
                               f"match{also}")
    return mixed


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
        return self.outputs(x, begin_norm_axis, gamma, beta, eps)[0]

    def outputs(self, x, begin_norm_axis, gamma, beta, eps):
        """(y, mean, inv_variance) of the layer_norm op."""
        scale, center = gamma is not None, beta is not None
        attrs = cached_attrs(self._attrs, self._NAMES, (begin_norm_axis, eps, scale, center))
        inputs = (x,) + ((gamma,) if scale else ()) + ((beta,) if center else ())
        return dispatch(self.ops[(scale, center)], inputs, attrs)


@functor("LayerNorm")
class LayerNormFunctor:
    """Normalise over the trailing ``normalized_shape`` dims: ``(x - mean) / sqrt(var + eps) * weight + bias``
    (biased variance)."""

    def __init__(self):
        self.layer_norm = _LayerNormOps()

    def __call__(self, x, normalized_shape, weight=None, bias=None, eps=1e-5):
        begin = _check_layer_norm(x, normalized_shape, weight, bias)
        if _mixed_precision("layer_norm", x._meta.dtype, (("weight", weight), ("bias", bias))):
            return cast(self.layer_norm(cast(x, _float32), begin, weight, bias, eps), x._meta.dtype)
        return self.layer_norm(x, begin, weight, bias, eps)


def _check_layer_norm(x, normalized_shape, weight, bias) -> int:
    """PyTorch's checks of a layer_norm call; returns the first normalised dim (``begin_norm_axis``)."""
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
    return len(shape) - k


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
    if n * c // num_groups * math.prod(shape[2:]) == 1:  # PyTorch's _verify_batch_size of (N * C / G, G, ...)
        raise ValueError(f"group_norm: Expected more than 1 value per channel when training, got input size "
                         f"{_dims(shape)}")
    params = (("weight", weight), ("bias", bias))
    for name, t in params:
        if t is not None and tuple(t._meta.shape) != (c,):
            raise RuntimeError(f"group_norm: Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {_dims(t.shape)} and input of "
                               f"shape {_dims(shape)}")
    if _mixed_precision("group_norm", x._meta.dtype, params):
        return cast(group_norm(cast(x, _float32), num_groups, weight, bias, eps), x._meta.dtype)
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
    A float16 / bfloat16 input with float32 parameters is normalised in float32 (Note [Mixed-precision
    normalisation]).
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
        params = (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias))
        for name, t in params:
            if t is not None and t._meta.numel != c:
                raise RuntimeError(f"batch_norm: {name} should contain {c} elements not {t._meta.numel}")
        if _mixed_precision("batch_norm", m.dtype, params):
            y = self(cast(x, _float32), running_mean, running_var, weight, bias, training, momentum, eps)
            return cast(y, m.dtype)
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
    """Rows of ``weight`` picked by the integer ``input``; the gradient of row ``padding_idx`` stays zero. With
    ``max_norm``, the rows picked are first renormalised in place (:func:`embedding_renorm_`, as PyTorch)."""

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
        if sparse:
            raise NotImplementedError("embedding: sparse gradients are not supported; use sparse=False")
        if max_norm is not None:
            embedding_renorm_(weight, indices, max_norm, norm_type)
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
        self.fused = _op("scaled_dot_product_attention", ("query", "key", "value"), ("out", "attn"))
        self.fused_masked = _op("scaled_dot_product_attention", ("query", "key", "value", "mask"), ("out", "attn"))
        self._fused_attrs = {}

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        e = _check_attention_args(q, k, v, attn_mask, is_causal)
        if scale is None:
            scale = 1.0 / math.sqrt(e) if e else math.inf
        if not enable_gqa and _fused_attention_applies(q, k, v, attn_mask, dropout_p, e):
            attrs = cached_attrs(self._fused_attrs, ("scale", "is_causal"), (float(scale), bool(is_causal)))
            if attn_mask is None:
                return dispatch(self.fused, (q, k, v), attrs)[0]
            return dispatch(self.fused_masked, (q, k, v, attn_mask), attrs)[0]
        return self._composite(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)

    def _composite(self, q, k, v, attn_mask, dropout_p, is_causal, scale, grouped):
        """The math reference: matmuls, the mask as a bias, ``safe_softmax``, dropout, for any call."""
        qm = q._meta
        seq_q, seq_k = qm.shape[-2], k._meta.shape[-2]
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
            else:
                bias = attn_mask
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


def _check_attention_args(q, k, v, attn_mask, is_causal) -> int:
    """PyTorch's errors for the arguments of scaled_dot_product_attention; E, the query's last dim."""
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
        raise RuntimeError("scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    e = qm.shape[-1]
    if km.shape[-1] != e or vm.shape[-2] != km.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: expected key of shape (..., S, {e}) and value of "
                           f"shape (..., S, Ev) for query of shape {_dims(qm.shape)}, got key "
                           f"{_dims(km.shape)} and value {_dims(vm.shape)}")
    if attn_mask is not None and attn_mask._meta.dtype is not _bool and attn_mask._meta.dtype is not qm.dtype:
        raise RuntimeError(f"scaled_dot_product_attention: Expected attn_mask dtype to be bool or to match query "
                           f"dtype ({qm.dtype.name}), but got {attn_mask._meta.dtype.name}")
    return e


# The dispatch keys under which attention stays the composite of matmuls and a softmax: dispatch modes see
# those ops (the FLOP counter counts the matmuls), autocast runs them at its precisions, vmap has their rules.
_COMPOSITE_KEYS = key_set(DispatchKey.Python, DispatchKey.Autocast, DispatchKey.Batched)
_FUSED_DTYPES = (dt.float16, dt.float32, dt.float64)


def _fused_attention_applies(q, k, v, attn_mask, dropout_p, e) -> bool:
    """Whether the call can run as one ``scaled_dot_product_attention`` op (Note [Fused attention] in ops/nn.py):
    no dropout, q / k / v with the same leading dims and E > 0, a mask that needs no gradient, cpu float16 / 32
    / 64, and no dispatch key that must see the composite."""
    qm, km, vm = q._meta, k._meta, v._meta
    if dropout_p > 0.0 or not e or qm.dtype not in _FUSED_DTYPES or not (qm.ndim == km.ndim == vm.ndim):
        return False
    if qm.shape[:-2] != km.shape[:-2] or qm.shape[:-2] != vm.shape[:-2]:
        return False
    keys = q._key_set | k._key_set | v._key_set
    if attn_mask is not None:
        if attn_mask.requires_grad:
            return False
        keys |= attn_mask._key_set
    if tls.ACTIVE[0]:
        keys = (keys | tls.state.included) & ~tls.state.excluded
    return not keys & _COMPOSITE_KEYS


# ---- distances --------------------------------------------------------------------------------------------
def _has_storage(x) -> bool:
    """Whether ``x`` holds values a composite may read (not a meta tensor, not a lazy one of a graph capture)."""
    return x._meta.device.device_type.has_storage and not x.is_lazy


@composite("Normalize")
def normalize(x, p=2.0, dim=1, eps=1e-12, out=None):
    """``normalize(input, p=2.0, dim=1, eps=1e-12, out=None)``: ``x / max(||x||_p, eps)`` along ``dim``."""
    _floating_input("normalize", x)
    denom = F.clamp(F.norm(x, p, dim, True), eps)
    result = F.div(x, denom)
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"normalize: out has shape {list(out.shape)}, but the result has shape "
                           f"{list(result.shape)}")
    out.copy_(result)
    return out


def _floating_kernel(name, x):
    """PyTorch's "not implemented for 'Long'" of the losses with floating kernels only."""
    d = x._meta.dtype
    if not d.is_floating_point:
        raise OpKernelNotFoundError(f"{name}: not implemented for '{TORCH_NAMES[d]}'; expected a floating point input")


def _no_bool(name, *tensors):
    if any(t._meta.dtype is _bool for t in tensors):
        raise RuntimeError(f"{name}: Subtraction, the `-` operator, with a bool tensor is not supported")


def _floating_input(name, x):
    d = x._meta.dtype
    if not d.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point tensor as input. Got {TORCH_NAMES[d]}")


def _broadcast_shape(name, a, b):
    try:
        return np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        raise RuntimeError(f"{name}: the shapes {_dims(a)} and {_dims(b)} do not broadcast") from None


@composite("CosineSimilarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``cosine_similarity(x1, x2, dim=1, eps=1e-8)``: ``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))``
    along ``dim`` of the broadcast inputs (each divided by its norm first, as PyTorch)."""
    d = tensors_dtype(x1, x2)
    if not eps >= 0:
        raise RuntimeError(f"cosine_similarity: eps must be non-negative, got: {eps}")
    if not d.is_floating_point:
        raise RuntimeError(f"cosine_similarity: expected common dtype to be floating point, yet common dtype is "
                           f"{TORCH_NAMES[d]}")
    x1, x2 = cast(x1, d), cast(x2, d)
    shape = _broadcast_shape("cosine_similarity", x1._meta.shape, x2._meta.shape)
    dim = _wrap_dim(dim, len(shape), "cosine_similarity")
    x1, x2 = F.expand(x1, shape), F.expand(x2, shape)
    n1 = F.clamp(F.norm(x1, 2.0, dim, True), eps)
    n2 = F.clamp(F.norm(x2, 2.0, dim, True), eps)
    return F.sum(F.mul(F.div(x1, n1), F.div(x2, n2)), dim)


@composite("PairwiseDistance")
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False)``: ``||x1 - x2 + eps||_p`` over the last
    dim of the broadcast inputs."""
    ndim = max(x1._meta.ndim, x2._meta.ndim)
    return F.norm(F.add(F.sub(x1, x2), eps), p, max(ndim - 1, 0) if ndim else -1, keepdim)


@composite("Pdist")
def pdist(x, p=2.0):
    """``pdist(input, p=2)``: the p-norm distances between the rows ``i < j`` of an (N, M) input, in row-major
    order of the pairs (N (N - 1) / 2 values)."""
    m = x._meta
    if m.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {m.ndim}D")
    if not m.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(m.shape[0], 1)
    i, j = tensor(i, device=m.device), tensor(j, device=m.device)
    return F.norm(F.sub(F.index_select(x, 0, i), F.index_select(x, 0, j)), p, 1)


# ---- dropout variants ---------------------------------------------------------------------------------------
_SELU_ALPHA_PRIME = 1.7580993408473766  # alpha * scale of selu: the value alpha dropout drops to (negated)


def _check_p(name, p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")


def _dropout_noise(name, x, p, feature, batched=True):
    """A float {0, 1} keep mask (probability ``1 - p``): one per element, or with ``feature`` one per channel
    (shape (N, C, 1, ...), or (C, 1, ...) for an unbatched input)."""
    m = x._meta
    if not m.dtype.is_floating_point:
        raise OpKernelNotFoundError(f"{name}: not implemented for '{TORCH_NAMES[m.dtype]}'; expected a floating "
                                    f"point input")
    if feature:  # an unbatched input counts one more dim: PyTorch's unsqueeze(0) before feature dropout
        if m.ndim + (not batched) < 2:
            raise RuntimeError(f"{name}: Feature dropout requires at least 2 dimensions in the input")
        lead = 2 if batched else 1
        like = F.empty(m.shape[:lead] + (1,) * (m.ndim - lead), dtype=m.dtype, device=m.device)
    else:
        like = x
    return F.cast(F.ops.random_mask_like(like, rate=p), m.dtype)


def _dropout_impl(name, x, p, train, inplace, feature=False, alpha=False, batched=True):
    """ATen's ``_dropout_impl``: dropout (``x * mask / (1 - p)``) or alpha dropout (``a * (x * mask +
    alpha' * (mask - 1)) + b``, keeping zero mean and unit variance), per element or per channel."""
    _check_p(name, p)
    if p == 0.0 or not train or x._meta.numel == 0:
        return x
    if p == 1.0:  # times a zero of the input's dtype (a bool input stays bool, as in PyTorch)
        return F.mul(x, F.zeros((), dtype=x._meta.dtype, device=x._meta.device), inplace=inplace)
    mask = _dropout_noise(name, x, p, feature, batched)
    if not alpha:
        return F.mul(x, F.mul(mask, 1.0 / (1.0 - p)), inplace=inplace)
    a = 1.0 / math.sqrt((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
    b = F.add(F.mul(mask, _SELU_ALPHA_PRIME * a), _SELU_ALPHA_PRIME * a * p - _SELU_ALPHA_PRIME * a)
    return F.add(F.mul(x, F.mul(mask, a), inplace=inplace), b, inplace=inplace)


@composite("AlphaDropout")
def alpha_dropout(x, p=0.5, training=False, inplace=False):
    """``alpha_dropout(input, p=0.5, training=False, inplace=False)``: dropout keeping the self-normalising
    property of selu (dropped elements take selu's negative saturation value, then an affine correction)."""
    return _dropout_impl("alpha_dropout", x, p, training, inplace, alpha=True)


@composite("FeatureAlphaDropout")
def feature_alpha_dropout(x, p=0.5, training=False, inplace=False):
    """``feature_alpha_dropout(input, p=0.5, training=False, inplace=False)``: alpha dropout of whole channels."""
    return _dropout_impl("feature_alpha_dropout", x, p, training, inplace, feature=True, alpha=True)


@composite("FeatureDropout")
def feature_dropout(x, p=0.5, train=True, inplace=False):
    """``feature_dropout(input, p, train)``: dropout of whole channels (dim 1) of an (N, C, ...) input."""
    return _dropout_impl("feature_dropout", x, p, train, inplace, feature=True)


def _warn_channel_dims(name, ndim, spatial):
    """PyTorch's deprecation warning for a dropout2d / dropout3d input of another rank (stacklevel: the caller of
    the functional function)."""
    warn_at_caller(f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an error in "
                   f"a future release. To retain the behavior and silence this warning, please use dropout instead. "
                   f"Note that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial "
                   f"dimensions, a channel dimension, and an optional batch dimension (i.e. {spatial + 1}D or "
                   f"{spatial + 2}D inputs).")


@composite("Dropout1d")
def dropout1d(x, p=0.5, training=True, inplace=False):
    """``dropout1d(input, p=0.5, training=True, inplace=False)``: zero whole channels of (N, C, L) or (C, L)."""
    _check_p("dropout1d", p)
    ndim = x._meta.ndim
    if ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {ndim}D input. Note that dropout1d "
                           f"exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           f"dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout_impl("dropout1d", x, p, training, inplace, feature=True, batched=ndim == 3)


@composite("Dropout2d")
def dropout2d(x, p=0.5, training=True, inplace=False):
    """``dropout2d(input, p=0.5, training=True, inplace=False)``: zero whole channels (dim 1) of (N, C, H, W); as
    in PyTorch, a 3-D input is read as (N, C, L), with a warning."""
    _check_p("dropout2d", p)
    ndim = x._meta.ndim
    if ndim not in (3, 4):
        _warn_channel_dims("dropout2d", ndim, 2)
    if ndim == 3:
        warn_at_caller("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                       "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                       "This behavior will change in a future release to interpret the input as one without a batch "
                       "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                       "switch to using dropout1d instead.")
    return _dropout_impl("dropout2d", x, p, training, inplace, feature=True)


@composite("Dropout3d")
def dropout3d(x, p=0.5, training=True, inplace=False):
    """``dropout3d(input, p=0.5, training=True, inplace=False)``: zero whole channels of (N, C, D, H, W) or
    (C, D, H, W); as in PyTorch, any input that is not 5-D is read as unbatched (its dim 0 holds the channels, so
    each element of a 1-D input is a channel), with a warning unless it is 4-D."""
    _check_p("dropout3d", p)
    ndim = x._meta.ndim
    if ndim not in (4, 5):
        _warn_channel_dims("dropout3d", ndim, 3)
    return _dropout_impl("dropout3d", x, p, training, inplace, feature=True, batched=ndim == 5)


# ---- more normalisation: instance_norm, local_response_norm, rms_norm ------------------------------------------
@composite("InstanceNorm")
def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its spatial positions: ``batch_norm`` of the input viewed as
    (1, N * C, ...), with the per-channel tensors repeated per sample (PyTorch's formulation). In training
    (``use_input_stats``) the running statistics become the batch mean of the per-sample updates."""
    shape = x._meta.shape
    if use_input_stats and math.prod(shape[2:]) == 1:
        raise ValueError(f"instance_norm: Expected more than 1 spatial element when training, got input size "
                         f"{_dims(shape)}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("instance_norm: running_mean and running_var must either both be None or neither be None")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("instance_norm: Expected running_mean and running_var to be defined when use_input_stats "
                           "is false")
    if len(shape) < 2:
        raise RuntimeError(f"instance_norm: Expected an input of at least 2 dimensions (N, C, ...), got input size "
                           f"{_dims(shape)}")
    n, c = shape[0], shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t._meta.numel != c:
            raise RuntimeError(f"instance_norm: {name} should contain {c} elements not {t._meta.numel}")

    def per_sample(t):
        return None if t is None else F.repeat(t, (n,))

    mean, var = per_sample(running_mean), per_sample(running_var)
    out = F.batch_norm(F.reshape(x, (1, n * c) + tuple(shape[2:])), mean, var, per_sample(weight),
                       per_sample(bias), use_input_stats, momentum, eps)
    if use_input_stats:
        for running, updated in ((running_mean, mean), (running_var, var)):
            if running is not None:
                running.copy_(F.mean(F.reshape(updated.detach(), (n, c)), 0))
    return F.reshape(out, shape)


@composite("LocalResponseNorm")
def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean(x**2 over the size channels around c)) ** beta``: the window of channel ``c`` is
    ``[c - size // 2, c + (size - 1) // 2]``, zero-padded (an average pool over the channel dim)."""
    shape = x._meta.shape
    ndim = len(shape)
    if ndim < 3:
        raise ValueError(f"local_response_norm: Expected 3D or higher dimensionality input (got {ndim} dimensions)")
    if x._meta.numel == 0:
        return x
    sq = F.mul(x, x)
    if overflowed_narrow(x, sq):
        return cast(local_response_norm(cast(x, dt.float64), size, alpha, beta, k), x._meta.dtype)
    lo, hi = size // 2, (size - 1) // 2
    if ndim == 3:
        div = F.squeeze(F.avg_pool2d(F.pad(F.unsqueeze(sq, 1), (0, 0, lo, hi)), (size, 1), 1), 1)
    else:
        sq = F.reshape(sq, (shape[0], 1, shape[1], shape[2], -1))
        div = F.reshape(F.squeeze(F.avg_pool3d(F.pad(sq, (0, 0, 0, 0, lo, hi)), (size, 1, 1), 1), 1), shape)
    return F.div(x, F.pow(F.add(F.mul(div, alpha), k), beta))


@composite("RmsNorm")
def rms_norm(x, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims; ``eps`` None is the
    input dtype's machine epsilon. float16 is computed in float32."""
    shape, d = x._meta.shape, x._meta.dtype
    k = len(normalized_shape)
    if k == 0:
        raise RuntimeError(f"rms_norm: Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                           f"least one element, but got normalized_shape = {_dims(normalized_shape)}")
    if k > len(shape) or tuple(shape[len(shape) - k:]) != tuple(normalized_shape):
        raise RuntimeError(f"rms_norm: Given normalized_shape={_dims(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{_dims(shape)}")
    if weight is not None and tuple(weight._meta.shape) != tuple(normalized_shape):
        raise RuntimeError(f"rms_norm: Expected weight to be of same shape as normalized_shape, but got weight of "
                           f"shape {_dims(weight.shape)} and normalized_shape = {_dims(normalized_shape)}")
    if not d.is_floating_point:
        raise OpKernelNotFoundError(f"rms_norm: not implemented for '{TORCH_NAMES[d]}'; expected a floating point "
                                    f"input")
    if eps is None:
        eps = dt.finfo(d).eps
    xc = cast(x, dt.float32) if d is dt.float16 else x
    dims = tuple(range(len(shape) - k, len(shape)))
    # sqrt(mean(x**2) + eps) as hypot(||x|| / sqrt(n), sqrt(eps)) = a sqrt(1 + (b / a)**2), a >= b the two: the
    # norm scales by the largest |x|, so huge values do not overflow where the result is finite (Note [Reduction
    # accumulation]); a >= sqrt(eps) > 0
    rms = F.div(F.norm(xc, 2.0, dims, True), math.sqrt(math.prod(normalized_shape)))
    if eps < 0:  # PyTorch takes it as given: sqrt(mean(x**2) + eps), NaN where the sum is negative
        y = F.div(xc, F.sqrt(F.add(F.mul(rms, rms), eps)))
    else:
        a, b = F.clamp(rms, math.sqrt(eps)), F.clamp(rms, None, math.sqrt(eps))
        ratio = F.div(b, a)
        y = F.div(xc, F.mul(a, F.sqrt(F.add(F.mul(ratio, ratio), 1.0))))
    if d is dt.float16:
        y = cast(y, d)
    return y if weight is None else F.mul(y, weight)


# ---- margin, embedding and likelihood losses (compositions; PyTorch's formulas and checks) -------------------
def _values_in_range(x, lo, hi) -> bool:
    """Whether every value of the integer tensor ``x`` is in [lo, hi) (read from the data; True without data)."""
    if not _has_storage(x) or x._meta.numel == 0:
        return True
    return lo <= F.amin(x).item() and F.amax(x).item() < hi


def _check_long(name, t, what="target"):
    if t._meta.dtype is not _int64:
        raise RuntimeError(f"{name}: expected scalar type Long but found {TORCH_NAMES[t._meta.dtype]} ({what})")


@composite("CosineEmbeddingLoss")
@fp32_function
def cosine_embedding_loss(x1, x2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``
    (cosines over the last dim, squared norms offset by 1e-12), else 0."""
    reduction = _reduction("cosine_embedding_loss", reduction, size_average, reduce)
    tdim = target._meta.ndim
    if tdim not in (0, 1):
        raise RuntimeError("cosine_embedding_loss: 0D or 1D target tensor expected, multi-target not supported")
    want = 2 if tdim == 1 else 1
    if x1._meta.ndim != want or x2._meta.ndim != want:
        raise RuntimeError(f"cosine_embedding_loss: {tdim}D target tensor expects {want}D input tensors, but found "
                           f"inputs with sizes {_dims(x1.shape)} and {_dims(x2.shape)}.")
    (u1, eps1), (u2, eps2) = _by_largest(x1, tdim, 1e-12), _by_largest(x2, tdim, 1e-12)
    prod = F.sum(F.mul(u1, u2), tdim)
    mag1 = F.add(F.sum(F.mul(u1, u1), tdim), eps1)
    mag2 = F.add(F.sum(F.mul(u2, u2), tdim), eps2)
    cos = F.div(prod, F.sqrt(F.mul(mag1, mag2)))
    pos = F.where(F.eq(target, 1), F.sub(1, cos), 0.0)
    neg = F.where(F.eq(target, -1), F.clamp(F.sub(cos, margin), 0.0), 0.0)
    return _reduce(F.add(pos, neg), reduction)


def _by_largest(x, dim, eps):
    """``(x / m, eps / m**2)``, ``m`` the largest ``|x|`` of a floating ``x`` along ``dim`` (1 where that is 0, Inf
    or NaN; 1 for other dtypes): the squares of the scaled values stay finite where those of ``x`` overflow
    (Note [Reduction accumulation])."""
    if not x._meta.dtype.is_floating_point:
        return x, eps
    m = F.amax(F.abs(x), dim)
    m = F.where(F.logical_and(F.gt(m, 0), F.lt(m, math.inf)), m, 1.0)  # comparisons, not isfinite: ONNX has them
    return F.div(x, F.unsqueeze(m, dim)), F.div(eps, F.mul(m, m))


@composite("HingeEmbeddingLoss")
@fp32_function
def hinge_embedding_loss(x, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1`` (both terms for other
    target values, as PyTorch)."""
    reduction = _reduction("hinge_embedding_loss", reduction, size_average, reduce)
    _floating_input("hinge_embedding_loss", x)
    check_converts("hinge_embedding_loss", "margin", margin, x._meta.dtype)  # PyTorch's check (1e30 in float16)
    margin_part = F.where(F.ne(target, 1), F.clamp(F.sub(margin, x), 0.0), 0.0)
    self_part = F.where(F.ne(target, -1), x, 0.0)
    return _reduce(F.add(margin_part, self_part), reduction)


@composite("MarginRankingLoss")
@fp32_function
def margin_ranking_loss(x1, x2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (x1 - x2) + margin)``."""
    reduction = _reduction("margin_ranking_loss", reduction, size_average, reduce)
    _no_bool("margin_ranking_loss", x1, x2)
    if not x1._meta.ndim == x2._meta.ndim == target._meta.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {x1.shape}, input2: {x2.shape}, target: {target.shape} ")
    return _reduce(F.clamp(F.add(F.mul(F.neg(target), F.sub(x1, x2)), margin), 0.0), reduction)


@composite("SoftMarginLoss")
@fp32_function
def soft_margin_loss(x, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * x))``, computed as ``softplus`` (finite where PyTorch's ``log1p(exp(.))``
    overflows to inf)."""
    reduction = _reduction("soft_margin_loss", reduction, size_average, reduce)
    _floating_input("soft_margin_loss", x)
    return _reduce(F.softplus(F.neg(F.mul(target, x))), reduction)


@composite("MultiLabelSoftMarginLoss")
def multilabel_soft_margin_loss(x, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-(t log sigmoid(x) + (1 - t) log sigmoid(-x))`` (times ``weight``) averaged over the classes (last
    dim), then reduced over the samples."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = F.neg(F.add(F.mul(target, F.logsigmoid(x)), F.mul(F.sub(1, target), F.logsigmoid(F.neg(x)))))
    if weight is not None:
        loss = F.mul(loss, weight)
    class_dim = x._meta.ndim - 1
    if class_dim < 0:
        raise IndexError("multilabel_soft_margin_loss: Dimension specified as -1 but the input has no dimensions")
    loss = F.div(F.sum(loss, class_dim), x._meta.shape[class_dim])
    if reduction == "none":
        return loss
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    raise ValueError(f"multilabel_soft_margin_loss: {reduction} is not valid")


def _margin_frames(name, x, target):
    """(input as (N, C), target as (N,)) for the multi-class margin losses (an input (C,) is one sample)."""
    m = x._meta
    ndim = m.ndim
    if not ((ndim == 2 and m.shape[1] != 0) or (ndim == 1 and m.shape[0] != 0) or ndim == 0):
        raise RuntimeError(f"{name}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{_dims(m.shape)}")
    nframe = 1 if ndim <= 1 else m.shape[0]
    dim = 1 if ndim == 0 else m.shape[-1]
    return F.reshape(x, (nframe, dim)), nframe, dim


@composite("MultiMarginLoss")
@fp32_function
def multi_margin_loss(x, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``sum_{i != y} max(0, margin - x[y] + x[i]) ** p * weight[y] / C`` per sample (``p`` 1 or 2)."""
    reduction = _reduction("multi_margin_loss", reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 supported, got p={p}")
    if weight is not None and weight._meta.ndim != 1:
        raise ValueError(f"multi_margin_loss: weight must be one-dimensional, got {weight._meta.ndim} dimensions")
    _floating_kernel("multi_margin_loss", x)
    x2, nframe, dim = _margin_frames("multi_margin_loss", x, target)
    if target._meta.ndim > 1 or target._meta.numel != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{nframe}], but got {_dims(target.shape)}. "
                           f"Input has shape {_dims(x.shape)}.")
    if weight is not None and weight._meta.numel != dim:
        raise RuntimeError(f"multi_margin_loss: inconsistent weight size, expected {dim} but got "
                           f"{_dims(weight.shape)}")
    _check_long("multi_margin_loss", target)
    if not _values_in_range(target, 0, dim):
        raise RuntimeError("multi_margin_loss: target out of range")
    t = F.reshape(target, (nframe, 1))
    z = F.add(F.sub(x2, F.gather(x2, 1, t)), margin)
    h = F.where(F.gt(z, 0), z, 0.0)  # max(0, z) with NaN counting as not positive, as PyTorch's kernel
    if p == 2:
        h = F.mul(h, h)
    if weight is not None:
        h = F.mul(h, F.reshape(F.index_select(weight, 0, F.reshape(t, (nframe,))), (nframe, 1)))
    h = F.masked_fill(h, F.eq(F.reshape(F.arange(dim, device=x.device), (1, dim)), t), 0.0)
    loss = F.div(F.sum(h, 1), dim)
    if reduction == "none":
        return loss if target._meta.ndim > 0 else F.reshape(loss, ())
    total = F.sum(loss)
    return total if reduction == "sum" else F.div(total, max(nframe, 1))


@composite("MultiLabelMarginLoss")
@fp32_function
def multilabel_margin_loss(x, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j, i not a target} max(0, 1 - (x[y_j] - x[i])) / C`` per sample, where the targets ``y_j`` are the
    class indices of ``target`` before its first -1."""
    reduction = _reduction("multilabel_margin_loss", reduction, size_average, reduce)
    _floating_kernel("multilabel_margin_loss", x)
    x2, nframe, dim = _margin_frames("multilabel_margin_loss", x, target)
    if tuple(target._meta.shape) != tuple(x._meta.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: {_dims(target.shape)} for input of "
                           f"size: {_dims(x.shape)}")
    _check_long("multilabel_margin_loss", target)
    if not _values_in_range(target, -1, dim):
        raise RuntimeError("multilabel_margin_loss: argument #2 'target' is out of range")
    t = F.reshape(target, (nframe, dim))
    valid = F.cast(F.cumprod(F.cast(F.ge(t, 0), _int64), 1), _bool)  # the targets before the first -1
    safe = F.where(valid, t, 0)
    is_target = F.gt(F.scatter_add(F.zeros((nframe, dim), dtype=_int64, device=x.device), 1, safe,
                                   F.cast(valid, _int64)), 0)
    z = F.add(F.sub(F.unsqueeze(x2, 1), F.unsqueeze(F.gather(x2, 1, safe), 2)), 1.0)  # (N, j, i)
    keep = F.logical_and(F.unsqueeze(valid, 2), F.unsqueeze(F.logical_not(is_target), 1))
    keep = F.logical_and(keep, F.gt(z, 0))  # PyTorch adds the terms with z > 0: a NaN term is left out
    loss = F.div(F.sum(F.where(keep, z, 0.0), (1, 2)), dim)
    if reduction == "none":
        return loss if x._meta.ndim > 1 else F.reshape(loss, ())
    total = F.sum(loss)
    return total if reduction == "sum" else F.div(total, max(nframe, 1))


@composite("PoissonNllLoss")
@fp32_function
def poisson_nll_loss(x, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """``exp(x) - target * x`` (``log_input``) or ``x - target * log(x + eps)``; ``full`` adds Stirling's
    approximation ``t log t - t + log(2 pi t) / 2`` where ``target > 1``."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"poisson_nll_loss: {reduction} is not a valid value for reduction")
    _no_bool("poisson_nll_loss", x, target)
    if log_input:
        loss = F.sub(F.exp(x), F.mul(target, x))
    else:
        loss = F.sub(x, F.mul(target, F.log(F.add(x, eps))))
    if full:  # the logs of the targets <= 1 (left out) are taken at 2, so they are finite
        small = F.le(target, 1)
        t = F.masked_fill(target, small, 2)
        stirling = F.add(F.sub(F.mul(t, F.log(t)), t), F.mul(F.log(F.mul(t, 2 * math.pi)), 0.5))
        # PyTorch adds it in place: the loss keeps its dtype (float16 input, int64 target: float16)
        loss = cast(F.add(loss, F.masked_fill(stirling, small, 0.0)), loss._meta.dtype)
    return _reduce(loss, reduction)


def _gaussian_var(x, var):
    """``var`` shaped to broadcast with the input (PyTorch's homoscedastic cases), checked."""
    vs, xs = tuple(var._meta.shape), tuple(x._meta.shape)
    if vs == xs:
        return var
    if xs[:-1] == vs:
        return F.unsqueeze(var, -1)
    if len(vs) == len(xs) and sum(b for a, b in zip(xs, vs) if a != b) == 1:
        return var
    raise ValueError("gaussian_nll_loss: var is of incorrect size")


@composite("GaussianNllLoss")
def gaussian_nll_loss(x, target, var, full=False, eps=1e-6, reduction="mean"):
    """``(log(max(var, eps)) + (x - target)**2 / max(var, eps)) / 2`` (+ ``log(2 pi) / 2`` with ``full``);
    the clamp is not differentiated (var's gradient passes through it), as in PyTorch."""
    _floating_input("gaussian_nll_loss", x)
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
        var = F.mul(F.ones_like(x), var)
    elif _has_storage(var) and F.any(F.lt(var, 0)).item():
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    var = _gaussian_var(x, var)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"gaussian_nll_loss: {reduction} is not valid")
    held = var.detach()
    var = F.add(var, F.sub(F.clamp(held, eps), held))  # the clamped value, var's gradient
    loss = F.mul(F.add(F.log(var), F.div(F.square(F.sub(x, target)), var)), 0.5)
    if full:
        loss = F.add(loss, 0.5 * math.log(2 * math.pi))
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    return loss


@composite("TripletMarginLoss")
@fp32_function
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the pairwise p-norm distance; ``swap`` uses
    ``min(d(a, n), d(p, n))``."""
    reduction = _reduction("triplet_margin_loss", reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor._meta.ndim, positive._meta.ndim, negative._meta.ndim
    if not a_dim == p_dim == n_dim:
        raise RuntimeError(f"triplet_margin_loss: The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and "
                           f"negative {n_dim}D inputs")
    _no_bool("triplet_margin_loss", anchor, positive, negative)
    d_pos = F.pairwise_distance(anchor, positive, p, eps)
    d_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = F.minimum(d_neg, F.pairwise_distance(positive, negative, p, eps))
    return _reduce(F.clamp(F.sub(F.add(d_pos, margin), d_neg), 0.0), reduction)


# ---- embedding_bag and max_norm ------------------------------------------------------------------------------
def _host_values(name, t, why="lays out the bags by the index values"):
    """The values of an integer tensor as a NumPy array (the bags' layout, the rows to renormalise)."""
    if t.is_lazy:  # names the blob and the graph capturing it
        raise t._array.read_error(f"{name} (which {why})")
    if not _has_storage(t):
        raise RuntimeError(f"{name}: the indices are read from the data (it {why}), which a tensor on "
                           f"'{t._meta.device}' does not hold")
    return t.numpy().astype(np.int64, copy=False)


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Scale in place (not recorded by autograd) each row of ``weight`` that ``indices`` refers to whose
    ``norm_type``-norm exceeds ``max_norm`` down to ``max_norm`` (PyTorch's ``embedding_renorm_``)."""
    rows = np.unique(_host_values("embedding", indices, "renormalises the rows it looks up, for max_norm"))
    if rows.size == 0:
        return weight
    with ExcludeDispatchKeyGuard(AUTOGRAD_KEY_SET):
        rows_t = tensor(rows, device=weight._meta.device)
        picked = F.index_select(weight, 0, rows_t)
        norms = F.norm(picked, norm_type, 1, True)
        scale = F.where(F.gt(norms, max_norm), F.div(max_norm, F.add(norms, 1e-7)), 1.0)
        F.index_put(weight, (rows_t,), F.mul(picked, scale), inplace=True)
    return weight


_BAG_MODES = ("sum", "mean", "max")


def _bag_inputs(input, weight, offsets, per_sample_weights, include_last_offset):
    """PyTorch's argument handling of embedding_bag: (1-D input, 1-D offsets, psw, include_last_offset)."""
    if weight._meta.ndim != 2:
        raise ValueError(f"embedding_bag: weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight._meta.ndim}")
    if per_sample_weights is not None and per_sample_weights._meta.shape != input._meta.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    ndim = input._meta.ndim
    if ndim == 2:
        if offsets is not None:
            raise ValueError(f"embedding_bag: if input is 2D, then offsets has to be None, as input is treated is a "
                             f"mini-batch of fixed length sequences. However, found offsets of type {type(offsets)}")
        n, length = input._meta.shape
        offsets = F.arange(0, n * length, max(length, 1), dtype=input._meta.dtype, device=input._meta.device)
        if per_sample_weights is not None:
            per_sample_weights = F.reshape(per_sample_weights, (-1,))
        return F.reshape(input, (-1,)), offsets, per_sample_weights, False
    if ndim != 1:
        raise ValueError(f"embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of dimension {ndim}")
    if offsets is None:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
    if offsets._meta.ndim != 1:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor")
    return input, offsets, per_sample_weights, include_last_offset


def _row_bags(input, weight, per_sample_weights, mode, scale_grad_by_freq):
    """The bags of a 2-D input are its rows: their embeddings summed or averaged along dim 1, without reading
    the index values, for nn.Graph to capture (and ONNX to export); the same additions in the same order as the
    eager path's ``index_add``, so a graph stays bit-equal to eager."""
    rows = F.embedding(input, weight, None, None, 2.0, scale_grad_by_freq)
    if per_sample_weights is not None:
        rows = F.mul(rows, F.unsqueeze(per_sample_weights, 2))
    return F.sum(rows, 1) if mode == "sum" else F.mean(rows, 1)


def _bag_layout(idx, off, include_last_offset, num_weights, padding_idx):
    """(bag of each kept position, kept positions, number of bags): a position is kept when it lies in a bag and
    is not ``padding_idx``."""
    length = idx.size
    if off.size and off[0] != 0:
        raise RuntimeError(f"embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
                           f"to start from position 0. However, got {off[0]}")
    if off.size and off[-1] > length:
        raise RuntimeError(f"embedding_bag: offsets[-1] can not be greater than input's length {length} but got "
                           f"offsets[-1] of {off[-1]}")
    if (np.diff(off) < 0).any():
        raise RuntimeError("embedding_bag: offsets must be non-decreasing")
    if idx.size and (idx.min() < 0 or idx.max() >= num_weights):
        bad = idx[(idx < 0) | (idx >= num_weights)][0]
        raise IndexError(f"embedding_bag: index {bad} is out of range for {num_weights} embeddings")
    bags = max(off.size - 1, 0) if include_last_offset else off.size
    if bags == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    # the last bag runs to the end of the input (also with include_last_offset, as PyTorch's kernels do)
    bag_of = np.repeat(np.arange(bags), np.diff(np.append(off[:bags], length)))
    kept = idx != padding_idx
    return bag_of[kept], np.flatnonzero(kept), bags


@composite("EmbeddingBag")
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of ``weight`` rows: the bags of a 1-D ``input`` start at ``offsets``; the rows
    of a 2-D ``input`` are bags. Entries equal to ``padding_idx`` are left out (an empty bag gives zeros);
    ``per_sample_weights`` (mode "sum") weigh each entry. The layout is read from the index values."""
    if weight._meta.dtype is _int64 and input._meta.dtype.is_floating_point:
        warn_at_caller("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                       "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.")
        weight, input = input, weight
    given = input
    input, offsets, psw, include_last_offset = _bag_inputs(input, weight, offsets, per_sample_weights,
                                                           include_last_offset)
    if mode not in _BAG_MODES:
        raise ValueError("embedding_bag: mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("embedding_bag: max mode does not support scaling the gradient by the frequency")
    if sparse:
        raise NotImplementedError("embedding_bag: sparse gradients are not supported; use sparse=False")
    if psw is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if psw is not None and psw._meta.dtype is not weight._meta.dtype:
        raise RuntimeError(f"embedding_bag: expected per_sample_weights to have the dtype of weight "
                           f"({weight._meta.dtype.name}), got {psw._meta.dtype.name}")
    if not weight._meta.dtype.is_floating_point:
        raise RuntimeError(f"embedding_bag: Expected weight to have a floating point dtype, got "
                           f"{TORCH_NAMES[weight._meta.dtype]}")
    num, dim = weight._meta.shape
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"embedding_bag: padding_idx must be within the number of embeddings, -{num} through "
                               f"{num - 1}, but got {padding_idx}")
        padding_idx %= num
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    elif given.is_lazy and given._meta.ndim == 2 and given._meta.shape[1] and mode != "max" and padding_idx is None:
        return _row_bags(given, weight, per_sample_weights, mode, scale_grad_by_freq)
    idx = _host_values("embedding_bag", input)
    bag_of, kept, bags = _bag_layout(idx, _host_values("embedding_bag", offsets), include_last_offset, num,
                                     -1 if padding_idx is None else padding_idx)
    device = weight._meta.device
    rows = F.embedding(tensor(idx[kept], device=device), weight, None, None, 2.0, scale_grad_by_freq)
    if mode == "max":
        return _bag_max(rows, bag_of, bags, dim, weight)
    if psw is not None:
        rows = F.mul(rows, F.unsqueeze(F.index_select(psw, 0, tensor(kept, device=device)), 1))
    out = F.index_add(F.zeros((bags, dim), dtype=weight._meta.dtype, device=device), 0, tensor(bag_of, device=device),
                      rows)
    if mode == "sum":
        return out
    counts = np.maximum(np.bincount(bag_of, minlength=bags), 1).astype(weight._meta.dtype.np_dtype)
    return F.div(out, tensor(counts[:, None], device=device))


def _bag_max(rows, bag_of, bags, dim, weight):
    """The elementwise maximum of each bag's rows (zeros for an empty bag), its gradient to the picked row."""
    device = weight._meta.device
    counts = np.bincount(bag_of, minlength=bags)
    width = int(counts.max()) if bags else 0
    if width == 0:
        return F.zeros((bags, dim), dtype=weight._meta.dtype, device=device)
    slot = np.arange(bag_of.size) - np.repeat(np.cumsum(counts) - counts, counts)  # position within its bag
    grid = np.full((bags, width), bag_of.size, np.int64)  # the index of an extra -inf row where a bag is short
    grid[bag_of, slot] = np.arange(bag_of.size)
    pad_row = F.full((1, dim), -math.inf, dtype=weight._meta.dtype, device=device)
    table = F.cat((rows, pad_row), 0)
    values = F.max(F.index_select(table, 0, tensor(grid.reshape(-1), device=device)).reshape(bags, width, dim), 1)[0]
    empty = tensor((counts == 0)[:, None], device=device)
    return F.masked_fill(values, empty, 0.0) if (counts == 0).any() else values


# ---- ctc_loss (Note [CTC loss] in ops/nn.py) ---------------------------------------------------------------------
def _lengths(name, lengths, device):
    """Lengths given as a tensor or a list of ints, as a 1-D int64 tensor."""
    if isinstance(lengths, Tensor):
        if lengths._meta.dtype.is_floating_point or lengths._meta.dtype is _bool:
            raise RuntimeError(f"ctc_loss: {name} must be integral")
        return F.reshape(lengths, (-1,))
    return tensor(list(lengths), dtype=_int64, device=device)


@functor("CtcLoss")
class CtcLossFunctor:
    """``ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction='mean',
    zero_infinity=False)``: log_probs (T, N, C) (or (T, C) for one sample), targets (N, S) padded or
    concatenated; "mean" divides each loss by its target length (at least 1), then averages over the batch."""

    def __init__(self):
        self.op = _op("ctc_loss", ("log_probs", "targets", "input_lengths", "target_lengths"), ("loss",))
        self._attrs = {}

    def __call__(self, log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
                 zero_infinity=False):
        reduction = _reduction("ctc_loss", reduction)
        m = log_probs._meta
        if not m.dtype.is_floating_point:
            raise OpKernelNotFoundError(f"ctc_loss: not implemented for '{TORCH_NAMES[m.dtype]}'; log_probs must be "
                                        f"floating point")
        batched = m.ndim == 3
        if not batched:
            if m.ndim != 2:
                raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {_dims(m.shape)}")
            log_probs = F.unsqueeze(log_probs, 1)
            targets = F.reshape(targets, (1, -1))
        input_lengths = _lengths("input_lengths", input_lengths, m.device)
        target_lengths = _lengths("target_lengths", target_lengths, m.device)
        if targets._meta.dtype.is_floating_point:
            targets = cast(targets, _int64)
        attrs = cached_attrs(self._attrs, ("blank", "zero_infinity"), (blank, zero_infinity))
        loss = dispatch(self.op, (log_probs, targets, input_lengths, target_lengths), attrs)[0]
        if reduction == "mean":
            lengths = F.clamp(cast(target_lengths, m.dtype), 1)
            return F.mean(F.div(loss, lengths))
        if reduction == "sum":
            return F.sum(loss)
        return loss if batched else F.reshape(loss, ())


# ---- [compat t1] PyTorch's native_* forms, SyncBatchNorm's pieces, the generic convolution, grid samplers ----------
# Note [Native forms]
# ``torch.native_layer_norm`` / ``native_batch_norm`` / ``native_group_norm`` / ``native_dropout`` return the
# statistics (or mask) their backward uses along with the output: (out, mean, rstd), (out, save_mean,
# save_invstd), (out, mask). The outputs are made by the same ops as ``layer_norm`` / ``batch_norm`` /
# ``dropout``, so autograd differentiates ``out``. The ``batch_norm_*`` functions are the pieces SyncBatchNorm
# assembles across processes (PyTorch has them on CUDA only): per-channel statistics, their combination from
# several processes' (mean, invstd, count), the normalisation and the two halves of its backward, on dense
# tensors of any device here.
def _stat_view(t, ndim):
    """A per-channel (C,) tensor viewed as (1, C, 1, ...) against an ndim-d (N, C, ...) input."""
    return _reshape(t, (1, -1) + (1,) * (ndim - 2))


@composite("NativeLayerNorm")
def native_layer_norm(x, normalized_shape, weight, bias, eps):
    """(out, mean, rstd): layer_norm's output and the statistics, shaped (*leading dims, 1, ..., 1)."""
    axis = _check_layer_norm(x, normalized_shape, weight, bias)
    y, mean, rstd = get_functor("LayerNorm").layer_norm.outputs(x, axis, weight, bias, eps)
    stat_shape = tuple(x._meta.shape[:axis]) + (1,) * len(normalized_shape)
    return y, F.reshape(mean, stat_shape), F.reshape(rstd, stat_shape)


@composite("NativeBatchNorm")
def native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """(out, save_mean, save_invstd): ``batch_norm``'s output and, when ``training``, the batch's per-channel mean
    and 1 / sqrt(biased var + eps) (running statistics updated in place); in eval both are empty."""
    out = F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = F.empty((0,), dtype=x._meta.dtype, device=x._meta.device)
        return out, empty, F.empty((0,), dtype=x._meta.dtype, device=x._meta.device)
    mean, var = F.ops.batch_norm_stats(F.detach(x))
    return out, mean, F.rsqrt(F.add(var, eps))


@composite("NativeGroupNorm")
def native_group_norm(x, weight, bias, n, c, hxw, group, eps):
    """(out, mean, rstd): ``group_norm`` of ``x`` seen as (N, C, HxW), with the (N, group) statistics."""
    if n * c * hxw != x._meta.numel or (x._meta.ndim >= 2 and tuple(x._meta.shape[:2]) != (n, c)):
        raise RuntimeError(f"native_group_norm: Expected input of N={n}, C={c}, HxW={hxw} "
                           f"({n * c * hxw} elements), but got input of size {_dims(x._meta.shape)}")
    if group <= 0 or c % group:
        raise RuntimeError(f"native_group_norm: Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {_dims(x._meta.shape)} and num_groups={group}")
    size = (c // group) * hxw
    y, mean, rstd = get_functor("LayerNorm").layer_norm.outputs(F.reshape(x, (n, group, size)), 2, None, None, eps)
    y = F.reshape(y, x._meta.shape)
    channel = (c,) + (1,) * (x._meta.ndim - 2)
    if weight is not None:
        y = F.mul(y, F.reshape(weight, channel))
    if bias is not None:
        y = F.add(y, F.reshape(bias, channel))
    return y, mean, rstd


@composite("NativeDropout")
def native_dropout(x, p, train):
    """(out, mask): with ``train`` (None counts as True) each element is kept with probability 1 - p (``mask``
    True) and scaled by 1 / (1 - p); otherwise ``out`` is a copy of ``x`` and ``mask`` all True."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"native_dropout: dropout probability has to be between 0 and 1, but got {p}")
    m = x._meta
    if train is False:
        return F.clone(x), F.ones(m.shape, dtype=_bool, device=m.device)
    keep = F.full(m.shape, 1.0 - p, dtype=dt.float32, device=m.device)
    mask = cast(F.bernoulli(keep), _bool)
    out = F.mul(F.mul(x, mask), 0.0 if p == 1 else 1.0 / (1.0 - p))
    return out, mask


@composite("NormExceptDim")
def norm_except_dim(v, pow=2, dim=0):  # noqa: A002  (PyTorch's name)
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (kept, the others of size 1); ``dim=-1``: the norm of
    all elements (weight_norm's ``g``)."""
    if dim == -1:
        return F.norm(v, pow)
    d = _wrap_dim(dim, v._meta.ndim, "norm_except_dim")
    others = [i for i in range(v._meta.ndim) if i != d]
    return F.norm(v, pow, others, True) if others else F.abs(v)


def _channels_of(name, x):
    if x._meta.ndim < 2:
        raise ValueError(f"{name}: expected an input of 2 or more dimensions (N, C, ...), got {x._meta.ndim}D input")
    return x._meta.shape[1]


@composite("BatchNormStats")
def batch_norm_stats(x, eps):
    """(mean, invstd) per channel (dim 1): the mean and 1 / sqrt(biased var + eps)."""
    _channels_of("batch_norm_stats", x)
    mean, var = F.ops.batch_norm_stats(x)
    return mean, F.rsqrt(F.add(var, eps))


@composite("BatchNormElemt")
def batch_norm_elemt(x, weight, bias, mean, invstd, eps):
    """``(x - mean) * invstd * weight + bias`` with per-channel (C,) statistics (``eps`` is in ``invstd``)."""
    _channels_of("batch_norm_elemt", x)
    nd = x._meta.ndim
    y = F.mul(F.sub(x, _stat_view(mean, nd)), _stat_view(invstd, nd))
    if weight is not None:
        y = F.mul(y, _stat_view(weight, nd))
    if bias is not None:
        y = F.add(y, _stat_view(bias, nd))
    return y


@composite("BatchNormGatherStatsWithCounts")
def batch_norm_gather_stats_with_counts(x, mean, invstd, running_mean, running_var, momentum, eps, counts):
    """Combine the per-process statistics ``mean`` / ``invstd`` (P, C) of ``counts`` (P,) elements each into the
    global (mean, invstd) (C,); update the running statistics in place (unbiased variance)."""
    if mean._meta.ndim != 2 or tuple(invstd._meta.shape) != tuple(mean._meta.shape):
        raise RuntimeError(f"batch_norm_gather_stats_with_counts: expected mean and invstd of shape (world_size, "
                           f"C), got {_dims(mean._meta.shape)} and {_dims(invstd._meta.shape)}")
    n = F.reshape(cast(counts, mean._meta.dtype), (-1, 1))
    total = _sum_dim(n, 0)
    global_mean = F.div(_sum_dim(F.mul(mean, n), 0), total)
    var_each = F.sub(F.reciprocal(F.square(invstd)), eps)
    spread = F.add(var_each, F.square(F.sub(mean, global_mean)))
    global_var = F.div(_sum_dim(F.mul(spread, n), 0), total)
    _update_running(running_mean, running_var, global_mean, global_var, float(total.item()), momentum)
    return global_mean, F.rsqrt(F.add(global_var, eps))


def _update_running(running_mean, running_var, mean, var, count, momentum):
    """``running = (1 - momentum) * running + momentum * value`` in place (not recorded), with the unbiased
    variance of ``count`` elements (``var`` is the biased one)."""
    update = get_functor("BatchNorm")._update
    with ExcludeDispatchKeyGuard(AUTOGRAD_KEY_SET):
        update(running_mean, F.detach(mean), momentum, 1.0)
        update(running_var, F.detach(var), momentum, count / (count - 1) if count > 1 else math.inf)


@composite("BatchNormGatherStats")
def batch_norm_gather_stats(x, mean, invstd, running_mean, running_var, momentum, eps, count):
    """``batch_norm_gather_stats_with_counts`` with ``count`` elements in every process."""
    if mean._meta.ndim != 2:
        raise RuntimeError(f"batch_norm_gather_stats: expected mean of shape (world_size, C), got "
                           f"{_dims(mean._meta.shape)}")
    counts = F.full((mean._meta.shape[0],), float(count), dtype=mean._meta.dtype, device=mean._meta.device)
    return batch_norm_gather_stats_with_counts(x, mean, invstd, running_mean, running_var, momentum, eps, counts)


@composite("BatchNormUpdateStats")
def batch_norm_update_stats(x, running_mean, running_var, momentum):
    """(mean, biased var) per channel of ``x``; the running statistics are updated in place (unbiased var)."""
    c = _channels_of("batch_norm_update_stats", x)
    mean, var = F.ops.batch_norm_stats(x)
    _update_running(running_mean, running_var, mean, var, x._meta.numel // c if c else 0, momentum)
    return mean, var


def _reduce_except_channels(t):
    return F.sum(t, [i for i in range(t._meta.ndim) if i != 1])


@composite("BatchNormBackwardReduce")
def batch_norm_backward_reduce(grad_out, x, mean, invstd, weight, input_g, weight_g, bias_g):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel: sum(dy), sum(dy * (x - mean)),
    sum_dy_xmu * invstd and sum_dy; each is None unless asked for (``input_g`` asks for the first two)."""
    _channels_of("batch_norm_backward_reduce", x)
    nd = x._meta.ndim
    sum_dy = _reduce_except_channels(grad_out)
    sum_dy_xmu = _reduce_except_channels(F.mul(grad_out, F.sub(x, _stat_view(mean, nd))))
    grad_weight = F.mul(sum_dy_xmu, invstd) if weight_g else None
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None, grad_weight,
            sum_dy if bias_g else None)


@composite("BatchNormBackwardElemt")
def batch_norm_backward_elemt(grad_out, x, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    """The input gradient of batch norm from the reduced (and all-reduced) sums over ``count.sum()`` elements:
    ``(dy - sum_dy / n - (x - mean) * invstd**2 * sum_dy_xmu / n) * invstd * weight``."""
    if count._meta.dtype.is_floating_point or count._meta.dtype is _bool:
        raise RuntimeError(f"batch_norm_backward_elemt: expected an integer tensor of counts, got "
                           f"{count._meta.dtype.name}")
    _channels_of("batch_norm_backward_elemt", x)
    nd = x._meta.ndim
    n = cast(F.sum(count), x._meta.dtype)
    mean_dy = F.div(sum_dy, n)
    mean_dy_xmu = F.div(sum_dy_xmu, n)
    centred = F.mul(F.sub(x, _stat_view(mean, nd)), _stat_view(F.mul(F.square(invstd), mean_dy_xmu), nd))
    grad = F.sub(F.sub(grad_out, _stat_view(mean_dy, nd)), centred)
    scale = invstd if weight is None else F.mul(invstd, weight)
    return F.mul(grad, _stat_view(scale, nd))


def _conv_arg(name, values, k):
    values = tuple(values)
    if len(values) == 1:
        return values * k
    if len(values) != k:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {k} values to match the "
                           f"convolution dimensions, but got {name}={list(values)}")
    return values


@composite("Convolution")
def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """PyTorch's generic convolution: ``conv{1,2,3}d`` (or ``conv_transpose{1,2,3}d`` when ``transposed``) by the
    weight's dims, on a batched input; one-element lists are repeated over the spatial dims."""
    k = weight._meta.ndim - 2
    if k not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-d, 4-d or 5-d weight, got weight of size "
                           f"{_dims(weight._meta.shape)}")
    if x._meta.ndim != k + 2:
        raise RuntimeError(f"convolution: Expected {k + 2}-dimensional input for {k + 2}-dimensional weight "
                           f"{_dims(weight._meta.shape)}, but got {x._meta.ndim}-dimensional input of size "
                           f"{_dims(x._meta.shape)} instead")
    stride, padding, dilation = (_conv_arg(n, v, k) for n, v in
                                 (("stride", stride), ("padding", padding), ("dilation", dilation)))
    if transposed:
        output_padding = _conv_arg("output_padding", output_padding, k)
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[k - 1]
        return fn(x, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[k - 1]
    return fn(x, weight, bias, stride, padding, dilation, groups)


@composite("AffineGridGenerator")
def affine_grid_generator(theta, size, align_corners):
    """``nn.functional.affine_grid(theta, size, align_corners)``."""
    return F.affine_grid(theta, size, align_corners)


_INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")  # PyTorch's GridSamplerInterpolation enum
_PADDING_MODES = ("zeros", "border", "reflection")  # GridSamplerPadding


def _grid_sampler(name, x, grid, interpolation_mode, padding_mode, align_corners, ndim=None):
    if ndim is not None and not x._meta.ndim == grid._meta.ndim == ndim:
        raise RuntimeError(f"{name}(): expected {ndim}D input and grid with same number of dimensions, but got "
                           f"input with sizes {_dims(x._meta.shape)} and grid with sizes {_dims(grid._meta.shape)}")
    for arg, value, names in (("interpolation_mode", interpolation_mode, _INTERPOLATION_MODES),
                              ("padding_mode", padding_mode, _PADDING_MODES)):
        if not 0 <= value < len(names):
            raise ValueError(f"{name}(): expected {arg} in 0 .. {len(names) - 1} "
                             f"({', '.join(f'{i}: {n}' for i, n in enumerate(names))}), got {value}")
    return F.grid_sample(x, grid, _INTERPOLATION_MODES[interpolation_mode], _PADDING_MODES[padding_mode],
                         align_corners)


@composite("GridSampler")
def grid_sampler(x, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sample`` with PyTorch's enum ints: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros,
    1 border, 2 reflection."""
    return _grid_sampler("grid_sampler", x, grid, interpolation_mode, padding_mode, align_corners)


@composite("GridSampler2d")
def grid_sampler_2d(x, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sampler`` on a 4-D input and grid."""
    return _grid_sampler("grid_sampler_2d", x, grid, interpolation_mode, padding_mode, align_corners, 4)


@composite("GridSampler3d")
def grid_sampler_3d(x, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sampler`` on a 5-D input and grid."""
    return _grid_sampler("grid_sampler_3d", x, grid, interpolation_mode, padding_mode, align_corners, 5)
