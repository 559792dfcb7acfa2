"""Functional signatures in OneFlow's ``functional_api.yaml`` form.

``"Tensor (Tensor input, Tensor other, *, Scalar alpha=1) => Add"`` parses into a
:class:`Signature`: a return type, argument specs (type, name, default, whether
keyword-only) and the functor name. ``str(parse(s)) == s`` for a normalised ``s``.
``Signature.bind(args, kwargs)`` converts a call's arguments or raises
:class:`SignatureMismatch` saying why they do not fit.

The same argument grammar, in PyTorch's ``ns::name(args) -> returns`` form, is the
schema of an op defined with ``flow.library.define``: :func:`parse_schema` gives a
:class:`FunctionSchema` (``str(parse_schema(s)) == s`` for a normalised ``s``), and
``FunctionSchema.signature(functor)`` the functional :class:`Signature` of its calls.
A type followed by ``?`` (``Tensor? bias``) also accepts None.
"""

from __future__ import annotations

import ast
import re

import numpy as np

from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework import sbp as sbp_mod
from oneflow_lite.framework.generator import Generator
from oneflow_lite.framework.placement import placement as Placement
from oneflow_lite.framework.tensor import Tensor

_NO_DEFAULT = object()


class SignatureMismatch(TypeError):
    """The arguments of a call do not fit one signature.

    The message is formatted only when it is read: while overloads are being
    tried, a mismatch is an ordinary, cheap outcome.
    """

    missing_keyword = False

    def __init__(self, template: str = "", *params):
        super().__init__(template)
        self.template = template
        self.params = params

    def __str__(self):
        return self.template.format(*self.params) if self.params else self.template


# Converters return the converted value, or BAD when the value does not fit.
BAD = object()


def _int(v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    return BAD


def _float(v):
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return float(v)
    return BAD


def _bool(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    return BAD


def _scalar(v):
    """A plain Python bool, int or float: functors test ``type(v) is float`` etc."""
    t = type(v)
    if t is float or t is int or t is bool:
        return v
    if isinstance(v, (np.bool_, np.integer, np.floating)):  # before float: np.float64 subclasses float
        return v.item()
    if isinstance(v, (int, float)):  # other subclasses (IntEnum, ...)
        return float(v) if isinstance(v, float) else int(v)
    return BAD


def _tensor(v):
    if isinstance(v, Tensor):
        return v
    return BAD


def _tensor_tuple(v):
    if isinstance(v, (list, tuple)) and all(isinstance(t, Tensor) for t in v):
        return tuple(v)
    return BAD


def _string(v):
    if isinstance(v, str):
        return v
    return BAD


def _int_tuple(v):
    out = tuple(_int(x) for x in v)
    return BAD if BAD in out else out


def _int_list(v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return (int(v),)
    if isinstance(v, (list, tuple)):
        return _int_tuple(v)
    return BAD


def _float_list(v):
    """A number (one float) or a list / tuple of numbers: ``interpolate(scale_factor=...)``."""
    if isinstance(v, (list, tuple)):
        out = tuple(_float(x) for x in v)
        return BAD if BAD in out else out
    f = _float(v)
    return BAD if f is BAD else (f,)


def _optional_int_list(v):
    """An int or a list / tuple of ints and Nones: ``adaptive_avg_pool2d(output_size=(None, 7))``."""
    if isinstance(v, (list, tuple)):
        out = tuple(None if x is None else _int(x) for x in v)
        return BAD if BAD in out else out
    return _int_list(v)


def _shape(v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return (int(v),)  # reshape(6), zeros(5): a lone int is a 1-d shape, as in OneFlow
    if isinstance(v, (list, tuple)):
        return _int_tuple(v)
    return BAD


def _dtype(v):
    if isinstance(v, dtypes.dtype):
        return v
    return BAD


def _device(v):
    if isinstance(v, Device):
        return v
    if isinstance(v, str):
        return Device(v)
    return BAD


def _generator(v):
    if isinstance(v, Generator):
        return v
    return BAD


def _placement(v):
    return v if isinstance(v, Placement) else BAD


def _sbp_list(v):
    """One SBP or a tuple / list of them (an nd-SBP; its length is checked against the placement later)."""
    if isinstance(v, sbp_mod.sbp):
        return (v,)
    if isinstance(v, (tuple, list)) and v and all(isinstance(s, sbp_mod.sbp) for s in v):
        return tuple(v)
    return BAD


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
    "FloatList": (_float_list, "float or tuple of floats"),
    "OptionalIntList": (_optional_int_list, "int or tuple of ints and Nones"),
    "Shape": (_shape, "int or tuple of ints"),
    "DataType": (_dtype, "flow.dtype"),
    "Device": (_device, "flow.device"),
    "Generator": (_generator, "flow.Generator"),
    "Placement": (_placement, "flow.placement"),
    "SbpList": (_sbp_list, "flow.sbp.split(d), broadcast or partial_sum, or a tuple of them"),
}
RETURN_TYPES = ("Tensor", "TensorTuple", "Void", "Scalar", "Bool", "Int")
_PACKABLE = ("IntList", "Shape")


class ArgSpec:
    __slots__ = ("type", "name", "default", "default_text", "kw_only", "convert", "size", "nullable")

    def __init__(self, type_, name, default_text, kw_only):
        self.nullable = type_.endswith("?")  # ``Tensor? bias``: None is a value of the argument
        base, size = type_.rstrip("?"), None
        m = re.fullmatch(r"IntList\[(\d+)\]", base)
        if m:
            base, size = "IntList", int(m.group(1))
        if base not in ARG_TYPES:
            raise ValueError(f"unknown argument type {type_!r} for '{name}'; expected one of "
                             f"{', '.join(ARG_TYPES)} (IntList[N] for a fixed size; a trailing '?' accepts None)")
        self.type = type_
        self.name = name
        self.default_text = default_text
        self.kw_only = kw_only
        self.convert = ARG_TYPES[base][0]
        self.size = size
        self.default = _NO_DEFAULT
        if default_text is not None:
            # A default is converted as a passed value would be: "Float alpha=1" gives 1.0, "IntList[2] s=1" (1, 1).
            value = _literal(default_text, type_, name)
            if value is not None:
                converted = self.convert(value)
                try:
                    if converted is BAD:
                        raise SignatureMismatch(f"expected {ARG_TYPES[base][1]}")
                    value = self.fit_size(converted)
                except SignatureMismatch as e:
                    raise ValueError(f"bad default {default_text!r} for argument '{name}': {e}") from None
            self.default = value

    def fit_size(self, v):
        """A converted IntList[N] value made N long (a single int is repeated), else ``v`` unchanged."""
        if self.size is not None:
            if len(v) == 1:
                return v * self.size
            if len(v) != self.size:
                raise SignatureMismatch("argument '{}' must have {} elements, got {}", self.name, self.size, len(v))
        return v

    @property
    def optional(self) -> bool:
        """Whether None is accepted: ``Type? name`` or a None default."""
        return self.nullable or self.default is None

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    @property
    def base_type(self) -> str:
        """The type without its size and ``?``: ``IntList[2]?`` -> ``IntList``."""
        return self.type.rstrip("?").split("[")[0]

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
        self.args: list[ArgSpec] = parse_params(params, f"signature {text!r}")
        self.positional = [a for a in self.args if not a.kw_only]
        self.by_name = {a.name: a for a in self.args}
        self.required_keywords = tuple(a for a in self.args if a.kw_only and not a.has_default)

    def params_text(self) -> str:
        return params_text(self.args)

    def __str__(self):
        return f"{self.return_type} {self.params_text()} => {self.functor_name}"

    def __repr__(self):
        return f"Signature({str(self)!r})"

    def bind(self, fname: str, args: tuple, kwargs: dict) -> list:
        """The converted values of every argument in declaration order, or SignatureMismatch."""
        for spec in self.required_keywords:  # checked first: a call without them did not ask for this overload
            if not kwargs or spec.name not in kwargs:
                err = SignatureMismatch("{}() missing required keyword argument '{}'", fname, spec.name)
                err.missing_keyword = True  # (functional.py reports the other overloads' errors)
                raise err
        positional = self.positional
        if len(args) >= len(positional) and positional and positional[-1].type == "TensorTuple" \
                and all(isinstance(v, Tensor) for v in args[len(positional) - 1:]):
            # A last TensorTuple parameter also takes its tensors as varargs: einsum("ij,jk", a, b).
            args = (*args[:len(positional) - 1], tuple(args[len(positional) - 1:]))
        if len(args) > len(positional):
            last = positional[-1] if positional else None
            if last is not None and last.type in _PACKABLE and len(positional) - 1 < len(args) \
                    and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                            for v in args[len(positional) - 1:]):
                args = (*args[:len(positional) - 1], tuple(args[len(positional) - 1:]))
            else:
                raise SignatureMismatch("{}() takes {} positional argument(s) but {} were given",
                                        fname, len(positional), len(args))
        values = []
        n_args = len(args)
        for i, spec in enumerate(self.args):
            if i < n_args:
                if kwargs and spec.name in kwargs:
                    raise SignatureMismatch("{}() got multiple values for argument '{}'", fname, spec.name)
                v = args[i]
            elif kwargs and spec.name in kwargs:
                v = kwargs[spec.name]
            elif spec.default is not _NO_DEFAULT:
                values.append(spec.default)
                continue
            else:
                raise SignatureMismatch("{}() missing required argument '{}' (pos {})", fname, spec.name, i + 1)
            if v is None and (spec.default is None or spec.nullable):
                values.append(None)
                continue
            converted = spec.convert(v)
            if converted is BAD:
                raise SignatureMismatch("{}(): argument '{}' ({}) must be {}, not {}", fname, spec.name,
                                        f"position {i + 1}" if i < n_args else "keyword",
                                        ARG_TYPES[spec.base_type][1], type(v).__name__)
            if spec.size is not None:
                try:
                    converted = spec.fit_size(converted)
                except SignatureMismatch as e:
                    raise SignatureMismatch("{}(): {}", fname, e) from None
            values.append(converted)
        if kwargs:
            unknown = [k for k in kwargs if k not in self.by_name]
            if unknown:
                raise SignatureMismatch("{}() got an unexpected keyword argument '{}'", fname, unknown[0])
        return values


def parse_params(params: str, where: str) -> list[ArgSpec]:
    """The argument specs of a parameter list ``Type name[=default], ..., *, ...`` (the grammar shared by
    functional signatures and op schemas); ValueError naming ``where`` when it does not parse."""
    args: list[ArgSpec] = []
    kw_only = False
    for part in _split_params(params):
        if part == "*":
            if kw_only:
                raise ValueError(f"{where}: '*' given twice")
            kw_only = True
            continue
        pm = re.fullmatch(r"(\w+(?:\[\d+\])?\??)\s+(\w+)(?:\s*=\s*(.+))?", part)
        if not pm:
            raise ValueError(f"{where}: cannot parse argument {part!r}; expected 'Type name' or 'Type name=default'")
        try:
            args.append(ArgSpec(pm.group(1), pm.group(2), pm.group(3), kw_only))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    names = [a.name for a in args]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: an argument name is used twice")
    seen_default = False
    for a in args:
        if a.kw_only:
            break
        if a.default is not _NO_DEFAULT:
            seen_default = True
        elif seen_default:
            raise ValueError(f"{where}: '{a.name}' without a default follows one with a default")
    return args


def params_text(args) -> str:
    """``(Type name, *, Type name=default)``: the text of a parameter list."""
    parts, star = [], False
    for a in args:
        if a.kw_only and not star:
            parts.append("*")
            star = True
        parts.append(str(a))
    return "(" + ", ".join(parts) + ")"


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


_SCHEMA_FORM = "'namespace::name(Type arg, ..., *, Type arg=default) -> Tensor'"


class FunctionSchema:
    """An op schema, ``my_ns::scale(Tensor x, *, Float factor=2.0) -> Tensor``: a namespace and a name, the
    arguments in the functional grammar, and the returns: ``Tensor``, ``TensorTuple`` (as many tensors as the
    op makes) or ``(Tensor, Tensor)`` (optionally named: ``(Tensor values, Tensor indices)``)."""

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"expected a schema string {_SCHEMA_FORM}, got {type(text).__name__}")
        m = re.fullmatch(r"\s*(\w+)::([\w.]+)\s*\((.*)\)\s*->\s*(.+?)\s*", text)
        if not m:
            raise ValueError(f"cannot parse schema {text!r}; expected {_SCHEMA_FORM}")
        self.namespace, self.name, params, returns = m.groups()
        if "." in self.name:
            raise ValueError(f"schema {text!r}: overload names ('{self.name}') are not supported; give each "
                             f"overload its own op name")
        where = f"schema {text!r}"
        self.args: list[ArgSpec] = parse_params(params, where)
        self.returns: tuple = _parse_returns(returns, where)  # output names (None: unnamed); () for TensorTuple

    @property
    def qualname(self) -> str:
        return f"{self.namespace}::{self.name}"

    @property
    def returns_tuple(self) -> bool:
        """Whether the op returns a tuple of tensors (``TensorTuple`` or ``(Tensor, ...)``)."""
        return self.returns != (None,) or self.variadic_returns

    @property
    def variadic_returns(self) -> bool:
        """``-> TensorTuple``: the number of outputs is known only from the op's fake (meta) function."""
        return self.returns == ()

    def returns_text(self) -> str:
        if self.variadic_returns:
            return "TensorTuple"
        if self.returns == (None,):
            return "Tensor"
        return "(" + ", ".join("Tensor" if n is None else f"Tensor {n}" for n in self.returns) + ")"

    def signature(self, functor_name: str) -> Signature:
        """The functional signature of the op's calls, run by the functor ``functor_name``."""
        ret = "TensorTuple" if self.returns_tuple else "Tensor"
        return Signature(f"{ret} {params_text(self.args)} => {functor_name}")

    def __str__(self):
        return f"{self.qualname}{params_text(self.args)} -> {self.returns_text()}"

    def __repr__(self):
        return f"FunctionSchema({str(self)!r})"


def _parse_returns(text: str, where: str) -> tuple:
    if text == "Tensor":
        return (None,)
    if text == "TensorTuple":
        return ()
    m = re.fullmatch(r"\((.*)\)", text)
    items = [p.strip() for p in m.group(1).split(",")] if m else [text]
    names = []
    for item in items:
        rm = re.fullmatch(r"Tensor(?:\s+(\w+))?", item)
        if not rm:
            raise ValueError(f"{where}: cannot parse the returns {text!r}; expected 'Tensor', 'TensorTuple' or "
                             f"'(Tensor, Tensor)' (optionally named: '(Tensor values, Tensor indices)')")
        names.append(rm.group(1))
    if len([n for n in names if n is not None]) != len({n for n in names if n is not None}):
        raise ValueError(f"{where}: a return name is used twice")
    return tuple(names)


def parse_schema(text: str) -> FunctionSchema:
    """The :class:`FunctionSchema` of ``ns::name(args) -> returns``; ValueError saying what does not parse."""
    return FunctionSchema(text)


def describe_call(args, kwargs) -> str:
    """``(Tensor, int, *, alpha=float)``: the types of a call, for the no-overload error."""
    parts = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


__all__ = ["ARG_TYPES", "FunctionSchema", "Signature", "SignatureMismatch", "parse", "parse_schema"]
