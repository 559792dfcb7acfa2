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

``StaticGradScaler(scale_factor)`` (OneFlow's) scales by a constant: no inf / NaN check, no skipped step.
Both are also what ``nn.Graph.set_grad_scaler`` takes (Note [Graph AMP] in graph/amp.py); a scaler given to a
graph keeps its scale and growth tracker in two 0-d tensors that the graph's job updates at every run, so
``get_scale()`` and ``state_dict()`` report the graph's state.
"""

from __future__ import annotations

import warnings

from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.dispatch.tls import ExcludeDispatchKeyGuard
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functional import full

__all__ = ["GradScaler", "StaticGradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Dynamic loss scaling (see the module docstring); PyTorch's arguments and defaults."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        self._for_graph = bool(enabled)  # nn.Graph.set_grad_scaler may use it (a 'cuda' scaler too)
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
        self._tensors = None  # (scale, growth tracker) as 0-d tensors once a graph uses the scaler
        self._scale_value = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._tracker_value = 0
        self._per_optimizer = {}  # id(optimizer) -> [stage, found_inf]

    # ---- the scale and the growth tracker: Python numbers, or tensors a graph updates --------------
    @property
    def _scale(self) -> float:
        t = self._tensors
        return self._scale_value if t is None else t[0].item()

    @_scale.setter
    def _scale(self, value) -> None:
        self._scale_value = float(value)
        if self._tensors is not None:
            _write(self._tensors[0], self._scale_value)

    @property
    def _growth_tracker(self) -> int:
        t = self._tensors
        return self._tracker_value if t is None else t[1].item()

    @_growth_tracker.setter
    def _growth_tracker(self, value) -> None:
        self._tracker_value = int(value)
        if self._tensors is not None:
            _write(self._tensors[1], self._tracker_value)

    def _enable_for_graph(self) -> bool:
        """Called by ``nn.Graph.set_grad_scaler``: whether the graph uses this scaler (it was made enabled, maybe
        for 'cuda', which enables it now)."""
        if self._for_graph:
            self._enabled = True
        return self._enabled

    def _state_tensors(self) -> tuple:
        """The scale (0-d float64) and the growth tracker (0-d int64) as tensors, made on first call from the
        current values; from then on the scaler's state lives in them (Note [Graph AMP] in graph/amp.py)."""
        if self._tensors is None:
            with ExcludeDispatchKeyGuard(DispatchKey.Lazy):
                self._tensors = (full((), self._scale_value, dtype=dtypes.float64),
                                 full((), self._tracker_value, dtype=dtypes.int64))
        return self._tensors

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


def _write(t: Tensor, value) -> None:
    """Write ``value`` into the 0-d state tensor ``t`` in place, eagerly."""
    with no_grad(), ExcludeDispatchKeyGuard(DispatchKey.Lazy):
        t.fill_(value)


class StaticGradScaler:
    """Loss scaling by a constant ``scale_factor`` (OneFlow's ``flow.amp.StaticGradScaler``): ``scale`` multiplies,
    ``unscale_`` / ``step`` divide the gradients, no inf / NaN check, every step runs; ``update`` does nothing."""

    def __init__(self, scale_factor: float):
        if not (isinstance(scale_factor, (int, float)) and scale_factor > 0.0):
            raise ValueError(f"StaticGradScaler's scale_factor must > 0.0, got {scale_factor!r}")
        self._scale_factor = float(scale_factor)
        self._unscaled = set()  # ids of the optimizers unscaled since their last step

    def scale(self, outputs):
        if isinstance(outputs, Tensor):
            return outputs * self._scale_factor
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        raise ValueError(f"StaticGradScaler.scale(): outputs must be a Tensor or an iterable of Tensors, got "
                         f"{type(outputs).__name__}")

    def unscale_(self, optimizer) -> None:
        if id(optimizer) in self._unscaled:
            raise RuntimeError("unscale_() has already been called on this optimizer since its last step().")
        inv = 1.0 / self._scale_factor
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.mul_(inv)
        self._unscaled.add(id(optimizer))

    def step(self, optimizer, *args, **kwargs):
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        self._unscaled.discard(id(optimizer))
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """A static scale does not change (``new_scale`` is refused)."""
        if new_scale is not None:
            raise RuntimeError("StaticGradScaler.update(): a static scale does not change; make a new scaler")

    def is_enabled(self) -> bool:
        return True

    def get_scale(self) -> float:
        return self._scale_factor

    def __repr__(self):
        return f"StaticGradScaler(scale_factor={self._scale_factor})"
