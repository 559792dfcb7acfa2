"""The elementwise kernel fusion pass (``graph.config.allow_fuse_elementwise_kernels``) and its op.

Note [Fused elementwise kernels]
NumPy runs an elementwise op per call, at ~0.6 us a call plus a pass over memory: a chain of twenty small ops
costs twenty calls however they share buffers (Note [Fusion and the memory plan] in graph/compiler.py). This
pass replaces each maximal region of elementwise ops (``RULES``: arithmetic, scalar arithmetic, relu, tanh and
their grads, plain SGD updates, on float32 / float64) by one ``fused_elementwise`` op whose kernel numba compiles from generated
source (Note [Generated kernels] in graph/jit.py): one call, one pass, no intermediate arrays.

A region is built in job order: an op joins the region producing one of its inputs when both compute in the same
dtype and shape (each input of the region's shape, of one element, or broadcast to it) and nothing outside the
region has read the region's results yet (the fused op runs where the region's last op ran, so an earlier reader
would read it before it exists); an op reading the results of two such regions merges them. A result of the
region that another op reads (a later op, an output, an assign, the backward pass of a training graph) is an
output of the fused op, under its blob name, so nothing else in the job changes; the values read only inside the
region are never stored. Regions of one op stay as they are (but an SGD update, whose kernel makes two passes),
and so do ops whose kernel is a plug-in's. Without
numba the pass reports it and changes nothing. The ops compute as NumPy's ufuncs do, bit for bit, except tanh
(float32 only: within 5 ulp, graph/jit.py) and warnings: the kernels set no floating-point flags.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.graph import jit
from oneflow_lite.graph.ir import JobIR, Node, expr_from_conf

_BOTH = ("float32", "float64")
_BUILT_IN_KERNELS = "oneflow_lite.kernels."
# op type -> (expression of its inputs {x0}, {x1}, the scalar operand {s}, zero {zero} and one {one}; dtypes)
RULES = {
    "broadcast_add": ("({x0} + {x1})", _BOTH), "broadcast_sub": ("({x0} - {x1})", _BOTH),
    "broadcast_mul": ("({x0} * {x1})", _BOTH), "broadcast_div": ("({x0} / {x1})", _BOTH),
    "scalar_add": ("({x0} + {s})", _BOTH), "scalar_mul": ("({x0} * {s})", _BOTH),
    "scalar_div": ("({x0} / {s})", _BOTH), "scalar_reverse_div": ("({s} / {x0})", _BOTH),
    "negative": ("(-{x0})", _BOTH), "abs": ("abs({x0})", _BOTH), "square": ("({x0} * {x0})", _BOTH),
    # np.maximum(x, 0): +0 for -0 and 0, NaN kept; relu_grad: dy where y > 0, else +0 (Note [relu_grad by bit masks])
    "relu": ("({zero} if {x0} <= {zero} else {x0})", _BOTH),
    "relu_grad": ("({x0} if {x1} > {zero} else {zero})", _BOTH),
    "tanh": ("_tanh32({x0})", ("float32",)),
    "tanh_grad": ("({x0} * ({one} - {x1} * {x1}))", _BOTH),
    # plain SGD (no scale, l1, l2, weight decay or learning-rate tensor): ``model - lr * diff``, as its kernel's
    # two passes round it; fused even alone (one pass over the parameter instead of two)
    "sgd_update": ("({x0} - {lr} * {x1})", _BOTH),
}
_ALONE = frozenset(("sgd_update",))
_PLAIN_SGD = {"scale": 1.0, "l1": 0.0, "l2": 0.0, "weight_decay": 0.0}


# ---- the op ----------------------------------------------------------------------------------------
def _fused_shape(ctx):
    shape = tuple(ctx.attr("shape"))
    for k, m in enumerate(ctx.input_metas):
        if len(m.shape) > len(shape) or any(a not in (1, b) for a, b in zip(reversed(m.shape), reversed(shape))):
            raise ctx.error(f"input {k} of shape {list(m.shape)} does not broadcast to the region's {list(shape)}")
    n = ctx.attr("num_outputs")
    return shape if n == 1 else [shape] * n


def _fused_dtype(ctx):
    n = ctx.attr("num_outputs")
    return ctx.attr("dtype") if n == 1 else [ctx.attr("dtype")] * n


register_user_op("fused_elementwise", inputs=[Arg("in", variadic=True)], outputs=[Arg("out", variadic=True)],
                 attrs={"kernel": ("string", ""), "shape": ("shape", ()), "dtype": ("data_type", dtypes.float32),
                        "num_outputs": ("int64", 1)}, no_grad=True,
                 infer_shape=_fused_shape, infer_dtype=_fused_dtype)

_modules: dict = {}  # kernel key -> the loaded kernel module (graph/jit.py), filled by the pass


def _module(key: str):
    """The kernel module of ``key``: loaded by the pass, else from the cache dir (a job written by ``graph.job``)."""
    module = _modules.get(key)
    if module is None:
        module = _modules[key] = jit.load_cached(key)
    return module


def _fused_cpu(ctx, *inputs):
    return _module(ctx.attrs["kernel"]).call(tuple(ctx.attrs["shape"]), *inputs)


def _fused_out_variant(ctx, input_dtypes):
    """The kernel's ``write(out, *inputs)`` for a one-output region (Note [Out-variant writers])."""
    return _module(ctx.attrs["kernel"]).write if ctx.attrs["num_outputs"] == 1 else None


DISPATCHER.register_kernel("fused_elementwise", "cpu", _fused_cpu, name="fused_elementwise_cpu",
                           out_variant=_fused_out_variant)


# ---- the pass --------------------------------------------------------------------------------------
class _Region:
    """Ops fused into one kernel (Note [Fused elementwise kernels]); ``sealed`` once an op outside read a result."""

    __slots__ = ("dtype", "members", "sealed", "shape")

    def __init__(self, dtype, shape):
        self.dtype, self.shape, self.members, self.sealed = dtype, shape, [], False


def _fusable(ir: JobIR, n: Node):
    """``(dtype name, shape)`` of an op ``RULES`` can fuse, else None."""
    if n.kind != "user" or n.op_type not in RULES or len(n.outputs) != 1 or n.device.type != "cpu":
        return None
    out = ir.metas[n.outputs[0]]
    if out.dtype.name not in RULES[n.op_type][1]:
        return None
    if n.op_type == "sgd_update" and (len(n.inputs) != 2 or any(n.res.attrs[a] != v for a, v in _PLAIN_SGD.items())):
        return None
    reg = DISPATCHER.select_registration(n.expr, DISPATCHER.entry(n.op_type), n.res.device,
                                         tuple([ir.metas[lbn].dtype for lbn in n.inputs]), (out.dtype,))
    if not getattr(reg.fn, "__module__", "").startswith(_BUILT_IN_KERNELS):  # a plug-in's kernel runs as it is
        return None
    shape = tuple(out.shape)
    for lbn in n.inputs:
        m = ir.metas[lbn]
        if m.dtype is not out.dtype or np.broadcast_shapes(tuple(m.shape), shape) != shape:
            return None
    return out.dtype.name, shape


def find_regions(ir: JobIR) -> list:
    """The regions of two or more fusable ops, in job order (Note [Fused elementwise kernels]); an op reading
    results of several open regions of its dtype and shape merges them."""
    region_of, regions, position = {}, [], {}
    for i, n in enumerate(ir.nodes):
        position[n.name] = i
        key = _fusable(ir, n)
        joined = []
        if key is not None:
            for r in map(region_of.get, n.inputs):
                if r is not None and not r.sealed and (r.dtype, r.shape) == key and r not in joined:
                    joined.append(r)
        for lbn in n.inputs:
            r = region_of.get(lbn)
            if r is not None and r not in joined:
                r.sealed = True  # read from outside: the fused op must run before this op
        if key is None:
            continue
        if not joined:
            joined.append(_Region(*key))
            regions.append(joined[0])
        for other in joined[1:]:  # no op outside read either yet: one kernel at this op computes both
            joined[0].members = sorted(joined[0].members + other.members, key=lambda m: position[m.name])
            region_of.update((m.outputs[0], joined[0]) for m in other.members)
            other.members = []
        joined[0].members.append(n)
        region_of[n.outputs[0]] = joined[0]
    return [r for r in regions if len(r.members) > 1 or (r.members and r.members[0].op_type in _ALONE)]


def _spec(ir: JobIR, region: _Region, uses: dict):
    """The region's ``KernelSpec``, its external input blobs and its output blobs (read outside the region)."""
    np_dtype = np.dtype(region.dtype)
    refs, inputs, kinds, stmts, constants = {}, [], [], [], {}

    def constant(value: float) -> str:
        name = constants.setdefault(float(value).hex(), f"_c{len(constants)}")
        return name

    for j, m in enumerate(region.members):
        template = RULES[m.op_type][0]
        fields = {}
        for a, lbn in enumerate(m.inputs):
            if lbn not in refs:
                refs[lbn] = f"{{i{len(inputs)}}}"
                inputs.append(lbn)
                shape = tuple(ir.metas[lbn].shape)
                kinds.append("full" if shape == region.shape else "scalar" if ir.metas[lbn].numel == 1 else "broadcast")
            fields[f"x{a}"] = refs[lbn]
        for name, value in (("zero", 0.0), ("one", 1.0)):
            if "{" + name + "}" in template:
                fields[name] = constant(value)
        if "{lr}" in template:
            fields["lr"] = constant(float(np.float64(m.res.attrs["learning_rate_val"]).astype(np_dtype)))
        if "{s}" in template:
            a = m.res.attrs  # the operand in the dtype, as the scalar kernels convert it (round to nearest)
            value = (np.float64(a["float_operand"]) if a["has_float_operand"] else np.int64(a["int_operand"]))
            with np.errstate(over="ignore"):  # beyond float32: inf
                fields["s"] = constant(float(value.astype(np_dtype)))
        stmts.append(template.format(**fields))
        refs[m.outputs[0]] = f"{{t{j}}}"
    members = set(map(id, region.members))
    outputs = [j for j, m in enumerate(region.members) if any(id(u) not in members for u in uses.get(m.outputs[0], ()))]
    assigned = any(u.kind == "assign" for j in outputs for u in uses.get(region.members[j].outputs[0], ()))
    spec = jit.KernelSpec(region.dtype, kinds, stmts, outputs, {name: float.fromhex(h) for h, name in constants.items()},
                          in_place=assigned)
    return spec, inputs, [region.members[j].outputs[0] for j in outputs]


def _fused_node(ir: JobIR, template: Node, key: str, region: _Region, inputs: list, outputs: list) -> Node:
    """The ``fused_elementwise`` node named as ``template`` (the region's last op), inferred now."""
    b = OpBuilder("fused_elementwise", template.name).input("in", len(inputs)).output("out", len(outputs))
    b.attr("kernel", key).attr("shape", list(region.shape)).attr("dtype", getattr(dtypes, region.dtype))
    b.attr("num_outputs", len(outputs))
    conf = b.build().build_op_conf(None, device_tag=template.conf.device_tag)
    conf.name = template.name
    uc = conf.user_conf
    for k, lbn in enumerate(inputs):
        uc.input["in"].s[k] = lbn
    for q, lbn in enumerate(outputs):
        uc.output["out"].s[q] = lbn
    node = Node(template.name, "user", conf, "fused_elementwise", list(inputs), list(outputs), template.device)
    node.expr = expr_from_conf(conf)
    node.res = node.expr.infer(tuple([ir.metas[lbn] for lbn in inputs]), None)
    return node


def fuse_elementwise_kernels(ir: JobIR) -> str:
    """Note [Fused elementwise kernels]."""
    regions = find_regions(ir)
    if not regions:
        return "fuse elementwise kernels: nothing to fuse"
    if not jit.numba_available():
        return f"fuse elementwise kernels: numba is not installed, {len(regions)} region(s) left unfused"
    uses, fused, done, dead, failed = ir.consumers(), 0, 0, set(), []
    for region in regions:
        spec, inputs, outputs = _spec(ir, region, uses)
        if not outputs:
            continue
        try:
            key, module = jit.load_kernel(spec)
        except Exception as e:  # noqa: BLE001 - a fusion is an optimisation: the ops run unfused, the report says why
            failed.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            continue
        _modules[key] = module
        last = region.members[-1]
        ir.nodes[ir.nodes.index(last)] = _fused_node(ir, last, key, region, inputs, outputs)
        dead.update(m.name for m in region.members[:-1])
        fused, done = fused + len(region.members), done + 1
    ir.remove(dead)
    report = f"fuse elementwise kernels: {fused} op(s) in {done} region(s) fused into generated kernels"
    return report + (f"; {len(failed)} region(s) left unfused ({failed[0]})" if failed else "")
