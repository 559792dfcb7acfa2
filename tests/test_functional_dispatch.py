"""FunctionalFunction: overload resolution in declaration order, TypeErrors listing the
signatures, functors called with the bound values, and flow.relu end to end."""

import itertools

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError, RegistrationError
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.functors.functional import FunctionalFunction
from oneflow_lite.functors.registry import functor, functor_names, get_functor

_ids = itertools.count()


def _t(values, dtype=flow.float32):
    a = np.asarray(values, dtype=dtype.np_dtype)
    return Tensor._make(a, make_meta(a.shape, dtype, flow.device("cpu")))


def _recording_functors(*tags):
    """Register a functor per tag under a unique name; each returns (tag, args)."""
    names = {}
    for tag in tags:
        name = f"FunctionalTest{tag}{next(_ids)}"

        @functor(name)
        class Recording:
            def __init__(self, tag=tag):
                self.tag = tag

            def __call__(self, *args):
                return self.tag, args
        names[tag] = name
    return names


def test_first_matching_overload_wins_in_declaration_order():
    n = _recording_functors("TT", "TS", "ST", "TF")
    f = FunctionalFunction("f", [f"Tensor (Tensor input, Tensor other) => {n['TT']}",
                                 f"Tensor (Tensor input, Scalar other, *, Scalar alpha=1) => {n['TS']}",
                                 f"Tensor (Scalar input, Tensor other) => {n['ST']}",
                                 f"Tensor (Tensor input, Float other) => {n['TF']}"])
    x, y = _t([1.0]), _t([2.0])
    assert f(x, y) == ("TT", (x, y))
    assert f(x, 2) == ("TS", (x, 2, 1))
    assert f(x, 2.5) == ("TS", (x, 2.5, 1))  # the Float overload also matches, but comes later
    assert f(x, other=True, alpha=3) == ("TS", (x, True, 3))
    assert f(3, y) == ("ST", (3, y))
    assert f(input=x, other=y) == ("TT", (x, y))


def test_no_matching_overload_lists_the_valid_signatures():
    n = _recording_functors("A", "B")
    f = FunctionalFunction("add_like", [f"Tensor (Tensor input, Tensor other) => {n['A']}",
                                        f"Tensor (Tensor input, Scalar other, *, Scalar alpha=1) => {n['B']}"])
    with pytest.raises(TypeError) as info:
        f(_t([1.0]), "two", alpha=1)
    assert str(info.value) == ("add_like() received an invalid combination of arguments - got (Tensor, str, "
                               "alpha=int), but expected one of:\n"
                               " * add_like(Tensor input, Tensor other)\n"
                               " * add_like(Tensor input, Scalar other, *, Scalar alpha=1)")


def test_single_signature_error_gives_the_reason():
    n = _recording_functors("Only")
    f = FunctionalFunction("g", [f"Tensor (Tensor input, Int dim) => {n['Only']}"])
    with pytest.raises(TypeError) as info:
        f(_t([1.0]), 1.5)
    assert str(info.value) == ("g(): argument 'dim' (position 2) must be int, not float\n"
                               "Valid signature: g(Tensor input, Int dim)")
    for args, kwargs, reason in [((), {}, r"g\(\) missing required argument 'input' \(pos 1\)"),
                                 ((_t([1.0]), 1, 2), {}, r"g\(\) takes 2 positional argument\(s\) but 3 were given"),
                                 ((_t([1.0]), 1), {"keepdim": True}, r"g\(\) got an unexpected keyword argument"),
                                 ((_t([1.0]), 1), {"dim": 2}, r"g\(\) got multiple values for argument 'dim'")]:
        with pytest.raises(TypeError, match=reason):
            f(*args, **kwargs)


def test_functor_gets_bound_values_positionally_in_signature_order():
    n = _recording_functors("Order")
    f = FunctionalFunction("h", [f"Tensor (Tensor x, IntList dim=None, Bool keepdim=False, *, DataType dtype=None, "
                                 f"Scalar alpha=2) => {n['Order']}"])
    x = _t([1.0])
    assert f(x) == ("Order", (x, None, False, None, 2))
    assert f(x, 1, alpha=0.5, keepdim=True) == ("Order", (x, (1,), True, None, 0.5))
    assert f(dtype=flow.int8, x=x) == ("Order", (x, None, False, flow.int8, 2))


def test_varargs_packing_for_shape():
    n = _recording_functors("Zeros")
    zeros = FunctionalFunction("zeros", [f"Tensor (Shape size, *, DataType dtype=None) => {n['Zeros']}"])
    assert zeros(2, 3) == ("Zeros", ((2, 3), None))
    assert zeros((2, 3), dtype=flow.int64) == ("Zeros", ((2, 3), flow.int64))
    assert zeros([4]) == ("Zeros", ((4,), None))
    assert zeros(4) == ("Zeros", ((4,), None))
    with pytest.raises(TypeError, match=r"zeros\(\) takes 1 positional argument\(s\) but 2 were given\n"
                                        r"Valid signature: zeros\(Shape size, \*, DataType dtype=None\)"):
        zeros(2, "3")


def test_functor_is_built_once_on_first_call():
    built = []
    name = f"FunctionalTestBuiltOnce{next(_ids)}"

    @functor(name)
    class BuiltOnce:
        def __init__(self):
            built.append(1)

        def __call__(self, x):
            return x

    f = FunctionalFunction("once", [f"Tensor (Tensor x) => {name}"])
    assert built == []
    x = _t([1.0])
    assert f(x) is x and f(x) is x
    assert built == [1] and get_functor(name) is get_functor(name)


def test_duplicate_and_missing_functors():
    name = f"FunctionalTestDup{next(_ids)}"
    functor(name)(type("A", (), {}))
    with pytest.raises(RegistrationError, match=rf"functor '{name}' is already registered at "
                                                r"tests/test_functional_dispatch\.py:\d+; duplicate at "
                                                r"tests/test_functional_dispatch\.py:\d+"):
        functor(name)(type("B", (), {}))
    f = FunctionalFunction("missing", ["Tensor (Tensor x) => NoSuchFunctor"])
    with pytest.raises(RegistrationError, match="Functor 'NoSuchFunctor' was not found; registered functors: "):
        f(_t([1.0]))
    assert "Relu" in functor_names()


def test_doc_lists_the_signatures():
    assert "Signatures:\n  relu(Tensor input, Bool inplace=False) -> Tensor" in flow.relu.__doc__
    assert flow.relu.__name__ == "relu" and flow.relu.__module__ == "oneflow_lite.functional"


def test_relu_is_one_function_under_three_names():
    assert flow.relu is flow._C.relu is flow.functional.relu
    assert [str(s) for s in flow.relu.signatures] == ["Tensor (Tensor input, Bool inplace=False) => Relu"]


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.int32, flow.int64, flow.int8, flow.uint8,
                                   flow.float16, flow.int16])
def test_relu_end_to_end(dtype):
    values = np.array([0, 1, 7, 200] if dtype is flow.uint8 else [-3, -1, 0, 2, 5], dtype=dtype.np_dtype)
    y = flow.relu(_t(values, dtype))
    assert y.dtype is dtype and y.shape == values.shape and y.device is flow.device("cpu")
    np.testing.assert_array_equal(y.numpy(), np.where(values > 0, values, 0).astype(dtype.np_dtype))


def test_relu_of_flow_tensor():
    tensor = getattr(flow, "tensor", None)
    if tensor is None:
        pytest.skip("flow.tensor is not defined yet")
    y = flow.relu(tensor([-1.0, 2.0]))
    assert y.numpy().tolist() == [0.0, 2.0] and y.dtype is flow.float32


def test_relu_inplace_writes_the_input():
    x = _t([-1.0, 2.0, -3.0])
    buffer = x.numpy()
    assert flow.relu(x, inplace=True) is x
    assert x.numpy() is buffer and buffer.tolist() == [0.0, 2.0, 0.0]


def test_relu_rejects_bool_and_bad_arguments():
    with pytest.raises(OpKernelNotFoundError,
                       match=r"Cannot find a kernel of op 'relu' .* for device 'cpu' with dtypes x_0=bool -> y_0=bool"):
        flow.relu(_t([True, False], flow.bool))
    with pytest.raises(TypeError, match=r"relu\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        flow.relu([1.0, 2.0])
