"""``register_autograd``: the backward of a library op, with torch.library's signature.

Note [Library op gradients]
``register_autograd(op, backward, setup_context=setup)`` registers one grad function
object for the op type (``register_op_grad``, the hand-written form of gradient rows).
Its ``capture`` runs ``setup_context(ctx, inputs, output)`` right after the forward:
``inputs`` holds every schema argument in order (tensors and the other values),
``output`` the op's result (a tuple for several outputs); ``ctx.save_for_backward``
keeps tensors with the version check of Note [Saved tensors], other attributes of
``ctx`` are kept as they are. Its ``apply`` runs ``backward(ctx, *grads)`` with one
gradient per output (zeros for an output whose gradient is absent), which returns
one gradient per schema argument (None for a non-tensor argument or an input that
needs none; a tuple for a ``TensorTuple``). ``backward`` calls flow ops, so it is
differentiated again (double backward) and captured inside graphs.
"""

from __future__ import annotations

from oneflow_lite.autograd.grad_function import register_op_grad, unregister_op_grad
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.library.handles import Handle, user_location
from oneflow_lite.library.ops import LibraryOp, _check_not_composite, _lock, find


class AutogradContext:
    """The ``ctx`` of ``setup_context`` and ``backward``: ``save_for_backward(*tensors)``, ``saved_tensors``,
    ``needs_input_grad`` (one bool per schema argument), and any attribute ``setup_context`` sets."""

    def __init__(self, needs_input_grad: tuple):
        self.needs_input_grad = needs_input_grad
        self._state = None  # the node's capture state, while setup_context or backward runs

    def save_for_backward(self, *tensors) -> None:
        if self._state is None:
            raise RuntimeError("ctx.save_for_backward can only be called in setup_context")
        self._state.save_for_backward(*tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._state is None:
            raise RuntimeError("ctx.saved_tensors can only be read in backward")
        return self._state.saved_tensors


class LibraryGradFunction:
    """The grad function of one library op (Note [Library op gradients])."""

    name = None  # the backward node is named from the op type: my_ns.scale -> MyNsScaleBackward

    def __init__(self, op: LibraryOp, backward, setup_context):
        self.op = op
        self.backward = backward
        self.setup_context = setup_context

    def __call__(self):
        return self  # register_op_grad makes the shared instance by calling what it is given

    def capture(self, state, inputs, outputs, attrs) -> None:
        op = self.op
        slices = attrs.arg_tuples()[0].slices
        needs = state.needs_input_grad
        values = op.values(inputs, slices, attrs)
        ctx = AutogradContext(tuple([_any_need(needs, slices.get(spec.name)) if kind != "attr" else False
                                     for spec, kind, _ in op.params]))
        state.ctx = ctx
        state.slices = slices
        state.out_metas = tuple([o._meta for o in outputs])
        if self.setup_context is not None:
            ctx._state = state
            try:
                self.setup_context(ctx, tuple(values), tuple(outputs) if op.schema.returns_tuple else outputs[0])
            finally:
                ctx._state = None

    def apply(self, state, out_grads) -> tuple:
        op = self.op
        grads = [g if g is not None else F.zeros_of(m) for g, m in zip(out_grads, state.out_metas)]
        ctx = state.ctx
        ctx._state = state
        try:
            result = self.backward(ctx, *grads)
        finally:
            ctx._state = None
        if len(op.params) == 1 and not isinstance(result, (tuple, list)):
            result = (result,)
        if not isinstance(result, (tuple, list)) or len(result) != len(op.params):
            got = len(result) if isinstance(result, (tuple, list)) else type(result).__name__
            raise RuntimeError(f"{op.qualname}: backward {self.backward.__qualname__} returned {got} gradient(s); "
                               f"expected {len(op.params)}, one per argument of the schema (None for non-tensor "
                               f"arguments and inputs that need no gradient)")
        flat = [None] * len(state.needs_input_grad)
        for (spec, kind, _), g in zip(op.params, result):
            start, count = state.slices.get(spec.name, (0, 0))
            if kind == "attr" or not count or g is None:
                continue
            if kind == "tuple":
                flat[start:start + count] = _tuple_grads(op, spec, g, count)
            else:
                flat[start] = _tensor_grad(op, spec, g)
        return tuple(flat)


def _any_need(needs, slc) -> bool:
    return slc is not None and any(needs[slc[0]:slc[0] + slc[1]])


def _tensor_grad(op, spec, g):
    if not isinstance(g, Tensor):
        raise TypeError(f"{op.qualname}: backward returned {type(g).__name__} as the gradient of '{spec.name}'; "
                        f"expected a Tensor or None")
    return g


def _tuple_grads(op, spec, g, count):
    if not isinstance(g, (tuple, list)) or len(g) != count:
        raise TypeError(f"{op.qualname}: the gradient of TensorTuple '{spec.name}' must be a tuple of {count} "
                        f"Tensors or Nones, got {g!r}")
    return [None if x is None else _tensor_grad(op, spec, x) for x in g]


def register_autograd(op, backward, *, setup_context=None) -> Handle:
    """Register the backward of ``op`` (torch.library's form, Note [Library op gradients]):
    ``setup_context(ctx, inputs, output)`` runs after the forward and saves what backward needs;
    ``backward(ctx, *grads)`` returns one gradient per schema argument. Returns a :class:`Handle`."""
    location = user_location()
    target = find(op, "flow.library.register_autograd")
    api = f"flow.library.register_autograd('{target.qualname}')"
    for what, fn in (("backward", backward), ("setup_context", setup_context)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{api}: {what} must be a function, got {fn!r}")
    if backward is None:
        raise TypeError(f"{api}: backward must be a function, got None")
    with _lock:
        _check_not_composite(target, api)
        if target.autograd is not None:
            raise RegistrationError(f"{api}: a backward is already registered at {target.autograd.location}; "
                                    f"duplicate at {location} (remove the first one's handle to replace it)")
        register_op_grad(target.op_type)(LibraryGradFunction(target, backward, setup_context))
        handle = Handle("register_autograd", target.qualname, target.schema.namespace, backward, location,
                        lambda: _remove(target))
        target.autograd = handle
    return handle


def _remove(op: LibraryOp) -> None:
    with _lock:
        unregister_op_grad(op.op_type)
        op.autograd = None
