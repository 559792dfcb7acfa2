"""Training with global tensors equals single-process training: data parallel (global batch split(0),
parameters broadcast) with SGD + momentum and with Adam, DistributedDataParallel on local tensors, a
Megatron-style tensor-parallel MLP (first Linear's weight split(0), second's split(1)), and a 2-D hybrid
(data x tensor parallel) on 4 ranks. Each runs a few steps of the digits MLP on 2 and 4 ranks and compares
every step's loss and the final parameters with the same steps run on local tensors in every process."""

import numpy as np
import pytest
from mpi_cases import Cases, check_case, mpi_available, run_mpi

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.data.datasets import digits

case = Cases()
F = nn.functional
B, P, S = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split
GLOBAL_BATCH, STEPS = 64, 6


def _batches():
    ds = digits(train=True, flatten=True)
    x, y = ds.tensors[0].numpy(), ds.tensors[1].numpy()
    return [(x[i * GLOBAL_BATCH:(i + 1) * GLOBAL_BATCH], y[i * GLOBAL_BATCH:(i + 1) * GLOBAL_BATCH])
            for i in range(STEPS)]


def _mlp():
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def _optimizer(model, kind):
    if kind == "sgd":
        return flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    return flow.optim.Adam(model.parameters(), lr=0.01)


def _train(model, feed, kind="sgd", mean_over_ranks=False):
    """Run the steps; ``feed(x, y)`` makes the step's inputs. Returns the losses (with ``mean_over_ranks``,
    every rank's local loss averaged) and the final parameters."""
    opt = _optimizer(model, kind)
    losses = []
    for x, y in _batches():
        xi, yi = feed(x, y)
        opt.zero_grad()
        loss = F.cross_entropy(model(xi), yi)
        loss.backward()
        opt.step()
        if mean_over_ranks:
            loss = loss.detach().clone()
            flow.comm.all_reduce(loss)
            loss = loss / flow.env.get_world_size()
        losses.append(loss.item())
    return np.array(losses), [p.numpy().copy() for p in model.parameters()]


def _reference(kind="sgd"):
    return _train(_mlp(), lambda x, y: (flow.tensor(x), flow.tensor(y)), kind)


def _same(got, want, rtol=2e-4, atol=2e-5):
    np.testing.assert_allclose(got[0], want[0], rtol=rtol, atol=atol)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _shard(a):
    r, n = flow.env.get_rank(), flow.env.get_world_size()
    return np.array_split(a, n)[r]


def _data_parallel_feed(p):
    """Each rank loads its shard of the global batch; the shards make the global batch split(0)."""
    return lambda x, y: (flow.tensor(_shard(x)).to_global(p, S(0)), flow.tensor(_shard(y)).to_global(p, S(0)))


@case
def data_parallel_sgd_equals_single_process():
    p = flow.placement.all("cpu")
    model = _mlp().to_global(p, B)
    assert all(q.is_global and q.sbp == (B,) for q in model.parameters())
    got = _train(model, _data_parallel_feed(p))
    _same(got, _reference())
    assert all(q.grad.sbp == (B,) for q in model.parameters())


@case
def data_parallel_adam_equals_single_process():
    p = flow.placement.all("cpu")
    got = _train(_mlp().to_global(p, B), _data_parallel_feed(p), "adam")
    _same(got, _reference("adam"))


@case
def ddp_equals_single_process():
    model = nn.parallel.DistributedDataParallel(_mlp(), bucket_size=2000)
    got = _train(model, lambda x, y: (flow.tensor(_shard(x)), flow.tensor(_shard(y))), mean_over_ranks=True)
    _same(got, _reference())  # the shards are equal: the mean of the local means is the global mean


@case
def ddp_no_sync_accumulates_and_the_next_backward_averages_the_sum():
    (x1, y1), (x2, y2) = _batches()[:2]
    ddp = nn.parallel.DistributedDataParallel(_mlp())
    with ddp.no_sync():
        F.cross_entropy(ddp(flow.tensor(_shard(x1))), flow.tensor(_shard(y1))).backward()
    F.cross_entropy(ddp(flow.tensor(_shard(x2))), flow.tensor(_shard(y2))).backward()
    ref = _mlp()
    for x, y in ((x1, y1), (x2, y2)):
        F.cross_entropy(ref(flow.tensor(x)), flow.tensor(y)).backward()
    for p, q in zip(ddp.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)


class _TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.used, self.unused = nn.Linear(64, 8), nn.Linear(8, 10), nn.Linear(8, 10)

    def forward(self, x):
        return self.used(self.body(x).relu())


@case
def ddp_unused_parameters():
    x, y = _batches()[0]
    flow.manual_seed(0)
    ddp = nn.parallel.DistributedDataParallel(_TwoHeads(), find_unused_parameters=True)
    F.cross_entropy(ddp(flow.tensor(_shard(x))), flow.tensor(_shard(y))).backward()
    flow.manual_seed(0)
    ref = _TwoHeads()
    F.cross_entropy(ref(flow.tensor(x)), flow.tensor(y)).backward()
    np.testing.assert_allclose(ddp.module.body.weight.grad.numpy(), ref.body.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-6)
    assert ddp.module.unused.weight.grad is None
    strict = nn.parallel.DistributedDataParallel(_TwoHeads())
    F.cross_entropy(strict(flow.tensor(_shard(x))), flow.tensor(_shard(y))).backward()
    try:
        strict(flow.tensor(_shard(x)))
    except RuntimeError as e:
        assert "received no gradient in the last backward" in str(e) and "find_unused_parameters=True" in str(e)
    else:
        raise AssertionError("no error")


def _numpy_mlp_grads(params, x, y):
    """The gradients of the mean cross entropy of the 64-32-10 ReLU MLP, by hand in NumPy (float64)."""
    w1, b1, w2, b2 = (q.astype(np.float64) for q in params)
    h = x @ w1.T + b1
    a = np.maximum(h, 0)
    z = a @ w2.T + b2
    e = np.exp(z - z.max(1, keepdims=True))
    dz = e / e.sum(1, keepdims=True)
    dz[np.arange(len(y)), y] -= 1
    dz /= len(y)
    dh = (dz @ w2) * (h > 0)
    return [dh.T @ x, dh.sum(0), dz.T @ a, dz.sum(0)]


def _recording_collectives():
    """Patch the group collectives to record ('allreduce' | 'iallreduce', elements) calls; returns (calls, undo)."""
    from oneflow_lite.framework.world import Group
    calls, saved = [], {k: getattr(Group, k) for k in ("allreduce", "iallreduce")}

    def wrap(kind):
        def call(self, a, *args, **kwargs):
            calls.append((kind, a.size))
            return saved[kind](self, a, *args, **kwargs)
        return call
    for k in saved:
        setattr(Group, k, wrap(k))
    return calls, lambda: [setattr(Group, k, v) for k, v in saved.items()]


@case
def partial_gradients_are_all_reduced_in_buckets_at_the_end_of_backward():
    """Note [Bucketed all-reduce of partial gradients]: the weights' partial-sum gradients are not all-reduced
    one by one (no blocking all-reduce the size of a weight) but packed into non-blocking all-reduces, bucket
    by bucket (a small cap: several buckets), and ``.grad`` is broadcast and right when backward returns; a
    post-accumulate hook sees it; a second backward adds to it."""
    from oneflow_lite.autograd import grad_reduce
    p = flow.placement.all("cpu")
    n = flow.env.get_world_size()
    x, y = _batches()[0]
    model = _mlp().to_global(p, B)
    params = [q.to_local().numpy().copy() for q in model.parameters()]
    seen = {}
    for i, q in enumerate(model.parameters()):
        q.register_post_accumulate_grad_hook(lambda t, i=i: seen.setdefault(i, t.grad.to_local().numpy().copy()))
    xi, yi = _data_parallel_feed(p)(x, y)
    cap, grad_reduce.BUCKET_BYTES = grad_reduce.BUCKET_BYTES, 1000  # the second layer's, then the first's
    calls, undo = _recording_collectives()
    try:
        F.cross_entropy(model(xi), yi).backward()
    finally:
        undo()
        grad_reduce.BUCKET_BYTES = cap
    want = _numpy_mlp_grads(params, x, y)
    for q, w, i in zip(model.parameters(), want, range(4)):
        assert q.grad.sbp == (B,)
        np.testing.assert_allclose(q.grad.to_local().numpy(), w, rtol=1e-4, atol=1e-6)
        np.testing.assert_array_equal(seen[i], q.grad.to_local().numpy())
    if n > 1:
        sizes = sorted(size for kind, size in calls if kind == "iallreduce")
        assert sizes == [10 * 32 + 10, 32 * 64 + 32], calls  # a bucket per layer (backward's order)
        assert all(size <= 1 for kind, size in calls if kind == "allreduce"), calls  # only nll's total weight
    F.cross_entropy(model(xi), yi).backward()
    for q, w in zip(model.parameters(), want):
        np.testing.assert_allclose(q.grad.to_local().numpy(), 2 * w, rtol=1e-4, atol=1e-6)


@case
def a_bucket_buffer_is_reused_only_when_no_gradient_refers_to_it():
    """Note [Reused bucket buffers]: the next run's bucket takes the buffer of gradients set to None, never one a
    gradient still in use views."""
    p = flow.placement.all("cpu")
    x, y = _batches()[0]
    model = _mlp().to_global(p, B)
    xi, yi = _data_parallel_feed(p)(x, y)
    w = model[0].weight

    def base():  # the id of the buffer the gradient views (an id: a reference would keep the buffer in use)
        return id(w.grad.to_local().numpy().base)
    F.cross_entropy(model(xi), yi).backward()
    kept = w.grad.to_local().numpy()  # an array of the first run's gradient: its buffer stays in use
    first, before = base(), kept.copy()
    model.zero_grad()
    F.cross_entropy(model(xi * 2), yi).backward()
    second = base()
    assert second != first
    np.testing.assert_array_equal(kept, before)  # the new run did not write into the kept gradient
    del kept
    model.zero_grad()
    F.cross_entropy(model(xi), yi).backward()
    if flow.env.get_world_size() > 1:
        assert base() == first  # free again: reused
    np.testing.assert_array_equal(w.grad.to_local().numpy(), before)


@case
def a_failing_backward_drops_its_deferred_gradients_and_the_next_one_works():
    p = flow.placement.all("cpu")
    x, y = _batches()[0]
    model = _mlp().to_global(p, B)
    params = [q.to_local().numpy().copy() for q in model.parameters()]
    xi, yi = _data_parallel_feed(p)(x, y)
    hidden = model[0](xi)

    def fail(g):
        raise ValueError("stop here")
    hidden.register_hook(fail)  # raises on every rank after the second layer's gradients were deferred
    try:
        F.cross_entropy(model[2](model[1](hidden)), yi).backward()
    except ValueError as e:
        assert "stop here" in str(e)
    else:
        raise AssertionError("no error")
    assert all(q.grad is None for q in model.parameters())
    F.cross_entropy(model(xi), yi).backward()
    for q, w in zip(model.parameters(), _numpy_mlp_grads(params, x, y)):
        np.testing.assert_allclose(q.grad.to_local().numpy(), w, rtol=1e-4, atol=1e-6)


@case
def gradients_of_global_tensors_under_create_graph_and_grad_are_not_deferred():
    p = flow.placement.all("cpu")
    w = flow.tensor(np.array([1.0, 2.0, 3.0], np.float32), placement=p, sbp=B).requires_grad_()
    n = flow.env.get_world_size()
    x = flow.tensor(np.arange(6 * n, dtype=np.float32).reshape(2 * n, 3), placement=p, sbp=S(0))
    loss = (x * w * w).sum()
    (g,) = flow.autograd.grad(loss, w, create_graph=True)
    want = 2 * np.arange(6 * n, dtype=np.float32).reshape(2 * n, 3).sum(0) * np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)
    g.sum().backward()  # double backward: grad of sum(2 w colsum(x)) = 2 colsum(x)
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.arange(6 * n, dtype=np.float32).reshape(2 * n, 3).sum(0),
                               rtol=1e-6)
    assert w.grad.sbp == (B,)


def _tensor_parallel_sbp(t, axis_sbp=lambda s: (s,)):
    """Megatron: the first Linear's weight and bias split(0) (output features), the second's weight split(1)
    (input features) and its bias broadcast; expressed only through SBP."""
    shape = tuple(t.shape)
    if shape == (32, 64) or shape == (32,):
        return axis_sbp(S(0))
    if shape == (10, 32):
        return axis_sbp(S(1))
    return axis_sbp(B)


@case
def tensor_parallel_mlp_equals_single_process():
    p = flow.placement.all("cpu")
    model = _mlp().to_global(p, B).to_global(sbp=_tensor_parallel_sbp)  # broadcast first: a local tensor is a piece
    assert model[0].weight.sbp == (S(0),) and model[2].weight.sbp == (S(1),)
    feed = lambda x, y: (flow.tensor(x, placement=p, sbp=B), flow.tensor(y, placement=p, sbp=B))
    hidden = model[1](model[0](feed(*_batches()[0])[0]))
    assert hidden.sbp == (S(1),)  # column parallel: no communication in the first layer
    _same(_train(model, feed), _reference())
    assert model[0].weight.grad.sbp == (S(0),) and model[2].weight.grad.sbp == (S(1),)


@case
def hybrid_2d_data_and_tensor_parallel_equals_single_process():
    if flow.env.get_world_size() != 4:
        return
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])  # dim 0: data parallel, dim 1: tensor parallel
    model = _mlp().to_global(p, (B, B)).to_global(sbp=lambda t: _tensor_parallel_sbp(t, lambda s: (B, s)))
    assert model[0].weight.sbp == (B, S(0))
    feed = lambda x, y: (flow.tensor(x, placement=p, sbp=(S(0), B)),
                         flow.tensor(y, placement=p, sbp=(S(0), B)))
    _same(_train(model, feed), _reference())


class _TrainGraph(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


def _train_graph(model, feed):
    graph = _TrainGraph(model, _optimizer(model, "sgd"))
    losses = [graph(*feed(x, y)).item() for x, y in _batches()]
    return np.array(losses), [p.numpy().copy() for p in model.parameters()], graph


@case
def data_parallel_graph_equals_single_process():
    p = flow.placement.all("cpu")
    model = _mlp().to_global(p, B)
    *got, graph = _train_graph(model, _data_parallel_feed(p))
    _same(got, _reference())
    plan = graph._last.plan
    assert any("(S(1)), (S(0)) -> (P)" in s for s in plan.signatures.values())  # a weight's gradient
    assert plan.boxing_steps > 0 and model[0].weight.sbp == (B,)


@case
def tensor_parallel_graph_equals_single_process():
    p = flow.placement.all("cpu")
    model = _mlp().to_global(p, B).to_global(sbp=_tensor_parallel_sbp)
    feed = lambda x, y: (flow.tensor(x, placement=p, sbp=B), flow.tensor(y, placement=p, sbp=B))  # noqa: E731
    *got, _ = _train_graph(model, feed)
    _same(got, _reference())
    assert model[0].weight.sbp == (S(0),) and model[2].weight.sbp == (S(1),)


@case
def evaluation_on_global_tensors():
    p = flow.placement.all("cpu")
    model = _mlp()
    x, y = _batches()[0]
    want = (model(flow.tensor(x)).argmax(1) == flow.tensor(y)).sum().item()
    model.to_global(p, B)
    with flow.no_grad():
        got = (model(flow.tensor(x, placement=p, sbp=S(0))).argmax(1) == flow.tensor(y, placement=p, sbp=S(0)))
    assert got.sum().item() == want


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("name", case.names())
def test_mpi(name, n):
    check_case(__file__, n, name)


# ---- faults -------------------------------------------------------------------------------------------
FAILING = """
import oneflow_lite as flow
r = flow.env.get_rank()
t = flow.ones(4)
if r == 1:
    raise ValueError("rank one cannot go on")
flow.comm.all_reduce(t)  # the other ranks wait here for rank 1, which never comes
print("unreachable", flush=True)
"""


def test_an_exception_on_one_rank_aborts_the_job_with_its_message(tmp_path):
    if not mpi_available():
        pytest.skip("mpi4py / mpiexec not installed")
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    proc = run_mpi([str(script)], 2, timeout=120)
    assert proc.returncode != 0
    assert "[rank 1] ValueError: rank one cannot go on" in proc.stderr
    assert "unreachable" not in proc.stdout


def test_launch_runs_the_script_under_mpi(tmp_path):
    if not mpi_available():
        pytest.skip("mpi4py / mpiexec not installed")
    import os
    import re
    import subprocess
    import sys

    from mpi_cases import ROOT
    script = tmp_path / "hello.py"
    script.write_text("import oneflow_lite as flow\n"
                      "print(f'rank {flow.env.get_rank()} of {flow.env.get_world_size()}', flush=True)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc_per_node", "2",
                          str(script)], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert sorted(re.findall(r"rank (\d) of 2", out.stdout)) == ["0", "1"]  # (the ranks' lines may interleave)


if __name__ == "__main__":
    case.main()
