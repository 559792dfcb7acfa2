"""Creation calls with ``placement=`` / ``sbp=`` inside an nn.Graph's build() are source ops of the job laid out
over their placement and SBP (Note [Global source ops in a graph]): each graph's result equals the eager
global result and NumPy, on the first run and on repeated runs, random ones drawing fresh values at every run
as the eager calls would after the same ``flow.manual_seed``."""

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


class _Call(nn.Graph):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, *args):
        return self.fn(*args)


def _all():
    return flow.placement.all("cpu")


def _creators(p):
    """name -> (creation call, its logical value in NumPy)."""
    n = flow.env.get_world_size()
    eager_value = flow.tensor([1, 5, 2])  # an eager tensor captured from outside the build
    return {
        "ones_s0": (lambda: flow.ones(2 * n, 3, placement=p, sbp=S(0)), np.ones((2 * n, 3), np.float32)),
        "zeros_b": (lambda: flow.zeros(3, placement=p, sbp=B), np.zeros(3, np.float32)),
        "full_p": (lambda: flow.full((n, 2), 2.5, placement=p, sbp=P), np.full((n, 2), 2.5, np.float32)),
        "arange_s0": (lambda: flow.arange(3 * n, placement=p, sbp=S(0)), np.arange(3 * n)),
        "eye_s1": (lambda: flow.eye(n, 2 * n, placement=p, sbp=S(1)), np.eye(n, 2 * n, dtype=np.float32)),
        "linspace_b": (lambda: flow.linspace(0, 1, 5, placement=p, sbp=B),
                       np.linspace(0, 1, 5).astype(np.float32)),
        "tensor_s0": (lambda: flow.tensor(np.arange(2.0 * n), placement=p, sbp=S(0)),
                      np.arange(2.0 * n).astype(np.float32)),
        "tensor_dtype_s0": (lambda: flow.tensor(list(range(n)), dtype=flow.float64, placement=p, sbp=S(0)),
                            np.arange(n, dtype=np.float64)),
        "tensor_of_eager_b": (lambda: flow.tensor(eager_value, placement=p, sbp=B), np.array([1, 5, 2])),
        "logspace_b": (lambda: flow.logspace(0, 2, 3, placement=p, sbp=B), np.array([1.0, 10.0, 100.0], np.float32)),
    }


@case
def constant_creation_in_build_equals_eager_and_numpy():
    p = _all()
    for name, (make, ref) in _creators(p).items():
        graph = _Call(make)
        eager = make()
        for _ in range(2):  # the first run and a repeated one
            got = graph()
            assert got.is_global and got.placement == p and got.sbp == eager.sbp, name
            np.testing.assert_array_equal(got.to_local().numpy(), eager.to_local().numpy(), err_msg=name)
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-6, err_msg=name)
        assert tuple(got.to_local().shape) == tuple(eager.to_local().shape), name


@case
def creation_in_build_combines_with_global_inputs():
    n = flow.env.get_world_size()
    p = _all()
    x = np.arange(2.0 * n * 3).reshape(2 * n, 3).astype(np.float32)
    graph = _Call(lambda t: t * flow.arange(3, placement=p, sbp=B).float() + flow.ones(2 * n, 3, placement=p,
                                                                                      sbp=S(0)))
    for _ in range(2):
        got = graph(flow.tensor(x, placement=p, sbp=S(0)))
        np.testing.assert_allclose(got.numpy(), x * np.arange(3) + 1, rtol=1e-6)


def _random_creators(p):
    n = flow.env.get_world_size()
    return {
        "randn_s1": lambda: flow.randn(3, 2 * n, placement=p, sbp=S(1)),
        "rand_b": lambda: flow.rand(2 * n, placement=p, sbp=B),
        "randint_s0": lambda: flow.randint(0, 100, (4 * n,), placement=p, sbp=S(0)),
        "normal_s0": lambda: flow.normal(1.0, 2.0, (2 * n, 2), placement=p, sbp=S(0)),
        "randperm_s0": lambda: flow.randperm(4 * n, placement=p, sbp=S(0)),
        "randint_high_b": lambda: flow.randint(50, (3 * n,), placement=p, sbp=B),
    }


@case
def random_creation_in_build_draws_as_eager_at_every_run():
    """After ``manual_seed(s)``, the k-th run of the graph gives the k-th eager call's value (each run draws one
    seed from the default generator, the placement's first rank's broadcast), and runs differ."""
    p = _all()
    for name, make in _random_creators(p).items():
        flow.manual_seed(7)
        eager = [make() for _ in range(3)]
        graph = _Call(make)
        flow.manual_seed(7)
        runs = [graph() for _ in range(3)]
        for e, g in zip(eager, runs):
            assert g.sbp == e.sbp, name
            np.testing.assert_array_equal(g.to_local().numpy(), e.to_local().numpy(), err_msg=name)
            np.testing.assert_array_equal(g.numpy(), e.numpy(), err_msg=name)
        assert not np.array_equal(runs[0].numpy(), runs[1].numpy()), name


@case
def like_creation_of_a_lazy_global_tensor_in_build_has_the_eager_value():
    """``zeros_like`` / ``randn_like`` of a tensor of the build: the logical value of the eager call (and its
    layout: like_creation_in_build_keeps_the_placement_and_sbp_of_its_input)."""
    n = flow.env.get_world_size()
    p = _all()
    for make in (lambda: flow.zeros_like(flow.ones(n, placement=p, sbp=S(0))) + 1,
                 lambda: flow.randn_like(flow.ones(2 * n, placement=p, sbp=S(0)))):
        graph = _Call(make)
        flow.manual_seed(3)
        eager = [make().numpy() for _ in range(2)]
        flow.manual_seed(3)
        for e in eager:
            np.testing.assert_array_equal(graph().numpy(), e)
    np.testing.assert_array_equal(_Call(lambda: flow.zeros_like(flow.ones(n, placement=p, sbp=S(0))))().numpy(),
                                  np.zeros(n, np.float32))


def _like_calls():
    return {"zeros_like": lambda t: flow.zeros_like(t), "ones_like": lambda t: flow.ones_like(t),
            "full_like": lambda t: flow.full_like(t, 2.5), "empty_like": lambda t: flow.empty_like(t),
            "randn_like": lambda t: flow.randn_like(t), "rand_like": lambda t: flow.rand_like(t),
            "randint_like": lambda t: flow.randint_like(t, 10)}


@case
def like_creation_in_build_keeps_the_placement_and_sbp_of_its_input():
    """Note [The layout of a *_like tensor in a graph]: a *_like of a tensor of the build is laid out as the plan
    lays that tensor (split, broadcast or partial), as the eager call on the global tensor is; its pieces, its
    logical value and (for random ones) the draws at every run are the eager ones."""
    n = flow.env.get_world_size()
    p = _all()
    constant = {"zeros_like": 0.0, "ones_like": 1.0, "full_like": 2.5, "empty_like": 0.0}
    for name, like in _like_calls().items():
        for sbp in (S(0), S(1), B, P):
            def make(sbp=sbp, like=like):
                return like(flow.ones(2 * n, 3 * n, placement=p, sbp=sbp) * 2)
            flow.manual_seed(3)
            eager = [make() for _ in range(2)]
            graph = _Call(make)
            flow.manual_seed(3)
            for e in eager:
                got = graph()
                assert got.placement == p and got.sbp == (sbp,) == e.sbp, (name, sbp, got.sbp)
                np.testing.assert_array_equal(got.to_local().numpy(), e.to_local().numpy(), err_msg=name)
                value = got.numpy()
                if name in constant:
                    np.testing.assert_array_equal(value, np.full((2 * n, 3 * n), constant[name], np.float32))
    x = np.arange(2.0 * n * 3).reshape(2 * n, 3).astype(np.float32)
    graph = _Call(lambda t: flow.ones_like(t * 2) + t)  # a tensor computed from a global input
    got = graph(flow.tensor(x, placement=p, sbp=S(0)))
    assert got.sbp == (S(0),)
    np.testing.assert_array_equal(got.numpy(), x + 1)
    sbps = list(graph.job.job_parallel_view_conf.op_name2nd_sbp_signature_conf.items())
    (ones,) = [v for k, v in sbps if "constant" in k]  # the source op is recorded split, as its input
    assert all(nd.sbp_parallel[0].split_parallel.axis == 0 and nd.sbp_parallel[0].HasField("split_parallel")
               for nd in ones.bn_in_op2nd_sbp.values())


@case
def a_generator_passed_in_build_is_drawn_from_at_every_run():
    """Note [Generators in a graph]: ``generator=g`` on a global random creation call in build: after
    ``g.manual_seed(s)`` the k-th run gives the k-th eager call's value (its shared seed drawn from ``g``), the
    default generator untouched."""
    n = flow.env.get_world_size()
    p = _all()
    g = flow.Generator()
    for sbp in (S(1), B):
        def make(sbp=sbp):
            return flow.randn(3, 2 * n, placement=p, sbp=sbp, generator=g) + flow.rand(
                2 * n, placement=p, sbp=B, generator=g)
        g.manual_seed(9)
        eager = [make() for _ in range(3)]
        flow.manual_seed(4)
        default_next = flow.randn(2).numpy()
        graph = _Call(make)
        g.manual_seed(9)
        flow.manual_seed(4)
        for e in eager:
            got = graph()
            assert got.sbp == e.sbp == (sbp,)
            np.testing.assert_array_equal(got.to_local().numpy(), e.to_local().numpy())
            np.testing.assert_array_equal(got.numpy(), e.numpy())
        np.testing.assert_array_equal(flow.randn(2).numpy(), default_next)
        assert not np.array_equal(eager[0].numpy(), eager[1].numpy())


@case
def a_creation_sbp_that_does_not_fit_raises_while_capturing():
    graph = _Call(lambda: flow.ones(3, 2, placement=_all(), sbp=S(2)))
    with pytest.raises(Exception) as info:
        graph()
    assert "sbp" in str(info.value), str(info.value)
    lazy_data = _Call(lambda: flow.tensor(flow.arange(3), placement=_all(), sbp=B))  # a lazy tensor: no value yet
    with pytest.raises(TypeError, match=r"tensor\(\): data is a lazy tensor .*to_global"):
        lazy_data()


@case
def two_dimensional_placement_creation_in_build():
    n = flow.env.get_world_size()
    if n != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])

    def make():
        return flow.ones(4, 6, placement=p, sbp=(S(0), S(1))) * flow.arange(6, placement=p, sbp=(B, S(0)))

    eager = make()
    got = _Call(make)()
    assert got.sbp == eager.sbp
    np.testing.assert_array_equal(got.to_local().numpy(), eager.to_local().numpy())
    np.testing.assert_array_equal(got.numpy(), np.ones((4, 6)) * np.arange(6))


@case
def creation_on_a_subset_placement_in_build():
    """The issue's example: ``flow.ones(3, placement=q, sbp=B)`` on the first half of the ranks."""
    n = flow.env.get_world_size()
    q = flow.placement("cpu", ranks=list(range(n // 2)))
    graph = _Call(lambda: flow.ones(3, placement=q, sbp=B) * 2 + flow.arange(3, placement=q, sbp=B))
    for _ in range(2):
        got = graph()
        assert got.placement == q and got.sbp == (B,)
        if flow.env.get_rank() < n // 2:
            np.testing.assert_array_equal(got.to_local().numpy(), np.array([2.0, 3.0, 4.0], np.float32))


@case
def the_job_records_the_source_ops_placement_and_sbp():
    n = flow.env.get_world_size()
    p = _all()
    graph = _Call(lambda: flow.ones(2 * n, placement=p, sbp=S(0)) * 3)
    graph()
    view = graph.job.job_parallel_view_conf.op_name2nd_sbp_signature_conf
    (src,) = [c.name for c in graph.job.net.op if c.WhichOneof("op_type") == "user_conf" and
              c.user_conf.op_type_name == "constant"]
    (nd,) = view[src].bn_in_op2nd_sbp.values()
    assert nd.sbp_parallel[0].split_parallel.axis == 0 and nd.sbp_parallel[0].HasField("split_parallel")


@case
def a_saved_graph_keeps_its_source_ops_layout():
    n = flow.env.get_world_size()
    p = _all()
    graph = _Call(lambda: flow.arange(2 * n, placement=p, sbp=S(0)) * 2 + flow.full((2 * n,), 1, placement=p, sbp=P))
    want = graph()
    d = world().all.broadcast_object(tempfile.mkdtemp() if world().rank == 0 else None)
    path = os.path.join(d, "creation.ofg")
    graph.save(path)
    world().all.barrier()
    got = nn.Graph.load(path)()
    assert got.sbp == want.sbp
    np.testing.assert_array_equal(got.to_local().numpy(), want.to_local().numpy())
    np.testing.assert_array_equal(got.numpy(), np.arange(2 * n) * 2 + 1)


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", case.names())
def test_mpi(name, n):
    check_case(__file__, n, name)


if __name__ == "__main__":
    case.main()
