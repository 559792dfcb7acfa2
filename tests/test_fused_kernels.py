"""The fast cpu kernels against the NumPy reference kernels they replace, forward and backward, float32 and
float64: erf and GELU (Note [erf kernels], Note [GELU kernels]), including NaN and infinities, inputs of
several blocks (Note [Blocked kernels]) and non-contiguous ones."""

import math
import threading

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.kernels.cpu import activation, blocked, unary

EXACT, TANH = {"approximate": "none"}, {"approximate": "tanh"}
SPECIALS = [math.inf, -math.inf, math.nan, 0.0, -0.0, 1e-40, -1e-40, 1e30, -1e30, 9.0, -9.0, 20.0, -20.0]


def _inputs(dtype, n=4 * blocked.BLOCK + 123, scale=3.0):
    """Values over the range that matters (several blocks long), the special values and random dy."""
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-12, 12, n // 2), rng.standard_normal(n - n // 2 - len(SPECIALS)) * scale,
                        SPECIALS])
    return x.astype(dtype), rng.standard_normal(x.shape).astype(dtype)


def _finite(a):
    return np.where(np.isfinite(a), a, 0)


# ---- erf ------------------------------------------------------------------------------------------------
def test_float32_erf_within_two_ulp_of_the_exact_value_and_of_the_reference():
    x, _ = _inputs(np.float32)
    x = np.concatenate([x, np.geomspace(1e-38, 8, 20001, dtype=np.float32)])
    x = np.concatenate([x, -x])
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    got = unary.erf(x)
    assert got.dtype == np.float32
    assert np.nanmax(np.abs(got - exact) / ulp) <= 2.0
    ref = unary.erf_reference(x)  # Cephes in float32: also within a few ulp
    assert np.nanmax(np.abs(got.astype(np.float64) - ref) / ulp) <= 4.0


def test_erf_special_values_and_dtypes():
    specials = np.array(SPECIALS + [0.5] * 600)
    for dtype in (np.float16, np.float32, np.float64):
        with np.errstate(over="ignore"):
            x = specials.astype(dtype)
        np.testing.assert_array_equal(np.signbit(unary.erf(x)), np.signbit(unary.erf_reference(x)))
        np.testing.assert_array_equal(unary.erf(x), unary.erf_reference(x).astype(dtype))
    x64, _ = _inputs(np.float64)
    np.testing.assert_array_equal(unary.erf(x64), unary.erf_reference(x64))  # float64 keeps the reference
    x16 = x64[np.abs(x64) < 60].astype(np.float16)
    np.testing.assert_allclose(unary.erf(x16), unary.erf_reference(x16.astype(np.float64)), rtol=1e-3, atol=1e-7)


# ---- gelu ------------------------------------------------------------------------------------------------
def _gelu_pair(form, dtype):
    """x, dy, the kernels' y and dx, the reference kernels' y and dx in x's dtype and in float64."""
    x, dy = _inputs(dtype)
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    with np.errstate(all="ignore"):
        return (x, dy, activation._gelu(form, x), activation._gelu_grad(form, dy, x),
                activation.gelu_reference(form, x), activation.gelu_grad_reference(form, dy, x),
                activation.gelu_reference(form, x64), activation.gelu_grad_reference(form, dy64, x64))


def _same_specials(got, ref):
    """NaN where the reference kernel (same dtype) gives NaN, the same infinities."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])


@pytest.mark.parametrize("form", [EXACT, TANH], ids=["exact", "tanh"])
def test_float32_gelu_matches_the_reference_forward_and_backward(form):
    x, dy, y, dx, y_ref, dx_ref, y64, dx64 = _gelu_pair(form, np.float32)
    assert y.dtype == dx.dtype == np.float32
    _same_specials(y, y_ref)
    _same_specials(dx, dx_ref)
    # as close to the values (float64 on the same float32 inputs) as float32 rounding allows
    finite = np.isfinite(dx_ref) & np.isfinite(dx64)
    np.testing.assert_allclose(_finite(y), _finite(y64), rtol=1e-6, atol=1e-6)
    if form is EXACT:
        np.testing.assert_allclose(dx[finite], dx64[finite], rtol=1e-6, atol=1e-6)
    else:  # 1 - tanh^2 near saturation cancels in float32, in the reference kernel too
        np.testing.assert_allclose(dx[finite], dx_ref[finite], rtol=1e-5, atol=3e-6)


@pytest.mark.parametrize("form", [EXACT, TANH], ids=["exact", "tanh"])
def test_float64_gelu_keeps_the_reference(form):
    x, dy, y, dx, y_ref, dx_ref, _, _ = _gelu_pair(form, np.float64)
    if form is EXACT:  # the very formula
        np.testing.assert_array_equal(y, y_ref)
        np.testing.assert_array_equal(dx, dx_ref)
    else:  # the same formula, evaluated in another order
        np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref))
        np.testing.assert_array_equal(np.isnan(dx), np.isnan(dx_ref))
        np.testing.assert_allclose(_finite(y), _finite(y_ref), rtol=1e-12, atol=1e-15)  # 1 + tanh cancels
        np.testing.assert_allclose(_finite(dx), _finite(dx_ref), rtol=1e-12, atol=1e-14)


def test_gelu_of_float16_and_of_non_contiguous_inputs():
    x = (np.random.default_rng(1).standard_normal((300, 400)) * 3).astype(np.float32)
    for form in (EXACT, TANH):
        t = flow.tensor(x).requires_grad_()
        y = flow.gelu(t.transpose(0, 1), approximate=form["approximate"])
        y.backward(flow.ones_like(y))
        np.testing.assert_allclose(y.numpy(), activation.gelu_reference(form, x.T.astype(np.float64)),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(t.grad.numpy(), activation.gelu_grad_reference(
            form, np.ones(x.shape), x.astype(np.float64)), rtol=1e-5, atol=2e-6)
        h = flow.gelu(flow.tensor(x.astype(np.float16)), approximate=form["approximate"])
        assert h.dtype is flow.float16
        np.testing.assert_allclose(h.numpy().astype(np.float64),
                                   activation.gelu_reference(form, x.astype(np.float16).astype(np.float64)),
                                   rtol=1e-3, atol=1e-4)


def test_blocked_scratch_rows_are_reused_per_thread_and_kind():
    """Note [Blocked kernels]: one set of scratch rows per thread and kind, reused by calls of every size;
    results stay those of the reference whatever an earlier call left in the rows."""
    rows = blocked._scratch_rows(np.dtype(np.float32), 2, 1)
    assert blocked._scratch_rows(np.dtype(np.float32), 2, 1) is rows
    assert [r.dtype for r in rows] == [np.float32, np.float32, np.bool_] and {r.size for r in rows} == {blocked.BLOCK}
    assert blocked._scratch_rows(np.dtype(np.float64), 2, 1) is not rows
    other = []
    t = threading.Thread(target=lambda: other.append(blocked._scratch_rows(np.dtype(np.float32), 2, 1)))
    t.start()
    t.join()
    assert other[0] is not rows
    rng = np.random.default_rng(5)
    for n in (blocked.BLOCK * 2 + 7, 300, blocked.BLOCK, 1000):  # large, small, exactly one block, small again
        x = (rng.standard_normal(n) * 3).astype(np.float32)
        dy = rng.standard_normal(n).astype(np.float32)
        np.testing.assert_allclose(activation._gelu(EXACT, x), activation.gelu_reference(EXACT, x.astype(np.float64)),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(activation._gelu_grad(EXACT, dy, x),
                                   activation.gelu_grad_reference(EXACT, dy.astype(np.float64), x.astype(np.float64)),
                                   rtol=1e-5, atol=2e-6)


def test_gelu_gradcheck_float64():
    x = flow.tensor(np.random.default_rng(2).standard_normal(40) * 2).requires_grad_()
    for form in ("none", "tanh"):
        assert flow.autograd.gradcheck(lambda t: flow.gelu(t, approximate=form), (x,))


# ---- scaled_dot_product_attention (Note [Fused attention] in ops/nn.py) -----------------------------------
def _np_attention(q, k, v, causal=False, mask=None, scale=None):
    """PyTorch's math reference in NumPy (float64): out and attn, with a row masked everywhere giving 0."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tri(s.shape[-2], s.shape[-1], dtype=bool), s, -np.inf)
    elif mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    m = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(m), 0, m))
    z = e.sum(-1, keepdims=True)
    p = e / np.where(z == 0, 1, z)
    return p @ v, p


def _flow_composite(q, k, v, causal=False, mask=None, scale=None):
    """The composite path written with functional calls: matmul, scale, bias, softmax, matmul."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = flow.matmul(q, k.transpose(-2, -1)) * scale
    if causal:
        s = s + flow.tensor(np.where(np.tri(s.shape[-2], s.shape[-1], dtype=bool), 0.0, -np.inf).astype(
            s.numpy().dtype))
    elif mask is not None:
        s = s + flow.tensor(np.where(mask, 0.0, -np.inf).astype(s.numpy().dtype)) if mask.dtype == np.bool_ \
            else s + flow.tensor(mask)
    return flow.matmul(flow.softmax(s, dim=-1), v)


ATTENTION_CASES = {
    "causal": dict(shapes=((2, 3, 7, 4), (2, 3, 7, 4), (2, 3, 7, 5)), causal=True),
    "causal_L_lt_S": dict(shapes=((2, 2, 5, 4), (2, 2, 9, 4), (2, 2, 9, 3)), causal=True),
    "causal_L_gt_S": dict(shapes=((2, 2, 9, 4), (2, 2, 5, 4), (2, 2, 5, 3)), causal=True),
    "no_mask_3d": dict(shapes=((3, 6, 4), (3, 8, 4), (3, 8, 2))),
    "scale": dict(shapes=((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8)), scale=0.3),
    "bool_mask": dict(shapes=((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)), mask=(3, 5, 6)),
    "float_mask": dict(shapes=((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)), mask=(5, 6), float_mask=True),
}


def _attention_inputs(case, dtype):
    spec = ATTENTION_CASES[case]
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in spec["shapes"])
    mask = None
    if "mask" in spec:
        if spec.get("float_mask"):
            mask = rng.standard_normal(spec["mask"]).astype(dtype)
        else:
            mask = rng.random(spec["mask"]) > 0.4
            mask[0, 1] = False  # a row masked everywhere gives 0
    return q, k, v, mask, spec.get("causal", False), spec.get("scale")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_fused_attention_matches_the_reference_forward_and_backward(case, dtype):
    import oneflow_lite.nn.functional as F
    q, k, v, mask, causal, scale = _attention_inputs(case, dtype)
    tq, tk, tv = (flow.tensor(a).requires_grad_() for a in (q, k, v))
    y = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=None if mask is None else flow.tensor(mask),
                                       is_causal=causal, scale=scale)
    assert y.grad_fn.name().startswith("ScaledDotProductAttentionBackward")  # the fused op ran
    dy = np.random.default_rng(4).standard_normal(y.shape).astype(dtype)
    y.backward(flow.tensor(dy))
    # the composite path, same dtype
    cq, ck, cv = (flow.tensor(a).requires_grad_() for a in (q, k, v))
    z = _flow_composite(cq, ck, cv, causal, mask, scale)
    z.backward(flow.tensor(dy))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    ref, _ = _np_attention(*(a.astype(np.float64) for a in (q, k, v)), causal, mask, scale)
    np.testing.assert_allclose(y.numpy(), ref, **tol)
    np.testing.assert_allclose(y.numpy(), np.nan_to_num(z.numpy()) if mask is not None else z.numpy(), **tol)
    if mask is None or mask.dtype != np.bool_:  # the composite softmax gives NaN on rows masked everywhere
        for a, b in ((tq, cq), (tk, ck), (tv, cv)):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


@pytest.mark.parametrize("case", ["causal", "bool_mask", "float_mask", "no_mask_3d"])
def test_fused_attention_gradcheck_and_gradgradcheck_float64(case):
    import oneflow_lite.nn.functional as F
    q, k, v, mask, causal, scale = _attention_inputs(case, np.float64)
    q, k, v = (a[..., :4, :] if a.ndim == 4 else a for a in (q, k, v))
    if mask is not None:
        mask = mask[..., :4, :4] if mask.ndim == 3 else mask[:4, :4]
        q, k, v = (a[..., :4, :] for a in (q, k, v))
    m = None if mask is None else flow.tensor(mask)
    tensors = tuple(flow.tensor(a).requires_grad_() for a in (q, k, v))

    def fn(a, b, c):
        return F.scaled_dot_product_attention(a, b, c, attn_mask=m, is_causal=causal, scale=scale)
    assert flow.autograd.gradcheck(fn, tensors)
    assert flow.autograd.gradgradcheck(fn, tensors)


def test_fused_attention_float16_computes_in_float32():
    import oneflow_lite.nn.functional as F
    q, k, v, _, _, _ = _attention_inputs("causal", np.float16)
    y = F.scaled_dot_product_attention(*(flow.tensor(a) for a in (q, k, v)), is_causal=True)
    assert y.dtype is flow.float16
    ref, _ = _np_attention(*(a.astype(np.float64) for a in (q, k, v)), causal=True)
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=2e-3, atol=2e-3)


def test_attention_falls_back_to_the_composite_where_the_fused_op_does_not_apply():
    import oneflow_lite.nn.functional as F
    rng = np.random.default_rng(5)
    q = flow.tensor(rng.standard_normal((2, 3, 4, 8)).astype(np.float32)).requires_grad_()
    k = flow.tensor(rng.standard_normal((1, 3, 4, 8)).astype(np.float32))  # broadcast batch dim
    y = F.scaled_dot_product_attention(q, k, k)
    assert y.grad_fn.name().startswith("MatMulBackward")
    mask = flow.tensor(rng.standard_normal((4, 4)).astype(np.float32)).requires_grad_()  # a mask needing a grad
    y = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    y.sum().backward()
    assert mask.grad is not None
    ref, p = _np_attention(*(a.numpy().astype(np.float64) for a in (q, q, q)), mask=mask.numpy().astype(np.float64))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-6)


# ---- layer_norm (Note [layer_norm kernels] in kernels/cpu/nn.py) ------------------------------------------
def _infer_ctx(op_type, inputs, outputs, arrays, attrs):
    """The context the eager interpreter gives a kernel of ``op_type`` for ``arrays``."""
    from oneflow_lite.framework.attr import AttrMap
    from oneflow_lite.framework.op_builder import OpBuilder
    builder = OpBuilder(op_type)
    for name in inputs:
        builder.input(name)
    for name in outputs:
        builder.output(name)
    return builder.build().infer(tuple(flow.tensor(a)._meta for a in arrays), AttrMap(attrs))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape, begin, affine", [((6, 7, 32), 2, True), ((6, 7, 32), 1, False), ((5, 3000), 1, True),
                                                  ((3, 5000), 1, True), ((4, 0), 1, True), ((2, 3, 8), 2, False)])
def test_layer_norm_kernels_match_the_reference(shape, begin, affine, dtype):
    from oneflow_lite.kernels.cpu import nn as knn
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    x[(0,) * (len(shape) - 1)] = np.nan if x.size else 0  # a row with NaN stays NaN
    dy = rng.standard_normal(shape).astype(dtype)
    norm = shape[begin:]
    params = [rng.standard_normal(norm).astype(dtype), rng.standard_normal(norm).astype(dtype)] if affine else []
    attrs = {"begin_norm_axis": begin, "epsilon": 1e-5, "center": affine, "scale": affine}
    ins = ["x", "gamma", "beta"] if affine else ["x"]
    ctx = _infer_ctx("layer_norm", ins, ["y", "mean", "inv_variance"], [x, *params], attrs)
    tol = {np.float16: dict(rtol=2e-3, atol=2e-3), np.float32: dict(rtol=2e-5, atol=2e-5),
           np.float64: dict(rtol=1e-12, atol=1e-12)}[dtype]
    with np.errstate(all="ignore"):
        got, ref = knn.layer_norm_cpu(ctx, x, *params), knn.layer_norm_reference(ctx, x, *params)
        for a, b in zip(got, ref):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), **tol)
        _, mean, inv = ref
        gamma = params[:1]
        gctx = _infer_ctx("layer_norm_grad", ["dy", "x", "mean", "inv_variance"] + ["gamma"] * bool(gamma), ["dx"],
                          [dy, x, mean, inv, *gamma], {"begin_norm_axis": begin})
        got, ref = knn.layer_norm_grad_cpu(gctx, dy, x, mean, inv, *gamma), knn.layer_norm_grad_reference(
            gctx, dy, x, mean, inv, *gamma)
        assert got.dtype == ref.dtype
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), **tol)
        pctx = _infer_ctx("layer_norm_param_grad", ["dy", "x", "mean", "inv_variance"], ["gamma_diff", "beta_diff"],
                          [dy, x, mean, inv], {"begin_norm_axis": begin})
        got, ref = knn.layer_norm_param_grad_cpu(pctx, dy, x, mean, inv), knn.layer_norm_param_grad_reference(
            pctx, dy, x, mean, inv)
        for a, b in zip(got, ref):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), **{**tol, "atol": tol["atol"] * 50})


# ---- the graph's GELU fusion (Note [Derivatives in the forward] in graph/passes.py) ------------------------
class _GeluNet(flow.nn.Module):
    def __init__(self, approximate):
        super().__init__()
        self.fc = flow.nn.Linear(40, 300)
        self.approximate = approximate

    def forward(self, x):
        return (flow.gelu(self.fc(x), approximate=self.approximate) ** 2).sum()


class _GradGraph(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        loss = self.model(x)
        return (loss, *flow.autograd.grad(loss, list(self.model.parameters())))


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_graph_gelu_derivative_fusion_gives_eager_gradients_bit_for_bit(approximate, dtype):
    flow.manual_seed(7)
    model = _GeluNet(approximate).to(dtype)
    x = flow.randn(8, 40, dtype=dtype)
    model(x).backward()
    expected = [p.grad.numpy().copy() for p in model.parameters()]
    for fusion in (True, False):
        g = _GradGraph(model)
        g.config.enable_fusion(fusion)
        _, *grads = g(x)
        for got, e in zip(grads, expected):
            np.testing.assert_array_equal(got.numpy(), e)
        ops = [n.op_type for n in g._last.ir.nodes if n.kind == "user"]
        assert ("gelu_with_derivative" in ops) is fusion and ("gelu_grad" in ops) is not fusion
        assert ("gelu derivatives: 1 gelu(s) give their derivative to their gelu_grad(s)" in repr(g)) is fusion


# ---- softmax family (kernels/cpu/nn.py) ------------------------------------------------------------------
SOFTMAX_KERNELS = ["softmax", "log_softmax", "safe_softmax", "softmax_grad", "log_softmax_grad"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("name", SOFTMAX_KERNELS)
def test_softmax_kernels_match_the_reference(name, axis, dtype):
    from oneflow_lite.kernels.cpu import nn as knn
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((6, 7, 33)) * 4).astype(dtype)
    x[0, 0, :] = -np.inf  # a row of -inf (safe_softmax: 0; the others: NaN)
    x[1, 1, 3] = np.inf
    x[2, 2, 4] = np.nan
    x[3, :, 5] = -np.inf
    dy = rng.standard_normal(x.shape).astype(dtype)
    args = (x,) if "grad" not in name else (knn.softmax_reference(axis, np.nan_to_num(x)), dy)
    fast, ref = getattr(knn, "_" + name), getattr(knn, name + "_reference")
    with np.errstate(all="ignore"):
        got, want = fast(axis, *[a.copy() for a in args]), ref(axis, *[a.copy() for a in args])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    # sums accumulate in another order (BLAS / einsum): an ulp of the sums' terms (up to about 8 here)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(got, want, **tol)


def test_fused_attention_rows_far_below_their_heads_max_and_special_scores():
    """Note [Softmax shifted per head]: rows whose max lies far below their head's are recomputed with their own
    max; a NaN or an inf score spoils its own row only, as in the composite."""
    import oneflow_lite.nn.functional as F
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((2, 3, 6, 4)) for _ in range(3))
    q[0, 1, 2] *= 400  # one row of huge scores: the other rows of head (0, 1) sit far below its max
    q[1, 2, 0] *= -300
    for dtype in (np.float32, np.float64):
        a, b, c = (x.astype(dtype) for x in (q, k, v))
        y = F.scaled_dot_product_attention(*(flow.tensor(x) for x in (a, b, c)))
        ref, p = _np_attention(*(x.astype(np.float64) for x in (a, b, c)))
        tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(y.numpy(), ref, **tol)
        y2 = F.scaled_dot_product_attention(*(flow.tensor(x) for x in (a, b, c)), is_causal=True)
        np.testing.assert_allclose(y2.numpy(), _np_attention(*(x.astype(np.float64) for x in (a, b, c)),
                                                             causal=True)[0], **tol)
    bad = q.astype(np.float32)
    bad[0, 0, 1, 2] = np.nan
    bad[1, 1, 3, 0] = np.inf
    y = F.scaled_dot_product_attention(*(flow.tensor(x) for x in (bad, k.astype(np.float32), v.astype(np.float32))))
    composite = _flow_composite(*(flow.tensor(x) for x in (bad, k.astype(np.float32), v.astype(np.float32))))
    np.testing.assert_array_equal(np.isnan(y.numpy()), np.isnan(composite.numpy()))
    assert np.isnan(y.numpy()).any() and not np.isnan(y.numpy()[0, 1]).any()
    np.testing.assert_allclose(np.nan_to_num(y.numpy()), np.nan_to_num(composite.numpy()), rtol=1e-5, atol=1e-6)
