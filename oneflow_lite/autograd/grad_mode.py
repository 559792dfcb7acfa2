"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``is_grad_enabled``.

Grad mode is the Autograd bit of this thread's excluded dispatch key set (see
Note [Autograd key and requires_grad]): ``no_grad()`` excludes the Autograd key,
so no op reaches the AutogradInterpreter and nothing is recorded; ``enable_grad()``
removes it from the excluded set. Each is a guard that restores the previous
state on exit (also when an exception passes through), usable as a context
manager or as a decorator, and each thread has its own mode.
"""

from __future__ import annotations

import functools
import inspect

from oneflow_lite.dispatch.tls import set_excluded
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET

_AG = AUTOGRAD_KEY_SET


def is_grad_enabled() -> bool:
    """Whether this thread records operations for autograd."""
    return not _tls.excluded & _AG


def _set_enabled(mode: bool) -> None:
    excluded = _tls.excluded
    set_excluded((excluded & ~_AG) if mode else (excluded | _AG))


class _GradModeGuard:
    """Base of the grad-mode guards: a context manager and a decorator (with or without parentheses)."""

    __slots__ = ("_prev",)
    _mode: bool

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is None:
            return self
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (got {orig_func!r})")
        return self(orig_func)

    def __init__(self, orig_func=None):
        pass

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False

    def clone(self):
        return type(self)()

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def generator_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as e:  # noqa: BLE001 - thrown into us: forward it, under the mode
                            with self.clone():
                                response = gen.throw(e)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as e:
                    return e.value
            return generator_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper


class no_grad(_GradModeGuard):
    """Disable gradient recording: ``with flow.no_grad(): ...`` or ``@flow.no_grad()``."""

    __slots__ = ()
    _mode = False


class enable_grad(_GradModeGuard):
    """Enable gradient recording (inside ``no_grad``): a context manager or a decorator."""

    __slots__ = ()
    _mode = True


class set_grad_enabled(_GradModeGuard):
    """Set grad mode to ``mode``: at once when called, restored on exit when used as a context manager."""

    __slots__ = ("_mode",)

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self._prev = is_grad_enabled()
        self._mode = mode
        _set_enabled(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False

    def __call__(self, func):
        _set_enabled(self._prev)  # as a decorator it changes nothing until the function runs
        return super().__call__(func)

    def clone(self):
        return _ModeGuard(self._mode)


class _ModeGuard(_GradModeGuard):
    """A guard to ``mode`` that changes nothing until entered (what decorators and the engine use)."""

    __slots__ = ("_mode",)

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode: bool):
        self._mode = mode

    def clone(self):
        return _ModeGuard(self._mode)



class inference_mode(_GradModeGuard):
    """``with flow.inference_mode(): ...`` or ``@flow.inference_mode()`` (also bare ``@flow.inference_mode``):
    no gradient recording, as ``no_grad``; ``inference_mode(False)`` changes nothing. Tensors made inside are
    ordinary tensors (PyTorch's restrictions on inference tensors are not enforced)."""

    __slots__ = ("_on",)
    _mode = False

    def __new__(cls, mode=True):
        self = object.__new__(cls)
        if callable(mode) and not isinstance(mode, bool):  # bare decorator: @inference_mode
            self._on = True
            return self(mode)
        return self

    def __init__(self, mode: bool = True):
        if callable(mode) and not isinstance(mode, bool):
            return
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): argument 'mode' must be bool, not {type(mode).__name__}")
        self._on = mode

    def __enter__(self):
        self._prev = is_grad_enabled()
        if self._on:
            _set_enabled(False)
        return self

    def clone(self):
        return inference_mode(self._on)


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active: reported as grad mode being off."""
    return not is_grad_enabled()
