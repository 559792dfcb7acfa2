"""``batched_interpreter``: the boxed fallback at the Batched dispatch key (vmap's batching interpreter).

A batched tensor (Note [Batched tensors] in framework/tensor.py) has the logical (per-sample) meta
and holds a ``BatchedValue``: the physical tensor and the vmap level. An op with a batched input
reaches this handler, which unwraps the inputs of the highest level, runs the op's batch rule on the
physical tensors (interpreters/batch_rules.py; the rules call ops, which dispatch again) and wraps
the rule's outputs at that level. An op without a rule runs once per sample (a loop over the batch,
then ``stack``), with a one-time warning naming the op.

Note [Batch dim in front]
The physical tensor of a batched tensor always has its batch dim at 0: vmap moves an input's mapped
dim to the front when it wraps it (and an output's to ``out_dims`` when it unwraps it), and every rule
returns outputs batched at dim 0. A rule so deals with two cases per input: batched at dim 0, or not
batched (``BatchCall.batched[i]``).

Note [vmap levels]
Each ``vmap`` call takes a new level from a counter, so a nested vmap has a higher level than the vmaps
around it. An op's inputs may be batched at several levels: the handler unwraps the highest level only;
the physical tensors may still be batched at lower levels, so the ops a rule runs on them come back
here for the next level down, until no input is batched.

Note [Batching and autograd]
Batched sits below Autograd (Note [Dispatch key order]): autograd records the logical op on the
batched tensors, then runs it below its key with Autograd excluded, so the ops of the batch rule are
not recorded. Backward formulas call ops on the saved batched tensors and the batched output grads,
which come back here: ``vmap(grad(f))`` gives per-sample gradients. While a vmap is active the Batched
key is also in the thread's included set, so random ops (which have no batched input) reach the handler
and follow vmap's ``randomness``. The handler also notes, per level, the gradient edges of the unbatched
inputs that require grad (tensors from outside the vmap entering the batched computation): they are where
gradients through vmap's outputs leave the per-sample graph (Note [Gradients through vmap's outputs] in
func/vmap_autograd.py).
"""

from __future__ import annotations

import itertools
import threading
import warnings

from oneflow_lite.autograd.graph import gradient_edge
from oneflow_lite.dispatch.dispatch_key import DispatchKey, keys_below
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import set_included
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, BATCHED_KEY_SET, Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.interpreters.op_interp_util import dispatch, redispatch

_BATCHED = BATCHED_KEY_SET
_AG = AUTOGRAD_KEY_SET
_BELOW = keys_below(DispatchKey.Batched)
_make = Tensor._make


class BatchedValue:
    """What a batched tensor's ``_array`` slot holds: the physical tensor (batch dim 0) and the vmap level."""

    __slots__ = ("level", "value")

    def __init__(self, value, level: int):
        self.value = value
        self.level = level

    @property
    def base(self):
        """The physical tensor this one is a view of (never None: the autograd engine, which reads ``base``
        to decide whether it may keep a gradient's buffer, copies a batched gradient)."""
        return self.value

    def read_error(self, what: str) -> RuntimeError:
        return RuntimeError(f"vmap: {what} reads the values of a batched tensor inside a function being vmapped; "
                            f"its value differs per sample. Compute it outside vmap, or return the tensor from the "
                            f"function and read it after vmap.")

    def __repr__(self):
        return f"BatchedTensor(lvl={self.level}, bdim=0, value={self.value!r})"


def make_batched(value, level: int) -> Tensor:
    """The batched tensor of level ``level`` whose physical tensor is ``value`` (batch dim 0)."""
    m = value._meta
    if m.ndim == 0:
        raise RuntimeError("vmap: cannot batch a 0-dim tensor: the physical tensor needs a batch dim")
    meta = make_meta(m.shape[1:], m.dtype, m.device)
    t = _make(BatchedValue(value, level), meta)
    t._key_set = meta.key_set | _BATCHED
    return t


def is_batched(t) -> bool:
    """Whether ``t`` is a batched tensor (made inside vmap)."""
    return bool(t._key_set & _BATCHED)


def unwrap(t, level: int):
    """``(physical tensor, True)`` when ``t`` is batched at ``level``, else ``(t, False)``."""
    if t._key_set & _BATCHED:
        bv = t._array
        if bv.level == level:
            return bv.value, True
    return t, False


# ---- the thread's vmap levels (Note [vmap levels]) ------------------------------------------------------
class _VmapState(threading.local):
    def __init__(self):
        self.levels = []  # (level, batch size, randomness) of the active vmaps, outermost first
        self.in_random_rule = False  # a random op's rule runs: its physical random ops are drawn as they are
        self.crossings = {}  # level -> {gradient edge: None} of unbatched inputs that require grad (in order)


_state = _VmapState()
_next_level = itertools.count(1)


def enter_level(batch_size: int, randomness: str, level: int | None = None) -> tuple:
    """Start a vmap level in this thread (a new one, or ``level`` again: the backward of vmap's outputs replays
    the level's per-sample graph); returns ``(level, token)`` (``leave_level`` takes the token)."""
    if level is None:
        level = next(_next_level)
    st = _state
    st.levels.append((level, batch_size, randomness))
    st.crossings[level] = {}
    included = _tls.included
    if not included & _BATCHED:
        set_included(included | _BATCHED)
    return level, (level, bool(included & _BATCHED))


def leave_level(token: tuple) -> None:
    level, had_key = token
    st = _state
    levels = st.levels
    if levels and levels[-1][0] == level:
        levels.pop()
    else:  # an exception left an inner level on the stack: drop it with this one
        st.levels = [lv for lv in levels if lv[0] < level]
    for lv in [lv for lv in st.crossings if lv >= level]:
        del st.crossings[lv]
    included = _tls.included
    if not had_key and included & _BATCHED:
        set_included(included & ~_BATCHED)


def active_levels() -> list:
    """The (level, batch size, randomness) of this thread's active vmaps, outermost first."""
    return list(_state.levels)


def crossings(level: int) -> dict:
    """The gradient edges of the unbatched tensors requiring grad that ops of ``level`` have read so far (Note
    [Batching and autograd]); empty for a level that is not active."""
    return _state.crossings.get(level, {})


def _randomness(level: int) -> str:
    for lv, _, randomness in _state.levels:
        if lv == level:
            return randomness
    return "different"  # a batched tensor that escaped its vmap


# ---- batch rules ------------------------------------------------------------------------------------------
class BatchCall:
    """One op call seen by a batch rule: the physical ``values`` of the inputs (batch dim 0 where
    ``batched[i]``), the batch ``size``, the op expr and its attrs (``attrs``: every attr, composed)."""

    __slots__ = ("_attrs", "batched", "call_attrs", "op_expr", "size", "values")

    def __init__(self, op_expr, call_attrs, values, batched, size):
        self.op_expr = op_expr
        self.call_attrs = call_attrs
        self.values = values
        self.batched = batched
        self.size = size
        self._attrs = None

    @property
    def op_type(self) -> str:
        return self.op_expr.op_type_name

    @property
    def attrs(self):
        attrs = self._attrs
        if attrs is None:
            attrs = self._attrs = self.op_expr.compose_attrs(self.call_attrs)
        return attrs

    def logical_ndim(self, i: int) -> int:
        t = self.values[i]
        return t._meta.ndim - 1 if self.batched[i] else t._meta.ndim

    def redo(self, inputs, **changes) -> tuple:
        """The op itself on ``inputs``, with the attrs in ``changes`` replaced; returns its outputs."""
        attrs = self.call_attrs
        if changes:
            attrs = self.op_expr.compose_attrs({**self.attrs, **changes})
        return dispatch(self.op_expr, tuple(inputs), attrs)

    def loop(self) -> tuple:
        """The op run once per sample, the results stacked (the fallback of ops without a rule, and of a
        rule's unusual cases), with the one-time warning naming the op."""
        _warn_loop(self.op_type)
        return loop(self)


# op type -> rule(call: BatchCall) -> tuple of physical outputs, each batched at dim 0
RULES = {}
# op types whose rule may also write in place into batched outputs (elementwise ops)
INPLACE_OPS = set()
RANDOM_OPS = {"normal", "uniform", "randint", "randperm", "random_mask_like", "normal_tensor"}
_warned = set()


def register_batch_rule(op_type: str, rule, *, inplace: bool = False):
    """Make ``rule(call)`` the batch rule of ``op_type`` (None removes it); returns the previous rule.
    ``inplace``: the rule's op may also be called in place on a batched output (elementwise ops)."""
    if rule is not None and not callable(rule):
        raise TypeError(f"register_batch_rule('{op_type}'): expected a callable rule(call) or None, got {rule!r}")
    previous = RULES.get(op_type)
    if rule is None:
        RULES.pop(op_type, None)
        INPLACE_OPS.discard(op_type)
    else:
        RULES[op_type] = rule
        (INPLACE_OPS.add if inplace else INPLACE_OPS.discard)(op_type)
    _warned.discard(op_type)
    return previous


def loop(call: BatchCall) -> tuple:
    """``call``'s op once per sample (the batched inputs indexed at each sample), the outputs stacked."""
    per_sample = []
    for b in range(call.size):
        ins = [v[b] if batched else v for v, batched in zip(call.values, call.batched)]
        per_sample.append(dispatch(call.op_expr, tuple(ins), call.call_attrs))
    outs = []
    for i in range(len(per_sample[0]) if per_sample else 0):
        items = [o[i] for o in per_sample]
        first = items[0]._meta
        for b, o in enumerate(items):
            if o._meta.shape != first.shape or o._meta.dtype is not first.dtype:
                raise RuntimeError(
                    f"vmap: op '{call.op_type}' (run once per sample: it has no batching rule) returned output {i} "
                    f"of shape {list(first.shape)} for sample 0 but {list(o._meta.shape)} for sample {b}; vmap "
                    f"needs every sample's output to have one shape (data-dependent shapes cannot be batched)")
        outs.append(F.stack(items, 0))
    return tuple(outs)


def _warn_loop(op_type: str) -> None:
    if op_type not in _warned:
        _warned.add(op_type)
        what = "there is no batching rule" if op_type not in RULES else "its batching rule does not cover this call"
        warnings.warn(f"vmap: {what} for op '{op_type}', so it runs once per sample (a Python loop over the "
                      f"batch); flow.func.register_batch_rule('{op_type}', rule) makes it batched", stacklevel=4)


# ---- the handler --------------------------------------------------------------------------------------------
def _top_level(tensors) -> int:
    level = 0
    for t in tensors:
        if t._key_set & _BATCHED:
            level = max(level, t._array.level)
    return level


def batched_interpreter(op_expr, ks, inputs, attrs, outputs):
    """Run ``op_expr`` on the physical tensors of its highest-level batched inputs (or below the Batched
    key when none is batched)."""
    level = _top_level(inputs)
    if outputs is not None:
        level = max(level, _top_level(outputs))
    op_type = op_expr.op_type_name
    if level == 0 or type(op_expr) is not UserOpExpr:
        if op_type in RANDOM_OPS and _state.levels and not _state.in_random_rule and type(op_expr) is UserOpExpr:
            return _unbatched_random(op_expr, ks, inputs, attrs)
        return redispatch(op_expr, ks & _BELOW, inputs, attrs, outputs)
    values, batched = [], []
    size = None
    for t in inputs:
        v, b = unwrap(t, level)
        values.append(v)
        batched.append(b)
        if b:
            if size is None:
                size = v._meta.shape[0]
        elif t._key_set & _AG:  # a differentiable tensor from outside enters the level (Note [Batching and autograd])
            seen = _state.crossings.get(level)
            if seen is not None:
                seen[gradient_edge(t)] = None
    if outputs is not None:
        if size is None:  # only the written tensor is batched
            size = next(o._array.value._meta.shape[0] for o in outputs if o._key_set & _BATCHED)
        return _inplace(BatchCall(op_expr, attrs, values, batched, size), outputs, level)
    call = BatchCall(op_expr, attrs, values, batched, size)
    if op_type in RANDOM_OPS:
        return _batched_random(call, level)
    rule = RULES.get(op_type)
    results = call.loop() if rule is None else rule(call)
    return tuple([make_batched(r, level) for r in results])


def _inplace(call: BatchCall, outputs, level) -> tuple:
    """An in-place call: a rule that writes in place (elementwise ops, setitem) writes into the physical
    tensors of the outputs; other ops write into each sample's slice of them, one sample at a time."""
    op_type = call.op_type
    outs = [unwrap(o, level) for o in outputs]
    if not all(b for _, b in outs):
        raise RuntimeError(f"vmap: the in-place op '{op_type}' writes into a tensor that is not batched, with a value "
                           f"that is batched (it differs per sample); use the out-of-place op, or pass the written "
                           f"tensor through vmap too")
    physical = [o for o, _ in outs]
    if op_type in INPLACE_OPS:
        RULES[op_type](call, outputs=physical)
    else:
        loop_inplace(call, physical)
    return tuple(outputs)


def loop_inplace(call: BatchCall, outputs) -> None:
    """``call``'s op written into each sample's slice of the physical ``outputs``, one sample at a time."""
    _warn_loop(call.op_type)
    for b in range(call.size):
        ins = [v[b] if batched else v for v, batched in zip(call.values, call.batched)]
        dispatch(call.op_expr, tuple(ins), call.call_attrs, tuple([o[b] for o in outputs]))


def _unbatched_random(op_expr, ks, inputs, attrs):
    """A random op without batched inputs inside vmap: an error, the same values for every sample, or a
    batched result drawn per sample, per the randomness of each active vmap level."""
    levels = _state.levels
    for _, _, randomness in levels:
        if randomness == "error":
            raise _random_error(op_expr.op_type_name)
    different = [(lv, size) for lv, size, randomness in levels if randomness == "different"]
    if not different:
        return redispatch(op_expr, ks & _BELOW, inputs, attrs, None)
    sizes = tuple(size for _, size in different)
    ks &= _BELOW
    if "shape" in op_expr.op_def.attrs:
        full = op_expr.compose_attrs(attrs)
        outs = redispatch(op_expr, ks, inputs, op_expr.compose_attrs({**full, "shape": (*sizes, *full["shape"])}))
    else:  # e.g. randperm: one draw per sample of every level
        outs = _draws(op_expr, ks, inputs, attrs, sizes)
    for lv, _ in different:
        outs = tuple([make_batched(o, lv) for o in outs])
    return outs


def _draws(op_expr, ks, inputs, attrs, sizes):
    n = 1
    for s in sizes:
        n *= s
    draws = [redispatch(op_expr, ks, inputs, attrs) for _ in range(n)]
    outs = []
    for i in range(len(draws[0])):
        stacked = F.stack([d[i] for d in draws], 0)
        outs.append(F.reshape(stacked, (*sizes, *stacked._meta.shape[1:])))
    return tuple(outs)


def _batched_random(call: BatchCall, level) -> tuple:
    """A random op with batched inputs: an error, one draw for every sample (``random_mask_like`` only) or
    a draw per sample, per the randomness of the level."""
    randomness = _randomness(level)
    if randomness == "error":
        raise _random_error(call.op_type)
    if randomness == "same":
        if call.op_type != "random_mask_like":
            raise RuntimeError(f"vmap: randomness='same' is not supported for op '{call.op_type}' with batched "
                               f"inputs; use randomness='different'")
        like = call.values[0][0] if call.batched[0] else call.values[0]
        return call.redo([like])  # not batched: the same mask for every sample
    rule = RULES.get(call.op_type)
    st = _state
    outer, st.in_random_rule = st.in_random_rule, True
    try:
        results = rule(call) if rule is not None else call.loop()
    finally:
        st.in_random_rule = outer
    return tuple([make_batched(r, level) for r in results])


def _random_error(op_type: str) -> RuntimeError:
    return RuntimeError(f"vmap: called random operation '{op_type}' while in randomness error mode. Please either "
                        f"use the 'same' or 'different' randomness flags on vmap or perform the randomness operation "
                        f"out of vmap")


def register():
    """Register the interpreter as the fallback at the Batched key; returns the handle."""
    return DISPATCHER.register_fallback(DispatchKey.Batched, batched_interpreter)


class BatchedInterpreter:
    """The batching handler's namespace (the handler is a function for speed)."""

    apply = staticmethod(batched_interpreter)
