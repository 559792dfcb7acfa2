"""ONNX mappings of the spatial ops (registered as onnx/ops.py's are): padding (Pad), interpolation (Resize),
adaptive pooling (pools, or slices and reductions), unfold / fold (slices / Col2Im) and max unpooling
(ScatterElements).

Note [ONNX spatial mappings]
Each mapping reproduces the kernel's arithmetic, not only its idea: ``upsample_*`` become ``Resize`` with the
coordinate transformation the kernel uses (``asymmetric`` + ``floor`` for nearest, ``half_pixel`` for nearest-exact,
``half_pixel`` or ``align_corners`` for linear and cubic, A = -0.75) and the kernel's scales when the op has them
(a float32 scale nudged by an ulp where ONNX Runtime's ``floor(size * scale)`` would miss the output size), its
sizes otherwise; an adaptive pooling whose windows are not all equal is pooled one axis at a time over
PyTorch's windows ``[floor(o * I / O), ceil((o + 1) * I / O))`` (the maximum, and the mean of a product window,
are separable); ``im2col`` is one strided slice per kernel offset, so it is exact. Spatial sizes must be static;
the batch may be dynamic.
"""

from __future__ import annotations

import itertools

import numpy as np

from oneflow_lite.onnx.exporter import Affine, UnsupportedOperatorError
from oneflow_lite.onnx.ops import converter, np_dtype, plane_indices, reduce_axes


def _out(node):
    return node.outputs[0]


def _static_dims(ctx, node, lbn, dims):
    """The sizes of ``dims`` of blob ``lbn``, which must not vary with the dynamic axes."""
    forms = ctx.captures.dims(lbn)
    if not all(forms[d].static for d in dims):
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' ({node.op_type}) with a dynamic spatial "
                                       f"axis has no ONNX mapping")
    return [forms[d].const for d in dims]


def _axis_slice(ctx, x, axis, start, end, step=1):
    args = [x, ctx.const([start], np.int64), ctx.const([end], np.int64), ctx.const([axis], np.int64)]
    return ctx.make("Slice", args + ([ctx.const([step], np.int64)] if step != 1 else []))


# ---- padding ------------------------------------------------------------------------------------
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@converter("pad")
def _pad(ctx, node, ins):
    """ONNX's Pad (``circular`` is its ``wrap`` from opset 19, slices and a concat before)."""
    mode = node.res.attrs["mode"]
    before, after = list(ctx.static(node, "padding_before")), list(ctx.static(node, "padding_after"))
    if mode == "circular" and ctx.opset < 19:
        x = ins[0]
        for axis, (b, a) in enumerate(zip(before, after)):
            if b or a:
                parts = [_axis_slice(ctx, x, axis, -b, np.iinfo(np.int64).max)] if b else []
                x = ctx.make("Concat", parts + [x] + ([_axis_slice(ctx, x, axis, 0, a)] if a else []), axis=axis)
        ctx.make("Identity", [x], [_out(node)])
        return
    inputs = [ins[0], ctx.const(before + after, np.int64)]
    if mode == "constant":
        inputs.append(ctx.const(node.res.attrs["value"], np_dtype(ctx, node.inputs[0])))
    ctx.make("Pad", inputs, [_out(node)], mode=_PAD_MODES[mode])


# ---- interpolation ------------------------------------------------------------------------------
def _fit_scale(size: int, out: int, scale: float) -> np.float32:
    """``scale`` as float32, moved by ulps until ``floor(size * scale)`` is ``out`` in float32 (ONNX Runtime's
    kernel) and in float64 (ONNX's shape inference)."""
    s = np.float32(scale)
    for _ in range(8):
        got = (int(np.float32(size) * s), int(np.floor(np.float64(s) * size)))
        if got == (out, out):
            return s
        s = np.nextafter(s, np.float32(np.inf if min(got) < out else 0), dtype=np.float32)
    raise UnsupportedOperatorError(f"flow.onnx.export: no float32 scale resizes {size} to {out} near {scale}")


def _resize(ctx, node, ins, keep=lambda i, o: False, **attrs):
    """``Resize`` of the spatial dims with the op's scales when it has them (PyTorch's source coordinates then
    use the scale, not the size ratio), else to the output's sizes; ``keep(in, out)``: the kernel maps that
    axis by the size ratio whatever the scale."""
    a = node.res.attrs
    nd = len(a["output_size"])
    x_meta = ctx.meta(node.inputs[0])
    spatial = list(range(x_meta.ndim - nd, x_meta.ndim))
    scales = list(a["scales"])
    if scales and all(s > 0 for s in scales):
        sizes = _static_dims(ctx, node, node.inputs[0], spatial)
        out = list(a["output_size"])
        moves = [not (keep(i, o) or s == 1 or a.get("align_corners")) for i, o, s in zip(sizes, out, scales)]
        if sizes == out and any(moves):
            raise UnsupportedOperatorError(
                f"flow.onnx.export: op '{node.name}' ({node.op_type}) keeps the size {sizes} with scales "
                f"{scales}: ONNX Runtime copies such an input, the kernel interpolates it; pass size= (or "
                f"recompute_scale_factor=True) instead of scale_factor")
        s32 = [np.float32(o / i) if keep(i, o) else _fit_scale(i, o, s)
               for i, o, s in zip(sizes, out, scales)]
        inputs = [ins[0], "", ctx.const([1.0] * (x_meta.ndim - nd) + s32, np.float32)]
    else:
        inputs = [ins[0], "", "", ctx.shape_of(_out(node))]
    ctx.make("Resize", inputs, [_out(node)], **attrs)


def _coordinates(node):
    return "align_corners" if node.res.attrs["align_corners"] else "half_pixel"


@converter("upsample_nearest")
def _upsample_nearest(ctx, node, ins):
    if node.res.attrs["exact"]:  # floor((o + 0.5) / scale)
        _resize(ctx, node, ins, mode="nearest", coordinate_transformation_mode="half_pixel",
                nearest_mode="round_prefer_ceil")
    else:  # floor(o / scale)
        _resize(ctx, node, ins, keep=lambda i, o: o in (i, 2 * i), mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")


@converter("upsample_linear")
def _upsample_linear(ctx, node, ins):
    _resize(ctx, node, ins, keep=lambda i, o: i == o, mode="linear",
            coordinate_transformation_mode=_coordinates(node))


@converter("upsample_bicubic")
def _upsample_bicubic(ctx, node, ins):
    _resize(ctx, node, ins, mode="cubic", coordinate_transformation_mode=_coordinates(node), cubic_coeff_a=-0.75,
            exclude_outside=0)


# ---- adaptive pooling ---------------------------------------------------------------------------
def _batched(ctx, node, x, nd, pool, outputs):
    """Run ``pool(x, outputs)`` (an ONNX pooling op, which needs a batch dim) on an (N, C, *spatial) or a
    (C, *spatial) input."""
    if ctx.meta(node.inputs[0]).ndim == nd + 2:
        pool(x, outputs)
        return
    zero = ctx.const([0], np.int64)
    pooled = [ctx.fresh("pooled") for _ in outputs]
    pool(ctx.make("Unsqueeze", [x, zero]), pooled)
    for p, o in zip(pooled, outputs):
        ctx.make("Squeeze", [p, zero], [o])


def _adaptive(ctx, node, ins, kind):
    """Adaptive pooling: a global or a strided pool when the windows are equal, else one axis at a time."""
    nd = len(node.res.attrs["output_size"])
    ndim = ctx.meta(node.inputs[0]).ndim
    in_size = _static_dims(ctx, node, node.inputs[0], range(ndim - nd, ndim))
    out_size = ctx.meta(_out(node)).shape[-nd:]
    indices = len(node.outputs) > 1 and node.outputs[1] in ctx.used
    if not any(i % o for i, o in zip(in_size, out_size)):
        k = [i // o for i, o in zip(in_size, out_size)]
        outputs = [_out(node)] + ([ctx.fresh("indices")] if indices else [])
        if kind == "Max":
            _batched(ctx, node, ins[0], nd, lambda x, o: ctx.make("MaxPool", [x], o, kernel_shape=k, strides=k),
                     outputs)
        else:
            _batched(ctx, node, ins[0], nd, lambda x, o: ctx.make("AveragePool", [x], o, kernel_shape=k, strides=k),
                     outputs)
        if indices:
            plane_indices(ctx, node, outputs[1], node.outputs[1])
        return
    if indices:
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' ({node.op_type}) from {in_size} to "
                                       f"{list(out_size)}: its indices are used, which have an ONNX mapping only when "
                                       f"the output size divides the input size")
    x = ins[0]
    for axis, i, o in zip(range(ndim - nd, ndim), in_size, out_size):
        if i == o:
            continue
        parts = []
        for j in range(o):
            window = _axis_slice(ctx, x, axis, j * i // o, -(-(j + 1) * i // o))
            parts.append(reduce_axes(ctx, f"Reduce{kind}", window, [axis], True))
        x = ctx.make("Concat", parts, axis=axis)
    ctx.make("Identity", [x], [_out(node)])


@converter("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d")
def _adaptive_avg_pool(ctx, node, ins):
    _adaptive(ctx, node, ins, "Mean")


@converter("adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive_max_pool(ctx, node, ins):
    _adaptive(ctx, node, ins, "Max")


# ---- unfold, fold, max unpooling ----------------------------------------------------------------
def _blocks(size, a):
    return [(s + 2 * p - d * (k - 1) - 1) // st + 1
            for s, p, d, k, st in zip(size, a["padding"], a["dilation_rate"], a["kernel_size"], a["strides"])]


@converter("im2col")
def _im2col(ctx, node, ins):
    """``unfold``: one strided slice of the zero-padded input per kernel offset, stacked after the channels."""
    a = node.res.attrs
    ndim = ctx.meta(node.inputs[0]).ndim
    blocks = _blocks(_static_dims(ctx, node, node.inputs[0], (ndim - 2, ndim - 1)), a)
    x = ins[0]
    if any(a["padding"]):
        pads = [0] * (ndim - 2) + list(a["padding"])
        x = ctx.make("Pad", [x, ctx.const(pads + pads, np.int64)], mode="constant")
    parts = []
    for offs in itertools.product(*(range(k) for k in a["kernel_size"])):
        starts = [o * d for o, d in zip(offs, a["dilation_rate"])]
        ends = [s + (b - 1) * st + 1 for s, b, st in zip(starts, blocks, a["strides"])]
        window = ctx.make("Slice", [x, ctx.const(starts, np.int64), ctx.const(ends, np.int64),
                                    ctx.const([ndim - 2, ndim - 1], np.int64), ctx.const(list(a["strides"]), np.int64)])
        parts.append(ctx.make("Unsqueeze", [window, ctx.const([ndim - 2], np.int64)]))
    stacked = ctx.make("Concat", parts, axis=ndim - 2)
    ctx.make("Reshape", [stacked, ctx.shape_of(_out(node), minus_one_ok=True)], [_out(node)])


@converter("col2im")
def _col2im(ctx, node, ins):
    """``fold``: ONNX's Col2Im from opset 18; before, a transposed convolution with a one-hot kernel per channel."""
    a = node.res.attrs
    ndim = ctx.meta(node.inputs[0]).ndim
    x = ins[0] if ndim == 3 else ctx.make("Unsqueeze", [ins[0], ctx.const([0], np.int64)])
    out_size, kernel = list(a["output_size"]), list(a["kernel_size"])
    y = ctx.fresh("folded") if ndim == 2 else _out(node)
    if ctx.opset >= 18:
        ctx.make("Col2Im", [x, ctx.const(out_size, np.int64), ctx.const(kernel, np.int64)], [y],
                 dilations=list(a["dilation_rate"]), pads=list(a["padding"]) * 2, strides=list(a["strides"]))
    else:
        k = int(np.prod(kernel))
        c = ctx.meta(node.inputs[0]).shape[-2] // k
        blocks = _blocks(out_size, a)
        n = ctx.captures.dims(node.inputs[0])[0] if ndim == 3 else Affine(1, [0] * len(ctx.captures.bases))
        shape = ctx.ints([n] + [Affine(v, [0] * len(ctx.captures.bases)) for v in [c * k, *blocks]],
                         f"the blocks of '{node.name}'")
        weight = np.tile(np.eye(k, dtype=np_dtype(ctx, node.inputs[0])).reshape(k, 1, *kernel), (c, 1, 1, 1))
        extra = [o + 2 * p - ((b - 1) * s + d * (kk - 1) + 1) for o, p, b, s, d, kk in
                 zip(out_size, a["padding"], blocks, a["strides"], a["dilation_rate"], kernel)]
        ctx.make("ConvTranspose", [ctx.make("Reshape", [x, shape]), ctx.const(weight, hint="one_hot")], [y],
                 kernel_shape=kernel, strides=list(a["strides"]), dilations=list(a["dilation_rate"]),
                 pads=list(a["padding"]) * 2, output_padding=extra, group=c)
    if ndim == 2:
        ctx.make("Squeeze", [y, ctx.const([0], np.int64)], [_out(node)])


@converter("max_unpool1d", "max_unpool2d", "max_unpool3d")
def _max_unpool(ctx, node, ins):
    """Each value written at its index of a zero output plane (a later duplicate wins, as ONNX Runtime's
    ScatterElements), planes flattened."""
    nd = len(node.res.attrs["output_size"])
    lead = ctx.captures.dims(node.inputs[0])[:-nd]
    zeros = [0] * len(ctx.captures.bases)
    flat = ctx.ints(lead + [Affine(-1, zeros)], f"the planes of '{node.name}'")
    size = int(np.prod(node.res.attrs["output_size"]))
    dt = np_dtype(ctx, node.inputs[0])
    empty = ctx.make("ConstantOfShape", [ctx.ints(lead + [Affine(size, zeros)], f"the output of '{node.name}'")],
                     value=ctx.onnx.numpy_helper.from_array(np.zeros(1, dt)))
    scattered = ctx.make("ScatterElements", [empty, ctx.make("Reshape", [ins[1], flat]),
                                             ctx.make("Reshape", [ins[0], flat])], axis=len(lead))
    ctx.make("Reshape", [scattered, ctx.shape_of(_out(node), minus_one_ok=True)], [_out(node)])
