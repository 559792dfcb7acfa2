"""Global tensors across MPI processes: to_global from local pieces, to_local, printing, creation with
placement / sbp, boxing between every pair of SBPs (1-D and 2-D placements) and between placements, and the
errors. Pieces are checked against np.array_split (the same balanced rule as OneFlow's) of a known logical
value; partial sums by summing every rank's piece."""

import itertools

import numpy as np
import pytest
from mpi_cases import Cases, check_case

import oneflow_lite as flow

case = Cases()
B, P, S = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split
X = np.arange(5 * 6, dtype=np.float32).reshape(5, 6) - 7.0  # 5 rows: uneven on 2 and 4 ranks


def _world():
    return flow.env.get_rank(), flow.env.get_world_size()


def _expected_piece(x, nd_sbp, hierarchy, coord):
    """This rank's piece by np.array_split, one placement dimension after the other (None under a partial)."""
    piece = x
    for s, n, i in zip(nd_sbp, hierarchy, coord):
        if s is P:
            return None
        if s.kind == "S":
            piece = np.array_split(piece, n, axis=s.dim)[i]
    return piece


def _sum_of_pieces(t):
    """The sum of every rank's local piece (each rank must hold the logical shape)."""
    loc = t.to_local().numpy().copy()
    acc = flow.tensor(loc)
    flow.comm.all_reduce(acc)
    return acc.numpy()


def _check(t, x, nd_sbp, placement):
    r, _ = _world()
    assert t.is_global and t.sbp == tuple(nd_sbp) and t.placement is placement
    assert tuple(t.shape) == x.shape
    np.testing.assert_array_equal(t.numpy(), x)
    coord = placement.coord(r)
    want = _expected_piece(x, nd_sbp, placement.hierarchy, coord)
    if want is not None:
        np.testing.assert_array_equal(t.to_local().numpy(), want)
    elif len(nd_sbp) == 1:
        np.testing.assert_array_equal(_sum_of_pieces(t), x)


def _raises(exc, text, fn):
    try:
        fn()
    except exc as e:
        assert text in str(e), str(e)
    else:
        raise AssertionError(f"no {exc.__name__} raised")


@case
def local_pieces_make_a_global_tensor():
    r, n = _world()
    p = flow.placement.all("cpu")
    piece = np.array_split(X, n, axis=0)[r]
    g = flow.tensor(piece).to_global(placement=p, sbp=S(0))
    _check(g, X, (S(0),), p)
    assert g.to_local().numpy().base is not None or g.to_local().shape == piece.shape
    # broadcast: the first rank's data (OneFlow's rule)
    b = flow.tensor(X + r).to_global(placement=p, sbp=B)
    np.testing.assert_array_equal(b.to_local().numpy(), X)
    # partial sum: the logical value is the sum of the pieces
    ps = flow.tensor(X * (r + 1)).to_global(placement=p, sbp=P)
    np.testing.assert_array_equal(ps.numpy(), X * sum(range(1, n + 1)))


@case
def pieces_that_do_not_make_a_balanced_split_raise_on_every_rank():
    r, n = _world()
    p = flow.placement.all("cpu")
    bad = flow.zeros(2 + (r == n - 1), 3)  # the last rank holds one more row than the balanced split gives it
    _raises(RuntimeError, "do not make one logical tensor", lambda: bad.to_global(placement=p, sbp=S(0)))
    mixed = flow.zeros(2, 3, dtype=flow.float64 if r == 0 else flow.float32)
    _raises(RuntimeError, "do not make one logical tensor", lambda: mixed.to_global(placement=p, sbp=S(0)))


@case
def boxing_between_every_pair_of_sbps():
    p = flow.placement.all("cpu")
    for src, dst in itertools.product([S(0), S(1), B, P], repeat=2):
        g = flow.tensor(X, placement=p, sbp=src)
        _check(g, X, (src,), p)
        h = g.to_global(sbp=dst)
        _check(h, X, (dst,), p)
        assert (h is g) == (src is dst)


@case
def boxing_of_int_bool_and_0d_tensors():
    p = flow.placement.all("cpu")
    xi = np.arange(12).reshape(3, 4)
    g = flow.tensor(xi, placement=p, sbp=S(1))
    np.testing.assert_array_equal(g.to_global(sbp=P).to_global(sbp=S(0)).numpy(), xi)
    gb = flow.tensor(xi % 3 == 0, placement=p, sbp=S(0))
    np.testing.assert_array_equal(gb.to_global(sbp=B).numpy(), xi % 3 == 0)
    s = flow.tensor(3.5, placement=p, sbp=P)
    assert s.item() == 3.5 and s.to_global(sbp=B).item() == 3.5


@case
def boxing_on_a_2d_placement():
    r, n = _world()
    if n != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    assert p.hierarchy == (2, 2) and p.coord(3) == (1, 1)
    nd_sbps = [(S(0), S(1)), (B, S(0)), (S(0), S(0)), (S(1), B), (P, B), (B, P), (S(1), P), (B, B), (P, P)]
    for src, dst in itertools.product(nd_sbps, repeat=2):
        g = flow.tensor(X, placement=p, sbp=src)
        assert g.sbp == src
        np.testing.assert_array_equal(g.numpy(), X)
        h = g.to_global(sbp=dst)
        np.testing.assert_array_equal(h.numpy(), X)
        want = _expected_piece(X, dst, p.hierarchy, p.coord(r))
        if want is not None:
            np.testing.assert_array_equal(h.to_local().numpy(), want)


@case
def boxing_between_placements():
    r, n = _world()
    everyone = flow.placement.all("cpu")
    first = flow.placement("cpu", ranks=[0])
    rest = flow.placement("cpu", ranks=list(range(1, n)))
    g = flow.tensor(X, placement=everyone, sbp=S(0))
    h = g.to_global(placement=first, sbp=B)
    assert h.placement is first
    if r == 0:
        np.testing.assert_array_equal(h.to_local().numpy(), X)
    else:
        assert h.to_local is not None and h._array is None
    k = h.to_global(placement=rest, sbp=S(1))
    if r > 0:
        np.testing.assert_array_equal(k.to_local().numpy(), np.array_split(X, n - 1, axis=1)[r - 1])
    back = k.to_global(placement=everyone, sbp=P)
    np.testing.assert_array_equal(back.numpy(), X)


@case
def printing_shows_the_logical_value_placement_and_sbp():
    p = flow.placement.all("cpu")
    g = flow.tensor([[1.0, 2.0], [3.0, 4.0]], placement=p, sbp=S(0))
    text = repr(g)
    assert text.startswith("tensor([[1., 2.],\n        [3., 4.]], placement=oneflow_lite.placement(type=\"cpu\"")
    assert "sbp=(oneflow_lite.sbp.split(dim=0),)" in text and "dtype=oneflow_lite.float32" in text
    assert f"{flow.tensor(2.5, placement=p, sbp=P).sum():.2f}" == "2.50"


@case
def creation_with_placement_and_sbp():
    r, n = _world()
    p = flow.placement.all("cpu")
    z = flow.zeros(5, 3, placement=p, sbp=S(0))
    assert z.to_local().shape == np.array_split(np.zeros((5, 3)), n)[r].shape
    o = flow.ones(2, 3, placement=p, sbp=P)
    np.testing.assert_array_equal(o.numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(o.to_local().numpy(), np.ones((2, 3)) * (r == 0))
    f = flow.full((4,), 2.5, placement=p, sbp=B)
    np.testing.assert_array_equal(f.to_local().numpy(), [2.5] * 4)
    a = flow.arange(7, placement=p, sbp=S(0))
    np.testing.assert_array_equal(a.to_local().numpy(), np.array_split(np.arange(7), n)[r])
    # a random global tensor is the same logical tensor whatever the SBP
    flow.manual_seed(3)
    x1 = flow.randn(6, 4, placement=p, sbp=S(1)).numpy()
    flow.manual_seed(3)
    x2 = flow.randn(6, 4, placement=p, sbp=B).numpy()
    np.testing.assert_array_equal(x1, x2)
    ri = flow.randint(0, 10, (8,), placement=p, sbp=S(0))
    assert ri.dtype == flow.int64 and ri.numpy().min() >= 0
    zl = flow.zeros_like(z)
    assert zl.sbp == z.sbp and zl.placement is p
    w = flow.randn(3, placement=p, sbp=B, requires_grad=True)
    assert w.requires_grad and w.is_leaf


@case
def normal_and_the_like_functions_take_placement_and_sbp():
    r, n = _world()
    p = flow.placement.all("cpu")
    flow.manual_seed(r)  # different generators: the shared seed still makes one logical tensor
    g = flow.normal(2.0, 0.5, (400, 3), placement=p, sbp=S(0))
    assert g.sbp == (S(0),) and g.to_local().shape == np.array_split(np.zeros((400, 3)), n)[r].shape
    whole = g.to_global(sbp=B).to_local().numpy()
    assert abs(whole.mean() - 2.0) < 0.1 and abs(whole.std() - 0.5) < 0.06
    np.testing.assert_array_equal(g.to_local().numpy(), np.array_split(whole, n)[r])
    local = flow.ones(6, 2)
    for fn, args, want in ((flow.zeros_like, (), 0.0), (flow.ones_like, (), 1.0), (flow.empty_like, (), 0.0),
                           (flow.full_like, (4.5,), 4.5)):
        t = fn(local, *args, placement=p, sbp=S(0))  # a local input with both given: a global result
        assert t.is_global and t.sbp == (S(0),) and t.placement is p, fn
        np.testing.assert_array_equal(t.to_local().numpy(), np.full(np.array_split(np.zeros((6, 2)), n)[r].shape,
                                                                   want))
        kept = fn(t, *args)  # a global input keeps its layout
        assert kept.sbp == (S(0),) and kept.placement is p
        over = fn(t, *args, sbp=B)  # sbp given overrides it
        assert over.sbp == (B,) and over.to_local().shape == (6, 2)
        np.testing.assert_array_equal(over.numpy(), np.full((6, 2), want))
        _raises(ValueError, f"{fn.__name__}: a global result of a local input needs both placement= and sbp=",
                lambda fn=fn, args=args: fn(local, *args, placement=p))
        _raises(ValueError, "not both", lambda fn=fn, args=args, t=t: fn(t, *args, device="cpu", sbp=B))
    half = flow.placement("cpu", ranks=list(range(max(1, n // 2))))
    on_half = flow.zeros_like(flow.zeros(4, placement=p, sbp=S(0)), placement=half)
    assert on_half.placement is half and on_half.sbp == (S(0),)
    src = flow.zeros(8, 3, placement=p, sbp=S(0))
    for fn, args in ((flow.rand_like, ()), (flow.randn_like, ()), (flow.randint_like, (7,)),
                     (flow.randint_like, (2, 9))):
        kept = fn(src, *args)
        assert kept.sbp == (S(0),) and kept.placement is p and kept.to_local().shape == src.to_local().shape
        over = fn(src, *args, sbp=B)
        assert over.sbp == (B,) and tuple(over.to_local().shape) == (8, 3)
        made = fn(flow.zeros(8, 3), *args, placement=p, sbp=S(1))
        assert made.sbp == (S(1),) and made.to_local().shape == np.array_split(np.zeros((8, 3)), n, axis=1)[r].shape
        v = over.to_local().numpy()  # broadcast: the same on every rank
        pieces = [flow.zeros(8, 3) for _ in range(n)]
        flow.comm.all_gather(pieces, flow.tensor(v.astype(np.float32)))
        for q in pieces:
            np.testing.assert_array_equal(q.numpy(), v.astype(np.float32))
        if args:
            lo, hi = (0, args[0]) if len(args) == 1 else args
            assert over.dtype == flow.float32 and lo <= v.min() and v.max() < hi and (v == np.round(v)).all()
    ri = flow.randint(3, 6, (10,), placement=p, sbp=S(0))
    w = ri.to_global(sbp=B).to_local().numpy()
    assert ri.dtype == flow.int64 and w.min() >= 3 and w.max() < 6
    rr = flow.rand(5, 4, placement=p, sbp=S(1)).to_global(sbp=B).to_local().numpy()
    assert rr.shape == (5, 4) and rr.min() >= 0 and rr.max() < 1


@case
def to_global_grad_sbp_sets_the_sbp_of_the_gradient():
    r, n = _world()
    p = flow.placement.all("cpu")
    x = flow.tensor(np.arange(12.0, dtype=np.float32).reshape(6, 2), placement=p, sbp=S(0)).requires_grad_()
    c = np.random.default_rng(7).standard_normal((6, 2)).astype(np.float32)
    y = x.to_global(sbp=B, grad_sbp=B)  # the gradient of x comes back broadcast, not split(0)
    z = y * y
    (z * flow.tensor(c, placement=p, sbp=B)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.arange(12.0).reshape(6, 2) * c, rtol=1e-6)
    assert x.grad.sbp == (S(0),)  # accumulated into x's layout
    for grad_sbp, want in ((None, (S(0),)), (B, (B,)), (P, (P,))):  # flow.autograd.grad shows it as it comes
        g = flow.autograd.grad((x.to_global(sbp=B, grad_sbp=grad_sbp) * 3).sum(), x)[0]
        assert g.sbp == want, (grad_sbp, g.sbp)
        np.testing.assert_array_equal(g.numpy(), np.full((6, 2), 3.0))
    with pytest.raises(ValueError, match="to_global: grad_sbp: a placement of 1 dimension"):
        x.to_global(sbp=B, grad_sbp=(B, B))


@case
def eye_linspace_logspace_and_randperm_with_placement_and_sbp():
    r, n = _world()
    p = flow.placement.all("cpu")
    e = flow.eye(5, 3, placement=p, sbp=S(0))
    assert e.sbp == (S(0),) and tuple(e.shape) == (5, 3)
    np.testing.assert_array_equal(e.to_local().numpy(), np.array_split(np.eye(5, 3, dtype=np.float32), n)[r])
    li = flow.linspace(-1, 1, 9, placement=p, sbp=S(0))
    np.testing.assert_allclose(li.to_local().numpy(), np.array_split(np.linspace(-1, 1, 9), n)[r], rtol=1e-6)
    lo = flow.logspace(0, 3, 4, base=2.0, placement=p, sbp=B)
    np.testing.assert_allclose(lo.to_local().numpy(), [1.0, 2.0, 4.0, 8.0])
    flow.manual_seed(r)  # different generators: the shared seed still makes one permutation
    perm = flow.randperm(10, placement=p, sbp=S(0))
    assert perm.dtype == flow.int64 and sorted(perm.numpy().tolist()) == list(range(10))


@case
def random_ops_draw_the_same_broadcast_result_on_every_rank():
    r, n = _world()
    p = flow.placement.all("cpu")
    flow.manual_seed(r)  # different generators on each rank: the shared seed still makes one result
    probs = flow.full((6, 5), 0.5, placement=p, sbp=S(0))
    for out in (flow.bernoulli(probs), flow.nn.functional.dropout(probs, 0.5, training=True)):
        piece = out.to_global(sbp=B).to_local()
        pieces = [flow.zeros(6, 5) for _ in range(n)]
        flow.comm.all_gather(pieces, piece.contiguous())
        for q in pieces:
            np.testing.assert_array_equal(q.numpy(), pieces[0].numpy())


@case
def op_errors_name_the_op_and_both_placements():
    r, n = _world()
    p = flow.placement.all("cpu")
    q = flow.placement("cpu", ranks=[0])
    a = flow.ones(2, placement=p, sbp=B)
    b = flow.ones(2, placement=q, sbp=B)
    _raises(RuntimeError, "Expected all tensors to be on the same placement", lambda: a + b)
    _raises(RuntimeError, "Got input tensors with inconsistent attributes! op_type_name: broadcast_add",
            lambda: a + flow.ones(2))
    _raises(ValueError, "splits dim 2 of a tensor of 2 dim(s)", lambda: flow.zeros(2, 2).to_global(p, S(2)))
    _raises(ValueError, "needs 1 SBP(s), got 2", lambda: flow.zeros(2, 2).to_global(p, (S(0), B)))


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", case.names())
def test_mpi(name, n):
    check_case(__file__, n, name)


# ---- one process ---------------------------------------------------------------------------------------
def test_global_tensor_of_one_rank():
    p = flow.placement("cpu", ranks=[0])
    x = flow.tensor(X)
    g = x.to_global(placement=p, sbp=S(0))
    assert g.is_global and not g.is_local and x.is_local and g.sbp == (S(0),) and g.placement is p
    np.testing.assert_array_equal(g.to_local().numpy(), X)
    assert x.to_local() is x and g.to_global(placement=p, sbp=S(0)) is g
    with pytest.raises(RuntimeError, match="a local tensor has no placement"):
        x.placement
    with pytest.raises(RuntimeError, match="a local tensor has no SBP"):
        x.sbp
    with pytest.raises(ValueError, match="a local tensor needs a placement"):
        x.to_global(sbp=B)
    with pytest.raises(RuntimeError, match="expected a global tensor"):
        x.global_to_global(sbp=B)


def test_a_local_tensor_pays_nothing():
    """Local tensors never carry the Global key: their dispatch never reaches the global interpreter."""
    from oneflow_lite.dispatch.dispatch_key import DispatchKey
    x = flow.randn(3, requires_grad=True)
    y = (x * 2).relu()
    assert not (x.key_set | y.key_set) >> DispatchKey.Global & 1


if __name__ == "__main__":
    case.main()
