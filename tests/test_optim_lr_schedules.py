"""flow.optim.lr_scheduler: MultiplicativeLR, ConstantLR, PolynomialLR, CosineAnnealingWarmRestarts,
CyclicLR, OneCycleLR, ReduceLROnPlateau and ChainedScheduler: each lr (and momentum) sequence
against its formula or hand-computed values, tensor lrs, state dicts, errors, and (optional)
torch.optim.lr_scheduler."""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.optim import lr_scheduler as S


def make_opt(lr=1.0, groups=1, opt_cls=flow.optim.SGD, tensor_lr=False, **kwargs):
    params = [flow.tensor([1.0, 2.0]).requires_grad_() for _ in range(groups)]

    def lr_of(i):
        value = lr * (i + 1)
        return flow.tensor(value, dtype=flow.float64) if tensor_lr else value
    return opt_cls([{"params": [p], "lr": lr_of(i)} for i, p in enumerate(params)], **kwargs)


def lrs(sched, epochs, group=0):
    """The lr of a group at epochs 0 .. epochs - 1 (an optimizer step before each scheduler step)."""
    out = []
    for _ in range(epochs):
        out.append(sched.get_last_lr()[group])
        assert sched.get_last_lr() == [float(g["lr"]) for g in sched.optimizer.param_groups]
        sched.optimizer.step()
        sched.step()
    return out


def momenta(sched, epochs, beta=False):
    out = []
    for _ in range(epochs):
        g = sched.optimizer.param_groups[0]
        out.append((float(g["lr"]), float(g["betas"][0] if beta else g["momentum"])))
        sched.optimizer.step()
        sched.step()
    return out


# ---- MultiplicativeLR, ConstantLR, PolynomialLR ----------------------------------------------------
def test_multiplicative_lr():
    sched = S.MultiplicativeLR(make_opt(2.0), lambda e: 0.9)
    np.testing.assert_allclose(lrs(sched, 6), [2.0 * 0.9 ** e for e in range(6)], rtol=1e-12)


def test_multiplicative_lr_per_group_reads_the_epoch():
    sched = S.MultiplicativeLR(make_opt(1.0, groups=2), [lambda e: 0.5, lambda e: 1.0 / (e + 1)])
    seq = []
    for _ in range(5):
        seq.append(list(sched.get_last_lr()))
        sched.optimizer.step()
        sched.step()
    # group 1 starts at 2.0 and is divided by e + 1 at epoch e: 2 / (e + 1)!
    np.testing.assert_allclose([s[0] for s in seq], [0.5 ** e for e in range(5)], rtol=1e-12)
    np.testing.assert_allclose([s[1] for s in seq], [2.0 / math.factorial(e + 1) for e in range(5)], rtol=1e-12)


def test_multiplicative_lr_compounds_changes_made_outside():
    opt = make_opt(1.0)
    sched = S.MultiplicativeLR(opt, lambda e: 0.5)
    opt.step()
    opt.param_groups[0]["lr"] = 10.0
    sched.step()
    assert sched.get_last_lr() == [5.0]


def test_constant_lr():
    sched = S.ConstantLR(make_opt(0.5), factor=0.5, total_iters=3)
    np.testing.assert_allclose(lrs(sched, 6), [0.25, 0.25, 0.25, 0.5, 0.5, 0.5], rtol=1e-12)
    sched = S.ConstantLR(make_opt(0.3))  # factor 1/3 for 5 epochs
    np.testing.assert_allclose(lrs(sched, 7), [0.1] * 5 + [0.3] * 2, rtol=1e-12)


def test_constant_lr_closed_form():
    sched = S.ConstantLR(make_opt(1.0), factor=0.25, total_iters=4)
    sched.optimizer.step()
    with pytest.warns(UserWarning, match="The epoch parameter"):
        sched.step(2)
    assert sched.get_last_lr() == [0.25]
    with pytest.warns(UserWarning, match="The epoch parameter"):
        sched.step(6)
    assert sched.get_last_lr() == [1.0]


def test_polynomial_lr():
    base, total, power = 0.8, 6, 2.0
    sched = S.PolynomialLR(make_opt(base), total_iters=total, power=power)
    expected = [base * (1 - min(e, total) / total) ** power for e in range(9)]
    np.testing.assert_allclose(lrs(sched, 9), expected, rtol=1e-12, atol=1e-15)
    sched = S.PolynomialLR(make_opt(1.0))  # total_iters 5, power 1: linear to zero
    np.testing.assert_allclose(lrs(sched, 7), [1.0, 0.8, 0.6, 0.4, 0.2, 0.0, 0.0], rtol=1e-12, atol=1e-15)


def test_polynomial_lr_closed_form():
    sched = S.PolynomialLR(make_opt(1.0), total_iters=4, power=0.5)
    sched.optimizer.step()
    with pytest.warns(UserWarning):
        sched.step(3)
    np.testing.assert_allclose(sched.get_last_lr(), [math.sqrt(0.25)], rtol=1e-12)


# ---- CosineAnnealingWarmRestarts -------------------------------------------------------------------
def sgdr(base, eta_min, t_0, t_mult, epochs):
    out, t_cur, t_i = [], 0, t_0
    for _ in range(epochs):
        out.append(eta_min + (base - eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2)
        t_cur += 1
        if t_cur >= t_i:
            t_cur, t_i = 0, t_i * t_mult
    return out


@pytest.mark.parametrize("t_0, t_mult, eta_min", [(3, 1, 0.0), (3, 2, 0.01), (2, 3, 0.1)])
def test_cosine_warm_restarts(t_0, t_mult, eta_min):
    sched = S.CosineAnnealingWarmRestarts(make_opt(1.0), T_0=t_0, T_mult=t_mult, eta_min=eta_min)
    np.testing.assert_allclose(lrs(sched, 20), sgdr(1.0, eta_min, t_0, t_mult, 20), rtol=1e-12, atol=1e-15)


def test_cosine_warm_restarts_hand_values():
    sched = S.CosineAnnealingWarmRestarts(make_opt(1.0), T_0=2, T_mult=2)
    # restarts at epochs 2 and 6: periods 2, 4, 8
    np.testing.assert_allclose(lrs(sched, 7), [1.0, 0.5, 1.0, 0.8535534, 0.5, 0.1464466, 1.0], atol=1e-7)


def test_cosine_warm_restarts_fractional_epochs():
    opt = make_opt(1.0)
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning for the epoch argument here
        sched.step(1.5)
    assert sched.T_cur == 1.5 and sched.last_epoch == 1
    np.testing.assert_allclose(sched.get_last_lr(), [(1 + math.cos(math.pi * 1.5 / 4)) / 2], rtol=1e-12)
    sched.step(13.0)  # periods 4, 8: epoch 13 is 1 into the third period (16 long)
    assert sched.T_i == 16 and sched.T_cur == 1
    sched.step(5)
    assert sched.T_i == 8 and sched.T_cur == 1
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


# ---- CyclicLR --------------------------------------------------------------------------------------
def clr(base, top, up, down, epochs, scale=lambda cycle, it: 1.0):
    out, total = [], up + down
    for it in range(epochs):
        cycle = math.floor(1 + it / total)
        x = 1.0 + it / total - cycle
        ratio = up / total
        f = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
        out.append(base + (top - base) * f * scale(cycle, it))
    return out


def test_cyclic_lr_triangular():
    sched = S.CyclicLR(make_opt(5.0), base_lr=0.1, max_lr=1.0, step_size_up=3, cycle_momentum=False)
    got = lrs(sched, 13)
    np.testing.assert_allclose(got[:7], [0.1, 0.4, 0.7, 1.0, 0.7, 0.4, 0.1], rtol=1e-12)
    np.testing.assert_allclose(got, clr(0.1, 1.0, 3, 3, 13), rtol=1e-12)


def test_cyclic_lr_modes():
    sched = S.CyclicLR(make_opt(), 0.1, 1.0, step_size_up=2, step_size_down=3, mode="triangular2",
                       cycle_momentum=False)
    np.testing.assert_allclose(lrs(sched, 16), clr(0.1, 1.0, 2, 3, 16, lambda c, i: 1 / 2.0 ** (c - 1)), rtol=1e-12)
    sched = S.CyclicLR(make_opt(), 0.1, 1.0, step_size_up=2, mode="exp_range", gamma=0.9, cycle_momentum=False)
    assert sched.scale_mode == "iterations"
    np.testing.assert_allclose(lrs(sched, 12), clr(0.1, 1.0, 2, 2, 12, lambda c, i: 0.9 ** i), rtol=1e-12)
    sched = S.CyclicLR(make_opt(), 0.1, 1.0, step_size_up=2, scale_fn=lambda x: 0.5 ** x, scale_mode="iterations",
                       cycle_momentum=False)
    np.testing.assert_allclose(lrs(sched, 10), clr(0.1, 1.0, 2, 2, 10, lambda c, i: 0.5 ** i), rtol=1e-12)
    sched = S.CyclicLR(make_opt(), 0.1, 1.0, step_size_up=2, scale_fn=lambda x: 1.0 / x, cycle_momentum=False)
    np.testing.assert_allclose(lrs(sched, 10), clr(0.1, 1.0, 2, 2, 10, lambda c, i: 1.0 / c), rtol=1e-12)


def test_cyclic_lr_per_group_bounds():
    opt = make_opt(1.0, groups=2)
    sched = S.CyclicLR(opt, base_lr=[0.1, 0.2], max_lr=[1.0, 0.5], step_size_up=2, cycle_momentum=False)
    seq = []
    for _ in range(5):
        seq.append(sched.get_last_lr())
        opt.step()
        sched.step()
    np.testing.assert_allclose([s[1] for s in seq], clr(0.2, 0.5, 2, 2, 5), rtol=1e-12)
    assert sched.base_lrs == [0.1, 0.2] and sched.max_lrs == [1.0, 0.5]


@pytest.mark.parametrize("opt_cls, beta", [(flow.optim.SGD, False), (flow.optim.Adam, True),
                                           (flow.optim.NAdam, True), (flow.optim.RMSprop, False)])
def test_cyclic_lr_cycles_the_momentum(opt_cls, beta):
    kwargs = {"momentum": 0.5} if opt_cls in (flow.optim.SGD, flow.optim.RMSprop) else {}
    sched = S.CyclicLR(make_opt(1.0, opt_cls=opt_cls, **kwargs), 0.1, 1.0, step_size_up=2, base_momentum=0.8,
                       max_momentum=0.9)
    got = momenta(sched, 9, beta)
    lr_expected = clr(0.1, 1.0, 2, 2, 9)
    mom_expected = [0.9 - (0.9 - 0.8) * (lr - 0.1) / 0.9 for lr in lr_expected]  # inversely to the lr
    np.testing.assert_allclose([g[0] for g in got], lr_expected, rtol=1e-12)
    np.testing.assert_allclose([g[1] for g in got], mom_expected, rtol=1e-12)
    group = sched.optimizer.param_groups[0]
    assert group["max_momentum"] == 0.9 and group["base_momentum"] == 0.8
    if beta:
        assert group["betas"][1] == 0.999


def test_cyclic_lr_needs_a_momentum_to_cycle():
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with `cycle_momentum` option"):
        S.CyclicLR(make_opt(opt_cls=flow.optim.Adagrad), 0.1, 1.0)
    S.CyclicLR(make_opt(opt_cls=flow.optim.Adagrad), 0.1, 1.0, cycle_momentum=False)


def test_cyclic_lr_state_dict_saves_a_callable_object():
    class Halving:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, x):
            return self.rate ** x

    sched = S.CyclicLR(make_opt(), 0.1, 1.0, step_size_up=2, scale_fn=Halving(), cycle_momentum=False)
    sd = sched.state_dict()
    assert sd["_scale_fn_custom"] == {"rate": 0.5} and "optimizer" not in sd
    other = Halving()
    other.rate = 0.9
    sched2 = S.CyclicLR(make_opt(), 0.1, 1.0, step_size_up=2, scale_fn=other, cycle_momentum=False)
    sched2.load_state_dict(sd)
    assert other.rate == 0.5 and sched2._scale_fn_custom is other
    assert S.CyclicLR(make_opt(), 0.1, 1.0, cycle_momentum=False).state_dict()["_scale_fn_custom"] is None


# ---- OneCycleLR ------------------------------------------------------------------------------------
def one_cycle(max_lr, total, pct=0.3, div=25.0, final_div=1e4, anneal="cos", three_phase=False,
              momentum=(0.85, 0.95)):
    """(lr, momentum) per step from the phases of the 1cycle policy."""
    def anneal_fn(start, end, p):
        if anneal == "cos":
            return end + (start - end) / 2 * (1 + math.cos(math.pi * p))
        return start + (end - start) * p
    initial, base_m, max_m = max_lr / div, momentum[0], momentum[1]
    low = initial / final_div
    if three_phase:
        phases = [(pct * total - 1, initial, max_lr, max_m, base_m), (2 * pct * total - 2, max_lr, initial, base_m, max_m),
                  (total - 1, initial, low, max_m, max_m)]
    else:
        phases = [(pct * total - 1, initial, max_lr, max_m, base_m), (total - 1, max_lr, low, base_m, max_m)]
    out = []
    for step in range(total):
        start = 0.0
        for i, (end, lr0, lr1, m0, m1) in enumerate(phases):
            if step <= end or i == len(phases) - 1:
                p = (step - start) / (end - start)
                out.append((anneal_fn(lr0, lr1, p), anneal_fn(m0, m1, p)))
                break
            start = end
    return out


@pytest.mark.parametrize("kwargs", [{}, {"anneal_strategy": "linear"}, {"three_phase": True},
                                    {"pct_start": 0.25, "div_factor": 10.0, "final_div_factor": 100.0},
                                    {"three_phase": True, "anneal_strategy": "linear", "pct_start": 0.4}])
def test_one_cycle_lr(kwargs):
    sched = S.OneCycleLR(make_opt(opt_cls=flow.optim.SGD, momentum=0.9), max_lr=2.0, total_steps=20, **kwargs)
    ref_kwargs = {{"pct_start": "pct", "div_factor": "div", "final_div_factor": "final_div",
                   "anneal_strategy": "anneal"}.get(k, k): v for k, v in kwargs.items()}
    expected = one_cycle(2.0, 20, **ref_kwargs)
    got = momenta(sched, 20)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    group = sched.optimizer.param_groups[0]
    assert group["initial_lr"] == 2.0 / kwargs.get("div_factor", 25.0) and group["max_lr"] == 2.0
    assert group["min_lr"] == group["initial_lr"] / kwargs.get("final_div_factor", 1e4)


def test_one_cycle_lr_hand_values():
    sched = S.OneCycleLR(make_opt(), max_lr=1.0, total_steps=10, pct_start=0.3, anneal_strategy="linear",
                         cycle_momentum=False)
    # up from 0.04 to 1.0 over steps 0..2, then down to 4e-6 over steps 2..9
    expected = [0.04, 0.52, 1.0] + [1.0 + (4e-6 - 1.0) * k / 7 for k in range(1, 8)]
    np.testing.assert_allclose(lrs(sched, 10), expected, rtol=1e-12)


def test_one_cycle_lr_with_adam_betas_and_epochs():
    sched = S.OneCycleLR(make_opt(opt_cls=flow.optim.Adam, betas=(0.9, 0.99)), max_lr=0.5, epochs=3,
                         steps_per_epoch=4, base_momentum=0.8, max_momentum=0.9)
    assert sched.total_steps == 12
    got = momenta(sched, 12, beta=True)
    np.testing.assert_allclose(got, one_cycle(0.5, 12, momentum=(0.8, 0.9)), rtol=1e-12)
    assert sched.optimizer.param_groups[0]["betas"][1] == 0.99


def test_one_cycle_lr_cannot_step_past_the_end():
    opt = make_opt()
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=3, cycle_momentum=False)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        sched.step()


# ---- ReduceLROnPlateau -----------------------------------------------------------------------------
def plateau(opt, metrics, **kwargs):
    sched = S.ReduceLROnPlateau(opt, **kwargs)
    out = []
    for m in metrics:
        opt.step()
        sched.step(m)
        out.append(sched.get_last_lr()[0])
    return out, sched


def test_reduce_lr_on_plateau_min_mode():
    # best 5, 4 (improves), then 4.5, 4.2, 4.1: three epochs without improvement > patience 2 -> reduce
    out, sched = plateau(make_opt(1.0), [5, 4, 4.5, 4.2, 4.1, 3.0, 3.5, 3.5, 3.5], patience=2)
    assert out == [1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.1, pytest.approx(0.01)]
    assert sched.best == 3.0 and sched.last_epoch == 9


def test_reduce_lr_on_plateau_threshold_is_relative_by_default():
    # 4 * (1 - 0.1) = 3.6: 3.7 is not an improvement with threshold 0.1
    out, sched = plateau(make_opt(1.0), [4.0, 3.7, 3.7], patience=1, threshold=0.1)
    assert out == [1.0, 1.0, pytest.approx(0.1)] and sched.best == 4.0
    out, sched = plateau(make_opt(1.0), [4.0, 3.95, 3.85], patience=0, threshold=0.1, threshold_mode="abs")
    assert out == [1.0, pytest.approx(0.1), 0.1] and sched.best == 3.85


def test_reduce_lr_on_plateau_max_mode_cooldown_and_min_lr():
    metrics = [0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    opt = make_opt(1.0, groups=2)
    out, _ = plateau(opt, metrics, mode="max", patience=0, cooldown=2, factor=0.5, min_lr=[0.3, 0.0])
    # reduce at epochs 3, 6, 9 (after each reduction two cooldown epochs); group 0 stops at 0.3
    assert out == [1.0, 1.0, 0.5, 0.5, 0.5, 0.3, 0.3, 0.3, 0.3]
    assert [g["lr"] for g in opt.param_groups] == [0.3, 2.0 * 0.5 ** 3]


def test_reduce_lr_on_plateau_eps_skips_tiny_changes():
    out, _ = plateau(make_opt(1e-8), [1.0, 2.0, 2.0], patience=0, eps=1e-8)
    assert out == [1e-8, 1e-8, 1e-8]


def test_reduce_lr_on_plateau_reads_tensor_metrics_and_tensor_lrs():
    opt = make_opt(1.0, tensor_lr=True)
    lr = opt.param_groups[0]["lr"]
    out, _ = plateau(opt, [flow.tensor(2.0), flow.tensor(3.0), flow.tensor(3.0)], patience=1)
    assert out == [1.0, 1.0, pytest.approx(0.1)] and opt.param_groups[0]["lr"] is lr
    assert lr.item() == pytest.approx(0.1)


def test_reduce_lr_on_plateau_state_dict_round_trip():
    metrics = [3.0, 2.0, 2.5, 2.5, 2.5, 1.0, 1.5, 1.5, 1.5]
    opt = make_opt(1.0)
    sched = S.ReduceLROnPlateau(opt, patience=1, cooldown=1)
    for m in metrics[:4]:
        sched.step(m)
    sd, opt_sd = sched.state_dict(), opt.state_dict()
    assert "optimizer" not in sd and sd["num_bad_epochs"] == 0 and sd["cooldown_counter"] == 1
    rest = []
    for m in metrics[4:]:
        sched.step(m)
        rest.append(sched.get_last_lr())
    opt2 = make_opt(7.0)
    sched2 = S.ReduceLROnPlateau(opt2, mode="max")
    opt2.load_state_dict(opt_sd)
    sched2.load_state_dict(sd)
    assert sched2.mode == "min" and sched2.mode_worse == math.inf
    rest2 = []
    for m in metrics[4:]:
        sched2.step(m)
        rest2.append(sched2.get_last_lr())
    assert rest2 == rest


# ---- ChainedScheduler and SequentialLR with it -----------------------------------------------------
def test_chained_scheduler():
    opt = make_opt(1.0)
    sched = S.ChainedScheduler([S.ConstantLR(opt, factor=0.1, total_iters=2), S.ExponentialLR(opt, gamma=0.9)])
    expected = [0.1 * 0.9 ** e if e < 2 else 0.9 ** e for e in range(6)]
    np.testing.assert_allclose(lrs(sched, 6), expected, rtol=1e-12)
    assert sched.optimizer is opt


def test_chained_scheduler_state_dict_round_trip():
    def make(opt):
        return S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=3), S.StepLR(opt, 2, 0.5)])

    opt = make_opt(1.0)
    sched = make(opt)
    lrs(sched, 2)
    sd, opt_sd = sched.state_dict(), opt.state_dict()
    assert len(sd["_schedulers"]) == 2 and "optimizer" not in sd
    expected = lrs(sched, 5)
    opt2 = make_opt(3.0)
    sched2 = make(opt2)
    opt2.load_state_dict(opt_sd)
    sched2.load_state_dict(sd)
    np.testing.assert_allclose(lrs(sched2, 5), expected, rtol=1e-12)


def test_sequential_lr_runs_a_chained_scheduler():
    opt = make_opt(1.0)
    warmup = S.LinearLR(opt, start_factor=0.25, total_iters=2)
    decay = S.ChainedScheduler([S.ExponentialLR(opt, gamma=0.5), S.StepLR(opt, step_size=2, gamma=0.1)])
    sched = S.SequentialLR(opt, [warmup, decay], milestones=[2])
    # warmup 0.25, 0.625; from epoch 2 the chained decay restarts at its epoch 0: 0.5 ** e * 0.1 ** (e // 2)
    expected = [0.25, 0.625] + [0.5 ** e * 0.1 ** (e // 2) for e in range(5)]
    np.testing.assert_allclose(lrs(sched, 7), expected, rtol=1e-12)


@pytest.mark.parametrize("make, error, message", [
    (lambda o: S.ChainedScheduler([]), ValueError, "ChainedScheduler expects at least one scheduler to be chained"),
    (lambda o: S.ChainedScheduler([S.StepLR(o, 1), S.StepLR(make_opt(), 1)]), ValueError,
     "ChainedScheduler expects all schedulers to belong to the same optimizer"),
    (lambda o: S.ChainedScheduler([S.StepLR(o, 1), S.ReduceLROnPlateau(o)]), ValueError,
     "ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
    (lambda o: S.ChainedScheduler([3]), TypeError, "ChainedScheduler at index 0 should have `optimizer`"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 1), S.ReduceLROnPlateau(o)], milestones=[2]), ValueError,
     "SequentialLR does not support `ReduceLROnPlateau` scheduler"),
    (lambda o: S.MultiplicativeLR(o, 0.9), TypeError, "lr_lambda should be a function, but got float"),
    (lambda o: S.MultiplicativeLR(o, [lambda e: 1.0] * 2), ValueError, "Expected 1 lr_lambdas, but got 2"),
    (lambda o: S.ConstantLR(o, factor=1.5), ValueError, "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda o: S.ConstantLR(o, total_iters=2.5), TypeError, "ConstantLR: total_iters must be an int, not float"),
    (lambda o: S.PolynomialLR(o, total_iters=0), ValueError, "PolynomialLR: total_iters must be at least 1, got 0"),
    (lambda o: S.PolynomialLR(o, power="2"), TypeError, "PolynomialLR: power must be a number, not str"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2.0), ValueError, "Expected positive integer T_0, but got 2.0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError,
     "Expected integer T_mult >= 1, but got 0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"), ValueError, "Expected float or int eta_min"),
    (lambda o: S.CyclicLR(o, 0.1, 1.0, mode="square"), ValueError, "mode is invalid and scale_fn is None"),
    (lambda o: S.CyclicLR(o, [0.1, 0.2], 1.0), ValueError,
     r"base_lr must have the same length as optimizer.param_groups. base_lr has 2 values, param_groups has 1."),
    (lambda o: S.CyclicLR(o, 0.1, 1.0, step_size_up=0), ValueError, "CyclicLR: step_size_up must be positive"),
    (lambda o: S.CyclicLR(o, 0.1, 1.0, scale_mode="epochs"), ValueError,
     "CyclicLR: scale_mode must be 'cycle' or 'iterations'"),
    (lambda o: S.OneCycleLR(o, 1.0), ValueError, r"You must define either total_steps OR \(epochs AND steps_per_epoch"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=0), ValueError, "Expected positive integer total_steps, but got 0"),
    (lambda o: S.OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=1.5), ValueError,
     "Expected positive integer steps_per_epoch, but got 1.5"),
    (lambda o: S.OneCycleLR(o, 1.0, epochs=-1, steps_per_epoch=2), ValueError,
     "Expected positive integer epochs, but got -1"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=10, pct_start=1.5), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1.5"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=10, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (lambda o: S.OneCycleLR(o, [1.0, 2.0], total_steps=10), ValueError, "max_lr must have the same length"),
    (lambda o: S.ReduceLROnPlateau(o, factor=1.0), ValueError, r"Factor should be < 1.0."),
    (lambda o: S.ReduceLROnPlateau(o, mode="best"), ValueError, "mode best is unknown!"),
    (lambda o: S.ReduceLROnPlateau(o, threshold_mode="pct"), ValueError, "threshold mode pct is unknown!"),
    (lambda o: S.ReduceLROnPlateau(o, min_lr=[0.1, 0.2]), ValueError, "expected 1 min_lrs, got 2"),
    (lambda o: S.ReduceLROnPlateau(o, patience=1.5), TypeError, "ReduceLROnPlateau: patience must be an int"),
    (lambda o: S.ReduceLROnPlateau(3), TypeError, "int is not an Optimizer"),
])
def test_argument_errors(make, error, message):
    with pytest.raises(error, match=message):
        make(make_opt(1.0))


def test_reduce_lr_on_plateau_new_param_group():
    opt = make_opt(1.0)
    sched = S.ReduceLROnPlateau(opt, patience=0, min_lr=[0.5])
    opt.add_param_group({"params": [flow.tensor([1.0]).requires_grad_()]})
    sched.step(1.0)
    with pytest.raises(RuntimeError, match=r"The number of param groups in the `optimizer` \(2\) differs from when "
                                           r"`ReduceLROnPlateau` was initialized \(1\)"):
        sched.step(2.0)


# ---- tensor lrs (updated in place) and state dicts of every new schedule ---------------------------
NEW_SCHEDULES = [
    lambda opt: S.MultiplicativeLR(opt, lambda e: 0.8),
    lambda opt: S.ConstantLR(opt, factor=0.5, total_iters=2),
    lambda opt: S.PolynomialLR(opt, total_iters=4, power=1.5),
    lambda opt: S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.05),
    lambda opt: S.CyclicLR(opt, 0.1, 1.0, step_size_up=2, mode="triangular2"),
    lambda opt: S.OneCycleLR(opt, max_lr=1.0, total_steps=12, three_phase=True),
    lambda opt: S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2), S.ExponentialLR(opt, 0.9)]),
]
NEW_IDS = ["multiplicative", "constant", "polynomial", "warm_restarts", "cyclic", "one_cycle", "chained"]


@pytest.mark.parametrize("make", NEW_SCHEDULES, ids=NEW_IDS)
def test_tensor_lr_is_updated_in_place(make):
    expected = lrs(make(make_opt(1.0, momentum=0.9)), 10)
    opt = make_opt(1.0, tensor_lr=True, momentum=0.9)
    lr = opt.param_groups[0]["lr"]
    got = lrs(make(opt), 10)
    assert opt.param_groups[0]["lr"] is lr and lr.dtype is flow.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("make", NEW_SCHEDULES, ids=NEW_IDS)
def test_state_dict_round_trip(make):
    opt = make_opt(1.0, momentum=0.9)
    sched = make(opt)
    lrs(sched, 3)
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    expected = lrs(sched, 5)
    opt2 = make_opt(4.0, momentum=0.5)
    sched2 = make(opt2)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    assert "optimizer" not in sched_state
    np.testing.assert_allclose(lrs(sched2, 5), expected, rtol=1e-12)


def test_mock_torch_exposes_every_schedule():
    with flow.mock_torch.enable():
        import torch.optim.lr_scheduler as T
        assert T.OneCycleLR is S.OneCycleLR and T.ReduceLROnPlateau is S.ReduceLROnPlateau


# ---- optional: against torch.optim.lr_scheduler ----------------------------------------------------
TORCH_SCHEDULES = {
    "multiplicative": lambda M, o: M.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1.0 / (e + 1)]),
    "constant": lambda M, o: M.ConstantLR(o),
    "polynomial": lambda M, o: M.PolynomialLR(o, total_iters=6, power=2.0),
    "warm_restarts": lambda M, o: M.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01),
    "cyclic": lambda M, o: M.CyclicLR(o, [0.01, 0.02], [0.1, 0.3], step_size_up=2, mode="triangular2"),
    "cyclic_exp": lambda M, o: M.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=1, mode="exp_range",
                                          gamma=0.9),
    "one_cycle": lambda M, o: M.OneCycleLR(o, max_lr=1.0, total_steps=20),
    "one_cycle_3": lambda M, o: M.OneCycleLR(o, max_lr=[1.0, 2.0], epochs=4, steps_per_epoch=5,
                                             anneal_strategy="linear", three_phase=True, pct_start=0.25),
    "chained": lambda M, o: M.ChainedScheduler([M.ConstantLR(o, factor=0.1, total_iters=2),
                                                M.ExponentialLR(o, gamma=0.9)]),
    "sequential": lambda M, o: M.SequentialLR(o, [M.ConstantLR(o, 0.5, total_iters=2),
                                                  M.CosineAnnealingWarmRestarts(o, T_0=3)], milestones=[4]),
}


def _sequence(lib, make, opt_name, tensor_lr, steps=20):
    params = [lib.tensor([1.0, 2.0]).requires_grad_() for _ in range(2)]
    groups = [{"params": [p], "lr": lib.tensor(0.1 * (i + 1), dtype=lib.float64) if tensor_lr else 0.1 * (i + 1)}
              for i, p in enumerate(params)]
    opt = getattr(lib.optim, opt_name)(groups, **({"momentum": 0.9} if opt_name == "SGD" else {}))
    sched = make(lib.optim.lr_scheduler, opt)
    out = []
    for _ in range(steps):
        row = []
        for g in opt.param_groups:
            row += [float(g["lr"]), float(g["momentum"] if opt_name == "SGD" else g["betas"][0])]
        out.append(row)
        opt.step()
        sched.step()
    return np.array(out)


@pytest.mark.parametrize("name", sorted(TORCH_SCHEDULES))
@pytest.mark.parametrize("opt_name, tensor_lr", [("SGD", False), ("Adam", False), ("SGD", True)])
def test_matches_torch(name, opt_name, tensor_lr):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _sequence(torch, TORCH_SCHEDULES[name], opt_name, tensor_lr)
        got = _sequence(flow, TORCH_SCHEDULES[name], opt_name, tensor_lr)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_reduce_lr_on_plateau_matches_torch():
    torch = pytest.importorskip("torch")
    metrics = [5, 4, 4.5, 4.2, 4.1, 4.3, 4.0, 3.9, 3.95, 3.95, 3.95, 3.95, 3.94, 3.96, 4, 4, 4, 4]
    for kwargs in [{"patience": 2}, {"patience": 1, "factor": 0.5, "cooldown": 2, "min_lr": [0.02, 0.05]},
                   {"mode": "max", "patience": 0, "threshold_mode": "abs", "threshold": 0.05},
                   {"patience": 1, "threshold": 0.1, "eps": 0.02}]:
        seqs = []
        for lib in (torch, flow):
            opt = lib.optim.SGD([{"params": [lib.tensor([1.0]).requires_grad_()], "lr": 0.1 * (i + 1)}
                                 for i in range(2)])
            sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
            seq = []
            for m in metrics:
                opt.step()
                sched.step(m)
                seq.append(list(sched.get_last_lr()) + [sched.num_bad_epochs, sched.cooldown_counter, sched.best])
            seqs.append(seq)
        np.testing.assert_allclose(seqs[1], seqs[0], rtol=1e-12)
