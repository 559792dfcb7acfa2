"""Convolution, pooling, unpooling, im2col / col2im and upsampling ops (channels first: ``(N, C, *spatial)``), for
1 to 3 spatial dims.

Note [Convolution ops]
``conv1d`` / ``conv2d`` / ``conv3d`` take ``in`` ``(N, C, *spatial)``, ``weight``
``(O, C / groups, *kernel)`` and an optional ``bias`` ``(O,)``. Padding is given
per side (``padding_before`` / ``padding_after``) so PyTorch's ``padding="same"``
with an even kernel (one more pad after than before) is one op. Their gradients
are two ops of any dimensionality: ``conv_data_grad(dy, filter)`` (the gradient
of the input; its ``input_size`` attr fixes the spatial size, which the stride
leaves ambiguous) and ``conv_filter_grad(dy, x)``. Each of the three ops is
linear in each argument and the others are its adjoints, so the grad functions
of all three are made of the three (double backward works). A transposed
convolution *is* ``conv_data_grad`` with the input in the role of ``dy``, so
``conv_transpose*d`` dispatch it. ``dy`` may be smaller than the conv's output
(a transposed conv with ``output_padding >= stride``): the positions it lacks
count as zero.

Note [Pooling ops]
The pooling ops act on the trailing ``nd`` dims; the dims before them (``(N, C)``
or an unbatched ``(C,)``) are planes. ``max_pool{n}d`` outputs the values and,
as PyTorch, the flat index of each maximum within its input plane (without
padding); its gradient ``max_pool{n}d_grad(dy, indice)`` scatters ``dy`` to those
indices, and ``max_pool{n}d_gather(x, indice)`` (the gradient of that) picks them.
``avg_pool{n}d_grad`` and ``adaptive_avg_pool{n}d_grad`` are the adjoints of
their forward ops and the other way round. Their kernels compute each output from
its own window only (a masked sum, never a product with an averaging matrix), so a
NaN or inf reaches only the windows that hold it. As PyTorch, ``avg_pool3d`` also
requires the unpadded input to be at least the kernel. ``upsample_nearest`` /
``upsample_linear`` (for ``interpolate``) take their ``output_size`` and the
user's ``scales`` (0.0: not given), which PyTorch's index computation uses.
Every backward op of the pooling and upsampling ops is linear in its gradient
input, and its gradient row is the forward op or a gather, so double backward
works throughout.
"""

from __future__ import annotations

from functools import partial

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.ops.common import same_dtype

_int64 = dt.int64


def _dims(values) -> str:
    return " x ".join(str(v) for v in values)


def _check_list(ctx, name, values, nd):
    if len(values) != nd:
        raise ctx.error(f"expected {nd} value(s) for {name}, one per spatial dim, got {list(values)}")


def _check_conv_attrs(ctx, nd, kernel=None):
    a = ctx.attrs
    for name in ("padding_before", "padding_after", "strides", "dilation_rate"):
        _check_list(ctx, name, a[name], nd)
    if kernel is not None:
        _check_list(ctx, "kernel_size", kernel, nd)
        if any(k <= 0 for k in kernel):
            raise ctx.error(f"kernel_size must be positive, got {list(kernel)}")
    if any(s <= 0 for s in a["strides"]):
        raise ctx.error("non-positive stride is not supported")
    if any(p < 0 for p in a["padding_before"]) or any(p < 0 for p in a["padding_after"]):
        raise ctx.error("negative padding is not supported")
    if any(d <= 0 for d in a["dilation_rate"]):
        raise ctx.error("dilation should be greater than zero")
    if a["groups"] <= 0:
        raise ctx.error("non-positive groups is not supported")


def conv_output_size(ctx, in_size, kernel):
    """The conv's output spatial size; PyTorch's error when the dilated kernel exceeds the padded input."""
    a = ctx.attrs
    padded = [i + b + e for i, b, e in zip(in_size, a["padding_before"], a["padding_after"])]
    eff = [d * (k - 1) + 1 for k, d in zip(kernel, a["dilation_rate"])]
    if any(p < k for p, k in zip(padded, eff)):
        raise ctx.error(f"Calculated padded input size per channel: ({_dims(padded)}). Kernel size: ({_dims(eff)}). "
                        f"Kernel size can't be greater than actual input size")
    return tuple((p - k) // s + 1 for p, k, s in zip(padded, eff, a["strides"]))


def _conv_weight_check(ctx, x, w, nd):
    if len(w) != nd + 2:
        raise ctx.error(f"weight must be {nd + 2}-D (out_channels, in_channels / groups, *kernel_size), "
                        f"got shape {list(w)}")
    groups = ctx.attrs["groups"]
    if w[0] % groups:
        raise ctx.error(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got "
                        f"weight of size {list(w)} instead")
    if x[1] != w[1] * groups:
        raise ctx.error(f"Given groups={groups}, weight of size {list(w)}, expected input{list(x)} to have "
                        f"{w[1] * groups} channels, but got {x[1]} channels instead")


def _conv_shape(nd):
    def infer(ctx):
        x, w = ctx.shape("in"), ctx.shape("weight")
        if len(x) != nd + 2:
            raise ctx.error(f"expected a {nd + 2}-D input (N, C, *spatial), got shape {list(x)}")
        _check_conv_attrs(ctx, nd)
        _conv_weight_check(ctx, x, w, nd)
        if ctx.has_input("bias") and tuple(ctx.shape("bias")) != (w[0],):
            raise ctx.error(f"Given weight of size {list(w)}, expected bias to be 1-dimensional with {w[0]} elements, "
                            f"but got bias of size {list(ctx.shape('bias'))} instead")
        return (x[0], w[0], *conv_output_size(ctx, x[2:], w[2:]))
    return infer


def _same_dtypes(first, *others):
    """All of ``first`` and ``others`` (present inputs) share one dtype (PyTorch's "Input type ... should be the
    same")."""
    def infer(ctx):
        d = ctx.dtype(first)
        for name in others:
            if ctx.has_input(name) and ctx.dtype(name) is not d:
                raise ctx.error(f"Input type ({d.name}) and {name} type ({ctx.dtype(name).name}) should be the same")
        return d
    return infer


_CONV_ATTRS = {"padding_before": ("list_int32", ()), "padding_after": ("list_int32", ()),
               "strides": ("list_int32", ()), "dilation_rate": ("list_int32", ()), "groups": ("int32", 1)}

for _nd in (1, 2, 3):
    register_user_op(f"conv{_nd}d", inputs=["in", "weight", Arg("bias", optional=True)], outputs=["out"],
                     attrs=_CONV_ATTRS, infer_shape=_conv_shape(_nd),
                     infer_dtype=_same_dtypes("in", "weight", "bias"))


def _conv_data_grad_shape(ctx):
    dy, w = ctx.shape("dy"), ctx.shape("filter")
    nd = len(dy) - 2
    in_size = ctx.attrs["input_size"]
    if nd < 1:
        raise ctx.error(f"dy must be (N, C, *spatial) with at least one spatial dim, got shape {list(dy)}")
    _check_conv_attrs(ctx, nd)
    _check_list(ctx, "input_size", in_size, nd)
    if len(w) != nd + 2:
        raise ctx.error(f"filter must be {nd + 2}-D like dy, got shape {list(w)}")
    groups = ctx.attrs["groups"]
    if w[0] != dy[1] or w[0] % groups:
        raise ctx.error(f"Given groups={groups}, filter of size {list(w)} expects dy with {w[0]} channels (divisible "
                        f"by groups), got dy of size {list(dy)}")
    if any(i < 0 for i in in_size):
        raise ctx.error(f"input_size must not be negative, got {list(in_size)}")
    full = conv_output_size(ctx, in_size, w[2:])
    if any(o > f for o, f in zip(dy[2:], full)):
        raise ctx.error(f"dy of spatial size ({_dims(dy[2:])}) is larger than the output ({_dims(full)}) of a conv "
                        f"over an input of size ({_dims(in_size)})")
    return (dy[0], w[1] * groups, *in_size)


register_user_op("conv_data_grad", inputs=["dy", "filter"], outputs=["dx"],
                 attrs={**_CONV_ATTRS, "input_size": ("list_int64", ())},
                 infer_shape=_conv_data_grad_shape, infer_dtype=_same_dtypes("dy", "filter"))


def _conv_filter_grad_shape(ctx):
    dy, x = ctx.shape("dy"), ctx.shape("x")
    nd = len(dy) - 2
    kernel = ctx.attrs["kernel_size"]
    if nd < 1 or len(x) != nd + 2:
        raise ctx.error(f"dy and x must both be (N, C, *spatial), got shapes {list(dy)} and {list(x)}")
    _check_conv_attrs(ctx, nd, kernel)
    groups = ctx.attrs["groups"]
    if dy[0] != x[0] or dy[1] % groups or x[1] % groups:
        raise ctx.error(f"dy {list(dy)} and x {list(x)} need the same batch size and channels divisible by "
                        f"groups={groups}")
    full = conv_output_size(ctx, x[2:], kernel)
    if any(o > f for o, f in zip(dy[2:], full)):
        raise ctx.error(f"dy of spatial size ({_dims(dy[2:])}) is larger than the conv output ({_dims(full)})")
    return (dy[1], x[1] // groups, *kernel)


register_user_op("conv_filter_grad", inputs=["dy", "x"], outputs=["filter_diff"],
                 attrs={**_CONV_ATTRS, "kernel_size": ("list_int32", ())},
                 infer_shape=_conv_filter_grad_shape, infer_dtype=_same_dtypes("dy", "x"))


# ---- gradients of the convolutions ---------------------------------------------------------------
# Each of the three ops is linear in each argument and the others are its adjoints, so double backward
# works throughout (Note [Convolution ops]).
_CONV_OPS = (None, "conv1d", "conv2d", "conv3d")  # by the number of spatial dims


def _conv_attrs(attrs, **extra):
    """The conv attrs of ``attrs`` (those of a conv op or of one of its gradients), with ``extra``."""
    return AttrMap({**{k: attrs[k] for k in _CONV_ATTRS}, **extra})


def _crop_to(t, shape):
    """``t`` cut to ``shape`` at the end of each dim (a conv's output may be longer than the ``dy`` it stands for)."""
    if tuple(t.shape) == tuple(shape):
        return t
    n = len(shape)
    return F.ops.slice(t, start=(0,) * n, stop=tuple(shape), step=(1,) * n)


def _conv_in_grad(dout, weight, in_meta, attrs):
    return F.ops.conv_data_grad(dout, weight, attrs=_conv_attrs(attrs, input_size=in_meta.shape[2:]))


def _conv_weight_grad(dout, in_, weight_meta, attrs):
    return F.ops.conv_filter_grad(dout, in_, attrs=_conv_attrs(attrs, kernel_size=weight_meta.shape[2:]))


def _conv_bias_grad(dout):
    """dout summed over all but the channel dim."""
    return F.sum(dout, [0, *range(2, dout.ndim)])


for _nd in (1, 2, 3):
    derivative(f"conv{_nd}d", in_=_conv_in_grad, weight=_conv_weight_grad, bias=_conv_bias_grad)


def _conv_of(x, w, attrs, dy_meta):
    """The conv (of ``attrs``' dimensionality) of ``x`` by ``w``, cut to ``dy``'s shape."""
    conv = getattr(F.ops, _CONV_OPS[len(attrs["strides"])])
    return _crop_to(conv(x, w, attrs=_conv_attrs(attrs)), dy_meta.shape)


# dx = conv_data_grad(dy, w): d(dy) = conv(g, w) (cut to dy), d(w) = conv_filter_grad(dy, g).
derivative("conv_data_grad",
           dy=lambda ddx, filter, dy_meta, attrs: _conv_of(ddx, filter, attrs, dy_meta),
           filter=lambda ddx, dy, filter_meta, attrs: F.ops.conv_filter_grad(
               dy, ddx, attrs=_conv_attrs(attrs, kernel_size=filter_meta.shape[2:])))
# dw = conv_filter_grad(dy, x): d(dy) = conv(x, h) (cut to dy), d(x) = conv_data_grad(dy, h).
derivative("conv_filter_grad",
           dy=lambda dfilter_diff, x, dy_meta, attrs: _conv_of(x, dfilter_diff, attrs, dy_meta),
           x=lambda dfilter_diff, dy, x_meta, attrs: F.ops.conv_data_grad(
               dy, dfilter_diff, attrs=_conv_attrs(attrs, input_size=x_meta.shape[2:])))


# ---- pooling -------------------------------------------------------------------------------------
def pool_output_size(in_size, kernel, stride, pad, dilation, ceil_mode):
    """PyTorch's ``pooling_output_shape``: with ``ceil_mode`` the last window must start inside the input or the
    left padding."""
    out = []
    for i, k, s, p, d in zip(in_size, kernel, stride, pad, dilation):
        o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= i + p:
            o -= 1
        out.append(o)
    return tuple(out)


def _check_pool_input(ctx, name, shape, nd):
    if len(shape) not in (nd + 1, nd + 2) or any(d == 0 for d in shape[1 if len(shape) == nd + 2 else 0:]):
        raise ctx.error(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch size for "
                        f"{name}, but got: {list(shape)}")


def _pool_out(ctx, shape, nd, dilated):
    """The output shape of a pooling of ``shape`` by the op's attrs, checked as PyTorch's ``pool2d_shape_check``."""
    a = ctx.attrs
    kernel, stride, pad = a["kernel_size"], a["stride"], a["padding"]
    dilation = a["dilation"] if dilated else (1,) * nd
    for name, values in (("kernel_size", kernel), ("stride", stride), ("padding", pad), ("dilation", dilation)):
        _check_list(ctx, name, values, nd)
    if any(k <= 0 for k in kernel):
        raise ctx.error(f"kernel size should be greater than zero, but got kernel_size={list(kernel)}")
    if any(s <= 0 for s in stride):
        raise ctx.error(f"stride should be greater than zero, but got stride={list(stride)}")
    if any(d <= 0 for d in dilation):
        raise ctx.error(f"dilation should be greater than zero, but got dilation={list(dilation)}")
    if any(p < 0 or p > k // 2 for p, k in zip(pad, kernel)):
        raise ctx.error(f"pad should be smaller than or equal to half of kernel size, but got padding={list(pad)} "
                        f"and kernel_size={list(kernel)}")
    if nd == 3 and not dilated and any(i < k for i, k in zip(shape[-3:], kernel)):  # PyTorch's avg_pool3d check
        raise ctx.error(f"input image (T: {shape[-3]} H: {shape[-2]} W: {shape[-1]}) smaller than kernel size "
                        f"(kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})")
    out = pool_output_size(shape[-nd:], kernel, stride, pad, dilation, a["ceil_mode"])
    if any(o < 1 for o in out):
        raise ctx.error(f"Given input size: ({'x'.join(map(str, shape[-nd - 1:]))}). Calculated output size: "
                        f"({'x'.join(map(str, (shape[-nd - 1], *out)))}). Output size is too small")
    return (*shape[:-nd], *out)


def _pool_shape(nd, dilated):
    def infer(ctx):
        x = ctx.input_metas[0].shape
        _check_pool_input(ctx, "input", x, nd)
        out = _pool_out(ctx, x, nd, dilated)
        return (out, out) if dilated else out
    return infer


def _max_pool_dtype(ctx):
    return (ctx.dtype("x"), _int64)


def _check_index_dtype(ctx):
    if ctx.dtype("indice") is not _int64:
        raise ctx.error(f"indice must be int64, got {ctx.dtype('indice').name}")


def _max_pool_grad_shape(nd):
    def infer(ctx):
        dy, idx = ctx.shape("dy"), ctx.shape("indice")
        in_size = ctx.attrs["input_size"]
        _check_list(ctx, "input_size", in_size, nd)
        if tuple(dy) != tuple(idx) or len(dy) not in (nd + 1, nd + 2):
            raise ctx.error(f"dy and indice must have the same {nd + 1}-D or {nd + 2}-D shape, got {list(dy)} and "
                            f"{list(idx)}")
        _check_index_dtype(ctx)
        return (*dy[:-nd], *in_size)
    return infer


def _max_pool_gather_shape(nd):
    def infer(ctx):
        x, idx = ctx.shape("x"), ctx.shape("indice")
        if len(x) != len(idx) or len(x) not in (nd + 1, nd + 2) or tuple(x[:-nd]) != tuple(idx[:-nd]):
            raise ctx.error(f"x and indice must have the same leading dims, got {list(x)} and {list(idx)}")
        _check_index_dtype(ctx)
        return idx
    return infer


def _pool_grad_shape(nd, dilated):
    """The input shape of a pooling whose output gradient is ``dy`` (checked against the attrs)."""
    def infer(ctx):
        dy = ctx.shape("dy")
        in_size = ctx.attrs["input_size"]
        _check_list(ctx, "input_size", in_size, nd)
        if len(dy) not in (nd + 1, nd + 2):
            raise ctx.error(f"dy must be {nd + 1}-D or {nd + 2}-D, got shape {list(dy)}")
        shape = (*dy[:-nd], *in_size)
        if _pool_out(ctx, shape, nd, dilated) != tuple(dy):
            raise ctx.error(f"dy of shape {list(dy)} is not the output shape of a pooling of {list(shape)}")
        return shape
    return infer


def _adaptive_shape(nd, empty_channels=False):
    """Output shape of an adaptive pooling over ``nd`` dims. As PyTorch's: dim 0 may be empty (a batch, or the
    channels of an unbatched input); ``empty_channels`` also lets a batched input's channels be empty (its
    adaptive_avg_pool1d / 2d check only the spatial dims)."""
    def infer(ctx):
        x = ctx.input_metas[0].shape
        out = ctx.attrs["output_size"]
        if len(x) not in (nd + 1, nd + 2):
            raise ctx.error(f"Expected {nd + 1}D or {nd + 2}D tensor, but got {list(x)}")
        for i in range(len(x) - nd if empty_channels else 1, len(x)):
            if x[i] == 0:
                raise ctx.error(f"Expected input to have non-zero size for non-batch dimensions, but input has sizes "
                                f"{list(x)} with dimension {i} being empty")
        _check_list(ctx, "output_size", out, nd)
        if any(o < 0 for o in out):
            raise ctx.error(f"elements of output_size must be greater than or equal to 0 but received {list(out)}")
        return (*x[:-nd], *out)
    return infer


def _adaptive_grad_shape(nd):
    def infer(ctx):
        dy = ctx.shape("dy")
        in_size = ctx.attrs["input_size"]
        _check_list(ctx, "input_size", in_size, nd)
        if len(dy) not in (nd + 1, nd + 2):
            raise ctx.error(f"dy must be {nd + 1}-D or {nd + 2}-D, got shape {list(dy)}")
        if any(i <= 0 for i in in_size):
            raise ctx.error(f"input_size must be positive, got {list(in_size)}")
        return (*dy[:-nd], *in_size)
    return infer


_POOL_ATTRS = {"kernel_size": ("list_int32", ()), "stride": ("list_int32", ()), "padding": ("list_int32", ()),
               "ceil_mode": ("bool", False)}
_MAX_POOL_ATTRS = {**_POOL_ATTRS, "dilation": ("list_int32", ())}
# divisor_override 0: not given (the functor rejects a given 0 as PyTorch does).
_AVG_POOL_ATTRS = {**_POOL_ATTRS, "count_include_pad": ("bool", True), "divisor_override": ("int64", 0)}
_INPUT_SIZE = {"input_size": ("list_int64", ())}
for _nd in (1, 2, 3):
    register_user_op(f"max_pool{_nd}d", inputs=["x"], outputs=["y", "indice"], attrs=_MAX_POOL_ATTRS,
                     infer_shape=_pool_shape(_nd, True), infer_dtype=_max_pool_dtype)
    register_user_op(f"max_pool{_nd}d_grad", inputs=["dy", "indice"], outputs=["dx"], attrs=_INPUT_SIZE,
                     infer_shape=_max_pool_grad_shape(_nd), infer_dtype=same_dtype)
    register_user_op(f"max_pool{_nd}d_gather", inputs=["x", "indice"], outputs=["y"],
                     infer_shape=_max_pool_gather_shape(_nd), infer_dtype=same_dtype)
    register_user_op(f"avg_pool{_nd}d", inputs=["x"], outputs=["y"], attrs=_AVG_POOL_ATTRS,
                     infer_shape=_pool_shape(_nd, False), infer_dtype=same_dtype)
    register_user_op(f"avg_pool{_nd}d_grad", inputs=["dy"], outputs=["dx"], attrs={**_AVG_POOL_ATTRS, **_INPUT_SIZE},
                     infer_shape=_pool_grad_shape(_nd, False), infer_dtype=same_dtype)
    register_user_op(f"adaptive_avg_pool{_nd}d", inputs=["x"], outputs=["y"],
                     attrs={"output_size": ("list_int64", ())},
                     infer_shape=_adaptive_shape(_nd, empty_channels=_nd < 3), infer_dtype=same_dtype)
    register_user_op(f"adaptive_avg_pool{_nd}d_grad", inputs=["dy"], outputs=["dx"], attrs=_INPUT_SIZE,
                     infer_shape=_adaptive_grad_shape(_nd), infer_dtype=same_dtype)


# ---- gradients of the pooling and upsampling ops -------------------------------------------------
# Each op is linear in its data input; its gradient is its adjoint op and the other way round, so double
# backward works throughout (Note [Pooling ops]).
def _scatter(grad_op, nd, dy, indice, x_meta):
    """The gradient of ``max_pool{n}d`` and of ``max_pool{n}d_gather``: ``dy`` scattered to the indices."""
    return getattr(F.ops, grad_op)(dy, indice, input_size=x_meta.shape[-nd:])


def _gather(gather_op, ddx, indice):
    """The gradient of ``max_pool{n}d_grad(dy, indice)`` (linear in dy): g picked at the indices."""
    return getattr(F.ops, gather_op)(ddx, indice)


def _to_input(adjoint, keys, dims, dy, x_meta, attrs):
    """The gradient of a linear op of one input: its adjoint op, with the forward's attrs ``keys`` and the input's
    dims ``dims`` as ``input_size``."""
    a = {k: attrs[k] for k in keys}
    a["input_size"] = x_meta.shape[dims]
    return getattr(F.ops, adjoint)(dy, attrs=AttrMap(a))


def _to_dy(forward, keys, out_dims, ddx, dy_meta, attrs):
    """The gradient of a backward op ``*_grad(dy)`` (linear in dy): the forward op with the attrs ``keys`` and, when
    ``out_dims`` is given, ``output_size`` = those dims of dy."""
    a = {k: attrs[k] for k in keys}
    if out_dims is not None:
        a["output_size"] = dy_meta.shape[out_dims]
    return getattr(F.ops, forward)(ddx, attrs=AttrMap(a))


_AVG_KEYS = tuple(_AVG_POOL_ATTRS)
for _nd in (1, 2, 3):
    _trailing = slice(-_nd, None)
    _max, _avg, _ada = f"max_pool{_nd}d", f"avg_pool{_nd}d", f"adaptive_avg_pool{_nd}d"
    derivative(_max, x=partial(_scatter, _max + "_grad", _nd))
    derivative(_max + "_grad", dy=partial(_gather, _max + "_gather"))
    derivative(_max + "_gather", x=partial(_scatter, _max + "_grad", _nd))
    derivative(_avg, x=partial(_to_input, _avg + "_grad", _AVG_KEYS, _trailing))
    derivative(_avg + "_grad", dy=partial(_to_dy, _avg, _AVG_KEYS, None))
    derivative(_ada, x=partial(_to_input, _ada + "_grad", (), _trailing))
    derivative(_ada + "_grad", dy=partial(_to_dy, _ada, (), _trailing))


# ---- upsampling ----------------------------------------------------------------------------------
def _upsample_shape(ctx):
    x = ctx.input_metas[0].shape
    out, scales = ctx.attrs["output_size"], ctx.attrs["scales"]
    nd = len(out)
    if not 1 <= nd <= 3 or len(x) != nd + 2:
        raise ctx.error(f"expected output_size with 1 to 3 entries and an input (N, C, *spatial) with as many "
                        f"spatial dims, got output_size {list(out)} and input shape {list(x)}")
    if scales and len(scales) != nd:
        raise ctx.error(f"expected no scales or one per spatial dim ({nd}), got {list(scales)}")
    if any(i <= 0 for i in x[2:]) or any(o <= 0 for o in out):
        raise ctx.error(f"Input and output sizes should be greater than 0, but got input ({_dims(x[2:])}) output "
                        f"({_dims(out)})")
    return (x[0], x[1], *out)


def _upsample_grad_shape(ctx):
    dy = ctx.shape("dy")
    in_size, out, scales = ctx.attrs["input_size"], ctx.attrs["output_size"], ctx.attrs["scales"]
    nd = len(out)
    if not 1 <= nd <= 3 or len(dy) != nd + 2 or tuple(dy[2:]) != tuple(out) or len(in_size) != nd:
        raise ctx.error(f"dy of shape {list(dy)} does not match output_size {list(out)} and input_size "
                        f"{list(in_size)}")
    if scales and len(scales) != nd:
        raise ctx.error(f"expected no scales or one per spatial dim ({nd}), got {list(scales)}")
    if any(i <= 0 for i in in_size) or any(o <= 0 for o in out):
        raise ctx.error(f"Input and output sizes should be greater than 0, but got input ({_dims(in_size)}) output "
                        f"({_dims(out)})")
    return (dy[0], dy[1], *in_size)


_UPSAMPLE_ATTRS = {"output_size": ("list_int64", ()), "scales": ("list_float", ())}
_NEAREST_ATTRS = {**_UPSAMPLE_ATTRS, "exact": ("bool", False)}
_LINEAR_ATTRS = {**_UPSAMPLE_ATTRS, "align_corners": ("bool", False)}
register_user_op("upsample_nearest", inputs=["x"], outputs=["y"], attrs=_NEAREST_ATTRS,
                 infer_shape=_upsample_shape, infer_dtype=same_dtype)
register_user_op("upsample_nearest_grad", inputs=["dy"], outputs=["dx"], attrs={**_NEAREST_ATTRS, **_INPUT_SIZE},
                 infer_shape=_upsample_grad_shape, infer_dtype=same_dtype)
register_user_op("upsample_linear", inputs=["x"], outputs=["y"], attrs=_LINEAR_ATTRS,
                 infer_shape=_upsample_shape, infer_dtype=same_dtype)
register_user_op("upsample_linear_grad", inputs=["dy"], outputs=["dx"], attrs={**_LINEAR_ATTRS, **_INPUT_SIZE},
                 infer_shape=_upsample_grad_shape, infer_dtype=same_dtype)
for _mode, _attrs in (("nearest", _NEAREST_ATTRS), ("linear", _LINEAR_ATTRS)):
    _up = f"upsample_{_mode}"
    derivative(_up, x=partial(_to_input, _up + "_grad", tuple(_attrs), slice(2, None)))
    derivative(_up + "_grad", dy=partial(_to_dy, _up, tuple(_attrs), None))


# ---- adaptive and fractional max pooling, max unpooling ------------------------------------------
# Note [Max pooling family]
# ``adaptive_max_pool{n}d(x)`` and ``fractional_max_pool{n}d(x, random_samples)`` output the maxima and, as
# ``max_pool{n}d``, the flat index of each within its input plane, so their gradient is the same scatter
# (``max_pool{n}d_grad``). ``max_unpool{n}d(x, indice)`` writes each value at its index of a zero output plane
# (PyTorch's partial inverse of max pooling: a later duplicate index overwrites an earlier one); its gradient
# picks the output gradient at the indices (``max_pool{n}d_gather``). The windows of the adaptive pooling are
# PyTorch's ``[floor(o * I / O), ceil((o + 1) * I / O))``; those of the fractional pooling start at
# PyTorch's pseudo-random sequence made from one sample in [0, 1) per plane and spatial dim.
def _max_outputs(infer):
    def both(ctx):
        shape = infer(ctx)
        return shape, shape
    return both


_SPATIAL_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _fractional_shape(nd):
    def infer(ctx):
        x, s = ctx.shape("x"), ctx.shape("random_samples")
        kernel, out = ctx.attrs["kernel_size"], ctx.attrs["output_size"]
        if len(x) not in (nd + 1, nd + 2) or 0 in x[-nd - 1:]:
            raise ctx.error(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input, but got: "
                            f"{list(x)}")
        _check_list(ctx, "kernel_size", kernel, nd)
        _check_list(ctx, "output_size", out, nd)
        if any(k <= 0 for k in kernel):
            raise ctx.error(f"kernel_size must be greater than 0, but got {list(kernel)}")
        if any(o < 0 for o in out):
            raise ctx.error(f"output_size must not be negative, but got {list(out)}")
        n = x[0] if len(x) == nd + 2 else 1
        if len(s) != 3:
            raise ctx.error(f"Expect _random_samples to have 3 dimensions (N, C, {nd}), got {list(s)}")
        if s[0] < n:
            raise ctx.error("Expect _random_samples.size(0) no less then input batch size.")
        if s[1] != x[-nd - 1]:
            raise ctx.error("Expect _random_samples.size(1) equals to input channel size.")
        if s[2] != nd:
            raise ctx.error(f"Expect _random_samples.size(2) equals to {nd}; got {s[2]}.")
        for name, i, k, o in zip(_SPATIAL_NAMES[nd], x[-nd:], kernel, out):
            if o + k - 1 > i or (nd == 3 and o + k - 1 == i):  # PyTorch's 3-D check is strict
                raise ctx.error(f"pool {name} {k} too large relative to input {name} {i}")
        shape = (*x[:-nd], *out)
        return shape, shape
    return infer


def _fractional_dtype(ctx):
    d = ctx.dtype("x")
    if ctx.dtype("random_samples") is not d:
        raise ctx.error("Expect _random_samples to have the same dtype as input")
    return d, _int64


def _max_unpool_shape(nd):
    def infer(ctx):
        x, idx = ctx.shape("x"), ctx.shape("indice")
        out = ctx.attrs["output_size"]
        if len(x) not in (nd + 1, nd + 2):
            raise ctx.error(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
                            f"tensor with {len(x)} dimensions.")
        if ctx.dtype("indice") is not _int64:
            raise ctx.error(f"elements in indices should be type int64 but got: {ctx.dtype('indice').name}")
        if tuple(x) != tuple(idx):
            raise ctx.error(f"Expected shape of indices to be same as that of the input tensor ({list(x)}) but got "
                            f"indices tensor with shape: {list(idx)}")
        _check_list(ctx, "output_size", out, nd)
        if any(o < 0 for o in out):
            raise ctx.error(f"output_size must contain non-negative spatial dimensions, but got {list(out)}")
        return (*x[:-nd], *out)
    return infer


def _pick(gather_op, dy, indice):
    """The gradient of ``max_unpool{n}d``: the output gradient picked at the indices."""
    return getattr(F.ops, gather_op)(dy, indice)


_OUTPUT_SIZE = {"output_size": ("list_int64", ())}
for _nd in (1, 2, 3):
    register_user_op(f"adaptive_max_pool{_nd}d", inputs=["x"], outputs=["y", "indice"], attrs=_OUTPUT_SIZE,
                     infer_shape=_max_outputs(_adaptive_shape(_nd)), infer_dtype=_max_pool_dtype)
    register_user_op(f"max_unpool{_nd}d", inputs=["x", "indice"], outputs=["y"], attrs=_OUTPUT_SIZE,
                     infer_shape=_max_unpool_shape(_nd), infer_dtype=same_dtype)
    derivative(f"adaptive_max_pool{_nd}d", x=partial(_scatter, f"max_pool{_nd}d_grad", _nd))
    derivative(f"max_unpool{_nd}d", x=partial(_pick, f"max_pool{_nd}d_gather"))
for _nd in (2, 3):
    register_user_op(f"fractional_max_pool{_nd}d", inputs=["x", "random_samples"], outputs=["y", "indice"],
                     attrs={"kernel_size": ("list_int32", ()), **_OUTPUT_SIZE},
                     infer_shape=_fractional_shape(_nd), infer_dtype=_fractional_dtype)
    derivative(f"fractional_max_pool{_nd}d", x=partial(_scatter, f"max_pool{_nd}d_grad", _nd))


# ---- im2col / col2im (unfold / fold) -------------------------------------------------------------
# Note [im2col and col2im]
# ``im2col(x)`` takes ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) to the blocks ``(N, C * kh * kw, L)``, one
# column per sliding-window position (PyTorch's ``unfold``); ``col2im`` (``fold``) sums such columns back into an
# ``output_size`` image. Each is linear and the other is its adjoint, so each one's gradient is the other op with
# the same attrs (double backward works).
_FOLD_ATTRS = {"kernel_size": ("list_int32", ()), "dilation_rate": ("list_int32", ()),
               "padding": ("list_int32", ()), "strides": ("list_int32", ())}
_FOLD_CHECKS = (("kernel_size", "kernel size should be greater than zero", "kernel", 1),
                ("dilation_rate", "dilation should be greater than zero", "dilation", 1),
                ("padding", "padding should be non-negative", "pad", 0),
                ("strides", "stride should be greater than zero", "stride", 1))


def _fold_blocks(ctx, size):
    """The attrs checked as PyTorch's ``im2col_shape_check``; the number of blocks along H and W of ``size``."""
    a = ctx.attrs
    for name, message, short, low in _FOLD_CHECKS:
        values = a[name]
        if len(values) != 2:
            raise ctx.error(f"It is expected {name} equals to 2, but got size {len(values)}")
        if any(v < low for v in values):
            raise ctx.error(f"{message}, but got {short}_height: {values[0]} {short}_width: {values[1]}")
    return tuple((i + 2 * p - d * (k - 1) - 1) // s + 1
                 for i, k, d, p, s in zip(size, a["kernel_size"], a["dilation_rate"], a["padding"], a["strides"]))


def _fold_settings(ctx) -> str:
    a = ctx.attrs
    return (f"kernel_size=({_pair_text(a['kernel_size'])}), dilation=({_pair_text(a['dilation_rate'])}), "
            f"padding=({_pair_text(a['padding'])})")


def _pair_text(values) -> str:
    return ", ".join(str(v) for v in values)


def _im2col_shape(ctx):
    x = ctx.shape("x")
    if len(x) not in (3, 4) or 0 in x[-3:]:
        raise ctx.error(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                        f"dimensions for input, but got: {list(x)}")
    blocks = _fold_blocks(ctx, x[-2:])
    if any(b < 1 for b in blocks):
        raise ctx.error(f"Given input with spatial size ({_pair_text(x[-2:])}), {_fold_settings(ctx)}, calculated "
                        f"shape of the array of sliding blocks as ({_pair_text(blocks)}), but its components must "
                        f"be at least one.")
    k = ctx.attrs["kernel_size"]
    return (*x[:-3], x[-3] * k[0] * k[1], blocks[0] * blocks[1])


def _col2im_shape(ctx):
    x, out = ctx.shape("x"), ctx.attrs["output_size"]
    if len(x) not in (2, 3) or 0 in x[-2:]:
        raise ctx.error(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                        f"dimensions for input, but got: {list(x)}")
    if len(out) != 2:
        raise ctx.error(f"It is expected output_size equals to 2, but got size {len(out)}")
    blocks = _fold_blocks(ctx, out)
    k = ctx.attrs["kernel_size"]
    if x[-2] % (k[0] * k[1]):
        raise ctx.error(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                        f"got input.size(1)={x[-2]} and kernel_size=({_pair_text(k)}).")
    settings = (f"Given output_size=({_pair_text(out)}), {_fold_settings(ctx)}, "
                f"stride=({_pair_text(ctx.attrs['strides'])})")
    if blocks[0] * blocks[1] != x[-1]:
        raise ctx.error(f"{settings}, expected size of input's dimension 2 to match the calculated number of "
                        f"sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                        f"input.size(2)={x[-1]}.")
    if any(b < 1 for b in blocks):
        raise ctx.error(f"{settings}, calculated shape of the array of sliding blocks as ({_pair_text(blocks)}), "
                        f"which is too small (non-positive)")
    return (*x[:-2], x[-2] // (k[0] * k[1]), *out)


register_user_op("im2col", inputs=["x"], outputs=["y"], attrs=_FOLD_ATTRS, infer_shape=_im2col_shape,
                 infer_dtype=same_dtype)
register_user_op("col2im", inputs=["x"], outputs=["y"], attrs={**_FOLD_ATTRS, **_OUTPUT_SIZE},
                 infer_shape=_col2im_shape, infer_dtype=same_dtype)
_FOLD_KEYS = tuple(_FOLD_ATTRS)
derivative("im2col", x=lambda dy, x_meta, attrs: F.ops.col2im(
    dy, attrs=AttrMap({**{k: attrs[k] for k in _FOLD_KEYS}, "output_size": x_meta.shape[-2:]})))
derivative("col2im", x=lambda dy, attrs: F.ops.im2col(dy, attrs=AttrMap({k: attrs[k] for k in _FOLD_KEYS})))


# ---- bicubic and anti-aliased upsampling ---------------------------------------------------------
# Note [Interpolation taps]
# ``upsample_bicubic`` (PyTorch's ``upsample_bicubic2d``: 4 taps per axis, clamped to the input, A = -0.75) and
# ``upsample_antialias`` (PyTorch's ``_upsample_{bilinear,bicubic,lanczos}2d_aa``: a ``filter`` stretched over
# the source pixels a downscaled output pixel covers, weights normalised to sum 1) are separable: along each
# spatial axis an output is a weighted sum of a few input taps. The kernels compute the taps once per axis;
# each gradient op scatters the weighted gradient back to the taps (the adjoint), and the gradient of a gradient
# op is its forward op, so double backward works. A tap outside an anti-aliasing window is masked out, never
# multiplied by a zero weight, so inf and NaN stay in the outputs whose windows hold them.
_AA_FILTERS = ("bilinear", "bicubic", "lanczos")
_BICUBIC_ATTRS = {**_UPSAMPLE_ATTRS, "align_corners": ("bool", False)}
_AA_ATTRS = {**_BICUBIC_ATTRS, "filter": ("string", "bilinear")}


def _antialias_shape(ctx):
    if ctx.attrs["filter"] not in _AA_FILTERS:
        raise ctx.error(f"filter must be one of {', '.join(_AA_FILTERS)}, got '{ctx.attrs['filter']}'")
    return _upsample_shape(ctx)


def _antialias_grad_shape(ctx):
    if ctx.attrs["filter"] not in _AA_FILTERS:
        raise ctx.error(f"filter must be one of {', '.join(_AA_FILTERS)}, got '{ctx.attrs['filter']}'")
    return _upsample_grad_shape(ctx)


register_user_op("upsample_bicubic", inputs=["x"], outputs=["y"], attrs=_BICUBIC_ATTRS,
                 infer_shape=_upsample_shape, infer_dtype=same_dtype)
register_user_op("upsample_bicubic_grad", inputs=["dy"], outputs=["dx"], attrs={**_BICUBIC_ATTRS, **_INPUT_SIZE},
                 infer_shape=_upsample_grad_shape, infer_dtype=same_dtype)
register_user_op("upsample_antialias", inputs=["x"], outputs=["y"], attrs=_AA_ATTRS,
                 infer_shape=_antialias_shape, infer_dtype=same_dtype)
register_user_op("upsample_antialias_grad", inputs=["dy"], outputs=["dx"], attrs={**_AA_ATTRS, **_INPUT_SIZE},
                 infer_shape=_antialias_grad_shape, infer_dtype=same_dtype)
for _up, _attrs in (("upsample_bicubic", _BICUBIC_ATTRS), ("upsample_antialias", _AA_ATTRS)):
    derivative(_up, x=partial(_to_input, _up + "_grad", tuple(_attrs), slice(2, None)))
    derivative(_up + "_grad", dy=partial(_to_dy, _up, tuple(_attrs), None))
