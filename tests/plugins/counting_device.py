"""``countdev``: an out-of-tree device written the way a third-party package would, with public APIs only.

Its "device memory" is NumPy arrays (Note [Device storage and transfer hooks]); every
transfer and every kernel run on it is counted in ``COUNTS``:

- ``to_device`` / ``to_host``: the transfer hooks (``x.to("countdev")``, ``x.cpu()``, and
  the fallback's copies);
- ``native:<op>``: the kernels it has of its own (``relu``, ``relu_grad``,
  ``broadcast_add``), registered with ``flow.dispatch.register_kernel``;
- ``fallback:<op>``: every other op, run by its kernel fallback: copy the arrays to the
  host, run the cpu kernel, copy the results back; it warns once per op type.

``load()`` registers it (on ``PrivateUse1``) and ``unload()`` removes every registration.
"""

from __future__ import annotations

import collections
import warnings

import numpy as np

import oneflow_lite as flow
from oneflow_lite.dispatch import dtype_in

DEVICE = "countdev"
COUNTS: collections.Counter = collections.Counter()
WARNED: set = set()
_handles: list = []


def to_device(host_array):
    COUNTS["to_device"] += 1
    return np.array(host_array, copy=True)


def to_host(device_array):
    COUNTS["to_host"] += 1
    return np.array(device_array, copy=True)


def relu(ctx, x):
    COUNTS["native:relu"] += 1
    return np.maximum(x, x.dtype.type(0))


def relu_grad(ctx, dy, y):
    COUNTS["native:relu_grad"] += 1
    return np.where(y > 0, dy, dy.dtype.type(0))


def broadcast_add(ctx, x, y):
    COUNTS["native:broadcast_add"] += 1
    return np.add(x, y)


def run_on_cpu(op, ctx, *arrays):
    """The kernel fallback: the cpu kernel of the same call, on host copies of the arrays."""
    if op.op_type not in WARNED:
        WARNED.add(op.op_type)
        warnings.warn(f"{DEVICE}: no kernel for '{op.op_type}'; it runs on cpu (the arrays are copied there and "
                      f"back)", RuntimeWarning, stacklevel=2)
    COUNTS[f"fallback:{op.op_type}"] += 1
    result = op.kernel("cpu")(ctx, *[None if a is None else to_host(a) for a in arrays])
    if isinstance(result, (tuple, list)):
        return tuple(to_device(r) for r in result)
    return to_device(result)


def loaded() -> bool:
    return bool(_handles)


def load() -> None:
    """Register the device, its kernels and its fallback (once); on failure nothing stays registered."""
    if _handles:
        return
    try:
        _handles.append(flow.library.register_device(DEVICE, to_device=to_device, to_host=to_host))
        floating = dtype_in("x", flow.float32, flow.float64)
        _handles.append(flow.dispatch.register_kernel("relu", DEVICE, relu, predicate=floating))
        _handles.append(flow.dispatch.register_kernel("relu_grad", DEVICE, relu_grad,
                                                      predicate=dtype_in("dy", flow.float32, flow.float64)))
        _handles.append(flow.dispatch.register_kernel("broadcast_add", DEVICE, broadcast_add, predicate=floating))
        _handles.append(flow.library.register_fallback(DEVICE, run_on_cpu))
    except Exception:
        unload()
        raise


def unload() -> None:
    """Remove every registration ``load`` made, newest first (the device type last)."""
    while _handles:
        _handles.pop().remove()
    WARNED.clear()


def reset() -> None:
    COUNTS.clear()
    WARNED.clear()
