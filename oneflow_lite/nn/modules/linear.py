"""``Identity``, ``Linear`` and ``Bilinear``."""

from __future__ import annotations

import math

from oneflow_lite import functional as F
from oneflow_lite.interpreters.autocast import without_autocast
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter

__all__ = ["Bilinear", "Identity", "Linear"]


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``: weight (out_features, in_features) and bias (out_features,) initialised
    from U(-1/sqrt(in_features), 1/sqrt(in_features)) (``kaiming_uniform_(a=sqrt(5))`` for the weight)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(F.empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(F.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default initialisation (see the class docstring)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


@without_autocast  # PyTorch's _trilinear is on no autocast list; einsum is (Note [Autocast at the function level])
def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``."""
    d1, d2 = input1.ndim, input2.ndim
    if d1 != d2:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {d1} and {d2}")
    for a, b in zip(input1.shape[:-1], input2.shape[:-1]):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {a} and {b}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out_features, in1_features, in2_features), got "
                           f"{weight.ndim}-D")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {weight.shape[2]}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {tuple(bias.shape)} but "
                           f"expected ({weight.shape[0]},)")
    y = F.einsum("...i,oij,...j->...o", input1, weight, input2)
    return y if bias is None else F.add(y, bias)


class Bilinear(Module):
    """``y = x1^T A x2 + b``: weight (out_features, in1_features, in2_features) and bias (out_features,)
    initialised from U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(F.empty((out_features, in1_features, in2_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(F.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default initialisation (see the class docstring)."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """The output projection of ``MultiheadAttention`` (a ``Linear``; PyTorch's name, kept for reprs and
    checkpoints)."""
