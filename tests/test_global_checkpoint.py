"""flow.save / flow.load of global tensors (OneFlow's global_dst_rank / global_src_rank) and the state dict of
a global model, on 2 and 4 ranks: the file holds the logical values (read back with plain NumPy), and loading
restores each tensor's placement and SBP, with every rank's piece checked against NumPy slicing."""

import os
import tempfile

import numpy as np
import pytest
from mpi_cases import Cases, check_case

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.framework.world import world

case = Cases()
B, P, S = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split


def _shared_path(name):
    """A path in a directory made by rank 0 and known to every rank."""
    d = world().all.broadcast_object(tempfile.mkdtemp() if world().rank == 0 else None)
    return os.path.join(d, name)


def _piece(a, dim):
    return np.array_split(a, flow.env.get_world_size(), axis=dim)[flow.env.get_rank()]


def _logical(x):
    return np.random.default_rng(1).standard_normal(x).astype(np.float32)


@case
def save_gathers_to_the_destination_rank_and_load_restores_placement_and_sbp():
    n, r = flow.env.get_world_size(), flow.env.get_rank()
    p = flow.placement.all("cpu")
    x, y = _logical((5, 3)), _logical((4, 6))
    obj = {"split": flow.tensor(x, placement=p, sbp=S(0)), "split1": flow.tensor(y, placement=p, sbp=S(1)),
           "partial": flow.tensor(y, placement=p, sbp=B).to_global(sbp=P), "local": flow.tensor(np.arange(3)),
           "param": nn.Parameter(flow.tensor(x, placement=p, sbp=B)), "array": np.arange(4.0), "k": 7,
           "scalar": np.float32(2.5)}
    path = _shared_path("g.pt")
    flow.save(obj, path, global_dst_rank=n - 1)
    world().all.barrier()
    assert os.path.exists(path)
    if r == n - 1:  # the file holds the logical values (plain NumPy reads the archive)
        with np.load(path) as archive:
            saved = [archive[k] for k in archive.files if not k.startswith("__")]
        assert any(a.shape == x.shape and np.array_equal(a, x) for a in saved)
        assert any(a.shape == y.shape and np.array_equal(a, y) for a in saved)
        plain = flow.load(path)  # without global_src_rank: local tensors of the logical values
        assert not plain["split"].is_global and np.array_equal(plain["split"].numpy(), x)
        assert np.array_equal(plain["partial"].numpy(), y)
    got = flow.load(path, global_src_rank=n - 1)
    assert got["split"].placement == p and got["split"].sbp == (S(0),)
    np.testing.assert_array_equal(got["split"].to_local().numpy(), _piece(x, 0))
    assert got["split1"].sbp == (S(1),)
    np.testing.assert_array_equal(got["split1"].to_local().numpy(), _piece(y, 1))
    assert got["partial"].sbp == (P,)
    np.testing.assert_array_equal(got["partial"].to_local().numpy(), y if r == 0 else np.zeros_like(y))
    np.testing.assert_array_equal(got["partial"].numpy(), y)
    assert isinstance(got["param"], nn.Parameter) and got["param"].requires_grad and got["param"].sbp == (B,)
    np.testing.assert_array_equal(got["param"].to_local().numpy(), x)
    local = got["local"]  # saved local: broadcast on the placement [global_src_rank] (OneFlow's rule)
    assert local.is_global and local.placement.ranks == [n - 1] and local.sbp == (B,)
    if r == n - 1:
        np.testing.assert_array_equal(local.to_local().numpy(), np.arange(3))
    np.testing.assert_array_equal(got["array"], np.arange(4.0))
    assert got["k"] == 7 and got["scalar"] == np.float32(2.5) and got["scalar"].dtype == np.float32
    again = flow.load(path, global_src_rank=n - 1, map_location=p)  # a placement: broadcast there
    assert again["split"].sbp == (B,) and again["local"].placement == p
    np.testing.assert_array_equal(again["split"].to_local().numpy(), x)
    back = again["split"].to_global(sbp=S(1))  # and to_global to any layout
    np.testing.assert_array_equal(back.to_local().numpy(), _piece(x, 1))


@case
def save_and_load_on_a_2d_placement():
    if flow.env.get_world_size() != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    x = _logical((6, 4))
    path = _shared_path("g2d.pt")
    flow.save(flow.tensor(x, placement=p, sbp=(S(0), S(1))), path, global_dst_rank=0)
    got = flow.load(path, global_src_rank=0)
    assert got.placement == p and got.sbp == (S(0), S(1))
    i, j = p.coord(flow.env.get_rank())
    np.testing.assert_array_equal(got.to_local().numpy(), np.array_split(np.array_split(x, 2, 0)[i], 2, 1)[j])


def _mlp(seed):
    flow.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 4))


def _tensor_parallel(model, p):
    sbps = {(6, 8): S(0), (6,): S(0), (4, 6): S(1)}
    return model.to_global(p, B).to_global(sbp=lambda t: sbps.get(tuple(t.shape), B))


@case
def state_dict_of_a_tensor_parallel_model_round_trips():
    p = flow.placement.all("cpu")
    want = {k: v.numpy().copy() for k, v in _mlp(0).state_dict().items()}  # the single-process values
    model = _tensor_parallel(_mlp(0), p)
    path = _shared_path("tp.pt")
    flow.save(model.state_dict(), path, global_dst_rank=0)
    if flow.env.get_rank() == 0:
        plain = flow.load(path)
        for k, v in want.items():
            np.testing.assert_array_equal(plain[k].numpy(), v)
    other = _tensor_parallel(_mlp(5), p)
    other.load_state_dict(flow.load(path, global_src_rank=0))
    assert other[0].weight.sbp == (S(0),) and other[2].weight.sbp == (S(1),) and other[2].bias.sbp == (B,)
    np.testing.assert_array_equal(other[0].weight.to_local().numpy(), _piece(want["0.weight"], 0))
    np.testing.assert_array_equal(other[2].weight.to_local().numpy(), _piece(want["2.weight"], 1))
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), want[k])
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(np.float32)
    out = other(flow.tensor(x, placement=p, sbp=B))
    np.testing.assert_allclose(out.numpy(), _mlp(0)(flow.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


@case
def a_single_process_checkpoint_loads_into_a_global_model():
    path = _shared_path("local.pt")
    if flow.env.get_rank() == 0:
        flow.save(_mlp(0).state_dict(), path)
    world().all.barrier()
    model = _tensor_parallel(_mlp(3), flow.placement.all("cpu"))
    model.load_state_dict(flow.load(path))  # every rank reads the logical values: each keeps its piece
    want = _mlp(0).state_dict()
    np.testing.assert_array_equal(model[0].bias.to_local().numpy(), _piece(want["0.bias"].numpy(), 0))
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), want[k].numpy())


@case
def errors_are_raised_on_every_rank():
    p = flow.placement.all("cpu")
    g = flow.tensor(_logical((4, 2)), placement=p, sbp=S(0))
    path = _shared_path("bad.pt")
    with pytest.raises(RuntimeError, match=r"flow.save: a global tensor of shape \[4, 2\] .* sbp \(S\(0\)\) needs "
                                           r"global_dst_rank=r"):
        flow.save({"g": g}, path)
    with pytest.raises(ValueError, match="flow.save: global_dst_rank must be a rank of this job"):
        flow.save(g, path, global_dst_rank=flow.env.get_world_size())
    with pytest.raises((RuntimeError, OSError), match="missing.pt"):  # only rank 0 reads; all raise
        flow.load(_shared_path("missing.pt"), global_src_rank=0)
    with pytest.raises(TypeError, match="with global_src_rank, map_location must be None or a flow.placement"):
        flow.load(path, global_src_rank=0, map_location="cpu")


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", case.names())
def test_mpi(name, n):
    check_case(__file__, n, name)


def test_global_save_and_load_in_a_world_of_one(tmp_path):
    p = flow.placement("cpu", ranks=[0])
    x = _logical((3, 4))
    flow.save({"g": flow.tensor(x, placement=p, sbp=S(1))}, tmp_path / "one.pt", global_dst_rank=0)
    got = flow.load(tmp_path / "one.pt", global_src_rank=0)["g"]
    assert got.placement == p and got.sbp == (S(1),)
    np.testing.assert_array_equal(got.to_local().numpy(), x)


if __name__ == "__main__":
    case.main()
