"""The schedules that scale the learning rate by a factor of the epoch: LambdaLR, MultiplicativeLR,
StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR and PolynomialLR (PyTorch's formulas)."""

from __future__ import annotations

import copy
import types
from bisect import bisect_right
from collections import Counter

from oneflow_lite.optim.lr_scheduler.base import LRScheduler, check_int, check_number
from oneflow_lite.optim.optimizer import Optimizer


class _LambdaScheduler(LRScheduler):
    """The schedules driven by ``lr_lambda`` functions (one, or one per parameter group); their state dict
    keeps the ``__dict__`` of lr_lambdas that are callable objects (functions are not saved)."""

    _not_callable = "{cls}: lr_lambda must be callable, not {type}"

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        n_groups = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 0
        if isinstance(lr_lambda, (list, tuple)):
            if isinstance(optimizer, Optimizer) and len(lr_lambda) != n_groups:
                raise ValueError(f"Expected {n_groups} lr_lambdas, but got {len(lr_lambda)}")
            lr_lambdas = list(lr_lambda)
        else:
            lr_lambdas = [lr_lambda] * n_groups
        for fn in lr_lambdas:
            if not callable(fn):
                raise TypeError(self._not_callable.format(cls=type(self).__name__, type=type(fn).__name__))
        self.lr_lambdas = lr_lambdas
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        """The state, with the ``__dict__`` of each lr_lambda that is a callable object (functions are not saved)."""
        state = copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")})
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else copy.deepcopy(fn.__dict__)
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict()`` (the saved attributes of callable-object lr_lambdas included)."""
        name = type(self).__name__
        if not isinstance(state_dict, dict):
            raise TypeError(f"{name}.load_state_dict(): expected a dict, not {type(state_dict).__name__}")
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        if len(lambdas) != len(self.lr_lambdas):
            raise ValueError(f"{name}.load_state_dict(): expected {len(self.lr_lambdas)} lr_lambdas, got "
                             f"{len(lambdas)}")
        super().load_state_dict(state)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(copy.deepcopy(saved))


class LambdaLR(_LambdaScheduler):
    """lr = initial lr * ``lr_lambda(epoch)``; one function, or one per parameter group."""

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """Multiply the lr by ``lr_lambda(epoch)`` at every step after the first (one function, or one per
    parameter group): lr_e = lr_{e-1} * lr_lambda(e)."""

    _not_callable = "lr_lambda should be a function, but got {type}"

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs = self._group_lrs()
        if self._is_initial:
            return lrs
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, lrs)]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs: initial lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        check_int("StepLR", "step_size", step_size, 1)
        check_number("StepLR", "gamma", gamma)
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs = self._group_lrs()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return lrs
        return [lr * self.gamma for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch (a milestone given twice multiplies twice)."""

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        try:
            milestones = list(milestones)
        except TypeError:
            raise TypeError(f"MultiStepLR: milestones must be a list of ints, not {type(milestones).__name__}") \
                from None
        for m in milestones:
            check_int("MultiStepLR", "each milestone", m, 0)
        check_number("MultiStepLR", "gamma", gamma)
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs = self._group_lrs()
        if self.last_epoch not in self.milestones:
            return lrs
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the lr by ``factor`` for the first ``total_iters`` epochs, then restore it:
    initial lr * (factor if epoch < total_iters else 1)."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        check_number("ConstantLR", "factor", factor)
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        check_int("ConstantLR", "total_iters", total_iters, 0)
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs = self._group_lrs()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        factor = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base_lr * factor for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Linear warmup (or decay): the lr factor goes from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps, then stays: initial lr * (start + (end - start) * min(epoch, total_iters) / total_iters)."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        check_number("LinearLR", "start_factor", start_factor)
        check_number("LinearLR", "end_factor", end_factor)
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        check_int("LinearLR", "total_iters", total_iters, 1)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs, start, end, total = self._group_lrs(), self.start_factor, self.end_factor, self.total_iters
        if self.last_epoch == 0:
            return [lr * start for lr in lrs]
        if self._is_initial or self.last_epoch > total:
            return lrs
        factor = 1.0 + (end - start) / (total * start + (self.last_epoch - 1) * (end - start))
        return [lr * factor for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        start, end, total = self.start_factor, self.end_factor, self.total_iters
        factor = start + (end - start) * min(total, self.last_epoch) / total
        return [base_lr * factor for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch: initial lr * gamma ** epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        check_number("ExponentialLR", "gamma", gamma)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs = self._group_lrs()
        if self._is_initial:
            return lrs
        return [lr * self.gamma for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Polynomial decay to zero over ``total_iters`` epochs, then zero:
    initial lr * (1 - min(epoch, total_iters) / total_iters) ** power."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        check_int("PolynomialLR", "total_iters", total_iters, 1)
        check_number("PolynomialLR", "power", power)
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs, epoch, total = self._group_lrs(), self.last_epoch, self.total_iters
        if self._is_initial or epoch > total:
            return lrs
        factor = ((1.0 - epoch / total) / (1.0 - (epoch - 1) / total)) ** self.power
        return [lr * factor for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        factor = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [base_lr * factor for base_lr in self.base_lrs]
