"""``AutogradInterpreter``: the boxed fallback at the Autograd dispatch key.

A call reaches it only when an input (or an in-place output) requires grad and
grad mode is on (Note [Autograd key and requires_grad]). It runs the op below
the Autograd key, with Autograd excluded so that ops a lower handler runs are
not recorded again; then, when the op records (not a no_grad op, an input
requires grad, and a floating output exists), it adds the backward node first
and then lets the op's grad function capture what it needs, so saved outputs
already carry their new grad_fn (OneFlow's order). Floating outputs get
requires_grad; integer and bool outputs never do.

In-place calls (``outputs`` given): a leaf that requires grad cannot be written
(PyTorch's error); an input that aliases an output is captured as a copy of
its value before the write, so its grad function sees the original; a
written tensor whose view family has another live member is refused (Note
[Version counters and views]).
"""

from __future__ import annotations

import gc

from oneflow_lite.autograd.function import FunctionNode, FunctionOpExpr
from oneflow_lite.autograd.grad_function import grad_entry
from oneflow_lite.autograd.graph import NO_EDGE, CaptureState, OpNode, grad_accumulator, gradient_edge, node_name
from oneflow_lite.dispatch.dispatch_key import DispatchKey, keys_below
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import set_excluded
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, AutogradMeta, Tensor, has_live_views, link_view
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.interpreters.eager_local import eager_local_interpreter

_AG = AUTOGRAD_KEY_SET
_BELOW = keys_below(DispatchKey.Autograd)
_make = Tensor._make
_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."


# Note [Kernels do not re-enter dispatch]
# The op runs below Autograd with Autograd excluded from this thread's key set, so that ops a lower
# handler dispatches itself (a Python-key or lazy handler, a custom Function's forward) are not
# recorded again. The eager interpreter running a UserOpExpr dispatches nothing: it calls a kernel
# on NumPy arrays. For it the exclusion (three thread-local accesses) is skipped.
def _forward(op_expr, ks, inputs, attrs, outputs):
    """Run ``op_expr`` below the Autograd key (Note [Kernels do not re-enter dispatch])."""
    mask, table = op_expr._entry.dispatch_state  # bound: the call came through dispatch
    ks &= _BELOW & mask
    handler = table[ks.bit_length() - 1]
    if handler is eager_local_interpreter and type(op_expr) is UserOpExpr:
        return handler(op_expr, ks, inputs, attrs, outputs)
    excluded = _tls.excluded
    set_excluded(excluded | _AG)
    try:
        return handler(op_expr, ks, inputs, attrs, outputs)
    finally:
        set_excluded(excluded)


def autograd_interpreter(op_expr, ks, inputs, attrs, outputs):
    """Run ``op_expr`` below Autograd and record its backward node when needed."""
    if outputs is not None:
        return _apply_inplace(op_expr, ks, inputs, attrs, outputs)
    if type(op_expr) is FunctionOpExpr:
        return _apply_function(op_expr, ks, inputs)
    outs = _forward(op_expr, ks, inputs, attrs, None)
    if not op_expr.is_grad_disabled():
        for t in inputs:
            if t._key_set & _AG:
                _record(op_expr, inputs, outs, attrs, inputs)
                break
    return outs


class _CaptureAttrs:
    """The attrs the kernel saw (call attrs over the expr's), looked up in the inference cache on
    first use only: most grad functions never read attrs."""

    __slots__ = ("_attrs", "_call_attrs", "_inputs", "_op_expr")

    def __init__(self, op_expr, inputs, call_attrs):
        self._op_expr = op_expr
        self._inputs = inputs
        self._call_attrs = call_attrs
        self._attrs = None

    def _resolve(self):
        attrs = self._attrs
        if attrs is None:
            op_expr = self._op_expr
            if type(op_expr) is UserOpExpr:
                attrs = op_expr.infer(tuple([t._meta for t in self._inputs]), self._call_attrs).attrs
            else:
                attrs = self._call_attrs if self._call_attrs is not None else {}
            self._attrs = attrs
        return attrs

    def __getitem__(self, name):
        return self._resolve()[name]

    def get(self, name, default=None):
        return self._resolve().get(name, default)

    def __contains__(self, name):
        return name in self._resolve()

    def all(self):
        """Every attr, as the ``AttrMap`` the kernel saw."""
        return self._resolve()

    def arg_tuples(self) -> tuple:
        """``(input ArgTuple, output ArgTuple)`` of the op expr: the call's argument names, counts and slices."""
        op_expr = self._op_expr
        return op_expr.input_arg_tuple, op_expr.output_arg_tuple


def _record(op_expr, inputs, outs, attrs, captured_inputs, grad_function=None):
    """Add the backward node of ``outs`` and let the grad function (the op type's registered one unless
    ``grad_function`` is given) capture what it needs (OneFlow's order)."""
    if len(outs) == 1:
        m = outs[0]._meta
        if not m.dtype.is_floating_point:
            return
        out_metas = (m,)
    else:
        out_metas = tuple([o._meta if o._meta.dtype.is_floating_point else None for o in outs])
        if not any(out_metas):
            return
    op_type = op_expr.op_type_name
    if grad_function is None:
        gf, name = grad_entry(op_type)
    else:
        gf, name = grad_function, node_name(op_type)
    edges = []
    needs = []
    for t in inputs:
        if t._key_set & _AG:
            ag = t._ag
            fn = ag.grad_fn
            edges.append((fn, ag.output_nr) if fn is not None else (grad_accumulator(t), 0))
            needs.append(True)
        else:
            edges.append(NO_EDGE)
            needs.append(False)
    state = CaptureState(tuple(needs))
    node = OpNode(op_type, gf, state, tuple(edges), out_metas, name)
    for i, o in enumerate(outs):
        if out_metas[i] is not None:
            if o._ag is None:
                o._ag = AutogradMeta(node, i)
                o._key_set |= _AG
            else:
                _rebase(o, node, i)
    if gf is not None:
        gf.capture(state, captured_inputs, outs, _CaptureAttrs(op_expr, inputs, attrs))
    state._pack(node)


def _rebase(t, node, output_nr):
    """An in-place output gets ``node`` as grad_fn, keeping its ``.grad``; retain_grad moves along."""
    ag = t._ag
    old = ag.grad_fn
    if ag.retains_grad and old is not None:
        old._retain_grad(ag.output_nr, None)
        node._retain_grad(output_nr, t)
    ag.grad_fn = node
    ag.output_nr = output_nr
    t._key_set |= _AG


# ---- in-place ------------------------------------------------------------------------------------
class _CutHistory:
    """Grad function of a no_grad op writing in place into a tensor that requires grad: the written
    value does not depend on the old one, so no gradient flows back through it."""

    def capture(self, state, inputs, outputs, attrs):
        pass

    def apply(self, state, out_grads):
        return (None,) * len(state.needs_input_grad)


_CUT_HISTORY = _CutHistory()


def _snapshot(t):
    """A copy of ``t``'s current value with ``t``'s current history (for capture in an in-place op).

    The copy is an op (the Copy functor, not recorded), so a graph being captured records it too."""
    excluded = _tls.excluded
    set_excluded(excluded | _AG)
    try:
        s = get_functor("Copy")(t, t._meta.device)
    finally:
        set_excluded(excluded)
    if t._key_set & _AG:
        fn, nr = gradient_edge(t)
        s._ag = AutogradMeta(fn, nr)
        s._key_set |= _AG
    return s


def _still_has_live_views(t) -> bool:
    """Whether ``t`` shares memory with a reachable tensor: a view kept only by unreachable garbage (a
    reference cycle, such as a caught exception's traceback holding the frame that held the view) is
    collected first. Only on the way to refusing an in-place op."""
    gc.collect()
    return has_live_views(t)


def _apply_inplace(op_expr, ks, inputs, attrs, outputs):
    out_requires_grad = False
    for o in outputs:
        if o._key_set & _AG:
            if o._ag.grad_fn is None:
                raise RuntimeError(f"{op_expr.op_type_name}: {_LEAF_INPLACE}")
            out_requires_grad = True
    in_requires_grad = False
    for t in inputs:
        if t._key_set & _AG:
            in_requires_grad = True
            break
    grad_disabled = op_expr.is_grad_disabled()
    record = out_requires_grad or (in_requires_grad and not grad_disabled)
    if not record:
        return _forward(op_expr, ks, inputs, attrs, outputs)
    for o in outputs:
        if has_live_views(o) and _still_has_live_views(o):
            raise RuntimeError(
                f"{op_expr.op_type_name}: autograd cannot record an in-place operation on a tensor that shares "
                f"memory with another live tensor (a view or the base of a view, e.g. made by reshape, transpose "
                f"or slicing): the other tensor's gradient history would be wrong. Use the out-of-place op.")
    captured = inputs
    for i, t in enumerate(inputs):
        for o in outputs:
            if t is o or (t._vc is not None and t._vc is o._vc):
                if captured is inputs:
                    captured = list(inputs)
                captured[i] = _snapshot(t)
                break
    outs = _forward(op_expr, ks, inputs, attrs, outputs)
    _record(op_expr, inputs, outs, attrs, captured, _CUT_HISTORY if grad_disabled else None)
    return outs


# ---- custom Functions ----------------------------------------------------------------------------
def _apply_function(op_expr, ks, inputs):
    ctx = op_expr.ctx
    requires_grad = False
    for t in inputs:
        if t._key_set & _AG:
            requires_grad = True
            break
    if requires_grad:
        needs = [False] * len(op_expr.args)
        for pos, t in zip(op_expr.tensor_positions, inputs):
            needs[pos] = bool(t._key_set & _AG)
        ctx.needs_input_grad = tuple(needs)
    raw = _forward(op_expr, ks, inputs, None, None)
    if not requires_grad:
        return raw
    single = isinstance(raw, Tensor)
    items = [raw] if single else list(raw) if isinstance(raw, (tuple, list)) else None
    if items is None:
        raise TypeError(f"{op_expr.fn_cls.__name__}.forward must return a Tensor or a tuple of Tensors (and other "
                        f"values), got {type(raw).__name__}")
    seen = set()
    for i, o in enumerate(items):
        if not isinstance(o, Tensor):
            continue
        if o._ag is not None or id(o) in seen:
            # e.g. an input returned as is: the output is a new tensor sharing its data, so the input's
            # own autograd state is not overwritten
            alias = _make(o._array, o._meta)
            alias._key_set = o._key_set & ~_AG
            link_view(alias, o)
            items[i] = o = alias
        seen.add(id(o))
    non_diff = {id(t) for t in ctx._non_differentiable}
    tensors = [o for o in items if isinstance(o, Tensor)]
    out_metas = tuple([None if id(o) in non_diff or not o._meta.dtype.is_floating_point else o._meta
                       for o in tensors])
    next_functions = tuple([gradient_edge(t) for t in inputs])
    node = FunctionNode(op_expr.fn_cls, ctx, next_functions, out_metas, tuple([o._meta for o in tensors]),
                        len(op_expr.args), op_expr.tensor_positions)
    for i, o in enumerate(tensors):
        if out_metas[i] is not None:
            o._ag = AutogradMeta(node, i)
            o._key_set |= _AG
        else:
            o._key_set &= ~_AG
    ctx._pack(node)
    return items[0] if single else tuple(items) if isinstance(raw, tuple) else items


def register():
    """Register the interpreter as the fallback at the Autograd key; returns the handle."""
    return DISPATCHER.register_fallback(DispatchKey.Autograd, autograd_interpreter)


class AutogradInterpreter:
    """OneFlow's name for the autograd handler (a namespace; the handler is a function for speed)."""

    apply = staticmethod(autograd_interpreter)
