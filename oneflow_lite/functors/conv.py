"""Functors of convolutions, pooling, unpooling, unfold / fold, pixel and channel shuffles, ``interpolate``,
``grid_sample`` and ``affine_grid`` (PyTorch's ``torch.nn.functional`` signatures).

Unbatched inputs (no N dim) of the convolutions run as a batch of one. Shapes, channels and attrs are checked by
the ops' inference (ops/conv.py) with PyTorch's messages; the functors check what the ops do not see (padding
strings, output sizes of transposed convs and of unpooling, ``interpolate``'s arguments). ``lp_pool``, the
shuffles, ``conv_tbc``, ``grid_sample`` and ``affine_grid`` are composites of other functional calls.
"""

from __future__ import annotations

import itertools
import math
from functools import partial

from oneflow_lite.autograd.grad_mode import is_grad_enabled
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.promotion import cast, overflowed_narrow
from oneflow_lite.functors.registry import composite, functor, get_functor
from oneflow_lite.functors.shape import cached_attrs, warn_at_caller
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.interpreters.autocast import fp32_function

_int64 = dt.int64
_CONV_NAMES = ("padding_before", "padding_after", "strides", "dilation_rate", "groups")


def _unbatched(name, x, nd):
    """Whether ``x`` (of a conv with ``nd`` spatial dims) lacks the batch dim; PyTorch's error for other ranks."""
    ndim = x._meta.ndim
    if ndim == nd + 2:
        return False
    if ndim == nd + 1:
        return True
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input of "
                       f"size: {list(x._meta.shape)}")


class _Conv:
    """``conv{n}d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)``; ``padding`` may be
    ``"valid"`` or ``"same"`` (stride 1; an even dilated kernel pads one more after than before, as PyTorch)."""

    nd = 0

    def __init__(self):
        op_type = f"conv{self.nd}d"
        self.name = op_type
        self.op = OpBuilder(op_type).input("in").input("weight").output("out").build()
        self.op_bias = OpBuilder(op_type).input("in").input("weight").input("bias").output("out").build()
        self.reshape = get_functor("Reshape")
        self._attrs = {}

    def _pads(self, weight, stride, padding, dilation):
        if type(padding) is not str:
            return padding, padding
        if padding == "valid":
            return (0,) * self.nd, (0,) * self.nd
        if padding != "same":
            raise RuntimeError(f"{self.name}: Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError(f"{self.name}: padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dilation, weight._meta.shape[2:])]
        return tuple(t // 2 for t in total), tuple(t - t // 2 for t in total)

    def __call__(self, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        unbatched = _unbatched(self.name, x, self.nd)
        before, after = self._pads(weight, stride, padding, dilation)
        attrs = cached_attrs(self._attrs, _CONV_NAMES, (before, after, stride, dilation, groups))
        if unbatched:
            x = self.reshape(x, (1, *x._meta.shape))
        y = dispatch(self.op, (x, weight), attrs)[0] if bias is None else \
            dispatch(self.op_bias, (x, weight, bias), attrs)[0]
        return self.reshape(y, y._meta.shape[1:]) if unbatched else y


@functor("Conv1d")
class Conv1dFunctor(_Conv):
    nd = 1


@functor("Conv2d")
class Conv2dFunctor(_Conv):
    nd = 2


@functor("Conv3d")
class Conv3dFunctor(_Conv):
    nd = 3


class _ConvTranspose:
    """``conv_transpose{n}d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
    dilation=1)``: ``weight`` is ``(in_channels, out_channels / groups, *kernel)``; the op is the input gradient
    of a convolution (``conv_data_grad``, Note [Convolution ops])."""

    nd = 0

    def __init__(self):
        self.name = f"conv_transpose{self.nd}d"
        self.op = OpBuilder("conv_data_grad").input("dy").input("filter").output("dx").build()
        self.reshape = get_functor("Reshape")
        self.add = get_functor("Add")
        self._attrs = {}

    def _check(self, x, weight, bias, stride, padding, output_padding, groups, dilation):
        name, nd = self.name, self.nd
        xs, ws = x._meta.shape, weight._meta.shape
        if any(s <= 0 for s in stride):
            raise RuntimeError(f"{name}: non-positive stride is not supported")
        if any(p < 0 for p in padding) or any(p < 0 for p in output_padding):
            raise RuntimeError(f"{name}: negative padding is not supported")
        if any(d <= 0 for d in dilation):
            raise RuntimeError(f"{name}: dilation should be greater than zero")
        if groups <= 0:
            raise RuntimeError(f"{name}: non-positive groups is not supported")
        if any(p >= s and p >= d for p, s, d in zip(output_padding, stride, dilation)):
            raise RuntimeError(f"{name}: output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(output_padding)}, stride={list(stride)} and "
                               f"dilation={list(dilation)}")
        if len(ws) != nd + 2:
            raise RuntimeError(f"{name}: weight must be {nd + 2}-D (in_channels, out_channels / groups, "
                               f"*kernel_size), got shape {list(ws)}")
        if ws[0] % groups:
            raise RuntimeError(f"{name}: Given groups={groups}, expected weight to be divisible by {groups} at "
                               f"dimension 0, but got weight of size {list(ws)} instead")
        if xs[1] != ws[0]:
            raise RuntimeError(f"{name}: Given transposed=1, weight of size {list(ws)}, expected input{list(xs)} to "
                               f"have {ws[0]} channels, but got {xs[1]} channels instead")
        xd, wd = x._meta.dtype, weight._meta.dtype
        if wd is not xd:
            raise RuntimeError(f"{name}: Input type ({xd.name}) and weight type ({wd.name}) should be the same")
        if bias is not None:
            if tuple(bias._meta.shape) != (ws[1] * groups,):
                raise RuntimeError(f"{name}: Given transposed=1, weight of size {list(ws)}, expected bias to be "
                                   f"1-dimensional with {ws[1] * groups} elements, but got bias of size "
                                   f"{list(bias._meta.shape)} instead")
            if bias._meta.dtype is not xd:
                raise RuntimeError(f"{name}: Input type ({xd.name}) and bias type ({bias._meta.dtype.name}) should "
                                   f"be the same")
        out = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1
                    for i, s, p, d, k, op in zip(xs[2:], stride, padding, dilation, ws[2:], output_padding))
        if any(o <= 0 for o in out):
            raise RuntimeError(f"{name}: Given input size per channel: ({' x '.join(map(str, xs[2:]))}). Calculated "
                               f"output size per channel: ({' x '.join(map(str, out))}). Output size is too small")
        return out

    def __call__(self, x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        unbatched = _unbatched(self.name, x, self.nd)
        if unbatched:
            x = self.reshape(x, (1, *x._meta.shape))
        out = self._check(x, weight, bias, stride, padding, output_padding, groups, dilation)
        attrs = cached_attrs(self._attrs, (*_CONV_NAMES, "input_size"),
                             (padding, padding, stride, dilation, groups, out))
        y = dispatch(self.op, (x, weight), attrs)[0]
        if bias is not None:
            y = self.add(y, self.reshape(bias, (bias._meta.shape[0], *(1,) * self.nd)), 1, False)
        return self.reshape(y, y._meta.shape[1:]) if unbatched else y


@functor("ConvTranspose1d")
class ConvTranspose1dFunctor(_ConvTranspose):
    nd = 1


@functor("ConvTranspose2d")
class ConvTranspose2dFunctor(_ConvTranspose):
    nd = 2


@functor("ConvTranspose3d")
class ConvTranspose3dFunctor(_ConvTranspose):
    nd = 3


# ---- pooling -------------------------------------------------------------------------------------
_MAX_POOL_NAMES = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
_AVG_POOL_NAMES = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")


class _MaxPool:
    """``max_pool{n}d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False)``; ``stride`` None is ``kernel_size``; the indices are flat within each input plane."""

    nd = 0

    def __init__(self):
        self.op = OpBuilder(f"max_pool{self.nd}d").input("x").output("y").output("indice").build()
        self._attrs = {}

    def __call__(self, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        attrs = cached_attrs(self._attrs, _MAX_POOL_NAMES,
                             (kernel_size, kernel_size if stride is None else stride, padding, dilation, ceil_mode))
        y, indices = dispatch(self.op, (x,), attrs)
        return (y, indices) if return_indices else y


@functor("MaxPool1d")
class MaxPool1dFunctor(_MaxPool):
    nd = 1


@functor("MaxPool2d")
class MaxPool2dFunctor(_MaxPool):
    nd = 2


@functor("MaxPool3d")
class MaxPool3dFunctor(_MaxPool):
    nd = 3


class _AvgPool:
    """``avg_pool{n}d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
    divisor_override=None)`` (``avg_pool1d`` has no ``divisor_override``)."""

    nd = 0

    def __init__(self):
        self.name = f"avg_pool{self.nd}d"
        self.op = OpBuilder(self.name).input("x").output("y").build()
        self._attrs = {}

    def __call__(self, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        if divisor_override == 0:
            raise RuntimeError(f"{self.name}: divisor must be not zero")
        attrs = cached_attrs(self._attrs, _AVG_POOL_NAMES,
                             (kernel_size, kernel_size if stride is None else stride, padding, ceil_mode,
                              count_include_pad, divisor_override or 0))
        return dispatch(self.op, (x,), attrs)[0]


@functor("AvgPool1d")
class AvgPool1dFunctor(_AvgPool):
    nd = 1


@functor("AvgPool2d")
class AvgPool2dFunctor(_AvgPool):
    nd = 2


@functor("AvgPool3d")
class AvgPool3dFunctor(_AvgPool):
    nd = 3


class _AdaptiveAvgPool:
    """``adaptive_avg_pool{n}d(input, output_size)``: an int is used for every dim; a None entry keeps that dim's
    input size."""

    nd = 0

    def __init__(self):
        self.name = f"adaptive_avg_pool{self.nd}d"
        self.op = OpBuilder(self.name).input("x").output("y").build()
        self._attrs = {}

    def __call__(self, x, output_size):
        out = _adaptive_output_size(self.name, self.nd, x._meta.shape, output_size)
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("output_size",), (out,)))[0]


@functor("AdaptiveAvgPool1d")
class AdaptiveAvgPool1dFunctor(_AdaptiveAvgPool):
    nd = 1


@functor("AdaptiveAvgPool2d")
class AdaptiveAvgPool2dFunctor(_AdaptiveAvgPool):
    nd = 2


@functor("AdaptiveAvgPool3d")
class AdaptiveAvgPool3dFunctor(_AdaptiveAvgPool):
    nd = 3


def _adaptive_output_size(name, nd, shape, output_size):
    """``output_size`` with one entry per spatial dim: an int is used for every dim, a None entry keeps that dim's
    input size."""
    if len(output_size) == 1 and nd > 1:
        output_size = output_size * nd
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must be an int or {nd} values, got {list(output_size)}")
    if None in output_size:
        if len(shape) not in (nd + 1, nd + 2):
            raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D tensor, but got {list(shape)}")
        output_size = tuple(shape[i - nd] if o is None else o for i, o in enumerate(output_size))
    return output_size


class _AdaptiveMaxPool:
    """``adaptive_max_pool{n}d(input, output_size, return_indices=False)`` (Note [Max pooling family] in
    ops/conv.py); the ``_with_indices`` variants always return ``(values, indices)``."""

    nd = 0
    with_indices = False

    def __init__(self):
        self.name = f"adaptive_max_pool{self.nd}d"
        self.op = OpBuilder(self.name).input("x").output("y").output("indice").build()
        self._attrs = {}

    def __call__(self, x, output_size, return_indices=False):
        out = _adaptive_output_size(self.name, self.nd, x._meta.shape, output_size)
        y, indices = dispatch(self.op, (x,), cached_attrs(self._attrs, ("output_size",), (out,)))
        return (y, indices) if return_indices or self.with_indices else y


@functor("AdaptiveMaxPool1d")
class AdaptiveMaxPool1dFunctor(_AdaptiveMaxPool):
    nd = 1


@functor("AdaptiveMaxPool2d")
class AdaptiveMaxPool2dFunctor(_AdaptiveMaxPool):
    nd = 2


@functor("AdaptiveMaxPool3d")
class AdaptiveMaxPool3dFunctor(_AdaptiveMaxPool):
    nd = 3


@functor("AdaptiveMaxPool1dWithIndices")
class AdaptiveMaxPool1dWithIndicesFunctor(_AdaptiveMaxPool):
    nd, with_indices = 1, True


@functor("AdaptiveMaxPool2dWithIndices")
class AdaptiveMaxPool2dWithIndicesFunctor(_AdaptiveMaxPool):
    nd, with_indices = 2, True


@functor("AdaptiveMaxPool3dWithIndices")
class AdaptiveMaxPool3dWithIndicesFunctor(_AdaptiveMaxPool):
    nd, with_indices = 3, True


def _max_pool_with_indices(nd, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                           return_indices=False):
    """``max_pool{n}d_with_indices(...)``: ``max_pool{n}d`` returning ``(values, indices)`` whatever
    ``return_indices`` says, as PyTorch's."""
    pool = (None, F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd]
    return pool(x, kernel_size, stride, padding, dilation, ceil_mode, True)


for _nd in (1, 2, 3):
    composite(f"MaxPool{_nd}dWithIndices")(partial(_max_pool_with_indices, _nd))


class _FractionalMaxPool:
    """``fractional_max_pool{n}d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None)``: max pooling over pseudo-random overlapping windows (Ben Graham's fractional max
    pooling). Without ``_random_samples`` one sample in [0, 1) per plane and spatial dim is drawn from the default
    generator, ``rand(N, C, n)`` as PyTorch."""

    nd = 0
    with_indices = False

    def __init__(self):
        self.name = f"fractional_max_pool{self.nd}d"
        self.op = OpBuilder(self.name).input("x").input("random_samples").output("y").output("indice").build()
        self._attrs = {}

    def _output_size(self, x, output_size, output_ratio):
        nd = self.nd
        if output_size is not None:
            return output_size
        if output_ratio is None:
            raise ValueError(f"{self.name} requires specifying either an output_size or an output_ratio")
        if len(output_ratio) not in (1, nd):
            raise ValueError(f"{self.name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = output_ratio * nd if len(output_ratio) == 1 else output_ratio
        if not all(0.0 < r < 1.0 for r in ratio):
            raise ValueError(f"{self.name}: output_ratio must be between 0 and 1 (exclusive), got {list(ratio)}")
        shape = x._meta.shape
        if len(shape) < nd:
            raise RuntimeError(f"{self.name}: Expected {nd + 1}D or {nd + 2}D input, got shape {list(shape)}")
        return tuple(int(shape[i - nd] * r) for i, r in enumerate(ratio))

    def __call__(self, x, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        nd = self.nd
        out = self._output_size(x, output_size, output_ratio)
        if _random_samples is None:
            shape = x._meta.shape
            if len(shape) not in (nd + 1, nd + 2):
                raise RuntimeError(f"{self.name}: non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for "
                                   f"input, but got: {list(shape)}")
            n = 1 if len(shape) == nd + 1 else shape[0]
            _random_samples = F.rand((n, shape[-nd - 1], nd), dtype=x._meta.dtype, device=x._meta.device)
        attrs = cached_attrs(self._attrs, ("kernel_size", "output_size"), (kernel_size, out))
        y, indices = dispatch(self.op, (x, _random_samples), attrs)
        return (y, indices) if return_indices or self.with_indices else y


@functor("FractionalMaxPool2d")
class FractionalMaxPool2dFunctor(_FractionalMaxPool):
    nd = 2


@functor("FractionalMaxPool3d")
class FractionalMaxPool3dFunctor(_FractionalMaxPool):
    nd = 3


@functor("FractionalMaxPool2dWithIndices")
class FractionalMaxPool2dWithIndicesFunctor(_FractionalMaxPool):
    nd, with_indices = 2, True


@functor("FractionalMaxPool3dWithIndices")
class FractionalMaxPool3dWithIndicesFunctor(_FractionalMaxPool):
    nd, with_indices = 3, True


def _lp_pool(nd, x, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``lp_pool{n}d(input, norm_type, kernel_size, stride=None, ceil_mode=False)``: the p-norm of each window,
    ``(sum x^p)^(1/p)`` computed as PyTorch does (an average pooling of ``x^p`` times the window size; a window
    whose sum is not positive gives 0); ``norm_type`` inf / -inf is the max / min of ``|x|``."""
    max_pool = (None, F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd]
    if norm_type == 0 or math.isnan(norm_type):
        raise ValueError(f"lp_pool{nd}d: norm_type must be a non-zero number, got {norm_type}")
    if norm_type == math.inf:
        return max_pool(F.abs(x), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return F.neg(max_pool(F.neg(F.abs(x)), kernel_size, stride, 0, 1, ceil_mode))
    avg_pool = (None, F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd]
    powers = F.pow(x, norm_type)
    if overflowed_narrow(x, powers):  # |x| ** p past float32 where the norm is finite
        return cast(_lp_pool(nd, cast(x, dt.float64), norm_type, kernel_size, stride, ceil_mode), x._meta.dtype)
    out = avg_pool(powers, kernel_size, stride, 0, ceil_mode)
    return F.pow(F.mul(F.mul(F.sign(out), F.relu(F.abs(out))), math.prod(kernel_size)), 1.0 / norm_type)


for _nd in (1, 2, 3):
    composite(f"LpPool{_nd}d")(partial(_lp_pool, _nd))


class _MaxUnpool:
    """``max_unpool{n}d(input, indices, kernel_size, stride=None, padding=0, output_size=None)``: the partial
    inverse of ``max_pool{n}d`` (Note [Max pooling family] in ops/conv.py). The default output size is that of the
    pooled input, ``(in - 1) * stride + kernel - 2 * padding``; a given ``output_size`` (``n`` or ``n + 2``
    entries) must be within one stride of it, as PyTorch checks."""

    nd = 0

    def __init__(self):
        self.op = OpBuilder(f"max_unpool{self.nd}d").input("x").input("indice").output("y").build()
        self._attrs = {}

    def _output_size(self, x, kernel, stride, padding, output_size):
        nd = self.nd
        shape = x._meta.shape
        if len(shape) < nd:
            raise RuntimeError(f"max_unpool{nd}d: Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d "
                               f"Tensor, but got a tensor with {len(shape)} dimensions.")
        default = [(shape[d - nd] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(nd)]
        if output_size is None:
            out = default
        else:
            out = list(output_size[2:] if len(output_size) == nd + 2 else output_size)
            if len(out) != nd:
                raise ValueError(f"max_unpool{nd}d: output_size should be a sequence containing {nd} or {nd + 2} "
                                 f"elements, but it has a length of '{len(output_size)}'")
            for d in range(nd):
                low, high = default[d] - stride[d], default[d] + stride[d]
                if not low < out[d] < high:
                    raise ValueError(f'max_unpool{nd}d: invalid output_size "{tuple(output_size)}" (dim {d} must be '
                                     f'between {low} and {high})')
        for d, o in enumerate(out):
            if o < 0:
                raise ValueError(f"max_unpool{nd}d: output_size must contain non-negative spatial dimensions, but got "
                                 f"output_size[{d}]={o}")
        return tuple(out)

    def __call__(self, x, indices, kernel_size, stride=None, padding=0, output_size=None):
        if min(kernel_size) <= 0 or (stride is not None and min(stride) <= 0):
            raise RuntimeError(f"max_unpool{self.nd}d: kernel_size and stride must be greater than zero, got "
                               f"kernel_size={list(kernel_size)}, stride={stride}")
        out = self._output_size(x, kernel_size, kernel_size if stride is None else stride, padding, output_size)
        return dispatch(self.op, (x, indices), cached_attrs(self._attrs, ("output_size",), (out,)))[0]


@functor("MaxUnpool1d")
class MaxUnpool1dFunctor(_MaxUnpool):
    nd = 1


@functor("MaxUnpool2d")
class MaxUnpool2dFunctor(_MaxUnpool):
    nd = 2


@functor("MaxUnpool3d")
class MaxUnpool3dFunctor(_MaxUnpool):
    nd = 3


# ---- unfold / fold -------------------------------------------------------------------------------
_FOLD_NAMES = ("kernel_size", "dilation_rate", "padding", "strides")


def _pair(values):
    return values * 2 if len(values) == 1 else values


@functor("Unfold")
class UnfoldFunctor:
    """``unfold(input, kernel_size, dilation=1, padding=0, stride=1)``: the sliding blocks of a ``(N, C, H, W)``
    (or ``(C, H, W)``) input as columns ``(N, C * prod(kernel_size), L)`` (Note [im2col and col2im])."""

    def __init__(self):
        self.op = OpBuilder("im2col").input("x").output("y").build()
        self._attrs = {}

    def __call__(self, x, kernel_size, dilation=1, padding=0, stride=1):
        values = tuple(_pair(v) for v in (kernel_size, dilation, padding, stride))
        return dispatch(self.op, (x,), cached_attrs(self._attrs, _FOLD_NAMES, values))[0]


@functor("Fold")
class FoldFunctor:
    """``fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1)``: columns ``(N, C * K, L)`` (or
    ``(C * K, L)``) summed back into ``(N, C, *output_size)``, the adjoint of ``unfold``."""

    def __init__(self):
        self.op = OpBuilder("col2im").input("x").output("y").build()
        self._attrs = {}

    def __call__(self, x, output_size, kernel_size, dilation=1, padding=0, stride=1):
        values = tuple(_pair(v) for v in (kernel_size, dilation, padding, stride, output_size))
        return dispatch(self.op, (x,), cached_attrs(self._attrs, (*_FOLD_NAMES, "output_size"), values))[0]


# ---- pixel and channel shuffles ------------------------------------------------------------------
@composite("PixelShuffle")
def pixel_shuffle(x, upscale_factor):
    """``pixel_shuffle(input, upscale_factor)``: ``(*, C * r^2, H, W)`` to ``(*, C, H * r, W * r)``."""
    shape, r = x._meta.shape, upscale_factor
    if len(shape) < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{len(shape)} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if r * r >= 2 ** 63:
        raise ValueError(f"pixel_shuffle: upscale factor is too large, (upscale_factor)^2 overflowed: "
                         f"upscale_factor={r}")
    *lead, c, h, w = shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    b = len(lead)
    y = F.reshape(x, (*lead, c // (r * r), r, r, h, w))
    y = F.permute(y, (*range(b), b, b + 3, b + 1, b + 4, b + 2))
    return F.reshape(y, (*lead, c // (r * r), h * r, w * r))


@composite("PixelUnshuffle")
def pixel_unshuffle(x, downscale_factor):
    """``pixel_unshuffle(input, downscale_factor)``: ``(*, C, H * r, W * r)`` to ``(*, C * r^2, H, W)``."""
    shape, r = x._meta.shape, downscale_factor
    if len(shape) < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{len(shape)} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if r * r >= 2 ** 63:
        raise ValueError(f"pixel_unshuffle: downscale factor is too large, (downscale_factor)^2 overflowed: "
                         f"downscale_factor={r}")
    *lead, c, h, w = shape
    for name, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={size} is not divisible by {r}")
    b = len(lead)
    y = F.reshape(x, (*lead, c, h // r, r, w // r, r))
    y = F.permute(y, (*range(b), b, b + 2, b + 4, b + 1, b + 3))
    return F.reshape(y, (*lead, c * r * r, h // r, w // r))


@composite("ChannelShuffle")
def channel_shuffle(x, groups):
    """``channel_shuffle(input, groups)``: the channels of ``(N, C, *)`` split into ``groups`` groups and
    interleaved, ``(N, g, C / g, *)`` -> ``(N, C / g, g, *)``."""
    shape = x._meta.shape
    if len(shape) <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(shape)}")
    if groups <= 0:
        raise RuntimeError(f"channel_shuffle: Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c, *rest = shape
    if c % groups:
        raise RuntimeError(f"channel_shuffle: Number of channels must be divisible by groups. Got {c} channels and "
                           f"{groups} groups.")
    y = F.transpose(F.reshape(x, (n, groups, c // groups, *rest)), 1, 2)
    return F.reshape(y, shape)


# ---- conv_tbc ------------------------------------------------------------------------------------
@composite("ConvTbc")
def conv_tbc(x, weight, bias, pad=0):
    """``conv_tbc(input, weight, bias, pad=0)``: a 1-D convolution of ``(time, batch, in_channels)`` by ``weight``
    ``(kernel_width, in_channels, out_channels)``, zero-padded by ``pad`` steps (negative: cropped), giving
    ``(time', batch, out_channels)``."""
    xs, ws, bs = x._meta.shape, weight._meta.shape, bias._meta.shape
    if len(xs) != 3:
        raise RuntimeError("conv_tbc: Input must have 3 dims: time, batch, in_channel")
    if len(ws) != 3:
        raise RuntimeError("conv_tbc: Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if len(bs) != 1:
        raise RuntimeError("conv_tbc: Bias must be 1-D")
    if xs[2] != ws[1]:
        raise RuntimeError("conv_tbc: Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bs[0] != ws[2]:
        raise RuntimeError("conv_tbc: Bias size must equal dim 2 in the weight tensor (output channels).")
    length = xs[0] + 2 * pad - ws[0] + 1
    if length <= 0:
        return F.zeros((0, xs[1], ws[2]), dtype=x._meta.dtype, device=x._meta.device)
    if pad < 0:
        x = F.narrow(x, 0, -pad, xs[0] + 2 * pad)
    if pad <= 0:
        y = F.conv1d(F.permute(x, (1, 2, 0)), F.permute(weight, (2, 1, 0)), bias, 1, 0)
        return F.permute(y, (2, 0, 1))
    # zero padding: each tap's product shifted into place (PyTorch skips the padded steps, so an Inf weight
    # never meets a padded 0 to give NaN, as it would in a convolution of the padded input)
    y = bias
    for j in range(ws[0]):
        y = F.add(y, F.pad(F.matmul(x, F.select(weight, 0, j)), (0, 0, 0, 0, pad - j, pad - ws[0] + 1 + j)))
    return y


# ---- interpolate ---------------------------------------------------------------------------------
_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}
_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_ANTIALIAS_MODES = ("bilinear", "bicubic", "lanczos")


def _interpolate_sizes(shape, size, scale_factor, recompute_scale_factor, mode):
    """PyTorch's output size and the ``scales`` its index computations use (() when the output size is given or
    recomputed), with its errors."""
    dim = len(shape) - 2
    if size is not None and scale_factor is not None:
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    given = size if size is not None else scale_factor
    if given is None:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    if not 1 <= dim <= 3:
        raise NotImplementedError(f"interpolate: Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{len(shape)}D) for the modes: {_MODES} (got {mode})")
    if len(given) == 1:
        given = given * dim
    if len(given) != dim:
        what = "output size" if size is not None else "scale factor"
        raise ValueError(f"interpolate: Input and output must have the same number of spatial dimensions, but got "
                         f"input with spatial dimensions of {list(shape[2:])} and {what} of {list(given)}. Please "
                         f"provide input tensor in (N, C, d1, d2, ...,dK) format and {what} in (o1, o2, ...,oK) "
                         f"format.")
    if recompute_scale_factor and size is not None:
        raise ValueError("interpolate: recompute_scale_factor is not meaningful with an explicit size.")
    if size is not None:
        return given, ()
    if not all(math.isfinite(float(i) * s) for i, s in zip(shape[2:], given)):
        raise RuntimeError(f"interpolate: scale_factor {list(given)} gives an output size that is not a finite "
                           f"number (value cannot be converted to type int64 without overflow)")
    out = tuple(math.floor(float(i) * s) for i, s in zip(shape[2:], given))
    return out, (() if recompute_scale_factor or mode == "area" else given)


@functor("Interpolate")
class InterpolateFunctor:
    """``interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
    recompute_scale_factor=None, antialias=False)`` on ``(N, C, *spatial)`` inputs with 1 to 3 spatial dims.

    Modes: ``nearest``, ``nearest-exact``, ``linear`` / ``bilinear`` / ``trilinear`` (as many spatial dims as the
    name says), ``bicubic`` (2 spatial dims), ``area`` (adaptive average pooling) and, with ``antialias=True`` on
    2 spatial dims, anti-aliased ``bilinear`` / ``bicubic`` and ``lanczos`` (Lanczos-3, anti-aliased only). As
    PyTorch, a ``scale_factor`` (unless ``recompute_scale_factor``) is used as given to map output to input
    coordinates.
    """

    def __init__(self):
        self.nearest = OpBuilder("upsample_nearest").input("x").output("y").build()
        self.linear = OpBuilder("upsample_linear").input("x").output("y").build()
        self.bicubic = OpBuilder("upsample_bicubic").input("x").output("y").build()
        self.antialias = OpBuilder("upsample_antialias").input("x").output("y").build()
        self.area = {nd: get_functor(f"AdaptiveAvgPool{nd}d") for nd in (1, 2, 3)}
        self._attrs = {}

    def _check_mode(self, mode, align_corners, antialias, ndim):
        if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
            raise ValueError("interpolate: align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
        if antialias and not (mode in _ANTIALIAS_MODES and ndim == 4):
            raise ValueError("interpolate: Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
                             "requires a 4-D tensor as input")
        if mode == "lanczos" and ndim == 4 and align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if mode == "lanczos" and ndim == 4 and not antialias:
            raise ValueError("Lanczos mode requires antialias=True")

    def _attrs_of(self, kind, names, values):
        return cached_attrs(self._attrs.setdefault(kind, {}), names, values)

    def __call__(self, x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
        shape = x._meta.shape
        out, scales = _interpolate_sizes(shape, size, scale_factor, recompute_scale_factor, mode)
        self._check_mode(mode, align_corners, antialias, len(shape))
        dim = len(shape) - 2
        if mode in ("nearest", "nearest-exact"):
            exact = mode == "nearest-exact"
            attrs = self._attrs_of("nearest", ("output_size", "scales", "exact"), (out, scales, exact))
            return dispatch(self.nearest, (x,), attrs)[0]
        if mode == "area":
            return self.area[dim](x, out)
        align_corners = bool(align_corners)
        names = ("output_size", "scales", "align_corners")
        if antialias:
            attrs = self._attrs_of("antialias", (*names, "filter"), (out, scales, align_corners, mode))
            return dispatch(self.antialias, (x,), attrs)[0]
        if mode == "bicubic" and dim == 2:
            return dispatch(self.bicubic, (x,), self._attrs_of("bicubic", names, (out, scales, align_corners)))[0]
        nd = _LINEAR_MODES.get(mode)
        if nd is not None:
            if nd != dim:
                raise NotImplementedError(f"interpolate: Got {len(shape)}D input, but {mode} mode needs {nd + 2}D "
                                          f"input")
            return dispatch(self.linear, (x,), self._attrs_of("linear", names, (out, scales, align_corners)))[0]
        raise NotImplementedError(f"interpolate: Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{len(shape)}D) for the modes: {_MODES} (got {mode})")


# ---- grid_sample / affine_grid -------------------------------------------------------------------
# Note [grid_sample as a composite]
# ``grid_sample`` is written with functional calls (PyTorch's ``grid_sampler_2d/3d`` formulas: unnormalize,
# pad the coordinates by clipping or reflecting, then weight the corner or tap values gathered from the flat
# input), so autograd differentiates it for both the input (through the gathers) and the grid (through the
# weights and the coordinate transform), twice if asked. An out-of-bounds corner is masked with ``where``,
# never multiplied by a zero weight, so an inf or NaN reaches only the outputs that sample it.
_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDING = ("zeros", "border", "reflection")
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _reflect(c, low2, high2):
    """PyTorch's ``reflect_coordinates``: ``c`` mirrored into ``[low2 / 2, high2 / 2]``."""
    if low2 == high2:
        return F.mul(c, 0.0)
    low, span = low2 / 2, (high2 - low2) / 2
    c = F.abs(F.sub(c, low))
    extra = F.fmod(c, span)
    odd = F.eq(F.fmod(F.floor(F.div(c, span)), 2.0), 1.0)
    return F.add(F.where(odd, F.sub(span, extra), extra), low)


def _pad_coordinates(c, size, padding_mode, align_corners):
    """PyTorch's ``compute_coordinates``: ``c`` clipped (border) or reflected then clipped (reflection)."""
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
    if padding_mode != "zeros":  # clipped: the borders count as outside (gradient 0), as PyTorch's
        c = F.where(F.gt(c, 0.0), F.where(F.lt(c, size - 1.0), c, size - 1.0), 0.0)
    return c


def _unnormalize(g, size, align_corners):
    """Grid values in [-1, 1] as pixel coordinates (PyTorch's cpu kernel's formula)."""
    if align_corners:
        return F.mul(F.add(g, 1.0), (size - 1) / 2)
    return F.sub(F.mul(F.add(g, 1.0), size / 2), 0.5)


class _Sampler:
    """Values of the flat input ``(N, C, prod(in_size))`` at integer positions (one ``(N, P)`` tensor per spatial
    dim, any values): 0 where a position is outside the input."""

    def __init__(self, x, in_size):
        n, c = x._meta.shape[:2]
        self.flat = F.reshape(x, (n, c, math.prod(in_size)))
        self.in_size = in_size

    def __call__(self, positions):
        flat_index, inside = None, None
        for p, size in zip(positions, self.in_size):
            ok = F.logical_and(F.ge(p, 0), F.lt(p, size))
            inside = ok if inside is None else F.logical_and(inside, ok)
            p = F.clamp(p, 0, size - 1)
            flat_index = p if flat_index is None else F.add(F.mul(flat_index, size), p)
        n, c, _ = self.flat._meta.shape
        index = F.expand(F.unsqueeze(flat_index, 1), (n, c, flat_index._meta.shape[1]))
        return F.where(F.unsqueeze(inside, 1), F.gather(self.flat, 2, index), 0.0)


def _cubic_coefficients(t):
    """The four weights of PyTorch's cubic convolution (A = -0.75) at fraction ``t``."""
    a = -0.75

    def near(v):  # ((A + 2) * v - (A + 3)) * v * v + 1
        return F.add(F.mul(F.mul(F.sub(F.mul(v, a + 2), a + 3), v), v), 1.0)

    def far(v):  # ((A * v - 5A) * v + 8A) * v - 4A
        return F.sub(F.mul(F.add(F.mul(F.sub(F.mul(v, a), 5 * a), v), 8 * a), v), 4 * a)
    u = F.sub(1.0, t)
    return far(F.add(t, 1.0)), near(t), near(u), far(F.add(u, 1.0))


def _sample_linear(sample, coords, nearest):
    """Bilinear / trilinear (or nearest) sampling at the padded coordinates ``coords`` (one per spatial dim)."""
    if nearest:
        return sample([F.cast(F.round(c), _int64) for c in coords])
    lows = [F.floor(c) for c in coords]
    highs = [F.sub(c, low) for c, low in zip(coords, lows)]  # the weight of the upper corner
    lows_i = [F.cast(low, _int64) for low in lows]
    out = None
    for corner in itertools.product((0, 1), repeat=len(coords)):
        weight, positions = None, []
        for bit, low_i, high in zip(corner, lows_i, highs):
            w = high if bit else F.sub(1.0, high)
            weight = w if weight is None else F.mul(weight, w)
            positions.append(F.add(low_i, 1) if bit else low_i)
        term = F.mul(sample(positions), F.unsqueeze(weight, 1))
        out = term if out is None else F.add(out, term)
    return out


def _sample_bicubic(sample, coords, in_size, padding_mode, align_corners):
    """Bicubic sampling (2-D): 4 x 4 taps around the unpadded coordinates, each tap position padded."""
    lows = [F.floor(c) for c in coords]
    weights = [_cubic_coefficients(F.sub(c, low)) for c, low in zip(coords, lows)]
    taps = [[F.cast(_pad_coordinates(F.add(low, float(k)), size, padding_mode, align_corners), _int64)
             for k in (-1, 0, 1, 2)] for low, size in zip(lows, in_size)]
    out = None
    for i, j in itertools.product(range(4), repeat=2):
        term = F.mul(sample([taps[0][i], taps[1][j]]), F.unsqueeze(F.mul(weights[0][i], weights[1][j]), 1))
        out = term if out is None else F.add(out, term)
    return out


def _check_grid_sample(x, grid, mode):
    xs, gs = x._meta.shape, grid._meta.shape
    if x._meta.dtype is not grid._meta.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{x._meta.dtype} and grid has {grid._meta.dtype}")
    if not x._meta.dtype.is_floating_point:
        raise OpKernelNotFoundError(f"grid_sampler: expected a floating point input, got {x._meta.dtype}")
    if not xs or not gs or xs[0] != gs[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(xs)} and grid with sizes {list(gs)}")
    if gs[-1] != len(xs) - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {len(xs) - 2} in last dimension, but got "
                           f"grid with sizes {list(gs)}")
    for i in range(2, len(xs)):
        if xs[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(xs)} with dimension {i} being empty")
    if len(xs) not in (4, 5) or len(gs) != len(xs):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(xs)} and grid with sizes {list(gs)}")
    if mode == "bicubic" and len(xs) == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


@composite("GridSample")
@fp32_function
def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None)``: ``input``
    ``(N, C, [D,] H, W)`` sampled at the normalised ``(x, y[, z])`` locations of ``grid`` ``(N, [D',] H', W', n)``
    (Note [grid_sample as a composite]); NaN grid values count as -1."""
    if mode not in _GRID_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in _GRID_PADDING:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warn_at_caller(_ALIGN_WARNING)
        align_corners = False
    _check_grid_sample(x, grid, mode)
    in_size, gs = x._meta.shape[2:], grid._meta.shape
    nd, n = len(in_size), gs[0]
    dtype = x._meta.dtype
    if dtype is dt.float16:  # float16 computes in float32 and rounds once (PyTorch's op-math type)
        x, grid = F.cast(x, dt.float32), F.cast(grid, dt.float32)
    sample = _Sampler(x, in_size)
    grid = F.where(F.isnan(grid), -1.0, grid)
    # grid[..., k] holds the coordinate of spatial dim nd - 1 - k (x is the width)
    points = math.prod(gs[1:-1])
    raw = [_unnormalize(F.reshape(F.narrow(grid, -1, nd - 1 - d, 1), (n, points)), size, align_corners)
           for d, size in enumerate(in_size)]
    if mode == "bicubic":
        out = _sample_bicubic(sample, raw, in_size, padding_mode, align_corners)
    else:
        coords = [_pad_coordinates(c, size, padding_mode, align_corners) for c, size in zip(raw, in_size)]
        out = _sample_linear(sample, coords, mode == "nearest")
        if mode == "nearest" and grid.requires_grad and is_grad_enabled():  # the grid's gradient: zeros, as PyTorch's
            out = F.add(out, F.sum(F.mul(F.where(F.isfinite(grid), grid, 0.0), 0.0)))
    out = F.reshape(out, (n, x._meta.shape[1], *gs[1:-1]))
    return F.cast(out, dtype) if out._meta.dtype is not dtype else out


def _linspace_from_neg_one(steps, align_corners, dtype, device):
    if steps <= 1:
        return F.zeros((steps,), dtype=dtype, device=device)
    r = F.linspace(-1.0, 1.0, steps, dtype=dtype, device=device)
    return r if align_corners else F.div(F.mul(r, steps - 1), steps)


@composite("AffineGrid")
def affine_grid(theta, size, align_corners=None):
    """``affine_grid(theta, size, align_corners=None)``: the sampling grid ``(N, H, W, 2)`` (``(N, D, H, W, 3)``)
    of the affine maps ``theta`` ``(N, 2, 3)`` (``(N, 3, 4)``) for an output of ``size`` ``(N, C, H, W)``
    (``(N, C, D, H, W)``): each output pixel's normalised coordinates ``(x, y[, z], 1)`` times ``theta^T``."""
    if align_corners is None:
        warn_at_caller(_ALIGN_WARNING)
        align_corners = False
    meta = theta._meta
    if not meta.dtype.is_floating_point:
        raise ValueError(f"affine_grid: Expected theta to have floating point type, but got {meta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {tuple(size)}.")
    nd = len(size) - 2
    if len(meta.shape) != 3 or tuple(meta.shape[-2:]) != (nd, nd + 1):
        raise ValueError(f"affine_grid: Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size "
                         f"{tuple(size)}. Got {list(meta.shape)}.")
    spatial = tuple(size[2:])
    if align_corners and min(spatial) == 1:
        warn_at_caller("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                       "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                       "of affine_grid for details.")
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    if meta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta with batch size {size[0]} (size[0]), got theta of shape "
                           f"{list(meta.shape)}")
    columns = []  # x (the width) first
    for d in reversed(range(nd)):
        line = _linspace_from_neg_one(spatial[d], align_corners, meta.dtype, meta.device)
        columns.append(F.expand(F.reshape(line, [spatial[d] if i == d else 1 for i in range(nd)]), spatial))
    columns.append(F.ones(spatial, dtype=meta.dtype, device=meta.device))
    base = F.reshape(F.stack(columns, -1), (1, math.prod(spatial), nd + 1))
    grid = F.bmm(F.expand(base, (size[0], math.prod(spatial), nd + 1)), F.transpose(theta, 1, 2))
    return F.reshape(grid, (size[0], *spatial, nd))
