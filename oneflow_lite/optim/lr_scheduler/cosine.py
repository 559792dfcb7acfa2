"""Cosine annealing: CosineAnnealingLR and CosineAnnealingWarmRestarts (SGDR), PyTorch's formulas."""

from __future__ import annotations

import math

from oneflow_lite.optim.lr_scheduler.base import LRScheduler, check_int, check_number
from oneflow_lite.optim.optimizer import Optimizer


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` epochs (SGDR without restarts):
    eta_min + (initial lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, continuing as a cosine after T_max."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        check_int("CosineAnnealingLR", "T_max", T_max, 1)
        check_number("CosineAnnealingLR", "eta_min", eta_min)
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs, eta_min, t_max, epoch = self._group_lrs(), self.eta_min, self.T_max, self.last_epoch
        if epoch == 0:
            return lrs
        if self._step_count == 1 and epoch > 0:  # resumed: start from the closed form
            return self._get_closed_form_lr()
        if (epoch - 1 - t_max) % (2 * t_max) == 0:
            return [lr + (base_lr - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                    for lr, base_lr in zip(lrs, self.base_lrs)]
        ratio = (1 + math.cos(math.pi * epoch / t_max)) / (1 + math.cos(math.pi * (epoch - 1) / t_max))
        return [ratio * (lr - eta_min) + eta_min for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        factor = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base_lr - self.eta_min) * factor for base_lr in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing from the initial lr to ``eta_min`` over ``T_i`` epochs, then a restart;
    ``T_0`` is the first period, each next one ``T_mult`` times longer:
    eta_min + (initial lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2, T_cur the epochs since the
    last restart. ``step(epoch)`` accepts a fractional epoch (``epoch + i / iters`` per batch) and
    jumps there without a deprecation warning."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):  # PyTorch raises ValueError
            raise ValueError(  # noqa: TRY004
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        factor = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (base_lr - self.eta_min) * factor for base_lr in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance by one epoch, or go to ``epoch`` (a number, fractional allowed)."""
        if epoch is not None:
            check_number("CosineAnnealingWarmRestarts", "epoch", epoch)
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch=None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            self._jump_to(epoch)
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        self._set_lrs(values)

    def _jump_to(self, epoch) -> None:
        """``T_cur`` and ``T_i`` at ``epoch`` (the closed form of the restarts)."""
        if epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n

