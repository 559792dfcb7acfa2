"""[compat] shape, joining / splitting, strided views, scatter / index ops and Tensor-only methods beyond the op
database (tests/op_specs/shape.py and index.py hold their values and gradients): views and copies, strides and
storage, in-place view ops, resize_, PyTorch's errors, warnings, deepcopy / pickle, and an optional comparison
with torch."""

import copy
import pickle
import warnings

import numpy as np
import pytest

import oneflow_lite as flow


def _arange(*shape, dtype=flow.float32):
    return flow.tensor(np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape), dtype=dtype)


def _shares(a, b):
    return np.shares_memory(a.numpy(), b.numpy())


# ---- views and copies ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("view, index", [
    (lambda x: x.select(1, 2), (0, 1)), (lambda x: flow.movedim(x, 0, -1), (0, 0, 1)),
    (lambda x: x.swapaxes(0, 2), (1, 2, 0)), (lambda x: x.swapdims(0, 1), (2, 0, 1)),
    (lambda x: x.ravel(), (5,)), (lambda x: x.mT, (0, 1, 2)), (lambda x: x.adjoint(), (1, 3, 0)),
    (lambda x: x.as_strided((2, 2), (1, 4), 1), (1, 1)), (lambda x: x.unfold(2, 2, 1), (0, 1, 2, 1)),
    (lambda x: flow.tensor_split(x, [1], dim=1)[1], (0, 0, 0)), (lambda x: flow.hsplit(x, 3)[2], (1, 0, 3)),
    (lambda x: flow.split_with_sizes(x, [1, 1], 0)[1], (0, 2, 3)), (lambda x: flow.atleast_3d(x[0, 0]), (0, 2, 0)),
    (lambda x: x.unsafe_chunk(2, 0)[0], (0, 1, 1)),
], ids=["select", "movedim", "swapaxes", "swapdims", "ravel", "mT", "adjoint", "as_strided", "unfold",
        "tensor_split", "hsplit", "split_with_sizes", "atleast_3d", "unsafe_chunk"])
def test_views_share_memory_and_writes_go_through(view, index):
    """As in PyTorch, these return views: a write through the view changes the base, and the version counter is
    shared."""
    x = _arange(2, 3, 4)
    v = view(x)
    assert _shares(v, x)
    v[index] = -1.0
    assert (x.numpy() == -1).sum() == 1
    assert x._version == v._version == 1


@pytest.mark.parametrize("fn", [
    lambda x: flow.alias_copy(x), lambda x: flow.select_copy(x, 0, 1), lambda x: flow.permute_copy(x, (2, 0, 1)),
    lambda x: flow.t_copy(x[0]), lambda x: flow.view_copy(x, (6, 4)), lambda x: flow.unfold_copy(x, 2, 2, 2),
    lambda x: flow.narrow_copy(x, 1, 0, 2), lambda x: flow.as_strided_copy(x, (3,), (2,)),
    lambda x: flow.slice_copy(x, 2, 1, None, 2), lambda x: flow.expand_copy(x[:, :1], (2, 3, 4)),
    lambda x: flow.squeeze_copy(x[:1]), lambda x: flow.unsqueeze_copy(x, 0), lambda x: flow.detach_copy(x),
    lambda x: flow.transpose_copy(x, 0, 2), lambda x: flow.split_copy(x, 1)[0],
    lambda x: flow.split_with_sizes_copy(x, [2, 1], 1)[1], lambda x: flow.unbind_copy(x, 2)[3],
    lambda x: flow.rot90(x, 4),
])
def test_copy_functions_share_no_memory(fn):
    x = _arange(2, 3, 4)
    out = fn(x)
    assert not _shares(out, x)
    assert out.is_contiguous()


def test_detach_copy_is_detached_and_alias_copy_differentiable():
    x = _arange(2, 3).requires_grad_()
    assert not flow.detach_copy(x).requires_grad
    flow.alias_copy(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))


def test_meshgrid_and_broadcast_tensors_give_read_only_expanded_views():
    a, b = flow.tensor([1.0, 2.0]), flow.tensor([3.0, 4.0, 5.0])
    gx, gy = flow.meshgrid(a, b, indexing="ij")
    assert _shares(gx, a) and gx.stride() == (1, 0) and gy.stride() == (0, 1)
    with pytest.raises(RuntimeError, match="refers to a single memory location"):
        gx.add_(1)
    s, t = flow.broadcast_tensors(a.view(2, 1), b)
    assert s.shape == t.shape == (2, 3) and _shares(s, a)


def test_scatter_functions_do_not_modify_their_input():
    x = _arange(3, 4)
    before = x.numpy().copy()
    flow.select_scatter(x, flow.ones(4), 0, 1)
    flow.slice_scatter(x, flow.ones(3, 2), 1, 0, 4, 2)
    flow.as_strided_scatter(x, flow.ones(2, 2), (2, 2), (1, 2))
    flow.index_copy(x, 0, flow.tensor([1]), flow.ones(1, 4))
    flow.scatter_reduce(x, 1, flow.tensor([[0]]), flow.ones(1, 1), "sum")
    flow.masked_scatter(x, flow.ones(3, 4, dtype=flow.bool), flow.zeros(12))
    flow.put(x, flow.tensor([0]), flow.tensor([9.0]))
    np.testing.assert_array_equal(x.numpy(), before)


# ---- in-place forms -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, expected", [
    (lambda y: y.index_copy_(1, flow.tensor([0, 2]), flow.ones(2, 2)), [[1, 1, 1], [1, 4, 1]]),
    (lambda y: y.index_fill_(1, flow.tensor([1]), -5), [[0, -5, 2], [3, -5, 5]]),
    (lambda y: y.index_reduce_(1, flow.tensor([0, 0]), flow.full((2, 2), 2.0), "prod"), [[0, 1, 2], [12, 4, 5]]),
    (lambda y: y.scatter_reduce_(1, flow.tensor([[0, 0]]), flow.ones(1, 2), "amax"), [[1, 1, 2], [3, 4, 5]]),
    (lambda y: y.put_(flow.tensor([0, 5]), flow.tensor([-1.0, -2.0])), [[-1, 1, 2], [3, 4, -2]]),
    (lambda y: y.put_(flow.tensor([1, 1]), flow.tensor([1.0, 2.0]), accumulate=True), [[0, 4, 2], [3, 4, 5]]),
    (lambda y: y.masked_scatter_(flow.tensor([True, False, True]), flow.tensor([9.0, 8, 7, 6])),
     [[9, 1, 8], [7, 4, 6]]),
    (lambda y: flow.index_put_(y, (flow.tensor([1]),), flow.tensor(7.0)), [[0, 1, 2], [7, 7, 7]]),
    (lambda y: flow.fill_(y, 3), [[3, 3, 3], [3, 3, 3]]), (lambda y: flow.zero_(y), [[0, 0, 0], [0, 0, 0]]),
], ids=["index_copy_", "index_fill_", "index_reduce_", "scatter_reduce_", "put_", "put_accumulate", "masked_scatter_",
        "index_put_", "fill_", "zero_"])
def test_in_place_forms_write_into_self(call, expected):
    y = _arange(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # index_reduce's beta warning
        out = call(y)
    assert out is y and y._version == 1
    np.testing.assert_array_equal(y.numpy(), np.array(expected, np.float32))


def test_torch_level_fill_detach():
    x = _arange(2, 3).requires_grad_()
    v = flow.tensor(2.0, requires_grad=True)
    out = flow.fill(x, v)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 2.0))
    out.sum().backward()
    assert v.grad.item() == 6.0 and np.all(x.grad.numpy() == 0)
    d = flow.detach(x)
    assert not d.requires_grad and _shares(d, x)
    y = x * 2
    assert flow.detach_(y) is y and y.is_leaf and not y.requires_grad


# ---- strides, storage -----------------------------------------------------------------------------------------
def test_stride_storage_offset_dim_order_is_set_to():
    x = _arange(2, 3, 4)
    assert x.stride() == (12, 4, 1) and x.stride(-2) == 4 and x.storage_offset() == 0
    assert x[1, 2].storage_offset() == 20 and x[:, 1:].stride() == (12, 4, 1)
    assert x.permute(2, 0, 1).stride() == (1, 12, 4) and x.permute(2, 0, 1).dim_order() == (1, 2, 0)
    assert x[:, :1].expand(2, 5, 4).stride() == (12, 0, 1)
    assert flow.ones(3).stride() == (1,) and flow.tensor(1.0).stride() == ()
    assert flow.empty(2, 3, device="meta").stride() == (3, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.stride(3)
    with pytest.raises(RuntimeError, match="does not have unique dim order"):
        flow.ones(1, 2).dim_order(ambiguity_check=True)
    assert x.is_set_to(x[:]) and not x.is_set_to(x.view(24)) and not x.is_set_to(x.clone())


def test_untyped_and_typed_storage_share_the_buffer():
    x = _arange(2, 3)
    s = x[1].untyped_storage()
    assert s.nbytes() == s.size() == len(s) == 24 and s.element_size() == 1
    assert s.data_ptr() == x.data_ptr() and flow.is_storage(s)
    flow.set_warn_always(True)  # PyTorch warns once
    try:
        with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
            t = x[1].storage()
    finally:
        flow.set_warn_always(False)
    assert t.size() == 6 and t.element_size() == 4 and t.dtype is flow.float32 and t.nbytes() == 24
    t[0] = 42.0
    assert x[0, 0].item() == 42.0 and t.tolist()[:2] == [42.0, 1.0]
    with pytest.raises(RuntimeError, match="holds no data"):
        flow.empty(2, device="meta").untyped_storage()


def test_as_strided_reads_the_storage_and_checks_bounds():
    b = _arange(10)
    x = b[2:8]
    np.testing.assert_array_equal(x.as_strided((2, 2), (1, 2)).numpy(), [[2, 4], [3, 5]])  # offset 2: x's own
    np.testing.assert_array_equal(x.as_strided((2, 2), (1, 2), 0).numpy(), [[0, 2], [1, 3]])
    with pytest.raises(RuntimeError, match=r"setStorage: sizes \[2, 2\], strides \[1, 2\], storage offset 8, and "
                                           r"itemsize 4 requiring a storage size of 48 are out of bounds for storage "
                                           r"of size 40"):
        x.as_strided((2, 2), (1, 2), 8)
    with pytest.raises(RuntimeError, match="Negative strides are not supported"):
        x.as_strided((2, 2), (-1, 2), 1)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        x.as_strided((2, 2), (1, 2, 3))
    y = flow.zeros(6)
    assert y.as_strided_((2, 2), (1, 2), 1) is y
    assert y.shape == (2, 2) and y.stride() == (1, 2) and y.storage_offset() == 1


def test_as_strided_grad_accumulates_and_shares_overlapping_inputs():
    a = flow.arange(4.0).requires_grad_()
    (g,) = flow.autograd.grad(a.as_strided((3,), (1,), 0).sum() + a.as_strided((2, 2), (1, 1)).sum(), a)
    np.testing.assert_array_equal(g.numpy(), [2, 3, 2, 0])
    e = flow.ones(2, requires_grad=True)  # an expanded input: the elements on one position share its gradient
    (g,) = flow.autograd.grad(e.expand(3, 2).as_strided((2,), (1,), 0).sum(), e)
    np.testing.assert_array_equal(g.numpy(), [1, 1])


def test_as_strided_scatter_uses_the_inputs_storage_positions():
    out = flow.as_strided_scatter(flow.zeros(10)[2:8], flow.ones(2, 2), (2, 2), (1, 2))
    np.testing.assert_array_equal(out.numpy(), [1, 1, 1, 1, 0, 0])
    out = flow.as_strided_scatter(flow.zeros(3, 2).t(), flow.ones(2, 2), (2, 2), (1, 2))
    np.testing.assert_array_equal(out.numpy(), [[1, 1, 0], [1, 1, 0]])
    # a geometry reaching past the input's storage (4 + 2 * 5 + 2 * 5 + 1 = 25 elements of 9): PyTorch's error
    with pytest.raises(RuntimeError, match=r"as_strided_scatter: setStorage: .* requiring a storage size of 100 "
                                           r"are out of bounds for storage of size 36"):
        flow.as_strided_scatter(flow.zeros(3, 3), flow.ones(3, 3), (3, 3), (5, 5), 4)


def test_new_empty_strided_has_the_strides():
    t = flow.ones(2, dtype=flow.int32).new_empty_strided((2, 3), (1, 2))
    assert t.shape == (2, 3) and t.stride() == (1, 2) and t.dtype is flow.int32


# ---- in-place view ops, resize_ ---------------------------------------------------------------------------------
@pytest.mark.parametrize("call, shape", [
    (lambda t: t.squeeze_(), (3, 2)), (lambda t: t.squeeze_(1), (3, 2)), (lambda t: t.unsqueeze_(0), (1, 3, 1, 2)),
    (lambda t: t.transpose_(0, 2), (2, 1, 3)), (lambda t: t.swapaxes_(0, 2), (2, 1, 3)),
    (lambda t: t.swapdims_(-1, 0), (2, 1, 3)), (lambda t: t[:, 0].t_(), (2, 3)),
])
def test_in_place_view_ops_change_the_shape_of_the_same_tensor(call, shape):
    x = _arange(3, 1, 2)
    out = call(x)
    assert out.shape == shape
    assert _shares(out, x)


def test_in_place_view_ops_and_autograd():
    leaf = flow.ones(3, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.t_()
    with flow.no_grad():
        leaf.t_()
    assert leaf.shape == (1, 3) and leaf.requires_grad and leaf.is_leaf
    a = flow.ones(3, 1, requires_grad=True)
    q = a * 2
    q.t_()
    assert q.grad_fn is not None and q.shape == (1, 3)
    (q * flow.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[2], [4], [6]])
    b = flow.ones(3, 1, requires_grad=True)
    r = b * 1
    c = r * r  # saves r
    r.squeeze_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_resize_follows_pytorch_on_storage_it_owns():
    z = _arange(2, 3)
    z.resize_(3, 2)
    np.testing.assert_array_equal(z.numpy(), np.arange(6).reshape(3, 2))
    z.resize_(2)
    assert z.shape == (2,) and z.untyped_storage().nbytes() == 24  # the storage keeps its size
    z.resize_(4, 4)  # grows: the old values first
    np.testing.assert_array_equal(z.numpy().reshape(-1)[:6], np.arange(6))
    assert z.resize_as_(flow.ones(5)).shape == (5,)
    v = flow.ones(4)
    view = v.view(2, 2)
    with pytest.raises(RuntimeError, match="cannot grow the storage of a tensor that other tensors view"):
        v.resize_(8)
    assert view.shape == (2, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        flow.ones(2, requires_grad=True).resize_(3)
    m = flow.empty(2, device="meta").resize_(3, 4)
    assert m.shape == (3, 4) and m.device.type == "meta"


# ---- Tensor-only methods ----------------------------------------------------------------------------------------
def test_matrix_transposes_and_errors():
    x = _arange(2, 3, 4)
    assert x.mT.shape == x.mH.shape == (2, 4, 3)
    assert x[0].H.shape == (4, 3)
    with pytest.raises(RuntimeError, match="tensor.mT is only supported on matrices or batches of matrices. Got 1-D"):
        _ = flow.ones(3).mT
    with pytest.raises(RuntimeError, match="For batches of matrices, consider using tensor.mH"):
        _ = x.H
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        assert flow.tensor(1.0).H.item() == 1.0


def test_sum_to_size():
    x = _arange(2, 3)
    np.testing.assert_array_equal(x.sum_to_size(1, 3).numpy(), [[3, 5, 7]])
    np.testing.assert_array_equal(x.sum_to_size((2, 1)).numpy(), [[3], [12]])
    assert x.sum_to_size(()).item() == 15 and x.sum_to_size(2, 3) is x
    with pytest.raises(RuntimeError, match=r"size \{\[4\]\} is not expandable to size \{\[2, 3\]\}."):
        x.sum_to_size(4)


def test_apply_map_map2():
    x = _arange(2, 3)
    assert x.apply_(lambda v: v * 2) is x
    np.testing.assert_array_equal(x.numpy(), np.arange(6).reshape(2, 3) * 2)
    x.map_(flow.ones(3), lambda a, b: a + b)
    x.map2_(flow.ones(3), flow.ones(2, 1), lambda a, b, c: a - b - c)
    np.testing.assert_array_equal(x.numpy(), np.arange(6).reshape(2, 3) * 2 - 1)
    assert x._version == 3
    with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that requires grad"):
        flow.ones(2, requires_grad=True).apply_(abs)
    with pytest.raises(TypeError, match="map_: expected oneflow_lite.FloatTensor for 'other'"):
        x.map_(flow.ones(3, dtype=flow.int64), lambda a, b: a)


def test_contains_reversed_output_nr_complex_and_flags():
    x = _arange(2, 3)
    assert 3.0 in x and 10 not in x and flow.tensor([3.0, 4.0, 5.0]) in x
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "a" in x  # noqa: B015
    assert [t.item() for t in reversed(flow.arange(3))] == [2, 1, 0]
    np.testing.assert_array_equal(reversed(x).numpy(), [[3, 4, 5], [0, 1, 2]])
    assert reversed(flow.tensor(3)).item() == 3
    a = flow.ones(3, requires_grad=True)
    assert a.output_nr == 0 and flow.unbind(a * 1)[2].output_nr == 2
    assert complex(flow.tensor(2.0)) == 2 + 0j
    assert x.share_memory_() is x and not x.is_shared()
    assert x.pin_memory() is x and not x.is_pinned()
    assert x.to_dense() is x and x.to_dense(flow.float64).dtype is flow.float64
    assert x.const_data_ptr() == x.data_ptr()
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        x.cuda()


def test_legacy_attributes_dlpack_and_as_subclass():
    x = _arange(2, 3)
    assert x.name is None
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert x.volatile is False
    with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
        x.reinforce(1.0)
    y = flow.zeros(2, 3)
    assert y.module_load(x) is not y and np.array_equal(y.numpy(), x.numpy())
    assert x.__dlpack_device__() == (1, 0)
    back = np.from_dlpack(x)
    assert np.shares_memory(back, x.numpy())

    class Marked(flow.Tensor):
        pass
    a = flow.ones(2, requires_grad=True)
    m = a.as_subclass(Marked)
    assert type(m) is Marked and _shares(m, a) and m.grad_fn is not None
    (m * 3).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3, 3])


def test_deepcopy_keeps_leafness_grad_and_shared_storage():
    a = flow.ones(2, requires_grad=True)
    a.grad = flow.full((2,), 3.0)
    c = copy.deepcopy(a)
    assert c.requires_grad and c.is_leaf and not _shares(c, a)
    np.testing.assert_array_equal(c.grad.numpy(), [3, 3])
    with pytest.raises(RuntimeError, match=r"Only Tensors created explicitly by the user \(graph leaves\)"):
        copy.deepcopy(a * 2)
    b = flow.ones(4)
    base, view = copy.deepcopy([b, b[1:3]])
    view[0] = 7.0
    np.testing.assert_array_equal(base.numpy(), [1, 7, 1, 1])
    np.testing.assert_array_equal(b.numpy(), [1, 1, 1, 1])
    m = copy.deepcopy(flow.empty(2, 3, device="meta"))
    assert m.shape == (2, 3) and m.device.type == "meta"


def test_pickle_round_trip_through_setstate():
    a = flow.tensor([1.0, 2.0], requires_grad=True)
    b = pickle.loads(pickle.dumps(a))
    assert b.requires_grad and b.is_leaf
    np.testing.assert_array_equal(b.numpy(), [1, 2])
    c = flow.ones(2)
    c.__setstate__((True, None, None))
    assert c.requires_grad


# ---- functions: errors, warnings, edge cases ----------------------------------------------------------------------
X = _arange(3, 4)
_ERRORS = [
    (lambda: flow.block_diag(flow.ones(2, 2, 2)), RuntimeError,
     "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"),
    (lambda: flow.broadcast_shapes((2, 1), (3, 2)), RuntimeError,
     (r"Attempting to broadcast a dimension of length 3 at -2! Mismatching argument at index 1 had \(3, 2\); but "
      r"expected shape should be broadcastable to \[2, 2\]")),
    (lambda: flow.broadcast_tensors(flow.ones(2), flow.ones(3)), RuntimeError,
     r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0"),
    (lambda: flow.cartesian_prod(flow.ones(2, 2)), RuntimeError, r"Expect a 1D vector, but got shape \[2, 2\]"),
    (lambda: flow.combinations(flow.ones(3), r=-1), RuntimeError, "Expect a non-negative number, but got -1"),
    (lambda: flow.meshgrid(flow.ones(2), indexing="foo"), RuntimeError,
     'torch.meshgrid: indexing must be one of "xy" or "ij", but received: foo'),
    (lambda: flow.meshgrid(flow.ones(2), flow.ones(2, dtype=flow.int64), indexing="ij"), RuntimeError,
     "meshgrid expects all tensors to have the same dtype"),
    (lambda: flow.meshgrid(flow.ones(2, 2), indexing="ij"), RuntimeError, "Expected 0D or 1D tensor"),
    (lambda: flow.hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
    (lambda: flow.hsplit(X, 3), RuntimeError,
     ("torch.hsplit attempted to split along dimension 1, but the size of the dimension 4 is not divisible by the "
      "split_size 3!")),
    (lambda: flow.vsplit(flow.ones(3), 1), RuntimeError,
     "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with 1 dimensions!"),
    (lambda: flow.tensor_split(X, 0), RuntimeError, "number of sections must be larger than 0, got 0"),
    (lambda: flow.tensor_split(X, flow.tensor([1.0])), RuntimeError,
     "tensor_split expected tensor_indices_or_sections to have dtype of long, but got Float"),
    (lambda: flow.tensor_split(flow.tensor(1.0), 1), RuntimeError,
     "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"),
    (lambda: flow.split_with_sizes(X, [1, 1]), RuntimeError,
     (r"split_with_sizes expects split_sizes to sum exactly to 3 \(input tensor's size at dimension 0\), but got "
      r"split_sizes=\[1, 1\]")),
    (lambda: flow.movedim(flow.ones(2, 3, 4), (0, 0), (2, 1)), RuntimeError,
     r"movedim: repeated dim in `source` \(\[0, 0\]\)"),
    (lambda: flow.movedim(flow.ones(2, 3, 4), (0, 1), (2,)), RuntimeError,
     "should contain the same number of dims as destination"),
    (lambda: flow.rot90(X, 1, [0, 0]), RuntimeError,
     "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"),
    (lambda: flow.rot90(flow.ones(3)), RuntimeError, "expected total dims >= 2, but got total dims = 1"),
    (lambda: flow.fliplr(flow.ones(3)), RuntimeError, "Input must be >= 2-d."),
    (lambda: flow.diff(flow.tensor(1.0)), RuntimeError, "diff expects input to be at least one-dimensional"),
    (lambda: flow.diff(X, prepend=flow.zeros(4)), RuntimeError,
     "diff expects prepend or append to be the same dimension as input"),
    (lambda: flow.diff(X, 0, append=flow.zeros(4)), RuntimeError,  # order 0 returns the input, after the checks
     "diff expects prepend or append to be the same dimension as input"),
    (lambda: flow.repeat_interleave(X, flow.tensor([1, 2]), dim=0), RuntimeError,
     r"repeats must have the same size as input along dim, but got repeats.size\(0\) = 2 and input.size\(0\) = 3"),
    (lambda: flow.repeat_interleave(X, flow.tensor([1, -2, 1]), dim=0), RuntimeError, "repeats can not be negative"),
    (lambda: flow.repeat_interleave(X, 2, dim=1, output_size=7), RuntimeError,
     "repeat_interleave: Invalid output_size, expected 8 but got 7"),
    (lambda: flow.repeat_interleave(X, flow.tensor([2.0]), dim=0), NotImplementedError, "not implemented for 'Float'"),
    (lambda: flow.vander(flow.ones(2, 2)), RuntimeError, "x must be a one-dimensional tensor."),
    (lambda: flow.constant_pad_nd(X, [1]), RuntimeError, "Length of pad must be even but instead it equals 1"),
    (lambda: flow.select(X, 0, 5), IndexError,
     r"select\(\): index 5 out of range for tensor of size \[3, 4\] at dimension 0"),
    (lambda: flow.select_scatter(X, flow.ones(3), 0, 1), RuntimeError,
     r"expected src to have a size equal to the slice of self. src size = \[3\], slice size = \[4\]"),
    (lambda: flow.slice_scatter(X, flow.ones(3, 4), step=0), RuntimeError, "slice step must be positive"),
    (lambda: X.unfold(1, 5, 1), RuntimeError, "maximum size for tensor at dimension 1 is 4 but size is 5"),
    (lambda: X.unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda: flow.scatter_reduce(X, 1, flow.tensor([[0]]), flow.ones(1, 1), "max"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got max"),
    (lambda: flow.scatter_reduce(X, 1, flow.tensor([[5]]), flow.ones(1, 1), "sum"), RuntimeError,
     "index 5 is out of bounds for dimension 1 with size 4"),
    (lambda: flow.index_copy(X, 1, flow.tensor([0, 2]), flow.ones(3, 3)), IndexError,
     r"index_copy_\(\): Number of indices \(2\) should be equal to source.size\(dim\) \(3\)"),
    (lambda: flow.index_copy(X, 1, flow.tensor([0, 5]), flow.ones(3, 2)), IndexError,
     r"index_copy_\(\): index 5 is out of bounds for dimension 1 with size 4"),
    (lambda: flow.index_copy(X, 1, flow.tensor([0], dtype=flow.int32), flow.ones(3, 1)), RuntimeError,
     r"index_copy_\(\): Expected a long tensor for index, but got Int"),
    (lambda: flow.index_fill(X, 1, flow.tensor([0]), flow.tensor([1.0])), RuntimeError,
     "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension"),
    (lambda: flow.index_fill(X, 1, flow.tensor([4]), 1), IndexError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda: flow.index_reduce(X, 1, flow.tensor([0]), flow.ones(3, 1), "sum"), RuntimeError,
     "index_reduce\\(\\): Expected reduce to be one of prod, mean, amax or amin but got sum."),
    (lambda: flow.take(X, flow.tensor([12])), IndexError,
     "out of range: tried to access index 12 on a tensor of 12 elements."),
    (lambda: flow.take(X, flow.tensor([1], dtype=flow.int32)), RuntimeError,
     r"take\(\): Expected a long tensor for index, but got Int"),
    (lambda: flow.take_along_dim(X, flow.tensor([[[0]]]), dim=1), RuntimeError,
     "input and indices should have the same number of dimensions"),
    (lambda: flow.put(X, flow.tensor([0, 1]), flow.tensor([1.0])), IndexError,
     (r"put_\(\): Expected source and index to have the same number of elements, but got source.numel\(\) = 1, "
      r"index.numel\(\) = 2")),
    (lambda: flow.put(X, flow.tensor([0, 1]), flow.tensor([1, 2])), RuntimeError,
     (r"put_\(\): self and source expected to have the same dtype, but got self.dtype = Float and source.dtype = "
      r"Long")),
    (lambda: flow.masked_scatter(X, flow.tensor([1, 0, 1, 0]), flow.ones(12)), RuntimeError,
     "masked_scatter_ only supports boolean masks, but got mask with dtype Long"),
    (lambda: flow.masked_scatter(X, flow.ones(4, dtype=flow.bool), flow.ones(3)), RuntimeError,
     "Number of elements of source < number of ones in mask"),
    (lambda: flow.nonzero_static(X, size=-1), RuntimeError, "nonzero_static: 'size' must be an non-negative integer"),
    (lambda: flow.unravel_index(flow.tensor([1.0]), (2, 3)), TypeError,
     "expected 'indices' to be integer dtype, but got oneflow_lite.float32"),
    (lambda: flow.unravel_index(flow.tensor([1]), (2, -3)), ValueError, "'shape' cannot have negative values"),
]


@pytest.mark.parametrize("call, error, message", _ERRORS, ids=[str(i) for i in range(len(_ERRORS))])
def test_errors_follow_pytorch(call, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=message):
            call()


def test_warnings_point_at_the_caller():
    with pytest.warns(UserWarning, match="required to pass the indexing argument") as record:
        flow.meshgrid(flow.ones(2), flow.ones(3))
    assert record[0].filename == __file__
    flow.set_warn_always(True)
    try:
        with pytest.warns(UserWarning, match="index_reduce\\(\\) is in beta"):
            flow.index_reduce(X, 1, flow.tensor([0]), flow.ones(3, 1), "amax")
    finally:
        flow.set_warn_always(False)


def test_argument_forms():
    assert flow.atleast_2d(flow.ones(2), flow.ones(3))[1].shape == (1, 3)
    assert flow.atleast_1d([flow.tensor(1.0)])[0].shape == (1,)
    assert flow.atleast_1d(X) is X
    assert flow.block_diag().shape == (1, 0) and flow.broadcast_tensors() == () == flow.atleast_1d()
    with pytest.raises(RuntimeError, match="meshgrid expects a non-empty TensorList"):
        flow.meshgrid(indexing="ij")
    assert flow.broadcast_shapes(2, (3, 1)) == flow.Size([3, 2]) and flow.broadcast_shapes() == flow.Size([])
    assert flow.concatenate([X, X], axis=1).shape == (3, 8) == flow.concatenate([X, X], dim=1).shape
    assert [t.shape[1] for t in X.tensor_split(flow.tensor([1, 3]), dim=1)] == [1, 2, 1]
    assert flow.repeat_interleave(flow.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert X.repeat_interleave(2).shape == (24,)
    assert flow.unravel_index(flow.tensor(4), (2, 3))[1].item() == 1 and flow.unravel_index(flow.tensor(0), ()) == ()
    assert flow.cartesian_prod(X[0]) is X[0] or flow.cartesian_prod(X[0]).shape == (4,)
    assert flow.diff(flow.tensor([True, False, False])).tolist() == [True, False]
    assert flow.vander(flow.tensor([1, 2]), N=3).dtype is flow.int64


def test_scatter_reduce_prod_gradient_with_zeros():
    """PyTorch's exclusive-product gradient: a factor that is the only zero in its group gets the product of the
    others; factors of a group with two zeros get 0."""
    x = flow.tensor([[2.0, 3.0, 0.0]], dtype=flow.float64, requires_grad=True)
    src = flow.tensor([[0.0, 5.0, 0.0, 0.0]], dtype=flow.float64, requires_grad=True)
    index = flow.tensor([[0, 1, 2, 2]])
    out = flow.scatter_reduce(x, 1, index, src, "prod")
    np.testing.assert_array_equal(out.numpy(), [[0, 15, 0]])
    gx, gs = flow.autograd.grad(out.sum(), (x, src))
    np.testing.assert_array_equal(gx.numpy(), [[0, 5, 0]])
    np.testing.assert_array_equal(gs.numpy(), [[2, 3, 0, 0]])


def test_lazy_and_meta_tensors_without_values():
    m = flow.ones(3, 4, device="meta")
    assert flow.movedim(m, 0, 1).shape == (4, 3) and flow.take(m, flow.zeros(2, 2, dtype=flow.int64,
                                                                                 device="meta")).shape == (2, 2)
    assert flow.put(m, flow.zeros(2, dtype=flow.int64, device="meta"), flow.ones(2, device="meta")).shape == (3, 4)
    assert flow.as_strided(m, (2, 2), (1, 2)).shape == (2, 2) and m.unfold(1, 2, 1).shape == (3, 3, 2)
    with pytest.raises(RuntimeError, match="depends on the values of repeats"):
        flow.repeat_interleave(m, flow.ones(3, dtype=flow.int64, device="meta"), dim=0)


def test_nonzero_static_on_meta_has_its_static_shape():
    for shape, size in (((2, 3), 4), ((), 1), ((5,), 0)):
        out = flow.nonzero_static(flow.ones(shape, device="meta"), size=size)
        assert (out.device, tuple(out.shape), out.dtype) == (flow.device("meta"), (size, len(shape)), flow.int64)
    assert flow.ones(2, 3, device="meta").nonzero_static(size=2).shape == (2, 2)
    x = flow.tensor([[0, 1], [1, 0]])  # cpu: cut to size, or padded with fill_value
    assert flow.nonzero_static(x, size=1).tolist() == [[0, 1]]
    assert flow.nonzero_static(x, size=3, fill_value=7).tolist() == [[0, 1], [1, 0], [7, 7]]
    assert flow.nonzero_static(flow.tensor(3.0), size=2).shape == (2, 0)


def test_repeat_interleave_of_a_0d_tensor_flattens_only_without_a_dim():
    x = flow.tensor(False)
    for repeats in (flow.tensor(5, dtype=flow.int8), flow.tensor(5), flow.tensor([5]), 5):
        for dim in (0, -1):
            with pytest.raises(IndexError, match=rf"^repeat_interleave: Dimension specified as {dim} but tensor "
                                                 r"has no dimensions"):
                flow.repeat_interleave(x, repeats, dim)
            with pytest.raises(IndexError, match="has no dimensions"):
                x.repeat_interleave(repeats, dim=dim)
        assert flow.repeat_interleave(x, repeats).tolist() == [False] * 5
    assert flow.repeat_interleave(flow.tensor(7), 2, dim=None).tolist() == [7, 7]


# ---- optional oracle: the same calls in PyTorch -----------------------------------------------------------------
_ORACLE = [
    lambda t, x: t.block_diag(x[0], x[1, :2], x[:2, :1]), lambda t, x: t.cartesian_prod(x[0, :2], x[1, :3]),
    lambda t, x: t.combinations(x[0], 3, with_replacement=True), lambda t, x: t.column_stack([x[0], x[1]]),
    lambda t, x: t.dstack([x, x]), lambda t, x: t.rot90(x, -3, [1, 0]), lambda t, x: t.diff(x, 2, 0, append=x),
    lambda t, x: t.repeat_interleave(x, t.tensor([1, 0, 2]), dim=0),
    lambda t, x: t.vander(x[0], 3, increasing=True), lambda t, x: t.movedim(x, (0, 1), (1, 0)),
    lambda t, x: x.as_strided((2, 3), (3, 1), 2), lambda t, x: x.unfold(1, 2, 1),
    lambda t, x: x.t().unfold(1, 2, 1), lambda t, x: x[:, 1:].unfold(0, 2, 1),
    lambda t, x: x.t().as_strided((2, 2), (1, 4), 1), lambda t, x: x[1:, 1:].as_strided((2, 2), (4, 1)),
    lambda t, x: t.as_strided_scatter(x[1:, 1:], t.ones(2, 2), (2, 2), (4, 1)),
    lambda t, x: t.as_strided_scatter(x, t.zeros(2, 2), (2, 2), (1, 4), 1),
    lambda t, x: t.slice_scatter(x, t.zeros(3, 2), 1, 1, None, 2),
    lambda t, x: t.select_scatter(x, t.zeros(3), 1, -1),
    lambda t, x: t.scatter_reduce(x, 1, t.tensor([[0, 0, 1], [2, 3, 3], [1, 1, 1]]), x[:, :3] + 1, "mean",
                                  include_self=False),
    lambda t, x: t.scatter_reduce(x, 0, t.tensor([[0, 1, 0, 1]]), -x[:1], "amin"),
    lambda t, x: x.index_reduce(0, t.tensor([2, 0]), x[:2] * 2, "amax", include_self=False),
    lambda t, x: t.take_along_dim(x, t.tensor([[0], [3], [1]]), 1),
    lambda t, x: t.put(x, t.tensor([1, -1, 1]), t.tensor([5.0, 6.0, 7.0]), accumulate=True),
    lambda t, x: t.masked_scatter(x, x > 5, -x), lambda t, x: t.nonzero_static(x > 7, size=6, fill_value=9),
    lambda t, x: t.unravel_index(t.tensor([[5, -3]]), (2, 3))[1], lambda t, x: x.sum_to_size(3, 1),
    lambda t, x: t.tensor_split(x, [-1, 1], 1)[1], lambda t, x: t.take(x, t.tensor([[-12, 11]])),
]


@pytest.mark.parametrize("case", range(len(_ORACLE)))
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    fn = _ORACLE[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fn(flow, _arange(3, 4))
        expected = fn(torch, torch.arange(12.0).reshape(3, 4))
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
