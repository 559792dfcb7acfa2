"""flow.optim: SGD, Adam, AdamW, RMSprop and the Optimizer base.

Every update is checked against PyTorch's documented algorithm, written out below in
NumPy (float64) for several steps. The loss is the quadratic
``sum(0.5 * a * w**2 + b * w)`` whose gradient ``a * w + b`` the references compute by hand.
"""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.optim.optimizer import required

STEPS = 4
A = np.array([[1.0, 2.0, 0.5], [3.0, 0.25, 1.5]])
B = np.array([[0.5, -1.0, 2.0], [-0.3, 0.7, -2.5]])
W0 = np.array([[0.3, -0.8, 1.2], [0.5, 2.0, -1.1]])


def grad_of(w):
    return A * w + B


def make_param(values=W0, dtype=np.float64):
    return flow.tensor(np.asarray(values, dtype=dtype)).requires_grad_()


def backward(w):
    a, b = flow.tensor(A.astype(w.numpy().dtype)), flow.tensor(B.astype(w.numpy().dtype))
    (0.5 * a * w * w + b * w).sum().backward()


def run(opt_cls, steps=STEPS, dtype=np.float64, **kwargs):
    """Train one parameter for ``steps`` steps; the parameter after each step."""
    w = make_param(dtype=dtype)
    opt = opt_cls([w], **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        backward(w)
        opt.step()
        out.append(w.numpy().copy())
    return out


# ---- NumPy references (PyTorch's algorithms) --------------------------------------------------------
def ref_sgd(steps=STEPS, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    # maximize negates the gradient first, as PyTorch's SGD does (its pseudo-code flips the sign in the
    # final update instead, which differs only in the sign of the weight-decay term)
    w, buf, out = W0.copy(), None, []
    for _ in range(steps):
        g = grad_of(w)
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
        out.append(w)
    return out


def ref_adam(steps=STEPS, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
             decoupled=False):
    b1, b2 = betas
    w, m, v, vmax, out = W0.copy(), np.zeros_like(W0), np.zeros_like(W0), np.zeros_like(W0), []
    for t in range(1, steps + 1):
        g = grad_of(w)
        if maximize:
            g = -g
        if weight_decay:
            if decoupled:
                w = w * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            v_hat = vmax / (1 - b2 ** t)
        else:
            v_hat = v / (1 - b2 ** t)
        w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(w)
    return out


def ref_rmsprop(steps=STEPS, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                maximize=False):
    w, v, g_avg, buf, out = W0.copy(), np.zeros_like(W0), np.zeros_like(W0), np.zeros_like(W0), []
    for _ in range(steps):
        g = grad_of(w)
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * w
        v = alpha * v + (1 - alpha) * g * g
        v_tilde = v
        if centered:
            g_avg = alpha * g_avg + (1 - alpha) * g
            v_tilde = v - g_avg * g_avg
        if momentum > 0:
            buf = momentum * buf + g / (np.sqrt(v_tilde) + eps)
            w = w - lr * buf
        else:
            w = w - lr * g / (np.sqrt(v_tilde) + eps)
        out.append(w)
    return out


def assert_steps(got, expected, rtol=1e-12, atol=1e-12):
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"after step {i + 1}")


# ---- the algorithms ---------------------------------------------------------------------------------
SGD_CASES = [
    {"lr": 0.1},
    {"lr": 0.05, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.3},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True},
    {"lr": 0.1, "weight_decay": 0.2},
    {"lr": 0.1, "maximize": True},
    {"lr": 0.05, "momentum": 0.7, "weight_decay": 0.1, "maximize": True},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.5, "weight_decay": 0.05},
]


@pytest.mark.parametrize("kwargs", SGD_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_sgd(kwargs):
    assert_steps(run(flow.optim.SGD, **kwargs), ref_sgd(**kwargs))


def test_sgd_default_lr():
    assert_steps(run(flow.optim.SGD), ref_sgd(lr=1e-3))


ADAM_CASES = [
    {"lr": 0.1},
    {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3},
    {"lr": 0.1, "weight_decay": 0.3},
    {"lr": 0.2, "betas": (0.9, 0.5), "amsgrad": True},
    {"lr": 0.1, "maximize": True},
    {"lr": 0.1, "betas": (0.5, 0.6), "amsgrad": True, "weight_decay": 0.1, "maximize": True},
]


@pytest.mark.parametrize("kwargs", ADAM_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_adam(kwargs):
    assert_steps(run(flow.optim.Adam, steps=5, **kwargs), ref_adam(steps=5, **kwargs))


def test_adam_defaults_and_amsgrad_matters():
    assert_steps(run(flow.optim.Adam), ref_adam())
    kw = {"lr": 0.2, "betas": (0.9, 0.5)}
    plain, ams = ref_adam(steps=6, **kw), ref_adam(steps=6, amsgrad=True, **kw)
    assert not np.allclose(plain[-1], ams[-1])  # the case exercises the running maximum
    assert_steps(run(flow.optim.Adam, steps=6, amsgrad=True, **kw), ams)


ADAMW_CASES = [
    {"lr": 0.1},
    {"lr": 0.1, "weight_decay": 0.5},
    {"lr": 0.2, "betas": (0.9, 0.5), "amsgrad": True, "weight_decay": 0.1},
    {"lr": 0.1, "maximize": True, "weight_decay": 0.2},
    {"lr": 0.1, "weight_decay": 0},
]


@pytest.mark.parametrize("kwargs", ADAMW_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_adamw(kwargs):
    expected = ref_adam(steps=5, decoupled=True, **{"weight_decay": 1e-2, **kwargs})
    assert_steps(run(flow.optim.AdamW, steps=5, **kwargs), expected)


def test_adamw_differs_from_adam_with_l2():
    adam, adamw = ref_adam(lr=0.1, weight_decay=0.5), ref_adam(lr=0.1, weight_decay=0.5, decoupled=True)
    assert not np.allclose(adam[-1], adamw[-1])
    assert_steps(run(flow.optim.AdamW, lr=0.1, weight_decay=0.5), adamw)


RMSPROP_CASES = [
    {},
    {"lr": 0.05, "alpha": 0.9, "eps": 1e-4},
    {"lr": 0.05, "weight_decay": 0.2},
    {"lr": 0.01, "momentum": 0.9},
    {"lr": 0.01, "alpha": 0.8, "centered": True},
    {"lr": 0.01, "alpha": 0.8, "centered": True, "momentum": 0.5, "weight_decay": 0.1, "maximize": True},
]


@pytest.mark.parametrize("kwargs", RMSPROP_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_rmsprop(kwargs):
    assert_steps(run(flow.optim.RMSprop, steps=5, **kwargs), ref_rmsprop(steps=5, **kwargs))


@pytest.mark.parametrize("opt_cls, ref, kwargs", [
    (flow.optim.SGD, ref_sgd, {"lr": 0.05, "momentum": 0.9}),
    (flow.optim.Adam, ref_adam, {"lr": 0.1, "amsgrad": True, "betas": (0.9, 0.5)}),
    (flow.optim.RMSprop, ref_rmsprop, {"lr": 0.01, "centered": True, "momentum": 0.5}),
])
def test_float32_parameters(opt_cls, ref, kwargs):
    out = run(opt_cls, dtype=np.float32, **kwargs)
    assert all(o.dtype == np.float32 for o in out)
    assert_steps(out, ref(**kwargs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt_cls, ref, kwargs", [
    (flow.optim.Adam, ref_adam, {"lr": 0.1, "betas": (0.9, 0.5), "amsgrad": True, "weight_decay": 0.1}),
    (flow.optim.AdamW, lambda **k: ref_adam(decoupled=True, **k), {"lr": 0.1, "weight_decay": 0.3}),
    (flow.optim.RMSprop, ref_rmsprop, {"lr": 0.01, "momentum": 0.5, "centered": True}),
])
def test_capturable_matches(opt_cls, ref, kwargs):
    # capturable=True: the step count and bias corrections stay 0-d (float32) tensors
    assert_steps(run(opt_cls, capturable=True, **kwargs), ref(**kwargs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opt_cls, ref, kwargs, capturable", [
    (flow.optim.SGD, ref_sgd, {"momentum": 0.9, "nesterov": True}, False),
    (flow.optim.Adam, ref_adam, {"amsgrad": True}, False),
    (flow.optim.Adam, ref_adam, {"amsgrad": True}, True),
    (flow.optim.AdamW, lambda **k: ref_adam(decoupled=True, weight_decay=1e-2, **k), {}, False),
    (flow.optim.AdamW, lambda **k: ref_adam(decoupled=True, weight_decay=1e-2, **k), {}, True),
    (flow.optim.RMSprop, ref_rmsprop, {"momentum": 0.5}, False),
    (flow.optim.RMSprop, ref_rmsprop, {}, True),
])
def test_tensor_lr(opt_cls, ref, kwargs, capturable):
    extra = {"capturable": True} if capturable else {}
    lr = flow.tensor(0.05, dtype=flow.float64)
    out = run(opt_cls, lr=lr, **kwargs, **extra)
    assert_steps(out, ref(lr=0.05, **kwargs), rtol=1e-5 if capturable else 1e-12, atol=1e-5 if capturable else 1e-12)


def test_parameters_without_grad_are_skipped():
    w, frozen = make_param(), make_param()
    opt = flow.optim.Adam([w, frozen], lr=0.1)
    backward(w)
    opt.step()
    np.testing.assert_array_equal(frozen.numpy(), W0)
    assert frozen not in opt.state and set(opt.state[w]) == {"step", "exp_avg", "exp_avg_sq"}
    assert opt.state[w]["step"].item() == 1.0 and opt.state[w]["step"].dtype is flow.float32


def test_state_tensors():
    w = make_param()
    sgd = flow.optim.SGD([w], lr=0.1)
    backward(w)
    sgd.step()
    assert len(sgd.state) == 0  # no momentum: no state, as in PyTorch
    w = make_param()
    rms = flow.optim.RMSprop([w], momentum=0.5, centered=True)
    backward(w)
    rms.step()
    st = rms.state[w]
    assert set(st) == {"step", "square_avg", "momentum_buffer", "grad_avg"}
    g = grad_of(W0)
    np.testing.assert_allclose(st["square_avg"].numpy(), 0.01 * g * g, rtol=1e-12)
    np.testing.assert_allclose(st["grad_avg"].numpy(), 0.01 * g, rtol=1e-12)
    assert all(isinstance(v, flow.Tensor) for v in st.values())


def test_hyperparameters_turned_on_later():
    # PyTorch raises KeyError here; the missing state starts at zero, like a fresh state
    w = make_param()
    opt = flow.optim.Adam([w], lr=0.2, betas=(0.9, 0.5))
    backward(w)
    opt.step()
    opt.param_groups[0]["amsgrad"] = True
    opt.zero_grad()
    backward(w)
    opt.step()
    # the running maximum starts at zero at step 2, so this step equals plain Adam's
    np.testing.assert_array_equal(opt.state[w]["max_exp_avg_sq"].numpy(), opt.state[w]["exp_avg_sq"].numpy())
    np.testing.assert_allclose(w.numpy(), ref_adam(steps=2, lr=0.2, betas=(0.9, 0.5))[-1], rtol=1e-12)


# ---- param groups -----------------------------------------------------------------------------------
def test_param_groups_with_different_hyperparameters():
    w1, w2 = make_param(), make_param()
    opt = flow.optim.SGD([{"params": [w1]}, {"params": w2, "lr": 0.01, "momentum": 0.9}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0
    assert opt.param_groups[1]["lr"] == 0.01 and opt.param_groups[1]["params"] == [w2]
    for _ in range(STEPS):
        opt.zero_grad()
        backward(w1)
        backward(w2)
        opt.step()
    np.testing.assert_allclose(w1.numpy(), ref_sgd(lr=0.1)[-1], rtol=1e-12)
    np.testing.assert_allclose(w2.numpy(), ref_sgd(lr=0.01, momentum=0.9)[-1], rtol=1e-12)


def test_add_param_group():
    w1, w2 = make_param(), make_param()
    opt = flow.optim.Adam([w1], lr=0.1)
    group = {"params": w2, "betas": (0.8, 0.9)}
    opt.add_param_group(group)
    assert group == {"params": w2, "betas": (0.8, 0.9)}  # the caller's dict is left alone
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["betas"] == (0.8, 0.9)
    assert opt.param_groups[1]["params"] == [w2]
    for _ in range(3):
        opt.zero_grad()
        backward(w1)
        backward(w2)
        opt.step()
    np.testing.assert_allclose(w2.numpy(), ref_adam(steps=3, lr=0.1, betas=(0.8, 0.9))[-1], rtol=1e-12)


def test_param_group_errors_change_nothing():
    w1, w2 = make_param(), make_param()
    opt = flow.optim.SGD([w1], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [w2, w1]})
    with pytest.raises(ValueError, match="Invalid learning rate: -0.5"):
        opt.add_param_group({"params": [w2], "lr": -0.5})
    with pytest.raises(TypeError, match="param_group must be a dict, but got list"):
        opt.add_param_group([w2])
    with pytest.raises(ValueError, match="'params' entry"):
        opt.add_param_group({"lr": 0.1})
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {w2}})
    assert len(opt.param_groups) == 1
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        flow.optim.SGD([{"params": [w1]}, {"params": [w1]}])


def test_constructor_errors():
    w = make_param()
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        flow.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got oneflow_lite.DoubleTensor"):
        flow.optim.SGD(w, lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        flow.optim.SGD([w, 3], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        flow.optim.SGD([w * 2], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        flow.optim.SGD([w, w], lr=0.1)


def test_plain_tensors_and_generators():
    # leaf tensors with or without requires_grad, from any iterable (as model.parameters())
    w, c = make_param(), flow.tensor([1.0, 2.0])
    opt = flow.optim.SGD((p for p in [w, c]), lr=0.1)
    assert opt.param_groups[0]["params"] == [w, c]
    backward(w)
    opt.step()
    np.testing.assert_allclose(w.numpy(), ref_sgd(steps=1, lr=0.1)[-1], rtol=1e-12)
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("make, message", [
    (lambda p: flow.optim.SGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: flow.optim.SGD(p, lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda p: flow.optim.SGD(p, lr=0.1, weight_decay=-1e-4), "Invalid weight_decay value: -0.0001"),
    (lambda p: flow.optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: flow.optim.Adam(p, lr=-0.001), "Invalid learning rate: -0.001"),
    (lambda p: flow.optim.Adam(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: flow.optim.Adam(p, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: flow.optim.Adam(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: flow.optim.Adam(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: flow.optim.AdamW(p, weight_decay=-0.01), "Invalid weight_decay value: -0.01"),
    (lambda p: flow.optim.AdamW(p, betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    (lambda p: flow.optim.RMSprop(p, lr=-0.01), "Invalid learning rate: -0.01"),
    (lambda p: flow.optim.RMSprop(p, alpha=-0.9), "Invalid alpha value: -0.9"),
    (lambda p: flow.optim.RMSprop(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda p: flow.optim.RMSprop(p, momentum=-1), "Invalid momentum value: -1"),
    (lambda p: flow.optim.RMSprop(p, weight_decay=-2), "Invalid weight_decay value: -2"),
    (lambda p: flow.optim.Adam(p, lr=flow.tensor([0.1, 0.2])), "Tensor lr must be 1-element"),
])
def test_validation_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make([make_param()])


@pytest.mark.parametrize("make, error, message", [
    (lambda p: flow.optim.SGD(p, lr="0.1"), TypeError, r"SGD: lr must be a number, not str"),
    (lambda p: flow.optim.SGD(p, momentum=None), TypeError, "SGD: momentum must be a number, not NoneType"),
    (lambda p: flow.optim.SGD(p, nesterov=1), TypeError, "SGD: nesterov must be a bool, not int"),
    (lambda p: flow.optim.Adam(p, betas=0.9), TypeError, r"Adam: betas must be a pair of numbers, got 0.9"),
    (lambda p: flow.optim.Adam(p, amsgrad="yes"), TypeError, "Adam: amsgrad must be a bool, not str"),
    (lambda p: flow.optim.Adam(p, foreach=1), TypeError, "Adam: foreach must be a bool or None, not int"),
    (lambda p: flow.optim.Adam(p, lr=flow.tensor(1)), TypeError, "Adam: a Tensor lr must have a floating dtype"),
    (lambda p: flow.optim.AdamW(p, differentiable=True), NotImplementedError,
     "AdamW: differentiable=True is not supported"),
    (lambda p: flow.optim.SGD(p, fused=True), NotImplementedError, "SGD: fused=True is not supported"),
    (lambda p: flow.optim.RMSprop(p, centered=None), TypeError, "RMSprop: centered must be a bool, not NoneType"),
])
def test_argument_type_errors(make, error, message):
    with pytest.raises(error, match=message):
        make([make_param()])


def test_foreach_is_accepted():
    assert_steps(run(flow.optim.Adam, lr=0.1, foreach=True), ref_adam(lr=0.1))
    assert_steps(run(flow.optim.SGD, lr=0.1, momentum=0.5, foreach=False), ref_sgd(lr=0.1, momentum=0.5))


# ---- zero_grad, step(closure), repr ------------------------------------------------------------------
def test_zero_grad_set_to_none():
    w1, w2 = make_param(), make_param()
    opt = flow.optim.SGD([w1, w2], lr=0.1)
    backward(w1)
    opt.zero_grad()
    assert w1.grad is None and w2.grad is None


def test_zero_grad_to_zeros_in_place():
    w = make_param()
    opt = flow.optim.SGD([w], lr=0.1)
    backward(w)
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((2, 3)))
    backward(w)  # accumulates into the zeroed grad
    np.testing.assert_allclose(w.grad.numpy(), grad_of(W0), rtol=1e-12)
    with pytest.raises(TypeError, match="set_to_none must be a bool"):
        opt.zero_grad(set_to_none=None)


def test_zero_grad_detaches_a_grad_with_history():
    w = make_param()
    opt = flow.optim.SGD([w], lr=0.1)
    (w * w * w).sum().backward(create_graph=True)
    assert w.grad.requires_grad
    opt.zero_grad(set_to_none=False)
    assert not w.grad.requires_grad and w.grad.grad_fn is None
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((2, 3)))


def test_step_with_closure():
    w = make_param()
    opt = flow.optim.SGD([w], lr=0.1)
    calls = []

    def closure():
        calls.append(flow.is_grad_enabled())
        opt.zero_grad()
        a, b = flow.tensor(A), flow.tensor(B)
        loss = (0.5 * a * w * w + b * w).sum()
        loss.backward()
        return loss

    with flow.no_grad():
        loss = opt.step(closure)
    assert calls == [True]  # the closure runs with grad enabled
    assert loss.item() == pytest.approx(float(np.sum(0.5 * A * W0 ** 2 + B * W0)))
    np.testing.assert_allclose(w.numpy(), ref_sgd(steps=1, lr=0.1)[-1], rtol=1e-12)
    assert opt.step() is None
    with pytest.raises(TypeError, match="closure must be callable"):
        opt.step(3)


def test_step_records_no_history():
    w = make_param()
    opt = flow.optim.Adam([w], lr=0.1)
    backward(w)
    opt.step()
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert all(not t.requires_grad for t in opt.state[w].values())


def test_repr():
    w = make_param()
    assert repr(flow.optim.SGD([w], lr=0.1, momentum=0.9)) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
        "    fused: None\n    lr: 0.1\n    maximize: False\n    momentum: 0.9\n    nesterov: False\n"
        "    weight_decay: 0\n)")
    opt = flow.optim.Adam([{"params": [w]}, {"params": [make_param()], "lr": 0.5}])
    text = repr(opt)
    assert text.startswith("Adam (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n")
    assert "Parameter Group 1\n" in text and "    lr: 0.5\n" in text and text.endswith("    weight_decay: 0\n)")
    assert repr(flow.optim.AdamW([w])).count("weight_decay: 0.01") == 1
    assert "    alpha: 0.99\n    capturable: False\n    centered: False\n" in repr(flow.optim.RMSprop([w]))


class ScaledSGD(flow.optim.Optimizer):
    """A user-defined optimizer on the base class (PyTorch's pattern)."""

    def __init__(self, params, lr=required, scale=1.0):
        super().__init__(params, {"lr": lr, "scale": scale})

    def step(self, closure=None):
        with flow.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"] * group["scale"])
                        self.state[p]["steps"] = self.state[p].get("steps", 0) + 1


def test_custom_optimizer_on_the_base_class():
    w = make_param()
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required optimization "
                                         "parameter lr"):
        ScaledSGD([w])
    opt = ScaledSGD([w], lr=0.1, scale=0.5)
    backward(w)
    opt.step()
    np.testing.assert_allclose(w.numpy(), ref_sgd(steps=1, lr=0.05)[-1], rtol=1e-12)
    assert opt.state_dict() == {"state": {0: {"steps": 1}}, "param_groups": [{"lr": 0.1, "scale": 0.5, "params": [0]}]}
    with pytest.raises(NotImplementedError, match="must implement step"):
        flow.optim.Optimizer([w], {}).step()


# ---- state_dict / load_state_dict -------------------------------------------------------------------
def test_state_dict_format():
    w1, w2, w3 = make_param(), make_param(), make_param()
    opt = flow.optim.SGD([{"params": [w1, w2]}, {"params": [w3], "lr": 0.5}], lr=0.1, momentum=0.9)
    backward(w1)
    backward(w3)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert set(sd["state"]) == {0, 2}  # w2 had no grad
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["momentum"] == 0.9
    buf = sd["state"][0]["momentum_buffer"]
    np.testing.assert_allclose(buf.numpy(), grad_of(W0), rtol=1e-12)
    # a snapshot: later steps do not change it, and changing it does not change the optimizer
    backward(w1)
    opt.step()
    np.testing.assert_allclose(buf.numpy(), grad_of(W0), rtol=1e-12)
    assert opt.state[w1]["momentum_buffer"] is not buf
    sd["param_groups"][0]["lr"] = 99.0
    assert opt.param_groups[0]["lr"] == 0.1


@pytest.mark.parametrize("opt_cls, ref, kwargs", [
    (flow.optim.SGD, ref_sgd, {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    (flow.optim.Adam, ref_adam, {"lr": 0.1, "amsgrad": True, "betas": (0.9, 0.5)}),
    (flow.optim.AdamW, lambda **k: ref_adam(decoupled=True, **k), {"lr": 0.1, "weight_decay": 0.1}),
    (flow.optim.RMSprop, ref_rmsprop, {"lr": 0.01, "momentum": 0.5, "centered": True}),
])
def test_state_dict_round_trip_continues_identically(opt_cls, ref, kwargs):
    w = make_param()
    opt = opt_cls([w], **kwargs)
    for _ in range(2):
        opt.zero_grad()
        backward(w)
        opt.step()
    sd, snapshot = opt.state_dict(), w.numpy().copy()
    for _ in range(3):
        opt.zero_grad()
        backward(w)
        opt.step()
    w2 = make_param(snapshot)
    opt2 = opt_cls([w2], lr=123.0)  # hyperparameters come from the state dict
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    assert opt2.param_groups[0]["params"] == [w2]
    for _ in range(3):
        opt2.zero_grad()
        backward(w2)
        opt2.step()
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    np.testing.assert_allclose(w2.numpy(), ref(steps=5, **kwargs)[-1], rtol=1e-12)


def test_load_state_dict_copies_and_casts():
    w = make_param()
    opt = flow.optim.Adam([w], lr=0.1)
    backward(w)
    opt.step()
    sd = opt.state_dict()
    w32 = make_param(dtype=np.float32)
    opt32 = flow.optim.Adam([w32], lr=0.1)
    opt32.load_state_dict(sd)
    st = opt32.state[w32]
    assert st["exp_avg"].dtype is flow.float32 and st["exp_avg_sq"].dtype is flow.float32
    assert st["step"].dtype is flow.float32 and st["step"].item() == 1.0
    sd["state"][0]["step"].add_(5)
    assert st["step"].item() == 1.0  # loaded tensors are copies
    np.testing.assert_allclose(st["exp_avg"].numpy(), 0.1 * grad_of(W0), rtol=1e-6)


def test_load_state_dict_errors_change_nothing():
    w1, w2 = make_param(), make_param()
    opt = flow.optim.SGD([w1, w2], lr=0.1, momentum=0.9)
    backward(w1)
    opt.step()
    good = opt.state_dict()
    before = opt.state[w1]["momentum_buffer"]
    other = flow.optim.SGD([{"params": [w1]}, {"params": [w2]}], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        opt.load_state_dict(other.state_dict())
    single = flow.optim.SGD([w1], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match the size"):
        opt.load_state_dict(single)
    bad_shape = opt.state_dict()
    bad_shape["state"][0]["momentum_buffer"] = flow.zeros(5)
    with pytest.raises(ValueError, match=r"state 'momentum_buffer' of parameter 0 has shape \[5\], but the parameter "
                                         r"has shape \[2, 3\]"):
        opt.load_state_dict(bad_shape)
    bad_lr = opt.state_dict()
    bad_lr["param_groups"][0]["lr"] = -1.0
    with pytest.raises(ValueError, match="Invalid learning rate: -1.0"):
        opt.load_state_dict(bad_lr)
    with pytest.raises(ValueError, match="expected a dict with 'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})
    assert opt.state[w1]["momentum_buffer"] is before and opt.param_groups[0]["lr"] == 0.1
    opt.load_state_dict(good)  # still loads


def test_state_dict_round_trip_through_save_and_load(tmp_path):
    if not hasattr(flow, "save"):
        pytest.skip("flow.save / flow.load are not available yet")
    w = make_param()
    opt = flow.optim.Adam([w], lr=0.1, amsgrad=True)
    backward(w)
    opt.step()
    flow.save(opt.state_dict(), str(tmp_path / "opt.pt"))
    opt2 = flow.optim.Adam([make_param()], lr=0.5)
    opt2.load_state_dict(flow.load(str(tmp_path / "opt.pt")))
    sd, sd2 = opt.state_dict(), opt2.state_dict()
    assert sd2["param_groups"] == sd["param_groups"]
    for key, value in sd["state"][0].items():
        np.testing.assert_array_equal(sd2["state"][0][key].numpy(), value.numpy())


# ---- nn.Graph: a captured step runs at every call (Note [Optimizer steps in a graph]) ----------------
def graph_train(opt_factory, runs, between=None):
    w = make_param(dtype=np.float32)
    opt = opt_factory(w)
    a, b = flow.tensor(A.astype(np.float32)), flow.tensor(B.astype(np.float32))

    def train_step(x):
        loss = (0.5 * a * w * w + b * w * x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    g = flow.nn.Graph.trace(train_step)
    x = flow.tensor(1.0)
    out = []
    for i in range(runs):
        g(x)
        out.append(w.numpy().copy())
        if between is not None:
            between(opt, i)
    return out, opt, w


@pytest.mark.parametrize("factory, expected", [
    (lambda w: flow.optim.SGD([w], lr=0.05, momentum=0.9), ref_sgd(lr=0.05, momentum=0.9)),
    (lambda w: flow.optim.SGD([w], lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
     ref_sgd(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    (lambda w: flow.optim.Adam([w], lr=0.2, betas=(0.9, 0.5), amsgrad=True),
     ref_adam(lr=0.2, betas=(0.9, 0.5), amsgrad=True)),
    (lambda w: flow.optim.AdamW([w], lr=0.1, weight_decay=0.3, maximize=True),
     ref_adam(lr=0.1, weight_decay=0.3, maximize=True, decoupled=True)),
    (lambda w: flow.optim.RMSprop([w], lr=0.01, momentum=0.5, centered=True, weight_decay=0.1),
     ref_rmsprop(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
])
def test_step_captured_in_a_graph(factory, expected):
    out, opt, w = graph_train(factory, STEPS)
    assert_steps(out, expected, rtol=1e-5, atol=1e-6)
    assert all(not t.is_lazy for t in opt.state[w].values())  # the state stays eager
    if "step" in opt.state[w]:
        assert opt.state[w]["step"].item() == STEPS


def test_captured_step_reads_a_tensor_lr_changed_by_a_scheduler():
    def factory(w):
        opt = flow.optim.SGD([w], lr=flow.tensor(0.1), momentum=0.5)
        factory.sched = flow.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        return opt

    out, opt, _ = graph_train(factory, STEPS, between=lambda opt, i: factory.sched.step())
    # reference: lr 0.1, 0.05, 0.025, 0.0125
    w, buf = W0.copy(), None
    for i in range(STEPS):
        g = grad_of(w)
        buf = g if buf is None else 0.5 * buf + g
        w = w - 0.1 * 0.5 ** i * buf
        np.testing.assert_allclose(out[i], w, rtol=1e-5, atol=1e-6)
    assert isinstance(opt.param_groups[0]["lr"], flow.Tensor)


def test_graph_and_eager_steps_interleave():
    w = make_param(dtype=np.float32)
    opt = flow.optim.Adam([w], lr=0.1)
    a, b = flow.tensor(A.astype(np.float32)), flow.tensor(B.astype(np.float32))

    def train_step():
        (0.5 * a * w * w + b * w).sum().backward()
        opt.step()
        opt.zero_grad()

    g = flow.nn.Graph.trace(lambda x: (train_step(), x)[1])
    train_step()  # eager
    g(flow.tensor(1.0))  # graph
    train_step()  # eager
    g(flow.tensor(1.0))  # graph
    np.testing.assert_allclose(w.numpy(), ref_adam(lr=0.1)[-1], rtol=1e-5, atol=1e-6)
    assert opt.state[w]["step"].item() == 4


def test_sgd_dampening_first_step_cannot_be_captured():
    def factory(w):
        return flow.optim.SGD([w], lr=0.05, momentum=0.9, dampening=0.3)

    with pytest.raises(NotImplementedError, match="first step of momentum with dampening != 0 cannot be captured"):
        graph_train(factory, 1)
    # after one eager step, the buffer exists and the step captures
    w = make_param(dtype=np.float32)
    opt = factory(w)
    backward(w)
    opt.step()
    opt.zero_grad()
    a, b = flow.tensor(A.astype(np.float32)), flow.tensor(B.astype(np.float32))

    def train_step(x):
        (0.5 * a * w * w + b * w * x).sum().backward()
        opt.step()
        opt.zero_grad()
        return x

    g = flow.nn.Graph.trace(train_step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            g(flow.tensor(1.0))
    np.testing.assert_allclose(w.numpy(), ref_sgd(lr=0.05, momentum=0.9, dampening=0.3)[-1], rtol=1e-5, atol=1e-6)


def test_adam_step_size_in_closed_form():
    # one step of Adam moves every coordinate by about lr (m_hat / sqrt(v_hat) = sign(g))
    w = make_param()
    opt = flow.optim.Adam([w], lr=0.01)
    backward(w)
    opt.step()
    np.testing.assert_allclose(W0 - w.numpy(), 0.01 * np.sign(grad_of(W0)), rtol=1e-6)
    assert math.isclose(opt.state[w]["exp_avg_sq"].numpy()[0, 0], 0.001 * grad_of(W0)[0, 0] ** 2)


# ---- with nn.Module parameters ----------------------------------------------------------------------
X = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7], [-0.2, 0.8, 0.1], [1.0, 1.0, -1.0]], dtype=np.float32)
Y = np.array([[1.0], [-0.5], [0.25], [2.0]], dtype=np.float32)


def ref_linear_adam(weight, bias, steps, lr):
    """Adam on the mean squared error of y = x W^T + b; gradients by hand."""
    params = [weight.astype(np.float64), bias.astype(np.float64)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t in range(1, steps + 1):
        r = X @ params[0].T + params[1] - Y  # residuals (4, 1)
        grads = [2 * r.T @ X / r.size, 2 * r.sum(0) / r.size]
        for i, g in enumerate(grads):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            params[i] = params[i] - lr * (m[i] / (1 - 0.9 ** t)) / (np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8)
    return params


def test_trains_module_parameters():
    model = flow.nn.Linear(3, 1)
    assert all(isinstance(p, flow.nn.Parameter) for p in model.parameters())
    w0, b0 = model.weight.numpy().copy(), model.bias.numpy().copy()
    opt = flow.optim.Adam(model.parameters(), lr=0.05)
    x, y = flow.tensor(X), flow.tensor(Y)
    for _ in range(STEPS):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    weight, bias = ref_linear_adam(w0, b0, STEPS, 0.05)
    np.testing.assert_allclose(model.weight.numpy(), weight, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.bias.numpy(), bias, rtol=1e-5, atol=1e-6)


def test_trains_a_module_in_an_nn_graph():
    model = flow.nn.Linear(3, 1)
    w0, b0 = model.weight.numpy().copy(), model.bias.numpy().copy()
    opt = flow.optim.Adam(model.parameters(), lr=0.05)

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x, y):
            loss = ((self.model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

    g = TrainGraph()
    x, y = flow.tensor(X), flow.tensor(Y)
    losses = [g(x, y).item() for _ in range(STEPS)]
    weight, bias = ref_linear_adam(w0, b0, STEPS, 0.05)
    np.testing.assert_allclose(model.weight.numpy(), weight, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.bias.numpy(), bias, rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]
    assert opt.state[model.weight]["step"].item() == STEPS


# ---- swa_utils (Note [Averaged models]) -----------------------------------------------------------------
def test_averaged_model_running_mean_ema_and_update_bn():
    from oneflow_lite.optim.swa_utils import AveragedModel, get_ema_avg_fn, get_ema_multi_avg_fn, update_bn
    model = flow.nn.Sequential(flow.nn.Linear(2, 2), flow.nn.BatchNorm1d(2))
    swa = AveragedModel(model)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    ema_one = AveragedModel(model, avg_fn=get_ema_avg_fn(0.8), use_buffers=True)
    history = []
    for k in range(1, 4):
        with flow.no_grad():
            model[0].weight.fill_(float(k))
            model[1].running_mean.fill_(float(10 * k))
        history.append(float(k))
        for averaged in (swa, ema, ema_one):
            averaged.update_parameters(model)
    np.testing.assert_allclose(swa.module[0].weight.numpy(), np.full((2, 2), np.mean(history)))  # (1 + 2 + 3) / 3
    expect = 1.0
    for k in (2.0, 3.0):
        expect = 0.9 * expect + 0.1 * k
    np.testing.assert_allclose(ema.module[0].weight.numpy(), np.full((2, 2), expect), rtol=1e-6)
    np.testing.assert_allclose(ema_one.module[1].running_mean.numpy(), [0.8 * (0.8 * 10 + 0.2 * 20) + 0.2 * 30] * 2,
                               rtol=1e-6)  # use_buffers: the statistics are averaged too
    np.testing.assert_allclose(swa.module[1].running_mean.numpy(), [30.0, 30.0])  # otherwise copied
    assert int(swa.n_averaged) == 3 and "n_averaged" in swa.state_dict()
    batches = [flow.tensor([[1.0, 0.0], [3.0, 2.0]]), flow.tensor([[5.0, 4.0], [7.0, 6.0]])]
    with flow.no_grad():
        swa.module[0].weight.copy_(flow.eye(2))
        swa.module[0].bias.zero_()
    update_bn([(b, 0) for b in batches], swa)  # the cumulative mean of the batch means
    np.testing.assert_allclose(swa.module[1].running_mean.numpy(), [4.0, 3.0], rtol=1e-6)
    assert swa.module[1].momentum == 0.1 and swa.training


def test_swalr_anneals_to_the_swa_lr():
    from oneflow_lite.optim.swa_utils import SWALR
    opt = flow.optim.SGD([flow.nn.Parameter(flow.zeros(1))], lr=1.0)
    sched = SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
    lrs = []
    for _ in range(3):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    # alpha = t / 2 after t steps: lr = swa_lr alpha + 1 (1 - alpha), then swa_lr
    assert lrs == pytest.approx([0.55, 0.1, 0.1])
    with pytest.raises(ValueError, match="anneal_strategy must by one of 'cos' or 'linear', instead got exp"):
        SWALR(opt, swa_lr=0.1, anneal_strategy="exp")


def test_adam_decoupled_weight_decay_is_adamws_step():
    """PyTorch's Adam(decoupled_weight_decay=True) (a param-group key; AdamW's groups hold True)."""
    def run(opt_cls, **kw):
        p = flow.nn.Parameter(flow.tensor([1.0, -2.0]))
        opt = opt_cls([p], lr=0.1, weight_decay=0.5, **kw)
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        return p.detach().numpy(), opt
    decoupled, opt = run(flow.optim.Adam, decoupled_weight_decay=True)
    adamw, opt_w = run(flow.optim.AdamW)
    coupled, opt_c = run(flow.optim.Adam)
    np.testing.assert_array_equal(decoupled, adamw)
    assert not np.allclose(coupled, adamw)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True and opt_w.param_groups[0]["decoupled_weight_decay"]
    assert opt_c.param_groups[0]["decoupled_weight_decay"] is False
    state = opt_c.state_dict()  # a state dict from before the option still loads (coupled)
    del state["param_groups"][0]["decoupled_weight_decay"]
    opt_c.load_state_dict(state)
    opt_c.step()
    assert opt_c.param_groups[0]["decoupled_weight_decay"] is False
    with pytest.raises(TypeError, match="Adam: decoupled_weight_decay must be a bool, not int"):
        flow.optim.Adam([flow.nn.Parameter(flow.ones(1))], decoupled_weight_decay=1)
