"""The functor library: functors registered by name, each made once on first use.

A signature's ``=> Add`` names the functor that runs it. Functors build their
op exprs in ``__init__``, so construction is deferred until the first call, as
OneFlow's ``FunctionLibrary`` does. A functor is registered as a zero-argument
factory: a class (``@functor("Relu")``), or one rule class with its parameters
bound (``register_functor("Abs", partial(Unary, "abs"))``), so a family of ops
shares one class instead of a class built per op at run time.

Note [Composite ops]
``@composite("Softsign")`` registers a plain function as a functor that is a
composition of other functional calls (PyTorch's CompositeImplicitAutograd): it
has no op conf, no kernel and no gradient of its own; autograd, meta inference,
lazy capture and every other dispatch key see only the ops it calls. The
functional API tells the dispatcher which of its functions are composites, so
``flow.dispatch.dump_table("softsign")`` and ``python -m oneflow_lite ops softsign``
show it as composite with the ``file:line`` of its definition.
"""

from __future__ import annotations

import threading
from typing import Callable

from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.source_location import caller_location

_factories: dict[str, tuple[Callable[[], object], str]] = {}  # name -> (factory, file:line)
_instances: dict[str, object] = {}
_composites: dict[str, str] = {}  # composite functor name -> file:line (Note [Composite ops])
_lock = threading.RLock()  # a functor may get other functors in its __init__


def _register(name: str, factory: Callable[[], object], location: str) -> None:
    with _lock:
        if name in _factories:
            raise RegistrationError(f"functor '{name}' is already registered at {_factories[name][1]}; "
                                    f"duplicate at {location}")
        _factories[name] = (factory, location)


def register_functor(name: str, factory: Callable[[], object]) -> None:
    """Register the functor ``name``: ``factory()`` (a class, or a ``functools.partial`` of one binding the
    op's parameters) makes it on first use."""
    if not callable(factory):
        raise RegistrationError(f"register_functor('{name}'): expected a zero-argument factory, got {factory!r}")
    _register(name, factory, caller_location())


def functor(name: str):
    """Class decorator: register a functor class under ``name`` (e.g. ``"Relu"``)."""
    location = caller_location()

    def register(cls):
        _register(name, cls, location)
        return cls
    return register


def composite(name: str):
    """Decorator: register the function ``fn`` as the composite functor ``name`` (Note [Composite ops]).
    ``composite(name)(partial(fn, ...))`` registers ``fn`` with some arguments bound."""
    location = caller_location()

    def register(fn):
        if not callable(fn) or isinstance(fn, type):
            raise RegistrationError(f"composite('{name}'): expected a function, got {fn!r}")
        with _lock:
            _register(name, lambda: fn, location)
            _composites[name] = location
        return fn
    return register


def composite_location(name: str) -> str | None:
    """Where the composite functor ``name`` is defined; None when ``name`` is not a composite."""
    return _composites.get(name)


def get_functor(name: str):
    """The functor instance of ``name`` (constructed on first use)."""
    inst = _instances.get(name)
    if inst is None:
        with _lock:
            inst = _instances.get(name)
            if inst is None:
                entry = _factories.get(name)
                if entry is None:
                    raise RegistrationError(f"Functor '{name}' was not found; registered functors: "
                                            f"{', '.join(sorted(_factories))}")
                inst = _instances[name] = entry[0]()
    return inst


def functor_names() -> list[str]:
    return sorted(_factories)
