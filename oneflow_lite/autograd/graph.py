"""The backward graph: function nodes, saved tensors and capture states.

A recorded op becomes a ``Node`` whose ``next_functions`` are, per input, the
``(node, output_nr)`` that produced it (``(None, 0)`` for an input that does not
require grad); a leaf that requires grad is reached through its
``AccumulateGrad`` node. Edges point from outputs to inputs only, so a graph
is freed by reference counting as soon as its last output tensor goes away.

Note [Saved tensors]
A grad function's ``capture`` saves tensors with ``state.save_for_backward``.
Each is stored with the version of its buffer at that moment (Note [Version
counters and views]); unpacking checks the version, so a tensor overwritten in
place after it was saved fails backward with PyTorch's message instead of giving
wrong gradients. A saved *output* of the node itself is stored without its
grad_fn (that would be a reference cycle node -> state -> output -> node) and
rebuilt with the node as grad_fn when unpacked, so double backward sees it as
the node's output. Releasing the graph (backward without ``retain_graph``)
drops the saved tensors; unpacking them afterwards raises.

Note [Saved tensor hooks]
Inside ``with saved_tensors_hooks(pack, unpack):`` (PyTorch's
``torch.autograd.graph``, per thread, innermost wins) a tensor saved for backward is
stored as ``pack(tensor)`` and backward uses ``unpack(packed)`` instead (offloading,
compression, recomputation); the version check still applies. A process-wide count of
open contexts keeps the check off the capture path when none is open.
"""

from __future__ import annotations

import re
import threading
import weakref

from oneflow_lite.framework.tensor import (
    AUTOGRAD_KEY_SET,
    OWN_DTYPE,
    AutogradMeta,
    RemovableHandle,
    Tensor,
    VersionCounter,
)
from oneflow_lite.framework.tensor_meta import make_meta

_AG = AUTOGRAD_KEY_SET
_make = Tensor._make
NO_EDGE = (None, 0)

_RELEASED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward.")

_LEGACY_TYPE_NAMES = {"float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor",
                      "int8": "CharTensor", "uint8": "ByteTensor", "int16": "ShortTensor", "int32": "IntTensor",
                      "int64": "LongTensor", "bool": "BoolTensor"}


def describe_tensor(meta) -> str:
    """``oneflow_lite.FloatTensor [2, 3]``, as PyTorch names tensors in autograd errors."""
    return f"oneflow_lite.{_LEGACY_TYPE_NAMES.get(meta.dtype.name, 'Tensor')} {list(meta.shape)}"


class _HookStack(threading.local):
    def __init__(self):
        self.stack = []


_hook_stack = _HookStack()
_open_hook_contexts = [0]


class saved_tensors_hooks:  # noqa: N801  (PyTorch's name)
    """``with saved_tensors_hooks(pack_hook, unpack_hook):`` tensors saved for backward in the block are stored as
    ``pack_hook(tensor)`` and given back as ``unpack_hook(packed)`` (Note [Saved tensor hooks])."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        _hook_stack.stack.append((self.pack_hook, self.unpack_hook))
        _open_hook_contexts[0] += 1
        return self

    def __exit__(self, *exc):
        _hook_stack.stack.pop()
        _open_hook_contexts[0] -= 1


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Saved tensors are kept on the cpu and moved back to their device for backward."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: (t.device, t.cpu()), lambda packed: packed[1].to(packed[0]))


def _current_hooks():
    stack = _hook_stack.stack
    return stack[-1] if stack else None


class SavedTensor:
    """One tensor saved for backward, with the version it was saved at (Note [Saved tensors])."""

    __slots__ = ("array", "key_set", "meta", "output_nr", "tensor", "unpack_hook", "vc", "version")

    def __init__(self, t: Tensor, node, hooks=None):
        vc = t._vc
        if vc is None:
            vc = t._vc = VersionCounter()
        self.vc = vc
        self.version = vc.version
        self.unpack_hook = None
        if hooks is not None:  # Note [Saved tensor hooks]: the packed object stands for the tensor
            self.tensor, self.output_nr, self.meta = None, -1, t._meta
            self.array, self.unpack_hook = hooks[0](t), hooks[1]
            return
        ag = t._ag
        if ag is not None and ag.grad_fn is node:  # an output of this node: keep its data, not the tensor
            self.tensor = None
            self.array = t._array
            self.meta = t._meta
            self.key_set = t._key_set
            self.output_nr = ag.output_nr
        else:
            self.tensor = t
            self.output_nr = -1

    def unpack(self, node) -> Tensor:
        vc = self.vc
        if vc.version != self.version:
            raise self._modified_error(node)
        if self.unpack_hook is not None:
            return self.unpack_hook(self.array)
        t = self.tensor
        if t is not None:
            return t
        out = _make(self.array, self.meta)  # the node's output again, with the node as grad_fn
        out._vc = vc
        out._key_set = self.key_set | _AG
        out._ag = AutogradMeta(node, self.output_nr)
        return out

    def _modified_error(self, node) -> RuntimeError:
        t = self.tensor
        if t is None:  # a saved output of the node (or a packed tensor: output_nr -1)
            meta = self.meta
            producer = f", which is output {self.output_nr} of {node.name()}" if self.output_nr >= 0 else ""
        else:
            fn = t.grad_fn
            meta, producer = t._meta, ("" if fn is None else f", which is output {t._ag.output_nr} of {fn.name()}")
        return RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{describe_tensor(meta)}]{producer}, is at version {self.vc.version}; expected version "
            f"{self.version} instead. Hint: the tensor was saved for the backward of {node.name()} (op "
            f"'{node.op_type}'), which needs it unchanged; use an out-of-place op, or modify a copy.")


class CaptureState:
    """What a grad function's ``capture`` keeps for its ``apply`` (OneFlow's AutoGradCaptureState).

    ``needs_input_grad[i]`` says whether input ``i`` requires grad. Tensors go
    through ``save_for_backward`` (never plain attributes, see Note [Saved
    tensors]); anything else may be set as an attribute.
    """

    _saved = None  # the tensors saved during capture
    _packed = None  # then their SavedTensor records; None again once released
    _node_ref = None

    def __init__(self, needs_input_grad: tuple = ()):
        self.needs_input_grad = needs_input_grad

    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (Tensors or None) for backward; ``saved_tensors`` returns them in order."""
        if self._packed is not None:
            raise RuntimeError("save_for_backward can only be called during capture (or forward)")
        saved = self._saved
        if saved is None:
            saved = self._saved = []
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save tensors or None, but argument {len(saved)} "
                                f"is of type {type(t).__name__}")
            saved.append(t)

    def _pack(self, node) -> None:
        """Turn the tensors saved during capture into ``SavedTensor`` records (after capture)."""
        saved = self._saved
        if saved:
            self._saved = None
            hooks = _current_hooks() if _open_hook_contexts[0] else None
            self._packed = tuple([None if t is None else SavedTensor(t, node, hooks) for t in saved])
            self._node_ref = weakref.ref(node)
        else:
            self._packed = ()

    @property
    def saved_tensors(self) -> tuple:
        """The saved tensors, checked against in-place modification (Note [Saved tensors])."""
        packed = self._packed
        if packed is None:
            if self._saved is not None:  # still capturing
                return tuple(self._saved)
            raise RuntimeError(_RELEASED_MESSAGE)
        if not packed:
            return ()
        node = self._node_ref()
        return tuple([None if s is None else s.unpack(node) for s in packed])

    def _release(self) -> None:
        if self._packed:
            self._packed = None


def _camel(op_type: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\W]+", op_type) if part)


class NodeHooks:
    """The hooks of one node, made on first registration: pre-hooks, tensor hooks of its outputs
    (output_nr -> handle id -> fn), post hooks, and the outputs whose grad is retained."""

    __slots__ = ("post", "pre", "retained", "tensor")

    def __init__(self):
        self.pre = {}
        self.tensor = {}
        self.post = {}
        self.retained = {}  # output_nr -> weakref of the tensor that retain_grad()-ed


class Node:
    """A backward function in the graph (OneFlow's FunctionNode, PyTorch's ``grad_fn``).

    ``next_functions``: per input, the ``(node, output_nr)`` its grad goes to;
    ``out_metas``: per output, its meta, or None for an output that does not require grad.
    """

    __slots__ = ("__weakref__", "hooks", "next_functions", "out_metas")

    def name(self) -> str:
        raise NotImplementedError

    def _repr_name(self) -> str:
        return self.name()

    def __repr__(self):
        return f"<{self._repr_name()} object at {id(self):#x}>"

    # ---- hooks ------------------------------------------------------------------------------
    def _hooks(self) -> NodeHooks:
        hooks = self.hooks
        if hooks is None:
            hooks = self.hooks = NodeHooks()
        return hooks

    def register_hook(self, fn) -> RemovableHandle:
        """Call ``fn(grad_inputs, grad_outputs)`` after this node runs; a non-None result replaces grad_inputs."""
        return _add_hook(self._hooks().post, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """Call ``fn(grad_outputs)`` before this node runs; a non-None result replaces grad_outputs."""
        return _add_hook(self._hooks().pre, fn)

    def _register_tensor_hook(self, output_nr: int, fn) -> RemovableHandle:
        return _add_hook(self._hooks().tensor.setdefault(output_nr, {}), fn)

    def _retain_grad(self, output_nr: int, tensor) -> None:
        """Store output ``output_nr``'s grad into ``tensor.grad`` during backward (None: stop)."""
        if tensor is None:
            if self.hooks is not None:
                self.hooks.retained.pop(output_nr, None)
            return
        self._hooks().retained[output_nr] = weakref.ref(tensor)

    # ---- running ----------------------------------------------------------------------------
    def apply(self, grads: list, create_graph: bool) -> tuple:
        """The grads of the inputs from the grads of the outputs (one per output, None when absent)."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop what the node saved for backward (called after it ran without ``retain_graph``)."""


def _add_hook(hooks: dict, fn) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


class OpNode(Node):
    """The node of a recorded op: its grad function and capture state."""

    __slots__ = ("_name", "grad_fn", "op_type", "state")

    def __init__(self, op_type, grad_fn, state, next_functions, out_metas, name):
        self.next_functions = next_functions
        self.out_metas = out_metas
        self.hooks = None
        self.op_type = op_type
        self.grad_fn = grad_fn
        self.state = state
        self._name = name

    def name(self) -> str:
        return self._name

    def _repr_name(self) -> str:
        return self._name + "0"

    def apply(self, grads, create_graph):
        gf = self.grad_fn
        if gf is None:
            raise RuntimeError(f"{self.op_type}: the derivative for op '{self.op_type}' is not implemented: no "
                               f"grad function is registered for it (register one with "
                               f"register_op_grad('{self.op_type}'))")
        return self.check_grads(gf.apply(self.state, grads))

    def check_grads(self, in_grads) -> tuple:
        """The grad function's result as a tuple of one grad per input (a list or a single grad is accepted)."""
        if type(in_grads) is not tuple:
            in_grads = tuple(in_grads) if isinstance(in_grads, list) else (in_grads,)
        if len(in_grads) != len(self.next_functions):
            raise RuntimeError(f"{self.op_type}: the grad function {type(self.grad_fn).__name__} returned "
                               f"{len(in_grads)} gradient(s) but the op has {len(self.next_functions)} input(s)")
        return in_grads

    def release(self):
        self.state._release()


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: accumulates into the leaf's ``.grad``."""

    __slots__ = ("any_dtype", "variable")

    def __init__(self, variable: Tensor):
        self.next_functions = ()
        self.hooks = None
        self.variable = variable
        self.use_grad_dtype()

    def use_grad_dtype(self) -> None:
        """Declare the leaf's gradient dtype as this node's output meta (Note [Gradient dtype])."""
        meta = self.variable._meta
        d = self.variable._ag.grad_dtype
        self.any_dtype = d is None
        if d is not None and d is not OWN_DTYPE and d is not meta.dtype:
            meta = make_meta(meta.shape, d, meta.device)
        self.out_metas = (meta,)

    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grads, create_graph):
        accumulate = _accumulate_grad  # the engine runs it directly
        if accumulate is None:
            raise RuntimeError("AccumulateGrad.apply(): no gradient accumulation is registered; "
                               "oneflow_lite.autograd.engine registers it when imported (see Note [Engine "
                               "registration])")
        accumulate(self.variable, grads[0], create_graph)
        return ()


# ``accumulate_grad(t, g, create_graph)`` of the engine, registered by it at import (Note [Engine registration]).
_accumulate_grad = None


def register_accumulate_grad(fn) -> None:
    """Make ``fn(tensor, grad, create_graph)`` what ``AccumulateGrad.apply`` runs (Note [Engine registration])."""
    global _accumulate_grad
    _accumulate_grad = fn


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The AccumulateGrad node of leaf ``t`` (one per leaf while a graph refers to it)."""
    ag = t._ag
    ref = ag.grad_accumulator
    acc = None if ref is None else ref()
    if acc is None:
        acc = AccumulateGrad(t)
        ag.grad_accumulator = weakref.ref(acc)
    return acc


def gradient_edge(t: Tensor):
    """``(node, output_nr)`` through which gradients reach ``t`` (NO_EDGE when it does not require grad)."""
    if not t._key_set & _AG:
        return NO_EDGE
    ag = t._ag
    fn = ag.grad_fn
    if fn is not None:
        return (fn, ag.output_nr)
    return (grad_accumulator(t), 0)


def node_name(op_type: str) -> str:
    """``relu`` -> ``ReluBackward``, ``broadcast_add`` -> ``BroadcastAddBackward``."""
    return _camel(op_type) + "Backward"
