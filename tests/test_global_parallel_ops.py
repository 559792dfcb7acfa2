"""Ops whose global form is more than running the local op on pieces, each on 2 and 4 ranks against NumPy:
the vocab-parallel embedding (weight split(0) by rows, indices broadcast: a masked lookup giving a partial
sum), partial_max and partial_min (a max / min over the split dim; their boxing rows), max(dim) / min(dim)
with indices and argmax / argmin over a split dim (reduced piece by piece, no gathering), and dropout on split tensors (each rank draws
its own piece's mask from the stream of Note [Random ops on global tensors], with no gathering)."""

from functools import partial

import numpy as np
import pytest
from mpi_cases import Cases, check_case

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.framework.sbp import partial_max as PM
from oneflow_lite.framework.sbp import partial_min as PMIN
from oneflow_lite.functors.registry import get_functor

case = Cases()
F = nn.functional
B, P, S = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split
rng = np.random.default_rng(0)


def _rank():
    return flow.env.get_rank()


def _piece(a, dim, n=None):
    n = n or flow.env.get_world_size()
    return np.array_split(a, n, axis=dim)[_rank() % n]


def _rows(v, n, i):
    """Rows [start, stop) of piece i of n (OneFlow's balanced split)."""
    base, rem = divmod(v, n)
    start = i * base + min(i, rem)
    return start, start + base + (1 if i < rem else 0)


# ---- vocab-parallel embedding ---------------------------------------------------------------------------
@case
def vocab_parallel_embedding_is_a_masked_lookup_giving_a_partial_sum():
    n, r = flow.env.get_world_size(), _rank()
    p = flow.placement.all("cpu")
    w = rng.standard_normal((11, 3)).astype(np.float32)
    idx = rng.integers(0, 11, (4, 5))
    weight = flow.tensor(w, placement=p, sbp=S(0)).requires_grad_()
    out = F.embedding(flow.tensor(idx, placement=p, sbp=B), weight)
    assert out.sbp == (P,)
    start, stop = _rows(11, n, r)
    inside = (idx >= start) & (idx < stop)
    np.testing.assert_array_equal(out.to_local().numpy(), np.where(inside[..., None], w[idx], 0))
    np.testing.assert_array_equal(out.numpy(), w[idx])
    c = rng.standard_normal((4, 5, 3)).astype(np.float32)
    (out * flow.tensor(c, placement=p, sbp=B)).sum().backward()
    want = np.zeros_like(w)
    np.add.at(want, idx.reshape(-1), c.reshape(-1, 3))
    assert weight.grad.sbp == (S(0),)
    np.testing.assert_allclose(weight.grad.numpy(), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(IndexError, match=r"embedding: index out of range in self \(indices must be in \[0, 11\)\)"):
        F.embedding(flow.tensor(idx + 1, placement=p, sbp=B), weight)


def _embedding_grad_formula(w, idx, c, padding_idx, by_freq):
    """NumPy: each looked-up row's output grad added into its row (divided by the row's count), padding zero."""
    want = np.zeros_like(w)
    counts = np.bincount(idx.reshape(-1), minlength=len(w))
    rows = c.reshape(-1, w.shape[1]) / (counts[idx.reshape(-1)][:, None] if by_freq else 1)
    np.add.at(want, idx.reshape(-1), rows)
    if padding_idx is not None:
        want[padding_idx] = 0
    return want


@case
def vocab_parallel_embedding_backward_computes_only_this_ranks_rows():
    from oneflow_lite.framework.calls import F as calls
    n, r = flow.env.get_world_size(), _rank()
    p = flow.placement.all("cpu")
    w = rng.standard_normal((11, 3)).astype(np.float32)
    idx = rng.integers(0, 11, (4, 6))
    start, stop = _rows(11, n, r)
    last = _rows(11, n, n - 1)[0]  # padding in the last rank's rows (the first row of them)
    for padding_idx, by_freq, idx_sbp in ((None, False, B), (int(idx[0, 0]), True, B), (last, False, S(0))):
        weight = flow.tensor(w, placement=p, sbp=S(0)).requires_grad_()
        out = F.embedding(flow.tensor(idx, placement=p, sbp=idx_sbp), weight, padding_idx=padding_idx,
                          scale_grad_by_freq=by_freq)
        c = rng.standard_normal((4, 6, 3)).astype(np.float32)
        (out * flow.tensor(c, placement=p, sbp=B)).sum().backward()
        assert weight.grad.sbp == (S(0),)
        want = _embedding_grad_formula(w, idx, c, padding_idx, by_freq)
        np.testing.assert_allclose(weight.grad.to_local().numpy(), want[start:stop], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(weight.grad.numpy(), want, rtol=1e-5, atol=1e-6)
    plans = list(calls.ops.embedding_grad._op(2).global_infer_cache.values())
    assert plans and all("(B), (B) -> (S(0))" in repr(v) for v in plans), plans  # dy and indices broadcast
    for plan in plans:  # the kernel makes this rank's rows only, not the whole table's gradient
        assert plan.out_local_shapes[0] == (stop - start, 3) and plan.attrs["num_weights"] == stop - start


@case
def vocab_parallel_embedding_module_then_relu_matches_one_process():
    p = flow.placement.all("cpu")
    flow.manual_seed(3)
    ref = nn.Embedding(9, 4)
    model = nn.Embedding(9, 4)
    model.load_state_dict(ref.state_dict())
    model.to_global(p, B).to_global(sbp=S(0))  # broadcast first: a local tensor would be a piece
    assert model.weight.sbp == (S(0),) and tuple(model.weight.shape) == (9, 4)
    idx = rng.integers(0, 9, (6,))
    got = model(flow.tensor(idx, placement=p, sbp=B)).relu()  # P -> B (all-reduce) before the relu
    want = ref(flow.tensor(idx)).relu()
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(model.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-6)


@case
def vocab_parallel_embedding_on_a_2d_placement():
    if flow.env.get_world_size() != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    w = rng.standard_normal((10, 3)).astype(np.float32)
    idx = rng.integers(0, 10, (4, 2))
    out = F.embedding(flow.tensor(idx, placement=p, sbp=(S(0), B)), flow.tensor(w, placement=p, sbp=(B, S(0))))
    assert out.sbp == (S(0), P)
    np.testing.assert_array_equal(out.numpy(), w[idx])


# ---- partial max and partial min ----------------------------------------------------------------------------
def _extreme_over_the_split_dim_is_partial(name, extreme, text):
    """``amax`` / ``amin`` (``name``) over the split dim gives ``extreme`` (repr ``text``), its boxing to B the
    logical value, and its gradient only the winners' rows, split as the input."""
    p = flow.placement.all("cpu")
    x = rng.permutation(30).reshape(6, 5).astype(np.float32)  # distinct values: one extreme per column
    np_fn, np_arg = (np.max, np.argmax) if name == "amax" else (np.min, np.argmin)
    g = flow.tensor(x, placement=p, sbp=S(0)).requires_grad_()
    y = getattr(g, name)(0)
    assert y.sbp == (extreme,) and repr(extreme) == text
    piece = _piece(x, 0)
    np.testing.assert_array_equal(y.to_local().numpy(), np_fn(piece, 0) if len(piece) else np.full(5, -np.inf))
    np.testing.assert_array_equal(y.numpy(), np_fn(x, 0))
    assert getattr(g, name)(1).sbp == (S(0),)
    (y * flow.tensor(np.arange(5.0, dtype=np.float32), placement=p, sbp=B)).sum().backward()
    want = np.zeros_like(x)
    want[np_arg(x, 0), np.arange(5)] = np.arange(5.0)
    np.testing.assert_array_equal(g.grad.numpy(), want)
    assert g.grad.sbp == (S(0),)
    return g, x, np_fn


case.add("max_over_the_split_dim_is_partial_max",
         partial(_extreme_over_the_split_dim_is_partial, "amax", PM, "oneflow_lite.sbp.partial_max"))


@case
def min_over_the_split_dim_is_partial_min():
    p = flow.placement.all("cpu")
    g, x, _ = _extreme_over_the_split_dim_is_partial("amin", PMIN, "oneflow_lite.sbp.partial_min")
    assert PMIN.short() == "P(min)" and g.min().sbp == (PMIN,) and g.min().item() == x.min()
    short = flow.tensor(x[:3], placement=p, sbp=S(0))  # a dim shorter than the ranks: an empty piece is not reduced
    np.testing.assert_array_equal(short.amin(0).numpy(), x[:3].min(0))


def _boxing_to_and_from_partial(extreme, other):
    """Every SBP to and from ``extreme`` (``other``: the other partial extreme), on floats, ints (a split's
    piece inside the identity of the reduction) and bools."""
    n, r = flow.env.get_world_size(), _rank()
    p = flow.placement.all("cpu")
    x = rng.standard_normal((4, 6)).astype(np.float32)
    m = flow.tensor(x, placement=p, sbp=B).to_global(sbp=extreme)  # B -> P(max) / P(min): every rank's whole value
    np.testing.assert_array_equal(m.to_local().numpy(), x)
    for target in (B, S(0), S(1), P, other):
        np.testing.assert_array_equal(m.to_global(sbp=target).numpy(), x)
    np.testing.assert_array_equal(m.to_global(sbp=S(1)).to_local().numpy(), _piece(x, 1))
    for source in (S(0), S(1), P, other):
        t = flow.tensor(x, placement=p, sbp=B).to_global(sbp=source).to_global(sbp=extreme)
        assert t.sbp == (extreme,)
        np.testing.assert_array_equal(t.numpy(), x)
    ints = flow.tensor(np.arange(12).reshape(3, 4), placement=p, sbp=S(1)).to_global(sbp=extreme)
    np.testing.assert_array_equal(ints.numpy(), np.arange(12).reshape(3, 4))
    local = ints.to_local().numpy()
    if extreme is PM:
        assert local.min() == (np.iinfo(np.int64).min if n > 1 else 0)
    else:
        assert local.max() == (np.iinfo(np.int64).max if n > 1 else 11)
    flags = flow.tensor(np.array([True, False, True]), placement=p, sbp=S(0)).to_global(sbp=extreme)
    np.testing.assert_array_equal(flags.numpy(), [True, False, True])
    assert r >= 0


case.add("boxing_to_and_from_partial_max", partial(_boxing_to_and_from_partial, PM, PMIN))
case.add("boxing_to_and_from_partial_min", partial(_boxing_to_and_from_partial, PMIN, PM))


def _first_extreme(x, dim, is_max, keepdim):
    """NumPy's first occurrence of the max / min along ``dim`` (NaN first), values and indices."""
    idx = (np.argmax if is_max else np.argmin)(x, axis=dim, keepdims=True)
    vals = np.take_along_axis(x, idx, axis=dim)
    return (vals, idx) if keepdim else (vals.squeeze(dim), idx.squeeze(dim))


@case
def max_and_min_with_indices_over_a_split_dim_reduce_each_piece():
    n = flow.env.get_world_size()
    p = flow.placement.all("cpu")
    x = rng.integers(0, 3, (9, 5)).astype(np.float32)  # many ties across pieces: the first index wins
    x[7, 1] = x[2, 1] = np.nan  # NaN wins, its first occurrence
    for d in (0, 1):
        g = flow.tensor(x, placement=p, sbp=S(d))
        for name, is_max in (("max", True), ("min", False)):
            for keepdim in (False, True):
                v, i = getattr(g, name)(d, keepdim)
                want_v, want_i = _first_extreme(x, d, is_max, keepdim)
                assert v.sbp == (B,) and i.sbp == (B,), (v.sbp, i.sbp)
                np.testing.assert_array_equal(v.to_local().numpy(), want_v)
                np.testing.assert_array_equal(i.to_local().numpy(), want_i)
        plans = [repr(v) for v in get_functor("MaxDim").op.global_infer_cache.values()]
        assert any(f"(S({d})) -> (B), (B)" in v for v in plans), plans  # the input was not gathered
    ints = rng.integers(-5, 5, (3 * n, 4))
    v, i = flow.tensor(ints, placement=p, sbp=S(0)).min(0)
    np.testing.assert_array_equal(v.numpy(), ints.min(0))
    np.testing.assert_array_equal(i.numpy(), ints.argmin(0))
    y = rng.permutation(40).reshape(8, 5).astype(np.float32)
    g = flow.tensor(y, placement=p, sbp=S(0)).requires_grad_()
    v, i = g.max(0)
    (v * flow.tensor(np.arange(1.0, 6.0, dtype=np.float32), placement=p, sbp=B)).sum().backward()
    want = np.zeros_like(y)
    want[y.argmax(0), np.arange(5)] = np.arange(1.0, 6.0)
    np.testing.assert_array_equal(g.grad.numpy(), want)
    short = rng.standard_normal((n - 1 or 1, 3)).astype(np.float32)  # fewer rows than ranks: gathered instead
    v, i = flow.tensor(short, placement=p, sbp=S(0)).max(0)
    np.testing.assert_array_equal(i.numpy(), short.argmax(0))


@case
def max_with_indices_on_a_2d_placement_splitting_one_dim_twice():
    if flow.env.get_world_size() != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    x = rng.integers(0, 4, (10, 3)).astype(np.float32)
    for nd in ((S(0), S(0)), (S(0), B), (B, S(0)), (S(0), S(1))):
        v, i = flow.tensor(x, placement=p, sbp=nd).max(0)
        want_v, want_i = _first_extreme(x, 0, True, False)
        np.testing.assert_array_equal(v.numpy(), want_v)
        np.testing.assert_array_equal(i.numpy(), want_i)


def _np_arg(x, dim, is_max, keepdim):
    """NumPy's argmax / argmin: the first occurrence, NaN counting as the extreme (PyTorch's rule)."""
    return (np.argmax if is_max else np.argmin)(x, axis=dim, keepdims=keepdim)


@case
def argmax_and_argmin_over_a_split_dim_reduce_each_piece():
    n = flow.env.get_world_size()
    p = flow.placement.all("cpu")
    x = rng.integers(0, 3, (9, 7)).astype(np.float32)  # many ties across pieces: the first index wins
    x[7, 1] = x[2, 1] = np.nan  # NaN wins, its first occurrence
    x[4, 6] = np.nan  # and in the flattened tensor: the first NaN in row-major order
    for d in (0, 1):
        g = flow.tensor(x, placement=p, sbp=S(d))
        for name, is_max in (("argmax", True), ("argmin", False)):
            for dim, keepdim in ((d, False), (d, True), (None, False), (None, True)):
                got = getattr(g, name)(dim, keepdim)
                assert got.sbp == (B,), (name, dim, got.sbp)
                np.testing.assert_array_equal(got.to_local().numpy(), _np_arg(x, dim, is_max, keepdim))
            other = getattr(g, name)(1 - d)  # along the other dim: the split stays, each rank its rows
            assert other.sbp == (S(0),)
            np.testing.assert_array_equal(other.numpy(), _np_arg(x, 1 - d, is_max, False))
        for functor in ("ArgMax", "ArgMin"):
            plans = [repr(v) for v in get_functor(functor).op.global_infer_cache.values()]
            assert any(f"(S({d})) -> (B)" in v for v in plans), plans  # the input was not gathered
    ints = rng.integers(-5, 5, (3 * n, 4))
    got = flow.tensor(ints, placement=p, sbp=S(0)).argmin(0)
    np.testing.assert_array_equal(got.numpy(), ints.argmin(0))
    big = np.array([[-np.inf, 2.0], [np.inf, np.inf], [1.0, np.inf]] * n, np.float64)  # ties of inf
    np.testing.assert_array_equal(flow.tensor(big, placement=p, sbp=S(0)).argmax(0).numpy(), big.argmax(0))
    np.testing.assert_array_equal(flow.tensor(big, placement=p, sbp=S(0)).argmax().numpy(), big.argmax())
    short = rng.standard_normal((n - 1 or 1, 3)).astype(np.float32)  # fewer rows than ranks: gathered instead
    np.testing.assert_array_equal(flow.tensor(short, placement=p, sbp=S(0)).argmax(0).numpy(), short.argmax(0))
    np.testing.assert_array_equal(flow.tensor(short, placement=p, sbp=S(0)).argmax().numpy(), short.argmax())


@case
def argmax_moves_only_the_candidates():
    """Each rank all-gathers its (value, index) candidates, never its piece: the bytes moved per rank are the
    size of the result, not of the input."""
    from oneflow_lite.framework import world as world_module
    p = flow.placement.all("cpu")
    x = rng.standard_normal((64, 5)).astype(np.float32)
    g = flow.tensor(x, placement=p, sbp=S(0))
    sent = []
    original = world_module.Group.allgather

    def recording(self, a, counts):
        sent.append(a.nbytes)
        return original(self, a, counts)
    world_module.Group.allgather = recording
    try:
        i, flat = g.argmax(0), g.argmin()
    finally:
        world_module.Group.allgather = original
    assert len(sent) == (4 if flow.env.get_world_size() > 1 else 0) and max(sent, default=0) <= 5 * 8, sent
    np.testing.assert_array_equal(i.numpy(), x.argmax(0))
    np.testing.assert_array_equal(flat.numpy(), x.argmin())


@case
def argmax_on_a_2d_placement_splitting_dims_on_both_axes():
    if flow.env.get_world_size() != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    x = rng.integers(0, 4, (10, 6)).astype(np.float32)
    x[9, 5] = np.nan
    for nd in ((S(0), S(0)), (S(0), B), (B, S(0)), (S(0), S(1)), (S(1), S(0))):
        g = flow.tensor(x, placement=p, sbp=nd)
        np.testing.assert_array_equal(g.argmax(0).numpy(), x.argmax(0))
        np.testing.assert_array_equal(g.argmin(1, True).numpy(), x.argmin(1, keepdims=True))
        np.testing.assert_array_equal(g.argmax().numpy(), x.argmax())
        np.testing.assert_array_equal(g.argmin().numpy(), x.argmin())


# ---- dropout on split tensors ---------------------------------------------------------------------------
def _shared_seed(seed):
    """The seed every rank's global random op starts from after flow.manual_seed(seed)."""
    return int(np.random.Generator(np.random.PCG64(seed)).integers(0, 2 ** 62))


def _mask(seed, k, shape, rate):
    return np.random.Generator(np.random.PCG64(seed + k)).random(shape, dtype=np.float32) >= rate


@case
def dropout_on_a_split_tensor_draws_each_piece_without_gathering():
    n, r = flow.env.get_world_size(), _rank()
    p = flow.placement.all("cpu")
    x = rng.standard_normal((9, 4)).astype(np.float32)
    g = flow.tensor(x, placement=p, sbp=S(0)).requires_grad_()
    flow.manual_seed(11)
    y = F.dropout(g, p=0.4)
    assert y.sbp == (S(0),)
    seed = _shared_seed(11)
    pieces = [_mask(seed, k, np.array_split(x, n)[k].shape, 0.4) for k in range(n)]
    mask = np.concatenate(pieces)
    np.testing.assert_allclose(y.to_local().numpy(), _piece(x, 0) * pieces[r] / 0.6, rtol=1e-6)
    np.testing.assert_allclose(y.numpy(), x * mask / 0.6, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), mask / 0.6, rtol=1e-6)
    plans = [repr(v) for v in get_functor("Dropout").mask_op.global_infer_cache.values()]
    assert any("(S(0)) -> (S(0))" in v for v in plans), plans  # the mask follows the split: no all-gather
    if n == 4:  # pieces 1 and 2 have the same shape but their own streams
        assert pieces[1].shape == pieces[2].shape and not np.array_equal(pieces[1], pieces[2])


@case
def dropout_on_broadcast_and_partial_tensors_uses_one_mask():
    p = flow.placement.all("cpu")
    x = rng.standard_normal((5, 3)).astype(np.float32)
    flow.manual_seed(5)
    y = F.dropout(flow.tensor(x, placement=p, sbp=B), p=0.5)
    mask = _mask(_shared_seed(5), 0, x.shape, 0.5)
    assert y.sbp == (B,)
    np.testing.assert_allclose(y.to_local().numpy(), x * mask * 2, rtol=1e-6)  # the same on every rank
    flow.manual_seed(5)
    z = F.dropout(flow.tensor(x, placement=p, sbp=B).to_global(sbp=P), p=0.5)
    assert z.sbp == (P,)  # linear in its input: the partial value keeps its layout, with a broadcast mask
    np.testing.assert_allclose(z.numpy(), x * mask * 2, rtol=1e-6)


@case
def dropout_on_a_2d_placement_draws_per_split_piece():
    if flow.env.get_world_size() != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    x = np.ones((4, 6), np.float32)
    flow.manual_seed(2)
    y = F.dropout(flow.tensor(x, placement=p, sbp=(S(0), B)), p=0.5)  # pieces along the first dimension only
    seed = _shared_seed(2)
    i, _ = p.coord(_rank())
    np.testing.assert_allclose(y.to_local().numpy(), _mask(seed, i, (2, 6), 0.5) * 2.0)


@case
def hierarchical_parallel_cast_boxes_to_its_attr():
    from oneflow_lite.framework.calls import F as calls
    p = flow.placement.all("cpu")
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    g = flow.tensor(x, placement=p, sbp=S(0)).requires_grad_()
    y = calls.ops.hierarchical_parallel_cast(g, nd_sbp=("S(1)",))
    assert y.sbp == (S(1),)
    np.testing.assert_array_equal(y.to_local().numpy(), _piece(x, 1))
    c = rng.standard_normal((4, 3)).astype(np.float32)
    (y * flow.tensor(c, placement=p, sbp=B)).sum().backward()
    assert g.grad.sbp == (S(0),)
    np.testing.assert_allclose(g.grad.numpy(), c, rtol=1e-6)
    m = calls.ops.hierarchical_parallel_cast(g.detach().amax(0), nd_sbp=("B",))  # from P(max)
    np.testing.assert_array_equal(m.to_local().numpy(), x.max(0))
    local = calls.ops.hierarchical_parallel_cast(flow.tensor(x), nd_sbp=("B",))  # a copy on local tensors
    assert not local.is_global and np.array_equal(local.numpy(), x)


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", case.names())
def test_mpi(name, n):
    check_case(__file__, n, name)


if __name__ == "__main__":
    case.main()
