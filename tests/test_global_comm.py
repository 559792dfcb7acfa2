"""flow.placement, flow.sbp, flow.env and the flow.comm collectives on local tensors: in one process, and in
MPI jobs of 2 and 4 processes (tests/mpi_cases.py) checked against NumPy formulas of every rank's data."""

import numpy as np
import pytest
from mpi_cases import Cases, check_case

import oneflow_lite as flow

case = Cases()


def _data(rank, shape=(3, 4), dtype=np.float32):
    """Rank ``rank``'s data: known on every rank, so each can compute the expected result."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float64).reshape(shape) * (rank + 1) + rank).astype(dtype)


# ---- one process -----------------------------------------------------------------------------------
def test_placement_objects():
    p = flow.placement("cpu", ranks=[0])
    assert p is flow.placement(type="cpu", ranks=[0]) and p == flow.placement.all("cpu")
    assert p.ranks == [0] and p.hierarchy == (1,) and p.type == "cpu"
    assert repr(p) == 'oneflow_lite.placement(type="cpu", ranks=[0])'
    assert flow.placement("cpu", [[0]]).hierarchy == (1, 1)
    assert flow.env.all_device_placement("cpu") is p


@pytest.mark.parametrize("ranks, match", [
    ([0, 1], "rank 1 is not a rank of this job of 1 process"),
    ([0, 0], "name a rank more than once"),
    ([], "non-empty list of ints"),
    ([[0, 1], [2]], "non-empty list of ints"),
])
def test_placement_errors(ranks, match):
    with pytest.raises(ValueError, match=match):
        flow.placement("cpu", ranks=ranks)


def test_placement_needs_a_device_with_data():
    with pytest.raises(ValueError, match="'meta' holds no data"):
        flow.placement("meta", ranks=[0])


def test_sbp_objects():
    assert flow.sbp.split(0) is flow.sbp.split(0) and flow.sbp.split(1) is not flow.sbp.split(0)
    assert repr(flow.sbp.split(1)) == "oneflow_lite.sbp.split(dim=1)"
    assert repr(flow.sbp.broadcast) == "oneflow_lite.sbp.broadcast" and flow.sbp.broadcast() is flow.sbp.broadcast
    assert repr(flow.sbp.partial_sum) == "oneflow_lite.sbp.partial_sum"
    assert flow.sbp.split(12).dim == 12
    with pytest.raises(ValueError, match="non-negative int"):
        flow.sbp.split(-1)


def test_balanced_split_follows_oneflow():
    from oneflow_lite.framework import sbp as S
    assert S.part_sizes(7, 3) == [3, 2, 2] and [S.part(7, 3, i) for i in range(3)] == [(0, 3), (3, 2), (5, 2)]
    assert S.local_shape((7, 5), (S.split(0), S.split(1)), (2, 2), (1, 0)) == (3, 3)
    assert S.local_slices((7, 5), (S.split(0), S.split(0)), (2, 2), (0, 1)) == (slice(2, 4), slice(0, 5))


def test_env_and_comm_in_a_world_of_one():
    assert flow.env.get_rank() == 0 and flow.env.get_world_size() == 1 and flow.env.get_local_rank() == 0
    t = flow.tensor([1.0, 2.0])
    flow.comm.all_reduce(t)
    flow.comm.broadcast(t, 0)
    out = [flow.zeros(2)]
    flow.comm.all_gather(out, t)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(out[0].numpy(), [1.0, 2.0])
    with pytest.raises(TypeError, match="argument 'tensor' must be a Tensor"):
        flow.comm.all_reduce([1.0])
    with pytest.raises(RuntimeError, match="no other rank"):
        flow.comm.send(t, 1)


def test_importing_the_package_does_not_import_mpi4py():
    import subprocess
    import sys
    code = "import sys, oneflow_lite as flow; flow.env.get_world_size(); print('mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- cases run by MPI jobs ------------------------------------------------------------------------
def _world():
    return flow.env.get_rank(), flow.env.get_world_size()


@case
def env_ranks():
    r, n = _world()
    assert n in (2, 4) and 0 <= r < n
    assert flow.placement.all("cpu").ranks == list(range(n))


@case
def all_reduce_sum_max_and_dtypes():
    r, n = _world()
    for dtype in (np.float32, np.float64, np.int64, np.int32, np.float16):
        t = flow.tensor(_data(r, dtype=dtype))
        flow.comm.all_reduce(t)
        np.testing.assert_allclose(t.numpy(), sum(_data(k, dtype=dtype) for k in range(n)), rtol=1e-3)
        assert t.dtype == flow.tensor(_data(r, dtype=dtype)).dtype
    t = flow.tensor(_data(r))
    flow.comm.all_reduce(t, op="max")
    np.testing.assert_array_equal(t.numpy(), _data(n - 1))
    s = flow.tensor(float(r))
    flow.comm.all_reduce(s)
    assert s.item() == sum(range(n))


@case
def all_reduce_mismatch_raises_on_every_rank():
    r, n = _world()
    t = flow.zeros(2 + r)
    try:
        flow.comm.all_reduce(t)
    except RuntimeError as e:
        assert "flow.comm.all_reduce: the ranks passed tensors of different shapes" in str(e)
        assert "rank 0: [2] float32" in str(e) and "rank 1: [3] float32" in str(e)
    else:
        raise AssertionError("no error")


@case
def a_failed_collective_leaves_every_rank_as_it_was():
    """[reliability] state after failure: a collective refused on every rank (shapes differ across ranks)
    changes no rank's modes, dispatcher tables or tensors; the next collective, global op and capture work."""
    from test_state_after_failure import assert_unchanged, next_capture_works, snapshot

    r, n = _world()
    before = snapshot()
    t = flow.zeros(2 + r)
    try:
        flow.comm.all_reduce(t)
    except RuntimeError:
        pass
    else:
        raise AssertionError("no error")
    assert_unchanged(before, snapshot())
    np.testing.assert_array_equal(t.numpy(), np.zeros(2 + r))
    u = flow.tensor(_data(r))
    flow.comm.all_reduce(u)
    np.testing.assert_allclose(u.numpy(), sum(_data(k) for k in range(n)))
    g = flow.tensor(_data(r)).to_global(placement=flow.placement.all("cpu"), sbp=flow.sbp.split(0))
    total = g.sum().to_global(sbp=flow.sbp.broadcast).to_local()  # the sum of a split tensor is partial
    np.testing.assert_allclose(total.numpy(), sum(_data(k).sum() for k in range(n)), rtol=1e-5)
    next_capture_works()


@case
def broadcast_from_the_last_rank():
    r, n = _world()
    t = flow.tensor(_data(r))
    flow.comm.broadcast(t, n - 1)
    np.testing.assert_array_equal(t.numpy(), _data(n - 1))


@case
def all_gather_and_gather():
    r, n = _world()
    outs = [flow.zeros(3, 4) for _ in range(n)]
    flow.comm.all_gather(outs, flow.tensor(_data(r)))
    for k, o in enumerate(outs):
        np.testing.assert_array_equal(o.numpy(), _data(k))
    lst = [flow.zeros(3, 4) for _ in range(n)] if r == 0 else None
    flow.comm.gather(flow.tensor(_data(r)), lst, dst=0)
    if r == 0:
        for k, o in enumerate(lst):
            np.testing.assert_array_equal(o.numpy(), _data(k))


@case
def reduce_scatter_and_reduce():
    r, n = _world()
    out = flow.zeros(3, 4)
    flow.comm.reduce_scatter(out, [flow.tensor(_data(r) + 10 * j) for j in range(n)])
    np.testing.assert_allclose(out.numpy(), sum(_data(k) + 10 * r for k in range(n)))
    t = flow.tensor(_data(r))
    flow.comm.reduce(t, dst=1)
    np.testing.assert_allclose(t.numpy(), sum(_data(k) for k in range(n)) if r == 1 else _data(r))


@case
def all_to_all_and_scatter():
    r, n = _world()
    outs = [flow.zeros(2, j + 1) for j in range(n)]
    flow.comm.all_to_all(outs, [flow.full((2, r + 1), float(10 * r + j)) for j in range(n)])
    for j, o in enumerate(outs):
        np.testing.assert_array_equal(o.numpy(), np.full((2, j + 1), 10 * j + r, np.float32))
    t = flow.zeros(3)
    flow.comm.scatter(t, [flow.full((3,), float(k)) for k in range(n)] if r == 0 else None, src=0)
    np.testing.assert_array_equal(t.numpy(), [r, r, r])


@case
def send_and_recv():
    r, n = _world()
    if r == 0:
        flow.comm.send(flow.tensor(_data(0, (2, 5))), 1)
        flow.comm.send(flow.tensor([7, 8], dtype=flow.int32), 1, send_meta=False)
    elif r == 1:
        got = flow.comm.recv(0)
        np.testing.assert_array_equal(got.numpy(), _data(0, (2, 5)))
        out = flow.zeros(2, dtype=flow.int32)
        flow.comm.recv(0, out=out)
        np.testing.assert_array_equal(out.numpy(), [7, 8])
    flow.comm.barrier()


@case
def comm_rejects_global_tensors():
    p = flow.placement.all("cpu")
    g = flow.zeros(4, placement=p, sbp=flow.sbp.split(0))
    try:
        flow.comm.all_reduce(g)
    except TypeError as e:
        assert "global tensor" in str(e)
    else:
        raise AssertionError("no error")


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", case.names())
def test_mpi(name, n):
    check_case(__file__, n, name)


if __name__ == "__main__":
    case.main()
