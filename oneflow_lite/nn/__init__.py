"""``flow.nn``: neural-network building blocks: ``Module`` and ``Parameter``, the layers and losses
(``nn/modules/``), containers, ``init``, ``utils`` (gradient clipping), ``functional`` and ``Graph``."""

from oneflow_lite.graph import Graph  # noqa: F401  (flow.nn.Graph: static graphs, oneflow_lite/graph/)
from oneflow_lite.nn import functional, graph, init, parallel, utils  # noqa: F401
from oneflow_lite.nn.module import (  # noqa: F401
    Module, register_module_forward_hook, register_module_forward_pre_hook,
)
from oneflow_lite.nn.modules import *
from oneflow_lite.nn.parameter import Parameter  # noqa: F401
from oneflow_lite.nn.parallel import DataParallel  # noqa: F401,E402  (torch.nn.DataParallel)
