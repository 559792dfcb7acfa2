"""Tensor.__setitem__, copy_, fill_, zero_: values against NumPy's assignment, in-place semantics (views,
version counters), dtype conversion of the value, PyTorch's errors, autograd through the write, meta."""

import numpy as np
import pytest

import oneflow_lite as flow

S = np.s_
A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

# (index, value shape) pairs NumPy and PyTorch agree on (no ints mixed with index arrays)
CASES = [
    (S[0], ()), (S[1], (5,)), (S[-1, 2], (1, 5)), (S[:, 1:3], (3, 2, 5)), (S[::2, ::3, 1::2], (2,)),
    (S[...], (4, 5)), (S[..., 0], (3, 1)), (S[None, 1], (4, 1)), (S[:, None, 2], (1, 5)), (S[()], (5,)),
    (S[[0, 2]], (2, 4, 5)), (S[[2, 0, 2]], ()), (S[:, [1, 3], 1:4], (2, 3)), (S[[0, 1], :, [4, 0]], (2, 4)),
    (S[[[0], [1]], [2, 3]], (2, 2, 5)), (S[..., [-1, 0]], (3, 4, 2)), (S[2:0], ()), (S[:, []], (5,)),
]


@pytest.mark.parametrize("index, value_shape", CASES, ids=repr)
def test_setitem_matches_numpy(index, value_shape):
    x = flow.tensor(A.copy())
    base = x.numpy()
    value = np.random.default_rng(0).random(value_shape).astype(np.float32)
    x[index] = flow.tensor(value)
    expected = A.copy()
    expected[index] = value
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x.numpy() is base  # written in place
    m = flow.tensor(A).to("meta")
    m[index] = flow.tensor(value).to("meta")
    assert m.is_meta and m.shape == A.shape


def test_setitem_masks():
    x = flow.tensor(A.copy())
    x[x > 30] = 0.0
    expected = np.where(A > 30, 0, A)
    np.testing.assert_array_equal(x.numpy(), expected)
    x[:, flow.tensor([True, False, False, True])] = flow.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    expected[:, [0, 3]] = [1, 2, 3, 4, 5]
    np.testing.assert_array_equal(x.numpy(), expected)
    x[True] = 7.0
    assert (x.numpy() == 7).all()
    x[False] = 8.0
    assert (x.numpy() == 7).all()
    m = flow.zeros(2, 3, device="meta")
    m[m > 0] = flow.tensor(1.0, device="meta")  # a mask needs no count when writing
    assert m.is_meta


def test_setitem_through_views_writes_the_base():
    x = flow.zeros(3, 4)
    row = x[1]
    row[2] = 5.0
    x[0][1] = 3.0
    assert x.tolist() == [[0, 3, 0, 0], [0, 0, 5, 0], [0, 0, 0, 0]]
    v = x._version
    x[2] = 1.0
    assert x._version == v + 1 and row._version == v + 1  # views share the version counter


def test_setitem_value_conversion():
    x = flow.zeros(4, dtype=flow.int64)
    x[0] = 2.7
    x[1] = True
    x[2] = flow.tensor(-3.9)
    x[3] = np.int16(9)
    assert x.tolist() == [2, 1, -3, 9]
    b = flow.zeros(2, dtype=flow.bool)
    b[0] = 5
    assert b.tolist() == [True, False]
    f = flow.zeros(2, dtype=flow.float16)
    f[0] = flow.tensor(1.0, dtype=flow.float64)
    f[1] = -0.0
    assert f.dtype == flow.float16 and f.tolist() == [1.0, 0.0] and np.signbit(f.numpy()[1])
    i = flow.zeros(3, dtype=flow.int64)
    i[flow.tensor([0, 0, 2])] = flow.tensor([1, 2, 3])  # repeated index: one of the values lands
    assert i.tolist()[1:] == [0, 3] and i.tolist()[0] in (1, 2)


def test_setitem_0d():
    s = flow.tensor(1.5)
    s[...] = 2.0
    s[()] = flow.tensor(3.0)
    assert s.item() == 3.0
    s[None] = 4.0
    assert s.item() == 4.0


@pytest.mark.parametrize("index, value, exc, match", [
    (S[0], lambda: flow.tensor([1.0, 2.0]), RuntimeError,
     r"shape mismatch: value tensor of shape \[2\] cannot be broadcast to indexing result of shape \[4\]"),
    (S[[0, 1]], lambda: flow.ones(3, 4), RuntimeError,
     r"value tensor of shape \[3, 4\] cannot be broadcast to indexing result of shape \[2, 4\]"),
    (S[0], lambda: [1, 2, 3, 4], TypeError, r"__setitem__: can't assign a list to a oneflow_lite.FloatTensor"),
    (S[0], lambda: np.ones(4), TypeError, r"can't assign a ndarray to a oneflow_lite.FloatTensor"),
    (S[5], lambda: 1.0, IndexError, r"index 5 is out of bounds for dimension 0 with size 3"),
    (S[[3]], lambda: 1.0, IndexError, r"index 3 is out of bounds for dimension 0 with size 3"),
    (S[0, 0, 0], lambda: 1.0, IndexError, r"too many indices for tensor of dimension 2"),
    (S[::-1], lambda: 1.0, ValueError, r"step must be greater than zero"),
    (S[0], lambda: 2**70, RuntimeError, r"does not fit in int64"),
])
def test_setitem_errors(index, value, exc, match):
    x = flow.zeros(3, 4)
    with pytest.raises(exc, match=match):
        x[index] = value()
    assert x.tolist() == [[0] * 4] * 3 and x._version == 0


def test_setitem_mask_value_mismatch_is_found_at_run_time():
    x = flow.zeros(3, 4)
    mask = flow.tensor([True, False, True])
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 4\]"):
        x[mask] = flow.ones(3)
    assert x.tolist() == [[0] * 4] * 3


def test_setitem_integer_overflow():
    x = flow.zeros(2, dtype=flow.int8)
    with pytest.raises(RuntimeError, match=r"value cannot be converted to type int8 without overflow: 1000"):
        x[0] = 1000


def test_augmented_assignment():
    x = flow.arange(6)
    x[x > 2] += 10
    x[[0, 1]] *= 3
    assert x.tolist() == [0, 3, 2, 13, 14, 15]


# ---- autograd ------------------------------------------------------------------------------------
def test_setitem_on_leaf_that_requires_grad():
    w = flow.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"a leaf Variable that requires grad is being used in an in-place "
                                           r"operation."):
        w[0] = 2.0
    with pytest.raises(RuntimeError, match=r"a leaf Variable that requires grad"):
        w.zero_()
    with flow.no_grad():
        w[0] = 2.0
    assert w.tolist() == [2, 1, 1] and w.is_leaf and w.requires_grad


def test_setitem_grads_by_hand():
    w = flow.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    v = flow.tensor([10.0, 20.0], requires_grad=True)
    h = w * 2.0
    h[flow.tensor([3, 0])] = v
    assert h.tolist() == [20, 4, 6, 10]
    (h * flow.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert w.grad.tolist() == [0, 4, 6, 0]  # nothing flows through the overwritten entries
    assert v.grad.tolist() == [4, 1]


def test_setitem_broadcast_value_grad_sums():
    w = flow.zeros(2, 3, requires_grad=True)
    v = flow.tensor([[1.0, 2.0, 3.0]], requires_grad=True)  # a leading 1 more than x[:, 1:] would need
    h = w + 0.0
    h[:, 1:] = v[:, :2]
    h.sum().backward()
    assert w.grad.tolist() == [[1, 0, 0], [1, 0, 0]]
    assert v.grad.tolist() == [[2, 2, 0]]


def test_setitem_value_requires_grad_target_does_not():
    buf = flow.zeros(3)
    v = flow.tensor(2.0, requires_grad=True)
    buf[1] = v
    assert buf.requires_grad and not buf.is_leaf
    (buf * 5.0).sum().backward()
    assert v.grad.item() == 5.0


def test_setitem_gradcheck():
    x = flow.tensor(np.random.default_rng(1).random((3, 4)), requires_grad=True)
    v = flow.tensor(np.random.default_rng(2).random((4,)), requires_grad=True)

    def fn(x, v):
        y = x * 1.0
        y[y > 0.5] = 0.0
        y[[0, 2], 1:3] = v[1:3] * v[0]
        return y
    assert flow.autograd.gradcheck(fn, (x, v))
    assert flow.autograd.gradgradcheck(fn, (x, v))


# ---- copy_ / fill_ / zero_ ---------------------------------------------------------------------------
def test_copy_():
    x = flow.zeros(2, 3)
    assert x.copy_(flow.tensor([1, 2, 3])) is x
    assert x.dtype == flow.float32 and x.tolist() == [[1, 2, 3], [1, 2, 3]]
    x.copy_(flow.tensor([[7.0], [8.0]], dtype=flow.float64))
    assert x.tolist() == [[7, 7, 7], [8, 8, 8]]
    m = flow.zeros(2, 3, device="meta")
    m.copy_(flow.ones(3))  # cpu -> meta
    assert m.is_meta


@pytest.mark.parametrize("src, exc, match", [
    (lambda: flow.ones(3, 3), RuntimeError,
     r"copy_: The size of tensor src \(3\) must match the size of tensor self \(2\) at non-singleton dimension 0"),
    (lambda: flow.ones(1, 2, 3), RuntimeError, (r"copy_: the number of sizes of self \[2, 3\] must be greater or "
                                                r"equal to the number of dimensions of src \[1, 2, 3\]")),
    (lambda: [1.0, 2.0, 3.0], TypeError, r"copy_\(\): argument 'src' \(position 1\) must be Tensor, not list"),
    (lambda: flow.ones(3, device="meta"), NotImplementedError, r"Cannot copy out of meta tensor"),
])
def test_copy_errors(src, exc, match):
    x = flow.zeros(2, 3)
    with pytest.raises(exc, match=match):
        x.copy_(src())
    assert x.tolist() == [[0] * 3] * 2


def test_copy_grad_flows_to_src_only():
    src = flow.tensor([1.0, 2.0], requires_grad=True)
    w = flow.ones(2, 2, requires_grad=True)
    h = w * 3.0
    h.copy_(src * 2.0)
    (h * flow.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert src.grad.tolist() == [8, 12] and w.grad.tolist() == [[0, 0], [0, 0]]


def test_fill_and_zero():
    x = flow.ones(2, 2, dtype=flow.int32)
    assert x.fill_(3.9) is x and x.tolist() == [[3, 3], [3, 3]]
    assert x.fill_(flow.tensor(5)) is x and x.tolist() == [[5, 5], [5, 5]]
    assert x.zero_() is x and x.tolist() == [[0, 0], [0, 0]]
    with pytest.raises(RuntimeError, match=r"fill_ only supports 0-dimension value tensor but got tensor with 1 "
                                           r"dimensions."):
        x.fill_(flow.tensor([1]))
    with pytest.raises(TypeError, match=r"fill_\(\): argument 'value' must be Number or Tensor, not str"):
        x.fill_("1")
    v = flow.tensor(2.0, requires_grad=True)
    h = flow.zeros(3) + 0.0
    h.fill_(v)
    h.sum().backward()
    assert v.grad.item() == 3.0
