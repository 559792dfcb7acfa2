"""Out-of-tree devices: ``register_device`` (a device type with its transfer hooks) and ``register_fallback``.

::

    flow.library.register_device("mydev", to_device=upload, to_host=download)
    flow.library.register_fallback("mydev", run_on_cpu)   # ops without a mydev kernel
    x = flow.ones(3).to("mydev"); y = flow.relu(x).cpu()

Note [Copies across a device boundary]
A ``copy`` op (``x.to(...)``, ``x.cpu()``, ``flow.tensor(..., device=...)``) runs on its
target device. A copy *to* the device is that device's ``copy`` kernel, which calls
``to_device`` on the host array. A copy *from* the device dispatches at the device's
backend key (its input is there), where ``register_device`` puts a handler for ``copy``:
it moves the input to the host with ``to_host`` and dispatches the copy again from
a cpu tensor, which reaches the target's kernel (the cpu copy, or ``to_device`` for a
copy within the device). Both hooks run in every eager transfer; a graph's compiled
plan calls the kernels directly (Note [Device storage and transfer hooks] in
framework/device.py).
"""

from __future__ import annotations

from oneflow_lite.dispatch.dispatch_key import BACKEND_KEY_SET, DispatchKey
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.device import device_types, register_device_type, unregister_device_type
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.interpreters.op_interp_util import redispatch
from oneflow_lite.library.handles import Handle, user_location

_CPU = Device("cpu")


class _CopyIn:
    """The ``copy`` kernel of a device: the host array's values in a new device buffer."""

    __slots__ = ("device_type",)

    def __init__(self, device_type):
        self.device_type = device_type

    def __call__(self, ctx, x):
        return self.device_type.to_device(x)


def _copy_out(op_expr, ks, inputs, attrs, outputs):
    """The ``copy`` handler at a device's backend key (Note [Copies across a device boundary])."""
    x = inputs[0]
    m = x._meta
    host = Tensor._make(m.device.device_type.to_host(x._array), make_meta(m.shape, m.dtype, _CPU))
    return redispatch(op_expr, (ks & ~BACKEND_KEY_SET) | _CPU.key_set, (host,), attrs, outputs)


def register_device(name: str, *, to_device=None, to_host=None,
                    dispatch_key: DispatchKey = DispatchKey.PrivateUse1) -> Handle:
    """Register the device type ``name`` on ``dispatch_key`` with its transfer hooks: ``to_device(host_array)``
    returns a new device buffer holding the values (a NumPy array: Note [Device storage and transfer hooks]),
    ``to_host(device_array)`` a new host array; both default to a copy. ``x.to(name)``, ``x.cpu()`` and
    creation ops with ``device=name`` then work (Note [Copies across a device boundary]); ops need a kernel on
    the device (``flow.library.impl`` or ``flow.dispatch.register_kernel``) or a fallback
    (:func:`register_fallback`). Returns a :class:`Handle` that unregisters all of it."""
    location = user_location()
    try:
        dt = register_device_type(name, dispatch_key, to_device=to_device, to_host=to_host)
    except ValueError as e:
        raise ValueError(f"flow.library.register_device: {e}") from None
    regs = []
    try:
        regs.append(DISPATCHER.register_kernel("copy", name, _CopyIn(dt), name=f"copy_to_{name}",
                                               location=location))
        regs.append(DISPATCHER.register_impl("copy", dispatch_key, _copy_out, location=location))
    except Exception:
        for r in reversed(regs):
            r.remove()
        unregister_device_type(name)
        raise
    return Handle("register_device", name, None, None, location, lambda: _unregister(name, regs))


def _unregister(name, regs):
    for r in reversed(regs):
        r.remove()
    unregister_device_type(name)


def register_fallback(device_type: str, fn) -> Handle:
    """Register ``fn(op, ctx, *arrays)`` as the kernel of every op without a kernel of its own on
    ``device_type`` (Note [Device fallbacks] in dispatch/dispatcher.py): ``op.op_type``, ``op.kernel("cpu")``
    (the cpu kernel of the same call, ``kernel(ctx, *arrays)``) and ``op.device`` say what to run; it returns
    the output array(s). The usual fallback moves the arrays to the host, runs the cpu kernel and moves the
    results back. Returns a :class:`Handle`."""
    location = user_location()
    if device_type not in device_types():
        raise ValueError(f"flow.library.register_fallback: unknown device type {device_type!r} (argument "
                         f"device_type); known: {', '.join(device_types())}")
    if not callable(fn):
        raise TypeError(f"flow.library.register_fallback('{device_type}'): expected a function fn(op, ctx, *arrays), "
                        f"got {fn!r}")
    reg = DISPATCHER.register_device_fallback(device_type, fn, location=location)
    return Handle("register_fallback", device_type, None, fn, location, reg.remove)
