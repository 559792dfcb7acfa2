"""``flow.accelerator``: PyTorch 2.6's device-agnostic accelerator queries; oneflow_lite has no accelerator
(it computes on the CPU), so scripts that ask fall back to ``"cpu"``."""

from __future__ import annotations

__all__ = ["current_accelerator", "device_count", "is_available"]


def is_available() -> bool:
    """False: no accelerator."""
    return False


def device_count() -> int:
    return 0


def current_accelerator(check_available: bool = False):
    """None: no accelerator."""
    return None
