"""Loss layers: ``L1Loss``, ``MSELoss``, ``SmoothL1Loss``, ``HuberLoss``, ``NLLLoss``, ``CrossEntropyLoss``,
``BCELoss``, ``BCEWithLogitsLoss``, ``KLDivLoss``, the margin and embedding losses, ``PoissonNLLLoss``,
``GaussianNLLLoss``, ``CTCLoss`` and ``LinearCrossEntropyLoss`` (PyTorch's arguments; the deprecated
``size_average`` / ``reduce`` flags still map to ``reduction``, with PyTorch's warning). A class weight is a
buffer. ``triplet_margin_with_distance_loss`` and ``linear_cross_entropy`` (functions taking Python objects:
a distance callable, chunking options) are defined here and exported by ``nn.functional``."""

from __future__ import annotations

import math
import warnings

from oneflow_lite import functional as F
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.modules.distance import PairwiseDistance
from oneflow_lite.nn.modules.linear import Linear

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CTCLoss", "CosineEmbeddingLoss", "CrossEntropyLoss", "GaussianNLLLoss",
           "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss", "LinearCrossEntropyLoss", "MSELoss",
           "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss",
           "NLLLoss2d", "PoissonNLLLoss", "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss"]


def _legacy_reduction(size_average, reduce) -> str:
    """PyTorch's ``_Reduction.legacy_get_string``: the reduction the deprecated flags mean."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  UserWarning, stacklevel=4)
    return ret


class _Loss(Module):
    _reductions = ("none", "mean", "sum")

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        if reduction not in self._reductions:
            raise ValueError(f"{type(self).__name__}: {reduction} is not a valid value for reduction; expected one "
                             f"of {', '.join(repr(r) for r in self._reductions)}")
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """``|input - target|``, reduced."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """``(input - target) ** 2``, reduced."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``), reduced."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``, reduced."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """``-weight[t] * input[n, t]`` for log-probabilities ``input`` (N, C, ...) and class indices ``target``;
    "mean" divides by the summed weights of the targets not equal to ``ignore_index``."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """``nll_loss(log_softmax(input, 1), target)`` for class indices, or the cross entropy with class
    probabilities when ``target`` has ``input``'s shape; ``label_smoothing`` mixes in the uniform distribution."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """``-weight * (t log(x) + (1 - t) log(1 - x))`` for probabilities ``x``, each log clamped to >= -100."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``BCELoss`` of ``sigmoid(input)`` computed stably from the logits; ``pos_weight`` weighs the positive
    term per class."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """``target * (log(target) - input)`` for log-probabilities ``input`` (``log_target``: target as
    log-probabilities too); "batchmean" divides the sum by the batch size."""

    _reductions = ("none", "mean", "sum", "batchmean")

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class NLLLoss2d(NLLLoss):
    """``NLLLoss`` under its old name for (N, C, H, W) inputs."""


class PoissonNLLLoss(_Loss):
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``; ``full`` adds
    Stirling's approximation of ``log(target!)``."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """``(log(var) + (input - target)**2 / var) / 2`` with ``var`` clamped to ``eps``."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` for target 1, ``max(0, margin - x)`` for target -1."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss over the target classes listed before the first -1."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-target * input))``."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-versus-all logistic loss per class, averaged over the classes."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for target -1."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -target * (x1 - x2) + margin)``."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C``."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D instead")
        super().__init__(weight, size_average, reduce, reduction)
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, margin + ||a - p||_p - ||a - n||_p)`` (``swap``: the smaller of the negative distances)."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean"):
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        super().__init__(size_average, reduce, reduction)
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` for any distance callable ``d`` (default ``pairwise_distance``);
    ``swap`` uses ``min(d(a, n), d(p, n))``."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"triplet_margin_with_distance_loss: {reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not a_dim == p_dim == n_dim:
        raise RuntimeError(f"triplet_margin_with_distance_loss: The anchor, positive, and negative tensors are "
                           f"expected to have the same number of dimensions, but got: anchor {a_dim}D, positive "
                           f"{p_dim}D, and negative {n_dim}D inputs")
    distance = F.pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = F.minimum(dist_neg, distance(positive, negative))
    loss = F.clamp(F.sub(F.add(dist_pos, margin), dist_neg), 0.0)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "mean":
        return F.mean(loss)
    return loss


class TripletMarginWithDistanceLoss(_Loss):
    """``TripletMarginLoss`` with any distance callable (default: a ``PairwiseDistance`` submodule)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             f"instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                 margin=self.margin, swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss of (T, N, C) log-probabilities and (padded or concatenated)
    targets."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


def _linear_ce_logits_shape(input, linear_weight, linear_bias):
    """PyTorch's checks of linear_cross_entropy; the shape of its logits (*batch, C, *out_features)."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"linear_cross_entropy: expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"linear_cross_entropy: expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"linear_cross_entropy: expected equal input and linear_weight last dimensions "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"linear_cross_entropy: expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"linear_cross_entropy: K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, {in_features}), got unbatched "
                           f"input with shape {tuple(input.shape)}")
    return (*batch, num_classes, *out_features), out_features


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction: str = "mean",
                         ignore_index: int | None = None, label_smoothing: float = 0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` with the logits shaped
    (*batch, C, *out_features) for a weight (C, *out_features, in_features). ``options`` (PyTorch's chunking
    to save memory) is accepted and computes the same values by the reference path."""
    logits_shape, out_features = _linear_ce_logits_shape(input, linear_weight, linear_bias)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("linear_cross_entropy: ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if out_features:
        rows = math.prod(out_features) * linear_weight.shape[0]
        linear_weight = F.reshape(linear_weight, (rows, linear_weight.shape[-1]))
        if linear_bias is not None:
            linear_bias = F.reshape(linear_bias, (rows,))
    logits = F.reshape(F.linear(input, linear_weight, linear_bias), logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                           label_smoothing=label_smoothing)


class LinearCrossEntropyLoss(_WeightedLoss):
    """A ``Linear`` layer (``linear``: in_features -> num_classes * prod(out_features)) followed by
    ``cross_entropy``: ``linear_cross_entropy`` with the layer's weight reshaped to (C, *out_features,
    in_features)."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (), bias: bool = False,
                 device=None, dtype=None, reduction: str = "mean", weight=None, ignore_index: int | None = None,
                 label_smoothing: float = 0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features) * num_classes, bias=bias, device=device,
                             dtype=dtype)
        self.options = options

    def forward(self, input, target):
        lin = self.linear
        linear_weight = F.reshape(lin.weight, (self.num_classes, *self.out_features, lin.in_features))
        linear_bias = None if lin.bias is None else F.reshape(lin.bias, (self.num_classes, *self.out_features))
        return linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias, weight=self.weight,
                                    reduction=self.reduction, ignore_index=self.ignore_index,
                                    label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
