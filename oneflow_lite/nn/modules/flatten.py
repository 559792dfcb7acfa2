"""``Flatten`` and ``Unflatten``."""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.nn.module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dims ``start_dim`` .. ``end_dim`` into one (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return F.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (a tuple of ints; one may be -1)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError("invalid argument type for dim parameter")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for i, n in enumerate(unflattened_size):
            if not isinstance(n, int) or isinstance(n, bool):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(n).__name__} at pos {i}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return F.unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
