"""ONNX mappings of oneflow_lite's op types: ``@converter("relu")`` registers ``fn(ctx, node, ins)``, which adds
the ONNX nodes computing ``node`` (a ``JobIR`` node: ``node.res.attrs``, ``node.outputs``) from the ONNX
values ``ins`` of its inputs, naming their results ``node.outputs`` (Note [ONNX export] in onnx/exporter.py).
``supported_ops()`` lists the op types with a mapping."""

from __future__ import annotations

import math

import numpy as np

from oneflow_lite.onnx.exporter import Affine, ExportContext, UnsupportedOperatorError

CONVERTERS: dict = {}


def converter(*op_types):
    def register(fn):
        for t in op_types:
            CONVERTERS[t] = fn
        return fn
    return register


def supported_ops() -> list:
    """The op types the exporter maps to ONNX."""
    return sorted(CONVERTERS)


def _out(node):
    return node.outputs[0]


def np_dtype(ctx, lbn):
    return ctx.meta(lbn).dtype.np_dtype


# ---- elementwise ----------------------------------------------------------------------------------
_UNARY = {"abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "negative": "Neg", "sigmoid": "Sigmoid",
          "tanh": "Tanh", "relu": "Relu", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "sin": "Sin", "cos": "Cos",
          "reciprocal": "Reciprocal", "sign": "Sign", "logical_not": "Not", "selu": "Selu", "softsign": "Softsign"}
_BINARY = {"broadcast_add": "Add", "broadcast_sub": "Sub", "broadcast_mul": "Mul", "broadcast_div": "Div",
           "broadcast_pow": "Pow", "broadcast_maximum": "Max", "broadcast_minimum": "Min",
           "broadcast_equal": "Equal", "broadcast_greater": "Greater", "broadcast_less": "Less",
           "broadcast_greater_equal": "GreaterOrEqual", "broadcast_less_equal": "LessOrEqual",
           "broadcast_logical_and": "And", "broadcast_logical_or": "Or", "broadcast_logical_xor": "Xor"}


@converter(*_UNARY)
def _unary(ctx: ExportContext, node, ins):
    ctx.make(_UNARY[node.op_type], ins, [_out(node)])


@converter("round")
def _round(ctx, node, ins):
    if node.res.attrs["decimals"]:
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' (round) with decimals != 0 has no ONNX "
                                       f"mapping")
    ctx.make("Round", ins, [_out(node)])


@converter("rsqrt")
def _rsqrt(ctx, node, ins):
    ctx.make("Reciprocal", [ctx.make("Sqrt", ins)], [_out(node)])


@converter("square")
def _square(ctx, node, ins):
    ctx.make("Mul", [ins[0], ins[0]], [_out(node)])


@converter("log1p", "expm1")
def _log1p_expm1(ctx, node, ins):
    one = ctx.const(1, np_dtype(ctx, node.inputs[0]))
    if node.op_type == "log1p":
        ctx.make("Log", [ctx.make("Add", [ins[0], one])], [_out(node)])
    else:
        ctx.make("Sub", [ctx.make("Exp", ins), one], [_out(node)])


@converter(*_BINARY)
def _binary(ctx, node, ins):
    a, b = _common_dtype(ctx, node, ins) if node.op_type in ("broadcast_pow",) else ins
    ctx.make(_BINARY[node.op_type], [a, b], [_out(node)])


@converter("broadcast_fmod")
def _fmod(ctx, node, ins):
    fmod = int(ctx.meta(node.inputs[0]).dtype.is_floating_point)
    ctx.make("Mod", ins, [_out(node)], fmod=fmod)


def _common_dtype(ctx, node, ins):
    out = np_dtype(ctx, node.outputs[0])
    return [ctx.make("Cast", [v], to=ctx.onnx_dtype(out)) if np_dtype(ctx, lbn) != out else v
            for v, lbn in zip(ins, node.inputs)]


_SCALAR = {"scalar_add": "Add", "scalar_sub": "Sub", "scalar_mul": "Mul", "scalar_div": "Div", "scalar_pow": "Pow",
           "scalar_fmod": "Mod", "scalar_reverse_div": "Div", "scalar_reverse_pow": "Pow", "scalar_reverse_sub": "Sub",
           "scalar_logical_greater": "Greater", "scalar_logical_less": "Less", "scalar_logical_equal": "Equal",
           "scalar_logical_greater_equal": "GreaterOrEqual", "scalar_logical_less_equal": "LessOrEqual",
           "scalar_logical_not_equal": "Equal", "scalar_maximum": "Max", "scalar_minimum": "Min"}


@converter(*_SCALAR)
def _scalar(ctx, node, ins):
    """A tensor op a Python number (``*_operand`` attrs): the number as a constant of the dtype computed in."""
    a = node.res.attrs
    value = a["float_operand"] if a["has_float_operand"] else a["int_operand"]
    in_dt, out_dt = np_dtype(ctx, node.inputs[0]), np_dtype(ctx, node.outputs[0])
    compute = out_dt if out_dt != np.bool_ else (in_dt if np.issubdtype(in_dt, np.floating) or
                                                 isinstance(value, int) else np.float64)
    x = ins[0] if in_dt == compute else ctx.make("Cast", ins, to=ctx.onnx_dtype(compute))
    s = _operand(ctx, node, "float_operand" if a["has_float_operand"] else "int_operand", value, compute)
    args = [s, x] if "reverse" in node.op_type else [x, s]
    attrs = {"fmod": int(np.issubdtype(compute, np.floating))} if node.op_type == "scalar_fmod" else {}
    if node.op_type == "scalar_logical_not_equal":
        ctx.make("Not", [ctx.make("Equal", args)], [_out(node)])
    else:
        ctx.make(_SCALAR[node.op_type], args, [_out(node)], **attrs)


def _operand(ctx, node, name, value, dtype):
    """The number as a constant, or computed from the inputs' shapes when it varies with the dynamic axes (a
    mean's divisor)."""
    form = ctx.captures.attr(node.name, name)
    if form.static:
        return ctx.const(value, dtype)
    numbers = [form.const, *form.coefs]
    if form.const is None or not all(float(c).is_integer() for c in numbers):
        raise UnsupportedOperatorError(f"flow.onnx.export: the number operand of op '{node.name}' ({node.op_type}) "
                                       f"varies with the dynamic axes as no integer affine form of them; export with "
                                       f"fewer dynamic axes")
    ints = ctx.ints([Affine(int(form.const), [int(c) for c in form.coefs])], f"the operand of '{node.name}'")
    return ctx.make("Reshape", [ctx.make("Cast", [ints], to=ctx.onnx_dtype(dtype)), ctx.const([], np.int64)])


@converter("where")
def _where(ctx, node, ins):
    ctx.make("Where", ins, [_out(node)])


@converter("masked_fill")
def _masked_fill(ctx, node, ins):
    a = node.res.attrs
    value = a["float_operand"] if a["has_float_operand"] else a["int_operand"]
    ctx.make("Where", [ins[1], ctx.const(value, np_dtype(ctx, node.outputs[0])), ins[0]], [_out(node)])


@converter("clip_by_scalar")
def _clip(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    floating = np.issubdtype(dt, np.floating)
    lo = ctx.const(a["floating_min"] if floating else a["integral_min"], dt) if a["has_min"] else ""
    hi = ctx.const(a["floating_max"] if floating else a["integral_max"], dt) if a["has_max"] else ""
    ctx.make("Clip", [ins[0], lo, hi] if hi else [ins[0], lo], [_out(node)])


@converter("cast")
def _cast(ctx, node, ins):
    ctx.make("Cast", ins, [_out(node)], to=ctx.onnx_dtype(ctx.meta(node.outputs[0]).dtype))


# ---- activations ----------------------------------------------------------------------------------
@converter("elu")
def _elu(ctx, node, ins):
    ctx.make("Elu", ins, [_out(node)], alpha=float(node.res.attrs["alpha"]))


@converter("leaky_relu")
def _leaky_relu(ctx, node, ins):
    ctx.make("LeakyRelu", ins, [_out(node)], alpha=float(node.res.attrs["alpha"]))


@converter("hardtanh")
def _hardtanh(ctx, node, ins):
    dt = np_dtype(ctx, node.inputs[0])
    a = node.res.attrs
    ctx.make("Clip", [ins[0], ctx.const(a["min_val"], dt), ctx.const(a["max_val"], dt)], [_out(node)])


@converter("relu6")
def _relu6(ctx, node, ins):
    dt = np_dtype(ctx, node.inputs[0])
    ctx.make("Clip", [ins[0], ctx.const(0, dt), ctx.const(6, dt)], [_out(node)])


@converter("hardsigmoid")
def _hardsigmoid(ctx, node, ins):
    ctx.make("HardSigmoid", ins, [_out(node)], alpha=1.0 / 6, beta=0.5)


@converter("hardswish")
def _hardswish(ctx, node, ins):
    ctx.make("Mul", [ins[0], ctx.make("HardSigmoid", ins, alpha=1.0 / 6, beta=0.5)], [_out(node)])


@converter("silu")
def _silu(ctx, node, ins):
    ctx.make("Mul", [ins[0], ctx.make("Sigmoid", ins)], [_out(node)])


@converter("softplus")
def _softplus(ctx, node, ins, out=None):
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    beta, threshold = float(a["beta"]), float(a["threshold"])
    bx = ins[0] if beta == 1.0 else ctx.make("Mul", [ins[0], ctx.const(beta, dt)])
    soft = ctx.make("Softplus", [bx])
    if beta != 1.0:
        soft = ctx.make("Div", [soft, ctx.const(beta, dt)])
    return ctx.make("Where", [ctx.make("Greater", [bx, ctx.const(threshold, dt)]), ins[0], soft],
                    [out or _out(node)])


@converter("mish")
def _mish(ctx, node, ins):
    ctx.make("Mul", [ins[0], ctx.make("Tanh", [ctx.make("Softplus", ins)])], [_out(node)])


@converter("celu")
def _celu(ctx, node, ins):
    alpha = float(node.res.attrs["alpha"])
    dt = np_dtype(ctx, node.inputs[0])
    if dt == np.float32:  # ONNX's Celu is float32 only
        ctx.make("Celu", ins, [_out(node)], alpha=alpha)
        return
    x = ins[0]
    neg = ctx.make("Mul", [ctx.make("Sub", [ctx.make("Exp", [ctx.make("Div", [x, ctx.const(alpha, dt)])]),
                                            ctx.const(1, dt)]), ctx.const(alpha, dt)])
    ctx.make("Where", [ctx.make("Greater", [x, ctx.const(0, dt)]), x, neg], [_out(node)])


@converter("hardshrink", "softshrink")
def _shrink(ctx, node, ins):
    """ONNX's Shrink: ``x - bias`` above ``lambd``, ``x + bias`` below ``-lambd``, else 0."""
    lambd = float(node.res.attrs["lambd"])
    ctx.make("Shrink", ins, [_out(node)], lambd=lambd, bias=lambd if node.op_type == "softshrink" else 0.0)


@converter("threshold")
def _threshold(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    above = ctx.make("Greater", [ins[0], ctx.const(a["threshold_val"], dt)])
    ctx.make("Where", [above, ins[0], ctx.const(a["value"], dt)], [_out(node)])


@converter("gelu")
def _gelu(ctx, node, ins):
    approximate = node.res.attrs["approximate"]
    if ctx.opset >= 20:
        ctx.make("Gelu", ins, [_out(node)], approximate=approximate)
        return
    dt = np_dtype(ctx, node.inputs[0])
    x = ins[0]
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = ctx.make("Mul", [ctx.make("Mul", [x, x]), x])
        inner = ctx.make("Mul", [ctx.make("Add", [x, ctx.make("Mul", [cube, ctx.const(0.044715, dt)])]),
                                 ctx.const(math.sqrt(2 / math.pi), dt)])
        gate = ctx.make("Tanh", [inner])
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        gate = ctx.make("Erf", [ctx.make("Div", [x, ctx.const(math.sqrt(2.0), dt)])])
    half = ctx.make("Mul", [x, ctx.const(0.5, dt)])
    ctx.make("Mul", [half, ctx.make("Add", [gate, ctx.const(1.0, dt)])], [_out(node)])


@converter("softmax", "log_softmax")
def _softmax(ctx, node, ins):
    ctx.make("Softmax" if node.op_type == "softmax" else "LogSoftmax", ins, [_out(node)],
             axis=int(node.res.attrs["axis"]))


@converter("safe_softmax")
def _safe_softmax(ctx, node, ins):
    """Softmax whose rows of only -inf give 0 (not NaN), as the kernel."""
    axis = int(node.res.attrs["axis"])
    dt = np_dtype(ctx, node.inputs[0])
    soft = ctx.make("Softmax", ins, axis=axis)
    m = reduce_axes(ctx, "ReduceMax", ins[0], [axis], True)
    empty = ctx.make("Equal", [m, ctx.const(-np.inf, dt)])
    ctx.make("Where", [empty, ctx.const(0, dt), soft], [_out(node)])


@converter("scaled_dot_product_attention")
def _scaled_dot_product_attention(ctx, node, ins):
    """softmax(q k^T scale + mask) v (Note [Fused attention] in ops/nn.py): MatMul, Mul, the mask as a bias,
    the safe softmax of ``safe_softmax``'s mapping (a row masked everywhere gives 0), MatMul; both outputs."""
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    q_shape, k_shape = ctx.meta(node.inputs[0]).shape, ctx.meta(node.inputs[1]).shape
    perm = [*range(len(k_shape) - 2), len(k_shape) - 1, len(k_shape) - 2]
    scores = ctx.make("Mul", [ctx.make("MatMul", [ins[0], ctx.make("Transpose", [ins[1]], perm=perm)]),
                              ctx.const(float(a["scale"]), dt)])
    if a["is_causal"]:
        tri = np.tri(q_shape[-2], k_shape[-2], dtype=np.bool_)
        scores = ctx.make("Add", [scores, ctx.const(np.where(tri, 0, -np.inf).astype(dt))])
    elif len(ins) == 4:
        mask = ins[3]
        if ctx.meta(node.inputs[3]).dtype.np_dtype == np.bool_:
            mask = ctx.make("Where", [mask, ctx.const(0, dt), ctx.const(-np.inf, dt)])
        scores = ctx.make("Add", [scores, mask])
    soft = ctx.make("Softmax", [scores], axis=-1)
    empty = ctx.make("Equal", [reduce_axes(ctx, "ReduceMax", scores, [len(q_shape) - 1], True), ctx.const(-np.inf, dt)])
    attn = ctx.make("Where", [empty, ctx.const(0, dt), soft], [node.outputs[1]])
    ctx.make("MatMul", [attn, ins[2]], [_out(node)])


# ---- linear algebra -------------------------------------------------------------------------------
@converter("matmul")
def _matmul(ctx, node, ins):
    ctx.make("MatMul", ins, [_out(node)])


@converter("linear")
def _linear(ctx, node, ins):
    w = ctx.make("Transpose", [ins[1]], perm=[1, 0]) if ctx.meta(node.inputs[1]).ndim == 2 else ins[1]
    if len(ins) == 2:
        ctx.make("MatMul", [ins[0], w], [_out(node)])
    else:
        ctx.make("Add", [ctx.make("MatMul", [ins[0], w]), ins[2]], [_out(node)])


@converter("baddbmm")
def _baddbmm(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.outputs[0])
    prod = ctx.make("Mul", [ctx.make("MatMul", ins[1:]), ctx.const(a["alpha"], dt)])
    ctx.make("Add", [ctx.make("Mul", [ins[0], ctx.const(a["beta"], dt)]), prod], [_out(node)])


@converter("einsum")
def _einsum(ctx, node, ins):
    ctx.make("Einsum", ins, [_out(node)], equation=node.res.attrs["equation"].replace(" ", ""))


# ---- convolution and pooling ----------------------------------------------------------------------
def _conv_attrs(a):
    return {"pads": list(a["padding_before"]) + list(a["padding_after"]), "strides": list(a["strides"]),
            "dilations": list(a["dilation_rate"]), "group": int(a["groups"])}


@converter("conv1d", "conv2d", "conv3d")
def _conv(ctx, node, ins):
    w = ctx.meta(node.inputs[1]).shape
    ctx.make("Conv", ins, [_out(node)], kernel_shape=list(w[2:]), **_conv_attrs(node.res.attrs))


@converter("conv_data_grad")
def _conv_transpose(ctx, node, ins):
    """A transposed convolution (``ConvTranspose*d`` captures the convolution's data gradient)."""
    a = node.res.attrs
    kernel = ctx.meta(node.inputs[1]).shape[2:]
    q = ctx.meta(node.inputs[0]).shape[2:]
    extra = [i - ((n - 1) * s + (k - 1) * d + 1 - b - e) for i, n, s, k, d, b, e in
             zip(a["input_size"], q, a["strides"], kernel, a["dilation_rate"], a["padding_before"], a["padding_after"])]
    ctx.make("ConvTranspose", ins, [_out(node)], kernel_shape=list(kernel), output_padding=extra,
             **_conv_attrs(a))


def _pool_pads(a, nd):
    pad = list(a["padding"]) or [0] * nd
    return pad + pad


@converter("max_pool1d", "max_pool2d", "max_pool3d")
def _max_pool(ctx, node, ins):
    a = node.res.attrs
    nd = len(a["kernel_size"])
    outputs = [_out(node)]
    if len(node.outputs) > 1 and node.outputs[1] in ctx.used:
        outputs.append(ctx.fresh("indices"))
    ctx.make("MaxPool", ins, outputs, kernel_shape=list(a["kernel_size"]),
             strides=list(a["stride"] or a["kernel_size"]), pads=_pool_pads(a, nd),
             dilations=list(a["dilation"] or [1] * nd), ceil_mode=int(a["ceil_mode"]))
    if len(outputs) > 1:
        plane_indices(ctx, node, outputs[1], node.outputs[1])


def plane_indices(ctx, node, flat, out):
    """ONNX's max pooling indices count over the whole input, oneflow_lite's (PyTorch's) within each plane:
    ``flat mod plane size``."""
    dims = ctx.captures.dims(node.inputs[0])[2:]
    if not all(f.static for f in dims):
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' ({node.op_type}): its indices with a "
                                       f"dynamic spatial axis have no ONNX mapping")
    ctx.make("Mod", [flat, ctx.const(int(np.prod([f.const for f in dims])), np.int64)], [out])


@converter("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(ctx, node, ins):
    a = node.res.attrs
    if a["divisor_override"]:
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' ({node.op_type}) with divisor_override "
                                       f"has no ONNX mapping")
    nd = len(a["kernel_size"])
    ctx.make("AveragePool", ins, [_out(node)], kernel_shape=list(a["kernel_size"]),
             strides=list(a["stride"] or a["kernel_size"]), pads=_pool_pads(a, nd), ceil_mode=int(a["ceil_mode"]),
             count_include_pad=int(a["count_include_pad"]))


# ---- normalization --------------------------------------------------------------------------------
@converter("batch_norm_elemt")
def _batch_norm(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    params = list(ins[3:])
    scale = params.pop(0) if a["scale"] else _channel_fill(ctx, node, ins[1], 1, dt)
    bias = params.pop(0) if a["center"] else _channel_fill(ctx, node, ins[1], 0, dt)
    ctx.make("BatchNormalization", [ins[0], scale, bias, ins[1], ins[2]], [_out(node)],
             epsilon=float(a["epsilon"]))


def _channel_fill(ctx, node, mean, value, dt):
    """A per-channel vector of ``value`` shaped as the mean: a constant, or ``ConstantOfShape`` when the channel
    count follows a dynamic axis (``instance_norm`` normalises N * C channels)."""
    (c,) = ctx.captures.dims(node.inputs[1])
    if c.static:
        return ctx.const(np.full(c.const, value, dt))
    return ctx.make("ConstantOfShape", [ctx.make("Shape", [mean])],
                    value=ctx.onnx.numpy_helper.from_array(np.full(1, value, dt)))


@converter("batch_norm_stats")
def _batch_norm_stats(ctx, node, ins):
    """The per-channel (dim 1) mean and biased variance (what ``instance_norm`` and a training-mode ``batch_norm``
    normalise with)."""
    ndim = ctx.meta(node.inputs[0]).ndim
    axes = [d for d in range(ndim) if d != 1]
    mean = reduce_axes(ctx, "ReduceMean", ins[0], axes, True)
    d = ctx.make("Sub", [ins[0], mean])
    reduce_axes(ctx, "ReduceMean", ctx.make("Mul", [d, d]), axes, False, node.outputs[1])
    ctx.make("Squeeze", [mean, ctx.const(axes, np.int64)], [node.outputs[0]])


@converter("layer_norm")
def _layer_norm(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    if any(lbn in ctx.used for lbn in node.outputs[1:]):
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' (layer_norm): its mean / inv_variance "
                                       f"outputs are used; only the normalized output has an ONNX mapping")
    x_shape = ctx.meta(node.inputs[0]).shape
    axis = int(a["begin_norm_axis"]) % max(len(x_shape), 1)
    norm_shape = x_shape[axis:]
    params = list(ins[1:])
    scale = params.pop(0) if a["scale"] else ctx.const(np.ones(norm_shape, dt))
    bias = params.pop(0) if a["center"] else ctx.const(np.zeros(norm_shape, dt))
    eps = float(a["epsilon"])
    if ctx.opset >= 17:
        ctx.make("LayerNormalization", [ins[0], scale, bias], [_out(node)], axis=axis, epsilon=eps)
        return
    axes = list(range(axis, len(x_shape)))
    mean = reduce_axes(ctx, "ReduceMean", ins[0], axes, True)
    d = ctx.make("Sub", [ins[0], mean])
    var = reduce_axes(ctx, "ReduceMean", ctx.make("Mul", [d, d]), axes, True)
    y = ctx.make("Div", [d, ctx.make("Sqrt", [ctx.make("Add", [var, ctx.const(eps, dt)])])])
    ctx.make("Add", [ctx.make("Mul", [y, scale]), bias], [_out(node)])


# ---- reductions -----------------------------------------------------------------------------------
def reduce_axes(ctx, op, x, axes, keepdims, out=None):
    """A Reduce* node over ``axes`` (an input from opset 18, or for ReduceSum from 13; an attribute before)."""
    outs = [out] if out else None
    if op == "ReduceSum" or ctx.opset >= 18:
        return ctx.make(op, [x, ctx.const(list(axes), np.int64)], outs, keepdims=int(keepdims))
    return ctx.make(op, [x], outs, axes=list(axes), keepdims=int(keepdims))


_REDUCE = {"reduce_sum": "ReduceSum", "reduce_mean": "ReduceMean", "reduce_max": "ReduceMax",
           "reduce_min": "ReduceMin", "reduce_prod": "ReduceProd"}


@converter(*_REDUCE)
def _reduce_op(ctx, node, ins):
    a = node.res.attrs
    axes = list(a["axis"])
    if not axes:
        ctx.make("Identity", ins, [_out(node)])
        return
    reduce_axes(ctx, _REDUCE[node.op_type], ins[0], axes, a["keepdims"], _out(node))


@converter("reduce_var", "reduce_std")
def _variance(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    shape = ctx.meta(node.inputs[0]).shape
    axes = list(a["axis"])
    dims = ctx.captures.dims(node.inputs[0])
    if any(not dims[i].static for i in axes):
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' ({node.op_type}) reduces a dynamic axis")
    n = int(np.prod([shape[i] for i in axes]))
    mean = reduce_axes(ctx, "ReduceMean", ins[0], axes, True)
    d = ctx.make("Sub", [ins[0], mean])
    total = reduce_axes(ctx, "ReduceSum", ctx.make("Mul", [d, d]), axes, a["keepdims"])
    var_out = _out(node) if node.op_type == "reduce_var" else None
    var = ctx.make("Div", [total, ctx.const(max(n - a["correction"], 0), dt)], [var_out] if var_out else None)
    if node.op_type == "reduce_std":
        ctx.make("Sqrt", [var], [_out(node)])


@converter("vector_norm")
def _vector_norm(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    axes, keep, p = list(a["axis"]), a["keepdims"], float(a["ord"])
    if p == 2.0:
        reduce_axes(ctx, "ReduceL2", ins[0], axes, keep, _out(node))
    elif p == 1.0:
        reduce_axes(ctx, "ReduceL1", ins[0], axes, keep, _out(node))
    elif p == math.inf:
        reduce_axes(ctx, "ReduceMax", ctx.make("Abs", ins), axes, keep, _out(node))
    else:
        powered = ctx.make("Pow", [ctx.make("Abs", ins), ctx.const(p, dt)])
        ctx.make("Pow", [reduce_axes(ctx, "ReduceSum", powered, axes, keep), ctx.const(1.0 / p, dt)], [_out(node)])


@converter("argmax", "argmin")
def _argmax(ctx, node, ins):
    a = node.res.attrs
    x = ins[0]
    if a["flatten"]:
        x, dim = ctx.make("Reshape", [x, ctx.const([-1], np.int64)]), 0
    else:
        dim = int(a["dim"])
    ctx.make("ArgMax" if node.op_type == "argmax" else "ArgMin", [x], [_out(node)], axis=dim,
             keepdims=int(a["keepdim"]))


@converter("reduce_max_dim", "reduce_min_dim")
def _reduce_dim(ctx, node, ins):
    a = node.res.attrs
    dim, keep = int(a["dim"]), a["keepdim"]
    op = "ReduceMax" if node.op_type == "reduce_max_dim" else "ReduceMin"
    reduce_axes(ctx, op, ins[0], [dim], keep, node.outputs[0])
    ctx.make("ArgMax" if op == "ReduceMax" else "ArgMin", ins, [node.outputs[1]], axis=dim, keepdims=int(keep),
             select_last_index=0)


@converter("cumsum")
def _cumsum(ctx, node, ins):
    if not ctx.meta(node.inputs[0]).ndim:
        ctx.make("Identity", ins, [_out(node)])
        return
    ctx.make("CumSum", [ins[0], ctx.const(int(node.res.attrs["dim"]), np.int64)], [_out(node)])


def _top(ctx, node, x, k, dim, largest, outputs):
    """ONNX's TopK (sorted; of equal values the lower index first, as the kernels' stable sort)."""
    ctx.make("TopK", [x, k], outputs, axis=int(dim), largest=int(largest), sorted=1)


@converter("topk")
def _topk(ctx, node, ins):
    a = node.res.attrs
    if not ctx.meta(node.inputs[0]).ndim:
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' (topk) of a 0-d tensor has no ONNX mapping")
    k = ctx.ints([ctx.captures.attr(node.name, "k")], f"attr 'k' of op '{node.name}'")
    _top(ctx, node, ins[0], k, a["dim"], a["largest"], list(node.outputs))


@converter("sort", "arg_sort")
def _sort(ctx, node, ins):
    a = node.res.attrs
    x_meta = ctx.meta(node.inputs[0])
    if not x_meta.ndim:
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' ({node.op_type}) of a 0-d tensor has no "
                                       f"ONNX mapping")
    dim = int(a["dim"]) % x_meta.ndim
    n = ctx.ints([ctx.captures.dims(node.inputs[0])[dim]], f"the sorted dim of '{node.name}'")
    outputs = list(node.outputs) if node.op_type == "sort" else [ctx.fresh("sorted"), _out(node)]
    _top(ctx, node, ins[0], n, dim, a["descending"], outputs)


# ---- shapes ---------------------------------------------------------------------------------------
@converter("reshape", "flatten", "view")
def _reshape(ctx, node, ins):
    ctx.make("Reshape", [ins[0], ctx.shape_of(node.outputs[0], minus_one_ok=True)], [_out(node)])


@converter("squeeze")
def _squeeze(ctx, node, ins):
    axes = list(node.res.attrs["axes"])
    if not axes:
        ctx.make("Identity", ins, [_out(node)])
    else:
        ctx.make("Squeeze", [ins[0], ctx.const(axes, np.int64)], [_out(node)])


@converter("expand_dims")
def _unsqueeze(ctx, node, ins):
    axis = int(node.res.attrs["axis"]) % ctx.meta(node.outputs[0]).ndim
    ctx.make("Unsqueeze", [ins[0], ctx.const([axis], np.int64)], [_out(node)])


@converter("transpose")
def _transpose(ctx, node, ins):
    ctx.make("Transpose", ins, [_out(node)], perm=list(ctx.static(node, "perm")))


@converter("repeat")
def _repeat(ctx, node, ins):
    """ONNX's Tile, after unsqueezing the leading dims the repeats add."""
    extra = len(node.res.attrs["repeats"]) - ctx.meta(node.inputs[0]).ndim
    x = ctx.make("Unsqueeze", [ins[0], ctx.const(list(range(extra)), np.int64)]) if extra else ins[0]
    ctx.make("Tile", [x, ctx.attr_ints(node, "repeats")], [_out(node)])


@converter("expand")
def _expand(ctx, node, ins):
    ctx.make("Expand", [ins[0], ctx.shape_of(node.outputs[0])], [_out(node)])


@converter("slice")
def _slice(ctx, node, ins):
    nd = len(node.res.attrs["start"])
    ctx.make("Slice", [ins[0], ctx.attr_ints(node, "start"), ctx.attr_ints(node, "stop"),
                       ctx.const(list(range(nd)), np.int64), ctx.attr_ints(node, "step")], [_out(node)])


@converter("cat")
def _cat(ctx, node, ins):
    ctx.make("Concat", ins, [_out(node)], axis=int(node.res.attrs["axis"]))


@converter("stack")
def _stack(ctx, node, ins):
    axis = int(node.res.attrs["axis"])
    parts = [ctx.make("Unsqueeze", [v, ctx.const([axis], np.int64)]) for v in ins]
    ctx.make("Concat", parts, [_out(node)], axis=axis)


@converter("split")
def _split(ctx, node, ins):
    axis = int(node.res.attrs["axis"])
    sizes = [ctx.captures.dims(lbn)[axis] for lbn in node.outputs]
    ctx.make("Split", [ins[0], ctx.ints(sizes, f"the split sizes of '{node.name}'")], list(node.outputs), axis=axis)


@converter("unbind")
def _unbind(ctx, node, ins):
    axis = int(node.res.attrs["axis"])
    n = len(node.outputs)
    parts = ctx.make("Split", [ins[0], ctx.const([1] * n, np.int64)], n, axis=axis)
    for part, lbn in zip(parts if n > 1 else [parts], node.outputs):
        ctx.make("Squeeze", [part, ctx.const([axis], np.int64)], [lbn])


@converter("embedding")
def _embedding(ctx, node, ins):
    ctx.make("Gather", ins, [_out(node)], axis=0)


@converter("index_select")
def _index_select(ctx, node, ins):
    ctx.make("Gather", ins, [_out(node)], axis=int(node.res.attrs["dim"]))


@converter("tril", "triu")
def _trilu(ctx, node, ins):
    ctx.make("Trilu", [ins[0], ctx.const(int(node.res.attrs["diagonal"]), np.int64)], [_out(node)],
             upper=int(node.op_type == "triu"))


@converter("dropout")
def _dropout(ctx, node, ins):
    """A dropout captured in training mode: its mask applied (an exported graph normally has none)."""
    dt = np_dtype(ctx, node.inputs[0])
    mask = ctx.make("Cast", [ins[1]], to=ctx.onnx_dtype(np.dtype(dt)))
    ctx.make("Mul", [ctx.make("Mul", [ins[0], mask]), ctx.const(node.res.attrs["scale"], dt)], [_out(node)])


# ---- sources --------------------------------------------------------------------------------------
@converter("constant")
def _constant(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.outputs[0])
    value = a["floating_value"] if a["is_floating_value"] else a["integer_value"]
    dims = ctx.captures.dims(node.outputs[0])
    if all(f.static for f in dims):
        ctx.make("Identity", [ctx.const(np.full([f.const for f in dims], value, dt))], [_out(node)])
        return
    fill = ctx.onnx.numpy_helper.from_array(np.array([value], dt))
    ctx.make("ConstantOfShape", [ctx.shape_of(node.outputs[0])], [_out(node)], value=fill)


@converter("arange")
def _arange(ctx, node, ins):
    a, dt = node.res.attrs, np_dtype(ctx, node.outputs[0])
    if a["is_floating_range"]:
        start, delta = a["float_start"], a["float_delta"]
    else:
        start, delta = a["integer_start"], a["integer_delta"]
    n = ctx.meta(node.outputs[0]).shape[0]
    ctx.make("Identity", [ctx.const(start + delta * np.arange(n), dt)], [_out(node)])


@converter("attn_mask_bias")
def _attn_mask_bias(ctx, node, ins):
    """0 where attention is allowed (by the bool mask and / or below the causal diagonal), -inf elsewhere."""
    causal, dt = ctx.static(node, "causal_shape"), np_dtype(ctx, node.outputs[0])
    tri = np.tri(causal[0], causal[1], dtype=np.bool_) if causal else None
    if not ins:
        ctx.make("Identity", [ctx.const(np.where(tri, 0, -np.inf).astype(dt))], [_out(node)])
        return
    allowed = ins[0] if tri is None else ctx.make("And", [ins[0], ctx.const(tri)])
    ctx.make("Where", [allowed, ctx.const(0, dt), ctx.const(-np.inf, dt)], [_out(node)])
