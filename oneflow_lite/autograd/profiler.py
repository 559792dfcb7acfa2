"""``flow.autograd.profiler`` (``torch.autograd.profiler``): PyTorch's legacy profiling API over ``flow.profiler``
(``profile`` takes the legacy arguments; ``enabled=False`` records nothing), with ``record_function``."""

from __future__ import annotations

from oneflow_lite.profiler import EventList, record_function  # noqa: F401
from oneflow_lite.profiler import profile as _profile

__all__ = ["EventList", "profile", "record_function"]


class profile(_profile):  # noqa: N801  (PyTorch's name)
    """``with profile() as prof:`` ... ``prof.key_averages().table(...)``, as ``flow.profiler.profile``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, **kwargs):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules, experimental_config=experimental_config)
        self.enabled = enabled

    def __enter__(self):
        return super().__enter__() if self.enabled else self

    def __exit__(self, *exc):
        return super().__exit__(*exc) if self.enabled else False
