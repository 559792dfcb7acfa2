"""``flow.nn.attention`` (``torch.nn.attention``): ``SDPBackend`` and the ``sdpa_kernel`` context manager that
programs use to pick the kernels of ``scaled_dot_product_attention``. oneflow_lite has one implementation (the
math one, for every backend named), so the block only checks its argument."""

from __future__ import annotations

import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """``with sdpa_kernel(SDPBackend.FLASH_ATTENTION):`` (or a list of backends): attention in the block runs as
    before (the one math implementation)."""
    listed = backends if isinstance(backends, (list, tuple)) else [backends]
    if not all(isinstance(b, SDPBackend) for b in listed):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    yield
