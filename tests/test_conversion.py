"""cast, Tensor.to / cpu / float / ..., and the device copy: values against a per-element Python
reference of PyTorch's cpu conversions, PyTorch's overloads and errors, meta tensors."""

import math

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.interpreters.op_interp_util import dispatch

ALL_DTYPES = [flow.bool, flow.uint8, flow.int8, flow.int16, flow.int32, flow.int64,
              flow.float16, flow.float32, flow.float64]
SAMPLES = {
    "bool": [True, False, True],
    "uint8": [0, 1, 7, 200, 255],
    "int8": [-128, -3, 0, 1, 100, 127],
    "int16": [-32768, -300, -1, 0, 255, 256, 32767],
    "int32": [-(2**31), -70000, -129, 0, 300, 65536, 2**31 - 1],
    "int64": [-(2**40) - 5, -1, 0, 1, 2**33 + 1, 2**40 + 3],
    "float16": [-300.25, -2.75, -0.5, -0.0, 0.0, 0.5, 1.5, 2.75, 255.5, 300.25],
    "float32": [-70000.5, -300.25, -2.7, -0.5, 0.0, 0.3, 1.5, 2.7, 300.25, 1e6],
    "float64": [-3e9, -300.25, -2.7, -0.5, 0.0, 1e-300, 1.5, 2.7, 300.25, 1e10],
}
_BITS = {"uint8": (8, False), "int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True)}


def _reference(value, target):
    """PyTorch's cpu conversion of one value: `!= 0` to bool; truncation toward zero then two's complement
    wrap-around to an integer type; round-to-nearest to a floating type."""
    if target is flow.bool:
        return value != 0
    if target.name in _BITS:
        bits, signed = _BITS[target.name]
        n = math.trunc(value) % (1 << bits)
        return n - (1 << bits) if signed and n >= 1 << (bits - 1) else n
    with np.errstate(over="ignore"):
        return np.array(float(value), dtype=target.np_dtype)  # float(int) is exact for every sample


@pytest.mark.parametrize("src", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", ALL_DTYPES, ids=lambda d: d.name)
def test_cast_every_pair(src, dst):
    values = np.array(SAMPLES[src.name], dtype=src.np_dtype).tolist()  # the values as stored in src
    x = flow.tensor(values, dtype=src)
    assert x.tolist() == values
    y = flow.cast(x, dst)
    assert y.dtype == dst and y.shape == x.shape
    expected = np.array([_reference(v, dst) for v in values], dtype=dst.np_dtype)
    np.testing.assert_array_equal(y.numpy(), expected)
    assert x.to(dst).dtype == dst
    m = flow.cast(x.to("meta"), dst)
    assert m.is_meta and m.dtype == dst and m.shape == x.shape


def test_cast_examples_like_pytorch():
    x = flow.tensor([-2.9, -1.5, -0.5, 0.5, 1.5, 2.9])
    assert x.to(flow.int64).tolist() == [-2, -1, 0, 0, 1, 2]
    assert x.to(flow.uint8).tolist() == [254, 255, 0, 0, 1, 2]
    assert flow.tensor([0.0, -0.0, 0.1, float("nan"), float("inf")]).bool().tolist() == [False, False, True,
                                                                                        True, True]
    assert flow.tensor([300, -1]).to(flow.int8).tolist() == [44, -1]
    assert flow.tensor([70000.0], dtype=flow.float64).half().tolist() == [math.inf]


def test_cast_nonfinite_to_int_is_quiet():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flow.tensor([float("nan"), float("inf"), 1e30]).to(flow.int32)  # value unspecified, as in PyTorch
        flow.tensor([1e300], dtype=flow.float64).float()


def test_cast_same_dtype_returns_input_and_new_dtype_copies():
    x = flow.tensor([1.0, 2.0])
    assert flow.cast(x, flow.float32) is x
    y = flow.cast(x, flow.float64)
    assert not np.shares_memory(y.numpy(), x.numpy())


def test_cast_signature_errors():
    with pytest.raises(TypeError, match=r"cast\(\): argument 'dtype' \(position 2\) must be flow.dtype, not str"):
        flow.cast(flow.tensor([1.0]), "float64")


# ---- dtype methods ------------------------------------------------------------------------------
@pytest.mark.parametrize("method, dtype", [
    ("float", flow.float32), ("double", flow.float64), ("half", flow.float16), ("int", flow.int32),
    ("long", flow.int64), ("bool", flow.bool), ("byte", flow.uint8), ("char", flow.int8), ("short", flow.int16),
])
def test_dtype_methods(method, dtype):
    x = flow.tensor([-1.5, 0.0, 2.5], dtype=flow.float64)
    y = getattr(x, method)()
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.numpy(), np.array([_reference(v, dtype) for v in (-1.5, 0.0, 2.5)],
                                                      dtype=dtype.np_dtype))
    assert getattr(y, method)() is y


# ---- Tensor.to ----------------------------------------------------------------------------------
def test_to_returns_self_when_nothing_changes():
    x = flow.tensor([1, 2])
    assert x.to(flow.int64) is x
    assert x.to("cpu") is x
    assert x.to("cpu:0") is x
    assert x.to(flow.device("cpu"), flow.int64) is x
    assert x.to(x) is x
    assert x.to(device="cpu", dtype=flow.int64) is x
    assert x.to() is x
    assert x.cpu() is x


def test_to_copy_true_copies():
    x = flow.tensor([1.0, 2.0])
    for y in (x.to(copy=True), x.to(flow.float32, copy=True), x.to("cpu", flow.float32, False, True),
              x.to(x, copy=True)):
        assert y is not x and y.dtype == flow.float32
        assert not np.shares_memory(y.numpy(), x.numpy())
        np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("call, device, dtype", [
    (lambda x: x.to(flow.float64), "cpu", flow.float64),
    (lambda x: x.to(dtype=flow.int8), "cpu", flow.int8),
    (lambda x: x.to("meta"), "meta", flow.float32),
    (lambda x: x.to(flow.device("meta")), "meta", flow.float32),
    (lambda x: x.to("meta", flow.float16), "meta", flow.float16),
    (lambda x: x.to(device="meta", dtype=flow.int32), "meta", flow.int32),
    (lambda x: x.to("meta", dtype=flow.bool), "meta", flow.bool),
    (lambda x: x.to(flow.zeros(1, dtype=flow.int16, device="meta")), "meta", flow.int16),
    (lambda x: x.to(other=flow.zeros(1, dtype=flow.uint8)), "cpu", flow.uint8),
    (lambda x: x.to(flow.int64, False, False), "cpu", flow.int64),
    (lambda x: x.to(flow.int64, non_blocking=True), "cpu", flow.int64),
])
def test_to_overloads(call, device, dtype):
    x = flow.tensor([[1.5, -2.5, 0.0]])
    y = call(x)
    assert y.device == flow.device(device) and y.dtype == dtype and y.shape == (1, 3)
    if device == "cpu":
        np.testing.assert_array_equal(y.numpy(), np.array([[_reference(v, dtype) for v in (1.5, -2.5, 0.0)]],
                                                          dtype=dtype.np_dtype))
    else:
        assert y.is_meta


def test_to_meta_and_back_errors():
    m = flow.tensor([1.0, 2.0]).to("meta")
    assert m.to("meta") is m
    assert m.to(flow.float64).is_meta
    for call in (lambda: m.to("cpu"), lambda: m.cpu(), lambda: m.to(flow.zeros(1)),
                 lambda: flow.tensor(m, device="cpu")):
        with pytest.raises(NotImplementedError, match=r"Cannot copy out of meta tensor; no data!"):
            call()
    m2 = m.to("meta", copy=True)
    assert m2 is not m and m2.is_meta


def test_copy_op_checks_device_when_dispatched_directly():
    op = OpBuilder("copy").input("in").output("out").build()
    m = flow.zeros(2, device="meta")
    with pytest.raises(NotImplementedError, match=r"copy: Cannot copy out of meta tensor; no data!"):
        dispatch(op, (m,), {"device": flow.device("cpu")})
    y = dispatch(op, (flow.tensor([3, 4]),), {"device": flow.device("meta")})[0]
    assert y.is_meta and y.dtype == flow.int64


@pytest.mark.parametrize("call", [
    lambda x: x.to(5),
    lambda x: x.to("cpu", "cpu"),
    lambda x: x.to(flow.float32, dtype=flow.float64),
    lambda x: x.to(flow.float32, device="cpu"),
    lambda x: x.to("cpu", device="cpu"),
    lambda x: x.to("cpu", flow.float32, dtype=flow.float32),
    lambda x: x.to(x, dtype=flow.float32),
    lambda x: x.to(x, other=x),
    lambda x: x.to(flow.float32, False, False, False),
    lambda x: x.to(flow.float32, copy=1),
    lambda x: x.to(flow.float32, True, non_blocking=True),
    lambda x: x.to(dtype="float32"),
    lambda x: x.to(device=0),
])
def test_to_invalid_arguments(call):
    x = flow.tensor([1.0])
    with pytest.raises(TypeError, match=r"to\(\) received an invalid combination of arguments - got .*but "
                                        r"expected one of:\n \* \(flow.dtype dtype"):
        call(x)


def test_to_accepts_memory_format_none_and_preserve_format():
    # PyTorch 2.13 accepts memory_format=None (its default) in every form of Tensor.to
    x = flow.tensor([1.0, 2.0])
    assert x.to(flow.float64, memory_format=None).dtype == flow.float64
    assert x.to(flow.float64, memory_format=flow.preserve_format).numpy().tolist() == [1.0, 2.0]
    assert x.to("cpu", memory_format=None) is x
    assert x.to(memory_format=None) is x
    with pytest.raises(TypeError, match="to\\(\\): argument 'memory_format' must be"):
        x.to(flow.float32, memory_format=3)
    with pytest.raises(TypeError, match="memory_format"):
        x.to(flow.float32, memory_format="channels_last")


def test_to_unknown_device():
    with pytest.raises(RuntimeError, match="device: expected one of"):
        flow.tensor([1.0]).to("cuda")
