"""``flow.nn``: neural-network building blocks. For now its functional half."""

from oneflow_lite.graph import Graph  # noqa: F401  (flow.nn.Graph: static graphs, oneflow_lite/graph/)
from oneflow_lite.nn import functional  # noqa: F401
