"""Functional functions built from signatures: overload resolution, then the functor.

Overloads are tried in declaration order and the first whose arguments bind
wins. When none binds, ``TypeError`` names the function and lists the valid
signatures (with the specific reason when there is just one).

Note [Functional fast path]
Most calls pass tensors and plain Python scalars (``flow.add(x, y)``, ``x * 1.5``,
``p.add_(g, alpha=-0.1)``). For such arguments every converter of a signature
decides by the argument's exact type alone (``isinstance`` checks; a Tensor, bool,
int, float, str or None is passed through unchanged or rejected), so the overload
that binds and the values it produces are a function of the argument types and
the keyword names. After a call binds the slow way, if every argument has one of
those types and the bound values are the arguments themselves plus defaults, the
function remembers the functor and where each value comes from (the positional
arguments, a keyword, a default) under the key of the call's types and keyword
names; the next call with the same key calls the functor directly, skipping
overload resolution (a call without keywords passes no defaults when the functor's
own parameter defaults are the same values). Calls whose binding converts a value
(an int to a float, a list to a shape, ...) always take the slow path. The first
two arguments arrive as positional-only parameters, so a call with one or two
positional arguments and no keywords finds its plan without building an argument
tuple (about 70 ns of a 1.5 us ``flow.add``).
"""

from __future__ import annotations

import inspect
from types import FunctionType

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.functors.signature import Signature, SignatureMismatch, describe_call

_PLAIN = (bool, int, float, str, type(None))  # types whose binding depends on the type only
_MISSING = object()  # an argument not passed
_MAX_PLANS = 64


def _type_key(args):
    """The fast-path key of positional ``args``: their types (a bare type for one argument)."""
    n = len(args)
    if n == 1:
        return type(args[0])
    if n == 2:
        return (type(args[0]), type(args[1]))
    return tuple([type(a) for a in args])


def _same_value(a, b) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)  # repr: 0.0 and -0.0 differ


def _has_defaults(call, n: int, defaults: tuple) -> bool:
    """Whether ``call``'s parameters after the first ``n`` are positional with ``defaults`` as their defaults."""
    if not defaults:
        return True
    try:
        params = list(inspect.signature(call).parameters.values())
    except (TypeError, ValueError):
        return False
    if len(params) < n + len(defaults):
        return False
    for p, d in zip(params[n:], defaults):
        if p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is p.empty or not _same_value(p.default, d):
            return False
    return True


def _keyword_key(args, kwargs):
    """The fast-path key of a call with keywords: argument types, keyword names, keyword value types."""
    return (*[type(a) for a in args], *kwargs, *[type(v) for v in kwargs.values()])


class FunctionalFunction:
    """The overloads of one functional name and their functors; ``function`` is what ``flow.<name>`` is.

    ``function`` is a plain Python function (calling an object with a Python ``__call__`` costs
    more than calling a function) holding the fast path (Note [Functional fast path]); the
    object itself is callable too and does the same.
    """

    __slots__ = ("__dict__", "__name__", "__qualname__", "_functors", "_plans", "function", "signatures")

    def __init__(self, name: str, signatures: list[str], doc: str | None = None):
        self.__name__ = self.__qualname__ = name
        self.signatures = [Signature(s) for s in signatures]
        self._functors = [None] * len(self.signatures)
        self._plans = {}  # argument types -> (functor, default values), Note [Functional fast path]
        lines = [f"{name}{s.params_text()} -> {s.return_type}" for s in self.signatures]
        self.__doc__ = (doc + "\n\n" if doc else "") + "Signatures:\n" + "\n".join("  " + l for l in lines)
        self.function = self._make_function()

    def _make_function(self):
        plans_get = self._plans.get
        resolve = self._resolve

        # a0 and a1 are positional-only: a keyword named ``a0`` lands in ``kwargs`` like any other.
        def function(a0=_MISSING, a1=_MISSING, /, *rest, **kwargs):
            if not kwargs and not rest:
                if a1 is not _MISSING:
                    plan = plans_get((type(a0), type(a1)))
                    if plan is not None:
                        call, defaults = plan
                        return call(a0, a1, *defaults) if defaults else call(a0, a1)
                    return resolve((a0, a1), kwargs)
                if a0 is not _MISSING:
                    plan = plans_get(type(a0))
                    if plan is not None:
                        call, defaults = plan
                        return call(a0, *defaults) if defaults else call(a0)
                    return resolve((a0,), kwargs)
            args = (a0, a1, *rest) if a1 is not _MISSING else (a0,) if a0 is not _MISSING else ()
            if not kwargs:
                plan = plans_get(_type_key(args))
                if plan is not None:
                    call, defaults = plan
                    return call(*args, *defaults)
            else:
                plan = plans_get(_keyword_key(args, kwargs))
                if plan is not None:
                    call, slots = plan
                    return call(*args, *[d if name is None else kwargs[name] for name, d in slots])
            return resolve(args, kwargs)

        function.__name__ = function.__qualname__ = self.__name__
        function.__module__ = "oneflow_lite.functional"  # flow._C
        function.__doc__ = self.__doc__
        function.signatures = self.signatures
        function._plans = self._plans
        function.overloads = self
        return function

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def _resolve(self, args, kwargs):
        """Overload resolution: bind each signature in turn, call the first functor that fits. When every
        overload but one lacks a required keyword-only argument the call did not give (``placement=`` of a
        global creation overload), the error is that one overload's."""
        relevant = []
        for i, sig in enumerate(self.signatures):
            try:
                values = sig.bind(self.__name__, args, kwargs)
            except SignatureMismatch as e:
                if not e.missing_keyword:
                    relevant.append((sig, e.with_traceback(None)))  # a kept traceback: a cycle through this frame
                if i == len(self.signatures) - 1 and len(relevant) == 1:
                    sig, e = relevant[0]
                    raise TypeError(f"{e}\nValid signature: {self.__name__}{sig.params_text()}") from None
                continue
            fn = self._functors[i]
            if fn is None:
                fn = self._functors[i] = get_functor(sig.functor_name)
            self._plan(sig, args, kwargs, values, fn)
            return fn(*values)
        expected = "\n".join(f" * {self.__name__}{s.params_text()}" for s in self.signatures)
        raise TypeError(f"{self.__name__}() received an invalid combination of arguments - got "
                        f"{describe_call(args, kwargs)}, but expected one of:\n{expected}")

    def _plan(self, sig, args, kwargs, values, fn):
        """Remember the fast path of this call's argument types (and keyword names) when its binding passed
        every argument through unchanged (Note [Functional fast path])."""
        n = len(args)
        for a, v in zip(args, values):
            if a is not v or not (isinstance(a, Tensor) or type(a) in _PLAIN):
                return
        call = fn if isinstance(fn, FunctionType) else fn.__call__  # cheaper to call than a functor object
        if kwargs:
            slots = []
            for spec, v in zip(sig.args[n:], values[n:]):
                if spec.name in kwargs:
                    a = kwargs[spec.name]
                    if a is not v or not (isinstance(a, Tensor) or type(a) in _PLAIN):
                        return
                    slots.append((spec.name, None))
                else:
                    slots.append((None, v))
            key, plan = _keyword_key(args, kwargs), (call, tuple(slots))
        else:
            defaults = tuple(values[n:])
            if _has_defaults(call, n, defaults):
                defaults = ()  # the functor's own defaults are the signature's: call it with the arguments only
            key, plan = _type_key(args), (call, defaults)
        plans = self._plans
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        plans[key] = plan

    def __repr__(self):
        return f"<functional {self.__name__}>"
