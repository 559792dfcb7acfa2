"""``flow.Size`` and interned tensor metas.

Note [Interned tensor metas]
A ``TensorMeta`` (shape, dtype, device) is interned: equal metas are the same
object, so they hash and compare by identity. The meta-inference cache of an op
expr is keyed by a tuple of input metas plus the call's attrs, which makes a
cache lookup a couple of identity-hash operations. Interning is weak: a meta no
tensor and no cache refers to is freed.
"""

from __future__ import annotations

import threading
import weakref
from math import prod


class Size(tuple):
    """A tensor shape: a tuple of ints, printed as ``oneflow_lite.Size([2, 3])``."""

    __slots__ = ()

    def numel(self) -> int:
        return prod(self)

    def __repr__(self):
        return f"oneflow_lite.Size({list(self)})"

    def __getitem__(self, item):
        result = tuple.__getitem__(self, item)
        return Size(result) if isinstance(item, slice) else result


class TensorMeta:
    """Shape, dtype and device of a tensor (interned; see Note [Interned tensor metas])."""

    __slots__ = ("shape", "dtype", "device", "np_dtype", "ndim", "numel", "key_set", "__weakref__")

    def __repr__(self):
        return f"TensorMeta(shape={tuple(self.shape)}, dtype={self.dtype}, device={self.device})"

    def __reduce__(self):
        return (make_meta, (tuple(self.shape), self.dtype, self.device))


_metas: "weakref.WeakValueDictionary[tuple, TensorMeta]" = weakref.WeakValueDictionary()
_lock = threading.Lock()


def make_meta(shape, dtype, device) -> TensorMeta:
    """The interned meta of (shape, dtype, device); ``shape`` is any sequence of ints."""
    key = (tuple(shape), dtype, device)
    meta = _metas.get(key)
    if meta is not None:
        return meta
    meta = TensorMeta()
    meta.shape = Size(key[0])
    meta.dtype = dtype
    meta.device = device
    meta.np_dtype = dtype.np_dtype
    meta.key_set = device.key_set  # a new tensor's dispatch key set (Tensor._make)
    meta.ndim = len(key[0])
    meta.numel = prod(key[0])
    with _lock:
        return _metas.setdefault(key, meta)
