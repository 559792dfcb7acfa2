"""Small compat gaps: ``Tensor.view(dtype)``, ``Tensor.to(memory_format=None)``, OneFlow's integer masks in
``masked_fill`` / ``masked_select`` / ``where``, and ``load_state_dict`` with NumPy values. References are NumPy
(``ndarray.view``) and hand-computed values; torch is an optional oracle."""

import warnings

import numpy as np
import pytest

import oneflow_lite as flow


# ---- Tensor.view(dtype) ------------------------------------------------------------------------------------
@pytest.mark.parametrize("src, dst", [
    (np.float32, np.int32), (np.int32, np.float32), (np.float32, np.int16), (np.float32, np.uint8),
    (np.int16, np.float32), (np.uint8, np.float64), (np.float64, np.int64), (np.int8, np.bool_),
])
def test_view_dtype_reinterprets_bits_like_numpy(src, dst):
    a = (np.arange(24).reshape(3, 8) % 2 if dst is np.bool_ else np.arange(24).reshape(3, 8) * 3 - 7).astype(src)
    y = flow.tensor(a).view(flow.from_numpy(np.zeros(0, dst)).dtype)
    ref = a.view(dst)
    assert tuple(y.shape) == ref.shape
    np.testing.assert_array_equal(y.numpy(), ref)


def test_view_dtype_float32_as_int32_by_hand_and_shares_memory():
    x = flow.tensor([1.0, -2.0, 0.5])
    y = x.view(flow.int32)
    assert y.dtype == flow.int32
    # IEEE 754: 1.0 = 0x3F800000, -2.0 = 0xC0000000 (as int32: -2**30), 0.5 = 0x3F000000
    assert y.tolist() == [0x3F800000, 0xC0000000 - 2**32, 0x3F000000]
    y[0] = 0  # the same memory: the float reads 0.0 now
    assert x.tolist() == [0.0, -2.0, 0.5]
    x[2] = 1.0
    assert y[2].item() == 1065353216


def test_view_dtype_bfloat16_int16_round_trip():
    # bfloat16 is the top half of float32: 1.5 = 0x3FC0, -2.0 = 0xC000 (-16384 as int16)
    b = flow.tensor([1.5, -2.0, 0.0], dtype=flow.bfloat16)
    i = b.view(flow.int16)
    assert i.dtype == flow.int16 and i.tolist() == [0x3FC0, -16384, 0]
    back = i.view(flow.bfloat16)
    assert back.dtype == flow.bfloat16 and back.float().tolist() == [1.5, -2.0, 0.0]


def test_view_dtype_shapes_strides_and_offsets():
    x = flow.arange(12, dtype=flow.float32).reshape(3, 4)
    s = x[:, 1:3].view(flow.int8)  # smaller elements: last dim x4, other strides x4, offset x4
    assert tuple(s.shape) == (3, 8) and s.stride() == (16, 1) and s.storage_offset() == 4
    d = x[:, :2].view(flow.float64)  # larger: last dim /2
    assert tuple(d.shape) == (3, 1) and d.stride() == (2, 1)
    np.testing.assert_array_equal(d.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4)[:, :2].copy()
                                  .view(np.float64))
    t = x.t().view(flow.int32)  # same element size: any strides, still a view
    assert t.stride() == (1, 4)
    assert flow.tensor(1.0).view(flow.int32).item() == 1065353216  # 0-d, same size


def test_view_dtype_does_not_require_grad():
    w = flow.ones(2, 3, requires_grad=True)
    assert not w.view(flow.int32).requires_grad
    assert not w.view(flow.float32).requires_grad  # as in PyTorch, even for the same dtype
    assert w.view(6).requires_grad  # view(shape) is unchanged


@pytest.mark.parametrize("call, match", [
    (lambda: flow.ones(2, 3).view(flow.float64),
     r"self.size\(-1\) must be divisible by 2 to view Float as Double \(different element sizes\), but got 3"),
    (lambda: flow.ones(2, 3).t().view(flow.int16),
     r"self.stride\(-1\) must be 1 to view Float as Short \(different element sizes\), but got 3"),
    (lambda: flow.tensor(1.0).view(flow.int16), r"self.dim\(\) cannot be 0 to view Float as Short"),
    (lambda: flow.ones(3, 4)[:, 1:3].view(flow.float64),
     r"self.storage_offset\(\) must be divisible by 2 to view Float as Double .*, but got 1"),
    (lambda: flow.ones(3, 3)[:, :2].view(flow.float64),
     r"self.stride\(0\) must be divisible by 2 to view Float as Double .*, but got 3"),
    (lambda: flow.ones(6, dtype=flow.bfloat16).view(flow.float64),
     r"self.size\(-1\) must be divisible by 4 to view BFloat16 as Double"),
])
def test_view_dtype_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_view_dtype_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    for ours, theirs in [(flow.int16, torch.int16), (flow.float64, torch.float64), (flow.uint8, torch.uint8)]:
        np.testing.assert_array_equal(flow.tensor(a)[:, :2].view(ours).numpy(),
                                      torch.tensor(a)[:, :2].view(theirs).numpy())


# ---- Tensor.to(memory_format=...) ---------------------------------------------------------------------------
def test_to_memory_format_none_matches_torch():
    torch = pytest.importorskip("torch")
    assert torch.ones(2).to(torch.float64, memory_format=None).dtype == torch.float64
    assert flow.ones(2).to(flow.float64, memory_format=None).dtype == flow.float64
    m = flow.nn.Linear(2, 2).to(flow.float64, memory_format=None)
    assert m.weight.dtype == flow.float64


# ---- integer masks (OneFlow's; Note [Integer masks]) -----------------------------------------------------------
@pytest.mark.parametrize("dtype", [flow.int8, flow.int32, flow.int64, flow.uint8])
def test_integer_masks_mean_nonzero(dtype):
    x = flow.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = flow.tensor([3, 0, -1] if dtype is not flow.uint8 else [3, 0, 255], dtype=dtype)
    assert x.masked_fill(mask, 0.0).tolist() == [[0, 2, 0], [0, 5, 0]]
    assert x.masked_fill(mask, flow.tensor(-1.0)).tolist() == [[-1, 2, -1], [-1, 5, -1]]
    y = x.clone()
    assert y.masked_fill_(mask, 9.0) is y and y.tolist() == [[9, 2, 9], [9, 5, 9]]
    assert flow.masked_select(x, mask).tolist() == [1, 3, 4, 6]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert flow.where(mask, x, 0.0).tolist() == [[1, 0, 3], [4, 0, 6]]
    # PyTorch's deprecation warning for a uint8 condition stays; other integer conditions are OneFlow's
    assert [str(w.message)[:40] for w in caught] == (["where received a uint8 condition tensor."]
                                                      if dtype is flow.uint8 else [])


def test_integer_mask_fill_keeps_gradients():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x.masked_fill(flow.tensor([0, 1, 0], dtype=flow.int32), 0.0) * flow.tensor([2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [2, 0, 4]


def test_odd_numbers_transformer_style_int32_mask():
    # Oneflow-Inc/models' odd_numbers transformer: scores.masked_fill(mask == 0 as int32, -1e9)
    scores = flow.zeros(2, 2)
    mask = flow.tensor([[1, 0], [1, 1]], dtype=flow.int32)
    out = scores.masked_fill(mask == 0, -1e9).softmax(-1)
    out_int = scores.masked_fill((mask == 0).to(flow.int32), -1e9).softmax(-1)
    np.testing.assert_allclose(out_int.numpy(), out.numpy())
    np.testing.assert_allclose(out_int.numpy(), [[1.0, 0.0], [0.5, 0.5]])


@pytest.mark.parametrize("call, match", [
    (lambda x: x.masked_fill(flow.tensor([1.0, 0.0]), 0.0),
     "masked_fill only supports boolean masks, but got mask with dtype float32"),
    (lambda x: flow.masked_select(x, flow.tensor([1.0, 0.0])), "masked_select: expected BoolTensor for mask"),
    (lambda x: flow.where(flow.tensor([1.0, 0.0]), x, x), "where: expected condition to be a boolean tensor"),
])
def test_float_masks_keep_pytorch_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call(flow.ones(2))


# ---- load_state_dict with NumPy values (OneFlow's torch2flow recipe) ------------------------------------------
def test_load_state_dict_takes_numpy_arrays():
    m = flow.nn.Linear(3, 2)
    w = np.arange(6, dtype=np.float64).reshape(2, 3) / 4  # float64: cast to the parameter's float32
    b = np.array([1.0, -1.0], dtype=np.float32)
    result = m.load_state_dict({"weight": w, "bias": b})
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert m.weight.dtype == flow.float32
    np.testing.assert_array_equal(m.weight.numpy(), w.astype(np.float32))
    np.testing.assert_array_equal(m.bias.numpy(), b)
    b[0] = 7.0  # a copy, not the caller's array
    assert m.bias.tolist() == [1.0, -1.0]
    out = m(flow.tensor([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(out.numpy(), np.array([[1.0, 2.0, 3.0]]) @ w.T + [1.0, -1.0], rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"size mismatch for bias: copying a param with shape .*\[3\]"):
        m.load_state_dict({"weight": w, "bias": np.zeros(3)})
    np.testing.assert_array_equal(m.bias.numpy(), [1.0, -1.0])  # nothing copied on error


# ---- hash_tensor (PyTorch's mode 0: xor of the elements' 64-bit bits) -----------------------------------------
def _np_hash(a, axis=None, keepdims=False):
    """The reference: upcast to float64 / int64 / uint64 as PyTorch documents, view as uint64, xor-reduce."""
    if a.dtype.kind == "i":
        bits = a.astype(np.int64).view(np.uint64)
    elif a.dtype.kind in "bu":
        bits = a.astype(np.uint64)
    else:
        bits = a.astype(np.float64).view(np.uint64)
    return np.bitwise_xor.reduce(bits, axis=axis, keepdims=keepdims)


def test_hash_tensor_against_numpy():
    a = np.array([[0.1317, -0.5554, -1.4724], [0.0778, -0.6070, 0.6375]], dtype=np.float32)
    x = flow.tensor(a)
    h = flow.hash_tensor(x)
    assert h.dtype == flow.uint64 and h.shape == ()
    assert h.item() == int(_np_hash(a))
    assert flow.hash_tensor(x, 1).tolist() == _np_hash(a, 1).tolist()
    assert x.hash_tensor(0, keepdim=True).tolist() == _np_hash(a, 0, True).tolist()
    assert flow.hash_tensor(x, (0, 1), keepdim=True).tolist() == [[int(_np_hash(a))]]
    assert flow.hash_tensor(flow.zeros(2, 0), 0).tolist() == []


def test_hash_tensor_by_hand():
    # 2.5 = 0x4004000000000000 as a float64; a single element hashes to its own bits
    assert flow.hash_tensor(flow.tensor(2.5)).item() == 0x4004000000000000
    # int32 -3, 1, 2 sign-extend to int64: (-3 ^ 1 ^ 2) = -2 -> 2**64 - 2
    assert flow.hash_tensor(flow.tensor([-3, 1, 2], dtype=flow.int32)).item() == 2**64 - 2
    # uint8 253, 1, 2 zero-extend: 253 ^ 1 ^ 2 = 254; bool True ^ False ^ True = 0
    assert flow.hash_tensor(flow.tensor([253, 1, 2], dtype=flow.uint8)).item() == 254
    assert flow.hash_tensor(flow.tensor([True, False, True])).item() == 0
    # float16 and bfloat16 upcast exactly: -3.0 ^ 1.0 ^ 2.0 as float64 bits
    ref = int(_np_hash(np.array([-3.0, 1.0, 2.0])))
    for d in (flow.float16, flow.bfloat16):
        assert flow.hash_tensor(flow.tensor([-3.0, 1.0, 2.0], dtype=d)).item() == ref


def test_hash_tensor_errors_and_no_grad():
    x = flow.ones(2, 3, requires_grad=True)
    assert not flow.hash_tensor(x).requires_grad
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
        flow.hash_tensor(x, mode=1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.hash_tensor(x, 2)
    with pytest.raises(IndexError, match="hash_tensor.*Expected reduction dim 1 to have non-zero size"):
        flow.hash_tensor(flow.zeros(2, 0), 1)
    with pytest.raises(RuntimeError, match="hash_tensor.*Expected reduction dim to be specified for "
                                           "input.numel\\(\\) == 0"):
        flow.hash_tensor(flow.zeros(0))


def test_hash_tensor_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    for dim in (None, 0, 1):
        ours = flow.hash_tensor(flow.tensor(a), dim).numpy()
        theirs = torch.hash_tensor(torch.tensor(a), dim).numpy()
        np.testing.assert_array_equal(ours, theirs)


# ---- Tensor.grad_dtype (Note [Gradient dtype]) ------------------------------------------------------------------
def test_grad_dtype_casts_accumulated_gradients():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad_dtype == flow.float32
    x.grad_dtype = flow.float64
    assert x.grad_dtype == flow.float64
    seen = []
    x.register_hook(lambda g: seen.append(g.dtype))
    (x * x).sum().backward()  # d/dx x^2 = 2x
    assert x.grad.dtype == flow.float64 and x.grad.tolist() == [2.0, 4.0]
    (x * 3).sum().backward()  # accumulates in float64
    assert x.grad.dtype == flow.float64 and x.grad.tolist() == [5.0, 7.0]
    assert seen == [flow.float64, flow.float64]  # hooks see the cast gradient, as in PyTorch
    assert flow.autograd.grad((x * 2).sum(), x)[0].dtype == flow.float64
    x.grad_dtype = flow.float32  # back to the tensor's own
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.dtype == flow.float32


def test_grad_dtype_set_after_the_graph_was_recorded_and_half_precision():
    x = flow.ones(3, requires_grad=True)
    out = (x * 0.1).sum()
    x.grad_dtype = flow.float16
    out.backward()
    assert x.grad.dtype == flow.float16
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, np.float16(np.float32(0.1))))


class _DoubleGrad(flow.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return (g * 2).double()


def test_grad_dtype_none_keeps_any_dtype():
    x = flow.ones(2, requires_grad=True)
    x.grad_dtype = None
    assert x.grad_dtype is None
    _DoubleGrad.apply(x).sum().backward()
    assert x.grad.dtype == flow.float64 and x.grad.tolist() == [2.0, 2.0]
    y = flow.ones(2, requires_grad=True)  # the default casts to the tensor's dtype
    _DoubleGrad.apply(y).sum().backward()
    assert y.grad.dtype == flow.float32 and y.grad.tolist() == [2.0, 2.0]
    x.grad = flow.ones(2, dtype=flow.float16)  # None admits any dtype
    assert x.grad.dtype == flow.float16


def test_grad_dtype_errors():
    x = flow.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad_dtype can only be set on leaf tensors"):
        (x * 2).grad_dtype = flow.float64
    with pytest.raises(RuntimeError, match="must be a floating point dtype, got int64"):
        x.grad_dtype = flow.int64
    with pytest.raises(TypeError, match="grad_dtype must be a flow.dtype or None"):
        x.grad_dtype = "float64"
    x.grad_dtype = flow.float64
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype 'float32' to a tensor with "
                                           "grad_dtype 'float64'"):
        x.grad = flow.ones(2)
    x.grad = flow.ones(2, dtype=flow.float64)
    assert x.grad.dtype == flow.float64


def test_grad_dtype_matches_torch():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    t.grad_dtype = torch.float64
    (t * t).sum().backward()
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    x.grad_dtype = flow.float64
    (x * x).sum().backward()
    assert str(t.grad.dtype).split(".")[-1] == x.grad.dtype.name
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
