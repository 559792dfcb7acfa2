"""The generated proto modules are current; attrs round-trip through AttrValue; confs and jobs build."""

import importlib.util
import pathlib

import pytest

import oneflow_lite as flow
from oneflow_lite._proto import attr_value_pb2, job_pb2, op_conf_pb2, user_op_conf_pb2, user_op_def_pb2
from oneflow_lite.framework import attr
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.op_builder import OpBuilder

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTO_OUT = ROOT / "oneflow_lite" / "_proto"


def _gen_protos():
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_modules_are_not_stale():
    pytest.importorskip("grpc_tools")
    generated = _gen_protos().generated_files()
    names = {p.stem for p in (ROOT / "protos").glob("*.proto")}
    assert set(generated) == {f"{n}_pb2.py" for n in names} | {f"{n}_pb2.pyi" for n in names}
    committed = {p.name: p.read_text() for p in PROTO_OUT.iterdir() if p.name.endswith(("_pb2.py", "_pb2.pyi"))}
    stale = sorted(name for name in generated if committed.get(name) != generated[name])
    extra = sorted(set(committed) - set(generated))
    assert not stale and not extra, (f"oneflow_lite/_proto is stale ({stale}) or has extra modules ({extra}); "
                                     f"run: python scripts/gen_protos.py")


def test_generated_imports_are_package_relative():
    for p in PROTO_OUT.glob("*_pb2.py"):
        text = p.read_text()
        assert "\nimport attr_value_pb2" not in text and "\nimport user_op_conf_pb2" not in text, p.name


ROUND_TRIP = [
    ("int32", -7), ("int32", 2**31 - 1), ("int64", -(2**63)), ("bool", True), ("bool", False),
    ("float", 0.5), ("float", -3.0), ("double", 0.1), ("string", "hello ✓"), ("string", ""),
    ("shape", (2, 3, 4)), ("shape", ()), ("data_type", flow.float16), ("device", flow.device("meta")),
    ("list_int32", (1, -2, 3)), ("list_int64", (2**40,)), ("list_float", (0.25, 1.5)),
    ("list_data_type", (flow.bool, flow.uint8, flow.int64)), ("list_shape", ((1,), (), (2, 2))),
    ("list_string", ("a", "b")), ("list_int32", ()),
]


def test_every_attr_type_is_covered():
    assert {t for t, _ in ROUND_TRIP} == set(attr.ATTR_TYPES)


@pytest.mark.parametrize("type_name, value", ROUND_TRIP)
def test_attr_round_trip(type_name, value):
    av = attr.to_proto(type_name, value)
    assert av.WhichOneof("value") == "at_" + type_name
    # the field number of the case equals the AttrType enum value
    assert av.DESCRIPTOR.fields_by_name["at_" + type_name].number == attr.ATTR_TYPE_ENUM[type_name]
    back = attr_value_pb2.AttrValue.FromString(av.SerializeToString())
    assert attr.from_proto(back) == (type_name, value)


def test_float_attr_is_single_precision_on_the_wire():
    _, value = attr.from_proto(attr.to_proto("float", 0.1))
    assert value != 0.1 and abs(value - 0.1) < 1e-8
    assert attr.from_proto(attr.to_proto("double", 0.1)) == ("double", 0.1)


def test_attr_value_fields_by_hand():
    assert attr.to_proto("shape", (2, 3)).at_shape.dim == [2, 3]
    assert attr.to_proto("data_type", flow.int32).at_data_type == attr_value_pb2.kInt32
    dev = attr.to_proto("device", flow.device("cpu")).at_device
    assert (dev.device_type, dev.device_id) == ("cpu", 0)
    assert list(attr.to_proto("list_data_type", (flow.float64,)).at_list_data_type.val) == [attr_value_pb2.kDouble]


def test_attr_type_enum_matches_proto():
    for name, value in attr.ATTR_TYPE_ENUM.items():
        enum_name = "kAt" + "".join(part.capitalize() for part in name.split("_"))
        assert attr_value_pb2.AttrType.Value(enum_name) == value


def test_empty_attr_value_is_an_error():
    with pytest.raises(ValueError, match="AttrValue has no value set"):
        attr.from_proto(attr_value_pb2.AttrValue())


def test_data_type_enum_round_trip():
    for d in dtypes.ALL_DTYPES:
        assert dtypes.from_proto(d.proto) is d
    with pytest.raises(ValueError, match="unknown DataType proto value 1"):
        dtypes.from_proto(attr_value_pb2.kChar)


def test_operator_conf_and_job_build():
    expr = OpBuilder("relu", "relu_in_job").input("x").output("y").build()
    conf = expr.build_op_conf(device_tag="cpu")
    assert conf.name == "relu_in_job" and conf.device_tag == "cpu" and conf.WhichOneof("op_type") == "user_conf"
    assert conf.user_conf.op_type_name == "relu" and list(conf.user_conf.output["y"].s) == ["relu_in_job/y_0"]

    x_in = op_conf_pb2.OperatorConf(name="input_0", device_tag="cpu")
    x_in.input_conf.out = "out"
    x_in.input_conf.shape.dim.extend([2, 3])
    x_in.input_conf.data_type = flow.float32.proto
    var = op_conf_pb2.OperatorConf(name="w", device_tag="cpu")
    var.variable_conf.shape.dim.append(3)
    var.variable_conf.data_type = flow.float32.proto
    var.variable_conf.trainable = True
    out = op_conf_pb2.OperatorConf(name="output_0", device_tag="cpu")
    setattr(out.output_conf, "in", "relu_in_job/y_0")
    out.output_conf.out = "out"

    job = job_pb2.Job()
    job.job_conf.job_name = "graph_0"
    job.job_conf.predict_conf.SetInParent()
    job.net.op.extend([x_in, var, conf, out])
    back = job_pb2.Job.FromString(job.SerializeToString())
    assert back == job
    assert [op.WhichOneof("op_type") for op in back.net.op] == ["input_conf", "variable_conf", "user_conf",
                                                                 "output_conf"]
    assert back.job_conf.WhichOneof("job_type") == "predict_conf"
    assert back.net.op[1].variable_conf.trainable
    assert getattr(back.net.op[3].output_conf, "in") == "relu_in_job/y_0"


def test_build_op_conf_writes_call_attrs_over_expr_attrs():
    from oneflow_lite.framework.op_registry import register_user_op
    d = register_user_op("proto_attr_op", inputs=["x"], outputs=["y"], attrs={"a": ("int64", 1), "b": ("string", "s")},
                         infer_shape=lambda c: c.shape("x"), infer_dtype=lambda c: c.dtype("x"))
    try:
        expr = OpBuilder("proto_attr_op", "p").input("x").output("y").attr("b", "t").build()
        conf = expr.build_op_conf({"a": 5})
        assert conf.user_conf.attr["a"].at_int64 == 5 and conf.user_conf.attr["b"].at_string == "t"
        assert expr.proto.attr["a"].at_int64 == 1  # the expr's own conf is unchanged
    finally:
        d.remove()


def test_user_op_def_and_conf_messages_have_the_issue_fields():
    assert [f.name for f in user_op_def_pb2.UserOpDef.DESCRIPTOR.fields] == ["name", "input", "output", "attr"]
    assert [f.name for f in user_op_def_pb2.UserOpDef.ArgDef.DESCRIPTOR.fields] == ["name", "is_optional",
                                                                                    "num_as_min"]
    assert [f.name for f in user_op_def_pb2.UserOpDef.AttrDef.DESCRIPTOR.fields] == ["name", "type", "default_val"]
    assert [f.name for f in user_op_conf_pb2.UserOpConf.DESCRIPTOR.fields] == [
        "op_type_name", "input", "output", "attr", "input_order", "output_order"]
    assert [f.name for f in op_conf_pb2.OperatorConf.DESCRIPTOR.fields] == [
        "name", "device_tag", "user_conf", "input_conf", "variable_conf", "output_conf"]
