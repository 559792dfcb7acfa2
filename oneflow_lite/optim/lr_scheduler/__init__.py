"""``flow.optim.lr_scheduler``: learning-rate schedules (PyTorch's classes, formulas and warnings).

A scheduler changes ``param_group['lr']`` of its optimizer at each ``step()``: in place
(``fill_``) when the lr is a tensor, so an nn.Graph that captured the optimizer step reads
the new value at its next run (Note [Scheduled values] in base.py). Call ``optimizer.step()``
before ``scheduler.step()``. Warmup is ``LinearLR``; ``SequentialLR`` chains it with another
schedule::

    warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
    cosine = CosineAnnealingLR(opt, T_max=95)
    sched = SequentialLR(opt, [warmup, cosine], milestones=[5])

Modules: base (LRScheduler), decay (schedules by a factor of the epoch), cosine, cyclic (CyclicLR,
OneCycleLR), combined (SequentialLR, ChainedScheduler), plateau (ReduceLROnPlateau).
"""

from oneflow_lite.optim.lr_scheduler.base import LRScheduler, _LRScheduler  # noqa: F401  (PyTorch's older name)
from oneflow_lite.optim.lr_scheduler.combined import ChainedScheduler, SequentialLR
from oneflow_lite.optim.lr_scheduler.cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from oneflow_lite.optim.lr_scheduler.cyclic import CyclicLR, OneCycleLR
from oneflow_lite.optim.lr_scheduler.decay import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from oneflow_lite.optim.lr_scheduler.plateau import ReduceLROnPlateau

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
           "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR",
           "PolynomialLR", "ReduceLROnPlateau", "SequentialLR", "StepLR"]
