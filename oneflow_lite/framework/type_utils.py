"""PyTorch's top-level tensor predicates and type helpers: ``is_tensor``, ``numel``, ``is_floating_point``,
``is_nonzero``, ``result_type``, ``typename``, ``set_default_tensor_type`` and friends."""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.errors import name_the_op
from oneflow_lite.framework.storage import _Storage
from oneflow_lite.framework.tensor import Tensor


def _tensor_arg(fn: str, x, arg: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position 1) must be Tensor, not {type(x).__name__}")
    return x


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a Tensor (a Parameter too)."""
    return isinstance(obj, Tensor)


def is_storage(obj) -> bool:
    """Whether ``obj`` is a storage object (``Tensor.untyped_storage()`` / ``Tensor.storage()``)."""
    return isinstance(obj, _Storage)


def numel(input) -> int:  # PyTorch's argument name
    return _tensor_arg("numel", input).numel()


def is_floating_point(input) -> bool:
    return _tensor_arg("is_floating_point", input).is_floating_point()


def is_complex(input) -> bool:
    _tensor_arg("is_complex", input)
    return False


def is_signed(input) -> bool:
    return _tensor_arg("is_signed", input).is_signed()


def is_nonzero(input) -> bool:
    return _tensor_arg("is_nonzero", input).is_nonzero()


def is_same_size(input, other) -> bool:
    return _tensor_arg("is_same_size", input).is_same_size(other)


def is_inference(input) -> bool:
    """False: inference_mode makes ordinary tensors here."""
    return _tensor_arg("is_inference", input).is_inference()


def is_conj(input) -> bool:
    return _tensor_arg("is_conj", input).is_conj()


def is_neg(input) -> bool:
    return _tensor_arg("is_neg", input).is_neg()


def _returns_input(name: str):
    """``name(input)``: ``input`` itself, a tensor (Note [Real tensors only] in framework/tensor.py)."""
    def fn(input) -> Tensor:
        return _tensor_arg(name, input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "``input`` itself: no tensor here is complex, conjugated or negated lazily."
    return fn


resolve_conj, resolve_neg, conj, conj_physical, conj_physical_, real = map(
    _returns_input, ("resolve_conj", "resolve_neg", "conj", "conj_physical", "conj_physical_", "real"))


def imag(input) -> Tensor:
    """PyTorch's error for a real tensor (Note [Real tensors only] in framework/tensor.py)."""
    return _tensor_arg("imag", input).imag


def get_device(input) -> int:
    """``input.get_device()``: -1 for a cpu tensor, the index of its device otherwise."""
    return _tensor_arg("get_device", input).get_device()


def is_distributed(input) -> bool:
    """False: a tensor here is never split over processes by a legacy distributed backend."""
    return _tensor_arg("is_distributed", input).is_distributed()


def cudnn_is_acceptable(input) -> bool:
    """Whether cuDNN could run on ``input``: False, there is no CUDA device."""
    _tensor_arg("cudnn_is_acceptable", input)
    return False


def result_type(tensor1, tensor2) -> dt.dtype:
    """The dtype of an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or numbers), by PyTorch's
    promotion rules (Note [Type promotion] in framework/dtype.py)."""
    dims, zero_dim, scalars = [], [], []
    for i, v in enumerate((tensor1, tensor2)):
        if isinstance(v, Tensor):
            (dims if v.ndim else zero_dim).append(v.dtype)
        elif isinstance(v, (numbers.Number, np.generic)) and not isinstance(v, complex):
            scalars.append(v)
        else:
            raise TypeError(f"result_type(): argument 'tensor{i + 1}' must be Tensor or Number, not "
                            f"{type(v).__name__}")
    try:
        return dt.result_type(dt.promote_types(dims[0], dims[-1]) if dims else None, zero_dim, scalars)
    except RuntimeError as e:  # a promotion error, raised without the op's name
        name_the_op(e, "result_type")
        raise


def typename(obj) -> str:
    """A tensor's type name (``'oneflow_lite.FloatTensor'``, as ``Tensor.type()``), else the object's
    ``module.qualname``."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


_DEFAULT_TENSOR_TYPES = {"FloatTensor": dt.float32, "DoubleTensor": dt.float64, "HalfTensor": dt.float16,
                         "BFloat16Tensor": dt.bfloat16}


def set_default_tensor_type(t) -> None:
    """Deprecated in PyTorch: ``set_default_dtype`` of a floating legacy type (``flow.DoubleTensor`` or a name
    such as ``'torch.DoubleTensor'``); device-specific types (``'torch.cuda.FloatTensor'``) are refused."""
    warnings.warn("set_default_tensor_type() is deprecated as of PyTorch 2.1, please use set_default_dtype() "
                  "and set_default_device() as alternatives.", UserWarning, stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"set_default_tensor_type(): expected a tensor type or its name, got {type(t).__name__}")
    parts = name.split(".")
    dtype = _DEFAULT_TENSOR_TYPES.get(parts[-1])
    if dtype is None or len(parts) > 2:
        raise TypeError(f"set_default_tensor_type(): only floating point cpu types are supported as the default "
                        f"type ({', '.join(_DEFAULT_TENSOR_TYPES)}), got '{name}'")
    dt.set_default_dtype(dtype)
