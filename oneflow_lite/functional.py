"""``oneflow_lite.functional`` (alias ``flow._C``): one function per entry of
``functors.functional_api.FUNCTIONAL_API``, with overload resolution."""

import builtins as _builtins  # this module defines any(), all(), max() ...

from oneflow_lite import functors as _functors  # noqa: F401  (registers the functors)
from oneflow_lite.dispatch.dispatcher import DISPATCHER as _DISPATCHER
from oneflow_lite.framework.calls import add_resolver as _add_resolver
from oneflow_lite.functors.registry import composite_location as _composite_location
from oneflow_lite.functors.functional import FunctionalFunction as _FunctionalFunction
from oneflow_lite.functors.functional_api import FUNCTIONAL_API as _API

for _name, _sigs in _API.items():
    globals()[_name] = _fn = _FunctionalFunction(_name, _sigs).function
    _overloads = {_sig.functor_name: _composite_location(_sig.functor_name) for _sig in _fn.signatures}
    if _builtins.any(_overloads.values()):  # Note [Composite ops] in functors/registry.py
        _DISPATCHER.register_composite(_name, _overloads)

__all__ = sorted(_API)


def _resolve(name):
    return globals()[name] if name in _API else None


_add_resolver("functional", _resolve)  # F.<name> (Note [Calls by name] in framework/calls.py)
