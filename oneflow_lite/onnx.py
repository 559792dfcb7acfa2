"""``flow.onnx``: ONNX export. ``import torch.onnx`` works; exporting is not implemented yet and says so."""

from __future__ import annotations

__all__ = ["export"]


def export(model, args, f=None, *rest, **kwargs):
    """Not implemented yet: raises NotImplementedError (capture the model with ``flow.nn.Graph`` and save it with
    ``Graph.save`` to keep a runnable graph)."""
    raise NotImplementedError("flow.onnx.export: exporting to ONNX is not implemented yet in oneflow_lite; save a "
                              "captured nn.Graph with Graph.save(path) instead")
