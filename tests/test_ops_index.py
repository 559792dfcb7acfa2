"""Indexing ops beyond the op-db suite: PyTorch's argument errors, index bounds, in-place variants, grads
checked against hand-computed values, and advanced __getitem__ (PyTorch's rules where they differ from
NumPy's, lists, bools, masks, meta tensors)."""

import warnings

import numpy as np
import pytest

import oneflow_lite as flow

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


def t(a, **kw):
    return flow.tensor(a, **kw)


# ---- gather ------------------------------------------------------------------------------------
def test_gather_values_by_hand():
    x = t([[1, 2], [3, 4]])
    out = flow.gather(x, 1, t([[0, 0], [1, 0]]))
    assert out.tolist() == [[1, 1], [4, 3]]
    assert x.gather(0, t([[1, 0]])).tolist() == [[3, 2]]


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: flow.gather(x, 0, t([[[0]]], dtype=flow.int32)), RuntimeError,
     r"gather\(\): Expected dtype int64 for index, got int32"),
    (lambda x: flow.gather(x, 3, t([[[0]]])), IndexError,
     r"gather: Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"),
    (lambda x: flow.gather(x, 0, t([[0]])), RuntimeError,
     r"Index tensor must have the same number of dimensions as input tensor"),
    (lambda x: flow.gather(x, 0, flow.zeros(1, 5, 1, dtype=flow.int64)), RuntimeError,
     (r"Size does not match at dimension 1 expected index \[1, 5, 1\] to be smaller than self \[3, 4, 5\] apart "
     r"from dimension 0")),
    (lambda x: flow.gather(x, 0, t([[[3]]])), RuntimeError, r"index 3 is out of bounds for dimension 0 with size 3"),
    (lambda x: flow.gather(x, 1, t([[[-1]]])), RuntimeError, r"index -1 is out of bounds for dimension 1 with size 4"),
    (lambda x: flow.gather(x, 0, t([[[0]]]), sparse_grad=True), NotImplementedError, r"sparse_grad=True"),
])
def test_gather_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call(t(A))


def test_gather_grad_accumulates_repeats():
    x = flow.ones(2, 3, requires_grad=True)
    flow.gather(x, 1, t([[0, 0, 2], [1, 1, 1]])).sum().backward()
    assert x.grad.tolist() == [[2, 0, 1], [0, 3, 0]]


def test_gather_on_meta():
    out = flow.gather(t(A).to("meta"), 2, flow.zeros(3, 4, 2, dtype=flow.int64, device="meta"))
    assert out.is_meta and out.shape == (3, 4, 2) and out.dtype == flow.float32


# ---- scatter / scatter_add -------------------------------------------------------------------------------
def test_scatter_values_by_hand():
    x = flow.zeros(2, 3)
    src = t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = flow.scatter(x, 0, t([[1, 0, 1]]), src)
    assert out.tolist() == [[0, 2, 0], [1, 0, 3]]
    assert x.tolist() == [[0, 0, 0], [0, 0, 0]]  # out of place
    assert flow.scatter(x, 1, t([[2], [0]]), 9.0).tolist() == [[0, 0, 9], [9, 0, 0]]
    assert flow.scatter_add(x, 1, t([[0, 0, 0]]), src).tolist() == [[6, 0, 0], [0, 0, 0]]
    ones = flow.ones(2, 3)
    assert flow.scatter(ones, 1, t([[0, 0]]), src, reduce="multiply").tolist() == [[2, 1, 1], [1, 1, 1]]
    assert flow.scatter(ones, 1, t([[0, 0]]), 3.0, reduce="add").tolist() == [[7, 1, 1], [1, 1, 1]]


def test_scatter_inplace_writes_self():
    x = flow.zeros(3)
    v = x._version
    out = x.scatter_(0, t([2, 0]), t([5.0, 7.0]))
    assert out is x and x.tolist() == [7, 0, 5] and x._version == v + 1
    assert x.scatter_add_(0, t([1, 1]), t([1.0, 2.0])) is x and x.tolist() == [7, 3, 5]
    assert x.scatter_(0, t([1]), -1.0).tolist() == [7, -1, 5]


def test_scatter_scalar_converts_to_dtype():
    x = flow.zeros(3, dtype=flow.int64)
    assert flow.scatter(x, 0, t([0, 1]), 2.7).tolist() == [2, 2, 0]  # truncated, as a PyTorch scalar cast
    b = flow.zeros(2, dtype=flow.bool)
    assert flow.scatter(b, 0, t([1]), 5).tolist() == [False, True]
    with pytest.raises(RuntimeError, match=r"value cannot be converted to type int8 without overflow: 1000"):
        flow.scatter(flow.zeros(2, dtype=flow.int8), 0, t([0]), 1000)


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: flow.scatter(x, 0, t([0]), t([1.0], dtype=flow.float64)), RuntimeError,
     r"scatter\(\): Expected self.dtype to be equal to src.dtype, got float32 and float64"),
    (lambda x: flow.scatter(x, 0, t([0], dtype=flow.int32), t([1.0])), RuntimeError,
     r"scatter\(\): Expected dtype int64 for index"),
    (lambda x: flow.scatter(x, 0, t([0]), t([1.0]), reduce="max"), RuntimeError,
     r"reduce argument must be either add or multiply, got 'max'"),
    (lambda x: flow.scatter(x, 0, t([3]), t([1.0])), RuntimeError,
     r"scatter: index 3 is out of bounds for dimension 0 with size 3"),
    (lambda x: flow.scatter(x, 0, t([0, 1]), t([1.0])), RuntimeError,
     (r"Expected index \[2\] to be smaller than self \[3\] apart from dimension 0 and to be smaller size than "
     r"src \[1\]")),
    (lambda x: flow.scatter(x, 0, t([[0]]), t([[1.0]])), RuntimeError,
     r"Index tensor must have the same number of dimensions as self tensor"),
    (lambda x: flow.scatter_add(x, 0, t([0]), t([1], dtype=flow.int64)), RuntimeError,
     r"scatter_add\(\): Expected self.dtype to be equal to src.dtype"),
])
def test_scatter_errors(call, exc, match):
    x = flow.zeros(3)
    with pytest.raises(exc, match=match):
        call(x)
    assert x.tolist() == [0, 0, 0]


def test_scatter_grads_by_hand():
    x = flow.ones(2, 3, requires_grad=True)
    src = t([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = t([[1.0, 10.0, 100.0], [1000.0, 10000.0, 100000.0]])
    (flow.scatter(x, 1, t([[2], [0]]), src) * w).sum().backward()
    # x loses the gradient where src was written; src gets it where it landed (zero where unused)
    assert x.grad.tolist() == [[1, 10, 0], [0, 10000, 100000]]
    assert src.grad.tolist() == [[100, 0], [1000, 0]]


def test_scatter_inplace_on_leaf_that_requires_grad():
    x = flow.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"a leaf Variable that requires grad is being used in an in-place "
                                           r"operation."):
        x.scatter_(0, t([0]), t([1.0]))


def test_scatter_multiply_is_not_differentiable():
    src = t([2.0], requires_grad=True)
    out = flow.scatter(flow.ones(2), 0, t([0]), src, reduce="multiply")
    with pytest.raises(NotImplementedError, match=r"the derivative for 'scatter' with reduce='multiply' is not "
                                                  r"implemented"):
        out.sum().backward()


# ---- index_select / index_add ---------------------------------------------------------------------
@pytest.mark.parametrize("call, exc, match", [
    (lambda x: flow.index_select(x, 0, t([[0]])), IndexError, r"index_select\(\): Index is supposed to be a vector"),
    (lambda x: flow.index_select(x, 0, t([0.0])), RuntimeError,
     r"index_select\(\): Expected dtype int32 or int64 for index, got float32"),
    (lambda x: flow.index_select(x, 0, t([3])), IndexError, r"index_select\(\): index out of range in self"),
    (lambda x: flow.index_select(x, 0, t([-1])), IndexError, r"index out of range in self"),
    (lambda x: flow.index_select(x, 2, t([0])), IndexError, r"Dimension out of range"),
    (lambda x: flow.index_select(t(1.0), 0, t([0, 0])), RuntimeError,
     r"Index to scalar can have only 1 value, got 2 value\(s\)"),
])
def test_index_select_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call(flow.zeros(3, 2))


def test_index_add_by_hand_and_errors():
    x = flow.zeros(3, 2)
    out = flow.index_add(x, 0, t([2, 0, 2]), t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), alpha=2)
    assert out.tolist() == [[6, 8], [0, 0], [12, 16]]
    assert x.index_add_(1, t([1]), flow.ones(3, 1)) is x and x.tolist() == [[0, 1], [0, 1], [0, 1]]
    with pytest.raises(RuntimeError, match=r"index_add\(\): self \(Float\) and source \(Double\) must have the "
                                           r"same scalar type"):
        flow.index_add(x, 0, t([0]), flow.ones(1, 2, dtype=flow.float64))
    with pytest.raises(RuntimeError, match=r"source must have the shape of self with dimension 0 of size 2 \(the "
                                           r"number of indices\): expected \[2, 2\], got \[1, 2\]"):
        flow.index_add(x, 0, t([0, 1]), flow.ones(1, 2))
    with pytest.raises(RuntimeError, match=r"For integral input tensors, argument alpha must not be a floating"):
        flow.index_add(flow.zeros(2, dtype=flow.int64), 0, t([0]), t([1]), alpha=0.5)


def test_index_select_grad_by_hand():
    x = flow.ones(3, 2, requires_grad=True)
    (flow.index_select(x, 0, t([2, 2, 0])) * t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    assert x.grad.tolist() == [[5, 6], [0, 0], [4, 6]]


# ---- masked_fill ---------------------------------------------------------------------------------
def test_masked_fill_values_and_dtypes():
    x = t([[1, 2, 3], [4, 5, 6]])
    mask = t([True, False, True])
    assert flow.masked_fill(x, mask, 0).tolist() == [[0, 2, 0], [0, 5, 0]]
    assert x.masked_fill(mask, 2.9).tolist() == [[2, 2, 2], [2, 5, 2]]  # the value is cast to int64
    assert x.masked_fill(mask, t(-1.5)).dtype == flow.int64
    f = flow.zeros(2).masked_fill(t([True, False]), -0.0)
    assert np.signbit(f.numpy()).tolist() == [True, False]
    # out of place broadcasts input and mask
    assert flow.masked_fill(t([1.0]), t([[True], [False]]), 5.0).tolist() == [[5], [1]]


def test_masked_fill_inplace():
    x = flow.zeros(2, 3)
    assert x.masked_fill_(t([False, True, False]), 4.0) is x
    assert x.tolist() == [[0, 4, 0], [0, 4, 0]]
    with pytest.raises(RuntimeError, match=r"masked_fill_: output with shape \[3\] doesn't match the broadcast "
                                           r"shape \[2, 3\]"):
        flow.zeros(3).masked_fill_(t([[True], [False]]), 1.0)


@pytest.mark.parametrize("call, match", [
    # an integer mask is OneFlow's (nonzero is True: Note [Integer masks]); a float mask keeps PyTorch's error
    (lambda x: flow.masked_fill(x, t([1.0, 0.0, 1.0]), 0.0), (r"masked_fill only supports boolean masks, but got "
                                                             r"mask with dtype float32")),
    (lambda x: flow.masked_fill(x, t([True, False, True]), t([1.0])),
     r"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension\(s\)."),
    (lambda x: flow.masked_fill(flow.zeros(3, dtype=flow.uint8), t([True, False, True]), 300),
     r"value cannot be converted to type uint8 without overflow: 300"),
    (lambda x: flow.masked_fill(x, t([True, False]), 0.0), r"cannot be broadcast"),
])
def test_masked_fill_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call(flow.zeros(3))


def test_masked_fill_grad_of_value_tensor():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    v = t(0.5, requires_grad=True)
    (flow.masked_fill(x, t([True, False, True]), v) * t([2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [0, 3, 0]
    assert v.grad.item() == 6.0


# ---- masked_select / nonzero / count_nonzero -------------------------------------------------------------
def test_masked_select_by_hand_and_errors():
    x = t([[1, 2], [3, 4]])
    assert flow.masked_select(x, t([True, False])).tolist() == [1, 3]
    with pytest.raises(RuntimeError, match=r"masked_select: expected BoolTensor for mask, got float32"):
        flow.masked_select(x, t([1.0, 0.0]))
    assert flow.masked_select(x, t([1, 0])).tolist() == [1, 3]  # OneFlow's integer mask (Note [Integer masks])
    with pytest.raises(RuntimeError, match=r"masked_select: the output shape depends on the values of mask, which a "
                                           r"tensor on 'meta' does not hold"):
        flow.masked_select(x.to("meta"), t([True, False]).to("meta"))


def test_masked_select_grad_sums_broadcast_input():
    x = t([1.0, 2.0], requires_grad=True)
    out = flow.masked_select(x, t([[True, False], [True, True]]))
    assert out.tolist() == [1, 1, 2]
    (out * t([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [11, 100]


def test_nonzero_forms():
    x = t([[0, 1, 0], [2, 0, 3]])
    assert flow.nonzero(x).tolist() == [[0, 1], [1, 0], [1, 2]]
    rows, cols = x.nonzero(as_tuple=True)
    assert rows.tolist() == [0, 1, 1] and cols.tolist() == [1, 0, 2]
    assert flow.nonzero(t(5)).shape == (1, 0) and flow.nonzero(t(0)).shape == (0, 0)
    (only,) = flow.nonzero(t(5.0), as_tuple=True)
    assert only.tolist() == [0]
    assert flow.nonzero(t([0.0, float("nan"), -0.0])).tolist() == [[1]]
    with pytest.raises(RuntimeError, match=r"nonzero: the output shape depends on the values of input, which a tensor "
                                           r"on 'meta' does not hold"):
        flow.nonzero(x.to("meta"))


def test_count_nonzero():
    x = t([[0, 1, 0], [2, 0, 3]])
    assert flow.count_nonzero(x).item() == 3 and flow.count_nonzero(x).dtype == flow.int64
    assert x.count_nonzero(0).tolist() == [1, 1, 1]
    assert flow.count_nonzero(x, (0, 1)).item() == 3
    assert flow.count_nonzero(x.to("meta"), 1).shape == (2,)
    with pytest.raises(RuntimeError, match=r"count_nonzero: dim 1 appears multiple times in the list of dims"):
        flow.count_nonzero(x, (1, -1))


# ---- advanced __getitem__ --------------------------------------------------------------------------
def test_ints_select_before_advanced_indices():
    """PyTorch applies ints as basic indexing first (NumPy would treat them as advanced indices and move the
    broadcast dims to the front)."""
    x = t(A)
    y = x[0, :, [0, 1]]
    assert y.shape == (4, 2)  # NumPy's A[0, :, [0, 1]] has shape (2, 4)
    np.testing.assert_array_equal(y.numpy(), A[0][:, [0, 1]])
    z = x[[0, 2], 1, [3, 4]]
    np.testing.assert_array_equal(z.numpy(), np.array([A[0, 1, 3], A[2, 1, 4]]))
    w = x[[1, 2], :, 0]
    assert w.shape == (2, 4)  # NumPy's A[[1, 2], :, 0] also has shape (2, 4): its advanced dims come first
    np.testing.assert_array_equal(w.numpy(), A[:, :, 0][[1, 2]])
    v = x[:, [0, 1], 2, None]
    assert v.shape == (3, 2, 1)
    np.testing.assert_array_equal(v.numpy(), A[:, :, 2][:, [0, 1], None])


def test_sequences_as_index_tuples():
    x = t(A)
    np.testing.assert_array_equal(x[[0, 2]].numpy(), A[[0, 2]])
    np.testing.assert_array_equal(x[[[0, 1], [1, 2]]].numpy(), A[[0, 1], [1, 2]])  # a tuple, as in PyTorch
    np.testing.assert_array_equal(x[[0, slice(None), 1]].numpy(), A[0, :, 1])
    np.testing.assert_array_equal(x[(0, 1), 2].numpy(), A[[0, 1], 2])
    assert x[[]].shape == (0, 4, 5)
    np.testing.assert_array_equal(x[np.array([2, -3])].numpy(), A[[2, 0]])


def test_bool_indices():
    x = t(A)
    assert x[True].shape == (1, 3, 4, 5) and x[False].shape == (0, 3, 4, 5)
    assert x[..., True].shape == (3, 4, 5, 1)
    assert x[None, False, 0].shape == (1, 0, 4, 5)
    assert x[t(True)].shape == (1, 3, 4, 5) and x[t(False)].shape == (0, 3, 4, 5)
    np.testing.assert_array_equal(x[x > 50].numpy(), A[A > 50])
    np.testing.assert_array_equal(x[:, t([True, False, False, True])].numpy(), A[:, [0, 3]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x[t([1, 0, 1], dtype=flow.uint8)]
    assert "indexing with dtype uint8 is now deprecated" in str(caught[0].message)
    np.testing.assert_array_equal(y.numpy(), A[[0, 2]])


def test_advanced_results_are_copies():
    x = t(A.copy())
    y = x[[0, 1]]
    assert not np.shares_memory(y.numpy(), x.numpy())
    y.numpy()[...] = -1
    assert x.numpy()[0, 0, 0] == 0


@pytest.mark.parametrize("index, exc, match", [
    (lambda: t([1.0]), IndexError, r"tensors used as indices must be long, int, byte or bool tensors, got float32"),
    (lambda: [0.5], IndexError, r"tensors used as indices must be long, int, byte or bool tensors"),
    (lambda: t([3]), IndexError, r"index 3 is out of bounds for dimension 0 with size 3"),
    (lambda: (slice(None), t([-5])), IndexError, r"index -5 is out of bounds for dimension 1 with size 4"),
    (lambda: (t([0, 1]), t([0, 1, 2])), IndexError,
     r"shape mismatch: indexing tensors could not be broadcast together with shapes \[2\], \[3\]"),
    (lambda: t([True, False]), IndexError,
     r"The shape of the mask \[2\] at index 0 does not match the shape of the indexed tensor \[3, 4, 5\] at index 0"),
    (lambda: (0, 0, 0, t([0])), IndexError, r"too many indices for tensor of dimension 3"),
    (lambda: t([0], dtype=flow.int16), IndexError, r"must be long, int, byte or bool tensors, got int16"),
])
def test_advanced_getitem_errors(index, exc, match):
    with pytest.raises(exc, match=match):
        t(A)[index()]


def test_advanced_getitem_on_meta():
    m = t(A).to("meta")
    y = m[:, [0, 3], None, t([[1], [2]])]
    assert y.is_meta and y.shape == A[:, [0, 3], None, [[1], [2]]].shape
    assert m[True].shape == (1, 3, 4, 5)
    with pytest.raises(RuntimeError, match=r"which a tensor on 'meta' does not hold"):
        m[m > 0]


def test_advanced_getitem_grad_accumulates():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    (x[[0, 0, 2]] * t([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [3, 0, 3]
    y = t([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y[y > 1.5].sum().backward()
    assert y.grad.tolist() == [[0, 1], [1, 1]]


def test_index_put_by_hand():
    x = flow.zeros(2, 3)
    out = flow.index_put(x, (t([0, 1, 0]), t([2, 0, 2])), t([1.0, 2.0, 3.0]), accumulate=True)
    assert out.tolist() == [[0, 0, 4], [2, 0, 0]] and x.tolist() == [[0, 0, 0], [0, 0, 0]]
    assert x.index_put_((t([True, False]),), t(9.0)) is x and x.tolist() == [[9, 9, 9], [0, 0, 0]]
    with pytest.raises(IndexError, match=r"index_put: too many indices for tensor of dimension 2 \(got 3\)"):
        flow.index_put(x, (t([0]), t([0]), t([0])), t(1.0))
