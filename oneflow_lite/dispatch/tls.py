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


# Read on every dispatch: ``state.included`` / ``state.excluded``.
state = _LocalKeys()


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

    def _apply(self, st):
        raise NotImplementedError

    def __enter__(self):
        st = state
        self._saved = (st.included, st.excluded)
        self._apply(st)
        return self

    def __exit__(self, *exc):
        state.included, state.excluded = self._saved
        return False


class IncludeDispatchKeyGuard(_Guard):
    """Adds keys to the thread's included set for the duration of a ``with`` block."""

    __slots__ = ("_keys",)

    def __init__(self, keys):
        self._keys = _as_key_set(keys)

    def _apply(self, st):
        st.included |= self._keys


class ExcludeDispatchKeyGuard(_Guard):
    """Adds keys to the thread's excluded set for the duration of a ``with`` block."""

    __slots__ = ("_keys",)

    def __init__(self, keys):
        self._keys = _as_key_set(keys)

    def _apply(self, st):
        st.excluded |= self._keys


class ForceDispatchKeyGuard(_Guard):
    """Replaces both sets for the duration of a ``with`` block."""

    __slots__ = ("_included", "_excluded")

    def __init__(self, included_keys=0, excluded_keys=0):
        self._included = _as_key_set(included_keys)
        self._excluded = _as_key_set(excluded_keys)

    def _apply(self, st):
        st.included, st.excluded = self._included, self._excluded
