"""Module backward hooks: ``register_full_backward_hook`` / ``register_full_backward_pre_hook`` (PyTorch's
``torch.utils.hooks.BackwardHook``).

Note [Module backward hooks]
A module call with backward hooks passes its tensor arguments through an identity ``autograd.Function``
(``_InputHook``) before ``forward`` and its tensor outputs through another (``_OutputHook``) after it. In the
backward pass the output identity sees the gradients of the outputs first: it records them as ``grad_output``
and runs the pre-hooks (which may replace them); the input identity then sees the gradients of the arguments and
calls each hook with ``(module, grad_input, grad_output)`` (a non-None result replaces ``grad_input``).
``grad_input`` has an entry per positional argument (None for a non-tensor or a tensor without grad) and
``grad_output`` one per output (a tensor output counts as one). When no argument requires grad the hooks run at
the output identity with ``grad_input`` all None. Without grad mode, or without any tensor requiring grad, the
call is not wrapped at all.
"""

from __future__ import annotations

import warnings

from oneflow_lite.autograd.function import Function
from oneflow_lite.autograd.grad_mode import is_grad_enabled
from oneflow_lite.framework.tensor import Tensor


class _HookState:
    """One module call's hooks and the gradients seen so far (Note [Module backward hooks])."""

    __slots__ = ("grad_outputs", "hooks", "input_index", "module", "n_inputs", "n_outputs", "output_index",
                 "pre_hooks")

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = self.input_index = self.output_index = None
        self.n_inputs = self.n_outputs = 0

    def on_grad_outputs(self, grads):
        """The output identity's backward: record (and let the pre-hooks replace) the output gradients."""
        self.grad_outputs = _pack(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            result = hook(self.module, self.grad_outputs)
            if result is None:
                continue
            if len(result) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                   f"{len(result)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = tuple(result)
        local = self.grad_outputs
        if self.input_index is None:  # no argument requires grad: the hooks run here
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                result = hook(self.module, grad_inputs, self.grad_outputs)
                if result is not None and not all(g is None for g in result):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_index)

    def on_grad_inputs(self, grads):
        """The input identity's backward: call the hooks with the argument and output gradients."""
        if self.grad_outputs is None:  # the gradient reached the arguments without passing the outputs
            return grads
        result = _pack(self.input_index, grads, self.n_inputs)
        for hook in self.hooks:
            out = hook(self.module, result, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(result):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, but "
                                   f"expected {len(result)}")
            result = tuple(out)
        self.grad_outputs = None
        return tuple(result[i] for i in self.input_index)


def _pack(index, values, size):
    packed = [None] * size
    for i, v in zip(index, values):
        packed[i] = v
    return tuple(packed)


class _Identity(Function):
    """Returns its tensors unchanged; its backward hands their gradients to the hook state."""

    @staticmethod
    def forward(ctx, state, on_inputs, *tensors):
        ctx.state, ctx.on_inputs = state, on_inputs
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        ctx.requires = [t.requires_grad for t in tensors]
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        grads = state.on_grad_inputs(grads) if ctx.on_inputs else state.on_grad_outputs(grads)
        if ctx.on_inputs:  # no gradient for an argument that does not require one
            grads = [g if r else None for g, r in zip(grads, ctx.requires)]
        return (None, None, *grads)


def _wrap(state, values, on_inputs):
    """``values`` with their tensors passed through the identity, and the tensors' positions (None when no tensor
    requires grad or grad mode is off: nothing wrapped)."""
    index = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
    if not (is_grad_enabled() and any(values[i].requires_grad for i in index)):
        return values, None
    wrapped = _Identity.apply(state, on_inputs, *[values[i] for i in index])
    values = list(values)
    for i, t in zip(index, wrapped):
        values[i] = t
    return tuple(values), index


def setup_inputs(module, hooks, pre_hooks, args):
    """The hook state of one call and ``args`` passed through the input identity."""
    state = _HookState(module, hooks, pre_hooks)
    state.n_inputs = len(args)
    args, state.input_index = _wrap(state, args, True)
    return state, args


def setup_outputs(state, output):
    """``output`` (a tensor or a tuple) passed through the output identity."""
    if not isinstance(output, (Tensor, tuple)):
        warnings.warn(f"For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but "
                      f"received {type(output)}", stacklevel=4)
        return output
    values = output if isinstance(output, tuple) else (output,)
    state.n_outputs = len(values)
    wrapped, state.output_index = _wrap(state, values, False)
    return wrapped if isinstance(output, tuple) else wrapped[0]
