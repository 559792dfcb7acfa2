"""Equivalence of global ops with single-process ops, table-driven (as tests/op_specs): every row runs its
function on global inputs laid out by every combination of SBPs ({S(first dim), S(last dim), B, P} per
input) on 2 and 4 ranks, and its logical result and the logical gradients of its floating inputs must equal
those of the same function on local tensors. A second table pins the signatures the rules choose
(matmul's (S0, B) -> S0, (B, S1) -> S1, (S1, S0) -> P, ...)."""

import functools
import itertools

import numpy as np
import pytest
from mpi_cases import Cases, check_case

import oneflow_lite as flow

case = Cases()
F = flow.nn.functional
B, P, S = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split
rng = np.random.default_rng(0)


def _f(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _i(high, *shape):
    return rng.integers(0, high, shape).astype(np.int64)


class Row:
    def __init__(self, name, fn, *inputs, grad=True, atol=1e-5, constant=()):
        self.name, self.fn, self.inputs, self.grad, self.atol = name, fn, inputs, grad, atol
        self.constant = constant  # inputs that never require grad


ROWS = [
    Row("relu", lambda x: x.relu(), _f(6, 5)),
    Row("exp_sigmoid_tanh", lambda x: x.exp() + x.sigmoid() * x.tanh(), _f(5, 4)),
    Row("neg_abs_scalars", lambda x: (-x).abs() * 3 + 1 - x / 2, _f(4, 7)),
    Row("add_sub_mul_div", lambda x, y: (x + y) * (x - y) / (y.abs() + 1), _f(5, 6), _f(5, 6)),
    Row("broadcast_binary", lambda x, y, z: x + y * z, _f(6, 5), _f(5), _f(6, 1)),
    Row("where", lambda c, x, y: flow.where(c > 0, x, y), _f(4, 6), _f(4, 6), _f(6)),
    Row("matmul", lambda a, b: a @ b, _f(6, 4), _f(4, 5)),
    Row("batched_matmul", lambda a, b: flow.matmul(a, b), _f(3, 4, 5), _f(5, 2)),
    Row("matmul_vector", lambda a, b: flow.matmul(a, b), _f(5, 4), _f(4)),
    Row("linear", lambda x, w, b: F.linear(x, w, b), _f(6, 4), _f(5, 4), _f(5)),
    Row("linear_3d_no_bias", lambda x, w: F.linear(x, w), _f(2, 3, 4), _f(5, 4)),
    Row("sum", lambda x: x.sum(0) + x.sum(1, keepdim=True).sum() + x.sum(), _f(5, 6)),
    Row("mean", lambda x: x.mean(1) * x.mean(0).sum() + x.mean(), _f(5, 6)),
    Row("max_amax", lambda x: x.max(1).values + x.amax(0).sum(), _f(5, 6)),
    Row("argmax", lambda x: x.argmax(1), _f(6, 5), grad=False),
    Row("reshape_flatten", lambda x: x.reshape(3, 8).sum(1) + x.flatten().reshape(4, 6)[:, 0].sum(), _f(6, 4)),
    Row("transpose_permute", lambda x: x.transpose(0, 1).permute(1, 0) * x.t().t(), _f(5, 6)),
    Row("unsqueeze_squeeze_expand", lambda x: x.unsqueeze(1).expand(5, 3, 6).sum(1) + x.unsqueeze(0).squeeze(0),
        _f(5, 6)),
    Row("softmax", lambda x: F.softmax(x, dim=-1) * F.log_softmax(x, dim=0), _f(6, 5)),
    Row("cross_entropy_mean", lambda x, t: F.cross_entropy(x, t), _f(7, 5), _i(5, 7)),
    Row("cross_entropy_sum_none", lambda x, t: F.cross_entropy(x, t, reduction="sum")
        + F.cross_entropy(x, t, reduction="none").sum(), _f(6, 4), _i(4, 6)),
    Row("nll_weighted_ignore", lambda x, t, w: F.nll_loss(F.log_softmax(x, 1), t, weight=w, ignore_index=1),
        _f(8, 5), _i(5, 8), np.abs(_f(5)) + 0.5, constant=(2,)),
    Row("mse", lambda x, y: F.mse_loss(x, y), _f(5, 6), _f(5, 6)),
    Row("embedding", lambda i, w: F.embedding(i, w), _i(7, 4, 3), _f(7, 5)),
    Row("layer_norm", lambda x, g, b: F.layer_norm(x, (6,), g, b), _f(5, 6), _f(6), _f(6), atol=1e-4),
    Row("cat_stack_chunk", lambda x, y: flow.cat([x, y], 0).sum(0) + flow.stack([x, y], 1).sum(1)
        + flow.cat(x.chunk(2, 1), 1), _f(4, 6), _f(4, 6)),
    Row("conv2d_pooling", lambda x, w, b: F.avg_pool2d(F.max_pool2d(F.conv2d(x, w, b, padding=1), 2), 1)
        + F.adaptive_avg_pool2d(x, 1).sum(), _f(4, 2, 6, 6), _f(3, 2, 3, 3), _f(3), atol=1e-4),
    Row("slicing", lambda x: x[:, 1:4].sum(0) * 2 + x[1:4, 1:4].sum(0) + x[2, ::2], _f(5, 6)),
]


def _sbps_of(a):
    """SBPs a row's input is laid out by: S(first), S(last), B, P (one split for a 1-D input, no split of a 0-d)."""
    splits = [S(0), S(a.ndim - 1)] if a.ndim > 1 else [S(0)] if a.ndim else []
    return splits + [B, P]


def _grads(fn, tensors):
    out = fn(*tensors)
    if not out.dtype.is_floating_point:
        return out, []
    weight = np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape))
    w = flow.tensor(weight)
    if out.is_global:
        w = flow.tensor(weight, placement=out.placement, sbp=B)
    (out * w).sum().backward()
    return out, [t.grad for t in tensors if t.requires_grad]


def _inputs(row, layout=None, placement=None):
    ts = []
    for k, a in enumerate(row.inputs):
        t = flow.tensor(a) if layout is None else flow.tensor(a, placement=placement, sbp=layout[k])
        if row.grad and a.dtype == np.float32 and k not in row.constant:
            t.requires_grad_()
        ts.append(t)
    return ts


def _run_row(row):
    p = flow.placement.all("cpu")
    want, want_grads = _grads(row.fn, _inputs(row))
    for layout in itertools.product(*[_sbps_of(a) for a in row.inputs]):
        got, got_grads = _grads(row.fn, _inputs(row, layout, p))
        where = f"{row.name} with input sbps {layout}"
        assert got.is_global and got.placement is p, where
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=row.atol, err_msg=where)
        for g, wg in zip(got_grads, want_grads):
            if wg is None:  # an input backward does not reach
                assert g is None, where
                continue
            assert g.is_global, where
            np.testing.assert_allclose(g.numpy(), wg.numpy(), rtol=1e-4, atol=row.atol, err_msg=where + " (grad)")


for _row in ROWS:
    case.add(f"op_{_row.name}", functools.partial(_run_row, _row))


# ---- the signatures the rules choose ---------------------------------------------------------------------
def _sbp_of(fn, layouts, shapes):
    p = flow.placement.all("cpu")
    xs = [flow.tensor(_f(*s), placement=p, sbp=l) for s, l in zip(shapes, layouts)]
    return fn(*xs).sbp[0]


SIGNATURES = [
    ("matmul (S0, B) -> S0", lambda a, b: a @ b, (S(0), B), ((6, 4), (4, 5)), S(0)),
    ("matmul (B, S1) -> S1", lambda a, b: a @ b, (B, S(1)), ((6, 4), (4, 5)), S(1)),
    ("matmul (S1, S0) -> P", lambda a, b: a @ b, (S(1), S(0)), ((6, 4), (4, 5)), P),
    ("matmul (P, B) -> P", lambda a, b: a @ b, (P, B), ((6, 4), (4, 5)), P),
    ("linear data parallel", lambda x, w: F.linear(x, w), (S(0), B), ((6, 4), (5, 4)), S(0)),
    ("linear column parallel", lambda x, w, b: F.linear(x, w, b), (B, S(0), S(0)), ((6, 4), (5, 4), (5,)), S(1)),
    ("linear row parallel", lambda x, w, b: F.linear(x, w, b), (S(1), S(1), B), ((6, 4), (5, 4), (5,)), P),
    ("sum over the split dim -> P", lambda x: x.sum(0), (S(0),), ((5, 4),), P),
    ("sum over another dim keeps the split", lambda x: x.sum(0), (S(1),), ((5, 4),), S(0)),
    ("mean over the split dim -> P", lambda x: x.mean(), (S(1),), ((5, 4),), P),
    ("relu keeps S1", lambda x: x.relu(), (S(1),), ((5, 4),), S(1)),
    ("relu of P reduce-scatters", lambda x: x.relu(), (P,), ((5, 4),), S(0)),
    ("add of two P stays P", lambda x, y: x + y, (P, P), ((5, 4), (5, 4)), P),
    ("mul of P and B stays P", lambda x, y: x * y, (P, B), ((5, 4), (5, 4)), P),
    ("softmax moves the split off its dim", lambda x: x.softmax(-1), (S(1),), ((4, 6),), S(0)),
    ("reshape keeps a whole split", lambda x: x.reshape(4, 3, 2), (S(0),), ((4, 6),), S(0)),
    ("transpose moves the split", lambda x: x.transpose(0, 1), (S(0),), ((4, 6),), S(1)),
]


@case
def rules_choose_the_cheapest_signature():
    for name, fn, layouts, shapes, want in SIGNATURES:
        got = _sbp_of(fn, layouts, shapes)
        assert got is want, f"{name}: got {got}"


@case
def broadcast_fallback_for_ops_without_a_rule():
    p = flow.placement.all("cpu")
    x = _f(5, 6)
    g = flow.tensor(x, placement=p, sbp=S(0))
    out = flow.flip(g, [1])  # flip has no SBP rule: computed on broadcast inputs, with a logged note
    assert out.sbp == (B,)
    np.testing.assert_array_equal(out.numpy(), np.flip(x, 1))
    from oneflow_lite.interpreters import eager_global
    assert "flip" in eager_global._noted


@case
def the_global_infer_cache_holds_one_plan_per_layout():
    p = flow.placement.all("cpu")
    x = flow.tensor(_f(4, 4), placement=p, sbp=S(0))
    y = flow.tensor(_f(4, 4), placement=p, sbp=B)
    z = x @ y
    op = None
    from oneflow_lite.functors.registry import get_functor
    op = get_functor("MatMul").op
    n = len(op.global_infer_cache)
    for _ in range(3):
        z = x @ y
    assert len(op.global_infer_cache) == n and z.sbp == (S(0),)
    plans = [v for v in op.global_infer_cache.values()]
    assert any("(S(0)), (B) -> (S(0))" in repr(v) for v in plans), plans


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", case.names())
def test_mpi(name, n):
    check_case(__file__, n, name)



# ---- one process -------------------------------------------------------------------------------------
def test_dump_table_shows_each_ops_sbp_rule():
    lines = flow.dispatch.dump_table("matmul").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Global: eager_global_interpreter [fallback]"))
    assert lines[at + 1] == "    sbp rule: matmul_signatures"
    add = flow.dispatch.dump_table("broadcast_add")
    assert "    sbp rule: broadcast_signatures(partial_sets=((0, 1),))\n" in add
    assert "    sbp rule: none (global calls run on broadcast inputs)\n" in flow.dispatch.dump_table("flip")


if __name__ == "__main__":
    case.main()
