"""``Tensor.__getitem__`` with ints, slices (positive steps), ``None`` and ``Ellipsis``, built from ops.

Note [Basic indexing as ops]
An index becomes at most two ops: one ``slice`` (start / stop / step per dim;
an int ``i`` is the slice ``i:i+1``) and one ``reshape`` that drops the int-indexed
dims and inserts the ``None`` dims. Both return NumPy views on cpu, so the
result shares memory with the indexed tensor, as PyTorch's basic indexing does.
A plain ``x[...]`` or ``x[:]`` is still one ``slice`` op: a new tensor viewing ``x``.
Tensor, list, array and bool indices (advanced indexing) are not supported yet.
"""

from __future__ import annotations

import operator

import numpy as np

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.registry import get_functor

_INT = (int, np.integer)
_BOOL = (bool, np.bool_)


def _unsupported(item) -> Exception:
    if isinstance(item, (Tensor, list, np.ndarray)):
        return NotImplementedError(f"__getitem__: tensor indices (tensors, lists, NumPy arrays, bool masks) "
                                   f"are not supported yet; got {type(item).__name__}. Use ints, slices, "
                                   f"None and ... (Ellipsis)")
    if isinstance(item, _BOOL):
        return NotImplementedError("__getitem__: bool indices are not supported yet; use None to add a dim")
    return IndexError(f"only integers, slices (`:`), ellipsis (`...`) and None are valid indices "
                      f"(got {type(item).__name__})")


def getitem(self, index):
    """``x[index]`` for ints, slices with positive steps, None and Ellipsis (see Note [Basic indexing as ops])."""
    if type(index) is not tuple:
        index = (index,)
    shape = self._meta.shape
    ndim = len(shape)
    consumed = 0
    ellipsis_at = -1
    for i, item in enumerate(index):
        if item is None:
            continue
        if item is Ellipsis:
            if ellipsis_at >= 0:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis_at = i
        elif isinstance(item, slice) or (isinstance(item, _INT) and not isinstance(item, _BOOL)):
            consumed += 1
        else:
            raise _unsupported(item)
    if consumed > ndim:
        if ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python to convert a "
                             "0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if ellipsis_at >= 0:
        index = (*index[:ellipsis_at], *(slice(None),) * (ndim - consumed), *index[ellipsis_at + 1:])
    starts, stops, steps, out_shape = [], [], [], []
    identity = True
    dim = 0
    for item in index:
        if item is None:
            out_shape.append(1)
            continue
        size = shape[dim]
        if isinstance(item, slice):
            if item.step is not None and operator.index(item.step) <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = item.indices(size)
            out_shape.append(len(range(start, stop, step)))
            identity = identity and start == 0 and stop == size and step == 1
        else:
            i = operator.index(item)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            start = i + size if i < 0 else i
            stop, step = start + 1, 1
            identity = False
        starts.append(start)
        stops.append(stop)
        steps.append(step)
        dim += 1
    for size in shape[dim:]:
        starts.append(0)
        stops.append(size)
        steps.append(1)
        out_shape.append(size)
    out_shape = tuple(out_shape)
    result = self
    if not identity or out_shape == shape:
        result = get_functor("Slice")(self, starts, stops, steps)
    if result._meta.shape != out_shape:
        result = get_functor("Reshape")(result, out_shape)
    return result


Tensor.__getitem__ = getitem
