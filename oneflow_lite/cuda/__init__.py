"""``flow.cuda``: what a script asks about CUDA, answered for a machine without it (oneflow_lite runs on
the CPU and on registered out-of-tree devices).

``is_available()`` is False and ``device_count()`` 0, so scripts pick the CPU; the seeding functions seed
the CPU generator (there is no other); ``amp.GradScaler`` / ``amp.autocast`` are accepted and, with no CUDA
device, disabled (with PyTorch's warning when asked to be enabled). Anything that needs a CUDA device
(``current_device()``, ``synchronize()``, ``get_device_name()``) raises a RuntimeError saying so.
"""

from __future__ import annotations

from oneflow_lite.cuda import amp  # noqa: F401
from oneflow_lite.framework.generator import manual_seed as _manual_seed

__all__ = ["amp", "current_device", "device_count", "empty_cache", "get_device_name", "is_available",
           "is_bf16_supported", "manual_seed", "manual_seed_all", "seed", "seed_all", "synchronize"]


def _no_cuda(what: str) -> RuntimeError:
    return RuntimeError(f"flow.cuda.{what}: oneflow_lite has no CUDA device (flow.cuda.is_available() is False); "
                        f"run on device 'cpu'")


def is_available() -> bool:
    """False: oneflow_lite has no CUDA backend."""
    return False


def device_count() -> int:
    """0: no CUDA devices."""
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: there is no CUDA device to support it."""
    return False


def manual_seed(seed: int) -> None:
    """Seeds the CPU generator (the only one there is)."""
    _manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seeds the CPU generator (the only one there is)."""
    _manual_seed(seed)


def seed() -> None:
    """Nothing to reseed: there is no CUDA generator."""


def seed_all() -> None:
    """Nothing to reseed: there is no CUDA generator."""


def empty_cache() -> None:
    """Nothing to free: there is no CUDA caching allocator."""


def current_device() -> int:
    raise _no_cuda("current_device()")


def get_device_name(device=None) -> str:
    raise _no_cuda("get_device_name()")


def synchronize(device=None) -> None:
    raise _no_cuda("synchronize()")
