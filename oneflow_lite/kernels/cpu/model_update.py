"""cpu kernels of the optimizer update ops (ops/model_update.py).

Each has an in-place form (Note [Kernels that write in place] in kernels/cpu/math.py), which the
eager interpreter uses for ``optim.SGD``'s in-place call and the graph compiler as the op's
out-variant: plain SGD writes ``model - lr * diff`` with one temporary, as NumPy's ``p -= lr * g``.
float16 is computed in float32 and rounded once.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import FLOATING_DTYPES
from oneflow_lite.kernels.registration import cpu_kernel

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_add = np.add
_empty = np.empty
_multiply = np.multiply
_subtract = np.subtract
_sign = np.sign


_params: dict = {}
_PARAMS_CACHE_SIZE = 1024


def _sgd_params(attrs):
    """(learning_rate_val, scale, l1, l2, weight_decay, whether the step is plain ``lr * diff``) of an
    ``sgd_update`` attr map, read once per distinct map (a map is hashed and compared in C)."""
    params = _params.get(attrs)
    if params is None:
        scale, l1, l2, weight_decay = attrs["scale"], attrs["l1"], attrs["l2"], attrs["weight_decay"]
        plain = scale == 1.0 and l1 == 0.0 and l2 == 0.0 and weight_decay == 0.0
        if len(_params) >= _PARAMS_CACHE_SIZE:
            _params.clear()
        params = _params[attrs] = (attrs["learning_rate_val"], scale, l1, l2, weight_decay, plain)
    return params


def _sgd_step(ctx, model, diff, lr, into=None):
    """``learning_rate * (scale * diff + l1 * sign(model) + l2 * model + weight_decay * model)`` (the terms
    whose coefficient is 0 left out), in ``into`` (which may be ``diff``) or a new array."""
    lr_val, scale, l1, l2, weight_decay, plain = _sgd_params(ctx.attrs)
    lr = lr_val if lr is None else lr.reshape(()).astype(model.dtype)
    if not plain:
        if scale != 1.0:
            diff = _multiply(diff, scale, out=into)
        if l1 != 0.0:
            diff = _add(diff, l1 * _sign(model), out=into)
        if l2 != 0.0:
            diff = _add(diff, l2 * model, out=into)
        if weight_decay != 0.0:
            diff = _add(diff, weight_decay * model, out=into)
    return _multiply(diff, lr, out=into)


def _sgd_update_write(ctx, out, model, diff, lr=None):
    if model.dtype == _F16:
        out[...] = sgd_update_cpu(ctx, model, diff, lr)
    else:
        _subtract(model, _sgd_step(ctx, model, diff, lr), out=out)


def _sgd_update_consuming(ctx, out, model, diff, lr=None):
    """The in-place form computing the step in ``diff``'s own buffer: for a graph in which ``diff`` dies here
    (Note [Writers that consume an input] in graph/compiler.py)."""
    if model.dtype == _F16:
        out[...] = sgd_update_cpu(ctx, model, diff, lr)
    else:
        _subtract(model, _sgd_step(ctx, model, diff, lr, into=diff), out=out)


def sgd_update_out_variant(ctx, input_dtypes):
    """The in-place form as the graph's writer, with the form that overwrites ``diff`` (input 1) as its
    ``consumes`` (Note [Out-variant writers] in kernels/registration.py): an optimizer update written
    straight into the parameter (Note [Assigns written in place] in graph/compiler.py)."""
    write, write_consuming = _sgd_update_write, _sgd_update_consuming

    def writer(out, *arrays):
        write(ctx, out, *arrays)

    def consuming(out, *arrays):
        write_consuming(ctx, out, *arrays)
    writer.consumes = (1, consuming)
    return writer


@cpu_kernel("sgd_update", dtype_in("model", *FLOATING_DTYPES), out_variant=sgd_update_out_variant)
def sgd_update_cpu(ctx, model, diff, lr=None):
    if model.dtype == _F16:
        model32, diff32 = model.astype(_F32), diff.astype(_F32)
        step = _sgd_step(ctx, model32, diff32, lr, into=diff32)
        return _subtract(model32, step, out=step).astype(_F16)
    step = _sgd_step(ctx, model, diff, lr, into=_empty(model.shape, model.dtype))  # (out=: an array when 0-d)
    return _subtract(model, step, out=step)


sgd_update_cpu.write = _sgd_update_write  # Note [Kernels that write in place] in kernels/cpu/math.py
