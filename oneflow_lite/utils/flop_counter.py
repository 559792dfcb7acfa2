"""``FlopCounterMode``: count the FLOPs of matrix products and convolutions, forward and backward (PyTorch's
``torch.utils.flop_counter``, on a Python dispatch mode).

Note [FLOP formulas]
The counts follow PyTorch's rules (torch/utils/flop_counter.py): a multiply-add is 2
FLOPs, only products are counted (no bias, no activation, no softmax), and each
rule reads shapes only. oneflow_lite's ops are not aten's, so each op has the rule
that gives PyTorch's total for the same model:

- ``matmul`` (``mm``, ``bmm``, ``matmul``, ``@``): ``2 * batch * m * k * n`` with the
  broadcast batch dims, a 1-D ``a`` as a row (PyTorch's ``mm`` / ``bmm``); a 1-D ``b``
  counts 0 (PyTorch runs ``dot`` / ``mv``, which it does not count);
- ``linear``: ``2 * rows * in * out`` (PyTorch's ``addmm`` / ``mm``), 0 for a 1-D weight (``mv``);
- ``baddbmm``: ``2 * b * n * m * p`` (PyTorch's ``baddbmm``, the add not counted);
- ``conv{1,2,3}d``: ``2 * N * prod(weight.shape) * prod(out spatial)``;
- ``conv_data_grad(dy, filter)`` (a conv's input gradient, and the forward of every
  ``conv_transpose*d``): ``2 * N * prod(filter.shape) * prod(dy spatial)``, PyTorch's
  transposed-conv count of ``convolution`` and of ``convolution_backward``'s ``grad_input``;
- ``conv_filter_grad(dy, x)`` (a weight gradient): ``2 * prod(dy.shape) * x.shape[1] *
  prod(kernel)``, the ``grad_weight`` count of ``convolution_backward`` (for a transposed
  conv too, whose weight gradient is ``conv_filter_grad`` with the two roles swapped);
- ``scaled_dot_product_attention`` is a composite of two ``matmul``s (and its backward of
  four), which is PyTorch's ``sdpa_flop_count`` (and ``sdpa_backward_flop_count`` without
  the recomputed scores, which PyTorch's CPU math path does not recompute either).

Backward ops are counted when backward runs inside the mode: the grad functions call
the same ops. NB: the backward of a product with a 1-D operand runs matrix products
here and is counted, where PyTorch's ``dot`` / ``mv`` backward is not.
"""

from __future__ import annotations

import functools
import weakref
from collections import defaultdict
from math import prod

from oneflow_lite.autograd.engine import add_backward_observer
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.interpreters.python_mode import DispatchMode
from oneflow_lite.nn.module import register_module_forward_hook, register_module_forward_pre_hook

__all__ = ["FlopCounterMode", "flop_registry", "register_flop_formula"]

flop_registry: dict = {}  # op type -> formula(*input shapes, out_shape=..., **attrs) (Note [FLOP formulas])


def register_flop_formula(targets, get_raw: bool = False):
    """Decorator: register ``formula`` for op type(s) ``targets``; it gets the input shapes, ``out_shape=``
    and the attrs as keywords (with ``get_raw``, the input tensors and ``out_val=`` the output)."""
    names = (targets,) if isinstance(targets, str) else tuple(targets)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"register_flop_formula(targets): expected op type names (str), got {name!r}")

    def register(formula):
        for name in names:
            if name in flop_registry:
                raise RuntimeError(f"register_flop_formula: duplicate registration for op '{name}'")
        if get_raw:
            formula._get_raw = True
        for name in names:
            flop_registry[name] = formula
        return formula
    return register


def _broadcast_batch(a, b) -> int:
    """The number of matrices in a batched product with batch dims ``a`` and ``b`` (broadcast)."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return prod(db if da == 1 else da for da, db in zip(a, b))


@register_flop_formula("matmul")
def matmul_flop(a_shape, b_shape, out_shape=None, **attrs) -> int:
    if len(b_shape) == 1:
        return 0  # dot / mv: not counted by PyTorch
    a2 = a_shape if len(a_shape) > 1 else (1, a_shape[0])
    m, k = a2[-2], a2[-1]
    return 2 * _broadcast_batch(a2[:-2], b_shape[:-2]) * m * k * b_shape[-1]


@register_flop_formula("linear")
def linear_flop(x_shape, w_shape, *bias_shape, out_shape=None, **attrs) -> int:
    if len(w_shape) == 1:
        return 0  # mv
    return 2 * prod(x_shape[:-1]) * x_shape[-1] * w_shape[0]


@register_flop_formula("baddbmm")
def baddbmm_flop(input_shape, batch1_shape, batch2_shape, out_shape=None, **attrs) -> int:
    b, n, m = batch1_shape
    return 2 * b * n * m * batch2_shape[2]


@register_flop_formula(["conv1d", "conv2d", "conv3d"])
def conv_flop(x_shape, w_shape, *bias_shape, out_shape=None, **attrs) -> int:
    return 2 * x_shape[0] * prod(w_shape) * prod(out_shape[2:])


@register_flop_formula("conv_data_grad")
def conv_data_grad_flop(dy_shape, filter_shape, out_shape=None, **attrs) -> int:
    return 2 * dy_shape[0] * prod(filter_shape) * prod(dy_shape[2:])


@register_flop_formula("conv_filter_grad")
def conv_filter_grad_flop(dy_shape, x_shape, out_shape=None, **attrs) -> int:
    return 2 * prod(dy_shape) * x_shape[1] * prod(out_shape[2:])


def _shape_of(out):
    if isinstance(out, Tensor):
        return out._meta.shape
    return tuple(t._meta.shape for t in out)


def count_flops(formula, args, out, attrs) -> int:
    """``formula``'s count for a call: shapes (or, for a raw formula, the tensors) of the inputs and output."""
    if getattr(formula, "_get_raw", False):
        return formula(*args, out_val=out, **attrs)
    return formula(*[t._meta.shape for t in args], out_shape=_shape_of(out), **attrs)


# ---- the module tracker --------------------------------------------------------------------------
def _grad_tensors(value) -> list:
    """The tensors requiring grad in a (nested) tuple / list / dict of module arguments or outputs."""
    if isinstance(value, Tensor):
        return [value] if value.requires_grad else []
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _grad_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _grad_tensors(v)]
    return []


class ModuleTracker:
    """Which modules run now (PyTorch's ``ModuleTracker``): ``parents`` holds ``"Global"`` and the names of the
    modules whose forward, or whose backward, is running. A module is named as PyTorch names it: the class name
    of its root, then the attribute path (``"Net.fc1"``).

    Without ``mods`` every module is tracked through the global module hooks (Note [Global module hooks] in
    nn/module.py), named when it first runs: a module not named yet is a root, and its children are named from
    it (PyTorch's ``torch.utils.module_tracker``). With ``mods`` only those models' modules are tracked, through
    hooks of their own. In a forward the pre-hooks add a module's name and the hooks remove it; in backward, a
    hook on a module's outputs adds its name when their gradient arrives and a hook on its inputs removes it
    when theirs is computed; after each backward run only ``"Global"`` is left (Note [Backward observers])."""

    def __init__(self, mods=()):
        self.mods = mods
        self.parents = {"Global"}
        self._handles = []
        self._names = weakref.WeakKeyDictionary()  # module -> name, for the global hooks

    def __enter__(self):
        self.parents = {"Global"}
        if not self.mods:
            self._names = weakref.WeakKeyDictionary()
            self._handles.append(register_module_forward_pre_hook(self._global_pre_hook))
            self._handles.append(register_module_forward_hook(self._global_post_hook))
        seen = set()
        for root in self.mods:
            root_name = type(root).__name__
            for path, m in root.named_modules():
                if id(m) in seen:
                    continue
                seen.add(id(m))
                name = f"{root_name}.{path}" if path else root_name
                self._handles.append(m.register_forward_pre_hook(functools.partial(self._pre_hook, name)))
                self._handles.append(m.register_forward_hook(functools.partial(self._post_hook, name)))
        self._handles.append(add_backward_observer(self._after_backward))
        return self

    def _name_of(self, module) -> str:
        names = self._names
        name = names.get(module)
        if name is None:
            name = names[module] = type(module).__name__
            stack = [(module, name)]
            while stack:
                parent, parent_name = stack.pop()
                for child_name, child in parent.named_children():
                    if child not in names:
                        names[child] = f"{parent_name}.{child_name}"
                        stack.append((child, names[child]))
        return name

    def _global_pre_hook(self, module, args):
        self._pre_hook(self._name_of(module), module, args)

    def _global_post_hook(self, module, args, output):
        self._post_hook(self._name_of(module), module, args, output)

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        return False

    def _pre_hook(self, name, module, args):
        self.parents.add(name)
        for t in _grad_tensors(args):
            self._handles.append(t.register_hook(functools.partial(self._leave, name)))

    def _post_hook(self, name, module, args, output):
        self.parents.discard(name)
        for t in _grad_tensors(output):
            self._handles.append(t.register_hook(functools.partial(self._enter, name)))

    def _enter(self, name, grad):
        self.parents.add(name)

    def _leave(self, name, grad):
        self.parents.discard(name)

    def _after_backward(self):
        return _ResetAfter(self)


class _ResetAfter:
    """Leaves only ``"Global"`` in the tracker's parents when a backward run ends."""

    __slots__ = ("_tracker",)

    def __init__(self, tracker):
        self._tracker = tracker

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._tracker.parents = {"Global"}
        return False


# ---- the counter ---------------------------------------------------------------------------------
class _FlopCounterMode(DispatchMode):
    """The dispatch mode of a FlopCounterMode: runs each op, then counts it."""

    def __init__(self, counter):
        self.counter = counter

    def __flow_dispatch__(self, op, types, args, kwargs):
        out = op(*args, **kwargs)
        self.counter._count(op.name, args, out, kwargs)
        return out


class FlopCounterMode:
    """Count the FLOPs of the ops run inside (PyTorch's ``FlopCounterMode``; Note [FLOP formulas]).

    ``with FlopCounterMode(model) as fc: model(x).sum().backward()``; then ``fc.get_total_flops()`` and
    ``fc.get_flop_counts()`` (``{"Global": {op type: flops}, "Net": {...}, "Net.fc1": {...}}``). Without
    ``mods`` every module that runs is counted (global module hooks, as PyTorch's); with ``mods`` (a model or a
    list of them) only their modules are. ``custom_mapping``: {op type: formula} added to (or replacing) the
    registered formulas. On exit the table is printed when ``display``.
    """

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping=None):
        if mods is None:
            mods = []
        elif not isinstance(mods, (list, tuple)):
            mods = [mods]
        for m in mods:
            if not hasattr(m, "named_modules"):
                raise TypeError(f"FlopCounterMode(mods=...): expected an nn.Module or a list of them, got "
                                f"{type(m).__name__}")
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.flop_registry = {**flop_registry, **(custom_mapping or {})}
        self.mod_tracker = ModuleTracker(list(mods))
        self.mode = None

    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict:
        """{module name ("Global" for all): {op type: flops}}."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def __enter__(self):
        if self.mode is not None:
            raise RuntimeError("FlopCounterMode is not reentrant: this counter is already active")
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterMode(self)
        try:
            self.mode.__enter__()
        except BaseException:
            self.mode = None
            self.mod_tracker.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        mode, self.mode = self.mode, None
        try:
            mode.__exit__(*exc)
        finally:
            self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _count(self, op_type, args, out, attrs) -> None:
        formula = self.flop_registry.get(op_type)
        if formula is None:
            return
        attrs = {k: v for k, v in attrs.items() if k != "out"}
        flops = count_flops(formula, args, out, attrs)
        for parent in set(self.mod_tracker.parents):
            self.flop_counts[parent][op_type] += flops

    def get_table(self, depth=None) -> str:
        """PyTorch's table: Module, FLOP, % Total, per module down to ``depth`` and per op type."""
        return flop_table(self.flop_counts, self.get_total_flops(), self.depth if depth is None else depth)


# ---- the table -----------------------------------------------------------------------------------
_SUFFIXES = ["", "K", "M", "B", "T"]


def _suffix(number: int) -> str:
    """PyTorch's ``get_suffix_str``: 1.01B is shown as 1001M."""
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def _with_suffix(number: int, suffix: str) -> str:
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}{suffix}"


def _percent(num: int, denom: int) -> str:
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def _tabulate(rows, headers, aligns) -> str:
    """``tabulate``'s "simple" format (header, dashes, rows; two spaces between columns)."""
    widths = [max([len(h) + 2] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if a == "left" else c.rjust(w) for c, w, a in zip(cells, widths, aligns))
    return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def flop_table(flop_counts, total: int, depth: int) -> str:
    """Module, FLOP and % Total of each module down to ``depth`` (and of "Global" when the modules do not hold
    every FLOP), each followed by its op types (PyTorch's ``FlopCounterMode.get_table``)."""
    suffix = _suffix(total)
    subsumed = False

    def rows_of(name, indent):
        nonlocal subsumed
        counts = flop_counts.get(name, {})
        flops = sum(counts.values())
        subsumed |= flops >= total
        pad = " " * indent
        rows = [[pad + name, _with_suffix(flops, suffix), _percent(flops, total)]]
        rows += [[pad + " - " + str(op), _with_suffix(v, suffix), _percent(v, total)] for op, v in counts.items()]
        return rows

    rows = []
    for name in sorted(flop_counts):
        if name != "Global" and name.count(".") + 1 <= depth:
            rows += rows_of(name, name.count("."))
    if "Global" in flop_counts and not subsumed:
        for r in rows:
            r[0] = " " + r[0]
        rows = rows_of("Global", 0) + rows
    if not rows:
        rows = [["Global", "0", "0%"]]
    return _tabulate(rows, ["Module", "FLOP", "% Total"], ["left", "right", "right"])
