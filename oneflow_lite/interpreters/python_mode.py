"""Python dispatch modes: ``DispatchMode`` and the handler at the Python key.

Note [Python dispatch modes]
A mode is an instance of a ``DispatchMode`` subclass that implements
``__flow_dispatch__(self, op, types, args, kwargs)`` (PyTorch's ``TorchDispatchMode``).
``with mode:`` pushes it on this thread's mode stack; while the stack is not empty
the Python key is in the thread's included key set, so every op call reaches
``python_mode_interpreter``, which sits below Autograd (Note [Dispatch key order]):
a mode sees the forward ops after autograd recorded them, and the ops of backward
formulas when backward runs inside the mode. The handler gives the call to the
innermost mode, with that mode popped off the stack and the keys above Python
excluded while the mode's ``__flow_dispatch__`` runs, so ``op(*args, **kwargs)`` in
it runs below that mode: at the next mode if there is one, else at the lazy or
backend keys; it never recurses into the mode itself, and autograd, autocast and
the profiler (already done above) are not run again. The handler's return value
is the call's result. When it returns, the stack and both key sets are put back
as they were, also when it raises.

``op`` is a ``DispatchOp``: the op type name (``op.name``), the ``UserOpExpr``
(``op.op_expr``), ``op(*tensors, **attrs)`` and a readable ``str``/``repr``.
``args`` are the input tensors, ``kwargs`` every attr of the call (the call's over the
op expr's, as the kernel sees them) plus ``out=`` (the tensors written) for an
in-place call. Calls that are not user ops (a custom ``autograd.Function``'s
forward, graph interface ops) pass through: the modes see the ops they run.
The key is added by registration (``register()``, from the package's list of
registering imports); nothing is paid while no mode is active.
"""

from __future__ import annotations

import threading

from oneflow_lite.dispatch.dispatch_key import FULL_KEY_SET, DispatchKey, keys_below
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import set_included, set_keys
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.interpreters.op_interp_util import dispatch, redispatch

_PY = 1 << DispatchKey.Python
_BELOW = keys_below(DispatchKey.Python)
_ABOVE = FULL_KEY_SET & ~(_BELOW | _PY)  # Autograd, Autocast, Profiler: done before the Python key


class _ModeStack(threading.local):
    modes = ()  # this thread's active modes, innermost last (a tuple: saved and restored as a whole)


_state = _ModeStack()


def active_modes() -> tuple:
    """This thread's active dispatch modes, outermost first."""
    return _state.modes


class DispatchMode:
    """Base class of Python dispatch modes (Note [Python dispatch modes]).

    Subclass it and implement ``__flow_dispatch__(self, op, types, args, kwargs)``; use an instance
    as a context manager. Example::

        class LogMode(flow.DispatchMode):
            def __flow_dispatch__(self, op, types, args, kwargs):
                print(op, [tuple(a.shape) for a in args])
                return op(*args, **kwargs)

        with LogMode():
            flow.relu(x)
    """

    def __flow_dispatch__(self, op, types, args, kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement __flow_dispatch__(self, op, types, args, "
                                  f"kwargs)")

    def __enter__(self):
        st = _state
        modes = st.modes
        if any(m is self for m in modes):
            raise RuntimeError(f"{type(self).__name__}.__enter__: this mode is already active on this thread; "
                               f"a mode instance can be entered once at a time")
        st.modes = (*modes, self)
        if not modes:
            set_included(_tls.included | _PY)
        return self

    def __exit__(self, exc_type, exc, tb):
        st = _state
        modes = st.modes
        if not modes or modes[-1] is not self:
            top = type(modes[-1]).__name__ if modes else "none"
            raise RuntimeError(f"{type(self).__name__}.__exit__: this mode is not the innermost active mode on "
                               f"this thread (the innermost is {top}); modes must be exited in reverse order")
        st.modes = modes[:-1]
        if len(modes) == 1:
            set_included(_tls.included & ~_PY)
        return False


class DispatchOp:
    """The op a mode's ``__flow_dispatch__`` receives: ``op(*tensors, **attrs)`` runs it below the mode."""

    __slots__ = ("_call_attrs", "_kwargs", "op_expr")

    def __init__(self, op_expr: UserOpExpr, call_attrs=None, kwargs=None):
        self.op_expr = op_expr
        self._call_attrs = call_attrs  # the call's own attrs, reused when the handler passes its kwargs on
        self._kwargs = kwargs

    @property
    def name(self) -> str:
        """The op type name (``"matmul"``, ``"conv2d"``...)."""
        return self.op_expr.op_type_name

    def __call__(self, *args, out=None, **attrs):
        for i, t in enumerate(args):
            if not isinstance(t, Tensor):
                raise TypeError(f"{self}: argument {i} must be a Tensor, got {type(t).__name__}")
        outputs = None
        if out is not None:
            outputs = (out,) if isinstance(out, Tensor) else tuple(out)
        outs = dispatch(self.op_expr, args, self._attrs_of(attrs), outputs)
        return outs[0] if len(outs) == 1 else outs

    def _attrs_of(self, attrs):
        """The call attrs for ``attrs``: the original call's when they are the values the handler was given."""
        given = self._kwargs
        if given is not None and len(attrs) == len(given) - ("out" in given):
            for k, v in attrs.items():
                if given.get(k, given) is not v:
                    break
            else:
                return self._call_attrs
        return AttrMap(attrs) if attrs else None

    def __eq__(self, other):
        return type(other) is DispatchOp and other.op_expr is self.op_expr

    def __hash__(self):
        return hash(self.op_expr)

    def __str__(self):
        return self.op_expr.op_type_name

    def __repr__(self):
        return f"DispatchOp('{self.op_expr.op_type_name}', op_name='{self.op_expr.op_name}')"


def _as_outputs(op_expr, mode, result) -> tuple:
    n = op_expr.output_arg_tuple.size
    if isinstance(result, Tensor):
        outs = (result,)
    elif isinstance(result, (tuple, list)) and all(isinstance(t, Tensor) for t in result):
        outs = tuple(result)
    else:
        raise TypeError(f"{type(mode).__name__}.__flow_dispatch__ returned {type(result).__name__} for op "
                        f"'{op_expr.op_type_name}'; expected a Tensor or a tuple of {n} Tensors")
    if len(outs) != n:
        raise RuntimeError(f"{type(mode).__name__}.__flow_dispatch__ returned {len(outs)} tensor(s) for op "
                           f"'{op_expr.op_type_name}', which has {n} output(s)")
    return outs


def python_mode_interpreter(op_expr, ks, inputs, attrs, outputs):
    """Hand the call to the innermost mode (Note [Python dispatch modes])."""
    st = _state
    modes = st.modes
    if not modes or type(op_expr) is not UserOpExpr:
        return redispatch(op_expr, ks & _BELOW, inputs, attrs, outputs)
    mode = modes[-1]
    kwargs = dict(op_expr.infer(tuple([t._meta for t in inputs]), attrs).attrs.items())  # cached inference
    if outputs is not None:
        kwargs["out"] = tuple(outputs)
    types = tuple(dict.fromkeys([type(t) for t in inputs]))
    included, excluded = _tls.included, _tls.excluded
    st.modes = modes[:-1]
    try:
        set_keys(included if len(modes) > 1 else included & ~_PY, excluded | _ABOVE)
        result = mode.__flow_dispatch__(DispatchOp(op_expr, attrs, kwargs), types, tuple(inputs), kwargs)
    finally:
        st.modes = modes
        set_keys(included, excluded)
    return _as_outputs(op_expr, mode, result)


def register():
    """Register the handler as the fallback at the Python key; returns the handle."""
    return DISPATCHER.register_fallback(DispatchKey.Python, python_mode_interpreter)
