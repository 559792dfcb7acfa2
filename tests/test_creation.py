"""flow.tensor, zeros / ones / full, arange, rand / randn: dtypes by PyTorch's rules, values against
NumPy formulas, devices, errors."""

import math

import numpy as np
import pytest

import oneflow_lite as flow


@pytest.fixture
def default_float64():
    flow.set_default_dtype(flow.float64)
    try:
        yield
    finally:
        flow.set_default_dtype(flow.float32)


# ---- flow.tensor --------------------------------------------------------------------------------
@pytest.mark.parametrize("data, dtype, expected", [
    (3, flow.int64, np.array(3)),
    (-2.5, flow.float32, np.array(-2.5)),
    (True, flow.bool, np.array(True)),
    ([1, 2, 3], flow.int64, np.array([1, 2, 3])),
    ((1, 2), flow.int64, np.array([1, 2])),
    ([1, 2.5], flow.float32, np.array([1.0, 2.5])),
    ([True, False], flow.bool, np.array([True, False])),
    ([True, 2], flow.int64, np.array([1, 2])),
    ([True, 0.5], flow.float32, np.array([1.0, 0.5])),
    ([[1, 2], [3, 4]], flow.int64, np.array([[1, 2], [3, 4]])),
    (((1.0,), (2.0,)), flow.float32, np.array([[1.0], [2.0]])),
    ([(1, 2), [3, 4]], flow.int64, np.array([[1, 2], [3, 4]])),
    ([], flow.float32, np.zeros(0)),
    ([[], []], flow.float32, np.zeros((2, 0))),
    ([[[1]]], flow.int64, np.array([[[1]]])),
    (2**62, flow.int64, np.array(2**62)),
    (np.float64(1.5), flow.float64, np.array(1.5)),
    (np.int32(-7), flow.int32, np.array(-7)),
    (np.bool_(True), flow.bool, np.array(True)),
    (np.array([1.5, 2.5]), flow.float64, np.array([1.5, 2.5])),
    (np.array([[1, 2]], dtype=np.uint8), flow.uint8, np.array([[1, 2]])),
    (np.array([1, 2], dtype=np.float16), flow.float16, np.array([1, 2])),
    (np.array(3, dtype=np.int16), flow.int16, np.array(3)),
    (np.array([1, 2], dtype=">i4"), flow.int32, np.array([1, 2])),
    (np.arange(12.0).reshape(3, 4)[:, ::2], flow.float64, np.array([[0, 2], [4, 6], [8, 10]])),
    ([np.float64(1.0), 2], flow.float64, np.array([1.0, 2.0])),
    ([np.int32(1), 2], flow.int64, np.array([1, 2])),
    ([np.array([1, 2]), np.array([3, 4])], flow.int64, np.array([[1, 2], [3, 4]])),
    ([np.array([1, 2], dtype=np.int8), [3, 4]], flow.int64, np.array([[1, 2], [3, 4]])),
])
def test_tensor_dtype_inference_and_values(data, dtype, expected):
    t = flow.tensor(data)
    assert t.dtype == dtype
    assert t.device == flow.device("cpu")
    assert t.shape == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected.astype(dtype.np_dtype))


def test_tensor_of_tensors():
    t = flow.tensor([flow.tensor(1.5), flow.tensor(2.5, dtype=flow.float64)])
    assert t.dtype == flow.float64 and t.tolist() == [1.5, 2.5]
    assert flow.tensor([flow.tensor([3])]).tolist() == [3]
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        flow.tensor([flow.tensor([1, 2]), flow.tensor([3, 4])])


def test_tensor_default_float(default_float64):
    assert flow.tensor(0.1).dtype == flow.float64
    assert flow.tensor(0.1).item() == 0.1
    assert flow.tensor([1, 0.5]).dtype == flow.float64


def test_tensor_with_dtype():
    assert flow.tensor([1.7, -1.7], dtype=flow.int32).tolist() == [1, -1]  # truncation, as a cast
    assert flow.tensor([-1, 256], dtype=flow.uint8).tolist() == [255, 0]  # wrap-around, as a cast
    assert flow.tensor([0, 2, 0.5], dtype=flow.bool).tolist() == [False, True, True]
    assert flow.tensor([1e300], dtype=flow.float64).item() == 1e300  # no detour through float32
    assert flow.tensor(0.1, dtype=flow.float64).item() == 0.1
    x = flow.tensor(np.array([1, 2], dtype=np.int16), dtype=flow.float16)
    assert x.dtype == flow.float16 and x.tolist() == [1.0, 2.0]


def test_tensor_copies():
    a = np.arange(3.0)
    t = flow.tensor(a)
    a[0] = 100.0
    assert t.tolist() == [0.0, 1.0, 2.0]
    assert not np.shares_memory(t.numpy(), a)
    u = flow.tensor(t)
    assert u is not t and not np.shares_memory(u.numpy(), t.numpy())
    assert u.dtype == flow.float64 and u.tolist() == [0.0, 1.0, 2.0]
    v = flow.tensor(t, dtype=flow.int64)
    assert v.dtype == flow.int64 and v.tolist() == [0, 1, 2]
    nested = [[1.0, 2.0]]
    w = flow.tensor(nested)
    nested[0][0] = 9.0
    assert w.tolist() == [[1.0, 2.0]]


def test_tensor_devices():
    m = flow.tensor([[1, 2, 3]], device="meta")
    assert m.is_meta and m.shape == (1, 3) and m.dtype == flow.int64
    m2 = flow.tensor([1.0], device=flow.device("meta"), dtype=flow.float16)
    assert m2.is_meta and m2.dtype == flow.float16
    assert flow.tensor(m).is_meta and flow.tensor(m) is not m
    c = flow.tensor([1.0], device="cpu:0")
    assert c.device == flow.device("cpu")


@pytest.mark.parametrize("data, exc, match", [
    ([[1, 2], [3]], ValueError, r"tensor\(\): expected sequence of length 2 at dim 1 \(got 1\)"),
    ([[1, 2], [3, 4, 5]], ValueError, r"expected sequence of length 2 at dim 1 \(got 3\)"),
    ([[1, 2], 3], ValueError, r"expected sequence of length 2 at dim 1 \(got int\)"),
    ([1, [2]], ValueError, r"expected a number at dim 1 of a nested sequence, got a sequence of length 1"),
    ([[[1]], [[1, 2]]], ValueError, r"expected sequence of length 1 at dim 2 \(got 2\)"),
    (["a"], TypeError, r"tensor\(\): Could not infer dtype of str"),
    ("abc", TypeError, r"Could not infer dtype of str"),
    (None, TypeError, r"Could not infer dtype of NoneType"),
    (1j, TypeError, r"Could not infer dtype of complex"),
    ({1: 2}, TypeError, r"Could not infer dtype of dict"),
    (np.array(["a"]), TypeError, (r"can't convert np.ndarray of type <U1. The only supported types are: "
                                 r"float64, float32, float16, int64, int32, int16, int8, uint8, bool")),
    (np.array([1 + 2j]), TypeError, r"can't convert np.ndarray of type complex128"),
    (np.array([1], dtype="datetime64[D]"), TypeError, r"can't convert np.ndarray of type datetime64\[D\]"),
    ([2**70], OverflowError, r"tensor\(\): a value does not fit in int64"),
])
def test_tensor_errors(data, exc, match):
    with pytest.raises(exc, match=match):
        flow.tensor(data)


def test_tensor_argument_errors():
    with pytest.raises(TypeError, match=r"tensor\(\): argument 'dtype' must be flow.dtype, not str"):
        flow.tensor([1], dtype="float32")
    with pytest.raises(TypeError, match=r"tensor\(\): argument 'device' must be flow.device or str, not int"):
        flow.tensor([1], device=0)
    with pytest.raises(RuntimeError, match="device: expected one of"):
        flow.tensor([1], device="cuda")


# ---- zeros / ones / full ------------------------------------------------------------------------
@pytest.mark.parametrize("fn, value", [(flow.zeros, 0), (flow.ones, 1)])
@pytest.mark.parametrize("args, shape", [((2, 3), (2, 3)), (((2, 3),), (2, 3)), (([4],), (4,)), ((5,), (5,)),
                                         (((),), ()), ((0, 2), (0, 2)), ((flow.Size([1, 2]),), (1, 2))])
def test_zeros_ones(fn, value, args, shape):
    t = fn(*args)
    assert t.shape == shape and t.dtype == flow.float32 and t.device == flow.device("cpu")
    np.testing.assert_array_equal(t.numpy(), np.full(shape, value, dtype=np.float32))


@pytest.mark.parametrize("dtype", [flow.bool, flow.uint8, flow.int8, flow.int32, flow.int64, flow.float16,
                                   flow.float64])
def test_zeros_ones_dtype(dtype):
    assert flow.zeros(2, dtype=dtype).tolist() == [dtype.np_dtype.type(0)] * 2
    o = flow.ones(1, 2, dtype=dtype)
    assert o.dtype == dtype and o.tolist() == [[dtype.np_dtype.type(1)] * 2]


def test_creation_on_meta():
    for t in (flow.zeros(2, 3, device="meta"), flow.ones((2, 3), device=flow.device("meta")),
              flow.full((2, 3), 7, device="meta"), flow.rand(2, 3, device="meta"), flow.randn(2, 3, device="meta")):
        assert t.is_meta and t.shape == (2, 3)
    assert flow.full((2, 3), 7, device="meta").dtype == flow.int64
    assert flow.arange(0, 10, 3, device="meta").shape == (4,)


def test_default_dtype_is_read_per_call(default_float64):
    assert flow.zeros(1).dtype == flow.float64
    assert flow.ones(1).dtype == flow.float64
    assert flow.rand(1).dtype == flow.float64
    assert flow.randn(1).dtype == flow.float64
    assert flow.full((1,), 0.5).dtype == flow.float64
    assert flow.arange(0.5).dtype == flow.float64


@pytest.mark.parametrize("fill, kwargs, dtype, expected", [
    (7, {}, flow.int64, [7, 7]),
    (True, {}, flow.bool, [True, True]),
    (2.5, {}, flow.float32, [2.5, 2.5]),
    (np.float64(2.5), {}, flow.float32, [2.5, 2.5]),
    (2.7, {"dtype": flow.int64}, flow.int64, [2, 2]),
    (-2.7, {"dtype": flow.int32}, flow.int32, [-2, -2]),
    (0.5, {"dtype": flow.bool}, flow.bool, [True, True]),
    (0, {"dtype": flow.bool}, flow.bool, [False, False]),
    (True, {"dtype": flow.float16}, flow.float16, [1.0, 1.0]),
    (-128, {"dtype": flow.int8}, flow.int8, [-128, -128]),
    (255, {"dtype": flow.uint8}, flow.uint8, [255, 255]),
    (float("inf"), {}, flow.float32, [math.inf, math.inf]),
    (2**62, {}, flow.int64, [2**62, 2**62]),
])
def test_full(fill, kwargs, dtype, expected):
    t = flow.full((2,), fill, **kwargs)
    assert t.dtype == dtype and t.tolist() == expected
    assert flow.full([1, 2], fill, **kwargs).shape == (1, 2)
    assert math.isnan(flow.full((1,), float("nan")).item())


@pytest.mark.parametrize("fill, dtype, match", [
    (1000, flow.int8, r"constant: value 1000 cannot be converted to type int8 without overflow"),
    (-1, flow.uint8, r"value -1 cannot be converted to type uint8 without overflow"),
    (256.0, flow.uint8, r"value 256.0 cannot be converted to type uint8 without overflow"),
    (float("inf"), flow.int64, r"value inf cannot be converted to type int64 without overflow"),
    (float("nan"), flow.int32, r"value nan cannot be converted to type int32 without overflow"),
    (1e300, flow.float32, r"value 1e\+300 cannot be converted to type float32 without overflow"),
    (70000, flow.float16, r"value 70000 cannot be converted to type float16 without overflow"),
])
def test_full_overflow(fill, dtype, match):
    with pytest.raises(RuntimeError, match=match):
        flow.full((2,), fill, dtype=dtype)


def test_creation_errors():
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[2, -1\]"):
        flow.zeros(2, -1)
    with pytest.raises(RuntimeError, match=r"negative dimension -3: \[-3\]"):
        flow.rand(-3)
    with pytest.raises(TypeError, match=r"argument 'dtype' \(keyword\) must be flow.dtype, not str"):
        flow.zeros(2, dtype="float32")
    with pytest.raises(TypeError, match=r"argument 'size' \(position 1\) must be int or tuple of ints, not float"):
        flow.ones(2.0)
    with pytest.raises(TypeError, match=r"argument 'fill_value' \(position 2\) must be Number, not str"):
        flow.full((2,), "x")


# ---- arange -------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, kwargs, dtype, expected", [
    ((5,), {}, flow.int64, [0, 1, 2, 3, 4]),
    ((2, 7), {}, flow.int64, [2, 3, 4, 5, 6]),
    ((1, 10, 3), {}, flow.int64, [1, 4, 7]),
    ((10, 0, -3), {}, flow.int64, [10, 7, 4, 1]),
    ((-3, 3, 2), {}, flow.int64, [-3, -1, 1]),
    ((3, 3), {}, flow.int64, []),
    ((0,), {}, flow.int64, []),
    ((4.0,), {}, flow.float32, [0.0, 1.0, 2.0, 3.0]),
    ((0, 1, 0.25), {}, flow.float32, [0.0, 0.25, 0.5, 0.75]),
    ((1, 2.5, 0.5), {}, flow.float32, [1.0, 1.5, 2.0]),
    ((1.0, -1.0, -0.5), {}, flow.float32, [1.0, 0.5, 0.0, -0.5]),
    ((5,), {"dtype": flow.float64}, flow.float64, [0.0, 1.0, 2.0, 3.0, 4.0]),
    ((0, 3), {"dtype": flow.int8}, flow.int8, [0, 1, 2]),
    ((0.5, 3), {"dtype": flow.int32}, flow.int32, [0, 1, 2]),
    ((2**60, 2**60 + 3), {}, flow.int64, [2**60, 2**60 + 1, 2**60 + 2]),
    ((), {"end": 3}, flow.int64, [0, 1, 2]),
    ((), {"start": 1, "end": 3}, flow.int64, [1, 2]),
    ((1,), {"end": 7, "step": 2}, flow.int64, [1, 3, 5]),
])
def test_arange(args, kwargs, dtype, expected):
    t = flow.arange(*args, **kwargs)
    assert t.dtype == dtype and t.shape == (len(expected),)
    assert t.tolist() == expected


@pytest.mark.parametrize("start, end, step", [(0, 1, 0.1), (0.5, 7.25, 0.75), (-2, 2, 0.3), (5, -5, -0.7),
                                              (0, 10, 3), (1e-3, 1.0, 0.013)])
def test_arange_size_and_values_formula(start, end, step):
    t = flow.arange(start, end, step, dtype=flow.float64)
    n = math.ceil((end - start) / step)
    assert t.shape == (n,)
    np.testing.assert_allclose(t.numpy(), [start + i * step for i in range(n)], rtol=0, atol=1e-12)


@pytest.mark.parametrize("args, kwargs, match", [
    ((0, 5, 0), {}, r"arange: step must be nonzero"),
    ((0.0, 1.0, 0.0), {}, r"arange: step must be nonzero"),
    ((5, 0), {}, r"arange: upper bound and lower bound inconsistent with step sign"),
    ((0, 5, -1), {}, r"upper bound and lower bound inconsistent with step sign"),
    ((-1,), {}, r"upper bound and lower bound inconsistent with step sign"),
    ((0, float("inf")), {}, r"arange: unsupported range: 0.0 -> inf"),
    ((float("nan"),), {}, r"unsupported range: 0.0 -> nan"),
    ((0, 5, float("inf")), {}, r"arange: unsupported step: inf"),
    ((0, 1e20, 1e-20), {}, r"arange: invalid size 1\d+, possible overflow\?"),
    ((-(2**62), 2**62), {}, r"arange: invalid size 9223372036854775808, possible overflow\?"),
    ((5,), {"dtype": flow.bool}, r"arange: not implemented for dtype bool"),
])
def test_arange_errors(args, kwargs, match):
    with pytest.raises(RuntimeError, match=match):
        flow.arange(*args, **kwargs)


def test_arange_signature_errors():
    with pytest.raises(TypeError, match=r"arange\(\) received an invalid combination of arguments - got "
                                        r"\(str\), but expected one of:\n \* arange\(Scalar end, \*"):
        flow.arange("5")


# ---- rand / randn -------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [flow.rand, flow.randn])
def test_random_seeding(fn):
    flow.manual_seed(123)
    a = fn(1000).numpy()
    b = fn(1000).numpy()
    flow.manual_seed(123)
    c = fn(1000).numpy()
    flow.manual_seed(124)
    d = fn(1000).numpy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)
    assert not np.array_equal(a, d)


def test_rand_distribution():
    x = flow.rand(200_000, dtype=flow.float64).numpy()
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.005
    assert abs(x.std() - 1 / math.sqrt(12)) < 0.005
    assert abs(np.mean(x < 0.25) - 0.25) < 0.005


def test_randn_distribution():
    x = flow.randn(400, 500).numpy()
    assert x.dtype == np.float32 and x.shape == (400, 500)
    assert abs(x.mean()) < 0.01
    assert abs(x.std() - 1.0) < 0.01
    assert abs(np.mean(np.abs(x) < 1.0) - 0.6827) < 0.005  # one-sigma mass of the standard normal


@pytest.mark.parametrize("dtype", [flow.float16, flow.float32, flow.float64])
def test_random_dtypes(dtype):
    u = flow.rand(100_000, dtype=dtype)
    assert u.dtype == dtype
    a = u.numpy()
    assert a.min() >= 0 and a.max() < 1  # float16 too: rounding never gives 1.0
    assert abs(float(a.astype(np.float64).mean()) - 0.5) < 0.01
    n = flow.randn(3, 4, dtype=dtype)
    assert n.dtype == dtype and n.shape == (3, 4)


@pytest.mark.parametrize("fn, op", [(flow.rand, "uniform"), (flow.randn, "normal")])
@pytest.mark.parametrize("dtype", [flow.int64, flow.int32, flow.bool, flow.uint8])
def test_random_rejects_non_float(fn, op, dtype):
    with pytest.raises(RuntimeError, match=rf"{op}: expected a floating point dtype \(float16, float32 or "
                                           rf"float64\), got {dtype.name}"):
        fn(2, dtype=dtype)


@pytest.mark.parametrize("fn", [flow.rand, flow.randn])
def test_explicit_generator(fn):
    default_state = flow.default_generator().get_state()
    g = flow.Generator()
    g.manual_seed(7)
    a = fn(5, generator=g).numpy()
    state_after = g.get_state()
    b = fn(5, generator=g).numpy()
    assert not np.array_equal(a, b)  # the generator advanced
    assert g.get_state() != state_after
    g.manual_seed(7)
    np.testing.assert_array_equal(fn(5, generator=g).numpy(), a)
    assert flow.default_generator().get_state() == default_state  # the default one was not used
    h = flow.Generator().manual_seed(7)
    np.testing.assert_array_equal(fn(2, 2, generator=h).numpy().ravel(), a[:4])


def test_generator_device_and_meta():
    with pytest.raises(RuntimeError, match=r"rand: Expected a 'cpu' device type for generator but found 'meta'"):
        flow.rand(2, generator=flow.Generator("meta"))
    state = flow.default_generator().get_state()
    m = flow.randn(3, device="meta")
    assert m.is_meta and flow.default_generator().get_state() == state  # meta draws nothing


def test_random_shapes():
    assert flow.rand(2, 3).shape == (2, 3)
    assert flow.rand((2, 3)).shape == (2, 3)
    assert flow.randn(()).shape == ()
    assert flow.rand(0, 4).shape == (0, 4)


def test_tensor_accepts_any_python_sequence():
    """PyTorch reads any object with the sequence protocol (range, deque, ...), nested too; str stays an error."""
    import collections
    t = flow.tensor(collections.deque([1.0, 2.5]))
    assert t.dtype == flow.float32 and t.numpy().tolist() == [1.0, 2.5]
    t = flow.tensor(range(2, 5))
    assert t.dtype == flow.int64 and t.numpy().tolist() == [2, 3, 4]
    t = flow.tensor([range(2), collections.deque([5, 6])])
    assert t.shape == (2, 2) and t.numpy().tolist() == [[0, 1], [5, 6]]
    t = flow.tensor(collections.deque([flow.tensor(1.5), flow.tensor(-2.0)]))
    assert t.numpy().tolist() == [1.5, -2.0]
    assert flow.tensor(range(0)).shape == (0,)
    with pytest.raises(TypeError, match="Could not infer dtype of str"):
        flow.tensor(collections.deque(["a"]))
