"""``flow.cpu`` (PyTorch's ``torch.cpu``): the device module of the CPU, for device-agnostic code that asks
``flow.get_device_module()`` for the current device's module. Work is synchronous (Note [Synchronous streams]
in streams.py)."""

from __future__ import annotations

from oneflow_lite.streams import Event, Stream

__all__ = ["Event", "Stream", "StreamContext", "current_device", "current_stream", "device_count", "is_available",
           "is_initialized", "set_device", "stream", "synchronize"]

_STREAM = Stream("cpu")


def is_available() -> bool:
    """True: the CPU is always there."""
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    """``'cpu'`` (PyTorch's answer)."""
    return "cpu"


def set_device(device) -> None:
    """A no-op: there is one CPU device."""


def synchronize(device=None) -> None:
    """Wait for the CPU's work: done already."""


def current_stream(device=None) -> Stream:
    """The CPU's stream."""
    return _STREAM


class StreamContext:
    """Context manager selecting ``stream`` (the CPU has one stream, so nothing changes)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


def stream(stream) -> StreamContext:
    """``StreamContext(stream)``."""
    return StreamContext(stream)
