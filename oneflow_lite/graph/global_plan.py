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
"""

from __future__ import annotations

import threading

from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.generator import using_generator
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET, make_global_meta
from oneflow_lite.framework.tensor import Tensor, version_counter
from oneflow_lite.interpreters.boxing import box_same_placement
from oneflow_lite.interpreters.eager_global import plan_call, plan_source, shared_generator
from oneflow_lite.interpreters.op_interp_util import redispatch

_make = Tensor._make


def is_global_job(variables: dict, in_metas) -> bool:
    """Whether a job runs on global tensors: a global input or variable."""
    return any(m.key_set & GLOBAL_KEY_SET for m in in_metas) or any(
        t._key_set & GLOBAL_KEY_SET for t in variables.values())


class GlobalJobPlan:
    """The plan of one input signature of a graph on global tensors (Note [Graphs on global tensors]);
    ``run(inputs)`` returns this rank's pieces of the outputs, ``out_metas`` their global metas."""

    def __init__(self, ir, variables: dict, in_metas):
        self.graph_name = ir.name
        self.variables = variables
        self.reports = []
        self.signatures = {}  # op name -> its SBP signature (the job's parallel view)
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
                raise
        self.reports.append(f"global plan: {len(self.signatures)} op(s) with SBP signatures, "
                            f"{self.boxing_steps} boxing step(s)")

    def _add(self, node, inputs) -> None:
        kind = node.kind
        if kind == "input":
            self._metas[node.outputs[0]] = self._global(next(inputs), f"input '{node.name}'")
            self.steps.append(("input", node.outputs[0]))
        elif kind == "variable":
            t = self.variables[node.name]
            self._metas[node.outputs[0]] = self._global(t._meta, f"variable '{node.name}'")
            self.steps.append(("variable", node.outputs[0], t))
        elif kind == "user":
            self._add_user(node)
        elif kind == "assign":
            ref, value = node.inputs
            value = self._box_to(value, self._metas[ref].nd_sbp)
            self.steps.append(("assign", ref, value))
            self._metas[node.outputs[0]] = self._metas[ref]
        else:  # output
            self.steps.append(("output", node.inputs[0]))
            self.out_metas.append(self._metas[node.inputs[0]])

    def _global(self, meta, what):
        if meta.key_set & GLOBAL_KEY_SET or meta.ndim == 0:
            return meta
        raise RuntimeError(f"nn.Graph '{self.graph_name}': {what} is a local tensor of shape {list(meta.shape)} in a "
                           f"graph on global tensors; make it global with to_global(placement, sbp)")

    def _add_user(self, node) -> None:
        if not node.inputs:  # a source op: broadcast on the graph's placement
            plan = plan_source(node.expr, self._placement(node))
            self.signatures[node.name] = repr(plan)
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
                lines.append(f"box {step[1]} {S.format_nd_sbp(step[3].nd_sbp)} -> {S.format_nd_sbp(step[4])}")
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

    @staticmethod
    def _run_op(step, arrays) -> None:
        _, node, plan, ins = step
        local = [_make(arrays[lbn], lm) for lbn, lm in zip(ins, plan.in_local_metas)]
        ks = plan.placement.device.key_set
        if plan.random:
            with using_generator(shared_generator(None, plan.placement)):
                res = redispatch(node.expr, ks, local, plan.attrs)
        else:
            res = redispatch(node.expr, ks, local, plan.attrs)
        if plan.finish is not None:
            plan.finish(plan, local, res)
        for lbn, t in zip(node.outputs, res):
            arrays[lbn] = t._array
