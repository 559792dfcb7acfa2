"""``npu_sim``: an out-of-tree device backend, written the way a third-party package would.

Loading it registers the device type ``npu_sim`` on ``DispatchKey.PrivateUse1``
(so ``flow.device("npu_sim")`` works and its tensors dispatch to that key, whose
handler is the eager interpreter) and npu_sim kernels for ``relu`` (float32 and
float64 only) and ``copy`` (moving tensors between cpu and npu_sim). Nothing in
the package is edited. "Device memory" is host memory (NumPy arrays); every
kernel run is recorded in ``CALLS`` so tests can see which kernel ran. The copy
kernel is registered when the package defines the ``copy`` op.
"""

from __future__ import annotations

import numpy as np

import oneflow_lite as flow
from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework import op_registry
from oneflow_lite.framework.device import register_device_type, unregister_device_type
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.interpreters.op_interp_util import dispatch

DEVICE_TYPE = "npu_sim"
CALLS: list[tuple[str, tuple]] = []  # (kernel name, input dtypes) of every npu_sim kernel run
_handles: list = []
_copy_op = None


def npu_relu(ctx, x):
    CALLS.append(("npu_relu", (x.dtype,)))
    return np.maximum(x, x.dtype.type(0))


def npu_copy(ctx, x):
    CALLS.append(("npu_copy", (x.dtype,)))
    return np.array(x, copy=True)


def loaded() -> bool:
    return bool(_handles)


def has_copy() -> bool:
    """Whether the package defines the ``copy`` op (and so this backend a copy kernel)."""
    return op_registry.find("copy") is not None


def load() -> None:
    """Register the device type and its kernels (once); on failure nothing stays registered."""
    global _copy_op
    if _handles:
        return
    _handles.append(_DeviceTypeHandle(register_device_type(DEVICE_TYPE, DispatchKey.PrivateUse1)))
    try:
        _handles.append(DISPATCHER.register_kernel("relu", DEVICE_TYPE, npu_relu,
                                                   predicate=dtype_in("x", flow.float32, flow.float64)))
        if has_copy():
            _handles.append(DISPATCHER.register_kernel("copy", DEVICE_TYPE, npu_copy))
            _copy_op = OpBuilder("copy").input("in").output("out").attr("device", "cpu").build()
    except Exception:
        unload()
        raise


def unload() -> None:
    """Remove every registration ``load`` made, newest first, the device type last."""
    while _handles:
        _handles.pop().remove()


class _DeviceTypeHandle:
    def __init__(self, device_type):
        self.name = device_type.name

    def remove(self):
        unregister_device_type(self.name)


def to_device(t, device):
    """``t`` copied to ``device`` ("cpu" or "npu_sim") by the ``copy`` op."""
    return dispatch(_copy_op, (t,), {"device": flow.device(device)})[0]


load()
