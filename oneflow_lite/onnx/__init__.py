"""``flow.onnx``: export a model, an ``nn.Graph`` or a function to ONNX (``import torch.onnx`` under
``flow.mock_torch`` is this module).

::

    flow.onnx.export(model, (x,), "model.onnx", input_names=["x"], output_names=["logits"],
                     dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    graph.export_onnx("graph.onnx")          # an nn.Graph, for its last call's input signature

It needs the ``onnx`` package (``pip install 'oneflow-lite[onnx]'`` also brings ``onnxruntime``). How the
captured job maps to ONNX: Note [ONNX export] and Note [Dynamic axes] in onnx/exporter.py; the op types with
a mapping: ``flow.onnx.supported_ops()``.
"""

from __future__ import annotations

from oneflow_lite.onnx import losses, spatial  # noqa: F401 (register the loss and spatial ops' mappings)
from oneflow_lite.onnx.api import export
from oneflow_lite.onnx.exporter import UnsupportedOperatorError
from oneflow_lite.onnx.ops import supported_ops

__all__ = ["UnsupportedOperatorError", "export", "supported_ops"]
