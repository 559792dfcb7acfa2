"""A parsed, validated, inferred ``Job``: what the passes rewrite and the compiler lowers.

``JobIR.parse(job)`` reads every ``OperatorConf``, rebuilds each user op's
``UserOpExpr`` from its ``UserOpConf`` (so a job loaded from a file needs no
Python model code), infers every blob's meta with the ops' own infer functions,
and checks that the job is well formed: unique names, known devices and dtypes,
every input blob produced by an earlier op, interface shapes matching the
inferred ones. ``to_job()`` writes the (rewritten) ops back as a ``Job``.
"""

from __future__ import annotations

import re

from oneflow_lite._proto import job_pb2, op_conf_pb2
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework import attr as attr_mod
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor_meta import make_meta

INTERFACE_KINDS = {"input_conf": "input", "variable_conf": "variable", "output_conf": "output"}
_FREE_EAGER = re.compile(r"(^|-)FreeEagerTensor-\d+$")


class JobError(RuntimeError):
    """A job is malformed (e.g. a corrupt or hand-edited saved graph)."""


class Node:
    """One op of a job: its kind (input, variable, output, user, assign), blob names and, for user
    ops, the rebuilt op expr, its inference result and the chosen kernel."""

    __slots__ = ("conf", "device", "expr", "inputs", "kernel", "kind", "name", "op_type", "outputs", "res")

    def __init__(self, name, kind, conf, op_type, inputs, outputs, device):
        self.name = name
        self.kind = kind
        self.conf = conf
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.device = device
        self.expr = None
        self.res = None
        self.kernel = None

    @property
    def trainable(self) -> bool:
        return self.kind == "variable" and self.conf.variable_conf.trainable

    def __repr__(self):
        return f"<Node {self.name} ({self.op_type})>"


def is_free_eager_name(name: str) -> bool:
    """Whether a variable op holds a free eager tensor (``<scope>-FreeEagerTensor-<k>``), not a parameter or buffer."""
    return _FREE_EAGER.search(name) is not None


# ---- stateful ops ---------------------------------------------------------------------------------
# Note [Stateful ops]
# An op whose kernel draws from a random generator must run exactly as often as in eager
# execution (so later draws match) and never be merged or folded: dead-code elimination
# keeps it, CSE and constant folding skip it. An op type is stateful when it is marked with
# mark_stateful(), or when one of its kernels refers to ``current_generator`` (the documented
# way kernels draw random numbers, see framework/generator.py), directly or through a
# function of its own module.
_stateful_marks: set = set()
_stateful_cache: dict = {}


def mark_stateful(op_type: str) -> None:
    """Declare ``op_type`` stateful (Note [Stateful ops])."""
    _stateful_marks.add(op_type)


def _refers_to_generator(fn, seen) -> bool:
    code = getattr(fn, "__code__", None)
    if code is None or fn in seen:
        return False
    seen.add(fn)
    codes = [code]
    while codes:
        c = codes.pop()
        if "current_generator" in c.co_names:
            return True
        codes.extend(k for k in c.co_consts if hasattr(k, "co_names"))
        module_globals = getattr(fn, "__globals__", {})
        for name in c.co_names:
            g = module_globals.get(name)
            if (callable(g) and getattr(g, "__module__", None) == getattr(fn, "__module__", None)
                    and _refers_to_generator(g, seen)):
                return True
    return False


def is_stateful(op_type: str) -> bool:
    if op_type in _stateful_marks:
        return True
    entry = DISPATCHER.entry(op_type)
    key = (op_type, entry.kernel_gen)
    found = _stateful_cache.get(key)
    if found is None:
        seen = set()
        found = any(_refers_to_generator(reg.fn, seen) for regs in entry.kernels.values() for reg in regs)
        _stateful_cache[key] = found
    return found


# ---- parsing --------------------------------------------------------------------------------------
def expr_from_conf(conf: op_conf_pb2.OperatorConf):
    """The ``UserOpExpr`` of a user op conf (named as the conf)."""
    uc = conf.user_conf
    b = OpBuilder(uc.op_type_name, conf.name)
    for arg in uc.input_order:
        b.input(arg, len(uc.input[arg].s))
    for arg in uc.output_order:
        b.output(arg, len(uc.output[arg].s))
    for name, av in sorted(uc.attr.items()):
        b.attr(name, attr_mod.from_proto(av)[1])
    return b.build()


def _user_blobs(conf, side) -> list:
    uc = conf.user_conf
    order = uc.input_order if side == "input" else uc.output_order
    blobs = uc.input if side == "input" else uc.output
    if sorted(order) != sorted(blobs.keys()):
        raise JobError(f"op '{conf.name}': {side}_order {list(order)} does not match its {side}s {sorted(blobs)}")
    return [lbn for arg in order for lbn in blobs[arg].s]


def _interface_meta(conf, body, device):
    try:
        dtype = dtypes.from_proto(body.data_type)
    except ValueError as e:
        raise JobError(f"op '{conf.name}': {e}") from None
    if any(d < 0 for d in body.shape.dim):
        raise JobError(f"op '{conf.name}': negative dimension in shape {list(body.shape.dim)}")
    return make_meta(tuple(body.shape.dim), dtype, device)


class JobIR:
    """The ops of a job in order, with every blob's meta (see the module docstring)."""

    def __init__(self, job_conf, nodes, metas):
        self.job_conf = job_conf
        self.nodes: list[Node] = nodes
        self.metas: dict = metas
        self.folded: dict = {}  # variable op name -> array, for constants made by constant folding
        self.fold_sources: set = set()  # free eager variables whose values were folded into constants

    @property
    def name(self) -> str:
        return self.job_conf.job_name

    @classmethod
    def parse(cls, job: job_pb2.Job) -> JobIR:
        graph = job.job_conf.job_name
        nodes, metas, names = [], {}, set()
        for conf in job.net.op:
            try:
                node = cls._parse_op(conf, metas)
            except JobError as e:
                raise JobError(f"nn.Graph '{graph}': the job is malformed: {e}") from None
            except Exception as e:
                e.add_note(f"(while reading op '{conf.name}' of the job of nn.Graph '{graph}')")
                raise
            if node.name in names:
                raise JobError(f"nn.Graph '{graph}': the job is malformed: op name '{node.name}' appears twice")
            names.add(node.name)
            nodes.append(node)
        return cls(job.job_conf, nodes, metas)

    @staticmethod
    def _parse_op(conf, metas) -> Node:
        if not conf.name or "/" in conf.name:
            raise JobError(f"bad op name {conf.name!r}")
        kind_field = conf.WhichOneof("op_type")
        if kind_field is None:
            raise JobError(f"op '{conf.name}' has no op type set")
        try:
            device = Device(conf.device_tag)
        except (RuntimeError, TypeError, ValueError) as e:
            raise JobError(f"op '{conf.name}': bad device_tag {conf.device_tag!r} ({e})") from None

        def need(lbn):
            if lbn not in metas:
                raise JobError(f"op '{conf.name}' reads blob '{lbn}', which no earlier op produces")
            return lbn

        if kind_field == "user_conf":
            op_type = conf.user_conf.op_type_name
            inputs = [need(lbn) for lbn in _user_blobs(conf, "input")]
            outputs = _user_blobs(conf, "output")
            kind = "assign" if op_type == "assign" else "user"
            node = Node(conf.name, kind, conf, op_type, inputs, outputs, device)
            expr = node.expr = expr_from_conf(conf)
            if [f"{conf.name}/{obn}" for obn in expr.indexed_obns] != outputs:
                raise JobError(f"op '{conf.name}': output blob names {outputs} must be '<op name>/<output>_<i>'")
            res = node.res = expr.infer(tuple([metas[lbn] for lbn in inputs]), None)
            if res.device.type != conf.device_tag:
                raise JobError(f"op '{conf.name}' has device_tag '{conf.device_tag}' but runs on '{res.device}'")
            if kind == "assign":
                ref = inputs[0]
                if not ref.endswith("/out") or ref.count("/") != 1:
                    raise JobError(f"assign op '{conf.name}': ref '{ref}' must be the blob of a variable or input")
            for lbn, m in zip(outputs, res.out_metas):
                metas[lbn] = m
            return node
        kind = INTERFACE_KINDS[kind_field]
        body = getattr(conf, kind_field)
        meta = _interface_meta(conf, body, device)
        if kind == "output":
            src = need(getattr(body, "in"))
            if metas[src] is not meta:
                m = metas[src]
                raise JobError(f"output op '{conf.name}' declares {meta.dtype.name}{list(meta.shape)} but its input "
                               f"'{src}' is {m.dtype.name}{list(m.shape)} on {m.device}")
            return Node(conf.name, kind, conf, kind, [src], [], device)
        if not body.out:
            raise JobError(f"op '{conf.name}' has an empty 'out' name")
        lbn = f"{conf.name}/{body.out}"
        metas[lbn] = meta
        return Node(conf.name, kind, conf, kind, [], [lbn], device)

    # ---- queries and rewrites -----------------------------------------------------------------
    def nodes_of(self, kind: str) -> list[Node]:
        return [n for n in self.nodes if n.kind == kind]

    def producers(self) -> dict:
        return {lbn: n for n in self.nodes for lbn in n.outputs}

    def consumers(self) -> dict:
        """lbn -> the nodes reading it (a node once per input position)."""
        uses = {}
        for n in self.nodes:
            for lbn in n.inputs:
                uses.setdefault(lbn, []).append(n)
        return uses

    def assign_targets(self) -> set:
        """Names of the variables and inputs some assign writes."""
        return {n.inputs[0].partition("/")[0] for n in self.nodes if n.kind == "assign"}

    def constant_variables(self) -> set:
        """Variables whose value is a constant of the graph: free eager tensors that are not trainable and
        never written by the graph (parameters and buffers never are)."""
        written = self.assign_targets()
        return {n.name for n in self.nodes if n.kind == "variable" and not n.trainable
                and n.name not in written and (is_free_eager_name(n.name) or n.name in self.folded)}

    def replace_uses(self, old: str, new: str) -> None:
        for n in self.nodes:
            if old in n.inputs:
                n.inputs = [new if lbn == old else lbn for lbn in n.inputs]

    def remove(self, dead: set) -> None:
        self.nodes = [n for n in self.nodes if n.name not in dead]

    def to_job(self) -> job_pb2.Job:
        """The ops as a ``Job`` (inputs written back into the confs)."""
        job = job_pb2.Job()
        job.job_conf.CopyFrom(self.job_conf)
        for n in self.nodes:
            conf = job.net.op.add()
            conf.CopyFrom(n.conf)
            if n.kind in ("user", "assign"):
                uc = conf.user_conf
                it = iter(n.inputs)
                for arg in uc.input_order:
                    blobs = uc.input[arg].s
                    for i in range(len(blobs)):
                        blobs[i] = next(it)
            elif n.kind == "output":
                setattr(conf.output_conf, "in", n.inputs[0])
        return job

    def variable_node(self, name: str, meta, out: str = "out") -> Node:
        """A new (not yet inserted) non-trainable variable node."""
        conf = op_conf_pb2.OperatorConf(name=name, device_tag=meta.device.type)
        var = conf.variable_conf
        var.out = out
        var.shape.dim.extend(meta.shape)
        var.data_type = meta.dtype.proto
        lbn = f"{name}/{out}"
        self.metas[lbn] = meta
        return Node(name, "variable", conf, "variable", [], [lbn], meta.device)
