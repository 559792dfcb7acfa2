"""``flow.futures`` (PyTorch's ``torch.futures``): ``Future``, ``collect_all``, ``wait_all``; and ``flow.fork`` /
``flow.wait`` (``torch.fork`` / ``torch.wait``, TorchScript's task parallelism).

Note [Eager futures]
As in PyTorch's eager mode, ``fork(fn, *args, **kwargs)`` calls ``fn`` at once, in the calling thread, and
returns a completed ``Future`` holding its result (an exception ``fn`` raises propagates from ``fork``).
A ``Future`` made directly is completed once, by ``set_result`` or ``set_exception``; ``then`` callbacks run
when it completes (at once when it has), each making a new future of its return value.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Generic, TypeVar

__all__ = ["Future", "collect_all", "fork", "wait", "wait_all"]

T = TypeVar("T")
_UNSET = object()


class Future(Generic[T]):
    """The result of an asynchronous computation (Note [Eager futures]): ``wait()`` / ``value()`` give the result
    (or raise the exception it completed with), ``then(callback)`` chains, ``done()`` tells whether it
    completed. ``devices`` is accepted for PyTorch's signature (the CPU is the only device)."""

    def __init__(self, *, devices=None):
        self._cond = threading.Condition()
        self._result: Any = _UNSET
        self._exception: BaseException | None = None
        self._callbacks: list = []

    def done(self) -> bool:
        """Whether the future has completed (with a result or an exception)."""
        return self._result is not _UNSET or self._exception is not None

    def wait(self) -> T:
        """Block until the future completes; its result, or raise the exception it completed with."""
        with self._cond:
            self._cond.wait_for(self.done)
        return self.value()

    def value(self) -> T:
        """The result of a completed future (raises the exception it completed with)."""
        if self._exception is not None:
            raise self._exception
        if self._result is _UNSET:
            raise RuntimeError("Future.value(): the future has not completed yet; call wait() first")
        return self._result

    def set_result(self, result: T) -> None:
        """Complete the future with ``result``; runs the callbacks."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with the exception ``result`` (raised by ``wait`` / ``value``)."""
        if not isinstance(result, BaseException):
            raise TypeError(f"Future.set_exception(): expected an exception, got {type(result).__name__}")
        self._complete(_UNSET, result)

    def _complete(self, result, exception) -> None:
        with self._cond:
            if self.done():
                raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future "
                                   "can only be marked completed once.")
            self._result, self._exception = result, exception
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Call ``callback(self)`` when the future completes (now, when it has)."""
        with self._cond:
            if not self.done():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[[Future[T]], Any]) -> Future:
        """A new future completed with ``callback(self)`` once this one completes (or with the exception the
        callback raises)."""
        out: Future = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except BaseException as e:  # noqa: BLE001  (the chained future carries any exception)
                out.set_exception(e)

        self.add_done_callback(run)
        return out

    def __repr__(self):
        state = "done" if self.done() else "pending"
        return f"<oneflow_lite.futures.Future ({state})>"


def collect_all(futures: list) -> Future:
    """A future completed, once every one of ``futures`` has, with the list of them."""
    futures = list(futures)
    for f in futures:
        if not isinstance(f, Future):
            raise TypeError(f"collect_all(): expected a list of Futures, got {type(f).__name__}")
    out: Future = Future()
    lock = threading.Lock()
    remaining = [len(futures)]

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.set_result(futures)

    if not futures:
        out.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures: list) -> list:
    """The results of ``futures``, in order (waits for each; raises the first exception met)."""
    return [f.wait() for f in collect_all(futures).wait()]


def fork(func: Callable, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` now and return a completed future of its result (Note [Eager futures])."""
    if not callable(func):
        raise TypeError(f"fork(): expected a callable, got {type(func).__name__}")
    fut: Future = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future: Future):
    """``future.wait()``: the result of a future returned by ``fork``."""
    if not isinstance(future, Future):
        raise TypeError(f"wait(): expected a Future, got {type(future).__name__}")
    return future.wait()
