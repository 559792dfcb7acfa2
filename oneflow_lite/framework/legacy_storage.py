"""PyTorch's legacy typed storage classes: ``flow.FloatStorage``, ``LongStorage``, ... (one per dtype), on top of
``TypedStorage`` (framework/storage.py).

``FloatStorage()`` is empty, ``FloatStorage(n)`` holds ``n`` zeros, ``FloatStorage([1, 2])`` the values given;
``isinstance(t.storage(), flow.FloatStorage)`` holds for the storage of a float32 tensor, as in PyTorch, and
``Tensor.storage_type()`` is the class of the tensor's dtype.
"""

from __future__ import annotations

import numbers

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.storage import TypedStorage

__all__ = ["BFloat16Storage", "BoolStorage", "ByteStorage", "CharStorage", "DoubleStorage", "FloatStorage",
           "HalfStorage", "IntStorage", "LongStorage", "ShortStorage", "storage_type_of"]


class _LegacyStorageMeta(type):
    """``isinstance(storage, FloatStorage)``: a ``TypedStorage`` of the class's dtype is one."""

    def __instancecheck__(cls, instance) -> bool:
        legacy_dtype = cls.__dict__.get("_legacy_dtype")
        if legacy_dtype is not None and isinstance(instance, TypedStorage):
            return instance.dtype is legacy_dtype
        return type.__instancecheck__(cls, instance)


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    """A typed storage of the class's dtype: ``()`` empty, ``(n)`` n zeros, ``(sequence)`` those values."""

    __slots__ = ()
    _legacy_dtype: dt.dtype

    def __init__(self, *args, device=None):
        d = type(self)._legacy_dtype
        name = type(self).__name__
        if device is not None and Device(device).type != "cpu":
            raise RuntimeError(f"{name}(): legacy storages are on cpu, got device '{device}'")
        if not args:
            flat = np.empty(0, d.np_dtype)
        elif len(args) == 1 and isinstance(args[0], numbers.Integral) and not isinstance(args[0], bool):
            if args[0] < 0:
                raise RuntimeError(f"{name}(): size must be non-negative, got {args[0]}")
            flat = np.zeros(int(args[0]), d.np_dtype)
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            flat = np.asarray(args[0], dtype=d.np_dtype).reshape(-1)
        else:
            got = ", ".join(type(a).__name__ for a in args)
            raise TypeError(f"{name}(): expected no argument, a size (int) or a sequence of numbers, got ({got})")
        super().__init__(flat, Device("cpu"), d)


class BoolStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.bool_


class ByteStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.uint8


class CharStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.int8


class ShortStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.int16


class IntStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.int32


class LongStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.int64


class HalfStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.float16


class BFloat16Storage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.bfloat16


class FloatStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.float32


class DoubleStorage(_LegacyStorage):
    __slots__ = ()
    _legacy_dtype = dt.float64


_BY_DTYPE = {cls._legacy_dtype: cls for cls in (BoolStorage, ByteStorage, CharStorage, ShortStorage, IntStorage,
                                                 LongStorage, HalfStorage, BFloat16Storage, FloatStorage,
                                                 DoubleStorage)}


def storage_type_of(dtype: dt.dtype) -> type:
    """The legacy storage class of ``dtype`` (``Tensor.storage_type()``)."""
    cls = _BY_DTYPE.get(dtype)
    if cls is None:
        raise RuntimeError(f"storage_type(): no legacy storage class for dtype {dtype!r}")
    return cls
