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
(an int to a float, ...) take the slow path, except the sequences of Note [Planned sequences]. The first
two arguments arrive as positional-only parameters, so a call with one or two
positional arguments and no keywords finds its plan without building an argument
tuple (about 70 ns of a 1.5 us ``flow.add``).

Note [Planned sequences]
A tuple, list or ``flow.Size`` argument (``layer_norm(x, (64,))``, ``split(x, [2, 4])``, ``cat([a, b])``)
binds by its contents, not its type alone (a lone int for a list parameter binds as a tuple of it:
planned as that wrapping). For a non-empty sequence of exact ints (or of tensors) every
converter's answer depends only on that element kind and on the length (``IntList[2]`` repeats one int and
rejects three), and the bound value is the sequence as a tuple. So such a call is planned too, with a
check per sequence argument run on every call: the element kind (and, when any overload of the function
has a fixed-size list, the length) seen when the plan was made. A call that fails the check goes the slow
way, which raises today's error for bad contents or plans the new kind. Ints passed as varargs
(``x.view(2, -1)``) are packed into the tuple the signature's last list parameter takes; their types
are in the key, so the packing needs no check. Such plans call an adapter (:func:`_adapter`) that checks,
packs and then calls the functor; the other plans call the functor directly.
"""

from __future__ import annotations

import inspect
from types import FunctionType

from oneflow_lite.framework.errors import name_the_op
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.functors.signature import BAD, Signature, SignatureMismatch, describe_call

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


def _int_items(size):
    """The check of a sequence of exact ints (``size`` long unless None): its tuple, or BAD."""
    def check(a):
        if not a or (size is not None and len(a) != size):
            return BAD
        for e in a:
            if type(e) is not int:
                return BAD
        return a if type(a) is tuple else tuple(a)
    return check


def _tensor_items(a):
    """The check of a sequence of tensors: its tuple, or BAD."""
    if not a:
        return BAD
    for e in a:
        if not isinstance(e, Tensor):
            return BAD
    return a if type(a) is tuple else tuple(a)


def _sequence_check(a, v, sized: bool):
    """The check that passes sequences like ``a`` when ``a`` bound to ``v`` (Note [Planned sequences]), else
    None."""
    if type(a) is int and type(v) is tuple and v and v == (a,) * len(v):  # reshape(x, 6), IntList[2] k=3
        size = len(v)
        return lambda i: (i,) * size  # (the key holds the int type: nothing to check)
    if not isinstance(a, (list, tuple)) or not a or type(v) is not tuple or len(v) != len(a):
        return None
    if all(type(e) is int for e in a) and all(type(e) is int for e in v) and v == tuple(a):
        return _int_items(len(a) if sized else None)
    if all(isinstance(e, Tensor) for e in a) and all(e is w for e, w in zip(a, v)):
        return _tensor_items
    return None


def _adapter(call, n: int, checks: tuple, pack: int | None, keywords: tuple, resolve):
    """The plan's callable for a call with sequence arguments or packed varargs (Note [Planned sequences]):
    called with the call's ``n`` positional arguments and then its keyword slots' values (``keywords``:
    (position, name) of those the call passed by name)."""
    def adapted(*values):
        if checks:
            given, values = values, list(values)
            for i, check in checks:
                v = check(values[i])
                if v is BAD:  # the slow way, with the arguments as given: its errors name their types
                    return resolve(given[:n], {name: given[j] for j, name in keywords})
                values[i] = v
        if pack is not None:
            values = (*values[:pack], tuple(values[pack:n]), *values[n:])
        return call(*values)
    return adapted


def _keyword_key(args, kwargs):
    """The fast-path key of a call with keywords: argument types, keyword names, keyword value types."""
    return (*[type(a) for a in args], *kwargs, *[type(v) for v in kwargs.values()])


class FunctionalFunction:
    """The overloads of one functional name and their functors; ``function`` is what ``flow.<name>`` is.

    ``function`` is a plain Python function (calling an object with a Python ``__call__`` costs
    more than calling a function) holding the fast path (Note [Functional fast path]); the
    object itself is callable too and does the same.
    """

    __slots__ = ("__dict__", "__name__", "__qualname__", "_functors", "_plans", "_sized", "function", "signatures")

    def __init__(self, name: str, signatures: list[str], doc: str | None = None):
        self.__name__ = self.__qualname__ = name
        self.signatures = [Signature(s) for s in signatures]
        self._functors = [None] * len(self.signatures)
        self._plans = {}  # argument types -> (functor, default values), Note [Functional fast path]
        self._sized = any(a.size is not None for s in self.signatures for a in s.args)  # Note [Planned sequences]
        lines = [f"{name}{s.params_text()} -> {s.return_type}" for s in self.signatures]
        self.__doc__ = (doc + "\n\n" if doc else "") + "Signatures:\n" + "\n".join("  " + l for l in lines)
        self.function = self._make_function()

    def _make_function(self):
        plans_get = self._plans.get
        resolve = self._resolve
        fn_name = self.__name__

        # a0 and a1 are positional-only: a keyword named ``a0`` lands in ``kwargs`` like any other.
        def function(a0=_MISSING, a1=_MISSING, /, *rest, **kwargs):
            try:
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
            except Exception as e:  # Note [Errors name their op]
                if getattr(e, "op_unnamed", False):
                    name_the_op(e, fn_name)
                raise

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
        every argument through unchanged or as a planned sequence (Notes [Functional fast path], [Planned
        sequences])."""
        n, n_pos = len(args), len(sig.positional)
        pack = n_pos - 1 if n > n_pos else None  # ints passed as varargs, packed by the binding
        if pack is not None and not all(type(a) is int for a in args[pack:]):
            return
        m = n if pack is None else n_pos  # values bound positionally
        checks = self._checks(args[:pack], values, 0)
        if checks is None:
            return
        call = fn if isinstance(fn, FunctionType) else fn.__call__  # cheaper to call than a functor object
        if kwargs:
            slots, keywords = [], []
            for j, (spec, v) in enumerate(zip(sig.args[m:], values[m:]), start=n):
                if spec.name in kwargs:
                    check = self._checks((kwargs[spec.name],), (v,), j)
                    if check is None:
                        return
                    checks += check
                    slots.append((spec.name, None))
                    keywords.append((j, spec.name))
                else:
                    slots.append((None, v))
            key, extra = _keyword_key(args, kwargs), tuple(slots)
        else:
            extra = tuple(values[m:])
            if _has_defaults(call, m, extra):
                extra = ()  # the functor's own defaults are the signature's: call it with the arguments only
            key, keywords = _type_key(args), ()
        if checks or pack is not None:
            call = _adapter(call, n, tuple(checks), pack, tuple(keywords), self._resolve)
        plans = self._plans
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        plans[key] = (call, extra)

    def _checks(self, args, values, start: int) -> list | None:
        """The sequence checks (position, check) ``args`` need from position ``start`` on, or None when one
        of them was converted in a way a plan cannot repeat."""
        checks = []
        for i, (a, v) in enumerate(zip(args, values), start=start):
            if a is v and (isinstance(a, Tensor) or type(a) in _PLAIN):
                continue
            check = _sequence_check(a, v, self._sized)
            if check is None:
                return None
            checks.append((i, check))
        return checks

    def __repr__(self):
        return f"<functional {self.__name__}>"
