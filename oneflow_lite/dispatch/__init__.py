"""Dispatch keys, thread-local key sets, the dispatcher and its introspection.

``flow.dispatch.dump(op)`` and ``flow.dispatch.dump_table(op)`` show what is
registered for an op and how its table resolves.

The names below are resolved on first access (PEP 562) so that the framework
layer can import the leaf module ``dispatch.dispatch_key`` without pulling in
the dispatcher, which itself imports the framework.
"""

import importlib

_EXPORTS = {
    "dispatch_key": ("ALIAS_KEYS", "BACKEND_KEYS", "FUNCTIONALITY_KEYS", "RUNTIME_KEYS", "DispatchKey",
                     "format_key_set", "highest_key", "key_set", "keys_below", "keys_of"),
    "dispatcher": ("DISPATCHER", "Registration", "fallthrough"),
    "introspection": ("dump", "dump_table", "fallbacks"),
    "kernel_predicate": ("ANY_DTYPE", "KernelPredicate", "dtype_in", "inputs_dtype_in", "output_dtype_in"),
    "tls": ("ExcludeDispatchKeyGuard", "ForceDispatchKeyGuard", "IncludeDispatchKeyGuard", "excluded",
            "included"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
_REGISTRATION = {"register_impl", "register_fallback", "register_kernel", "register_out_variant"}

__all__ = sorted(_WHERE) + sorted(_REGISTRATION)


def __getattr__(name):
    if name in _REGISTRATION:
        from oneflow_lite.dispatch.dispatcher import DISPATCHER
        return getattr(DISPATCHER, name)
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'oneflow_lite.dispatch' has no attribute '{name}'")
    return getattr(importlib.import_module(f"oneflow_lite.dispatch.{module}"), name)


def __dir__():
    return __all__
