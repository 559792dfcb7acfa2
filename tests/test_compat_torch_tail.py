"""[compat t1] the tail of torch.*: layouts and memory formats, exceptions, streams and events, futures, cond,
symbolic-size helpers, autocast state functions, native_* / batch_norm_* pieces, torch.convolution, grid
samplers, the functional recurrent forms, legacy storages, isin, gradient, histogramdd.

References are NumPy formulas written here or layers already tested against NumPy; torch is an optional
oracle in the last test."""

import pickle
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
import oneflow_lite.nn.functional as F

rng = np.random.default_rng(0)


def t(a):
    return flow.tensor(np.asarray(a))


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.numpy() if hasattr(a, "numpy") else a, dtype=np.float64),
                               np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


# ---- layouts, memory formats, exceptions ------------------------------------------------------------------------

def test_layout_and_memory_formats():
    x = flow.ones(2, 3, 4, 5)
    assert x.layout is flow.strided and isinstance(flow.strided, flow.layout)
    for fmt in (flow.contiguous_format, flow.channels_last, flow.channels_last_3d, flow.preserve_format):
        assert isinstance(fmt, flow.memory_format)
        assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert repr(flow.channels_last) == "oneflow_lite.channels_last"
    y = x.to(memory_format=flow.channels_last)
    close(y, np.ones((2, 3, 4, 5)))
    with pytest.raises(RuntimeError, match="rank 4 tensor to use channels_last"):
        flow.ones(2, 3).to(memory_format=flow.channels_last)
    with pytest.raises(TypeError, match="cannot create"):
        flow.layout()
    with pytest.raises(TypeError, match="memory_format"):
        flow.ones(2).to(memory_format="channels_last")


def test_exceptions_are_catchable_as_pytorch_has_them():
    assert issubclass(flow.OutOfMemoryError, RuntimeError) and issubclass(flow.AcceleratorError, RuntimeError)
    assert issubclass(flow.FatalError, Exception)
    with pytest.raises(flow.OutOfMemoryError):
        raise flow.OutOfMemoryError("out of memory")


# ---- streams, events, futures, cond -----------------------------------------------------------------------------

def test_stream_and_event():
    s = flow.Stream()
    assert s.device_type == "cpu" and s.query() and s == flow.Stream()
    start, end = flow.Event(enable_timing=True), flow.Event(enable_timing=True)
    s.record_event(start)
    end.record()
    assert start.query() and end.query()
    assert start.elapsed_time(end) >= 0.0
    with s:
        assert flow.cpu.current_stream() == s
    s.synchronize()
    s.wait_event(end)
    s.wait_stream(flow.Stream())


def test_fork_wait_and_futures():
    fut = flow.fork(lambda a, b=0: a * 10 + b, 4, b=2)
    assert fut.done() and flow.wait(fut) == 42
    f = flow.futures.Future()
    doubled = f.then(lambda done: done.value() * 2)
    assert not f.done()
    f.set_result(3)
    assert doubled.wait() == 6 and f.value() == 3
    assert flow.futures.wait_all([flow.fork(lambda: 1), flow.fork(lambda: 2)]) == [1, 2]
    bad = flow.futures.Future()
    bad.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        bad.wait()
    with pytest.raises(ZeroDivisionError):
        flow.fork(lambda: 1 / 0)


def test_cond_picks_a_branch_and_records_its_gradient():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    out = flow.cond(x.sum() > 0, lambda a: a * 3, lambda a: a - 1, (x,))
    out.sum().backward()
    close(out, [3.0, 6.0])
    close(x.grad, [3.0, 3.0])
    close(flow.cond(False, lambda a: a * 3, lambda a: a - 1, [x]), [0.0, 1.0])
    with pytest.raises(RuntimeError, match="single-element"):
        flow.cond(flow.ones(2), lambda: 0, lambda: 1)
    with pytest.raises(RuntimeError, match="true_fn to be callable"):
        flow.cond(True, 1, lambda: 1)


def test_disable_torch_function_is_a_context_manager():
    with flow.DisableTorchFunction():
        close(flow.ones(2) + 1, [2.0, 2.0])
    with flow.DisableTorchFunctionSubclass():
        pass


# ---- symbolic-size helpers --------------------------------------------------------------------------------------

def test_sym_helpers_on_concrete_values():
    assert flow.sym_max(2, 3.5) == 3.5 and isinstance(flow.sym_max(4, 3.5), float)
    assert flow.sym_min(2, 3) == 2 and isinstance(flow.sym_min(2, 3), int)
    assert flow.sym_sum([1, 2, 3]) == 6 and flow.sym_sum(1, 2) == 3
    assert flow.sym_ite(True, 1, 2) == 1 and flow.sym_ite(False, 1, 2) == 2
    assert flow.sym_int(3.7) == 3 and flow.sym_float(2) == 2.0 and flow.sym_not(True) is False
    assert flow.sym_sqrt(9) == 3.0
    assert isinstance(5, (int, flow.SymInt))
    flow.sym_constrain_range(5, min=0, max=10)
    with pytest.raises(RuntimeError, match="Invalid value range"):
        flow.sym_constrain_range_for_size(-1)
    with pytest.raises(TypeError, match="symbolic shapes are not provided"):
        flow.SymInt()
    with pytest.raises(AssertionError, match="type mismatch"):
        flow.sym_ite(True, 1, 2.0)


# ---- autocast state functions -----------------------------------------------------------------------------------

def test_autocast_state_functions():
    assert flow.get_autocast_dtype("cpu") == flow.bfloat16 and flow.get_autocast_dtype("cuda") == flow.float16
    assert not flow.is_autocast_enabled("cpu") if hasattr(flow, "is_autocast_enabled") else True
    flow.set_autocast_dtype("cpu", flow.float16)
    try:
        assert flow.get_autocast_dtype("cpu") == flow.float16
        with flow.autocast("cpu", dtype=flow.bfloat16):
            assert flow.get_autocast_dtype("cpu") == flow.bfloat16
        assert flow.get_autocast_dtype("cpu") == flow.float16
    finally:
        flow.set_autocast_dtype("cpu", flow.bfloat16)
    with flow.autocast("cpu"):
        flow.set_autocast_enabled("cpu", False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert not flow.is_autocast_cpu_enabled()
    n = flow.autocast_increment_nesting()
    assert flow.autocast_decrement_nesting() == n - 1
    flow.set_autocast_cache_enabled(False)
    assert not flow.is_autocast_cache_enabled()
    flow.set_autocast_cache_enabled(True)
    flow.clear_autocast_cache()
    with pytest.raises(RuntimeError, match="device type"):
        flow.get_autocast_dtype("nonsense")


def test_cpu_module_and_device_modules():
    assert flow.cpu.is_available() and flow.cpu.device_count() == 1
    flow.cpu.synchronize()
    assert flow.get_device_module("cpu") is flow.cpu and flow.get_device_module("cuda") is flow.cuda
    assert flow.is_vulkan_available() is False


# ---- legacy storages and Tensor device helpers ------------------------------------------------------------------

def test_legacy_storage_classes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        s = flow.FloatStorage([1, 2.5])
        assert s.dtype == flow.float32 and list(s) == [1.0, 2.5]
        assert list(flow.LongStorage(3)) == [0, 0, 0] and len(flow.DoubleStorage()) == 0
        assert isinstance(flow.ones(2).storage(), flow.FloatStorage)
        assert not isinstance(flow.ones(2).storage(), flow.LongStorage)
    assert flow.ones(2).storage_type() is flow.FloatStorage
    assert flow.ones(2, dtype=flow.int64).storage_type() is flow.LongStorage
    assert flow.ones(2).is_distributed() is False
    with pytest.raises(AssertionError, match="XPU"):
        flow.ones(2).xpu()
    for move, device in ((flow.ones(2).ipu, "ipu"), (flow.ones(2).mtia, "MTIA")):
        with pytest.raises((AssertionError, RuntimeError), match=device):
            move()
    x = flow.ones(2, requires_grad=True)
    assert x.grad_dtype == flow.float32
    x.grad_dtype = flow.float32
    with pytest.raises(RuntimeError, match="grad_dtype"):  # float64 is accepted now (Note [Gradient dtype])
        x.grad_dtype = flow.int64


# ---- native_* and the batch_norm_* pieces -----------------------------------------------------------------------

def test_native_layer_norm():
    x, w, b = rng.standard_normal((2, 3, 5)), rng.standard_normal(5), rng.standard_normal(5)
    out, mean, rstd = flow.native_layer_norm(t(x), [5], t(w), t(b), 1e-5)
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    close(out, (x - m) / np.sqrt(v + 1e-5) * w + b)
    close(mean, m)
    close(rstd, 1 / np.sqrt(v + 1e-5))
    assert tuple(mean.shape) == (2, 3, 1)


def test_native_batch_norm_train_and_eval():
    x, w = rng.standard_normal((4, 3, 2)), rng.standard_normal(3)
    rm, rv = t(np.zeros(3)), t(np.ones(3))
    out, mean, invstd = flow.native_batch_norm(t(x), t(w), t(w), rm, rv, True, 0.1, 1e-5)
    m, v = x.mean((0, 2)), x.var((0, 2))
    close(out, (x - m[:, None]) / np.sqrt(v[:, None] + 1e-5) * w[:, None] + w[:, None])
    close(mean, m)
    close(invstd, 1 / np.sqrt(v + 1e-5))
    close(rm, 0.1 * m)
    close(rv, 0.9 + 0.1 * x.var((0, 2), ddof=1))
    out, mean, invstd = flow.native_batch_norm(t(x), None, None, rm, rv, False, 0.1, 1e-5)
    close(out, (x - 0.1 * m[:, None]) / np.sqrt(0.9 + 0.1 * x.var((0, 2), ddof=1)[:, None] + 1e-5))
    assert tuple(mean.shape) == (0,)


def test_native_group_norm_and_dropout_and_norm_except_dim():
    x, w = rng.standard_normal((2, 6, 4)), rng.standard_normal(6)
    out, mean, rstd = flow.native_group_norm(t(x), t(w), None, 2, 6, 4, 3, 1e-5)
    g = x.reshape(2, 3, 8)
    m, v = g.mean(-1), g.var(-1)
    close(out, ((g - m[..., None]) / np.sqrt(v[..., None] + 1e-5)).reshape(2, 6, 4) * w[:, None])
    close(mean, m)
    close(rstd, 1 / np.sqrt(v + 1e-5))
    out, mask = flow.native_dropout(t(x), 0.0, True)
    close(out, x)
    assert mask.dtype == flow.bool and bool(mask.all())
    out, mask = flow.native_dropout(t(x), 0.5, True)
    close(out, np.where(mask.numpy(), x * 2, 0))
    v4 = rng.standard_normal((2, 3, 4))
    close(flow.norm_except_dim(t(v4), 2, 1), np.sqrt((v4 ** 2).sum((0, 2)))[None, :, None])
    close(flow.norm_except_dim(t(v4), 3, -1), (np.abs(v4) ** 3).sum() ** (1 / 3))


def _bn_reference(x):
    axes = (0,) + tuple(range(2, x.ndim))
    return axes, x.mean(axes), x.var(axes)


def test_batch_norm_stats_elemt_and_gather():
    x, w, b = rng.standard_normal((4, 3, 5)), rng.standard_normal(3), rng.standard_normal(3)
    axes, m, v = _bn_reference(x)
    mean, invstd = flow.batch_norm_stats(t(x), 1e-5)
    close(mean, m)
    close(invstd, 1 / np.sqrt(v + 1e-5))
    close(flow.batch_norm_elemt(t(x), t(w), t(b), mean, invstd, 1e-5),
          (x - m[:, None]) / np.sqrt(v[:, None] + 1e-5) * w[:, None] + b[:, None])
    # two "devices": the first half and the second half of the batch, 10 values each per channel
    parts = [x[:2], x[2:]]
    stats = [flow.batch_norm_stats(t(p), 1e-5) for p in parts]
    means = flow.stack([s[0] for s in stats])
    invstds = flow.stack([s[1] for s in stats])
    rm, rv = t(np.zeros(3)), t(np.ones(3))
    gm, ginv = flow.batch_norm_gather_stats_with_counts(t(x), means, invstds, rm, rv, 0.1, 1e-5,
                                                         t(np.array([10.0, 10.0])))
    close(gm, m)
    close(ginv, 1 / np.sqrt(v + 1e-5))
    close(rm, 0.1 * m)
    close(rv, 0.9 + 0.1 * x.var(axes, ddof=1))
    rm, rv = t(np.zeros(3)), t(np.ones(3))
    gm, ginv = flow.batch_norm_gather_stats(t(x), means, invstds, rm, rv, 0.1, 1e-5, 10)
    close(gm, m)
    close(rv, 0.9 + 0.1 * x.var(axes, ddof=1))
    rm, rv = t(np.zeros(3)), t(np.ones(3))
    um, uv = flow.batch_norm_update_stats(t(x), rm, rv, 0.1)
    close(um, m)
    close(uv, v)
    close(rm, 0.1 * m)
    close(rv, 0.9 + 0.1 * x.var(axes, ddof=1))


def test_batch_norm_backward_pieces_match_the_batch_norm_gradient():
    x, w, dy = rng.standard_normal((4, 3, 5)), rng.standard_normal(3), rng.standard_normal((4, 3, 5))
    axes, m, v = _bn_reference(x)
    mean, invstd = flow.batch_norm_stats(t(x), 1e-5)
    sum_dy, sum_dy_xmu, gw, gb = flow.batch_norm_backward_reduce(t(dy), t(x), mean, invstd, t(w), True, True, True)
    inv = 1 / np.sqrt(v + 1e-5)
    close(sum_dy, dy.sum(axes))
    close(sum_dy_xmu, (dy * (x - m[:, None])).sum(axes))
    close(gw, (dy * (x - m[:, None])).sum(axes) * inv)
    close(gb, dy.sum(axes))
    dx = flow.batch_norm_backward_elemt(t(dy), t(x), mean, invstd, t(w), sum_dy, sum_dy_xmu,
                                        t(np.array([20], np.int32)))
    # the batch-norm input gradient by autograd (batch_norm is tested against NumPy elsewhere)
    xt = flow.tensor(x, requires_grad=True)
    F.batch_norm(xt, None, None, t(w), None, training=True, eps=1e-5).backward(t(dy))
    close(dx, xt.grad, 1e-4)


# ---- torch.convolution, grid samplers ---------------------------------------------------------------------------

def test_convolution_matches_conv_and_conv_transpose():
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    w, b = rng.standard_normal((4, 3, 3, 3)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    close(flow.convolution(t(x), t(w), t(b), [1, 2], [1, 0], [1, 1], False, [0, 0], 1),
          F.conv2d(t(x), t(w), t(b), stride=(1, 2), padding=(1, 0)), 1e-4)
    wt = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    close(flow.convolution(t(x), t(wt), None, [2, 2], [1, 1], [1, 1], True, [1, 0], 1),
          F.conv_transpose2d(t(x), t(wt), None, stride=2, padding=1, output_padding=(1, 0)), 1e-4)
    x1, w1 = rng.standard_normal((1, 2, 7)).astype(np.float32), rng.standard_normal((2, 1, 2)).astype(np.float32)
    out = flow.convolution(t(x1), t(w1), None, [1], [0], [2], False, [0], 2)
    ref = np.stack([np.array([x1[0, c, i] * w1[c, 0, 0] + x1[0, c, i + 2] * w1[c, 0, 1] for i in range(5)])
                    for c in range(2)])[None]
    close(out, ref, 1e-5)


def test_affine_grid_generator_and_grid_sampler_enums():
    theta = rng.standard_normal((2, 2, 3)).astype(np.float32)
    grid = flow.affine_grid_generator(t(theta), [2, 3, 4, 5], False)
    xs, ys = (np.arange(5) * 2 + 1) / 5 - 1, (np.arange(4) * 2 + 1) / 4 - 1
    base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], np.ones((4, 5))), -1)  # (H, W, 3)
    close(grid, np.einsum("hwk,njk->nhwj", base, theta), 1e-5)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    g = rng.uniform(-1.2, 1.2, (2, 3, 4, 2)).astype(np.float32)
    for mode_i, mode in enumerate(("bilinear", "nearest", "bicubic")):
        for pad_i, pad in enumerate(("zeros", "border", "reflection")):
            close(flow.grid_sampler(t(x), t(g), mode_i, pad_i, True),
                  F.grid_sample(t(x), t(g), mode=mode, padding_mode=pad, align_corners=True), 1e-5)
    close(flow.grid_sampler_2d(t(x), t(g), 0, 0, False), F.grid_sample(t(x), t(g), align_corners=False), 1e-5)
    x3 = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    g3 = rng.uniform(-1, 1, (1, 2, 2, 2, 3)).astype(np.float32)
    close(flow.grid_sampler_3d(t(x3), t(g3), 0, 1, False),
          F.grid_sample(t(x3), t(g3), padding_mode="border", align_corners=False), 1e-5)
    with pytest.raises(Exception, match="grid_sampler"):
        flow.grid_sampler(t(x), t(g), 7, 0, False)


# ---- the functional recurrent forms -----------------------------------------------------------------------------

def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_lstm_cell_and_gru_cell_against_numpy():
    x, h, c = rng.standard_normal((2, 5)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    wi, wh, bi, bh = (rng.standard_normal(s) for s in ((16, 5), (16, 4), (16,), (16,)))
    h1, c1 = flow.lstm_cell(t(x), (t(h), t(c)), t(wi), t(wh), t(bi), t(bh))
    gi, gf, gg, go = np.split(x @ wi.T + bi + h @ wh.T + bh, 4, axis=1)
    c_ref = _sigmoid(gf) * c + _sigmoid(gi) * np.tanh(gg)
    close(c1, c_ref)
    close(h1, _sigmoid(go) * np.tanh(c_ref))
    wi3, wh3 = wi[:12], wh[:12]
    r, z, n = np.split(x @ wi3.T, 3, axis=1)
    hr, hz, hn = np.split(h @ wh3.T, 3, axis=1)
    r, z = _sigmoid(r + hr), _sigmoid(z + hz)
    close(flow.gru_cell(t(x), t(h), t(wi3), t(wh3)), (1 - z) * np.tanh(n + r * hn) + z * h)
    close(flow.rnn_tanh_cell(t(x), t(h), t(wi[:4]), t(wh[:4]), t(bi[:4])),
          np.tanh(x @ wi[:4].T + bi[:4] + h @ wh[:4].T))
    close(flow.rnn_relu_cell(t(x), t(h), t(wi[:4]), t(wh[:4])), np.maximum(x @ wi[:4].T + h @ wh[:4].T, 0))


def test_functional_lstm_gru_rnn_match_the_layers():
    lstm = flow.nn.LSTM(5, 4, num_layers=2, bidirectional=True)
    x = flow.tensor(rng.standard_normal((3, 2, 5)).astype(np.float32))
    h0 = flow.tensor(rng.standard_normal((4, 2, 4)).astype(np.float32))
    c0 = flow.tensor(rng.standard_normal((4, 2, 4)).astype(np.float32))
    params = list(lstm.parameters())
    out, hn, cn = flow.lstm(x, (h0, c0), params, True, 2, 0.0, False, True, False)
    ref, (rh, rc) = lstm(x, (h0, c0))
    close(out, ref.detach())
    close(hn, rh.detach())
    close(cn, rc.detach())
    gru = flow.nn.GRU(5, 4, batch_first=True)
    xb = flow.tensor(rng.standard_normal((2, 3, 5)).astype(np.float32))
    hg = flow.tensor(rng.standard_normal((1, 2, 4)).astype(np.float32))
    out, hn = flow.gru(xb, hg, list(gru.parameters()), True, 1, 0.0, False, False, True)
    ref, rh = gru(xb, hg)
    close(out, ref.detach())
    close(hn, rh.detach())
    for mode, fn in (("RNN_TANH", flow.rnn_tanh), ("RNN_RELU", flow.rnn_relu)):
        rnn = flow.nn.RNN(5, 4, nonlinearity=mode[4:].lower(), bias=False)
        out, hn = fn(x, hg, list(rnn.parameters()), False, 1, 0.0, False, False, False)
        ref, rh = rnn(x, hg)
        close(out, ref.detach())
        close(hn, rh.detach())
    packed = flow.nn.utils.rnn.pack_padded_sequence(x, [3, 2])
    lstm1 = flow.nn.LSTM(5, 4)
    h1 = flow.zeros(1, 2, 4)
    data, hn, cn = flow.lstm(packed.data, packed.batch_sizes, (h1, h1), list(lstm1.parameters()), True, 1, 0.0,
                             False, False)
    ref, (rh, rc) = lstm1(packed, (h1, h1))
    close(data, ref.data.detach())
    close(hn, rh.detach())


# ---- isin, gradient, histogramdd --------------------------------------------------------------------------------

def test_isin():
    a, b = np.array([[1, 2, 3], [4, 5, 6]]), np.array([2, 5, 9])
    close(flow.isin(t(a), t(b)), np.isin(a, b))
    close(flow.isin(t(a), t(b), invert=True), ~np.isin(a, b))
    close(flow.isin(t(a), 5), a == 5)
    out = flow.isin(5, t(b))
    assert out.dtype == flow.bool and out.ndim == 0 and bool(out)


def test_gradient():
    y = rng.standard_normal((4, 5))
    for got, want in zip(flow.gradient(t(y)), np.gradient(y)):
        close(got, want)
    (got,) = flow.gradient(t(y), spacing=2.0, dim=1, edge_order=2)
    close(got, np.gradient(y, 2.0, axis=1, edge_order=2))
    for got, want in zip(flow.gradient(t(y), spacing=[2.0, 0.5]), np.gradient(y, 2.0, 0.5)):
        close(got, want)
    coords = np.array([0, 1, 3, 4.5])
    (got,) = flow.gradient(t(y), spacing=(t(coords),), dim=0)
    close(got, np.gradient(y, coords, axis=0))
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        flow.gradient(t(y), dim=[0, -2])
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        flow.gradient(t(y), edge_order=3)
    for dtype in (flow.uint8, flow.uint16, flow.bool):  # their differences wrap (or are xor): PyTorch refuses
        with pytest.raises(RuntimeError, match=f"does not support {dtype.name} input"):
            flow.gradient(flow.tensor([1, 2, 4]).to(dtype))
    close(flow.gradient(flow.tensor([1, 2, 4], dtype=flow.int8))[0], [1.0, 1.5, 2.0])


def test_histogramdd():
    pts = rng.standard_normal((20, 2))
    hist, edges = flow.histogramdd(t(pts), [3, 4])
    ref, ref_edges = np.histogramdd(pts, [3, 4])
    close(hist, ref)
    for got, want in zip(edges, ref_edges):
        close(got, want)
    hist, _ = flow.histogramdd(t(pts), 3, range=[-1.0, 1.0, -2.0, 2.0], density=True)
    close(hist, np.histogramdd(pts, 3, range=[(-1, 1), (-2, 2)], density=True)[0])
    w = rng.uniform(0, 1, 20)
    close(flow.histogramdd(t(pts), 2, weight=t(w))[0], np.histogramdd(pts, 2, weights=w)[0])


# ---- PyTorch as an optional oracle ------------------------------------------------------------------------------

def test_against_torch_oracle():
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    w, b = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    for got, want in zip(flow.native_layer_norm(t(x), [5], t(w), t(b), 1e-5),
                         torch.native_layer_norm(torch.tensor(x), [5], torch.tensor(w), torch.tensor(b), 1e-5)):
        close(got, want.numpy())
    g = rng.uniform(-1.2, 1.2, (2, 3, 4, 2)).astype(np.float32)
    close(flow.grid_sampler(t(x), t(g), 2, 2, False),
          torch.grid_sampler(torch.tensor(x), torch.tensor(g), 2, 2, False).numpy(), 1e-4)
    wt = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    close(flow.convolution(t(x), t(wt), None, [2, 2], [1, 1], [1, 1], True, [1, 0], 1),
          torch.convolution(torch.tensor(x), torch.tensor(wt), None, [2, 2], [1, 1], [1, 1], True, [1, 0], 1).numpy(),
          1e-4)
    tl = torch.nn.LSTM(5, 4)
    params = [p.detach().numpy() for p in tl._flat_weights]
    xs, h = rng.standard_normal((3, 2, 5)).astype(np.float32), rng.standard_normal((1, 2, 4)).astype(np.float32)
    got = flow.lstm(t(xs), (t(h), t(h)), [t(p) for p in params], True, 1, 0.0, False, False, False)
    want = torch.lstm(torch.tensor(xs), (torch.tensor(h), torch.tensor(h)), [torch.tensor(p) for p in params],
                      True, 1, 0.0, False, False, False)
    for a, bb in zip(got, want):
        close(a, bb.detach().numpy(), 1e-5)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    for a, bb in zip(flow.gradient(t(y), spacing=2.0, edge_order=2), torch.gradient(torch.tensor(y), spacing=2.0,
                                                                                       edge_order=2)):
        close(a, bb.numpy())


# ---- uint16 / uint32 / uint64 (Note [Limited unsigned dtypes]) --------------------------------------------------

UNSIGNED = [(flow.uint16, np.uint16), (flow.uint32, np.uint32), (flow.uint64, np.uint64)]


@pytest.mark.parametrize("d,npd", UNSIGNED)
def test_limited_unsigned_dtypes_creation_conversion_printing(d, npd):
    assert not d.is_signed and not d.is_floating_point and d.itemsize == np.dtype(npd).itemsize
    info = flow.iinfo(d)
    assert (info.min, info.max, info.bits) == (0, int(np.iinfo(npd).max), 8 * np.dtype(npd).itemsize)
    x = flow.tensor([1, 2, 3], dtype=d)
    assert x.dtype is d and x.numpy().dtype == npd and x.tolist() == [1, 2, 3] and x[0].item() == 1
    assert repr(x) == f"tensor([1, 2, 3], dtype=oneflow_lite.{d.name})"
    assert x.type() == f"oneflow_lite.UInt{8 * np.dtype(npd).itemsize}Tensor"
    assert flow.from_numpy(np.array([4, 5], npd)).dtype is d and flow.tensor(np.array([4], npd)).dtype is d
    for made, value in ((flow.zeros(2, dtype=d), 0), (flow.ones(2, dtype=d), 1), (flow.full((2,), 7, dtype=d), 7)):
        assert made.dtype is d and made.tolist() == [value, value]
    assert flow.tensor([1.5, 2.7]).to(d).tolist() == [1, 2]
    close(x.float(), [1.0, 2.0, 3.0])
    assert x.long().dtype is flow.int64 and x.long().tolist() == [1, 2, 3]
    wrapped = flow.tensor([2 ** 32 + 5]).to(d)
    assert wrapped.tolist() == [int(np.array([2 ** 32 + 5]).astype(npd)[0])]
    assert flow.cat([x, x]).tolist() == [1, 2, 3, 1, 2, 3] and x[1:].tolist() == [2, 3]
    y = x.clone()
    y[0] = 9
    assert y.tolist() == [9, 2, 3] and y.dtype is d
    assert pickle.loads(pickle.dumps(x)).dtype is d and pickle.loads(pickle.dumps(d)) is d


@pytest.mark.parametrize("d,npd", UNSIGNED)
def test_limited_unsigned_ops_pytorch_runs(d, npd):
    a, b = np.array([3, 1, 2], npd), np.array([1, 1, 5], npd)
    x, y = t(a), t(b)
    assert (x * y).dtype is d and (x * y).tolist() == (a * b).tolist()
    assert (x * 2).dtype is d and (x * 2).tolist() == (a * 2).tolist()
    assert (x * flow.tensor(2)).dtype is d  # a 0-d int64 tensor keeps the dimensioned tensor's dtype
    assert (x == y).tolist() == (a == b).tolist() and (x != 1).tolist() == (a != 1).tolist()
    for got, want in ((x & y, a & b), (x | y, a | b), (x ^ y, a ^ b)):
        assert got.dtype is d and got.tolist() == want.tolist()
    values, indices = x.sort()
    assert values.tolist() == sorted(a.tolist()) and indices.tolist() == np.argsort(a).tolist()
    assert flow.where(t([True, False, True]), x, y).tolist() == [3, 1, 2]
    assert x.unique().tolist() == [1, 2, 3] and bool(x.all()) and bool(x.any())
    assert x.sum().dtype is flow.int64 and x.sum().item() == 6
    close(x / y, a / b)
    assert (x + flow.tensor([1.0, 1.0, 1.0])).dtype is flow.float32


def test_limited_unsigned_promotion_matches_pytorch():
    for d, _ in UNSIGNED:
        assert flow.promote_types(d, d) is d and flow.promote_types(d, flow.float32) is flow.float32
        assert flow.promote_types(flow.float64, d) is flow.float64
        for other in (flow.bool, flow.uint8, flow.int8, flow.int64) + tuple(u for u, _ in UNSIGNED if u is not d):
            with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported"):
                flow.promote_types(d, other)
        with pytest.raises(RuntimeError, match="Promotion for uint16"):
            flow.tensor([1], dtype=d) + flow.tensor([1])
        assert flow.can_cast(d, flow.int64) and not flow.can_cast(flow.float32, d)
    big = flow.tensor([2 ** 64 - 1, 2 ** 63 + 5], dtype=flow.uint64)
    assert big.tolist() == [2 ** 64 - 1, 2 ** 63 + 5]


def test_limited_unsigned_ops_pytorch_does_not_run_raise_naming_the_op():
    x = flow.tensor([1, 2], dtype=flow.uint32)
    with pytest.raises(Exception, match="broadcast_less.*uint32"):
        flow.lt(x, flow.tensor([2, 2], dtype=flow.uint32))
    with pytest.raises(Exception, match="negative.*uint32"):
        flow.neg(x)


def test_limited_unsigned_against_torch_oracle():
    torch = pytest.importorskip("torch")
    for d in ("uint16", "uint32", "uint64"):
        fd, td = getattr(flow, d), getattr(torch, d)
        for other in ("float32", "float64"):
            assert flow.promote_types(fd, getattr(flow, other)).name == str(
                torch.promote_types(td, getattr(torch, other))).split(".")[1]
        a = torch.tensor([3, 1, 2], dtype=td)
        x = flow.tensor([3, 1, 2], dtype=fd)
        assert (x * x).tolist() == (a * a).tolist() and x.sort()[1].tolist() == a.sort()[1].tolist()
        assert str(x).replace("oneflow_lite", "torch") == str(a)


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64", "bfloat16"])
def test_storage_dtypes_save_and_load(name, tmp_path):
    d = getattr(flow, name)
    x = flow.tensor([1, 2, 255], dtype=d)
    flow.save({"x": x}, tmp_path / "t.pt")
    loaded = flow.load(tmp_path / "t.pt")["x"]
    assert loaded.dtype is d and loaded.tolist() == [1, 2, 255]


# ---- real tensors' complex helpers, angle ------------------------------------------------------------------------

def test_conj_real_imag_on_real_tensors():
    x = flow.tensor([1.0, -2.0])
    for f in (flow.conj, flow.conj_physical, flow.conj_physical_, flow.real):
        assert f(x) is x
    assert x.conj() is x and x.conj_physical() is x and x.conj_physical_() is x and x.real is x
    x.real = flow.tensor([3.0, 4.0])
    close(x, [3.0, 4.0])
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        _ = x.imag
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        flow.imag(x)
    with pytest.raises(TypeError, match=r"conj\(\): argument 'input'"):
        flow.conj([1.0])
    assert flow.get_device(x) == -1 and flow.is_distributed(x) is False and flow.cudnn_is_acceptable(x) is False


def test_angle():
    values = np.array([1.0, -0.0, np.nan, -3.0, np.inf, -np.inf], np.float32)
    x = flow.tensor(values, requires_grad=True)
    y = flow.angle(x)
    close(y, np.where(np.isnan(values), np.nan, np.where(values < 0, np.pi, 0.0)))
    y.sum().backward()
    close(x.grad, np.zeros(6))
    assert flow.angle(flow.tensor([1, -1])).dtype == flow.float32
    assert flow.tensor([-1.0]).angle().item() == pytest.approx(np.pi)
    assert flow.angle(flow.tensor([-1.0], dtype=flow.float64)).dtype == flow.float64


# ---- binomial, empty_permuted, from_file, embedding_renorm_, bilinear -------------------------------------------

def test_binomial_moments_seed_and_errors():
    g = flow.Generator().manual_seed(3)
    n, p = 40.0, 0.25
    draws = flow.binomial(flow.full((4000,), n), flow.full((4000,), p), generator=g).numpy()
    assert draws.dtype == np.float32 and (draws == np.floor(draws)).all() and draws.min() >= 0 and draws.max() <= n
    assert abs(draws.mean() - n * p) < 0.2 and abs(draws.var() - n * p * (1 - p)) < 0.6
    again = flow.binomial(flow.full((4000,), n), flow.full((4000,), p), generator=flow.Generator().manual_seed(3))
    np.testing.assert_array_equal(again.numpy(), draws)
    close(flow.binomial(flow.tensor([5.0, 7.0]), flow.tensor([0.0, 1.0])), [0.0, 7.0])
    assert tuple(flow.binomial(flow.tensor([[3.0], [4.0]]), flow.tensor([0.5, 0.5])).shape) == (2, 2)
    with pytest.raises(RuntimeError, match="floating-point dtypes for count"):
        flow.binomial(flow.tensor([3]), flow.tensor([0.5]))
    with pytest.raises(RuntimeError, match="0 <= prob <= 1"):
        flow.binomial(flow.tensor([3.0]), flow.tensor([1.5]))


def test_empty_permuted_strides():
    x = flow.empty_permuted((2, 3, 4), (0, 2, 1))
    assert tuple(x.shape) == (2, 3, 4) and x.stride() == (12, 1, 3)
    y = flow.empty_permuted((2, 3), (1, 0), dtype=flow.int64, requires_grad=False)
    assert y.dtype == flow.int64 and y.stride() == (1, 2)
    assert flow.empty_permuted((2, 3), (0, 1), requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="not a permutation"):
        flow.empty_permuted((2, 3), (0, 0))


def test_from_file_copy_and_shared(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    x = flow.from_file(str(path), size=4)
    close(x, [0, 1, 2, 3])
    x[0] = 100.0
    assert np.fromfile(path, np.float32)[0] == 0.0  # a copy
    s = flow.from_file(str(path), shared=True, size=6)
    s[1] = 50.0
    assert np.fromfile(path, np.float32)[1] == 50.0  # the file itself
    fresh = flow.from_file(str(tmp_path / "new.bin"), True, 3, dtype=flow.int32)
    fresh += 7
    np.testing.assert_array_equal(np.fromfile(tmp_path / "new.bin", np.int32), [7, 7, 7])
    with pytest.raises(RuntimeError, match="holds 24 bytes"):
        flow.from_file(str(path), size=100)


def test_embedding_renorm_and_bilinear_at_torch_level():
    w = np.array([[1.0, -2.0], [3.0, 4.0], [0.3, 0.4]], np.float32)
    wt = flow.tensor(w)
    assert flow.embedding_renorm_(wt, flow.tensor([0, 2]), 1.0, 2.0) is wt
    ref = w.copy()
    ref[0] = w[0] / (np.linalg.norm(w[0]) + 1e-7)
    close(wt, ref, 1e-6)
    x1, x2, W = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), rng.standard_normal((5, 3, 4))
    close(flow.bilinear(t(x1), t(x2), t(W), None), np.einsum("bi,oij,bj->bo", x1, W, x2))


def test_assert_int_or_pair():
    F.assert_int_or_pair(3, "kernel_size", "{} must be int or pair")
    F.assert_int_or_pair((1, 2), "kernel_size", "{} must be int or pair")
    with pytest.raises(AssertionError, match="kernel_size must be int or pair"):
        F.assert_int_or_pair((1, 2, 3), "kernel_size", "{} must be int or pair")


# ---- fake quantization ------------------------------------------------------------------------------------------

def _fake_quant_ref(x, scale, zp, qmin, qmax):
    q = np.round(x / scale) + zp
    return (np.clip(q, qmin, qmax) - zp) * scale, (q >= qmin) & (q <= qmax)


def test_fake_quantize_per_tensor_affine_value_and_straight_through_gradient():
    x_np = rng.uniform(-3, 6, (4, 5)).astype(np.float32)
    x = flow.tensor(x_np, requires_grad=True)
    y = flow.fake_quantize_per_tensor_affine(x, 0.5, 2, 0, 12)
    ref, kept = _fake_quant_ref(x_np, 0.5, 2, 0, 12)
    close(y, ref, 1e-6)
    y.sum().backward()
    close(x.grad, kept.astype(np.float32))
    close(flow.fake_quantize_per_tensor_affine(t(x_np), flow.tensor(0.5), flow.tensor(2), 0, 12), ref, 1e-6)
    close(flow.fake_quantize_per_tensor_affine(flow.tensor([0.25, 0.75, 1.25]), 0.5, 0, -10, 10), [0.0, 1.0, 1.0])
    with pytest.raises(RuntimeError, match="`zero_point` must be between"):
        flow.fake_quantize_per_tensor_affine(x, 0.5, 20, 0, 12)
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or equal to `quant_max`"):
        flow.fake_quantize_per_tensor_affine(x, 0.5, 0, 5, 1)


def test_fake_quantize_per_channel_affine():
    x_np = rng.uniform(-3, 6, (3, 4)).astype(np.float32)
    scale, zp = np.array([0.5, 1.0, 0.25, 2.0], np.float32), np.array([0, 1, 2, 3], np.int32)
    x = flow.tensor(x_np, requires_grad=True)
    y = flow.fake_quantize_per_channel_affine(x, t(scale), t(zp), 1, 0, 7)
    ref, kept = _fake_quant_ref(x_np, scale, zp, 0, 7)
    close(y, ref, 1e-6)
    y.sum().backward()
    close(x.grad, kept.astype(np.float32))
    with pytest.raises(RuntimeError, match="dimensions of scale and input must be equal"):
        flow.fake_quantize_per_channel_affine(x, t(scale[:3]), t(zp[:3]), 1, 0, 7)


@pytest.mark.parametrize("dtype", [flow.float16, flow.bfloat16])
def test_fake_quantize_of_half_computes_in_float32_so_wide_ranges_work(dtype):
    # 30000 / 0.5 = 60000 rounds to 60000 and clamps to 100: (100 - 3) * 0.5 = 48.5; a quant_min of -100000 is
    # beyond float16's range, a bound all the same (PyTorch's kernel computes in float32 too)
    x = flow.tensor([1.0, 2.0, 30000.0, -7.0], dtype=dtype, requires_grad=True)
    y = flow.fake_quantize_per_tensor_affine(x, 0.5, 3, -100000, 100)
    assert y.dtype is dtype
    close(y.float(), [1.0, 2.0, 48.5, -7.0])
    y.sum().backward()
    close(x.grad.float(), [1.0, 1.0, 0.0, 1.0])
    y = flow.fake_quantize_per_channel_affine(x.detach().reshape(1, 4), flow.tensor([0.5]), flow.tensor([3]), 0,
                                              -100000, 100)
    close(y.float(), [[1.0, 2.0, 48.5, -7.0]])


# ---- lobpcg -----------------------------------------------------------------------------------------------------

def test_lobpcg_standard_and_generalized():
    m = rng.standard_normal((9, 9))
    A = m @ m.T
    E, X = flow.lobpcg(t(A), k=2)
    close(E, np.sort(np.linalg.eigvalsh(A))[::-1][:2], 1e-8)
    close(np.abs(X.numpy().T @ X.numpy()), np.eye(2), 1e-8)
    bm = rng.standard_normal((9, 9))
    B = bm @ bm.T + 9 * np.eye(9)
    E, X = flow.lobpcg(t(A), k=3, B=t(B), largest=False)
    close(E, np.sort(np.linalg.eigvals(np.linalg.solve(B, A)).real)[:3], 1e-8)
    Xn = X.numpy()
    close(A @ Xn, B @ Xn * E.numpy(), 1e-8)
    close(Xn.T @ B @ Xn, np.eye(3), 1e-8)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        flow.lobpcg(t(A), k=4)


def test_tail_against_torch_oracle():
    torch = pytest.importorskip("torch")
    x_np = np.array([[1.0, -2.0], [3.0, 4.4]], np.float32)
    close(flow.fake_quantize_per_tensor_affine(t(x_np), 0.5, 1, 0, 10),
          torch.fake_quantize_per_tensor_affine(torch.tensor(x_np), 0.5, 1, 0, 10).numpy())
    close(flow.angle(t(x_np)), torch.angle(torch.tensor(x_np)).numpy())
    assert flow.empty_permuted((2, 3, 4), (2, 0, 1)).stride() == torch.empty_permuted((2, 3, 4), (2, 0, 1)).stride()
    m = rng.standard_normal((9, 9))
    A = m @ m.T
    close(flow.lobpcg(t(A), k=2)[0], torch.lobpcg(torch.tensor(A), k=2)[0].numpy(), 1e-6)


# ---- grouped_mm -------------------------------------------------------------------------------------------------

def test_grouped_mm_forms_against_numpy():
    a = rng.standard_normal((8, 6))
    b3 = rng.standard_normal((2, 6, 5))
    offs = flow.tensor([3, 6], dtype=flow.int32)
    out = F.grouped_mm(t(a), t(b3), offs=offs).numpy()
    close(out[:3], a[:3] @ b3[0])
    close(out[3:6], a[3:6] @ b3[1])
    close(out[6:], np.zeros((2, 5)))
    a3, b2 = rng.standard_normal((2, 4, 6)), rng.standard_normal((6, 7))
    out = F.grouped_mm(t(a3), t(b2), offs=flow.tensor([3, 7], dtype=flow.int32)).numpy()
    close(out, np.concatenate([a3[0] @ b2[:, :3], a3[1] @ b2[:, 3:]], 1))
    b22 = rng.standard_normal((6, 5))
    out = F.grouped_mm(t(a), t(b22), offs=flow.tensor([2, 6], dtype=flow.int32)).numpy()
    close(out, np.stack([a[:, :2] @ b22[:2], a[:, 2:] @ b22[2:]]))
    a33 = rng.standard_normal((2, 4, 6))
    close(F.grouped_mm(t(a33), t(b3), out_dtype=flow.float32), (a33 @ b3).astype(np.float32))
    with pytest.raises(RuntimeError, match="Have to provide offsets"):
        F.grouped_mm(t(a), t(b3))
    with pytest.raises(RuntimeError, match="int32"):
        F.grouped_mm(t(a), t(b3), offs=flow.tensor([3, 6]))
    with pytest.raises(RuntimeError, match="Bias not supported"):
        F.grouped_mm(t(a33), t(b3), bias=flow.ones(5))


def test_grouped_mm_gradient():
    a = flow.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    b = flow.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    offs = flow.tensor([2, 5], dtype=flow.int32)
    assert flow.autograd.gradcheck(lambda x, y: F.grouped_mm(x, y, offs=offs), (a, b))


def test_grouped_mm_against_torch_oracle():
    torch = pytest.importorskip("torch")
    a, b = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((2, 16, 8)).astype(np.float32)
    got = F.grouped_mm(t(a), t(b), offs=flow.tensor([3, 8], dtype=flow.int32))
    want = torch.nn.functional.grouped_mm(torch.tensor(a), torch.tensor(b),
                                          offs=torch.tensor([3, 8], dtype=torch.int32))
    close(got, want.numpy(), 1e-4)
