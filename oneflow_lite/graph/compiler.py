"""The graph compiler: a (passed) ``JobIR`` -> a ``Plan``, a straight-line Python function.

Note [Plans]
Everything that eager execution decides per call is decided here once: each op's
kernel is chosen (``DISPATCHER.select_kernel``) and its ``InferResult`` (attrs,
output metas, device) becomes the kernel's ``ctx``; no key set is computed and no
shape inferred per run. The plan is generated Python source, as torch.fx does:
one statement per kernel call, variables for blobs, so a run costs one function
call plus the kernels. It runs in three sections: the ops in job order; the
outputs, copied when they may share memory with an input, a variable, a
constant or a reused buffer (outputs always own their memory, as OneFlow's);
then the ``assign``s, which write the new values of variables and inputs
updated in place into their eager tensors' buffers (unless the op computing a
value wrote it there already, Note [Assigns written in place]) and bump their
versions.
The first run of a plan checks every kernel result against the inferred meta
(as the eager interpreter does on every call); later runs trust them. A plan
with constants folded from free eager tensors checks their versions first: when
one was written in place since compiling, ``run`` raises ``StalePlan`` and the
graph recompiles.

Note [Fusion and the memory plan]
Elementwise ops with an out-variant (out_variants.py) can write into a buffer
instead of allocating their result. *Fusion* chains them: an op whose input is
the previous op's result, read by no one else and of the same shape and dtype
as its own result, writes into that same buffer, so a chain of elementwise ops
uses one buffer (``np.add(x, y, out=b); np.maximum(b, 0, out=b); ...``). The
*memory plan* frees every blob after its last use and gives each buffer-writing
op (or fused chain) a buffer allocated once, at compile time, reusing a buffer
whose previous value is dead (liveness by step). A kernel result may be a view
of its inputs (reshape, transpose, ...), so a buffer stays busy while any blob
that may alias it is alive, and a buffer whose value may reach an output is
allocated per run instead (outputs own their memory). Until the first run every
kernel result is assumed to alias its inputs; the first run records which
results do (``np.may_share_memory``) and the memory is planned again with that
knowledge. Whether a kernel returns a view depends on its inputs' shapes and
layouts, which are fixed for every blob but the graph's inputs (a caller may
pass a transposed tensor of the same shape), so aliasing of graph inputs is
always assumed. The plan reports its
estimated peak bytes with and without the memory plan: every op result counted
as a new buffer, alive from its op to its last use (to the end of the run
without the plan).
"""

from __future__ import annotations

import threading

import numpy as np

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework.tensor import VersionCounter
from oneflow_lite.graph.ir import JobIR
from oneflow_lite.graph.out_variants import out_writer

_ndarray = np.ndarray


def _bump(t) -> None:
    vc = t._vc
    if vc is None:
        t._vc = VersionCounter(1)
    else:
        vc.version += 1


class StalePlan(Exception):
    """A tensor folded into a plan's constants was written in place since the plan was compiled."""


class _Group:
    """Ops writing into one buffer: a fused chain (or one op under the memory plan). ``target``: the
    variable blob its last op writes into instead (Note [Assigns written in place]); ``borrow``: the
    input blob whose buffer it writes into (Note [Borrowed buffers]); ``scratch``: the input blob whose
    buffer its writer may overwrite (Note [Writers that consume an input])."""

    __slots__ = ("borrow", "buffer", "index", "members", "meta", "name", "pooled", "scratch", "target")

    def __init__(self, first, meta, index):
        self.members = [first]
        self.meta = meta
        self.index = index
        self.name = f"g{index}"
        self.pooled = False
        self.buffer = None
        self.target = None
        self.borrow = None  # an input blob whose dead per-run buffer the group writes into
        self.scratch = None  # an input blob whose dead per-run buffer the group's writer may overwrite


class Plan:
    """A compiled graph for one input signature (Note [Plans]); ``run(inputs)`` returns the output arrays."""

    def __init__(self, ir: JobIR, variables: dict, fuse: bool, memory_plan: bool):
        self.graph_name = ir.name
        self.ir = ir
        self.variables = variables
        self.input_names = [n.name for n in ir.nodes if n.kind == "input"]
        outputs = [n for n in ir.nodes if n.kind == "output"]
        self.output_names = [n.name for n in outputs]
        self.out_metas = [ir.metas[n.inputs[0]] for n in outputs]
        self._lock = threading.Lock()
        self.reports = []
        for n in ir.nodes:
            if not n.device.device_type.has_storage:
                raise RuntimeError(f"nn.Graph '{ir.name}': op '{n.name}' runs on '{n.device}', which holds no data; "
                                   f"a graph runs on devices with storage (e.g. cpu)")
        self._flags = (fuse, memory_plan)
        self._no_alias = None  # ops seen not to return views of their inputs (Note [Fusion and the memory plan])
        self._aliasing = {}
        self._lower(fuse, memory_plan)
        self._fold_sources = [(variables[name], variables[name]._version) for name in sorted(ir.fold_sources)]
        self._convert = set()
        self._checked = self._generate(checked=True)
        self._fast = None

    # ---- lowering -----------------------------------------------------------------------------
    def _lower(self, fuse, memory_plan):
        ir, metas = self.ir, self.ir.metas
        self.reports = []
        no_alias = self._no_alias or ()
        uses = ir.consumers()
        producers = ir.producers()
        ns = self._ns = {"_empty": np.empty, "_copyto": np.copyto, "_bump": _bump, "_asarray": np.asarray}
        # kernels and out-variant writers
        writers = {}
        for n in ir.nodes:
            if n.kind != "user":
                continue
            in_dtypes = tuple([metas[lbn].dtype for lbn in n.inputs])
            if (fuse or memory_plan) and n.device.type == "cpu" and len(n.outputs) == 1:
                w = out_writer(n.op_type, n.res, in_dtypes)
                if w is not None:
                    writers[n.name] = w
            n.kernel = DISPATCHER.select_kernel(n.expr, DISPATCHER.entry(n.op_type), n.res.device, in_dtypes,
                                                tuple([m.dtype for m in n.res.out_metas]))
        # groups (fusion)
        group_of, groups = {}, []
        for n in ir.nodes:
            if n.name not in writers:
                continue
            out_meta = metas[n.outputs[0]]
            g = None
            if fuse:
                for lbn in n.inputs:
                    pg = group_of.get(producers[lbn].name)
                    if (pg is not None and pg.members[-1] is producers[lbn] and metas[lbn] is out_meta
                            and all(u is n for u in uses[lbn])):
                        g = pg
                        break
            if g is None:
                g = _Group(n, out_meta, len(groups))
                groups.append(g)
            else:
                g.members.append(n)
            group_of[n.name] = g
        if not memory_plan:  # without the memory plan only fused chains write into buffers
            groups = [g for g in groups if len(g.members) > 1]
            group_of = {m.name: g for g in groups for m in g.members}
        self._groups, self._group_of, self._writers = groups, group_of, writers
        fused = [g for g in groups if len(g.members) > 1]
        if fuse:
            n_ops = sum(len(g.members) for g in fused)
            self.reports.append(f"elementwise fusion: {len(fused)} chain(s) of {n_ops} op(s) into {len(fused)} "
                                f"buffer(s)" if fused else "elementwise fusion: no chain to fuse")
        # statements: (kind, node or group, lbns read)
        stmts = []
        for n in ir.nodes:
            if n.kind in ("input", "variable"):
                stmts.append((n.kind, n, ()))
            elif n.kind == "user":
                stmts.append(("op", n, tuple(n.inputs)))
        outs = [n for n in ir.nodes if n.kind == "output"]
        assigns = [n for n in ir.nodes if n.kind == "assign"]
        stmts.extend(("output", n, tuple(n.inputs)) for n in outs)
        stmts.extend(("assign", n, tuple(n.inputs)) for n in assigns)
        self._stmts = stmts
        self.num_steps = sum(1 for k, n, _ in stmts if k == "op" and (n.name not in group_of or
                                                                     group_of[n.name].members[0] is n))
        # alias roots: what buffers each blob may share memory with
        roots, size, defined, persistent = {}, {}, {}, set()
        input_roots = {n.outputs[0] for n in ir.nodes if n.kind == "input"}
        for i, (kind, n, reads) in enumerate(stmts):
            if kind in ("input", "variable"):
                roots[n.outputs[0]] = {n.outputs[0]}
                persistent.add(n.outputs[0])
            elif kind == "op":
                g = group_of.get(n.name)
                if g is not None:
                    roots[n.outputs[0]] = {g.name}
                    if g.members[0] is n:
                        size[g.name] = metas[n.outputs[0]].numel * metas[n.outputs[0]].dtype.itemsize
                        defined[g.name] = i
                    continue
                inherited = set().union(*[roots[lbn] for lbn in reads]) if reads else set()
                if n.name in no_alias:  # seen not to alias: only graph inputs may vary in layout between runs
                    inherited = {r for r in inherited if r in input_roots}
                for lbn in n.outputs:
                    m = metas[lbn]
                    size[lbn] = m.numel * m.dtype.itemsize
                    defined[lbn] = i
                    roots[lbn] = inherited | {lbn}
        self._roots, self._persistent = roots, persistent
        self.peak_bytes_unplanned = sum(size.values())  # every op result a new buffer until the end of the run
        last, readers = {}, {}
        for i, (kind, n, reads) in enumerate(stmts):
            for lbn in reads:
                for r in roots[lbn]:
                    last[r] = i
                    readers.setdefault(r, []).append(i)
        end = len(stmts)
        to_output = set().union(*[roots[n.inputs[0]] for n in outs]) if outs else set()
        for r in to_output:
            last[r] = end
        self._direct = self._direct_assigns(stmts, group_of, producers, uses, readers)
        for g in groups:
            if g.target is not None and len(g.members) == 1:  # writes the variable's buffer: no buffer of its own
                size.pop(g.name, None)
        borrowed = consumed = 0
        if memory_plan:
            borrowed = self._borrow(stmts, groups, group_of, producers, roots, last, size, to_output, input_roots)
            consumed = self._consume(stmts, groups, group_of, producers, roots, last, to_output, input_roots)
        # the memory plan: pooled buffers by liveness
        reused = 0
        if memory_plan:
            free = {}  # (shape, dtype) -> [[buffer index, busy until], ...]
            buffers = []
            for g in groups:
                if g.name in to_output or g.borrow is not None or (g.target is not None and len(g.members) == 1):
                    continue
                key = (g.meta.shape, g.meta.np_dtype)
                start, stop = defined[g.name], last.get(g.name, defined[g.name])
                slot = next((s for s in free.get(key, ()) if s[1] < start), None)
                if slot is None:
                    slot = [len(buffers), stop]
                    buffers.append(np.empty(g.meta.shape, g.meta.np_dtype))
                    free.setdefault(key, []).append(slot)
                else:
                    reused += 1
                    slot[1] = stop
                g.pooled = True
                g.buffer = slot[0]
                persistent.add(g.name)
            for k, b in enumerate(buffers):
                ns[f"B{k}"] = b
            self._buffers = buffers
        else:
            self._buffers = []
        # peak bytes: pooled buffers plus the live per-run results at each statement
        pooled_bytes = sum(b.nbytes for b in self._buffers)
        pooled = {g.name for g in groups if g.pooled}
        fresh = [r for r in size if r not in pooled]
        if memory_plan:
            delta = [0] * (end + 2)
            for r in fresh:
                delta[defined[r]] += size[r]
                delta[max(last.get(r, defined[r]), defined[r]) + 1] -= size[r]
            live = peak = 0
            for d in delta:
                live += d
                peak = max(peak, live)
            self.peak_bytes = pooled_bytes + peak
            self.reports.append(
                f"memory plan: {len(self._buffers)} buffer(s) allocated once for {len([g for g in groups if g.pooled])} "
                f"op result(s) ({reused} reuse(s) by liveness), blobs freed after their last use; estimated peak "
                f"{self.peak_bytes} bytes ({self.peak_bytes_unplanned} without the plan)")
            if borrowed:
                self.reports.append(f"memory plan: {borrowed} op result(s) written into the buffer of an input "
                                    f"that dies there")
            if consumed:
                self.reports.append(f"memory plan: {consumed} op(s) computing in the buffer of an input that dies "
                                    f"there")
        else:
            self.peak_bytes = self.peak_bytes_unplanned
        self._memory_plan = memory_plan
        last_read = {}
        for i, (kind, n, reads) in enumerate(stmts):
            for lbn in reads:
                last_read[lbn] = i
        self._last_read = last_read
        self._by_name = {n.name: n for n in ir.nodes}

    # Note [Borrowed buffers]
    # Under the memory plan, a group (a fused chain or one writer op) whose first op reads a blob of its
    # own shape and dtype for the last time may write into that blob's buffer instead of a buffer of its
    # own: the result of an SGD step's ``grad * lr`` goes into the gradient's buffer. The blob must be a
    # kernel's per-run result of at least BORROW_MIN_BYTES (smaller buffers are pooled, which costs
    # nothing per run) that nothing reads afterwards, directly or through a view, and that owns its
    # memory: when it may alias a graph input (aliasing of graph inputs is always assumed, Note [Fusion
    # and the memory plan]), the plan checks at run time that the array owns its memory, is writeable and
    # is not an input's array, and allocates a buffer otherwise.
    BORROW_MIN_BYTES = 64 * 1024

    def _borrow(self, stmts, groups, group_of, producers, roots, last, size, to_output, input_roots) -> int:
        """Mark the groups that write into a dead input's buffer (Note [Borrowed buffers]); their count."""
        metas = self.ir.metas
        at = {n.name: i for i, (kind, n, _) in enumerate(stmts) if kind == "op"}
        borrowed = 0
        for g in groups:
            first = g.members[0]
            if (g.target is not None and len(g.members) == 1) or g.meta.numel * g.meta.dtype.itemsize < \
                    self.BORROW_MIN_BYTES:
                continue
            i = at[first.name]
            for lbn in first.inputs:
                p = producers[lbn]
                if (p.kind == "user" and p.name not in group_of and metas[lbn] is g.meta and last.get(lbn) == i
                        and lbn not in to_output and roots[lbn] - {lbn} <= input_roots):
                    g.borrow = lbn
                    borrowed += 1
                    last[lbn] = max(last.get(g.name, i), i)  # the buffer now lives as long as the group's
                    size.pop(g.name, None)
                    break
        return borrowed

    # Note [Writers that consume an input]
    # An out-variant writer may carry ``consumes = (k, writer_k)``: ``writer_k`` writes the same result but
    # may use the buffer of its input k as scratch (``sgd_update`` computes ``lr * diff`` in the gradient's
    # buffer, then ``model - that`` into the parameter's: no temporary, as a hand-written ``p -= g * lr``
    # gets from Note [Borrowed buffers]). Under the memory plan a one-op group uses it when input k dies
    # there: a kernel's per-run result, read by nothing afterwards (directly or through a view), not an
    # output, and aliasing nothing but graph inputs, which the plan then checks at run time as for a
    # borrowed buffer (owned, writeable, not an input's array), calling the plain writer otherwise.
    def _consume(self, stmts, groups, group_of, producers, roots, last, to_output, input_roots) -> int:
        """Mark the groups whose writer overwrites a dead input (Note [Writers that consume an input]); their
        count."""
        at = {n.name: i for i, (kind, n, _) in enumerate(stmts) if kind == "op"}
        consumed = 0
        for g in groups:
            first = g.members[0]
            consumes = getattr(self._writers[first.name], "consumes", None)
            if consumes is None or len(g.members) != 1 or g.borrow is not None or consumes[0] >= len(first.inputs):
                continue
            lbn = first.inputs[consumes[0]]
            p = producers[lbn]
            if (p.kind == "user" and p.name not in group_of and last.get(lbn) == at[first.name]
                    and first.inputs.count(lbn) == 1 and lbn not in to_output and roots[lbn] - {lbn} <= input_roots):
                g.scratch = lbn
                consumed += 1
        return consumed

    # Note [Assigns written in place]
    # An assign writes a variable's new value into the eager tensor's buffer at the end of the run,
    # a copy of the whole value. When the value is computed by an out-variant writer (the last op of
    # its group) and read by nothing but the assign, and no later statement reads the variable's old
    # value (or any blob that may alias it), that op writes the variable's buffer directly: the old
    # value is dead by then, a writer may read and write the same buffer (NumPy ufuncs handle the
    # overlap), and the copy disappears (an SGD step ``p -= lr * g`` becomes one ufunc into ``p``).
    # Only the version bump stays at the end.
    def _direct_assigns(self, stmts, group_of, producers, uses, readers) -> set:
        """The value blobs of the assigns written in place; marks their groups' ``target``."""
        direct = set()
        at = {n.name: i for i, (kind, n, _) in enumerate(stmts) if kind == "op"}
        for j, (kind, n, _) in enumerate(stmts):
            if kind != "assign":
                continue
            ref, value = n.inputs
            p = producers[value]
            g = group_of.get(p.name)
            var = producers[ref]
            if (g is None or g.members[-1] is not p or var.kind != "variable" or var.name in self.ir.folded
                    or uses.get(value) != [n] or g.target is not None):
                continue
            i = at[p.name]
            if all(k <= i or k == j for k in readers.get(ref, ())):
                g.target = ref
                direct.add(value)
        if direct:
            self.reports.append(f"in-place assigns: {len(direct)} of {sum(k == 'assign' for k, _, _ in stmts)} "
                                f"variable update(s) written straight into the variable's buffer")
        return direct

    # ---- code generation ----------------------------------------------------------------------
    def _generate(self, checked: bool):
        ir, metas, ns = self.ir, self.ir.metas, self._ns
        group_of, roots, persistent = self._group_of, self._roots, self._persistent
        names = {}
        params = []
        lines = []
        counter = [0]

        def fresh(prefix):
            counter[0] += 1
            return f"{prefix}{counter[0]}"

        for i, (kind, n, reads) in enumerate(self._stmts):
            if kind == "input":
                x = f"X{len(params)}"
                params.append(x)
                v = names[n.outputs[0]] = fresh("x")
                lines.append(f"{v} = {x}._array")
            elif kind == "variable":
                v = names[n.outputs[0]] = fresh("p")
                const = ir.folded.get(n.name)
                if const is not None:
                    ns[f"C_{v}"] = const
                    lines.append(f"{v} = C_{v}")
                else:
                    t = self.variables[n.name]
                    ns[f"T_{v}"], ns[f"M_{v}"] = t, metas[n.outputs[0]]
                    lines.append(f"if T_{v}._meta is not M_{v}: _changed({n.name!r}, T_{v}, M_{v})")
                    lines.append(f"{v} = T_{v}._array")
            elif kind == "op":
                args = ", ".join(names[lbn] for lbn in reads)
                g = group_of.get(n.name)
                if g is not None:
                    w = f"W_{g.name}_{len(lines)}"
                    ns[w] = self._writers[n.name]
                    last_member = g.members[-1] is n
                    into = names[g.target] if g.target is not None and last_member else g.name
                    if g.members[0] is n and not (last_member and g.target is not None):
                        if g.borrow is not None:  # Note [Borrowed buffers]
                            v = names[g.borrow]
                            owned = self._owned(v, [names[r] for r in sorted(roots[g.borrow] - {g.borrow})])
                            if owned:
                                ns[f"S_{g.name}"], ns[f"D_{g.name}"] = tuple(g.meta.shape), g.meta.np_dtype
                                lines.append(f"{g.name} = {v} if {owned} else _empty(S_{g.name}, D_{g.name})")
                            else:
                                lines.append(f"{g.name} = {v}  # a dead input's buffer")
                        elif g.pooled:
                            lines.append(f"{g.name} = B{g.buffer}")
                        else:
                            ns[f"S_{g.name}"], ns[f"D_{g.name}"] = tuple(g.meta.shape), g.meta.np_dtype
                            lines.append(f"{g.name} = _empty(S_{g.name}, D_{g.name})")
                    if g.scratch is not None:  # Note [Writers that consume an input]
                        wc = f"WC_{g.name}_{len(lines)}"
                        ns[wc] = self._writers[n.name].consumes[1]
                        v = names[g.scratch]
                        owned = self._owned(v, [names[r] for r in sorted(roots[g.scratch] - {g.scratch})])
                        if owned:
                            w = f"({wc} if {owned} else {w})"
                        else:
                            w = wc
                    lines.append(f"{w}({into}{', ' if args else ''}{args})  # {n.name!r}")
                    names[n.outputs[0]] = into
                else:
                    k = f"K_{len(lines)}"
                    ns[k], ns[f"{k}_ctx"] = n.kernel, n.res
                    outs = [fresh("v") for _ in n.outputs]
                    for lbn, v in zip(n.outputs, outs):
                        names[lbn] = v
                    call = f"{k}({k}_ctx{', ' if args else ''}{args})"
                    if checked:
                        ns["_check"] = self._check
                        call = f"_check({call}, {n.name!r}, ({args}{',' if args else ''}))"
                    elif n.name in self._convert:
                        call = (f"_asarray({call})" if len(outs) == 1
                                else f"tuple([_asarray(r) for r in {call}])")
                    lines.append(f"{', '.join(outs)} = {call}  # {n.name!r}")
            if self._memory_plan and kind == "op":  # drop per-run results after their last use
                for v in sorted({names[lbn] for lbn in reads if self._last_read[lbn] == i and names[lbn][0] == "v"}):
                    lines.append(f"del {v}")
        # outputs
        out_names, fetched = [], {}
        for kind, n, reads in self._stmts:
            if kind != "output":
                continue
            lbn = n.inputs[0]
            o = fetched.get(lbn)
            if o is None:
                o = fetched[lbn] = f"o{len(fetched)}"
                copy = ".copy()" if roots[lbn] & persistent else ""
                lines.append(f"{o} = {names[lbn]}{copy}")
            out_names.append(o)
        # assigns
        assigns = [n for kind, n, _ in self._stmts if kind == "assign"]
        targets = {n.inputs[0] for n in assigns}
        for j, n in enumerate(assigns):
            ref, value = n.inputs
            if value not in self._direct:  # Note [Assigns written in place]
                copy = ".copy()" if roots[value] & targets else ""
                lines.append(f"a{j} = {names[value]}{copy}")
        for j, n in enumerate(assigns):
            ref, value = n.inputs
            if value not in self._direct:
                lines.append(f"_copyto({names[ref]}, a{j})")
            lines.append(f"_bump({self._owner_of(ref, names)})")
        ret = ", ".join(out_names)
        lines.append(f"return ({ret}{',' if len(out_names) == 1 else ''})")
        ns["_changed"] = self._changed
        src = f"def _run({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in lines)
        self.source = src
        code = compile(src, f"<nn.Graph {self.graph_name} plan>", "exec")
        env = dict(ns)
        exec(code, env)  # noqa: S102 - generated from the job, no user text in it except quoted names
        return env.pop("_run")  # no cycle function -> globals -> function: freed as soon as it is dropped

    @staticmethod
    def _owned(v, inputs) -> str:
        """The run-time test that the per-run array ``v``, which may alias the graph inputs ``inputs``, is a
        buffer of its own ("" when there are none: it is)."""
        if not inputs:
            return ""
        return " and ".join([f"{v}.base is None", f"{v}.flags.writeable"] + [f"{v} is not {x}" for x in inputs])

    def _owner_of(self, ref, names):
        """The expression of the eager tensor owning the buffer of an assign's ref."""
        op_name = ref.partition("/")[0]
        if op_name in self.input_names:
            return f"X{self.input_names.index(op_name)}"
        return f"T_{names[ref]}"

    def _check(self, result, op_name, inputs):
        """A kernel result of the first run, checked against the op's inferred metas; records whether it
        shares memory with an input."""
        n = self._by_name[op_name]
        metas = n.res.out_metas
        results = (result,) if len(metas) == 1 else tuple(result)
        if len(results) != len(metas):
            raise RuntimeError(f"nn.Graph '{self.graph_name}', op '{op_name}' ({n.op_type}): kernel returned "
                               f"{len(results)} outputs, expected {len(metas)}")
        checked = []
        for obn, r, m in zip(n.expr.indexed_obns, results, metas):
            if type(r) is not _ndarray:
                r = np.asarray(r)
                self._convert.add(op_name)
            if r.dtype != m.np_dtype or r.shape != m.shape:
                raise RuntimeError(f"nn.Graph '{self.graph_name}', op '{op_name}' ({n.op_type}): kernel produced "
                                   f"output '{obn}' with shape {r.shape} and dtype {r.dtype}, but inference says "
                                   f"shape {tuple(m.shape)} and dtype {m.dtype.name}")
            checked.append(r)
        self._aliasing[op_name] = any(np.may_share_memory(r, a) for r in checked for a in inputs)
        return checked[0] if len(metas) == 1 else tuple(checked)

    def _changed(self, name, t, meta):
        raise RuntimeError(f"nn.Graph '{self.graph_name}': variable '{name}' was compiled as {meta.dtype.name}"
                           f"{list(meta.shape)} on {meta.device} but is now {t.dtype.name}{list(t.shape)} on "
                           f"{t.device}; a graph's parameters and captured tensors must keep their shape, dtype "
                           f"and device")

    # ---- running ------------------------------------------------------------------------------
    def run(self, inputs) -> tuple:
        """The output arrays (one per output op) for the eager input tensors ``inputs``."""
        for t, version in self._fold_sources:
            if t._version != version:
                raise StalePlan
        with self._lock:
            fast = self._fast
            try:
                if fast is not None:
                    return fast(*inputs)
                self._aliasing = {}
                result = self._checked(*inputs)
                # plan the memory again knowing which ops returned views, then run without checks
                self._no_alias = {name for name, aliased in self._aliasing.items() if not aliased}
                self._lower(*self._flags)
                self._fast = self._generate(checked=False)
                self._checked = None  # it holds the buffers of the first memory plan
                return result
            except Exception as e:
                e.add_note(f"(while running nn.Graph '{self.graph_name}')")
                raise

