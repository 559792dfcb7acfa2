"""A device defined outside the package (tests/plugins/counting_device.py): transfer hooks, native kernels, the
kernel fallback for every other op, and the digits MLP trained on it."""

import importlib
import re
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch import DispatchKey, dump_table, fallbacks
from oneflow_lite.framework.device import device_types
from oneflow_lite.framework.errors import OpKernelNotFoundError, RegistrationError

dev = None  # the plugin module


@pytest.fixture(scope="module", autouse=True)
def _plugin():
    global dev
    dev = importlib.import_module("plugins.counting_device")
    dev.load()
    yield
    dev.unload()


@pytest.fixture(autouse=True)
def _counts():
    dev.load()
    dev.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the fallback's; tests that look at them catch them
        yield


def test_the_device_is_registered_on_private_use1():
    d = flow.device("countdev")
    assert d is flow.device("countdev:0") and d.key_set == 1 << DispatchKey.PrivateUse1
    assert d.device_type.to_device is dev.to_device and d.device_type.to_host is dev.to_host


def test_to_device_and_back_call_the_hooks():
    x = flow.tensor([1.5, -2.0, 3.0])
    y = x.to("countdev")
    assert y.device is flow.device("countdev") and y.dtype is flow.float32
    assert dev.COUNTS == {"to_device": 1}
    assert y.numpy() is not x.numpy() and y.numpy().tolist() == [1.5, -2.0, 3.0]
    back = y.cpu()
    assert back.device is flow.device("cpu") and back.numpy().tolist() == [1.5, -2.0, 3.0]
    assert dev.COUNTS == {"to_device": 1, "to_host": 1}
    assert back.numpy() is not y.numpy()
    # a copy within the device goes through the host; a dtype change on the way is a cast on the source device
    z = y.to("countdev", copy=True)
    assert z.device is flow.device("countdev") and z.numpy() is not y.numpy()
    assert dev.COUNTS == {"to_device": 2, "to_host": 2}
    w = x.to("countdev", flow.float64)
    assert w.dtype is flow.float64 and w.device is flow.device("countdev") and dev.COUNTS["to_device"] == 3


def test_flow_tensor_and_creation_ops_on_the_device():
    t = flow.tensor([[1, 2], [3, 4]], device="countdev")
    assert t.device is flow.device("countdev") and t.dtype is flow.int64 and dev.COUNTS == {"to_device": 1}
    dev.reset()
    z = flow.zeros(2, 3, device="countdev")
    o = flow.full((2,), 7.0, device="countdev")
    a = flow.arange(4, device="countdev")
    assert [x.device for x in (z, o, a)] == [flow.device("countdev")] * 3
    assert z.numpy().tolist() == [[0.0] * 3] * 2 and o.numpy().tolist() == [7.0, 7.0]
    assert a.numpy().tolist() == [0, 1, 2, 3] and a.dtype is flow.int64
    assert dev.COUNTS["fallback:constant"] == 2 and dev.COUNTS["fallback:arange"] == 1
    assert dev.COUNTS["to_host"] == 0 and dev.COUNTS["to_device"] == 3  # a source op copies nothing in


def test_native_kernels_run_on_the_device_and_the_rest_falls_back():
    x = flow.tensor([-1.0, 2.0, -3.0]).to("countdev")
    dev.reset()
    y = flow.relu(x) + x
    assert y.device is flow.device("countdev") and y.numpy().tolist() == [-1.0, 4.0, -3.0]
    assert dev.COUNTS == {"native:relu": 1, "native:broadcast_add": 1}
    e = flow.exp(x)
    np.testing.assert_allclose(e.numpy(), np.exp(np.array([-1.0, 2.0, -3.0], np.float32)), rtol=1e-6)
    assert dev.COUNTS["fallback:exp"] == 1 and dev.COUNTS["to_host"] == 1 and dev.COUNTS["to_device"] == 1
    # relu has a native kernel for float32 / float64 only: an int32 relu falls back
    r = flow.relu(flow.tensor([-2, 5], dtype=flow.int32).to("countdev"))
    assert r.numpy().tolist() == [0, 5] and dev.COUNTS["fallback:relu"] == 1


def test_the_fallback_warns_once_per_op_type():
    x = flow.tensor([1.0, 2.0]).to("countdev")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        flow.exp(x), flow.exp(x), flow.sin(x), flow.exp(x * 2)
    messages = [str(w.message) for w in seen]
    assert messages == [f"countdev: no kernel for '{op}'; it runs on cpu (the arrays are copied there and back)"
                        for op in ("exp", "sin", "scalar_mul")]
    assert dev.COUNTS["fallback:exp"] == 3


def test_multi_output_ops_and_in_place_ops_fall_back():
    x = flow.tensor([[3.0, 1.0], [2.0, 5.0]]).to("countdev")
    values, indices = flow.max(x, dim=1)
    assert values.device is flow.device("countdev") and values.numpy().tolist() == [3.0, 5.0]
    assert indices.numpy().tolist() == [0, 1]
    x.mul_(2.0)
    assert x.numpy().tolist() == [[6.0, 2.0], [4.0, 10.0]] and x.device is flow.device("countdev")


def test_autograd_on_the_device():
    x = flow.tensor([-1.0, 2.0, 3.0]).to("countdev").requires_grad_()
    y = (flow.relu(x) * x).sum()
    y.backward()
    assert x.grad.device is flow.device("countdev")
    assert x.grad.numpy().tolist() == [0.0, 4.0, 6.0]  # d(relu(x) x)/dx = 2x for x > 0, else 0
    assert dev.COUNTS["native:relu_grad"] == 1
    # moving to cpu is differentiable too
    x.grad = None
    x.cpu().sum().backward()
    assert x.grad.device is flow.device("countdev") and x.grad.numpy().tolist() == [1.0, 1.0, 1.0]


def test_dump_table_shows_the_device_kernels_and_the_fallback():
    table = dump_table("relu")
    assert re.search(r"\nPrivateUse1: eager_local_interpreter \[fallback\] registered at .*\n"
                     r"    kernel\[countdev\]: relu \[dtype\(x\) in \{float32, float64\}\] priority=0 registered at "
                     r"tests/plugins/counting_device\.py:\d+\n"
                     r"    kernel fallback\[countdev\]: run_on_cpu registered at tests/plugins/counting_device\.py:\d+ "
                     r"\(for calls no kernel above takes\)\n", table), table
    copy = dump_table("copy")
    assert re.search(r"\nPrivateUse1: _copy_out \[kernel\] registered at tests/plugins/counting_device\.py:\d+\n"
                     r"    kernel\[countdev\]: copy_to_countdev \[any dtype\]", copy), copy
    assert re.search(r"\nkernel fallback\[countdev\]: run_on_cpu registered at tests/plugins/counting_device\.py:\d+",
                     fallbacks())


def test_a_kernel_registered_later_wins_over_the_fallback_and_its_removal_restores_it():
    x = flow.tensor([1.0, 4.0]).to("countdev")
    flow.sqrt(x)
    assert dev.COUNTS["fallback:sqrt"] == 1

    def sqrt(ctx, a):
        dev.COUNTS["native:sqrt"] += 1
        return np.sqrt(a)

    with flow.dispatch.register_kernel("sqrt", "countdev", sqrt):
        assert flow.sqrt(x).numpy().tolist() == [1.0, 2.0]
        assert dev.COUNTS["native:sqrt"] == 1 and dev.COUNTS["fallback:sqrt"] == 1
    flow.sqrt(x)
    assert dev.COUNTS["fallback:sqrt"] == 2


def test_without_a_fallback_a_missing_kernel_says_how_to_add_one():
    x = flow.tensor([1.0, 4.0]).to("countdev")
    fallback = dev._handles.pop()
    fallback.remove()
    try:
        with pytest.raises(OpKernelNotFoundError) as info:
            flow.sqrt(x)
        assert str(info.value).endswith(
            "'sqrt' has no kernels on 'countdev'; it has kernels on: cpu, meta.\nRegister one for 'countdev', or a "
            "kernel fallback serving every op without one: flow.library.register_fallback('countdev', fn).")
        assert flow.relu(x).numpy().tolist() == [1.0, 4.0]  # native kernels still run
        assert "kernel fallback" not in dump_table("relu") and "kernel fallback" not in fallbacks()
    finally:
        dev._handles.append(flow.library.register_fallback("countdev", dev.run_on_cpu))
    assert flow.sqrt(x).numpy().tolist() == [1.0, 2.0]


def _registries():
    return (dump_table("relu"), dump_table("copy"), fallbacks(), device_types())


def test_registration_errors_name_the_api_and_argument_and_change_nothing():
    before = _registries()
    with pytest.raises(ValueError, match=r"flow\.library\.register_fallback: unknown device type 'nodev' "
                                         r"\(argument device_type\); known: cpu, meta, countdev"):
        flow.library.register_fallback("nodev", dev.run_on_cpu)
    with pytest.raises(TypeError, match=r"flow\.library\.register_fallback\('countdev'\): expected a function "
                                        r"fn\(op, ctx, \*arrays\), got 3"):
        flow.library.register_fallback("countdev", 3)
    with pytest.raises(RegistrationError, match=r"register_device_fallback\('meta'\): 'meta' holds no data"):
        flow.library.register_fallback("meta", dev.run_on_cpu)
    with pytest.raises(ValueError, match=r"flow\.library\.register_device: register_device_type: device type "
                                         r"'countdev' is already registered"):
        flow.library.register_device("countdev")
    with pytest.raises(ValueError, match=r"flow\.library\.register_device: register_device_type: PrivateUse1 "
                                         r"already serves device type 'countdev'"):
        flow.library.register_device("otherdev")
    with pytest.raises(ValueError, match=r"register_device_type\('hookdev'\): to_host must be a function of a "
                                         r"NumPy array returning a NumPy array, got 'no'"):
        flow.library.register_device("hookdev", to_host="no", dispatch_key=DispatchKey.CUDA)
    assert _registries() == before


def test_unloading_removes_every_registration():
    x = flow.tensor([1.0]).to("countdev")
    dev.unload()
    try:
        assert "countdev" not in device_types()
        assert "countdev" not in dump_table("relu") and "countdev" not in dump_table("copy")
        assert "PrivateUse1: eager_local_interpreter [fallback]" in dump_table("copy")
        assert "countdev" not in fallbacks()
        with pytest.raises(RuntimeError, match="device: expected one of cpu, meta device type"):
            flow.device("countdev")
        with pytest.raises(OpKernelNotFoundError, match="'exp' has no kernels on 'countdev'"):
            flow.exp(x)
    finally:
        dev.load()


# ---- training the digits MLP ---------------------------------------------------------------------------------
def _train(device: str, epochs: int = 3, seed: int = 0):
    """(per-batch losses, test accuracy) of the digits MLP trained on ``device`` from the same seed."""
    flow.manual_seed(seed)
    model = flow.nn.Sequential(flow.nn.Flatten(), flow.nn.Linear(64, 32), flow.nn.ReLU(), flow.nn.Linear(32, 10))
    model.to(device)
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = flow.Generator()
    generator.manual_seed(seed)
    loader = flow.utils.data.DataLoader(flow.utils.data.datasets.digits(), batch_size=32, shuffle=True,
                                        generator=generator)
    losses = []
    for _ in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = flow.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            assert loss.device is flow.device(device)
            losses.append(loss.item())
    test_x, test_y = flow.utils.data.datasets.digits(train=False).tensors
    with flow.no_grad():
        predicted = model(test_x.to(device)).argmax(1).cpu()
    return losses, (predicted == test_y).float().mean().item()


def test_the_digits_mlp_trains_on_the_device_as_on_cpu():
    cpu_losses, cpu_accuracy = _train("cpu")
    assert not dev.COUNTS
    losses, accuracy = _train("countdev")
    assert accuracy > 0.85 and accuracy == cpu_accuracy  # chance is 0.1
    np.testing.assert_array_equal(losses, cpu_losses)  # same kernels, same arithmetic: the same numbers
    native = {k: n for k, n in dev.COUNTS.items() if k.startswith("native:")}
    fell_back = {k for k in dev.COUNTS if k.startswith("fallback:")}
    assert set(native) == {"native:relu", "native:relu_grad", "native:broadcast_add"}
    assert native["native:relu"] == len(losses) + 1  # each step, and the test set
    assert {"fallback:linear", "fallback:sgd_update", "fallback:log_softmax"} <= fell_back
    assert dev.COUNTS["to_device"] > 0 and dev.COUNTS["to_host"] > 0


def test_a_library_op_runs_on_the_device_natively_or_through_the_fallback():
    with flow.library.scoped("cd_ns"):
        flow.library.define("cd_ns::twice(Tensor x) -> Tensor")
        flow.library.register_fake("cd_ns::twice", lambda x: flow.empty_like(x))
        flow.library.impl("cd_ns::twice", "cpu", lambda x: x * x.dtype.type(2))
        x = flow.tensor([1.0, -3.0]).to("countdev")
        dev.reset()
        y = flow.ops.cd_ns.twice(x)
        assert y.device is flow.device("countdev") and y.numpy().tolist() == [2.0, -6.0]
        assert dev.COUNTS["fallback:cd_ns.twice"] == 1  # the cpu impl, run by the device's fallback

        def twice_native(x):
            dev.COUNTS["native:cd_ns.twice"] += 1
            return x + x

        with flow.library.impl("cd_ns::twice", "countdev", twice_native):
            assert flow.ops.cd_ns.twice(x).numpy().tolist() == [2.0, -6.0]
            assert dev.COUNTS["native:cd_ns.twice"] == 1 and dev.COUNTS["fallback:cd_ns.twice"] == 1
            assert "kernel[countdev]: test_a_library_op_runs_on_the_device" in dump_table("cd_ns.twice")
        flow.ops.cd_ns.twice(x)
        assert dev.COUNTS["fallback:cd_ns.twice"] == 2
    assert not hasattr(flow.ops, "cd_ns")
