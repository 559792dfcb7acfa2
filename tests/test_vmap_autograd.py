"""vmap and autograd ([ext] item 6): gradients through vmap's outputs (Note [Gradients through vmap's outputs] in
func/vmap_autograd.py), ``backward()`` refused inside vmap (PyTorch's error), and the batch rules of ``index``
with batched indices and ``layer_norm`` with batched weights (no per-sample loop). References: the same
computation on the whole batch without vmap, or a Python loop over the samples."""

import contextlib
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
import oneflow_lite.nn.functional as F
from oneflow_lite import nn
from oneflow_lite.autograd import engine
from oneflow_lite.interpreters import batched as batched_interp

B = 4


def r(*shape, seed=0):
    return flow.tensor(np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float32))


@contextlib.contextmanager
def _no_loop_warning():
    """No op runs once per sample (the loop fallback warns) and nothing else warns."""
    batched_interp._warned.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---- backward() inside vmap ---------------------------------------------------------------------------------------
_MESSAGE = (r"backward\(\) called inside a functorch transform. This is not supported, please use functorch.grad or "
            r"functorch.vjp instead or call backward\(\) outside of functorch transforms.")


def test_backward_inside_vmap_raises_pytorchs_error():
    hooks = len(engine._backward_entry_hooks)
    w = r(5).requires_grad_()
    with pytest.raises(RuntimeError, match=_MESSAGE + r" \(flow.vmap: use flow.func.grad"):
        flow.vmap(lambda v: (v * w).sum().backward())(r(B, 5))
    with pytest.raises(RuntimeError, match=_MESSAGE):
        flow.vmap(lambda v: flow.autograd.backward((v * w).sum()))(r(B, 5))
    assert w.grad is None and not batched_interp.active_levels()
    assert len(engine._backward_entry_hooks) == hooks  # added by the outermost vmap call only, then removed
    (r(5) * w).sum().backward()  # outside vmap: as usual
    assert w.grad is not None


def test_backward_inside_vmap_message_equals_torch():
    torch = pytest.importorskip("torch")
    tw = torch.randn(5, requires_grad=True)
    with pytest.raises(RuntimeError) as theirs:
        torch.vmap(lambda v: (v * tw).sum().backward())(torch.randn(B, 5))
    with pytest.raises(RuntimeError) as mine:
        flow.vmap(lambda v: (v * r(5).requires_grad_()).sum().backward())(r(B, 5))
    assert str(mine.value).startswith(str(theirs.value))


# ---- grad(vmap(f)) ----------------------------------------------------------------------------------------------
def _mlp():
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def test_gradients_reach_the_parameters_a_vmapped_function_closed_over():
    """The digits-style per-sample loss, vmapped, then ``.mean().backward()``: the parameters' grads equal those of
    the batched computation without vmap."""
    model = _mlp()
    xs, ys = r(B, 6), flow.tensor([0, 2, 1, 2])

    def per_sample(x, y):
        return F.cross_entropy(model(x[None]), y[None])

    with _no_loop_warning():
        losses = flow.vmap(per_sample)(xs, ys)
    assert losses.requires_grad and losses.grad_fn.name() == "VmapBackward"
    losses.mean().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    F.cross_entropy(model(xs), ys).backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_func_grad_of_vmap_equals_the_batched_computation():
    w, x = r(3, 5), r(B, 5)
    g = flow.func.grad(lambda w_: flow.vmap(lambda v: (w_ @ v).tanh().sum())(x).sum())(w)
    expected = flow.func.grad(lambda w_: (x @ w_.T).tanh().sum())(w)
    np.testing.assert_allclose(g.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_reach_mapped_inputs_at_their_in_dim():
    x = r(5, B).requires_grad_()
    w = r(5)
    out = flow.vmap(lambda v: (v * v * w).sum(), in_dims=1)(x)
    (g,) = flow.autograd.grad(out.sum(), x)
    np.testing.assert_allclose(g.numpy(), 2 * x.detach().numpy() * w.numpy()[:, None], rtol=1e-6)
    y = r(B, 3).requires_grad_()
    flow.vmap(lambda v: v)(y).sum().backward()  # the identity: the output is the mapped input itself
    np.testing.assert_array_equal(y.grad.numpy(), np.ones((B, 3), np.float32))


def test_several_outputs_out_dims_and_an_output_that_does_not_require_grad():
    w = r(3, 5).requires_grad_()
    x = r(B, 5)
    a, n, c = flow.vmap(lambda v: (w @ v, v.sum(), (w @ v).sum()), out_dims=(1, 0, 0))(x)
    assert tuple(a.shape) == (3, B) and not n.requires_grad and a.grad_fn is c.grad_fn
    (a.sum() * 2 + c.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), 3 * np.broadcast_to(x.numpy().sum(0), (3, 5)), rtol=1e-5)


def test_a_closed_over_tensor_computed_before_the_call_and_its_hooks():
    base = r(5).requires_grad_()
    seen = []
    base.register_hook(lambda g: seen.append(g.numpy().copy()))
    scale = base * 2  # its backward node runs in the outer backward, once
    x = r(B, 5)
    flow.vmap(lambda v: (v * scale).sum())(x).sum().backward()
    np.testing.assert_allclose(base.grad.numpy(), 2 * x.numpy().sum(0), rtol=1e-6)
    assert len(seen) == 1 and seen[0].shape == (5,)  # the summed grad, not one per sample


def test_nested_vmap_and_chunks():
    w = r(3, 5).requires_grad_()
    xs = r(2, B, 5)
    flow.vmap(flow.vmap(lambda v: (w @ v).exp().sum()))(xs).sum().backward()
    expected = np.exp(xs.numpy() @ w.detach().numpy().T)[..., None] * xs.numpy()[..., None, :]
    np.testing.assert_allclose(w.grad.numpy(), expected.sum((0, 1)), rtol=1e-5)
    w.grad = None
    flow.vmap(lambda v: (w @ v).exp().sum(), chunk_size=3)(xs[0]).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), expected[0].sum(0), rtol=1e-5)


def test_a_second_backward_needs_retain_graph():
    w = r(5).requires_grad_()
    out = flow.vmap(lambda v: (v * w).sum())(r(B, 5))
    out.sum().backward(retain_graph=True)
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * r(B, 5).numpy().sum(0), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.sum().backward()


def test_vmap_of_grad_is_unchanged_and_no_grad_gives_plain_outputs():
    w = r(3, 5)
    per_sample = flow.vmap(flow.func.grad(lambda w_, v: (w_ @ v).sum()), in_dims=(None, 0))(w, r(B, 5))
    assert not per_sample.requires_grad
    np.testing.assert_allclose(per_sample.numpy(), np.broadcast_to(r(B, 5).numpy()[:, None, :], (B, 3, 5)))
    wg = r(3, 5).requires_grad_()
    with flow.no_grad():
        assert not flow.vmap(lambda v: wg @ v)(r(B, 5)).requires_grad


def test_grad_of_vmap_equals_torch_func():
    torch = pytest.importorskip("torch")
    w, x = r(3, 5), r(B, 5)
    mine = flow.func.grad(lambda w_: flow.vmap(lambda v: F.softmax(w_ @ v, 0)[0])(x).sum())(w)
    tw, tx = torch.tensor(w.numpy()), torch.tensor(x.numpy())
    theirs = torch.func.grad(lambda w_: torch.vmap(lambda v: torch.softmax(w_ @ v, 0)[0])(tx).sum())(tw)
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7)


# ---- batch rules: index with batched indices, layer_norm with batched weights --------------------------------------
@pytest.mark.parametrize("name", ["x[i]", "x[:, j]", "x[:, :, j]", "x[i, :, j]", "x[:, i, j]", "unbatched x"])
def test_index_with_batched_indices_has_a_rule(name):
    x, i, j = r(B, 5, 6, 4), flow.randint(0, 5, (B, 2, 3)), flow.randint(0, 4, (B, 3))
    f = {"x[i]": lambda x, i, j: x[i], "x[:, j]": lambda x, i, j: x[:, j % 6],
         "x[:, :, j]": lambda x, i, j: x[:, :, j], "x[i, :, j]": lambda x, i, j: x[i[0], :, j],
         "x[:, i, j]": lambda x, i, j: x[:, i[0], j], "unbatched x": lambda x, i, j: x[i]}[name]
    in_dims = (None, 0, 0) if name == "unbatched x" else (0, 0, 0)
    xs = x[0] if name == "unbatched x" else x
    with _no_loop_warning():
        got = flow.vmap(f, in_dims=in_dims)(xs, i, j)
    expected = np.stack([f(xs if in_dims[0] is None else x[b], i[b], j[b]).numpy() for b in range(B)])
    np.testing.assert_array_equal(got.numpy(), expected)


def test_per_sample_grads_through_batched_indices_and_setitem_have_rules():
    x, i, j = r(B, 5, 6), flow.randint(0, 5, (B, 2)), flow.randint(0, 6, (B, 2))

    def loss(v, i, j):
        return (v[i, j] ** 2).sum() + (v[:, j] ** 3).sum()

    with _no_loop_warning():
        got = flow.vmap(flow.func.grad(loss))(x, i, j)
    for b in range(B):
        np.testing.assert_allclose(got[b].numpy(), flow.func.grad(loss)(x[b], i[b], j[b]).numpy(), rtol=1e-6)

    def put(v, i, value):
        w = v.clone()
        w[:, i] = value
        return w

    values = r(B, 5, 2)
    with _no_loop_warning():
        got = flow.vmap(put)(x, j, values)
    for b in range(B):
        np.testing.assert_array_equal(got[b].numpy(), put(x[b], j[b], values[b]).numpy())


def test_layer_norm_with_batched_weights_has_a_rule_and_per_sample_grads():
    x, gamma, beta = r(B, 3, 6), r(B, 6, seed=1), r(B, 6, seed=2)

    def f(x, g, b):
        return F.layer_norm(x, (6,), g, b)

    with _no_loop_warning():
        got = flow.vmap(f)(x, gamma, beta)
        only_gamma = flow.vmap(lambda g: F.layer_norm(x[0], (6,), g, None))(gamma)
        grads = flow.vmap(flow.func.grad(lambda x, g, b: (f(x, g, b) ** 2).sum(), argnums=(0, 1, 2)))(x, gamma, beta)
    for b in range(B):
        np.testing.assert_allclose(got[b].numpy(), f(x[b], gamma[b], beta[b]).numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(only_gamma[b].numpy(), F.layer_norm(x[0], (6,), gamma[b]).numpy(), rtol=1e-6,
                                   atol=1e-6)
        expected = flow.func.grad(lambda x, g, b: (f(x, g, b) ** 2).sum(), argnums=(0, 1, 2))(x[b], gamma[b], beta[b])
        for got_g, exp_g in zip(grads, expected):
            np.testing.assert_allclose(got_g[b].numpy(), exp_g.numpy(), rtol=1e-5, atol=1e-5)


# ---- jacrev / jacfwd / hessian / stack_module_state (Note [Jacobians by rows]) ----------------------------
def test_jacrev_jacfwd_and_hessian_against_closed_forms():
    from oneflow_lite.func import hessian, jacfwd, jacrev, vmap
    x_np = np.array([0.5, -1.0, 2.0], np.float32)
    x = flow.tensor(x_np)
    np.testing.assert_allclose(jacrev(lambda v: v.sin() * v.sum())(x).numpy(),
                               np.diag(np.cos(x_np) * x_np.sum()) + np.sin(x_np)[:, None], rtol=1e-6)
    np.testing.assert_allclose(jacfwd(lambda v: v ** 2)(x).numpy(), np.diag(2 * x_np), rtol=1e-6)
    # f = sum x^3 + x0 x1 x2: H = diag(6 x) + the products of the other coordinates off the diagonal
    expect = np.diag(6 * x_np) + np.array([[0, x_np[2], x_np[1]], [x_np[2], 0, x_np[0]], [x_np[1], x_np[0], 0]])
    np.testing.assert_allclose(hessian(lambda v: (v ** 3).sum() + v[0] * v[1] * v[2])(x).numpy(), expect, rtol=1e-6)
    (da, db), (ea, eb) = jacrev(lambda a, b: (a * b, a + b), argnums=(0, 1))(x, x * 2)
    np.testing.assert_allclose(da.numpy(), np.diag(2 * x_np))
    np.testing.assert_allclose(db.numpy(), np.diag(x_np))
    np.testing.assert_array_equal(ea.numpy(), np.eye(3))
    jac, aux = jacrev(lambda v: (v * 3, v.sum()), has_aux=True)(x)
    np.testing.assert_array_equal(jac.numpy(), 3 * np.eye(3))
    assert aux.item() == pytest.approx(x_np.sum())
    batch = flow.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(vmap(jacrev(lambda v: (v ** 2).sum()))(batch).numpy(), 2 * batch.numpy())


def test_stack_module_state_ensembles_through_vmap_and_functional_call():
    import copy
    from oneflow_lite.func import functional_call, stack_module_state, vmap
    models = [flow.nn.Linear(3, 2) for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert {k: tuple(v.shape) for k, v in params.items()} == {"weight": (3, 2, 3), "bias": (3, 2)}
    assert all(v.is_leaf and v.requires_grad for v in params.values()) and buffers == {}
    base = copy.deepcopy(models[0])
    x = flow.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    out = vmap(lambda p, b, inp: functional_call(base, (p, b), (inp,)), in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].numpy(), m(x).detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Expected all models to be of the same class"):
        stack_module_state([flow.nn.Linear(3, 2), flow.nn.Identity()])
