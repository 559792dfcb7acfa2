"""Element types: ``flow.float32`` and friends, mapped to NumPy and to the proto enum;
``finfo`` / ``iinfo``, ``can_cast``.

Type promotion follows PyTorch (see Note [Type promotion]).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from oneflow_lite._proto import attr_value_pb2
from oneflow_lite.framework.errors import unnamed_op


class dtype:
    """A tensor element type. Instances are singletons: compare with ``is`` or ``==``."""

    __slots__ = ("name", "np_dtype", "proto", "is_floating_point", "is_signed", "is_complex", "itemsize",
                 "_category", "_rank")

    def __init__(self, name, np_dtype, proto, category, rank):
        self.name = name
        self.np_dtype = np.dtype(np_dtype)
        self.proto = proto
        self.is_floating_point = category == 2
        self.is_signed = not name.startswith("uint") and name != "bool"
        self.is_complex = False
        self.itemsize = self.np_dtype.itemsize
        # 0 bool, 1 integer, 2 floating: the order in which a scalar may raise a tensor's dtype.
        self._category = category
        self._rank = rank

    def __repr__(self):
        return f"oneflow_lite.{self.name}"

    def to_real(self) -> dtype:
        """The real dtype of this one: itself (complex dtypes are not provided)."""
        return self

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


bool_ = dtype("bool", np.bool_, attr_value_pb2.kBool, 0, 0)
uint8 = dtype("uint8", np.uint8, attr_value_pb2.kUInt8, 1, 1)
int8 = dtype("int8", np.int8, attr_value_pb2.kInt8, 1, 1)
int16 = dtype("int16", np.int16, attr_value_pb2.kInt16, 1, 2)
int32 = dtype("int32", np.int32, attr_value_pb2.kInt32, 1, 3)
int64 = dtype("int64", np.int64, attr_value_pb2.kInt64, 1, 4)
float16 = dtype("float16", np.float16, attr_value_pb2.kFloat16, 2, 5)
float32 = dtype("float32", np.float32, attr_value_pb2.kFloat, 2, 6)
float64 = dtype("float64", np.float64, attr_value_pb2.kDouble, 2, 7)

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
FLOATING_DTYPES = (float16, float32, float64)
INTEGRAL_DTYPES = (uint8, int8, int16, int32, int64)
NUMERIC_DTYPES = INTEGRAL_DTYPES + FLOATING_DTYPES

# Note [Storage dtypes]
# bfloat16 (ml_dtypes' NumPy type, the one JAX uses) is a *storage* dtype: tensors of it are made,
# cast, copied, indexed and printed, and an op runs on it where a kernel takes it (the elementwise
# NumPy kernels registered for any dtype do, through ml_dtypes' ufunc loops, which compute in float32
# and round); a kernel whose dtype predicate lists its dtypes refuses it with OpKernelNotFoundError.
# It is not in ALL_DTYPES, the dtypes every op is tested on. Its proto value is OneFlow's DataType
# number (kBFloat16 = 11; proto3 enums are open, so the attr protos hold it).
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 11, 2, 5)

# Note [Limited unsigned dtypes]
# uint16 / uint32 / uint64 are PyTorch's (>= 2.3) "limited support" dtypes, storage dtypes here too: tensors
# of them are made, converted, copied, indexed, compared and printed, and the elementwise NumPy kernels take
# them; like PyTorch, promotion accepts only the same dtype or a floating one and raises for any other pair
# (``promote_types(uint16, int64)``; ``uint16_tensor + int64_tensor``). Python scalars and 0-d tensors of a
# lower category keep the tensor's dtype (``x * 2`` stays uint16), as for every dtype. Proto values are
# OneFlow's DataType numbers (kUInt16 = 13, kUInt32 = 14, kUInt64 = 15).
uint16 = dtype("uint16", np.uint16, 13, 1, 2)
uint32 = dtype("uint32", np.uint32, 14, 1, 3)
uint64 = dtype("uint64", np.uint64, 15, 1, 4)
LIMITED_UNSIGNED = (uint16, uint32, uint64)
# The dtypes of the NumPy kernels PyTorch also runs on uint16 / 32 / 64: multiplication, (in)equality, bitwise
# and / or / xor, sort / argsort, where, unique, any / all. Other ops find no kernel for them
# (OpKernelNotFoundError naming the op and the dtypes, where PyTorch raises NotImplementedError).
WITH_LIMITED_UNSIGNED = ALL_DTYPES + LIMITED_UNSIGNED
STORAGE_DTYPES = (bfloat16, *LIMITED_UNSIGNED)

_BY_NAME = {d.name: d for d in ALL_DTYPES + STORAGE_DTYPES}
_BY_NUMPY = {d.np_dtype: d for d in ALL_DTYPES + STORAGE_DTYPES}
_BY_PROTO = {d.proto: d for d in ALL_DTYPES + STORAGE_DTYPES}

_default_float = float32


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The flow dtype of a NumPy dtype; a clear error for unsupported ones."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        supported = ", ".join(str(d.np_dtype) for d in ALL_DTYPES)
        try:
            shown = str(np.dtype(np_dtype))
        except TypeError:
            shown = repr(np_dtype)
        raise TypeError(f"unsupported NumPy dtype {shown}; supported: {supported}") from None


def from_proto(value: int) -> dtype:
    try:
        return _BY_PROTO[value]
    except KeyError:
        raise ValueError(f"unknown DataType proto value {value}") from None


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(d: dtype) -> None:
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {d!r}")
    _default_float = d


# Note [Type promotion]
# Promotion follows PyTorch. Among tensors, the category (bool < integer <
# floating) decides first; within the same category the larger type wins, and
# uint8 with a signed integer gives int16. Three groups are promoted apart:
# dimensioned tensors, 0-d tensors and Python scalars (whose float is the default
# float dtype); then PyTorch's ``combine_categories(higher, lower)`` joins them,
# ``dims`` over ``combine(zero_dim, scalars)``: a floating ``higher`` wins; a bool
# ``higher`` or a floating ``lower`` gives ``promote_types(higher, lower)`` (which
# refuses bool with uint16 / 32 / 64); else ``higher`` wins. So `int32_tensor + 2.5`
# gives the default float dtype, `float16_tensor + 2.5` stays float16,
# `int8_tensor + 1000` stays int8 (it wraps, as in PyTorch), and `bool_vector *
# uint64_0d` refuses as PyTorch does.
def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to (PyTorch's ``promote_types``)."""
    if a is b:
        return a
    if (a in LIMITED_UNSIGNED or b in LIMITED_UNSIGNED) and not (a.is_floating_point or b.is_floating_point):
        raise unnamed_op(RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to "
                                      f"promote {a.name} and {b.name} (Note [Limited unsigned dtypes])"))
    if a._rank == b._rank == float16._rank:  # float16 with bfloat16
        return float32
    if a._category != b._category:
        return a if a._category > b._category else b
    if a._category == 1 and {a, b} & {uint8} and (a.is_signed or b.is_signed):
        other = b if a is uint8 else a
        return int16 if other._rank <= int16._rank else other
    return a if a._rank >= b._rank else b


def scalar_dtype(value) -> dtype:
    """The dtype PyTorch gives a Python/NumPy scalar: bool, int64 or the default float."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _default_float
    raise TypeError(f"expected a bool, int or float scalar, got {type(value).__name__}")


def combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """PyTorch's ``combine_categories``: ``higher`` (the dtype of the group that counts more) joined with
    ``lower``; None stands for an empty group (Note [Type promotion])."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher._category != 2 and (higher is bool_ or lower._category == 2):
        return promote_types(higher, lower)
    return higher


def result_type(dims_dtype: dtype | None, zero_dim_dtypes=(), scalars=()) -> dtype:
    """Promotion of dimensioned tensors, 0-d tensors and scalars (Note [Type promotion]).

    ``dims_dtype`` is the promoted dtype of the dimensioned tensors (or None).
    """
    zero = wrapped = None
    for d in zero_dim_dtypes:
        zero = d if zero is None else promote_types(zero, d)
    for sd in map(scalar_dtype, scalars):
        wrapped = sd if wrapped is None else promote_types(wrapped, sd)
    return combine_categories(dims_dtype, combine_categories(zero, wrapped))


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's casting rule: a cast may not lower the category (floating -> integral, numeric -> bool)."""
    for name, d in (("from_", from_), ("to", to)):
        if not isinstance(d, dtype):
            raise TypeError(f"can_cast(): argument '{name}' must be flow.dtype, not {type(d).__name__}")
    return from_._category <= to._category


def _info_dtype(fn: str, type_, floating: bool) -> dtype:
    if type_ is None:
        type_ = _default_float if floating else None
    if not isinstance(type_, dtype):
        raise TypeError(f"{fn}(): argument 'type' must be flow.dtype, not {type(type_).__name__}")
    if type_.is_floating_point != floating or type_ is bool_:
        kind, other = ("a floating point", "iinfo") if floating else ("an integer", "finfo")
        raise TypeError(f"{fn}() requires {kind} input type. Use oneflow_lite.{other} to handle '{fn}'")
    return type_


class finfo:
    """Machine limits of a floating dtype (PyTorch's ``finfo``): ``bits``, ``eps``, ``max``, ``min``, ``tiny``
    (= ``smallest_normal``), ``resolution`` and ``dtype`` (the name)."""

    __slots__ = ("bits", "dtype", "eps", "max", "min", "resolution", "smallest_normal", "tiny")

    def __init__(self, type=None):  # PyTorch's argument name
        d = _info_dtype("finfo", type, True)
        info = ml_dtypes.finfo(d.np_dtype) if d is bfloat16 else np.finfo(d.np_dtype)
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (PyTorch's ``iinfo``): ``bits``, ``max``, ``min`` and ``dtype`` (the name)."""

    __slots__ = ("bits", "dtype", "max", "min")

    def __init__(self, type):  # PyTorch's argument name
        d = _info_dtype("iinfo", type, False)
        info = np.iinfo(d.np_dtype)
        self.bits = info.bits
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


_FLOAT_MAX: dict = {}  # dtype -> its largest finite value (finfo is built once per dtype, not per call)


def holds(d: dtype, value) -> bool:
    """Whether a ``d`` holds the number ``value`` without overflow (PyTorch's scalar-conversion check): bool
    takes anything, a float type any value within its range or not finite, an integer type an int in range
    or a finite float in range (compared before truncation)."""
    if d is bool_:
        return True
    if d.is_floating_point:
        top = _FLOAT_MAX.get(d) or _FLOAT_MAX.setdefault(d, finfo(d).max)
        return not math.isfinite(value) or abs(value) <= top
    info = np.iinfo(d.np_dtype)
    if isinstance(value, float):  # PyTorch compares a float before truncating it: -0.5 does not fit uint8
        return math.isfinite(value) and info.min <= value <= info.max
    return info.min <= value <= info.max


def converts(d: dtype, value) -> bool:
    """PyTorch's check of a Python scalar operand (``where(c, t, s)``, ``alpha=``, ``value=``): :func:`holds`,
    except that an unsigned type also takes a negative integer down to ``-max`` (it wraps: uint8 -1 is 255)."""
    if d.is_floating_point or d is bool_ or d.is_signed or isinstance(value, float):
        return holds(d, value)
    top = int(np.iinfo(d.np_dtype).max)
    return -top <= value <= top
