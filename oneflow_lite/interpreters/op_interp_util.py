"""``OpInterpUtil.dispatch``: the entry of every op call into the dispatcher.

The key set of a call is the union of its inputs' key sets, plus this thread's
included keys, minus its excluded keys, minus the op's fallthrough keys; the
handler at the highest remaining key runs. A handler that has done its part
calls :func:`redispatch` with its own key and everything above masked off.
(See Note [Dispatch keys are priorities] and Note [Copy-on-write dispatch tables].)
"""

from __future__ import annotations

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import ACTIVE as _ACTIVE
from oneflow_lite.dispatch.tls import GLOBAL_INCLUDED as _GLOBAL_INCLUDED
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.framework.device import device as Device

_CPU_KEYS = Device("cpu").key_set


def _bind_entry(op_expr):
    entry = op_expr._entry = DISPATCHER.entry(op_expr.op_type_name)
    entry.bind(op_expr)
    return entry


def _source_key_set(op_expr, attrs) -> int:
    """Key set of a call without tensor inputs: its ``device`` attr's backend (cpu by default)."""
    dev = (attrs.get("device") if attrs else None) or op_expr.base_attrs.get("device")
    if dev is None:
        return _CPU_KEYS
    return dev.key_set if type(dev) is Device else Device(dev).key_set


def dispatch(op_expr, inputs, attrs=None, outputs=None):
    """Run ``op_expr`` on ``inputs`` (a tuple / list of tensors) with call-time ``attrs``.

    Returns the output tensors as a tuple. ``outputs``, when given, are existing
    tensors to write the results into (in-place ops): their shapes and dtypes
    must equal the inferred ones.
    """
    n = len(inputs)
    if n == 1:
        ks = inputs[0]._key_set
    elif n == 2:
        ks = inputs[0]._key_set | inputs[1]._key_set
    else:
        ks = 0
        for t in inputs:
            ks |= t._key_set
    if outputs is not None:  # an in-place call also dispatches on what it writes (e.g. a grad-requiring output)
        for t in outputs:
            ks |= t._key_set
    if not ks:
        ks = _source_key_set(op_expr, attrs)
    if _ACTIVE[0]:  # Note [Threads with changed key sets], Note [Process-wide included keys]
        st = _tls
        ks = (ks | st.included | _GLOBAL_INCLUDED[0]) & ~st.excluded
    entry = op_expr._entry or _bind_entry(op_expr)
    mask, table = entry.dispatch_state
    ks &= mask
    return table[ks.bit_length() - 1](op_expr, ks, inputs, attrs, outputs)


def redispatch(op_expr, ks, inputs, attrs=None, outputs=None):
    """Dispatch with an explicit key set (a handler passes the keys below its own)."""
    entry = op_expr._entry or _bind_entry(op_expr)
    mask, table = entry.dispatch_state
    ks &= mask
    return table[ks.bit_length() - 1](op_expr, ks, inputs, attrs, outputs)


class OpInterpUtil:
    """OneFlow's name for the dispatch entry points."""

    dispatch = staticmethod(dispatch)
    redispatch = staticmethod(redispatch)
