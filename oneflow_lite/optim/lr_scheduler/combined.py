"""Schedules made of other schedules: SequentialLR (one after another) and ChainedScheduler (all at
every step), with PyTorch's checks and state dicts."""

from __future__ import annotations

import copy
import itertools
from bisect import bisect_right

from oneflow_lite.optim.lr_scheduler.base import LRScheduler, check_int, check_optimizer, set_group_value
from oneflow_lite.optim.lr_scheduler.plateau import ReduceLROnPlateau
from oneflow_lite.optim.optimizer import Optimizer


def _check_member(owner: str, i: int, scheduler, optimizer) -> None:
    if not hasattr(scheduler, "optimizer"):
        raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
    if isinstance(scheduler, ReduceLROnPlateau):  # PyTorch raises ValueError
        raise ValueError(  # noqa: TRY004
            f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs "
            f"to be specified when calling `step`, but got one at index {i} in the given schedulers sequence.")
    if scheduler.optimizer is not optimizer:
        raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                         f"{type(scheduler).__name__} at index {i} has a different optimizer")


class _Composite(LRScheduler):
    """A schedule of schedules: its state dict holds theirs under ``'_schedulers'``."""

    _schedulers: list

    def state_dict(self) -> dict:
        """The state, with each scheduler's state dict under ``'_schedulers'``."""
        state = copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")})
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict()`` (and the schedulers' states)."""
        name = type(self).__name__
        if not isinstance(state_dict, dict):
            raise TypeError(f"{name}.load_state_dict(): expected a dict, not {type(state_dict).__name__}")
        state = dict(state_dict)
        saved = state.pop("_schedulers", None)
        if not isinstance(saved, list) or len(saved) != len(self._schedulers):
            raise ValueError(f"{name}.load_state_dict(): expected the states of {len(self._schedulers)} "
                             f"schedulers under '_schedulers'")
        super().load_state_dict(state)
        for scheduler, s in zip(self._schedulers, saved):
            scheduler.load_state_dict(s)


def _undo_initial_steps(scheduler) -> None:
    """Step the schedules (those chained in ``scheduler`` too) back to before their constructor's step."""
    if isinstance(scheduler, ChainedScheduler):
        for s in scheduler._schedulers:
            _undo_initial_steps(s)
    else:
        scheduler.last_epoch -= 1


class SequentialLR(_Composite):
    """Run ``schedulers`` one after another: ``schedulers[i]`` takes over at epoch ``milestones[i - 1]``
    (restarting from its own epoch 0). The usual use is warmup followed by a decay::

        warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
        cosine = CosineAnnealingLR(opt, T_max=95)
        sched = SequentialLR(opt, [warmup, cosine], milestones=[5])
    """

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        check_optimizer(optimizer)
        schedulers, milestones = list(schedulers), list(milestones)
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if not isinstance(scheduler, LRScheduler) or isinstance(scheduler, SequentialLR):
                raise TypeError(f"SequentialLR: schedulers[{i}] must be an LRScheduler other than SequentialLR, "
                                f"got {type(scheduler).__name__}")
            _check_member("SequentialLR", i, scheduler, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        for m in milestones:
            check_int("SequentialLR", "each milestone", m, 1)
        if any(a >= b for a, b in itertools.pairwise(milestones)):
            raise ValueError(f"SequentialLR: milestones must be increasing, got {milestones}")
        check_int("SequentialLR", "last_epoch", last_epoch, -1)
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The schedulers' constructors each took a first step: go back to the initial lrs and
        # to before that step, then take the first step of the first schedule only.
        for group in optimizer.param_groups:
            set_group_value(group, "lr", group["initial_lr"])
        for scheduler in schedulers:
            _undo_initial_steps(scheduler)
        schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self) -> None:
        """Advance the active schedule by one step (switching schedule at a milestone)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler of ``schedulers`` (chainable ones, on one optimizer) at each ``step()``, in
    order: their factors compose, e.g. a ConstantLR warmup on top of an ExponentialLR decay."""

    def __init__(self, schedulers, optimizer: Optimizer | None = None):
        schedulers = list(schedulers)
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.")
        if optimizer is None:
            if not hasattr(schedulers[0], "optimizer"):
                raise TypeError("ChainedScheduler at index 0 should have `optimizer` as its attribute.")
            optimizer = schedulers[0].optimizer
        for i, scheduler in enumerate(schedulers):
            _check_member("ChainedScheduler", i, scheduler, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = self._group_lrs()

    def _initial_step(self) -> None:
        """The constructors' first step of every chained schedule (when a SequentialLR restarts them)."""
        for scheduler in self._schedulers:
            scheduler._initial_step()
        self._last_lr = self._group_lrs()

    def _update_lr(self, epoch=None) -> None:
        """Move every chained schedule to ``epoch`` (a SequentialLR's milestone)."""
        for scheduler in self._schedulers:
            scheduler._update_lr(epoch)
        self._last_lr = self._group_lrs()

    def step(self) -> None:
        """Step each chained scheduler once, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._group_lrs()
