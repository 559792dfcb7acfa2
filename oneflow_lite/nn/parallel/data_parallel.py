"""``DataParallel`` for one process (see the package docstring)."""

from __future__ import annotations

from oneflow_lite.nn.module import Module

__all__ = ["DataParallel"]


class _Wrapper(Module):
    def __init__(self, module: Module):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: module must be an nn.Module, got {type(module).__name__}")
        self.module = module

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DataParallel(_Wrapper):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: one device, the module itself."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__(module)
        self.device_ids = device_ids
        self.dim = dim
