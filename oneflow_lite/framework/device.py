"""Devices: interned ``flow.device`` objects and the registry of device types.

A device type names a dispatch key (its backend) and how its buffers are
made. ``cpu`` and ``meta`` are built in; an out-of-tree backend registers one more
type on the ``PrivateUse1`` key with :func:`register_device_type`.

Note [Device storage and transfer hooks]
A device with storage keeps a NumPy array per tensor (its "device memory"; an
out-of-tree device may keep them anywhere NumPy can see, and count or check them).
Its two transfer hooks say how data crosses the host boundary:
``to_device(host_array) -> device_array`` makes a new device buffer holding a
host array's values, ``to_host(device_array) -> host_array`` a new host array
holding a device buffer's. ``flow.library.register_device`` registers a device
type with its hooks and makes ``copy`` (``x.to(...)``, ``flow.tensor(...,
device=...)``) call them in both directions; kernels and fallbacks on the device
call them too (see Note [Device fallbacks] in dispatch/dispatcher.py). Without
hooks a transfer copies the array.
"""

from __future__ import annotations

import threading

from oneflow_lite.dispatch.dispatch_key import DispatchKey


def _copy(array):
    return array.copy()


class DeviceType:
    """What a device type is: its name, backend dispatch key, whether it holds data, and its transfer hooks
    (Note [Device storage and transfer hooks])."""

    __slots__ = ("name", "dispatch_key", "key_set", "has_storage", "to_device", "to_host")

    def __init__(self, name: str, dispatch_key: DispatchKey, has_storage: bool, to_device=None, to_host=None):
        self.name = name
        self.dispatch_key = dispatch_key
        self.key_set = 1 << dispatch_key
        self.has_storage = has_storage
        self.to_device = to_device or _copy
        self.to_host = to_host or _copy

    def __repr__(self):
        return f"DeviceType({self.name!r}, {self.dispatch_key.name})"


_types: dict[str, DeviceType] = {}
_interned: dict[tuple[str, int], "device"] = {}
_lock = threading.Lock()


def register_device_type(name: str, dispatch_key: DispatchKey = DispatchKey.PrivateUse1,
                         has_storage: bool = True, *, to_device=None, to_host=None) -> DeviceType:
    """Make ``flow.device(name)`` valid and route its tensors to ``dispatch_key``.

    Only backend keys are accepted, and a backend key serves one device type.
    ``to_device`` / ``to_host`` are the device's transfer hooks (Note [Device storage
    and transfer hooks]); ``flow.library.register_device`` also makes copies use them.
    """
    from oneflow_lite.dispatch.dispatch_key import BACKEND_KEYS

    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register_device_type: name must be an identifier, got {name!r}")
    for hook_name, hook in (("to_device", to_device), ("to_host", to_host)):
        if hook is not None and not callable(hook):
            raise ValueError(f"register_device_type('{name}'): {hook_name} must be a function of a NumPy array "
                             f"returning a NumPy array, got {hook!r}")
    if dispatch_key not in BACKEND_KEYS:
        raise ValueError(f"register_device_type: {dispatch_key!r} is not a backend key; "
                         f"expected one of {[k.name for k in BACKEND_KEYS]}")
    with _lock:
        if name in _types:
            raise ValueError(f"register_device_type: device type {name!r} is already registered")
        for t in _types.values():
            if t.dispatch_key == dispatch_key:
                raise ValueError(f"register_device_type: {dispatch_key.name} already serves device type {t.name!r}")
        dt = DeviceType(name, dispatch_key, has_storage, to_device, to_host)
        _types[name] = dt
    return dt


def unregister_device_type(name: str) -> None:
    """Undo :func:`register_device_type` (for tests and plugins that unload)."""
    if name in ("cpu", "meta"):
        raise ValueError(f"unregister_device_type: {name!r} is built in")
    with _lock:
        if _types.pop(name, None) is None:
            raise ValueError(f"unregister_device_type: device type {name!r} is not registered")
        for key in [k for k in _interned if k[0] == name]:
            del _interned[key]


def device_types() -> tuple[str, ...]:
    return tuple(_types)


class device:
    """``flow.device("cpu")``, ``flow.device("cpu:0")``, ``flow.device("meta")``.

    Devices are interned: equal devices are the same object.
    """

    __slots__ = ("type", "index", "device_type", "key_set", "_str")

    def __new__(cls, spec="cpu", index: int | None = None):
        if isinstance(spec, device):
            if index is not None:
                raise ValueError(f"device: index given twice for {spec}")
            return spec
        if not isinstance(spec, str):
            raise TypeError(f"device: expected a string such as 'cpu' or 'cpu:0', got {type(spec).__name__}")
        name, _, idx_text = spec.partition(":")
        if idx_text:
            if index is not None:
                raise ValueError(f"device: index given twice in {spec!r}")
            if not idx_text.isdigit():
                raise ValueError(f"device: invalid device string {spec!r}; the index must be a non-negative integer")
            index = int(idx_text)
        key = (name, index if index is not None else 0)
        found = _interned.get(key)
        if found is not None:
            return found
        dt = _types.get(name)
        if dt is None:
            raise RuntimeError(f"device: expected one of {', '.join(sorted(_types))} device type "
                               f"(optionally followed by ':0'), got {spec!r}")
        if key[1] != 0:
            raise RuntimeError(f"device: {name} has only device index 0, got {spec!r}")
        self = object.__new__(cls)
        self.type = name
        self.index = 0
        self.device_type = dt
        self.key_set = dt.key_set
        self._str = f"{name}:0" if name != "meta" else "meta"
        with _lock:
            return _interned.setdefault(key, self)

    def __repr__(self):
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self._str

    def __reduce__(self):
        return (device, (self.type, self.index))


register_device_type("cpu", DispatchKey.CPU)
register_device_type("meta", DispatchKey.Meta, has_storage=False)


def device_type(name: str) -> DeviceType:
    """The registered ``DeviceType`` called ``name``."""
    try:
        return _types[name]
    except KeyError:
        raise RuntimeError(f"unknown device type {name!r}; known: {', '.join(_types)}") from None
