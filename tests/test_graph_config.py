"""graph.config: gradient accumulation (against eager accumulation over the same micro-batches), activation
checkpointing (same results, lower peak memory), and OneFlow's fusion switches (each on and off, bit-equal)."""

import tracemalloc

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.nn.graph import GraphModule

F = nn.functional


def _mlp(seed):
    flow.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3)).double()


def _data(steps, batch=8, seed=0):
    rng = np.random.default_rng(seed)
    return [(flow.tensor(rng.standard_normal((batch, 6))), flow.tensor(rng.integers(0, 3, batch)))
            for _ in range(steps)]


class AccGraph(nn.Graph):
    def __init__(self, model, opt, steps):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        self.config.set_gradient_accumulation_steps(steps)

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss, self.model(x).argmax(1)


# ---- gradient accumulation --------------------------------------------------------------------------
@pytest.mark.parametrize("make_opt", [lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9),
                                      lambda p: flow.optim.Adam(p, lr=0.01)], ids=["sgd", "adam"])
def test_gradient_accumulation_equals_eager_accumulation_over_the_micro_batches(make_opt):
    eager, graphed = _mlp(0), _mlp(0)
    eager_opt, graph_opt = make_opt(eager.parameters()), make_opt(graphed.parameters())
    g = AccGraph(graphed, graph_opt, 4)
    for x, y in _data(3):
        eager_opt.zero_grad()
        losses, preds = [], []
        for xs, ys in zip(x.chunk(4), y.chunk(4)):
            loss = F.cross_entropy(eager(xs), ys)
            loss.backward()  # gradients summed over the micro-batches, one step after
            losses.append(loss.item())
            preds.append(eager(xs).argmax(1).numpy())
        eager_opt.step()
        loss, pred = g(x, y)
        assert loss.shape == (4,) and pred.shape == (8,)  # a scalar output packs to one value per micro-batch
        np.testing.assert_array_equal(loss.numpy(), losses)
        np.testing.assert_array_equal(pred.numpy(), np.concatenate(preds))
    for (name, p), (_, q) in zip(eager.named_parameters(), graphed.named_parameters()):
        # (a captured Adam step keeps its bias corrections as tensors: the last bits may differ from eager's)
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-12, atol=1e-15, err_msg=name)
    types = [op.user_conf.op_type_name for op in g.captured_job.net.op if op.HasField("user_conf")]
    assert types.count("split") == 2 and "stack" in types and "cat" in types


def test_gradient_accumulation_errors_and_recapture():
    g = AccGraph(_mlp(0), flow.optim.SGD(_mlp(0).parameters(), lr=0.1), 3)
    x, y = _data(1)[0]
    with pytest.raises(ValueError, match=rf"nn.Graph '{g.name}': gradient accumulation over 3 micro-batches splits "
                                         r"every input along dimension 0, but input '0' has shape \[8, 6\]: its first "
                                         r"dimension must be a multiple of 3"):
        g(x, y)
    assert g._entries == {}
    g.config.set_gradient_accumulation_steps(2)
    assert g(x, y)[0].shape == (2,)
    g.config.set_gradient_accumulation_steps(1)  # a capture option: the graph is captured again
    assert g._entries == {} and g(x, y)[0].shape == ()
    with pytest.raises(ValueError, match=r"set_gradient_accumulation_steps\(\): value must be an int >= 1, got 0"):
        g.config.set_gradient_accumulation_steps(0)
    assert g.config.training and "gradient_accumulation_steps=1" in repr(g.config)


# ---- activation checkpointing ---------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(self.drop(self.act(self.fc1(x))))


def _deep(seed, d=32, n=4):
    flow.manual_seed(seed)
    return nn.Sequential(*[Block(d) for _ in range(n)], nn.Linear(d, 1))


class CkptGraph(nn.Graph):
    def __init__(self, model, mode):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.01))
        for i in range(4):
            if mode == "graph_module":
                self.model[i].to(GraphModule).activation_checkpointing = True
            elif mode == "config":  # OneFlow 0.9's spelling
                self.model[i].config.activation_checkpointing = True

    def build(self, x, y):
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss


def _peak_bytes(g, x, y):
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        g(x, y)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_activation_checkpointing_recomputes_blocks_with_equal_results_and_lower_peak_memory():
    x, y = flow.randn(128, 32), flow.randn(128, 1)
    results, peaks, graphs = {}, {}, {}
    for mode in ("off", "graph_module", "config"):
        model = _deep(0)
        g = graphs[mode] = CkptGraph(model, mode)
        flow.manual_seed(3)  # the dropout masks: drawn once per run, never recomputed
        losses = [g(x, y).numpy() for _ in range(3)]
        results[mode] = (losses, [p.numpy() for p in model.parameters()])
        peaks[mode] = _peak_bytes(g, x, y)
    for mode in ("graph_module", "config"):
        for a, b in zip(results["off"][0] + results["off"][1], results[mode][0] + results[mode][1]):
            np.testing.assert_array_equal(a, b)
        assert peaks[mode] < 0.9 * peaks["off"], peaks
        assert any("activation checkpointing: 12 op(s) of 4 module call(s) recomputed" in r
                   for r in graphs[mode]._last.reports)
        ops = [op.name for op in graphs[mode].job.net.op]
        assert "Sys-Checkpointing-Fake-Fw-Op_model.0.fc1-linear-0" in ops
    assert graphs["graph_module"].model[0].to(GraphModule).activation_checkpointing is True
    assert graphs["config"].model[0].config.activation_checkpointing is True
    g = graphs["config"]
    for i in range(4):
        g.model[i].config.activation_checkpointing = False  # a compile-time option: recompiled, not recaptured
    entry = g._last
    g(x, y)
    assert g._last is entry and not any("recomputed" in r for r in entry.reports)


def test_checkpointing_benchmark_measures_a_lower_peak_with_equal_losses():
    """benchmarks/bench_graph_checkpointing.py, the issue's tracemalloc benchmark, smoke-run on a small stack."""
    import os
    import pathlib
    import re
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_graph_checkpointing.py"), "--blocks", "3",
                        "--width", "16", "--batch", "64", "--repeats", "1"], capture_output=True, text=True,
                       timeout=300, cwd=root, env=env, check=False)
    assert r.returncode == 0, r.stderr
    rows = {m.group(1): (float(m.group(2)), m.group(3))
            for m in re.finditer(r"^(graph|graph \+ checkpointing|eager)\s+\S+\s+(\S+)x\s+\S+\s+(\w+)$", r.stdout,
                                 re.M)}
    assert set(rows) == {"graph", "graph + checkpointing", "eager"}, r.stdout
    assert rows["graph"] == (1.0, "yes") and rows["graph + checkpointing"][0] < 0.9, r.stdout
    assert all(equal == "yes" for _, equal in rows.values()), r.stdout


def test_block_config_keeps_the_modules_own_config():
    class WithConfig(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = type("Cfg", (), {"scale": 3.0})()

        def forward(self, x):
            return x * self.config.scale

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = WithConfig()
            self.m.config.activation_checkpointing = True

        def build(self, x):
            return self.m(x)

    g = G()
    assert g(flow.ones(2)).numpy().tolist() == [3.0, 3.0]
    assert g.m.config.scale == 3.0 and g.m.config.activation_checkpointing
    with pytest.raises(AttributeError, match=r"unknown option 'bogus'"):
        g.m.config.bogus = 1
    with pytest.raises(TypeError, match=r"activation_checkpointing: expected a bool, got int"):
        g.m.to(GraphModule).activation_checkpointing = 1
    assert g.m.to(nn.Module) is g.m.to(WithConfig)
    assert repr(g.m.to(GraphModule)) == "(GraphModule:m(activation_checkpointing=True))"


# ---- fusion switches ------------------------------------------------------------------------------
def _fusion_graph(fn, switch, mode):
    g = flow.nn.Graph.trace(fn)
    getattr(g.config, f"allow_{switch}")(mode)
    return g


def _types(g):
    return [op.user_conf.op_type_name for op in g.job.net.op if op.HasField("user_conf")]


def test_fuse_add_to_output_switch():
    w = flow.randn(6, 6, dtype=flow.float64)

    def residual(x):
        return x @ w + x

    x = flow.randn(4, 6, dtype=flow.float64)
    off, on = _fusion_graph(residual, "fuse_add_to_output", False), _fusion_graph(residual, "fuse_add_to_output", True)
    for _ in range(2):  # the first run checks kernels, the second runs the fast plan
        np.testing.assert_array_equal(on(x).numpy(), off(x).numpy())
    np.testing.assert_array_equal(on(x).numpy(), residual(x).numpy())
    assert "broadcast_add" in _types(off) and "fused_add_to_output" not in _types(off)
    assert "fused_add_to_output" in _types(on) and "broadcast_add" not in _types(on)
    assert any("fuse add to output: 1 add(s)" in r for r in on._last.reports)
    assert "fuse_add_to_output=True" in repr(on.config)


def test_fuse_model_update_ops_switch():
    def train(fuse, steps=3):
        model = _mlp(0)
        opt = flow.optim.SGD(model.parameters(), lr=0.1)

        class G(nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
                self.config.allow_fuse_model_update_ops(fuse)

            def build(self, x, y):
                loss = F.cross_entropy(self.model(x), y)
                loss.backward()
                for p in self.model.parameters():
                    p.grad.mul_(0.25)  # a constant gradient scaling, folded into sgd_update's scale
                return loss

        g = G()
        losses = [g(x, y).numpy() for x, y in _data(steps)]
        return g, losses, [p.numpy() for p in model.parameters()]

    g_off, l_off, p_off = train(False)
    g_on, l_on, p_on = train(True)
    for a, b in zip(l_off + p_off, l_on + p_on):
        np.testing.assert_array_equal(a, b)
    assert _types(g_off).count("scalar_mul") >= 4 and _types(g_on).count("scalar_mul") < _types(g_off).count(
        "scalar_mul")
    assert any("fuse model update ops: 4 gradient scaling(s) folded" in r for r in g_on._last.reports)
    scales = [op.user_conf.attr["scale"].at_double for op in g_on.job.net.op if op.user_conf.op_type_name ==
              "sgd_update"]
    assert scales == [0.25] * 4


def test_fuse_cast_scale_switch():
    s = flow.tensor(0.5, dtype=flow.float32)

    def unscale(x, y):
        return x.to(flow.float32) * s, y.float() * 4.0

    x, y = flow.randn(3, 5, dtype=flow.float64).half(), flow.randn(2, dtype=flow.float64).half()
    off, on = _fusion_graph(unscale, "fuse_cast_scale", False), _fusion_graph(unscale, "fuse_cast_scale", True)
    for a, b, c in zip(on(x, y), off(x, y), unscale(x, y)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.numpy(), c.numpy())
        assert a.dtype == flow.float32
    assert _types(on).count("fused_cast_scale") == 2 and "cast" not in _types(on)
    assert "cast" in _types(off) and "fused_cast_scale" not in _types(off)


def test_fusion_switches_take_bools():
    g = flow.nn.Graph.trace(lambda x: x)
    for switch in ("allow_fuse_add_to_output", "allow_fuse_model_update_ops", "allow_fuse_cast_scale"):
        with pytest.raises(TypeError, match=rf"GraphConfig.{switch}\(\): mode must be a bool, got int"):
            getattr(g.config, switch)(1)
