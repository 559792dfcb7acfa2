"""OpBuilder: unique names, validation against the definition, single use, the UserOpConf it writes."""

import itertools

import pytest

import oneflow_lite as flow
from oneflow_lite._proto import attr_value_pb2, user_op_conf_pb2
from oneflow_lite.framework.errors import OpDefinitionError
from oneflow_lite.framework.op_builder import OpBuilder, unique_op_name
from oneflow_lite.framework.op_expr import (
    BuiltinOpExpr,
    FeedInputOpExpr,
    FeedVariableOpExpr,
    FetchOutputOpExpr,
    OpExpr,
    UserOpExpr,
)
from oneflow_lite.framework.op_registry import REQUIRED, Arg, register_user_op

_ids = itertools.count()


@pytest.fixture
def op():
    """``x, bias?, rest[>=2] -> y, aux[>=1]`` with attrs axis (required int32), alpha=1.0, shape=(2,), dtype."""
    name = f"builder_test_op_{next(_ids)}"
    d = register_user_op(name, inputs=["x", Arg("bias", optional=True), Arg("rest", variadic=True, min=2)],
                         outputs=["y", Arg("aux", variadic=True)],
                         attrs={"axis": ("int32", REQUIRED), "alpha": ("double", 1.0), "shape": ("shape", (2,)),
                                "dtype": ("data_type", flow.float32)},
                         infer_shape=lambda ctx: ctx.shape("x"), infer_dtype=lambda ctx: ctx.dtype("x"))
    yield name
    d.remove()


def _full(name, op_name=None):
    return OpBuilder(name, op_name).input("x").input("rest", 2).output("y").output("aux").attr("axis", 0)


def test_default_names_count_per_prefix():
    a = OpBuilder("relu").op_name
    b = OpBuilder("relu").op_name
    c = OpBuilder("relu").op_name
    assert a.startswith("relu") and a[4:].isdigit()
    assert (int(b[4:]), int(c[4:])) == (int(a[4:]) + 1, int(a[4:]) + 2)
    prefix = f"fresh_prefix_{next(_ids)}_"
    assert [unique_op_name(prefix) for _ in range(3)] == [prefix + "0", prefix + "1", prefix + "2"]
    assert OpBuilder("relu", "my_relu").op_name == "my_relu"


def test_build_gives_a_user_op_expr(op):
    e = _full(op, "my_op").build()
    assert type(e) is UserOpExpr and isinstance(e, BuiltinOpExpr) and isinstance(e, OpExpr)
    assert e.op_name == "my_op" and e.op_type_name == op
    assert e.input_arg_tuple.names == ("x", "rest") and e.input_arg_tuple.counts == (1, 2)
    assert e.indexed_ibns == ("x_0", "rest_0", "rest_1")
    assert e.indexed_obns == ("y_0", "aux_0")
    assert e.input_size == 3 and e.output_size == 2
    assert e.input_arg_tuple.index_of("rest", 1) == 2
    with pytest.raises(IndexError, match=r"argument 'rest' has 2 tensor\(s\), asked for index 2"):
        e.input_arg_tuple.index_of("rest", 2)
    assert dict(e.base_attrs.items()) == {"alpha": 1.0, "shape": (2,), "dtype": flow.float32, "axis": 0}
    assert repr(e) == f"<UserOpExpr my_op ({op})>"


def test_user_op_conf_proto(op):
    e = (OpBuilder(op, "conf_op").input("rest", 3).input("x").input("bias").output("y").output("aux", 2)
         .attr("axis", -1).attr("shape", [4, 5]).build())
    expected = user_op_conf_pb2.UserOpConf(op_type_name=op, input_order=["rest", "x", "bias"],
                                           output_order=["y", "aux"])
    expected.input["rest"].s.extend(["conf_op/^Placeholder_0", "conf_op/^Placeholder_1", "conf_op/^Placeholder_2"])
    expected.input["x"].s.append("conf_op/^Placeholder_3")
    expected.input["bias"].s.append("conf_op/^Placeholder_4")
    expected.output["y"].s.append("conf_op/y_0")
    expected.output["aux"].s.extend(["conf_op/aux_0", "conf_op/aux_1"])
    expected.attr["axis"].at_int32 = -1
    expected.attr["alpha"].at_double = 1.0
    expected.attr["shape"].at_shape.dim.extend([4, 5])
    expected.attr["dtype"].at_data_type = attr_value_pb2.kFloat
    assert e.proto == expected
    assert e.indexed_ibns == ("rest_0", "rest_1", "rest_2", "x_0", "bias_0")
    assert e.indexed_obns == ("y_0", "aux_0", "aux_1")


def test_repeated_arg_name(op):
    with pytest.raises(ValueError, match=r"OpBuilder\('{0}'\): argument 'x' has been specified more than once"
                       .format(op)):
        OpBuilder(op).input("x").input("x")
    with pytest.raises(ValueError, match="argument 'y' has been specified more than once"):
        OpBuilder(op).input("x").output("y").output("y")
    with pytest.raises(ValueError, match="argument 'x' has been specified more than once"):
        OpBuilder(op).input("x").output("x")
    with pytest.raises(ValueError, match=r"attr 'axis' has been set more than once"):
        OpBuilder(op).attr("axis", 1).attr("axis", 2)


def test_bad_count(op):
    for n in (0, -1, 1.0, True):
        with pytest.raises(ValueError, match=rf"OpBuilder\('{op}'\): count of 'rest' must be a positive int, got "):
            OpBuilder(op).input("rest", n)


def test_unknown_op_type():
    with pytest.raises(OpDefinitionError, match="op type 'no_such_op' is not registered"):
        OpBuilder("no_such_op").input("x").output("y").build()


@pytest.mark.parametrize("build, message", [
    (lambda o: _full(o).input("w").build(), "op '{op}' has no input 'w'; its inputs are \\['x', 'bias', 'rest'\\]"),
    (lambda o: _full(o).output("z").build(), "op '{op}' has no output 'z'; its outputs are \\['y', 'aux'\\]"),
    (lambda o: _full(o).attr("beta", 1).build(),
     "op '{op}' has no attr 'beta'; its attrs are \\['alpha', 'axis', 'dtype', 'shape'\\]"),
    (lambda o: _full(o).attr("alpha", "big").build(),
     "op '{op}': attr 'alpha' has type double: expected a number \\(double\\), got str 'big'"),
    (lambda o: _full(o).attr("shape", 3).build(),
     "op '{op}': attr 'shape' has type shape: expected a shape \\(tuple of ints\\), got int 3"),
    (lambda o: OpBuilder(o).input("x").input("rest", 2).output("y").output("aux").build(),
     "op '{op}': must set attr\\(s\\) \\['axis'\\]; they have no default"),
    (lambda o: OpBuilder(o).input("rest", 2).output("y").output("aux").attr("axis", 0).build(),
     "op '{op}': missing input\\(s\\) \\['x'\\]"),
    (lambda o: OpBuilder(o).input("x").input("rest", 2).output("aux", 3).attr("axis", 0).build(),
     "op '{op}': missing output\\(s\\) \\['y'\\]"),
    (lambda o: OpBuilder(o).input("x").input("rest", 1).output("y").output("aux").attr("axis", 0).build(),
     "op '{op}': input 'rest' needs at least 2 tensors, got 1"),
    (lambda o: OpBuilder(o).input("x", 2).input("rest", 2).output("y").output("aux").attr("axis", 0).build(),
     "op '{op}': input 'x' takes one tensor, got 2"),
    (lambda o: OpBuilder(o).input("x").input("rest", 2).output("y", 2).output("aux").attr("axis", 0).build(),
     "op '{op}': output 'y' takes one tensor, got 2"),
])
def test_build_validates_against_the_definition(op, build, message):
    with pytest.raises(OpDefinitionError, match=message.format(op=op)):
        build(op)


def test_builder_is_single_use(op):
    b = _full(op)
    b.build()
    for again in (b.build, lambda: b.input("bias"), lambda: b.output("aux"), lambda: b.attr("alpha", 2.0)):
        with pytest.raises(RuntimeError, match=rf"OpBuilder\('{op}'\): already built; a builder is single-use"):
            again()


def test_failed_build_can_be_fixed_and_built(op):
    b = OpBuilder(op).input("x").input("rest", 2).output("y").output("aux")
    with pytest.raises(OpDefinitionError, match="must set attr"):
        b.build()
    e = b.attr("axis", 3).build()
    assert e.base_attrs["axis"] == 3


def test_optional_inputs_may_be_left_out_and_variadic_ones_take_any_count_above_min(op):
    e = OpBuilder(op).input("x").input("rest", 5).output("y").output("aux", 3).attr("axis", 0).build()
    assert e.indexed_ibns == ("x_0", "rest_0", "rest_1", "rest_2", "rest_3", "rest_4")
    assert e.indexed_obns == ("y_0", "aux_0", "aux_1", "aux_2")
    assert list(e.proto.input_order) == ["x", "rest"] and list(e.proto.output_order) == ["y", "aux"]


def test_feed_and_fetch_exprs_exist():
    for cls, type_name in ((FeedInputOpExpr, "feed_input"), (FeedVariableOpExpr, "feed_variable"),
                           (FetchOutputOpExpr, "fetch_output")):
        e = cls(f"{type_name}_7")
        assert isinstance(e, BuiltinOpExpr) and e.op_type_name == type_name and e.op_name == f"{type_name}_7"
        assert e.indexed_ibns == ("in_0",) and e.indexed_obns == ("out_0",)
        assert e.input_size == e.output_size == 1
