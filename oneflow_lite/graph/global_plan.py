"""Plans of nn.Graphs on global tensors: each op's SBP signature, explicit boxing steps, and every rank
running its own plan on its pieces.

Note [Graphs on global tensors]
A graph called with global inputs, or holding global parameters, is captured like any other: the lazy
interpreter records the logical ops (Lazy sits above Global, Note [Dispatch key order]), with logical
shapes. Compiling its job for one input signature walks the ops in order with the global metas of the
inputs and variables, and asks the global interpreter's planner (``plan_call``, the same rules and costs
as eager execution) for each op's SBP signature and local attrs: ``signatures`` maps every op to its
signature, the job's parallel view. Where a producer's SBP differs from what its consumer's signature
takes, the plan gets an explicit boxing step (one per blob and target, shared by its consumers); an
assign whose value's SBP differs from its variable's boxes the value first. Each rank then runs the plan
on its own pieces: a variable's piece is its global tensor's local array, a user op runs its local kernel
(redispatched below the Global key, with the signature's local attrs and per-call ``finish``), a boxing
step runs the collective, an assign writes the variable's piece, and the outputs are global tensors. The
compiler's other passes (fusion, memory plan, CSE, constant folding) are not applied to global jobs.

Note [The parallel view of a job]
The job of a graph on global tensors (``graph.job``) records, as OneFlow's does, each op's placement
(``Job.placement``: groups of op names sharing a ``ParallelConf`` of ranks and hierarchy) and SBP signature
(``Job.job_parallel_view_conf``: op name -> the nd-SBP of each of its blobs, named in the op: a user op's
``<arg>_<index>``, an input or variable op's ``out``, an output op's ``in``). Each boxing step of the plan is
an explicit op of that job, as OneFlow's boxing pass makes them: a ``hierarchical_parallel_cast`` named
``System-Boxing-<k>`` (attr ``nd_sbp``: the target) placed before its first consumer, whose input reads it.
Planned again (a saved job loaded), such an op takes its input boxed to its attr and copies it, so a job
keeps its meaning. ``print(graph)`` shows this view read back from the proto, and the plan's boxing steps.

Note [Saved graphs on global tensors]
``graph.save(path)`` of a graph on global tensors is called by every rank: each variable's logical value is
gathered to rank 0, which writes the job with its parallel view (Note [The parallel view of a job]) and
those values. ``nn.Graph.load(path)``, called by every rank (each reads the file), makes each variable a
global tensor with its recorded placement and SBP (every rank keeps its piece of the value it read) and
expects inputs with the recorded placements and SBPs.
"""

from __future__ import annotations

import threading

from oneflow_lite._proto import job_pb2, op_conf_pb2
from oneflow_lite.framework import attr as attr_mod
from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.generator import using_generator
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET, make_global_meta
from oneflow_lite.framework.placement import placement as Placement
from oneflow_lite.framework.world import world
from oneflow_lite.functors.global_cast import from_logical
from oneflow_lite.framework.tensor import Tensor, version_counter
from oneflow_lite.interpreters.boxing import box_same_placement
from oneflow_lite.interpreters.eager_global import plan_call, plan_source, shared_generator
from oneflow_lite.interpreters.lazy import SameLayout
from oneflow_lite.interpreters.op_interp_util import redispatch

_make = Tensor._make


def is_global_job(variables: dict, in_metas, source_layouts=None) -> bool:
    """Whether a job runs on global tensors: a global input, variable or source op (one laid out like another
    blob, Note [The layout of a *_like tensor in a graph], does not make it global)."""
    return any(type(v) is not SameLayout for v in (source_layouts or {}).values()) or any(
        m.key_set & GLOBAL_KEY_SET for m in in_metas) or any(t._key_set & GLOBAL_KEY_SET for t in variables.values())


def _blob_names(conf, side: str = "input") -> list:
    """A user op's blob names ``<arg>_<index>``, inputs or outputs, in the order of its conf."""
    uc = conf.user_conf
    order, blobs = (uc.input_order, uc.input) if side == "input" else (uc.output_order, uc.output)
    return [f"{arg}_{i}" for arg in order for i in range(len(blobs[arg].s))]


_CAST = "hierarchical_parallel_cast"


def _cast_conf(name: str, step) -> tuple:
    """The conf of the boxing op of a box step, and its output blob."""
    _, src, _, meta, nd_sbp = step
    conf = op_conf_pb2.OperatorConf(name=name, device_tag=meta.placement.type)
    uc = conf.user_conf
    uc.op_type_name = _CAST
    uc.input["in"].s.append(src)
    uc.input_order.append("in")
    uc.output["out"].s.append(f"{name}/out_0")
    uc.output_order.append("out")
    uc.attr["nd_sbp"].CopyFrom(attr_mod.to_proto("list_string", [s.short() for s in nd_sbp]))
    return conf, f"{name}/out_0"


def _read_casts(conf, inputs: list):
    """A copy of user op ``conf`` reading ``inputs`` (in its input order)."""
    out = op_conf_pb2.OperatorConf()
    out.CopyFrom(conf)
    it = iter(inputs)
    for arg in out.user_conf.input_order:
        blobs = out.user_conf.input[arg].s
        for i in range(len(blobs)):
            blobs[i] = next(it)
    return out


def _box_text(step) -> str:
    return f"box {step[1]} {S.format_nd_sbp(step[3].nd_sbp)} -> {S.format_nd_sbp(step[4])}"


def _sbp_text(nd_sbp_proto) -> str:
    return S.format_nd_sbp(S.nd_sbp_from_proto(nd_sbp_proto))


def _conf_blob_names(conf) -> list:
    """The blob names of an op conf in order (Note [The parallel view of a job])."""
    kind = conf.WhichOneof("op_type")
    if kind == "user_conf":
        return _blob_names(conf) + _blob_names(conf, "output")
    return ["in", "out"] if kind == "output_conf" else ["out"]


def describe_parallel_view(job: job_pb2.Job) -> list:
    """One line per op of ``job`` with a recorded SBP signature and placement, read from the proto."""
    ranks = {}
    for group in job.placement.placement_group:
        conf = group.parallel_conf
        where = f"{conf.device_tag} ranks {list(conf.ranks)}" + (
            f" as {list(conf.hierarchy.dim)}" if len(conf.hierarchy.dim) > 1 else "")
        for name in group.op_set.op_name:
            ranks[name] = where
    view = job.job_parallel_view_conf.op_name2nd_sbp_signature_conf
    lines = []
    for conf in job.net.op:
        if conf.name in view:
            bns = view[conf.name].bn_in_op2nd_sbp
            sig = ", ".join(f"{bn}: {_sbp_text(bns[bn])}" for bn in _conf_blob_names(conf) if bn in bns)
            lines.append(f"{conf.name}: {sig} on {ranks.get(conf.name, '?')}")
    return lines


def gather_variables(variables: dict):
    """Variable name -> its logical value on rank 0, None on the other ranks (Note [Saved graphs on global
    tensors]); every rank calls it."""
    values = {}
    for name in sorted(variables):
        t = variables[name]
        if t._key_set & GLOBAL_KEY_SET:
            t = t.detach().to_global(Placement(t._meta.placement.type, [0]), S.broadcast)
        values[name] = t._array
    return values if world().rank == 0 else None


def _parallel_view(job) -> tuple:
    """Op name -> placement, and op name -> the nd-SBP of its ``out`` blob, from the job's parallel view."""
    places = {}
    for group in job.placement.placement_group:
        p = Placement.from_parallel_conf(group.parallel_conf)
        places.update((name, p) for name in group.op_set.op_name)
    nd = {}
    for name, sig in job.job_parallel_view_conf.op_name2nd_sbp_signature_conf.items():
        if "out" in sig.bn_in_op2nd_sbp:
            nd[name] = S.nd_sbp_from_proto(sig.bn_in_op2nd_sbp["out"])
    return places, nd


def globalize(job, variables: dict, input_names: list, in_metas: list) -> tuple:
    """The variables as global tensors and the input metas as global metas, as the job's parallel view
    records them (Note [Saved graphs on global tensors])."""
    places, nd = _parallel_view(job)
    out = {name: from_logical(t, places[name], nd[name]) if name in places else t for name, t in variables.items()}
    metas = [make_global_meta(m.shape, m.dtype, places[name], nd[name]) if name in places else m
             for name, m in zip(input_names, in_metas)]
    return out, metas


def saved_source_layouts(job, ir) -> dict:
    """Source op name -> (placement, nd-SBP of its output) as the job's parallel view records them (Note [Saved
    graphs on global tensors]; Note [Global source ops in a graph])."""
    places, view = _parallel_view(job)[0], job.job_parallel_view_conf.op_name2nd_sbp_signature_conf
    out = {}
    for node in ir.nodes:
        if node.kind == "user" and not node.inputs and node.name in places and node.name in view:
            nd = view[node.name].bn_in_op2nd_sbp[_blob_names(node.conf, "output")[0]]
            out[node.name] = (places[node.name], S.nd_sbp_from_proto(nd))
    return out


class GlobalJobPlan:
    """The plan of one input signature of a graph on global tensors (Note [Graphs on global tensors]);
    ``run(inputs)`` returns this rank's pieces of the outputs, ``out_metas`` their global metas."""

    def __init__(self, ir, variables: dict, in_metas, module_notes=lambda op_name: [], source_layouts=None,
                 generators=None):
        """``module_notes(op name)``: the notes naming the module that added the op (a planning error names it
        as a capture error does); ``source_layouts``: source op name -> (placement, nd-SBP) of the global
        creation calls of the build (Note [Global source ops in a graph]), or a SameLayout; ``generators``:
        random op name -> its generator (Note [Generators in a graph])."""
        self.graph_name = ir.name
        self.variables = variables
        self.source_layouts = source_layouts or {}
        self.generators = generators or {}
        self.reports = []
        self.signatures = {}  # op name -> its SBP signature (the job's parallel view)
        self.parallel = {}  # op name -> (placement, {blob name in the op: nd-SBP}) (Note [The parallel view of a job])
        self.steps = []
        self.out_metas = []
        self._lock = threading.Lock()
        self._metas = {}  # lbn -> global meta
        self._boxed = {}  # (lbn, nd-sbp) -> the lbn of the boxed blob
        self.boxing_steps = 0
        inputs = iter(in_metas)
        for node in ir.nodes:
            try:
                self._add(node, inputs)
            except Exception as e:
                e.add_note(f"(while planning op '{node.name}' of nn.Graph '{self.graph_name}' on global tensors)")
                e.__notes__ += module_notes(node.name)
                raise
        self.reports.append(f"global plan: {len(self.signatures)} op(s) with SBP signatures, "
                            f"{self.boxing_steps} boxing step(s)")

    def _add(self, node, inputs) -> None:
        kind = node.kind
        if kind == "input":
            self._metas[node.outputs[0]] = self._global(next(inputs), f"input '{node.name}'")
            self.steps.append(("input", node.outputs[0]))
            self._record(node, self._metas[node.outputs[0]], ("out",))
        elif kind == "variable":
            t = self.variables[node.name]
            self._metas[node.outputs[0]] = self._global(t._meta, f"variable '{node.name}'")
            self.steps.append(("variable", node.outputs[0], t))
            self._record(node, self._metas[node.outputs[0]], ("out",))
        elif kind == "user":
            self._add_user(node)
        elif kind == "assign":
            ref, value = node.inputs
            value = self._box_to(value, self._metas[ref].nd_sbp)
            self.steps.append(("assign", ref, value, node))
            self._metas[node.outputs[0]] = self._metas[ref]
            self._record(node, self._metas[ref], _blob_names(node.conf))
        else:  # output
            self.steps.append(("output", node.inputs[0]))
            self.out_metas.append(self._metas[node.inputs[0]])
            self._record(node, self._metas[node.inputs[0]], ("in", "out"))

    def _record(self, node, meta, names) -> None:
        """The op's placement and the same nd-SBP for each of its blobs ``names`` (interface ops, assigns)."""
        if meta.key_set & GLOBAL_KEY_SET:
            self.parallel[node.name] = (meta.placement, {n: meta.nd_sbp for n in names})

    def _global(self, meta, what):
        if meta.key_set & GLOBAL_KEY_SET or meta.ndim == 0:
            return meta
        raise RuntimeError(f"nn.Graph '{self.graph_name}': {what} is a local tensor of shape {list(meta.shape)} in a "
                           f"graph on global tensors; make it global with to_global(placement, sbp)")

    def _add_user(self, node) -> None:
        if not node.inputs:  # a source op: as its creation call laid it out, else broadcast on the graph's placement
            layout = self.source_layouts.get(node.name)
            if type(layout) is SameLayout:  # Note [The layout of a *_like tensor in a graph]
                like = self._metas[layout.lbn]
                layout = (like.placement, like.nd_sbp) if like.key_set & GLOBAL_KEY_SET else None
            placement, nd = layout or (self._placement(node), None)
            plan = plan_source(node.expr, placement, None, nd)
            self.signatures[node.name] = repr(plan)
            self.parallel[node.name] = (plan.placement, dict(zip(_blob_names(node.conf, "output"),
                                                                 [m.nd_sbp for m in plan.out_metas])))
            self.steps.append(("op", node, plan, []))
            self._metas[node.outputs[0]] = plan.out_metas[0]
            return
        for lbn in node.inputs:  # a local number (a learning rate, a wrapped scalar): broadcast
            m = self._metas[lbn]
            if not m.key_set & GLOBAL_KEY_SET:
                p = self._placement(node)
                self._metas[lbn] = make_global_meta((), m.dtype, p, (S.broadcast,) * p.ndim)
        plan = plan_call(node.expr, [self._metas[lbn] for lbn in node.inputs], None)
        ins = [self._box_to(lbn, nd) for lbn, nd in zip(node.inputs, plan.in_nd_sbps)]
        self.signatures[node.name] = repr(plan)
        bns = _blob_names(node.conf) + _blob_names(node.conf, "output")
        ins_nd = [self._metas[lbn].nd_sbp for lbn in node.inputs] if node.op_type == _CAST else plan.in_nd_sbps
        self.parallel[node.name] = (plan.placement, dict(zip(bns, list(ins_nd) + [m.nd_sbp for m in plan.out_metas])))
        self.steps.append(("op", node, plan, ins))
        for lbn, m in zip(node.outputs, plan.out_metas):
            self._metas[lbn] = m

    def _placement(self, node):
        """The placement of the job's source ops: its first global input's or variable's."""
        for m in self._metas.values():
            if m.key_set & GLOBAL_KEY_SET:
                return m.placement
        raise RuntimeError(f"nn.Graph '{self.graph_name}': source op '{node.name}' comes before any global tensor")

    def _box_to(self, lbn: str, nd_sbp: tuple) -> str:
        """The blob holding ``lbn`` under ``nd_sbp``: itself, or a boxing step's output (made once)."""
        m = self._metas[lbn]
        if m.nd_sbp == nd_sbp:
            return lbn
        key = (lbn, nd_sbp)
        boxed = self._boxed.get(key)
        if boxed is None:
            boxed = self._boxed[key] = f"{lbn}@boxing{S.format_nd_sbp(nd_sbp)}"
            self._metas[boxed] = make_global_meta(m.shape, m.dtype, m.placement, nd_sbp)
            self.steps.append(("box", lbn, boxed, m, nd_sbp))
            self.boxing_steps += 1
        return boxed

    def annotate(self, job: job_pb2.Job) -> job_pb2.Job:
        """Record the boxing ops, and each op's placement and SBP signature, in ``job`` (Note [The parallel view
        of a job])."""
        groups = {}
        view = job.job_parallel_view_conf.op_name2nd_sbp_signature_conf
        for name, (placement, bns) in {**self.parallel, **self._insert_boxing_ops(job)}.items():
            group = groups.get(placement)
            if group is None:
                group = groups[placement] = job.placement.placement_group.add()
                placement.to_parallel_conf(group.parallel_conf)
            group.op_set.op_name.append(name)
            for bn, nd in bns.items():
                S.nd_sbp_to_proto(nd, view[name].bn_in_op2nd_sbp[bn])
        return job

    def _insert_boxing_ops(self, job: job_pb2.Job) -> dict:
        """A ``hierarchical_parallel_cast`` op in ``job`` per boxing step, before its first consumer, which reads
        it; returns their parallel view."""
        reads = {step[1].name: step[3] for step in self.steps if step[0] == "op" and step[1].op_type != _CAST}
        reads.update((step[3].name, [step[1], step[2]]) for step in self.steps if step[0] == "assign")
        read = {lbn for ins in reads.values() for lbn in ins}  # (a boxing a cast op reads is that op)
        taken = {conf.name for conf in job.net.op}
        casts, view, k = {}, {}, 0  # boxed blob -> its cast op's conf and output
        for step in self.steps:
            if step[0] == "box" and step[2] in read:
                while f"System-Boxing-{k}" in taken:
                    k += 1
                name = f"System-Boxing-{k}"
                taken.add(name)
                casts[step[2]] = _cast_conf(name, step)
                view[name] = (step[3].placement, {"in_0": step[3].nd_sbp, "out_0": step[4]})
        if not casts:
            return view
        ops = list(job.net.op)
        del job.net.op[:]
        for conf in ops:
            ins = reads.get(conf.name, ())
            if any(lbn in casts for lbn in ins):
                for lbn in dict.fromkeys(ins):
                    if lbn in casts and casts[lbn][0] is not None:
                        job.net.op.add().CopyFrom(casts[lbn][0])
                        casts[lbn] = (None, casts[lbn][1])
                conf = _read_casts(conf, [casts[lbn][1] if lbn in casts else lbn for lbn in ins])
            job.net.op.add().CopyFrom(conf)
        return view

    @property
    def boxing_lines(self) -> list:
        """One line per boxing step of the plan."""
        return [_box_text(step) for step in self.steps if step[0] == "box"]

    @property
    def num_steps(self) -> int:
        """The kernel and boxing steps of a run."""
        return sum(1 for step in self.steps if step[0] in ("op", "box"))

    @property
    def source(self) -> str:
        """The plan, one step a line (what ``nn.Graph.plan_source`` shows)."""
        lines = []
        for step in self.steps:
            if step[0] == "op":
                lines.append(f"{step[1].name}: {self.signatures[step[1].name]}")
            elif step[0] == "box":
                lines.append(_box_text(step))
            else:
                lines.append(f"{step[0]} {step[1]}")
        return "\n".join(lines)

    # ---- running ------------------------------------------------------------------------------
    def run(self, inputs) -> tuple:
        """This rank's pieces of the outputs for the eager global ``inputs``."""
        with self._lock:
            try:
                return self._run(inputs)
            except Exception as e:
                e.add_note(f"(while running nn.Graph '{self.graph_name}' on global tensors)")
                raise

    def _run(self, inputs) -> tuple:
        arrays, outs, feed = {}, [], iter(inputs)
        for step in self.steps:
            kind = step[0]
            if kind == "op":
                self._run_op(step, arrays)
            elif kind == "box":
                _, src, dst, m, nd = step
                arrays[dst] = box_same_placement(arrays[src], m.shape, m.placement, m.coord, m.nd_sbp, nd)
            elif kind == "input":
                arrays[step[1]] = next(feed)._array
            elif kind == "variable":
                arrays[step[1]] = step[2]._array
            elif kind == "assign":
                var = self.variables[step[1].partition("/")[0]]
                var._array[...] = arrays[step[2]]
                version_counter(var).version += 1
            else:
                outs.append(arrays[step[1]])
        return tuple(outs)

    def _run_op(self, step, arrays) -> None:
        _, node, plan, ins = step
        if plan.in_local_metas and plan.in_local_metas[0] is None:  # this rank is outside the op's placement
            arrays.update(dict.fromkeys(node.outputs))
            return
        local = [_make(arrays[lbn], lm) for lbn, lm in zip(ins, plan.in_local_metas)]
        ks = plan.placement.device.key_set
        kernel_in = local if plan.prepare is None else plan.prepare(plan, local)
        if plan.random:
            gen = self.generators.get(node.name)  # Note [Generators in a graph]
            with using_generator(shared_generator(gen, plan.placement, plan.stream)):
                res = redispatch(node.expr, ks, kernel_in, plan.attrs)
        else:
            res = redispatch(node.expr, ks, kernel_in, plan.attrs)
        if plan.finish is not None:
            plan.finish(plan, local, res)
        for lbn, t in zip(node.outputs, res):
            arrays[lbn] = t._array
