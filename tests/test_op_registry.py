"""The user-op registry (REGISTER_USER_OP): args, attrs, infer functions, flags, UserOpDef, errors."""

import itertools
import sys

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite._proto import attr_value_pb2, user_op_def_pb2
from oneflow_lite.framework import op_registry
from oneflow_lite.framework.errors import OpDefinitionError, RegistrationError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import REQUIRED, Arg, register_user_op
from oneflow_lite.framework.tensor_meta import make_meta

_ids = itertools.count()
CPU, META = flow.device("cpu"), flow.device("meta")


def _same_shape(ctx):
    return ctx.input_metas[0].shape


def _same_dtype(ctx):
    return ctx.input_metas[0].dtype


@pytest.fixture
def fresh():
    """Registers test ops under unique names and removes them afterwards."""
    made = []

    def register(**kwargs):
        name = f"registry_test_op_{next(_ids)}"
        kwargs.setdefault("infer_shape", _same_shape)
        kwargs.setdefault("infer_dtype", _same_dtype)
        made.append(register_user_op(name, **kwargs))
        return made[-1]
    yield register
    for d in made:
        d.remove()


def _meta(shape, dtype=flow.float32, device=CPU):
    return make_meta(shape, dtype, device)


def test_definition_holds_args_attrs_and_flags(fresh):
    d = fresh(inputs=["x", Arg("bias", optional=True), Arg("rest", variadic=True, min=2)],
              outputs=["y", Arg("extra", variadic=True, min=1)],
              attrs={"alpha": ("double", 1), "axis": ("int32", REQUIRED), "names": ("list_string", ["a", "b"])},
              no_grad=True, cpu_only=True)
    assert [a.name for a in d.inputs] == ["x", "bias", "rest"]
    assert d.input_by_name["bias"] == Arg("bias", optional=True)
    assert d.input_by_name["rest"].variadic and d.input_by_name["rest"].min == 2
    assert [a.name for a in d.outputs] == ["y", "extra"]
    assert d.attrs["alpha"].default == 1.0 and type(d.attrs["alpha"].default) is float  # normalised to double
    assert d.attrs["axis"].required and not d.attrs["alpha"].required
    assert d.attrs["names"].default == ("a", "b")
    assert dict(d.defaults.items()) == {"alpha": 1.0, "names": ("a", "b")}
    assert d.no_grad and d.cpu_only
    assert op_registry.lookup(d.op_type) is d and op_registry.find(d.op_type) is d
    assert d.op_type in op_registry.registered_op_types()
    assert d.signature() == (f"{d.op_type}(Tensor x, Tensor? bias, Tensor[] rest, *, double alpha=1.0, int32 axis, "
                             f"list_string names=('a', 'b')) -> (Tensor y, Tensor[] extra)")
    assert d.location.startswith("tests/test_op_registry.py:")


def test_to_proto_gives_the_user_op_def(fresh):
    d = fresh(inputs=["x", Arg("bias", optional=True), Arg("rest", variadic=True, min=2)],
              outputs=["y"],
              attrs={"alpha": ("double", 0.5), "axis": ("int32", REQUIRED), "shape": ("shape", [2, 3]),
                     "dtype": ("data_type", flow.int64)})
    expected = user_op_def_pb2.UserOpDef(name=d.op_type)
    expected.input.add(name="x", is_optional=False, num_as_min=0)
    expected.input.add(name="bias", is_optional=True, num_as_min=0)
    expected.input.add(name="rest", is_optional=False, num_as_min=2)
    expected.output.add(name="y")
    expected.attr.add(name="alpha", type=attr_value_pb2.kAtDouble).default_val.at_double = 0.5
    expected.attr.add(name="axis", type=attr_value_pb2.kAtInt32)  # required: no default_val
    expected.attr.add(name="shape", type=attr_value_pb2.kAtShape).default_val.at_shape.dim.extend([2, 3])
    expected.attr.add(name="dtype", type=attr_value_pb2.kAtDataType).default_val.at_data_type = attr_value_pb2.kInt64
    proto = d.to_proto()
    assert proto == expected
    assert not proto.attr[1].HasField("default_val") and proto.attr[0].HasField("default_val")
    # field number of each AttrValue case equals its AttrType enum value
    assert proto.attr[2].default_val.WhichOneof("value") == "at_shape"
    assert attr_value_pb2.AttrValue.DESCRIPTOR.fields_by_name["at_shape"].number == attr_value_pb2.kAtShape


def test_relu_user_op_def():
    proto = op_registry.lookup("relu").to_proto()
    assert proto == user_op_def_pb2.UserOpDef(name="relu", input=[user_op_def_pb2.UserOpDef.ArgDef(name="x")],
                                              output=[user_op_def_pb2.UserOpDef.ArgDef(name="y")])


def test_duplicate_op_type_names_both_sites(fresh):
    d = fresh(inputs=["x"], outputs=["y"])
    line = sys._getframe().f_lineno + 2
    with pytest.raises(RegistrationError) as info:
        register_user_op(d.op_type, inputs=["x"], outputs=["y"],
                         infer_shape=_same_shape, infer_dtype=_same_dtype)
    assert str(info.value) == (f"op '{d.op_type}' is already registered at {d.location}; duplicate registration at "
                               f"tests/test_op_registry.py:{line}")
    assert op_registry.lookup(d.op_type) is d


@pytest.mark.parametrize("kwargs, message", [
    (dict(infer_shape=None), r"op '{op}': infer_shape and infer_dtype are required functions"),
    (dict(infer_dtype="float32"), r"op '{op}': infer_shape and infer_dtype are required functions"),
    (dict(infer_device=3), r"op '{op}': infer_device must be callable"),
    (dict(outputs=[]), r"op '{op}': an op needs at least one output"),
    (dict(outputs=[Arg("y", optional=True)]), r"op '{op}': outputs cannot be optional"),
    (dict(inputs=[3]), r"op '{op}': input must be a name or an Arg, got 3"),
    (dict(inputs=["not a name"]), r"op '{op}': input name 'not a name' is not an identifier"),
    (dict(inputs=[Arg("x", variadic=True, min=0)]), r"op '{op}': input 'x' has min=0; expected at least 1"),
    (dict(inputs=[Arg("x", min=2)]), r"op '{op}': input 'x' has min=2, but only a variadic argument takes a minimum"),
    (dict(inputs=["x", "x"]), r"op '{op}': names used twice among inputs, outputs and attrs: \['x'\]"),
    (dict(attrs={"y": ("int32", 0)}), r"op '{op}': names used twice among inputs, outputs and attrs: \['y'\]"),
    (dict(attrs={"a": "int32"}), r"op '{op}': attr 'a' must be given as \(type, default\)"),
    (dict(attrs={"a": ("complex", 0)}), r"op '{op}': attr 'a' has unknown type 'complex'; expected one of int32, "),
    (dict(attrs={"a": ("int32", 1.5)}),
     r"op '{op}': default of attr 'a': expected an integer \(int32\), got float 1.5"),
    (dict(attrs={"a": ("int32", 2**31)}), r"op '{op}': default of attr 'a': 2147483648 does not fit in int32"),
])
def test_bad_definitions_raise_and_register_nothing(kwargs, message):
    op = f"registry_bad_op_{next(_ids)}"
    full = dict(inputs=["x"], outputs=["y"], infer_shape=_same_shape, infer_dtype=_same_dtype)
    full.update(kwargs)
    with pytest.raises(OpDefinitionError, match=message.format(op=op)):
        register_user_op(op, **full)
    assert op_registry.find(op) is None


def test_bad_op_type_and_missing_infer_functions():
    with pytest.raises(OpDefinitionError, match=r"register_user_op: op type must be an identifier, got 'a-b'"):
        register_user_op("a-b", outputs=["y"], infer_shape=_same_shape, infer_dtype=_same_dtype)
    with pytest.raises(TypeError, match="infer_dtype"):
        register_user_op("registry_no_dtype_fn", outputs=["y"], infer_shape=_same_shape)
    assert op_registry.find("registry_no_dtype_fn") is None


def test_lookup_of_unknown_op():
    with pytest.raises(OpDefinitionError, match=r"op type 'no_such_op' is not registered"):
        op_registry.lookup("no_such_op")
    assert op_registry.find("no_such_op") is None


def test_remove_unregisters_and_frees_the_name():
    d = register_user_op("registry_removable", outputs=["y"], infer_shape=lambda c: (), infer_dtype=lambda c: flow.int8)
    d.remove()
    assert op_registry.find("registry_removable") is None
    d.remove()  # a second remove does nothing
    again = register_user_op("registry_removable", outputs=["y"], infer_shape=lambda c: (),
                             infer_dtype=lambda c: flow.int8)
    d.remove()  # the old definition's remove must not remove the new one
    assert op_registry.find("registry_removable") is again
    again.remove()


def test_infer_context_for_optional_and_variadic_inputs(fresh):
    seen = {}

    def infer_shape(ctx):
        seen.update(n_rest=ctx.num_inputs("rest"), has_bias=ctx.has_input("bias"), n_bias=ctx.num_inputs("bias"),
                    rest_shapes=[ctx.shape("rest", i) for i in range(ctx.num_inputs("rest"))],
                    dtype1=ctx.dtype("rest", 1), device=ctx.device("x"), alpha=ctx.attr("alpha"))
        return ctx.shape("x")

    d = fresh(inputs=["x", Arg("bias", optional=True), Arg("rest", variadic=True, min=2)], outputs=["y"],
              attrs={"alpha": ("float", 2.0)}, infer_shape=infer_shape)
    expr = OpBuilder(d.op_type).input("x").input("rest", 3).output("y").build()
    metas = (_meta((2,)), _meta((1,)), _meta((3,), flow.int32), _meta((4,)))
    res = expr.infer(metas, None)
    assert res.out_metas == (_meta((2,)),)
    assert seen == dict(n_rest=3, has_bias=False, n_bias=0, rest_shapes=[(1,), (3,), (4,)], dtype1=flow.int32,
                        device=CPU, alpha=2.0)


def test_infer_context_errors(fresh):
    d = fresh(inputs=["x"], outputs=["y"], infer_shape=lambda ctx: ctx.shape("w"))
    expr = OpBuilder(d.op_type).input("x").output("y").build()
    with pytest.raises(OpDefinitionError, match=rf"op '{d.op_type}': infer function asked for unknown input 'w'"):
        expr.infer((_meta((2,)),), None)
    d2 = fresh(inputs=["x"], outputs=["y"], infer_shape=lambda ctx: ctx.shape("x", 1))
    expr2 = OpBuilder(d2.op_type).input("x").output("y").build()
    with pytest.raises(OpDefinitionError, match=rf"op '{d2.op_type}': input 'x' has 1 tensor\(s\), index 1 asked for"):
        expr2.infer((_meta((2,)),), None)

    def bad(ctx):
        raise ctx.error("x must be 2-D")
    d3 = fresh(inputs=["x"], outputs=["y"], infer_shape=bad)
    with pytest.raises(RuntimeError, match=rf"^{d3.op_type}: x must be 2-D$"):
        OpBuilder(d3.op_type).input("x").output("y").build().infer((_meta((2,)),), None)


def test_several_outputs_infer(fresh):
    d = fresh(inputs=["x"], outputs=["a", "b"], infer_shape=lambda c: [c.shape("x"), (1,)],
              infer_dtype=lambda c: [c.dtype("x"), flow.int64])
    expr = OpBuilder(d.op_type).input("x").output("a").output("b").build()
    assert expr.infer((_meta((3,)),), None).out_metas == (_meta((3,)), _meta((1,), flow.int64))
    d2 = fresh(inputs=["x"], outputs=["a", "b"], infer_shape=lambda c: [c.shape("x")],
               infer_dtype=lambda c: [c.dtype("x")])
    with pytest.raises(OpDefinitionError, match=rf"{d2.op_type}: infer functions must return 2 shapes and dtypes"):
        OpBuilder(d2.op_type).input("x").output("a").output("b").build().infer((_meta((3,)),), None)


def test_device_inference_default_and_custom(fresh):
    d = fresh(inputs=["x"], outputs=["y"])
    expr = OpBuilder(d.op_type).input("x").output("y").build()
    assert expr.infer((_meta((2,), device=META),), None).out_metas[0].device is META
    source = fresh(outputs=["y"], attrs={"device": ("device", "cpu")},
                   infer_shape=lambda c: (2,), infer_dtype=lambda c: flow.float32)
    s_expr = OpBuilder(source.op_type).output("y").build()
    assert s_expr.infer((), None).device is CPU
    assert s_expr.infer((), {"device": "meta"}).out_metas[0].device is META
    plain_source = fresh(outputs=["y"], infer_shape=lambda c: (), infer_dtype=lambda c: flow.float32)
    assert OpBuilder(plain_source.op_type).output("y").build().infer((), None).device is CPU
    custom = fresh(inputs=["x"], outputs=["y"], infer_device=lambda c: META)
    c_expr = OpBuilder(custom.op_type).input("x").output("y").build()
    assert c_expr.infer((_meta((2,)),), None).out_metas[0] is _meta((2,), device=META)


def test_cpu_only_and_no_grad_flags(fresh):
    d = fresh(inputs=["x"], outputs=["y"], cpu_only=True, no_grad=True)
    expr = OpBuilder(d.op_type).input("x").output("y").build()
    assert expr.is_grad_disabled()
    assert expr.infer((_meta((2,)),), None).device is CPU
    with pytest.raises(RuntimeError, match=rf"{d.op_type}: this op runs on cpu only, got inputs on meta"):
        expr.infer((_meta((2,), device=META),), None)
    plain = fresh(inputs=["x"], outputs=["y"])
    assert not OpBuilder(plain.op_type).input("x").output("y").build().is_grad_disabled()
    assert not plain.no_grad and not plain.cpu_only


def test_defined_op_runs_eagerly_with_registered_kernel(fresh):
    from oneflow_lite.dispatch.dispatcher import DISPATCHER
    from oneflow_lite.framework.tensor import Tensor
    from oneflow_lite.interpreters.op_interp_util import dispatch

    d = fresh(inputs=["x", Arg("bias", optional=True)], outputs=["y"], attrs={"scale": ("double", 3.0)})

    def kernel(ctx, x, *bias):
        out = x * ctx.attr("scale")
        return out + bias[0] if bias else out

    with DISPATCHER.register_kernel(d.op_type, "cpu", kernel):
        x = Tensor._make(np.array([1.0, 2.0], np.float32), _meta((2,)))
        b = Tensor._make(np.array([0.5, 0.5], np.float32), _meta((2,)))
        plain = OpBuilder(d.op_type).input("x").output("y").build()
        with_bias = OpBuilder(d.op_type).input("x").input("bias").output("y").build()
        np.testing.assert_array_equal(dispatch(plain, (x,))[0].numpy(), [3.0, 6.0])
        np.testing.assert_array_equal(dispatch(with_bias, (x, b))[0].numpy(), [3.5, 6.5])
