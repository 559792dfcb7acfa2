"""Typed attrs: normalisation, the immutable hashable AttrMap, and attr precedence
(call-time attrs > the op expr's attrs > the definition's defaults)."""

import itertools

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework import attr
from oneflow_lite.framework.attr import AttrMap, AttrTypeError
from oneflow_lite.framework.errors import OpDefinitionError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.interpreters.op_interp_util import dispatch

_ids = itertools.count()


# ---- AttrMap ----------------------------------------------------------------------------------------
def test_attr_map_is_a_read_only_mapping():
    m = AttrMap({"a": 1, "b": (2, 3)})
    assert m["a"] == 1 and m.get("b") == (2, 3) and m.get("c", 7) == 7
    assert "a" in m and "c" not in m and len(m) == 2
    assert list(m) == ["a", "b"] and list(m.keys()) == ["a", "b"] and list(m.values()) == [1, (2, 3)]
    assert dict(m.items()) == {"a": 1, "b": (2, 3)}
    with pytest.raises(KeyError):
        m["c"]
    with pytest.raises(TypeError, match="AttrMap is immutable; use merged\\(\\) to make a new one"):
        m["a"] = 2
    with pytest.raises(TypeError, match="AttrMap is immutable"):
        del m["a"]
    with pytest.raises(AttributeError):
        m.extra = 1
    assert m["a"] == 1
    assert repr(m) == "AttrMap(a=1, b=(2, 3))"


def test_attr_map_copies_its_input():
    source = {"a": 1}
    m = AttrMap(source)
    source["a"] = 2
    assert m["a"] == 1


def test_equal_maps_hash_equal_and_work_as_keys():
    a = AttrMap({"x": 1, "y": (1, 2), "d": flow.float32, "dev": flow.device("cpu")})
    b = AttrMap([("dev", flow.device("cpu")), ("d", flow.float32), ("y", (1, 2)), ("x", 1)])
    assert a == b and hash(a) == hash(b)
    cache = {a: "hit"}
    assert cache[b] == "hit"
    assert AttrMap() == AttrMap({}) == attr.EMPTY_ATTRS and hash(AttrMap()) == hash(AttrMap({}))
    assert AttrMap({"x": 1}) != AttrMap({"x": 2})
    assert AttrMap({"x": 1}) != AttrMap({"y": 1})
    assert AttrMap({"x": 1}) != {"x": 1}  # not equal to a plain dict


def test_maps_with_values_of_different_types_are_different_keys():
    # Note [Typed attr map equality]: 1, 1.0 and True are equal in Python but not as attr values.
    maps = [AttrMap({"n": 1}), AttrMap({"n": 1.0}), AttrMap({"n": True}), AttrMap({"n": (1,)}), AttrMap({"n": (1.0,)})]
    for i, j in itertools.combinations(range(len(maps)), 2):
        assert maps[i] != maps[j]
    assert len(set(maps)) == len(maps)
    assert AttrMap({"s": [1, 2]}) == AttrMap({"s": (1, 2)})  # a list and a tuple are the same attr value


def test_merged_overrides_and_leaves_both_unchanged():
    base = AttrMap({"a": 1, "b": 2})
    over = base.merged({"b": 3, "c": 4})
    assert dict(over.items()) == {"a": 1, "b": 3, "c": 4}
    assert dict(base.items()) == {"a": 1, "b": 2}
    assert base.merged(AttrMap({"a": 9}))["a"] == 9
    assert base.merged(None) is base and base.merged({}) is base


# ---- normalisation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("type_name, value, expected", [
    ("int32", 7, 7), ("int32", np.int16(-3), -3), ("int32", 2**31 - 1, 2**31 - 1), ("int32", -(2**31), -(2**31)),
    ("int64", 2**40, 2**40), ("bool", True, True), ("bool", np.bool_(False), False),
    ("float", 2, 2.0), ("float", np.float32(0.5), 0.5), ("double", 1.25, 1.25),
    ("string", "abc", "abc"), ("shape", [2, 3], (2, 3)), ("shape", (), ()),
    ("data_type", flow.int8, flow.int8), ("device", "cpu", flow.device("cpu")),
    ("device", flow.device("meta"), flow.device("meta")),
    ("list_int32", [1, 2], (1, 2)), ("list_int64", (), ()), ("list_float", [1, 2.5], (1.0, 2.5)),
    ("list_data_type", [flow.float32, flow.bool], (flow.float32, flow.bool)),
    ("list_shape", [[1], (2, 3)], ((1,), (2, 3))), ("list_string", ["a"], ("a",)),
])
def test_normalise(type_name, value, expected):
    got = attr.normalise(type_name, value)
    assert got == expected and type(got) is type(expected)
    hash(got)


@pytest.mark.parametrize("type_name, value, message", [
    ("int32", 1.0, r"expected an integer \(int32\), got float 1.0"),
    ("int32", True, r"expected an integer \(int32\), got bool True"),
    ("int32", 2**31, r"2147483648 does not fit in int32"),
    ("int64", 2**63, r"9223372036854775808 does not fit in int64"),
    ("bool", 1, r"expected a bool, got int 1"),
    ("float", "1", r"expected a number \(float\), got str '1'"),
    ("double", False, r"expected a number \(double\), got bool False"),
    ("string", b"x", r"expected a str, got bytes b'x'"),
    ("shape", 3, r"expected a shape \(tuple of ints\), got int 3"),
    ("shape", (2.0,), r"expected an integer \(int64\), got float 2.0"),
    ("data_type", np.float32, r"expected a flow.dtype, got type"),
    ("device", 0, r"expected a flow.device or device string, got int 0"),
    ("list_int32", 3, r"expected a list for list_int32, got int 3"),
    ("list_int32", [2**31], r"2147483648 does not fit in int32"),
    ("list_string", ["a", 1], r"expected a str, got int 1"),
])
def test_normalise_errors(type_name, value, message):
    with pytest.raises(AttrTypeError, match=message):
        attr.normalise(type_name, value)


def test_device_attr_with_unknown_device_string():
    with pytest.raises(RuntimeError, match=r"device: expected one of cpu, meta(, \w+)* device type .*got 'cuda'"):
        attr.normalise("device", "cuda")


# ---- precedence --------------------------------------------------------------------------------------
@pytest.fixture
def value_op():
    """A source op with an int64 attr ``value`` (default 1) whose kernel returns that value."""
    name = f"attr_test_op_{next(_ids)}"
    d = register_user_op(name, inputs=["x"], outputs=["y"], attrs={"value": ("int64", 1), "tag": ("string", "t")},
                         infer_shape=lambda ctx: (), infer_dtype=lambda ctx: flow.int64)
    handle = DISPATCHER.register_kernel(name, "cpu", lambda ctx, x: np.array(ctx.attr("value"), np.int64))
    yield name
    handle.remove()
    d.remove()


def _x():
    return Tensor._make(np.zeros(1, np.float32), make_meta((1,), flow.float32, flow.device("cpu")))


def test_call_attrs_over_expr_attrs_over_defaults(value_op):
    x = _x()
    default_expr = OpBuilder(value_op).input("x").output("y").build()
    expr = OpBuilder(value_op).input("x").output("y").attr("value", 2).build()
    assert dict(default_expr.base_attrs.items()) == {"value": 1, "tag": "t"}
    assert dict(expr.base_attrs.items()) == {"value": 2, "tag": "t"}
    assert dispatch(default_expr, (x,))[0].item() == 1
    assert dispatch(expr, (x,))[0].item() == 2
    assert dispatch(expr, (x,), AttrMap({"value": 3}))[0].item() == 3
    assert dispatch(default_expr, (x,), {"value": 4})[0].item() == 4
    assert dispatch(expr, (x,), AttrMap({"tag": "other"}))[0].item() == 2  # other attrs keep the expr's value
    assert dispatch(expr, (x,))[0].item() == 2  # call-time attrs do not stick
    composed = expr.compose_attrs(AttrMap({"value": 5}))
    assert dict(composed.items()) == {"value": 5, "tag": "t"}
    assert expr.compose_attrs(None) is expr.base_attrs


def test_bad_call_time_attrs(value_op):
    expr = OpBuilder(value_op).input("x").output("y").build()
    x = _x()
    with pytest.raises(OpDefinitionError,
                       match=rf"op '{value_op}' has no attr 'nope'; its attrs are \['tag', 'value'\]"):
        dispatch(expr, (x,), AttrMap({"nope": 1}))
    with pytest.raises(OpDefinitionError,
                       match=rf"op '{value_op}': attr 'value' \(int64\): expected an integer \(int64\), got str 'a'"):
        dispatch(expr, (x,), AttrMap({"value": "a"}))
    # a cached call with value=3 must not let 3.0 or True through
    assert dispatch(expr, (x,), AttrMap({"value": 3}))[0].item() == 3
    with pytest.raises(OpDefinitionError, match=r"expected an integer \(int64\), got float 3.0"):
        dispatch(expr, (x,), AttrMap({"value": 3.0}))
    with pytest.raises(OpDefinitionError, match=r"expected an integer \(int64\), got bool True"):
        dispatch(expr, (x,), AttrMap({"value": True}))
