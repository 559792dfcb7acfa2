"""The functor library: functor classes registered by name, built once on first use.

A signature's ``=> Add`` names the functor that runs it. Functors build their
op exprs in ``__init__``, so construction is deferred until the first call, as
OneFlow's ``FunctionLibrary`` does.
"""

from __future__ import annotations

import threading

from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.source_location import caller_location

_classes: dict[str, tuple[type, str]] = {}
_instances: dict[str, object] = {}
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
