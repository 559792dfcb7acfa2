"""torch.linalg and the linear-algebra / statistics functions beyond the op database: the defining
properties of the decompositions (Q R = A, U S Vh = A, L L^T = A, P L U = A, V diag(w) V^T = A), PyTorch's
errors (``flow.linalg.LinAlgError`` for singular and non-positive-definite inputs, the ``_ex`` functions'
info), gradients whose check needs a gauge-invariant function, views, in-place variants, named tuples,
and an optional comparison with PyTorch on the same inputs."""

import math

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError

RNG = np.random.default_rng(77)


def t(a, dtype=flow.float64, **kw):
    return flow.tensor(np.asarray(a), dtype=dtype, **kw)


def rand(*shape, dtype=flow.float64, **kw):
    return t(RNG.standard_normal(shape), dtype, **kw)


def spd(*shape):
    a = RNG.standard_normal(shape)
    return t(a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1]) * shape[-1])


def close(a, b, atol=1e-8):
    np.testing.assert_allclose(np.asarray(a.numpy() if isinstance(a, flow.Tensor) else a),
                               np.asarray(b.numpy() if isinstance(b, flow.Tensor) else b), atol=atol, rtol=1e-7)


def mT(x):
    return x.transpose(-2, -1)


# ---- the decompositions' defining properties ----------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3), (2, 5, 2)])
def test_qr_reconstructs_with_orthonormal_q_and_upper_r(shape):
    a = rand(*shape)
    q, r = flow.linalg.qr(a)
    k = min(shape[-2:])
    close(q @ r, a)
    close(mT(q) @ q, np.broadcast_to(np.eye(k), shape[:-2] + (k, k)))
    close(r, np.triu(r.numpy()))
    qc, rc = flow.linalg.qr(a, "complete")
    assert qc.shape[-1] == qc.shape[-2] == shape[-2]
    close(qc @ rc, a)
    empty_q, r_only = flow.linalg.qr(a, mode="r")
    assert tuple(empty_q.shape) == (0,)
    close(r_only.abs(), r.abs())


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_svd_reconstructs_and_orders_singular_values(shape):
    a = rand(*shape)
    u, s, vh = flow.linalg.svd(a, full_matrices=False)
    close(u @ flow.diag_embed(s) @ vh, a)
    assert (s.numpy()[..., :-1] >= s.numpy()[..., 1:]).all()
    u, s2, vh = flow.linalg.svd(a)
    assert u.shape[-1] == shape[-2] and vh.shape[-2] == shape[-1]
    close(s2, s)
    U, S, V = flow.svd(a)  # torch.svd: V, not Vh
    close(U @ flow.diag_embed(S) @ mT(V), a)
    close(flow.linalg.svdvals(a), s)
    zu, _, zv = flow.svd(a, compute_uv=False)
    assert float(zu.abs().sum()) == 0 and float(zv.abs().sum()) == 0 and zu.shape[-1] == shape[-2]


def test_eigh_uses_one_triangle():
    a = spd(2, 4, 4)
    w, v = flow.linalg.eigh(a)
    close(v @ flow.diag_embed(w) @ mT(v), a)
    noisy = a + flow.triu(rand(4, 4), 1) * 10  # the upper triangle is not read with UPLO='L'
    close(flow.linalg.eigvalsh(noisy), w)
    close(flow.linalg.eigvalsh(mT(noisy), "U"), w)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_one_triangle(upper):
    a = spd(2, 3, 3)
    f = flow.linalg.cholesky(a, upper=upper)
    close(mT(f) @ f if upper else f @ mT(f), a)
    noisy = a + (flow.tril(rand(3, 3), -1) if upper else flow.triu(rand(3, 3), 1)) * 5
    close(flow.linalg.cholesky(noisy, upper=upper), f)
    close(flow.cholesky_inverse(f, upper) @ a, np.broadcast_to(np.eye(3), (2, 3, 3)))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5), (5, 2)])
def test_lu_reconstructs(shape):
    a = rand(*shape)
    p, low, up = flow.linalg.lu(a)
    close(p @ low @ up, a)
    lu, piv = flow.linalg.lu_factor(a)
    assert piv.dtype == flow.int32 and tuple(piv.shape) == tuple(shape[:-2]) + (min(shape[-2:]),)
    p2, l2, u2 = flow.lu_unpack(lu, piv)
    close(p2 @ l2 @ u2, a)
    P, _, _ = flow.lu_unpack(lu, piv, unpack_data=False)
    close(P, p)
    LU, _, infos = a.lu(get_infos=True)
    close(LU, lu)
    assert not infos.numpy().any()


def test_solvers_satisfy_their_equations():
    a, b = spd(2, 3, 3), rand(2, 3, 2)
    close(a @ flow.linalg.solve(a, b), b)
    close(flow.linalg.solve(a, b[:, :, 0]), flow.linalg.solve(a, b)[:, :, 0])
    close(flow.linalg.solve(a, mT(b), left=False) @ a, mT(b))
    close(a @ flow.cholesky_solve(b, flow.linalg.cholesky(a)), b)
    lu, piv = flow.linalg.lu_factor(a)
    close(a @ flow.linalg.lu_solve(lu, piv, b), b)
    close(mT(a) @ flow.linalg.lu_solve(lu, piv, b, adjoint=True), b)
    close(flow.lu_solve(b, lu, piv), flow.linalg.solve(a, b))
    low = flow.tril(a)
    close(low @ flow.linalg.solve_triangular(a, b, upper=False), b)
    x, coefficient = flow.triangular_solve(b, a, upper=False)
    close(low @ x, b)
    close(coefficient, a)
    x = flow.linalg.lstsq(rand(5, 3), rand(5, 2)).solution
    assert tuple(x.shape) == (3, 2)


def test_inverse_pinv_power_exp():
    a = spd(2, 3, 3)
    close(flow.linalg.inv(a) @ a, np.broadcast_to(np.eye(3), (2, 3, 3)))
    w = rand(3, 5)
    p = flow.linalg.pinv(w)
    close(w @ p @ w, w)
    close(p @ w @ p, p)
    close(flow.linalg.matrix_power(a, 3), a @ a @ a)
    close(flow.linalg.matrix_power(a, -2) @ a @ a, np.broadcast_to(np.eye(3), (2, 3, 3)))
    d = np.diag([0.5, -1.0, 2.0])
    close(flow.linalg.matrix_exp(t(d)), np.diag(np.exp([0.5, -1.0, 2.0])))
    nil = np.array([[0.0, 1.0], [0.0, 0.0]])  # exp of a nilpotent matrix is I + N
    close(flow.matrix_exp(t(nil)), np.eye(2) + nil)
    close(flow.linalg.matrix_exp(t(d * 40)), np.diag(np.exp([20.0, -40.0, 80.0])), atol=1e22)


def test_det_slogdet_logdet():
    a = rand(2, 3, 3)
    sign, logabs = flow.linalg.slogdet(a)
    close(sign * flow.exp(logabs), flow.linalg.det(a))
    assert float(flow.det(t([[2.0, 0.0], [0.0, 3.0]]))) == pytest.approx(6.0)
    assert math.isnan(float(flow.logdet(t([[0.0, 1.0], [1.0, 0.0]]))))
    assert float(flow.logdet(t([[1.0, 2.0], [2.0, 4.0]]))) == -math.inf
    assert float(flow.linalg.det(t(np.zeros((0, 0))))) == 1.0


# ---- errors ------------------------------------------------------------------------------------------
def test_linalg_errors_are_pytorchs():
    singular = t([[1.0, 2.0], [2.0, 4.0]])
    assert issubclass(flow.linalg.LinAlgError, RuntimeError)
    with pytest.raises(flow.linalg.LinAlgError, match="linalg.inv: The diagonal element 2 is zero"):
        flow.linalg.inv(singular)
    with pytest.raises(flow.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal element 2 is zero"):
        flow.inverse(flow.stack([flow.eye(2, dtype=flow.float64), singular]))
    with pytest.raises(flow.linalg.LinAlgError, match="The solver failed because the input matrix is singular"):
        flow.linalg.solve(singular, t([1.0, 2.0]))
    with pytest.raises(flow.linalg.LinAlgError, match="the leading minor of order 2 is not positive-definite"):
        flow.linalg.cholesky(t([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        flow.linalg.lu_factor(singular)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        flow.linalg.inv(rand(2, 3))
    with pytest.raises(RuntimeError, match="The input tensor A must have at least 2 dimensions"):
        flow.linalg.det(rand(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        flow.linalg.inv(flow.ones(2, 2, dtype=flow.int64))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        flow.linalg.svd(flow.ones(2, 2, dtype=flow.float16))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(2x2 and 3x1\)"):
        flow.linalg.solve(flow.eye(2, dtype=flow.float64), rand(3, 1))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        flow.linalg.solve(flow.eye(2), rand(2, 1))
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        flow.linalg.lu_factor(rand(2, 2), pivot=False)
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'bad'"):
        flow.linalg.qr(rand(2, 2), mode="bad")
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        flow.linalg.lstsq(rand(3, 2), rand(3, 1), driver="x")


def test_ex_functions_report_info_instead_of_raising():
    singular = t([[1.0, 2.0], [2.0, 4.0]])
    inverse, info = flow.linalg.inv_ex(singular)
    assert info.dtype == flow.int32 and int(info) == 2
    assert not np.isfinite(inverse.numpy()).all()
    _, info = flow.linalg.cholesky_ex(t([[1.0, 2.0], [2.0, 1.0]]))
    assert int(info) == 2
    result, info = flow.linalg.solve_ex(flow.stack([flow.eye(2, dtype=flow.float64), singular]), t([1.0, 1.0]))
    assert info.tolist() == [0, 2]
    close(result[0], [1.0, 1.0])
    *_, info = flow.linalg.lu_factor_ex(singular)
    assert int(info) == 2
    with pytest.raises(flow.linalg.LinAlgError):
        flow.linalg.inv_ex(singular, check_errors=True)


def test_statistics_errors_are_pytorchs():
    x = rand(3, 4)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 1"):
        flow.kthvalue(x, 5, 1)
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size"):
        flow.median(flow.zeros(2, 0), 1)
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be in the range \[0, 1\] but got 1.5"):
        flow.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match="input tensor must be either float or double dtype"):
        flow.quantile(flow.ones(3, dtype=flow.int64), 0.5)
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input tensor"):
        flow.quantile(x, t([0.5], flow.float32))
    with pytest.raises(RuntimeError, match="interpolation must be one of linear, lower, higher, midpoint or nearest"):
        flow.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="input tensor must be non-empty"):
        flow.nanquantile(rand(0), 0.5)
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        flow.aminmax(rand(0))
    with pytest.raises(RuntimeError, match="torch.histc: max must be larger than min"):
        flow.histc(x, 4, 2, 1)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        flow.histc(x, 0)
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        flow.bincount(flow.tensor([-1, 2]))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        flow.bincount(flow.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        flow.searchsorted(flow.tensor([1, 2]), flow.tensor([1]), right=True, side="left")
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension or the first N-1 dimensions"):
        flow.searchsorted(flow.tensor([[1, 3], [2, 4]]), flow.tensor([3, 3, 3]))
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got dim\(2\)"):
        flow.bucketize(flow.tensor([1]), flow.tensor([[1, 2]]))
    with pytest.raises(RuntimeError, match="Double did not match Long"):
        flow.isclose(x, flow.ones(3, 4, dtype=flow.int64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        flow.allclose(x, x, rtol=-1.0)
    with pytest.raises(RuntimeError, match="renorm: non-positive-norm not supported"):
        flow.renorm(x, 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. X1: 4 X2: 3"):
        flow.cdist(x, rand(2, 3))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        flow.pdist(rand(2, 3, 1))
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 1"):
        flow.trace(rand(3))
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        flow.diag(rand(2, 2, 2))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, 1"):
        flow.diagonal(x, 0, 1, 1)
    with pytest.raises(RuntimeError, match="trapezoid: received a bool input for `y`"):
        flow.trapezoid(flow.tensor([True, False]))
    with pytest.raises(OpKernelNotFoundError):
        flow.logcumsumexp(flow.tensor([1, 2]), 0)


@pytest.mark.parametrize("fn", [flow.trapezoid, flow.trapz])
def test_trapezoid_slices_x_at_the_positive_dim_of_y(fn):
    """PyTorch's rule: dim is wrapped against y; a 1-D x lies along it; an x of fewer dims is left-padded with
    1s; an x of more dims is sliced at that same positive dim, and the spacings broadcast with y's pairs."""
    y = flow.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x = flow.tensor([[0.0, 1.0, 3.0], [0.0, 2.0, 2.0]])
    assert fn(y, x).tolist() == [1.5 * 1 + 2.5 * 2, 4.5 * 2 + 5.5 * 0]
    assert fn(y, flow.tensor([0.0, 1.0, 3.0]), dim=-1).tolist() == [6.5, 4.5 + 5.5 * 2]
    # x of shape (3, 1) for y of shape (3,): spacings [[1], [3]] (along x's dim 0) times the pair means [1.5, 2.5]
    # broadcast to (2, 2), summed along dim 0
    out = fn(flow.tensor([1.0, 2.0, 3.0]), flow.tensor([[0.0], [1.0], [4.0]]), dim=-1)
    assert out.tolist() == [1.5 * 1 + 1.5 * 3, 2.5 * 1 + 2.5 * 3]
    # x (3, 1, 2, 2) sliced at dim 1 (y's -1) gives (3, 0, 2, 2), which y's (2, 0) pairs cannot broadcast with
    with pytest.raises(RuntimeError, match=r"trapezoid.*cannot be broadcast"):
        fn(flow.ones(2, 1, dtype=flow.int8), flow.ones(3, 1, 2, 2, dtype=flow.int8))
    with pytest.raises(RuntimeError, match="trapezoid: received a bool input for `x` or `y`, but bool is not "
                                           "supported"):
        fn(flow.ones(3), flow.tensor([True, False, True]))
    assert fn(flow.zeros(2, 0), flow.zeros(0, dtype=flow.bool)).tolist() == [0, 0]  # no samples: zeros first


def test_cumulative_trapezoid_checks_x_as_pytorch():
    y = flow.tensor([1.0, 2.0, 3.0])
    assert flow.cumulative_trapezoid(y, flow.tensor([[0.0], [1.0], [4.0]])).tolist() == [[1.5, 2.5], [6.0, 10.0]]
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: received a bool input for `x` or `y`"):
        flow.cumulative_trapezoid(y, flow.tensor([True, False, True]))
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: received a bool input for `x` or `y`"):
        flow.cumulative_trapezoid(flow.zeros(0), flow.zeros(0, dtype=flow.bool))
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: There must be one `x` value for each sample"):
        flow.cumulative_trapezoid(flow.zeros(2, 0), flow.zeros(3))  # no samples, but x still checked
    out = flow.cumulative_trapezoid(flow.zeros(2, 0, dtype=flow.int32), flow.zeros(0))
    assert (tuple(out.shape), out.dtype) == ((2, 0), flow.float32)


def test_trapezoid_shapes_match_pytorch():
    torch = pytest.importorskip("torch")
    shapes = [(3,), (1,), (0,), (2, 3), (3, 1), (2, 1), (1, 3), (2, 0), (0, 3), (2, 3, 3), (3, 1, 2, 2), (4, 2, 3)]
    for name in ("trapezoid", "cumulative_trapezoid"):
        for ys in shapes:
            for xs in shapes:
                for dim in (-1, 0, 1):
                    y = np.arange(int(np.prod(ys)), dtype=np.float64).reshape(ys) % 5 + 1
                    x = np.arange(int(np.prod(xs)), dtype=np.float64).reshape(xs) ** 2 % 7
                    try:
                        expected = getattr(torch, name)(torch.tensor(y), torch.tensor(x), dim=dim).numpy()
                    except (RuntimeError, IndexError):
                        with pytest.raises((RuntimeError, IndexError)):
                            getattr(flow, name)(flow.tensor(y), flow.tensor(x), dim=dim)
                        continue
                    got = getattr(flow, name)(flow.tensor(y), flow.tensor(x), dim=dim).numpy()
                    assert got.shape == expected.shape, (name, ys, xs, dim)
                    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_value_dependent_shapes_need_data():
    m = flow.ones(3, device="meta", dtype=flow.int64)
    for fn in (flow.unique, flow.unique_consecutive, flow.bincount):
        with pytest.raises(RuntimeError, match="depends on the values"):
            fn(m)


# ---- results, named tuples, views, in-place variants ------------------------------------------------------
def test_named_tuples():
    x = t([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
    r = flow.median(x, 1)
    assert isinstance(r, flow.return_types.median) and r.values.tolist() == [2.0, 5.0] and r.indices.tolist() == [2, 1]
    assert flow.mode(x, 1).values.tolist() == [1.0, 5.0] and flow.mode(x, 1).indices.tolist() == [1, 2]
    mm = flow.aminmax(x)
    assert (float(mm.min), float(mm.max)) == (0.0, 5.0)
    assert flow.kthvalue(x, 2, 1).indices.tolist() == [2, 1]
    assert flow.cummax(x, 1).indices.tolist() == [[0, 0, 0], [0, 1, 2]]
    h = flow.histogram(x, 2)
    assert h.hist.tolist() == [3.0, 3.0] and h.bin_edges.tolist() == [0.0, 2.5, 5.0]
    assert isinstance(flow.linalg.slogdet(spd(2, 2)), flow.return_types.linalg_slogdet)
    assert set(flow.linalg.lstsq(rand(4, 2), rand(4, 1))._fields) == {"solution", "residuals", "rank",
                                                                       "singular_values"}
    assert "oneflow_lite.return_types.aminmax(\nmin=" in repr(mm)


def test_median_and_quantile_details():
    assert math.isnan(float(flow.median(t([1.0, math.nan, 3.0]))))
    assert float(flow.nanmedian(t([1.0, math.nan, 3.0, 4.0]))) == 3.0
    assert float(flow.median(t([1.0, 2.0, 3.0, 4.0]))) == 2.0  # the lower median, as PyTorch
    assert math.isnan(float(flow.median(rand(0))))
    q = flow.quantile(rand(2, 5), t([0.1, 0.5, 0.9]), dim=1, keepdim=True)
    assert tuple(q.shape) == (3, 2, 1)
    assert float(flow.nanquantile(t([1.0, math.nan, 3.0]), 0.5)) == 2.0


def test_unique_and_searching():
    x = flow.tensor([3, 1, 2, 1, 3])
    out, inverse, counts = flow.unique(x, return_inverse=True, return_counts=True)
    assert out.tolist() == [1, 2, 3] and inverse.tolist() == [2, 0, 1, 0, 2] and counts.tolist() == [2, 1, 2]
    assert x.unique().tolist() == [1, 2, 3]
    out, counts = flow.unique_consecutive(flow.tensor([1, 1, 2, 2, 3, 1]), return_counts=True)
    assert out.tolist() == [1, 2, 3, 1] and counts.tolist() == [2, 2, 1, 1]
    nan = flow.unique(t([1.0, math.nan, math.nan]))
    assert nan.shape[0] == 3  # NaNs are distinct, as in PyTorch
    assert flow.searchsorted(flow.tensor([1, 3, 5]), 3, right=True).tolist() == 2
    assert flow.searchsorted(flow.tensor([1, 3, 5]), flow.tensor([3]), out_int32=True).dtype == flow.int32
    assert flow.bucketize(flow.tensor([0, 3, 9]), flow.tensor([1, 3, 5])).tolist() == [0, 1, 3]
    assert flow.bincount(flow.tensor([0, 2, 2]), minlength=5).tolist() == [1, 0, 2, 0, 0]
    assert flow.argwhere(flow.tensor([[0, 1], [2, 0]])).tolist() == [[0, 1], [1, 0]]
    assert flow.allclose(t([1.0, 2.0]), t([1.0, 2.0 + 1e-9])) is True
    assert flow.equal(t([1.0]), t([1.0, 1.0])) is False and flow.equal(x, x) is True
    assert x.equal(x) is True and x.allclose(x) is True


def test_diagonal_is_a_view_and_diag_a_copy():
    x = flow.zeros(3, 3)
    d = x.diagonal()
    d[1] = 5.0
    assert float(x[1, 1]) == 5.0
    c = flow.diag(x)
    c[0] = 7.0
    assert float(x[0, 0]) == 0.0
    assert flow.diag_embed(flow.tensor([1, 2]), 1).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]


def test_inplace_variants():
    a, m1, m2 = rand(2, 4), rand(2, 3), rand(3, 4)
    expected = flow.addmm(a, m1, m2, beta=0.5, alpha=2)
    y = a.clone()
    assert y.addmm_(m1, m2, beta=0.5, alpha=2) is y
    close(y, expected)
    v = rand(2)
    expected = flow.addmv(v, m1, rand(3))
    for fn, args in ((flow.Tensor.addmv_, (m1, rand(3))), (flow.addmv_, (m1, rand(3)))):
        y = v.clone()
        fn(y, *args)
        assert tuple(y.shape) == (2,)
    b = rand(2, 3, 4)
    y = b.clone()
    y.baddbmm_(rand(2, 3, 5), rand(2, 5, 4))
    assert tuple(y.shape) == (2, 3, 4)
    y = a.clone()
    y.addr_(rand(2), rand(4))
    y = a.clone()
    y.addbmm_(rand(5, 2, 3), rand(5, 3, 4))
    y = rand(3, 4)
    expected = flow.renorm(y, 2, 0, 0.5)
    y.renorm_(2, 0, 0.5)
    close(y, expected)
    i = flow.tensor([[1, 2], [3, 4]], dtype=flow.int32)
    i.cumsum_(1)
    assert i.dtype == flow.int32 and i.tolist() == [[1, 3], [3, 7]]
    i.cumprod_(0)
    assert i.tolist() == [[1, 3], [3, 21]]
    with pytest.raises(RuntimeError, match="addmm"):
        rand(4).addmm_(m1, m2)  # the result (2, 4) does not fit in place


def test_tensor_methods_exist():
    names = ["aminmax", "median", "nanmedian", "mode", "kthvalue", "quantile", "nanquantile", "nansum", "nanmean",
             "logcumsumexp", "cummax", "cummin", "msort", "argwhere", "histc", "histogram", "bincount", "unique",
             "unique_consecutive", "isclose", "allclose", "equal", "dist", "renorm", "renorm_", "diagonal", "diag",
             "diag_embed", "diagflat", "trace", "addmm", "addmm_", "addbmm", "addbmm_", "addmv", "addmv_", "addr",
             "addr_", "baddbmm_", "mv", "vdot", "inner", "kron", "ger", "cross", "cov", "corrcoef", "det", "logdet",
             "slogdet", "inverse", "pinverse", "matrix_power", "matrix_exp", "cholesky", "cholesky_solve",
             "cholesky_inverse", "qr", "svd", "triangular_solve", "lu", "lu_solve", "cumsum_", "cumprod_", "geqrf",
             "orgqr", "ormqr"]
    assert [n for n in names if not hasattr(flow.Tensor, n)] == []


def test_mock_torch_linalg():
    with flow.mock_torch.enable():
        import torch
        assert torch.linalg.LinAlgError is flow.linalg.LinAlgError
        a = torch.eye(3, dtype=torch.float64) * 2
        assert float(torch.linalg.det(a)) == pytest.approx(8.0)
        assert torch.linalg.norm(a).item() == pytest.approx(math.sqrt(12))
        assert not hasattr(torch.linalg, "eig")  # complex results: not provided


# ---- gradients that gradcheck needs a gauge-invariant function for -----------------------------------------
def test_svd_and_eigh_gradients():
    gc = flow.autograd.gradcheck
    a = rand(4, 3, requires_grad=True)

    def reduced(a):
        u, s, vh = flow.linalg.svd(a, False)
        return s, u @ mT(u), mT(vh) @ vh  # invariant under the columns' signs

    def full(a):
        u, s, _ = flow.linalg.svd(a, True)
        return s, flow.abs(u[..., :3])
    assert gc(reduced, (a,))
    assert gc(full, (a,))
    assert flow.autograd.gradgradcheck(lambda a: flow.linalg.svdvals(a), (a,))
    s = spd(3, 3).requires_grad_(True)

    def eigh(x):
        w, v = flow.linalg.eigh((x + mT(x)) / 2)
        return w, v * v  # each column's sign is arbitrary
    assert gc(eigh, (s,))
    assert flow.autograd.gradgradcheck(eigh, (s,))


def test_geqrf_reflectors_give_qr():
    a = rand(2, 5, 3)
    h, tau = flow.geqrf(a)
    q, r = flow.linalg.qr(a)
    close(flow.linalg.householder_product(h, tau), q)
    close(flow.triu(h)[..., :3, :], r)
    other = rand(2, 5, 2)
    close(flow.ormqr(h, tau, other, transpose=True)[..., :3, :], mT(q) @ other)
    with pytest.raises(NotImplementedError, match="derivative of geqrf is not implemented"):
        flow.geqrf(rand(3, 3, requires_grad=True))[0].sum().backward()


def test_decomposition_gradients_raise_where_undefined():
    a = rand(4, 2, requires_grad=True)
    q, r = flow.linalg.qr(a, "complete")
    with pytest.raises(NotImplementedError, match="mode='complete' and nrows > ncols"):
        q.sum().backward()
    _, r = flow.linalg.qr(rand(3, 3, requires_grad=True), "r")
    with pytest.raises(RuntimeError, match="which is not computed when mode='r'"):
        r.sum().backward()


def test_det_gradient_at_singular_matrices():
    singular = t([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], requires_grad=True)
    flow.linalg.det(singular).backward()
    cofactors = np.array([[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]])  # by hand
    close(singular.grad, cofactors, atol=1e-10)
    assert flow.autograd.gradcheck(lambda a: flow.linalg.det(a), (singular,))


def test_cholesky_gradient_is_symmetric_as_pytorchs():
    a = spd(3, 3).requires_grad_(True)
    w = rand(3, 3)
    (flow.linalg.cholesky(a) * w).sum().backward()
    close(a.grad, mT(a.grad))


# ---- optional: PyTorch on the same inputs ------------------------------------------------------------------
_TORCH_CASES = [
    ("median", lambda m, x: m.median(x, 1)), ("mode", lambda m, x: m.mode(m.round(x), 0)),
    ("quantile", lambda m, x: m.quantile(x, 0.3, 1, interpolation="nearest")),
    ("nanmean", lambda m, x: m.nanmean(x, 0)), ("std_mean", lambda m, x: m.std_mean(x, 1)),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1)), ("cummin", lambda m, x: m.cummin(x, 1)),
    ("histc", lambda m, x: m.histc(x, 6)), ("histogram", lambda m, x: m.histogram(x, 5, density=True)),
    ("cdist", lambda m, x: m.cdist(x, x[:2])), ("pdist", lambda m, x: m.pdist(x)),
    ("renorm", lambda m, x: m.renorm(x, 1, 1, 1.0)), ("cov", lambda m, x: m.cov(x)),
    ("corrcoef", lambda m, x: m.corrcoef(x)), ("kron", lambda m, x: m.kron(x, x[:2])),
    ("trapezoid", lambda m, x: m.trapezoid(x, dx=0.5)),
    ("cumulative_trapezoid", lambda m, x: m.cumulative_trapezoid(x, dim=0)),
    ("inv", lambda m, x: m.linalg.inv(x[:, :3] + 3 * m.eye(3, dtype=x.dtype))),
    ("pinv", lambda m, x: m.linalg.pinv(x)), ("matrix_norm", lambda m, x: m.linalg.matrix_norm(x, "nuc")),
    ("cond", lambda m, x: m.linalg.cond(x)), ("matrix_rank", lambda m, x: m.linalg.matrix_rank(x)),
    ("matrix_exp", lambda m, x: m.linalg.matrix_exp(x[:, :3])),
    ("lu_factor", lambda m, x: m.linalg.lu_factor(x)), ("slogdet", lambda m, x: m.linalg.slogdet(x[:, :3])),
    ("lstsq", lambda m, x: m.linalg.lstsq(x[:, :2], x[:, 2:], driver="gelsd")),
    ("tensordot", lambda m, x: m.tensordot(x, x, ([0], [0]))), ("multi_dot", lambda m, x: m.linalg.multi_dot(
        [x, x.T, x])), ("vander", lambda m, x: m.linalg.vander(x[0], N=3)),
]


@pytest.mark.parametrize("name, fn", _TORCH_CASES, ids=[c[0] for c in _TORCH_CASES])
def test_matches_pytorch(name, fn):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 4))

    def arrays(r):
        if isinstance(r, tuple):
            return [a for v in r for a in arrays(v)]
        return [r.detach().numpy() if hasattr(r, "detach") else r.numpy()]
    expected = arrays(fn(torch, torch.tensor(x)))
    got = arrays(fn(flow, t(x)))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, name
        np.testing.assert_allclose(g, e, atol=1e-8, rtol=1e-7, err_msg=name)
