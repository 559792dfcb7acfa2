"""``flow.nn.graph``: OneFlow's module path of the graph classes (``from oneflow.nn.graph import GraphModule``)."""

from oneflow_lite.graph import Graph, GraphConfig, GraphModule, ModuleBlock

__all__ = ["Graph", "GraphConfig", "GraphModule", "ModuleBlock"]
