"""Shape ops beyond the op database: PyTorch's errors, views and copies, version counters, promotion in
cat / stack, in-place tril_ / triu_, gradients of partly used outputs, pad's modes by hand."""

import numpy as np
import pytest

import oneflow_lite as flow


def _arange(*shape, dtype=flow.float32):
    return flow.tensor(np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape), dtype=dtype)


def _shares(a, b):
    return np.shares_memory(a.numpy(), b.numpy())


# ---- views and copies ------------------------------------------------------------------------------
@pytest.mark.parametrize("view", [
    lambda x: x.permute(2, 0, 1), lambda x: x.flatten(), lambda x: x.flatten(1), lambda x: x.unsqueeze(1),
    lambda x: x.unflatten(2, (2, 2)), lambda x: x[:, :1].squeeze(1), lambda x: x.narrow(1, 1, 2),
    lambda x: x.split(1)[1], lambda x: x.chunk(3, 1)[2], lambda x: x.unbind(2)[3], lambda x: x[0].t(),
    lambda x: x[:1].expand(5, 3, 4), lambda x: x.view(-1), lambda x: x.T,
], ids=["permute", "flatten", "flatten1", "unsqueeze", "unflatten", "squeeze", "narrow", "split", "chunk",
        "unbind", "t", "expand", "view", "T"])
def test_view_ops_share_memory_and_version(view):
    """PyTorch's view ops return NumPy views: they share memory and the version counter with the input."""
    x = _arange(2, 3, 4)
    v = view(x)
    assert _shares(v, x)
    with flow.no_grad():
        x.add_(1)
    assert v._version == x._version == 1


@pytest.mark.parametrize("copy", [
    lambda x: x.flip(0), lambda x: x.roll(1, 0), lambda x: flow.cat([x, x]), lambda x: flow.stack([x, x]),
    lambda x: x.repeat(1, 1, 1), lambda x: x.tril(), lambda x: flow.pad(x, (0, 0)),
    lambda x: flow.pad(x, (0, 0), mode="reflect"), lambda x: x.clone(), lambda x: x.tile((1,)),
    lambda x: flow.cat([x]),
], ids=["flip", "roll", "cat", "stack", "repeat", "tril", "pad", "pad_reflect", "clone", "tile", "cat1"])
def test_copying_ops_do_not_alias(copy):
    x = _arange(2, 3, 4)
    y = copy(x)
    assert not _shares(y, x)
    y.numpy()[...] = -1
    assert x.numpy().min() == 0


def test_flatten_and_t_return_the_input_when_nothing_changes():
    x = _arange(2, 3)
    assert x.flatten(1, 1) is x and x.flatten(-1) is x
    assert _arange(4).flatten() is not None and flow.tensor(3.0).flatten().shape == (1,)
    v = _arange(4)
    assert v.t() is v and flow.t(flow.tensor(1.0)).shape == ()


def test_contiguous():
    x = _arange(2, 3)
    assert x.is_contiguous() and x.contiguous() is x
    t = x.t()
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and not _shares(c, x)
    np.testing.assert_array_equal(c.numpy(), np.arange(6.0).reshape(2, 3).T)
    m = flow.zeros(2, 3, device="meta")
    assert m.is_contiguous() and m.contiguous() is m


def test_expand_is_a_read_only_view():
    x = flow.tensor([[1.0], [2.0]])
    e = x.expand(2, 3)
    assert not e.numpy().flags.writeable
    np.testing.assert_array_equal(e.numpy(), [[1, 1, 1], [2, 2, 2]])
    np.testing.assert_array_equal(flow.ones(3).expand(2, -1).numpy(), np.ones((2, 3)))


def test_autograd_refuses_in_place_on_views_of_the_new_ops():
    w = flow.ones(2, 3, requires_grad=True)
    b = w * 1
    for view in (b.unsqueeze(0), b.split(1)[0], b.unbind(0)[1], b.flatten(), b.permute(1, 0)):
        with pytest.raises(RuntimeError, match="shares memory with another live tensor"):
            view.mul_(2)


# ---- PyTorch's errors --------------------------------------------------------------------------------
def test_reshape_family_errors():
    x = flow.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="flatten\\(\\) has invalid args: start_dim cannot come after end_dim"):
        x.flatten(2, 1)
    with pytest.raises(IndexError, match=r"flatten: Dimension out of range \(expected to be in range of \[-3, 2\], "
                                         r"but got 3\)"):
        x.flatten(3)
    with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[2, 3\] don't multiply up to the size of "
                                           r"dim 1 \(3\) in the input tensor"):
        x.unflatten(1, (2, 3))
    with pytest.raises(RuntimeError, match="unflatten: only one dimension can be inferred"):
        x.unflatten(2, (-1, -1))
    with pytest.raises(RuntimeError, match="unflatten: sizes must be non-empty"):
        x.unflatten(2, ())
    with pytest.raises(IndexError, match=r"squeeze: Dimension out of range"):
        x.squeeze(3)
    with pytest.raises(RuntimeError, match="squeeze: dim 0 appears multiple times in the list of dims"):
        x.squeeze((0, -3))
    with pytest.raises(IndexError, match=r"unsqueeze: Dimension out of range \(expected to be in range of "
                                         r"\[-4, 3\], but got 4\)"):
        x.unsqueeze(4)


def test_permute_and_t_errors():
    x = flow.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"permute\(\): number of dimensions in the tensor input does not match the "
                                           r"length of the desired ordering of dimensions i.e. input.dim\(\) = 3 is "
                                           r"not equal to len\(dims\) = 2"):
        x.permute(0, 1)
    with pytest.raises(RuntimeError, match=r"permute\(\): duplicate dims are not allowed."):
        x.permute(0, 1, -3)
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        x.t()
    with pytest.raises(TypeError, match="permute"):
        x.permute(0, 1.0, 2)


def test_expand_and_repeat_errors():
    x = flow.zeros(3, 1)
    with pytest.raises(RuntimeError, match=r"expand: The expanded size of the tensor \(4\) must match the existing "
                                           r"size \(3\) at non-singleton dimension 0.  Target sizes: \[4, 2\].  "
                                           r"Tensor sizes: \[3, 1\]"):
        x.expand(4, 2)
    with pytest.raises(RuntimeError, match=r"the number of sizes provided \(1\) must be greater or equal to the "
                                           r"number of dimensions in the tensor \(2\)"):
        x.expand(3)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(-1\) isn't allowed in a leading, "
                                           r"non-existing dimension 0"):
        x.expand(-1, 3, 4)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller than number of "
                                           "dimensions of tensor"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1, 1\]"):
        x.repeat(-1, 1)
    with pytest.raises(RuntimeError, match=r"expand"):
        x.expand_as(flow.zeros(2, 2))


def test_cat_stack_errors():
    with pytest.raises(RuntimeError, match=r"cat\(\): expected a non-empty list of Tensors"):
        flow.cat([])
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 1\) cannot be concatenated"):
        flow.cat([flow.zeros(2), flow.tensor(1.0)])
    with pytest.raises(RuntimeError, match=r"cat: Sizes of tensors must match except in dimension 0. Expected size "
                                           r"3 but got size 2 for tensor number 1 in the list."):
        flow.cat([flow.zeros(2, 3), flow.zeros(2, 2)])
    with pytest.raises(RuntimeError, match=r"Tensors must have same number of dimensions: got 2 and 1"):
        flow.cat([flow.zeros(2, 3), flow.zeros(3)])
    with pytest.raises(IndexError, match=r"cat: Dimension out of range"):
        flow.cat([flow.zeros(2, 3)], 2)
    with pytest.raises(TypeError, match=r"cat\(\)"):
        flow.cat(flow.zeros(2))
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        flow.stack([])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 "
                                           r"and \[3\] at entry 1"):
        flow.stack([flow.zeros(2, 3), flow.zeros(3)])
    with pytest.raises(IndexError, match=r"stack: Dimension out of range \(expected to be in range of \[-3, 2\]"):
        flow.stack([flow.zeros(2, 3)], 3)
    with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
        flow.cat([flow.zeros(2), flow.zeros(2, device="meta")])


def test_split_family_errors():
    x = flow.zeros(5, 2)
    with pytest.raises(RuntimeError, match="split expects split_size be non-negative, but got split_size=-1"):
        x.split(-1)
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0, but got dimension size "
                                           "of 5"):
        x.split(0)
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 5 \(input "
                                           r"tensor's size at dimension 0\), but got split_sizes=\[2, 2\]"):
        x.split([2, 2])
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes have only non-negative entries, "
                                           r"but got split_sizes=\[6, -1\]"):
        x.split([6, -1])
    with pytest.raises(RuntimeError, match="split expects at least a 1-dimensional tensor"):
        flow.tensor(1.0).split(1)
    with pytest.raises(RuntimeError, match=r"chunk expects `chunks` to be greater than 0, got: 0"):
        x.chunk(0)
    with pytest.raises(RuntimeError, match="chunk expects at least a 1-dimensional tensor"):
        flow.tensor(1.0).chunk(1)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        flow.tensor(1.0).unbind()
    with pytest.raises(IndexError, match=r"unbind: Dimension out of range"):
        x.unbind(2)


def test_narrow_errors():
    x = flow.zeros(5, 2)
    with pytest.raises(RuntimeError, match=r"narrow\(\): start \(3\) \+ length \(3\) exceeds dimension size \(5\)."):
        x.narrow(0, 3, 3)
    with pytest.raises(IndexError, match=r"start out of range \(expected to be in range of \[-5, 5\], but got 6\)"):
        x.narrow(0, 6, 0)
    with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative."):
        x.narrow(0, 0, -1)
    with pytest.raises(RuntimeError, match=r"narrow\(\) cannot be applied to a 0-dim tensor."):
        flow.tensor(1.0).narrow(0, 0, 1)


def test_flip_roll_triangle_errors():
    x = flow.zeros(3, 4)
    with pytest.raises(RuntimeError, match="flip: dim 0 appears multiple times in the list of dims"):
        x.flip(0, -2)
    with pytest.raises(IndexError, match=r"flip: Dimension out of range"):
        x.flip(2)
    with pytest.raises(RuntimeError, match="roll: shifts and dimensions must align. shifts: 2, dims:1"):
        x.roll((1, 2), 0)
    with pytest.raises(RuntimeError, match="roll: shifts and dimensions must align. shifts: 2, dims:0"):
        x.roll((1, 2))
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions, got 1"):
        flow.zeros(3).tril()
    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2 dimensions, got 0"):
        flow.triu(flow.tensor(1.0))


def test_pad_errors():
    x = flow.zeros(2, 3)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        flow.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input "
                                           "dimension but got padding length 6 and input of dimension 2"):
        flow.pad(x, (1, 1, 1, 1, 1, 1))
    with pytest.raises(RuntimeError, match="Unrecognised padding mode wrap"):
        flow.pad(x, (1, 1), mode="wrap")
    with pytest.raises(RuntimeError, match="Padding mode \"reflect\" doesn't take in value argument"):
        flow.pad(x, (1, 1), mode="reflect", value=2.0)
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension, "
                                           r"but got: padding \(3, 0\) at dimension 1 of input \[2, 3\]"):
        flow.pad(x, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        flow.pad(x, (0, 4), mode="circular")
    with pytest.raises(RuntimeError, match="negative padding .* is only supported in constant mode, not replicate"):
        flow.pad(x, (-1, 0), mode="replicate")
    with pytest.raises(RuntimeError, match="replicate padding needs a non-empty dimension"):
        flow.pad(flow.zeros(2, 0), (1, 0), mode="replicate")
    with pytest.raises(RuntimeError, match=r"The input size 3, plus negative padding -2 and -2 resulted in a negative "
                                           r"output size, which is invalid. Check dimension 1 of your input."):
        flow.pad(x, (-2, -2))
    with pytest.raises(RuntimeError, match="value 300.0 cannot be converted to type int8 without overflow"):
        flow.pad(flow.zeros(2, dtype=flow.int8), (1, 1), value=300)


# ---- values by hand ----------------------------------------------------------------------------------
def test_pad_modes_by_hand():
    x = flow.tensor([[1.0, 2.0, 3.0]])
    assert flow.pad(x, (2, 1)).tolist() == [[0, 0, 1, 2, 3, 0]]
    assert flow.pad(x, (1, 0, 1, 0), value=-1.0).tolist() == [[-1, -1, -1, -1], [-1, 1, 2, 3]]
    assert flow.pad(x, (2, 2), mode="reflect").tolist() == [[3, 2, 1, 2, 3, 2, 1]]
    assert flow.pad(x, (2, 1), mode="replicate").tolist() == [[1, 1, 1, 2, 3, 3]]
    assert flow.pad(x, (2, 3), mode="circular").tolist() == [[2, 3, 1, 2, 3, 1, 2, 3]]
    assert flow.pad(x, (-1, 1)).tolist() == [[2, 3, 0]]
    assert flow.pad(flow.tensor([1, 2], dtype=flow.int32), (1, 0), value=7.9).tolist() == [7, 1, 2]
    assert flow.pad(flow.tensor([True]), (1, 0)).tolist() == [False, True]
    assert flow.nn.functional.pad is flow.pad


def test_constant_padding_crops_before_it_pads():
    """PyTorch narrows by each negative pad first, then pads: the crops alone may not remove more than the
    dimension holds, even when the other side would add enough back."""
    x = flow.tensor([1.0, 2.0, 3.0])
    assert flow.pad(x, (-3, 2), value=9.0).tolist() == [9, 9]  # everything cropped, then two added
    assert flow.pad(x, (-1, 2)).tolist() == [2, 3, 0, 0]
    assert flow.constant_pad_nd(x, [2, -3], 7).tolist() == [7, 7]
    assert flow.nn.functional.pad(x, (1, -2), mode="constant").tolist() == [0, 1]
    for pad in ((-4, 5), (5, -4), (-4, -4)):
        with pytest.raises(RuntimeError, match=r"^pad: The input size 3, .*negative"):
            flow.pad(x, pad)
    with pytest.raises(RuntimeError, match=r"cropped by the negative padding 5 and -5, would be negative "
                                           r"\(narrow\(\): length must be non-negative\).*dimension 1"):
        flow.constant_pad_nd(flow.zeros(1, 2, 0), [4, 5, 5, -5, 2, 5], 0.0)
    assert x.tolist() == [1, 2, 3]
    y = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    flow.pad(y, (-1, 2)).sum().backward()
    assert y.grad.tolist() == [0, 1, 1]


def test_constant_padding_crops_as_pytorch():
    torch = pytest.importorskip("torch")
    for shape, pad in [((1, 2, 0), [4, 5, 5, -5, 2, 5]), ((3,), [-3, 5]), ((3,), [-4, 5]), ((2, 3), [-1, -1, 2, -2]),
                       ((2, 3), [0, 0, -2, 1]), ((2, 3), [-2, -2])]:
        try:
            expected = torch.constant_pad_nd(torch.arange(float(np.prod(shape))).reshape(shape), pad, 1.5).numpy()
        except RuntimeError:
            with pytest.raises(RuntimeError):
                flow.constant_pad_nd(_arange(*shape), pad, 1.5)
            continue
        np.testing.assert_array_equal(flow.constant_pad_nd(_arange(*shape), pad, 1.5).numpy(), expected)


def test_pad_gradient_by_hand():
    """reflect: each output position adds its gradient to the element it copies."""
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = flow.pad(x.reshape(1, 3), (2, 2), mode="reflect")  # copies 3 2 1 2 3 2 1
    (y * flow.tensor([1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [100.0 + 1000000.0, 10.0 + 1000.0 + 100000.0, 1.0 + 10000.0])
    z = flow.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    flow.pad(z, (-1, 1)).sum().backward()  # the first column is cropped away
    np.testing.assert_array_equal(z.grad.numpy(), [[0.0, 1.0], [0.0, 1.0]])


def test_cat_and_stack_promote():
    a = flow.tensor([1, 2], dtype=flow.int32)
    b = flow.tensor([0.5], dtype=flow.float32)
    r = flow.cat([a, b])
    assert r.dtype == flow.float32 and r.tolist() == [1.0, 2.0, 0.5]
    assert flow.cat((flow.tensor([True]), flow.tensor([3], dtype=flow.int8))).dtype == flow.int8
    assert flow.stack([flow.tensor(1, dtype=flow.uint8), flow.tensor(-1, dtype=flow.int8)]).dtype == flow.int16
    # a skipped 1-d empty tensor still takes part in the dtype, as in PyTorch
    r = flow.cat([flow.zeros(0, dtype=flow.float64), flow.ones(2, 3, dtype=flow.int32)], dim=1)
    assert r.shape == (2, 3) and r.dtype == flow.float64
    assert flow.cat([flow.zeros(0), flow.zeros(0)]).shape == (0,)
    assert flow.concat([a, a], 0).tolist() == [1, 2, 1, 2]


def test_cat_gradient_with_promotion_and_skipped_tensors():
    a = flow.tensor([1.0, 2.0], dtype=flow.float32, requires_grad=True)
    b = flow.tensor([3.0], dtype=flow.float64, requires_grad=True)
    e = flow.zeros(0, requires_grad=True)
    y = flow.cat([a, e, b])
    assert y.dtype == flow.float64
    (y * flow.tensor([1.0, 2.0, 3.0], dtype=flow.float64)).sum().backward()
    assert a.grad.dtype == flow.float32 and a.grad.tolist() == [1.0, 2.0]
    assert b.grad.tolist() == [3.0]
    assert e.grad is None


def test_split_gradient_when_some_pieces_are_unused():
    x = flow.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    pieces = x.split([2, 1, 2])
    (pieces[2] * 3).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 3.0, 3.0]
    y = flow.ones(2, 3, requires_grad=True)
    rows = y.unbind(1)
    rows[1].sum().backward()
    assert y.grad.tolist() == [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]


def test_chunk_and_split_counts_match_pytorch():
    x = _arange(6)
    assert [t.tolist() for t in x.chunk(4)] == [[0, 1], [2, 3], [4, 5]]  # fewer chunks than asked
    assert [t.shape for t in flow.zeros(0, 2).chunk(3)] == [(0, 2)] * 3
    assert [t.shape for t in flow.zeros(0, 2).split(2)] == [(0, 2)]
    assert [t.tolist() for t in flow.split(x, 4)] == [[0, 1, 2, 3], [4, 5]]
    assert [t.tolist() for t in flow.split(x, [1, 5])] == [[0], [1, 2, 3, 4, 5]]
    assert flow.zeros(2, 0).unbind(1) == ()
    assert isinstance(x.split(2), tuple)


def test_tril_triu_in_place():
    x = flow.ones(3, 3)
    assert x.tril_() is x and x.tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    y = flow.ones(2, 3, dtype=flow.int64)
    y.triu_(1)
    assert y.tolist() == [[0, 1, 1], [0, 0, 1]]
    w = flow.ones(2, 2, requires_grad=True)
    z = w * 2
    z.tril_()
    z.sum().backward()
    assert w.grad.tolist() == [[2.0, 0.0], [2.0, 2.0]]
    mask = flow.ones(3, 3, dtype=flow.bool).triu(1)
    assert mask.dtype == flow.bool and mask.tolist()[0] == [False, True, True]


def test_roll_and_flip_by_hand():
    x = _arange(2, 3)
    assert x.roll(1).tolist() == [[5, 0, 1], [2, 3, 4]]
    assert x.roll(-1, 1).tolist() == [[1, 2, 0], [4, 5, 3]]
    assert x.roll((1, 1), (0, 1)).tolist() == [[5, 3, 4], [2, 0, 1]]
    assert x.flip(0, 1).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert flow.flip(x, [1]).tolist() == [[2, 1, 0], [5, 4, 3]]
    s = flow.tensor(7.0)
    assert s.flip(0).item() == 7.0 and s.roll(3, 0).item() == 7.0


def test_shape_methods_and_varargs():
    x = _arange(2, 3, 4)
    assert x.permute((2, 1, 0)).shape == (4, 3, 2) == x.permute(2, 1, 0).shape
    assert x.expand(3, 2, 3, 4).shape == (3, 2, 3, 4) == x.expand((3, -1, -1, -1)).shape
    assert x.repeat(2, 1, 1).shape == (4, 3, 4) and x.tile(2).shape == (2, 3, 8)
    assert x.squeeze().shape == (2, 3, 4) and flow.zeros(1, 2, 1).squeeze(0, 2).shape == (2,)
    assert flow.broadcast_to(flow.zeros(3), (2, 3)).shape == (2, 3)
    assert flow.zeros(3, 1).expand_as(x).shape == (2, 3, 4)
    assert x.unflatten(-1, (2, -1)).shape == (2, 3, 2, 2)
    assert flow.zeros(2, 3, device="meta").permute(1, 0).shape == (3, 2)


def test_expand_and_repeat_gradients():
    x = flow.tensor([[1.0], [2.0]], requires_grad=True)
    (x.expand(3, 2, 4) * 2).sum().backward()
    assert x.grad.tolist() == [[24.0], [24.0]]
    y = flow.tensor([1.0, 2.0], requires_grad=True)
    r = y.repeat(3, 2)  # (3, 4): [1 2 1 2] three times
    (r * flow.tensor([[1.0, 2.0, 3.0, 4.0]] * 3)).sum().backward()
    assert y.grad.tolist() == [3 * (1.0 + 3.0), 3 * (2.0 + 4.0)]


@pytest.mark.skipif(not hasattr(flow.nn, "Graph"), reason="needs flow.nn.Graph")
def test_shape_and_linalg_ops_in_a_captured_graph():
    """Functors look at metas only (contiguous treats a lazy tensor as contiguous), so graphs capture them."""
    class G(flow.nn.Graph):
        def build(self, x, w):
            a, b = x.split(2, 1)
            y = flow.cat([b, a], 1).unsqueeze(0).flatten(0, 1)
            z = flow.einsum("ij,kj->ik", y, w) + flow.nn.functional.linear(y, w)
            return flow.pad(z.tril(), (1, 1), mode="reflect").contiguous().T, z.unbind(0)[0]

    x, w = _arange(3, 4), flow.ones(5, 4)
    got = G()(x, w)
    xs = x.numpy().astype(np.float64)
    y = np.concatenate([xs[:, 2:], xs[:, :2]], 1)
    z = 2 * y @ np.ones((4, 5))
    np.testing.assert_allclose(got[0].numpy(), np.pad(np.tril(z), ((0, 0), (1, 1)), mode="reflect").T)
    np.testing.assert_allclose(got[1].numpy(), z[0])
