"""``flow.nn.utils.parameters_to_vector`` / ``vector_to_parameters`` (``torch.nn.utils.convert_parameters``):
flatten parameters into one vector and write a vector back into them, as second-order and evolution-strategy code
does."""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.framework.tensor import Tensor


def _device_of(param: Tensor, device, name: str):
    if device is not None and param.device != device:
        raise TypeError(f"{name}: found two parameters on different devices, this is currently not supported "
                        f"({device} and {param.device})")
    return param.device


def parameters_to_vector(parameters) -> Tensor:
    """One 1-D tensor of all ``parameters`` flattened and concatenated in order (differentiable)."""
    if isinstance(parameters, Tensor):
        raise TypeError(f"parameters_to_vector: expected an iterable of Tensors, got a {type(parameters).__name__}")
    device, vec = None, []
    for param in parameters:
        device = _device_of(param, device, "parameters_to_vector")
        vec.append(param.view(-1))
    return F.cat(vec)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Point each of ``parameters`` (its ``.data``) at the next slice of the 1-D ``vec``, in order, as PyTorch:
    the parameters then share ``vec``'s memory."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters: expected 'vec' to be a Tensor, but got: {type(vec).__name__}")
    device, pointer = None, 0
    for param in parameters:
        device = _device_of(param, device, "vector_to_parameters")
        n = param.numel()
        if pointer + n > vec.numel():
            raise RuntimeError(f"vector_to_parameters: 'vec' has {vec.numel()} elements, fewer than the parameters "
                               f"need ({pointer + n} so far)")
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
