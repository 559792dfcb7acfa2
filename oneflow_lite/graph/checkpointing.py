"""Activation checkpointing: a job pass recomputing a module's forward ops in the backward pass.

Note [Activation checkpointing]
``graph.model.block.to(GraphModule).activation_checkpointing = True`` (or OneFlow 0.9's
``graph.model.block.config.activation_checkpointing = True``) marks a module. The capture records the
ops of each of its calls (``job.net.op[start:end]``, graph/capture.py) and the blobs the call returned.
The pass, run after the other job passes, takes each call of a marked module (the outermost, when
marked modules nest) as a *segment*: a blob made inside the segment, other than the call's results, that
an op after the segment reads (a gradient op reading a saved activation) is recomputed for those readers
by a copy of the segment's ops that compute it (OneFlow's ``Sys-Checkpointing-Fake-Fw-Op_<name>``), placed
just before the first such reader. The original activations are then read only inside the segment, so
the memory plan frees them during the forward pass; the copies live only during their module's part of
the backward pass, and the peak memory drops. The copies run the same kernels on the same inputs, so
results are bit-equal.

Kept, not recomputed: the call's inputs and results, variables, results of stateful ops (a dropout mask
must not be drawn again, Note [Stateful ops]), and blobs read after the segment only by outputs and
variable updates. Without the memory plan every blob lives to the end of a run and the pass only adds work.
"""

from __future__ import annotations

from oneflow_lite.graph.ir import JobIR, Node, expr_from_conf, is_stateful

_PREFIX = "Sys-Checkpointing-Fake-Fw-Op_"


def is_recomputed(op_name: str) -> bool:
    """Whether an op is a checkpointing pass's copy, recomputing a forward op in the backward pass."""
    return op_name.startswith(_PREFIX)


def outermost(calls: list) -> list:
    """The calls not nested inside another of ``calls`` (by op range), in capture order."""
    kept = []
    for c in sorted(calls, key=lambda c: (c.start, -c.end)):
        if kept and c.start >= kept[-1].start and c.end <= kept[-1].end:
            continue
        kept.append(c)
    return kept


def activation_checkpointing(ir: JobIR, segments: list) -> str:
    """Recompute the activations of ``segments`` (``(op names, result blobs)`` pairs) in the backward pass
    (Note [Activation checkpointing]); a one-line report."""
    recomputed = 0
    done = []
    for names, results in segments:
        n = _recompute_segment(ir, names, results)
        if n:
            recomputed += n
            done.append(n)
    if not recomputed:
        return "activation checkpointing: nothing to recompute"
    return (f"activation checkpointing: {recomputed} op(s) of {len(done)} module call(s) recomputed in the "
            f"backward pass")


def _recompute_segment(ir: JobIR, names: set, results: set) -> int:
    position = {n.name: i for i, n in enumerate(ir.nodes)}
    inside = [n for n in ir.nodes if n.name in names and n.kind == "user"]
    if not inside:
        return 0
    last = max(position[n.name] for n in inside)
    producer = {lbn: n for n in inside for lbn in n.outputs}
    keep = set(results)
    readers = [n for n in ir.nodes[last + 1:] if n.kind == "user"]
    needed = {lbn for r in readers for lbn in r.inputs
              if lbn in producer and lbn not in keep and not is_stateful(producer[lbn].op_type)}
    if not needed:
        return 0
    clone = set()
    stack = list(needed)
    while stack:
        p = producer[stack.pop()]
        if p.name in clone:
            continue
        clone.add(p.name)
        stack.extend(lbn for lbn in p.inputs if lbn in producer and lbn not in keep
                     and not is_stateful(producer[lbn].op_type))
    renamed = {}
    copies = [_copy(ir, n, renamed) for n in inside if n.name in clone]
    first = min(position[r.name] for r in readers if any(lbn in needed for lbn in r.inputs))
    for r in readers:
        r.inputs = [renamed.get(lbn, lbn) for lbn in r.inputs]
    ir.nodes[first:first] = copies
    return len(copies)


def _copy(ir: JobIR, n: Node, renamed: dict) -> Node:
    """A copy of op ``n`` reading the copies made so far (``renamed``: old blob -> new blob), adding its
    outputs to ``renamed``."""
    name = _PREFIX + n.name
    conf = type(n.conf)()
    conf.CopyFrom(n.conf)
    conf.name = name
    uc = conf.user_conf
    for arg in uc.output_order:
        blobs = uc.output[arg].s
        for i, lbn in enumerate(blobs):
            blobs[i] = f"{name}/{lbn.partition('/')[2]}"
    outputs = [f"{name}/{lbn.partition('/')[2]}" for lbn in n.outputs]
    copy = Node(name, n.kind, conf, n.op_type, [renamed.get(lbn, lbn) for lbn in n.inputs], outputs, n.device)
    copy.expr = expr_from_conf(conf)
    copy.res = n.res
    for old, new in zip(n.outputs, outputs):
        ir.metas[new] = ir.metas[old]
        renamed[old] = new
    return copy
