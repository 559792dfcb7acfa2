"""``_single`` / ``_pair`` / ``_triple``: an int (or a sequence) as a tuple of n ints, as PyTorch's layers store
their sizes."""

from __future__ import annotations

import collections.abc
from itertools import repeat


def _ntuple(n: int, name: str):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """``(1, 2)`` -> ``(2, 2, 1, 1)`` for n=2: a conv's padding in ``F.pad``'s order (last dim first)."""
    return tuple(x for x in reversed(t) for _ in range(n))
