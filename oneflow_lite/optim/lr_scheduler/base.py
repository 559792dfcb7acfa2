"""``LRScheduler``, the base class of the learning-rate schedules, and the helpers they share.

Note [Scheduled values]
A scheduler writes ``param_group['lr']`` (and, CyclicLR / OneCycleLR, ``momentum`` or
``betas[0]``) with ``set_group_value`` / ``set_momentum``: in place (``fill_``) when the
value is a tensor, so an nn.Graph that captured the optimizer step reads the new value at
its next run (Note [Optimizer steps in a graph]); by assignment otherwise. Schedules
compute in Python numbers: a tensor value is read (``lr_value``), and ``get_last_lr()``
returns numbers.
"""

from __future__ import annotations

import copy
import functools
import numbers
import warnings
import weakref

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.optim.optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please "
    "use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available.")


def lr_value(lr):
    """A group's lr (or momentum) as a Python number (a tensor is read)."""
    return lr.item() if isinstance(lr, Tensor) else lr


def set_group_value(group: dict, key: str, value) -> None:
    """``group[key] = value``, in place when ``group[key]`` is a tensor (Note [Scheduled values])."""
    if isinstance(group[key], Tensor):
        group[key].fill_(lr_value(value))
    else:
        group[key] = value


def set_momentum(group: dict, use_beta1: bool, value) -> None:
    """Set the group's ``betas[0]`` (Adam-like optimizers) or ``momentum`` (Note [Scheduled values])."""
    if not use_beta1:
        set_group_value(group, "momentum", value)
    elif isinstance(group["betas"][0], Tensor):
        group["betas"][0].fill_(value)
    else:
        group["betas"] = (value, *group["betas"][1:])


def format_param(name: str, optimizer: Optimizer, param) -> list:
    """One value per parameter group: ``param`` repeated, or a list / tuple of one per group (PyTorch's
    ``_format_param``); tensors are cloned."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has {len(param)} "
                             f"values, param_groups has {len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return [p.clone() if isinstance(p, Tensor) else p for p in param]


def check_int(cls: str, name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{cls}: {name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{cls}: {name} must be at least {minimum}, got {value}")


def check_number(cls: str, name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{cls}: {name} must be a number, not {type(value).__name__}")


def check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def track_optimizer_steps(optimizer: Optimizer) -> None:
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
    The constructor takes the first step (epoch 0) with ``_is_initial`` set.
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        check_optimizer(optimizer)
        check_int(type(self).__name__, "last_epoch", last_epoch, -1)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", lr_value(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming an "
                                   f"optimizer")
        self.optimizer = optimizer
        self.base_lrs = [lr_value(group["initial_lr"]) for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self._step()
        finally:
            self._is_initial = False

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
        return [lr_value(group["lr"]) for group in self.optimizer.param_groups]

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one step (``epoch``, deprecated: jump to that epoch, closed form)."""
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
            check_int(type(self).__name__, "epoch", epoch, 0)
        self._step(epoch)

    def _warn_about_call_order(self) -> None:
        if not getattr(self.optimizer.step, "_tracked_by_lr_scheduler", False):
            warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                          "initialization. Please, make sure to call `optimizer.step()` before "
                          "`lr_scheduler.step()`.", UserWarning, stacklevel=4)
        elif not getattr(self.optimizer, "_opt_called", False):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should call "
                          "them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`. Failure "
                          "to do this will result in skipping the first value of the learning rate schedule.",
                          UserWarning, stacklevel=4)

    def _step(self, epoch: int | None = None) -> None:
        if self._step_count == 1:
            self._warn_about_call_order()
        self._step_count += 1
        try:
            self._update_lr(epoch)
        except BaseException:  # a failing get_lr (e.g. an lr_lambda) leaves the schedule where it was
            self._step_count -= 1
            raise

    def _update_lr(self, epoch: int | None = None) -> None:
        """Move to the next epoch (or to ``epoch``, by the closed form) and set the groups' lrs."""
        previous = self.last_epoch
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        except BaseException:
            self.last_epoch = previous
            raise
        finally:
            self._get_lr_called_within_step = False
        self._set_lrs(values)

    def _set_lrs(self, values) -> None:
        for group, lr in zip(self.optimizer.param_groups, values):
            set_group_value(group, "lr", lr)
        self._last_lr = self._group_lrs()


_LRScheduler = LRScheduler  # PyTorch's older name
