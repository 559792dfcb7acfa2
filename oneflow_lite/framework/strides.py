"""Which shapes a strided NumPy array can be viewed as, without a copy (PyTorch's ``computeStride``).

Note [View never copies]
``view(input, shape)`` promises a tensor sharing the input's memory, so that writes through it reach the
input (PyTorch's contract). ``reshape`` may copy: NumPy copies when the strides cannot express the new
shape. ``view`` checks first, with PyTorch's rule: each run of dims that is contiguous in memory must be
split or merged on its own. It refuses with PyTorch's message pointing to ``reshape``; when the rule allows
a view, NumPy's reshape makes one too. Tensors without a NumPy buffer (meta, lazy) have no strides to
refuse.
"""

from __future__ import annotations

from math import prod

import numpy as np


def view_strides(shape, strides, new_shape) -> list | None:
    """The strides (in elements) of ``new_shape`` viewing the memory of ``shape`` / ``strides``, or None when
    no strides can."""
    if prod(shape) == 0:
        return list(strides) if tuple(shape) == tuple(new_shape) else [0] * len(new_shape)
    shape, strides = (tuple(shape), tuple(strides)) if shape else ((1,), (1,))
    new = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new[view_d] = view_numel * base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base = strides[d - 1]
                tensor_numel = view_numel = 1
    return new if view_d == -1 else None


def viewable(a: np.ndarray, shape) -> bool:
    """Whether ``a`` can be viewed as ``shape`` (one ``-1`` inferred); True as well for a shape that does not
    fit ``a``'s size, which ``reshape`` reports."""
    shape = tuple(shape)
    if shape.count(-1) == 1:
        rest = prod(s for s in shape if s != -1)
        shape = tuple(a.size // rest if s == -1 and rest else s for s in shape)
    if prod(shape) != a.size or min(shape, default=0) < 0 or not a.size:
        return True
    return view_strides(a.shape, [s // a.itemsize for s in a.strides], shape) is not None
