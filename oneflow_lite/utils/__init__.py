"""``flow.utils``: data loading (``flow.utils.data``)."""

from oneflow_lite.utils import data  # noqa: F401
