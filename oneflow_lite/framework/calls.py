"""``F``: the functional calls by name, for code below the functional layer.

Gradient rows (framework/derivatives.py) and composite functors call other ops.
Those modules sit in layers that may not import the functional API (it is built
above them), so they write ``F.mul(a, b)`` and the name is looked up when it is
first used, through resolvers the upper layers register at import
(Note [Calls by name]).

Note [Calls by name]
``F.<name>`` resolves, in order: a helper registered with ``register_call`` (the
backward formulas' fast helpers: ``F.mul``, ``F.reduce_to``, ...); a function of
the functional API (``flow._C.<name>``); an op type, called as
``F.<op_type>(*inputs, attrs=None, **attrs)`` (``F.relu_grad(dy, y)``). ``F.ops.<op_type>``
is always the op. ``F`` and ``F.ops`` are module objects whose module-level
``__getattr__`` (PEP 562) resolves a name on its first lookup and stores it as a
module attribute, so later reads are what reading a module's function costs (the
interpreter specialises it: about 10 ns, against 25 ns on an instance of a class
with ``__getattr__``). Names are added with ``register_call``, never by assigning
to ``F``. A name nothing resolves raises AttributeError naming the places searched.
"""

from __future__ import annotations

import threading
import types
from typing import Callable

_helpers: dict[str, Callable] = {}
_ORDER = ("functional", "op")
_resolvers: list[tuple[str, Callable]] = []  # (what it resolves, name -> callable or None), in _ORDER
_lock = threading.Lock()


def _resolve_op(op_type: str):
    """``F.ops.<op_type>``: the op called with positional inputs and its attrs (PEP 562 module ``__getattr__``)."""
    if op_type.startswith("__"):
        raise AttributeError(op_type)
    for what, resolve in _resolvers:
        if what == "op":
            fn = resolve(op_type)
            if fn is not None:
                setattr(_OPS, op_type, fn)
                return fn
    raise AttributeError(f"F.ops: no op type '{op_type}' is registered")


def _resolve(name: str):
    """``F.<name>`` on first use (PEP 562 module ``__getattr__``): a helper, a functional function or an op type."""
    if name.startswith("__"):
        raise AttributeError(name)
    fn = _helpers.get(name)
    if fn is None:
        for _, resolve in _resolvers:
            fn = resolve(name)
            if fn is not None:
                break
    if fn is None:
        searched = ", ".join(["registered helpers"] + [what for what, _ in _resolvers])
        raise AttributeError(f"F.{name}: no call of that name (searched: {searched})")
    setattr(F, name, fn)
    return fn


def _namespace(name: str, doc: str, getattr_fn) -> types.ModuleType:
    """A module object whose missing attributes ``getattr_fn`` resolves (Note [Calls by name]: a resolved name is
    then a module attribute, which the interpreter reads in one specialised dict lookup)."""
    m = types.ModuleType(name, doc)
    m.__getattr__ = getattr_fn
    m.__dir__ = lambda: sorted(_helpers)
    return m


_OPS = _namespace(__name__ + ".F.ops", "F.ops.<op_type>: an op called with positional inputs and attrs.", _resolve_op)
F = _namespace(__name__ + ".F", "The namespace of calls by name (Note [Calls by name]).", _resolve)
F.ops = _OPS
_BASE_NAMES = frozenset(F.__dict__)  # the module's own attributes, kept when the resolved names are dropped


def _forget_resolved() -> None:
    for ns in (F, _OPS):
        for name in [n for n in ns.__dict__ if n not in _BASE_NAMES and not (ns is F and n == "ops")]:
            del ns.__dict__[name]


def functional(name: str) -> Callable:
    """The functional API's function ``name`` (``flow._C.<name>``), skipping the registered helpers."""
    for what, resolve in _resolvers:
        if what == "functional":
            fn = resolve(name)
            if fn is not None:
                return fn
    raise AttributeError(f"no functional function '{name}'")


def register_call(name: str, fn: Callable) -> None:
    """Make ``F.<name>`` call ``fn`` (ahead of the functional API and op types)."""
    if not callable(fn):
        raise TypeError(f"register_call('{name}'): expected a callable, got {fn!r}")
    with _lock:
        _helpers[name] = fn
        F.__dict__.pop(name, None)  # resolved again on next use


def add_resolver(what: str, resolve: Callable) -> None:
    """Add a resolver tried after the helpers: ``what`` is ``"functional"`` or ``"op"`` (tried in that order)."""
    if what not in _ORDER:
        raise ValueError(f"add_resolver: what must be one of {_ORDER}, got {what!r}")
    with _lock:
        _resolvers.append((what, resolve))
        _resolvers.sort(key=lambda r: _ORDER.index(r[0]))
        _forget_resolved()
