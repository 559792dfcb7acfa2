"""Grad functions compiled from gradient rows (Note [Gradient rows] in framework/derivatives.py).

Note [Compiled rows]
The rows of an op become one grad function whose ``capture`` and ``apply`` are
generated Python source, compiled on first use. The source is what a hand-written
class would hold: ``capture`` saves, per source a row names, the tensor (``None``
when no row using it needs a gradient), the meta or the attr; ``apply`` unpacks
them and calls each row whose input needs a gradient. Every tensor is indexed by
its position in the call: an op whose inputs and outputs are all plain (neither
optional nor variadic) has one layout, compiled once; an op with optional or
variadic arguments gets one compiled pair per argument layout of the op exprs
that call it (which optional inputs are given, how many tensors a variadic one
has), looked up by the layout at capture and kept on the capture state for apply.
``source`` shows the code of every layout compiled so far.
"""

from __future__ import annotations

from oneflow_lite.framework.derivatives import GradRows


def _is_plain(args) -> bool:
    return not any(a.optional or a.variadic for a in args)


def _plain_slices(args) -> dict:
    return {a.name: (i, 1) for i, a in enumerate(args)}


class _Layout:
    """Expressions for an op's arguments inside the generated code, for one argument layout:
    ``slices`` map each argument given to (start, count) in the flat tensor tuples."""

    def __init__(self, definition, in_slices: dict, out_slices: dict):
        self.inputs = definition.inputs
        self.n_inputs = sum(count for _, count in in_slices.values())
        self.slices = {"input": in_slices, "output": out_slices}
        self.in_arg = {a.name: a for a in definition.inputs}
        self.out_arg = {a.name: a for a in definition.outputs}

    def value(self, side, name, seq):
        """The tensor(s) of argument ``name`` in the flat sequence ``seq`` (``inputs``, ``outputs``, ``out_grads``):
        a tuple for a variadic argument, ``None`` for an optional one not given."""
        arg = (self.in_arg if side == "input" else self.out_arg)[name]
        start, count = self.slices[side].get(name, (0, 0))
        if arg.variadic:
            return f"{seq}[{start}:{start + count}]"
        return f"{seq}[{start}]" if count else "None"

    def meta(self, side, name, seq):
        v = self.value(side, name, seq)
        arg = (self.in_arg if side == "input" else self.out_arg)[name]
        if arg.variadic:
            return f"tuple([t._meta for t in {v}])"
        return "None" if v == "None" else f"{v}._meta"

    def needs(self, name):
        """Whether input ``name`` needs a gradient, from ``needs`` (the capture state's flags)."""
        start, count = self.slices["input"].get(name, (0, 0))
        if self.in_arg[name].variadic:
            return f"any(needs[{start}:{start + count}])"
        return f"needs[{start}]" if count else "False"


class _Source:
    """Writes the source of ``capture`` and ``apply`` for an op's rows (Note [Compiled rows]).

    Rows are numbered ``i``; ``r{i}`` is whether row ``i``'s input needs a gradient, ``g{i}`` its result;
    saved tensors are ``s{j}``, metas ``state.m{j}``, attrs ``state.a{j}``."""

    def __init__(self, rows: GradRows, layout: _Layout):
        self.layout = layout
        self.joint = rows.joint is not None
        self.entries = [(None, rows.joint)] if self.joint else list(rows.rows.items())
        self.saved, self.metas, self.attrs = {}, {}, {}  # source -> the rows using it (saved) / its slot
        for i, (_, row) in enumerate(self.entries):
            for src in row.sources:
                kind = src[0]
                if kind in ("input", "output"):
                    self.saved.setdefault(src, []).append(i)
                elif kind == "meta":
                    self.metas.setdefault(src, len(self.metas))
                elif kind in ("attr", "attrs"):
                    key = src[1] if kind == "attr" else None
                    self.attrs.setdefault(key, len(self.attrs))
        self.variadic_saved = [src for src in self.saved if self._arg(*src).variadic]
        self.saved_index = {src: j for j, src in enumerate(self.saved)}

    def _arg(self, side, name):
        return (self.layout.in_arg if side == "input" else self.layout.out_arg)[name]

    def _flags(self, prefix: str) -> list[str]:
        """Each row's need flag, then an early return when no row is needed."""
        lines = []
        for i, (name, _) in enumerate(self.entries):
            lines.append(f"    r{i} = {'any(needs)' if name is None else self.layout.needs(name)}")
        flags = " or ".join(f"r{i}" for i in range(len(self.entries)))
        lines.append(f"    if not ({flags}):")
        lines.append(f"        return{prefix}")
        return lines

    def _nothing(self) -> str:
        return f"(None,) * {self.layout.n_inputs}"

    def capture(self) -> list[str]:
        layout = self.layout
        lines = ["def capture(state, inputs, outputs, attrs):", "    needs = state.needs_input_grad"]
        lines += self._flags("")
        parts = []
        for (side, name), users in self.saved.items():
            v = layout.value(side, name, "inputs" if side == "input" else "outputs")
            cond = " or ".join(f"r{i}" for i in users)
            if (side, name) in self.variadic_saved:
                parts.append(f"*({v} if {cond} else (None,) * len({v}))")
            else:
                parts.append(v if len(self.entries) == 1 else f"({v} if {cond} else None)")
        if parts:
            lines.append(f"    state.save_for_backward({', '.join(parts)})")
        if self.variadic_saved:
            lens = ", ".join(f"len({layout.value(side, name, 'inputs' if side == 'input' else 'outputs')})"
                             for side, name in self.variadic_saved)
            lines.append(f"    state.saved_lens = ({lens},)")
        for (_, side, name), j in self.metas.items():
            lines.append(f"    state.m{j} = {layout.meta(side, name, 'inputs' if side == 'input' else 'outputs')}")
        for name, j in self.attrs.items():
            lines.append(f"    state.a{j} = " + ("attrs.all()" if name is None else f"attrs[{name!r}]"))
        return lines

    def _unpack(self) -> list[str]:
        if not self.saved:
            return []
        if not self.variadic_saved:
            return ["    " + "".join(f"s{j}, " for j in range(len(self.saved))) + "= state.saved_tensors"]
        lines = ["    t = state.saved_tensors", "    k = 0"]
        for j, src in enumerate(self.saved):
            n = f"state.saved_lens[{self.variadic_saved.index(src)}]" if src in self.variadic_saved else None
            lines += [f"    s{j} = t[k:k + {n}]", f"    k += {n}"] if n else [f"    s{j} = t[k]", "    k += 1"]
        return lines

    def _arg_expr(self, src) -> str:
        kind = src[0]
        if kind == "grad":
            return self.layout.value("output", src[1], "out_grads")
        if kind in ("input", "output"):
            return f"s{self.saved_index[src]}"
        if kind == "meta":
            return f"state.m{self.metas[src]}"
        if kind in ("attr", "attrs"):
            return f"state.a{self.attrs[src[1] if kind == 'attr' else None]}"
        return "tuple(out_grads)" if kind == "grads" else "needs"

    def _result(self) -> list[str]:
        if self.joint:
            return [f"    return tuple(g0) if g0 is not None else {self._nothing()}"]
        row_of = {name: i for i, (name, _) in enumerate(self.entries)}
        parts = []
        for a in self.layout.inputs:
            start, count = self.layout.slices["input"].get(a.name, (0, 0))
            i = row_of.get(a.name)
            if a.variadic:
                parts.append(f"*(g{i} if g{i} is not None else (None,) * {count})" if i is not None
                             else f"*(None,) * {count}")
            elif count:
                parts.append(f"g{i}" if i is not None else "None")
        return ["    return (" + "".join(p + ", " for p in parts) + ")"]

    def apply(self) -> list[str]:
        lines = ["def apply(state, out_grads):", "    needs = state.needs_input_grad"]
        lines += self._flags(" " + self._nothing())
        lines += self._unpack()
        for i, (_, row) in enumerate(self.entries):
            call = f"row{i}(" + ", ".join(self._arg_expr(src) for src in row.sources) + ")"
            lines.append(f"    g{i} = {call} if r{i} else None")
        return lines + self._result()


def _compile(rows: GradRows, layout: _Layout) -> tuple:
    """``(capture, apply, source)`` for one argument layout (Note [Compiled rows])."""
    source = _Source(rows, layout)
    text = "\n".join(source.capture()) + "\n\n\n" + "\n".join(source.apply()) + "\n"
    entries = [rows.joint] if rows.joint is not None else list(rows.rows.values())
    namespace = {f"row{i}": row.fn for i, row in enumerate(entries)}
    code = compile(text, f"<gradient rows of {rows.op_type}, {rows.location}>", "exec")
    exec(code, namespace)  # noqa: S102 - our own generated source, see Note [Compiled rows]
    return namespace["capture"], namespace["apply"], text


class RowsGradFunction:
    """The grad function of an op's rows; ``source`` is its generated code (Note [Compiled rows])."""

    def __init__(self, rows: GradRows):
        self.name = rows.name
        self.rows = rows
        d = rows.definition
        if _is_plain(d.inputs) and _is_plain(d.outputs):
            layout = _Layout(d, _plain_slices(d.inputs), _plain_slices(d.outputs))
            self.capture, self.apply, source = _compile(rows, layout)  # plain functions: no self
            self._layouts = {None: (self.capture, self.apply, source)}
        else:
            self._layouts = {}  # (input names, counts, output names, counts) -> (capture, apply, source)

    def capture(self, state, inputs, outputs, attrs):
        ins, outs = attrs.arg_tuples()
        key = (ins.names, ins.counts, outs.names, outs.counts)
        compiled = self._layouts.get(key)
        if compiled is None:
            compiled = self._layouts[key] = _compile(self.rows, _Layout(self.rows.definition, ins.slices,
                                                                        outs.slices))
        state.rows_apply = compiled[1]
        compiled[0](state, inputs, outputs, attrs)

    def apply(self, state, out_grads):
        return state.rows_apply(state, out_grads)

    @property
    def source(self) -> str:
        """The generated code of every argument layout compiled so far."""
        return "\n\n".join(source for _, _, source in self._layouts.values())

    def __repr__(self):
        return f"<grad rows of '{self.rows.op_type}' at {self.rows.location}>"
