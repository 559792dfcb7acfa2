"""vmap: the batching interpreter at the Batched key (interpreters/batched.py, batch_rules.py) and
``flow.vmap`` / ``flow.func`` (func/).

Each batch rule is checked against the function run once per sample (plain ops, no batching), and
against the per-sample gradients of a loop; per-sample gradients of the digits MLP against a Python loop;
the API (in_dims / out_dims as ints, None, tuples and pytrees, chunk_size, randomness, nesting) against
NumPy; the errors name vmap and the argument. An op defined here, outside the package, shows the
per-sample fallback of an op without a batch rule, and a rule registered for it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.interpreters import batched as batched_interp
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.kernels.registration import cpu_kernel
from oneflow_lite.ops.common import same_dtype, same_shape

F = flow.nn.functional
nn = flow.nn
B = 3
BATCHED_BIT = 1 << DispatchKey.Batched


def r(*shape):
    return flow.randn(*shape)


def ints(high, shape):
    return flow.randint(0, high, shape)


def put(x, index, value):
    """``x`` with ``x[index] = value`` (on a copy)."""
    y = x.clone()
    y[index] = value
    return y


# name -> (fn, inputs, in_dims)
CASES = {
    "exp": (lambda x: flow.exp(x), [r(B, 4)], 0),
    "gelu": (lambda x: F.gelu(x), [r(B, 4, 2)], 0),
    "add broadcast unbatched": (lambda x, y: x + y, [r(B, 3), r(2, 3)], (0, None)),
    "mul both batched": (lambda x, y: x * y, [r(B, 2, 3), r(B, 3)], 0),
    "sub 0-d": (lambda x, y: x - y, [r(B), r(2, 3)], (0, None)),
    "where": (lambda c, x, y: flow.where(c > 0, x, y), [r(B, 3), r(3), r(B, 1)], (0, None, 0)),
    "masked_fill batched mask": (lambda x, m: x.masked_fill(m > 0, 2.0), [r(3, 4), r(B, 4)], (None, 0)),
    "scalar ops": (lambda x: (x * 3 + 1) / 2 - x ** 2, [r(B, 5)], 0),
    "clamp": (lambda x: flow.clamp(x, -0.5, 0.5), [r(B, 5)], 0),
    "sum": (lambda x: x.sum(), [r(B, 3, 4)], 0),
    "sum dim": (lambda x: x.sum(-1), [r(B, 3, 4)], 0),
    "mean keepdim": (lambda x: x.mean(0, keepdim=True), [r(B, 3, 4)], 0),
    "amax": (lambda x: flow.amax(x, dim=1), [r(B, 3, 4)], 0),
    "var": (lambda x: x.var(1), [r(B, 3, 4)], 0),
    "logsumexp": (lambda x: flow.logsumexp(x, 1), [r(B, 3, 4)], 0),
    "norm": (lambda x: flow.norm(x), [r(B, 3, 4)], 0),
    "prod": (lambda x: x.prod(1), [r(B, 3, 4)], 0),
    "max dim values": (lambda x: flow.max(x, 1)[0], [r(B, 3, 4)], 0),
    "max dim indices": (lambda x: flow.max(x, 1)[1], [r(B, 3, 4)], 0),
    "argmax": (lambda x: flow.argmax(x), [r(B, 3, 4)], 0),
    "argmax dim": (lambda x: flow.argmax(x, 1), [r(B, 3, 4)], 0),
    "cumsum": (lambda x: flow.cumsum(x, -1), [r(B, 3, 4)], 0),
    "sort": (lambda x: flow.sort(x, 0)[0], [r(B, 3, 4)], 0),
    "topk indices": (lambda x: flow.topk(x, 2)[1], [r(B, 3, 4)], 0),
    "softmax": (lambda x: F.softmax(x, 0), [r(B, 3, 4)], 0),
    "log_softmax": (lambda x: F.log_softmax(x, -1), [r(B, 3, 4)], 0),
    "reshape": (lambda x: x.reshape(2, -1), [r(B, 3, 4)], 0),
    "view": (lambda x: x.view(12), [r(B, 3, 4)], 0),
    "flatten": (lambda x: x.flatten(), [r(B, 3, 4)], 0),
    "transpose": (lambda x: x.transpose(0, 1), [r(B, 3, 4)], 0),
    "permute": (lambda x: x.permute(2, 0, 1), [r(B, 3, 4, 2)], 0),
    "t": (lambda x: x.t(), [r(B, 3, 4)], 0),
    "squeeze": (lambda x: x.squeeze(1), [r(B, 3, 1)], 0),
    "unsqueeze": (lambda x: x.unsqueeze(-1), [r(B, 3)], 0),
    "expand": (lambda x: x.expand(2, 3, 4), [r(B, 3, 1)], 0),
    "expand new dims": (lambda x: x.expand(5, 4), [r(B, 4)], 0),
    "repeat": (lambda x: x.repeat(2, 1, 2), [r(B, 3, 4)], 0),
    "slice": (lambda x: x[1:, ::2], [r(B, 3, 4)], 0),
    "select": (lambda x: x[1], [r(B, 3, 4)], 0),
    "select last": (lambda x: x[:, -1], [r(B, 3, 4)], 0),
    "cat": (lambda x, y: flow.cat([x, y], 1), [r(B, 3, 4), r(3, 2)], (0, None)),
    "stack": (lambda x, y: flow.stack([x, y], -1), [r(B, 3), r(3)], (0, None)),
    "split": (lambda x: flow.split(x, 2, 1)[1], [r(B, 3, 4)], 0),
    "unbind": (lambda x: flow.unbind(x, 1)[2], [r(B, 3, 4)], 0),
    "chunk": (lambda x: flow.chunk(x, 2, 0)[0], [r(B, 4, 4)], 0),
    "flip": (lambda x: flow.flip(x, [0, 1]), [r(B, 3, 4)], 0),
    "roll": (lambda x: flow.roll(x, 1, 1), [r(B, 3, 4)], 0),
    "roll flattened": (lambda x: flow.roll(x, 2), [r(B, 3, 4)], 0),
    "tril": (lambda x: flow.tril(x), [r(B, 3, 4)], 0),
    "pad": (lambda x: F.pad(x, (1, 2)), [r(B, 3, 4)], 0),
    "pad reflect": (lambda x: F.pad(x, (1, 1), mode="reflect"), [r(B, 3, 4)], 0),
    "narrow": (lambda x: flow.narrow(x, 1, 1, 2), [r(B, 3, 4)], 0),
    "tile": (lambda x: flow.tile(x, (2,)), [r(B, 3)], 0),
    "matmul": (lambda a, b: a @ b, [r(B, 3, 4), r(4, 5)], (0, None)),
    "matmul b batched": (lambda a, b: a @ b, [r(3, 4), r(B, 4, 5)], (None, 0)),
    "matmul both batched": (lambda a, b: a @ b, [r(B, 3, 4), r(B, 4, 5)], 0),
    "matmul vector-matrix": (lambda a, b: a @ b, [r(B, 4), r(4, 5)], (0, None)),
    "matmul matrix-vector": (lambda a, b: a @ b, [r(3, 4), r(B, 4)], (None, 0)),
    "matmul dot": (lambda a, b: a @ b, [r(B, 4), r(B, 4)], 0),
    "matmul broadcast batch": (lambda a, b: a @ b, [r(B, 3, 4), r(2, 4, 5)], (0, None)),
    "matmul broadcast batch b": (lambda a, b: a @ b, [r(2, 3, 4), r(B, 4, 5)], (None, 0)),
    "matmul vector-batch": (lambda a, b: a @ b, [r(B, 4), r(2, 4, 5)], (0, None)),
    "bmm": (lambda a, b: flow.bmm(a, b), [r(B, 2, 3, 4), r(2, 4, 5)], (0, None)),
    "outer": (lambda a, b: flow.outer(a, b), [r(B, 3), r(4)], (0, None)),
    "linear": (lambda x, w, b: F.linear(x, w, b), [r(B, 4), r(5, 4), r(5)], (0, None, None)),
    "linear batched weight": (lambda x, w, b: F.linear(x, w, b), [r(2, 4), r(B, 5, 4), r(B, 5)], (None, 0, 0)),
    "baddbmm": (lambda i, a, b: flow.baddbmm(i, a, b, beta=0.5, alpha=2.0), [r(B, 2, 3, 5), r(2, 3, 4), r(B, 2, 4, 5)],
                (0, None, 0)),
    "einsum": (lambda a, b: flow.einsum("ij,jk->ik", a, b), [r(B, 3, 4), r(4, 5)], (0, None)),
    "einsum both batched": (lambda a, b: flow.einsum("ij,ij->i", a, b), [r(B, 3, 4), r(B, 3, 4)], 0),
    "cross_entropy mean": (lambda x, y: F.cross_entropy(x, y), [r(B, 4, 5), ints(5, (B, 4))], 0),
    "cross_entropy none": (lambda x, y: F.cross_entropy(x, y, reduction="none"), [r(B, 4, 5), ints(5, (B, 4))], 0),
    "cross_entropy sum": (lambda x, y: F.cross_entropy(x, y, reduction="sum"), [r(B, 4, 5), ints(5, (B, 4))], 0),
    "cross_entropy 1-d": (lambda x, y: F.cross_entropy(x, y), [r(B, 5), ints(5, (B,))], 0),
    "cross_entropy weight ignore": (lambda x, y, w: F.cross_entropy(x, y, weight=w, ignore_index=1),
                                    [r(B, 4, 5), ints(5, (B, 4)), flow.rand(5)], (0, 0, None)),
    "cross_entropy smoothing": (lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1), [r(B, 4, 5), ints(5, (B, 4))],
                                0),
    "cross_entropy unbatched target": (lambda x, y: F.cross_entropy(x, y), [r(B, 4, 5), ints(5, (4,))], (0, None)),
    "cross_entropy probabilities": (lambda x, y: F.cross_entropy(x, y), [r(B, 4, 5), flow.rand(B, 4, 5)], 0),
    "nll_loss 2-d": (lambda x, y: F.nll_loss(x, y), [r(B, 2, 5, 3), ints(5, (B, 2, 3))], 0),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), [r(B, 4), r(4)], (0, None)),
    "bce with logits": (lambda x, y: F.binary_cross_entropy_with_logits(x, y), [r(B, 4), flow.rand(B, 4)], 0),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), [r(B, 3, 4), r(4), r(4)], (0, None, None)),
    "layer_norm 1-d": (lambda x: F.layer_norm(x, (4,)), [r(B, 4)], 0),
    "batch_norm eval": (lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
                        [r(B, 2, 3, 4), r(3), flow.rand(3) + 0.5, r(3), r(3)], (0, None, None, None, None)),
    "embedding": (lambda i, w: F.embedding(i, w), [ints(6, (B, 3)), r(6, 4)], (0, None)),
    "one_hot": (lambda i: F.one_hot(i, 6), [ints(6, (B, 3))], 0),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [r(B, 2, 3, 5, 5), r(4, 3, 3, 3), r(4)], (0, None, None)),
    "conv2d unbatched input": (lambda x, w: F.conv2d(x, w), [r(B, 3, 5, 5), r(4, 3, 3, 3)], (0, None)),
    "conv2d batched weight": (lambda x, w, b: F.conv2d(x, w, b, stride=2), [r(2, 3, 5, 5), r(B, 4, 3, 3, 3), r(B, 4)],
                              (None, 0, 0)),
    "conv1d groups": (lambda x, w: F.conv1d(x, w, groups=2), [r(B, 2, 4, 6), r(B, 6, 2, 3)], 0),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w), [r(B, 2, 3, 4, 4), r(3, 2, 3, 3)], (0, None)),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), [r(B, 2, 3, 4, 4)], 0),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), [r(B, 2, 3, 4, 4)], 0),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 1), [r(B, 2, 3, 4, 4)], 0),
    "interpolate": (lambda x: F.interpolate(x, scale_factor=2), [r(B, 2, 3, 4, 4)], 0),
    "scaled_dot_product_attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                                     [r(B, 2, 3, 4), r(B, 2, 3, 4), r(2, 3, 4)], (0, 0, None)),
    "index": (lambda x, i: x[i], [r(B, 5, 3), flow.tensor([0, 2, 2])], (0, None)),
    "index second dim": (lambda x, i: x[:, i], [r(B, 5, 3), flow.tensor([0, 2])], (0, None)),
    "index not adjacent": (lambda x, i: x[i, :, i], [r(B, 3, 4, 3), flow.tensor([0, 2])], (0, None)),
    "setitem": (lambda x, v: put(x, (slice(1, 3), 0), v), [r(B, 4, 3), r(B, 2)], 0),
    "setitem scalar": (lambda x: put(x, 1, 2.5), [r(B, 4, 3)], 0),
    "setitem index": (lambda x, v: put(x, flow.tensor([0, 2]), v), [r(B, 4, 3), r(3)], (0, None)),
    "setitem not adjacent": (lambda x, v: put(x, (flow.tensor([0, 2]), slice(None), flow.tensor([1, 0])), v),
                             [r(B, 3, 4, 2), r(B, 2, 4)], 0),
    "gather": (lambda x, i: flow.gather(x, 1, i), [r(B, 3, 4), ints(4, (B, 3, 2))], 0),
    "index_select": (lambda x, i: flow.index_select(x, 1, i), [r(B, 3, 4), flow.tensor([0, 3])], (0, None)),
    "cast": (lambda x: x.to(flow.float64), [r(B, 3)], 0),
    "nan_to_num": (lambda x: flow.nan_to_num(x), [r(B, 3)], 0),
    "lerp": (lambda a, b: flow.lerp(a, b, 0.3), [r(B, 3), r(3)], (0, None)),
    "addcmul": (lambda a, b, c: flow.addcmul(a, b, c, value=0.5), [r(3), r(B, 3), r(3)], (None, 0, None)),
    "in_dim 1": (lambda x: x.sum(0), [r(4, B, 3)], 1),
    "in_dim -1": (lambda x: x * 2, [r(4, 3, B)], -1),
}
# cases whose ops (forward, or backward for GRAD_LOOPS) run once per sample, by design
FORWARD_LOOPS = {}
GRAD_LOOPS = {"batch_norm eval": {"batch_norm_elemt_grad"}}  # its per-channel grads are sums over N


def _dims(in_dims, n):
    return in_dims if isinstance(in_dims, tuple) else (in_dims,) * n


def _sample(inputs, dims, i):
    return [t if d is None else flow.narrow(t, d, i, 1).squeeze(d) for t, d in zip(inputs, dims)]


def _loops_run(record) -> set:
    return {str(w.message).split("'")[1] for w in record if "runs once per sample" in str(w.message)}


def _size(inputs, dims):
    t, d = next((t, d) for t, d in zip(inputs, dims) if d is not None)
    return t.shape[d]


@pytest.mark.parametrize("name", sorted(CASES))
def test_batch_rule_equals_the_function_run_per_sample(name):
    fn, inputs, in_dims = CASES[name]
    dims = _dims(in_dims, len(inputs))
    batched_interp._warned.clear()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = flow.vmap(fn, in_dims=in_dims)(*inputs)
    assert _loops_run(record) == FORWARD_LOOPS.get(name, set())
    expected = np.stack([fn(*_sample(inputs, dims, i)).numpy() for i in range(_size(inputs, dims))])
    assert tuple(out.shape) == expected.shape and out.dtype.np_dtype == expected.dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def _differentiable(name):
    fn, inputs, in_dims = CASES[name]
    if not any(t.dtype.is_floating_point for t in inputs):
        return False
    out = fn(*_sample(inputs, _dims(in_dims, len(inputs)), 0))
    return out.dtype.is_floating_point and name != "cross_entropy weight ignore"


@pytest.mark.parametrize("name", sorted(n for n in CASES if _differentiable(n)))
def test_per_sample_gradients_equal_a_loop(name):
    fn, inputs, in_dims = CASES[name]
    dims = _dims(in_dims, len(inputs))
    argnums = tuple(i for i, t in enumerate(inputs) if t.dtype.is_floating_point)

    def loss(*args):
        out = fn(*args)
        return (out * out).sum()

    grad = flow.func.grad(loss, argnums=argnums)
    batched_interp._warned.clear()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = flow.vmap(grad, in_dims=in_dims)(*inputs)
    assert _loops_run(record) == GRAD_LOOPS.get(name, set())
    per_sample = [grad(*_sample(inputs, dims, i)) for i in range(_size(inputs, dims))]
    for k in range(len(argnums)):
        expected = np.stack([g[k].numpy() for g in per_sample])
        assert tuple(got[k].shape) == expected.shape
        np.testing.assert_allclose(got[k].numpy(), expected, rtol=1e-4, atol=1e-5)


def test_results_against_numpy():
    a, b = r(B, 3, 4), r(4, 5)
    np.testing.assert_allclose(flow.vmap(lambda x: x @ b)(a).numpy(), a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flow.vmap(lambda x: x.sum(0))(a).numpy(), a.numpy().sum(1), rtol=1e-5)
    x = r(4, B)
    np.testing.assert_allclose(flow.vmap(lambda v: F.softmax(v, 0), in_dims=1, out_dims=1)(x).numpy(),
                               np.exp(x.numpy()) / np.exp(x.numpy()).sum(0), rtol=1e-5)


# ---- per-sample gradients of the digits MLP ------------------------------------------------------------------
def test_per_sample_gradients_of_the_digits_mlp_equal_a_python_loop():
    from oneflow_lite.utils.data.datasets import digits

    data = digits(train=True, flatten=True)
    xs, ys = data.tensors[0][:32], data.tensors[1][:32]
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        return F.cross_entropy(flow.func.functional_call(model, p, (x[None],)), y[None])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no op runs once per sample
        grads = flow.vmap(flow.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
        inside = flow.vmap(lambda x, y: flow.autograd.grad(F.cross_entropy(model(x), y), list(model.parameters())))(
            xs, ys)
    for i in range(len(xs)):
        model.zero_grad()
        F.cross_entropy(model(xs[i:i + 1]), ys[i:i + 1]).backward()
        for k, (name, p) in enumerate(model.named_parameters()):
            assert np.abs(grads[name].numpy()[i] - p.grad.numpy()).max() < 1e-5, name
            assert np.abs(inside[k].numpy()[i] - p.grad.numpy()).max() < 1e-5, name


# ---- the API -------------------------------------------------------------------------------------------------
def test_in_dims_and_out_dims_as_pytrees():
    a, w = r(B, 5), r(5)
    out = flow.vmap(lambda d: d["x"] * d["w"], in_dims=({"x": 0, "w": None},))({"x": a, "w": w})
    np.testing.assert_allclose(out.numpy(), a.numpy() * w.numpy(), rtol=1e-6)
    pair = flow.vmap(lambda v: (v, v.sum()), out_dims=(1, 0))(a)
    assert pair[0].shape == (5, B) and pair[1].shape == (B,)
    nested = flow.vmap(lambda p: [p[0] + p[1][0]], in_dims=([0, (None,)],))([a, (w,)])
    assert isinstance(nested, list) and nested[0].shape == (B, 5)
    kw = flow.vmap(lambda v, scale=1.0: v * scale)(a, scale=2.0)
    np.testing.assert_allclose(kw.numpy(), a.numpy() * 2, rtol=1e-6)


def test_unbatched_outputs_are_expanded_and_out_dims_none_keeps_them():
    a = r(B, 5)
    out = flow.vmap(lambda v: flow.ones(2))(a)
    assert out.shape == (B, 2)
    const, mapped = flow.vmap(lambda v: (flow.ones(2), v), out_dims=(None, 0))(a)
    assert const.shape == (2,) and mapped.shape == (B, 5)


def test_nested_vmap_uses_levels():
    a, b = r(3, 5), r(4, 5)
    dots = flow.vmap(flow.vmap(lambda x, y: (x * y).sum(), in_dims=(None, 0)), in_dims=(0, None))(a, b)
    np.testing.assert_allclose(dots.numpy(), a.numpy() @ b.numpy().T, rtol=1e-5, atol=1e-6)
    x = r(2, 3, 4)
    sums = flow.vmap(flow.vmap(lambda v: v.sum()), in_dims=1)(x)
    np.testing.assert_allclose(sums.numpy(), x.numpy().sum(2).T, rtol=1e-5)
    m = r(2, 3, 4, 5)
    mats = flow.vmap(flow.vmap(lambda u, v: u @ v))(m, r(2, 3, 5, 6))
    assert mats.shape == (2, 3, 4, 6)
    assert tls.included() == 0 and batched_interp.active_levels() == []


def test_chunk_size_gives_the_same_result():
    a = r(7, 4)
    f = flow.vmap(lambda v: F.softmax(v, 0) * v.sum(), chunk_size=3)
    np.testing.assert_allclose(f(a).numpy(), flow.vmap(lambda v: F.softmax(v, 0) * v.sum())(a).numpy(), rtol=1e-6)


def test_randomness():
    ones = flow.ones(B, 1000)
    with pytest.raises(RuntimeError, match="vmap: called random operation 'normal' while in randomness error mode"):
        flow.vmap(lambda v: v + flow.randn(1000))(ones)
    with pytest.raises(RuntimeError, match="vmap: called random operation 'random_mask_like'"):
        flow.vmap(lambda v: F.dropout(v, 0.5))(ones)
    same = flow.vmap(lambda v: v * 0 + flow.randn(1000), randomness="same")(ones).numpy()
    assert (same == same[0]).all()
    different = flow.vmap(lambda v: v * 0 + flow.randn(1000), randomness="different")(ones).numpy()
    assert not (different == different[0]).all(axis=1)[1:].any()
    dropped = flow.vmap(lambda v: F.dropout(v, 0.5), randomness="different")(ones).numpy()
    assert 0.4 < (dropped == 0).mean() < 0.6 and not (dropped[0] == dropped[1]).all()
    dropped = flow.vmap(lambda v: F.dropout(v, 0.5), randomness="same")(ones).numpy()
    assert (dropped == dropped[0]).all()
    perms = flow.vmap(lambda v: flow.randperm(20), randomness="different")(ones).numpy()
    assert perms.shape == (B, 20) and all(sorted(p) == list(range(20)) for p in perms)
    nested = flow.vmap(flow.vmap(lambda v: v * 0 + flow.randn(()), randomness="different"),
                       randomness="different")(flow.ones(4, 5)).numpy()
    assert len(np.unique(nested)) == 20


def test_in_place_ops_on_batched_tensors():
    a = r(B, 4)

    def f(v):
        v = v.clone()
        v.add_(1)
        v.mul_(2)
        return v

    np.testing.assert_allclose(flow.vmap(f)(a).numpy(), (a.numpy() + 1) * 2, rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"vmap: the in-place op 'broadcast_add' writes into a tensor that is not "
                                           r"batched"):
        flow.vmap(lambda v: flow.zeros(4).add_(v))(a)
    with pytest.raises(RuntimeError, match=r"vmap: the in-place op 'tensor_setitem' writes into a tensor that is not "
                                           r"batched"):
        flow.vmap(lambda v: put(flow.zeros(2, 4), 0, v))(a)

    def setitems(v, i):
        w = v.clone()
        w.zero_()
        w[1] = 5.0
        w[2:] = v[:2] * 10
        w[i] = 7.0  # a batched index: arange(B) indexes the batch dim in front of it (no per-sample loop)
        return w

    index = flow.tensor([0, 3, 3])
    batched_interp._warned.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = flow.vmap(setitems)(a, index)
    expected = np.zeros((B, 4), np.float32)
    expected[:, 1] = 5
    expected[:, 2:] = a.numpy()[:, :2] * 10
    expected[np.arange(B), index.numpy()] = 7
    np.testing.assert_array_equal(got.numpy(), expected)


def test_errors_name_vmap_and_the_argument():
    a, b = r(3, 5), r(4, 5)

    def f(x, y):
        return x + y

    with pytest.raises(ValueError, match=r"vmap: Expected all tensors to have the same size in the mapped dimension, "
                                         r"got size 3 for 'x' \(argument 0\) \(in_dim 0\) and size 4 for 'y' "
                                         r"\(argument 1\) \(in_dim 0\)"):
        flow.vmap(f)(a, b)
    with pytest.raises(ValueError, match=r"size 3 for 'p' \(argument 0\) at \['a'\] .* size 4 for 'p' \(argument 0\) "
                                         r"at \['b'\]"):
        flow.vmap(lambda p: p["a"])({"a": a, "b": b})
    with pytest.raises(ValueError, match=r"vmap: in_dim=0 for 'n' \(argument 1\), which is a float, not a Tensor"):
        flow.vmap(lambda x, n: x * n)(a, 2.0)
    with pytest.raises(ValueError, match=r"vmap: in_dim=2 for 'x' \(argument 0\) is out of bounds"):
        flow.vmap(f, in_dims=(2, None))(a, a)
    with pytest.raises(ValueError, match="vmap: at least one input must be mapped"):
        flow.vmap(f, in_dims=None)(a, a)
    with pytest.raises(ValueError, match="vmap: in_dims has 1 entries but the function was called with 2"):
        flow.vmap(f, in_dims=(0,))(a, a)
    with pytest.raises(ValueError, match="vmap: in_dims is not compatible with the structure of the inputs"):
        flow.vmap(lambda p: p, in_dims=({"x": 0},))({"y": a})
    with pytest.raises(ValueError, match="vmap: randomness must be one of"):
        flow.vmap(f, randomness="sometimes")
    with pytest.raises(ValueError, match="vmap: chunk_size should be None or a positive integer"):
        flow.vmap(f, chunk_size=0)
    with pytest.raises(ValueError, match=r"vmap: `func` must only return Tensors, got type float for output 0"):
        flow.vmap(lambda x: 1.0)(a)
    with pytest.raises(ValueError, match=r"vmap: out_dims is None for output 0, but it differs per sample"):
        flow.vmap(lambda x: x, out_dims=None)(a)
    with pytest.raises(RuntimeError, match=r"vmap: Tensor.item\(\) reads the values of a batched tensor"):
        flow.vmap(lambda x: x.sum().item())(a)
    with pytest.raises(RuntimeError, match=r"vmap: Tensor.numpy\(\) reads"):
        flow.vmap(lambda x: x.numpy())(a)
    assert tls.included() == 0 and batched_interp.active_levels() == []


def test_batched_tensors_inside_vmap():
    seen = {}

    def f(x):
        seen["repr"] = repr(x)
        seen["shape"] = x.shape
        seen["batched"] = flow.func.is_batched(x)
        seen["key"] = bool(x.key_set & BATCHED_BIT)
        return x

    flow.vmap(f)(flow.zeros(2, 3))
    assert seen["shape"] == (3,) and seen["batched"] and seen["key"]
    assert seen["repr"].startswith("BatchedTensor(lvl=") and "bdim=0, value=tensor(" in seen["repr"]


def test_graph_captures_the_batched_ops():
    w = r(4, 5)

    class G(nn.Graph):
        def build(self, x):
            return flow.vmap(lambda v: F.relu(v @ w).sum())(x)

    g = G()
    x = r(B, 4)
    out = g(x)
    np.testing.assert_allclose(out.numpy(), np.maximum(x.numpy() @ w.numpy(), 0).sum(1), rtol=1e-5)
    ops = [op.user_conf.op_type_name for op in g.captured_job.net.op if op.user_conf.op_type_name]
    assert ops == ["matmul", "relu", "reduce_sum"]


def test_grad_through_vmap_outputs_reaches_closed_over_tensors():
    """Once refused with a warning (the outputs were detached); now grad(vmap(f)) works: tests/test_vmap_autograd.py."""
    w = r(5, 4).requires_grad_()
    x = r(B, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = flow.vmap(lambda v: w @ v)(x)
    assert out.requires_grad and out.grad_fn.name() == "VmapBackward"
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(x.numpy().sum(0), (5, 4)), rtol=1e-5)


def test_func_grad_vjp_and_functional_call():
    x = r(4).double()
    g = flow.func.grad(lambda v: (v ** 3).sum())(x)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2, rtol=1e-12)
    gg = flow.func.grad(lambda v: flow.func.grad(lambda u: (u ** 3).sum())(v).sum())(x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.numpy(), rtol=1e-12)
    (gx, _), value = flow.func.grad_and_value(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, x * 2)
    np.testing.assert_allclose(gx.numpy(), 2 * x.numpy())
    assert value.item() == pytest.approx(float((x.numpy() * x.numpy() * 2).sum()))
    g, aux = flow.func.grad(lambda v: ((v * v).sum(), "aux"), has_aux=True)(x)
    assert aux == "aux"
    _, vjp_fn = flow.func.vjp(lambda v: v * v, x)
    (ct,) = vjp_fn(flow.ones(4).double())
    np.testing.assert_allclose(ct.numpy(), 2 * x.numpy())
    model = nn.Linear(4, 2)
    w = flow.zeros(2, 4)
    y = flow.func.functional_call(model, {"weight": w}, (flow.ones(4),))
    np.testing.assert_allclose(y.numpy(), model.bias.detach().numpy())
    assert model.weight is not w and isinstance(model.weight, nn.Parameter)
    with pytest.raises(RuntimeError, match="grad: expected f\\(\\*args\\) to return a scalar Tensor"):
        flow.func.grad(lambda v: v)(x)
    with pytest.raises(AttributeError, match="functional_call: the module has no parameter or buffer 'nope'"):
        flow.func.functional_call(model, {"nope": w}, (flow.ones(4),))


# ---- an op defined outside the package: the per-sample fallback, then a rule ----------------------------------
register_user_op("vmap_test_square_plus", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)


@cpu_kernel("vmap_test_square_plus")
def _square_plus(ctx, x):
    return (x + np.sqrt(x * x + 4)) / 2


_SQUARE_PLUS = OpBuilder("vmap_test_square_plus").input("x").output("y").build()


def square_plus(x):
    return dispatch(_SQUARE_PLUS, (x,))[0]


def test_an_op_without_a_rule_runs_per_sample_with_one_warning():
    a = r(B, 4)
    expected = (a.numpy() + np.sqrt(a.numpy() ** 2 + 4)) / 2
    batched_interp._warned.discard("vmap_test_square_plus")
    with pytest.warns(UserWarning, match="vmap: there is no batching rule for op 'vmap_test_square_plus', so it runs "
                                         "once per sample"):
        out = flow.vmap(square_plus)(a)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once only
        flow.vmap(square_plus)(a)


def test_a_registered_rule_is_used_and_removable():
    calls = []

    def rule(call):
        calls.append(call.size)
        return call.redo(call.values)  # elementwise: the op on the whole batch

    with pytest.raises(TypeError, match="register_batch_rule\\('vmap_test_square_plus'\\): expected a callable"):
        flow.func.register_batch_rule("vmap_test_square_plus", "rule")
    assert "vmap_test_square_plus" not in batched_interp.RULES
    previous = flow.func.register_batch_rule("vmap_test_square_plus", rule)
    try:
        assert previous is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = flow.vmap(square_plus)(r(B, 4))
        assert calls == [B] and out.shape == (B, 4)
    finally:
        flow.func.register_batch_rule("vmap_test_square_plus", None)
    assert "vmap_test_square_plus" not in batched_interp.RULES


def test_no_vmap_state_is_left_behind():
    flow.vmap(lambda v: v + 1)(r(B, 2))
    with pytest.raises(ZeroDivisionError):
        flow.vmap(lambda v: 1 / 0)(r(B, 2))
    assert tls.included() == 0 and tls.excluded() == 0 and batched_interp.active_levels() == []
