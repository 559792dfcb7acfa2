"""flow.optim.lr_scheduler: each schedule's lr sequence against hand-written values or its formula."""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.optim import lr_scheduler as S


def make_opt(lr=1.0, groups=1, opt_cls=flow.optim.SGD):
    params = [flow.tensor([1.0, 2.0]).requires_grad_() for _ in range(groups)]
    if groups == 1:
        return opt_cls(params, lr=lr)
    return opt_cls([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(params)], lr=lr)


def lrs(sched, epochs):
    """The lr of each group at epochs 0 .. epochs - 1 (an optimizer step before each scheduler step)."""
    out = []
    for _ in range(epochs):
        out.append(sched.get_last_lr())
        assert sched.get_last_lr() == [g["lr"] for g in sched.optimizer.param_groups]
        sched.optimizer.step()
        sched.step()
    return out


def first(values):
    return [v[0] for v in values]


def test_step_lr():
    sched = S.StepLR(make_opt(0.5), step_size=3, gamma=0.1)
    expected = [0.5, 0.5, 0.5, 0.05, 0.05, 0.05, 0.005, 0.005, 0.005, 0.0005]
    np.testing.assert_allclose(first(lrs(sched, 10)), expected, rtol=1e-12)


def test_step_lr_default_gamma_and_groups():
    opt = make_opt(1.0, groups=2)
    sched = S.StepLR(opt, step_size=2)
    got = lrs(sched, 5)
    np.testing.assert_allclose([g[0] for g in got], [1.0, 1.0, 0.1, 0.1, 0.01], rtol=1e-12)
    np.testing.assert_allclose([g[1] for g in got], [2.0, 2.0, 0.2, 0.2, 0.02], rtol=1e-12)
    assert sched.base_lrs == [1.0, 2.0]
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 2.0]


def test_multi_step_lr():
    sched = S.MultiStepLR(make_opt(1.0), milestones=[2, 5], gamma=0.5)
    np.testing.assert_allclose(first(lrs(sched, 8)), [1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25], rtol=1e-12)


def test_multi_step_lr_repeated_milestone():
    sched = S.MultiStepLR(make_opt(1.0), milestones=[4, 1, 4], gamma=0.1)  # 4 twice: x0.01 at epoch 4
    np.testing.assert_allclose(first(lrs(sched, 6)), [1, 0.1, 0.1, 0.1, 0.001, 0.001], rtol=1e-12)


def test_exponential_lr():
    sched = S.ExponentialLR(make_opt(2.0), gamma=0.9)
    np.testing.assert_allclose(first(lrs(sched, 6)), [2.0 * 0.9 ** e for e in range(6)], rtol=1e-12)


def test_cosine_annealing_lr():
    base, eta_min, t_max = 1.0, 0.1, 4
    sched = S.CosineAnnealingLR(make_opt(base), T_max=t_max, eta_min=eta_min)
    got = first(lrs(sched, 13))
    # eta_min + (base - eta_min) * (1 + cos(pi * e / T_max)) / 2, continuing past T_max (period 2 T_max)
    expected = [eta_min + (base - eta_min) * (1 + math.cos(math.pi * e / t_max)) / 2 for e in range(13)]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got[:9], [1.0, 0.868198, 0.55, 0.231802, 0.1, 0.231802, 0.55, 0.868198, 1.0],
                               rtol=1e-6)


def test_cosine_annealing_default_eta_min():
    sched = S.CosineAnnealingLR(make_opt(0.1), T_max=2)
    np.testing.assert_allclose(first(lrs(sched, 5)), [0.1, 0.05, 0.0, 0.05, 0.1], atol=1e-15)


def test_lambda_lr():
    sched = S.LambdaLR(make_opt(0.5), lr_lambda=lambda e: 0.95 ** e)
    np.testing.assert_allclose(first(lrs(sched, 5)), [0.5 * 0.95 ** e for e in range(5)], rtol=1e-12)


def test_lambda_lr_per_group():
    opt = make_opt(1.0, groups=2)
    sched = S.LambdaLR(opt, [lambda e: e + 1, lambda e: 1.0 / (e + 1)])
    got = lrs(sched, 4)
    assert [g[0] for g in got] == [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_allclose([g[1] for g in got], [2.0, 1.0, 2 / 3, 0.5], rtol=1e-12)


def test_linear_lr_warmup():
    # PyTorch's documented example: lr 0.05, start_factor 0.5, total_iters 4
    sched = S.LinearLR(make_opt(0.05), start_factor=0.5, total_iters=4)
    np.testing.assert_allclose(first(lrs(sched, 7)), [0.025, 0.03125, 0.0375, 0.04375, 0.05, 0.05, 0.05],
                               rtol=1e-12)


def test_linear_lr_defaults_and_decay():
    sched = S.LinearLR(make_opt(0.3))  # start 1/3, end 1, 5 iterations
    expected = [0.3 * (1 / 3 + (2 / 3) * min(e, 5) / 5) for e in range(8)]
    np.testing.assert_allclose(first(lrs(sched, 8)), expected, rtol=1e-12)
    sched = S.LinearLR(make_opt(1.0), start_factor=1.0, end_factor=0.0, total_iters=4)
    np.testing.assert_allclose(first(lrs(sched, 6)), [1.0, 0.75, 0.5, 0.25, 0.0, 0.0], atol=1e-15)


def test_sequential_lr_warmup_then_decay():
    opt = make_opt(1.0)
    warmup = S.LinearLR(opt, start_factor=0.1, total_iters=2)
    decay = S.ExponentialLR(opt, gamma=0.9)
    sched = S.SequentialLR(opt, [warmup, decay], milestones=[2])
    # warmup 0.1, 0.55; at the milestone the decay restarts from the initial lr
    np.testing.assert_allclose(first(lrs(sched, 6)), [0.1, 0.55, 1.0, 0.9, 0.81, 0.729], rtol=1e-12)


def test_sequential_lr_three_schedules():
    opt = make_opt(1.0)
    scheds = [S.LinearLR(opt, start_factor=0.5, total_iters=2), S.StepLR(opt, step_size=1, gamma=0.5),
              S.CosineAnnealingLR(opt, T_max=2, eta_min=0.0)]
    sched = S.SequentialLR(opt, scheds, milestones=[2, 4])
    np.testing.assert_allclose(first(lrs(sched, 8)), [0.5, 0.75, 1.0, 0.5, 1.0, 0.5, 0.0, 0.5], atol=1e-12)


def test_schedulers_chain_on_one_optimizer():
    # two schedulers stepping the same optimizer compose (the chainable form)
    opt = make_opt(1.0)
    a = S.ExponentialLR(opt, gamma=0.5)
    b = S.StepLR(opt, step_size=2, gamma=0.1)
    got = []
    for _ in range(5):
        got.append(opt.param_groups[0]["lr"])
        opt.step()
        a.step()
        b.step()
    np.testing.assert_allclose(got, [1.0, 0.5, 0.025, 0.0125, 0.000625], rtol=1e-12)


def test_tensor_lr_is_updated_in_place():
    lr = flow.tensor(1.0)
    opt = flow.optim.SGD([flow.tensor([1.0]).requires_grad_()], lr=lr)
    sched = S.StepLR(opt, step_size=1, gamma=0.5)
    for e in range(3):
        assert opt.param_groups[0]["lr"] is lr
        assert lr.item() == 0.5 ** e and sched.get_last_lr() == [0.5 ** e]
        opt.step()
        sched.step()


def test_lr_is_what_the_optimizer_uses():
    w = flow.tensor([0.0], dtype=flow.float64).requires_grad_()
    opt = flow.optim.SGD([w], lr=1.0)
    sched = S.MultiStepLR(opt, milestones=[1], gamma=0.1)
    for _ in range(3):
        w.grad = flow.tensor([1.0], dtype=flow.float64)
        opt.step()
        sched.step()
    np.testing.assert_allclose(w.numpy(), [-1.0 - 0.1 - 0.1], rtol=1e-12)


# ---- state dicts, resuming, epoch argument ----------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda opt: S.StepLR(opt, step_size=2, gamma=0.5),
    lambda opt: S.MultiStepLR(opt, milestones=[1, 3], gamma=0.5),
    lambda opt: S.ExponentialLR(opt, gamma=0.8),
    lambda opt: S.CosineAnnealingLR(opt, T_max=3, eta_min=0.05),
    lambda opt: S.LinearLR(opt, start_factor=0.25, total_iters=3),
    lambda opt: S.LambdaLR(opt, lambda e: 1.0 / (1 + e)),
    lambda opt: S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.5, total_iters=2),
                                     S.ExponentialLR(opt, gamma=0.5)], milestones=[2]),
], ids=["step", "multistep", "exponential", "cosine", "linear", "lambda", "sequential"])
def test_state_dict_round_trip(make):
    opt = make_opt(1.0)
    sched = make(opt)
    lrs(sched, 3)
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    expected = lrs(sched, 4)
    opt2 = make_opt(5.0)
    sched2 = make(opt2)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    assert "optimizer" not in sched_state
    np.testing.assert_allclose(lrs(sched2, 4), expected, rtol=1e-12)


def test_lambda_lr_state_dict_saves_callable_objects():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = make_opt(1.0, groups=2)
    sched = S.LambdaLR(opt, [Decay(0.5), lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}, None]
    other = Decay(0.9)
    sched2 = S.LambdaLR(make_opt(1.0, groups=2), [other, lambda e: 1.0])
    sched2.load_state_dict(sd)
    assert other.rate == 0.5


def test_resuming_needs_initial_lr():
    opt = make_opt(1.0)
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\] when resuming"):
        S.StepLR(opt, step_size=2, last_epoch=3)
    opt.param_groups[0]["initial_lr"] = 1.0
    sched = S.CosineAnnealingLR(opt, T_max=4, last_epoch=1)  # resumed: the closed form at epoch 2
    assert sched.last_epoch == 2
    np.testing.assert_allclose(sched.get_last_lr(), [0.5], rtol=1e-12)


def test_step_with_epoch_uses_the_closed_form():
    opt = make_opt(1.0)
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(5)
    assert sched.last_epoch == 5
    np.testing.assert_allclose(sched.get_last_lr(), [0.25], rtol=1e-12)


# ---- warnings and errors ----------------------------------------------------------------------------
def test_warns_when_scheduler_steps_before_optimizer():
    opt = make_opt(1.0)
    sched = S.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        sched.step()
    opt = make_opt(1.0)
    sched = S.StepLR(opt, step_size=1)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
        opt.step()
        sched.step()


def test_warns_when_optimizer_step_is_replaced_after_the_scheduler():
    opt = make_opt(1.0)
    sched = S.StepLR(opt, step_size=1)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match=r"Seems like `optimizer.step\(\)` has been overridden"):
        sched.step()


def test_get_lr_outside_step_warns():
    sched = S.ExponentialLR(make_opt(1.0), gamma=0.5)
    with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
        sched.get_lr()


def test_failing_lambda_leaves_the_schedule_unchanged():
    def fn(epoch):
        if epoch == 2:
            raise ZeroDivisionError("boom")
        return 1.0
    opt = make_opt(1.0)
    sched = S.LambdaLR(opt, fn)
    opt.step()
    sched.step()
    with pytest.raises(ZeroDivisionError, match="boom"):
        sched.step()
    assert sched.last_epoch == 1 and sched.get_last_lr() == [1.0]


@pytest.mark.parametrize("make, error, message", [
    (lambda o: S.StepLR(object(), step_size=1), TypeError, "object is not an Optimizer"),
    (lambda o: S.StepLR(o, step_size=0), ValueError, "StepLR: step_size must be at least 1, got 0"),
    (lambda o: S.StepLR(o, step_size=1.5), TypeError, "StepLR: step_size must be an int, not float"),
    (lambda o: S.MultiStepLR(o, milestones=3), TypeError, "MultiStepLR: milestones must be a list of ints"),
    (lambda o: S.MultiStepLR(o, milestones=[1, "2"]), TypeError, "each milestone must be an int, not str"),
    (lambda o: S.ExponentialLR(o, gamma="0.5"), TypeError, "ExponentialLR: gamma must be a number, not str"),
    (lambda o: S.CosineAnnealingLR(o, T_max=0), ValueError, "CosineAnnealingLR: T_max must be at least 1"),
    (lambda o: S.LinearLR(o, start_factor=0), ValueError,
     "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
    (lambda o: S.LinearLR(o, start_factor=1.5), ValueError, "Starting multiplicative factor expected"),
    (lambda o: S.LinearLR(o, end_factor=-0.1), ValueError,
     "Ending multiplicative factor expected to be between 0 and 1."),
    (lambda o: S.LinearLR(o, total_iters=0), ValueError, "LinearLR: total_iters must be at least 1, got 0"),
    (lambda o: S.LambdaLR(o, [lambda e: 1.0] * 2), ValueError, "Expected 1 lr_lambdas, but got 2"),
    (lambda o: S.LambdaLR(o, 0.5), TypeError, "LambdaLR: lr_lambda must be callable, not float"),
    (lambda o: S.StepLR(o, step_size=1, last_epoch=-2), ValueError, "StepLR: last_epoch must be at least -1"),
    (lambda o: S.SequentialLR(o, [], milestones=[]), ValueError, "SequentialLR expects at least one scheduler"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 1), S.StepLR(o, 2)], milestones=[]), ValueError,
     "expects number of schedulers provided to be one more than the number of milestone points"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 1), S.StepLR(make_opt(), 2)], milestones=[3]), ValueError,
     "SequentialLR expects all schedulers to belong to the same optimizer"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 1), S.StepLR(o, 2), S.StepLR(o, 3)], milestones=[3, 2]), ValueError,
     r"SequentialLR: milestones must be increasing, got \[3, 2\]"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 1), "x"], milestones=[3]), TypeError,
     r"SequentialLR: schedulers\[1\] must be an LRScheduler"),
])
def test_argument_errors(make, error, message):
    with pytest.raises(error, match=message):
        make(make_opt(1.0))


def test_custom_scheduler_on_the_base_class():
    class Halving(S.LRScheduler):
        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

    sched = Halving(make_opt(1.0))
    np.testing.assert_allclose(first(lrs(sched, 4)), [1.0, 0.5, 0.25, 0.125], rtol=1e-12)
    assert S._LRScheduler is S.LRScheduler
    with pytest.raises(NotImplementedError, match="must implement get_lr"):
        S.LRScheduler(make_opt(1.0))


def test_works_with_every_optimizer():
    for opt_cls in (flow.optim.SGD, flow.optim.Adam, flow.optim.AdamW, flow.optim.RMSprop):
        sched = S.ExponentialLR(make_opt(0.1, opt_cls=opt_cls), gamma=0.5)
        np.testing.assert_allclose(first(lrs(sched, 3)), [0.1, 0.05, 0.025], rtol=1e-12)
