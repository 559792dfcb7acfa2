"""Functors of convolutions, pooling and ``interpolate`` (PyTorch's ``torch.nn.functional`` signatures).

Unbatched inputs (no N dim) of the convolutions run as a batch of one. Shapes, channels and attrs are checked by
the ops' inference (ops/conv.py) with PyTorch's messages; the functors check what the ops do not see (padding
strings, output sizes of transposed convs, ``interpolate``'s arguments).
"""

from __future__ import annotations

import math

from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.registry import functor, get_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch

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
        nd = self.nd
        shape = x._meta.shape
        if len(output_size) == 1 and nd > 1:
            output_size = output_size * nd
        if len(output_size) != nd:
            raise RuntimeError(f"{self.name}: output_size must be an int or {nd} values, got {list(output_size)}")
        if None in output_size:
            if len(shape) not in (nd + 1, nd + 2):
                raise RuntimeError(f"{self.name}: Expected {nd + 1}D or {nd + 2}D tensor, but got {list(shape)}")
            output_size = tuple(shape[i - nd] if o is None else o for i, o in enumerate(output_size))
        return dispatch(self.op, (x,), cached_attrs(self._attrs, ("output_size",), (output_size,)))[0]


@functor("AdaptiveAvgPool1d")
class AdaptiveAvgPool1dFunctor(_AdaptiveAvgPool):
    nd = 1


@functor("AdaptiveAvgPool2d")
class AdaptiveAvgPool2dFunctor(_AdaptiveAvgPool):
    nd = 2


@functor("AdaptiveAvgPool3d")
class AdaptiveAvgPool3dFunctor(_AdaptiveAvgPool):
    nd = 3


# ---- interpolate ---------------------------------------------------------------------------------
_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}
_MODES = "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact"


@functor("Interpolate")
class InterpolateFunctor:
    """``interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
    recompute_scale_factor=None, antialias=False)`` on ``(N, C, *spatial)`` inputs with 1 to 3 spatial dims.

    Modes: ``nearest``, ``nearest-exact``, ``linear`` / ``bilinear`` / ``trilinear`` (as many spatial dims as the
    name says) and ``area`` (adaptive average pooling). As PyTorch, a ``scale_factor`` (unless
    ``recompute_scale_factor``) is used as given to map output to input coordinates.
    """

    def __init__(self):
        self.nearest = OpBuilder("upsample_nearest").input("x").output("y").build()
        self.linear = OpBuilder("upsample_linear").input("x").output("y").build()
        self.area = {nd: get_functor(f"AdaptiveAvgPool{nd}d") for nd in (1, 2, 3)}
        self._nearest_attrs = {}
        self._linear_attrs = {}

    def __call__(self, x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
        shape = x._meta.shape
        dim = len(shape) - 2
        if mode in ("nearest", "area", "nearest-exact"):
            if align_corners is not None:
                raise ValueError("align_corners option can only be set with the interpolating modes: "
                                 "linear | bilinear | bicubic | trilinear")
        else:
            align_corners = bool(align_corners)
        if size is not None and scale_factor is not None:
            raise ValueError("only one of size or scale_factor should be defined")
        given = size if size is not None else scale_factor
        if given is None:
            raise ValueError("either size or scale_factor should be defined")
        if not 1 <= dim <= 3:
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {len(shape)}D) "
                                      f"for the modes: {_MODES} (got {mode})")
        if len(given) == 1:
            given = given * dim
        if len(given) != dim:
            what = "output size" if size is not None else "scale factor"
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(shape[2:])} and {what} of {list(given)}. Please provide "
                             f"input tensor in (N, C, d1, d2, ...,dK) format and {what} in (o1, o2, ...,oK) format.")
        if recompute_scale_factor and size is not None:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        scales = ()
        if size is not None:
            out = given
        else:
            out = tuple(math.floor(float(i) * s) for i, s in zip(shape[2:], given))
            if not recompute_scale_factor and mode != "area":
                scales = given
        if antialias:
            if mode not in ("bilinear", "bicubic") or dim != 2:
                raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
                                 "tensor as input")
            raise NotImplementedError("interpolate: antialias=True is not supported")
        if mode in ("nearest", "nearest-exact"):
            attrs = cached_attrs(self._nearest_attrs, ("output_size", "scales", "exact"),
                                 (out, scales, mode == "nearest-exact"))
            return dispatch(self.nearest, (x,), attrs)[0]
        nd = _LINEAR_MODES.get(mode)
        if nd is not None:
            if nd != dim:
                raise NotImplementedError(f"Got {len(shape)}D input, but {mode} mode needs {nd + 2}D input")
            attrs = cached_attrs(self._linear_attrs, ("output_size", "scales", "align_corners"),
                                 (out, scales, align_corners))
            return dispatch(self.linear, (x,), attrs)[0]
        if mode == "area":
            return self.area[dim](x, out)
        if mode == "bicubic":
            raise NotImplementedError("interpolate: mode 'bicubic' is not supported; supported modes: nearest, "
                                      "nearest-exact, linear, bilinear, trilinear, area")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {len(shape)}D) for "
                                  f"the modes: {_MODES} (got {mode})")
