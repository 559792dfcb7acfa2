"""The job of an nn.Graph on global tensors records each op's placement and SBP signature (OneFlow's
``Job.placement`` and ``job_parallel_view_conf``), and print(graph) shows them, read back from the proto,
with the plan's boxing steps. The signatures are checked against the rules written out by hand (matmul's
(S(0), B) -> S(0), the column / row parallel linears, a reduction over the split dim giving P), and each
graph's result against NumPy."""

import numpy as np
import pytest
from mpi_cases import Cases, check_case

import oneflow_lite as flow
from oneflow_lite import nn

case = Cases()
F = nn.functional
B, P, S = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split


def _sbp_text(nd):
    out = []
    for s in nd.sbp_parallel:
        kind = s.WhichOneof("parallel_type")
        out.append(f"S({s.split_parallel.axis})" if kind == "split_parallel" else
                   {"broadcast_parallel": "B", "partial_sum_parallel": "P", "partial_max_parallel": "P(max)",
                    "partial_min_parallel": "P(min)"}[kind])
    return tuple(out)


def _view(job):
    """op name -> {blob name: nd-SBP as a tuple of strings}, and op name -> (ranks, hierarchy)."""
    view = {name: {bn: _sbp_text(nd) for bn, nd in sig.bn_in_op2nd_sbp.items()}
            for name, sig in job.job_parallel_view_conf.op_name2nd_sbp_signature_conf.items()}
    where = {name: (list(g.parallel_conf.ranks), list(g.parallel_conf.hierarchy.dim), g.parallel_conf.device_tag)
             for g in job.placement.placement_group for name in g.op_set.op_name}
    return view, where


def _op(job, op_type):
    return [c.name for c in job.net.op if c.WhichOneof("op_type") == "user_conf" and
            c.user_conf.op_type_name == op_type]


class _Call(nn.Graph):
    def __init__(self, fn, model=None):
        super().__init__()
        self.fn, self.model = fn, model

    def build(self, *args):
        return self.fn(self.model, *args)


def _mlp():
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 4))


@case
def data_parallel_job_records_every_ops_signature_and_placement():
    n = flow.env.get_world_size()
    p = flow.placement.all("cpu")
    ref = _mlp()
    model = _mlp().to_global(p, B)
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    graph = _Call(lambda m, t: m(t).sum(), model)
    out = graph(flow.tensor(x, placement=p, sbp=S(0)))
    np.testing.assert_allclose(out.numpy(), ref(flow.tensor(x)).sum().numpy(), rtol=1e-5)
    job = graph.job
    view, where = _view(job)
    assert set(view) == {c.name for c in job.net.op} == set(where)  # every op: a signature and a placement
    assert all(w == (list(range(n)), [n], "cpu") for w in where.values())
    first, second = _op(job, "linear")
    assert view[first] == {"x_0": ("S(0)",), "weight_0": ("B",), "bias_0": ("B",), "out_0": ("S(0)",)}
    assert view[second]["x_0"] == ("S(0)",) and view[second]["out_0"] == ("S(0)",)
    (relu,) = _op(job, "relu")
    assert view[relu] == {"x_0": ("S(0)",), "y_0": ("S(0)",)}
    (total,) = _op(job, "reduce_sum")
    assert view[total] == {"input_tensor_0": ("S(0)",), "output_tensor_0": ("P",)}
    assert view["model.0.weight"] == {"out": ("B",)}
    text = repr(graph)
    assert "parallel view (placement and SBP signature of each op):" in text
    assert f"{first}: x_0: (S(0)), weight_0: (B), bias_0: (B), out_0: (S(0)) on cpu ranks {list(range(n))}" in text


@case
def tensor_parallel_job_and_its_boxing_steps():
    p = flow.placement.all("cpu")
    sbps = {(6, 8): S(0), (6,): S(0), (4, 6): S(1)}
    model = _mlp().to_global(p, B).to_global(sbp=lambda t: sbps.get(tuple(t.shape), B))
    x = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)
    graph = _Call(lambda m, t: F.softmax(m(t), dim=0), model)
    got = graph(flow.tensor(x, placement=p, sbp=B))
    logits = _mlp()(flow.tensor(x)).numpy()
    e = np.exp(logits - logits.max(0))
    np.testing.assert_allclose(got.numpy(), e / e.sum(0), rtol=1e-5, atol=1e-6)
    view, _ = _view(graph.job)
    first, second = _op(graph.job, "linear")
    assert view[first] == {"x_0": ("B",), "weight_0": ("S(0)",), "bias_0": ("S(0)",), "out_0": ("S(1)",)}
    assert view[second] == {"x_0": ("S(1)",), "weight_0": ("S(1)",), "bias_0": ("P",), "out_0": ("P",)}
    (soft,) = _op(graph.job, "softmax")
    assert view[soft]["in_0"] != ("P",) and view[soft]["in_0"] != ("S(0)",)  # a softmax over dim 0 needs the dim
    text = repr(graph)
    assert f"box {second}/out_0 (P) -> " in text  # P must be boxed before the softmax
    job = graph.job  # the boxing is an explicit op of the job, read by the softmax
    (cast,) = [c for c in job.net.op if c.user_conf.op_type_name == "hierarchical_parallel_cast"
               and list(c.user_conf.input["in"].s) == [f"{second}/out_0"]]
    assert cast.name.startswith("System-Boxing-")
    soft_conf = next(c for c in job.net.op if c.name == soft)
    assert list(soft_conf.user_conf.input["in"].s) == [f"{cast.name}/out_0"]
    assert view[soft]["in_0"] == _view(job)[0][cast.name]["out_0"] and _view(job)[0][cast.name]["in_0"] == ("P",)
    names = [c.name for c in job.net.op]
    assert names.index(second) < names.index(cast.name) < names.index(soft)


@case
def a_min_over_the_split_dim_and_max_with_indices_keep_the_split_in_the_job():
    p = flow.placement.all("cpu")
    x = np.random.default_rng(5).integers(0, 3, (8, 3)).astype(np.float32)  # ties: the first index wins
    graph = _Call(lambda m, t: (t.amin(0), *t.max(0)))
    low, values, indices = graph(flow.tensor(x, placement=p, sbp=S(0)))
    np.testing.assert_array_equal(low.numpy(), x.min(0))
    np.testing.assert_array_equal(values.numpy(), x.max(0))
    np.testing.assert_array_equal(indices.numpy(), x.argmax(0))
    view, _ = _view(graph.job)
    (mn,) = _op(graph.job, "reduce_min")
    assert sorted(view[mn].values()) == [("P(min)",), ("S(0)",)]
    (mx,) = _op(graph.job, "reduce_max_dim")  # each rank reduces its piece: values and indices broadcast
    assert view[mx] == {"input_0": ("S(0)",), "values_0": ("B",), "indices_0": ("B",)}
    assert "(P(min))" in repr(graph)


@case
def a_max_over_the_split_dim_is_recorded_as_partial_max():
    p = flow.placement.all("cpu")
    x = np.random.default_rng(4).standard_normal((6, 3)).astype(np.float32)
    graph = _Call(lambda m, t: t.amax(0))
    got = graph(flow.tensor(x, placement=p, sbp=S(0)))
    np.testing.assert_array_equal(got.numpy(), x.max(0))
    (mx,) = _op(graph.job, "reduce_max")
    view, _ = _view(graph.job)
    assert sorted(view[mx].values()) == [("P(max)",), ("S(0)",)]
    assert "(P(max))" in repr(graph)


@case
def a_2d_placement_records_its_hierarchy():
    if flow.env.get_world_size() != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    a = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    b = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    graph = _Call(lambda m, x, y: flow.matmul(x, y))
    got = graph(flow.tensor(a, placement=p, sbp=(S(0), B)), flow.tensor(b, placement=p, sbp=(B, S(1))))
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-5)
    view, where = _view(graph.job)
    (mm,) = _op(graph.job, "matmul")
    assert view[mm] == {"a_0": ("S(0)", "B"), "b_0": ("B", "S(1)"), "out_0": ("S(0)", "S(1)")}
    assert where[mm] == ([0, 1, 2, 3], [2, 2], "cpu")
    assert "on cpu ranks [0, 1, 2, 3] as [2, 2]" in repr(graph)


class _Train(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.1))

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


@case
def a_saved_graph_on_global_tensors_loads_with_its_placements_and_sbps():
    import os
    import tempfile

    from oneflow_lite.framework.world import world
    p = flow.placement.all("cpu")
    sbps = {(6, 8): S(0), (6,): S(0), (4, 6): S(1)}
    model = _mlp().to_global(p, B).to_global(sbp=lambda t: sbps.get(tuple(t.shape), B))
    rng = np.random.default_rng(5)
    batches = [(rng.standard_normal((6, 8)).astype(np.float32), rng.integers(0, 4, 6)) for _ in range(3)]
    feed = [(flow.tensor(x, placement=p, sbp=S(0)), flow.tensor(y, placement=p, sbp=S(0))) for x, y in batches]
    graph = _Train(model)
    graph(*feed[0])
    d = world().all.broadcast_object(tempfile.mkdtemp() if world().rank == 0 else None)
    path = os.path.join(d, "train.ofg")
    graph.save(path)  # every rank: the values are gathered to rank 0, which writes
    world().all.barrier()
    want_w = model[0].weight.numpy().copy()
    with np.load(path) as archive:  # the file holds logical values
        saved = [archive[k] for k in archive.files if k.startswith("var")]
    assert any(a.shape == want_w.shape and np.array_equal(a, want_w) for a in saved)
    loaded = nn.Graph.load(path)
    weights = loaded.variables()
    assert weights["model.0.weight"].sbp == (S(0),) and weights["model.2.weight"].sbp == (S(1),)
    np.testing.assert_array_equal(weights["model.0.weight"].numpy(), want_w)
    ref = _mlp()  # the same steps on one process
    opt = flow.optim.SGD(ref.parameters(), lr=0.1)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(ref(flow.tensor(x)), flow.tensor(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    got = [loaded(*f).item() for f in feed[1:]]  # the loaded graph trains on from the saved values
    np.testing.assert_allclose(got, losses[1:], rtol=1e-5)
    assert "parallel view" in repr(loaded)
    casts = [c.name for c in graph.job.net.op if c.user_conf.op_type_name == "hierarchical_parallel_cast"]
    again = [c.name for c in loaded.job.net.op if c.user_conf.op_type_name == "hierarchical_parallel_cast"]
    assert casts and again == casts  # the saved boxing ops are the loaded job's, not inserted twice
    assert len({c.name for c in loaded.job.net.op}) == len(loaded.job.net.op)


class _Adds(nn.Module):
    def forward(self, x, y):
        return x + y


class _Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.add = _Adds()

    def forward(self, x, y):
        return self.add(x * 2, y)


class _Nested(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = _Outer()

    def build(self, x, y):
        return self.model(x, y)


def _error_of(fn):
    with pytest.raises(RuntimeError) as info:
        fn()
    return info.value


@case
def errors_on_global_tensors_name_the_graph_and_the_module():
    p = flow.placement.all("cpu")
    first = flow.placement("cpu", ranks=[0])
    x = flow.ones(4, 3, placement=p, sbp=S(0))
    graph = _Nested()  # the placements differ: found while planning the job's SBP signatures
    e = _error_of(lambda: graph(x, flow.ones(4, 3, placement=first, sbp=B)))
    assert "Expected all tensors to be on the same placement" in str(e)
    assert f"(in module 'model.add' (_Adds) of nn.Graph '{graph.name}')" in e.__notes__, e.__notes__
    assert any("while planning op 'model.add-broadcast_add-" in n for n in e.__notes__)
    other = _Nested()  # the shapes differ: found while capturing, as in a local graph
    e = _error_of(lambda: other(x, flow.ones(4, 5, placement=p, sbp=B)))
    assert f"(in module 'model.add' (_Adds) of nn.Graph '{other.name}')" in e.__notes__, e.__notes__
    third = _Nested()  # a correct call of the same graph class still works: 2 * 1 + 1
    got = third(x, flow.ones(4, 3, placement=p, sbp=B))
    np.testing.assert_array_equal(got.numpy(), np.full((4, 3), 3.0))


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", case.names())
def test_mpi(name, n):
    check_case(__file__, n, name)


def test_a_local_graphs_job_has_no_parallel_view():
    graph = _Call(lambda m, t: m(t).sum(), _mlp())
    graph(flow.ones(2, 8))
    job = graph.job
    assert not job.placement.placement_group and not job.job_parallel_view_conf.op_name2nd_sbp_signature_conf
    assert "parallel view" not in repr(graph)


if __name__ == "__main__":
    case.main()
