"""Grad functions, registered by op type (OneFlow's ``REGISTER_OP_EXPR_GRAD_FUNCTION``).

::

    @register_op_grad("relu")
    class ReluGrad(OpExprGradFunction):
        def capture(self, state, inputs, outputs, attrs):
            if state.needs_input_grad[0]:
                state.save_for_backward(outputs[0])

        def apply(self, state, out_grads):
            (y,) = state.saved_tensors
            return (F.mul(out_grads[0], F.gt(y, 0)),)

``capture`` runs right after the forward, once the node exists (so saved outputs
carry it as grad_fn); it reads ``attrs`` (the attrs the kernel saw) there and
keeps what it needs on ``state``, never ``attrs`` itself. ``apply`` maps the output grads (one per output, None when
absent) to the input grads (one per input, None for inputs that need none).
``apply`` calls the functional API, never kernels, so backward is itself
differentiable (double backward, ``create_graph``) and can be captured in a graph.
"""

from __future__ import annotations

import threading

from oneflow_lite.autograd.graph import node_name
from oneflow_lite.autograd.rows import RowsGradFunction
from oneflow_lite.framework.derivatives import add_rows_listener, find_rows, ops_with_rows
from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.source_location import caller_location


class OpExprGradFunction:
    """Base of grad functions. ``name`` (e.g. ``"Mul"``) names the backward node ``MulBackward``;
    by default it is made from the op type (``broadcast_mul`` -> ``BroadcastMulBackward``)."""

    name: str | None = None

    def capture(self, state, inputs, outputs, attrs) -> None:
        raise NotImplementedError

    def apply(self, state, out_grads) -> tuple:
        raise NotImplementedError


# op type -> (grad function instance, backward node name): the registered classes, and the gradient rows
# compiled on first use (their op types are in _compiled_rows; dropped when the rows change)
_grad_functions: dict[str, tuple] = {}
_locations: dict[str, str] = {}
_compiled_rows: set[str] = set()
_lock = threading.Lock()


def _rows_changed(op_type: str) -> None:
    with _lock:
        if op_type in _compiled_rows:
            _compiled_rows.discard(op_type)
            _grad_functions.pop(op_type, None)


add_rows_listener(_rows_changed)


def register_op_grad(op_type: str):
    """Class decorator: the grad function of ``op_type`` (one instance is made and shared by every call)."""
    if not isinstance(op_type, str) or not op_type:
        raise RegistrationError(f"register_op_grad: op type must be a non-empty str, got {op_type!r}")
    location = caller_location()

    def register(cls):
        if not (callable(getattr(cls, "capture", None)) and callable(getattr(cls, "apply", None))):
            raise RegistrationError(f"register_op_grad('{op_type}'): {cls!r} needs capture() and apply() methods")
        with _lock:
            if op_type in _grad_functions and op_type not in _compiled_rows:
                raise RegistrationError(f"register_op_grad('{op_type}'): a grad function is already registered at "
                                        f"{_locations[op_type]}; duplicate at {location}")
            rows = find_rows(op_type)
            if rows is not None:
                raise RegistrationError(f"register_op_grad('{op_type}'): gradient rows are already registered at "
                                        f"{rows.location}; duplicate at {location}")
            _grad_functions[op_type] = (cls(), node_name(cls.name or op_type))
            _locations[op_type] = location
        return cls
    return register


def unregister_op_grad(op_type: str) -> None:
    """Remove the grad function class of ``op_type`` (tests and plug-ins)."""
    with _lock:
        if op_type not in _compiled_rows:
            _grad_functions.pop(op_type, None)
        _locations.pop(op_type, None)


def get_grad_function(op_type: str) -> OpExprGradFunction | None:
    return grad_entry(op_type)[0]


def grad_entry(op_type: str) -> tuple:
    """``(grad function or None, backward node name)`` of ``op_type``: a registered class, or the op's
    gradient rows compiled on first use (Note [Compiled rows] in autograd/rows.py)."""
    entry = _grad_functions.get(op_type)
    if entry is not None:
        return entry
    rows = find_rows(op_type)
    if rows is None:
        return (None, node_name(op_type))
    with _lock:
        entry = _grad_functions.get(op_type)
        if entry is None:
            entry = _grad_functions[op_type] = (RowsGradFunction(rows), node_name(rows.name or op_type))
            _compiled_rows.add(op_type)
    return entry


def grad_location(op_type: str) -> str | None:
    """Where the grad function (class or rows) of ``op_type`` was registered."""
    rows = find_rows(op_type)
    return rows.location if rows is not None else _locations.get(op_type)


def registered_grad_ops() -> list[str]:
    return sorted(set(_grad_functions) | set(ops_with_rows()))
