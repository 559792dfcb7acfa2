"""``flow.overrides`` (PyTorch's ``torch.overrides``): the ``__torch_function__`` protocol helpers that library code
calls before its own work, ``if has_torch_function_unary(x): return handle_torch_function(f, (x,), x)``.

oneflow_lite's own functions do not consult ``__torch_function__``; these helpers let code written against the
protocol (and classes defining ``__torch_function__``) work as in PyTorch: ``has_torch_function*`` is True when
an argument's class defines ``__torch_function__``, and ``handle_torch_function`` calls those overrides,
subclasses before their bases.

``DisableTorchFunction`` and ``DisableTorchFunctionSubclass`` (PyTorch's ``torch._C`` context managers) turn the
protocol off in the thread while active: ``has_torch_function*`` return False inside them, so protocol-aware code
runs its own implementation (there are no ``__torch_function__`` modes here, so the two behave the same).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic"]


class _Disabled(threading.local):
    depth = 0  # how many Disable* contexts the thread is in


_disabled = _Disabled()


class DisableTorchFunctionSubclass:
    """Context manager: ``__torch_function__`` overrides are not consulted in this thread while it is active
    (``has_torch_function*`` return False)."""

    def __enter__(self):
        _disabled.depth += 1
        return self

    def __exit__(self, *exc):
        _disabled.depth -= 1
        return False


class DisableTorchFunction(DisableTorchFunctionSubclass):
    """Context manager: as ``DisableTorchFunctionSubclass`` (PyTorch's version also disables
    ``__torch_function__`` modes, which do not exist here)."""


def _overrides(cls) -> bool:
    return not _disabled.depth and getattr(cls, "__torch_function__", None) is not None


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    """Whether any of ``relevant_args`` has a class defining ``__torch_function__``."""
    return any(_overrides(type(a)) for a in relevant_args)


def has_torch_function_unary(arg: Any) -> bool:
    """``has_torch_function((arg,))``."""
    return _overrides(type(arg))


def has_torch_function_variadic(*args: Any) -> bool:
    """``has_torch_function(args)``."""
    return has_torch_function(args)


def _overloaded_args(relevant_args: Iterable[Any]) -> list:
    """The arguments whose class defines ``__torch_function__``, one per class, subclasses before their bases."""
    args: list = []
    types: list = []
    for a in relevant_args:
        t = type(a)
        if not _overrides(t) or t in types:
            continue
        index = len(args)
        for i, other in enumerate(types):
            if issubclass(t, other):
                index = i
                break
        args.insert(index, a)
        types.insert(index, t)
    return args


def handle_torch_function(public_api: Callable, relevant_args: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``__torch_function__(public_api, types, args, kwargs)`` of each overloading argument's class until one
    does not return ``NotImplemented``; TypeError when none implements ``public_api``."""
    overloaded = _overloaded_args(relevant_args)
    types = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        result = type(arg).__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{getattr(public_api, '__module__', '')}.{getattr(public_api, '__name__', public_api)}"
    raise TypeError(f"no implementation found for '{name}' on types that implement __torch_function__: "
                    f"{list(types)}")
