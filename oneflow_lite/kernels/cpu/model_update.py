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


# ---- adam_update, momentum_update, rmsprop_update ----------------------------------------------------
# Note [Fused update kernels]
# Each kernel is a few NumPy passes with ``out=`` over the parameter's memory and one scratch array: the
# state inputs are updated in place (Note [Update ops write their state] in ops/model_update.py), the new
# model goes into ``out`` (the parameter's own buffer in an optimizer step, eagerly and in a graph), written
# last: in a graph ``out`` may be the buffer of ``model_diff`` (Note [Borrowed buffers] in graph/compiler.py). The
# arithmetic is the optimizers' unfused step, op by op and in the same order (PyTorch's lerp for the first
# moment, ``v * beta2 + (1 - beta2) * g * g`` for the second), so the state comes out bit for bit the same;
# only the last step rounds differently (``m / denom * -step`` instead of ``-step * m / denom``). float16 is
# computed in float32, state and model rounded once at the end.
_divide = np.divide
_maximum = np.maximum
_sqrt = np.sqrt
_copyto = np.copyto
_errstate = np.errstate
_ADAM_ATTRS = ("learning_rate_val", "scale", "l2", "beta1", "beta2", "epsilon", "weight_decay", "amsgrad",
               "do_bias_correction")
_MOMENTUM_ATTRS = ("learning_rate_val", "scale", "l2", "beta", "dampening", "nesterov")
_RMSPROP_ATTRS = ("learning_rate_val", "scale", "l2", "decay_rate", "epsilon", "centered", "momentum")


def _attr_values(cache: dict, attrs, names: tuple, state_count) -> tuple:
    """The values of ``names`` in an attr map and the number of state inputs, read once per distinct map."""
    values = cache.get(attrs)
    if values is None:
        if len(cache) >= _PARAMS_CACHE_SIZE:
            cache.clear()
        values = cache[attrs] = (*[attrs[n] for n in names], state_count(attrs))
    return values


def _grad(model, diff, scale, l2, dt):
    """``scale * diff + l2 * model`` (``diff`` itself when that is all), added as the optimizers add them."""
    if l2 == 0.0:
        return diff if scale == 1.0 else _multiply(diff, dt(scale))
    g = _multiply(model, dt(l2), out=_empty(model.shape, model.dtype))  # (out=: an array when 0-d)
    if scale == 1.0:
        _add(g, diff, out=g)
    elif scale == -1.0:
        _subtract(g, diff, out=g)
    else:
        _add(g, _multiply(diff, dt(scale)), out=g)
    return g


def _lerp_(start, end, weight: float, t, dt) -> None:
    """``start = lerp(start, end, weight)`` in place, PyTorch's formula (scalar_lerp's), ``t`` as scratch."""
    _subtract(end, start, out=t)
    if abs(weight) < 0.5:
        _multiply(t, dt(weight), out=t)
        _add(start, t, out=start)
    else:
        _multiply(t, dt(1.0 - weight), out=t)
        _subtract(end, t, out=start)


def _decay_square_(avg, g, decay: float, t, dt) -> None:
    """``avg = avg * decay + (1 - decay) * g * g`` in place (``mul_`` then ``addcmul_``), ``t`` as scratch."""
    _multiply(avg, dt(decay), out=avg)
    _multiply(g, dt(1.0 - decay), out=t)
    _multiply(t, g, out=t)
    _add(avg, t, out=avg)


def _start_model(out, model, factor: float, dt) -> None:
    """``out = model * factor`` (decoupled weight decay), or a copy of ``model`` when ``out`` is another array."""
    if factor != 1.0:
        _multiply(model, dt(factor), out=out)
    elif out is not model:
        _copyto(out, model)


def _adam_step(params, out, model, diff, states, scalars) -> None:
    lr, scale, l2, beta1, beta2, eps, weight_decay, amsgrad, bias_correction, _ = params
    if len(scalars) > bias_correction:
        lr = float(scalars[-1].reshape(()))
    dt = model.dtype.type
    m, v = states[0], states[-1] if amsgrad else states[1]
    t = _empty(model.shape, model.dtype)
    g = _grad(model, diff, scale, l2, dt)
    _lerp_(m, g, 1.0 - beta1, t, dt)
    _decay_square_(states[1], g, beta2, t, dt)
    if amsgrad:
        _maximum(v, states[1], out=v)
    bc1 = bc2 = 1.0
    if bias_correction:
        step = float(scalars[0].reshape(()))
        bc1, bc2 = 1.0 - beta1 ** step, 1.0 - beta2 ** step
    _sqrt(v, out=t)
    _divide(t, dt(bc2 ** 0.5), out=t)
    _add(t, dt(eps), out=t)
    _divide(m, t, out=t)
    _multiply(t, dt(-(lr / bc1)), out=t)
    _start_model(out, model, 1.0 - lr * weight_decay, dt)
    _add(out, t, out=out)


def _momentum_step(params, out, model, diff, states, scalars) -> None:
    lr, scale, l2, beta, dampening, nesterov, _ = params
    if scalars:
        lr = float(scalars[0].reshape(()))
    dt = model.dtype.type
    (buf,) = states
    t = _empty(model.shape, model.dtype)
    g = _grad(model, diff, scale, l2, dt)
    _multiply(buf, dt(beta), out=buf)
    if dampening == 0.0:
        _add(buf, g, out=buf)
    else:
        _add(buf, _multiply(g, dt(1.0 - dampening), out=t), out=buf)
    update = buf
    if nesterov:
        update = _add(g, _multiply(buf, dt(beta), out=t), out=t)
    _multiply(update, dt(lr), out=t)
    _subtract(model, t, out=out)


def _rmsprop_step(params, out, model, diff, states, scalars) -> None:
    lr, scale, l2, alpha, eps, centered, momentum, _ = params
    if scalars:
        lr = float(scalars[0].reshape(()))
    dt = model.dtype.type
    t = _empty(model.shape, model.dtype)
    g = _grad(model, diff, scale, l2, dt)
    square_avg = states[0]
    _decay_square_(square_avg, g, alpha, t, dt)
    if centered:
        grad_avg = states[1]
        _lerp_(grad_avg, g, 1.0 - alpha, t, dt)
        _multiply(grad_avg, dt(-1.0), out=t)
        _multiply(t, grad_avg, out=t)
        _sqrt(_add(square_avg, t, out=t), out=t)
    else:
        _sqrt(square_avg, out=t)
    _add(t, dt(eps), out=t)
    _divide(g, t, out=t)
    _start_model(out, model, 1.0, dt)
    if momentum > 0.0:
        buf = states[-1]
        _multiply(buf, dt(momentum), out=buf)
        _add(buf, t, out=buf)
        _multiply(buf, dt(-lr), out=t)
    else:
        _multiply(t, dt(-lr), out=t)
    _add(out, t, out=out)


def _register_update(op_type: str, step, names: tuple, state_count) -> None:
    """The cpu kernel of a fused update op running ``step(params, out, model, diff, states, scalars)`` (Note [Fused
    update kernels]; ``params``: the values of the attrs ``names`` and the number of state inputs, which follow
    ``model`` and ``model_diff``), with its in-place form and its out-variant writer."""
    cache: dict = {}

    def write(ctx, out, model, diff, *rest):
        params = _attr_values(cache, ctx.attrs, names, state_count)
        k = params[-1]
        states, scalars = rest[:k], rest[k:]
        if scalars and scalars[-1].dtype.kind in "biu":  # skip_if (Note [skip_if] in ops/model_update.py)
            if scalars[-1].any():
                if out is not model:
                    _copyto(out, model)
                return
            scalars = scalars[:-1]
        with _errstate(all="ignore"):
            if model.dtype != _F16:
                step(params, out, model, diff, states, scalars)
                return
            model32, states32 = model.astype(_F32), [s.astype(_F32) for s in states]
            step(params, model32, model32, diff.astype(_F32), states32, scalars)
        out[...] = model32
        for s, s32 in zip(states, states32):
            s[...] = s32

    def kernel(ctx, model, diff, *rest):
        out = _empty(model.shape, model.dtype)
        write(ctx, out, model, diff, *rest)
        return out

    def out_variant(ctx, input_dtypes):
        def writer(out, *arrays):
            write(ctx, out, *arrays)
        return writer

    kernel.__name__ = kernel.__qualname__ = f"{op_type}_cpu"
    out_variant.__name__ = out_variant.__qualname__ = f"{op_type}_out_variant"
    kernel.write = write  # Note [Kernels that write in place] in kernels/cpu/math.py
    cpu_kernel(op_type, dtype_in("model", *FLOATING_DTYPES), out_variant=out_variant)(kernel)


# the state inputs, in ops/model_update.py's order: m, v (, max_v); momentum; mean_square (, mean_gradient)
# (, momentum_buffer)
_register_update("adam_update", _adam_step, _ADAM_ATTRS, lambda attrs: 3 if attrs["amsgrad"] else 2)
_register_update("momentum_update", _momentum_step, _MOMENTUM_ATTRS, lambda attrs: 1)
_register_update("rmsprop_update", _rmsprop_step, _RMSPROP_ATTRS,
                 lambda attrs: 1 + bool(attrs["centered"]) + (attrs["momentum"] > 0))
