"""Creation and conversion beyond the op-db suite: *_like keyword arguments, eye / linspace / logspace
values and errors, randint / randperm / normal / rand_like statistics and errors, the in-place
initialisers, from_numpy / as_tensor memory sharing, Tensor.type / type_as, Tensor.new_*."""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError


# ---- *_like, empty -------------------------------------------------------------------------------
def test_like_functions_follow_input_unless_told():
    x = flow.tensor([[1, 2, 3]], dtype=flow.int16)
    for fn, value in ((flow.zeros_like, 0), (flow.ones_like, 1), (flow.empty_like, 0)):
        y = fn(x)
        assert y.dtype == flow.int16 and y.shape == (1, 3) and y.tolist() == [[value] * 3]
        z = fn(x, dtype=flow.float64, device="meta")
        assert z.dtype == flow.float64 and z.is_meta and z.shape == (1, 3)
    assert flow.full_like(x, 2.9).tolist() == [[2, 2, 2]]  # the input's dtype, not the fill value's
    assert flow.full_like(x, 2.5, dtype=flow.float32).tolist() == [[2.5] * 3]
    f = flow.ones_like(flow.zeros(2), requires_grad=True)
    assert f.requires_grad and f.is_leaf
    with pytest.raises(RuntimeError, match=r"value 300 cannot be converted to type int8 without overflow"):
        flow.full_like(flow.zeros(1, dtype=flow.int8), 300)


def test_empty():
    assert flow.empty(2, 3).shape == (2, 3) and flow.empty(2, 3).dtype == flow.float32
    assert flow.empty((4,), dtype=flow.int64).tolist() == [0, 0, 0, 0]
    assert flow.empty(0).shape == (0,)
    with pytest.raises(RuntimeError, match=r"negative dimension -1"):
        flow.empty(2, -1)


# ---- eye, linspace, logspace -------------------------------------------------------------------------
def test_eye():
    assert flow.eye(2).tolist() == [[1, 0], [0, 1]] and flow.eye(2).dtype == flow.float32
    assert flow.eye(2, 3, dtype=flow.int64).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert flow.eye(3, 1, dtype=flow.bool).tolist() == [[True], [False], [False]]
    assert flow.eye(0, 2).shape == (0, 2)
    with pytest.raises(RuntimeError, match=r"eye: n must be greater or equal to 0, got -1"):
        flow.eye(-1)
    with pytest.raises(RuntimeError, match=r"eye: m must be greater or equal to 0, got -2"):
        flow.eye(2, -2)


def test_linspace_values():
    np.testing.assert_allclose(flow.linspace(-1, 1, 5).numpy(), [-1, -0.5, 0, 0.5, 1])
    assert flow.linspace(0, 1, 1).tolist() == [0.0]
    assert flow.linspace(0, 1, 0).shape == (0,)
    # integer results truncate the float values: 0, 3.33, 6.67, 10
    assert flow.linspace(0, 10, 4, dtype=flow.int64).tolist() == [0, 3, 6, 10]
    # symmetric: the last value is exactly end, also in float32
    x = flow.linspace(0.1, 0.7, 7)
    assert x.numpy()[-1] == np.float32(0.7) and x.numpy()[0] == np.float32(0.1)
    assert flow.linspace(0, 1, 3, dtype=flow.float64).dtype == flow.float64
    with pytest.raises(RuntimeError, match=r"linspace: number of steps must be non-negative, got -1"):
        flow.linspace(0, 1, -1)
    with pytest.raises(OpKernelNotFoundError, match=r"Cannot find a kernel of op 'linspace'"):
        flow.linspace(0, 1, 3, dtype=flow.bool)


def test_logspace_values():
    np.testing.assert_allclose(flow.logspace(0, 3, 4).numpy(), [1, 10, 100, 1000])
    np.testing.assert_allclose(flow.logspace(0, 3, 4, 2).numpy(), [1, 2, 4, 8])
    np.testing.assert_allclose(flow.logspace(-1, 1, 3, base=4.0, dtype=flow.float64).numpy(), [0.25, 1, 4])
    assert flow.logspace(0, 2, 3, dtype=flow.int32).tolist() == [1, 10, 100]


# ---- random creation ---------------------------------------------------------------------------------
def test_randint_overloads_and_range():
    x = flow.randint(10, (2000,))
    assert x.dtype == flow.int64 and x.shape == (2000,)
    assert set(x.tolist()) == set(range(10))
    y = flow.randint(-3, 2, (4, 500))
    assert y.shape == (4, 500) and set(y.tolist()[0] + y.tolist()[1]) == {-3, -2, -1, 0, 1}
    assert flow.randint(0, 2, (3,), dtype=flow.bool).dtype == flow.bool
    assert flow.randint(0, 10, 3).shape == (3,)
    z = flow.randint(5, 6, (3,), dtype=flow.float32)
    assert z.dtype == flow.float32 and z.tolist() == [5.0, 5.0, 5.0]


@pytest.mark.parametrize("args, kwargs, match", [
    ((3, 3, (2,)), {}, r"random_ expects 'from' to be less than 'to', but got from=3 >= to=3"),
    ((0, 300, (2,)), {"dtype": flow.uint8}, r"to - 1 is out of bounds for uint8"),
    ((-1, 3, (2,)), {"dtype": flow.uint8}, r"from is out of bounds for uint8"),
    ((0, 3, (2,)), {"dtype": flow.bool}, r"to - 1 is out of bounds for bool"),
])
def test_randint_errors(args, kwargs, match):
    with pytest.raises(RuntimeError, match=match):
        flow.randint(*args, **kwargs)


def test_randperm():
    p = flow.randperm(50)
    assert p.dtype == flow.int64 and sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    assert sorted(flow.randperm(10, dtype=flow.float16).tolist()) == list(range(10))
    assert flow.randperm(0).shape == (0,)
    g = flow.Generator()
    a = flow.randperm(20, generator=g.manual_seed(5))
    b = flow.randperm(20, generator=g.manual_seed(5))
    assert a.tolist() == b.tolist()
    with pytest.raises(RuntimeError, match=r"randperm: n must be non-negative, got -1"):
        flow.randperm(-1)
    with pytest.raises(RuntimeError, match=r"n is too large for result tensor type: 'float16'"):
        flow.randperm(3000, dtype=flow.float16)
    with pytest.raises(RuntimeError, match=r"n is too large for result tensor type: 'int8'"):
        flow.randperm(129, dtype=flow.int8)


def test_normal_forms_and_statistics():
    x = flow.normal(2.0, 3.0, (200, 100))
    assert x.dtype == flow.float32 and x.shape == (200, 100)
    a = x.numpy().astype(np.float64)
    assert abs(a.mean() - 2.0) < 0.1 and abs(a.std() - 3.0) < 0.1
    mean = flow.tensor([0.0, 100.0, -100.0], dtype=flow.float64)
    y = flow.normal(mean, 1.0)
    assert y.dtype == flow.float64 and np.all(np.abs(y.numpy() - mean.numpy()) < 10)
    z = flow.normal(5.0, flow.zeros(2, 3))
    assert z.tolist() == [[5.0] * 3] * 2
    w = flow.normal(flow.zeros(4, 1), flow.tensor([0.0, 0.0, 0.0]))
    assert w.shape == (4, 3) and w.tolist() == [[0.0] * 3] * 4
    big = flow.normal(flow.zeros(20000), flow.full((20000,), 2.0))
    assert abs(big.numpy().std() - 2.0) < 0.1
    assert flow.normal(0.0, 1.0, (3,), dtype=flow.float16).dtype == flow.float16


def test_normal_errors_and_grad():
    with pytest.raises(RuntimeError, match=r"normal expects std >= 0.0, but found std -1.0"):
        flow.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError, match=r"normal expects std >= 0.0, but found std -2.0"):
        flow.normal(flow.zeros(2), -2.0)
    with pytest.raises(RuntimeError, match=r"normal expects all elements of std >= 0.0"):
        flow.normal(flow.zeros(2), flow.tensor([1.0, -1.0]))
    with pytest.raises(RuntimeError, match=r"the shapes of mean \[2\] and std \[3\] do not broadcast"):
        flow.normal(flow.zeros(2), flow.ones(3))
    # PyTorch gives mean / std zero gradients; the sample here does not require grad at all
    assert not flow.normal(flow.zeros(2, requires_grad=True), 1.0).requires_grad


def test_random_like():
    x = flow.zeros(100, 100, dtype=flow.float64)
    r = flow.rand_like(x)
    assert r.dtype == flow.float64 and 0 <= r.numpy().min() and r.numpy().max() < 1
    assert abs(r.numpy().mean() - 0.5) < 0.02
    n = flow.randn_like(x, dtype=flow.float32)
    assert n.dtype == flow.float32 and abs(n.numpy().std() - 1) < 0.05
    with pytest.raises(RuntimeError, match=r"uniform: expected a floating point dtype \(float16, float32 or "
                                           r"float64\), got int64"):
        flow.rand_like(flow.zeros(2, dtype=flow.int64))


# ---- in-place initialisers ------------------------------------------------------------------------------
def test_uniform_and_normal_inplace():
    x = flow.zeros(100, 100)
    base = x.numpy()
    assert x.uniform_(-2, 3) is x and x.numpy() is base
    assert -2 <= base.min() and base.max() < 3 and abs(base.mean() - 0.5) < 0.1
    x.uniform_(**{"from": 5.0, "to": 5.0})
    assert (base == 5).all()
    assert x.normal_(1.0, 0.5) is x
    assert abs(base.mean() - 1.0) < 0.02 and abs(base.std() - 0.5) < 0.02
    x.normal_(mean=3.0, std=0.0)
    assert (base == 3).all()
    assert x._version == 4


def test_inplace_initialisers_with_generator_and_errors():
    g = flow.Generator()
    a = flow.zeros(5).uniform_(generator=g.manual_seed(1))
    b = flow.zeros(5).uniform_(generator=g.manual_seed(1))
    assert a.tolist() == b.tolist()
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2.0 > "
                                           r"to=1.0"):
        flow.zeros(2).uniform_(2, 1)
    with pytest.raises(RuntimeError, match=r"normal_ expects std >= 0.0, but found std -1.0"):
        flow.zeros(2).normal_(std=-1)
    with pytest.raises(TypeError, match=r"uniform_\(\) got an unexpected keyword argument 'low'"):
        flow.zeros(2).uniform_(low=1)
    with pytest.raises(RuntimeError, match=r"expected a floating point dtype"):
        flow.zeros(2, dtype=flow.int64).normal_()
    w = flow.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"a leaf Variable that requires grad is being used in an in-place "
                                           r"operation."):
        w.normal_()
    with flow.no_grad():
        w.normal_()
    assert w.requires_grad and w.is_leaf and not (w.numpy() == 0).all()


def test_initialiser_cuts_history():
    w = flow.ones(3, requires_grad=True)
    h = w * 2.0
    h.uniform_()
    h.sum().backward()
    assert w.grad is None or w.grad.tolist() == [0, 0, 0]  # the written values do not depend on w


# ---- from_numpy / as_tensor ---------------------------------------------------------------------------
def test_from_numpy_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = flow.from_numpy(a)
    assert t.dtype == flow.float64 and t.shape == (2, 3) and t.numpy() is a
    t[0, 0] = 100.0
    assert a[0, 0] == 100.0
    a[1, 1] = -5.0
    assert t[1, 1].item() == -5.0
    t.add_(1.0)
    assert a[1, 1] == -4.0
    assert flow.from_numpy(np.array(True)).shape == () and flow.from_numpy(np.zeros(3, np.uint8)).dtype == flow.uint8
    s = a[:, ::2]
    assert np.shares_memory(flow.from_numpy(s).numpy(), a)


def test_from_numpy_errors():
    with pytest.raises(TypeError, match=r"from_numpy\(\): expected np.ndarray \(got list\)"):
        flow.from_numpy([1, 2])
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got float64\)"):
        flow.from_numpy(np.float64(1.0))
    with pytest.raises(ValueError, match=r"given numpy array has byte order different from the native byte order"):
        flow.from_numpy(np.zeros(2, ">f4"))
    with pytest.raises(TypeError, match=r"can't convert np.ndarray of type complex64. The only supported types are: "
                                        r"float64, float32, float16, int64, int32, int16, int8, uint8, bool."):
        flow.from_numpy(np.zeros(2, np.complex64))
    ro = np.zeros(2)
    ro.flags.writeable = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flow.from_numpy(ro)
    assert "The given NumPy array is not writable" in str(caught[0].message)


def test_as_tensor():
    a = np.arange(4, dtype=np.float32)
    t = flow.as_tensor(a)
    assert np.shares_memory(t.numpy(), a)
    assert flow.as_tensor(a, dtype=flow.float32).numpy() is a
    c = flow.as_tensor(a, dtype=flow.float64)
    assert c.dtype == flow.float64 and not np.shares_memory(c.numpy(), a)
    assert flow.as_tensor(a, device="meta").is_meta
    assert flow.as_tensor(t) is t
    assert flow.as_tensor([1, 2]).dtype == flow.int64 and flow.as_tensor(2.5).dtype == flow.float32
    assert not np.shares_memory(flow.as_tensor(np.zeros(2, ">f8")).numpy(), np.zeros(1))
    w = flow.ones(2, requires_grad=True)
    d = flow.as_tensor(w, dtype=flow.float64)  # keeps the autograd history, unlike flow.tensor
    d.sum().backward()
    assert w.grad.tolist() == [1, 1]
    with pytest.raises(TypeError, match=r"as_tensor\(\): argument 'dtype' must be flow.dtype, not str"):
        flow.as_tensor(a, dtype="float32")


# ---- Tensor.type / type_as / new_* ---------------------------------------------------------------------
def test_tensor_type():
    x = flow.tensor([1.5, -2.5])
    assert x.type() == "oneflow_lite.FloatTensor"
    assert x.to("meta").type() == "oneflow_lite.meta.FloatTensor"
    assert x.long().type() == "oneflow_lite.LongTensor" and x.bool().type() == "oneflow_lite.BoolTensor"
    assert x.type(flow.float32) is x
    assert x.type(flow.int32).tolist() == [1, -2]
    assert x.type("torch.DoubleTensor").dtype == flow.float64
    assert x.type("oneflow.ByteTensor").dtype == flow.uint8
    h = x.type("oneflow_lite.meta.HalfTensor")
    assert h.is_meta and h.dtype == flow.float16
    with pytest.raises(NotImplementedError, match=r"Cannot copy out of meta tensor"):
        x.to("meta").type("torch.IntTensor")  # a type name without a device names cpu
    with pytest.raises(ValueError, match=r"invalid type: 'torch.Float'"):
        x.type("torch.Float")
    with pytest.raises(TypeError, match=r"type\(\): argument 'dtype' must be flow.dtype or str, not int"):
        x.type(3)
    assert x.type_as(flow.zeros(1, dtype=flow.int8)).dtype == flow.int8
    assert x.type_as(x) is x


def test_dtype_methods():
    x = flow.tensor([1.7, -0.2, 0.0])
    assert x.int().tolist() == [1, 0, 0] and x.long().dtype == flow.int64
    assert x.bool().tolist() == [True, True, False]
    assert x.double().dtype == flow.float64 and x.half().dtype == flow.float16
    assert x.byte().dtype == flow.uint8 and x.char().dtype == flow.int8 and x.short().dtype == flow.int16
    assert x.float() is x


def test_new_methods():
    x = flow.tensor([1, 2], dtype=flow.int16)
    z = x.new_zeros(2, 3)
    assert z.dtype == flow.int16 and z.shape == (2, 3) and z.tolist() == [[0] * 3] * 2
    assert x.new_ones((1,), dtype=flow.float32).tolist() == [1.0]
    assert x.new_full((2,), 7).tolist() == [7, 7] and x.new_full((2,), 7).dtype == flow.int16
    assert x.new_empty(3).shape == (3,)
    n = x.new_tensor([[1.5]])
    assert n.dtype == flow.int16 and n.tolist() == [[1]]
    assert x.to("meta").new_zeros(2).is_meta
    assert math.isclose(flow.zeros(1).new_tensor(0.5).item(), 0.5)
