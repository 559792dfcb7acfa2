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
is always the op. The first lookup of a name stores the result on ``F``, so later
calls cost one attribute read. A name nothing resolves raises AttributeError
naming the places searched.
"""

from __future__ import annotations

import threading
from typing import Callable

_helpers: dict[str, Callable] = {}
_ORDER = ("functional", "op")
_resolvers: list[tuple[str, Callable]] = []  # (what it resolves, name -> callable or None), in _ORDER
_lock = threading.Lock()


class _Ops:
    """``F.ops.<op_type>``: an op called with positional inputs and its attrs."""

    def __getattr__(self, op_type: str):
        for what, resolve in _resolvers:
            if what == "op":
                fn = resolve(op_type)
                if fn is not None:
                    object.__setattr__(self, op_type, fn)
                    return fn
        raise AttributeError(f"F.ops: no op type '{op_type}' is registered")


class Calls:
    """The namespace of calls by name (Note [Calls by name])."""

    def __init__(self):
        object.__setattr__(self, "ops", _Ops())

    def __getattr__(self, name: str):
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
        object.__setattr__(self, name, fn)
        return fn

    def __setattr__(self, name, value):
        raise AttributeError("F is read-only: add a call with register_call(name, fn)")

    def __dir__(self):
        return sorted(_helpers)


F = Calls()


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
        F.__dict__.pop(name, None)


def add_resolver(what: str, resolve: Callable) -> None:
    """Add a resolver tried after the helpers: ``what`` is ``"functional"`` or ``"op"`` (tried in that order)."""
    if what not in _ORDER:
        raise ValueError(f"add_resolver: what must be one of {_ORDER}, got {what!r}")
    with _lock:
        _resolvers.append((what, resolve))
        _resolvers.sort(key=lambda r: _ORDER.index(r[0]))
        F.__dict__.clear()
        F.__dict__["ops"] = _Ops()
