"""``OpBuilder``: names an op's arguments and attrs and builds a validated ``UserOpExpr``."""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict

from oneflow_lite._proto import user_op_conf_pb2
from oneflow_lite.framework import attr as attr_mod
from oneflow_lite.framework import op_registry
from oneflow_lite.framework.errors import OpDefinitionError
from oneflow_lite.framework.op_expr import UserOpExpr

_counters = defaultdict(itertools.count)
_counter_lock = threading.Lock()


def unique_op_name(prefix: str) -> str:
    """``relu0``, ``relu1``, ...: a process-wide counter per prefix."""
    with _counter_lock:
        return f"{prefix}{next(_counters[prefix])}"


class OpBuilder:
    """``OpBuilder("relu").input("x").output("y").build()`` -> a ``UserOpExpr``.

    ``build()`` checks everything against the registered definition: the op type,
    each input / output name and count, each attr's name and type, and that
    every required attr is set. A builder builds once.
    """

    def __init__(self, op_type: str, op_name: str | None = None):
        self.op_type = op_type
        self.op_name = op_name if op_name is not None else unique_op_name(op_type)
        self._inputs: list[tuple[str, int]] = []
        self._outputs: list[tuple[str, int]] = []
        self._attrs: dict = {}
        self._built = False

    def _add_arg(self, side, name, n):
        if self._built:
            raise RuntimeError(f"OpBuilder('{self.op_type}'): already built; a builder is single-use")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"OpBuilder('{self.op_type}'): count of '{name}' must be a positive int, got {n!r}")
        if any(existing == name for existing, _ in self._inputs + self._outputs):
            raise ValueError(f"OpBuilder('{self.op_type}'): argument '{name}' has been specified more than once")
        side.append((name, n))
        return self

    def input(self, name: str, n: int = 1) -> "OpBuilder":
        return self._add_arg(self._inputs, name, n)

    def output(self, name: str, n: int = 1) -> "OpBuilder":
        return self._add_arg(self._outputs, name, n)

    def attr(self, name: str, value) -> "OpBuilder":
        if self._built:
            raise RuntimeError(f"OpBuilder('{self.op_type}'): already built; a builder is single-use")
        if name in self._attrs:
            raise ValueError(f"OpBuilder('{self.op_type}'): attr '{name}' has been set more than once")
        self._attrs[name] = value
        return self

    def _check_args(self, op_def, given, declared, side):
        declared_by_name = {a.name: a for a in declared}
        for name, n in given:
            arg = declared_by_name.get(name)
            if arg is None:
                raise OpDefinitionError(f"op '{self.op_type}' has no {side} '{name}'; "
                                        f"its {side}s are {[a.name for a in declared]}")
            if not arg.variadic and n != 1:
                raise OpDefinitionError(f"op '{self.op_type}': {side} '{name}' takes one tensor, got {n}")
            if arg.variadic and n < arg.min:
                raise OpDefinitionError(f"op '{self.op_type}': {side} '{name}' needs at least {arg.min} tensors, got {n}")
        given_names = {name for name, _ in given}
        missing = [a.name for a in declared if not a.optional and a.name not in given_names]
        if missing:
            raise OpDefinitionError(f"op '{self.op_type}': missing {side}(s) {missing}")

    def build(self) -> UserOpExpr:
        if self._built:
            raise RuntimeError(f"OpBuilder('{self.op_type}'): already built; a builder is single-use")
        op_def = op_registry.lookup(self.op_type)
        self._check_args(op_def, self._inputs, op_def.inputs, "input")
        self._check_args(op_def, self._outputs, op_def.outputs, "output")
        values = {}
        for name, value in self._attrs.items():
            d = op_def.attrs.get(name)
            if d is None:
                raise OpDefinitionError(f"op '{self.op_type}' has no attr '{name}'; "
                                        f"its attrs are {sorted(op_def.attrs) or 'none'}")
            try:
                values[name] = attr_mod.normalise(d.type, value)
            except attr_mod.AttrTypeError as e:
                raise OpDefinitionError(f"op '{self.op_type}': attr '{name}' has type {d.type}: {e}") from None
        missing = [d.name for d in op_def.attrs.values() if d.required and d.name not in values]
        if missing:
            raise OpDefinitionError(f"op '{self.op_type}': must set attr(s) {missing}; they have no default")
        base = op_def.defaults.merged(values)
        proto = user_op_conf_pb2.UserOpConf(op_type_name=self.op_type)
        k = 0
        for name, n in self._inputs:
            proto.input_order.append(name)
            proto.input[name].s.extend(f"{self.op_name}/^Placeholder_{k + i}" for i in range(n))
            k += n
        for name, n in self._outputs:
            proto.output_order.append(name)
            proto.output[name].s.extend(f"{self.op_name}/{name}_{i}" for i in range(n))
        for name, value in base.items():
            proto.attr[name].CopyFrom(attr_mod.to_proto(op_def.attrs[name].type, value))
        self._built = True
        return UserOpExpr(self.op_name, op_def, proto, self._inputs, self._outputs, base)
