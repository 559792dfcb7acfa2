"""Job passes: common-subexpression elimination, constant folding, dead-code elimination.

Each takes a ``JobIR``, rewrites it in place and returns a one-line report of
what it changed. None of them changes what the graph computes; stateful ops
(Note [Stateful ops]) are never merged, folded or removed.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.graph.checkpointing import is_recomputed
from oneflow_lite.graph.ir import JobIR, is_stateful

_SHOWN = 8


def _names(nodes) -> str:
    names = [n if isinstance(n, str) else n.name for n in nodes]
    more = f", ... ({len(names) - _SHOWN} more)" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def dead_code_elimination(ir: JobIR) -> str:
    """Remove ops none of whose outputs reaches an output or an assign (inputs and stateful ops stay)."""
    needed = set()
    live = set()
    for n in reversed(ir.nodes):
        keep = (n.kind in ("input", "output", "assign") or (n.kind == "user" and is_stateful(n.op_type))
                or any(lbn in needed for lbn in n.outputs))
        if keep:
            live.add(n.name)
            needed.update(n.inputs)
    dead = [n for n in ir.nodes if n.name not in live]
    if not dead:
        return "dead-code elimination: nothing removed"
    ir.remove({n.name for n in dead})
    return f"dead-code elimination: removed {len(dead)} op(s): {_names(dead)}"


def _cse_key(n):
    uc = n.conf.user_conf
    attrs = tuple(sorted((k, v.SerializeToString(deterministic=True)) for k, v in uc.attr.items()))
    args = tuple((arg, len(uc.input[arg].s)) for arg in uc.input_order)
    return (n.op_type, n.conf.device_tag, args, tuple(n.inputs), attrs)


def common_subexpression_elimination(ir: JobIR) -> str:
    """Merge each op into an earlier op of the same type, attrs and inputs."""
    seen = {}
    merged = []
    for n in list(ir.nodes):
        if n.kind != "user" or is_stateful(n.op_type):
            continue
        key = _cse_key(n)
        first = seen.get(key)
        if first is None:
            seen[key] = n
            continue
        for old, new in zip(n.outputs, first.outputs):
            ir.replace_uses(old, new)
        merged.append((n, first))
    if not merged:
        return "common-subexpression elimination: nothing merged"
    ir.remove({n.name for n, _ in merged})
    pairs = _names([f"{n.name} into {first.name}" for n, first in merged])
    return f"common-subexpression elimination: merged {len(merged)} op(s): {pairs}"


def run_kernel(n, in_metas, arrays):
    """The outputs of op node ``n`` on ``arrays`` (its kernel, as eager execution runs it), checked
    against the inferred metas."""
    res = n.res
    kernel = DISPATCHER.select_kernel(n.expr, DISPATCHER.entry(n.op_type), res.device,
                                      tuple([m.dtype for m in in_metas]), tuple([m.dtype for m in res.out_metas]))
    result = kernel(res, *arrays)
    results = (result,) if len(res.out_metas) == 1 else tuple(result)
    out = []
    for r, m in zip(results, res.out_metas):
        r = np.asarray(r)
        if r.base is not None:  # a view, maybe of a bound tensor: a constant must not change with it
            r = r.copy()
        if r.dtype != m.np_dtype or r.shape != m.shape:
            raise RuntimeError(f"{n.op_type}: kernel result does not match the inferred meta")
        out.append(r)
    return out


def constant_folding(ir: JobIR, values: dict) -> str:
    """Compute at compile time the ops whose inputs are all constants (free eager tensors that are not
    parameters, do not require grad and are never written by the graph, results of such ops, and
    source ops such as ``constant``), replacing each result that a remaining op reads with a constant
    variable. The free eager tensors read are listed in ``ir.fold_sources``: the plan checks their
    versions at every run and is recompiled when one was written in place since (Note [Plans]).

    ``values``: variable op name -> the eager tensor bound to it.
    """
    const_vars = ir.constant_variables()
    const = {}
    for n in ir.nodes:
        if n.kind == "variable" and n.name in const_vars:
            a = ir.folded.get(n.name)
            const[n.outputs[0]] = a if a is not None else values[n.name]._array
    folded = []
    for n in ir.nodes:
        if n.kind != "user" or not n.device.device_type.has_storage or is_stateful(n.op_type):
            continue
        if all(lbn in const for lbn in n.inputs):
            try:
                outs = run_kernel(n, [ir.metas[lbn] for lbn in n.inputs], [const[lbn] for lbn in n.inputs])
            except Exception:  # noqa: BLE001, S112 - an op that fails now fails at run time, as in eager execution
                continue
            for lbn, a in zip(n.outputs, outs):
                const[lbn] = a
            folded.append(n)
    if not folded:
        return "constant folding: nothing to fold"
    folded_names = {n.name for n in folded}
    readers = ir.consumers()
    ir.fold_sources = {n.name for n in ir.nodes if n.kind == "variable" and n.name in const_vars
                       and n.name not in ir.folded and any(c.name in folded_names for c in readers.get(n.outputs[0], ()))}
    uses = ir.consumers()
    made = []
    new_nodes = []
    for n in ir.nodes:
        if n.name not in folded_names:
            new_nodes.append(n)
            continue
        for lbn, obn in zip(n.outputs, n.expr.indexed_obns):
            if any(c.name not in folded_names for c in uses.get(lbn, ())):
                var = ir.variable_node(f"{n.name}.{obn}", ir.metas[lbn])
                ir.folded[var.name] = const[lbn]
                new_nodes.append(var)
                made.append((lbn, var))
    ir.nodes = new_nodes
    for lbn, var in made:
        ir.replace_uses(lbn, var.outputs[0])
    return (f"constant folding: folded {len(folded)} op(s) into {len(made)} constant(s): "
            f"{_names(folded)}")


# Note [Derivatives in the forward]
# The backward of GELU recomputes from x what its forward computed already (the normal cdf: most of the
# cost of both kernels). A graph knows both ops at compile time, so this pass makes each ``gelu`` whose
# input some ``gelu_grad(dy, x)`` of the same attrs reads a ``gelu_with_derivative`` (y and gelu'(x),
# computed by the very operations of the gelu and gelu_grad kernels) and each such ``gelu_grad`` a
# ``broadcast_mul(dy, gelu'(x))``: gelu_grad's result bit for bit, one multiply instead of ~30 passes. The
# derivative lives from forward to backward, where x did (x often has no other reader then). float32 and
# float64 only: the float16 kernels round once at the end, a stored float16 derivative would round twice.
# Not for the copies activation checkpointing recomputes in the backward pass (graph/checkpointing.py): a
# second output would keep more memory alive there, against the point of checkpointing. Runs with the
# compiler's elementwise fusion (``graph.config.enable_fusion``), after checkpointing.
_DERIVATIVE_DTYPES = ("float32", "float64")


def _rebuilt(ir: JobIR, template, op_type: str, inputs: dict, outputs: dict, attrs: dict):
    """A user node named as ``template`` computing ``op_type`` (``inputs`` / ``outputs``: arg -> blob), inferred now;
    new output blobs get their inferred metas."""
    from oneflow_lite.framework.op_builder import OpBuilder
    from oneflow_lite.graph.ir import Node, expr_from_conf

    b = OpBuilder(op_type, template.name)
    for arg in inputs:
        b.input(arg)
    for arg in outputs:
        b.output(arg)
    for k, v in attrs.items():
        b.attr(k, v)
    conf = b.build().build_op_conf(None, device_tag=template.conf.device_tag)
    uc = conf.user_conf
    for arg, lbn in {**inputs}.items():
        uc.input[arg].s[0] = lbn
    for arg, lbn in outputs.items():
        uc.output[arg].s[0] = lbn
    node = Node(template.name, "user", conf, op_type, list(inputs.values()), list(outputs.values()), template.device)
    node.expr = expr_from_conf(conf)
    node.res = node.expr.infer(tuple([ir.metas[lbn] for lbn in node.inputs]), None)
    for lbn, m in zip(node.outputs, node.res.out_metas):
        ir.metas.setdefault(lbn, m)
    return node


def save_gelu_derivatives(ir: JobIR) -> str:
    """Note [Derivatives in the forward]."""
    uses = ir.consumers()
    index = {n.name: i for i, n in enumerate(ir.nodes)}
    fused = 0
    for n in list(ir.nodes):
        if (n.kind != "user" or n.op_type != "gelu" or ir.metas[n.inputs[0]].dtype.name not in _DERIVATIVE_DTYPES
                or is_recomputed(n.name)):
            continue
        x, approximate = n.inputs[0], n.res.attrs["approximate"]
        grads = [u for u in uses.get(x, ()) if u.op_type == "gelu_grad" and u.inputs[1] == x
                 and u.res.attrs["approximate"] == approximate and index[u.name] > index[n.name]]
        if not grads:
            continue
        derivative = f"{n.name}/derivative_0"
        ir.nodes[index[n.name]] = _rebuilt(ir, n, "gelu_with_derivative", {"x": x},
                                           {"y": n.outputs[0], "derivative": derivative}, {"approximate": approximate})
        for g in grads:
            ir.nodes[index[g.name]] = _rebuilt(ir, g, "broadcast_mul", {"x": g.inputs[0], "y": derivative},
                                               {"z": g.outputs[0]}, {})
        fused += 1
    if not fused:
        return "gelu derivatives: nothing fused"
    return f"gelu derivatives: {fused} gelu(s) give their derivative to their gelu_grad(s)"
