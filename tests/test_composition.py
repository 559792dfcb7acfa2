"""The interpreters compose (issue [ext] item 7): profiler over autocast over vmap over autograd in one program.

Each concern is an interpreter at its own key (Note [Dispatch key order]): Autocast casts the logical op's
inputs (the casts are recorded by Autograd below it), Autograd records the logical (per-sample) ops,
Batched runs each op on the whole batch. Per-sample gradients of an MLP computed that way equal the plain
float32 computation (a loop over the samples, no autocast, no vmap) within float16 tolerance.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

import oneflow_lite as flow
from oneflow_lite.dispatch import tls
from oneflow_lite.interpreters import batched as batched_interp

F = flow.nn.functional
nn = flow.nn


def _mlp_and_data(n):
    from oneflow_lite.utils.data.datasets import digits

    flow.manual_seed(0)
    data = digits(train=True, flatten=True)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return model, data.tensors[0][:n], data.tensors[1][:n]


def test_autocast_over_vmap_over_autograd_equals_the_plain_computation():
    model, xs, ys = _mlp_and_data(16)
    params = {k: v.detach() for k, v in model.named_parameters()}
    seen = {}

    def loss(p, x, y):
        logits = flow.func.functional_call(model, p, (x[None],))
        seen["logits"], seen["loss"] = logits.dtype, None
        out = F.cross_entropy(logits, y[None])
        seen["loss"] = out.dtype
        return out

    # ---- PROFILER LAYER (issue [ext] item 7) ---------------------------------------------------------------
    # The profiler is the outermost key (it times each call with everything below it): when this build has
    # flow.profiler, the whole computation runs under it and its events must name the ops run here.
    profiler = getattr(flow, "profiler", None)
    profiling = profiler.profile() if profiler is not None else contextlib.nullcontext()
    # -----------------------------------------------------------------------------------------------------------
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every op has a batch rule: nothing runs once per sample
        with profiling, flow.autocast("cpu", dtype=flow.float16):  # profiler > autocast > vmap > grad
            grads = flow.vmap(flow.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    if profiler is not None:
        names = {e.key for e in profiling.key_averages()}
        assert {"cast", "linear", "relu", "log_softmax", "nll", "nll_grad", "matmul"} <= names, sorted(names)
    assert seen == {"logits": flow.float16, "loss": flow.float32}
    assert tls.included() == 0 and batched_interp.active_levels() == []

    for i in range(len(xs)):  # the plain computation: float32, one sample at a time, Tensor.backward
        model.zero_grad()
        F.cross_entropy(model(xs[i:i + 1]), ys[i:i + 1]).backward()
        for name, p in model.named_parameters():
            g = grads[name]
            assert g.dtype is flow.float32 and g.shape == (len(xs), *p.shape)  # float32 parameters, float32 grads
            expected = p.grad.numpy()
            scale = max(np.abs(expected).max(), 1e-3)
            np.testing.assert_allclose(g.numpy()[i], expected, rtol=0, atol=2e-2 * scale, err_msg=f"{name} {i}")


def test_autocast_over_vmap_equals_autocast_per_sample():
    model, xs, ys = _mlp_and_data(8)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        return F.cross_entropy(flow.func.functional_call(model, p, (x[None],)), y[None])

    with flow.autocast("cpu", dtype=flow.float16):
        batched = flow.vmap(flow.func.grad_and_value(loss), in_dims=(None, 0, 0))(params, xs, ys)
        per_sample = [flow.func.grad_and_value(loss)(params, xs[i], ys[i]) for i in range(len(xs))]
    grads, values = batched
    np.testing.assert_allclose(values.numpy(), [v.item() for _, v in per_sample], rtol=2e-3, atol=2e-3)
    for name in params:
        expected = np.stack([g[name].numpy() for g, _ in per_sample])
        np.testing.assert_allclose(grads[name].numpy(), expected, rtol=1e-2, atol=1e-3, err_msg=name)
