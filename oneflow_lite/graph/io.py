"""Nested graph inputs and outputs: flattening to tensor leaves and back.

A *spec* describes a nested value without its tensors: ``("T", i)`` is the i-th
tensor leaf, ``("N",)`` None, ``("S", v)`` a Python scalar (bool, int, float),
``("tuple", (...))``, ``("list", (...))`` and ``("dict", ((key, spec), ...))``
(str or int keys). Specs are hashable (part of a graph's input signature) and
convert to and from JSON (saved graphs).
"""

from __future__ import annotations

from oneflow_lite.framework.tensor import LAZY_KEY_SET, Tensor

_SCALARS = (bool, int, float)
_ALLOWED = ("Tensors, None, Python scalars (bool, int, float) and tuples, lists and dicts (str or int keys) "
            "of them")


def _join(path: str, part) -> str:
    return f"{path}.{part}" if path else str(part)


def flatten(value, what: str, graph_name: str, leaves: list | None = None):
    """(spec, [(path, tensor), ...]) of ``value``; a TypeError naming the path of an unsupported leaf.

    The paths of a tuple's or list's items are their indices, of a dict's values their keys, joined by
    dots (``0.1.weight``); ``leaves`` continues an earlier call's list."""
    if leaves is None:
        leaves = []

    def walk(v, p):
        t = type(v)
        if isinstance(v, Tensor):
            leaves.append((p, v))
            return ("T", len(leaves) - 1)
        if v is None:
            return ("N",)
        if t in _SCALARS:
            return ("S", v)
        if t is tuple or t is list:
            return (t.__name__, tuple([walk(x, _join(p, i)) for i, x in enumerate(v)]))
        if t is dict:
            items = []
            for k, x in v.items():
                if type(k) not in (str, int):
                    raise TypeError(f"nn.Graph '{graph_name}': {what} '{p or '<root>'}' is a dict with a key of type "
                                    f"{type(k).__name__}; {what}s may be {_ALLOWED}")
                items.append((k, walk(x, _join(p, k))))
            return ("dict", tuple(items))
        raise TypeError(f"nn.Graph '{graph_name}': {what} '{p or '<root>'}' has type {t.__name__}; "
                        f"{what}s may be {_ALLOWED}")

    spec = walk(value, "")
    return spec, leaves


def check_eager_inputs(leaves, graph_name: str) -> None:
    for p, t in leaves:
        if t._key_set & LAZY_KEY_SET:
            raise RuntimeError(f"nn.Graph '{graph_name}': input '{p}' is a lazy tensor ({t._array.describe()}); "
                               f"a graph's inputs must be eager tensors (graphs cannot be called inside another "
                               f"graph's build())")


def unflatten(spec, tensors):
    """The nested value of ``spec`` with ``tensors`` at its tensor leaves."""
    kind = spec[0]
    if kind == "T":
        return tensors[spec[1]]
    if kind == "N":
        return None
    if kind == "S":
        return spec[1]
    if kind == "tuple":
        return tuple([unflatten(s, tensors) for s in spec[1]])
    if kind == "list":
        return [unflatten(s, tensors) for s in spec[1]]
    return {k: unflatten(s, tensors) for k, s in spec[1]}


def to_json(spec):
    """``spec`` as JSON-compatible lists."""
    kind = spec[0]
    if kind in ("T", "N", "S"):
        return list(spec)
    if kind == "dict":
        return [kind, [[k, to_json(s)] for k, s in spec[1]]]
    return [kind, [to_json(s) for s in spec[1]]]


def from_json(value):
    """The spec of :func:`to_json`'s output; ValueError when it is not one."""
    if not isinstance(value, list) or not value:
        raise ValueError(f"bad structure entry {value!r}")
    kind = value[0]
    if kind == "T" and len(value) == 2 and type(value[1]) is int:
        return ("T", value[1])
    if kind == "N" and len(value) == 1:
        return ("N",)
    if kind == "S" and len(value) == 2 and type(value[1]) in _SCALARS:
        return ("S", value[1])
    if kind in ("tuple", "list") and len(value) == 2 and isinstance(value[1], list):
        return (kind, tuple([from_json(s) for s in value[1]]))
    if kind == "dict" and len(value) == 2 and isinstance(value[1], list):
        items = []
        for item in value[1]:
            if not (isinstance(item, list) and len(item) == 2 and type(item[0]) in (str, int)):
                raise ValueError(f"bad dict item {item!r}")
            items.append((item[0], from_json(item[1])))
        return ("dict", tuple(items))
    raise ValueError(f"bad structure entry {value!r}")


def describe_call(args_spec, kwargs_spec, metas) -> str:
    """The signature of a call: ``(float32[4, 3], 2, mask=bool[4])``."""
    parts = [describe(s, metas) for s in args_spec[1]]
    parts += [f"{k}={describe(s, metas)}" for k, s in kwargs_spec[1]]
    return f"({', '.join(parts)})"


def describe(spec, metas) -> str:
    """A short text of a signature: ``(float32[4, 3], None, 2)``."""
    kind = spec[0]
    if kind == "T":
        m = metas[spec[1]]
        return f"{m.dtype.name}[{', '.join(map(str, m.shape))}]"
    if kind == "N":
        return "None"
    if kind == "S":
        return repr(spec[1])
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {describe(s, metas)}" for k, s in spec[1]) + "}"
    inner = ", ".join(describe(s, metas) for s in spec[1])
    return f"({inner}{',' if kind == 'tuple' and len(spec[1]) == 1 else ''})" if kind == "tuple" else f"[{inner}]"
