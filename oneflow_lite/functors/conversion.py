"""Conversion functors: ``cast`` (dtype), ``copy`` (device), and the Tensor methods
built on them: ``to``, ``cpu``, ``type``, ``type_as``, ``view_as``, ``reshape_as``, ``float``, ``double``,
``half``, ``bfloat16``, ``int``, ``long``, ``bool``, ``byte``, ``char``, ``short``; the legacy tensor types
(``flow.FloatTensor`` ...).

Note [Tensor.to]
``Tensor.to`` takes PyTorch's three overloads: ``to(dtype, non_blocking=False,
copy=False)``, ``to(device=None, dtype=None, non_blocking=False, copy=False)`` and
``to(other, non_blocking=False, copy=False)``. It is a Python method rather than
a functional signature because the first positional argument decides the
overload. When neither dtype nor device changes and ``copy`` is False it returns
``self`` (as PyTorch does). Otherwise it casts on the source device and then
copies, except when the target holds no data (``meta``): then it copies first and
casts there, computing nothing. Copying out of a device without storage is an
error: there are no values to copy.
"""

from __future__ import annotations

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.layout import check_memory_format, strided
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import Tensor, legacy_new
from oneflow_lite.functors.registry import functor, get_functor
from oneflow_lite.interpreters.op_interp_util import dispatch

_CPU = Device("cpu")


@functor("Cast")
class CastFunctor:
    """``cast(input, dtype)``: a new tensor of ``dtype`` (``input`` itself when it already has it)."""

    def __init__(self):
        self.op = OpBuilder("cast").input("in").output("out").build()
        self._attrs = {d: AttrMap({"dtype": d}) for d in dt.ALL_DTYPES + dt.STORAGE_DTYPES}

    def __call__(self, x, dtype):
        if x._meta.dtype is dtype:
            return x
        return dispatch(self.op, (x,), self._attrs[dtype])[0]


@functor("Copy")
class CopyFunctor:
    """``copy(input, device)``: a copy of ``input`` on ``device``."""

    def __init__(self):
        self.op = OpBuilder("copy").input("in").output("out").build()
        self._attrs = {}

    def __call__(self, x, device):
        attrs = self._attrs.get(device)
        if attrs is None:
            if not isinstance(device, Device):
                raise TypeError(f"copy: device must be a flow.device, got {type(device).__name__}")
            attrs = self._attrs[device] = AttrMap({"device": device})
        source = x._meta.device
        if device.device_type.has_storage and not source.device_type.has_storage:
            raise NotImplementedError(f"Cannot copy out of {source.type} tensor; no data! "
                                      f"(copy from '{source}' to '{device}')")
        return dispatch(self.op, (x,), attrs)[0]


_TO_USAGE = (" * (flow.dtype dtype, bool non_blocking=False, bool copy=False)\n"
             " * (flow.device device=None, flow.dtype dtype=None, bool non_blocking=False, bool copy=False)\n"
             " * (Tensor other, bool non_blocking=False, bool copy=False)")


def _to_error(args, kwargs) -> TypeError:
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"to() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{_TO_USAGE}")


def _parse_to(args, kwargs):
    """(device or None, dtype or None, copy) of a ``Tensor.to`` call."""
    kw = dict(kwargs)
    if "memory_format" in kw:  # Note [Memory formats]; None (the default) as in PyTorch
        check_memory_format("to", kw.pop("memory_format"))
    device = kw.pop("device", None)
    dtype = kw.pop("dtype", None)
    other = kw.pop("other", None)
    rest = args
    if rest and isinstance(rest[0], Tensor):
        if other is not None:
            raise _to_error(args, kwargs)
        other, rest = rest[0], rest[1:]
    if other is not None:
        if device is not None or dtype is not None or not isinstance(other, Tensor):
            raise _to_error(args, kwargs)
        device, dtype = other.device, other.dtype
    elif rest and isinstance(rest[0], dt.dtype):
        if dtype is not None or device is not None:
            raise _to_error(args, kwargs)
        dtype, rest = rest[0], rest[1:]
    elif rest and isinstance(rest[0], (str, Device)):
        if device is not None:
            raise _to_error(args, kwargs)
        device, rest = rest[0], rest[1:]
        if rest and isinstance(rest[0], dt.dtype):
            if dtype is not None:
                raise _to_error(args, kwargs)
            dtype, rest = rest[0], rest[1:]
    flags = {"non_blocking": False, "copy": False}
    if len(rest) > len(flags):
        raise _to_error(args, kwargs)
    for name, value in zip(flags, rest):
        flags[name] = value
    for name in flags:
        if name in kw:
            if len(rest) > list(flags).index(name):
                raise _to_error(args, kwargs)
            flags[name] = kw.pop(name)
    if kw or not all(isinstance(v, bool) for v in flags.values()):
        raise _to_error(args, kwargs)
    if dtype is not None and not isinstance(dtype, dt.dtype):
        raise _to_error(args, kwargs)
    if device is not None:
        if not isinstance(device, (str, Device)):
            raise _to_error(args, kwargs)
        device = Device(device)
    return device, dtype, flags["copy"]


def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``: this tensor with another dtype
    and / or device; ``self`` when nothing changes and ``copy`` is False (see Note [Tensor.to]).
    ``memory_format=`` is checked and keeps the values (Note [Memory formats] in framework/layout.py)."""
    if "memory_format" in kwargs:
        check_memory_format("to", kwargs["memory_format"], self._meta.ndim)
    return convert(self, *_parse_to(args, kwargs))


def convert(x, device=None, dtype=None, copy=False):
    """``x`` cast to ``dtype`` and copied to ``device`` (None: unchanged); ``x`` itself when
    nothing changes and ``copy`` is False."""
    meta = x._meta
    casts = dtype is not None and dtype is not meta.dtype
    moves = device is not None and device is not meta.device
    if moves and not device.device_type.has_storage:  # cast where nothing is computed
        result = get_functor("Copy")(x, device)
        return get_functor("Cast")(result, dtype) if casts else result
    result = get_functor("Cast")(x, dtype) if casts else x
    if moves:
        result = get_functor("Copy")(result, device)
    elif copy and result is x:
        result = get_functor("Copy")(x, meta.device)
    return result


def cpu(self):
    """This tensor on cpu (``self`` when it is there already)."""
    return convert(self, _CPU)


def _dtype_method(name, dtype):
    def method(self):
        return get_functor("Cast")(self, dtype)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``self.to({dtype!r})``: ``self`` when it already has that dtype."
    return method


_DTYPE_METHODS = {
    "float": dt.float32, "double": dt.float64, "half": dt.float16, "bfloat16": dt.bfloat16, "int": dt.int32,
    "long": dt.int64, "bool": dt.bool_, "byte": dt.uint8, "char": dt.int8, "short": dt.int16,
}

_TYPE_NAMES = {dt.bool_: "BoolTensor", dt.uint8: "ByteTensor", dt.int8: "CharTensor", dt.int16: "ShortTensor",
               dt.int32: "IntTensor", dt.int64: "LongTensor", dt.float16: "HalfTensor", dt.float32: "FloatTensor",
               dt.float64: "DoubleTensor", dt.bfloat16: "BFloat16Tensor", dt.uint16: "UInt16Tensor",
               dt.uint32: "UInt32Tensor", dt.uint64: "UInt64Tensor"}
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}
_TYPE_PREFIXES = ("oneflow_lite", "oneflow", "torch")


def type_(self, dtype=None, non_blocking=False):
    """``type()``: this tensor's type name, e.g. ``'oneflow_lite.FloatTensor'`` (``'oneflow_lite.meta.FloatTensor'``
    off cpu). ``type(dtype)``: this tensor cast to a ``flow.dtype``, or to a type name such as
    ``'torch.LongTensor'`` (which also names the device: cpu unless the name has one); ``self`` when
    nothing changes."""
    if not isinstance(non_blocking, bool):
        raise TypeError(f"type(): argument 'non_blocking' must be bool, not {type(non_blocking).__name__}")
    m = self._meta
    if dtype is None:
        prefix = "oneflow_lite" if m.device.type == "cpu" else f"oneflow_lite.{m.device.type}"
        return f"{prefix}.{_TYPE_NAMES[m.dtype]}"
    if isinstance(dtype, LegacyTensorType):
        dtype = dtype.dtype
    if isinstance(dtype, dt.dtype):
        return get_functor("Cast")(self, dtype)
    if isinstance(dtype, str):
        parts = dtype.split(".")
        if 2 <= len(parts) <= 3 and parts[0] in _TYPE_PREFIXES and parts[-1] in _BY_TYPE_NAME:
            try:
                device = Device(parts[1]) if len(parts) == 3 else _CPU
            except (RuntimeError, ValueError, TypeError):
                device = None
            if device is not None:
                return convert(self, device, _BY_TYPE_NAME[parts[-1]])
        raise ValueError(f"invalid type: '{dtype}'; expected a flow.dtype or a name such as "
                         f"'oneflow_lite.FloatTensor' ({', '.join(_TYPE_NAMES.values())})")
    raise TypeError(f"type(): argument 'dtype' must be flow.dtype or str, not {type(dtype).__name__}")


def view_as(self, other):
    """``self.view(other.size())``."""
    if not isinstance(other, Tensor):
        raise TypeError(f"view_as(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return self.view(other._meta.shape)


def reshape_as(self, other):
    """``self.reshape(other.size())``."""
    if not isinstance(other, Tensor):
        raise TypeError(f"reshape_as(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return self.reshape(other._meta.shape)


# Note [Legacy tensor types]
# ``flow.FloatTensor`` and friends are PyTorch's legacy tensor types: calling one is the legacy constructor
# with that dtype (``flow.LongTensor([1, 2])``, ``flow.FloatTensor(2, 3)``, see Note [Legacy constructor]),
# ``isinstance(t, flow.FloatTensor)`` checks the dtype (and cpu), and ``t.type(flow.LongTensor)`` casts.
class LegacyTensorType:
    """One legacy tensor type (Note [Legacy tensor types])."""

    __slots__ = ("__name__", "dtype")

    def __init__(self, dtype):
        self.dtype = dtype
        self.__name__ = _TYPE_NAMES[dtype]

    def __call__(self, *args, **kwargs):
        return legacy_new(self.dtype, args, kwargs)

    def __instancecheck__(self, obj) -> bool:
        return isinstance(obj, Tensor) and obj._meta.dtype is self.dtype and obj._meta.device.type == "cpu"

    def __repr__(self):
        return f"<class 'oneflow_lite.{self.__name__}'>"


LEGACY_TYPES = {name: LegacyTensorType(d) for d, name in _TYPE_NAMES.items()}


def type_as(self, other):
    """This tensor with ``other``'s dtype and device (``self`` when they are its own)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return convert(self, other._meta.device, other._meta.dtype)


Tensor.to = to
Tensor.layout = property(lambda self: strided, doc="``flow.strided``: every tensor here is dense and strided.")
Tensor.cpu = cpu
Tensor.type = type_
Tensor.type_as = type_as
Tensor.view_as = view_as
Tensor.reshape_as = reshape_as
for _name, _dtype in _DTYPE_METHODS.items():
    setattr(Tensor, _name, _dtype_method(_name, _dtype))
