"""Ops defined from Python: ``define``, ``impl``, ``register_fake`` and the ``flow.ops.<ns>`` namespaces.

Note [Library ops]
``define("my_ns::scale(Tensor x, *, Float factor=2.0) -> Tensor")`` makes three things:

- a user op of type ``my_ns.scale`` (``register_user_op``): one input per ``Tensor``
  argument (``Tensor?`` / ``=None``: an optional input; ``TensorTuple``: a variadic
  one), one attr per other argument, one output per returned tensor. Its infer
  functions run the op's *fake*: the function registered with ``register_fake``,
  called with meta tensors (device ``meta``) in place of the tensors, with every
  functionality key excluded (a graph being captured does not capture it);
- a functor that converts a call into that op's inputs and attrs and dispatches it;
- the functional function ``flow.ops.my_ns.scale`` running the functor, built from the
  schema by the functional API's own signature code (``FunctionSchema.signature``), so
  it resolves and checks arguments as ``flow.<name>`` does.

The op type is ``namespace.name`` (``my_ns.scale``): what ``flow.dispatch.dump_table``,
a captured job and a saved graph name. ``impl(op, "cpu")`` registers a per-device
kernel: the schema's arguments in order, NumPy arrays for tensors (None for an
absent optional one, a tuple for a ``TensorTuple``) and the values of the others,
keyword-only arguments as keywords; it returns the output array(s), of exactly
the shapes and dtypes the fake gives. An op with optional or ``TensorTuple``
arguments carries the attr ``_counts`` (how many tensors each tensor argument got),
so its kernels find their arrays in a saved graph too. ``impl(op,
"CompositeImplicitAutograd")`` makes the op a composite instead (Note [Composite ops]
in functors/registry.py): the function runs and the ops it calls are dispatched,
so there is no user op while it is registered, and no kernel, fake or gradient.
"""

from __future__ import annotations

import threading

import oneflow_lite.ops as _ops_module
from oneflow_lite.dispatch.dispatch_key import BACKEND_KEY_SET, FULL_KEY_SET
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import ForceDispatchKeyGuard
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.device import device_types as _device_types
from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import REQUIRED, Arg, register_user_op
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.functors.functional import FunctionalFunction
from oneflow_lite.functors.signature import parse_schema
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.kernels.meta import meta_kernel
from oneflow_lite.library.handles import Handle, location_of, user_frame, user_location

COMPOSITE = "CompositeImplicitAutograd"
_META = Device("meta")
_FUNCTIONALITY_KEYS = FULL_KEY_SET & ~BACKEND_KEY_SET
# schema type -> attr type of the op's attr (Scalar is kept as a double)
_ATTR_TYPES = {"Int": "int64", "Float": "double", "Scalar": "double", "Bool": "bool", "String": "string",
               "IntList": "list_int64", "FloatList": "list_float", "Shape": "shape", "DataType": "data_type",
               "Device": "device"}
# a value for each attr type, for op exprs whose calls always pass the attr (a required one has no default)
_PLACEHOLDERS = {"int64": 0, "double": 0.0, "bool": False, "string": "", "list_int64": (), "list_float": (),
                 "shape": (), "data_type": dtypes.float32, "device": Device("cpu"), "list_int32": ()}
COUNTS_ATTR = "_counts"

_lock = threading.RLock()
_ops: dict[str, LibraryOp] = {}  # qualname -> op
_by_function: dict = {}  # flow.ops.<ns>.<name> -> op


class LibraryOp:
    """One op made by :func:`define` and what is registered for it (Note [Library ops])."""

    def __init__(self, schema, location: str, module: str | None):
        self.schema = schema
        self.qualname = schema.qualname
        self.op_type = f"{schema.namespace}.{schema.name}"
        self.location = location
        self.module = module
        self.params = [_param(self.qualname, spec) for spec in schema.args]  # (spec, kind, attr type)
        self.needs_counts = any(kind in ("optional", "tuple") for _, kind, _ in self.params)
        self.static_slices = None if self.needs_counts else _slices(self.params, [1] * len(self.params))
        self.output_names = _output_names(schema, {spec.name for spec in schema.args})
        self.definition = None
        self.kernels: dict[str, Handle] = {}
        self.fake: Handle | None = None
        self.autograd: Handle | None = None
        self.composite: Handle | None = None
        self.functor = _OpFunctor(self)
        self.function = None

    # ---- a call's arguments ---------------------------------------------------------------------
    def slices_of(self, attrs) -> dict:
        """Input argument name -> (start, count) of a call with ``attrs``."""
        if self.static_slices is not None:
            return self.static_slices
        return _slices(self.params, attrs[COUNTS_ATTR])

    def values(self, tensors, slices, attrs) -> list:
        """The value of every schema argument, in order, from a call's flat tensors (or arrays) and attrs."""
        out = []
        for spec, kind, _ in self.params:
            if kind == "attr":
                out.append(attrs[spec.name])
                continue
            start, count = slices.get(spec.name, (0, 0))
            if kind == "tuple":
                out.append(tuple(tensors[start:start + count]))
            else:
                out.append(tensors[start] if count else None)
        return out

    def split(self, values) -> tuple:
        """(positional arguments, keyword-only arguments) of the schema's values."""
        args, kwargs = [], {}
        for (spec, _, _), v in zip(self.params, values):
            if spec.kw_only:
                kwargs[spec.name] = v
            else:
                args.append(v)
        return args, kwargs

    # ---- meta inference through the fake ------------------------------------------------------------
    def fake_outputs(self, metas, slices, attrs) -> tuple:
        """``((shape, dtype), ...)`` of the op's outputs for inputs of ``metas``, from its fake."""
        fake = self.fake
        if fake is None:
            raise RuntimeError(f"{self.qualname}: no fake (meta) function is registered; an op needs one to infer "
                               f"its outputs' shapes and dtypes, in eager mode too: register it with "
                               f"@flow.library.register_fake('{self.qualname}')")
        tensors = [Tensor._make(None, make_meta(m.shape, m.dtype, _META)) for m in metas]
        args, kwargs = self.split(self.values(tensors, slices, attrs))
        with ForceDispatchKeyGuard(0, _FUNCTIONALITY_KEYS):  # meta ops only: nothing captured or recorded
            out = fake.fn(*args, **kwargs)
        outs = (out,) if isinstance(out, Tensor) else tuple(out) if isinstance(out, (tuple, list)) else None
        if not outs or not all(isinstance(o, Tensor) for o in outs):
            raise TypeError(f"{self.qualname}: the fake {fake.fn.__qualname__} (registered at {fake.location}) must "
                            f"return a Tensor or a tuple of Tensors, got {type(out).__name__}")
        expected = len(self.output_names)
        if expected and len(outs) != expected:
            raise RuntimeError(f"{self.qualname}: the fake {fake.fn.__qualname__} (registered at {fake.location}) "
                               f"returned {len(outs)} tensor(s), but the schema returns {expected} "
                               f"(-> {self.schema.returns_text()})")
        return tuple([(tuple(o.shape), o.dtype) for o in outs])

    def _infer(self, ctx) -> tuple:
        memo = _memo
        if memo.ctx is not ctx:  # infer_shape runs the fake, infer_dtype reuses its result
            memo.result = self.fake_outputs(ctx.input_metas, ctx.arg_slices, ctx.attrs)
            memo.ctx = ctx
        return memo.result

    def infer_shape(self, ctx):
        found = self._infer(ctx)
        return found[0][0] if len(found) == 1 else tuple([s for s, _ in found])

    def infer_dtype(self, ctx):
        found = self._infer(ctx)
        _memo.ctx = None
        return found[0][1] if len(found) == 1 else tuple([d for _, d in found])

    def describe(self) -> str:
        return f"'{self.qualname}' (defined at {self.location})"


class _Memo(threading.local):
    ctx = None
    result = None


_memo = _Memo()


def _param(qualname, spec) -> tuple:
    """(spec, kind, attr type) of a schema argument; kind is tensor, optional, tuple or attr."""
    where = f"flow.library.define('{qualname}')"
    if spec.name.startswith("_"):
        raise ValueError(f"{where}: argument '{spec.name}': names starting with '_' are reserved")
    base = spec.base_type
    if base == "Tensor":
        return spec, ("optional" if spec.optional else "tensor"), None
    if base == "TensorTuple":
        return spec, "tuple", None
    attr_type = _ATTR_TYPES.get(base)
    if attr_type is None:
        raise ValueError(f"{where}: argument '{spec.name}' has type {spec.type}, which an op attr cannot hold; "
                         f"the types of a library op are Tensor, Tensor?, TensorTuple, {', '.join(_ATTR_TYPES)}")
    if spec.optional:
        raise ValueError(f"{where}: argument '{spec.name}' ({spec.type}) may be None, which an op attr cannot "
                         f"hold; give it a default of its type")
    return spec, "attr", attr_type


def _slices(params, counts) -> dict:
    """Tensor argument name -> (start, count), from the count of each tensor argument in order."""
    slices, start = {}, 0
    for (spec, _, _), n in zip([p for p in params if p[1] != "attr"], counts):
        if n:
            slices[spec.name] = (start, n)
            start += n
    return slices


def _output_names(schema, taken) -> tuple:
    """The op's output names; () when the schema returns a TensorTuple (one variadic output ``out``)."""
    names = []
    for i, n in enumerate(schema.returns):
        name = n or ("out" if len(schema.returns) == 1 else f"out{i}")
        while name in taken:
            name = "r_" + name
        if n is not None and n in taken:
            raise ValueError(f"flow.library.define('{schema.qualname}'): return name '{n}' is also an argument name")
        names.append(name)
    return tuple(names)


# ---- the functor and the kernels --------------------------------------------------------------------
class _OpFunctor:
    """Runs a call of a library op: its composite when it has one, else the op (Note [Library ops])."""

    def __init__(self, op: LibraryOp):
        self.op = op
        self._exprs = {}  # (count of each tensor argument, number of outputs) -> UserOpExpr
        self._out_counts = {}  # TensorTuple returns: (metas, attrs) -> number of outputs

    def __call__(self, *values):
        op = self.op
        composite = op.composite
        if composite is not None:
            args, kwargs = op.split(values)
            return composite.fn(*args, **kwargs)
        tensors, counts, attrs = [], [], {}
        for (spec, kind, attr_type), v in zip(op.params, values):
            if kind == "attr":
                attrs[spec.name] = float(v) if attr_type == "double" else v
            elif kind == "tensor":
                tensors.append(v)
                counts.append(1)
            elif v is None:
                counts.append(0)
            elif kind == "tuple":
                tensors.extend(v)
                counts.append(len(v))
            else:
                tensors.append(v)
                counts.append(1)
        if op.needs_counts:
            attrs[COUNTS_ATTR] = tuple(counts)
        attrs = AttrMap(attrs)
        n_out = len(op.output_names) or self._count_outputs(tensors, attrs)
        key = (tuple(counts), n_out)
        expr = self._exprs.get(key)
        if expr is None:
            expr = self._exprs[key] = self._build(counts, n_out)
        outs = dispatch(expr, tuple(tensors), attrs)
        return outs if op.schema.returns_tuple else outs[0]

    def _count_outputs(self, tensors, attrs) -> int:
        metas = tuple([t._meta for t in tensors])
        key = (metas, attrs)
        n = self._out_counts.get(key)
        if n is None:
            n = self._out_counts[key] = len(self.op.fake_outputs(metas, self.op.slices_of(attrs), attrs))
        return n

    def _build(self, counts, n_out):
        op = self.op
        b = OpBuilder(op.op_type)
        tensor_params = [p for p in op.params if p[1] != "attr"]
        for (spec, _, _), n in zip(tensor_params, counts):
            if n:
                b.input(spec.name, n)
        if op.output_names:
            for name in op.output_names:
                b.output(name)
        else:
            b.output("out", n_out)
        for name, attr in op.definition.attrs.items():
            if attr.required:
                b.attr(name, _PLACEHOLDERS[attr.type])  # every call passes it
        return b.build()


class _Kernel:
    """A library kernel as the dispatcher calls kernels, ``(ctx, *arrays)``, calling ``fn`` with the schema's
    arguments (Note [Library ops])."""

    __slots__ = ("fn", "op")

    def __init__(self, op: LibraryOp, fn):
        self.op = op
        self.fn = fn

    def __call__(self, ctx, *arrays):
        op = self.op
        attrs = ctx.attrs
        args, kwargs = op.split(op.values(arrays, op.slices_of(attrs), attrs))
        return self.fn(*args, **kwargs)

    def __repr__(self):
        return f"<kernel {self.fn.__qualname__} of {self.op.qualname}>"


# ---- namespaces: flow.ops.<ns> ----------------------------------------------------------------------
class OpNamespace:
    """``flow.ops.<namespace>``: the functions of the ops defined in it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        defined = sorted(k for k in vars(self) if not k.startswith("_"))
        raise AttributeError(f"flow.ops.{self._name} has no op '{name}'; its ops: {', '.join(defined) or 'none'} "
                             f"(define one with flow.library.define('{self._name}::{name}(...) -> ...'))")

    def __dir__(self):
        return sorted(k for k in vars(self) if not k.startswith("_"))

    def __repr__(self):
        return f"<flow.ops namespace '{self._name}': {', '.join(dir(self)) or 'no ops'}>"


def _namespace(ns: str, create: bool) -> OpNamespace | None:
    found = getattr(_ops_module, ns, None)
    if found is None and create:
        found = OpNamespace(ns)
        setattr(_ops_module, ns, found)
    return found


def _check_names(schema):
    where = f"flow.library.define('{schema.qualname}')"
    for what, name in (("namespace", schema.namespace), ("op name", schema.name)):
        if not name.isidentifier() or name.startswith("_"):
            raise ValueError(f"{where}: the {what} {name!r} must be an identifier not starting with '_'")
    found = getattr(_ops_module, schema.namespace, None)
    if found is not None and not isinstance(found, OpNamespace):
        raise ValueError(f"{where}: namespace '{schema.namespace}' would hide oneflow_lite.ops.{schema.namespace}; "
                         f"choose another namespace")


# ---- define ---------------------------------------------------------------------------------------------
def define(schema: str, signature: str | None = None) -> Handle:
    """Define an op from its schema: ``define("my_ns::scale(Tensor x, *, Float factor=2.0) -> Tensor")`` (or
    PyTorch's two-argument form ``define("my_ns::scale", "(Tensor x, *, Float factor=2.0) -> Tensor")``).

    The grammar is the functional API's: types ``Tensor``, ``Tensor?`` (or ``Tensor x=None``), ``TensorTuple``,
    ``Int``, ``Float``, ``Bool``, ``String``, ``IntList`` (``IntList[N]``), ``FloatList``, ``Shape``,
    ``DataType``, ``Device``, ``Scalar`` (kept as a float); defaults; ``*`` before keyword-only arguments.
    Returns: ``Tensor``, ``(Tensor, Tensor)`` (optionally named) or ``TensorTuple``. The op's type is
    ``my_ns.scale`` and ``flow.ops.my_ns.scale(x, factor=3.0)`` calls it (Note [Library ops]); it needs a fake
    (:func:`register_fake`) and a kernel per device type (:func:`impl`), or a composite instead.

    Returns a :class:`Handle`; ``remove()`` removes the op and everything registered for it. Defining an op
    twice raises, naming both places.
    """
    frame = user_frame()
    location = location_of(frame)
    if signature is not None:
        if not isinstance(schema, str) or not isinstance(signature, str):
            raise ValueError("flow.library.define(qualname, schema): both must be strings")
        schema = f"{schema}{signature}"
    try:
        parsed = parse_schema(schema)
    except ValueError as e:
        raise ValueError(f"flow.library.define: {e}") from None
    _check_names(parsed)
    op = LibraryOp(parsed, location, frame.f_globals.get("__name__") if frame is not None else None)
    with _lock:
        old = _ops.get(op.qualname)
        if old is not None:
            raise RegistrationError(f"flow.library.define: op '{op.qualname}' is already defined at {old.location}; "
                                    f"duplicate definition at {location}")
        op.definition = _register_definition(op)
        try:
            op.function = _function(op)
        except Exception:
            op.definition.remove()
            raise
        ns = _namespace(parsed.namespace, create=True)
        setattr(ns, parsed.name, op.function)
        _ops[op.qualname] = op
        _by_function[op.function] = op
    return Handle("define", op.qualname, parsed.namespace, None, location, lambda: _undefine(op))


def _register_definition(op: LibraryOp):
    inputs, attrs = [], {}
    for spec, kind, attr_type in op.params:
        if kind == "attr":
            attrs[spec.name] = (attr_type, spec.default if spec.has_default else REQUIRED)
        else:
            inputs.append(Arg(spec.name, optional=kind != "tensor", variadic=kind == "tuple",
                              min=0 if kind == "tuple" else 1))
    if op.needs_counts:
        attrs[COUNTS_ATTR] = ("list_int32", REQUIRED)
    outputs = list(op.output_names) or [Arg("out", variadic=True)]
    try:
        return register_user_op(op.op_type, inputs=inputs, outputs=outputs, attrs=attrs,
                                infer_shape=op.infer_shape, infer_dtype=op.infer_dtype,
                                location=op.location, module=op.module)
    except (RegistrationError, ValueError) as e:
        raise type(e)(f"flow.library.define('{op.qualname}'): {e}") from None


def _function(op: LibraryOp):
    ff = FunctionalFunction(op.op_type, [str(op.schema.signature(f"{op.schema.namespace}__{op.schema.name}"))],
                            doc=f"The op {op.schema} (flow.library, defined at {op.location}).")
    ff._functors[0] = op.functor  # the functor is the op's own, not one of the functor registry
    return ff.function


def _undefine(op: LibraryOp) -> None:
    for handle in [op.composite, op.autograd, op.fake, *op.kernels.values()]:
        if handle is not None:
            handle.remove()
    with _lock:
        op.definition.remove()
        del _ops[op.qualname]
        _by_function.pop(op.function, None)
        ns = _namespace(op.schema.namespace, create=False)
        if getattr(ns, op.schema.name, None) is op.function:
            delattr(ns, op.schema.name)
        if not dir(ns):
            delattr(_ops_module, op.schema.namespace)


def find(op, api: str) -> LibraryOp:
    """The library op named by ``op`` (``"my_ns::scale"`` or ``flow.ops.my_ns.scale``); an error naming ``api``
    when there is none."""
    found = _ops.get(op) if isinstance(op, str) else _by_function.get(op)
    if found is not None:
        return found
    if isinstance(op, str) and "::" in op:
        raise RegistrationError(f"{api}: op '{op}' is not defined; define it first with "
                                f"flow.library.define('{op}(...) -> ...')")
    raise ValueError(f"{api}: expected an op name 'namespace::name' or a function flow.ops.<namespace>.<name>, "
                     f"got {op!r}")


def defined_ops() -> list[str]:
    """The qualnames of the ops defined with :func:`define`."""
    return sorted(_ops)


# ---- impl and register_fake ------------------------------------------------------------------------------
def impl(op, device_types, fn=None):
    """Register ``fn`` as the kernel of ``op`` on each of ``device_types`` (``"cpu"``, a device type registered
    out of tree, or a list of them); ``"CompositeImplicitAutograd"`` makes ``fn`` the op's decomposition.

    A kernel is called with the schema's arguments: NumPy arrays for tensors (None for an absent optional one,
    a tuple for a TensorTuple), the values of the others, keyword-only arguments as keywords; it returns the
    output array (a tuple of them for several outputs) of exactly the shapes and dtypes the fake gives. A
    composite is called with the same arguments as tensors and calls flow ops (Note [Library ops]).

    As a decorator (``fn`` omitted) it returns the :class:`Handle`, which calls ``fn`` when called.
    """
    location = user_location()
    target = find(op, "flow.library.impl")
    kinds = _device_list(device_types, target)
    if fn is None:
        return lambda f: _impl(target, kinds, f, location)
    return _impl(target, kinds, fn, location)


def _device_list(device_types, op) -> tuple:
    api = f"flow.library.impl('{op.qualname}')"
    kinds = (device_types,) if isinstance(device_types, str) else tuple(device_types or ())
    if not kinds or not all(isinstance(k, str) for k in kinds):
        raise ValueError(f"{api}: device_types must be a device type or a list of them, got {device_types!r}")
    for k in kinds:
        if k == "meta":
            raise ValueError(f"{api}: a meta kernel computes nothing; register the op's shape and dtype inference "
                             f"with flow.library.register_fake('{op.qualname}') instead")
        if k == COMPOSITE and len(kinds) > 1:
            raise ValueError(f"{api}: {COMPOSITE} cannot be combined with device types")
        if k != COMPOSITE and k not in _device_types():
            raise ValueError(f"{api}: unknown device type {k!r} (argument device_types); known: "
                             f"{', '.join(t for t in _device_types() if t != 'meta')}, or '{COMPOSITE}'")
    return kinds


def _impl(op: LibraryOp, kinds, fn, location) -> Handle:
    api = f"flow.library.impl('{op.qualname}', {kinds[0] if len(kinds) == 1 else list(kinds)!r})"
    if not callable(fn):
        raise TypeError(f"{api}: expected a function, got {fn!r}")
    if kinds == (COMPOSITE,):
        return _register_composite(op, fn, location, api)
    with _lock:
        _check_not_composite(op, api)
        for k in kinds:
            old = op.kernels.get(k)
            if old is not None:
                raise RegistrationError(f"{api}: a '{k}' kernel is already registered at {old.location}; duplicate "
                                        f"at {location} (remove the first one's handle to replace it)")
        regs = []
        try:
            for k in kinds:
                regs.append(DISPATCHER.register_kernel(op.op_type, k, _Kernel(op, fn), name=_name(fn),
                                                       location=location))
        except Exception:
            for r in regs:
                r.remove()
            raise
        handle = Handle("impl", f"{op.qualname} for {', '.join(kinds)}", op.schema.namespace, fn, location,
                        lambda: _remove_kernels(op, kinds, regs))
        for k in kinds:
            op.kernels[k] = handle
    return handle


def _remove_kernels(op, kinds, regs):
    with _lock:
        for r in regs:
            r.remove()
        for k in kinds:
            op.kernels.pop(k, None)


def _check_not_composite(op, api):
    if op.composite is not None:
        raise RegistrationError(f"{api}: '{op.qualname}' is a composite (registered at {op.composite.location}): it "
                                f"runs the ops it calls and has no kernel, fake or gradient of its own")


def _register_composite(op, fn, location, api) -> Handle:
    with _lock:
        _check_not_composite(op, api)
        handles = dict.fromkeys([*op.kernels.values(), op.fake, op.autograd])
        taken = [f"{h.kind} at {h.location}" for h in handles if h is not None]
        if taken:
            raise RegistrationError(f"{api}: '{op.qualname}' already has {', '.join(taken)}; a composite has no "
                                    f"kernel, fake or gradient of its own: remove them first")
        op.definition.remove()
        overloads = {op.qualname: location}
        DISPATCHER.register_composite(op.op_type, overloads)
        handle = Handle("impl", f"{op.qualname} as {COMPOSITE}", op.schema.namespace, fn, location,
                        lambda: _remove_composite(op, overloads))
        op.composite = handle
    return handle


def _remove_composite(op, overloads):
    with _lock:
        op.composite = None
        DISPATCHER.unregister_composite(op.op_type, overloads)
        op.definition.reinstate()


def register_fake(op, fn=None):
    """Register ``fn`` as the fake of ``op``: called with the schema's arguments, meta tensors (device
    ``meta``) for the tensors, it returns the output meta tensor(s) (``flow.empty_like(x)``, ``x.new_empty(...)``,
    or flow ops on the meta tensors); their shapes and dtypes are the op's inferred outputs, in eager mode,
    on ``meta`` and in graph capture. Raise in it to reject inputs. Every op but a composite needs one.
    As a decorator (``fn`` omitted) it returns the :class:`Handle`, which calls ``fn`` when called."""
    location = user_location()
    target = find(op, "flow.library.register_fake")
    if fn is None:
        return lambda f: _register_fake(target, f, location)
    return _register_fake(target, fn, location)


def _register_fake(op: LibraryOp, fn, location) -> Handle:
    api = f"flow.library.register_fake('{op.qualname}')"
    if not callable(fn):
        raise TypeError(f"{api}: expected a function, got {fn!r}")
    with _lock:
        _check_not_composite(op, api)
        if op.fake is not None:
            raise RegistrationError(f"{api}: a fake is already registered at {op.fake.location}; duplicate at "
                                    f"{location} (remove the first one's handle to replace it)")
        reg = DISPATCHER.register_kernel(op.op_type, "meta", meta_kernel, name=f"fake {_name(fn)}",
                                         location=location)
        handle = Handle("register_fake", op.qualname, op.schema.namespace, fn, location,
                        lambda: _remove_fake(op, reg))
        op.fake = handle
        _fake_changed(op)
    return handle


def _remove_fake(op, reg):
    with _lock:
        reg.remove()
        op.fake = None
        _fake_changed(op)


def _fake_changed(op):
    """Inference results of the old fake are stale: drop them from every op expr of the op."""
    op.functor._out_counts.clear()
    for expr in [*op.functor._exprs.values(), *DISPATCHER.entry(op.op_type).exprs]:
        expr.clear_infer_cache()


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
