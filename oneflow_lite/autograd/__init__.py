"""``flow.autograd``: reverse-mode automatic differentiation.

The AutogradInterpreter (``interpreters/autograd.py``) records a backward
``Node`` for every op whose inputs require grad, with the op's grad function
(registered by op type with ``register_op_grad``, in ``autograd/grads/``); the
engine (``engine.py``) runs the graph backward. ``no_grad`` and friends switch
recording off per thread; ``Function`` defines custom differentiable functions;
``gradcheck`` / ``gradgradcheck`` compare analytic with numerical gradients; ``functional``
(``jacobian``, ``hessian``, ``vjp``, ...) differentiates functions of tensors.
"""

import importlib

from oneflow_lite.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from oneflow_lite.autograd.function import Function, FunctionCtx
from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.autograd.grad_mode import (
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)

# The engine and the checks call the functional API, which is built after the interpreters
# (which import this package): they are resolved on first access (PEP 562).
_LAZY = {"backward": "engine", "grad": "engine", "gradcheck": "grad_check", "gradgradcheck": "grad_check",
         "GradcheckError": "grad_check"}

__all__ = ["Function", "FunctionCtx", "GradcheckError", "OpExprGradFunction", "backward", "detect_anomaly",
           "enable_grad", "grad", "gradcheck", "gradgradcheck", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "no_grad", "register_op_grad", "set_detect_anomaly", "set_grad_enabled"]


def __getattr__(name):
    if name in ("functional", "profiler"):  # submodules (vjp, jacobian, ...; the legacy profiler API)
        return importlib.import_module(f"oneflow_lite.autograd.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oneflow_lite.autograd' has no attribute '{name}'")
    return getattr(importlib.import_module(f"oneflow_lite.autograd.{module}"), name)


def __dir__():
    return __all__
