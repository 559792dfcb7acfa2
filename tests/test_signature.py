"""The functional signature parser (OneFlow's functional_api.yaml form) and argument binding."""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.functors.signature import ARG_TYPES, Signature, SignatureMismatch, parse

SIGNATURES = [
    "Tensor (Tensor input, Tensor other, *, Scalar alpha=1) => Add",
    "Tensor (Tensor input, Scalar other, *, Scalar alpha=1, Bool inplace=False) => ScalarAdd",
    "Tensor (Scalar input, Tensor other) => ScalarMulLeft",
    "Tensor (Tensor input, Bool inplace=False) => Relu",
    "Tensor (Tensor x, *, Float alpha=1.0) => Elu",
    "Tensor (Tensor x, Float negative_slope=0.01, Bool inplace=False) => LeakyRelu",
    "Tensor (Tensor input, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => ReduceSum",
    "Tensor (Tensor input, Shape shape) => Reshape",
    "Tensor (Tensor input, Int dim0, Int dim1) => Transpose",
    "Tensor (Tensor x, Int dim=-1) => Softmax",
    "Tensor (Tensor input, DataType dtype) => Cast",
    "Tensor (Tensor x, Device device, *, Bool copy=False) => Copy",
    "Tensor (Shape size, *, DataType dtype=None, Device device=None) => Zeros",
    "Tensor (Shape size, Scalar fill_value, *, DataType dtype=None, Device device=None) => Full",
    "Tensor (Scalar start, Scalar end, Scalar step=1, *, DataType dtype=None, Device device=None) => Arange",
    "Tensor (Shape size, *, Generator generator=None, DataType dtype=None, Device device=None) => Rand",
    "TensorTuple (Tensor x, Int split_size_or_sections, Int dim=0) => Split",
    "Tensor (TensorTuple inputs, Int dim=0) => Concat",
    "Tensor (Tensor x, IntList[2] kernel_size, IntList[2] stride=None, IntList[2] padding=0) => MaxPool2D",
    "Tensor (Tensor x, IntList[2] dilation=[1, 1], Int groups=1) => Conv2d",
    "Tensor (Tensor input, Tensor target, String reduction=\"mean\") => MseLoss",
    "Tensor (Tensor x, String mode='bilinear', Bool align_corners=False) => Upsample",
    "Tensor (Tensor x, Float p=0.5, Bool training=True, *, Generator generator=None) => Dropout",
    "Tensor (Tensor x, Float eps=1e-05, Float momentum=0.1) => BatchNorm",
    "Void (Tensor x, Scalar value) => Fill",
    "Scalar (Tensor x) => Item",
    "Bool (Tensor x) => IsFloatingPoint",
    "Int (Tensor x, Int dim) => SizeAt",
    "Tensor (Tensor input) => Neg",
    "Tensor () => Empty",
    "Tensor (*, Int n=3) => KeywordsOnly",
]


@pytest.mark.parametrize("text", SIGNATURES)
def test_signature_prints_back_to_its_source(text):
    assert str(parse(text)) == text
    assert repr(parse(text)) == f"Signature({text!r})"


def test_table_is_large_enough():
    assert len(SIGNATURES) >= 25


def test_normalised_spacing_prints_canonically():
    canonical = "Tensor (Tensor x, Int dim=-1, *, Bool b=True) => F"
    assert str(parse("Tensor(Tensor x,Int dim = -1 ,*,Bool b=True)=>F")) == canonical


def test_argument_specs():
    s = parse("Tensor (Tensor input, Tensor other, *, Scalar alpha=1, DataType dtype=None) => Add")
    assert s.return_type == "Tensor" and s.functor_name == "Add"
    assert [(a.type, a.name, a.kw_only) for a in s.args] == [
        ("Tensor", "input", False), ("Tensor", "other", False), ("Scalar", "alpha", True), ("DataType", "dtype", True)]
    assert [a.name for a in s.positional] == ["input", "other"]
    assert s.by_name["alpha"].default == 1 and not s.by_name["alpha"].optional
    assert s.by_name["dtype"].default is None and s.by_name["dtype"].optional
    assert s.params_text() == "(Tensor input, Tensor other, *, Scalar alpha=1, DataType dtype=None)"


@pytest.mark.parametrize("text, default", [
    ("Tensor (Bool b=True) => F", True), ("Tensor (Bool b=False) => F", False), ("Tensor (Int n=-3) => F", -3),
    ("Tensor (Float f=1e-05) => F", 1e-05), ("Tensor (Float f=1) => F", 1.0), ("Tensor (Scalar s=2.5) => F", 2.5),
    ("Tensor (String s=\"mean\") => F", "mean"), ("Tensor (String s='sum') => F", "sum"),
    ("Tensor (IntList l=[1, 2]) => F", (1, 2)), ("Tensor (IntList[2] l=1) => F", (1, 1)),
    ("Tensor (IntList[3] l=[4]) => F", (4, 4, 4)), ("Tensor (Shape s=[2, 3]) => F", (2, 3)),
    ("Tensor (IntList l=None) => F", None), ("Tensor (Device d=\"cpu\") => F", flow.device("cpu")),
])
def test_defaults_are_parsed_and_converted(text, default):
    value = parse(text).args[0].default
    assert value == default and type(value) is type(default)


@pytest.mark.parametrize("text, message", [
    ("Tensor (Tensor x)",
     r"cannot parse signature 'Tensor \(Tensor x\)'; expected 'Ret \(Type name, \.\.\.\) => Functor'"),
    ("Tensor Tensor x => F", r"cannot parse signature"),
    ("Foo (Tensor x) => F", r"signature 'Foo \(Tensor x\) => F': unknown return type 'Foo'"),
    ("Tensor (Complex x) => F", r"unknown argument type 'Complex' for 'x'; expected one of Tensor, TensorTuple, "),
    ("Tensor (IntList[x] l) => F", r"cannot parse argument 'IntList\[x\] l'"),
    ("Tensor (Tensor) => F", r"signature 'Tensor \(Tensor\) => F': cannot parse argument 'Tensor'"),
    ("Tensor (Tensor x, *, *, Int y=1) => F", r"'\*' given twice"),
    ("Tensor (Tensor x, Int x) => F", r"an argument name is used twice"),
    ("Tensor (Int a=1, Int b) => F", r"'b' without a default follows one with a default"),
    ("Tensor (Int a=abc) => F", r"bad default 'abc' for argument 'a'"),
    ("Tensor (Int a=1.5) => F", r"bad default '1.5' for argument 'a': expected int"),
    ("Tensor (Bool b=1) => F", r"bad default '1' for argument 'b': expected bool"),
    ("Tensor (IntList[2] k=[1, 2, 3]) => F", r"bad default '\[1, 2, 3\]' for argument 'k': argument 'k' must have 2 "
                                              r"elements, got 3"),
])
def test_parse_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse(text)


def test_keyword_only_after_star_may_lack_defaults():
    s = parse("Tensor (Tensor x, Int a=1, *, Int b) => F")
    assert s.by_name["b"].kw_only and str(s) == "Tensor (Tensor x, Int a=1, *, Int b) => F"


def test_every_arg_type_has_a_converter():
    assert set(ARG_TYPES) == {"Tensor", "TensorTuple", "Scalar", "Int", "Float", "Bool", "String", "IntList", "Shape",
                              "DataType", "Device", "Generator", "FloatList", "OptionalIntList", "Placement",
                              "SbpList"}


def test_placement_and_sbp_list_converters():
    s = parse("Tensor (Shape size, *, Placement placement, SbpList sbp) => GlobalZeros")
    p = flow.placement("cpu", ranks=[0])
    assert s.bind("zeros", ((2, 3),), {"placement": p, "sbp": flow.sbp.split(0)}) == [(2, 3), p, (flow.sbp.split(0),)]
    assert s.bind("zeros", ((2,),), {"placement": p, "sbp": [flow.sbp.broadcast]})[2] == (flow.sbp.broadcast,)
    with pytest.raises(SignatureMismatch, match="argument 'placement' .* must be flow.placement, not str"):
        s.bind("zeros", ((2,),), {"placement": "cpu", "sbp": flow.sbp.broadcast})
    with pytest.raises(SignatureMismatch, match="argument 'sbp'"):
        s.bind("zeros", ((2,),), {"placement": p, "sbp": ()})


# ---- binding ------------------------------------------------------------------------------------------
def _t():
    return Tensor._make(np.zeros(2, np.float32), make_meta((2,), flow.float32, flow.device("cpu")))


def test_bind_positional_keyword_and_defaults():
    s = parse("Tensor (Tensor input, Scalar other, *, Scalar alpha=1, Bool inplace=False) => ScalarAdd")
    x = _t()
    assert s.bind("add", (x, 2), {}) == [x, 2, 1, False]
    assert s.bind("add", (x,), {"other": 2.5, "inplace": True}) == [x, 2.5, 1, True]
    assert s.bind("add", (x, np.float32(0.5)), {"alpha": np.int64(3)}) == [x, 0.5, 3, False]
    v = s.bind("add", (x, np.float32(0.5)), {})[1]
    assert type(v) is float  # NumPy scalars become Python scalars


@pytest.mark.parametrize("args, kwargs, message", [
    (("x", 1, 2), {}, r"add\(\) takes 2 positional argument\(s\) but 3 were given"),
    (("x", 1), {"beta": 2}, r"add\(\) got an unexpected keyword argument 'beta'"),
    (("x", 1), {"other": 2}, r"add\(\) got multiple values for argument 'other'"),
    (("x",), {}, r"add\(\) missing required argument 'other' \(pos 2\)"),
    (("x", "1"), {}, r"add\(\): argument 'other' \(position 2\) must be Number, not str"),
    (("x", 1), {"alpha": None}, r"add\(\): argument 'alpha' \(keyword\) must be Number, not NoneType"),
    (("x", 1), {"inplace": 1}, r"add\(\): argument 'inplace' \(keyword\) must be bool, not int"),
    ((1, 1), {}, r"add\(\): argument 'input' \(position 1\) must be Tensor, not int"),
    (("x", 1, 2), {"alpha": 1}, r"takes 2 positional argument\(s\) but 3 were given"),
])
def test_bind_errors(args, kwargs, message):
    s = parse("Tensor (Tensor input, Scalar other, *, Scalar alpha=1, Bool inplace=False) => ScalarAdd")
    x = _t()
    args = tuple(x if a == "x" else a for a in args)
    with pytest.raises(SignatureMismatch, match=message):
        s.bind("add", args, kwargs)


def test_keyword_only_args_are_not_positional():
    s = parse("Tensor (Tensor x, *, Int k=1) => F")
    with pytest.raises(SignatureMismatch, match=r"f\(\) takes 1 positional argument\(s\) but 2 were given"):
        s.bind("f", (_t(), 3), {})
    assert s.bind("f", (_t(),), {"k": 3})[1] == 3


def test_optional_accepts_none_required_does_not():
    s = parse("Tensor (Tensor x, IntList dim=None, *, DataType dtype=None) => F")
    x = _t()
    assert s.bind("f", (x, None), {"dtype": None}) == [x, None, None]
    assert s.bind("f", (x, (0,)), {"dtype": flow.int8}) == [x, (0,), flow.int8]
    with pytest.raises(SignatureMismatch, match=r"argument 'dtype' \(keyword\) must be flow.dtype, not type"):
        s.bind("f", (x,), {"dtype": np.float32})


@pytest.mark.parametrize("value, expected", [
    (1, (1,)), (np.int64(2), (2,)), ((1, 2), (1, 2)), ([3], (3,)), ((), ()),
])
def test_int_list_accepts_int_and_sequences(value, expected):
    s = parse("Tensor (Tensor x, IntList dim) => F")
    assert s.bind("f", (_t(), value), {})[1] == expected


@pytest.mark.parametrize("value", [True, 1.0, (1, 2.0), "1", (True,)])
def test_int_list_rejects_non_ints(value):
    s = parse("Tensor (Tensor x, IntList dim) => F")
    with pytest.raises(SignatureMismatch, match=r"f\(\): argument 'dim' \(position 2\) must be int or tuple of ints"):
        s.bind("f", (_t(), value), {})


def test_fixed_size_int_list():
    s = parse("Tensor (Tensor x, IntList[2] kernel_size) => F")
    assert s.bind("f", (_t(), 3), {})[1] == (3, 3)
    assert s.bind("f", (_t(), (2, 4)), {})[1] == (2, 4)
    with pytest.raises(SignatureMismatch, match=r"f\(\): argument 'kernel_size' must have 2 elements, got 3"):
        s.bind("f", (_t(), (1, 2, 3)), {})


def test_shape_varargs_are_packed():
    s = parse("Tensor (Shape size, *, DataType dtype=None) => Zeros")
    assert s.bind("zeros", (2, 3), {}) == [(2, 3), None]
    assert s.bind("zeros", (2, 3, 4), {"dtype": flow.int32}) == [(2, 3, 4), flow.int32]
    assert s.bind("zeros", ((2, 3),), {}) == [(2, 3), None]
    assert s.bind("zeros", ([2, 3],), {}) == [(2, 3), None]
    assert s.bind("zeros", (5,), {}) == [(5,), None]
    assert s.bind("zeros", (np.int32(2), 3), {}) == [(2, 3), None]
    with pytest.raises(SignatureMismatch, match=r"zeros\(\) takes 1 positional argument\(s\) but 2 were given"):
        s.bind("zeros", (2, 3.0), {})
    with pytest.raises(SignatureMismatch, match=r"takes 1 positional argument\(s\) but 2 were given"):
        s.bind("zeros", ((2,), 3), {})
    s2 = parse("Tensor (Tensor input, Shape shape) => Reshape")
    x = _t()
    assert s2.bind("reshape", (x, 1, 2), {}) == [x, (1, 2)]
    assert s2.bind("reshape", (x, -1), {}) == [x, (-1,)]


def test_signature_is_reusable_and_unchanged_by_binding():
    s = Signature("Tensor (Tensor x, IntList dim=[0]) => F")
    x = _t()
    assert s.bind("f", (x,), {}) == [x, (0,)]
    assert s.bind("f", (x, 1), {}) == [x, (1,)]
    assert s.bind("f", (x,), {}) == [x, (0,)]


def test_the_functional_api_table_names_each_function_once():
    # a dict literal keeps the last of two equal keys silently: two sweeps adding the same name would hide one
    import ast
    import collections
    import pathlib

    import oneflow_lite.functors.functional_api as api
    tree = ast.parse(pathlib.Path(api.__file__).read_text())
    table = next(n.value for n in tree.body if isinstance(n, ast.AnnAssign) and n.target.id == "FUNCTIONAL_API")
    names = []
    for key, value in zip(table.keys, table.values):
        if key is None:  # a ``**{...}`` block: its names, computed
            names += list(eval(compile(ast.Expression(value), api.__file__, "eval"), vars(api)))  # noqa: S307
        else:
            names.append(key.value)
    counts = collections.Counter(names)
    assert [k for k, c in counts.items() if c > 1] == []


def test_dict_literals_of_the_coverage_test_name_each_group_once():
    import ast
    import collections
    import pathlib

    tree = ast.parse((pathlib.Path(__file__).parent / "test_torch_coverage.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = collections.Counter(k.value for k in node.keys if isinstance(k, ast.Constant))
            assert [k for k, c in keys.items() if c > 1] == []
