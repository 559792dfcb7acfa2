"""The graph compiler: a (passed) ``JobIR`` -> a ``Plan``, a straight-line Python function.

Note [Plans]
Everything that eager execution decides per call is decided here once: each op's
kernel is chosen (``DISPATCHER.select_registration``) and its ``InferResult`` (attrs,
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
Elementwise ops whose kernel has an out-variant writer (Note [Out-variant
writers] in kernels/registration.py) can write into a buffer
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
from functools import partial

import numpy as np

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework.generator import using_generator
from oneflow_lite.framework.tensor import VersionCounter
from oneflow_lite.graph.ir import JobIR

_ndarray = np.ndarray


def _bump(t) -> None:
    vc = t._vc
    if vc is None:
        t._vc = VersionCounter(1)
    else:
        vc.version += 1


def register_out_variant(op_type: str, factory, device_type: str = "cpu") -> None:
    """Give the ``device_type`` kernels of ``op_type`` registered so far the out-variant writer factory
    ``factory(ctx, input_dtypes)`` (Note [Out-variant writers] in kernels/registration.py): for a plug-in
    adding a writer to kernels registered elsewhere; a kernel of its own passes ``cpu_kernel(...,
    out_variant=factory)``."""
    DISPATCHER.register_out_variant(op_type, factory, device_type=device_type)


def _with_generator(gen, kernel, *args):
    """Run ``kernel(*args)`` drawing from ``gen`` (Note [Generators in a graph])."""
    with using_generator(gen):
        return kernel(*args)


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


class _Lowering:
    """What the lowering passes learn about one job (Note [Lowering passes]).

    ``stmts``: ``(kind, node, blobs read)`` in run order, ``at``: op name -> its statement; ``groups``, and
    ``group_of``: op name -> its group. Keyed by blob or group name: ``roots``, the buffers it may share
    memory with; ``size``, the bytes of the buffer it allocates; ``defined``, its statement; ``last``, the
    last statement reading it (the end of the run when it may reach an output). ``readers``: root -> the
    statements reading it; ``last_read``: blob -> the last statement naming it; ``persistent``: buffers
    that outlive a run; ``to_output``: the roots an output may share; ``input_roots``: the graph inputs;
    ``direct``: the values of the assigns written in place."""

    __slots__ = ("at", "defined", "direct", "group_of", "groups", "input_roots", "last", "last_read", "persistent",
                 "producers", "readers", "roots", "size", "stmts", "to_output", "uses")

    def __init__(self, ir: JobIR):
        self.uses, self.producers = ir.consumers(), ir.producers()
        self.stmts, self.at, self.groups, self.group_of = [], {}, [], {}
        self.roots, self.size, self.defined, self.persistent = {}, {}, {}, set()
        self.input_roots = {n.outputs[0] for n in ir.nodes if n.kind == "input"}
        self.last, self.readers, self.last_read, self.to_output = {}, {}, {}, set()
        self.direct = set()


class _Source:
    """The plan function being written: its lines, its parameters, the variable of each blob, and the
    namespace it runs in."""

    __slots__ = ("counter", "lines", "names", "ns", "params")

    def __init__(self, ns: dict):
        self.lines, self.names, self.params, self.ns, self.counter = [], {}, [], ns, 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


class Plan:
    """A compiled graph for one input signature (Note [Plans]); ``run(inputs)`` returns the output arrays."""

    def __init__(self, ir: JobIR, variables: dict, fuse: bool, memory_plan: bool, generators=None):
        """``generators``: random op name -> the generator it draws from (Note [Generators in a graph])."""
        self.graph_name = ir.name
        self._generators = generators or {}
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
        self._by_name = {n.name: n for n in ir.nodes}
        self._writers = self._select_kernels(fuse or memory_plan)
        low = self._lower(fuse, memory_plan)
        self._fold_sources = [(variables[name], variables[name]._version) for name in sorted(ir.fold_sources)]
        self._convert = set()
        self._checked = self._generate(low, checked=True)
        self._fast = None

    # ---- lowering -----------------------------------------------------------------------------
    # Note [Lowering passes]
    # A plan is lowered by a list of named passes over one ``_Lowering``, each reading what the earlier ones
    # found (tinygrad lowers its graphs the same way): group the ops with writers into buffers (fusion),
    # order the statements, find what each blob may alias, find when each buffer dies, write assigns in
    # place, then, under the memory plan, borrow and consume dead inputs' buffers, pool the remaining
    # buffers by liveness and estimate the peak. Kernels and writers are chosen once, before; the passes run
    # again after the first run, which tells which ops return views (Note [Fusion and the memory plan]).
    def _lower(self, fuse, memory_plan) -> _Lowering:
        """Run the lowering passes (Note [Lowering passes]); what they found, for the code generation."""
        self.reports = []
        self._memory_plan = memory_plan
        self._ns = {"_empty": np.empty, "_copyto": np.copyto, "_bump": _bump, "_asarray": np.asarray}
        low = _Lowering(self.ir)
        self._group_writers(low, fuse, memory_plan)
        self._order_statements(low)
        self._find_alias_roots(low)
        self._find_last_uses(low)
        self._direct_assigns(low)
        self._buffers = []
        self.peak_bytes = self.peak_bytes_unplanned
        if memory_plan:
            borrowed, consumed = self._borrow(low), self._consume(low)
            reused = self._pool_buffers(low)
            self._estimate_peak(low, reused, borrowed, consumed)
        return low

    def _select_kernels(self, out_variants: bool) -> dict:
        """Choose each op's kernel (``n.kernel``); when ``out_variants``, the writers (op name -> writer) of
        the one-output ops whose kernel has one for their dtypes (Note [Out-variant writers] in
        kernels/registration.py)."""
        metas, writers = self.ir.metas, {}
        for n in self.ir.nodes:
            if n.kind != "user":
                continue
            in_dtypes = tuple([metas[lbn].dtype for lbn in n.inputs])
            reg = DISPATCHER.select_registration(n.expr, DISPATCHER.entry(n.op_type), n.res.device, in_dtypes,
                                                 tuple([m.dtype for m in n.res.out_metas]))
            n.kernel = reg.fn
            gen = self._generators.get(n.name)
            if gen is not None:  # Note [Generators in a graph]: drawn from its own generator, no writer
                n.kernel = partial(_with_generator, gen, reg.fn)
            elif out_variants and reg.out_variant is not None and len(n.outputs) == 1:
                w = reg.out_variant(n.res, in_dtypes)
                if w is not None:
                    writers[n.name] = w
        return writers

    def _group_writers(self, low, fuse, memory_plan) -> None:
        """Give the ops with a writer their groups: an op joins its input's group when it is that group's
        last op, the only reader of its result, of the same meta (fusion); without the memory plan only the
        fused chains stay."""
        metas, producers, uses = self.ir.metas, low.producers, low.uses
        group_of, groups = {}, []
        for n in self.ir.nodes:
            if n.name not in self._writers:
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
        low.groups, low.group_of = groups, group_of
        if fuse:
            fused = [g for g in groups if len(g.members) > 1]
            n_ops = sum(len(g.members) for g in fused)
            self.reports.append(f"elementwise fusion: {len(fused)} chain(s) of {n_ops} op(s) into {len(fused)} "
                                f"buffer(s)" if fused else "elementwise fusion: no chain to fuse")

    def _order_statements(self, low) -> None:
        """The statements ``(kind, node, blobs read)``: inputs, variables and ops in job order, then the outputs,
        then the assigns; counts the kernel steps (a fused chain is one)."""
        stmts = low.stmts
        for n in self.ir.nodes:
            if n.kind in ("input", "variable"):
                stmts.append((n.kind, n, ()))
            elif n.kind == "user":
                stmts.append(("op", n, tuple(n.inputs)))
        stmts.extend(("output", n, tuple(n.inputs)) for n in self.ir.nodes if n.kind == "output")
        stmts.extend(("assign", n, tuple(n.inputs)) for n in self.ir.nodes if n.kind == "assign")
        low.at = {n.name: i for i, (kind, n, _) in enumerate(stmts) if kind == "op"}
        group_of = low.group_of
        self.num_steps = sum(1 for k, n, _ in stmts if k == "op" and (n.name not in group_of or
                                                                     group_of[n.name].members[0] is n))

    def _find_alias_roots(self, low) -> None:
        """Which buffers each blob may share memory with (its roots), and the size and defining statement of
        each buffer; every op result a new buffer until the end of the run gives ``peak_bytes_unplanned``."""
        metas, roots, size, defined = self.ir.metas, low.roots, low.size, low.defined
        no_alias = self._no_alias or ()
        for i, (kind, n, reads) in enumerate(low.stmts):
            if kind in ("input", "variable"):
                roots[n.outputs[0]] = {n.outputs[0]}
                low.persistent.add(n.outputs[0])
            elif kind == "op":
                g = low.group_of.get(n.name)
                if g is not None:
                    roots[n.outputs[0]] = {g.name}
                    if g.members[0] is n:
                        size[g.name] = metas[n.outputs[0]].numel * metas[n.outputs[0]].dtype.itemsize
                        defined[g.name] = i
                    continue
                inherited = set().union(*[roots[lbn] for lbn in reads]) if reads else set()
                if n.name in no_alias:  # seen not to alias: only graph inputs may vary in layout between runs
                    inherited = {r for r in inherited if r in low.input_roots}
                for lbn in n.outputs:
                    m = metas[lbn]
                    size[lbn] = m.numel * m.dtype.itemsize
                    defined[lbn] = i
                    roots[lbn] = inherited | {lbn}
        self.peak_bytes_unplanned = sum(size.values())

    def _find_last_uses(self, low) -> None:
        """The last statement reading each root (the end of the run for what may reach an output), the
        statements reading each, and the last statement naming each blob."""
        last, readers, roots = low.last, low.readers, low.roots
        for i, (kind, n, reads) in enumerate(low.stmts):
            for lbn in reads:
                low.last_read[lbn] = i
                for r in roots[lbn]:
                    last[r] = i
                    readers.setdefault(r, []).append(i)
        outs = [n for kind, n, _ in low.stmts if kind == "output"]
        low.to_output = set().union(*[roots[n.inputs[0]] for n in outs]) if outs else set()
        for r in low.to_output:
            last[r] = len(low.stmts)

    # Note [Assigns written in place]
    # An assign writes a variable's new value into the eager tensor's buffer at the end of the run,
    # a copy of the whole value. When the value is computed by an out-variant writer (the last op of
    # its group) and read by nothing but the assign, and no later statement reads the variable's old
    # value (or any blob that may alias it), that op writes the variable's buffer directly: the old
    # value is dead by then, a writer may read and write the same buffer (NumPy ufuncs handle the
    # overlap), and the copy disappears (an SGD step ``p -= lr * g`` becomes one ufunc into ``p``).
    # Only the version bump stays at the end.
    def _direct_assigns(self, low) -> None:
        """Find the assigns written in place (their values in ``low.direct``); marks their groups' ``target``
        (a one-op group writing the variable's buffer then allocates none)."""
        direct = low.direct
        for j, (kind, n, _) in enumerate(low.stmts):
            if kind != "assign":
                continue
            ref, value = n.inputs
            p = low.producers[value]
            g = low.group_of.get(p.name)
            var = low.producers[ref]
            if (g is None or g.members[-1] is not p or var.kind != "variable" or var.name in self.ir.folded
                    or low.uses.get(value) != [n] or g.target is not None):
                continue
            i = low.at[p.name]
            if all(k <= i or k == j for k in low.readers.get(ref, ())):
                g.target = ref
                direct.add(value)
                if len(g.members) == 1:
                    low.size.pop(g.name, None)
        if direct:
            self.reports.append(f"in-place assigns: {len(direct)} of {sum(k == 'assign' for k, _, _ in low.stmts)} "
                                f"variable update(s) written straight into the variable's buffer")

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

    def _dies_at(self, low, lbn, i) -> bool:
        """Whether blob ``lbn`` is a kernel's per-run result outside any group, last read at statement ``i``,
        reaching no output and aliasing nothing but graph inputs."""
        p = low.producers[lbn]
        return (p.kind == "user" and p.name not in low.group_of and low.last.get(lbn) == i
                and lbn not in low.to_output and low.roots[lbn] - {lbn} <= low.input_roots)

    def _borrow(self, low) -> int:
        """Mark the groups that write into a dead input's buffer (Note [Borrowed buffers]); their count."""
        metas = self.ir.metas
        borrowed = 0
        for g in low.groups:
            first = g.members[0]
            if (g.target is not None and len(g.members) == 1) or g.meta.numel * g.meta.dtype.itemsize < \
                    self.BORROW_MIN_BYTES:
                continue
            i = low.at[first.name]
            for lbn in first.inputs:
                if metas[lbn] is g.meta and self._dies_at(low, lbn, i):
                    g.borrow = lbn
                    borrowed += 1
                    low.last[lbn] = max(low.last.get(g.name, i), i)  # the buffer now lives as long as the group's
                    low.size.pop(g.name, None)
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
    def _consume(self, low) -> int:
        """Mark the groups whose writer overwrites a dead input (Note [Writers that consume an input]); their
        count."""
        consumed = 0
        for g in low.groups:
            first = g.members[0]
            consumes = getattr(self._writers[first.name], "consumes", None)
            if consumes is None or len(g.members) != 1 or g.borrow is not None or consumes[0] >= len(first.inputs):
                continue
            lbn = first.inputs[consumes[0]]
            if first.inputs.count(lbn) == 1 and self._dies_at(low, lbn, low.at[first.name]):
                g.scratch = lbn
                consumed += 1
        return consumed

    def _pool_buffers(self, low) -> int:
        """Give each group that needs a buffer of its own one allocated once, reusing a buffer of its shape and
        dtype whose previous value is dead (liveness by statement); the number of reuses."""
        free = {}  # (shape, dtype) -> [[buffer index, busy until], ...]
        buffers, reused = self._buffers, 0
        for g in low.groups:
            if g.name in low.to_output or g.borrow is not None or (g.target is not None and len(g.members) == 1):
                continue
            key = (g.meta.shape, g.meta.np_dtype)
            start = low.defined[g.name]
            stop = low.last.get(g.name, start)
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
            low.persistent.add(g.name)
        for k, b in enumerate(buffers):
            self._ns[f"B{k}"] = b
        return reused

    def _estimate_peak(self, low, reused, borrowed, consumed) -> None:
        """``peak_bytes`` under the memory plan: the pooled buffers plus the most per-run results alive at
        once; and the memory plan's reports."""
        size, defined, last = low.size, low.defined, low.last
        pooled = {g.name for g in low.groups if g.pooled}
        delta = [0] * (len(low.stmts) + 2)
        for r in size:
            if r not in pooled:
                delta[defined[r]] += size[r]
                delta[max(last.get(r, defined[r]), defined[r]) + 1] -= size[r]
        live = peak = 0
        for d in delta:
            live += d
            peak = max(peak, live)
        self.peak_bytes = sum(b.nbytes for b in self._buffers) + peak
        self.reports.append(
            f"memory plan: {len(self._buffers)} buffer(s) allocated once for {len(pooled)} "
            f"op result(s) ({reused} reuse(s) by liveness), blobs freed after their last use; estimated peak "
            f"{self.peak_bytes} bytes ({self.peak_bytes_unplanned} without the plan)")
        if borrowed:
            self.reports.append(f"memory plan: {borrowed} op result(s) written into the buffer of an input "
                                f"that dies there")
        if consumed:
            self.reports.append(f"memory plan: {consumed} op(s) computing in the buffer of an input that dies "
                                f"there")

    # ---- code generation ----------------------------------------------------------------------
    def _generate(self, low: _Lowering, checked: bool):
        """The plan function (Note [Plans]); ``checked``: the first run's, checking every kernel result."""
        src = _Source(self._ns)
        for i, (kind, n, reads) in enumerate(low.stmts):
            if kind == "input":
                x = f"X{len(src.params)}"
                src.params.append(x)
                v = src.names[n.outputs[0]] = src.fresh("x")
                src.lines.append(f"{v} = {x}._array")
            elif kind == "variable":
                self._emit_variable(src, n)
            elif kind == "op":
                if n.name in low.group_of:
                    self._emit_writer_call(src, low, n, reads)
                else:
                    self._emit_kernel_call(src, n, reads, checked)
                if self._memory_plan:  # drop per-run results after their last use
                    names = src.names
                    for v in sorted({names[lbn] for lbn in reads if low.last_read[lbn] == i and names[lbn][0] == "v"}):
                        src.lines.append(f"del {v}")
        out_names = self._emit_outputs(src, low)
        self._emit_assigns(src, low)
        src.lines.append(f"return ({', '.join(out_names)}{',' if len(out_names) == 1 else ''})")
        return self._compile(src)

    def _emit_variable(self, src, n) -> None:
        """A variable: its folded constant, or its eager tensor's array after checking its meta."""
        v = src.names[n.outputs[0]] = src.fresh("p")
        const = self.ir.folded.get(n.name)
        if const is not None:
            src.ns[f"C_{v}"] = const
            src.lines.append(f"{v} = C_{v}")
        else:
            t = self.variables[n.name]
            src.ns[f"T_{v}"], src.ns[f"M_{v}"] = t, self.ir.metas[n.outputs[0]]
            src.lines.append(f"if T_{v}._meta is not M_{v}: _changed({n.name!r}, T_{v}, M_{v})")
            src.lines.append(f"{v} = T_{v}._array")

    def _emit_kernel_call(self, src, n, reads, checked) -> None:
        """An op run by its kernel, into new per-run results (checked on the first run)."""
        ns, names = src.ns, src.names
        args = ", ".join(names[lbn] for lbn in reads)
        k = f"K_{len(src.lines)}"
        ns[k], ns[f"{k}_ctx"] = n.kernel, n.res
        outs = [src.fresh("v") for _ in n.outputs]
        for lbn, v in zip(n.outputs, outs):
            names[lbn] = v
        call = f"{k}({k}_ctx{', ' if args else ''}{args})"
        if checked:
            ns["_check"] = self._check
            call = f"_check({call}, {n.name!r}, ({args}{',' if args else ''}))"
        elif n.name in self._convert:
            call = f"_asarray({call})" if len(outs) == 1 else f"tuple([_asarray(r) for r in {call}])"
        src.lines.append(f"{', '.join(outs)} = {call}  # {n.name!r}")

    def _emit_writer_call(self, src, low, n, reads) -> None:
        """An op of a group, run by its writer into the group's buffer (the variable's for the last op of a
        group with a ``target``); the group's first op takes the buffer first."""
        g, ns, names = low.group_of[n.name], src.ns, src.names
        args = ", ".join(names[lbn] for lbn in reads)
        w = f"W_{g.name}_{len(src.lines)}"
        ns[w] = self._writers[n.name]
        last_member = g.members[-1] is n
        into = names[g.target] if g.target is not None and last_member else g.name
        if g.members[0] is n and not (last_member and g.target is not None):
            src.lines.append(self._group_buffer(src, low, g))
        if g.scratch is not None:  # Note [Writers that consume an input]
            wc = f"WC_{g.name}_{len(src.lines)}"
            ns[wc] = self._writers[n.name].consumes[1]
            owned = self._owned_test(src, low, g.scratch)
            w = f"({wc} if {owned} else {w})" if owned else wc
        src.lines.append(f"{w}({into}{', ' if args else ''}{args})  # {n.name!r}")
        names[n.outputs[0]] = into

    def _group_buffer(self, src, low, g) -> str:
        """The statement giving group ``g`` its buffer: a pooled one, a new one per run, or a dead input's
        (Note [Borrowed buffers]), checked at run time when that input may alias a graph input."""
        if g.borrow is None and g.pooled:
            return f"{g.name} = B{g.buffer}"
        new = f"_empty(S_{g.name}, D_{g.name})"
        if g.borrow is None:
            src.ns[f"S_{g.name}"], src.ns[f"D_{g.name}"] = tuple(g.meta.shape), g.meta.np_dtype
            return f"{g.name} = {new}"
        owned = self._owned_test(src, low, g.borrow)
        if not owned:
            return f"{g.name} = {src.names[g.borrow]}  # a dead input's buffer"
        src.ns[f"S_{g.name}"], src.ns[f"D_{g.name}"] = tuple(g.meta.shape), g.meta.np_dtype
        return f"{g.name} = {src.names[g.borrow]} if {owned} else {new}"

    def _owned_test(self, src, low, lbn) -> str:
        """The run-time test that the per-run array of blob ``lbn``, which may alias the graph inputs among its
        roots, is a buffer of its own ("" when it aliases none: it is)."""
        v = src.names[lbn]
        inputs = [src.names[r] for r in sorted(low.roots[lbn] - {lbn})]
        if not inputs:
            return ""
        return " and ".join([f"{v}.base is None", f"{v}.flags.writeable"] + [f"{v} is not {x}" for x in inputs])

    def _emit_outputs(self, src, low) -> list:
        """The outputs' variables, each copied when it may share memory with a persistent buffer."""
        out_names, fetched = [], {}
        for kind, n, reads in low.stmts:
            if kind != "output":
                continue
            lbn = n.inputs[0]
            o = fetched.get(lbn)
            if o is None:
                o = fetched[lbn] = f"o{len(fetched)}"
                copy = ".copy()" if low.roots[lbn] & low.persistent else ""
                src.lines.append(f"{o} = {src.names[lbn]}{copy}")
            out_names.append(o)
        return out_names

    def _emit_assigns(self, src, low) -> None:
        """The assigns: every new value read first (copied when it may alias a target), then written into its
        tensor's buffer unless written in place (Note [Assigns written in place]), then the versions bumped."""
        names = src.names
        assigns = [n for kind, n, _ in low.stmts if kind == "assign"]
        targets = {n.inputs[0] for n in assigns}
        for j, n in enumerate(assigns):
            ref, value = n.inputs
            if value not in low.direct:
                copy = ".copy()" if low.roots[value] & targets else ""
                src.lines.append(f"a{j} = {names[value]}{copy}")
        for j, n in enumerate(assigns):
            ref, value = n.inputs
            if value not in low.direct:
                src.lines.append(f"_copyto({names[ref]}, a{j})")
            src.lines.append(f"_bump({self._owner_of(ref, names)})")

    def _compile(self, src):
        """The plan function ``_run`` of the source's lines."""
        src.ns["_changed"] = self._changed
        text = f"def _run({', '.join(src.params)}):\n" + "".join(f"    {line}\n" for line in src.lines)
        self.source = text
        code = compile(text, f"<nn.Graph {self.graph_name} plan>", "exec")
        env = dict(src.ns)
        exec(code, env)  # noqa: S102 - generated from the job, no user text in it except quoted names
        return env.pop("_run")  # no cycle function -> globals -> function: freed as soon as it is dropped

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
                self._fast = self._generate(self._lower(*self._flags), checked=False)
                self._checked = None  # it holds the buffers of the first memory plan
                return result
            except Exception as e:
                e.add_note(f"(while running nn.Graph '{self.graph_name}')")
                raise

