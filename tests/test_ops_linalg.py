"""mm / bmm / dot / outer / linear / baddbmm / einsum beyond the op database: PyTorch's errors, dtype
rules, einsum's syntax (ellipsis, implicit output, broadcasting, varargs or list), the extended einsum op
behind einsum's backward, float16 accumulation."""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.functors.registry import get_functor

F = flow.nn.functional


def _t(shape, dtype=flow.float32, seed=0):
    return flow.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


# ---- mm, bmm, dot, outer ----------------------------------------------------------------------------
def test_mm_bmm_dot_errors():
    with pytest.raises(RuntimeError, match="mm: self must be a matrix"):
        flow.mm(flow.zeros(3), flow.zeros(3, 2))
    with pytest.raises(RuntimeError, match="mm: mat2 must be a matrix"):
        flow.mm(flow.zeros(2, 3), flow.zeros(2, 3, 1))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        flow.mm(flow.zeros(2, 3), flow.zeros(4, 5))
    with pytest.raises(RuntimeError, match="mm: expected self and mat2 to have the same dtype, but got: float32 != "
                                           "float64"):
        flow.mm(flow.zeros(2, 3), flow.zeros(3, 2, dtype=flow.float64))
    with pytest.raises(RuntimeError, match="bmm: batch1 must be a 3D tensor, got 2D"):
        flow.bmm(flow.zeros(2, 3), flow.zeros(2, 3, 1))
    with pytest.raises(RuntimeError, match=r"bmm: Expected size for first two dimensions of batch2 tensor to be: "
                                           r"\[2, 3\] but got: \[1, 3\]."):
        flow.bmm(flow.zeros(2, 2, 3), flow.zeros(1, 3, 4))  # no broadcasting of the batch
    with pytest.raises(RuntimeError, match=r"dot: 1D tensors expected, but got 2D and 1D tensors"):
        flow.dot(flow.zeros(2, 2), flow.zeros(2))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but found Float and "
                                           "Double"):
        flow.dot(flow.zeros(2), flow.zeros(2, dtype=flow.float64))
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"):
        flow.dot(flow.zeros(3), flow.zeros(4))
    with pytest.raises(OpKernelNotFoundError):
        flow.mm(flow.zeros(2, 2, dtype=flow.bool), flow.zeros(2, 2, dtype=flow.bool))


def test_outer_promotes_like_mul():
    a = flow.tensor([1, 2], dtype=flow.int32)
    b = flow.tensor([0.5, 1.0, 2.0])
    r = flow.outer(a, b)
    assert r.dtype == flow.float32 and r.tolist() == [[0.5, 1.0, 2.0], [1.0, 2.0, 4.0]]
    m = flow.outer(flow.tensor([True, False]), flow.tensor([True]))
    assert m.dtype == flow.bool and m.tolist() == [[True], [False]]
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 2-D"):
        flow.outer(a, flow.zeros(2, 2))


def test_integer_matmul_wraps():
    a = flow.tensor([[100, 100]], dtype=flow.int8)
    b = flow.tensor([[1], [2]], dtype=flow.int8)
    assert flow.mm(a, b).tolist() == [[(300 + 128) % 256 - 128]]


# ---- linear -------------------------------------------------------------------------------------------
def test_linear_shapes_and_bias():
    x, w = _t((2, 5, 3)), _t((4, 3), seed=1)
    b = _t((4,), seed=2)
    ref = x.numpy().astype(np.float64) @ w.numpy().T.astype(np.float64) + b.numpy()
    np.testing.assert_allclose(F.linear(x, w, b).numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.linear(x, w).numpy(), ref - b.numpy(), rtol=1e-5, atol=1e-5)
    assert F.linear(x, w, bias=flow.tensor(1.0)).shape == (2, 5, 4)
    assert F.linear(_t((3,)), w).shape == (4,)
    assert F.linear(x, _t((3,))).shape == (2, 5)


def test_linear_errors():
    w = flow.zeros(4, 3)
    with pytest.raises(RuntimeError, match="linear: both arguments to linear need to be at least 1D, but they are "
                                           "0D and 2D"):
        F.linear(flow.tensor(1.0), w)
    with pytest.raises(RuntimeError, match=r"linear: mat1 and mat2 shapes cannot be multiplied \(10x2 and 3x4\)"):
        F.linear(flow.zeros(2, 5, 2), w)
    with pytest.raises(RuntimeError, match="weight must be 1-D .* or 2-D .*, got 3-D"):
        F.linear(flow.zeros(2, 3), flow.zeros(1, 4, 3))
    with pytest.raises(RuntimeError, match=r"bias of shape \[3\] does not broadcast to the output shape \[2, 4\]"):
        F.linear(flow.zeros(2, 3), w, flow.zeros(3))
    with pytest.raises(RuntimeError, match="linear: expected x, weight, bias to have the same dtype, but got "
                                           "float32, float32, float64"):
        F.linear(flow.zeros(2, 3), w, flow.zeros(4, dtype=flow.float64))


def test_linear_float16_accumulates_in_float32():
    """4096 products of 0.1: a float16 running sum would stall near 256; float32 accumulation gives ~409.6."""
    x = flow.full((1, 4096), 0.1, dtype=flow.float16)
    w = flow.full((1, 4096), 1.0, dtype=flow.float16)
    y = F.linear(x, w)
    assert y.dtype == flow.float16
    expected = np.float16(np.float64(np.float16(0.1)) * 4096)
    assert abs(float(y.item()) - float(expected)) <= 0.5


def test_linear_gradients_by_hand():
    x = flow.tensor([[1.0, 2.0]], requires_grad=True)
    w = flow.tensor([[3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    b = flow.tensor([0.5, 0.5], requires_grad=True)
    F.linear(x, w, b).sum().backward()
    assert x.grad.tolist() == [[8.0, 10.0]]
    assert w.grad.tolist() == [[1.0, 2.0], [1.0, 2.0]]
    assert b.grad.tolist() == [1.0, 1.0]
    assert F.linear(x, w, b).grad_fn.name() == "LinearBackward"


# ---- baddbmm ----------------------------------------------------------------------------------------
def test_baddbmm_beta_zero_ignores_nan_and_scalars_checks():
    inp = flow.full((1, 2, 2), float("nan"))
    b1, b2 = flow.ones(1, 2, 3), flow.ones(1, 3, 2)
    assert flow.baddbmm(inp, b1, b2, beta=0).tolist() == [[[3.0, 3.0], [3.0, 3.0]]]
    assert flow.baddbmm(flow.ones(2), b1, b2, beta=2, alpha=0.5).tolist() == [[[3.5, 3.5], [3.5, 3.5]]]
    ints = flow.ones(1, 2, 2, dtype=flow.int64)
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating point "
                                           "number."):
        flow.baddbmm(ints, ints, ints, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean beta only supported for Boolean results."):
        flow.baddbmm(inp, b1, b2, beta=True)
    assert flow.baddbmm(ints, ints, ints, beta=-1, alpha=3).tolist() == [[[5, 5], [5, 5]]]


def test_baddbmm_errors():
    b1, b2 = flow.zeros(2, 3, 4), flow.zeros(2, 4, 5)
    with pytest.raises(RuntimeError, match="baddbmm: batch1 must be a 3D tensor"):
        flow.baddbmm(flow.zeros(3, 5), flow.zeros(3, 4), b2)
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 tensor to be: \[2, 4\] "
                                           r"but got: \[2, 5\]."):
        flow.baddbmm(flow.zeros(3, 5), b1, flow.zeros(2, 5, 5))
    with pytest.raises(RuntimeError, match=r"input of shape \[4\] does not broadcast to the shape of batch1 @ batch2, "
                                           r"\[2, 3, 5\]"):
        flow.baddbmm(flow.zeros(4), b1, b2)
    with pytest.raises(RuntimeError, match="baddbmm: expected input, batch1, batch2 to have the same dtype"):
        flow.baddbmm(flow.zeros(5, dtype=flow.float64), b1, b2)


# ---- einsum -----------------------------------------------------------------------------------------
def test_einsum_call_forms_and_syntax():
    a, b = _t((2, 3)), _t((3, 4), seed=1)
    ref = a.numpy().astype(np.float64) @ b.numpy()
    for r in (flow.einsum("ij,jk->ik", a, b), flow.einsum("ij,jk->ik", [a, b]), flow.einsum(" ij , jk -> ik ", (a, b)),
              flow.einsum("ij,jk", a, b)):
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-5, atol=1e-6)
    # implicit output: letters used once, sorted (upper case first, as in PyTorch and NumPy)
    assert flow.einsum("bA", flow.zeros(2, 3)).shape == (3, 2)
    # the ellipsis broadcasts, is summed when the output leaves it out, and comes first in an implicit output
    x = _t((2, 1, 3, 4))
    y = _t((5, 4, 2), seed=2)
    np.testing.assert_allclose(flow.einsum("...ij,...jk", x, y).numpy(),
                               np.matmul(x.numpy().astype(np.float64), y.numpy()), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(flow.einsum("...ij->ij", x).numpy(), x.numpy().astype(np.float64).sum((0, 1)),
                               rtol=1e-5, atol=1e-5)
    # a size-1 dim broadcasts for a letter too
    assert flow.einsum("ij,ij->ij", flow.ones(2, 3), flow.ones(1, 3)).shape == (2, 3)
    t = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert flow.einsum("ii", t).item() == 5.0 and flow.einsum("ii->i", t).tolist() == [1.0, 4.0]


def test_einsum_errors():
    a = flow.zeros(2, 3)
    cases = [
        (("ij,jk", a), "fewer operands were provided than specified in the equation"),
        (("ij", a, a), "more operands were provided than specified in the equation"),
        (("ijk", a), (r"the number of subscripts in the equation \(3\) does not match the number of dimensions "
                      r"\(2\) for operand 0 and no ellipsis was given")),
        (("ijk...", a), r"the number of subscripts in the equation \(3\) is more than the number of dimensions"),
        (("i1", a), "invalid subscript given in the equation string: '1'"),
        (("i.j", a), "found '.' for operand 0 that is not part of any ellipsis"),
        (("...i...", a), "found more than one ellipsis for operand 0"),
        (("ij->k", a), "output subscript k does not appear in the equation for any input operand"),
        (("ij->ii", a), "output subscript i appears more than once in the output"),
        (("ij,ij", a, flow.zeros(2, 4)), ("operands do not broadcast with remapped shapes: subscript j has size 4 "
                                          "for operand 1 which does not broadcast with previously seen size 3")),
        (("ii", a), r"subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"),
    ]
    for args, message in cases:
        with pytest.raises(RuntimeError, match="einsum\\(\\): " + message):
            flow.einsum(*args)
    with pytest.raises(RuntimeError, match="einsum: expected all operands to have the same dtype"):
        flow.einsum("ij,ij", a, flow.zeros(2, 3, dtype=flow.float64))
    with pytest.raises(TypeError, match="einsum"):
        flow.einsum("ij")
    with pytest.raises(OpKernelNotFoundError):
        flow.einsum("ij->j", flow.zeros(2, 3, dtype=flow.bool))


def test_einsum_gradient_with_ellipsis_broadcasting():
    x = flow.ones(3, 1, 2, requires_grad=True)
    w = flow.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    flow.einsum("...i,...ij->...j", x, w.expand(4, 2, 2)).sum().backward()
    assert x.grad.tolist() == [[[4 * 3.0, 4 * 7.0]]] * 3
    assert w.grad.tolist() == [[12.0, 12.0], [12.0, 12.0]]


def test_extended_einsum_op():
    """The op behind einsum's backward: repeated and new output letters, sized by out_shape."""
    raw = get_functor("Einsum").raw
    v = flow.tensor([1.0, 2.0, 3.0])
    assert raw("i->ii", [v], (3, 3)).tolist() == [[1, 0, 0], [0, 2, 0], [0, 0, 3]]
    assert raw("i->ij", [v], (3, 2)).tolist() == [[1, 1], [2, 2], [3, 3]]
    assert raw("i->", [v]).item() == 6.0
    with pytest.raises(RuntimeError, match="einsum: output subscript j does not appear in the equation"):
        raw("i->ij", [v])
    with pytest.raises(RuntimeError, match="einsum: equation 'ij' is not normalised"):
        raw("ij", [flow.zeros(2, 2)])
    m = raw("i->ii", [flow.zeros(3, device="meta")], (3, 3))
    assert m.shape == (3, 3) and m.is_meta
