"""``flow.nn``: neural-network building blocks. For now its functional half."""

from oneflow_lite.nn import functional  # noqa: F401
