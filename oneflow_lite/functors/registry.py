"""The functor library: functor classes registered by name, built once on first use.

A signature's ``=> Add`` names the functor that runs it. Functors build their
op exprs in ``__init__``, so construction is deferred until the first call, as
OneFlow's ``FunctionLibrary`` does.

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

from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.source_location import caller_location

_classes: dict[str, tuple[type, str]] = {}
_instances: dict[str, object] = {}
_composites: dict[str, str] = {}  # composite functor name -> file:line (Note [Composite ops])
_lock = threading.RLock()  # a functor may get other functors in its __init__


def functor(name: str):
    """Class decorator: register a functor class under ``name`` (e.g. ``"Relu"``)."""
    location = caller_location()

    def register(cls):
        with _lock:
            if name in _classes:
                raise RegistrationError(f"functor '{name}' is already registered at {_classes[name][1]}; "
                                        f"duplicate at {location}")
            _classes[name] = (cls, location)
        return cls
    return register


def composite(name: str):
    """Decorator: register the function ``fn`` as the composite functor ``name`` (Note [Composite ops])."""
    location = caller_location()

    def register(fn):
        if not callable(fn) or isinstance(fn, type):
            raise RegistrationError(f"composite('{name}'): expected a function, got {fn!r}")
        with _lock:
            if name in _classes:
                raise RegistrationError(f"functor '{name}' is already registered at {_classes[name][1]}; "
                                        f"duplicate at {location}")
            _classes[name] = (lambda: fn, location)
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
                entry = _classes.get(name)
                if entry is None:
                    raise RegistrationError(f"Functor '{name}' was not found; registered functors: "
                                            f"{', '.join(sorted(_classes))}")
                inst = _instances[name] = entry[0]()
    return inst


def functor_names() -> list[str]:
    return sorted(_classes)
