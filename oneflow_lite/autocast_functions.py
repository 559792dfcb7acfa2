"""PyTorch's torch-level autocast state functions: ``flow.set_autocast_enabled``, ``get_autocast_dtype`` /
``set_autocast_dtype``, ``clear_autocast_cache``, ``autocast_increment_nesting`` /
``autocast_decrement_nesting``, ``is_autocast_cache_enabled`` / ``set_autocast_cache_enabled`` and the
deprecated per-device forms (``is_autocast_cpu_enabled``, ``get_autocast_gpu_dtype``, ...).

Note [Autocast state functions]
They read and write the thread's autocast state that ``flow.autocast`` regions use (interpreters/autocast.py):
the dtype of each enabled device type, the cast cache and whether it is used, and the nesting depth of
autocast regions. As in PyTorch, a region restores on exit the state it was entered in, so a
``set_autocast_enabled`` inside one lasts until the region ends. The dtype set for a device type while
autocast is off for it is kept here (per thread) and used when it is enabled with ``set_autocast_enabled``.
Device types that are not devices here (``cuda``, ``xpu``, ``ipu``, ``xla``, ...) keep their dtype but cannot be
enabled: enabling one warns, as ``flow.autocast("cuda")`` does, and leaves it disabled.
"""

from __future__ import annotations

import threading
import warnings

from oneflow_lite.framework import device as device_mod
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.interpreters import autocast as _interp

__all__ = ["autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache",
           "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype", "get_autocast_ipu_dtype",
           "get_autocast_xla_dtype", "is_autocast_cache_enabled", "is_autocast_cpu_enabled",
           "is_autocast_ipu_enabled", "is_autocast_xla_enabled", "set_autocast_cache_enabled",
           "set_autocast_cpu_dtype", "set_autocast_cpu_enabled", "set_autocast_dtype", "set_autocast_enabled",
           "set_autocast_gpu_dtype", "set_autocast_ipu_dtype", "set_autocast_ipu_enabled", "set_autocast_xla_dtype",
           "set_autocast_xla_enabled"]

# PyTorch's device types that are not devices here, with PyTorch's default autocast dtypes.
_FOREIGN_DEFAULTS = {"cuda": dtypes.float16, "xpu": dtypes.float16, "ipu": dtypes.float16, "mps": dtypes.float16,
                     "mtia": dtypes.float16, "xla": dtypes.bfloat16, "hpu": dtypes.bfloat16,
                     "privateuseone": dtypes.float16}


class _Configured(threading.local):
    def __init__(self):
        self.dtypes = {}  # device type -> the dtype set while autocast is off for it


_configured = _Configured()


def _device_type(fn: str, device_type) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"{fn}(): argument 'device_type' must be str, not {type(device_type).__name__}")
    if device_type not in device_mod.device_types() and device_type not in _FOREIGN_DEFAULTS:
        known = ", ".join([*device_mod.device_types(), *_FOREIGN_DEFAULTS])
        raise RuntimeError(f"{fn}(): Expected one of {known} device type, got '{device_type}'")
    return device_type


def _default_dtype(device_type: str):
    return _FOREIGN_DEFAULTS.get(device_type, dtypes.bfloat16)


def get_autocast_dtype(device_type: str):
    """The dtype autocast uses (or would use) for ``device_type`` in this thread."""
    _device_type("get_autocast_dtype", device_type)
    dtype = _interp.enabled_dtype(device_type)
    if dtype is None:
        dtype = _configured.dtypes.get(device_type) or _default_dtype(device_type)
    return dtype


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the dtype autocast uses for ``device_type`` in this thread (now if enabled, else once enabled)."""
    _device_type("set_autocast_dtype", device_type)
    if not isinstance(dtype, dtypes.dtype) or not dtype.is_floating_point:
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' must be a floating flow.dtype, got {dtype!r}")
    state = _interp._state  # Note [Autocast state functions]
    if device_type in state.dtypes:
        state.dtypes[device_type] = dtype
    _configured.dtypes[device_type] = dtype


def _enabled_args(fn: str, args, kwargs) -> tuple:
    """(device_type, enabled) of ``set_autocast_enabled(device_type, enabled)`` or the legacy
    ``set_autocast_enabled(enabled)`` (cuda)."""
    if len(args) + len(kwargs) == 1 and "device_type" not in kwargs:
        return "cuda", (args[0] if args else kwargs["enabled"])
    bound = dict(zip(("device_type", "enabled"), args), **kwargs)
    if set(bound) != {"device_type", "enabled"} or len(args) > 2:
        raise TypeError(f"{fn}() takes (str device_type, bool enabled) or (bool enabled)")
    return bound["device_type"], bound["enabled"]


def set_autocast_enabled(*args, **kwargs) -> None:
    """``set_autocast_enabled(device_type, enabled)``: turn autocast on or off for ``device_type`` in this thread
    (``set_autocast_enabled(enabled)``: for cuda, PyTorch's legacy form)."""
    device_type, enabled = _enabled_args("set_autocast_enabled", args, kwargs)
    _set_enabled("set_autocast_enabled", device_type, enabled)


def _set_enabled(fn: str, device_type: str, enabled) -> None:
    _device_type(fn, device_type)
    if not isinstance(enabled, bool):
        raise TypeError(f"{fn}(): argument 'enabled' must be bool, not {type(enabled).__name__}")
    if device_type in _FOREIGN_DEFAULTS:
        if enabled:
            warnings.warn(f"{fn}(): device type '{device_type}' is not available in oneflow_lite; autocast stays "
                          f"disabled for it", stacklevel=3)
        return
    state = _interp._state  # Note [Autocast state functions]
    if enabled:
        state.dtypes.setdefault(device_type, get_autocast_dtype(device_type))
    else:
        dtype = state.dtypes.pop(device_type, None)
        if dtype is not None:
            _configured.dtypes[device_type] = dtype
    _interp._set_key(bool(state.dtypes))


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches the lower-precision casts of parameters in this thread."""
    return _interp._state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_cache_enabled(): argument 'enabled' must be bool, not "
                        f"{type(enabled).__name__}")
    _interp._state.cache_enabled = enabled


def clear_autocast_cache() -> None:
    """Drop the thread's cached casts (PyTorch calls it when the outermost autocast region exits)."""
    _interp._state.cache.clear()


def autocast_increment_nesting() -> int:
    """One more level of autocast regions in this thread; returns the new depth."""
    state = _interp._state
    state.depth += 1
    return state.depth


def autocast_decrement_nesting() -> int:
    """One level of autocast regions less in this thread; returns the new depth (the caller clears the cache
    at 0, as ``torch.autocast.__exit__`` does)."""
    state = _interp._state
    if state.depth <= 0:
        raise RuntimeError("autocast_decrement_nesting(): no autocast region is active in this thread")
    state.depth -= 1
    return state.depth


# ---- PyTorch's deprecated per-device forms ----------------------------------------------------------------
def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"flow.{old}() is deprecated. Please use flow.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return _interp.enabled_dtype("cpu") is not None


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    _set_enabled("set_autocast_cpu_enabled", "cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def is_autocast_ipu_enabled() -> bool:
    _deprecated("is_autocast_ipu_enabled", "is_autocast_enabled('ipu')")
    return False


def set_autocast_ipu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_ipu_enabled", "set_autocast_enabled('ipu', enabled)")
    _set_enabled("set_autocast_ipu_enabled", "ipu", enabled)


def get_autocast_ipu_dtype():
    _deprecated("get_autocast_ipu_dtype", "get_autocast_dtype('ipu')")
    return get_autocast_dtype("ipu")


def set_autocast_ipu_dtype(dtype) -> None:
    _deprecated("set_autocast_ipu_dtype", "set_autocast_dtype('ipu', dtype)")
    set_autocast_dtype("ipu", dtype)


def is_autocast_xla_enabled() -> bool:
    _deprecated("is_autocast_xla_enabled", "is_autocast_enabled('xla')")
    return False


def set_autocast_xla_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_xla_enabled", "set_autocast_enabled('xla', enabled)")
    _set_enabled("set_autocast_xla_enabled", "xla", enabled)


def get_autocast_xla_dtype():
    _deprecated("get_autocast_xla_dtype", "get_autocast_dtype('xla')")
    return get_autocast_dtype("xla")


def set_autocast_xla_dtype(dtype) -> None:
    _deprecated("set_autocast_xla_dtype", "set_autocast_dtype('xla', dtype)")
    set_autocast_dtype("xla", dtype)
