"""``flow.autocast`` / ``flow.amp.autocast``: mixed precision regions (PyTorch's ``torch.autocast``).

::

    with flow.autocast("cpu", dtype=flow.float16):
        loss = loss_fn(model(x), y)      # linear / matmul / conv in float16, the loss in float32
    scaler.scale(loss).backward()        # float32 parameters get float32 gradients

Inside the region the ops of the thread run under the autocast interpreter (interpreters/autocast.py,
Note [Autocast policies]): PyTorch's CPU lists decide which ops run in the lower-precision dtype, which in
float32, which in the widest input dtype. ``enabled=False`` turns autocast off inside an enabled region;
leaving a region restores exactly the state it was entered in. An ``autocast`` object is also a decorator.
``"cuda"`` is accepted and disabled with PyTorch's warning (there is no CUDA device here).
"""

from __future__ import annotations

import functools
import warnings

from oneflow_lite.framework import device as device_mod
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.interpreters import autocast as _interp

__all__ = ["autocast", "get_autocast_dtype", "is_autocast_available", "is_autocast_enabled"]


def _default_dtype(device_type: str):
    """PyTorch's default autocast dtype: bfloat16 on cpu (and other devices but cuda), float16 on cuda."""
    if device_type == "cuda":
        return dtypes.float16
    return getattr(dtypes, "bfloat16", None)


def is_autocast_available(device_type: str) -> bool:
    """Whether ``flow.autocast`` supports ``device_type`` (every registered device type but cuda)."""
    return device_type in device_mod.device_types() and device_type != "cuda"


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(  # noqa: TRY004  (PyTorch's exception)
            f"autocast: expected `device_type` of type `str`, got: `{type(device_type).__name__}`")
    if device_type != "cuda" and device_type not in device_mod.device_types():
        raise RuntimeError(f"autocast: unsupported device_type '{device_type}'; expected one of "
                           f"{', '.join(repr(d) for d in device_mod.device_types())} (or 'cuda', which is disabled "
                           f"here)")


def _check_dtype(device_type: str, dtype):
    supported = _interp.lower_precision_dtypes()
    if dtype is None:
        raise RuntimeError(f"autocast: the default dtype of device_type '{device_type}' is bfloat16, which this "
                           f"build of oneflow_lite does not have; pass dtype=flow.float16")
    if dtype not in supported:
        names = " and ".join(f"flow.{d.name}" for d in supported)
        shown = f"flow.{dtype.name}" if isinstance(dtype, dtypes.dtype) else repr(dtype)
        raise RuntimeError(f"autocast: unsupported dtype {shown} for device_type '{device_type}'; autocast "
                           f"supports {names}")


class autocast:  # PyTorch's name
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context manager and a
    decorator enabling mixed precision for ``device_type`` (see the module docstring)."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        _check_device_type(device_type)
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: expected `enabled` of type bool, got {type(enabled).__name__}")
        if cache_enabled is not None and not isinstance(cache_enabled, bool):
            raise TypeError(f"autocast: expected `cache_enabled` of type bool or None, got "
                            f"{type(cache_enabled).__name__}")
        if device_type == "cuda" and enabled:
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling", stacklevel=2)
            enabled = False
        if dtype is None:
            dtype = _default_dtype(device_type)
        if enabled or dtype is not None:
            _check_dtype(device_type, dtype)
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = enabled
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        self._tokens = []  # one per entry of this object (it may be entered again while active)

    def __enter__(self):
        self._tokens.append(_interp.enter(self.device, self.fast_dtype, self._enabled, self._cache_enabled))
        return self

    def __exit__(self, *exc):
        _interp.leave(self._tokens.pop())
        return False

    def __call__(self, fn):
        """Use as a decorator: each call of ``fn`` runs inside this autocast region."""
        if not callable(fn):
            raise TypeError(f"autocast: a decorator needs a callable, got {type(fn).__name__}")

        @functools.wraps(fn)
        def run_autocast(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return run_autocast

    def __repr__(self):
        dtype = None if self.fast_dtype is None else self.fast_dtype.name
        return f"autocast(device_type={self.device!r}, dtype={dtype}, enabled={self._enabled})"


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on in this thread for ``device_type`` (any device type when None)."""
    if device_type is None:
        return any(_interp.enabled_dtype(d) is not None for d in device_mod.device_types())
    _check_device_type(device_type)
    return _interp.enabled_dtype(device_type) is not None


def get_autocast_dtype(device_type: str):
    """The dtype autocast uses for ``device_type`` in this thread (its default when autocast is off)."""
    _check_device_type(device_type)
    dtype = _interp.enabled_dtype(device_type)
    return _default_dtype(device_type) if dtype is None else dtype
