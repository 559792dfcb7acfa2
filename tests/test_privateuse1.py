"""A device defined outside the package (tests/plugins/npu_sim_backend.py) on PrivateUse1."""

import importlib
import re

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch import dump_table
from oneflow_lite.dispatch.dispatch_key import DispatchKey as K
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.kernel_predicate import KernelPredicate, dtype_in
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.op_expr import InferResult
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta

npu = None  # the plugin module, imported by the fixture below


@pytest.fixture(scope="module", autouse=True)
def _plugin():
    """Import the plugin (which registers itself on import) for this module only, and unload it after."""
    global npu
    npu = importlib.import_module("plugins.npu_sim_backend")
    npu.load()  # a no-op right after the import; registers again if an earlier module unloaded it
    yield
    npu.unload()


@pytest.fixture(autouse=True)
def _calls():
    npu.load()
    npu.CALLS.clear()
    yield
    npu.CALLS.clear()


def _cpu(values, dtype=flow.float32):
    a = np.asarray(values, dtype=dtype.np_dtype)
    return Tensor._make(a, make_meta(a.shape, dtype, flow.device("cpu")))


def _npu(values, dtype=flow.float32):
    a = np.asarray(values, dtype=dtype.np_dtype)
    return Tensor._make(a, make_meta(a.shape, dtype, flow.device("npu_sim")))


def test_device_is_registered_on_private_use1():
    d = flow.device("npu_sim")
    assert d is flow.device("npu_sim:0") and str(d) == "npu_sim:0" and d.type == "npu_sim"
    assert d.key_set == 1 << K.PrivateUse1
    assert _npu([1.0]).key_set == 1 << K.PrivateUse1


def test_relu_runs_the_plugin_kernel_through_the_eager_interpreter():
    seen = []

    def spy(ctx, x):
        seen.append(ctx)
        return npu.npu_relu(ctx, x)

    x_values = np.array([-1.5, 0.0, 2.0, -3.0], dtype=np.float32)
    y = flow.relu(_npu(x_values))
    assert npu.CALLS == [("npu_relu", (np.dtype(np.float32),))]
    assert y.device is flow.device("npu_sim") and y.dtype is flow.float32 and y.shape == (4,)
    np.testing.assert_array_equal(y.numpy(), np.where(x_values > 0, x_values, 0))
    table = dump_table("relu")
    assert "\nPrivateUse1: eager_local_interpreter [fallback] registered at oneflow_lite/interpreters/" in table
    assert re.search(r"\n    kernel\[npu_sim\]: npu_relu \[dtype\(x\) in \{float32, float64\}\] priority=0 "
                     r"registered at tests/plugins/npu_sim_backend\.py:\d+", table)
    # the kernel gets the eager interpreter's inference result as its context
    with DISPATCHER.register_kernel("relu", "npu_sim", spy, priority=5):
        flow.relu(_npu([1.0]))
    assert isinstance(seen[0], InferResult) and seen[0].device is flow.device("npu_sim")


def test_float64_and_cpu_are_unaffected():
    y = flow.relu(_npu([-2.0, 3.0], flow.float64))
    assert y.dtype is flow.float64 and y.numpy().tolist() == [0.0, 3.0]
    assert flow.relu(_cpu([-1.0, 1.0])).numpy().tolist() == [0.0, 1.0]
    assert [c[0] for c in npu.CALLS] == ["npu_relu"]


def test_copy_between_cpu_and_npu_sim():
    if not npu.has_copy():
        pytest.skip("the package does not define the copy op yet")
    x = _cpu([1.0, -2.0])
    on_npu = npu.to_device(x, "npu_sim")
    assert on_npu.device is flow.device("npu_sim") and npu.CALLS == [("npu_copy", (np.dtype(np.float32),))]
    assert on_npu.numpy() is not x.numpy()
    back = npu.to_device(flow.relu(on_npu), "cpu")
    assert back.device is flow.device("cpu") and back.numpy().tolist() == [1.0, 0.0]
    assert [c[0] for c in npu.CALLS] == ["npu_copy", "npu_relu"]  # the way back runs the cpu copy kernel


def test_higher_priority_kernel_wins_choice_is_cached_and_rechosen_after_registration():
    evaluations = []

    def counting(ctx):
        evaluations.append(ctx.input_dtype("x"))
        return ctx.input_dtype("x") is flow.float32

    def npu_relu_fast(ctx, x):
        npu.CALLS.append(("npu_relu_fast", (x.dtype,)))
        return np.maximum(x, np.float32(0))

    x = _npu([-1.0, 4.0])
    handle = DISPATCHER.register_kernel("relu", "npu_sim", npu_relu_fast, priority=2,
                                        predicate=KernelPredicate(counting, "counting float32"))
    try:
        for _ in range(3):
            assert flow.relu(x).numpy().tolist() == [0.0, 4.0]
        assert [c[0] for c in npu.CALLS] == ["npu_relu_fast"] * 3
        assert evaluations == [flow.float32]  # chosen once, then cached
        # a new registration invalidates the choice: the new best is picked on the next call
        with DISPATCHER.register_kernel("relu", "npu_sim", npu.npu_relu, priority=3, name="npu_relu_top"):
            flow.relu(x)
            assert npu.CALLS[-1][0] == "npu_relu"
        flow.relu(x)  # ... and its removal too
        assert npu.CALLS[-1][0] == "npu_relu_fast"
    finally:
        handle.remove()
    flow.relu(x)
    assert npu.CALLS[-1][0] == "npu_relu"


def test_no_kernel_for_dtype_names_op_device_dtypes_and_candidates():
    with pytest.raises(OpKernelNotFoundError) as info:
        flow.relu(_npu([1, -1], flow.int32))
    message = str(info.value)
    assert re.fullmatch(
        r"Cannot find a kernel of op 'relu' \(op name 'relu\d+'\) for device 'npu_sim' with dtypes "
        r"x_0=int32 -> y_0=int32\.\n"
        r"Kernels of 'relu' on 'npu_sim':\n"
        r"  npu_relu requires dtype\(x\) in \{float32, float64\} \(priority 0, registered at "
        r"tests/plugins/npu_sim_backend\.py:\d+\)", message), message
    assert npu.CALLS == []


def test_no_kernel_on_a_device_lists_the_devices_that_have_some():
    with DISPATCHER.register_kernel("relu", "npu_sim", npu.npu_relu, predicate=dtype_in("x", flow.int32),
                                    priority=1, name="npu_relu_int"):
        assert flow.relu(_npu([3, -3], flow.int32)).numpy().tolist() == [3, 0]
    with pytest.raises(OpKernelNotFoundError, match=r"Kernels of 'relu' on 'npu_sim':\n  npu_relu requires"):
        flow.relu(_npu([3, -3], flow.int32))


def test_unregistering_cleans_up():
    x = _npu([-1.0, 1.0])
    flow.relu(x)
    npu.unload()
    try:
        assert "npu_sim" not in dump_table("relu")
        assert "npu_sim" not in DISPATCHER.entry("relu").kernels and "npu_sim" not in DISPATCHER.entry("copy").kernels
        with pytest.raises(RuntimeError, match=r"device: expected one of cpu, meta device type .*got 'npu_sim'"):
            flow.device("npu_sim")
        with pytest.raises(OpKernelNotFoundError, match="'relu' has no kernels on 'npu_sim'; it has kernels on: cpu"):
            flow.relu(x)  # an old tensor still names the device, but no kernel is left for it
    finally:
        npu.load()
    assert flow.relu(_npu([-1.0, 1.0])).numpy().tolist() == [0.0, 1.0]
