"""Padding layers: ``ConstantPad``, ``ZeroPad``, ``ReflectionPad``, ``ReplicationPad`` and ``CircularPad`` in 1, 2
and 3 dims (``F.pad`` as a layer). ``padding`` is an int (every side) or PyTorch's tuple, last dim first:
``(left, right)``, ``(left, right, top, bottom)``, ``(left, right, top, bottom, front, back)``.

As PyTorch's ``pad``, the reflect, replicate and circular layers of n dims take inputs with n + 1 (unbatched) or
n + 2 dims; the constant layers take any input with at least n dims.
"""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.modules.utils import _ntuple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]


class _PadNd(Module):
    """A padding layer of ``nd`` spatial dims and ``F.pad`` ``mode``."""

    nd = 0
    mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(2 * self.nd, "_padding")(padding)

    def _check_input_dim(self, input):
        """PyTorch's dims for the non-constant modes (``pad``'s reflect / replicate / circular kernels)."""
        ndim = input.dim()
        if ndim not in (self.nd + 1, self.nd + 2):
            if self.mode == "circular":
                raise ValueError(f"expected {self.nd + 1}D or {self.nd + 2}D input (got {ndim}D input)")
            raise NotImplementedError(f"Padding size {2 * self.nd} is not supported for {ndim}D input tensor "
                                      f"({type(self).__name__} takes {self.nd + 1}D or {self.nd + 2}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``; negative padding crops."""

    nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``; negative padding crops."""

    nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``; negative padding crops."""

    nd = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Mirrors the last dim at its edges, without repeating the edge (padding < size)."""

    nd, mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Mirrors the last 2 dims at their edges, without repeating the edge (padding < size)."""

    nd, mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Mirrors the last 3 dims at their edges, without repeating the edge (padding < size)."""

    nd, mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeats the edge values of the last dim."""

    nd, mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Repeats the edge values of the last 2 dims."""

    nd, mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Repeats the edge values of the last 3 dims."""

    nd, mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Wraps the last dim around (padding <= size)."""

    nd, mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Wraps the last 2 dims around (padding <= size)."""

    nd, mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Wraps the last 3 dims around (padding <= size)."""

    nd, mode = 3, "circular"
