"""[compat] torch.* creation and utility names: windows, ``tril_indices`` / ``triu_indices``, ``scalar_tensor``,
``empty_strided``, ``range``, ``frombuffer``, ``asarray``; tensor predicates, ``result_type``, ``can_cast``,
``finfo`` / ``iinfo``; the process switches (print options, threads, determinism, default device, matmul
precision, warn-always, anomaly flags, ``set_default_tensor_type``); the bfloat16 storage dtype."""

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError


# ---- windows ---------------------------------------------------------------------------------------------
def _symmetric(kind, n, alpha=0.54, beta=0.46):
    """The textbook formulas, i = 0 .. n-1."""
    i = np.arange(n, dtype=np.float64)
    if kind == "hann":
        return 0.5 - 0.5 * np.cos(2 * np.pi * i / (n - 1))
    if kind == "hamming":
        return alpha - beta * np.cos(2 * np.pi * i / (n - 1))
    if kind == "blackman":
        return 0.42 - 0.5 * np.cos(2 * np.pi * i / (n - 1)) + 0.08 * np.cos(4 * np.pi * i / (n - 1))
    if kind == "bartlett":
        return 1 - np.abs(2 * i / (n - 1) - 1)
    x = 2 * i / (n - 1) - 1  # kaiser with shape parameter beta
    return np.i0(beta * np.sqrt(1 - x ** 2)) / np.i0(beta)


@pytest.mark.parametrize("kind", ["hann", "hamming", "blackman", "bartlett", "kaiser"])
@pytest.mark.parametrize("n", [2, 5, 8])
def test_windows_match_their_formulas(kind, n):
    fn = getattr(flow, f"{kind}_window")
    extra = {"kaiser": {"beta": 12.0}}.get(kind, {})
    sym = fn(n, periodic=False, dtype=flow.float64)
    np.testing.assert_allclose(sym.numpy(), _symmetric(kind, n, **extra), atol=1e-12)
    per = fn(n, dtype=flow.float64)  # periodic: the symmetric window of n + 1 without its last point
    np.testing.assert_allclose(per.numpy(), _symmetric(kind, n + 1, **extra)[:-1], atol=1e-12)
    assert fn(n).dtype is flow.float32 and tuple(fn(n).shape) == (n,)


def test_window_parameters_and_edge_lengths():
    np.testing.assert_allclose(flow.hamming_window(6, False, 0.5, 0.5, dtype=flow.float64).numpy(),
                               _symmetric("hann", 6), atol=1e-12)
    np.testing.assert_allclose(flow.kaiser_window(7, False, beta=5.0, dtype=flow.float64).numpy(),
                               np.kaiser(7, 5.0), atol=1e-12)
    np.testing.assert_allclose(flow.hann_window(4).numpy(), [0.0, 0.5, 1.0, 0.5], atol=1e-7)
    assert flow.hann_window(1).tolist() == [1.0] and flow.hann_window(0).tolist() == []
    assert flow.bartlett_window(3, requires_grad=True).requires_grad
    assert flow.hann_window(5, device="meta").is_meta


def test_window_errors():
    with pytest.raises(RuntimeError, match="hann_window expects floating point dtypes, got int64"):
        flow.hann_window(4, dtype=flow.int64)
    with pytest.raises(RuntimeError, match="kaiser_window requires non-negative window_length"):
        flow.kaiser_window(-1)


# ---- triangle indices ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("row, col, offset", [(3, 3, 0), (3, 4, 1), (4, 3, -1), (3, 4, -5), (2, 5, 7), (0, 3, 0),
                                              (3, 0, 0)])
def test_tril_and_triu_indices_match_numpy(row, col, offset):
    lower = flow.tril_indices(row, col, offset)
    upper = flow.triu_indices(row, col, offset)
    np.testing.assert_array_equal(lower.numpy(), np.stack(np.tril_indices(row, offset, col)).reshape(2, -1))
    np.testing.assert_array_equal(upper.numpy(), np.stack(np.triu_indices(row, offset, col)).reshape(2, -1))
    assert lower.dtype is flow.int64


def test_triangle_indices_dtype_device_errors():
    assert flow.tril_indices(3, 3, dtype=flow.int32).dtype is flow.int32
    m = flow.triu_indices(4, 4, 1, device="meta")
    assert m.is_meta and tuple(m.shape) == (2, 6)
    with pytest.raises(RuntimeError, match="expected dtype int32 or int64, got float32"):
        flow.tril_indices(3, 3, dtype=flow.float32)
    with pytest.raises(RuntimeError, match="row and col must be non-negative"):
        flow.tril_indices(-1, 3)


# ---- scalar_tensor, empty_strided, range, frombuffer, asarray --------------------------------------------------
def test_scalar_tensor():
    t = flow.scalar_tensor(3)
    assert t.ndim == 0 and t.dtype is flow.float32 and t.item() == 3.0
    assert flow.scalar_tensor(True).item() == 1.0
    assert flow.scalar_tensor(2, dtype=flow.int64).dtype is flow.int64


def test_uint64_constants_beyond_int64():
    # the constant op's int64 attr carries them as two's complement (Note [uint64 constants])
    got = flow.full((2,), 2 ** 64 - 3, dtype=flow.uint64)
    assert got.numpy().tolist() == [2 ** 64 - 3] * 2 and got.dtype is flow.uint64
    assert flow.full((1,), 2 ** 63, dtype=flow.uint64).numpy().tolist() == [2 ** 63]
    # PyTorch converts -2 to uint64 as 2**64 - 2 for a scalar operand: 1 | (2**64 - 2) = 2**64 - 1
    assert flow.bitwise_or(flow.tensor([1], dtype=flow.uint64), -2).numpy().tolist() == [2 ** 64 - 1]
    for bad in (-1, 2 ** 64):
        with pytest.raises(RuntimeError, match=f"value {bad} cannot be converted to type uint64 without overflow"):
            flow.full((2,), bad, dtype=flow.uint64)


def test_empty_strided():
    t = flow.empty_strided((2, 3), (3, 1), dtype=flow.float64)
    assert tuple(t.shape) == (2, 3) and t.dtype is flow.float64
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        flow.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match=r"empty_strided: Negative strides are not supported .* \[5, -5, 2\]"):
        flow.empty_strided([1, 2, 4], [5, -5, 2])


@pytest.fixture
def warn_always():
    flow.set_warn_always(True)
    yield
    flow.set_warn_always(False)


def test_range_is_inclusive_and_deprecated(warn_always):
    with pytest.warns(UserWarning, match="range is deprecated"):
        t = flow.range(1, 4)
    assert t.dtype is flow.float32 and t.tolist() == [1.0, 2.0, 3.0, 4.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert flow.range(0, 1, 0.25, dtype=flow.float64).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
        assert flow.range(5, 1, -2, dtype=flow.int64).tolist() == [5, 3, 1]
        assert flow.range(0, 0.9, 0.5).tolist() == [0.0, 0.5]
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            flow.range(0, 1, 0)
        with pytest.raises(RuntimeError, match="inconsistent with step sign"):
            flow.range(3, 1)


def test_frombuffer_shares_memory(warn_always):
    buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
    t = flow.frombuffer(buf, dtype=flow.int32)
    assert t.tolist() == [0, 1, 2, 3, 4, 5]
    t[0] = 9
    assert np.frombuffer(buf, dtype=np.int32)[0] == 9
    assert flow.frombuffer(buf, dtype=flow.int32, count=2, offset=8).tolist() == [2, 3]
    with pytest.warns(UserWarning, match="not writable"):
        readonly = flow.frombuffer(b"\x01\x02", dtype=flow.uint8)
    assert readonly.tolist() == [1, 2]
    with pytest.raises(ValueError, match="frombuffer"):
        flow.frombuffer(bytearray(3), dtype=flow.int32)
    with pytest.raises(TypeError, match="does not implement the buffer protocol"):
        flow.frombuffer([1, 2], dtype=flow.int32)


def test_asarray_copy_semantics():
    a = np.arange(3.0)
    shared = flow.asarray(a)
    shared[0] = 7
    assert a[0] == 7
    copied = flow.asarray(a, copy=True)
    copied[1] = -1
    assert a[1] == 1
    t = flow.ones(2)
    assert flow.asarray(t) is t and flow.asarray(t, copy=False) is t
    assert flow.asarray(t, dtype=flow.float64).dtype is flow.float64
    with pytest.raises(ValueError, match="copy=False"):
        flow.asarray(t, dtype=flow.float64, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        flow.asarray([1, 2], copy=False)
    assert flow.asarray([1.5, 2], requires_grad=True).requires_grad


# ---- predicates and type helpers --------------------------------------------------------------------------------
def test_tensor_predicates():
    x = flow.ones(2, 3)
    assert flow.is_tensor(x) and flow.is_tensor(flow.nn.Parameter(x)) and not flow.is_tensor([1])
    assert not flow.is_storage(x)
    assert flow.numel(x) == 6 and flow.is_floating_point(x) and not flow.is_floating_point(flow.ones(1).long())
    assert not flow.is_complex(x) and flow.is_signed(x) and not flow.is_signed(flow.ones(1, dtype=flow.bool))
    assert flow.is_nonzero(flow.tensor([1])) and flow.is_same_size(x, flow.zeros(2, 3))
    with pytest.raises(TypeError, match=r"numel\(\): argument 'input' \(position 1\) must be Tensor"):
        flow.numel([1, 2])


def test_result_type_follows_promotion():
    assert flow.result_type(flow.tensor([1, 2]), 1.0) is flow.float32
    assert flow.result_type(flow.tensor([1, 2], dtype=flow.int8), 1000) is flow.int8
    assert flow.result_type(flow.tensor([1], dtype=flow.uint8), flow.tensor([1], dtype=flow.int8)) is flow.int16
    assert flow.result_type(flow.tensor([1.0], dtype=flow.float16), flow.tensor(1.0, dtype=flow.float64)) \
        is flow.float16
    assert flow.result_type(2, 3.0) is flow.float32 and flow.result_type(True, False) is flow.bool
    with pytest.raises(TypeError, match="argument 'tensor2' must be Tensor or Number"):
        flow.result_type(flow.ones(1), "a")


def test_can_cast_and_promote_types():
    b, i, f = flow.bool, flow.int64, flow.float32
    assert flow.can_cast(b, i) and flow.can_cast(i, f) and flow.can_cast(flow.float64, flow.float16)
    assert flow.can_cast(flow.int64, flow.uint8)
    assert not flow.can_cast(f, i) and not flow.can_cast(i, b) and not flow.can_cast(f, b)
    assert flow.promote_types(flow.bfloat16, flow.float16) is flow.float32
    assert flow.promote_types(flow.bfloat16, flow.int64) is flow.bfloat16
    assert flow.promote_types(flow.bfloat16, flow.float64) is flow.float64
    with pytest.raises(TypeError, match="argument 'to' must be flow.dtype"):
        flow.can_cast(f, "int")


def test_finfo_and_iinfo():
    f = flow.finfo(flow.float32)
    assert f.bits == 32 and f.eps == 2.0 ** -23 and f.max == (2 - 2.0 ** -23) * 2.0 ** 127 and f.min == -f.max
    assert f.tiny == f.smallest_normal == 2.0 ** -126 and f.resolution == 1e-6 and f.dtype == "float32"
    h = flow.finfo(flow.float16)
    assert (h.bits, h.eps, h.max, h.tiny, h.resolution) == (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 1e-3)
    bf = flow.finfo(flow.bfloat16)
    assert (bf.bits, bf.eps, bf.tiny, bf.resolution, bf.dtype) == (16, 2.0 ** -7, 2.0 ** -126, 0.01, "bfloat16")
    assert bf.max == (2 - 2.0 ** -7) * 2.0 ** 127
    assert flow.finfo().dtype == "float32" and flow.finfo(flow.float64).eps == 2.0 ** -52
    i = flow.iinfo(flow.int8)
    assert (i.bits, i.min, i.max, i.dtype) == (8, -128, 127, "int8")
    assert flow.iinfo(flow.int64).max == 2 ** 63 - 1 and flow.iinfo(flow.uint8).min == 0
    with pytest.raises(TypeError, match=r"finfo\(\) requires a floating point input type"):
        flow.finfo(flow.int32)
    with pytest.raises(TypeError, match=r"iinfo\(\) requires an integer input type"):
        flow.iinfo(flow.float32)
    with pytest.raises(TypeError, match=r"iinfo\(\) requires an integer input type"):
        flow.iinfo(flow.bool)


def test_typename_and_set_default_tensor_type():
    assert flow.typename(flow.ones(1)) == "oneflow_lite.FloatTensor"
    assert flow.typename(np.ndarray) == "numpy.ndarray" and flow.typename(1) == "int"
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            flow.set_default_tensor_type(flow.DoubleTensor)
        assert flow.get_default_dtype() is flow.float64 and flow.tensor([1.5]).dtype is flow.float64
        with pytest.warns(UserWarning):
            flow.set_default_tensor_type("torch.FloatTensor")
        assert flow.get_default_dtype() is flow.float32
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating point cpu types"):
            flow.set_default_tensor_type(flow.LongTensor)
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating point cpu types"):
            flow.set_default_tensor_type("torch.cuda.FloatTensor")
    finally:
        flow.set_default_dtype(flow.float32)


# ---- process switches ----------------------------------------------------------------------------------------------
@pytest.fixture
def default_printoptions():
    yield
    flow.set_printoptions(profile="default", sci_mode=None)


def test_printoptions_change_repr(default_printoptions):
    t = flow.tensor([1.23456, 2.5])
    assert "1.2346" in repr(t)
    flow.set_printoptions(precision=2)
    assert "1.23" in repr(t) and "1.235" not in repr(t)
    flow.set_printoptions(profile="default", sci_mode=True)
    assert "1.2346e+00" in repr(t)
    flow.set_printoptions(sci_mode=False)
    assert "e-" not in repr(flow.tensor([1e-8, 1.0]))
    flow.set_printoptions(threshold=5, edgeitems=2)
    assert "..." in repr(flow.arange(10)) and repr(flow.arange(10)).count(",") == 4 + 1
    flow.set_printoptions(profile="full")
    assert "..." not in repr(flow.arange(2000))
    flow.set_printoptions(profile="short")
    assert flow.get_printoptions()["precision"] == 2
    flow.set_printoptions(profile="default", linewidth=20)
    lines = repr(flow.arange(30)).splitlines()
    assert len(lines) > 3 and all(len(line) <= 20 for line in lines[:-1])
    with pytest.raises(ValueError, match="profile must be one of"):
        flow.set_printoptions(profile="long")
    with pytest.raises(TypeError, match="'precision' must be a non-negative int"):
        flow.set_printoptions(precision=-1)


def test_thread_counts_are_recorded():
    before = flow.get_num_threads(), flow.get_num_interop_threads()
    try:
        flow.set_num_threads(3)
        flow.set_num_interop_threads(2)
        assert flow.get_num_threads() == 3 and flow.get_num_interop_threads() == 2
        with pytest.raises(RuntimeError, match="Expected number of threads to be positive"):
            flow.set_num_threads(0)
        with pytest.raises(TypeError, match="must be int"):
            flow.set_num_threads(1.5)
        assert flow.init_num_threads() is None and flow.get_num_threads() == 3
    finally:
        flow.set_num_threads(before[0])
        flow.set_num_interop_threads(before[1])


def test_set_flush_denormal_reports_it_cannot_be_set():
    assert flow.set_flush_denormal(True) is False and flow.set_flush_denormal(False) is False
    tiny = np.float32(1e-40)  # a float32 denormal stays a denormal
    assert flow.tensor([tiny]).item() != 0.0
    with pytest.raises(TypeError, match="argument 'mode' must be bool"):
        flow.set_flush_denormal(1)


def test_determinism_flags():
    try:
        assert not flow.are_deterministic_algorithms_enabled() and flow.get_deterministic_debug_mode() == 0
        flow.use_deterministic_algorithms(True, warn_only=True)
        assert flow.are_deterministic_algorithms_enabled() and flow.is_deterministic_algorithms_warn_only_enabled()
        assert flow.get_deterministic_debug_mode() == 1
        flow.set_deterministic_debug_mode("error")
        assert flow.get_deterministic_debug_mode() == 2 and not flow.is_deterministic_algorithms_warn_only_enabled()
        flow.set_deterministic_debug_mode(0)
        assert not flow.are_deterministic_algorithms_enabled()
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            flow.set_deterministic_debug_mode("loud")
        with pytest.raises(TypeError, match="argument 'mode' must be bool"):
            flow.use_deterministic_algorithms(1)
    finally:
        flow.use_deterministic_algorithms(False)


def test_default_device_meta_makes_tensors_on_meta():
    assert flow.get_default_device() == flow.device("cpu")
    try:
        flow.set_default_device("meta")
        assert flow.get_default_device() == flow.device("meta")
        for t in (flow.zeros(2), flow.ones(2), flow.rand(3), flow.arange(4), flow.tensor([1.0]), flow.eye(2),
                  flow.hann_window(3), flow.Tensor(2, 2)):
            assert t.is_meta, t
        assert flow.zeros(2, device="cpu").is_cpu
    finally:
        flow.set_default_device(None)
    assert flow.zeros(1).is_cpu
    with pytest.raises(RuntimeError, match="expected one of"):
        flow.set_default_device("tpu")


def test_matmul_precision_and_warn_always_and_anomaly_flags():
    try:
        flow.set_float32_matmul_precision("high")
        assert flow.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="expected 'highest', 'high' or 'medium'"):
            flow.set_float32_matmul_precision("low")
    finally:
        flow.set_float32_matmul_precision("highest")
    assert not flow.is_warn_always_enabled()
    flow.set_warn_always(True)
    assert flow.is_warn_always_enabled()
    flow.set_warn_always(False)
    try:
        flow.set_anomaly_enabled(True, check_nan=False)
        assert flow.is_anomaly_enabled() and not flow.is_anomaly_check_nan_enabled()
    finally:
        flow.set_anomaly_enabled(False)
    assert not flow.is_anomaly_enabled() and flow.is_anomaly_check_nan_enabled()


# ---- bfloat16 ---------------------------------------------------------------------------------------------------------
def _bf16_round(values):
    """Round-to-nearest-even to 8 significant bits, by hand (bfloat16's rounding of float32)."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


def test_bfloat16_creation_cast_and_values():
    values = [1.1, -2.7, 3.14159, 1e-3, 65504.0, 300.5]
    t = flow.tensor(values, dtype=flow.bfloat16)
    assert t.dtype is flow.bfloat16 and t.element_size() == 2 and t.is_floating_point()
    np.testing.assert_array_equal(t.float().numpy(), _bf16_round(values))
    assert t.numpy().dtype == ml_dtypes.bfloat16
    back = flow.tensor(values).to(flow.bfloat16)
    np.testing.assert_array_equal(back.float().numpy(), _bf16_round(values))
    assert flow.ones(2).bfloat16().dtype is flow.bfloat16 and t.bfloat16() is t
    assert flow.tensor([1.5]).type(flow.BFloat16Tensor).dtype is flow.bfloat16
    assert t.to(flow.float64).dtype is flow.float64 and t.to(flow.int32).tolist() == [1, -2, 3, 0, 65536, 300]
    assert flow.zeros(2, dtype=flow.bfloat16).tolist() == [0.0, 0.0]
    assert flow.full((2,), 1.1, dtype=flow.bfloat16).float().tolist() == [1.1015625, 1.1015625]
    assert flow.arange(3, dtype=flow.bfloat16).tolist() == [0.0, 1.0, 2.0]
    assert flow.from_numpy(np.ones(2, ml_dtypes.bfloat16)).dtype is flow.bfloat16
    r = flow.rand(1000, dtype=flow.bfloat16).float().numpy()
    assert r.min() >= 0 and r.max() < 1
    assert flow.randn(3, dtype=flow.bfloat16).dtype is flow.bfloat16


def test_bfloat16_printing_indexing_and_shape_ops():
    t = flow.tensor([1.5, 2.25, -3.0], dtype=flow.bfloat16)
    assert repr(t) == "tensor([ 1.50,  2.25, -3.00], dtype=oneflow_lite.bfloat16)"
    assert f"{t[1]:.3f}" == "2.250" and t[0].item() == 1.5
    assert t[1:].tolist() == [2.25, -3.0] and tuple(t.reshape(3, 1).shape) == (3, 1)
    assert flow.cat([t, t]).tolist() == [1.5, 2.25, -3.0] * 2 and t.clone().dtype is flow.bfloat16


def test_bfloat16_ops_without_a_kernel_fail_cleanly():
    t = flow.tensor([1.5, 2.25], dtype=flow.bfloat16)
    # (t + t, t @ t, t.relu(), t.argmax(), layer_norm and the convolutions have bfloat16 kernels since:
    # tests/test_bfloat16_kernels.py)
    for call in (lambda: flow.fmod(t, t), lambda: t.cumprod(0), lambda: t.cumsum(0), lambda: t.sort(),
                 lambda: t.var(), lambda: flow.atan2(t, t), lambda: t.logsumexp(0),
                 lambda: flow.nn.functional.avg_pool1d(t.reshape(1, 1, 2), 2)):
        with pytest.raises(OpKernelNotFoundError, match="bfloat16"):
            call()


def _rounded(a):
    return _bf16_round(np.asarray(a, np.float32))


def test_bfloat16_arithmetic_computes_in_float32_and_rounds():
    rng = np.random.default_rng(0)
    a, b = _rounded(rng.standard_normal((3, 4))), _rounded(rng.standard_normal((3, 4)) + 3)
    x, y = flow.tensor(a).bfloat16(), flow.tensor(b).bfloat16()
    cases = {
        "div": (x / y, a / b), "pow": (y ** x, b ** a), "maximum": (flow.maximum(x, y), np.maximum(a, b)),
        "scalar": (x * 2.5 + 1, _rounded(a * 2.5) + 1),  # two ops, each rounds
        "exp": (x.exp(), np.exp(a)), "sigmoid": (x.sigmoid(), 1 / (1 + np.exp(-a))), "sqrt": (y.sqrt(), np.sqrt(b)),
        "sum": (x.sum(), a.sum()), "mean": (x.mean(1), a.mean(1)), "max": (x.max(), a.max()),
        "softmax": (flow.softmax(x, 1), np.exp(a) / np.exp(a).sum(1, keepdims=True)),
        "where": (flow.where(x > 0, x, y), np.where(a > 0, a, b)),
    }
    for name, (got, expected) in cases.items():
        assert got.dtype is flow.bfloat16, name
        np.testing.assert_allclose(got.float().numpy(), _rounded(expected), rtol=2 ** -8, err_msg=name)
    assert (x > y).dtype is flow.bool and (x > y).tolist() == (a > b).tolist()
    assert (x == x.clone()).tolist() == [[True] * 4] * 3


def test_bfloat16_sum_accumulates_in_float32():
    ones = flow.ones(4096, dtype=flow.bfloat16)
    assert ones.sum().item() == 4096.0  # bfloat16 accumulation would stop at 256


def test_bfloat16_tensors_train():
    w = flow.tensor([0.5, -1.0, 2.0], dtype=flow.bfloat16, requires_grad=True)
    flow.sigmoid(w * 2.0).sum().backward()
    s = _rounded(1 / (1 + np.exp(-2 * np.array([0.5, -1.0, 2.0]))))  # the saved output is bfloat16, as in PyTorch
    assert w.grad.dtype is flow.bfloat16
    np.testing.assert_allclose(w.grad.float().numpy(), 2 * _rounded(s * (1 - s)), rtol=2 ** -7)


def test_bfloat16_matches_torch():
    torch = pytest.importorskip("torch")
    values = [1.1, -2.7, 3.14159, 1e-3, 300.5]
    mine = flow.tensor(values, dtype=flow.bfloat16).float().numpy()
    theirs = torch.tensor(values, dtype=torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(mine, theirs)
    for name in ("eps", "max", "min", "tiny", "resolution"):
        assert getattr(flow.finfo(flow.bfloat16), name) == getattr(torch.finfo(torch.bfloat16), name)
    assert str(torch.promote_types(torch.bfloat16, torch.float16)) == "torch." + flow.promote_types(
        flow.bfloat16, flow.float16).name
    for n in (1, 5, 8):
        for kind in ("hann", "hamming", "blackman", "bartlett", "kaiser"):
            np.testing.assert_allclose(getattr(flow, f"{kind}_window")(n, dtype=flow.float64).numpy(),
                                       getattr(torch, f"{kind}_window")(n, dtype=torch.float64).numpy(),
                                       atol=1e-12)
    for args in ((3, 4, 1), (4, 3, -1)):
        assert flow.tril_indices(*args).tolist() == torch.tril_indices(*args).tolist()
        assert flow.triu_indices(*args).tolist() == torch.triu_indices(*args).tolist()
    a, b = np.array([[1.1, -2.7], [0.3, 5.0]]), np.array([[3.3, 1.7], [2.2, 4.1]])
    mx, my = flow.tensor(a, dtype=flow.bfloat16), flow.tensor(b, dtype=flow.bfloat16)
    tx, ty = torch.tensor(a, dtype=torch.bfloat16), torch.tensor(b, dtype=torch.bfloat16)
    for mine, theirs in ((mx / my, tx / ty), (mx.exp(), tx.exp()), (mx.sum(), tx.sum()), (mx * 2.5, tx * 2.5),
                         (flow.softmax(mx, 1), torch.softmax(tx, 1)), (my.sqrt(), ty.sqrt())):
        np.testing.assert_allclose(mine.float().numpy(), theirs.float().numpy(), rtol=2 ** -7)
    for a, b in ((flow.float32, flow.int32), (flow.int64, flow.bool), (flow.float64, flow.float16)):
        assert flow.can_cast(a, b) == torch.can_cast(getattr(torch, a.name), getattr(torch, b.name))
    assert math.isclose(flow.finfo(flow.float32).resolution, torch.finfo(torch.float32).resolution)


# ---- anomaly mode -------------------------------------------------------------------------------------------------------
def test_detect_anomaly_names_the_node_that_returned_nan():
    x = flow.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        guard = flow.autograd.detect_anomaly()
    with guard:
        assert flow.is_anomaly_enabled()
        y = (x / x).sum()  # d(x/x)/d(denominator) = -x / x**2: NaN at 0
        with pytest.raises(RuntimeError, match=r"Function 'DivBackward' returned nan values in its 1th output"):
            y.backward()
    assert not flow.is_anomaly_enabled()
    x2 = flow.tensor([0.0, 1.0], requires_grad=True)
    (x2 / x2).sum().backward()  # outside anomaly mode the NaN propagates, as in PyTorch
    assert np.isnan(x2.grad.numpy()[0])


def test_anomaly_mode_passes_finite_gradients_and_can_skip_the_nan_check():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    with flow.autograd.set_detect_anomaly(True):
        (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    z = flow.tensor([0.0], requires_grad=True)
    with flow.autograd.set_detect_anomaly(True, check_nan=False):
        (z / z).sum().backward()  # no check: no error
    assert not flow.is_anomaly_enabled()


def test_set_detect_anomaly_as_a_function():
    try:
        flow.autograd.set_detect_anomaly(True)
        assert flow.is_anomaly_enabled()
    finally:
        flow.autograd.set_detect_anomaly(False)
    assert not flow.is_anomaly_enabled()
    with pytest.raises(TypeError, match="argument 'mode' must be bool"):
        flow.autograd.set_detect_anomaly("yes")
