"""Interned metas of global tensors: the logical shape and dtype, the placement and the nd-SBP.

A global tensor is a ``Tensor`` whose ``_meta`` is a :class:`GlobalTensorMeta` and whose ``_array`` is this
rank's piece (None on a rank outside the placement). Its ``shape`` is the logical shape; ``local`` is the
(interned, ordinary) meta of this rank's piece and ``logical`` the ordinary meta of the logical shape, which
the op's own infer functions see (the global interpreter infers output metas on logical metas). Its key set
adds the Global key to its device's (Note [Dispatch key order]).
"""

from __future__ import annotations

import threading
import weakref
from math import prod

from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.framework import sbp as sbp_mod
from oneflow_lite.framework.tensor_meta import Size, TensorMeta, make_meta
from oneflow_lite.framework.world import world

GLOBAL_KEY_SET = 1 << DispatchKey.Global


class GlobalTensorMeta(TensorMeta):
    """A global tensor's meta (interned like every meta: Note [Interned tensor metas])."""

    __slots__ = ("coord", "local", "logical", "nd_sbp", "placement")

    def __repr__(self):
        return (f"GlobalTensorMeta(shape={tuple(self.shape)}, dtype={self.dtype}, placement={self.placement}, "
                f"sbp={sbp_mod.format_nd_sbp(self.nd_sbp)})")

    def __reduce__(self):
        return (make_global_meta, (tuple(self.shape), self.dtype, self.placement, self.nd_sbp))

    @property
    def sbp(self) -> tuple:
        return self.nd_sbp


_metas: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_lock = threading.Lock()


def make_global_meta(shape, dtype, placement, nd_sbp: tuple) -> GlobalTensorMeta:
    """The interned global meta; ``nd_sbp`` has one SBP per placement dimension."""
    key = (tuple(shape), dtype, placement, nd_sbp)
    meta = _metas.get(key)
    if meta is not None:
        return meta
    shape = key[0]
    sbp_mod.check_nd_sbp(shape, nd_sbp, "global tensor")
    meta = GlobalTensorMeta()
    device = placement.device
    meta.shape = Size(shape)
    meta.dtype = dtype
    meta.device = device
    meta.np_dtype = dtype.np_dtype
    meta.key_set = device.key_set | GLOBAL_KEY_SET
    meta.ndim = len(shape)
    meta.numel = prod(shape)
    meta.placement = placement
    meta.nd_sbp = nd_sbp
    meta.logical = make_meta(shape, dtype, device)
    coord = meta.coord = placement.coord(world().rank)
    meta.local = None if coord is None else make_meta(
        sbp_mod.local_shape(shape, nd_sbp, placement.hierarchy, coord), dtype, device)
    with _lock:
        return _metas.setdefault(key, meta)


def is_global_meta(meta) -> bool:
    return bool(meta.key_set & GLOBAL_KEY_SET)
