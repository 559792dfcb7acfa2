"""Strides, storage offsets and storage objects of tensors.

Note [Storage of a tensor]
A cpu tensor's buffer is a NumPy array, and a view's array is a NumPy view of another's (Note [Version
counters and views] in framework/tensor.py). The *storage* of a tensor is the C-contiguous array at the root
of its array's ``base`` chain (NumPy points a view at the array owning the memory), seen as a flat array of
the tensor's dtype. ``stride()`` and ``storage_offset()`` are the array's strides and the position of its
first element in that storage, counted in elements as PyTorch counts them; ``as_strided`` views, ``resize_``
and ``untyped_storage()`` work on that flat array. Views made here are built with ``np.ndarray(buffer=...)``,
whose ``base`` is the storage, so they keep the chain (NumPy's ``as_strided`` and ``sliding_window_view``
hide it behind a helper object). A tensor whose root is not C-contiguous (NumPy memory made by other means)
is its own storage when its array is C-contiguous, and has none otherwise. A tensor without a buffer (meta,
lazy, batched) has the contiguous strides of its shape and offset 0.
"""

from __future__ import annotations

import numpy as np


def contiguous_strides(shape) -> tuple:
    """The strides (in elements) of a C-contiguous tensor of ``shape``."""
    strides = []
    step = 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def storage_array(a: np.ndarray) -> np.ndarray | None:
    """The flat storage of ``a`` as an array of ``a``'s dtype (Note [Storage of a tensor]); None without one."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.c_contiguous:
        root = a
        if not a.flags.c_contiguous:
            return None
    if root.dtype == a.dtype:
        return root.reshape(-1)
    if root.nbytes % a.itemsize:
        return None
    return root.reshape(-1).view(np.uint8).view(a.dtype)


def array_geometry(a: np.ndarray) -> tuple:
    """``(strides, offset)`` of the array ``a`` in its storage, in elements."""
    itemsize = a.itemsize
    strides = tuple(s // itemsize for s in a.strides)
    flat = storage_array(a)
    if flat is None or not a.size:
        return strides, 0
    return strides, (a.__array_interface__["data"][0] - flat.__array_interface__["data"][0]) // itemsize


def tensor_geometry(t) -> tuple:
    """``(strides, storage_offset)`` of the tensor ``t`` (contiguous and 0 for one without a NumPy buffer)."""
    a = t._array
    if type(a) is not np.ndarray:
        return contiguous_strides(t._meta.shape), 0
    return array_geometry(a)


def required_size(shape, strides, offset) -> int:
    """How many storage elements a view of ``shape`` / ``strides`` from ``offset`` needs (0 when it is empty)."""
    if any(s == 0 for s in shape):
        return 0
    return offset + 1 + sum((s - 1) * st for s, st in zip(shape, strides))


def strided_view(flat: np.ndarray, shape, strides, offset) -> np.ndarray:
    """The view of the flat storage ``flat`` with ``shape`` / ``strides`` (elements) from ``offset``; its
    ``base`` chain leads to ``flat``'s root. The caller checks the bounds (``required_size``)."""
    itemsize = flat.itemsize
    if not required_size(shape, strides, offset):
        offset = 0
    return np.ndarray(tuple(shape), flat.dtype, buffer=flat, offset=offset * itemsize,
                      strides=tuple(s * itemsize for s in strides))


def storage_index(shape, strides, offset) -> np.ndarray:
    """The storage position of every element of a view (an int64 array of ``shape``)."""
    index = np.full(tuple(shape), offset, np.int64)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        step = np.arange(size, dtype=np.int64) * stride
        index += step.reshape((size,) + (1,) * (len(shape) - d - 1))
    return index


# ---- storage objects ---------------------------------------------------------------------------------------
def _tensor_storage(t, what: str) -> np.ndarray:
    a = t._data(what)
    flat = storage_array(a)
    if flat is None:
        raise RuntimeError(f"Tensor.{what}(): the tensor's NumPy buffer is not laid out in one contiguous "
                           f"storage (it was made by NumPy over foreign memory); clone() it first")
    return flat


class _Storage:
    """What both storage kinds share: a flat NumPy array and the device it is on."""

    __slots__ = ("_flat", "device")

    def __init__(self, flat: np.ndarray, device):
        self._flat = flat
        self.device = device

    def data_ptr(self) -> int:
        return self._flat.__array_interface__["data"][0]

    def nbytes(self) -> int:
        return self._flat.nbytes

    def __len__(self) -> int:
        return self.size()

    def tolist(self) -> list:
        return self._flat.tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, index):
        return self._flat[index].tolist()

    def __setitem__(self, index, value):
        if not self._flat.flags.writeable:
            raise RuntimeError("storage: the storage is read-only")
        self._flat[index] = value

    def is_shared(self) -> bool:
        return False

    def share_memory_(self):
        return self

    def cpu(self):
        return self

    @property
    def is_cuda(self) -> bool:
        return False


class UntypedStorage(_Storage):
    """The bytes of a tensor's storage (``Tensor.untyped_storage()``): ``nbytes()`` / ``size()`` bytes at
    ``data_ptr()``, shared with the tensor (see Note [Storage of a tensor])."""

    __slots__ = ()

    def __init__(self, flat: np.ndarray, device):
        super().__init__(flat.view(np.uint8), device)

    def size(self) -> int:
        return self._flat.size

    def element_size(self) -> int:
        return 1

    def untyped(self):
        return self

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self._flat.tolist())
        return f"{body}\n[oneflow_lite.storage.UntypedStorage(device={self.device}) of size {self.size()}]"


class TypedStorage(_Storage):
    """A tensor's storage as elements of its dtype (``Tensor.storage()``, deprecated in PyTorch in favour of
    ``untyped_storage()``)."""

    __slots__ = ("dtype",)

    def __init__(self, flat: np.ndarray, device, dtype):
        super().__init__(flat, device)
        self.dtype = dtype

    def size(self) -> int:
        return self._flat.size

    def element_size(self) -> int:
        return self._flat.itemsize

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._flat, self.device)

    def _untyped_storage(self) -> UntypedStorage:
        return self.untyped()

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self._flat.tolist())
        return (f"{body}\n[oneflow_lite.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size "
                f"{self.size()}]")


def untyped_storage(t) -> UntypedStorage:
    """``Tensor.untyped_storage()``: the bytes of the tensor's storage, shared with it."""
    return UntypedStorage(_tensor_storage(t, "untyped_storage"), t._meta.device)


def typed_storage(t) -> TypedStorage:
    """``Tensor.storage()``: the tensor's storage as elements of its dtype, shared with it."""
    return TypedStorage(_tensor_storage(t, "storage"), t._meta.device, t._meta.dtype)
