"""OneFlow's fusion passes, switched by ``graph.config.allow_fuse_*`` (graph/config.py), and the two
graph-internal ops they make.

Each pass rewrites a ``JobIR`` in place and returns a one-line report; none changes a result (the tests
compare every switch on and off bit for bit). ``fused_add_to_output`` is made only by these passes, after
capture: a saved or exported job never holds it. ``fused_cast_scale`` is also captured by a graph with a grad
scaler (its loss scaling and gradient unscaling, Note [Graph AMP] in graph/amp.py).
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework import attr as attr_mod
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.graph.ir import JobIR, Node, expr_from_conf


# ---- the graph-internal ops -----------------------------------------------------------------------
def _same_meta_shape(ctx):
    x, addend = ctx.input_metas
    if x.shape != addend.shape or x.dtype is not addend.dtype:
        raise ctx.error(f"addend has shape {list(addend.shape)} and dtype {addend.dtype.name}, but x has shape "
                        f"{list(x.shape)} and dtype {x.dtype.name}")
    return x.shape


register_user_op("fused_add_to_output", inputs=["x", "addend"], outputs=["y"], no_grad=True,
                 infer_shape=_same_meta_shape, infer_dtype=lambda ctx: ctx.dtype("x"))


def _add_to_output_cpu(ctx, x, addend):
    """``x + addend`` written into ``x`` (a producer's dead result, graph-internal: Note [Add to output]) when
    ``x`` owns writeable memory."""
    if isinstance(x, np.ndarray) and x.base is None and x.flags.writeable and x.flags.owndata:
        return np.add(x, addend, out=x)
    return np.add(x, addend)


def _cast_scale_shape(ctx):
    if ctx.has_input("scale_by_tensor") and ctx.input_metas[1].numel != 1:
        raise ctx.error(f"scale_by_tensor must have one element, got shape {list(ctx.input_metas[1].shape)}")
    return ctx.shape("x")


register_user_op("fused_cast_scale", inputs=["x", Arg("scale_by_tensor", optional=True)], outputs=["y"],
                 attrs={"dtype": ("data_type", dtypes.float32), "scale": ("double", 1.0)}, no_grad=True,
                 infer_shape=_cast_scale_shape, infer_dtype=lambda ctx: ctx.attr("dtype"))


def _cast_scale_cpu(ctx, x, scale=None):
    """``cast(x, dtype) * scale_by_tensor`` (or ``* scale``) in one ufunc call."""
    out = ctx.attrs["dtype"].np_dtype
    if scale is None:
        return np.multiply(x, np.asarray(ctx.attrs["scale"]).astype(out), dtype=out)
    return np.multiply(x, scale.reshape(()), dtype=out)


# graph/ registers its kernels with the dispatcher itself (it imports no kernels/ module); a graph runs on
# devices with storage, so the ops have no meta kernels.
DISPATCHER.register_kernel("fused_add_to_output", "cpu", _add_to_output_cpu, name="fused_add_to_output_cpu")
DISPATCHER.register_kernel("fused_cast_scale", "cpu", _cast_scale_cpu, name="fused_cast_scale_cpu")


# ---- helpers --------------------------------------------------------------------------------------
def _sole_reader(uses: dict, lbn: str, node: Node) -> bool:
    return uses.get(lbn) == [node]


def _user_node(ir: JobIR, name: str, op_type: str, inputs: list, attrs: dict, template: Node) -> Node:
    """A new user op node named ``name`` reading ``inputs``, inferred now; its output blobs replace
    ``template``'s (same metas)."""
    from oneflow_lite.framework.op_builder import OpBuilder

    b = OpBuilder(op_type, name)
    b.input("x")
    if len(inputs) > 1:
        b.input("scale_by_tensor" if op_type == "fused_cast_scale" else "addend")
    b.output("y")
    for k, v in attrs.items():
        b.attr(k, v)
    expr = b.build()
    conf = expr.build_op_conf(None, device_tag=template.conf.device_tag)
    conf.name = name
    uc = conf.user_conf
    for arg, lbn in zip(uc.input_order, inputs):
        uc.input[arg].s[0] = lbn
    uc.output["y"].s[0] = template.outputs[0]
    node = Node(name, "user", conf, op_type, list(inputs), list(template.outputs), template.device)
    node.expr = expr_from_conf(conf)
    node.res = node.expr.infer(tuple([ir.metas[lbn] for lbn in inputs]), None)
    return node


# Note [Add to output]
# OneFlow's fuse_add_to_output gives a matmul, a convolution or a batch norm an ``_add_to_output`` input
# so it writes ``op(x) + addend`` in one kernel. NumPy kernels cannot fuse the add into the producer's
# loop; what the fusion still saves here is the add's result buffer: the add of a same-shaped addend to a
# producer's result read by nothing else becomes ``fused_add_to_output``, adding into that result in place.
ADD_TO_OUTPUT_PRODUCERS = frozenset(("matmul", "linear", "conv1d", "conv2d", "conv3d", "batch_norm_elemt"))


def fuse_add_to_output(ir: JobIR) -> str:
    """Note [Add to output]."""
    uses, producers = ir.consumers(), ir.producers()
    fused = []
    for i, n in enumerate(ir.nodes):
        if n.kind != "user" or n.op_type not in ("broadcast_add", "add_n") or len(n.inputs) != 2:
            continue
        out = ir.metas[n.outputs[0]]
        for k in (0, 1):
            lbn, other = n.inputs[k], n.inputs[1 - k]
            p = producers.get(lbn)
            if (p is not None and p.kind == "user" and p.op_type in ADD_TO_OUTPUT_PRODUCERS and len(p.outputs) == 1
                    and ir.metas[lbn] is out and ir.metas[other] is out and _sole_reader(uses, lbn, n)):
                ir.nodes[i] = _user_node(ir, n.name, "fused_add_to_output", [lbn, other], {}, n)
                fused.append(n.name)
                break
    if not fused:
        return "fuse add to output: nothing fused"
    return f"fuse add to output: {len(fused)} add(s) written into their producer's result"


def _gradient_scale(p: Node):
    """The constant factor of a ``scalar_mul`` / ``negative`` op, or None."""
    if p.op_type == "negative":
        return -1.0
    if p.op_type == "scalar_mul":
        a = p.res.attrs
        return float(a["float_operand"] if a["has_float_operand"] else a["int_operand"])
    return None


def fuse_model_update_ops(ir: JobIR) -> str:
    """Fold ``grad * c`` / ``-grad`` read only by an ``sgd_update`` into its ``scale`` attribute (float32 and
    float64 models whose update has scale 1 or -1: the product stays exact)."""
    uses, producers = ir.consumers(), ir.producers()
    folded = []
    for n in ir.nodes:
        if n.kind != "user" or n.op_type != "sgd_update":
            continue
        diff = n.inputs[1]
        p = producers.get(diff)
        scale = n.res.attrs["scale"]
        if (p is None or p.kind != "user" or not _sole_reader(uses, diff, n) or scale not in (1.0, -1.0)
                or ir.metas[diff].dtype not in (dtypes.float32, dtypes.float64)):
            continue
        factor = _gradient_scale(p)
        if factor is None:
            continue
        n.conf.user_conf.attr["scale"].CopyFrom(attr_mod.to_proto("double", scale * factor))
        n.inputs[1] = p.inputs[0]
        n.expr = expr_from_conf(n.conf)
        n.res = n.expr.infer(tuple([ir.metas[lbn] for lbn in n.inputs]), None)
        folded.append(p.name)
    if not folded:
        return "fuse model update ops: nothing fused"
    ir.remove(set(folded))
    return f"fuse model update ops: {len(folded)} gradient scaling(s) folded into their sgd_update"


def fuse_cast_scale(ir: JobIR) -> str:
    """``cast`` then a multiplication by a one-element tensor of the cast's dtype (or a ``scalar_mul``) becomes
    one ``fused_cast_scale`` op."""
    uses, producers = ir.consumers(), ir.producers()
    fused, dead = [], set()
    for i, n in enumerate(ir.nodes):
        if n.kind != "user" or n.op_type not in ("broadcast_mul", "scalar_mul"):
            continue
        out = ir.metas[n.outputs[0]]
        for k in range(len(n.inputs)):
            lbn = n.inputs[k]
            c = producers.get(lbn)
            if c is None or c.kind != "user" or c.op_type != "cast" or ir.metas[lbn] is not out:
                continue
            if not _sole_reader(uses, lbn, n):
                continue
            attrs = {"dtype": out.dtype}
            if n.op_type == "scalar_mul":
                inputs = [c.inputs[0]]
                attrs["scale"] = _gradient_scale(n)
            else:
                s = n.inputs[1 - k]
                if ir.metas[s].numel != 1 or ir.metas[s].dtype is not out.dtype:
                    continue
                inputs = [c.inputs[0], s]
            ir.nodes[i] = _user_node(ir, n.name, "fused_cast_scale", inputs, attrs, n)
            dead.add(c.name)
            fused.append(n.name)
            break
    if not fused:
        return "fuse cast scale: nothing fused"
    ir.remove(dead)
    return f"fuse cast scale: {len(fused)} cast(s) and scaling(s) fused into fused_cast_scale"
