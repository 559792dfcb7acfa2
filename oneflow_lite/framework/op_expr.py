"""Op expressions: what a functor builds once and hands to ``OpInterpUtil.dispatch``.

``OpExpr`` -> ``BuiltinOpExpr`` (op name, input / output arg tuples) ->
``UserOpExpr`` (a ``UserOpConf`` proto, base attrs, the definition's infer
functions, a meta-inference cache and a per-device kernel cache). The feed /
fetch exprs move tensors into and out of captured graphs.
"""

from __future__ import annotations

import os
from types import MappingProxyType

from oneflow_lite._proto import op_conf_pb2, user_op_conf_pb2
from oneflow_lite.framework import attr as attr_mod
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.errors import OpDefinitionError
from oneflow_lite.framework.op_registry import InferContext, OpDefinition
from oneflow_lite.framework.tensor_meta import make_meta

INFER_CACHE_SIZE = int(os.environ.get("ONEFLOW_LITE_INFER_CACHE_SIZE", "16384"))
_CPU = Device("cpu")


class ArgTuple:
    """The arguments of one side of an op: names with counts, indexed names (``x_0``), pairs."""

    __slots__ = ("names", "counts", "indexed_names", "pairs", "slices", "size")

    def __init__(self, names_and_counts):
        self.names = tuple(n for n, _ in names_and_counts)
        self.counts = tuple(c for _, c in names_and_counts)
        self.pairs = tuple((n, i) for n, c in names_and_counts for i in range(c))
        self.indexed_names = tuple(f"{n}_{i}" for n, i in self.pairs)
        slices, start = {}, 0
        for n, c in names_and_counts:
            slices[n] = (start, c)
            start += c
        self.slices = slices
        self.size = start

    def index_of(self, name: str, index: int = 0) -> int:
        """Position of tensor ``index`` of argument ``name`` in the flat tuple."""
        start, count = self.slices[name]
        if not 0 <= index < count:
            raise IndexError(f"argument '{name}' has {count} tensor(s), asked for index {index}")
        return start + index

    def __repr__(self):
        return f"ArgTuple({list(self.indexed_names)})"


class OpExpr:
    """Base of every op expression."""

    __slots__ = ("__weakref__",)
    op_type_name: str = ""
    _fast = MappingProxyType({})  # the eager interpreter's ready calls: UserOpExpr's only

    @property
    def input_size(self) -> int:
        raise NotImplementedError

    @property
    def output_size(self) -> int:
        raise NotImplementedError

    def is_grad_disabled(self) -> bool:
        return False


class BuiltinOpExpr(OpExpr):
    """An op with a name and input / output argument tuples."""

    __slots__ = ("op_name", "input_arg_tuple", "output_arg_tuple", "_entry")

    def __init__(self, op_name, inputs, outputs):
        self.op_name = op_name
        self.input_arg_tuple = ArgTuple(inputs)
        self.output_arg_tuple = ArgTuple(outputs)
        self._entry = None  # the dispatcher's OperatorEntry of this op type, bound on first dispatch

    @property
    def input_size(self) -> int:
        return self.input_arg_tuple.size

    @property
    def output_size(self) -> int:
        return self.output_arg_tuple.size

    @property
    def indexed_ibns(self):
        return self.input_arg_tuple.indexed_names

    @property
    def indexed_obns(self):
        return self.output_arg_tuple.indexed_names

    def __repr__(self):
        return f"<{type(self).__name__} {self.op_name} ({self.op_type_name})>"


class InferResult:
    """What one meta inference found, cached per (input metas, call attrs).

    ``kernel`` / ``kernel_gen`` hold the kernel chosen for these metas and the
    kernel-registry generation it was chosen under, filled by the eager interpreter.
    ``out_meta`` is the single output's meta on a device with storage, else None;
    ``plain`` and ``write`` are the kernel's plain and in-place forms if it has them (the
    eager interpreter's fast path, Note [Eager fast path]).
    """

    __slots__ = ("out_metas", "out_meta", "attrs", "device", "kernel", "kernel_gen", "plain", "write")

    def __init__(self, out_metas, attrs, device):
        self.out_metas = out_metas
        self.out_meta = out_metas[0] if len(out_metas) == 1 and device.device_type.has_storage else None
        self.attrs = attrs
        self.device = device
        self.kernel = None
        self.kernel_gen = -1
        self.plain = None
        self.write = None

    def attr(self, name):
        return self.attrs[name]


class UserOpExpr(BuiltinOpExpr):
    """An expression of a registered user op; made by ``OpBuilder(...).build()``."""

    __slots__ = ("op_type_name", "proto", "base_attrs", "op_def", "_infer_cache", "_fast", "kernel_cache",
                 "kernel_cache_gen", "global_infer_cache")

    def __init__(self, op_name, op_def: OpDefinition, proto, inputs, outputs, base_attrs):
        super().__init__(op_name, inputs, outputs)
        self.op_type_name = op_def.op_type
        self.op_def = op_def
        self.proto: user_op_conf_pb2.UserOpConf = proto
        self.base_attrs: attr_mod.AttrMap = base_attrs
        self._infer_cache = {}
        self._fast = {}  # the eager interpreter's ready calls (Note [Eager fast path])
        self.kernel_cache = {}  # (device type, input dtypes, output dtypes) -> kernel
        self.kernel_cache_gen = -1
        self.global_infer_cache = {}  # the global interpreter's plans (interpreters/eager_global.py)

    def is_grad_disabled(self) -> bool:
        return self.op_def.no_grad

    def infer(self, input_metas: tuple, call_attrs) -> InferResult:
        """Output metas, composed attrs and device of a call, from the cache when possible.

        ``call_attrs`` is None, an ``AttrMap`` (functors keep theirs, see Note [Typed attr map
        equality]) or a plain dict, which is wrapped here.
        """
        if type(call_attrs) is dict:
            call_attrs = attr_mod.AttrMap(call_attrs)
        key = (call_attrs, *input_metas)
        result = self._infer_cache.get(key)
        if result is None:
            result = self._infer_uncached(input_metas, call_attrs)
            if len(self._infer_cache) >= INFER_CACHE_SIZE:
                self._infer_cache.clear()
                self._fast = {}
            self._infer_cache[key] = result
        return result

    def cached_infer(self, input_metas: tuple, call_attrs=None) -> InferResult | None:
        """The cached inference of a call, or None (for introspection; infers nothing)."""
        if type(call_attrs) is dict:
            call_attrs = attr_mod.AttrMap(call_attrs)
        return self._infer_cache.get((call_attrs, *input_metas))

    def clear_infer_cache(self) -> None:
        self._infer_cache.clear()
        self._fast = {}
        self.global_infer_cache.clear()

    def infer_cache_size(self) -> int:
        return len(self._infer_cache)

    def compose_attrs(self, call_attrs) -> attr_mod.AttrMap:
        """Call-time attrs over this expr's attrs (which hold the definition's defaults)."""
        if not call_attrs:
            return self.base_attrs
        defs = self.op_def.attrs
        checked = {}
        for name, value in call_attrs.items():
            d = defs.get(name)
            if d is None:
                raise OpDefinitionError(f"op '{self.op_type_name}' has no attr '{name}'; "
                                        f"its attrs are {sorted(defs) or 'none'}")
            try:
                checked[name] = attr_mod.normalise(d.type, value)
            except attr_mod.AttrTypeError as e:
                raise OpDefinitionError(f"op '{self.op_type_name}': attr '{name}' ({d.type}): {e}") from None
        return self.base_attrs.merged(checked)

    def _infer_uncached(self, input_metas, call_attrs) -> InferResult:
        op_def = self.op_def
        attrs = self.compose_attrs(call_attrs)
        if len(input_metas) != self.input_arg_tuple.size:
            raise TypeError(f"{self.op_type_name}: expected {self.input_arg_tuple.size} input tensor(s) "
                            f"({', '.join(self.indexed_ibns)}), got {len(input_metas)}")
        ctx = InferContext(self.op_type_name, self.op_name, input_metas, self.input_arg_tuple.slices, attrs)
        if op_def.infer_device is not None:
            device = op_def.infer_device(ctx)
        elif input_metas:
            device = input_metas[0].device
            for i, m in enumerate(input_metas):
                if m.device is not device:
                    names = self.indexed_ibns
                    raise RuntimeError(f"{self.op_type_name}: expected all tensors to be on the same device, but "
                                       f"found at least two devices: {device} (input {names[0]}, position 0) "
                                       f"and {m.device} (input {names[i]}, position {i})")
        else:
            device = attrs.get("device", _CPU)
        if op_def.cpu_only and device is not _CPU:
            raise RuntimeError(f"{self.op_type_name}: this op runs on cpu only, got inputs on {device}")
        n_out = self.output_arg_tuple.size
        shapes = op_def.infer_shape(ctx)
        dts = op_def.infer_dtype(ctx)
        if n_out == 1:
            shapes, dts = (shapes,), (dts,)
        elif len(shapes) != n_out or len(dts) != n_out:
            raise OpDefinitionError(f"{self.op_type_name}: infer functions must return {n_out} shapes and dtypes")
        out_metas = tuple(make_meta(s, d, device) for s, d in zip(shapes, dts))
        return InferResult(out_metas, attrs, device)

    def build_op_conf(self, attrs=None, device_tag="cpu") -> op_conf_pb2.OperatorConf:
        """The ``OperatorConf`` of this expr with ``attrs`` written over its attrs."""
        conf = op_conf_pb2.OperatorConf(name=self.op_name, device_tag=device_tag)
        conf.user_conf.CopyFrom(self.proto)
        for name, value in self.compose_attrs(attrs).items():
            conf.user_conf.attr[name].CopyFrom(attr_mod.to_proto(self.op_def.attrs[name].type, value))
        return conf


class FeedInputOpExpr(BuiltinOpExpr):
    """Feeds a graph input (eager tensor) into a captured graph."""

    __slots__ = ()
    op_type_name = "feed_input"

    def __init__(self, op_name):
        super().__init__(op_name, [("in", 1)], [("out", 1)])


class FeedVariableOpExpr(BuiltinOpExpr):
    """Feeds a parameter, buffer or free eager tensor into a captured graph as a variable."""

    __slots__ = ()
    op_type_name = "feed_variable"

    def __init__(self, op_name):
        super().__init__(op_name, [("in", 1)], [("out", 1)])


class FetchOutputOpExpr(BuiltinOpExpr):
    """Fetches a graph output (lazy tensor) back out of a captured graph."""

    __slots__ = ()
    op_type_name = "fetch_output"

    def __init__(self, op_name):
        super().__init__(op_name, [("in", 1)], [("out", 1)])
