"""Static graphs: ``flow.nn.Graph`` capture (interpreters/lazy.py), the Job -> plan compiler with its
passes, the executor, and save / load."""

from oneflow_lite.graph.compiler import register_out_variant  # noqa: F401
from oneflow_lite.graph.config import GraphConfig  # noqa: F401
from oneflow_lite.graph.graph import FunctionGraph, Graph  # noqa: F401
from oneflow_lite.graph.ir import mark_stateful  # noqa: F401
from oneflow_lite.graph.proxy import GraphModule, ModuleBlock  # noqa: F401
