"""The user-op registry: OneFlow's ``REGISTER_USER_OP`` in Python.

An op definition names the op's inputs and outputs (optional; variadic with a
minimum count), its typed attributes with defaults, and the functions that infer
its outputs' shapes, dtypes and device. It is what ``OpBuilder`` validates
against and what every interpreter uses to infer output metas.
"""

from __future__ import annotations

import threading
from typing import Callable

import attrs as _attrs

from oneflow_lite._proto import user_op_def_pb2
from oneflow_lite.framework import attr as attr_mod
from oneflow_lite.framework.errors import OpDefinitionError, RegistrationError
from oneflow_lite.framework.source_location import caller_location

REQUIRED = object()  # marks an attribute without a default


@_attrs.frozen
class Arg:
    """An input or output: ``Arg("x")``, ``Arg("bias", optional=True)``, ``Arg("in", variadic=True, min=2)``."""

    name: str
    optional: bool = False
    variadic: bool = False
    min: int = 1


@_attrs.frozen
class AttrDef:
    name: str
    type: str
    default: object = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


def _as_arg(spec, what, op_type) -> Arg:
    if isinstance(spec, Arg):
        arg = spec
    elif isinstance(spec, str):
        arg = Arg(spec)
    else:
        raise OpDefinitionError(f"op '{op_type}': {what} must be a name or an Arg, got {spec!r}")
    if not arg.name.isidentifier():
        raise OpDefinitionError(f"op '{op_type}': {what} name {arg.name!r} is not an identifier")
    if not arg.variadic and arg.min != 1:
        raise OpDefinitionError(f"op '{op_type}': {what} '{arg.name}' has min={arg.min}, but only a variadic "
                                f"argument takes a minimum count")
    if arg.min < (0 if arg.optional else 1):
        raise OpDefinitionError(f"op '{op_type}': {what} '{arg.name}' has min={arg.min}; expected at least "
                                f"{0 if arg.optional else 1}")
    return arg


class InferContext:
    """What an infer function sees: the inputs' metas by argument name, and the attrs."""

    __slots__ = ("op_type", "op_name", "_metas", "_arg_slices", "attrs")

    def __init__(self, op_type, op_name, metas, arg_slices, attrs):
        self.op_type = op_type
        self.op_name = op_name
        self._metas = metas
        self._arg_slices = arg_slices
        self.attrs = attrs

    def _meta(self, name, index):
        try:
            start, count = self._arg_slices[name]
        except KeyError:
            raise OpDefinitionError(f"op '{self.op_type}': infer function asked for unknown input '{name}'") from None
        if not 0 <= index < count:
            raise OpDefinitionError(f"op '{self.op_type}': input '{name}' has {count} tensor(s), "
                                    f"index {index} asked for")
        return self._metas[start + index]

    def shape(self, name: str, index: int = 0) -> tuple:
        return self._meta(name, index).shape

    def dtype(self, name: str, index: int = 0):
        return self._meta(name, index).dtype

    def device(self, name: str, index: int = 0):
        return self._meta(name, index).device

    def num_inputs(self, name: str) -> int:
        """How many tensors the input argument ``name`` was given (0 for an absent optional one)."""
        slc = self._arg_slices.get(name)
        return 0 if slc is None else slc[1]

    def has_input(self, name: str) -> bool:
        return self.num_inputs(name) > 0

    @property
    def input_metas(self) -> tuple:
        return self._metas

    @property
    def arg_slices(self) -> dict:
        """Input argument name -> (start, count) in ``input_metas`` (absent optional inputs are missing)."""
        return self._arg_slices

    def attr(self, name: str):
        return self.attrs[name]

    def error(self, message: str) -> RuntimeError:
        """An error for an infer function to raise, naming the op."""
        return RuntimeError(f"{self.op_type}: {message}")


class OpDefinition:
    """A registered user op. Made by :func:`register_user_op`."""

    def __init__(self, op_type, inputs, outputs, attrs, infer_shape, infer_dtype, infer_device,
                 no_grad, cpu_only, location, module=None):
        self.op_type = op_type
        self.inputs: tuple[Arg, ...] = inputs
        self.outputs: tuple[Arg, ...] = outputs
        self.attrs: dict[str, AttrDef] = attrs
        self.infer_shape: Callable = infer_shape
        self.infer_dtype: Callable = infer_dtype
        self.infer_device: Callable | None = infer_device
        self.no_grad = no_grad
        self.cpu_only = cpu_only
        self.location = location
        self.module = module  # the Python module that defines the op, when it is not the package (saved graphs)
        self.defaults = attr_mod.AttrMap({a.name: a.default for a in attrs.values() if not a.required})
        self.input_by_name = {a.name: a for a in inputs}
        self.output_by_name = {a.name: a for a in outputs}

    def to_proto(self) -> user_op_def_pb2.UserOpDef:
        """The ``UserOpDef`` proto of this definition."""
        proto = user_op_def_pb2.UserOpDef(name=self.op_type)
        for args, field in ((self.inputs, proto.input), (self.outputs, proto.output)):
            for a in args:
                field.add(name=a.name, is_optional=a.optional, num_as_min=a.min if a.variadic else 0)
        for a in self.attrs.values():
            d = proto.attr.add(name=a.name, type=attr_mod.ATTR_TYPE_ENUM[a.type])
            if not a.required:
                d.default_val.CopyFrom(attr_mod.to_proto(a.type, a.default))
        return proto

    def signature(self) -> str:
        """A one-line readable schema, e.g. ``add(Tensor x, Tensor y, *, double alpha=1.0) -> (Tensor z)``."""
        def arg(a):
            t = "Tensor[]" if a.variadic else "Tensor"
            return f"{t}{'?' if a.optional else ''} {a.name}"
        ins = [arg(a) for a in self.inputs]
        attrs = [f"{a.type} {a.name}" + ("" if a.required else f"={a.default!r}") for a in self.attrs.values()]
        params = ", ".join(ins + (["*"] + attrs if attrs else []))
        outs = ", ".join(arg(a) for a in self.outputs)
        return f"{self.op_type}({params}) -> ({outs})"

    def remove(self) -> None:
        """Unregister this definition (op expressions already built keep working)."""
        with _lock:
            if _defs.get(self.op_type) is self:
                del _defs[self.op_type]

    def reinstate(self) -> None:
        """Register this definition again after :meth:`remove` (an error naming both sites if another
        definition of the op type took its place meanwhile)."""
        _add(self, self.location)

    def __repr__(self):
        return f"<OpDefinition {self.signature()} at {self.location}>"


_defs: dict[str, OpDefinition] = {}
_lock = threading.Lock()


def _is_op_type(op_type) -> bool:
    """An identifier (``relu``), or a namespace and an identifier (``my_ns.scale``, ops of flow.library)."""
    return isinstance(op_type, str) and all(part.isidentifier() for part in op_type.split(".", 1))


def register_user_op(op_type: str, *, inputs=(), outputs=(), attrs=None, infer_shape, infer_dtype,
                     infer_device=None, no_grad=False, cpu_only=False, location: str | None = None,
                     module: str | None = None) -> OpDefinition:
    """Define a user op.

    ``op_type`` is an identifier, or ``namespace.name`` (the ops of ``flow.library``).
    ``inputs`` / ``outputs`` are names or :class:`Arg`; ``attrs`` maps a name to
    ``(type, default)`` or ``(type, REQUIRED)``, type being one of ``attr.ATTR_TYPES``.
    ``infer_shape(ctx)`` and ``infer_dtype(ctx)`` return the output's shape / dtype
    (a sequence of them when the op has several output tensors); ``infer_device(ctx)``
    returns the device the op runs on and puts its outputs (default: the inputs'
    device, or the ``device`` attr of a source op, or cpu). A second definition
    of the same op type is an error naming both sites. ``location`` (default: the caller's ``file:line``)
    and ``module`` (the defining module, named by errors about saved graphs) are for registration helpers.
    """
    location = location or caller_location()
    if not _is_op_type(op_type):
        raise OpDefinitionError(f"register_user_op: op type must be an identifier, got {op_type!r} (or "
                                f"'namespace.name', as the ops of flow.library)")
    if not callable(infer_shape) or not callable(infer_dtype):
        raise OpDefinitionError(f"op '{op_type}': infer_shape and infer_dtype are required functions")
    if infer_device is not None and not callable(infer_device):
        raise OpDefinitionError(f"op '{op_type}': infer_device must be callable")
    ins = tuple(_as_arg(a, "input", op_type) for a in inputs)
    outs = tuple(_as_arg(a, "output", op_type) for a in outputs)
    if not outs:
        raise OpDefinitionError(f"op '{op_type}': an op needs at least one output")
    if any(a.optional for a in outs):
        raise OpDefinitionError(f"op '{op_type}': outputs cannot be optional")
    names = [a.name for a in ins + outs]
    attr_defs = {}
    for name, spec in (attrs or {}).items():
        if not isinstance(spec, tuple) or len(spec) != 2:
            raise OpDefinitionError(f"op '{op_type}': attr '{name}' must be given as (type, default)")
        type_name, default = spec
        if type_name not in attr_mod.ATTR_TYPES:
            raise OpDefinitionError(f"op '{op_type}': attr '{name}' has unknown type {type_name!r}; "
                                    f"expected one of {', '.join(attr_mod.ATTR_TYPES)}")
        if default is not REQUIRED:
            try:
                default = attr_mod.normalise(type_name, default)
            except attr_mod.AttrTypeError as e:
                raise OpDefinitionError(f"op '{op_type}': default of attr '{name}': {e}") from None
        attr_defs[name] = AttrDef(name, type_name, default)
        names.append(name)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise OpDefinitionError(f"op '{op_type}': names used twice among inputs, outputs and attrs: {duplicates}")
    definition = OpDefinition(op_type, ins, outs, attr_defs, infer_shape, infer_dtype, infer_device,
                              bool(no_grad), bool(cpu_only), location, module)
    _add(definition, location)
    return definition


def _add(definition: OpDefinition, location: str) -> None:
    with _lock:
        old = _defs.get(definition.op_type)
        if old is not None and old is not definition:
            raise RegistrationError(f"op '{definition.op_type}' is already registered at {old.location}; "
                                    f"duplicate registration at {location}")
        _defs[definition.op_type] = definition


def lookup(op_type: str) -> OpDefinition:
    """The definition of ``op_type``; a clear error when there is none."""
    d = _defs.get(op_type)
    if d is None:
        raise OpDefinitionError(f"op type '{op_type}' is not registered")
    return d


def find(op_type: str) -> OpDefinition | None:
    return _defs.get(op_type)


def registered_op_types() -> list[str]:
    return sorted(_defs)
