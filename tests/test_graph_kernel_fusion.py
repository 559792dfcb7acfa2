"""Fused elementwise kernels (Note [Fused elementwise kernels] in graph/kernel_fusion.py): a fused graph against
the same graph unfused and against NumPy formulas written here, bit for bit where the ops are exact (arithmetic,
relu, their grads) and within a few ulp for tanh; dtypes, broadcasting, NaN / Inf, intermediates read twice, a
training graph's backward, the on-disk cache seen from a second process, and the graph without numba."""

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.calls import F
from oneflow_lite.graph import jit, kernel_fusion

pytest.importorskip("numba")

ROOT = pathlib.Path(__file__).resolve().parent.parent
_rng = np.random.default_rng(14)


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    """One cache directory for the module's tests (a kernel compiles once), outside the user's home."""
    directory = tmp_path_factory.getbasetemp() / "kernel_cache"
    monkeypatch.setenv("FLOW_KERNEL_CACHE", str(directory))
    return directory


def graphs(fn):
    """The same function traced twice: fused (``allow_fuse_elementwise_kernels``) and not."""
    fused, plain = flow.nn.Graph.trace(fn), flow.nn.Graph.trace(fn)
    fused.config.allow_fuse_elementwise_kernels(True)
    return fused, plain


def fused_ops(g) -> list:
    return [n for n in g._last.ir.nodes if n.kind == "user" and n.op_type == "fused_elementwise"]


def tensor(a, dtype):
    return flow.tensor(np.asarray(a, dtype=dtype))


def specials(shape, dtype):
    """Random values with NaN, +-Inf, +-0 and huge values mixed in."""
    a = (_rng.standard_normal(shape) * 3).astype(dtype)
    flat = a.reshape(-1)
    flat[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-30][: flat.size]
    return a


def assert_bits(a, b):
    """Equal values, NaN where NaN, and the same sign of zero (a NaN's sign bit means nothing)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    numbers = ~np.isnan(a)
    np.testing.assert_array_equal(np.signbit(a[numbers]), np.signbit(b[numbers]))


# ---- exact ops: bit for bit ----------------------------------------------------------------------------
def _exact_chain(x, y):
    h = (x + y) * y - x / (y + 0.5)
    h = flow.relu(-h) * 2.0 + flow.abs(h) / 3.0
    return flow.square(h - 1.0) + 1.0 / (flow.relu(h) + 2.0)


def _np_exact_chain(x, y, dt):
    c = dt  # constants in the dtype, as NumPy 2 converts Python scalars
    h = (x + y) * y - x / (y + c(0.5))
    h = np.maximum(-h, c(0)) * c(2.0) + np.abs(h) / c(3.0)
    return np.square(h - c(1.0)) + c(1.0) / (np.maximum(h, c(0)) + c(2.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_ops_fuse_into_one_kernel_bit_for_bit(dtype):
    a, b = specials((7, 9), dtype), specials((7, 9), dtype)[::-1].copy()
    fused, plain = graphs(_exact_chain)
    with np.errstate(all="ignore"):
        expected = _np_exact_chain(a, b, dtype)
        got, unfused = fused(tensor(a, dtype), tensor(b, dtype)), plain(tensor(a, dtype), tensor(b, dtype))
    assert len(fused_ops(fused)) == 1 and not fused_ops(plain)
    assert_bits(got.numpy(), unfused.numpy())
    assert_bits(got.numpy(), expected)
    assert fused._last.plan.num_steps == 1
    assert any("fuse elementwise kernels: 17 op(s) in 1 region(s)" in r for r in fused._last.reports)


def test_relu_and_its_grad_keep_nan_and_give_positive_zero():
    def f(x, dy):
        return F.relu_grad(dy * 1.0, flow.relu(x) * 1.0), flow.relu(x * 1.0) + 0.0

    x = np.array([np.nan, -0.0, 0.0, -1.0, 2.0, np.inf, -np.inf, 3.0], np.float32)
    dy = np.array([1.0, 2.0, np.nan, 4.0, np.nan, -1.0, 5.0, -0.0], np.float32)
    fused, plain = graphs(f)
    got, unfused = fused(tensor(x, np.float32), tensor(dy, np.float32)), plain(tensor(x, np.float32),
                                                                             tensor(dy, np.float32))
    assert len(fused_ops(fused)) == 2
    y = np.maximum(x, np.float32(0))
    assert_bits(got[1].numpy(), unfused[1].numpy())
    assert_bits(got[1].numpy(), y)
    assert_bits(got[0].numpy(), np.where(y > 0, dy, np.float32(0)))
    assert_bits(got[0].numpy(), unfused[0].numpy())


# ---- tanh: a few ulp -------------------------------------------------------------------------------
def _w2_chain(x, y):
    h = x
    for _ in range(4):
        h = flow.tanh(-flow.relu((h + y) * y))
    return h


def _np_w2_chain(x, y):
    h = x
    for _ in range(4):
        h = np.tanh(-np.maximum((h + y) * y, 0))
    return h


def test_the_w2_chain_is_one_kernel_close_to_numpy_float32():
    a, b = (_rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    fused, plain = graphs(_w2_chain)
    got = fused(tensor(a, np.float32), tensor(b, np.float32)).numpy()
    assert len(fused_ops(fused)) == 1 and fused._last.plan.num_steps == 1
    np.testing.assert_allclose(got, _np_w2_chain(a, b), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got, plain(tensor(a, np.float32), tensor(b, np.float32)).numpy(), rtol=2e-6, atol=1e-7)


def test_the_w2_chain_float64_fuses_around_tanh_bit_for_bit():
    """float64 tanh stays NumPy's (no vectorisable float64 form here): the arithmetic between fuses, exactly."""
    a, b = _rng.standard_normal((5, 6)), _rng.standard_normal((5, 6))
    fused, plain = graphs(_w2_chain)
    got = fused(tensor(a, np.float64), tensor(b, np.float64))
    assert len(fused_ops(fused)) == 4  # (h + y) * y, relu, negative before each tanh
    assert_bits(got.numpy(), plain(tensor(a, np.float64), tensor(b, np.float64)).numpy())
    assert_bits(got.numpy(), _np_w2_chain(a, b))


def test_fused_tanh_is_within_5_ulp_and_keeps_special_values():
    x = np.concatenate([np.linspace(-12, 12, 200_001, dtype=np.float32),
                        (_rng.standard_normal(100_000) * 1e-3).astype(np.float32),
                        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 3e38], np.float32)])
    fused, _ = graphs(lambda t: flow.tanh(t * 1.0))
    got = fused(tensor(x, np.float32)).numpy()
    exact = np.tanh(x.astype(np.float64))
    finite = np.isfinite(exact)
    ulp = np.spacing(np.abs(exact[finite]).astype(np.float32)).astype(np.float64)
    assert (np.abs(got[finite] - exact[finite]) / ulp).max() <= 5
    assert np.isnan(got[np.isnan(x)]).all()
    assert_bits(got[-7:], np.array([1.0, -1.0, 0.0, -0.0, 1e-30, -1e-30, 1.0], np.float32))


# ---- broadcasting and intermediates ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_broadcast_and_one_element_inputs(dtype):
    def f(x, row, col, s, z):
        return flow.relu((x + row) * col - s) / (z + 3.0)

    x, row, col = specials((4, 5), dtype), specials((5,), dtype), _rng.standard_normal((4, 1)).astype(dtype)
    s, z = np.asarray(0.25, dtype), np.full((1, 1), -0.5, dtype)
    fused, plain = graphs(f)
    args = [tensor(v, dtype) for v in (x, row, col, s, z)]
    with np.errstate(all="ignore"):
        got, unfused = fused(*args), plain(*args)
        expected = np.maximum((x + row) * col - s, dtype(0)) / (z + dtype(3.0))
    (node,) = fused_ops(fused)
    source = pathlib.Path(jit._loaded[node.res.attrs["kernel"]].__file__).read_text()
    assert "s3 = i3[0]" in source and "s4 = i4[0]" in source  # s and z: one element, read once
    assert "broadcast_to(x1, shape)" in source and "broadcast_to(x2, shape)" in source  # row and col
    assert_bits(got.numpy(), unfused.numpy())
    assert_bits(got.numpy(), expected)


def test_an_intermediate_read_twice_and_returned_is_an_output_of_the_kernel():
    def f(x, y):
        h = x * y
        out = flow.relu(h) + h * h
        return out, h

    a, b = specials((3, 8), np.float64), specials((3, 8), np.float64)
    fused, plain = graphs(f)
    with np.errstate(all="ignore"):
        out, h = fused(tensor(a, np.float64), tensor(b, np.float64))
        expected_h = a * b
        expected = np.maximum(expected_h, 0.0) + expected_h * expected_h
    (node,) = fused_ops(fused)
    assert len(node.outputs) == 2
    assert_bits(h.numpy(), expected_h)
    assert_bits(out.numpy(), expected)
    for g, e in zip(plain(tensor(a, np.float64), tensor(b, np.float64)), (out, h)):
        assert_bits(g.numpy(), e.numpy())


def test_a_region_read_from_outside_is_closed_so_no_cycle_forms():
    def f(x, w):
        h = x * 2.0 + 1.0
        t = flow.matmul(h, w)  # reads the region: the next ops cannot join it
        return flow.relu(h * t) - 1.0

    x, w = _rng.standard_normal((3, 3)), _rng.standard_normal((3, 3))
    fused, plain = graphs(f)
    got = fused(tensor(x, np.float64), tensor(w, np.float64))
    assert len(fused_ops(fused)) == 2
    h = x * 2.0 + 1.0
    np.testing.assert_allclose(got.numpy(), np.maximum(h * (h @ w), 0.0) - 1.0, rtol=1e-12)
    assert_bits(got.numpy(), plain(tensor(x, np.float64), tensor(w, np.float64)).numpy())


# ---- training --------------------------------------------------------------------------------------
class _Net(flow.nn.Module):
    def __init__(self, w, b):
        super().__init__()
        self.w = flow.nn.Parameter(flow.tensor(w))
        self.b = flow.nn.Parameter(flow.tensor(b))

    def forward(self, x):
        return flow.tanh(flow.relu(x * self.w + self.b) * 0.5 - 0.25)


class _Train(flow.nn.Graph):
    def __init__(self, model, opt, fuse):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        self.config.allow_fuse_elementwise_kernels(fuse)

    def build(self, x, t):
        d = self.model(x) - t
        loss = (d * d).sum()
        loss.backward()
        return loss


def _np_train_step(w, b, x, t, lr):
    u = x * w + b
    r = np.maximum(u, 0)
    y = np.tanh(r * 0.5 - 0.25)
    d = y - t
    dy = 2 * d
    du = np.where(r > 0, dy * (1 - y * y) * 0.5, 0)
    return (d * d).sum(), w - lr * (du * x).sum(0), b - lr * du.sum(0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_training_graph_fuses_forward_and_backward_and_matches(dtype):
    w0, b0 = _rng.standard_normal(6).astype(dtype), _rng.standard_normal(6).astype(dtype)
    x, t = _rng.standard_normal((5, 6)).astype(dtype), _rng.standard_normal((5, 6)).astype(dtype)
    models = [_Net(w0, b0), _Net(w0, b0)]
    steps = [_Train(m, flow.optim.SGD(m.parameters(), lr=0.1), fuse) for m, fuse in zip(models, (True, False))]
    w, b = w0.astype(np.float64), b0.astype(np.float64)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for _ in range(3):
        losses = [g(tensor(x, dtype), tensor(t, dtype)) for g in steps]
        loss, w, b = _np_train_step(w, b, x.astype(np.float64), t.astype(np.float64), 0.1)
        np.testing.assert_allclose(losses[0].numpy(), loss, **tol)
        np.testing.assert_allclose(losses[0].numpy(), losses[1].numpy(), **tol)
    np.testing.assert_allclose(models[0].w.numpy(), w, **tol)
    np.testing.assert_allclose(models[0].b.numpy(), b, **tol)
    if dtype == np.float64:  # no tanh in the fused kernels: the same operations in the same order
        assert_bits(models[0].w.numpy(), models[1].w.numpy())
    fused = fused_ops(steps[0])
    assert len(fused) >= 2 and not fused_ops(steps[1])
    saved = {lbn for n in fused for lbn in n.outputs}
    readers = {lbn for n in steps[0]._last.ir.nodes for lbn in n.inputs}
    assert saved <= readers  # every output of a kernel is read (by the backward, the loss or an update)


# ---- the switch, plug-in kernels, the cache and numba missing ----------------------------------------
def test_the_switch_recompiles_and_reports():
    g = flow.nn.Graph.trace(lambda x: flow.relu(x * 2.0) + 1.0)
    x = tensor([-1.0, 3.0], np.float64)
    g(x)
    assert not fused_ops(g) and "fuse_elementwise_kernels=False" in repr(g.config)
    g.config.allow_fuse_elementwise_kernels(True)
    assert g(x).numpy().tolist() == [1.0, 7.0] and len(fused_ops(g)) == 1
    assert "fuse elementwise kernels: 3 op(s) in 1 region(s) fused into generated kernels" in repr(g)
    with pytest.raises(TypeError, match="allow_fuse_elementwise_kernels"):
        g.config.allow_fuse_elementwise_kernels("yes")


def test_a_plug_in_kernel_is_run_not_fused():
    seen = []

    def plugin_relu(ctx, x):
        seen.append(1)
        return np.maximum(x, 0.0)

    with flow.dispatch.register_kernel("relu", "cpu", plugin_relu, priority=5):
        fused, _ = graphs(lambda x: flow.relu(x * 2.0) + 1.0)
        assert fused(tensor([-1.0, 3.0], np.float64)).numpy().tolist() == [1.0, 7.0]
    assert seen and not fused_ops(fused)


def test_the_kernel_file_is_named_by_its_source_and_loaded_once(kernel_cache):
    fused, _ = graphs(lambda x: -(x * 3.0) + 0.5)
    fused(tensor([1.0], np.float64))
    (node,) = fused_ops(fused)
    key = node.res.attrs["kernel"]
    path = kernel_cache / f"k{key}.py"
    assert path.exists() and "def kernel(" in path.read_text()
    stamp, loaded = path.stat().st_mtime_ns, len(jit._loaded)
    again, _ = graphs(lambda x: -(x * 3.0) + 0.5)
    assert again(tensor([2.0], np.float64)).numpy().tolist() == [-5.5]
    assert fused_ops(again)[0].res.attrs["kernel"] == key
    assert len(jit._loaded) == loaded and path.stat().st_mtime_ns == stamp


_SECOND_PROCESS = textwrap.dedent("""
    import sys
    import numpy as np
    import oneflow_lite as flow
    from oneflow_lite.graph import kernel_fusion

    g = flow.nn.Graph.trace(lambda x, y: flow.tanh(flow.relu(x * y + 1.0) - y))
    g.config.allow_fuse_elementwise_kernels(True)
    x = flow.tensor(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4))
    g(x, x)
    (module,) = kernel_fusion._modules.values()
    stats = module.kernel.stats
    print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
""")


def test_a_second_process_loads_the_compiled_kernel_from_the_cache(tmp_path):
    env = {**os.environ, "FLOW_KERNEL_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    runs = [subprocess.run([sys.executable, "-c", _SECOND_PROCESS], env=env, cwd=ROOT, capture_output=True,
                           text=True, timeout=300, check=False) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    (first_hits, first_misses), (hits, misses) = (map(int, r.stdout.split()) for r in runs)
    assert (first_hits, first_misses) == (0, 1)  # compiled in the first process
    assert (hits, misses) == (1, 0)  # loaded from numba's cache in the second
    assert list((tmp_path / "cache").glob("k*.py"))


def test_without_numba_the_graph_runs_unfused(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # ``import numba`` raises ImportError
    monkeypatch.setattr(jit, "_numba_state", [])
    fused, plain = graphs(_exact_chain)
    a, b = specials((3, 4), np.float64), specials((3, 4), np.float64)
    with np.errstate(all="ignore"):
        got = fused(tensor(a, np.float64), tensor(b, np.float64))
        assert_bits(got.numpy(), plain(tensor(a, np.float64), tensor(b, np.float64)).numpy())
    assert not fused_ops(fused)
    assert any("numba is not installed, 1 region(s) left unfused" in r for r in fused._last.reports)


def test_importing_the_package_or_compiling_without_fusion_does_not_import_numba():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import oneflow_lite as flow
        g = flow.nn.Graph.trace(lambda x: flow.relu(x * 2.0) + 1.0)
        g(flow.tensor(np.ones(3)))
        g = flow.nn.Graph.trace(lambda x: flow.relu(x))
        g.config.allow_fuse_elementwise_kernels(True)
        g(flow.tensor(np.ones(3)))  # one op: no region to fuse
        print("numba" in sys.modules)
    """)
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False"]


def test_the_fused_op_of_graph_job_runs_from_the_cache_dir_in_a_fresh_table(monkeypatch, tmp_path):
    """``graph.job`` holds ``fused_elementwise`` ops naming their kernel by key: with the process's tables empty
    (another process), the op loads the kernel from the cache dir, or says which kernel it misses and where."""
    from oneflow_lite.framework.op_builder import OpBuilder
    from oneflow_lite.interpreters.op_interp_util import dispatch

    fused, _ = graphs(lambda x, y: flow.relu(x - y) * y)
    a, b = _rng.standard_normal((2, 3)), _rng.standard_normal((2, 3))
    fused(tensor(a, np.float64), tensor(b, np.float64))
    (conf,) = [op for op in fused.job.net.op if op.HasField("user_conf") and op.user_conf.op_type_name
               == "fused_elementwise"]
    key = conf.user_conf.attr["kernel"].at_string
    monkeypatch.setattr(kernel_fusion, "_modules", {})
    monkeypatch.setattr(jit, "_loaded", {})
    op = (OpBuilder("fused_elementwise").input("in", 2).output("out").attr("kernel", key).attr("shape", [2, 3])
          .attr("dtype", flow.float64).attr("num_outputs", 1).build())
    (y,) = dispatch(op, (tensor(a, np.float64), tensor(b, np.float64)))
    assert_bits(y.numpy(), np.maximum(a - b, 0.0) * b)
    monkeypatch.setattr(kernel_fusion, "_modules", {})
    monkeypatch.setattr(jit, "_loaded", {})
    monkeypatch.setenv("FLOW_KERNEL_CACHE", str(tmp_path / "empty"))
    with pytest.raises(RuntimeError, match=f"fused_elementwise: attr kernel='{key}' names no generated kernel"):
        dispatch(op, (tensor(a, np.float64), tensor(b, np.float64)))


@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)], ids=["plain", "fusion", "memory"])
def test_fused_kernels_under_every_setting_of_the_buffer_passes(flags):
    fused, plain = graphs(_exact_chain)
    fused.config.enable_fusion(flags[0])
    fused.config.enable_memory_plan(flags[1])
    a, b = specials((4, 5), np.float64), specials((4, 5), np.float64)
    with np.errstate(all="ignore"):
        for _ in range(2):  # the checked first run, then the fast plan
            got = fused(tensor(a, np.float64), tensor(b, np.float64))
            assert_bits(got.numpy(), plain(tensor(a, np.float64), tensor(b, np.float64)).numpy())
    assert len(fused_ops(fused)) == 1


def test_a_kernel_that_fails_to_load_leaves_its_region_unfused(monkeypatch):
    def broken(spec):
        raise RuntimeError("no compiler today\nsecond line")

    monkeypatch.setattr(jit, "load_kernel", broken)
    fused, plain = graphs(_exact_chain)
    a, b = specials((2, 3), np.float32), specials((2, 3), np.float32)
    with np.errstate(all="ignore"):
        assert_bits(fused(tensor(a, np.float32), tensor(b, np.float32)).numpy(),
                    plain(tensor(a, np.float32), tensor(b, np.float32)).numpy())
    assert not fused_ops(fused)
    assert any(r.endswith("1 region(s) left unfused (RuntimeError: no compiler today)") for r in fused._last.reports)


def test_the_writer_fills_a_strided_buffer():
    """A region's last op may write a parameter's buffer in place (Note [Assigns written in place]), which may be
    strided: the generated writer then computes into a new array and copies."""
    spec = jit.KernelSpec("float64", ["full", "broadcast"], ["({i0} * {i1})", "({t0} if {t0} <= _c0 else _c0)"], [1],
                          {"_c0": 0.5})
    key, module = jit.load_kernel(spec)
    x, row = _rng.standard_normal((4, 3)), _rng.standard_normal(3)
    out = np.zeros((3, 4)).T  # (4, 3), F-ordered
    module.write(out, x, row)
    np.testing.assert_array_equal(out, np.minimum(x * row, 0.5))
    contiguous = np.zeros((4, 3))
    module.write(contiguous, x, row)
    np.testing.assert_array_equal(contiguous, np.minimum(x * row, 0.5))
    assert key in pathlib.Path(module.__file__).name


def test_scalar_operands_round_to_the_dtype_as_the_scalar_kernels_do():
    def f(x):
        return (x * 1e39 + 0.1) / 3 - (1.0 / x) * 7

    a = np.array([1.5, -2.0, 0.0, -0.0, np.inf, np.nan, 1e-3], np.float32)
    fused, plain = graphs(f)
    with np.errstate(all="ignore"):
        got, unfused = fused(tensor(a, np.float32)), plain(tensor(a, np.float32))
        expected = (a * np.float32(np.inf) + np.float32(0.1)) / np.float32(3) - (np.float32(1) / a) * np.float32(7)
    assert len(fused_ops(fused)) == 1
    assert_bits(got.numpy(), unfused.numpy())
    assert_bits(got.numpy(), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_plain_sgd_updates_fuse_alone_and_update_in_place_bit_for_bit(dtype):
    w0 = _rng.standard_normal((6, 5)).astype(dtype)
    x, y = _rng.standard_normal((4, 5)).astype(dtype), _rng.standard_normal((4, 6)).astype(dtype)

    def make(fuse, **sgd):
        model = flow.nn.Linear(5, 6, bias=False).to(getattr(flow, np.dtype(dtype).name))
        model.weight.numpy()[...] = w0

        class Step(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.3, **sgd))
                self.config.allow_fuse_elementwise_kernels(fuse)

            def build(self, x, y):
                loss = ((self.model(x) - y) ** 2).sum()
                loss.backward()
                return loss
        return model, Step()

    (m_fused, fused), (m_plain, plain) = make(True), make(False)
    buffer = m_fused.weight.numpy()
    for _ in range(3):
        fused(flow.tensor(x), flow.tensor(y))
        plain(flow.tensor(x), flow.tensor(y))
    assert_bits(m_fused.weight.numpy(), m_plain.weight.numpy())
    assert m_fused.weight.numpy() is buffer or np.shares_memory(m_fused.weight.numpy(), buffer)
    (node,) = [n for n in fused_ops(fused) if n.outputs[0].startswith("sgd_update")]
    assert "def kernel_in_place(" in pathlib.Path(jit._loaded[node.res.attrs["kernel"]].__file__).read_text()
    assert "sgd_update" not in [n.op_type for n in fused._last.ir.nodes if n.kind == "user"]
    _, decayed = make(True, weight_decay=0.1)  # not plain SGD: its own kernel
    decayed(flow.tensor(x), flow.tensor(y))
    assert "sgd_update" in [n.op_type for n in decayed._last.ir.nodes if n.kind == "user"]
