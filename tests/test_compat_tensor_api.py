"""[compat] Tensor API real scripts hit: ``__format__``, the legacy constructor and tensor types, device and
storage flags, ``data_ptr``, ``view_as`` / ``type_as`` / ``reshape_as``, ``new``; and the same through
``flow.mock_torch``."""

import numpy as np
import pytest

import oneflow_lite as flow


# ---- __format__ -------------------------------------------------------------------------------------------
def test_format_of_a_0d_tensor_formats_its_value():
    assert f"{flow.tensor(1.23456):.4f}" == "1.2346"
    assert "{:+.2f}".format(flow.tensor(2.5)) == "+2.50"  # noqa: UP032  (str.format, as scripts write it)
    assert f"{flow.tensor(7):>4}" == "   7"
    assert f"{flow.tensor(3, dtype=flow.int64):d}" == "3"
    assert f"{flow.tensor(True)}" == "True"
    loss = flow.tensor(0.5, requires_grad=True) * 3
    assert f"{loss:.3f}" == "1.500"  # a tensor with a grad_fn formats its value too


def test_format_of_other_tensors_takes_only_an_empty_spec():
    t = flow.tensor([1.5, 2.0])
    assert f"{t}" == repr(t)
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{t:.2f}"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{flow.tensor([1.5]):.2f}"  # one element but 1-d: PyTorch refuses too
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{flow.empty(2, device='meta'):.2f}"


# ---- the legacy constructor ---------------------------------------------------------------------------------
def test_legacy_constructor_from_sizes():
    t = flow.Tensor(2, 3)
    assert isinstance(t, flow.Tensor) and tuple(t.shape) == (2, 3) and t.dtype is flow.float32
    assert tuple(flow.Tensor(size=(4,)).shape) == (4,)
    assert tuple(flow.Tensor(flow.Size([2, 5])).shape) == (2, 5)
    assert tuple(flow.Tensor(3).shape) == (3,)
    assert tuple(flow.Tensor(np.int64(2)).shape) == (2,)
    empty = flow.Tensor()
    assert tuple(empty.shape) == (0,) and empty.dtype is flow.float32
    assert not t.requires_grad and t.is_leaf
    assert flow.Tensor(2, device="meta").is_meta


def test_legacy_constructor_from_data_gives_the_default_float_dtype():
    t = flow.Tensor([1, 2])
    assert t.dtype is flow.float32 and t.tolist() == [1.0, 2.0]
    assert flow.Tensor((1, 2)).tolist() == [1.0, 2.0]  # a tuple is data, not a size
    assert flow.Tensor([[1.5], [2.5]]).tolist() == [[1.5], [2.5]]
    a = flow.Tensor(np.array([1, 2], dtype=np.int64))
    assert a.dtype is flow.float32 and a.tolist() == [1.0, 2.0]
    flow.set_default_dtype(flow.float64)
    try:
        assert flow.Tensor([1]).dtype is flow.float64
        assert flow.Tensor(2).dtype is flow.float64
    finally:
        flow.set_default_dtype(flow.float32)


def test_legacy_constructor_of_a_tensor_returns_it():
    x = flow.tensor([1, 2])
    assert flow.Tensor(x) is x


@pytest.mark.parametrize("args, kwargs, exc, match", [
    ((2.5,), {}, TypeError, r"data must be a sequence \(got float\)"),
    (("a",), {}, TypeError, r"invalid data type 'str'"),
    ((True,), {}, TypeError, r"data must be a sequence \(got bool\)"),
    ((2, "a"), {}, TypeError, r"'size' must be a tuple of ints, but found element of type str"),
    (([1, 2],), {"dtype": flow.int64}, TypeError, r"unexpected keyword argument 'dtype'"),
    ((2,), {"size": (2,)}, TypeError, r"either positionally or as size="),
    ((-1,), {}, RuntimeError, r"negative dimension -1"),
    (([[1, 2], [3]],), {}, ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
])
def test_legacy_constructor_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        flow.Tensor(*args, **kwargs)


def test_legacy_tensor_types():
    cases = {"FloatTensor": flow.float32, "DoubleTensor": flow.float64, "HalfTensor": flow.float16,
             "BFloat16Tensor": flow.bfloat16, "ByteTensor": flow.uint8, "CharTensor": flow.int8,
             "ShortTensor": flow.int16, "IntTensor": flow.int32, "LongTensor": flow.int64, "BoolTensor": flow.bool}
    for name, dtype in cases.items():
        legacy = getattr(flow, name)
        assert legacy.dtype is dtype and legacy.__name__ == name
        assert legacy([1, 0]).dtype is dtype
        assert legacy(2, 3).dtype is dtype and tuple(legacy(2, 3).shape) == (2, 3)
        assert isinstance(flow.zeros(1, dtype=dtype), legacy)
    assert flow.LongTensor([1.7, -1.7]).tolist() == [1, -1]  # truncation, as a cast
    assert flow.BoolTensor([1, 0]).tolist() == [True, False]
    assert not isinstance(flow.zeros(1), flow.LongTensor)
    assert not isinstance(flow.zeros(1, device="meta"), flow.FloatTensor)  # legacy types are cpu types
    assert not isinstance(np.zeros(1, np.float32), flow.FloatTensor)
    assert flow.ones(2).type(flow.LongTensor).dtype is flow.int64
    assert repr(flow.FloatTensor) == "<class 'oneflow_lite.FloatTensor'>"
    with pytest.raises(TypeError, match=r"expected float32 \(got int64\)"):
        flow.FloatTensor(flow.tensor([1, 2]))


def test_tensor_new_keeps_dtype_and_device():
    x = flow.ones(2, dtype=flow.int32)
    assert x.new(2, 3).dtype is flow.int32 and tuple(x.new(2, 3).shape) == (2, 3)
    assert x.new([1.5]).dtype is flow.int32 and x.new([1.5]).tolist() == [1]
    assert tuple(x.new().shape) == (0,)
    assert flow.ones(1, device="meta").new(2).is_meta


# ---- flags, sizes, data_ptr ---------------------------------------------------------------------------------
def test_device_and_storage_flags():
    t = flow.ones(2, 3, dtype=flow.float64)
    assert t.is_cpu and not t.is_cuda and not t.is_xpu and not t.is_mps and not t.is_meta
    assert not t.is_sparse and not t.is_quantized and not t.is_inference() and not t.is_complex()
    assert t.is_signed() and not flow.ones(1, dtype=flow.uint8).is_signed()
    assert t.get_device() == -1 and t.device.type == "cpu"
    m = flow.ones(2, device="meta")
    assert m.is_meta and not m.is_cpu and m.get_device() == 0
    with flow.inference_mode():
        assert not flow.ones(1).is_inference()  # inference_mode makes ordinary tensors here


def test_flags_of_backends_and_layouts_not_provided():
    t = flow.ones(2)
    for name in ("is_sparse_csr", "is_nested", "is_mkldnn", "is_vulkan", "is_xla", "is_ipu", "is_maia", "is_mtia"):
        assert getattr(t, name) is False, name
    assert not t.is_pinned() and not t.is_shared() and not t.is_conj() and not t.is_neg()
    assert t.resolve_conj() is t and t.resolve_neg() is t
    assert not flow.is_conj(t) and not flow.is_neg(t) and flow.resolve_conj(t) is t and flow.resolve_neg(t) is t
    assert not flow.is_inference(t)
    with pytest.raises(TypeError, match=r"is_inference\(\): argument 'input'"):
        flow.is_inference(2)


def test_element_size_nbytes_itemsize_ndimension():
    for dtype, size in ((flow.float64, 8), (flow.float32, 4), (flow.float16, 2), (flow.bfloat16, 2),
                        (flow.int64, 8), (flow.int16, 2), (flow.uint8, 1), (flow.bool, 1)):
        t = flow.zeros(3, 5, dtype=dtype)
        assert t.element_size() == size and t.itemsize == size and t.nbytes == 15 * size
    assert flow.zeros(0).nbytes == 0 and flow.zeros(2, 3, 4).ndimension() == 3


def test_data_ptr_is_stable_per_buffer():
    t = flow.arange(6, dtype=flow.float32)
    assert isinstance(t.data_ptr(), int) and t.data_ptr() != 0
    assert t.data_ptr() == t.data_ptr()
    assert t.detach().data_ptr() == t.data_ptr() and t.view(2, 3).data_ptr() == t.data_ptr()
    assert t[2:].data_ptr() == t.data_ptr() + 2 * 4  # a view starts at its offset, as in PyTorch
    assert t.clone().data_ptr() != t.data_ptr()
    assert flow.from_numpy(t.numpy()).data_ptr() == t.data_ptr()
    assert flow.ones(2, device="meta").data_ptr() == 0


def test_is_nonzero_and_is_same_size():
    assert flow.tensor([2.0]).is_nonzero() and not flow.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        flow.tensor([1, 2]).is_nonzero()
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        flow.tensor([]).is_nonzero()
    assert flow.ones(2, 3).is_same_size(flow.zeros(2, 3)) and not flow.ones(2).is_same_size(flow.ones(3))
    with pytest.raises(TypeError, match="must be Tensor"):
        flow.ones(2).is_same_size([2])


def test_view_as_reshape_as_type_as():
    x = flow.arange(6)
    other = flow.zeros(2, 3, dtype=flow.float64)
    v = x.view_as(other)
    assert tuple(v.shape) == (2, 3) and v.dtype is flow.int64 and v.data_ptr() == x.data_ptr()
    assert tuple(x.reshape_as(other).shape) == (2, 3)
    assert x.type_as(other).dtype is flow.float64
    with pytest.raises(TypeError, match=r"view_as\(\): argument 'other'"):
        x.view_as((2, 3))
    with pytest.raises(RuntimeError):
        x.view_as(flow.zeros(4))


def test_new_methods_exist_and_follow_self():
    x = flow.ones(2, dtype=flow.float64)
    assert x.new_zeros(3).dtype is flow.float64 and x.new_ones(2, 2).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0] and tuple(x.new_empty(4).shape) == (4,)
    assert x.new_tensor([1, 2]).dtype is flow.float64


# ---- under flow.mock_torch ------------------------------------------------------------------------------------
def test_scripts_using_the_legacy_api_run_under_mock_torch():
    with flow.mock_torch.enable():
        import torch

        t = torch.Tensor(2, 3)
        assert isinstance(t, torch.Tensor) and t.dtype is torch.float32
        labels = torch.LongTensor([0, 2, 1])
        assert labels.dtype is torch.int64
        loss = torch.tensor(0.123456)
        assert f"loss {loss:.4f}" == "loss 0.1235"
        assert isinstance(torch.default_generator, torch.Generator)
        torch.default_generator.manual_seed(3)
        assert torch.initial_seed() == 3


def test_legacy_api_matches_torch():
    torch = pytest.importorskip("torch")
    for args in ((2, 3), ([1, 2],), ((1, 2),), ()):
        mine, theirs = flow.Tensor(*args), torch.Tensor(*args)
        assert tuple(mine.shape) == tuple(theirs.shape) and mine.dtype.name == str(theirs.dtype)[6:]
    assert flow.LongTensor([1.7, -1.7]).tolist() == torch.LongTensor([1.7, -1.7]).tolist()
    for value, spec in ((1.23456, ".3f"), (2.5, "+.2f"), (7, ">4")):
        assert format(flow.tensor(value), spec) == format(torch.tensor(value), spec)
    x, y = flow.arange(6.0), torch.arange(6.0)
    assert x[2:].data_ptr() - x.data_ptr() == y[2:].data_ptr() - y.data_ptr()
    assert flow.ones(2, 3).nbytes == torch.ones(2, 3).nbytes
