"""Tensor.__getitem__ with ints, slices, None and Ellipsis: values and shapes against NumPy's basic
indexing, memory sharing (views), meta tensors, PyTorch's errors. Advanced indexing (tensor, list and
bool indices) is tested in test_ops_index.py."""

import numpy as np
import pytest

import oneflow_lite as flow

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
S = np.s_
INDICES = [
    S[0], S[1], S[-1], S[-2], S[np.int64(1)],
    S[0, 1], S[1, -1, 2], S[-1, -3, -4],
    S[:], S[...], S[()], S[:, 1], S[..., 1], S[..., -1, :], S[1, ...], S[1, ..., 2], S[:, :, 3],
    S[0:1], S[1:], S[:1], S[-1:], S[:-1], S[0:2:2], S[::2], S[:, ::2], S[:, 1:3, 1::2], S[:, 0:3:2, ::3],
    S[5:], S[:10], S[-10:], S[2:1], S[1:1], S[:, 3:], S[-100:100],
    S[None], S[None, None], S[:, None], S[..., None], S[None, ..., None], S[0, None], S[None, 1, None, 2],
    S[1, None, ::2, None, -1], S[..., None, 1:], S[None, ...],
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_matches_numpy(index):
    x = flow.tensor(A)
    y = x[index]
    ref = A[index]
    assert y.shape == ref.shape
    assert y.dtype == flow.float32
    np.testing.assert_array_equal(y.numpy(), ref)
    assert np.shares_memory(y.numpy(), x.numpy()) or ref.size == 0
    m = x.to("meta")[index]
    assert m.is_meta and m.shape == ref.shape and m.dtype == flow.float32


@pytest.mark.parametrize("dtype", [flow.bool, flow.uint8, flow.int64, flow.float16, flow.float64])
def test_getitem_dtypes(dtype):
    a = (np.arange(6).reshape(2, 3) % 2).astype(dtype.np_dtype)
    x = flow.tensor(a)
    assert x[1].dtype == dtype
    np.testing.assert_array_equal(x[1, ::2].numpy(), a[1, ::2])


def test_getitem_0d():
    s = flow.tensor(3.5)
    for index in (S[...], S[()], S[None], S[..., None], S[None, ..., None]):
        ref = np.array(3.5, dtype=np.float32)[index]
        y = s[index]
        assert y.shape == ref.shape and y.numpy().tolist() == ref.tolist()
        assert np.shares_memory(y.numpy(), s.numpy())
    with pytest.raises(IndexError, match=r"invalid index of a 0-dim tensor. Use `tensor.item\(\)`"):
        s[0]


def test_getitem_returns_views():
    x = flow.tensor(A.copy())
    assert x[...] is not x and x[:] is not x
    row = x[1]
    row.numpy()[0, 0] = -1.0  # writes through the view (no autograd involved)
    assert x.numpy()[1, 0, 0] == -1.0
    col = x[:, 1, None]
    col.numpy()[0, 0, 3] = -2.0
    assert x.numpy()[0, 1, 3] == -2.0


def test_iteration_uses_getitem():
    x = flow.tensor([[1, 2], [3, 4]])
    rows = list(x)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]
    assert [int(v) for v in x[0]] == [1, 2]


@pytest.mark.parametrize("index, exc, match", [
    (S[2], IndexError, r"index 2 is out of bounds for dimension 0 with size 2"),
    (S[-3], IndexError, r"index -3 is out of bounds for dimension 0 with size 2"),
    (S[0, 5], IndexError, r"index 5 is out of bounds for dimension 1 with size 3"),
    (S[..., 4], IndexError, r"index 4 is out of bounds for dimension 2 with size 4"),
    (S[None, 0, -4], IndexError, r"index -4 is out of bounds for dimension 1 with size 3"),
    (S[0, 0, 0, 0], IndexError, r"too many indices for tensor of dimension 3"),
    (S[..., 0, 0, 0, 0], IndexError, r"too many indices for tensor of dimension 3"),
    (S[..., ...], IndexError, r"an index can only have a single ellipsis \('...'\)"),
    (S[::-1], ValueError, r"step must be greater than zero"),
    (S[:, ::0], ValueError, r"step must be greater than zero"),
    (S[:, 2:0:-1], ValueError, r"step must be greater than zero"),
    (S[1.5], IndexError, (r"only integers, slices \(`:`\), ellipsis \(`...`\), None and long or byte Variables "
                         r"are valid indices \(got float\)")),
    (S["a"], IndexError, r"\(got str\)"),
    (S[0.5:], TypeError, r"slice indices must be integers"),
    (S[::1.0], TypeError, r"'float' object cannot be interpreted as an integer"),
])
def test_getitem_errors(index, exc, match):
    with pytest.raises(exc, match=match):
        flow.tensor(A)[index]


def test_range_indexes_like_a_list():
    """A Python range is a sequence index (PyTorch): x[range(n), cols] picks one element per row, also in
    assignments; an empty range selects nothing."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = flow.tensor(a)
    np.testing.assert_array_equal(x[range(3), [1, 0, 3]].numpy(), a[[0, 1, 2], [1, 0, 3]])
    np.testing.assert_array_equal(x[range(1, 3)].numpy(), a[1:3])
    assert x[range(0)].shape == (0, 4)
    x[range(3), flow.tensor([2, 2, 0])] = -1.0
    expected = a.copy()
    expected[[0, 1, 2], [2, 2, 0]] = -1.0
    np.testing.assert_array_equal(x.numpy(), expected)
