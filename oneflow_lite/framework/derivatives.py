"""Gradients as rows: an op's backward stated as data, beside the op's definition.

::

    derivative("relu", x=lambda dy, y: F.relu_grad(dy, y))
    derivative("broadcast_mul", x=lambda dz, y, x_meta: F.reduce_to(F.mul(dz, y), x_meta.shape),
                                y=lambda dz, x, y_meta: F.reduce_to(F.mul(dz, x), y_meta.shape))

In the spirit of PyTorch's ``derivatives.yaml`` and JAX's ``defjvp`` rows.

Note [Gradient rows]
One row per differentiable input, keyed by the input's name (a Python keyword
gets a trailing underscore: input ``in`` is row ``in_``); an input without a row
gets no gradient. A row is a function whose *parameter names* say what it needs,
so the capture saves exactly that and nothing else:

- ``d<output>`` (``dy``, ``dout``): the gradient of that output (None when absent;
  a tuple for a variadic output); ``grads``: all output gradients;
- an input or output name: the tensor, saved for backward (a tuple for a variadic
  input); ``<name>_meta``: its meta only (shape, dtype, device), the tensor not kept;
- an attr name: the attr's value as the forward's kernel saw it; ``attrs``: all of
  them (an ``AttrMap``, to hand on to a grad op with the same attrs);
- ``needs``: which inputs need a gradient (one bool per input tensor).

A row returns the input's gradient (a sequence of them for a variadic input) or
None. Rows call other ops through ``F`` (Note [Calls by name]), never kernels, so
backward is differentiable again and is captured inside graphs. ``joint=`` gives
one function returning the gradients of every input at once (one per input
tensor) for backward formulas that share work between inputs. The autograd layer
compiles the rows of an op into its grad function once (autograd/rows.py); the
rows here are validated against the op's definition when they are registered.
"""

from __future__ import annotations

import inspect
import keyword
import threading
from typing import Callable

from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.op_registry import lookup
from oneflow_lite.framework.source_location import caller_location

SPECIAL = ("grads", "attrs", "needs")


def spelled(name: str) -> str:
    """An arg name as a Python parameter: a keyword gets a trailing underscore (``in`` -> ``in_``)."""
    return name + "_" if keyword.iskeyword(name) else name


class Row:
    """One function of a row: the callable and, per parameter, where its value comes from
    (``("grad", output)``, ``("input", name)``, ``("output", name)``, ``("meta", side, name)``,
    ``("attr", name)`` or ``(special,)``)."""

    __slots__ = ("fn", "sources")

    def __init__(self, fn, sources):
        self.fn = fn
        self.sources = sources


class GradRows:
    """The validated rows of one op type."""

    __slots__ = ("definition", "joint", "location", "name", "op_type", "rows")

    def __init__(self, definition, name, rows, joint, location):
        self.definition = definition
        self.op_type = definition.op_type
        self.name = name
        self.rows: dict[str, Row] = rows  # input arg name -> row
        self.joint: Row | None = joint
        self.location = location


_rows: dict[str, GradRows] = {}
_listeners: list[Callable] = []  # called with an op type whose rows came or went (compiled rows are dropped)
_lock = threading.Lock()


def add_rows_listener(fn: Callable) -> None:
    """Call ``fn(op_type)`` whenever the rows of an op type are registered or removed."""
    _listeners.append(fn)


def _notify(op_type: str) -> None:
    for fn in _listeners:
        fn(op_type)


def _parameter_sources(definition, fn, what) -> tuple:
    """The source of each parameter of ``fn`` (Note [Gradient rows])."""
    names = {}
    for a in definition.inputs:
        names[spelled(a.name)] = ("input", a.name)
        names[a.name + "_meta"] = ("meta", "input", a.name)
    for a in definition.outputs:
        names[spelled(a.name)] = ("output", a.name)
        names[a.name + "_meta"] = ("meta", "output", a.name)
        names["d" + a.name] = ("grad", a.name)
    for attr in definition.attrs:
        names[spelled(attr)] = ("attr", attr)
    for special in SPECIAL:
        names.setdefault(special, (special,))
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        raise RegistrationError(f"derivative('{definition.op_type}'): {what} must be a Python function") from None
    sources = []
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.default is not p.empty:
            raise RegistrationError(f"derivative('{definition.op_type}'): {what}: parameter '{p.name}' must be a "
                                    f"plain positional parameter without a default")
        source = names.get(p.name)
        if source is None:
            raise RegistrationError(
                f"derivative('{definition.op_type}'): {what}: unknown parameter '{p.name}'; a row may take "
                f"{', '.join(sorted(names))}")
        sources.append(source)
    return tuple(sources)


def derivative(op_type: str, *, name: str | None = None, joint: Callable | None = None,
               **rows: Callable) -> GradRows:
    """Register the backward of ``op_type`` as rows (Note [Gradient rows]); ``name`` names its backward node
    (``"Mean"`` makes ``MeanBackward``; default from the op type). A second registration for the same op is
    an error naming both sites."""
    location = caller_location()
    definition = lookup(op_type)
    if definition.no_grad:
        raise RegistrationError(f"derivative('{op_type}'): the op is defined no_grad")
    if (joint is None) == (not rows):
        raise RegistrationError(f"derivative('{op_type}'): give either one row per differentiable input or "
                                f"joint=, not both or neither")
    inputs = {spelled(a.name): a.name for a in definition.inputs}
    compiled = {}
    for key, fn in rows.items():
        if key not in inputs:
            raise RegistrationError(f"derivative('{op_type}'): no input named '{key}'; the inputs are "
                                    f"{', '.join(inputs) or '(none)'}")
        compiled[inputs[key]] = Row(fn, _parameter_sources(definition, fn, f"row '{key}'"))
    joint_row = None if joint is None else Row(joint, _parameter_sources(definition, joint, "joint"))
    entry = GradRows(definition, name, compiled, joint_row, location)
    with _lock:
        old = _rows.get(op_type)
        if old is not None:
            raise RegistrationError(f"derivative('{op_type}'): rows are already registered at {old.location}; "
                                    f"duplicate at {location}")
        _rows[op_type] = entry
    _notify(op_type)
    return entry


def remove_derivative(op_type: str) -> None:
    """Drop the rows of ``op_type`` (tests and plug-ins)."""
    with _lock:
        _rows.pop(op_type, None)
    _notify(op_type)


def find_rows(op_type: str) -> GradRows | None:
    return _rows.get(op_type)


def ops_with_rows() -> list[str]:
    return sorted(_rows)
