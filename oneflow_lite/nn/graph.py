"""``flow.nn.graph``: OneFlow's module path of the graph classes (``from oneflow.nn.graph import GraphModule``)."""

from oneflow_lite.graph import Graph, GraphConfig, GraphModule, ModuleBlock  # noqa: F401

__all__ = ["Graph", "GraphConfig", "GraphModule", "ModuleBlock"]
