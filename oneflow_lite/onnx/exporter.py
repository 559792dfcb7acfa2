"""The captured Job of an ``nn.Graph`` -> an ONNX model (the ``onnx`` package).

Note [ONNX export]
The exporter reads the job captured for the example inputs (the graph's own, or one made for a module or
a function) as the graph compiler does (``JobIR``), keeps the ops from which an output is computed
(variable updates and gradient ops of a training graph are left out), and maps each op to ONNX nodes with
the converter registered for its type (onnx/ops.py); an op type without one raises
``UnsupportedOperatorError`` naming it. Graph inputs become ONNX inputs, outputs ONNX outputs, and every
variable (parameters, buffers, captured tensors) an initializer holding its current value. ONNX names are
the job's blob names (``model.fc1-linear-0/out_0``), so a node of the ONNX model says which module made it.

Note [Dynamic axes]
A job is captured for fixed shapes: a reshape's target, a zeros' shape, a slice's stop hold the batch size
as a number. For ``dynamic_axes`` the exporter captures the graph again (without running it) with each
symbolic dimension one larger in turn, and once more with all of them two larger, and compares: every
integer of an op's attrs and every dimension of a blob is then known as ``c + sum(a_k * s_k)`` of the
symbols ``s_k`` (checked against the last capture). A converter asks for a shape or an int list and gets
a constant when it does not vary, or an ONNX tensor computing it from the inputs' runtime shapes. A value
not affine in the symbols (``B * T`` with two symbols) is exported as ``-1`` when it is the only varying
entry of a reshape's target, and raises otherwise; so does a job whose ops differ between the captures
(Python control flow on a shape), and a number attr that varies though its converter took it as a constant
(``Captures.check_constant_attrs``; a scalar op's operand, such as a mean's divisor, is read as a form).
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.graph.ir import JobIR


class UnsupportedOperatorError(RuntimeError):
    """An op of the graph has no ONNX mapping (or not for these attrs)."""


def require_onnx():
    """The ``onnx`` module, or an ImportError saying how to install it."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError("flow.onnx.export needs the 'onnx' package: pip install 'oneflow-lite[onnx]' (or pip install "
                          "onnx onnxruntime)") from e
    return onnx


def output_ir(job) -> JobIR:
    """The job's ops from which an output is computed (Note [ONNX export])."""
    ir = JobIR.parse(job)
    needed, live = set(), set()
    for n in reversed(ir.nodes):
        if n.kind in ("input", "output") or any(lbn in needed for lbn in n.outputs):
            live.add(n.name)
            needed.update(n.inputs)
    ir.remove({n.name for n in ir.nodes if n.name not in live})
    return ir


# ---- symbolic values (Note [Dynamic axes]) --------------------------------------------------------
class Affine:
    """``const + sum(coefs[k] * s_k)``, or not affine (``const`` None)."""

    __slots__ = ("coefs", "const")

    def __init__(self, const, coefs):
        self.const = const
        self.coefs = coefs

    @property
    def static(self) -> bool:
        return self.const is not None and not any(self.coefs)


def fit(values: list, bases: list) -> Affine:
    """The affine form of an int seen as ``values`` in the captures: ``values[0]`` at the symbols' ``bases``,
    ``values[1 + k]`` with symbol k one larger, ``values[-1]`` with all two larger."""
    v0 = values[0]
    if len(values) == 1 or all(v == v0 for v in values):
        return Affine(v0, [0] * len(bases))
    coefs = [values[1 + k] - v0 for k in range(len(bases))]
    const = v0 - sum(a * b for a, b in zip(coefs, bases))
    if values[-1] != const + sum(a * (b + 2) for a, b in zip(coefs, bases)):
        return Affine(None, coefs)
    return Affine(const, coefs)


class Captures:
    """The primary capture's ``JobIR`` and its variants (Note [Dynamic axes]): the affine forms of attrs and
    blob dimensions."""

    def __init__(self, irs: list, bases: list, graph_name: str):
        self.irs = irs
        self.bases = bases
        self.primary = irs[0]
        by_name = [{n.name: n for n in ir.nodes} for ir in irs]
        names = [n.name for n in self.primary.nodes]
        for k, table in enumerate(by_name[1:], 1):
            if [n.name for n in irs[k].nodes] != names:
                extra = sorted(set(table) ^ set(names))[:3]
                raise UnsupportedOperatorError(
                    f"flow.onnx.export: nn.Graph '{graph_name}' captures different ops when a dynamic axis changes "
                    f"size (e.g. {extra}); its build() depends on the shape in Python, which cannot be exported "
                    f"with dynamic_axes")
        self.by_name = by_name
        self.read: set = set()  # (op name, attr name) a converter took as affine forms

    def variants(self, node_name: str) -> list:
        return [table[node_name] for table in self.by_name]

    def attr(self, node_name: str, name: str) -> list:
        """The attr's ints as affine forms (a list, or one form for an int attr)."""
        self.read.add((node_name, name))
        values = [n.res.attrs[name] for n in self.variants(node_name)]
        if isinstance(values[0], (tuple, list)):
            return [fit([v[i] for v in values], self.bases) for i in range(len(values[0]))]
        return fit(values, self.bases)

    def check_constant_attrs(self, node) -> None:
        """Raise if a number attr of ``node`` (a scalar op's operand, ...) varies with the dynamic axes though its
        converter took it as a constant (it did not read it with ``attr``). Shape-like attrs are not checked:
        converters take those from the blobs' dims (``shape_of``)."""
        variants = self.variants(node.name)
        for name, value in node.res.attrs.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            other = next((v.res.attrs[name] for v in variants[1:] if v.res.attrs[name] != value), value)
            if other is not value and (node.name, name) not in self.read:
                raise UnsupportedOperatorError(
                    f"flow.onnx.export: attr '{name}' of op '{node.name}' ({node.op_type}) varies with the dynamic "
                    f"axes ({value!r} for the example inputs, {other!r} with an axis longer), but its ONNX mapping "
                    f"takes it as a constant; export with fewer dynamic axes")

    def dims(self, lbn: str) -> list:
        shapes = [ir.metas[lbn].shape for ir in self.irs]
        if any(len(s) != len(shapes[0]) for s in shapes):
            raise UnsupportedOperatorError(f"flow.onnx.export: blob '{lbn}' changes rank with a dynamic axis")
        return [fit([s[i] for s in shapes], self.bases) for i in range(len(shapes[0]))]


def vary_inputs(tensors: list, axes: list, symbols: list, step: dict):
    """Copies of ``tensors`` whose dynamic axes (``axes[i]``: axis -> symbol) are ``step[symbol]`` longer (rows
    repeated cyclically, so indices stay valid)."""
    from oneflow_lite.framework.tensor import Tensor

    out = []
    for t, ax in zip(tensors, axes):
        a = t.numpy()
        for axis, sym in ax.items():
            extra = step.get(sym, 0)
            if extra:
                idx = np.arange(a.shape[axis] + extra) % max(a.shape[axis], 1)
                a = np.take(a, idx, axis=axis)
        out.append(Tensor._make(np.ascontiguousarray(a), _meta_like(t, a.shape)))
    return out


def _meta_like(t, shape):
    from oneflow_lite.framework.tensor_meta import make_meta

    return make_meta(tuple(shape), t.dtype, t.device)


# ---- the ONNX graph being built -------------------------------------------------------------------
class ExportContext:
    """What converters add ONNX nodes and initializers to (onnx/ops.py); see Note [ONNX export]."""

    def __init__(self, onnx, captures: Captures, opset: int, graph_name: str):
        self.onnx = onnx
        self.helper = onnx.helper
        self.captures = captures
        self.ir = captures.primary
        self.opset = opset
        self.graph_name = graph_name
        self.nodes, self.initializers = [], []
        self.names: dict = {}  # blob name -> ONNX value name (inputs and variables are renamed)
        self.symbol_sources: dict = {}  # symbol index -> (ONNX input name, axis)
        self._used = set()
        self._cache: dict = {}
        self._counter = 0

    # ---- values ---------------------------------------------------------------------------------
    def meta(self, lbn: str):
        return self.ir.metas[lbn]

    def value(self, lbn: str) -> str:
        return self.names.get(lbn, lbn)

    def fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}__{self._counter}"

    def onnx_dtype(self, dtype) -> int:
        return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np_dtype if hasattr(dtype, "np_dtype") else dtype))

    def make(self, op_type: str, inputs: list, outputs=None, hint: str | None = None, **attrs):
        """Add a node; its output names (``outputs`` or fresh ones, one unless ``outputs`` is a count)."""
        if outputs is None or isinstance(outputs, int):
            outputs = [self.fresh(hint or op_type) for _ in range(outputs or 1)]
        name = self.fresh(f"{hint or outputs[0].partition('/')[0]}.{op_type}")
        self.nodes.append(self.helper.make_node(op_type, list(inputs), list(outputs), name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def const(self, value, dtype=None, hint: str = "const") -> str:
        """An initializer holding ``value`` (small ones shared by value)."""
        a = np.asarray(value, dtype=dtype)
        key = (a.dtype.str, a.shape, a.tobytes()) if a.size <= 16 else None
        if key is not None and key in self._cache:
            return self._cache[key]
        name = self.fresh(hint)
        self.add_initializer(name, a)
        if key is not None:
            self._cache[key] = name
        return name

    def add_initializer(self, name: str, array) -> None:
        array = np.asarray(array)  # (np.ascontiguousarray would make a 0-d array 1-d)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.require(array, requirements="C"), name))

    # ---- symbolic ints (Note [Dynamic axes]) -----------------------------------------------------
    def symbol(self, k: int) -> str:
        """An int64 [1] tensor: symbol ``k``'s size at run time."""
        key = ("symbol", k)
        if key not in self._cache:
            source, axis = self.symbol_sources[k]
            shape = self.make("Shape", [source], hint="dynamic")
            self._cache[key] = self.make("Gather", [shape, self.const([axis], np.int64)], axis=0, hint="dynamic")
        return self._cache[key]

    def ints(self, forms: list, what: str, minus_one_ok: bool = False) -> str:
        """An int64 1-D tensor of the affine ``forms`` (a constant when none varies)."""
        if all(f.static for f in forms):
            return self.const([f.const for f in forms], np.int64)
        bad = [i for i, f in enumerate(forms) if f.const is None]
        if bad:
            if not (minus_one_ok and len([f for f in forms if not f.static]) == 1):
                raise UnsupportedOperatorError(
                    f"flow.onnx.export: {what} depends on the dynamic axes in a way the exporter cannot express "
                    f"(entry {bad[0]} is not affine in them); export with fewer dynamic axes")
            return self.const([-1 if not f.static else f.const for f in forms], np.int64)
        parts = [self._form(f) for f in forms]
        return parts[0] if len(parts) == 1 else self.make("Concat", parts, axis=0, hint="dynamic")

    def _form(self, f: Affine) -> str:
        if f.static:
            return self.const([f.const], np.int64)
        acc = None
        for k, a in enumerate(f.coefs):
            if a:
                term = self.symbol(k) if a == 1 else self.make("Mul", [self.symbol(k), self.const([a], np.int64)])
                acc = term if acc is None else self.make("Add", [acc, term])
        return acc if f.const == 0 else self.make("Add", [acc, self.const([f.const], np.int64)])

    def shape_of(self, lbn: str, minus_one_ok: bool = False) -> str:
        """An int64 1-D tensor of blob ``lbn``'s shape (``-1`` allowed for a reshape target)."""
        return self.ints(self.captures.dims(lbn), f"the shape of '{lbn}'", minus_one_ok)

    def attr_ints(self, node, name: str) -> str:
        forms = self.captures.attr(node.name, name)
        return self.ints(forms if isinstance(forms, list) else [forms], f"attr '{name}' of op '{node.name}'")

    def static(self, node, name: str):
        """An attr's value, which must not vary with the dynamic axes (ONNX takes it as an attribute)."""
        forms = self.captures.attr(node.name, name)
        if not all(f.static for f in (forms if isinstance(forms, list) else [forms])):
            raise UnsupportedOperatorError(f"flow.onnx.export: attr '{name}' of op '{node.name}' ({node.op_type}) "
                                           f"varies with the dynamic axes; ONNX needs it constant")
        return node.res.attrs[name]
