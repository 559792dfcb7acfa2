"""Dropout layers: ``Dropout``, channel-wise ``Dropout1d`` / ``2d`` / ``3d``, ``AlphaDropout`` and
``FeatureAlphaDropout`` (identities in evaluation mode)."""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.nn.module import Module

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """The common arguments of the dropout layers: drop probability ``p`` and ``inplace``."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """In training mode, zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``;
    the identity in evaluation mode."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability ``p`` (training mode)."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs with probability ``p`` (training mode)."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability ``p`` (training mode)."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the inputs' mean and variance (for selu networks), in training mode."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels, in training mode."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)
