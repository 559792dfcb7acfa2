"""``flow.Stream`` and ``flow.Event``: PyTorch's device-agnostic streams and events (``torch.Stream``,
``torch.Event``).

Note [Synchronous streams]
Every op here runs to completion before its call returns (NumPy on the CPU), so a device has one stream and
all work recorded on it is done: ``query()`` is True, ``synchronize()`` / ``wait_*()`` return at once, and an
event records the host time at ``record()``, so ``elapsed_time`` measures the wall time between two records
(PyTorch's CPU backend refuses to record events; the device-agnostic code that times a region with two events
works here). Streams entered as context managers change nothing: there is one stream per device.
"""

from __future__ import annotations

import time

from oneflow_lite.framework.device import device as Device

__all__ = ["Event", "Stream"]


def _device(device) -> Device:
    """The device of a stream or an event: the default device (cpu) when None."""
    if device is None:
        return Device("cpu")
    if isinstance(device, int):
        return Device("cpu", device)
    return device if isinstance(device, Device) else Device(device)


class Stream:
    """``Stream(device=None, *, priority=0)``: the (one) stream of ``device`` (Note [Synchronous streams])."""

    def __init__(self, device=None, *, priority: int = 0):
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"Stream(): argument 'priority' must be int, not {type(priority).__name__}")
        self.device = _device(device)
        self.priority = priority

    @property
    def device_type(self) -> str:
        return self.device.type

    @property
    def device_index(self) -> int:
        return self.device.index

    @property
    def stream_id(self) -> int:
        return 0

    @property
    def native_handle(self) -> int:
        return 0

    def query(self) -> bool:
        """True: all work submitted to the stream has completed."""
        return True

    def synchronize(self) -> None:
        """Wait for the stream's work: done already."""

    def wait_event(self, event: Event) -> None:
        """Make the stream's future work wait for ``event``: it has completed already."""
        _check_event("Stream.wait_event", event)

    def wait_stream(self, stream: Stream) -> None:
        """Make the stream's future work wait for ``stream``'s work: done already."""
        if not isinstance(stream, Stream):
            raise TypeError(f"Stream.wait_stream(): argument 'stream' must be Stream, not {type(stream).__name__}")

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream; returns it."""
        if event is None:
            event = Event(self.device)
        _check_event("Stream.record_event", event)
        event.record(self)
        return event

    def is_capturing(self) -> bool:
        """False: no CUDA graph is being captured."""
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device == self.device

    def __hash__(self):
        return hash((self.device.type, self.device.index, 0))

    def __repr__(self):
        return f"oneflow_lite.Stream device_type={self.device_type}, device_index={self.device_index}, stream_id=0"


def _check_event(fn: str, event) -> None:
    if not isinstance(event, Event):
        raise TypeError(f"{fn}(): argument 'event' must be Event, not {type(event).__name__}")


class Event:
    """``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``: a marker recorded on a
    stream, used to wait for work and to time it (Note [Synchronous streams])."""

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.device = _device(device)
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = bool(interprocess)
        self._time = None  # the host time of the last record(), in seconds

    @property
    def event_id(self) -> int:
        return 0

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (the device's stream when None): all work so far is done."""
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"Event.record(): argument 'stream' must be Stream, not {type(stream).__name__}")
        self._time = time.perf_counter()

    def query(self) -> bool:
        """True: the work before the event has completed."""
        return True

    def synchronize(self) -> None:
        """Wait until the event completes: it has."""

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream``'s future work wait for the event: it has completed."""
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"Event.wait(): argument 'stream' must be Stream, not {type(stream).__name__}")

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event's record to ``end_event``'s (both made with ``enable_timing=True``)."""
        _check_event("Event.elapsed_time", end_event)
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time(): both events must be created with argument "
                             "'enable_timing=True'")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Event.elapsed_time(): both events must be recorded before calculating elapsed time")
        return (end_event._time - self._time) * 1000.0

    def ipc_handle(self):
        raise RuntimeError("Event.ipc_handle(): events are not shared between processes here "
                           "(oneflow_lite has no interprocess events)")

    @classmethod
    def from_ipc_handle(cls, device, ipc_handle):
        raise RuntimeError("Event.from_ipc_handle(): events are not shared between processes here "
                           "(oneflow_lite has no interprocess events)")

    def __repr__(self):
        return (f"oneflow_lite.Event device_type={self.device.type}, device_index={self.device.index}, "
                f"event_id=0")
