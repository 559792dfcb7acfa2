"""Cyclical schedules stepped after every batch: CyclicLR and OneCycleLR (PyTorch's formulas), which
also cycle the momentum (``momentum``, or ``betas[0]`` of Adam-like optimizers) inversely to the lr."""

from __future__ import annotations

import copy
import math
import numbers
import types

from oneflow_lite.optim.lr_scheduler.base import (
    LRScheduler,
    check_number,
    check_optimizer,
    format_param,
    set_group_value,
    set_momentum,
)
from oneflow_lite.optim.optimizer import Optimizer


def _start_momentum_cycle(scheduler, optimizer: Optimizer, base_momentum, max_momentum, last_epoch: int):
    """Check that the optimizer has a momentum to cycle; at a start (``last_epoch == -1``) set each group's
    momentum to its maximum and record ``max_momentum`` / ``base_momentum`` in the groups. Returns the
    per-group ``(base_momentums, max_momentums)``."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    scheduler.use_beta1 = "betas" in optimizer.defaults
    base_momentums = format_param("base_momentum", optimizer, base_momentum)
    max_momentums = format_param("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, optimizer.param_groups):
            set_momentum(group, scheduler.use_beta1, m_momentum)
            group["max_momentum"] = m_momentum
            group["base_momentum"] = b_momentum
    return base_momentums, max_momentums


class CyclicLR(LRScheduler):
    """The cyclical learning rate policy (CLR): the lr goes from ``base_lr`` up to ``max_lr`` in
    ``step_size_up`` steps and back down in ``step_size_down`` (default: the same), the amplitude scaled
    per ``mode``: "triangular" (constant), "triangular2" (halved each cycle), "exp_range"
    (``gamma ** iteration``), or by a custom ``scale_fn`` of the cycle number or the iteration
    (``scale_mode``). With ``cycle_momentum`` the momentum goes inversely, between ``max_momentum`` and
    ``base_momentum``. Step it after every batch."""

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000, step_size_down=None,
                 mode: str = "triangular", gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1):
        check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                set_group_value(group, "lr", lr)
        self.max_lrs = format_param("max_lr", optimizer, max_lr)
        for name, size in (("step_size_up", step_size_up), ("step_size_down", step_size_down)):
            if size is not None:
                check_number("CyclicLR", name, size)
        if step_size_up <= 0 or (step_size_down is not None and step_size_down < 0):
            raise ValueError(f"CyclicLR: step_size_up must be positive and step_size_down non-negative, got "
                             f"{step_size_up} and {step_size_down}")
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _start_momentum_cycle(self, optimizer, base_momentum,
                                                                            max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        """The built-in modes scale per cycle (triangular, triangular2) or per iteration (exp_range)."""
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x) -> float:
        """The amplitude's scale at cycle (or iteration) ``x``: the custom ``scale_fn`` or the mode's."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale for base_lr, max_lr in zip(self.base_lrs,
                                                                                            self.max_lrs)]
        if self.cycle_momentum:
            for group, base_m, max_m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                set_momentum(group, self.use_beta1, max_m - (max_m - base_m) * scale_factor * scale)
        return lrs

    def state_dict(self) -> dict:
        """The state; a custom ``scale_fn`` is saved as its ``__dict__`` when it is a callable object
        (functions and lambdas are not saved)."""
        fn = self._scale_fn_custom
        state = copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_scale_fn_custom")})
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else \
            copy.deepcopy(fn.__dict__)
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict()`` (the saved attributes of a callable-object ``scale_fn`` included)."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"CyclicLR.load_state_dict(): expected a dict, not {type(state_dict).__name__}")
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom", None)
        super().load_state_dict(state)
        if fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(copy.deepcopy(fn))
        self._init_scale_fn()


def _positive_int(value, message: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(message)
    return value


def _one_cycle_phases(total_steps: int, pct_start: float, three_phase: bool) -> list:
    """The phases of the 1cycle policy: end step and the group keys of the lr / momentum at both ends."""
    warmup_end = float(pct_start * total_steps) - 1
    if three_phase:
        return [
            {"end_step": warmup_end, "start_lr": "initial_lr", "end_lr": "max_lr",
             "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
            {"end_step": float(2 * pct_start * total_steps) - 2, "start_lr": "max_lr", "end_lr": "initial_lr",
             "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            {"end_step": total_steps - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
             "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
        ]
    return [
        {"end_step": warmup_end, "start_lr": "initial_lr", "end_lr": "max_lr",
         "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
        {"end_step": total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr",
         "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
    ]


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the lr anneals from ``max_lr / div_factor`` up to ``max_lr`` over the first
    ``pct_start`` of ``total_steps`` (or ``epochs * steps_per_epoch``) steps, then down to
    ``initial_lr / final_div_factor`` ("cos" or "linear" annealing); ``three_phase`` goes back to the
    initial lr first, symmetrically, then down to the minimum. With ``cycle_momentum`` the momentum (or
    beta1) goes inversely between ``max_momentum`` and ``base_momentum``. Step it after every batch;
    stepping past ``total_steps`` raises."""

    def __init__(self, optimizer: Optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            self.total_steps = _positive_int(total_steps, f"Expected positive integer total_steps, but got "
                                                          f"{total_steps}")
        elif epochs is not None and steps_per_epoch is not None:
            _positive_int(epochs, f"Expected positive integer epochs, but got {epochs}")
            _positive_int(steps_per_epoch, f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        self._schedule_phases = _one_cycle_phases(self.total_steps, pct_start, three_phase)
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        check_number("OneCycleLR", "div_factor", div_factor)
        check_number("OneCycleLR", "final_div_factor", final_div_factor)
        max_lrs = format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, group_max_lr in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = group_max_lr / div_factor
                group["max_lr"] = group_max_lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _start_momentum_cycle(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step, phases = 0.0, self._schedule_phases
            for i, phase in enumerate(phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    break
                start_step = end_step
            lrs.append(self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                momentum = self._anneal_func(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                set_momentum(group, self.use_beta1, momentum)
        return lrs
