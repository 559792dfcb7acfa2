"""``flow.nn.init``: fill a tensor in place with PyTorch's initialisation schemes.

Every function runs under ``no_grad`` (so it works on parameters that require grad),
writes through the tensor's in-place ops (so it draws from ``flow.manual_seed``'s
generator, or ``generator=``) and returns the tensor.
"""

from __future__ import annotations

import math
import numbers
import warnings

from oneflow_lite import functional as F
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.framework.tensor import Tensor

__all__ = ["calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_",
           "ones_", "orthogonal_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
               "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity``: 1 (linear, conv, sigmoid), 5/3 (tanh), sqrt(2) (relu),
    sqrt(2 / (1 + slope**2)) (leaky_relu, ``param`` the slope, default 0.01), 3/4 (selu)."""
    if nonlinearity in _LINEAR_FNS:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _check(name: str, tensor) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{name}: argument 'tensor' must be a Tensor, not {type(tensor).__name__}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of U(a, b)."""
    _check("uniform_", tensor)
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of N(mean, std**2)."""
    _check("normal_", tensor)
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    _check("constant_", tensor)
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    _check("ones_", tensor)
    with no_grad():
        return tensor.fill_(1)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    _check("zeros_", tensor)
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal)."""
    _check("eye_", tensor)
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(F.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta: output channel ``d`` of each of the
    ``groups`` groups copies input channel ``d`` at the kernel's centre (as many as both counts allow)."""
    _check("dirac_", tensor)
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("nn.init.dirac_: only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError(f"nn.init.dirac_: dim 0 ({sizes[0]}) must be divisible by groups ({groups})")
    per_group = sizes[0] // groups
    centre = tuple(n // 2 for n in sizes[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(per_group, sizes[1])):
                tensor[(g * per_group + d, d) + centre] = 1
    return tensor


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times ``gain`` (Saxe et al. 2013), trailing dims flattened: the Q
    of the QR factorisation of a standard normal matrix, its columns' signs fixed by R's diagonal (so Q is
    uniformly distributed, PyTorch's method)."""
    _check("orthogonal_", tensor)
    if tensor.ndim < 2:
        raise ValueError("nn.init.orthogonal_: only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        if rows < cols:
            flattened = flattened.t()
        q, r = F.linalg_qr(flattened)
        q = F.mul(q, F.sign(F.diag(r, 0)))
        if rows < cols:
            q = q.t()
        tensor.view_as(q).copy_(q)
        return tensor.mul_(gain)


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(size(1) * receptive field, size(0) * receptive field)``: a weight's fan in and fan out."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    _check("xavier_uniform_", tensor)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    _check("xavier_normal_", tensor)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(name, tensor, a, mode, nonlinearity):
    _check(name, tensor)
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """He uniform: U(-bound, bound) with ``bound = gain * sqrt(3 / fan)``; ``gain = calculate_gain(nonlinearity,
    a)``, ``fan`` the fan in or fan out (``mode``)."""
    std = _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """He normal: N(0, std**2) with ``std = gain / sqrt(fan)`` (see :func:`kaiming_uniform_`)."""
    std = _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def _norm_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2010): single-precision polynomials in
# w = -log(1 - x**2), for w < 5 (in w - 2.5) and w >= 5 (in sqrt(w) - 3), highest degree first.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _polynomial(coefficients, w):
    p = F.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        p = F.add(F.mul(p, w), c)
    return p


def _erfinv(x_in: Tensor) -> Tensor:
    """The inverse error function of ``x`` in (-1, 1) (±inf at ±1): Giles's approximation refined by two
    Newton steps on ``erf(y) = x``, so it is accurate to the dtype's precision."""
    edge = F.eq(F.abs(x_in), 1.0)
    x = F.where(edge, 0.0, x_in)  # computed apart, as ±inf
    w = F.neg(F.log(F.mul(F.sub(1.0, x), F.add(x, 1.0))))
    central = _polynomial(_ERFINV_CENTRAL, F.sub(w, 2.5))
    tail = _polynomial(_ERFINV_TAIL, F.sub(F.sqrt(w), 3.0))
    y = F.mul(F.where(F.lt(w, 5.0), central, tail), x)
    for _ in range(2):  # y -= (erf(y) - x) / erf'(y), erf'(y) = 2 / sqrt(pi) * exp(-y**2)
        slope = F.mul(F.exp(F.neg(F.square(y))), 2.0 / math.sqrt(math.pi))
        y = F.sub(y, F.div(F.sub(F.erf(y), x), slope))
    return F.where(edge, F.where(F.gt(x_in, 0.0), math.inf, -math.inf), y)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with samples of N(mean, std**2) truncated to [a, b], by the inverse CDF of the truncated
    distribution (PyTorch's method): U(cdf(a), cdf(b)) mapped through the normal's inverse CDF."""
    _check("trunc_normal_", tensor)
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    with no_grad():
        low, high = _norm_cdf((a - mean) / std), _norm_cdf((b - mean) / std)
        tensor.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        tensor.copy_(_erfinv(tensor))
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        return tensor.clamp_(min=a, max=b)
