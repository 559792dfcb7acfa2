"""ONNX mappings of the loss ops (registered as onnx/ops.py's are): the elementwise losses (their formulas, as
the CPU kernels compute them; the reduction is a separate op), ``nll`` (NegativeLogLikelihoodLoss), the
``nll_smooth`` (cross_entropy's label smoothing term), the ``dim_gather`` / ``dim_scatter_*`` the margin losses use
(GatherElements / ScatterElements) and ``cumprod`` (a running product over slices)."""

from __future__ import annotations

import numpy as np

from oneflow_lite.onnx.exporter import UnsupportedOperatorError
from oneflow_lite.onnx.ops import converter, np_dtype, reduce_axes


def _out(node):
    return node.outputs[0]


@converter("mse_loss")
def _mse(ctx, node, ins):
    d = ctx.make("Sub", ins[:2])
    ctx.make("Mul", [d, d], [_out(node)])


@converter("l1_loss")
def _l1(ctx, node, ins):
    ctx.make("Abs", [ctx.make("Sub", ins[:2])], [_out(node)])


@converter("smooth_l1_loss", "huber_loss")
def _smooth_l1_huber(ctx, node, ins):
    """smooth_l1: ``0.5 d^2 / beta`` below ``beta``, else ``|d| - 0.5 beta``; huber: ``0.5 d^2`` below ``delta``,
    else ``delta (|d| - 0.5 delta)``."""
    dt = np_dtype(ctx, node.inputs[0])
    d = ctx.make("Sub", ins[:2])
    ad = ctx.make("Abs", [d])
    huber = node.op_type == "huber_loss"
    limit = float(node.res.attrs["delta" if huber else "beta"])
    if not huber and limit == 0:
        ctx.make("Identity", [ad], [_out(node)])
        return
    square = ctx.make("Mul", [ctx.make("Mul", [d, d]), ctx.const(0.5 if huber else 0.5 / limit, dt)])
    below = ctx.make("Less", [ad, ctx.const(limit, dt)])
    linear = ctx.make("Sub", [ad, ctx.const(0.5 * limit, dt)])
    if huber:
        linear = ctx.make("Mul", [linear, ctx.const(limit, dt)])
    ctx.make("Where", [below, square, linear], [_out(node)])


@converter("kl_div_loss")
def _kl_div(ctx, node, ins):
    """``exp(t) (t - x)`` for a log target, else ``xlogy(t, t) - t x``."""
    x, t = ins[:2]
    if node.res.attrs["log_target"]:
        ctx.make("Mul", [ctx.make("Exp", [t]), ctx.make("Sub", [t, x])], [_out(node)])
        return
    dt = np_dtype(ctx, node.inputs[1])
    zero = ctx.const(0, dt)
    t_log_t = ctx.make("Where", [ctx.make("Equal", [t, zero]), zero, ctx.make("Mul", [t, ctx.make("Log", [t])])])
    ctx.make("Sub", [t_log_t, ctx.make("Mul", [t, x])], [_out(node)])


@converter("binary_cross_entropy")
def _bce(ctx, node, ins):
    """``-(t log x + (1 - t) log(1 - x))``, each log clamped to >= -100 (the kernel's range check is not
    exported)."""
    x, t = ins[:2]
    dt = np_dtype(ctx, node.inputs[0])
    one, floor = ctx.const(1, dt), ctx.const(-100, dt)
    log_x = ctx.make("Max", [ctx.make("Log", [x]), floor])
    log_1mx = ctx.make("Max", [ctx.make("Log", [ctx.make("Sub", [one, x])]), floor])
    total = ctx.make("Add", [ctx.make("Mul", [t, log_x]), ctx.make("Mul", [ctx.make("Sub", [one, t]), log_1mx])])
    ctx.make("Neg", [total], [_out(node)])


@converter("binary_cross_entropy_with_logits")
def _bce_logits(ctx, node, ins):
    """``(1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)``."""
    x, t = ins[:2]
    dt = np_dtype(ctx, node.inputs[0])
    one = ctx.const(1, dt)
    soft = ctx.make("Softplus", [ctx.make("Neg", [x])])
    if len(ins) > 2:
        soft = ctx.make("Mul", [ctx.make("Add", [one, ctx.make("Mul", [ctx.make("Sub", [ins[2], one]), t])]), soft])
    ctx.make("Add", [ctx.make("Mul", [ctx.make("Sub", [one, t]), x]), soft], [_out(node)])


@converter("nll")
def _nll(ctx, node, ins):
    """ONNX's NegativeLogLikelihoodLoss (same reductions, ignore_index and class weights); a (C,) input is a
    batch of one."""
    a = node.res.attrs
    x, t = ins[:2]
    single = ctx.meta(node.inputs[0]).ndim == 1
    x, t = _batch_of_one(ctx, node, x, t)
    if np_dtype(ctx, node.inputs[1]) != np.int64:
        t = ctx.make("Cast", [t], to=ctx.onnx_dtype(np.int64))
    reduction = a["reduction"]
    out = ctx.fresh("nll") if single and reduction == "none" else _out(node)
    ctx.make("NegativeLogLikelihoodLoss", [x, t] + list(ins[2:]), [out], reduction=reduction,
             ignore_index=int(a["ignore_index"]))
    if out != _out(node):
        ctx.make("Squeeze", [out, ctx.const([0], np.int64)], [_out(node)])


def _batch_of_one(ctx, node, x, t):
    """A (C,) input and its 0-d target as a batch of one."""
    if ctx.meta(node.inputs[0]).ndim != 1:
        return x, t
    zero = ctx.const([0], np.int64)
    return ctx.make("Unsqueeze", [x, zero]), ctx.make("Unsqueeze", [t, zero])


@converter("nll_smooth")
def _nll_smooth(ctx, node, ins):
    """``-sum_c w[c] x[n, c]`` per sample (0 where the target is ``ignore_index``), reduced as ``nll``: "mean"
    divides by the weight of the targets."""
    a, dt = node.res.attrs, np_dtype(ctx, node.inputs[0])
    x, t = _batch_of_one(ctx, node, *ins[:2])
    ndim = max(ctx.meta(node.inputs[0]).ndim, 2)
    if len(ins) > 2:
        channel = ctx.const([1, -1] + [1] * (ndim - 2), np.int64)
        x = ctx.make("Mul", [x, ctx.make("Reshape", [ins[2], channel])])
    valid = ctx.make("Not", [ctx.make("Equal", [t, ctx.const(int(a["ignore_index"]), np_dtype(ctx, node.inputs[1]))])])
    zero = ctx.const(0, dt)
    per_sample = ctx.make("Where", [valid, ctx.make("Neg", [reduce_axes(ctx, "ReduceSum", x, [1], False)]), zero])
    if a["reduction"] == "none":
        if ctx.meta(node.inputs[0]).ndim == 1:
            ctx.make("Squeeze", [per_sample, ctx.const([0], np.int64)], [_out(node)])
        else:
            ctx.make("Identity", [per_sample], [_out(node)])
        return
    axes = list(range(ndim - 1))
    total = reduce_axes(ctx, "ReduceSum", per_sample, axes, False)
    if a["reduction"] == "sum":
        ctx.make("Identity", [total], [_out(node)])
        return
    if len(ins) > 2:
        safe = ctx.make("Where", [valid, t, ctx.const(0, np_dtype(ctx, node.inputs[1]))])
        weights = ctx.make("Where", [valid, ctx.make("Gather", [ins[2], safe]), zero])
    else:
        weights = ctx.make("Cast", [valid], to=ctx.onnx_dtype(dt))
    ctx.make("Div", [total, reduce_axes(ctx, "ReduceSum", weights, axes, False)], [_out(node)])


@converter("dim_gather")
def _dim_gather(ctx, node, ins):
    ctx.make("GatherElements", ins, [_out(node)], axis=int(node.res.attrs["dim"]))


@converter("cumprod")
def _cumprod(ctx, node, ins):
    """A running product: one slice per position along ``dim`` (whose size must be static), concatenated."""
    x_meta = ctx.meta(node.inputs[0])
    if not x_meta.ndim:
        ctx.make("Identity", ins, [_out(node)])
        return
    dim = int(node.res.attrs["dim"]) % x_meta.ndim
    size = ctx.captures.dims(node.inputs[0])[dim]
    if not size.static:
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' (cumprod) along a dynamic axis has no "
                                       f"ONNX mapping")
    axis = ctx.const([dim], np.int64)
    running, parts = None, []
    for i in range(size.const):
        piece = ctx.make("Slice", [ins[0], ctx.const([i], np.int64), ctx.const([i + 1], np.int64), axis])
        running = piece if running is None else ctx.make("Mul", [running, piece])
        parts.append(running)
    if parts:
        ctx.make("Concat", parts, [_out(node)], axis=dim)
    else:  # an empty axis
        ctx.make("Identity", ins, [_out(node)])


_SCATTER_REDUCTIONS = {"dim_scatter_update": "none", "dim_scatter_add": "add", "dim_scatter_mul": "mul"}


@converter(*_SCATTER_REDUCTIONS)
def _dim_scatter(ctx, node, ins):
    """ONNX's ScatterElements (with ``reduction`` from opset 16); a ``src`` larger than the index is sliced to it."""
    reduction = _SCATTER_REDUCTIONS[node.op_type]
    if reduction != "none" and ctx.opset < 16:
        raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' ({node.op_type}) needs ScatterElements' "
                                       f"reduction, from opset_version 16 (got {ctx.opset})")
    src = ins[2]
    index_dims, src_dims = ctx.captures.dims(node.inputs[1]), ctx.captures.dims(node.inputs[2])
    if [(f.const, f.coefs) for f in index_dims] != [(f.const, f.coefs) for f in src_dims]:
        if not all(f.static for f in index_dims):
            raise UnsupportedOperatorError(f"flow.onnx.export: op '{node.name}' ({node.op_type}): a src larger than "
                                           f"a dynamic index has no ONNX mapping")
        n = len(index_dims)
        src = ctx.make("Slice", [src, ctx.const([0] * n, np.int64), ctx.const([f.const for f in index_dims], np.int64),
                                 ctx.const(list(range(n)), np.int64)])
    attrs = {"reduction": reduction} if reduction != "none" else {}
    ctx.make("ScatterElements", [ins[0], ins[1], src], [_out(node)], axis=int(node.res.attrs["dim"]), **attrs)
