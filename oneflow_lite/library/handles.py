"""Registration handles of ``flow.library`` and ``scoped(namespace)``.

Every registration the library makes returns a :class:`Handle`; ``remove()`` undoes
exactly it (once; later calls do nothing). ``with flow.library.scoped("my_ns"):``
removes, on exit, every registration of namespace ``my_ns`` made inside the block,
newest first (PyTorch's ``_scoped_library``), so a test leaves no op behind.
"""

from __future__ import annotations

import os
import sys
import threading

_LIBRARY_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep

_lock = threading.RLock()
_scopes: list[tuple[str, list]] = []  # the open scopes, innermost last: (namespace, handles made inside)


def user_frame():
    """The nearest frame outside this package (the code calling the library)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIR):
        frame = frame.f_back
    return frame


def location_of(frame) -> str:
    """``path:line`` of ``frame`` (paths inside the package relative to its parent, as in dumps)."""
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename.removeprefix(_PACKAGE_PARENT)}:{frame.f_lineno}"


def user_location() -> str:
    return location_of(user_frame())


class Handle:
    """One registration made by ``flow.library``: ``remove()`` (or ``destroy()``) undoes it.

    A handle returned by a decorator is also the decorated function: calling it calls ``fn``.
    """

    __slots__ = ("__weakref__", "_undo", "fn", "kind", "location", "namespace", "target")

    def __init__(self, kind: str, target: str, namespace: str | None, fn, location: str, undo):
        self.kind = kind  # "define", "impl", "register_fake", "register_autograd", ...
        self.target = target  # what was registered: "my_ns::scale", "my_ns::scale for cpu", ...
        self.namespace = namespace
        self.fn = fn
        self.location = location
        self._undo = undo
        with _lock:
            for ns, handles in reversed(_scopes):
                if ns == namespace:
                    handles.append(self)
                    break

    @property
    def active(self) -> bool:
        return self._undo is not None

    def remove(self) -> None:
        """Undo the registration (once; a second call does nothing)."""
        with _lock:
            undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    destroy = remove

    def __call__(self, *args, **kwargs):
        if self.fn is None:
            raise TypeError(f"{self!r} is not callable")
        return self.fn(*args, **kwargs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        state = "" if self.active else " (removed)"
        return f"<flow.library {self.kind} {self.target} at {self.location}{state}>"


class scoped:
    """``with flow.library.scoped("my_ns") as handles:``: on exit, remove every registration of namespace
    ``my_ns`` made inside the block (newest first), also when an exception passes through. ``handles`` is
    the list of them."""

    __slots__ = ("_handles", "namespace")

    def __init__(self, namespace: str):
        if not isinstance(namespace, str) or not namespace.isidentifier():
            raise ValueError(f"flow.library.scoped: namespace must be an identifier, got {namespace!r}")
        self.namespace = namespace
        self._handles = []

    def __enter__(self) -> list:
        with _lock:
            _scopes.append((self.namespace, self._handles))
        return self._handles

    def __exit__(self, *exc):
        with _lock:
            for i in range(len(_scopes) - 1, -1, -1):
                if _scopes[i][1] is self._handles:
                    del _scopes[i]
                    break
        for handle in reversed(self._handles):
            handle.remove()
        return False
