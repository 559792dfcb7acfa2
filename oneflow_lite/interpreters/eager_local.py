"""``EagerLocalInterpreter``: the handler at every backend key.

It infers output metas (through the op expr's cache; the same-device check and
device inference happen there), picks the per-device kernel for the call's
dtypes, allocates the outputs and runs the kernel. On a device without storage
(``meta``) the kernel is chosen but nothing is computed.

An in-place call writes into its outputs' buffers (through the kernel's
in-place form when it has one, else by copying the kernel's result) and bumps
their version counters; an output whose array aliases an input's array (a
kernel returned a NumPy view, or the input array itself) shares that input's
version counter (Note [Version counters and views]). The common calls take a
fast path (Note [Eager fast path]).
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.dispatch.dispatch_key import BACKEND_KEYS
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.framework.tensor import Tensor, VersionCounter, link_view

_make = Tensor._make
_new = object.__new__
_ndarray = np.ndarray
_may_share_memory = np.may_share_memory


def _bump_versions(outputs):
    for t in outputs:
        vc = t._vc
        if vc is None:
            t._vc = VersionCounter(1)
        else:
            vc.version += 1


def _link_if_view(out, result, inputs):
    """Share the version counter of the input whose array ``result`` aliases, if any: the owner of the
    memory (an array's ``base``, NumPy's owner of a view) decides when both owners own their memory, an
    overlap test otherwise (``as_strided`` views, arrays over foreign buffers)."""
    base = result.base  # NumPy points a view at the array owning the memory
    for t in inputs:  # the usual cases first: the input itself, a view of it, or of the same owner
        a = t._array
        if a is result or (base is not None and (base is a or base is getattr(a, "base", None))):
            link_view(out, t)
            return
    owner = result if base is None else base
    owns = type(owner) is _ndarray and owner.base is None and owner.flags.owndata
    for t in inputs:
        a = t._array
        if a is None:
            continue
        if owns:  # two arrays owning their memory share none: no overlap test needed
            a_owner = a.base
            if a_owner is None:
                a_owner = a
            if a_owner is owner:
                link_view(out, t)
                return
            if type(a_owner) is _ndarray and a_owner.base is None and a_owner.flags.owndata:
                continue
        if _may_share_memory(a, result):
            link_view(out, t)
            return


def _check_inplace_outputs(op_expr, outputs, out_metas):
    if len(outputs) != len(out_metas):
        raise RuntimeError(f"{op_expr.op_type_name}: {len(out_metas)} output tensor(s) expected for an "
                           f"in-place call, got {len(outputs)}")
    for name, t, m in zip(op_expr.indexed_obns, outputs, out_metas):
        a = t._array
        if a is not None and not a.flags.writeable:  # an expand()ed (broadcast) view
            raise RuntimeError(f"{op_expr.op_type_name}: unsupported operation: more than one element of the "
                               f"written-to tensor refers to a single memory location. Please clone() the tensor "
                               f"before performing the operation.")
        if t._meta is not m:
            raise RuntimeError(
                f"{op_expr.op_type_name}: in-place output '{name}' has shape {tuple(t.shape)}, dtype "
                f"{t.dtype.name}, device {t.device} but the result has shape {tuple(m.shape)}, dtype "
                f"{m.dtype.name}, device {m.device}")


def _kernel_output_error(op_expr, name, result, meta):
    return RuntimeError(f"{op_expr.op_type_name}: kernel produced output '{name}' with shape "
                        f"{getattr(result, 'shape', '?')} and dtype {getattr(result, 'dtype', type(result))}, "
                        f"but inference says shape {tuple(meta.shape)} and dtype {meta.dtype.name}")


def _as_output_array(op_expr, i, result, meta):
    if type(result) is not _ndarray:
        result = np.asarray(result)
    if result.dtype != meta.np_dtype or result.shape != meta.shape:
        raise _kernel_output_error(op_expr, op_expr.indexed_obns[i], result, meta)
    return result


# Note [Eager fast path]
# Most eager calls have one output on a device with storage and repeat a call seen before. The
# general path records such a call, once its kernel is chosen, in the op expr's ``_fast`` dict
# (keyed like UserOpExpr.infer's cache: call attrs and input metas). A call found there does only
# what varies per call: call the kernel (its plain form when it has one, Note [Plain kernels] in
# kernels/cpu/math.py), check the result's type and dtype against the inferred meta, and wrap it
# (sharing the input's version counter when it may be a view). The result's shape was checked on the
# general path's call with the same metas and attrs, and a kernel's result shape depends on nothing
# else (value-dependent lengths are attrs: Note [Value-dependent shapes] in ops/index.py). A call of
# an op with several outputs (layer_norm's y, mean and inv_variance; split) is recorded too and takes
# ``_fast_outputs``, which also compares each result's shape (a tuple compare). An
# in-place call whose kernel can write in place (Note [Kernels that write in place] in
# kernels/cpu/math.py) and whose output tensor has the inferred meta and a writeable buffer is
# written directly. A kernel registered or removed for the op gives every bound expr a new, empty
# ``_fast`` dict (OperatorEntry.kernels_changed); the general path reads the dict before the
# kernel generation, so a call racing with a registration fills a dict nobody reads any more.
# Everything else (a first call, several outputs, meta tensors, other op exprs, in-place calls the
# checks of the general path must reject) takes the general path.
def eager_local_interpreter(op_expr, ks, inputs, attrs, outputs):
    """Run a ``UserOpExpr`` eagerly (the boxed handler of every backend key)."""
    n = len(inputs)
    try:  # Note [Eager fast path]; other op exprs have an empty _fast, plain-dict attrs do not hash
        if n == 1:
            t0 = inputs[0]
            res = op_expr._fast.get((attrs, t0._meta))
        elif n == 2:
            t0, t1 = inputs
            res = op_expr._fast.get((attrs, t0._meta, t1._meta))
        else:
            res = op_expr._fast.get((attrs, *[t._meta for t in inputs]))
    except TypeError:
        res = None
    if res is not None:
        if outputs is None:
            m = res.out_meta
            if m is None:
                return _fast_outputs(op_expr, res, inputs)
            plain = res.plain
            if n == 1:
                a0, a1 = t0._array, None
                result = plain(a0) if plain is not None else res.kernel(res, a0)
            elif n == 2:
                a0, a1 = t0._array, t1._array
                result = plain(a0, a1) if plain is not None else res.kernel(res, a0, a1)
            else:
                a0 = a1 = None
                result = res.kernel(res, *[t._array for t in inputs])
            if type(result) is not _ndarray or result.dtype is not m.np_dtype:
                result = _as_output_array(op_expr, 0, result, m)
            out = _new(Tensor)  # Tensor._make, inlined
            out._array = result
            out._meta = m
            out._key_set = m.key_set
            out._ag = None
            out._vc = None
            if (result.base is not None or result is a0 or result is a1
                    or (n > 2 and _is_input_array(result, inputs))):
                _link_if_view(out, result, inputs)
            return (out,)
        write = res.write
        if write is not None and len(outputs) == 1:
            o = outputs[0]
            a = o._array
            if o._meta is res.out_meta and a.flags.writeable:
                write(res, a, *[t._array for t in inputs])
                _bump_versions(outputs)
                return (o,)
    return _eager_general(op_expr, inputs, attrs, outputs)


def _fast_outputs(op_expr, res, inputs):
    """A repeated call of an op with several outputs (Note [Eager fast path]): run the kernel, check each
    result's type and dtype, wrap it."""
    results = res.kernel(res, *[t._array for t in inputs])
    outs = []
    for i, m in enumerate(res.out_metas):
        result = results[i]
        if type(result) is not _ndarray or result.dtype is not m.np_dtype or result.shape != m.shape:
            result = _as_output_array(op_expr, i, result, m)
        out = _new(Tensor)
        out._array = result
        out._meta = m
        out._key_set = m.key_set
        out._ag = None
        out._vc = None
        if result.base is not None or _is_input_array(result, inputs):
            _link_if_view(out, result, inputs)
        outs.append(out)
    return tuple(outs)


def _is_input_array(result, inputs) -> bool:
    for t in inputs:
        if result is t._array:
            return True
    return False


def _eager_general(op_expr, inputs, attrs, outputs):
    if type(op_expr) is not UserOpExpr:
        run_forward = getattr(op_expr, "run_forward", None)  # a custom autograd.Function's FunctionOpExpr
        if run_forward is not None:
            return run_forward(inputs)
        raise RuntimeError(f"EagerLocalInterpreter: {type(op_expr).__name__} ('{op_expr.op_type_name}') "
                           f"is not supported in eager mode")
    metas = tuple([t._meta for t in inputs])
    res = op_expr.infer(metas, attrs)
    out_metas = res.out_metas
    if outputs is not None:
        _check_inplace_outputs(op_expr, outputs, out_metas)
    entry = op_expr._entry
    kernel = res.kernel
    fast = op_expr._fast  # read before the generation (Note [Eager fast path])
    gen = entry.kernel_gen  # read before choosing: a kernel registered meanwhile is seen by the next call
    if res.kernel_gen != gen:
        kernel = res.kernel = DISPATCHER.select_kernel(
            op_expr, entry, res.device, tuple([m.dtype for m in metas]), tuple([m.dtype for m in out_metas]))
        res.plain = getattr(kernel, "plain", None)
        res.write = getattr(kernel, "write", None)
        res.kernel_gen = gen
    if type(attrs) is not dict and (res.out_meta is not None or (
            len(out_metas) > 1 and res.device.device_type.has_storage)):
        fast[(attrs, *metas)] = res
    if not res.device.device_type.has_storage:
        kernel(res, *[None] * len(inputs))
        if outputs is not None:
            _bump_versions(outputs)
            return tuple(outputs)
        return tuple([_make(None, m) for m in out_metas])
    if outputs is not None and len(out_metas) == 1 and res.write is not None:
        res.write(res, outputs[0]._array, *[t._array for t in inputs])  # Note [Kernels that write in place]
        _bump_versions(outputs)
        return tuple(outputs)
    result = kernel(res, *[t._array for t in inputs])
    if len(out_metas) == 1:
        m = out_metas[0]
        if type(result) is not _ndarray or result.dtype != m.np_dtype or result.shape != m.shape:
            result = _as_output_array(op_expr, 0, result, m)
        if outputs is None:
            out = _make(result, m)
            if result.base is not None or _is_input_array(result, inputs):
                _link_if_view(out, result, inputs)
            return (out,)
        np.copyto(outputs[0]._array, result)
        _bump_versions(outputs)
        return tuple(outputs)
    arrays = [_as_output_array(op_expr, i, r, m) for i, (r, m) in enumerate(zip(result, out_metas))]
    if outputs is None:
        outs = tuple([_make(a, m) for a, m in zip(arrays, out_metas)])
        for out, a in zip(outs, arrays):
            if a.base is not None or _is_input_array(a, inputs):
                _link_if_view(out, a, inputs)
        return outs
    for t, a in zip(outputs, arrays):
        np.copyto(t._array, a)
    _bump_versions(outputs)
    return tuple(outputs)


def register() -> list:
    """Register the interpreter as the fallback of every backend key; returns the handles."""
    return [DISPATCHER.register_fallback(k, eager_local_interpreter) for k in BACKEND_KEYS]


class EagerLocalInterpreter:
    """OneFlow's name for the eager handler (a namespace; the handler is a function for speed)."""

    apply = staticmethod(eager_local_interpreter)
