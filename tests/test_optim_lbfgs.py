"""flow.optim.LBFGS: the fixed-step algorithm against a NumPy port of PyTorch's L-BFGS (two-loop
recursion, history, stopping rules, state across step() calls), the strong Wolfe line search by
its conditions and on the Rosenbrock function, the cubic interpolation by exact cases, the state
dict, errors, and (optional) torch.optim.LBFGS."""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.optim.lbfgs import cubic_interpolate, strong_wolfe

Q = np.array([[4.0, 1.0, 0.0, 0.5], [1.0, 3.0, 0.2, 0.0], [0.0, 0.2, 2.0, 0.3], [0.5, 0.0, 0.3, 1.0]])
QB = np.array([1.0, -2.0, 0.5, 3.0])
X0 = np.array([0.5, -1.0, 2.0, 0.3])


def quadratic(x):
    return 0.5 * x @ Q @ x + QB @ x, Q @ x + QB


def rosenbrock_np(x):
    f = np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    g = np.zeros_like(x)
    g[:-1] += -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return f, g


def flow_loss(kind, x):
    if kind == "quadratic":
        return 0.5 * (x * flow.matmul(flow.tensor(Q), x)).sum() + (flow.tensor(QB) * x).sum()
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def run(kind, x0, calls, **kwargs):
    """Call ``step(closure)`` ``calls`` times; the parameter after each call, the optimizer and the parameter."""
    x = flow.tensor(np.array(x0, dtype=np.float64)).requires_grad_()
    opt = flow.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = flow_loss(kind, x)
        loss.backward()
        return loss

    out = []
    for _ in range(calls):
        opt.step(closure)
        out.append(x.numpy().copy())
    return out, opt, x


def ref_lbfgs(fg, x0, calls, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
              history_size=100):
    """PyTorch's L-BFGS without line search, in NumPy: the iterate after each call of step()."""
    max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
    x, st, out = np.array(x0, dtype=np.float64), {"n_iter": 0, "t": None}, []
    for _ in range(calls):
        loss, g = fg(x)
        evals = 1
        if np.abs(g).max() <= tolerance_grad:
            out.append(x.copy())
            continue
        n = 0
        while n < max_iter:
            n += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d, st["dirs"], st["stps"], st["ro"], st["H"] = -g, [], [], [], 1.0
            else:
                y, s = g - st["prev_g"], st["d"] * st["t"]
                if y @ s > 1e-10:
                    if len(st["dirs"]) == history_size:
                        st["dirs"].pop(0), st["stps"].pop(0), st["ro"].pop(0)
                    st["dirs"].append(y), st["stps"].append(s), st["ro"].append(1.0 / (y @ s))
                    st["H"] = (y @ s) / (y @ y)
                q, al = -g, [0.0] * len(st["dirs"])
                for i in reversed(range(len(st["dirs"]))):
                    al[i] = st["stps"][i] @ q * st["ro"][i]
                    q = q - al[i] * st["dirs"][i]
                d = q * st["H"]
                for i in range(len(st["dirs"])):
                    d = d + (al[i] - st["dirs"][i] @ d * st["ro"][i]) * st["stps"][i]
            st["d"], st["prev_g"], prev_loss = d, g, loss
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if st["n_iter"] == 1 else lr
            st["t"] = t
            if g @ d > -tolerance_change:
                break
            x = x + t * d
            optimal = False
            if n != max_iter:
                loss, g = fg(x)
                evals += 1
                optimal = np.abs(g).max() <= tolerance_grad
            if n == max_iter or evals >= max_eval or optimal:
                break
            if np.abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break
        out.append(x.copy())
    return out


@pytest.mark.parametrize("kind, x0, calls, kwargs", [
    ("quadratic", X0, 4, {"lr": 0.5, "max_iter": 3}),
    ("quadratic", X0, 3, {"lr": 0.2, "max_iter": 5, "history_size": 2}),
    ("quadratic", X0, 2, {"lr": 1.0}),
    ("rosenbrock", [-0.5, 0.8, 0.2], 5, {"lr": 0.01, "max_iter": 4}),
    ("rosenbrock", [-0.5, 0.8, 0.2], 3, {"lr": 0.005, "max_iter": 6, "max_eval": 4, "history_size": 3}),
])
def test_fixed_step_matches_reference(kind, x0, calls, kwargs):
    fg = quadratic if kind == "quadratic" else rosenbrock_np
    out, _, _ = run(kind, x0, calls, **kwargs)
    expected = ref_lbfgs(fg, x0, calls, **kwargs)
    for i, (got, want) in enumerate(zip(out, expected)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"after call {i + 1}")
    assert np.abs(out[-1] - np.asarray(x0)).max() > 1e-3  # the case moved


def test_first_iteration_is_a_scaled_gradient_step():
    out, opt, x = run("quadratic", X0, 1, lr=0.7, max_iter=1)
    g = quadratic(X0)[1]
    np.testing.assert_allclose(out[0], X0 - min(1.0, 1.0 / np.abs(g).sum()) * 0.7 * g, rtol=1e-14)
    st = opt.state[x]
    assert st["func_evals"] == 1 and st["n_iter"] == 1  # the last iteration does not re-evaluate
    assert set(st) == {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
                       "prev_loss"}


def test_state_across_calls_and_history_size():
    _, opt, x = run("quadratic", X0, 3, lr=0.3, max_iter=4, history_size=2)
    st = opt.state[x]
    assert st["n_iter"] == 12 and st["func_evals"] == 3 * 4
    assert len(st["old_dirs"]) == len(st["old_stps"]) == len(st["ro"]) == 2
    assert len(st["al"]) == 2
    y, s = st["old_dirs"][-1].numpy(), st["old_stps"][-1].numpy()
    np.testing.assert_allclose(y, Q @ s, rtol=1e-10)  # a quadratic's curvature pair: y = Q s
    assert st["ro"][-1] == pytest.approx(1 / (y @ s)) and st["H_diag"] == pytest.approx((y @ s) / (y @ y))


@pytest.mark.parametrize("x0", [[-1.5, 2.0], [-1.2, 1.0], [2.0, -1.0, 0.5, 1.5]])
def test_strong_wolfe_minimises_rosenbrock(x0):
    x = flow.tensor(np.array(x0)).requires_grad_()
    opt = flow.optim.LBFGS([x], line_search_fn="strong_wolfe", max_iter=100, tolerance_grad=1e-12,
                           tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = flow_loss("rosenbrock", x)
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    assert rosenbrock_np(x.numpy())[0] < 1e-8
    np.testing.assert_allclose(x.numpy(), np.ones(len(x0)), atol=1e-4)


def test_strong_wolfe_on_a_quadratic_converges_in_few_iterations():
    out, opt, x = run("quadratic", X0, 1, line_search_fn="strong_wolfe", max_iter=50, tolerance_grad=1e-10,
                      tolerance_change=1e-15)
    np.testing.assert_allclose(out[0], np.linalg.solve(Q, -QB), rtol=1e-7, atol=1e-8)
    assert opt.state[x]["n_iter"] <= 10


def test_strong_wolfe_step_satisfies_the_conditions():
    rng = np.random.default_rng(3)
    for _ in range(5):
        x0 = rng.uniform(-1.5, 1.5, 3)
        f0, g0 = rosenbrock_np(x0)
        d = -g0 / np.linalg.norm(g0)

        def obj_func(x, t, direction):
            f, g = rosenbrock_np(x[0].numpy() + t * direction.numpy())
            return f, flow.tensor(g)

        gtd = float(g0 @ d)
        f_new, g_new, t, evals = strong_wolfe(obj_func, [flow.tensor(x0)], 1.0, flow.tensor(d), f0, flow.tensor(g0),
                                              gtd)
        assert f_new <= f0 + 1e-4 * t * gtd  # sufficient decrease
        assert abs(float(g_new.numpy() @ d)) <= 0.9 * abs(gtd)  # curvature (strong)
        assert f_new == pytest.approx(rosenbrock_np(x0 + t * d)[0]) and 1 <= evals <= 26


def test_cubic_interpolate_exact_cases():
    # the minimiser of a cubic is found exactly from two points with values and slopes
    p, dp = (lambda x: (x - 1) ** 2 * (x + 2)), (lambda x: 3 * (x - 1) * (x + 1))
    assert cubic_interpolate(0.0, p(0.0), dp(0.0), 2.0, p(2.0), dp(2.0)) == pytest.approx(1.0)
    assert cubic_interpolate(2.0, p(2.0), dp(2.0), 0.0, p(0.0), dp(0.0)) == pytest.approx(1.0)
    q, dq = (lambda x: (x - 0.7) ** 2), (lambda x: 2 * (x - 0.7))
    assert cubic_interpolate(-1.0, q(-1.0), dq(-1.0), 3.0, q(3.0), dq(3.0)) == pytest.approx(0.7)
    # clamped to the bounds
    assert cubic_interpolate(-1.0, q(-1.0), dq(-1.0), 3.0, q(3.0), dq(3.0), bounds=(1.0, 2.0)) == 1.0
    # no minimum (d1^2 < g1 g2): the middle of the bounds
    assert cubic_interpolate(0.0, 0.0, 1.0, 1.0, 2.0 / 3, 1.0, bounds=(0.0, 4.0)) == 2.0


def test_stops_at_a_stationary_point():
    x0 = np.linalg.solve(Q, -QB)
    out, opt, x = run("quadratic", x0, 2, lr=1.0)
    np.testing.assert_array_equal(out[-1], x0)
    assert opt.state[x]["func_evals"] == 2 and opt.state[x]["n_iter"] == 0


def test_closure_runs_with_grad_enabled_and_the_first_loss_is_returned():
    x = flow.tensor(X0).requires_grad_()
    opt = flow.optim.LBFGS([x], lr=0.1, max_iter=3)
    enabled = []

    def closure():
        enabled.append(flow.is_grad_enabled())
        opt.zero_grad()
        loss = flow_loss("quadratic", x)
        loss.backward()
        return loss

    with flow.no_grad():
        loss = opt.step(closure)
    assert enabled == [True, True, True]
    assert loss.item() == pytest.approx(quadratic(X0)[0])


def test_state_dict_round_trip_continues_identically():
    for kwargs in ({"lr": 0.3, "max_iter": 3, "history_size": 2}, {"line_search_fn": "strong_wolfe", "max_iter": 3}):
        _, opt, x = run("rosenbrock", [-1.2, 1.0], 2, **kwargs)
        sd, snapshot = opt.state_dict(), x.numpy().copy()
        assert set(sd["state"][0]) >= {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad"}
        x2 = flow.tensor(snapshot).requires_grad_()
        opt2 = flow.optim.LBFGS([x2], lr=5.0)
        opt2.load_state_dict(sd)
        for param, o in ((x, opt), (x2, opt2)):
            def closure(param=param, o=o):
                o.zero_grad()
                loss = flow_loss("rosenbrock", param)
                loss.backward()
                return loss
            o.step(closure)
        np.testing.assert_array_equal(x2.numpy(), x.numpy())


def test_errors():
    x = flow.tensor(X0).requires_grad_()
    with pytest.raises(ValueError, match=r"LBFGS doesn't support per-parameter options \(parameter groups\)"):
        flow.optim.LBFGS([{"params": [x]}, {"params": [flow.tensor(X0).requires_grad_()]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        flow.optim.LBFGS([x], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        flow.optim.LBFGS([x], lr=-1)
    with pytest.raises(TypeError, match="LBFGS: history_size must be an int, not float"):
        flow.optim.LBFGS([x], history_size=10.0)
    opt = flow.optim.LBFGS([x])
    assert opt.defaults["max_eval"] == 25 and flow.optim.LBFGS([x], max_iter=8).defaults["max_eval"] == 10
    with pytest.raises(TypeError):
        opt.step()
    with pytest.raises(TypeError, match="LBFGS.step\\(\\): closure must be a callable"):
        opt.step(None)


def test_cannot_be_captured_in_a_graph():
    x = flow.tensor(X0).requires_grad_()
    opt = flow.optim.LBFGS([x])

    def train(inp):
        def closure():
            loss = flow_loss("quadratic", x) * inp
            loss.backward()
            return loss
        return opt.step(closure)

    with pytest.raises(NotImplementedError, match=r"LBFGS.step\(\) cannot be captured in an nn.Graph"):
        flow.nn.Graph.trace(train)(flow.tensor(1.0, dtype=flow.float64))


@pytest.mark.parametrize("kind, x0, calls, kwargs", [
    ("rosenbrock", [-1.5, 2.0, 0.5, -0.3], 1, {"line_search_fn": "strong_wolfe", "max_iter": 200,
                                               "tolerance_grad": 1e-12, "tolerance_change": 1e-15}),
    ("rosenbrock", [-1.5, 2.0, 0.5, -0.3], 5, {"line_search_fn": "strong_wolfe"}),
    ("rosenbrock", [-1.2, 1.0], 6, {"line_search_fn": "strong_wolfe", "history_size": 2, "max_iter": 10,
                                    "max_eval": 12}),
    ("rosenbrock", [-1.5, 2.0, 0.5, -0.3], 5, {"lr": 0.01}),
    ("quadratic", X0, 4, {"lr": 0.1, "history_size": 3, "max_iter": 7}),
])
def test_matches_torch(kind, x0, calls, kwargs):
    torch = pytest.importorskip("torch")
    xt = torch.tensor(np.array(x0, dtype=np.float64), requires_grad=True)
    topt = torch.optim.LBFGS([xt], **kwargs)
    qt, qbt = torch.tensor(Q), torch.tensor(QB)

    def closure():
        topt.zero_grad()
        if kind == "quadratic":
            loss = 0.5 * xt @ qt @ xt + qbt @ xt
        else:
            loss = (100 * (xt[1:] - xt[:-1] ** 2) ** 2 + (1 - xt[:-1]) ** 2).sum()
        loss.backward()
        return loss

    expected = []
    for _ in range(calls):
        topt.step(closure)
        expected.append(xt.detach().numpy().copy())
    out, opt, x = run(kind, x0, calls, **kwargs)
    for got, want in zip(out, expected):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    tstate = topt.state[xt]
    assert opt.state[x]["func_evals"] == tstate["func_evals"] and opt.state[x]["n_iter"] == tstate["n_iter"]
    assert set(opt.state[x]) == set(tstate)
