"""flow.library: ops defined from Python (define / impl / register_fake / register_autograd / composites), their
handles and scopes, opcheck, and their life in graphs and saved graphs. Every test defines its ops inside
``flow.library.scoped``, so none outlives it."""

import importlib
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.autograd.grad_function import get_grad_function
from oneflow_lite.dispatch import dump, dump_table
from oneflow_lite.framework import op_registry
from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.functors.signature import parse_schema

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALE = "lt::scale(Tensor x, *, Float factor=2.0) -> Tensor"
CALLS = []


@pytest.fixture(autouse=True)
def _clean():
    CALLS.clear()
    before = flow.library.defined_ops()
    with flow.library.scoped("lt"):
        yield
    assert flow.library.defined_ops() == before and not hasattr(flow.ops, "lt")


def scale_cpu(x, *, factor):
    CALLS.append(("scale_cpu", x.dtype, factor))
    return x * x.dtype.type(factor)


def scale_fake(x, *, factor):
    return flow.empty_like(x)


def scale_setup(ctx, inputs, output):
    ctx.factor = inputs[1]


def scale_backward(ctx, dy):
    return dy * ctx.factor, None


def define_scale(autograd=True):
    handles = [flow.library.define(SCALE), flow.library.impl("lt::scale", "cpu", scale_cpu),
               flow.library.register_fake("lt::scale", scale_fake)]
    if autograd:
        handles.append(flow.library.register_autograd("lt::scale", scale_backward, setup_context=scale_setup))
    return handles


# ---- the schema ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "lt::scale(Tensor x, *, Float factor=2.0) -> Tensor",
    "lt::f(Tensor? bias, TensorTuple xs, Tensor w=None, Int n=3, Bool b=True, String s='mean') -> (Tensor, Tensor)",
    "lt::g(Shape size, DataType dtype, Device device, IntList[2] k=1, Scalar alpha=1) -> (Tensor values, Tensor i)",
    "lt::h() -> TensorTuple",
])
def test_schemas_print_back_to_their_source(text):
    schema = parse_schema(text)
    assert str(schema) == text and repr(schema) == f"FunctionSchema({text!r})"


def test_the_schema_gives_the_functional_signature():
    schema = parse_schema("lt::f(Tensor x, Tensor? w, *, Float eps=1e-05) -> (Tensor a, Tensor b)")
    assert schema.namespace == "lt" and schema.name == "f" and schema.qualname == "lt::f"
    assert schema.returns == ("a", "b") and schema.returns_tuple and not schema.variadic_returns
    assert str(schema.signature("F")) == "TensorTuple (Tensor x, Tensor? w, *, Float eps=1e-05) => F"
    w = schema.args[1]
    assert w.nullable and w.optional and not w.has_default and w.base_type == "Tensor"


@pytest.mark.parametrize("text, message", [
    ("scale(Tensor x) -> Tensor", r"cannot parse schema 'scale\(Tensor x\) -> Tensor'; expected 'namespace::name"),
    ("lt::f(Tensr x) -> Tensor", r"unknown argument type 'Tensr' for 'x'"),
    ("lt::f(Tensor x) -> Tensor[]", r"cannot parse the returns 'Tensor\[\]'"),
    ("lt::f.out(Tensor x) -> Tensor", r"overload names \('f.out'\) are not supported"),
    ("lt::f(Tensor x, Int x) -> Tensor", r"an argument name is used twice"),
    ("lt::f(Int n=1, Tensor x) -> Tensor", r"'x' without a default follows one with a default"),
    ("lt::f(Tensor x, Int? n) -> Tensor", r"argument 'n' \(Int\?\) may be None, which an op attr cannot hold"),
    ("lt::f(Tensor x, Generator g) -> Tensor", r"argument 'g' has type Generator, which an op attr cannot hold"),
    ("lt::f(Tensor _x) -> Tensor", r"argument '_x': names starting with '_' are reserved"),
    ("math::f(Tensor x) -> Tensor", r"namespace 'math' would hide oneflow_lite\.ops\.math"),
    ("lt::f(Tensor out) -> (Tensor out)", r"return name 'out' is also an argument name"),
])
def test_a_bad_schema_is_an_error_naming_the_api_and_changes_nothing(text, message):
    ops, registered = flow.library.defined_ops(), op_registry.registered_op_types()
    with pytest.raises(ValueError, match=r"flow\.library\.define.*" + message):
        flow.library.define(text)
    assert flow.library.defined_ops() == ops and op_registry.registered_op_types() == registered


# ---- eager calls -------------------------------------------------------------------------------------------------
def test_a_defined_op_runs_eagerly_with_the_functional_apis_argument_checks():
    define_scale()
    x = flow.tensor([1.0, -2.0, 0.5])
    y = flow.ops.lt.scale(x, factor=3.0)
    assert y.dtype is flow.float32 and y.numpy().tolist() == [3.0, -6.0, 1.5]
    assert flow.ops.lt.scale(x).numpy().tolist() == [2.0, -4.0, 1.0]  # the default factor
    assert flow.ops.lt.scale(x, factor=1).numpy().tolist() == [1.0, -2.0, 0.5]  # an int is a Float
    assert CALLS == [("scale_cpu", np.float32, 3.0), ("scale_cpu", np.float32, 2.0), ("scale_cpu", np.float32, 1.0)]
    assert flow.ops.lt.scale(flow.tensor([1.0], dtype=flow.float64)).dtype is flow.float64
    valid = r"\nValid signature: lt\.scale\(Tensor x, \*, Float factor=2\.0\)$"
    with pytest.raises(TypeError, match=r"^lt\.scale\(\) takes 1 positional argument\(s\) but 2 were given" + valid):
        flow.ops.lt.scale(x, 3.0)
    with pytest.raises(TypeError, match=r"^lt\.scale\(\): argument 'factor' \(keyword\) must be float, not str"):
        flow.ops.lt.scale(x, factor="3")
    with pytest.raises(TypeError, match=r"^lt\.scale\(\) missing required argument 'x' \(pos 1\)"):
        flow.ops.lt.scale()
    assert "The op lt::scale(Tensor x, *, Float factor=2.0) -> Tensor" in flow.ops.lt.scale.__doc__
    assert dir(flow.ops.lt) == ["scale"]
    with pytest.raises(AttributeError, match=r"flow\.ops\.lt has no op 'nope'; its ops: scale"):
        _ = flow.ops.lt.nope


def test_kernels_get_the_schemas_arguments_as_arrays_and_values():
    seen = []
    flow.library.define("lt::mix(Tensor x, Tensor? w, TensorTuple ys, Int n=2, *, IntList dims=[0], "
                        "Bool flag=False, String mode='sum', Scalar alpha=1) -> (Tensor, Tensor)")

    @flow.library.impl("lt::mix", "cpu")
    def mix(x, w, ys, n, *, dims, flag, mode, alpha):
        seen.append((w is None, len(ys), n, dims, flag, mode, alpha, type(alpha)))
        total = x + sum(ys) + (0 if w is None else w)
        return total * x.dtype.type(alpha), np.full(x.shape, n, x.dtype)

    @flow.library.register_fake("lt::mix")
    def mix_fake(x, w, ys, n, *, dims, flag, mode, alpha):
        assert all(t.device == flow.device("meta") for t in (x, *ys))
        return flow.empty_like(x), flow.empty_like(x)

    x, y1, y2 = flow.tensor([1.0, 2.0]), flow.tensor([10.0, 20.0]), flow.tensor([100.0, 200.0])
    a, b = flow.ops.lt.mix(x, None, [y1, y2], alpha=2)
    assert a.numpy().tolist() == [222.0, 444.0] and b.numpy().tolist() == [2.0, 2.0]
    a, _ = flow.ops.lt.mix(x, x, (y1,), 5, dims=(1, 2), flag=True, mode="mean")
    assert a.numpy().tolist() == [12.0, 24.0]
    a, _ = flow.ops.lt.mix(x, None, [])
    assert a.numpy().tolist() == [1.0, 2.0]
    assert seen == [(True, 2, 2, (0,), False, "sum", 2.0, float), (False, 1, 5, (1, 2), True, "mean", 1.0, float),
                    (True, 0, 2, (0,), False, "sum", 1.0, float)]
    # which optional and TensorTuple inputs a call passed is its ``_counts`` attr
    assert "list_int32 _counts" in op_registry.lookup("lt.mix").signature()


def test_tensor_tuple_returns_take_their_count_from_the_fake():
    flow.library.define("lt::chunks(Tensor x, Int n) -> TensorTuple")
    flow.library.impl("lt::chunks", "cpu", lambda x, n: tuple(np.array_split(x, n)))
    flow.library.register_fake("lt::chunks", lambda x, n: tuple(flow.empty(len(c), device="meta")
                                                                 for c in np.array_split(np.zeros(x.shape[0]), n)))
    parts = flow.ops.lt.chunks(flow.arange(5.0), 2)
    assert isinstance(parts, tuple) and [p.numpy().tolist() for p in parts] == [[0.0, 1.0, 2.0], [3.0, 4.0]]
    assert len(flow.ops.lt.chunks(flow.arange(6.0), 3)) == 3


def test_the_fake_is_the_ops_inference_on_meta_and_can_reject_inputs():
    define_scale()
    flow.library.define("lt::rows(Tensor x) -> Tensor")
    flow.library.impl("lt::rows", "cpu", lambda x: x.sum(axis=1))

    @flow.library.register_fake("lt::rows")
    def rows_fake(x):
        if x.ndim != 2:
            raise ValueError(f"lt::rows expects a matrix, got {x.ndim} dimension(s)")
        return x.new_empty(x.shape[0])

    m = flow.ops.lt.rows(flow.empty(4, 3, device="meta"))
    assert m.device == flow.device("meta") and m.shape == (4,) and m.dtype is flow.float32
    assert flow.ops.lt.scale(flow.empty(2, device="meta")).shape == (2,) and not CALLS
    assert flow.ops.lt.rows(flow.ones(2, 3)).numpy().tolist() == [3.0, 3.0]
    with pytest.raises(ValueError, match="lt::rows expects a matrix, got 1 dimension"):
        flow.ops.lt.rows(flow.ones(3))


def test_an_op_without_a_fake_says_how_to_add_one():
    flow.library.define(SCALE)
    flow.library.impl("lt::scale", "cpu", scale_cpu)
    with pytest.raises(RuntimeError, match=r"lt::scale: no fake \(meta\) function is registered; .* register it with "
                                           r"@flow\.library\.register_fake\('lt::scale'\)"):
        flow.ops.lt.scale(flow.ones(2))
    flow.library.register_fake("lt::scale", scale_fake)
    assert flow.ops.lt.scale(flow.ones(2)).numpy().tolist() == [2.0, 2.0]


def test_a_fake_returning_the_wrong_count_is_named():
    flow.library.define(SCALE)
    flow.library.impl("lt::scale", "cpu", scale_cpu)
    flow.library.register_fake("lt::scale", lambda x, *, factor: (x, x))
    with pytest.raises(RuntimeError, match=r"lt::scale: the fake .*<lambda> \(registered at tests/test_library\.py:\d+\) "
                                           r"returned 2 tensor\(s\), but the schema returns 1 \(-> Tensor\)"):
        flow.ops.lt.scale(flow.ones(2))


# ---- autograd ------------------------------------------------------------------------------------------------
def test_register_autograd_uses_torch_librarys_signature():
    define_scale()
    x = flow.tensor([1.0, -2.0], requires_grad=True)
    y = flow.ops.lt.scale(x, factor=3.0)
    assert y.grad_fn.name() == "LtScaleBackward"
    y.sum().backward()
    assert x.grad.numpy().tolist() == [3.0, 3.0]


def test_setup_context_sees_every_argument_and_the_output_and_saves_tensors():
    flow.library.define("lt::wsum(Tensor x, Tensor w, Int k=1) -> (Tensor, Tensor)")
    flow.library.impl("lt::wsum", "cpu", lambda x, w, k: (x * w, (x * w).sum(keepdims=True)))
    flow.library.register_fake("lt::wsum", lambda x, w, k: (flow.empty_like(x), x.new_empty(1)))
    seen = {}

    def setup(ctx, inputs, output):
        seen["inputs"], seen["output"] = inputs, output
        seen["needs"] = ctx.needs_input_grad
        ctx.save_for_backward(*inputs[:2])

    def backward(ctx, dprod, dsum):
        x, w = ctx.saved_tensors
        seen["dsum"] = dsum.numpy().tolist()
        return (dprod + dsum) * w, (dprod + dsum) * x, None

    flow.library.register_autograd("lt::wsum", backward, setup_context=setup)
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    w = flow.tensor([3.0, 4.0])
    prod, total = flow.ops.lt.wsum(x, w, 5)
    assert seen["inputs"][0] is x and seen["inputs"][1] is w and seen["inputs"][2] == 5
    assert seen["output"] == (prod, total) and seen["needs"] == (True, False, False)
    prod.sum().backward()
    assert seen["dsum"] == [0.0]  # the absent gradient of the second output, as zeros
    assert x.grad.numpy().tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match="ctx.save_for_backward can only be called in setup_context"):
        flow.library.autograd.AutogradContext(()).save_for_backward(x)


def test_a_backward_returning_the_wrong_count_is_named():
    flow.library.define(SCALE)
    flow.library.impl("lt::scale", "cpu", scale_cpu)
    flow.library.register_fake("lt::scale", scale_fake)
    flow.library.register_autograd("lt::scale", lambda ctx, dy: (dy, None, dy))
    x = flow.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"lt::scale: backward .*<lambda> returned 3 gradient\(s\); expected 2, one "
                                           r"per argument of the schema"):
        flow.ops.lt.scale(x).sum().backward()


def test_double_backward_through_a_backward_of_flow_ops():
    flow.library.define("lt::cube(Tensor x) -> Tensor")
    flow.library.impl("lt::cube", "cpu", lambda x: x ** 3)
    flow.library.register_fake("lt::cube", lambda x: flow.empty_like(x))

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * 3 * x * x

    flow.library.register_autograd("lt::cube", backward, setup_context=setup)
    x = flow.tensor([2.0, -1.0], dtype=flow.float64, requires_grad=True)
    (g,) = flow.autograd.grad(flow.ops.lt.cube(x).sum(), x, create_graph=True)
    assert g.numpy().tolist() == [12.0, 3.0]
    g.sum().backward()
    assert x.grad.numpy().tolist() == [12.0, -6.0]  # d2/dx2 x^3 = 6x
    assert flow.autograd.gradgradcheck(flow.ops.lt.cube, (x.detach().requires_grad_(),))


def test_without_register_autograd_backward_fails_naming_the_op():
    define_scale(autograd=False)
    x = flow.tensor([1.0], requires_grad=True)
    y = flow.ops.lt.scale(x)
    with pytest.raises(RuntimeError, match="the derivative for op 'lt.scale' is not implemented"):
        y.sum().backward()


# ---- graphs, dump_table, saved graphs ------------------------------------------------------------------------
def test_a_graph_captures_the_op_and_its_plan_runs_the_kernel():
    define_scale()
    model = flow.nn.Linear(3, 2)

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.1))

        def build(self, x):
            loss = flow.ops.lt.scale(self.model(x), factor=0.5).sum()
            loss.backward()
            return loss

    step = Step()
    x = flow.ones(4, 3)
    expected = (model(x) * 0.5).sum().item()
    CALLS.clear()
    assert step(x).item() == pytest.approx(expected, rel=1e-6)
    op_types = [op.user_conf.op_type_name for op in step.job.net.op if op.WhichOneof("op_type") == "user_conf"]
    assert op_types.count("lt.scale") == 1
    CALLS.clear()
    step(x)
    assert CALLS == [("scale_cpu", np.float32, 0.5)]  # the compiled plan runs the kernel


def test_dump_table_and_dump_show_the_ops_registrations():
    define_scale()
    table = dump_table("lt.scale")
    assert re.search(r"^Meta: eager_local_interpreter \[fallback\] .*\n"
                     r"    kernel\[meta\]: fake scale_fake \[any dtype\] priority=0 registered at tests/test_library\.py:"
                     r"\d+\nCPU: eager_local_interpreter \[fallback\] .*\n"
                     r"    kernel\[cpu\]: scale_cpu \[any dtype\] priority=0 registered at tests/test_library\.py:\d+\n",
                     table), table
    text = dump("lt.scale")
    assert text.startswith("name: lt.scale\nschema: lt.scale(Tensor x, *, double factor=2.0) -> (Tensor out)\n"
                           "debug: registered at tests/test_library.py:")
    assert type(get_grad_function("lt.scale")).__name__ == "LibraryGradFunction"


@pytest.fixture
def ext_ops():
    module = importlib.import_module("plugins.library_ops")
    yield module
    for handle in reversed(module.HANDLES):
        handle.remove()
    del sys.modules["plugins.library_ops"]


def _run_python(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests"),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120, check=False)


def test_a_saved_graph_of_library_ops_loads_where_they_are_defined(tmp_path, ext_ops):
    @flow.nn.Graph.trace
    def g(x):
        return flow.ops.ext_ops.softsign2(flow.ops.ext_ops.squareplus(x, 2.0))

    x = flow.tensor([-1.0, 0.0, 3.0])
    expected = g(x).numpy()
    xn = x.numpy().astype(np.float64)
    sp = (xn + np.sqrt(xn * xn + 2.0)) / 2
    np.testing.assert_allclose(expected, sp / (np.abs(sp) + 1), rtol=1e-6)
    path = tmp_path / "g.graph"
    g.save(path)
    loaded = flow.nn.Graph.load(path)
    np.testing.assert_array_equal(loaded(x).numpy(), expected)
    code = f"""
        import numpy as np, oneflow_lite as flow
        {{}}
        g = flow.nn.Graph.load({str(path)!r})
        print(g(flow.tensor([-1.0, 0.0, 3.0])).numpy().tolist())
    """
    r = _run_python(code.format("import plugins.library_ops"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(expected.tolist())
    r = _run_python(code.format(""))
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        f"RuntimeError: flow.nn.Graph.load('{path}'): op 'ext_ops.squareplus-0' has type 'ext_ops.squareplus', which is "
        f"not registered in this process: import the module that defines the ops of namespace 'ext_ops' "
        f"(flow.library.define('ext_ops::...')) before loading; it was defined by module 'plugins.library_ops' when "
        f"the graph was saved")


def test_a_composite_is_captured_as_the_ops_it_calls(ext_ops):
    @flow.nn.Graph.trace
    def g(x):
        return flow.ops.ext_ops.softsign2(x)

    g(flow.tensor([1.0, -3.0]))
    op_types = [op.user_conf.op_type_name for op in g.job.net.op if op.WhichOneof("op_type") == "user_conf"]
    assert "ext_ops.softsign2" not in op_types and "abs" in op_types


# ---- composites ---------------------------------------------------------------------------------------------------
def test_a_composite_needs_no_kernel_fake_or_gradient():
    flow.library.define("lt::softsign(Tensor x, Float k=1.0) -> Tensor")

    @flow.library.impl("lt::softsign", "CompositeImplicitAutograd")
    def softsign(x, k):
        return x / (flow.abs(x) + k)

    x = flow.tensor([1.0, -3.0], requires_grad=True)
    y = flow.ops.lt.softsign(x)
    assert y.numpy().tolist() == [0.5, -0.75]
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.25, 1 / 16])  # 1 / (1 + |x|)^2
    assert flow.ops.lt.softsign(flow.empty(3, device="meta")).shape == (3,)
    np.testing.assert_allclose(softsign(x, 2.0).detach().numpy(), [1 / 3, -0.6], rtol=1e-6)  # the handle calls it
    text = dump_table("lt.softsign")
    assert re.fullmatch(r"lt\.softsign: composite \(CompositeImplicitAutograd\)\n"
                        r"  => lt::softsign defined at tests/test_library\.py:\d+\n"
                        r"  a composite has no op conf, kernel or gradient of its own: .*\n", text), text
    assert op_registry.find("lt.softsign") is None
    softsign.remove()  # back to a defined op, without kernels
    assert op_registry.find("lt.softsign") is not None and "composite" not in dump_table("lt.softsign")
    with pytest.raises(RuntimeError, match="no fake"):
        flow.ops.lt.softsign(x)


def test_a_composite_excludes_kernels_fakes_and_gradients():
    define_scale()
    with pytest.raises(RegistrationError, match=r"flow\.library\.impl\('lt::scale', 'CompositeImplicitAutograd'\): "
                                                r"'lt::scale' already has impl at tests/test_library\.py:\d+, "
                                                r"register_fake at .*, register_autograd at .*; a composite has no "
                                                r"kernel, fake or gradient of its own: remove them first"):
        flow.library.impl("lt::scale", "CompositeImplicitAutograd", lambda x, *, factor: x * factor)
    flow.library.define("lt::twice(Tensor x) -> Tensor")
    flow.library.impl("lt::twice", "CompositeImplicitAutograd", lambda x: x + x)
    before = dump_table("lt.twice")
    for call in (lambda: flow.library.impl("lt::twice", "cpu", lambda x: x + x),
                 lambda: flow.library.register_fake("lt::twice", lambda x: x),
                 lambda: flow.library.register_autograd("lt::twice", lambda ctx, dy: dy)):
        with pytest.raises(RegistrationError, match=r"'lt::twice' is a composite \(registered at tests/test_library\."
                                                    r"py:\d+\): it runs the ops it calls"):
            call()
    assert dump_table("lt.twice") == before


# ---- handles, scopes, errors ------------------------------------------------------------------------------------
def _tables(op_type="lt.scale"):
    try:
        table = dump_table(op_type)
    except RuntimeError as e:
        table = str(e)
    return (table, flow.library.defined_ops(), op_registry.registered_op_types(), get_grad_function(op_type),
            dir(getattr(flow.ops, "lt", None)))


def test_each_registration_returns_a_handle_that_removes_it():
    define_, impl, fake, grad = define_scale()
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    assert repr(impl).startswith("<flow.library impl lt::scale for cpu at tests/test_library.py:")
    impl.remove()
    assert not impl.active and "scale_cpu" not in dump_table("lt.scale")
    with pytest.raises(flow.framework.errors.OpKernelNotFoundError, match="'lt.scale' has no kernels on 'cpu'"):
        flow.ops.lt.scale(x)
    impl.remove()  # a second remove does nothing
    flow.library.impl("lt::scale", "cpu", scale_cpu)
    grad.destroy()
    assert get_grad_function("lt.scale") is None
    fake.remove()
    assert "fake" not in dump_table("lt.scale")
    define_.remove()
    assert "lt::scale" not in flow.library.defined_ops() and op_registry.find("lt.scale") is None
    assert not hasattr(flow.ops, "lt")
    with pytest.raises(RuntimeError, match="no op type 'lt.scale' is defined or has registrations"):
        dump_table("lt.scale")
    define_scale()  # the name is free again
    assert flow.ops.lt.scale(flow.ones(1)).item() == 2.0


def test_decorators_return_the_handle_which_still_calls_the_function():
    flow.library.define(SCALE)

    @flow.library.impl("lt::scale", ["cpu"])
    def kernel(x, *, factor):
        return x * x.dtype.type(factor)

    assert isinstance(kernel, flow.library.Handle) and kernel.fn.__name__ == "kernel"
    assert kernel(np.ones(2, np.float32), factor=3.0).tolist() == [3.0, 3.0]
    with kernel:
        pass
    assert not kernel.active


def test_scoped_removes_what_the_block_registered_in_its_namespace():
    outside = flow.library.define("other_ns::keep(Tensor x) -> Tensor")
    try:
        with flow.library.scoped("lt") as handles:
            define_scale()
            assert flow.ops.lt.scale(flow.ones(1)).item() == 2.0 and len(handles) == 4
        assert not hasattr(flow.ops, "lt") and op_registry.find("lt.scale") is None
        assert get_grad_function("lt.scale") is None and "lt::scale" not in flow.library.defined_ops()
        assert hasattr(flow.ops, "other_ns")
        with pytest.raises(ValueError), flow.library.scoped("lt"):
            define_scale()
            raise ValueError("an exception passes through")
        assert op_registry.find("lt.scale") is None
    finally:
        outside.remove()


def test_a_duplicate_definition_names_both_sites_and_changes_nothing():
    flow.library.define(SCALE)
    before = _tables()
    with pytest.raises(RegistrationError, match=r"flow\.library\.define: op 'lt::scale' is already defined at "
                                                r"tests/test_library\.py:(\d+); duplicate definition at "
                                                r"tests/test_library\.py:(\d+)") as info:
        flow.library.define("lt::scale(Tensor x) -> Tensor")
    first, second = re.search(r"py:(\d+);.*py:(\d+)", str(info.value)).groups()
    assert first != second
    assert _tables() == before


def test_the_duplicate_of_an_op_type_registered_elsewhere_is_named():
    op_registry.register_user_op("lt.raw", inputs=["x"], outputs=["y"], infer_shape=lambda c: c.shape("x"),
                                 infer_dtype=lambda c: c.dtype("x"))
    try:
        with pytest.raises(RegistrationError, match=r"flow\.library\.define\('lt::raw'\): op 'lt\.raw' is already "
                                                    r"registered at tests/test_library\.py:\d+; duplicate registration "
                                                    r"at tests/test_library\.py:\d+"):
            flow.library.define("lt::raw(Tensor x) -> Tensor")
        assert not hasattr(flow.ops, "lt")
    finally:
        op_registry.lookup("lt.raw").remove()


@pytest.mark.parametrize("call, error, message", [
    (lambda: flow.library.impl("lt::nope", "cpu", scale_cpu), RegistrationError,
     r"flow\.library\.impl: op 'lt::nope' is not defined; define it first with flow\.library\.define\('lt::nope"),
    (lambda: flow.library.register_fake("lt::nope", scale_fake), RegistrationError,
     r"flow\.library\.register_fake: op 'lt::nope' is not defined"),
    (lambda: flow.library.register_autograd("lt::nope", scale_backward), RegistrationError,
     r"flow\.library\.register_autograd: op 'lt::nope' is not defined"),
    (lambda: flow.library.impl("relu", "cpu", scale_cpu), ValueError,
     (r"flow\.library\.impl: expected an op name 'namespace::name' or a function flow\.ops\.<namespace>\.<name>, "
     r"got 'relu'")),
    (lambda: flow.library.impl("lt::scale", "cuda", scale_cpu), ValueError,
     (r"flow\.library\.impl\('lt::scale'\): unknown device type 'cuda' \(argument device_types\); known: cpu, or "
     r"'CompositeImplicitAutograd'")),
    (lambda: flow.library.impl("lt::scale", "meta", scale_cpu), ValueError,
     (r"flow\.library\.impl\('lt::scale'\): a meta kernel computes nothing; register the op's shape and dtype "
     r"inference with flow\.library\.register_fake\('lt::scale'\) instead")),
    (lambda: flow.library.impl("lt::scale", ["cpu", "CompositeImplicitAutograd"], scale_cpu), ValueError,
     r"CompositeImplicitAutograd cannot be combined with device types"),
    (lambda: flow.library.impl("lt::scale", "cpu", 3), TypeError,
     r"flow\.library\.impl\('lt::scale', 'cpu'\): expected a function, got 3"),
    (lambda: flow.library.impl("lt::scale", "cpu", scale_cpu), RegistrationError,
     (r"flow\.library\.impl\('lt::scale', 'cpu'\): a 'cpu' kernel is already registered at tests/test_library\.py:\d+; "
     r"duplicate at tests/test_library\.py:\d+ \(remove the first one's handle to replace it\)")),
    (lambda: flow.library.register_fake("lt::scale", scale_fake), RegistrationError,
     (r"flow\.library\.register_fake\('lt::scale'\): a fake is already registered at tests/test_library\.py:\d+; "
     r"duplicate at")),
    (lambda: flow.library.register_autograd("lt::scale", scale_backward), RegistrationError,
     (r"flow\.library\.register_autograd\('lt::scale'\): a backward is already registered at "
     r"tests/test_library\.py:\d+; duplicate at")),
    (lambda: flow.library.register_autograd("lt::scale", None), TypeError,
     r"flow\.library\.register_autograd\('lt::scale'\): backward must be a function, got None"),
])
def test_registration_errors_name_the_api_and_argument_and_change_nothing(call, error, message):
    define_scale()
    before = _tables()
    with pytest.raises(error, match=message):
        call()
    assert _tables() == before


def test_ops_can_be_named_by_their_function():
    define_scale(autograd=False)
    handle = flow.library.register_autograd(flow.ops.lt.scale, scale_backward, setup_context=scale_setup)
    assert handle.target == "lt::scale"


# ---- opcheck -------------------------------------------------------------------------------------------------
def _samples():
    return [(flow.randn(3),), ((flow.randn(2, 2),), {"factor": 0.5})]


def test_opcheck_passes_a_correct_op():
    define_scale()
    report = flow.library.opcheck("lt::scale", _samples())
    assert report.ok and report.failures == [] and repr(report) == "<OpCheckReport lt::scale: ok>"
    assert str(report) == ("opcheck lt::scale on 2 sample(s): ok\n"
                           "  registrations: ok (kernels on cpu)\n"
                           "  fake: ok (the fake's shapes and dtypes match the kernels' outputs)\n"
                           "  autograd: ok (sample 0: gradcheck in float64; sample 1: gradcheck in float64)")


def test_opcheck_finds_a_wrong_fake():
    flow.library.define(SCALE)
    flow.library.impl("lt::scale", "cpu", scale_cpu)
    flow.library.register_fake("lt::scale", lambda x, *, factor: x.new_empty(x.shape[0], 1).double())
    flow.library.register_autograd("lt::scale", scale_backward, setup_context=scale_setup)
    report = flow.library.opcheck("lt::scale", [(flow.ones(3),)])
    assert not report.ok and not report.results["fake"].ok and report.results["registrations"].ok
    assert report.results["fake"].failures[0] == ("sample 0, output 0: the fake says shape (3, 1), dtype float64; "
                                                  "the 'cpu' kernel returned shape (3,), dtype float32")
    assert "  fake: FAILED\n    sample 0, output 0: the fake says shape (3, 1)" in str(report)


def test_opcheck_finds_a_wrong_backward():
    flow.library.define(SCALE)
    flow.library.impl("lt::scale", "cpu", scale_cpu)
    flow.library.register_fake("lt::scale", scale_fake)
    flow.library.register_autograd("lt::scale", lambda ctx, dy: (dy * 2, None))  # ignores the factor
    report = flow.library.opcheck("lt::scale", [((flow.randn(3),), {"factor": 3.0})])
    assert not report.ok and report.results["fake"].ok
    (failure,) = report.results["autograd"].failures
    assert failure == ("sample 0: the backward differs from finite differences: Jacobian mismatch for output 0 with "
                       "respect to input 0,")


def test_opcheck_finds_missing_registrations():
    flow.library.define(SCALE)
    flow.library.impl("lt::scale", "cpu", scale_cpu)
    report = flow.library.opcheck("lt::scale", [(flow.ones(2),)])
    failures = report.results["registrations"].failures
    assert failures[0] == "no fake: register the shape and dtype inference with flow.library.register_fake('lt::scale')"
    assert failures[1].startswith("it takes and returns floating tensors but has no backward")
    assert report.results["fake"].failures[0].startswith("sample 0: the fake raised RuntimeError: lt::scale: no fake")


def test_opcheck_of_a_composite_and_bad_samples():
    flow.library.define("lt::softsign(Tensor x) -> Tensor")
    flow.library.impl("lt::softsign", "CompositeImplicitAutograd", lambda x: x / (flow.abs(x) + 1))
    report = flow.library.opcheck(flow.ops.lt.softsign, flow.randn(4))
    assert report.ok and "composite at tests/test_library.py:" in str(report)
    with pytest.raises(TypeError, match=r"flow\.library\.opcheck\('lt::softsign'\): sample 0 does not fit the schema "
                                        r"lt::softsign\(Tensor x\) -> Tensor: lt\.softsign\(\) missing required argument"):
        flow.library.opcheck("lt::softsign", [()])
    with pytest.raises(ValueError, match=r"unknown check\(s\) \['speed'\] \(argument checks\)"):
        flow.library.opcheck("lt::softsign", [flow.ones(1)], checks=("speed",))


def test_torch_library_agrees_on_a_custom_op():
    torch = pytest.importorskip("torch")
    define_scale()
    with torch.library._scoped_library("lt_oracle", "FRAGMENT") as lib:
        lib.define("scale(Tensor x, *, float factor=2.0) -> Tensor")
        lib.impl("scale", lambda x, *, factor: x * factor, "CPU")
        x = np.array([1.5, -2.0], np.float32)
        expected = torch.ops.lt_oracle.scale(torch.from_numpy(x), factor=3.0).numpy()
    np.testing.assert_array_equal(flow.ops.lt.scale(flow.tensor(x), factor=3.0).numpy(), expected)
