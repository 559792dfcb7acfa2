"""``flow.nn.utils.fusion`` (``torch.nn.utils.fusion``): fold an eval-mode BatchNorm into the convolution or linear
layer before it, for inference: ``W' = W * gamma / sqrt(var + eps)`` per output channel and
``b' = (b - mean) * gamma / sqrt(var + eps) + beta``."""

from __future__ import annotations

import copy

from oneflow_lite import functional as F
from oneflow_lite.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _check_eval(layer, bn, name):
    if layer.training or bn.training:
        raise AssertionError(f"{name} only works in eval mode")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` computing ``bn(conv(x))`` (both in eval mode)."""
    _check_eval(conv, bn, "Fusion")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The fused convolution's ``(weight, bias)`` as Parameters."""
    conv_b = F.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = F.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = F.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = bn_w * F.rsqrt(bn_rv + bn_eps)
    shape = [1, -1] if transpose else [-1, 1]
    fused_w = (conv_w * scale.reshape(shape + [1] * (conv_w.dim() - 2))).to(dtype=conv_w.dtype)
    fused_b = ((conv_b - bn_rm) * scale + bn_b).to(dtype=conv_b.dtype)
    return Parameter(fused_w.detach(), conv_w.requires_grad), Parameter(fused_b.detach(), conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` computing ``bn(linear(x))`` (both in eval mode)."""
    _check_eval(linear, bn, "Fusion")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The fused linear layer's ``(weight, bias)`` as Parameters."""
    linear_b = F.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * F.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=linear_w.dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=linear_b.dtype)
    return Parameter(fused_w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), linear_b.requires_grad)
