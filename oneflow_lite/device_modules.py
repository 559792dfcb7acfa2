"""``flow.get_device_module`` (the module of a device type: ``flow.cpu``, ``flow.cuda``) and
``flow.is_vulkan_available``, PyTorch's device-agnostic helpers."""

from __future__ import annotations

import sys

from oneflow_lite.framework.device import device as Device

__all__ = ["get_device_module", "is_vulkan_available"]

_PACKAGE = __name__.rpartition(".")[0]


def get_device_module(device=None):
    """The module of ``device``'s type (``flow.cpu`` for ``'cpu'``, ``flow.cuda`` for ``'cuda'``); with no
    device, the current accelerator's module, which is ``flow.cpu`` here (there is no accelerator)."""
    if isinstance(device, Device):
        name = device.type
    elif isinstance(device, str):
        name = device.split(":", 1)[0]
    elif device is None:
        name = "cpu"
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect flow.device, str, or None")
    module = getattr(sys.modules[_PACKAGE], name, None)
    if module is None or type(module) is not type(sys):
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'{_PACKAGE}.{name}'.")
    return module


def is_vulkan_available() -> bool:
    """False: there is no Vulkan backend."""
    return False
