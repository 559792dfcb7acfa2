"""The interpreters compose (issue [ext] item 7): profiler over autocast over vmap over autograd in one program,
and the same stack captured by an nn.Graph with AMP (issue [graph2]), with a grad scaler training through vmap.

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


# ---- nn.Graph + autocast (issue [graph2]'s AMP over the same stack) ----------------------------------------------------
def test_profiler_over_a_graph_with_amp_over_vmap_over_autograd_equals_eager():
    """profiler > nn.Graph (enable_amp: build() captured under float16 autocast) > vmap > grad: the captured job
    holds the casts and the batched per-sample ops; its runs equal the eager composition bit for bit, and the
    profiler sees each graph run and the ops of its capture."""
    model, xs, ys = _mlp_and_data(16)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        return F.cross_entropy(flow.func.functional_call(model, p, (x[None],)), y[None])

    class PerSampleGrads(nn.Graph):
        def __init__(self):
            super().__init__()
            self.config.enable_amp(True)

        def build(self, xs, ys):
            return flow.vmap(flow.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)

    g = PerSampleGrads()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing runs once per sample
        with flow.profiler.profile() as prof:
            grads = g(xs, ys)
            again = g(xs, ys)
    with flow.autocast("cpu", dtype=flow.float16):
        eager = flow.vmap(flow.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    for name, p in params.items():
        assert grads[name].dtype is flow.float32 and grads[name].shape == (16, *p.shape)
        np.testing.assert_array_equal(grads[name].numpy(), eager[name].numpy(), err_msg=name)
        np.testing.assert_array_equal(again[name].numpy(), eager[name].numpy(), err_msg=name)
    events = {e.key: e.count for e in prof.key_averages()}
    assert events[f"nn.Graph: {g.name}"] == 2
    assert {"cast", "linear", "relu", "log_softmax", "nll", "nll_grad", "matmul"} <= set(events), sorted(events)
    ops = [op.user_conf.op_type_name for op in g.captured_job.net.op if op.user_conf.op_type_name]
    assert "cast" in ops and "linear" in ops
    assert tls.included() == 0 and batched_interp.active_levels() == []


def test_a_graph_with_amp_and_a_grad_scaler_trains_through_vmap_as_eager():
    """profiler > nn.Graph (enable_amp + GradScaler) > vmap > autograd: the loss is the mean of vmapped per-sample
    losses and ``loss.backward()`` in build() differentiates through vmap's outputs into the parameters (Note
    [Gradients through vmap's outputs]) from the scaled root grad (Note [Graph AMP]). Step by step equal to the
    eager loop: autocast, vmap, ``scaler.scale(loss).backward()``, ``scaler.step``, ``scaler.update``."""
    import copy

    from oneflow_lite.optim.optimizer import fused_updates

    model, xs, ys = _mlp_and_data(64)
    reference = copy.deepcopy(model)
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    eager_opt = flow.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    scaler, eager_scaler = (flow.amp.GradScaler("cpu", growth_interval=2) for _ in range(2))

    def per_sample(m):
        return lambda x, y: F.cross_entropy(m(x[None]), y[None])

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)
            self.config.enable_amp(True)
            self.set_grad_scaler(scaler)

        def build(self, xs, ys):
            loss = flow.vmap(per_sample(self.model))(xs, ys).mean()
            loss.backward()
            return loss

    g = Train()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with flow.profiler.profile() as prof:
            for i in range(4):
                x, y = xs[16 * i:16 * (i + 1)], ys[16 * i:16 * (i + 1)]
                loss = g(x, y)
                eager_opt.zero_grad()
                with flow.autocast("cpu", dtype=flow.float16):
                    eager_loss = flow.vmap(per_sample(reference))(x, y).mean()
                eager_scaler.scale(eager_loss).backward()
                with fused_updates(False):  # the graph's step is captured op by op (Note [Graph AMP])
                    eager_scaler.step(eager_opt)
                eager_scaler.update()
                assert loss.item() == eager_loss.item()
                assert scaler.get_scale() == eager_scaler.get_scale()
                for p, q in zip(model.parameters(), reference.parameters()):
                    np.testing.assert_array_equal(p.numpy(), q.numpy())
    assert scaler.get_scale() == 2.0 ** 18  # 2 ** 16, grown twice
    events = {e.key for e in prof.key_averages()}
    assert {f"nn.Graph: {g.name}", "multi_count_not_finite", "dynamic_loss_scale_schedule"} <= events
