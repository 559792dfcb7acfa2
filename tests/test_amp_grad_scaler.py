"""flow.amp.GradScaler: dynamic loss scaling against a hand-written schedule; pass-through when disabled."""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow


def _setup(value=1.0):
    w = flow.nn.Parameter(flow.tensor([value, -value]))
    return w, flow.optim.SGD([w], lr=0.5)


def test_scale_unscale_step_and_update_follow_the_documented_schedule():
    w, opt = _setup()
    scaler = flow.amp.GradScaler("cpu", init_scale=8.0, growth_factor=2.0, backoff_factor=0.25, growth_interval=2)
    expected_w, scale = np.array([1.0, -1.0]), 8.0
    for step, overflow in enumerate([False, False, True, False, False]):
        opt.zero_grad()
        loss = (w * w).sum() if not overflow else (w * math.inf).sum()
        scaled = scaler.scale(loss)
        assert scaled.item() == pytest.approx(loss.item() * scale) or overflow
        scaled.backward()
        np.testing.assert_allclose(w.grad.numpy(), 2 * expected_w * scale if not overflow else w.grad.numpy())
        scaler.step(opt)
        if not overflow:
            expected_w = expected_w - 0.5 * 2 * expected_w  # SGD on the unscaled gradient 2w
        scaler.update()
        scale = {0: 8.0, 1: 16.0, 2: 4.0, 3: 4.0, 4: 8.0}[step]
        assert scaler.get_scale() == scale
        np.testing.assert_allclose(w.numpy(), expected_w)
    assert scaler.state_dict() == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.25,
                                   "growth_interval": 2, "_growth_tracker": 0}


def test_disabled_scaler_passes_through_and_cuda_scaler_is_disabled_with_a_warning():
    w, opt = _setup()
    off = flow.amp.GradScaler(enabled=False)
    loss = (w * w).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    loss.backward()
    off.step(opt)
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
        assert not flow.amp.GradScaler().is_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not flow.cuda.amp.GradScaler(enabled=False).is_enabled()


def test_misuse_raises():
    w, opt = _setup()
    scaler = flow.amp.GradScaler("cpu")
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update"):
        scaler.step(opt)
    with pytest.raises(ValueError, match="growth_factor should be > 1"):
        flow.amp.GradScaler("cpu", growth_factor=0.5)
    with pytest.raises(ValueError, match="outputs must be a Tensor"):
        scaler.scale("loss")


def test_inference_mode_as_context_and_decorator():
    x = flow.ones(2, requires_grad=True)
    with flow.inference_mode():
        assert not (x * 2).requires_grad and flow.is_inference_mode_enabled()
    with flow.inference_mode(False):
        assert (x * 2).requires_grad

    @flow.inference_mode
    def bare(t):
        return t * 2

    @flow.inference_mode()
    def called(t):
        return t * 2

    assert not bare(x).requires_grad and not called(x).requires_grad and (x * 2).requires_grad


def test_distributed_world_of_one_and_its_errors():
    dist = flow.distributed
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(NotImplementedError, match="world_size=2"):
        dist.init_process_group("gloo", world_size=2, rank=0)
    assert not dist.is_initialized()
    dist.init_process_group("gloo")
    try:
        with pytest.raises(RuntimeError, match="initialize the default process group twice"):
            dist.init_process_group("gloo")
        t = flow.tensor([1.0, 2.0])
        dist.all_reduce(t)
        assert t.tolist() == [1.0, 2.0]
        out = [flow.zeros(2)]
        dist.all_gather(out, t)
        assert out[0].tolist() == [1.0, 2.0]
        assert dist.barrier(async_op=True).wait()
    finally:
        dist.destroy_process_group()
