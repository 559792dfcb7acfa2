"""Thread-local included / excluded dispatch key sets and the guards that change them.

Every dispatch computes ``(union of the inputs' key sets | included) & ~excluded``.
Guards are context managers that set the state on entry and restore the
previous state on exit, also when an exception passes through. Each thread has
its own state: a guard in one thread is invisible in another.
"""

from __future__ import annotations

import threading

from oneflow_lite.dispatch.dispatch_key import DispatchKey, key_set


class _LocalKeys(threading.local):
    included = 0
    excluded = 0


# Read by dispatch when ``ACTIVE[0]`` is not zero; written only through ``set_keys`` (and the helpers
# and guards using it), never directly.
state = _LocalKeys()

# Note [Threads with changed key sets]
# Reading the two thread-local sets costs about as much as the rest of a dispatch, and most
# dispatches happen with both sets empty. ``ACTIVE[0]`` counts the threads whose sets are not both
# empty; dispatch reads the thread-local sets only when it is not zero. A thread's own change is
# counted (under a lock) before that thread dispatches again, so a zero count means the dispatching
# thread's sets are empty too; other threads' changes can only make the count larger, which costs
# the reads, never a wrong key set.
ACTIVE = [0]
_lock = threading.Lock()


def set_keys(included: int, excluded: int) -> None:
    """Set this thread's included and excluded key sets (keeping ``ACTIVE`` up to date)."""
    st = state
    before = bool(st.included or st.excluded)
    st.included = included
    st.excluded = excluded
    after = bool(included or excluded)
    if before is not after:
        with _lock:
            ACTIVE[0] += 1 if after else -1


# Note [Process-wide included keys]
# A mode may act in every thread, also threads that never entered it (a profile with ``profile_all_threads``,
# Note [Profiling all threads] in interpreters/profiler.py): its key is in ``GLOBAL_INCLUDED[0]``, which dispatch
# adds to the thread's included set. While it is not empty it counts as one more in ``ACTIVE``, so dispatch reads
# it only when some key set changed (Note [Threads with changed key sets]), and a program that never sets it
# pays nothing.
GLOBAL_INCLUDED = [0]


def set_global_included(keys: int) -> None:
    """Set the keys included in every thread (Note [Process-wide included keys])."""
    with _lock:
        before = bool(GLOBAL_INCLUDED[0])
        GLOBAL_INCLUDED[0] = keys
        after = bool(keys)
        if before is not after:
            ACTIVE[0] += 1 if after else -1


def global_included() -> int:
    """The keys included in every thread."""
    return GLOBAL_INCLUDED[0]


def set_excluded(excluded: int) -> None:
    """Set this thread's excluded key set."""
    set_keys(state.included, excluded)


def set_included(included: int) -> None:
    """Set this thread's included key set."""
    set_keys(included, state.excluded)


def included() -> int:
    """This thread's included key set."""
    return state.included


def excluded() -> int:
    """This thread's excluded key set."""
    return state.excluded


def _as_key_set(keys) -> int:
    if isinstance(keys, DispatchKey):
        return key_set(keys)
    if isinstance(keys, int) and not isinstance(keys, bool):
        return keys
    return key_set(*keys)


class _Guard:
    """Base of the guards: remembers both sets on entry, restores them on exit."""

    __slots__ = ("_saved",)

    def _apply(self, included: int, excluded: int) -> tuple:
        """The (included, excluded) sets inside the guard, from those outside."""
        raise NotImplementedError

    def __enter__(self):
        st = state
        self._saved = saved = (st.included, st.excluded)
        set_keys(*self._apply(*saved))
        return self

    def __exit__(self, *exc):
        set_keys(*self._saved)
        return False


class IncludeDispatchKeyGuard(_Guard):
    """Adds keys to the thread's included set for the duration of a ``with`` block."""

    __slots__ = ("_keys",)

    def __init__(self, keys):
        self._keys = _as_key_set(keys)

    def _apply(self, included, excluded):
        return included | self._keys, excluded


class ExcludeDispatchKeyGuard(_Guard):
    """Adds keys to the thread's excluded set for the duration of a ``with`` block."""

    __slots__ = ("_keys",)

    def __init__(self, keys):
        self._keys = _as_key_set(keys)

    def _apply(self, included, excluded):
        return included, excluded | self._keys


class ForceDispatchKeyGuard(_Guard):
    """Replaces both sets for the duration of a ``with`` block."""

    __slots__ = ("_included", "_excluded")

    def __init__(self, included_keys=0, excluded_keys=0):
        self._included = _as_key_set(included_keys)
        self._excluded = _as_key_set(excluded_keys)

    def _apply(self, included, excluded):
        return self._included, self._excluded
