"""The Tensor: an eager tensor holds a device buffer (a NumPy array on cpu,
nothing on meta); every tensor carries its interned meta and its dispatch key set.

Operators and methods that run ops (``+``, ``relu()``, ``__getitem__``, ...) are
attached by ``oneflow_lite.functors.tensor_methods`` from the same functors as the
functional API.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.tensor_meta import Size, TensorMeta


class Tensor:
    """A multi-dimensional array with a dtype and a device."""

    __slots__ = ("_array", "_meta", "_key_set", "__weakref__")

    # Built by the interpreters through _make; flow.tensor(...) is the public constructor.
    def __init__(self, *args, **kwargs):
        raise TypeError("use flow.tensor(data, dtype=..., device=...) or a creation function "
                        "(flow.zeros, flow.ones, ...) to make a tensor")

    @staticmethod
    def _make(array, meta: TensorMeta) -> "Tensor":
        t = object.__new__(Tensor)
        t._array = array
        t._meta = meta
        t._key_set = meta.device.key_set
        return t

    # ---- metadata -----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return self._meta.shape

    def size(self, dim: int | None = None):
        """The shape, or the length of dimension ``dim``."""
        if dim is None:
            return self._meta.shape
        return self._meta.shape[_wrap_dim(dim, self._meta.ndim, "size")]

    @property
    def dtype(self) -> dtypes.dtype:
        return self._meta.dtype

    @property
    def device(self):
        return self._meta.device

    @property
    def ndim(self) -> int:
        return self._meta.ndim

    def dim(self) -> int:
        return self._meta.ndim

    def numel(self) -> int:
        return self._meta.numel

    nelement = numel

    def element_size(self) -> int:
        return self._meta.dtype.itemsize

    @property
    def is_meta(self) -> bool:
        return self._meta.device.type == "meta"

    def is_floating_point(self) -> bool:
        return self._meta.dtype.is_floating_point

    @property
    def key_set(self) -> int:
        """This tensor's dispatch key set (an int bitset; see Note [Dispatch keys are priorities])."""
        return self._key_set

    def __len__(self):
        if self._meta.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._meta.shape[0]

    # ---- values -------------------------------------------------------------------------------
    def _data(self, what: str) -> np.ndarray:
        if self._array is None:
            raise RuntimeError(f"Tensor.{what}(): a tensor on '{self._meta.device}' holds no data")
        return self._array

    def numpy(self) -> np.ndarray:
        """The values as a NumPy array, sharing memory with the tensor on cpu."""
        return self._data("numpy")

    def item(self):
        """The value of a one-element tensor as a Python number."""
        a = self._data("item")
        if a.size != 1:
            raise RuntimeError(f"Tensor.item(): a Tensor with {a.size} elements cannot be converted to Scalar")
        return a.reshape(()).item()

    def tolist(self):
        return self._data("tolist").tolist()

    def __bool__(self):
        a = self._data("__bool__")
        if a.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {a.size} elements is ambiguous")
        return bool(a.reshape(()))

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._meta.dtype.is_floating_point or self._meta.numel != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __array__(self, dtype=None, copy=None):
        a = self._data("__array__")
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return _format_tensor(self)

    def __iter__(self):
        if self._meta.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._meta.shape[0]))

    __hash__ = object.__hash__


def _wrap_dim(dim: int, ndim: int, op: str) -> int:
    """``dim`` made non-negative; an IndexError naming the op when out of range."""
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or not lo <= dim <= hi:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 else int(dim)


def _format_tensor(t: Tensor) -> str:
    meta = t._meta
    extras = []
    if meta.device.type != "cpu":
        extras.append(f"device='{meta.device}'")
    if t._array is None:
        body = "..."
        extras.append(f"size={tuple(meta.shape)}")
    else:
        a = t._array
        if a.size == 0:
            body = "[]"
            extras.append(f"size={tuple(meta.shape)}")
        else:
            body = np.array2string(a, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3,
                                   precision=4, floatmode="maxprec_equal" if meta.dtype.is_floating_point else "maxprec")
    extras.append(f"dtype={meta.dtype!r}")
    return f"tensor({body}, {', '.join(extras)})"
