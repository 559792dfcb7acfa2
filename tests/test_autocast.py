"""Autocast: the interpreter at the Autocast key (interpreters/autocast.py) and ``flow.autocast`` /
``flow.amp.autocast`` (amp/autocast_mode.py).

The ops a computation runs, with their output dtypes, are recorded by a handler at the Python key (below
Autocast and Autograd), included for the duration of the call, as tests/test_ops_coverage.py does. The
expected dtypes are PyTorch's CPU autocast lists (Note [Autocast policies]), written here as tables; where
torch is importable the same models also run under ``torch.autocast("cpu")`` and the dtypes must agree.
"""

from __future__ import annotations

import math
import threading
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import DispatchKey, keys_below
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import IncludeDispatchKeyGuard
from oneflow_lite.interpreters import autocast as autocast_interp
from oneflow_lite.interpreters.op_interp_util import redispatch

F = flow.nn.functional
nn = flow.nn
F16 = flow.float16
AUTOCAST_BIT = 1 << DispatchKey.Autocast
BF16 = getattr(flow, "bfloat16", None)
needs_bf16 = pytest.mark.skipif(BF16 is None, reason="this build has no flow.bfloat16")


def record_ops(fn):
    """``(fn(), [(op type, dtype of its first output), ...])`` for the ops ``fn`` runs."""
    seen = []

    def recorder(op_expr, ks, inputs, attrs, outputs):
        outs = redispatch(op_expr, ks & keys_below(DispatchKey.Python), inputs, attrs, outputs)
        seen.append((op_expr.op_type_name, outs[0].dtype.name))
        return outs

    with warnings.catch_warnings():  # over a Python-mode interpreter the build may register there
        warnings.filterwarnings("ignore", "Overriding a previously registered fallback")
        handle = DISPATCHER.register_fallback(DispatchKey.Python, recorder)
    try:
        with IncludeDispatchKeyGuard(DispatchKey.Python):
            result = fn()
    finally:
        handle.remove()
    return result, seen


# ---- the policy, op by op ----------------------------------------------------------------------------------
def _x(*shape, dtype=flow.float32):
    return flow.randn(*shape).to(dtype)


LOWER = {  # PyTorch's "CPU Ops that can autocast to float16 / bfloat16"
    "matmul": lambda: flow.matmul(_x(3, 4), _x(4, 5)),
    "mm": lambda: flow.mm(_x(3, 4), _x(4, 5)),
    "bmm": lambda: flow.bmm(_x(2, 3, 4), _x(2, 4, 5)),
    "baddbmm": lambda: flow.baddbmm(_x(2, 3, 5), _x(2, 3, 4), _x(2, 4, 5)),
    "linear": lambda: F.linear(_x(3, 4), _x(5, 4), _x(5)),
    "conv1d": lambda: F.conv1d(_x(1, 2, 6), _x(3, 2, 3)),
    "conv2d": lambda: F.conv2d(_x(1, 2, 5, 5), _x(3, 2, 3, 3)),
    "conv3d": lambda: F.conv3d(_x(1, 2, 4, 4, 4), _x(3, 2, 2, 2, 2)),
    "conv_transpose2d": lambda: F.conv_transpose2d(_x(1, 2, 4, 4), _x(2, 3, 3, 3)),
    "einsum": lambda: flow.einsum("ij,jk->ik", _x(3, 4), _x(4, 5)),
    "scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(_x(2, 3, 4), _x(2, 3, 4), _x(2, 3, 4)),
}
FP32 = {  # PyTorch's "CPU Ops that can autocast to float32", given float16 inputs
    "mse_loss": lambda: F.mse_loss(_x(3, 4, dtype=F16), _x(3, 4, dtype=F16)),
    "l1_loss": lambda: F.l1_loss(_x(3, 4, dtype=F16), _x(3, 4, dtype=F16)),
    "smooth_l1_loss": lambda: F.smooth_l1_loss(_x(3, 4, dtype=F16), _x(3, 4, dtype=F16)),
    "huber_loss": lambda: F.huber_loss(_x(3, 4, dtype=F16), _x(3, 4, dtype=F16)),
    "kl_div": lambda: F.kl_div(_x(3, 4, dtype=F16), flow.rand(3, 4).half(), reduction="batchmean"),
    "binary_cross_entropy": lambda: F.binary_cross_entropy(flow.rand(3, 4).half(), flow.rand(3, 4).half()),
    "binary_cross_entropy_with_logits": lambda: F.binary_cross_entropy_with_logits(_x(3, 4, dtype=F16),
                                                                                   flow.rand(3, 4).half()),
    "nll_loss": lambda: F.nll_loss(_x(3, 5, dtype=F16), flow.tensor([0, 4, 2])),
    "cross_entropy": lambda: F.cross_entropy(_x(3, 5, dtype=F16), flow.tensor([0, 4, 2])),
    "prod": lambda: flow.prod(_x(3, 4, dtype=F16)),
    "avg_pool3d": lambda: F.avg_pool3d(_x(1, 2, 4, 4, 4, dtype=F16), 2),
    "max_pool3d": lambda: F.max_pool3d(_x(1, 2, 4, 4, 4, dtype=F16), 2),
    "adaptive_avg_pool3d": lambda: F.adaptive_avg_pool3d(_x(1, 2, 4, 4, 4, dtype=F16), 2),
    "pad reflect 2d": lambda: F.pad(_x(1, 2, 4, 4, dtype=F16), (1, 1, 1, 1), mode="reflect"),
    "pad replicate 3d": lambda: F.pad(_x(1, 2, 4, 4, 4, dtype=F16), (1, 1, 1, 1, 1, 1), mode="replicate"),
}
NEITHER = {  # on neither list: the inputs' dtype (checked with float16 inputs)
    "softmax": lambda: F.softmax(_x(3, 4, dtype=F16), -1),
    "log_softmax": lambda: F.log_softmax(_x(3, 4, dtype=F16), -1),
    "layer_norm": lambda: F.layer_norm(_x(3, 4, dtype=F16), (4,)),
    "sum": lambda: _x(3, 4, dtype=F16).sum(),
    "exp": lambda: _x(3, 4, dtype=F16).exp(),
    "relu": lambda: F.relu(_x(3, 4, dtype=F16)),
    "gelu": lambda: F.gelu(_x(3, 4, dtype=F16)),
    "max_pool2d": lambda: F.max_pool2d(_x(1, 2, 4, 4, dtype=F16), 2),
    "pad constant": lambda: F.pad(_x(1, 2, 4, 4, dtype=F16), (1, 1)),
    "pad reflect 3d": lambda: F.pad(_x(1, 2, 4, 4, 4, dtype=F16), (1, 1, 1, 1, 1, 1), mode="reflect"),
    "embedding": lambda: F.embedding(flow.tensor([0, 2]), _x(3, 4, dtype=F16)),
}


@pytest.mark.parametrize("name", sorted(LOWER))
def test_lower_precision_ops_run_in_the_autocast_dtype(name):
    assert LOWER[name]().dtype is flow.float32
    with flow.autocast("cpu", dtype=F16):
        assert LOWER[name]().dtype is F16


@pytest.mark.parametrize("name", sorted(FP32))
def test_float32_ops_run_in_float32(name):
    with flow.autocast("cpu", dtype=F16):
        assert FP32[name]().dtype is flow.float32


@pytest.mark.parametrize("name", sorted(NEITHER))
def test_other_ops_run_in_their_inputs_dtype(name):
    with flow.autocast("cpu", dtype=F16):
        assert NEITHER[name]().dtype is F16


def test_float64_and_integer_inputs_are_not_cast():
    with flow.autocast("cpu", dtype=F16):
        assert flow.matmul(_x(3, 4, dtype=flow.float64), _x(4, 5, dtype=flow.float64)).dtype is flow.float64
        assert flow.matmul(flow.ones(2, 2, dtype=flow.int64), flow.ones(2, 2, dtype=flow.int64)).dtype is flow.int64
        assert F.mse_loss(_x(3, dtype=flow.float64), _x(3, dtype=flow.float64)).dtype is flow.float64


def test_promote_ops_cast_to_the_widest_input():
    a, b = _x(2, 3), _x(2, 3, dtype=F16)
    with flow.autocast("cpu", dtype=F16):
        assert flow.cat([a, b]).dtype is flow.float32
        assert flow.stack([b, a]).dtype is flow.float32
        assert flow.cat([b, b]).dtype is F16
    policy = autocast_interp.POLICIES["cat"]
    with flow.autocast("cpu", dtype=F16):  # the policy itself, on a mixed list the functor would not pass
        cast = policy(None, (a, b, _x(2, 3, dtype=flow.float64)), None)
        assert [t.dtype for t in cast] == [flow.float32, flow.float32, flow.float64]
        assert policy(None, (b, b), None) is None


def test_values_are_the_float32_values_within_float16_tolerance():
    x, w, b = _x(8, 16), _x(4, 16), _x(4)
    expected = F.linear(x, w, b).numpy()
    with flow.autocast("cpu", dtype=F16):
        got = F.linear(x, w, b)
    assert got.dtype is F16
    np.testing.assert_allclose(got.numpy().astype(np.float32), expected, rtol=1e-2, atol=1e-2)


# ---- models: per-op dtypes against a table (and PyTorch) ----------------------------------------------------
MLP_OPS = [("cast", "float16"), ("cast", "float16"), ("cast", "float16"), ("linear", "float16"),
           ("relu", "float16"), ("cast", "float16"), ("cast", "float16"), ("linear", "float16"),
           ("log_softmax", "float16"), ("cast", "float32"), ("nll", "float32")]


def test_mlp_ops_and_dtypes_match_the_table():
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    x, y = flow.randn(4, 64), flow.randint(0, 10, (4,))

    def run():
        with flow.autocast("cpu", dtype=F16):
            return F.cross_entropy(model(x), y)

    loss, seen = record_ops(run)
    assert seen == MLP_OPS
    assert loss.dtype is flow.float32
    np.testing.assert_allclose(loss.item(), F.cross_entropy(model(x), y).item(), rtol=1e-2)


D, T = 16, 5
BLOCK_DTYPES = {"ln1": "float32", "qkv": "float16", "scores": "float16", "softmax": "float16", "attn": "float16",
                "proj": "float16", "residual1": "float32", "ln2": "float32", "fc1": "float16", "gelu": "float16",
                "fc2": "float16", "residual2": "float32", "loss": "float32"}
# the op types the block runs (casts left out), with their output dtypes under float16 autocast
BLOCK_OPS = [("layer_norm", "float32"), ("linear", "float16"), ("split", "float16"), ("transpose", "float16"),
             ("matmul", "float16"), ("scalar_mul", "float16"), ("softmax", "float16"), ("matmul", "float16"),
             ("linear", "float16"), ("broadcast_add", "float32"), ("layer_norm", "float32"), ("linear", "float16"),
             ("gelu", "float16"), ("linear", "float16"), ("broadcast_add", "float32"), ("mse_loss", "float32"),
             ("reduce_sum", "float32"), ("scalar_div", "float32")]


def _block_params(rng):
    shapes = {"ln1.w": (D,), "ln1.b": (D,), "qkv.w": (3 * D, D), "qkv.b": (3 * D,), "proj.w": (D, D), "proj.b": (D,),
              "ln2.w": (D,), "ln2.b": (D,), "fc1.w": (2 * D, D), "fc1.b": (2 * D,), "fc2.w": (D, 2 * D),
              "fc2.b": (D,)}
    return {k: (rng.standard_normal(s) * (0.3 if k.endswith(".w") else 0.1)).astype(np.float32)
            for k, s in shapes.items()}


def transformer_block(Fn, x, target, p, rec):
    """A pre-norm attention block and an MLP block, written once for oneflow_lite and for torch."""
    h = rec("ln1", Fn.layer_norm(x, (D,), p["ln1.w"], p["ln1.b"]))
    q, k, v = rec("qkv", Fn.linear(h, p["qkv.w"], p["qkv.b"])).chunk(3, dim=-1)
    att = rec("scores", (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D)))
    att = rec("softmax", Fn.softmax(att, dim=-1))
    o = rec("attn", att @ v)
    x = rec("residual1", x + rec("proj", Fn.linear(o, p["proj.w"], p["proj.b"])))
    h = rec("ln2", Fn.layer_norm(x, (D,), p["ln2.w"], p["ln2.b"]))
    h = rec("gelu", Fn.gelu(rec("fc1", Fn.linear(h, p["fc1.w"], p["fc1.b"]))))
    x = rec("residual2", x + rec("fc2", Fn.linear(h, p["fc2.w"], p["fc2.b"])))
    return rec("loss", Fn.mse_loss(x, target))


def _run_block_flow(params, x, target, dtype):
    p = {k: flow.tensor(v, requires_grad=True) for k, v in params.items()}
    steps = {}

    def rec(name, t):
        steps[name] = t
        return t

    def run():
        with flow.autocast("cpu", dtype=dtype):
            return transformer_block(F, flow.tensor(x), flow.tensor(target), p, rec)

    loss, seen = record_ops(run)
    return loss, steps, seen, p


def test_transformer_block_dtypes_match_the_table_and_values_float32():
    rng = np.random.default_rng(0)
    params, x, target = _block_params(rng), rng.standard_normal((T, D)).astype(np.float32), \
        rng.standard_normal((T, D)).astype(np.float32)
    loss, steps, seen, p = _run_block_flow(params, x, target, F16)
    assert {k: t.dtype.name for k, t in steps.items()} == BLOCK_DTYPES
    assert [s for s in seen if s[0] != "cast"] == BLOCK_OPS
    assert {s for s in seen if s[0] == "cast"} == {("cast", "float16"), ("cast", "float32")}
    p32 = {k: flow.tensor(v) for k, v in params.items()}
    ref = transformer_block(F, flow.tensor(x), flow.tensor(target), p32, lambda name, t: t)
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=2e-2)
    loss.backward()
    for k, t in p.items():  # float32 parameters get float32 gradients
        assert t.grad is not None and t.grad.dtype is flow.float32, k


def test_transformer_block_dtypes_and_values_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    params, x, target = _block_params(rng), rng.standard_normal((T, D)).astype(np.float32), \
        rng.standard_normal((T, D)).astype(np.float32)
    loss, steps, _, p = _run_block_flow(params, x, target, F16)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    tsteps = {}

    def rec(name, t):
        tsteps[name] = t
        return t

    with torch.autocast("cpu", dtype=torch.float16):
        tloss = transformer_block(torch.nn.functional, torch.tensor(x), torch.tensor(target), tp, rec)
    assert {k: str(t.dtype).replace("torch.", "") for k, t in tsteps.items()} == BLOCK_DTYPES
    for k in BLOCK_DTYPES:
        np.testing.assert_allclose(steps[k].numpy().astype(np.float32), tsteps[k].detach().float().numpy(),
                                   rtol=2e-2, atol=2e-2, err_msg=k)
    loss.backward()
    tloss.backward()
    for k in params:
        assert str(tp[k].grad.dtype) == "torch.float32"
        np.testing.assert_allclose(p[k].grad.numpy(), tp[k].grad.numpy(), rtol=5e-2, atol=5e-3, err_msg=k)


def test_mlp_dtypes_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    w1, b1, w2, b2 = (rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((32, 64), (32,), (10, 32), (10,)))
    x, y = rng.standard_normal((4, 64)).astype(np.float32), np.array([1, 0, 9, 3])

    def mlp(Fn, lib, args):
        x, w1, b1, w2, b2, y = args
        h = Fn.linear(x, w1, b1)
        r = Fn.relu(h)
        logits = Fn.linear(r, w2, b2)
        return [h, r, logits, Fn.log_softmax(logits, -1), Fn.cross_entropy(logits, y)]

    with flow.autocast("cpu", dtype=F16):
        ours = mlp(F, flow, [flow.tensor(a) for a in (x, w1, b1, w2, b2, y)])
    with torch.autocast("cpu", dtype=torch.float16):
        theirs = mlp(torch.nn.functional, torch, [torch.tensor(a) for a in (x, w1, b1, w2, b2, y)])
    assert [t.dtype.name for t in ours] == [str(t.dtype).replace("torch.", "") for t in theirs]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy().astype(np.float32), b.float().numpy(), rtol=2e-2, atol=2e-2)


# ---- the context manager ---------------------------------------------------------------------------------------
def test_nested_enable_disable_restores_exactly():
    assert not flow.is_autocast_enabled("cpu") and not tls.included() & AUTOCAST_BIT
    with flow.autocast("cpu", dtype=F16):
        assert flow.is_autocast_enabled("cpu") and flow.get_autocast_dtype("cpu") is F16
        assert tls.included() & AUTOCAST_BIT
        with flow.amp.autocast(device_type="cpu", enabled=False):
            assert not flow.is_autocast_enabled("cpu") and not tls.included() & AUTOCAST_BIT
            assert F.linear(_x(2, 3), _x(4, 3)).dtype is flow.float32
            with flow.autocast("cpu", dtype=F16):
                assert F.linear(_x(2, 3), _x(4, 3)).dtype is F16
            assert not tls.included() & AUTOCAST_BIT
        assert flow.is_autocast_enabled("cpu") and tls.included() & AUTOCAST_BIT
        assert F.linear(_x(2, 3), _x(4, 3)).dtype is F16
    assert not flow.is_autocast_enabled("cpu") and not tls.included() & AUTOCAST_BIT
    assert tls.included() == 0 and tls.excluded() == 0


def test_an_exception_leaves_the_state_as_it_was():
    with pytest.raises(ValueError, match="boom"), flow.autocast("cpu", dtype=F16):
        raise ValueError("boom")
    assert not flow.is_autocast_enabled() and tls.included() == 0 and autocast_interp.cache_size() == 0


def test_usable_as_a_decorator_and_reentrant_object():
    ac = flow.autocast("cpu", dtype=F16)

    @ac
    def f(x, w):
        return F.linear(x, w)

    assert f(_x(2, 3), _x(4, 3)).dtype is F16
    assert not flow.is_autocast_enabled()
    with ac:
        with ac:
            assert flow.is_autocast_enabled("cpu")
        assert flow.is_autocast_enabled("cpu")
    assert not flow.is_autocast_enabled()
    assert f.__name__ == "f"


def test_cast_cache_reuses_a_parameters_cast_within_the_region():
    w = flow.randn(4, 3, requires_grad=True)
    x = _x(2, 3)

    def two_uses():
        with flow.autocast("cpu", dtype=F16):
            F.linear(x, w)
            F.linear(x, w)
            return autocast_interp.cache_size()

    size, seen = record_ops(two_uses)
    assert size == 1 and [op for op, _ in seen].count("cast") == 3  # x twice, w once
    assert autocast_interp.cache_size() == 0  # cleared when the region ends

    def uncached():
        with flow.autocast("cpu", dtype=F16, cache_enabled=False):
            F.linear(x, w)
            F.linear(x, w)
            return autocast_interp.cache_size()

    size, seen = record_ops(uncached)
    assert size == 0 and [op for op, _ in seen].count("cast") == 4


def test_autocast_is_thread_local():
    results = {}

    def other():
        results["other"] = (flow.is_autocast_enabled("cpu"), F.linear(_x(2, 3), _x(4, 3)).dtype)

    with flow.autocast("cpu", dtype=F16):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        results["here"] = F.linear(_x(2, 3), _x(4, 3)).dtype
    assert results == {"other": (False, flow.float32), "here": F16}


def test_errors_name_autocast_and_the_argument():
    with pytest.raises(RuntimeError, match=r"autocast: unsupported dtype flow.float64 for device_type 'cpu'"):
        flow.autocast("cpu", dtype=flow.float64)
    with pytest.raises(RuntimeError, match=r"autocast: unsupported dtype flow.int32"):
        flow.amp.autocast("cpu", dtype=flow.int32)
    with pytest.raises(RuntimeError, match=r"autocast: unsupported device_type 'tpu'"):
        flow.autocast("tpu")
    with pytest.raises(ValueError, match=r"autocast: expected `device_type` of type `str`"):
        flow.autocast(3)
    with pytest.raises(TypeError, match=r"autocast: expected `enabled` of type bool"):
        flow.autocast("cpu", dtype=F16, enabled="yes")
    assert tls.included() == 0


def test_cuda_autocast_is_disabled_with_a_warning():
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        ac = flow.autocast("cuda")
    with ac:
        assert not flow.is_autocast_enabled() and F.linear(_x(2, 3), _x(4, 3)).dtype is flow.float32
    with pytest.warns(UserWarning, match="CUDA is not available"), flow.cuda.amp.autocast():
        assert tls.included() == 0
    assert isinstance(flow.cuda.amp.autocast(enabled=False), flow.amp.autocast)


def _linear_in_float32(ctx, x, w, b=None):
    """A bfloat16 ``linear`` kernel defined here (computing in float32), for builds whose ``linear`` has none."""
    y = x.astype(np.float32) @ w.astype(np.float32).T
    return (y if b is None else y + b.astype(np.float32)).astype(x.dtype)


@needs_bf16
def test_bfloat16():
    from oneflow_lite.dispatch.kernel_predicate import inputs_dtype_in

    fallback = DISPATCHER.register_kernel("linear", "cpu", _linear_in_float32, predicate=inputs_dtype_in(BF16),
                                          priority=-100)  # a kernel of the build wins
    try:
        with flow.autocast("cpu", dtype=BF16):
            y = F.linear(_x(2, 3), _x(4, 3), _x(4))
            assert y.dtype is BF16
            assert F.mse_loss(_x(3).to(BF16), _x(3).to(BF16)).dtype is flow.float32
            assert F.softmax(_x(3).to(BF16), 0).dtype is BF16
    finally:
        fallback.remove()
    with flow.autocast("cpu"):  # PyTorch's default on cpu
        assert flow.get_autocast_dtype("cpu") is BF16


@pytest.mark.skipif(BF16 is not None, reason="this build has flow.bfloat16")
def test_without_bfloat16_the_default_dtype_is_an_error():
    with pytest.raises(RuntimeError, match="autocast: the default dtype of device_type 'cpu' is bfloat16"):
        flow.autocast("cpu")


def test_register_policy_failure_leaves_the_table_as_it_was():
    before = dict(autocast_interp.POLICIES)
    with pytest.raises(TypeError, match="register_policy"):
        autocast_interp.register_policy("relu", "not callable")
    assert autocast_interp.POLICIES == before
    previous = autocast_interp.register_policy("relu", autocast_interp.fp32)
    try:
        with flow.autocast("cpu", dtype=F16):
            assert F.relu(_x(3, dtype=F16)).dtype is flow.float32
    finally:
        autocast_interp.register_policy("relu", previous)
    assert autocast_interp.POLICIES == before


# ---- graphs, training ------------------------------------------------------------------------------------------
def test_graph_capture_records_the_casts():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x, y):
            with flow.autocast("cpu", dtype=F16):
                out = self.model(x)
                return out, F.cross_entropy(out, y)

    g = Step()
    x, y = flow.randn(5, 8), flow.randint(0, 4, (5,))
    out, loss = g(x, y)
    assert out.dtype is F16 and loss.dtype is flow.float32
    ops = [op.user_conf.op_type_name for op in g.captured_job.net.op if op.user_conf.op_type_name]
    assert ops == ["cast", "cast", "cast", "linear", "relu", "cast", "cast", "linear", "log_softmax", "cast", "nll"]
    with flow.autocast("cpu", dtype=F16):
        eager = model(x)
    np.testing.assert_array_equal(out.numpy(), eager.numpy())
    assert tls.included() == 0


def test_digits_mlp_trains_with_autocast_float16_and_a_grad_scaler():
    from oneflow_lite.utils.data import DataLoader
    from oneflow_lite.utils.data.datasets import digits

    flow.manual_seed(0)
    train = DataLoader(digits(train=True, flatten=True), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    # lr 0.05: at 0.1 with momentum 0.9 the test accuracy swings between 0.89 and 0.97 from epoch to epoch (in
    # float32 too), so the last epoch's figure depended on the rounding of single matmuls; at 0.05 it is >= 0.956
    # for seeds 0 to 5.
    optimizer = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = flow.amp.GradScaler("cpu")
    for _ in range(8):
        for x, y in train:
            optimizer.zero_grad()
            with flow.autocast("cpu", dtype=F16):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
            assert logits.dtype is F16 and loss.dtype is flow.float32
            scaler.scale(loss).backward()
            assert model[0].weight.grad.dtype is flow.float32
            scaler.step(optimizer)
            scaler.update()
    test = digits(train=False, flatten=True)
    with flow.no_grad(), flow.autocast("cpu", dtype=F16):
        accuracy = (model(test.tensors[0]).argmax(dim=1) == test.tensors[1]).float().mean().item()
    assert accuracy >= 0.95, accuracy
    assert all(p.dtype is flow.float32 for p in model.parameters())


def test_no_autocast_state_is_left_behind():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with flow.autocast("cpu", dtype=F16):
            pass
    assert tls.included() == 0 and tls.excluded() == 0


# ---- layer_norm after a lower-precision op (Note [Autocast policies]) ------------------------------------------------
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
def test_layer_norm_after_a_linear_keeps_the_lower_precision_dtype(dtype):
    """PyTorch's cpu layer_norm mixes a float16 / bfloat16 input with float32 weight and bias and returns the
    input's dtype; here the weight and bias are cast to the input's dtype. The output's dtype is PyTorch's, its
    values are those of the float32 normalisation within the dtype's rounding, the parameters' grads float32."""
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8))
    with flow.no_grad():
        model[1].weight.copy_(flow.randn(8))
        model[1].bias.copy_(flow.randn(8))
    x = _x(3, 4)
    with flow.autocast("cpu", dtype=dtype):
        y = model(x)
    assert y.dtype is dtype
    h = (x.numpy() @ model[0].weight.detach().numpy().T + model[0].bias.detach().numpy()).astype(np.float32)
    h = flow.tensor(h).to(dtype).float().numpy()  # the linear's output, rounded to the dtype
    xhat = (h - h.mean(1, keepdims=True)) / np.sqrt(h.var(1, keepdims=True) + 1e-5)
    gamma = model[1].weight.detach().to(dtype).float().numpy()
    beta = model[1].bias.detach().to(dtype).float().numpy()
    eps = 2.0 ** -10 if dtype is F16 else 2.0 ** -7
    np.testing.assert_allclose(y.float().numpy(), xhat * gamma + beta, rtol=2 * eps, atol=4 * eps)
    y.float().sum().backward()
    assert all(p.grad.dtype is flow.float32 for p in model.parameters())


def test_layer_norm_after_a_linear_equals_torch_autocast():
    torch = pytest.importorskip("torch")
    flow.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8))
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8))
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_(torch.tensor(dict(model.named_parameters())[name].detach().numpy()))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    for dtype, tdtype, ulp in ((F16, torch.float16, 2.0 ** -10), (BF16, torch.bfloat16, 2.0 ** -7)):
        with flow.autocast("cpu", dtype=dtype):
            mine = model(flow.tensor(x))
        with torch.autocast("cpu", dtype=tdtype):
            theirs = tm(torch.tensor(x))
        assert str(theirs.dtype) == f"torch.{mine.dtype.name}"
        np.testing.assert_allclose(mine.float().detach().numpy(), theirs.float().detach().numpy(), rtol=0,
                                   atol=8 * ulp)


# ---- normalisations under autocast (Note [Mixed-precision normalisation] in functors/nn.py) --------------------------
_ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
_NP_LOWER = {"float16": np.float16}
if BF16 is not None:
    import ml_dtypes

    _NP_LOWER["bfloat16"] = ml_dtypes.bfloat16


def _round(a, dtype):
    return np.asarray(a, np.float32).astype(_NP_LOWER[dtype.name]).astype(np.float32)


def _norm_model(kind, seed=0):
    """A float32 conv (lower precision under autocast) then a float32 normalisation module whose weight and
    bias are not representable in float16 / bfloat16 (so a rounded weight would show)."""
    flow.manual_seed(seed)
    norm = {"batch_norm": lambda: nn.BatchNorm2d(4), "group_norm": lambda: nn.GroupNorm(2, 4),
            "layer_norm": lambda: nn.LayerNorm([5, 5]), "instance_norm": lambda: nn.InstanceNorm2d(4, affine=True),
            "instance_norm_stats": lambda: nn.InstanceNorm2d(4, affine=True, track_running_stats=True)}[kind]()
    with flow.no_grad():
        n = norm.weight.numel()
        norm.weight.copy_(flow.tensor((1 + np.arange(n) * 2.0 ** -13 + 2.0 ** -12).astype(np.float32)
                                      .reshape(tuple(norm.weight.shape))))
        norm.bias.copy_(flow.tensor((np.arange(n) % 3 * 2.0 ** -11 + 2.0 ** -14).astype(np.float32)
                                    .reshape(tuple(norm.bias.shape))))
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), norm)


def _normalise(h, kind, weight, bias, running=None, training=True, eps=1e-5):
    """The NumPy float32 reference of the normalisation of ``h`` (N, C, H, W); ``running``: (mean, var)."""
    n, c = h.shape[:2]
    if kind == "batch_norm":
        axes = (0, 2, 3)
        if training:
            mean, var = h.mean(axes, keepdims=True), h.var(axes, keepdims=True)
        else:
            mean, var = running[0].reshape(1, c, 1, 1), running[1].reshape(1, c, 1, 1)
        return (h - mean) / np.sqrt(var + eps) * weight.reshape(1, c, 1, 1) + bias.reshape(1, c, 1, 1)
    if kind == "group_norm":
        g = h.reshape(n, 2, -1)
        y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(h.shape)
        return y * weight.reshape(1, c, 1, 1) + bias.reshape(1, c, 1, 1)
    if kind == "layer_norm":
        mean, var = h.mean((2, 3), keepdims=True), h.var((2, 3), keepdims=True)
        return (h - mean) / np.sqrt(var + eps) * weight + bias
    mean, var = h.mean((2, 3), keepdims=True), h.var((2, 3), keepdims=True)  # instance_norm
    return (h - mean) / np.sqrt(var + eps) * weight.reshape(1, c, 1, 1) + bias.reshape(1, c, 1, 1)


_NORMS = [("batch_norm", True), ("batch_norm", False), ("group_norm", True), ("layer_norm", True),
          ("instance_norm", True), ("instance_norm_stats", True), ("instance_norm_stats", False)]


@needs_bf16
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("kind,training", _NORMS, ids=[f"{k}-{'train' if t else 'eval'}" for k, t in _NORMS])
def test_normalisations_after_a_conv_compute_in_float32_and_return_the_lower_dtype(dtype, kind, training):
    """As PyTorch's cpu kernels: a float16 / bfloat16 input with float32 weight, bias and running statistics is
    normalised in float32 with the parameters as they are (not rounded), the result rounded once to the input's
    dtype; the running statistics stay float32 (updated with the unbiased variance); grads are float32."""
    model = _norm_model(kind)
    conv, norm = model[0], model[1]
    model.train(training)
    if not training:
        with flow.no_grad():
            norm.running_mean.copy_(flow.tensor(np.linspace(-0.3, 0.2, 4).astype(np.float32)))
            norm.running_var.copy_(flow.tensor(np.linspace(0.5, 1.5, 4).astype(np.float32)))
    running_mean, running_var = getattr(norm, "running_mean", None), getattr(norm, "running_var", None)
    rm0 = None if running_mean is None else running_mean.numpy().copy()
    rv0 = None if running_var is None else running_var.numpy().copy()
    x = flow.tensor(np.random.default_rng(1).standard_normal((2, 3, 5, 5)).astype(np.float32))
    with flow.autocast("cpu", dtype=dtype):
        h = conv(x)
        y, ops = record_ops(lambda: norm(h))
    assert h.dtype is dtype and y.dtype is dtype
    # the input cast up once, the result down once; no parameter rounded to the lower dtype
    assert [d for op, d in ops if op == "cast"] == ["float32", dtype.name]
    hf = h.float().numpy()
    w, b = norm.weight.detach().numpy(), norm.bias.detach().numpy()
    # an instance_norm in eval mode with running statistics normalises by them, as batch_norm in eval mode
    formula = "batch_norm" if kind == "batch_norm" or not training else kind.replace("_stats", "")
    expected = _normalise(hf, formula, w, b, (rm0, rv0), training)
    ulp = _ULP[dtype.name]
    np.testing.assert_allclose(y.float().numpy(), _round(expected, dtype), rtol=ulp, atol=ulp / 4)
    if rm0 is not None:
        assert norm.running_mean.dtype is flow.float32 and norm.running_var.dtype is flow.float32
        if training:
            axes = (0, 2, 3) if kind == "batch_norm" else (2, 3)
            count = math.prod(hf.shape[a] for a in axes)
            mean = hf.mean(axes).reshape(-1, 4).mean(0)
            var = (hf.var(axes) * count / (count - 1)).reshape(-1, 4).mean(0)
            np.testing.assert_allclose(norm.running_mean.numpy(), 0.9 * rm0 + 0.1 * mean, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(norm.running_var.numpy(), 0.9 * rv0 + 0.1 * var, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(norm.running_mean.numpy(), rm0)
    y.float().sum().backward()
    assert all(p.grad is not None and p.grad.dtype is flow.float32 for p in model.parameters())


def test_a_float32_input_stays_float32_and_mixed_parameter_dtypes_are_errors():
    with flow.autocast("cpu", dtype=F16):
        for kind, _ in _NORMS[::2]:
            model = _norm_model(kind)
            assert model[1](_x(2, 4, 5, 5)).dtype is flow.float32, kind
    x16, w16 = _x(2, 4, dtype=F16), _x(4, dtype=F16)
    for call, op, arg in ((lambda: F.layer_norm(_x(2, 4), (4,), w16), "layer_norm", "weight"),
                          (lambda: F.layer_norm(x16, (4,), _x(4), w16), "layer_norm", "weight"),
                          (lambda: F.group_norm(x16, 2, w16, _x(4)), "group_norm", "bias"),
                          (lambda: F.batch_norm(_x(2, 4), _x(4), flow.rand(4), w16), "batch_norm", "weight")):
        with pytest.raises(RuntimeError, match=rf"{op}: {arg} has dtype"):
            call()
    # all parameters in the input's lower dtype: computed as given, in that dtype
    assert F.layer_norm(x16, (4,), w16, w16).dtype is F16 and F.group_norm(x16, 2, w16, w16).dtype is F16


@needs_bf16
@pytest.mark.parametrize("kind,training", _NORMS, ids=[f"{k}-{'train' if t else 'eval'}" for k, t in _NORMS])
def test_normalisations_under_autocast_equal_torch(kind, training):
    torch = pytest.importorskip("torch")
    model = _norm_model(kind)
    tnorm = {"batch_norm": lambda: torch.nn.BatchNorm2d(4), "group_norm": lambda: torch.nn.GroupNorm(2, 4),
             "layer_norm": lambda: torch.nn.LayerNorm([5, 5]),
             "instance_norm": lambda: torch.nn.InstanceNorm2d(4, affine=True),
             "instance_norm_stats": lambda: torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True)}[kind]()
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), tnorm)
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_(torch.tensor(dict(model.named_parameters())[name].detach().numpy()))
    model.train(training)
    tm.train(training)
    x = np.random.default_rng(2).standard_normal((2, 3, 5, 5)).astype(np.float32)
    for dtype, tdtype in ((F16, torch.float16), (BF16, torch.bfloat16)):
        with flow.autocast("cpu", dtype=dtype):
            mine = model(flow.tensor(x))
        with torch.autocast("cpu", dtype=tdtype):
            theirs = tm(torch.tensor(x))
        assert str(theirs.dtype) == f"torch.{mine.dtype.name}"
        ulp = _ULP[dtype.name]
        np.testing.assert_allclose(mine.float().detach().numpy(), theirs.float().detach().numpy(), rtol=2 * ulp,
                                   atol=ulp / 2)
        if getattr(model[1], "running_mean", None) is not None:
            assert str(tnorm.running_mean.dtype) == "torch.float32" and model[1].running_mean.dtype is flow.float32
            np.testing.assert_allclose(model[1].running_var.numpy(), tnorm.running_var.numpy(), rtol=1e-3)


# ---- float16 matrix products accumulate in float32 -------------------------------------------------------------------
def _half_ref(value):
    """A float64 reference rounded once to float16, as float32 values."""
    return np.asarray(value, np.float64).astype(np.float16).astype(np.float32)


def _assert_within_one_half_ulp(got, expected):
    """``got`` (float16) equals ``expected`` (rounded to float16) or is its float16 neighbour (a float32 sum rounds
    to the other side of a tie)."""
    g = got.float().numpy() if hasattr(got, "numpy") else got
    spacing = np.spacing(np.abs(expected).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(g - expected) <= spacing), np.max(np.abs(g - expected) / spacing)


def test_float16_products_compute_in_float32_and_round_once():
    rng = np.random.default_rng(0)

    def h(*shape):
        return rng.standard_normal(shape).astype(np.float16)

    a, b, bias = h(6, 40), h(40, 7), h(7)
    a3, b3, c3 = h(2, 6, 40), h(2, 40, 7), h(2, 6, 7)
    x, w = h(2, 3, 9, 9), h(4, 3, 3, 3)
    t = flow.tensor
    f64 = np.float64
    cases = {
        "matmul": (flow.matmul(t(a), t(b)), a.astype(f64) @ b.astype(f64)),
        "bmm": (flow.bmm(t(a3), t(b3)), a3.astype(f64) @ b3.astype(f64)),
        "linear": (F.linear(t(a), t(b.T.copy()), t(bias)), a.astype(f64) @ b.astype(f64) + bias),
        "baddbmm": (flow.baddbmm(t(c3), t(a3), t(b3), beta=0.5, alpha=2.0),
                    0.5 * c3.astype(f64) + 2.0 * (a3.astype(f64) @ b3.astype(f64))),
    }
    cols = np.lib.stride_tricks.sliding_window_view(x.astype(f64), (3, 3), axis=(2, 3))  # (2, 3, 7, 7, 3, 3)
    cases["conv2d"] = (F.conv2d(t(x), t(w)), np.einsum("ncijkl,ockl->noij", cols, w.astype(f64)))
    for name, (got, expected) in cases.items():
        assert got.dtype is F16, name
        _assert_within_one_half_ulp(got, _half_ref(expected))
    # a float16 accumulator stops at 2048 (2048 + 1 rounds to 2048); these count to 4096
    ones = flow.ones(1, 4096, dtype=F16)
    assert (ones @ ones.T).item() == 4096.0 and F.linear(ones, ones).item() == 4096.0
    assert flow.bmm(ones.reshape(1, 1, 4096), ones.reshape(1, 4096, 1)).item() == 4096.0
    assert F.conv1d(ones.reshape(1, 4096, 1), ones.reshape(1, 4096, 1)).item() == 4096.0
    big = flow.full((1, 2), 300.0, dtype=F16)
    assert math.isinf((big @ big.T).item())  # 180000 is beyond float16's range: inf, as PyTorch


def test_float16_matmul_backward_and_autocast_products_accumulate_in_float32():
    ones = flow.ones(1, 4096, dtype=F16).requires_grad_()
    other = flow.ones(4096, 1, dtype=F16)
    (ones @ other).sum().backward()
    assert ones.grad.dtype is F16 and np.all(ones.grad.float().numpy() == 1.0)
    big = flow.ones(4096, 1)
    with flow.autocast("cpu", dtype=F16):
        y = flow.matmul(big.T, big)
    assert y.dtype is F16 and y.item() == 4096.0


def test_float16_products_equal_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((8, 64)).astype(np.float16), rng.standard_normal((64, 5)).astype(np.float16)
    x, w = rng.standard_normal((1, 4, 8, 8)).astype(np.float16), rng.standard_normal((3, 4, 3, 3)).astype(np.float16)
    pairs = [
        (flow.matmul(flow.tensor(a), flow.tensor(b)), torch.tensor(a) @ torch.tensor(b)),
        (F.linear(flow.tensor(a), flow.tensor(b.T.copy())),
         torch.nn.functional.linear(torch.tensor(a), torch.tensor(b.T.copy()))),
        (F.conv2d(flow.tensor(x), flow.tensor(w), padding=1),
         torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1)),
    ]
    for mine, theirs in pairs:
        assert str(theirs.dtype) == "torch.float16" and mine.dtype is F16
        _assert_within_one_half_ulp(mine, theirs.float().numpy())


# ---- the rest of PyTorch's CPU float32 list: composites and linalg (fp32_function, Note [Autocast policies]) ---
def _spd(n, dtype=F16):
    m = np.random.default_rng(n).standard_normal((n, n)).astype(np.float32)
    return flow.tensor(m @ m.T + n * np.eye(n, dtype=np.float32)).to(dtype)


def _pm1(n, dtype=F16):
    return flow.tensor(np.array([1.0, -1.0] * (n // 2) + [1.0] * (n % 2), np.float32)).to(dtype)


def _unpool(values, indices, dtype):
    return F.max_unpool2d(values.to(dtype), indices, 2)


FP32_MORE = {  # name -> fn(dtype): PyTorch's CPU float32 list, given lower-precision inputs
    "cdist": lambda d: flow.cdist(_x(3, 4, dtype=d), _x(5, 4, dtype=d)),
    "trace": lambda d: flow.trace(_x(4, 4, dtype=d)),
    "quantile": lambda d: flow.quantile(_x(10, dtype=d), 0.3),
    "nanquantile": lambda d: flow.nanquantile(_x(10, dtype=d), 0.3),
    "inverse": lambda d: flow.inverse(_spd(3, d)),
    "pinverse": lambda d: flow.pinverse(_x(3, 4, dtype=d)),
    "linalg.cholesky": lambda d: flow.linalg.cholesky(_spd(3, d)),
    "linalg.solve": lambda d: flow.linalg.solve(_spd(3, d), _x(3, 2, dtype=d)),
    "linalg.svd": lambda d: flow.linalg.svd(_x(3, 3, dtype=d))[1],
    "linalg.qr": lambda d: flow.linalg.qr(_x(3, 3, dtype=d))[0],
    "linalg.eigh": lambda d: flow.linalg.eigh(_spd(3, d))[0],
    "cholesky_solve": lambda d: flow.cholesky_solve(
        _x(3, 2, dtype=d), flow.tensor(np.tril(np.ones((3, 3)) + 2 * np.eye(3)).astype(np.float32)).to(d)),
    "hinge_embedding_loss": lambda d: F.hinge_embedding_loss(_x(4, dtype=d), _pm1(4, d)),
    "cosine_embedding_loss": lambda d: F.cosine_embedding_loss(_x(3, 4, dtype=d), _x(3, 4, dtype=d), _pm1(3, d)),
    "margin_ranking_loss": lambda d: F.margin_ranking_loss(_x(4, dtype=d), _x(4, dtype=d), _pm1(4, d)),
    "soft_margin_loss": lambda d: F.soft_margin_loss(_x(4, dtype=d), _pm1(4, d)),
    "triplet_margin_loss": lambda d: F.triplet_margin_loss(_x(3, 4, dtype=d), _x(3, 4, dtype=d), _x(3, 4, dtype=d)),
    "multi_margin_loss": lambda d: F.multi_margin_loss(_x(3, 4, dtype=d), flow.tensor([0, 2, 1])),
    "multilabel_margin_loss": lambda d: F.multilabel_margin_loss(_x(3, 4, dtype=d), flow.tensor([[0, 2, -1, 0]] * 3)),
    "poisson_nll_loss": lambda d: F.poisson_nll_loss(_x(4, dtype=d), flow.rand(4).to(d)),
    "grid_sample": lambda d: F.grid_sample(_x(1, 2, 4, 4, dtype=d), flow.rand(1, 3, 3, 2).to(d) * 2 - 1,
                                           align_corners=False),
    "max_unpool2d": lambda d: _unpool(*F.max_pool2d(_x(1, 1, 4, 4), 2, return_indices=True), d),
}


@needs_bf16
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(FP32_MORE))
def test_the_rest_of_the_float32_list_runs_in_float32(name, dtype):
    with flow.autocast("cpu", dtype=dtype):
        out, ops = record_ops(lambda: FP32_MORE[name](dtype))
    assert out.dtype is flow.float32
    # from the first cast up (the inputs are made before it), nothing runs in the lower dtype
    first = ops.index(("cast", "float32"))
    assert all(d != dtype.name for _, d in ops[first:]), ops


def test_a_float32_list_composite_computes_in_float32_inside_and_is_differentiable():
    a, b = _x(3, 4, dtype=F16).requires_grad_(), _x(5, 4, dtype=F16)
    with flow.autocast("cpu", dtype=F16):
        d = flow.cdist(a, b)  # its matmul is not cast back to float16: the body runs with autocast off
    a32, b32 = a.detach().float().numpy().astype(np.float64), b.float().numpy().astype(np.float64)
    expected = np.sqrt(((a32[:, None, :] - b32[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(d.detach().numpy(), expected, rtol=1e-5, atol=1e-5)
    d.sum().backward()
    assert a.grad.dtype is F16 and tls.included() == 0
    with pytest.raises(RuntimeError, match="linalg.inv: Low precision dtypes not supported"):
        flow.inverse(_spd(3))  # without autocast, as PyTorch


def test_the_rest_of_the_float32_list_equals_torch_autocast():
    torch = pytest.importorskip("torch")
    calls = {  # the same calls in torch
        "cdist": lambda d: torch.cdist(torch.randn(3, 4).to(d), torch.randn(5, 4).to(d)),
        "trace": lambda d: torch.trace(torch.randn(4, 4).to(d)),
        "quantile": lambda d: torch.quantile(torch.randn(10).to(d), 0.3),
        "inverse": lambda d: torch.inverse((torch.eye(3) * 3).to(d)),
        "linalg.svd": lambda d: torch.linalg.svd(torch.randn(3, 3).to(d))[1],
        "hinge_embedding_loss": lambda d: torch.nn.functional.hinge_embedding_loss(
            torch.randn(4).to(d), torch.tensor([1.0, -1, 1, -1]).to(d)),
        "multi_margin_loss": lambda d: torch.nn.functional.multi_margin_loss(torch.randn(3, 4).to(d),
                                                                           torch.tensor([0, 2, 1])),
        "grid_sample": lambda d: torch.nn.functional.grid_sample(torch.randn(1, 2, 4, 4).to(d),
                                                                (torch.rand(1, 3, 3, 2) * 2 - 1).to(d),
                                                                align_corners=False),
    }
    for name, call in calls.items():
        with torch.autocast("cpu", dtype=torch.float16):
            theirs = call(torch.float16)
        with flow.autocast("cpu", dtype=F16):
            mine = FP32_MORE[name](F16)
        assert str(theirs.dtype) == f"torch.{mine.dtype.name}" == "torch.float32", name


# ---- functions on the lower-precision list, and functions built of listed ops that are on no list -------------------
LOWER_MORE = {  # PyTorch's lower-precision list, as functions here (Note [Autocast at the function level])
    "addmm": lambda: flow.addmm(_x(3, 5), _x(3, 4), _x(4, 5)),
    "addbmm": lambda: flow.addbmm(_x(3, 5), _x(2, 3, 4), _x(2, 4, 5)),
    "vecdot": lambda: flow.linalg.vecdot(_x(3, 4), _x(3, 4)),
    "prelu": lambda: F.prelu(_x(2, 3), _x(1)),
    "mm of mixed dtypes": lambda: flow.mm(_x(3, 4), _x(4, 5, dtype=F16)),
    "bmm of mixed dtypes": lambda: flow.bmm(_x(2, 3, 4, dtype=F16), _x(2, 4, 5)),
    "multi_dot": lambda: flow.linalg.multi_dot([_x(2, 3), _x(3, 4), _x(4, 2)]),
}
UNLISTED_OF_LISTED_OPS = {  # on no list in PyTorch, matmuls here: their inputs' dtype
    "mv": lambda: flow.mv(_x(3, 4), _x(4)),
    "dot": lambda: flow.dot(_x(4), _x(4)),
    "bilinear": lambda: F.bilinear(_x(2, 3), _x(2, 4), _x(5, 3, 4)),
}


@pytest.mark.parametrize("name", sorted(LOWER_MORE))
def test_functions_on_the_lower_precision_list_run_in_the_autocast_dtype(name):
    with flow.autocast("cpu", dtype=F16):
        assert LOWER_MORE[name]().dtype is F16


@pytest.mark.parametrize("name", sorted(UNLISTED_OF_LISTED_OPS))
def test_unlisted_functions_built_of_listed_ops_keep_their_inputs_dtype(name):
    with flow.autocast("cpu", dtype=F16):
        out, ops = record_ops(UNLISTED_OF_LISTED_OPS[name])
    assert out.dtype is flow.float32 and all(d == "float32" for _, d in ops)  # nothing cast down inside


def test_function_level_policies_equal_torch_autocast():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)

    def a(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    calls = {  # name -> (fn(lib, *tensors), arrays)
        "addmm": (lambda L, x, m, n: L.addmm(x, m, n), [a(3, 5), a(3, 4), a(4, 5)]),
        "addbmm": (lambda L, x, m, n: L.addbmm(x, m, n), [a(3, 5), a(2, 3, 4), a(2, 4, 5)]),
        "vecdot": (lambda L, x, y: L.linalg.vecdot(x, y), [a(3, 4), a(3, 4)]),
        "prelu": (lambda L, x, w: L.nn.functional.prelu(x, w), [a(2, 3), a(1)]),
        "multi_dot": (lambda L, x, y, z: L.linalg.multi_dot([x, y, z]), [a(2, 3), a(3, 4), a(4, 2)]),
        "mv": (lambda L, m, v: L.mv(m, v), [a(3, 4), a(4)]),
        "dot": (lambda L, x, y: L.dot(x, y), [a(4), a(4)]),
        "bilinear": (lambda L, x, y, w: L.nn.functional.bilinear(x, y, w), [a(2, 3), a(2, 4), a(5, 3, 4)]),
    }
    for name, (fn, arrays) in calls.items():
        with torch.autocast("cpu", dtype=torch.float16):
            theirs = fn(torch, *[torch.tensor(x) for x in arrays])
        with flow.autocast("cpu", dtype=F16):
            mine = fn(flow, *[flow.tensor(x) for x in arrays])
        assert str(theirs.dtype) == f"torch.{mine.dtype.name}", name
        # torch's bilinear (``_trilinear``, on no list) returns float32 computed from float16 products inside;
        # ours computes it in float32: the same dtype, values within float16 rounding
        tol = 2.0 ** -8 if mine.dtype is F16 or name == "bilinear" else 1e-5
        np.testing.assert_allclose(mine.float().detach().numpy(), theirs.float().detach().numpy(), rtol=tol,
                                   atol=tol * 4, err_msg=name)


@needs_bf16
def test_index_copy_promotes_as_pytorch():
    """``index_copy`` is on PyTorch's promote list: a float32 input with a float16 / bfloat16 source is float32
    under autocast (without autocast the dtypes must match, as PyTorch)."""
    x, index = flow.ones(3, 4), flow.tensor([0, 2])
    for dtype in (F16, BF16):
        source = flow.full((2, 4), 2.5).to(dtype)
        with flow.autocast("cpu", dtype=dtype):
            y = x.index_copy(0, index, source)
            assert x.to(dtype).index_copy(0, index, source).dtype is dtype  # one dtype: as given
        assert y.dtype is flow.float32 and y.tolist() == [[2.5] * 4, [1.0] * 4, [2.5] * 4]
        name = "Half" if dtype is F16 else "BFloat16"
        with pytest.raises(RuntimeError, match=r"index_copy_\(\): self and source expected to have the same dtype, "
                                               rf"but got \(self\) Float and \(source\) {name}"):
            x.index_copy(0, index, source)
