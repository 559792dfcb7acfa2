"""Loss layers: ``L1Loss``, ``MSELoss``, ``SmoothL1Loss``, ``HuberLoss``, ``NLLLoss``, ``CrossEntropyLoss``,
``BCELoss``, ``BCEWithLogitsLoss``, ``KLDivLoss`` (PyTorch's arguments; the deprecated ``size_average`` /
``reduce`` flags still map to ``reduction``, with PyTorch's warning). A class weight is a buffer."""

from __future__ import annotations

import warnings

from oneflow_lite import functional as F
from oneflow_lite.nn.module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss",
           "NLLLoss", "SmoothL1Loss"]


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
