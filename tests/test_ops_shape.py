"""reshape / view / transpose: values against NumPy, PyTorch's errors, meta shapes, memory sharing."""

import numpy as np
import pytest

import oneflow_lite as flow

ALL_DTYPES = [flow.bool, flow.uint8, flow.int8, flow.int16, flow.int32, flow.int64,
              flow.float16, flow.float32, flow.float64]


def _arange(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)


# ---- reshape ------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, expected_shape", [
    (lambda x: x.reshape(3, 4), (3, 4)),
    (lambda x: x.reshape((3, 4)), (3, 4)),
    (lambda x: x.reshape([4, 3]), (4, 3)),
    (lambda x: x.reshape(12), (12,)),
    (lambda x: x.reshape(-1), (12,)),
    (lambda x: x.reshape(2, -1), (2, 6)),
    (lambda x: x.reshape(-1, 2, 3), (2, 2, 3)),
    (lambda x: x.reshape(1, 3, 1, 4), (1, 3, 1, 4)),
    (lambda x: x.view(6, 2), (6, 2)),
    (lambda x: x.view((2, 2, -1)), (2, 2, 3)),
    (lambda x: flow.reshape(x, (4, 3)), (4, 3)),
    (lambda x: flow.reshape(x, shape=[-1, 4]), (3, 4)),
    (lambda x: flow._C.reshape(x, (12,)), (12,)),
])
def test_reshape_values_and_shape(call, expected_shape):
    a = _arange(2, 6)
    y = call(flow.tensor(a))
    assert y.shape == expected_shape
    assert y.dtype == flow.float32
    # Reference: row-major element order is kept, i.e. the flat sequence 0..11.
    np.testing.assert_array_equal(y.numpy().ravel(), np.arange(12, dtype=np.float32))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reshape_keeps_dtype(dtype):
    x = flow.tensor([[1, 0, 1], [0, 1, 1]], dtype=dtype)
    y = x.reshape(3, 2)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.numpy(), np.array([[1, 0], [1, 0], [1, 1]], dtype=dtype.np_dtype))


def test_reshape_0d_and_empty():
    s = flow.tensor(5.0)
    assert s.reshape(1).shape == (1,)
    assert s.reshape(1, 1).tolist() == [[5.0]]
    assert flow.tensor([7]).reshape(()).shape == ()
    assert flow.tensor([7]).reshape(()).item() == 7
    e = flow.zeros(0, 3)
    assert e.reshape(3, 0).shape == (3, 0)
    assert e.reshape(-1).shape == (0,)
    assert e.reshape(2, -1).shape == (2, 0)


def test_reshape_errors():
    x = flow.zeros(6)
    with pytest.raises(RuntimeError, match=r"reshape: shape '\[2, 4\]' is invalid for input of size 6"):
        x.reshape(2, 4)
    with pytest.raises(RuntimeError, match=r"shape '\[4, -1\]' is invalid for input of size 6"):
        x.reshape(4, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[0, -1\]' is invalid for input of size 6"):
        x.reshape(0, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(RuntimeError, match="invalid shape dimension -2"):
        x.reshape(-2, -3)
    with pytest.raises(RuntimeError, match=r"cannot reshape tensor of 0 elements into shape \[0, -1\] because "
                                           r"the unspecified dimension size -1 can be any value and is ambiguous"):
        flow.zeros(0).reshape(0, -1)
    with pytest.raises(TypeError, match=r"reshape\(\): argument 'shape' \(position 2\) must be int or tuple of "
                                        r"ints, not float"):
        x.reshape(2.0)
    with pytest.raises(TypeError, match=r"missing required argument 'shape'"):
        x.reshape()


def test_reshape_memory():
    """A contiguous input is reshaped as a view; a transposed one cannot be and is copied (as torch.reshape)."""
    x = flow.tensor(_arange(2, 3))
    y = x.reshape(3, 2)
    assert np.shares_memory(y.numpy(), x.numpy())
    assert x.view(6) is not x
    t = x.transpose(0, 1)
    z = t.reshape(6)
    assert not np.shares_memory(z.numpy(), x.numpy())
    np.testing.assert_array_equal(z.numpy(), np.array([0, 3, 1, 4, 2, 5], dtype=np.float32))


def test_reshape_meta():
    m = flow.zeros(4, 6, device="meta")
    y = m.reshape(2, -1, 3)
    assert y.shape == (2, 4, 3) and y.device == flow.device("meta") and y.dtype == flow.float32
    assert y.is_meta
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 24"):
        m.reshape(5, -1)


# ---- transpose ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, dim0, dim1", [
    ((2, 3), 0, 1), ((2, 3), 1, 0), ((2, 3), -1, -2), ((2, 3), 0, 0),
    ((2, 3, 4), 0, 2), ((2, 3, 4), -1, 1), ((2, 3, 4, 5), 1, 3), ((4,), 0, -1),
])
def test_transpose_values(shape, dim0, dim1):
    a = _arange(*shape, dtype=np.int32)
    y = flow.transpose(flow.tensor(a), dim0, dim1)
    ref = np.swapaxes(a, dim0, dim1)
    assert y.shape == ref.shape and y.dtype == flow.int32
    np.testing.assert_array_equal(y.numpy(), ref)
    np.testing.assert_array_equal(flow.tensor(a).transpose(dim0, dim1).numpy(), ref)


def test_transpose_0d():
    s = flow.tensor(3.5)
    assert s.transpose(0, -1).shape == () and s.transpose(0, 0).item() == 3.5


def test_transpose_errors():
    x = flow.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], "
                                         r"but got 2\)"):
        x.transpose(0, 2)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], "
                                         r"but got -3\)"):
        flow.transpose(x, -3, 0)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1"):
        flow.tensor(1.0).transpose(0, 1)
    with pytest.raises(TypeError, match=r"argument 'dim1' \(position 3\) must be int, not float"):
        flow.transpose(x, 0, 1.0)


def test_transpose_memory_and_meta():
    x = flow.tensor(_arange(2, 3))
    y = x.transpose(0, 1)
    assert np.shares_memory(y.numpy(), x.numpy())
    y.numpy()[2, 1] = -1.0  # the view writes through to x (no autograd involved)
    assert x.numpy()[1, 2] == -1.0
    m = flow.zeros(2, 3, 4, device="meta", dtype=flow.int8).transpose(0, -1)
    assert m.shape == (4, 3, 2) and m.dtype == flow.int8 and m.is_meta
