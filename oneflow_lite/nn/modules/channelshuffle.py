"""``ChannelShuffle``: ``F.channel_shuffle`` as a layer (ShuffleNet)."""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.nn.module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Splits the channels of ``(N, C, *)`` into ``groups`` groups and interleaves them."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
