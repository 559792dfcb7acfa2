"""flow.optim: Adadelta, Adagrad, Adamax, NAdam, RAdam, ASGD, Rprop, Adafactor and Muon.

Each trajectory is checked against PyTorch's documented algorithm written out below in NumPy
(float64) on the quadratic ``sum(0.5 * a * w**2 + b * w)`` (gradient ``a * w + b``, as in
test_optim.py). The optimizers whose scalar state PyTorch keeps in a 0-d tensor of the default
dtype (NAdam's ``mu_product``, ASGD's ``eta`` and ``mu``) run under a float64 default dtype where
the references are exact; their float32 state is checked separately. An optional test compares
with torch.optim when torch is importable.
"""

import math

import numpy as np
import pytest

import oneflow_lite as flow

STEPS = 5
A = np.array([[1.0, 2.0, 0.5], [3.0, 0.25, 1.5]])
B = np.array([[0.5, -1.0, 2.0], [-0.3, 0.7, -2.5]])
W0 = np.array([[0.3, -0.8, 1.2], [0.5, 2.0, -1.1]])
V0 = np.array([0.4, -1.3, 0.9, 2.2])  # a vector parameter (Adafactor's unfactored path)
AV, BV = np.array([1.0, 0.5, 2.0, 0.3]), np.array([-0.2, 0.4, 1.0, -1.5])


def grad_of(w):
    if w.ndim == 1:
        return AV * w + BV
    return A * w + B


@pytest.fixture
def float64_default():
    previous = flow.get_default_dtype()
    flow.set_default_dtype(flow.float64)
    yield
    flow.set_default_dtype(previous)


def run(opt_cls, steps=STEPS, w0=W0, dtype=np.float64, graph=False, **kwargs):
    """Train one parameter for ``steps`` steps (eagerly, or as an nn.Graph); the parameter after each step."""
    w = flow.tensor(np.asarray(w0, dtype=dtype)).requires_grad_()
    opt = opt_cls([w], **kwargs)
    a, b = (AV, BV) if w0.ndim == 1 else (A, B)
    a, b = flow.tensor(a.astype(dtype)), flow.tensor(b.astype(dtype))

    def train_step(x):
        (0.5 * a * w * w + b * w * x).sum().backward()
        opt.step()
        opt.zero_grad()
        return x

    step = flow.nn.Graph.trace(train_step) if graph else train_step
    out = []
    for _ in range(steps):
        step(flow.tensor(1.0, dtype=flow.float64 if dtype == np.float64 else flow.float32))
        out.append(w.numpy().copy())
    return out, opt, w


def assert_steps(got, expected, rtol=1e-12, atol=1e-12):
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"after step {i + 1}")


def trajectory(update, w0=W0, steps=STEPS, maximize=False):
    """A NumPy reference: ``update(w, g, t)`` returns the next w (state in the closure's ``state``)."""
    w, out = np.array(w0, dtype=np.float64), []
    for t in range(1, steps + 1):
        g = -grad_of(w) if maximize else grad_of(w)
        w = update(w, g, t)
        out.append(w)
    return out


# ---- NumPy references (PyTorch's documented algorithms) ----------------------------------------------
def ref_adadelta(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False, w0=W0):
    st = {"v": np.zeros_like(w0), "u": np.zeros_like(w0)}

    def update(w, g, t):
        g = g + weight_decay * w
        st["v"] = rho * st["v"] + (1 - rho) * g * g
        delta = np.sqrt(st["u"] + eps) / np.sqrt(st["v"] + eps) * g
        st["u"] = rho * st["u"] + (1 - rho) * delta * delta
        return w - lr * delta
    return trajectory(update, w0, maximize=maximize)


def ref_adagrad(lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10, maximize=False,
                w0=W0):
    st = {"s": np.full_like(w0, initial_accumulator_value)}

    def update(w, g, t):
        g = g + weight_decay * w
        st["s"] = st["s"] + g * g
        return w - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(st["s"]) + eps)
    return trajectory(update, w0, maximize=maximize)


def ref_adamax(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False, w0=W0):
    b1, b2 = betas
    st = {"m": np.zeros_like(w0), "u": np.zeros_like(w0)}

    def update(w, g, t):
        g = g + weight_decay * w
        st["m"] = b1 * st["m"] + (1 - b1) * g
        st["u"] = np.maximum(b2 * st["u"], np.abs(g) + eps)
        return w - lr / (1 - b1 ** t) * st["m"] / st["u"]
    return trajectory(update, w0, maximize=maximize)


def ref_nadam(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False, w0=W0):
    b1, b2 = betas
    st = {"m": np.zeros_like(w0), "v": np.zeros_like(w0), "P": 1.0}

    def update(w, g, t):
        if decoupled_weight_decay:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        st["P"] *= mu
        st["m"] = b1 * st["m"] + (1 - b1) * g
        st["v"] = b2 * st["v"] + (1 - b2) * g * g
        denom = np.sqrt(st["v"] / (1 - b2 ** t)) + eps
        return (w - lr * (1 - mu) / (1 - st["P"]) * g / denom
                - lr * mu_next / (1 - st["P"] * mu_next) * st["m"] / denom)
    return trajectory(update, w0, maximize=maximize)


def ref_radam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False,
              maximize=False, w0=W0):
    b1, b2 = betas
    st = {"m": np.zeros_like(w0), "v": np.zeros_like(w0)}

    def update(w, g, t):
        if decoupled_weight_decay:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        st["m"] = b1 * st["m"] + (1 - b1) * g
        st["v"] = b2 * st["v"] + (1 - b2) * g * g
        m_hat = st["m"] / (1 - b1 ** t)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t <= 5:
            return w - lr * m_hat
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        return w - lr * m_hat * math.sqrt(1 - b2 ** t) / (np.sqrt(st["v"]) + eps) * rect
    return trajectory(update, w0, maximize=maximize)


def ref_asgd(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False, w0=W0, states=None):
    st = {"eta": lr, "mu": 1.0, "ax": np.zeros_like(w0)}

    def update(w, g, t):
        g = g + weight_decay * w
        w = w * (1 - lambd * st["eta"]) - st["eta"] * g
        st["ax"] = w.copy() if st["mu"] == 1 else st["ax"] + st["mu"] * (w - st["ax"])
        st["eta"] = lr / (1 + lambd * lr * t) ** alpha
        st["mu"] = 1 / max(1, t - t0)
        if states is not None:
            states.append(dict(st))
        return w
    return trajectory(update, w0, maximize=maximize)


def ref_rprop(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False, w0=W0):
    (eta_minus, eta_plus), (lo, hi) = etas, step_sizes
    st = {"prev": np.zeros_like(w0), "size": np.full_like(w0, lr)}

    def update(w, g, t):
        s = g * st["prev"]
        factor = np.where(s > 0, eta_plus, np.where(s < 0, eta_minus, 1.0))
        st["size"] = np.clip(st["size"] * factor, lo, hi)
        g = np.where(s < 0, 0.0, g)
        st["prev"] = g
        return w - np.sign(g) * st["size"]
    return trajectory(update, w0, maximize=maximize)


def ref_adafactor(lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, maximize=False, w0=W0):
    eps1 = np.finfo(np.float64).eps if eps[0] is None else eps[0]
    eps2 = eps[1]
    st = {"R": np.zeros((w0.shape[0], 1)) if w0.ndim > 1 else None,
          "C": np.zeros((1, w0.shape[1])) if w0.ndim > 1 else None, "V": np.zeros_like(w0)}

    def rms(x):
        return np.sqrt(np.mean(x * x))

    def update(w, g, t):
        beta2_complement, rho = t ** beta2_decay, min(lr, 1 / math.sqrt(t))
        alpha = max(eps2, rms(w)) * rho
        w = w * (1 - lr * weight_decay)
        if w.ndim > 1:
            st["R"] = st["R"] + beta2_complement * (np.mean(g * g, axis=-1, keepdims=True) - st["R"])
            st["C"] = st["C"] + beta2_complement * (np.mean(g * g, axis=-2, keepdims=True) - st["C"])
            v = st["R"] @ st["C"] / max(np.mean(st["R"]), eps1)
        else:
            st["V"] = st["V"] + beta2_complement * (g * g - st["V"])
            v = st["V"]
        u = g / np.sqrt(np.maximum(v, eps1 * eps1))
        return w - alpha * u / max(1.0, rms(u) / d)
    return trajectory(update, w0, maximize=maximize)


def newton_schulz(g, coefficients=(3.4445, -4.7750, 2.0315), steps=5, eps=1e-7):
    a, b, c = coefficients
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / max(np.linalg.norm(x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def ref_muon(lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True, adjust_lr_fn=None, w0=W0, **ns):
    st = {"b": np.zeros_like(w0)}
    rows, cols = w0.shape
    ratio = 0.2 * math.sqrt(max(rows, cols)) if adjust_lr_fn == "match_rms_adamw" else math.sqrt(max(1, rows / cols))

    def update(w, g, t):
        st["b"] = momentum * st["b"] + (1 - momentum) * g
        u = g + momentum * (st["b"] - g) if nesterov else st["b"]
        return w * (1 - lr * weight_decay) - lr * ratio * newton_schulz(u, **ns)
    return trajectory(update, w0)


# ---- the algorithms ---------------------------------------------------------------------------------
def ids(cases):
    return [f"{cls.__name__}-" + ",".join(f"{k}={v}" for k, v in kw.items()) for cls, _, kw in cases]


O = flow.optim
CASES = [
    (O.Adadelta, ref_adadelta, {}),
    (O.Adadelta, ref_adadelta, {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1}),
    (O.Adadelta, ref_adadelta, {"lr": 0.5, "maximize": True}),
    (O.Adagrad, ref_adagrad, {}),
    (O.Adagrad, ref_adagrad, {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.2}),
    (O.Adagrad, ref_adagrad, {"lr": 0.1, "eps": 1e-3, "maximize": True}),
    (O.Adamax, ref_adamax, {}),
    (O.Adamax, ref_adamax, {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3, "weight_decay": 0.1}),
    (O.Adamax, ref_adamax, {"lr": 0.05, "maximize": True}),
    (O.NAdam, ref_nadam, {}),
    (O.NAdam, ref_nadam, {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1, "momentum_decay": 0.05}),
    (O.NAdam, ref_nadam, {"lr": 0.05, "weight_decay": 0.2, "decoupled_weight_decay": True, "maximize": True}),
    (O.RAdam, ref_radam, {}),
    (O.RAdam, ref_radam, {"lr": 0.05, "betas": (0.9, 0.5), "weight_decay": 0.1}),  # rectified from step 2
    (O.RAdam, ref_radam, {"lr": 0.05, "betas": (0.8, 0.6), "weight_decay": 0.2, "decoupled_weight_decay": True}),
    (O.RAdam, ref_radam, {"lr": 0.05, "betas": (0.9, 0.5), "maximize": True}),
    (O.ASGD, ref_asgd, {}),
    (O.ASGD, ref_asgd, {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 2, "weight_decay": 0.1}),
    (O.ASGD, ref_asgd, {"lr": 0.05, "t0": 0, "maximize": True}),
    (O.Rprop, ref_rprop, {}),
    (O.Rprop, ref_rprop, {"lr": 0.3, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.4)}),
    (O.Rprop, ref_rprop, {"lr": 0.05, "maximize": True}),
    (O.Adafactor, ref_adafactor, {}),
    (O.Adafactor, ref_adafactor, {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-20, 1e-2), "d": 2.0,
                                  "weight_decay": 0.1}),
    (O.Adafactor, ref_adafactor, {"lr": 0.5, "d": 1.5, "maximize": True}),
    (O.Muon, ref_muon, {"lr": 0.02}),
    (O.Muon, ref_muon, {"lr": 0.05, "momentum": 0.8, "nesterov": False, "weight_decay": 0.0,
                        "adjust_lr_fn": "match_rms_adamw"}),
    (O.Muon, ref_muon, {"lr": 0.05, "ns_steps": 3, "eps": 1e-3}),
]


@pytest.mark.parametrize("opt_cls, ref, kwargs", CASES, ids=ids(CASES))
def test_trajectory(opt_cls, ref, kwargs, float64_default):
    out, _, _ = run(opt_cls, **kwargs)
    ns_keys = {"ns_steps": "steps", "eps": "eps"} if opt_cls is O.Muon else {}
    ref_kwargs = {ns_keys.get(k, k): v for k, v in kwargs.items()}
    assert_steps(out, ref(**ref_kwargs))


VECTOR_CASES = [(O.Adafactor, ref_adafactor, {}), (O.Adafactor, ref_adafactor, {"lr": 0.2, "weight_decay": 0.1}),
                (O.Adagrad, ref_adagrad, {"lr": 0.1}), (O.Rprop, ref_rprop, {})]


@pytest.mark.parametrize("opt_cls, ref, kwargs", VECTOR_CASES, ids=ids(VECTOR_CASES))
def test_vector_parameter(opt_cls, ref, kwargs):
    out, opt, w = run(opt_cls, w0=V0, **kwargs)
    assert_steps(out, ref(w0=V0, **kwargs))
    if opt_cls is O.Adafactor:
        assert set(opt.state[w]) == {"step", "variance"}


def test_default_cases_move_the_parameters():
    # the cases above run with defaults: make sure they take visible steps (no vacuous comparison)
    for opt_cls, ref, kwargs in CASES:
        if not kwargs:
            moved = np.abs(ref(**kwargs)[-1] - W0).max()
            assert moved > 1e-4, opt_cls.__name__


def test_adafactor_factored_state_of_a_3d_parameter():
    # the variance is factored over the last two dims, batched over the first
    w0 = np.stack([W0, -0.5 * W0])
    w = flow.tensor(w0).requires_grad_()
    opt = O.Adafactor([w], lr=0.1)
    a, b = flow.tensor(np.stack([A, A])), flow.tensor(np.stack([B, B]))
    (0.5 * a * w * w + b * w).sum().backward()
    opt.step()
    assert opt.state[w]["row_var"].shape == (2, 2, 1) and opt.state[w]["col_var"].shape == (2, 1, 3)
    g = np.stack([A, A]) * w0 + np.stack([B, B])
    np.testing.assert_allclose(opt.state[w]["row_var"].numpy(), np.mean(g * g, axis=-1, keepdims=True), rtol=1e-12)
    expected = []
    for k in range(2):  # each slice is its own factored estimate
        r, c = np.mean(g[k] ** 2, axis=-1, keepdims=True), np.mean(g[k] ** 2, axis=-2, keepdims=True)
        u = g[k] / np.sqrt(np.maximum(r @ c / np.mean(r), np.finfo(np.float64).eps ** 2))
        expected.append(u)
    u = np.stack(expected)
    alpha = max(1e-3, np.sqrt(np.mean(w0 ** 2))) * 0.1
    np.testing.assert_allclose(w.numpy(), w0 - alpha * u / max(1.0, np.sqrt(np.mean(u * u))), rtol=1e-12)


def test_muon_newton_schulz_orthogonalises():
    rng = np.random.default_rng(0)
    for shape in [(4, 6), (6, 4), (5, 5)]:
        g = rng.standard_normal(shape)
        x = flow.optim.muon.zeropower_via_newtonschulz(flow.tensor(g), (3.4445, -4.7750, 2.0315), 5, 1e-7).numpy()
        np.testing.assert_allclose(x, newton_schulz(g), rtol=1e-12, atol=1e-12)
        u, _, vt = np.linalg.svd(g, full_matrices=False)
        core = u.T @ x @ vt.T  # the same singular vectors, singular values pushed towards 1
        np.testing.assert_allclose(core, np.diag(np.diag(core)), atol=1e-12)
        assert np.all((np.diag(core) > 0.5) & (np.diag(core) < 1.5))


def test_muon_rejects_what_it_cannot_optimise():
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas we found a parameter with size"):
        O.Muon([flow.tensor([1.0, 2.0]).requires_grad_()])
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        flow.optim.muon.zeropower_via_newtonschulz(flow.tensor(W0), (1.0, 0.0, 0.0), 100, 1e-7)
    with pytest.raises(ValueError, match="Coefficients must be a tuple of exactly 3 values"):
        flow.optim.muon.zeropower_via_newtonschulz(flow.tensor(W0), (1.0, 0.0), 5, 1e-7)


# ---- scalar state of PyTorch's default dtype ---------------------------------------------------------
def test_nadam_and_asgd_scalar_state_follows_the_default_dtype():
    _, opt, w = run(O.NAdam, lr=0.05, steps=3)
    assert opt.state[w]["mu_product"].dtype is flow.float32 and opt.state[w]["step"].dtype is flow.float32
    mu = [0.9 * (1 - 0.5 * 0.96 ** (t * 4e-3)) for t in (1, 2, 3)]
    assert opt.state[w]["mu_product"].item() == pytest.approx(mu[0] * mu[1] * mu[2], rel=1e-6)
    out, opt, w = run(O.ASGD, lr=0.05, lambd=0.01, t0=1)
    assert {k: v.dtype for k, v in opt.state[w].items() if v.ndim == 0} == {
        "step": flow.float32, "eta": flow.float32, "mu": flow.float32}
    assert_steps(out, ref_asgd(lr=0.05, lambd=0.01, t0=1), rtol=1e-6, atol=1e-7)


def test_asgd_averages_the_iterates(float64_default):
    states = []
    out, opt, w = run(O.ASGD, lr=0.1, t0=2, lambd=0.05)
    ref_asgd(lr=0.1, t0=2, lambd=0.05, states=states)
    np.testing.assert_allclose(opt.state[w]["ax"].numpy(), states[-1]["ax"], rtol=1e-12)
    # step t averages with mu = 1 / max(1, t - 1 - t0): from step t0 + 2 on, ax is the mean of the iterates
    # since step t0 + 2 (steps 4 and 5 here)
    np.testing.assert_allclose(states[-1]["ax"], np.mean(out[3:], axis=0), rtol=1e-12)
    assert opt.state[w]["eta"].item() == pytest.approx(0.1 / (1 + 0.05 * 0.1 * STEPS) ** 0.75, rel=1e-14)
    assert opt.state[w]["mu"].item() == pytest.approx(1 / (STEPS - 2))


STATE_NAMES = [
    (O.Adadelta, {}, {"step", "square_avg", "acc_delta"}),
    (O.Adagrad, {}, {"step", "sum"}),
    (O.Adamax, {}, {"step", "exp_avg", "exp_inf"}),
    (O.NAdam, {}, {"step", "mu_product", "exp_avg", "exp_avg_sq"}),
    (O.RAdam, {}, {"step", "exp_avg", "exp_avg_sq"}),
    (O.ASGD, {}, {"step", "eta", "mu", "ax"}),
    (O.Rprop, {}, {"step", "prev", "step_size"}),
    (O.Adafactor, {}, {"step", "row_var", "col_var"}),
    (O.Muon, {}, {"momentum_buffer"}),
]


@pytest.mark.parametrize("opt_cls, kwargs, names", STATE_NAMES, ids=[c[0].__name__ for c in STATE_NAMES])
def test_state_names_and_parameters_without_grad(opt_cls, kwargs, names):
    w, frozen = flow.tensor(W0).requires_grad_(), flow.tensor(W0).requires_grad_()
    opt = opt_cls([w, frozen], **kwargs)
    (0.5 * flow.tensor(A) * w * w).sum().backward()
    opt.step()
    assert set(opt.state[w]) == names
    np.testing.assert_array_equal(frozen.numpy(), W0)
    if opt_cls is O.Adagrad:  # PyTorch makes Adagrad's state in the constructor, for every parameter
        assert opt.state[frozen]["step"].item() == 0 and opt.state[w]["step"].item() == 1
    else:
        assert frozen not in opt.state
    assert all(not t.requires_grad for t in opt.state[w].values())


def test_adagrad_state_starts_at_the_initial_accumulator():
    w = flow.tensor(W0).requires_grad_()
    opt = O.Adagrad([w], initial_accumulator_value=0.3)
    np.testing.assert_array_equal(opt.state[w]["sum"].numpy(), np.full_like(W0, 0.3))
    w2 = flow.tensor(W0).requires_grad_()
    opt.add_param_group({"params": [w2], "initial_accumulator_value": 0.7})
    np.testing.assert_array_equal(opt.state[w2]["sum"].numpy(), np.full_like(W0, 0.7))
    assert opt.state_dict()["state"].keys() == {0, 1}


def test_rprop_step_size_starts_at_lr_and_ignores_later_lr_changes():
    w = flow.tensor(W0).requires_grad_()
    opt = O.Rprop([w], lr=0.1)
    for i in range(3):
        (0.5 * flow.tensor(A) * w * w + flow.tensor(B) * w).sum().backward()
        opt.step()
        opt.zero_grad()
        opt.param_groups[0]["lr"] = 5.0  # as in PyTorch: only the first step reads lr
    np.testing.assert_allclose(w.numpy(), ref_rprop(lr=0.1, w0=W0)[2], rtol=1e-12)


# ---- capturable, nn.Graph capture, tensor lr (Note [Optimizer steps in a graph]) ----------------------
CAPTURE_CASES = [
    (O.Adadelta, ref_adadelta, {"lr": 0.5, "weight_decay": 0.1}),
    (O.Adagrad, ref_adagrad, {"lr": 0.1, "lr_decay": 0.05}),
    (O.Adamax, ref_adamax, {"lr": 0.05, "weight_decay": 0.1}),
    (O.NAdam, ref_nadam, {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    (O.RAdam, ref_radam, {"lr": 0.05, "betas": (0.9, 0.5)}),
    (O.ASGD, ref_asgd, {"lr": 0.05, "t0": 2, "lambd": 0.01}),
    (O.Rprop, ref_rprop, {"lr": 0.05}),
    (O.Adafactor, ref_adafactor, {"lr": 0.05, "weight_decay": 0.1}),
    (O.Muon, ref_muon, {"lr": 0.05}),
]


@pytest.mark.parametrize("opt_cls, ref, kwargs", CAPTURE_CASES, ids=ids(CAPTURE_CASES))
def test_step_captured_in_a_graph(opt_cls, ref, kwargs, float64_default):
    out, opt, w = run(opt_cls, graph=True, **kwargs)
    assert_steps(out, ref(**kwargs), rtol=1e-10, atol=1e-12)
    assert all(not t.is_lazy for t in opt.state[w].values())  # the state stays eager
    if "step" in opt.state[w]:
        assert opt.state[w]["step"].item() == STEPS


@pytest.mark.parametrize("opt_cls, ref, kwargs", CAPTURE_CASES, ids=ids(CAPTURE_CASES))
def test_float32_graph_matches_float32_eager(opt_cls, ref, kwargs):
    eager, _, _ = run(opt_cls, dtype=np.float32, **kwargs)
    graph, _, _ = run(opt_cls, dtype=np.float32, graph=True, **kwargs)
    assert all(o.dtype == np.float32 for o in graph)
    assert_steps(graph, eager, rtol=1e-5, atol=1e-6)
    assert_steps(graph, ref(**kwargs), rtol=1e-4, atol=1e-5)


CAPTURABLE_CASES = [c for c in CAPTURE_CASES if c[0] in (O.Adadelta, O.Adamax, O.NAdam, O.RAdam, O.ASGD, O.Rprop)]


@pytest.mark.parametrize("opt_cls, ref, kwargs", CAPTURABLE_CASES, ids=ids(CAPTURABLE_CASES))
def test_capturable_matches(opt_cls, ref, kwargs, float64_default):
    out, opt, _ = run(opt_cls, capturable=True, **kwargs)
    assert_steps(out, ref(**kwargs), rtol=1e-12, atol=1e-12)
    assert opt.param_groups[0]["capturable"] is True


@pytest.mark.parametrize("opt_cls, ref, kwargs", CAPTURE_CASES, ids=ids(CAPTURE_CASES))
def test_tensor_lr(opt_cls, ref, kwargs, float64_default):
    lr = flow.tensor(kwargs["lr"], dtype=flow.float64)
    out, opt, _ = run(opt_cls, **{**kwargs, "lr": lr})
    assert opt.param_groups[0]["lr"] is lr
    assert_steps(out, ref(**kwargs))
    out, _, _ = run(opt_cls, graph=True, **{**kwargs, "lr": flow.tensor(kwargs["lr"], dtype=flow.float64)})
    assert_steps(out, ref(**kwargs), rtol=1e-10, atol=1e-12)


# ---- state_dict / load_state_dict -------------------------------------------------------------------
@pytest.mark.parametrize("opt_cls, ref, kwargs", CAPTURE_CASES, ids=ids(CAPTURE_CASES))
def test_state_dict_round_trip_continues_identically(opt_cls, ref, kwargs, float64_default):
    w = flow.tensor(W0).requires_grad_()
    opt = opt_cls([w], **kwargs)
    a, b = flow.tensor(A), flow.tensor(B)

    def train(opt, w, steps):
        for _ in range(steps):
            opt.zero_grad()
            (0.5 * a * w * w + b * w).sum().backward()
            opt.step()

    train(opt, w, 2)
    sd, snapshot = opt.state_dict(), w.numpy().copy()
    train(opt, w, 3)
    w2 = flow.tensor(snapshot).requires_grad_()
    opt2 = opt_cls([w2], lr=0.123)  # the hyperparameters come from the state dict
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"] and opt2.state_dict()["param_groups"] == sd["param_groups"]
    train(opt2, w2, 3)
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    np.testing.assert_allclose(w2.numpy(), ref(**kwargs)[-1], rtol=1e-12)


def test_load_state_dict_checks_shapes_and_casts():
    w = flow.tensor(W0).requires_grad_()
    opt = O.Adadelta([w])
    (flow.tensor(A) * w).sum().backward()
    opt.step()
    sd = opt.state_dict()
    w32 = flow.tensor(W0.astype(np.float32)).requires_grad_()
    opt32 = O.Adadelta([w32])
    opt32.load_state_dict(sd)
    assert opt32.state[w32]["square_avg"].dtype is flow.float32
    bad = opt.state_dict()
    bad["state"][0]["acc_delta"] = flow.zeros(4)
    with pytest.raises(ValueError, match=r"state 'acc_delta' of parameter 0 has shape \[4\], but the parameter has "
                                         r"shape \[2, 3\]"):
        opt32.load_state_dict(bad)


# ---- hyperparameter checks (PyTorch's messages) -----------------------------------------------------
@pytest.mark.parametrize("make, message", [
    (lambda p: O.Adadelta(p, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda p: O.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
    (lambda p: O.Adadelta(p, eps=-1e-6), "Invalid epsilon value: -1e-06"),
    (lambda p: O.Adadelta(p, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda p: O.Adagrad(p, lr=-0.01), "Invalid learning rate: -0.01"),
    (lambda p: O.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: O.Adagrad(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: O.Adagrad(p, initial_accumulator_value=-0.1), "Invalid initial_accumulator_value value: -0.1"),
    (lambda p: O.Adagrad(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: O.Adamax(p, lr=-2e-3), "Invalid learning rate: -0.002"),
    (lambda p: O.Adamax(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: O.Adamax(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: O.Adamax(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: O.Adamax(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: O.NAdam(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: O.NAdam(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda p: O.NAdam(p, momentum_decay=-4e-3), "Invalid momentum_decay value: -0.004"),
    (lambda p: O.NAdam(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: O.RAdam(p, eps=-1), "Invalid epsilon value: -1"),
    (lambda p: O.RAdam(p, betas=(-0.1, 0.9)), "Invalid beta parameter at index 0: -0.1"),
    (lambda p: O.RAdam(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: O.ASGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: O.ASGD(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: O.Rprop(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: O.Rprop(p, etas=(1.2, 0.5)), "Invalid eta values: 1.2, 0.5"),
    (lambda p: O.Rprop(p, etas=(0.0, 1.2)), "Invalid eta values: 0.0, 1.2"),
    (lambda p: O.Adafactor(p, lr=-1), "Learning rate should be >= 0 but is: -1"),
    (lambda p: O.Adafactor(p, beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    (lambda p: O.Adafactor(p, eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1.0"),
    (lambda p: O.Adafactor(p, eps=(None, -1.0)), "epsilon2 should be >= 0 but is: -1.0"),
    (lambda p: O.Adafactor(p, d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    (lambda p: O.Adafactor(p, weight_decay=-1.0), "weight_decay should be >= 0 but is: -1.0"),
    (lambda p: O.Muon(p, lr=-1), "Learning rate should be >= 0 but is: -1"),
    (lambda p: O.Muon(p, momentum=-1), "momentum should be >= 0 but is: -1"),
    (lambda p: O.Muon(p, weight_decay=-1), "weight decay should be >= 0 but is: -1"),
    (lambda p: O.Muon(p, adjust_lr_fn="fast"), "Adjust learning rate function fast is not supported"),
    (lambda p: O.NAdam(p, lr=flow.tensor([0.1, 0.2])), "Tensor lr must be 1-element"),
])
def test_validation_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make([flow.tensor(W0).requires_grad_()])


@pytest.mark.parametrize("make, error, message", [
    (lambda p: O.Adadelta(p, rho="0.9"), TypeError, "Adadelta: rho must be a number, not str"),
    (lambda p: O.Adagrad(p, maximize=1), TypeError, "Adagrad: maximize must be a bool, not int"),
    (lambda p: O.Adagrad(p, fused=True), NotImplementedError, "Adagrad: fused=True is not supported"),
    (lambda p: O.Adamax(p, betas=0.9), TypeError, "Adamax: betas must be a pair of numbers, got 0.9"),
    (lambda p: O.NAdam(p, decoupled_weight_decay=None), TypeError, "NAdam: decoupled_weight_decay must be a bool"),
    (lambda p: O.RAdam(p, differentiable=True), NotImplementedError, "RAdam: differentiable=True is not supported"),
    (lambda p: O.ASGD(p, t0=None), TypeError, "ASGD: t0 must be a number, not NoneType"),
    (lambda p: O.Rprop(p, etas=0.5), TypeError, r"Rprop: etas must be a pair of numbers, got 0.5"),
    (lambda p: O.Rprop(p, step_sizes=(1e-6, "50")), TypeError, r"Rprop: step_sizes\[1\] must be a number, not str"),
    (lambda p: O.Adafactor(p, eps=1e-3), TypeError, r"Adafactor: eps must be a pair \(eps1 or None, eps2\)"),
    (lambda p: O.Adafactor(p, foreach=1), TypeError, "Adafactor: foreach must be a bool or None, not int"),
    (lambda p: O.Muon(p, ns_steps=2.5), TypeError, "Muon: ns_steps must be an int, not float"),
])
def test_argument_type_errors(make, error, message):
    with pytest.raises(error, match=message):
        make([flow.tensor(W0).requires_grad_()])


SIGNATURE_DEFAULTS = [
    (O.Adadelta, {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0, "foreach": None, "capturable": False,
                  "maximize": False, "differentiable": False}),
    (O.Adagrad, {"lr": 1e-2, "lr_decay": 0, "weight_decay": 0, "initial_accumulator_value": 0, "eps": 1e-10,
                 "foreach": None, "maximize": False, "differentiable": False, "fused": None}),
    (O.Adamax, {"lr": 2e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "foreach": None,
                "maximize": False, "differentiable": False, "capturable": False}),
    (O.NAdam, {"lr": 2e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "momentum_decay": 4e-3,
               "decoupled_weight_decay": False, "foreach": None, "maximize": False, "capturable": False,
               "differentiable": False}),
    (O.RAdam, {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "decoupled_weight_decay": False,
               "foreach": None, "maximize": False, "capturable": False, "differentiable": False}),
    (O.ASGD, {"lr": 1e-2, "lambd": 1e-4, "alpha": 0.75, "t0": 1e6, "weight_decay": 0, "foreach": None,
              "maximize": False, "differentiable": False, "capturable": False}),
    (O.Rprop, {"lr": 1e-2, "etas": (0.5, 1.2), "step_sizes": (1e-6, 50), "capturable": False, "foreach": None,
               "maximize": False, "differentiable": False}),
    (O.Adafactor, {"lr": 1e-2, "beta2_decay": -0.8, "eps": (None, 1e-3), "d": 1.0, "weight_decay": 0.0,
                   "foreach": None, "maximize": False}),
    (O.Muon, {"lr": 1e-3, "weight_decay": 0.1, "momentum": 0.95, "nesterov": True,
              "ns_coefficients": (3.4445, -4.7750, 2.0315), "eps": 1e-7, "ns_steps": 5, "adjust_lr_fn": None}),
]


@pytest.mark.parametrize("opt_cls, defaults", SIGNATURE_DEFAULTS, ids=[c[0].__name__ for c in SIGNATURE_DEFAULTS])
def test_defaults_are_pytorchs(opt_cls, defaults):
    opt = opt_cls([flow.tensor(W0).requires_grad_()])
    assert opt.defaults == defaults
    assert {k: v for k, v in opt.param_groups[0].items() if k != "params"} == defaults


# ---- optional: against torch.optim -----------------------------------------------------------------
TORCH_CASES = [c for c in CASES if c[0] is not O.Muon] + [
    (O.Adagrad, None, {"lr": 0.1, "lr_decay": 0.01}), (O.NAdam, None, {"lr": 0.1, "momentum_decay": 0.1})]


def _torch_trajectory(torch, name, kwargs, w0, steps):
    w = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    a, b = (torch.tensor(AV), torch.tensor(BV)) if w0.ndim == 1 else (torch.tensor(A), torch.tensor(B))
    opt = getattr(torch.optim, name)([w], **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * a * w * w + b * w).sum().backward()
        opt.step()
        out.append(w.detach().numpy().copy())
    return out, opt


@pytest.mark.parametrize("opt_cls, ref, kwargs", TORCH_CASES, ids=ids(TORCH_CASES))
def test_matches_torch(opt_cls, ref, kwargs, float64_default):
    torch = pytest.importorskip("torch")
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        expected, topt = _torch_trajectory(torch, opt_cls.__name__, kwargs, W0, 8)
        got, opt, _ = run(opt_cls, steps=8, **kwargs)
        assert_steps(got, expected, rtol=1e-6, atol=1e-12)
        # the state dict's layout is PyTorch's: the same state names and group entries
        tsd, sd = topt.state_dict(), opt.state_dict()
        assert set(tsd["state"][0]) == set(sd["state"][0])
        assert set(tsd["param_groups"][0]) == set(sd["param_groups"][0])
    finally:
        torch.set_default_dtype(previous)


def test_muon_close_to_torch_in_bfloat16():
    torch = pytest.importorskip("torch")
    # PyTorch runs the Newton-Schulz iterations in bfloat16 (3 significant digits); here in float64
    expected, _ = _torch_trajectory(torch, "Muon", {"lr": 0.02}, W0, 5)
    got, _, _ = run(O.Muon, lr=0.02)
    assert_steps(got, expected, rtol=0, atol=5e-3)


def test_loads_a_torch_state_dict():
    torch = pytest.importorskip("torch")

    def to_flow(value):
        if isinstance(value, torch.Tensor):
            return flow.tensor(value.detach().numpy())
        if isinstance(value, dict):
            return {k: to_flow(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(to_flow(v) for v in value)
        return value

    for name, kwargs in [("NAdam", {"lr": 0.05}), ("Adagrad", {"lr": 0.1}), ("ASGD", {"lr": 0.05, "t0": 1}),
                         ("Rprop", {}), ("Adafactor", {"lr": 0.05}), ("Adamax", {"lr": 0.05})]:
        _, topt = _torch_trajectory(torch, name, kwargs, W0, 2)
        torch_after, _ = _torch_trajectory(torch, name, kwargs, W0, 4)
        w = flow.tensor(_torch_trajectory(torch, name, kwargs, W0, 2)[0][-1]).requires_grad_()
        opt = getattr(O, name)([w])
        opt.load_state_dict(to_flow(topt.state_dict()))
        for _ in range(2):
            opt.zero_grad()
            (0.5 * flow.tensor(A) * w * w + flow.tensor(B) * w).sum().backward()
            opt.step()
        np.testing.assert_allclose(w.numpy(), torch_after[-1], rtol=1e-6, atol=1e-7, err_msg=name)
