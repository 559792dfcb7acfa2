"""``flow.cuda.amp``: PyTorch's deprecated CUDA spellings of ``flow.amp``; with no CUDA device both are
disabled, as PyTorch disables them when CUDA is not available."""

from __future__ import annotations

from oneflow_lite.amp.autocast_mode import autocast as _autocast
from oneflow_lite.amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast"]


class GradScaler(_GradScaler):
    """``torch.cuda.amp.GradScaler(...)``: ``flow.amp.GradScaler("cuda", ...)``, disabled without CUDA."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


class autocast(_autocast):  # PyTorch's name
    """``torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)``: ``flow.autocast("cuda",
    ...)``; with no CUDA device it does nothing (PyTorch warns and disables it too). A context manager and a
    decorator."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
