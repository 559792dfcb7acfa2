"""``flow.utils``: data loading (``flow.utils.data``), activation checkpointing (``flow.utils.checkpoint``)."""

from oneflow_lite.utils import checkpoint, data  # noqa: F401
