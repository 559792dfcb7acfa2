"""``flow.amp.GradScaler``: dynamic loss scaling (PyTorch's ``torch.amp.GradScaler``).

::

    scaler = flow.amp.GradScaler()
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()    # gradients of loss * scale
        scaler.step(optimizer)           # unscale; skip the step if a gradient is inf / NaN
        scaler.update()                  # halve the scale after an overflow, double it after
                                         # ``growth_interval`` clean steps

With ``enabled=False`` every method is a pass-through (``scale`` returns its input, ``step`` calls
``optimizer.step()``), so one script runs with and without mixed precision. A scaler for device
``"cuda"`` is disabled here, with PyTorch's warning: there is no CUDA device.
"""

from __future__ import annotations

import warnings

from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.framework.tensor import Tensor

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Dynamic loss scaling (see the module docstring); PyTorch's arguments and defaults."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        if enabled and device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            enabled = False
        if enabled:
            if not growth_factor > 1.0:
                raise ValueError(f"GradScaler: growth_factor should be > 1, got {growth_factor}")
            if not 0.0 < backoff_factor < 1.0:
                raise ValueError(f"GradScaler: backoff_factor should be < 1 and > 0, got {backoff_factor}")
            if not (isinstance(growth_interval, int) and growth_interval > 0):
                raise ValueError(f"GradScaler: growth_interval should be a positive int, got {growth_interval!r}")
        self._device = device
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}  # id(optimizer) -> [stage, found_inf]

    # ---- the training-loop API ------------------------------------------------------------------
    def scale(self, outputs):
        """``outputs`` (a tensor, or a list / tuple / dict of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        raise ValueError(f"GradScaler.scale(): outputs must be a Tensor or an iterable of Tensors, got "
                         f"{type(outputs).__name__}")

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, and note whether any is
        inf or NaN. At most once per optimizer between two ``update()`` calls."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state[0] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state[0] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = 1.0 / self._scale
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    g.mul_(inv)
                    if not found_inf and not bool(g.isfinite().all()):
                        found_inf = True
        state[0], state[1] = _UNSCALED, found_inf

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, skipped (returning None) when a gradient
        is inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state[0] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state[0] == _READY:
            self.unscale_(optimizer)
        result = None if state[1] else optimizer.step(*args, **kwargs)
        state[0] = _STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """Back off the scale if any step of this iteration saw inf / NaN, else grow it every
        ``growth_interval`` clean iterations; ``new_scale`` (a float or a 1-element tensor) sets it instead."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        elif self._per_optimizer:
            if any(found for _, found in self._per_optimizer.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def _state(self, optimizer) -> list:
        return self._per_optimizer.setdefault(id(optimizer), [_READY, False])

    # ---- queries and state ------------------------------------------------------------------------
    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict:
        """PyTorch's keys; empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
