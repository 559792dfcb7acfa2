"""Grad functions compiled from gradient rows (Note [Gradient rows] in framework/derivatives.py).

Note [Compiled rows]
The rows of an op become one ``OpExprGradFunction`` whose ``capture`` and
``apply`` are generated Python source, compiled once per op type when the op's
grad function is first asked for. The source is what a hand-written class would
hold: ``capture`` saves, per source a row names, the tensor (``None`` when no row
using it needs a gradient), the meta or the attr; ``apply`` unpacks them and calls
each row whose input needs a gradient. Ops whose inputs or outputs are all plain
(neither optional nor variadic) index them by position; the others read the
call's argument slices from the capture's attrs. ``source`` on the grad function
shows the generated code.
"""

from __future__ import annotations

from oneflow_lite.framework.derivatives import GradRows


def _is_plain(args) -> bool:
    return not any(a.optional or a.variadic for a in args)


class _Layout:
    """Expressions for an op's arguments inside the generated code."""

    def __init__(self, definition):
        self.inputs = definition.inputs
        self.outputs = definition.outputs
        self.static = _is_plain(self.inputs) and _is_plain(self.outputs)
        self.in_pos = {a.name: i for i, a in enumerate(self.inputs)}
        self.out_pos = {a.name: i for i, a in enumerate(self.outputs)}
        self.in_arg = {a.name: a for a in self.inputs}
        self.out_arg = {a.name: a for a in self.outputs}

    def value(self, side, name, seq):
        """The tensor(s) of argument ``name`` in the flat sequence ``seq`` (``inputs``, ``outputs``, ``out_grads``)."""
        arg = (self.in_arg if side == "input" else self.out_arg)[name]
        if self.static:
            return f"{seq}[{(self.in_pos if side == 'input' else self.out_pos)[name]}]"
        sl = f"{'isl' if side == 'input' else 'osl'}.get({name!r}, ABSENT)"
        if arg.variadic:
            return f"{seq}[{sl}[0]:{sl}[0] + {sl}[1]]"
        if arg.optional:
            return f"({seq}[{sl}[0]] if {sl}[1] else None)"
        return f"{seq}[{sl}[0]]"

    def meta(self, side, name, seq):
        v = self.value(side, name, seq)
        arg = (self.in_arg if side == "input" else self.out_arg)[name]
        if arg.variadic:
            return f"tuple([t._meta for t in {v}])"
        if arg.optional:
            return f"(None if {v} is None else {v}._meta)"
        return f"{v}._meta"

    def needs(self, name):
        """Whether input ``name`` needs a gradient, from ``needs`` (the capture state's flags)."""
        if self.static:
            return f"needs[{self.in_pos[name]}]"
        arg = self.in_arg[name]
        sl = f"isl.get({name!r}, ABSENT)"
        if arg.variadic:
            return f"any(needs[{sl}[0]:{sl}[0] + {sl}[1]])"
        if arg.optional:
            return f"({sl}[1] and needs[{sl}[0]])"
        return f"needs[{sl}[0]]"


def _generate(rows: GradRows) -> str:
    """The source of ``capture`` and ``apply`` for ``rows`` (Note [Compiled rows])."""
    layout = _Layout(rows.definition)
    entries = [(name, row) for name, row in rows.rows.items()]
    if rows.joint is not None:
        entries = [(None, rows.joint)]
    n_inputs = len(layout.inputs)
    # which rows use each tensor / meta / attr source
    saved, metas, attrs = {}, {}, {}
    for i, (_, row) in enumerate(entries):
        for src in row.sources:
            kind = src[0]
            if kind in ("input", "output"):
                saved.setdefault(src, []).append(i)
            elif kind == "meta":
                metas.setdefault(src, None)
            elif kind == "attr":
                attrs.setdefault(src[1], None)
            elif kind == "attrs":
                attrs.setdefault(None, None)

    def row_needs(i):
        name = entries[i][0]
        if name is None:
            return "any(needs)"
        return layout.needs(name)

    cap = ["def capture(self, state, inputs, outputs, attrs):", "    needs = state.needs_input_grad"]
    if not layout.static:
        cap.append("    isl, osl = attrs.arg_slices()")
        cap.append("    state.slices = (isl, osl)")
    for i in range(len(entries)):
        cap.append(f"    r{i} = {row_needs(i)}")
    cap.append("    if not " + (" or ".join(f"r{i}" for i in range(len(entries))) if len(entries) == 1
                                else "(" + " or ".join(f"r{i}" for i in range(len(entries))) + ")") + ":")
    cap.append("        return")
    variadic_saved = [(k, n) for k, n in saved if (layout.in_arg if k == "input" else layout.out_arg)[n].variadic]
    if saved:
        parts = []
        for (kind, name), users in saved.items():
            v = layout.value(kind, name, "inputs" if kind == "input" else "outputs")
            cond = " or ".join(f"r{i}" for i in users)
            if (kind, name) in variadic_saved:
                parts.append(f"*({v} if {cond} else (None,) * len({v}))")
            else:
                parts.append(v if len(entries) == 1 else f"({v} if {cond} else None)")
        cap.append(f"    state.save_for_backward({', '.join(parts)})")
    if variadic_saved:
        lens = ", ".join(f"len({layout.value(k, n, 'inputs' if k == 'input' else 'outputs')})"
                         for k, n in variadic_saved)
        cap.append(f"    state.saved_lens = ({lens},)")
    for j, (_, side, name) in enumerate(metas):
        cap.append(f"    state.m{j} = {layout.meta(side, name, 'inputs' if side == 'input' else 'outputs')}")
    for j, name in enumerate(attrs):
        cap.append(f"    state.a{j} = " + ("attrs.all()" if name is None else f"attrs[{name!r}]"))

    app = ["def apply(self, state, out_grads):", "    needs = state.needs_input_grad"]
    if not layout.static:
        app.append("    isl, osl = state.slices")
    for i in range(len(entries)):
        app.append(f"    r{i} = {row_needs(i)}")
    nothing = f"(None,) * {n_inputs}" if layout.static else "(None,) * len(needs)"
    app.append("    if not " + (" or ".join(f"r{i}" for i in range(len(entries))) if len(entries) == 1
                                else "(" + " or ".join(f"r{i}" for i in range(len(entries))) + ")") + ":")
    app.append(f"        return {nothing}")
    if saved and not variadic_saved:
        app.append("    " + "".join(f"s{j}, " for j in range(len(saved))) + "= state.saved_tensors")
    elif saved:
        app.append("    t = state.saved_tensors")
        app.append("    k = 0")
        for j, src in enumerate(saved):
            if src in variadic_saved:
                app.append(f"    s{j} = t[k:k + state.saved_lens[{variadic_saved.index(src)}]]")
                app.append(f"    k += state.saved_lens[{variadic_saved.index(src)}]")
            else:
                app.append(f"    s{j} = t[k]")
                app.append("    k += 1")
    saved_index = {src: j for j, src in enumerate(saved)}
    meta_index = {src: j for j, src in enumerate(metas)}
    attr_index = {name: j for j, name in enumerate(attrs)}

    def arg_expr(src):
        kind = src[0]
        if kind == "grad":
            return layout.value("output", src[1], "out_grads")
        if kind in ("input", "output"):
            return f"s{saved_index[src]}"
        if kind == "meta":
            return f"state.m{meta_index[src]}"
        if kind == "attr":
            return f"state.a{attr_index[src[1]]}"
        if kind == "attrs":
            return f"state.a{attr_index[None]}"
        if kind == "grads":
            return "tuple(out_grads)"
        return "needs"  # "needs"

    for i, (_, row) in enumerate(entries):
        call = f"row{i}(" + ", ".join(arg_expr(s) for s in row.sources) + ")"
        app.append(f"    g{i} = {call} if r{i} else None")
    if rows.joint is not None:
        app.append(f"    return tuple(g0) if g0 is not None else {nothing}")
    elif layout.static:
        pos = {name: i for i, (name, _) in enumerate(entries)}
        app.append("    return (" + "".join(f"g{pos[a.name]}, " if a.name in pos else "None, "
                                          for a in layout.inputs) + ")")
    else:
        app.append("    res = [None] * len(needs)")
        for i, (name, _) in enumerate(entries):
            arg = layout.in_arg[name]
            sl = f"isl.get({name!r}, ABSENT)"
            if arg.variadic:
                app.append(f"    if g{i} is not None:")
                app.append(f"        res[{sl}[0]:{sl}[0] + {sl}[1]] = g{i}")
            elif arg.optional:
                app.append(f"    if {sl}[1]:")
                app.append(f"        res[{sl}[0]] = g{i}")
            else:
                app.append(f"    res[{sl}[0]] = g{i}")
        app.append("    return tuple(res)")
    return "\n".join(cap) + "\n\n\n" + "\n".join(app) + "\n"


class RowsGradFunction:
    """The grad function of an op's rows; ``source`` is its generated code (Note [Compiled rows])."""

    def __init__(self, rows: GradRows):
        self.name = rows.name
        self.rows = rows
        self.source = _generate(rows)
        entries = [rows.joint] if rows.joint is not None else list(rows.rows.values())
        namespace = {f"row{i}": row.fn for i, row in enumerate(entries)}
        namespace["ABSENT"] = (0, 0)  # the slice of an optional input not given
        code = compile(self.source, f"<gradient rows of {rows.op_type}, {rows.location}>", "exec")
        exec(code, namespace)  # noqa: S102 - our own generated source, see Note [Compiled rows]
        self.capture = namespace["capture"].__get__(self)
        self.apply = namespace["apply"].__get__(self)

    def __repr__(self):
        return f"<grad rows of '{self.rows.op_type}' at {self.rows.location}>"
