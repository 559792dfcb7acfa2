"""``flow.autograd.Function``: custom differentiable functions.

::

    class Exp(flow.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            (y,) = ctx.saved_tensors
            return dy * y

    y = Exp.apply(x)

``apply`` builds a ``FunctionOpExpr`` (OneFlow's name) and dispatches it like
any op: the backend interpreter runs ``forward`` (with grad recording off), and
the AutogradInterpreter, when an input requires grad, records a
``FunctionNode`` whose backward calls ``backward``.
"""

from __future__ import annotations

from oneflow_lite.autograd.grad_mode import _ModeGuard
from oneflow_lite.autograd.graph import CaptureState, Node
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_expr import BuiltinOpExpr
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.interpreters.op_interp_util import dispatch

_EMPTY_ATTRS = AttrMap()


class FunctionCtx(CaptureState):
    """The ``ctx`` of a custom Function: ``save_for_backward``, ``saved_tensors``, ``needs_input_grad``,
    ``mark_non_differentiable``, ``set_materialize_grads``."""

    _non_differentiable = ()
    materialize_grads = True

    def mark_non_differentiable(self, *tensors) -> None:
        """Outputs that never require grad (their grads in backward are zeros)."""
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"mark_non_differentiable only accepts tensors, got {type(t).__name__}")
        self._non_differentiable += tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward gets zeros (True, the default) or None for outputs without a grad."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        raise NotImplementedError("autograd.Function: ctx.mark_dirty (in-place forward) is not supported; "
                                  "return a new tensor from forward instead")


class FunctionOpExpr(BuiltinOpExpr):
    """One ``Function.apply`` call: the Function class, the call's arguments and its ctx."""

    __slots__ = ("_entry", "args", "base_attrs", "ctx", "fn_cls", "op_type_name", "tensor_positions")

    def __init__(self, fn_cls, args: tuple):
        positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        super().__init__(fn_cls.__name__, [("in", len(positions))], [])
        self.op_type_name = "autograd_function"
        self.fn_cls = fn_cls
        self.args = args
        self.tensor_positions = positions
        self.ctx = FunctionCtx((False,) * len(args))
        self.base_attrs = _EMPTY_ATTRS
        self._entry = None

    def run_forward(self, inputs):
        """Call the Function's ``forward`` on ``inputs`` (grad recording off); what every interpreter
        that runs a FunctionOpExpr calls."""
        args = list(self.args)
        for pos, t in zip(self.tensor_positions, inputs):
            args[pos] = t
        with _ModeGuard(False):
            return self.fn_cls.forward(self.ctx, *args)


class FunctionNode(Node):
    """The backward node of a custom Function: calls its ``backward``."""

    __slots__ = ("all_out_metas", "ctx", "fn_cls", "n_args", "tensor_positions")

    def __init__(self, fn_cls, ctx, next_functions, out_metas, all_out_metas, n_args, tensor_positions):
        self.next_functions = next_functions
        self.out_metas = out_metas
        self.hooks = None
        self.fn_cls = fn_cls
        self.ctx = ctx
        self.n_args = n_args
        self.tensor_positions = tensor_positions
        self.all_out_metas = all_out_metas

    def name(self) -> str:
        return self.fn_cls.__name__ + "Backward"

    @property
    def op_type(self) -> str:
        return self.fn_cls.__name__

    def apply(self, grads, create_graph):
        ctx = self.ctx
        if ctx.materialize_grads:
            grads = [F.zeros_of(m) if g is None else g for g, m in zip(grads, self.all_out_metas)]
        result = self.fn_cls.backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n = self.n_args
        name = self.name()
        if len(result) > n and all(g is None for g in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {n}, got "
                               f"{len(result)})")
        positions = set(self.tensor_positions)
        for i, g in enumerate(result):
            if g is None:
                continue
            if i not in positions:
                raise RuntimeError(f"function {name} returned a gradient different than None at position {i + 1}, "
                                   f"but the corresponding forward input was not a Tensor")
            if not isinstance(g, Tensor):
                raise TypeError(f"function {name} returned a gradient of type {type(g).__name__} at position "
                                f"{i + 1}; expected a Tensor or None")
        return tuple([result[p] for p in self.tensor_positions])

    def release(self):
        self.ctx._release()


class Function:
    """Base of custom differentiable functions: define static ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)`` and call ``apply(*args)``."""

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on ``args`` and, when an input requires grad, record ``backward``."""
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply() takes positional arguments only, got keyword argument(s) "
                            f"{sorted(kwargs)}")
        if cls.forward is Function.forward:
            raise NotImplementedError(f"{cls.__name__}: You must implement the forward function for custom "
                                      f"autograd.Function.")
        expr = FunctionOpExpr(cls, args)
        return dispatch(expr, tuple([args[p] for p in expr.tensor_positions]))
