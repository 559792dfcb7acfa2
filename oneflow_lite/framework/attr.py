"""Typed op attributes: normalisation of Python values, the immutable ``AttrMap``,
and conversion to and from ``AttrValue`` protos.

Attribute values are kept as plain, hashable Python values (ints, floats, tuples,
``flow.dtype``, ``flow.device``); protos are made only when a conf is written
(OpBuilder, UserOpDef, graph capture), never on the eager path.
"""

from __future__ import annotations

import numbers
import struct

import numpy as np

from oneflow_lite._proto import attr_value_pb2 as pb
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.device import device as Device

ATTR_TYPES = ("int32", "int64", "bool", "float", "double", "string", "shape", "data_type",
              "list_int32", "list_int64", "list_float", "list_data_type", "list_shape", "list_string",
              "device")
# AttrType enum value of each type name: its 1-based position (field numbers equal enum values).
ATTR_TYPE_ENUM = {name: i + 1 for i, name in enumerate(ATTR_TYPES)}
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class AttrTypeError(TypeError):
    """A value does not fit an attribute's declared type."""


def _int(value, type_name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise AttrTypeError(f"expected an integer ({type_name}), got {type(value).__name__} {value!r}")
    value = int(value)
    lo, hi = _INT_RANGES.get(type_name, _INT_RANGES["int64"])
    if not lo <= value <= hi:
        raise AttrTypeError(f"{value} does not fit in {type_name}")
    return value


def _float(value, type_name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AttrTypeError(f"expected a number ({type_name}), got {type(value).__name__} {value!r}")
    return float(value)


def _bool(value, type_name):
    if not isinstance(value, (bool, np.bool_)):
        raise AttrTypeError(f"expected a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def _string(value, type_name):
    if not isinstance(value, str):
        raise AttrTypeError(f"expected a str, got {type(value).__name__} {value!r}")
    return value


def _shape(value, type_name):
    if not isinstance(value, (tuple, list)):
        raise AttrTypeError(f"expected a shape (tuple of ints), got {type(value).__name__} {value!r}")
    return tuple(_int(v, "int64") for v in value)


def _data_type(value, type_name):
    if not isinstance(value, dtypes.dtype):
        raise AttrTypeError(f"expected a flow.dtype, got {type(value).__name__} {value!r}")
    return value


def _device(value, type_name):
    if isinstance(value, str):
        return Device(value)
    if not isinstance(value, Device):
        raise AttrTypeError(f"expected a flow.device or device string, got {type(value).__name__} {value!r}")
    return value


def _list_of(item):
    def normalise(value, type_name):
        if not isinstance(value, (tuple, list)):
            raise AttrTypeError(f"expected a list for {type_name}, got {type(value).__name__} {value!r}")
        return tuple(item(v, type_name[5:]) for v in value)
    return normalise


_NORMALISERS = {
    "int32": _int, "int64": _int, "bool": _bool, "float": _float, "double": _float,
    "string": _string, "shape": _shape, "data_type": _data_type, "device": _device,
    "list_int32": _list_of(_int), "list_int64": _list_of(_int), "list_float": _list_of(_float),
    "list_data_type": _list_of(_data_type), "list_shape": _list_of(_shape),
    "list_string": _list_of(_string),
}


def normalise(type_name: str, value):
    """``value`` as the canonical hashable Python value of ``type_name``; AttrTypeError if it does not fit."""
    return _NORMALISERS[type_name](value, type_name)


def to_proto(type_name: str, value) -> pb.AttrValue:
    """The ``AttrValue`` of a normalised value."""
    av = pb.AttrValue()
    if type_name in ("int32", "int64", "bool", "float", "double", "string"):
        setattr(av, "at_" + type_name, value)
    elif type_name == "shape":
        av.at_shape.dim.extend(value)
    elif type_name == "data_type":
        av.at_data_type = value.proto
    elif type_name == "device":
        av.at_device.device_type = value.type
        av.at_device.device_id = value.index
    elif type_name == "list_data_type":
        av.at_list_data_type.val.extend(d.proto for d in value)
    elif type_name == "list_shape":
        for shape in value:
            av.at_list_shape.val.add().dim.extend(shape)
    else:
        getattr(av, "at_" + type_name).val.extend(value)
    return av


def from_proto(av: pb.AttrValue):
    """(type name, Python value) of an ``AttrValue``."""
    case = av.WhichOneof("value")
    if case is None:
        raise ValueError("AttrValue has no value set")
    type_name = case[3:]
    raw = getattr(av, case)
    if type_name in ("int32", "int64", "bool", "float", "double", "string"):
        return type_name, raw
    if type_name == "shape":
        return type_name, tuple(raw.dim)
    if type_name == "data_type":
        return type_name, dtypes.from_proto(raw)
    if type_name == "device":
        return type_name, Device(raw.device_type, raw.device_id)
    if type_name == "list_data_type":
        return type_name, tuple(dtypes.from_proto(v) for v in raw.val)
    if type_name == "list_shape":
        return type_name, tuple(tuple(s.dim) for s in raw.val)
    return type_name, tuple(raw.val)


class AttrMap(frozenset):
    """An immutable, hashable mapping of attribute names to values.

    Usable as a cache key. ``base.merged(call)`` gives the map in which ``call``'s
    values override ``base``'s (call-time attrs over an op expr's attrs over the
    definition's defaults).
    """

    # Note [Typed attr map equality]
    # Maps compare equal only when their values have the same types as well as equal values:
    # {"n": 1}, {"n": 1.0} and {"n": True} are three maps. The meta-inference cache is keyed
    # by call-time AttrMaps before they are validated, so a hit must never let a value of the
    # wrong type skip the attr type check that the first call of that map went through.
    # Floats compare by their bits: a cache hit hands the kernel the first call's attrs, and
    # 0.0 == -0.0 although x / -0.0 is -inf (and nan != nan would never hit).
    # The map *is* the frozenset of its typed items ``(name, (type, value))``, with a dict
    # beside it for lookups: hashing (cached by frozenset) and equality run in C, so a cache
    # lookup keyed by a map costs no Python call.
    __slots__ = ("_d",)

    def __new__(cls, items=()):
        d = dict(items)
        self = frozenset.__new__(cls, [(name, _typed(v)) for name, v in d.items()])
        self._d = d
        return self

    def __getitem__(self, name):
        return self._d[name]

    def get(self, name, default=None):
        return self._d.get(name, default)

    def __contains__(self, name):
        return name in self._d

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def keys(self):
        return self._d.keys()

    def items(self):
        return self._d.items()

    def values(self):
        return self._d.values()

    def __setitem__(self, name, value):
        raise TypeError("AttrMap is immutable; use merged() to make a new one")

    def __delitem__(self, name):
        raise TypeError("AttrMap is immutable; use merged() to make a new one")

    def __reduce__(self):
        return (AttrMap, (self._d,))

    def merged(self, overrides) -> "AttrMap":
        """A new map with ``overrides`` (a mapping or AttrMap) on top of this one."""
        if not overrides:
            return self
        d = dict(self._d)
        d.update(overrides.items() if isinstance(overrides, AttrMap) else overrides)
        return AttrMap(d)

    def __repr__(self):
        return "AttrMap(" + ", ".join(f"{k}={v!r}" for k, v in self._d.items()) + ")"


def _typed(v):
    t = type(v)
    if t is tuple or t is list:
        return tuple, tuple(_typed(x) for x in v)
    if t is float:
        return float, _double_bits(v)
    return t, v


_double_bits = struct.Struct("<d").pack


EMPTY_ATTRS = AttrMap()
