"""``flow.nn.utils.stateless`` (``torch.nn.utils.stateless``): the deprecated home of ``functional_call``."""

from __future__ import annotations

import warnings

from oneflow_lite.func import functional_call as _functional_call

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``flow.func.functional_call`` (PyTorch's deprecation warning first)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    return _functional_call(module, parameters_and_buffers, args, kwargs, strict=strict)
