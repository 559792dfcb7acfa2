"""The functional API name of an op expr, for profiler events.

Note [Functional names of op calls]
The profiler sees op exprs, not the functional call that built them. A functor
builds its op exprs once and keeps them as attributes, and a functional function
names its functor in each signature (``=> MatMul``); so the op exprs held by a
functor that serves one functional function get that function's name (``bmm``,
``mm`` and ``matmul`` all run the ``matmul`` op, with op exprs of their own). Op
exprs no functor holds, or held by a functor several functions share, keep
their op type name. The map is built when events are built (never while
recording) and again when more functors have been made since.
"""

from __future__ import annotations

import weakref

from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.functors import registry
from oneflow_lite.functors.functional_api import FUNCTIONAL_API
from oneflow_lite.functors.signature import Signature

_cache = {"functors": -1, "names": weakref.WeakKeyDictionary()}


def _function_of_functor() -> dict:
    """functor name -> the one functional function it serves (functors serving several are left out)."""
    served = {}
    for fname, signatures in FUNCTIONAL_API.items():
        for text in signatures:
            served.setdefault(Signature(text).functor_name, set()).add(fname)
    return {functor: next(iter(names)) for functor, names in served.items() if len(names) == 1}


def _op_exprs_of(functor) -> list:
    """The op exprs a functor instance holds, directly or in a dict, list or tuple attribute."""
    found = []
    for value in getattr(functor, "__dict__", {}).values():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else (value,)
        found.extend(v for v in items if type(v) is UserOpExpr)
    return found


def functional_names():
    """op expr -> functional function name (Note [Functional names of op calls])."""
    instances = registry._instances
    if _cache["functors"] != len(instances):
        functions = _function_of_functor()
        names = weakref.WeakKeyDictionary()
        for functor_name, functor in list(instances.items()):
            fname = functions.get(functor_name)
            if fname is not None:
                for op_expr in _op_exprs_of(functor):
                    names[op_expr] = fname
        _cache["functors"], _cache["names"] = len(instances), names
    return _cache["names"]
