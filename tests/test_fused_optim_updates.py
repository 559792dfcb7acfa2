"""The fused optimizer update ops (adam_update, momentum_update, rmsprop_update; Note [Fused update ops] in
optim/optimizer.py): one op per parameter writing the parameter and its state in place, eagerly and in an nn.Graph,
against the unfused step op by op (``fused_updates(False)``, the reference path) and against NumPy formulas.
"""

from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch.dispatch_key import DispatchKey, keys_below
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import IncludeDispatchKeyGuard
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.interpreters.op_interp_util import dispatch, redispatch
from oneflow_lite.optim.optimizer import fused_updates, fused_updates_enabled

O = flow.optim
F = flow.nn.functional
SHAPES = ((3, 4), (4,), ())

CASES = {
    "adam": lambda p: O.Adam(p, lr=0.1),
    "adam amsgrad wd maximize": lambda p: O.Adam(p, lr=0.1, amsgrad=True, weight_decay=0.1, maximize=True),
    "adam betas": lambda p: O.Adam(p, lr=0.05, betas=(0.3, 0.6), eps=1e-3),
    "adam tensor lr": lambda p: O.Adam(p, lr=flow.tensor(0.1), betas=(0.8, 0.9)),
    "adam capturable": lambda p: O.Adam(p, lr=0.1, capturable=True, amsgrad=True),
    "adamw": lambda p: O.AdamW(p, lr=0.1, weight_decay=0.3),
    "adamw amsgrad": lambda p: O.AdamW(p, lr=0.1, amsgrad=True),
    "sgd momentum": lambda p: O.SGD(p, lr=0.1, momentum=0.9),
    "sgd nesterov wd": lambda p: O.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1),
    "sgd dampening maximize": lambda p: O.SGD(p, lr=0.1, momentum=0.9, dampening=0.3, maximize=True),
    "sgd tensor lr": lambda p: O.SGD(p, lr=flow.tensor(0.05), momentum=0.5),
    "rmsprop": lambda p: O.RMSprop(p, lr=0.01),
    "rmsprop centered momentum wd": lambda p: O.RMSprop(p, lr=0.01, centered=True, momentum=0.9, weight_decay=0.1),
    "rmsprop centered tensor lr maximize": lambda p: O.RMSprop(p, lr=flow.tensor(0.01), centered=True, maximize=True),
    "rmsprop momentum": lambda p: O.RMSprop(p, lr=0.01, alpha=0.4, momentum=0.5),
}
FUSED_OP = {"adam": "adam_update", "sgd": "momentum_update", "rmsprop": "rmsprop_update"}
TOL = {np.float32: {"rtol": 2e-6, "atol": 1e-7}, np.float64: {"rtol": 1e-13, "atol": 1e-15}}


def _params(dtype, rng):
    return [flow.tensor(rng.standard_normal(s).astype(dtype)).requires_grad_() for s in SHAPES]


def _run_eager(make, dtype, fused, steps=5):
    """``steps`` steps on given gradients: the parameters and each parameter's state (arrays) after them."""
    rng = np.random.default_rng(0)
    params = _params(dtype, rng)
    opt = make(params)
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]
    with fused_updates(fused):
        for gs in grads:
            for p, g in zip(params, gs):
                p.grad = flow.tensor(g)
            opt.step()
    return [p.numpy() for p in params], [{k: v.numpy() for k, v in opt.state[p].items()} for p in params]


class _Recorder:
    """The (op type, in place) of every op dispatched inside the ``with`` block (a Python-key handler)."""

    def __enter__(self):
        self.ops = []

        def record(op_expr, ks, inputs, attrs, outputs):
            self.ops.append((op_expr.op_type_name, outputs is not None))
            return redispatch(op_expr, ks & keys_below(DispatchKey.Python), inputs, attrs, outputs)

        self._handle = DISPATCHER.register_fallback(DispatchKey.Python, record)
        self._guard = IncludeDispatchKeyGuard(DispatchKey.Python)
        self._guard.__enter__()
        return self

    def __exit__(self, *exc):
        self._guard.__exit__(*exc)
        self._handle.remove()


# ---- eager: fused against the unfused reference step --------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_fused_step_matches_the_unfused_step(case, dtype):
    (params, states), (ref_params, ref_states) = _run_eager(CASES[case], dtype, True), _run_eager(CASES[case], dtype,
                                                                                                   False)
    for p, r in zip(params, ref_params):
        assert p.dtype == r.dtype
        np.testing.assert_allclose(p, r, **TOL[dtype])
    for s, r in zip(states, ref_states):
        assert s.keys() == r.keys()
        for name in s:  # the state's arithmetic is the unfused step's, op by op (Note [Fused update kernels])
            np.testing.assert_array_equal(s[name], r[name], err_msg=f"state {name}")


@pytest.mark.parametrize("case", ["adam amsgrad wd maximize", "adamw", "sgd nesterov wd", "rmsprop centered momentum wd"])
def test_float16_is_computed_in_float32_and_rounded_once(case):
    (params, states), (ref_params, _) = _run_eager(CASES[case], np.float16, True), _run_eager(CASES[case], np.float64,
                                                                                               True)
    for p, r in zip(params, ref_params):
        assert p.dtype == np.float16
        np.testing.assert_allclose(p.astype(np.float64), r, rtol=2e-2, atol=2e-2)
    assert all(v.dtype == np.float16 for s in states for k, v in s.items() if k != "step")


def test_reference_switch_is_per_thread_and_restored():
    assert fused_updates_enabled()
    with fused_updates(False):
        assert not fused_updates_enabled()
        with fused_updates(True):
            assert fused_updates_enabled()
        assert not fused_updates_enabled()
    assert fused_updates_enabled()
    with pytest.raises(TypeError, match="fused_updates\\(\\): enabled must be a bool, not int"), fused_updates(0):
        pass


# ---- eager: what a step dispatches --------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["adamw amsgrad", "sgd nesterov wd", "rmsprop centered momentum wd"])
def test_a_step_is_one_update_op_per_parameter(case):
    rng = np.random.default_rng(1)
    params = _params(np.float32, rng)
    opt = CASES[case](params)
    fused = FUSED_OP[case.split()[0].rstrip("w")]
    for _ in range(2):  # the first step makes the state; the second is every later step
        for p in params:
            p.grad = flow.tensor(rng.standard_normal(p.shape).astype(np.float32))
        buffers = [p.numpy() for p in params]
        with _Recorder() as rec:
            opt.step()
        assert [p.numpy() is b for p, b in zip(params, buffers)] == [True] * len(params)
    updates = [inplace for op, inplace in rec.ops if op == fused]
    assert updates == [True] * len(params)
    # besides the update, only the step counts' add_ (SGD keeps none)
    assert len(rec.ops) == len(params) * (1 if fused == "momentum_update" else 2)
    with fused_updates(False), _Recorder() as rec:
        opt.step()
    assert fused not in {op for op, _ in rec.ops} and len(rec.ops) > 3 * len(params)


def test_a_scheduled_beta_takes_the_reference_path():
    # a cycled betas[0] is a tensor in a capture (Note [Optimizer steps in a graph]): not an attr of the op
    w = flow.tensor(np.ones(3)).requires_grad_()
    opt = O.Adam([w], lr=0.1, betas=(flow.tensor(0.9, dtype=flow.float64), 0.99))
    w.grad = flow.tensor(np.array([1.0, -2.0, 0.5]))
    with _Recorder() as rec:
        opt.step()
    assert "adam_update" not in {op for op, _ in rec.ops}
    np.testing.assert_allclose(w.numpy(), 1 - 0.1 * np.sign([1.0, -2.0, 0.5]), rtol=1e-7)


# ---- the ops against NumPy ------------------------------------------------------------------------------------
def _np_adam(p, g, m, v, step, lr, b1, b2, eps, wd=0.0, l2=0.0, scale=1.0, max_v=None):
    g = scale * g + l2 * p
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    if max_v is not None:
        max_v = np.maximum(max_v, v)
    vv = v if max_v is None else max_v
    denom = np.sqrt(vv) / np.sqrt(1 - b2 ** step) + eps
    return p * (1 - lr * wd) - lr / (1 - b1 ** step) * m / denom, m, v, max_v


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_update_op_against_numpy(dtype, amsgrad):
    rng = np.random.default_rng(2)
    p, g, m = (rng.standard_normal((2, 5)).astype(dtype) for _ in range(3))
    v, max_v = (np.abs(rng.standard_normal((2, 5))).astype(dtype) for _ in range(2))
    attrs = {"learning_rate_val": 0.01, "beta1": 0.8, "beta2": 0.9, "epsilon": 1e-6, "weight_decay": 0.1,
             "l2": 0.2, "scale": -1.0, "amsgrad": amsgrad}
    expected = _np_adam(*(a.astype(np.float64) for a in (p, g, m, v)), 3.0, 0.01, 0.8, 0.9, 1e-6, wd=0.1, l2=0.2,
                        scale=-1.0, max_v=max_v.astype(np.float64) if amsgrad else None)
    b = OpBuilder("adam_update").input("model").input("model_diff").input("m").input("v")
    if amsgrad:
        b.input("max_v")
    expr = b.input("step").output("out").build()
    tensors = [flow.tensor(a) for a in (p, g, m, v, *([max_v] if amsgrad else []), np.array(3.0, dtype))]
    (out,) = dispatch(expr, tensors, AttrMap(attrs))  # out of place: a new model, the state written in place
    tol = TOL[dtype]
    np.testing.assert_allclose(out.numpy(), expected[0], **tol)
    np.testing.assert_array_equal(tensors[0].numpy(), p)
    np.testing.assert_allclose(tensors[2].numpy(), expected[1], **tol)
    np.testing.assert_allclose(tensors[3].numpy(), expected[2], **tol)
    if amsgrad:
        np.testing.assert_allclose(tensors[4].numpy(), expected[3], **tol)


@pytest.mark.parametrize("nesterov, dampening", [(False, 0.0), (False, 0.4), (True, 0.0)])
def test_momentum_update_op_against_numpy(nesterov, dampening):
    rng = np.random.default_rng(3)
    p, g, b = (rng.standard_normal(6) for _ in range(3))
    expr = OpBuilder("momentum_update").input("model").input("model_diff").input("momentum").input(
        "learning_rate").output("out").build()
    tensors = [flow.tensor(a) for a in (p, g, b, np.array([0.5], np.float32))]
    attrs = AttrMap({"beta": 0.9, "dampening": dampening, "nesterov": nesterov, "l2": 0.1, "scale": 1.0})
    dispatch(expr, tensors, attrs, (tensors[0],))
    ge = g + 0.1 * p
    be = 0.9 * b + (1 - dampening) * ge
    np.testing.assert_allclose(tensors[2].numpy(), be, rtol=1e-14)
    np.testing.assert_allclose(tensors[0].numpy(), p - 0.5 * (ge + 0.9 * be if nesterov else be), rtol=1e-14)


@pytest.mark.parametrize("centered, momentum", [(False, 0.0), (True, 0.0), (True, 0.7)])
def test_rmsprop_update_op_against_numpy(centered, momentum):
    rng = np.random.default_rng(4)
    p, g, buf = (rng.standard_normal(6) for _ in range(3))
    ga, sq = 0.3 * rng.standard_normal(6), np.abs(rng.standard_normal(6)) + 1.0
    b = OpBuilder("rmsprop_update").input("model").input("model_diff").input("mean_square")
    state = [sq]
    if centered:
        b.input("mean_gradient")
        state.append(ga)
    if momentum:
        b.input("momentum_buffer")
        state.append(buf)
    tensors = [flow.tensor(a) for a in (p, g, *state)]
    attrs = AttrMap({"learning_rate_val": 0.01, "decay_rate": 0.9, "epsilon": 1e-8, "centered": centered,
                     "momentum": momentum})
    dispatch(b.output("out").build(), tensors, attrs, (tensors[0],))
    sq_e = 0.9 * sq + 0.1 * g * g
    ga_e = 0.9 * ga + 0.1 * g
    d = np.sqrt(sq_e - ga_e * ga_e if centered else sq_e) + 1e-8
    step = momentum * buf + g / d if momentum else g / d
    np.testing.assert_allclose(tensors[0].numpy(), p - 0.01 * step, rtol=1e-13)
    np.testing.assert_allclose(tensors[2].numpy(), sq_e, rtol=1e-14)
    if centered:
        np.testing.assert_allclose(tensors[3].numpy(), ga_e, rtol=1e-14)
    if momentum:
        np.testing.assert_allclose(tensors[-1].numpy(), step, rtol=1e-13)


def test_update_op_errors_name_the_op_and_the_input():
    def call(*arrays, **attrs):
        b = OpBuilder("adam_update").input("model").input("model_diff").input("m").input("v")
        names = ["max_v", "step", "learning_rate"][:len(arrays) - 4]
        for n in names:
            b.input(n)
        return dispatch(b.output("out").build(), [flow.tensor(a) for a in arrays], AttrMap(attrs))

    z = np.zeros((2, 3))
    with pytest.raises(RuntimeError, match=r"adam_update.*v must have the model's shape \[2, 3\], got \[3\]"):
        call(z, z, z, np.zeros(3), do_bias_correction=False)
    with pytest.raises(RuntimeError, match=r"adam_update.*m must have the model's dtype \(float64\), got float32"):
        call(z, z, z.astype(np.float32), z, do_bias_correction=False)
    with pytest.raises(RuntimeError, match="adam_update.*max_v must be given exactly when amsgrad; amsgrad is True "
                                           "but max_v is missing"):
        call(z, z, z, z, amsgrad=True, do_bias_correction=False)
    with pytest.raises(RuntimeError, match="adam_update.*step must have a floating dtype, got int64"):
        call(z, z, z, z, z, np.array(1), amsgrad=True)
    with pytest.raises(RuntimeError, match=r"adam_update.*learning_rate must have one element, got shape \[2\]"):
        call(z, z, z, z, z, np.array(1.0), np.ones(2), amsgrad=True)


# ---- in an nn.Graph ---------------------------------------------------------------------------------------------
# case -> whether the captured step is fused: with a tensor lr, a capture makes betas[0] / momentum tensors too
# (lift_scheduled, for the schedulers that cycle them), which the ops take as attrs: the reference step runs
GRAPH_CASES = {"adam amsgrad wd maximize": True, "adamw": True, "adam tensor lr": False, "sgd nesterov wd": True,
               "sgd tensor lr": False, "rmsprop centered momentum wd": True, "rmsprop centered tensor lr maximize": True}


class _Step(flow.nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, t):
        loss = F.cross_entropy(self.model(x), t)
        loss.backward()
        return loss


def _mlp(dtype):
    flow.manual_seed(0)
    return flow.nn.Sequential(flow.nn.Linear(3, 5), flow.nn.Tanh(), flow.nn.Linear(5, 2)).to(dtype=dtype)


def _train(case, dtype, graph: bool, fused: bool, steps=4):
    model = _mlp(dtype)
    opt = CASES[case](list(model.parameters()))
    rng = np.random.default_rng(5)
    step = _Step(model, opt) if graph else None
    buffers = [p.numpy() for p in model.parameters()]
    losses = []
    with fused_updates(fused):
        for _ in range(steps):
            x, t = flow.tensor(rng.standard_normal((6, 3)).astype(dtype.np_dtype)), flow.tensor(rng.integers(0, 2, 6))
            if graph:
                losses.append(step(x, t).item())
            else:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), t)
                loss.backward()
                opt.step()
                losses.append(loss.item())
    assert all(p.numpy() is b for p, b in zip(model.parameters(), buffers))
    return losses, [p.numpy().copy() for p in model.parameters()], step


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", GRAPH_CASES)
def test_a_graph_runs_the_fused_update_in_place(case, dtype):
    losses, params, graph = _train(case, dtype, graph=True, fused=True)
    eager_losses, eager_params, _ = _train(case, dtype, graph=False, fused=True)
    ref_losses, ref_params, ref_graph = _train(case, dtype, graph=True, fused=False)
    tol = TOL[dtype.np_dtype.type]
    np.testing.assert_allclose(losses, eager_losses, **tol)
    np.testing.assert_allclose(losses, ref_losses, **tol)
    for p, e, r in zip(params, eager_params, ref_params):
        np.testing.assert_allclose(p, e, **tol)
        np.testing.assert_allclose(p, r, **tol)
    fused = FUSED_OP[case.split()[0].rstrip("w")]
    assert fused not in ref_graph.plan_source
    if GRAPH_CASES[case]:
        assert graph.plan_source.count(f"'{fused}") == 4  # one writer call per parameter
        # the parameters are written in place (a step count read by the update is copied into its tensor)
        (assigns,) = [r for r in graph._last.reports if r.startswith("in-place assigns")]
        assert int(assigns.split()[2]) >= 4
    else:
        assert fused not in graph.plan_source


@pytest.mark.parametrize("op_type, n_states, attrs", [
    ("adam_update", 2, {"learning_rate_val": 0.1, "weight_decay": 0.1, "do_bias_correction": False}),
    ("momentum_update", 1, {"learning_rate_val": 0.1, "nesterov": True}),
    ("rmsprop_update", 2, {"learning_rate_val": 0.1, "centered": True}),
])
def test_the_graph_writer_may_write_into_the_gradients_buffer(op_type, n_states, attrs):
    # Note [Borrowed buffers] in graph/compiler.py: the memory plan may give the writer the dead gradient as `out`
    rng = np.random.default_rng(6)
    model, diff = rng.standard_normal(5), rng.standard_normal(5)
    states = [np.abs(rng.standard_normal(5)) for _ in range(n_states)]
    names = {"adam_update": ("m", "v"), "momentum_update": ("momentum",),
             "rmsprop_update": ("mean_square", "mean_gradient")}[op_type]
    b = OpBuilder(op_type).input("model").input("model_diff")
    for n in names:
        b.input(n)
    expr, attr_map = b.output("out").build(), AttrMap(attrs)
    tensors = [flow.tensor(a) for a in (model, diff, *states)]
    (expected,) = dispatch(expr, tensors, attr_map)  # the kernel, out of place
    res = expr.infer(tuple(t._meta for t in tensors), attr_map)
    (reg,) = DISPATCHER.entry(op_type).kernels["cpu"]
    writer = reg.out_variant(res, tuple(t.dtype for t in tensors))
    arrays = [model.copy(), diff.copy(), *[s.copy() for s in states]]
    writer(arrays[1], *arrays)  # out is model_diff's buffer
    np.testing.assert_array_equal(arrays[1], expected.numpy())
    np.testing.assert_array_equal(arrays[0], model)


# ---- skip_if (Note [skip_if] in ops/model_update.py) -----------------------------------------------------------------
_SKIP_CASES = {  # op type -> (state input names, attrs)
    "adam_update": (("m", "v", "max_v"), {"learning_rate_val": 0.1, "amsgrad": True, "do_bias_correction": False}),
    "momentum_update": (("momentum",), {"learning_rate_val": 0.1, "beta": 0.9}),
    "rmsprop_update": (("mean_square", "mean_gradient", "momentum_buffer"),
                       {"learning_rate_val": 0.1, "centered": True, "momentum": 0.5}),
}


def _skip_call(op_type, skip_value, dtype=np.float32, lr_tensor=False, in_place=True):
    """One call of ``op_type`` with ``skip_if = skip_value`` (None: no skip_if input) on fresh arrays; returns
    (model and states before, model and states after, the result)."""
    states, attrs = _SKIP_CASES[op_type]
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(5).astype(dtype) for _ in range(2)] + [
        np.abs(rng.standard_normal(5)).astype(dtype) + 1 for _ in states]
    b = OpBuilder(op_type).input("model").input("model_diff")
    for name in states:
        b.input(name)
    extra = []
    if lr_tensor:
        b.input("learning_rate")
        extra.append(np.array([0.05], np.float32))
    if skip_value is not None:
        b.input("skip_if")
        extra.append(np.asarray(skip_value))
    tensors = [flow.tensor(a) for a in arrays + extra]
    (out,) = dispatch(b.output("out").build(), tensors, AttrMap(attrs), (tensors[0],) if in_place else None)
    return arrays, [t.numpy() for t in tensors[:len(arrays)]], out.numpy()


@pytest.mark.parametrize("op_type", sorted(_SKIP_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_a_nonzero_skip_if_leaves_the_model_and_the_state_unchanged(op_type, dtype):
    for skip in (np.array(1, np.int64), np.array([3], np.int32), np.array(True)):
        for in_place in (True, False):
            before, after, out = _skip_call(op_type, skip, dtype, lr_tensor=True, in_place=in_place)
            for b, a in zip(before, after):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(out, before[0])  # the new model is the old one
    # a zero skip_if is the op without it, bit for bit (and the step changes something)
    for lr_tensor in (False, True):
        _, plain, out_plain = _skip_call(op_type, None, dtype, lr_tensor)
        before, after, out = _skip_call(op_type, np.array(0, np.int64), dtype, lr_tensor)
        for p, a in zip(plain, after):
            np.testing.assert_array_equal(a, p)
        assert not np.array_equal(after[0], before[0]) and not np.array_equal(after[2], before[2])


def test_skip_if_must_be_one_integer_or_bool_element():
    for bad, what in ((np.array(1.0, np.float32), "skip_if must have an integer or bool dtype, got float32"),
                      (np.array([0, 0], np.int64), r"skip_if must have one element, got shape \[2\]")):
        with pytest.raises(Exception, match=rf"momentum_update.*{what}"):
            _skip_call("momentum_update", bad)


def test_skipping_updates_gives_every_fused_update_the_skip_if_input():
    from oneflow_lite.optim.optimizer import skipping_updates

    for make in (lambda p: O.Adam(p, lr=0.1), lambda p: O.SGD(p, lr=0.1, momentum=0.9),
                 lambda p: O.RMSprop(p, lr=0.1, centered=True)):
        params = _params(np.float32, np.random.default_rng(0))
        opt = make(params)
        for p in params:
            p.grad = flow.ones_like(p)
        opt.step()  # state made, one step taken
        before = [p.numpy().copy() for p in params]
        state = [{k: v.numpy().copy() for k, v in opt.state[p].items() if k != "step"} for p in params]
        with skipping_updates(flow.tensor(1)) as updated:
            opt.step()
        assert [id(p) for p in updated] == [id(p) for p in params]
        for p, b, s in zip(params, before, state):
            np.testing.assert_array_equal(p.numpy(), b)
            for k, v in s.items():
                np.testing.assert_array_equal(opt.state[p][k].numpy(), v)
        with skipping_updates(flow.tensor(0)):
            opt.step()
        assert not np.array_equal(params[0].numpy(), before[0])
    with pytest.raises(TypeError, match="skipping_updates.*skip_if must be a one-element integer or bool tensor"):
        with skipping_updates(flow.tensor(1.0)):
            pass
