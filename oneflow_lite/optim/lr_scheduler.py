"""``flow.optim.lr_scheduler``: learning-rate schedules (PyTorch's classes, formulas and warnings).

A scheduler changes ``param_group['lr']`` of its optimizer at each ``step()``: in place
(``fill_``) when the lr is a tensor, so an nn.Graph that captured the optimizer step reads
the new value at its next run (Note [Optimizer steps in a graph]). Call ``optimizer.step()``
before ``scheduler.step()``. Warmup is ``LinearLR``; ``SequentialLR`` chains it with another
schedule::

    warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
    cosine = CosineAnnealingLR(opt, T_max=95)
    sched = SequentialLR(opt, [warmup, cosine], milestones=[5])
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import numbers
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.optim.optimizer import Optimizer

_EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please "
    "use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available.")


def _value(lr):
    """A group's lr as a Python number (a tensor lr is read)."""
    return lr.item() if isinstance(lr, Tensor) else lr


def _check_int(cls: str, name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{cls}: {name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{cls}: {name} must be at least {minimum}, got {value}")


def _check_number(cls: str, name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{cls}: {name} must be a number, not {type(value).__name__}")


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Wrap ``optimizer.step`` so that it records being called (for the call-order warning of ``step()``)."""
    step = optimizer.step
    if getattr(step, "_tracked_by_lr_scheduler", False):
        return
    func = getattr(step, "__func__", None)
    if func is not None:  # a bound method: hold the optimizer weakly (no reference cycle)
        opt_ref = weakref.ref(optimizer)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            opt = opt_ref()
            opt._opt_called = True
            return func(opt, *args, **kwargs)
    else:
        @functools.wraps(step)
        def wrapper(*args, **kwargs):
            optimizer._opt_called = True
            return step(*args, **kwargs)
    wrapper._tracked_by_lr_scheduler = True
    optimizer.step = wrapper


class LRScheduler:
    """Base class of the schedulers: subclasses implement ``get_lr()`` (the chainable form, from the
    groups' current lrs) and may implement ``_get_closed_form_lr()`` (from ``base_lrs``).

    ``last_epoch=-1`` starts a schedule (each group's lr is saved as ``'initial_lr'``); another value
    resumes one, and needs ``'initial_lr'`` in every group (saved by the optimizer's state dict).
    """

    _get_lr_called_within_step = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        _check_int(type(self).__name__, "last_epoch", last_epoch, -1)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _value(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming an "
                                   f"optimizer")
        self.optimizer = optimizer
        self.base_lrs = [_value(group["initial_lr"]) for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._step()

    def state_dict(self) -> dict:
        """The scheduler's state: every attribute but the optimizer (copied)."""
        return copy.deepcopy({k: v for k, v in self.__dict__.items() if k != "optimizer"})

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict()``."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"{type(self).__name__}.load_state_dict(): expected a dict, not "
                            f"{type(state_dict).__name__}")
        self.__dict__.update(copy.deepcopy(state_dict))

    def get_last_lr(self) -> list:
        """The learning rates set by the last ``step()``, one per parameter group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The learning rates of the current ``last_epoch`` (called by ``step()``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_lr()")

    def _warn_if_called_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def _group_lrs(self) -> list:
        return [_value(group["lr"]) for group in self.optimizer.param_groups]

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one step (``epoch``, deprecated: jump to that epoch, closed form)."""
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
            _check_int(type(self).__name__, "epoch", epoch, 0)
        self._step(epoch)

    def _step(self, epoch: int | None = None) -> None:
        if self._step_count == 1:
            if not getattr(self.optimizer.step, "_tracked_by_lr_scheduler", False):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`.", UserWarning, stacklevel=3)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should call "
                              "them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`. Failure "
                              "to do this will result in skipping the first value of the learning rate schedule.",
                              UserWarning, stacklevel=3)
        previous = self._step_count, self.last_epoch
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        except BaseException:  # a failing get_lr (e.g. an lr_lambda) leaves the schedule where it was
            self._step_count, self.last_epoch = previous
            raise
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            if isinstance(group["lr"], Tensor):
                group["lr"].fill_(lr)
            else:
                group["lr"] = lr
        self._last_lr = self._group_lrs()


_LRScheduler = LRScheduler  # PyTorch's older name


class LambdaLR(LRScheduler):
    """lr = initial lr * ``lr_lambda(epoch)``; one function, or one per parameter group."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        if isinstance(lr_lambda, (list, tuple)):
            if isinstance(optimizer, Optimizer) and len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            lr_lambdas = list(lr_lambda)
        else:
            lr_lambdas = [lr_lambda] * (len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 0)
        for fn in lr_lambdas:
            if not callable(fn):
                raise TypeError(f"LambdaLR: lr_lambda must be callable, not {type(fn).__name__}")
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
        if not isinstance(state_dict, dict):
            raise TypeError(f"LambdaLR.load_state_dict(): expected a dict, not {type(state_dict).__name__}")
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        if len(lambdas) != len(self.lr_lambdas):
            raise ValueError(f"LambdaLR.load_state_dict(): expected {len(self.lr_lambdas)} lr_lambdas, got "
                             f"{len(lambdas)}")
        super().load_state_dict(state)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(copy.deepcopy(saved))

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs: initial lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        _check_int("StepLR", "step_size", step_size, 1)
        _check_number("StepLR", "gamma", gamma)
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
            _check_int("MultiStepLR", "each milestone", m, 0)
        _check_number("MultiStepLR", "gamma", gamma)
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


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch: initial lr * gamma ** epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        _check_number("ExponentialLR", "gamma", gamma)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs = self._group_lrs()
        if self.last_epoch == 0:
            return lrs
        return [lr * self.gamma for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` epochs (SGDR without restarts):
    eta_min + (initial lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, continuing as a cosine after T_max."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        _check_int("CosineAnnealingLR", "T_max", T_max, 1)
        _check_number("CosineAnnealingLR", "eta_min", eta_min)
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


class LinearLR(LRScheduler):
    """Linear warmup (or decay): the lr factor goes from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps, then stays: initial lr * (start + (end - start) * min(epoch, total_iters) / total_iters)."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        _check_number("LinearLR", "start_factor", start_factor)
        _check_number("LinearLR", "end_factor", end_factor)
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        _check_int("LinearLR", "total_iters", total_iters, 1)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        lrs, start, end, total = self._group_lrs(), self.start_factor, self.end_factor, self.total_iters
        if self.last_epoch == 0:
            return [lr * start for lr in lrs]
        if self.last_epoch > total:
            return lrs
        factor = 1.0 + (end - start) / (total * start + (self.last_epoch - 1) * (end - start))
        return [lr * factor for lr in lrs]

    def _get_closed_form_lr(self) -> list:
        start, end, total = self.start_factor, self.end_factor, self.total_iters
        factor = start + (end - start) * min(total, self.last_epoch) / total
        return [base_lr * factor for base_lr in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another: ``schedulers[i]`` takes over at epoch ``milestones[i - 1]``
    (restarting from its own epoch 0). The usual use is warmup followed by a decay (module docstring)."""

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        schedulers, milestones = list(schedulers), list(milestones)
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if not isinstance(scheduler, LRScheduler) or isinstance(scheduler, SequentialLR):
                raise TypeError(f"SequentialLR: schedulers[{i}] must be an LRScheduler other than SequentialLR, "
                                f"got {type(scheduler).__name__}")
            if scheduler.optimizer is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same optimizer, but got "
                                 f"scheduler {type(scheduler).__name__} at index {i} has a different optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        for m in milestones:
            _check_int("SequentialLR", "each milestone", m, 1)
        if any(a >= b for a, b in itertools.pairwise(milestones)):
            raise ValueError(f"SequentialLR: milestones must be increasing, got {milestones}")
        _check_int("SequentialLR", "last_epoch", last_epoch, -1)
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The schedulers' constructors each took a first step: go back to the initial lrs and
        # to before that step, then take the first step of the first schedule only.
        for group in optimizer.param_groups:
            if isinstance(group["lr"], Tensor):
                group["lr"].fill_(group["initial_lr"])
            else:
                group["lr"] = group["initial_lr"]
        for scheduler in schedulers:
            scheduler.last_epoch -= 1
        schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self) -> None:
        """Advance the active schedule by one step (switching schedule at a milestone)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._step(0)
        else:
            scheduler._step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        """The state, with each scheduler's state dict under ``'_schedulers'``."""
        state = copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")})
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict()`` (and the schedulers' states)."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"SequentialLR.load_state_dict(): expected a dict, not {type(state_dict).__name__}")
        state = dict(state_dict)
        saved = state.pop("_schedulers", None)
        if not isinstance(saved, list) or len(saved) != len(self._schedulers):
            raise ValueError(f"SequentialLR.load_state_dict(): expected the states of {len(self._schedulers)} "
                             f"schedulers under '_schedulers'")
        super().load_state_dict(state)
        for scheduler, s in zip(self._schedulers, saved):
            scheduler.load_state_dict(s)


__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "SequentialLR", "StepLR"]
