"""Functional signatures in OneFlow's ``functional_api.yaml`` form.

``"Tensor (Tensor input, Tensor other, *, Scalar alpha=1) => Add"`` parses into a
:class:`Signature`: a return type, argument specs (type, name, default, whether
keyword-only) and the functor name. ``str(parse(s)) == s`` for a normalised ``s``.
``Signature.bind(args, kwargs)`` converts a call's arguments or raises
:class:`SignatureMismatch` saying why they do not fit.
"""

from __future__ import annotations

import ast
import re

import numpy as np

from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.generator import Generator
from oneflow_lite.framework.tensor import Tensor

_NO_DEFAULT = object()


class SignatureMismatch(TypeError):
    """The arguments of a call do not fit one signature."""


def _int(v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    raise SignatureMismatch


def _float(v):
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return float(v)
    raise SignatureMismatch


def _bool(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise SignatureMismatch


def _scalar(v):
    if isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, (np.bool_, np.integer, np.floating)):
        return v.item()
    raise SignatureMismatch


def _tensor(v):
    if isinstance(v, Tensor):
        return v
    raise SignatureMismatch


def _tensor_tuple(v):
    if isinstance(v, (list, tuple)) and all(isinstance(t, Tensor) for t in v):
        return tuple(v)
    raise SignatureMismatch


def _string(v):
    if isinstance(v, str):
        return v
    raise SignatureMismatch


def _int_list(v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return (int(v),)
    if isinstance(v, (list, tuple)):
        return tuple(_int(x) for x in v)
    raise SignatureMismatch


def _shape(v):
    if isinstance(v, (list, tuple)):
        return tuple(_int(x) for x in v)
    raise SignatureMismatch


def _dtype(v):
    if isinstance(v, dtypes.dtype):
        return v
    raise SignatureMismatch


def _device(v):
    if isinstance(v, Device):
        return v
    if isinstance(v, str):
        return Device(v)
    raise SignatureMismatch


def _generator(v):
    if isinstance(v, Generator):
        return v
    raise SignatureMismatch


# type name -> (converter, readable name for errors)
ARG_TYPES = {
    "Tensor": (_tensor, "Tensor"),
    "TensorTuple": (_tensor_tuple, "tuple of Tensors"),
    "Scalar": (_scalar, "Number"),
    "Int": (_int, "int"),
    "Float": (_float, "float"),
    "Bool": (_bool, "bool"),
    "String": (_string, "str"),
    "IntList": (_int_list, "int or tuple of ints"),
    "Shape": (_shape, "tuple of ints"),
    "DataType": (_dtype, "flow.dtype"),
    "Device": (_device, "flow.device"),
    "Generator": (_generator, "flow.Generator"),
}
RETURN_TYPES = ("Tensor", "TensorTuple", "Void", "Scalar", "Bool", "Int")
_PACKABLE = ("IntList", "Shape")


class ArgSpec:
    __slots__ = ("type", "name", "default", "default_text", "kw_only", "convert", "size")

    def __init__(self, type_, name, default_text, kw_only):
        base, size = type_, None
        m = re.fullmatch(r"IntList\[(\d+)\]", type_)
        if m:
            base, size = "IntList", int(m.group(1))
        if base not in ARG_TYPES:
            raise ValueError(f"unknown argument type {type_!r} for '{name}'; expected one of "
                             f"{', '.join(ARG_TYPES)} (IntList[N] for a fixed size)")
        self.type = type_
        self.name = name
        self.default_text = default_text
        self.default = _NO_DEFAULT if default_text is None else _literal(default_text, type_, name)
        self.kw_only = kw_only
        self.convert = ARG_TYPES[base][0]
        self.size = size

    @property
    def optional(self) -> bool:
        return self.default is None

    def __str__(self):
        return f"{self.type} {self.name}" + ("" if self.default_text is None else f"={self.default_text}")


def _literal(text, type_, name):
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"bad default {text!r} for argument '{name}'") from None
    return tuple(value) if isinstance(value, list) else value


class Signature:
    """One overload: ``Tensor (Tensor x, *, Bool inplace=False) => Relu``."""

    def __init__(self, text: str):
        m = re.fullmatch(r"\s*(\w+)\s*\((.*)\)\s*=>\s*(\w+)\s*", text)
        if not m:
            raise ValueError(f"cannot parse signature {text!r}; expected 'Ret (Type name, ...) => Functor'")
        self.return_type, params, self.functor_name = m.groups()
        if self.return_type not in RETURN_TYPES:
            raise ValueError(f"signature {text!r}: unknown return type {self.return_type!r}")
        self.args: list[ArgSpec] = []
        kw_only = False
        for part in _split_params(params):
            if part == "*":
                if kw_only:
                    raise ValueError(f"signature {text!r}: '*' given twice")
                kw_only = True
                continue
            pm = re.fullmatch(r"(\w+(?:\[\d+\])?)\s+(\w+)(?:\s*=\s*(.+))?", part)
            if not pm:
                raise ValueError(f"signature {text!r}: cannot parse argument {part!r}")
            self.args.append(ArgSpec(pm.group(1), pm.group(2), pm.group(3), kw_only))
        names = [a.name for a in self.args]
        if len(set(names)) != len(names):
            raise ValueError(f"signature {text!r}: an argument name is used twice")
        seen_default = False
        for a in self.args:
            if a.kw_only:
                break
            if a.default is not _NO_DEFAULT:
                seen_default = True
            elif seen_default:
                raise ValueError(f"signature {text!r}: '{a.name}' without a default follows one with a default")
        self.positional = [a for a in self.args if not a.kw_only]
        self.by_name = {a.name: a for a in self.args}
        self._fast_arity = len(self.positional) if all(a.default is _NO_DEFAULT for a in self.positional) else -1

    def params_text(self) -> str:
        parts, star = [], False
        for a in self.args:
            if a.kw_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        return "(" + ", ".join(parts) + ")"

    def __str__(self):
        return f"{self.return_type} {self.params_text()} => {self.functor_name}"

    def __repr__(self):
        return f"Signature({str(self)!r})"

    def bind(self, fname: str, args: tuple, kwargs: dict) -> list:
        """The converted values of every argument in declaration order, or SignatureMismatch."""
        positional = self.positional
        if len(args) > len(positional):
            last = positional[-1] if positional else None
            if last is not None and last.type in _PACKABLE and len(positional) - 1 < len(args) \
                    and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                            for v in args[len(positional) - 1:]):
                args = (*args[:len(positional) - 1], tuple(args[len(positional) - 1:]))
            else:
                raise SignatureMismatch(f"{fname}() takes {len(positional)} positional argument(s) "
                                        f"but {len(args)} were given")
        values = []
        for i, spec in enumerate(self.args):
            if i < len(args):
                if spec.name in kwargs:
                    raise SignatureMismatch(f"{fname}() got multiple values for argument '{spec.name}'")
                v = args[i]
            elif spec.name in kwargs:
                v = kwargs[spec.name]
            elif spec.default is not _NO_DEFAULT:
                values.append(spec.default)
                continue
            else:
                raise SignatureMismatch(f"{fname}() missing required argument '{spec.name}' (pos {i + 1})")
            if v is None and spec.default is None:
                values.append(None)
                continue
            try:
                v = spec.convert(v)
            except SignatureMismatch:
                where = f"position {i + 1}" if i < len(args) else "keyword"
                raise SignatureMismatch(f"{fname}(): argument '{spec.name}' ({where}) must be "
                                        f"{ARG_TYPES[spec.type.split('[')[0]][1]}, not {type(v).__name__}") from None
            if spec.size is not None:
                if len(v) == 1:
                    v = v * spec.size
                elif len(v) != spec.size:
                    raise SignatureMismatch(f"{fname}(): argument '{spec.name}' must have {spec.size} "
                                            f"elements, got {len(v)}")
            values.append(v)
        if kwargs:
            unknown = [k for k in kwargs if k not in self.by_name]
            if unknown:
                raise SignatureMismatch(f"{fname}() got an unexpected keyword argument '{unknown[0]}'")
        return values


def _split_params(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return parts


def parse(text: str) -> Signature:
    return Signature(text)


def describe_call(args, kwargs) -> str:
    """``(Tensor, int, *, alpha=float)``: the types of a call, for the no-overload error."""
    parts = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


__all__ = ["Signature", "SignatureMismatch", "parse", "ARG_TYPES"]
