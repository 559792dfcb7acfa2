"""``Dropout``."""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.nn.module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """In training mode, zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``;
    the identity in evaluation mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
