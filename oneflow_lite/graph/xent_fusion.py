"""The softmax cross-entropy fusion pass (``graph.config.allow_fuse_softmax_cross_entropy``) and its two ops.

Note [Fused softmax cross-entropy]
``cross_entropy(x, t)`` captures as ``log_softmax`` then ``nll`` (reduction "mean" or "sum", no class weight), and
its backward as ``nll_grad`` then ``log_softmax_grad``: four kernels of several NumPy passes each, 29 us for the
(64, 10) logits of the W5 step against 5 us for all of it in one loop. When the log-probabilities are read by
nothing but that ``nll`` (and that ``log_softmax_grad``, whose other input is the ``nll_grad`` of the same target
and attrs), this pass makes the forward pair one ``fused_softmax_cross_entropy`` op (the loss, and the softmax
the backward needs, in one pass per row) and the backward pair one ``fused_softmax_cross_entropy_grad`` (``(p -
onehot(t)) * dy / count`` per row, 0 on ignored rows), both compiled by numba (graph/jit.py; without numba the
pass changes nothing). Targets equal to ``ignore_index`` are skipped as ``nll`` skips them; a target out of range
raises ``nll``'s IndexError. The exponentials and sums round differently from NumPy's passes: the loss and the
gradients agree with the unfused graph to a few float32 ulp, not bit for bit.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.graph import jit
from oneflow_lite.graph.ir import JobIR
from oneflow_lite.graph.passes import _rebuilt

_KERNELS = '''# The fused softmax cross-entropy kernels of oneflow_lite (graph/xent_fusion.py): do not edit.
import math

import numba


@numba.njit(error_model="numpy", cache=True)
def forward(x, t, ignore_index, mean, prob, loss):
    """prob = softmax(x) per row; loss[0] = the summed (mean: averaged) -log prob[i, t[i]]; -1, else a bad row."""
    n, c = x.shape
    total, count = 0.0, 0
    for i in range(n):
        m = x[i, 0]
        for j in range(1, c):
            v = x[i, j]
            if v > m or v != v:
                m = v
        s = math.exp(x[i, 0] - m)
        prob[i, 0] = s
        for j in range(1, c):
            e = math.exp(x[i, j] - m)
            prob[i, j] = e
            s += e
        for j in range(c):
            prob[i, j] /= s
        k = t[i]
        if k == ignore_index:
            continue
        if k < 0 or k >= c:
            return i
        total += math.log(s) - (x[i, k] - m)
        count += 1
    loss[0] = total / count if mean else total
    return -1


@numba.njit(error_model="numpy", cache=True)
def backward(dy, prob, t, ignore_index, mean, dx):
    n, c = prob.shape
    count = 0
    for i in range(n):
        if t[i] != ignore_index:
            count += 1
    g = dy / count if mean else dy
    for i in range(n):
        k = t[i]
        for j in range(c):
            dx[i, j] = 0.0 if k == ignore_index else prob[i, j] * g
        if k != ignore_index:
            dx[i, k] -= g
'''
_module: list = []  # [the loaded kernel module]


def _kernels():
    if not _module:
        _module.append(jit.load_source(_KERNELS)[1])
    return _module[0]


# ---- the ops ---------------------------------------------------------------------------------------
_ATTRS = {"ignore_index": ("int64", -100), "reduction": ("string", "mean")}
register_user_op("fused_softmax_cross_entropy", inputs=["x", "target"], outputs=["loss", "prob"], attrs=_ATTRS,
                 no_grad=True, infer_shape=lambda ctx: [(), ctx.shape("x")],
                 infer_dtype=lambda ctx: [ctx.dtype("x"), ctx.dtype("x")])
register_user_op("fused_softmax_cross_entropy_grad", inputs=["dy", "prob", "target"], outputs=["dx"], attrs=_ATTRS,
                 no_grad=True, infer_shape=lambda ctx: ctx.shape("prob"), infer_dtype=lambda ctx: ctx.dtype("prob"))


def _forward_cpu(ctx, x, target):
    a = ctx.attrs
    prob, loss = np.empty(x.shape, x.dtype), np.empty(1, np.float64)
    bad = _kernels().forward(x, target, a["ignore_index"], a["reduction"] == "mean", prob, loss)
    if bad >= 0:
        raise IndexError(f"nll_loss: Target {int(target[bad])} is out of bounds.")
    return np.asarray(loss[0], x.dtype), prob


def _backward_cpu(ctx, dy, prob, target):
    a = ctx.attrs
    dx = np.empty(prob.shape, prob.dtype)
    _kernels().backward(float(dy), prob, target, a["ignore_index"], a["reduction"] == "mean", dx)
    return dx


DISPATCHER.register_kernel("fused_softmax_cross_entropy", "cpu", _forward_cpu, name="fused_softmax_cross_entropy_cpu")
DISPATCHER.register_kernel("fused_softmax_cross_entropy_grad", "cpu", _backward_cpu,
                           name="fused_softmax_cross_entropy_grad_cpu")


# ---- the pass --------------------------------------------------------------------------------------
def _pattern(ir: JobIR, n, uses: dict, producers: dict):
    """``(nll, nll_grad, log_softmax_grad)`` when ``log_softmax`` node ``n`` starts the pattern (the last two None in
    a graph without backward), else None (Note [Fused softmax cross-entropy])."""
    x, y = n.inputs[0], n.outputs[0]
    meta = ir.metas[x]
    if (len(meta.shape) != 2 or not meta.shape[1] or meta.dtype.name not in ("float32", "float64") or n.res.attrs["axis"] not in (1, -1)
            or n.device.type != "cpu"):
        return None
    readers = uses.get(y, [])
    nll = [u for u in readers if u.op_type == "nll" and u.inputs[0] == y and len(u.inputs) == 2]
    grads = [u for u in readers if u.op_type == "log_softmax_grad" and u.inputs[0] == y]
    if len(nll) != 1 or len(readers) != 1 + len(grads) or len(grads) > 1 or nll[0].res.attrs["reduction"] == "none":
        return None
    if not grads:
        return nll[0], None, None
    ng = producers.get(grads[0].inputs[1])
    if (ng is None or ng.op_type != "nll_grad" or len(ng.inputs) != 2 or ng.inputs[1] != nll[0].inputs[1]
            or any(ng.res.attrs[a] != nll[0].res.attrs[a] for a in _ATTRS) or uses.get(ng.outputs[0]) != [grads[0]]):
        return None
    return nll[0], ng, grads[0]


def fuse_softmax_cross_entropy(ir: JobIR) -> str:
    """Note [Fused softmax cross-entropy]."""
    uses, producers = ir.consumers(), ir.producers()
    found = [(n, p) for n in ir.nodes if n.kind == "user" and n.op_type == "log_softmax"
             for p in [_pattern(ir, n, uses, producers)] if p is not None]
    if not found:
        return "fuse softmax cross-entropy: nothing to fuse"
    if not jit.numba_available():
        return f"fuse softmax cross-entropy: numba is not installed, {len(found)} cross-entropy(s) left unfused"
    index, dead = {n.name: i for i, n in enumerate(ir.nodes)}, set()
    for ls, (nll, ng, lsg) in found:
        attrs = {"ignore_index": nll.res.attrs["ignore_index"], "reduction": nll.res.attrs["reduction"]}
        prob = f"{nll.name}/prob_0"
        ir.nodes[index[nll.name]] = _rebuilt(ir, nll, "fused_softmax_cross_entropy",
                                             {"x": ls.inputs[0], "target": nll.inputs[1]},
                                             {"loss": nll.outputs[0], "prob": prob}, attrs)
        dead.add(ls.name)
        if lsg is not None:
            ir.nodes[index[lsg.name]] = _rebuilt(ir, lsg, "fused_softmax_cross_entropy_grad",
                                                 {"dy": ng.inputs[0], "prob": prob, "target": nll.inputs[1]},
                                                 {"dx": lsg.outputs[0]}, attrs)
            dead.add(ng.name)
    ir.remove(dead)
    return f"fuse softmax cross-entropy: {len(found)} log_softmax + nll (and their grads) fused"
