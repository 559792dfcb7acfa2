"""``DistributedDataParallel`` and ``DataParallel`` for one process (see the package docstring)."""

from __future__ import annotations

import contextlib

from oneflow_lite.nn.module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class _Wrapper(Module):
    def __init__(self, module: Module):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: module must be an nn.Module, got {type(module).__name__}")
        self.module = module

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(_Wrapper):
    """``DistributedDataParallel(module, device_ids=None, ...)``: PyTorch's arguments, accepted; with one process
    there are no gradients to average, so ``forward`` and ``backward`` are the module's own."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, **kwargs):
        super().__init__(module)
        self.device_ids = device_ids
        self.dim = dim

    @contextlib.contextmanager
    def no_sync(self):
        """Skip gradient synchronisation inside the block (nothing to skip with one process)."""
        yield


class DataParallel(_Wrapper):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: one device, the module itself."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__(module)
        self.device_ids = device_ids
        self.dim = dim
