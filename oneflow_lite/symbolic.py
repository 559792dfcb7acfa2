"""PyTorch's SymInt-aware helpers on concrete values: ``flow.sym_int``, ``sym_float``, ``sym_max``, ``sym_min``,
``sym_not``, ``sym_sqrt``, ``sym_sum``, ``sym_ite``, ``sym_constrain_range(_for_size)``, ``sym_fresh_size``,
and the classes ``SymInt``, ``SymFloat``, ``SymBool``.

Note [No symbolic sizes]
Sizes here are always plain Python ints (there is no tracing with symbolic shapes), so no value is ever a
``SymInt`` / ``SymFloat`` / ``SymBool``: the classes exist for the ``isinstance(n, (int, torch.SymInt))`` checks
of code written for ``torch.compile``, and making one raises. The helpers compute what PyTorch's compute on
concrete values (``sym_max(2, 3.5) == 3.5``, promoting to float as PyTorch does).
"""

from __future__ import annotations

import builtins
import math

import numpy as np

__all__ = ["SymBool", "SymFloat", "SymInt", "sym_constrain_range", "sym_constrain_range_for_size", "sym_float",
           "sym_fresh_size", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum"]

_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)
_FLOATS = (np.floating, builtins.float)


class _Symbolic:
    """A symbolic value of PyTorch's tracing (Note [No symbolic sizes])."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"oneflow_lite.{cls.__name__}: symbolic shapes are not provided (sizes are plain Python "
                        f"numbers); use int / float / bool values")


class SymInt(_Symbolic):
    """A symbolic int (never made here: Note [No symbolic sizes])."""

    __slots__ = ()


class SymFloat(_Symbolic):
    """A symbolic float (never made here: Note [No symbolic sizes])."""

    __slots__ = ()


class SymBool(_Symbolic):
    """A symbolic bool (never made here: Note [No symbolic sizes])."""

    __slots__ = ()


def sym_int(a):
    """``int(a)`` (truncating a float)."""
    return builtins.int(a)


def sym_float(a):
    """``float(a)``."""
    return builtins.float(a)


def _check_numbers(a, b) -> None:
    for v in (a, b):
        if not isinstance(v, _NUMBERS):
            raise AssertionError(f"expected an int or a float, got {type(v)}")


def sym_max(a, b):
    """The larger of two numbers; a float if either is one (PyTorch's promotion)."""
    _check_numbers(a, b)
    out = builtins.max(a, b)
    return builtins.float(out) if isinstance(a, _FLOATS) or isinstance(b, _FLOATS) else out


def sym_min(a, b):
    """The smaller of two numbers; a float if either is one (PyTorch's promotion)."""
    _check_numbers(a, b)
    out = builtins.min(a, b)
    return builtins.float(out) if isinstance(a, _FLOATS) or isinstance(b, _FLOATS) else out


def sym_not(a) -> bool:
    """``not a``."""
    return not a


def sym_sqrt(a) -> float:
    """``math.sqrt(a)``."""
    return math.sqrt(a)


def sym_sum(*args):
    """The sum of the numbers, given as ``sym_sum([a, b, c])`` or ``sym_sum(a, b, c)``."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_ite(b, t, f):
    """``t if b else f`` (``b`` a bool; ``t`` and ``f`` of one type)."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def _constrain(size, low, high) -> None:
    value = builtins.int(size)
    if not low <= value <= high:
        raise RuntimeError(f"Invalid value range for {value} between [{low}, {high}].")


def sym_constrain_range(size, *, min=None, max=None) -> None:  # noqa: A002  (PyTorch's names)
    """Check that the concrete ``size`` is in ``[min, max]`` (a RuntimeError otherwise)."""
    _constrain(size, _INT64_MIN if min is None else min, _INT64_MAX if max is None else max)


def sym_constrain_range_for_size(size, *, min=None, max=None) -> None:  # noqa: A002
    """``sym_constrain_range`` for a size: ``min`` defaults to 0."""
    _constrain(size, 0 if min is None else min, _INT64_MAX if max is None else max)


def sym_fresh_size(expr):
    """The value of ``expr`` (a fresh size is the value itself when sizes are concrete)."""
    return builtins.int(expr) if isinstance(expr, (builtins.int, np.integer)) else expr
