"""``flow.onnx.export``: what to capture (a module, an ``nn.Graph``, a function), its dynamic axes, and the ONNX
model's inputs, initializers and outputs around the converted ops (Note [ONNX export] in onnx/exporter.py)."""

from __future__ import annotations

import numpy as np

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.graph import io
from oneflow_lite.graph.graph import EXPORTERS, FunctionGraph, Graph
from oneflow_lite.onnx.exporter import (
    Captures,
    ExportContext,
    UnsupportedOperatorError,
    output_ir,
    require_onnx,
    vary_inputs,
)
from oneflow_lite.onnx.ops import CONVERTERS

MIN_OPSET, MAX_OPSET = 13, 21


class _ModuleGraph(Graph):
    """The graph of a module being exported: ``build`` calls it (its ops named by module path ``model.*``)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, *args, **kwargs):
        return self.model(*args, **kwargs)


def _as_graph(model):
    if isinstance(model, Graph):
        return model
    if callable(getattr(model, "named_parameters", None)) and callable(getattr(model, "named_children", None)):
        return _ModuleGraph(model)
    if callable(model):
        return FunctionGraph(model)
    raise TypeError(f"flow.onnx.export(): expected an nn.Module, an nn.Graph or a function, got {type(model).__name__}")


def export(model, args, f=None, *, kwargs=None, input_names=None, output_names=None, opset_version: int = 17,
           dynamic_axes=None, export_params: bool = True, verbose: bool = False, training=None,
           do_constant_folding: bool = True, **unused):
    """Export ``model`` (an ``nn.Module``, run in eval mode as ``torch.onnx.export`` does; an ``nn.Graph``; or a
    function of tensors) called on ``args`` (a tensor or a tuple) to ONNX, written to ``f`` (a path or a binary
    file) when given; returns the ``onnx.ModelProto``.

    ``input_names`` / ``output_names`` name the graph's tensor inputs and outputs in order (default
    ``input_<i>`` / ``output_<i>``); ``dynamic_axes`` maps a name to ``{axis: "symbol"}`` (or a list of axes) for
    dimensions that vary at run time, such as the batch (Note [Dynamic axes] in onnx/exporter.py). Every
    variable is an initializer with its current value (``export_params`` must stay True)."""
    onnx = require_onnx()
    if not MIN_OPSET <= opset_version <= MAX_OPSET:
        raise ValueError(f"flow.onnx.export(): opset_version {opset_version} is not supported; choose one from "
                         f"{MIN_OPSET} to {MAX_OPSET}")
    if not export_params:
        raise ValueError("flow.onnx.export(): export_params=False is not supported; initializers hold the weights")
    args = (args,) if isinstance(args, Tensor) else tuple(args)
    kwargs = dict(kwargs or {})
    graph = _as_graph(model)
    modules = [b._origin for b in graph._blocks.values()] if isinstance(graph, _ModuleGraph) else []
    flags = [(m, m.training) for root in modules for m in _all_modules(root)]
    try:
        for m, _ in flags:
            m.training = False
        model_proto = _export_graph(onnx, graph, args, kwargs, opset_version, input_names, output_names,
                                    dynamic_axes or {})
    finally:
        for m, mode in flags:
            m.training = mode
    if verbose:
        print(onnx.helper.printable_graph(model_proto.graph))
    if f is not None:
        onnx.save(model_proto, f)
    return model_proto


def _all_modules(root):
    modules = getattr(root, "modules", None)
    return list(modules()) if callable(modules) else [root]


def _names(given, n, prefix, what):
    names = list(given or [])
    if len(names) > n:
        raise ValueError(f"flow.onnx.export(): {len(names)} {what} names given for {n} {what}s")
    return names + [f"{prefix}_{i}" for i in range(len(names), n)]


def _axes_of(dynamic_axes, name):
    axes = dynamic_axes.get(name, {})
    if isinstance(axes, (list, tuple)):
        return {int(a): f"{name}_dim{a}" for a in axes}
    return {int(a): str(s) for a, s in axes.items()}


def _export_graph(onnx, graph, args, kwargs, opset, input_names, output_names, dynamic_axes):
    _, leaves = io.flatten(args, "input", graph.name)
    _, leaves = io.flatten(kwargs, "input", graph.name, leaves)
    tensors = [t for _, t in leaves]
    entry = graph._entry_for(args, kwargs)
    n_out = sum(1 for op in entry.job.net.op if op.HasField("output_conf"))
    in_names = _names(input_names, len(tensors), "input", "input")
    out_names = _names(output_names, n_out, "output", "output")
    unknown = set(dynamic_axes) - set(in_names) - set(out_names)
    if unknown:
        raise ValueError(f"flow.onnx.export(): dynamic_axes names {sorted(unknown)}, which are neither inputs "
                         f"{in_names} nor outputs {out_names}")
    in_axes = [_axes_of(dynamic_axes, n) for n in in_names]
    symbols, bases = _symbols(tensors, in_axes, in_names)
    entries = [entry]
    if symbols:
        steps = [{s: 1} for s in symbols] + [dict.fromkeys(symbols, 2)]
        for step in steps:
            varied = io.unflatten(io.flatten(args, "input", graph.name)[0], vary_inputs(tensors, in_axes, symbols, step))
            entries.append(graph._entry_for(varied, kwargs, store=False))
    captures = Captures([output_ir(e.job) for e in entries], bases, graph.name)
    ctx = ExportContext(onnx, captures, opset, graph.name)
    ctx.used = {lbn for n in captures.primary.nodes for lbn in n.inputs}
    inputs = _inputs(ctx, in_names, in_axes, symbols)
    _variables(ctx, entry)
    _ops(ctx)
    outputs = _outputs(ctx, out_names, [_axes_of(dynamic_axes, n) for n in out_names])
    h = onnx.helper
    g = h.make_graph(ctx.nodes, graph.name, inputs, outputs, ctx.initializers)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="oneflow_lite")
    model.ir_version = 8 if opset <= 17 else (9 if opset <= 20 else 10)
    onnx.checker.check_model(model)
    return model


def _symbols(tensors, in_axes, in_names):
    """The dynamic axes' symbols in order of appearance and their sizes in the example inputs."""
    symbols, bases = [], []
    for t, axes, name in zip(tensors, in_axes, in_names):
        for axis, sym in axes.items():
            if not -t.ndim <= axis < t.ndim:
                raise ValueError(f"flow.onnx.export(): dynamic axis {axis} of input '{name}', which has shape "
                                 f"{list(t.shape)}")
            size = t.shape[axis]
            if sym in symbols:
                if bases[symbols.index(sym)] != size:
                    raise ValueError(f"flow.onnx.export(): dynamic axis '{sym}' has sizes {bases[symbols.index(sym)]} "
                                     f"and {size} in the example inputs")
                continue
            symbols.append(sym)
            bases.append(size)
    return symbols, bases


def _inputs(ctx, in_names, in_axes, symbols):
    h = ctx.helper
    nodes = [n for n in ctx.ir.nodes if n.kind == "input"]
    infos = []
    for node, name, axes in zip(nodes, in_names, in_axes):
        lbn = node.outputs[0]
        meta = ctx.meta(lbn)
        ctx.names[lbn] = name
        dims = list(meta.shape)
        for axis, sym in axes.items():
            dims[axis % meta.ndim] = sym
            ctx.symbol_sources.setdefault(symbols.index(sym), (name, axis % meta.ndim))
        infos.append(h.make_tensor_value_info(name, ctx.onnx_dtype(meta.dtype), dims))
    return infos


def _variables(ctx, entry):
    for node in ctx.ir.nodes:
        if node.kind != "variable":
            continue
        lbn = node.outputs[0]
        if not all(f.static for f in ctx.captures.dims(lbn)):
            raise UnsupportedOperatorError(f"flow.onnx.export: the captured tensor '{node.name}' of nn.Graph "
                                           f"'{ctx.graph_name}' changes shape with a dynamic axis; make it inside "
                                           f"build() from the inputs' shapes")
        ctx.names[lbn] = node.name
        ctx.add_initializer(node.name, np.asarray(entry.variables[node.name]._array))


def _ops(ctx):
    for node in ctx.ir.nodes:
        if node.kind != "user":
            continue
        convert = CONVERTERS.get(node.op_type)
        if convert is None:
            raise UnsupportedOperatorError(
                f"flow.onnx.export: op '{node.name}' of type '{node.op_type}' in nn.Graph '{ctx.graph_name}' has no "
                f"ONNX mapping (flow.onnx.supported_ops() lists the op types that have one)")
        try:
            convert(ctx, node, [ctx.value(lbn) for lbn in node.inputs])
            ctx.captures.check_constant_attrs(node)
        except UnsupportedOperatorError:
            raise
        except Exception as e:
            e.add_note(f"(while exporting op '{node.name}' ({node.op_type}) of nn.Graph '{ctx.graph_name}' to ONNX)")
            raise


def _outputs(ctx, out_names, out_axes):
    h = ctx.helper
    infos = []
    for node, name, axes in zip([n for n in ctx.ir.nodes if n.kind == "output"], out_names, out_axes):
        src = node.inputs[0]
        meta = ctx.meta(src)
        ctx.make("Identity", [ctx.value(src)], [name])
        dims = [f.const if f.static else axes.get(i, f"{name}_dim{i}")
                for i, f in enumerate(ctx.captures.dims(src))]
        infos.append(h.make_tensor_value_info(name, ctx.onnx_dtype(meta.dtype), dims))
    return infos


EXPORTERS["onnx"] = export  # Graph.export_onnx
