"""dtypes (NumPy and proto mapping, PyTorch promotion) and interned devices."""

import itertools
import pickle

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite._proto import attr_value_pb2 as pb
from oneflow_lite.dispatch.dispatch_key import DispatchKey as K
from oneflow_lite.framework import device as device_mod
from oneflow_lite.framework import dtype as dt

B, U8, I8, I16, I32, I64, F16, F32, F64 = (flow.bool, flow.uint8, flow.int8, flow.int16, flow.int32, flow.int64,
                                           flow.float16, flow.float32, flow.float64)


# ---- dtypes ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("d, np_dtype, proto, name", [
    (B, np.bool_, pb.kBool, "bool"), (U8, np.uint8, pb.kUInt8, "uint8"), (I8, np.int8, pb.kInt8, "int8"),
    (I16, np.int16, pb.kInt16, "int16"), (I32, np.int32, pb.kInt32, "int32"), (I64, np.int64, pb.kInt64, "int64"),
    (F16, np.float16, pb.kFloat16, "float16"), (F32, np.float32, pb.kFloat, "float32"),
    (F64, np.float64, pb.kDouble, "float64"),
])
def test_dtype_maps_to_numpy_and_proto(d, np_dtype, proto, name):
    assert d.np_dtype == np.dtype(np_dtype) and d.proto == proto and d.name == name
    assert dt.from_numpy_dtype(np_dtype) is d and dt.from_numpy_dtype(np.dtype(np_dtype)) is d
    assert dt.from_proto(proto) is d
    assert d.itemsize == np.dtype(np_dtype).itemsize
    assert repr(d) == f"oneflow_lite.{name}"
    assert pickle.loads(pickle.dumps(d)) is d


def test_dtype_flags_and_aliases():
    assert [d.is_floating_point for d in dt.ALL_DTYPES] == [False] * 6 + [True] * 3
    assert [d.is_signed for d in dt.ALL_DTYPES] == [False, False, True, True, True, True, True, True, True]
    assert flow.float is F32 and flow.double is F64 and flow.half is F16 and flow.int is I32 and flow.long is I64
    assert isinstance(F32, flow.dtype)


def test_unsupported_numpy_dtype():
    with pytest.raises(TypeError, match=r"^unsupported NumPy dtype complex64; supported: bool, uint8, int8, int16, "
                                        r"int32, int64, float16, float32, float64$"):
        dt.from_numpy_dtype(np.complex64)
    with pytest.raises(TypeError, match=r"unsupported NumPy dtype 'nonsense'"):
        dt.from_numpy_dtype("nonsense")
    with pytest.raises(ValueError, match="unknown DataType proto value 99"):
        dt.from_proto(99)


def test_default_dtype():
    assert flow.get_default_dtype() is F32
    flow.set_default_dtype(F64)
    try:
        assert flow.get_default_dtype() is F64 and dt.scalar_dtype(1.5) is F64
    finally:
        flow.set_default_dtype(F32)
    with pytest.raises(TypeError, match=r"set_default_dtype: expected a floating dtype, got oneflow_lite.int32"):
        flow.set_default_dtype(I32)
    assert flow.get_default_dtype() is F32


# PyTorch's torch.promote_types, written out by hand.
PROMOTE = [
    (B, B, B), (B, U8, U8), (B, I8, I8), (B, I16, I16), (B, I32, I32), (B, I64, I64), (B, F16, F16), (B, F32, F32),
    (B, F64, F64),
    (U8, U8, U8), (U8, I8, I16), (U8, I16, I16), (U8, I32, I32), (U8, I64, I64), (U8, F16, F16), (U8, F32, F32),
    (U8, F64, F64),
    (I8, I8, I8), (I8, I16, I16), (I8, I32, I32), (I8, I64, I64), (I8, F16, F16), (I8, F32, F32), (I8, F64, F64),
    (I16, I16, I16), (I16, I32, I32), (I16, I64, I64), (I16, F16, F16), (I16, F32, F32), (I16, F64, F64),
    (I32, I32, I32), (I32, I64, I64), (I32, F16, F16), (I32, F32, F32), (I32, F64, F64),
    (I64, I64, I64), (I64, F16, F16), (I64, F32, F32), (I64, F64, F64),
    (F16, F16, F16), (F16, F32, F32), (F16, F64, F64),
    (F32, F32, F32), (F32, F64, F64),
    (F64, F64, F64),
]


def test_promotion_table_covers_every_pair():
    assert len(PROMOTE) == 45
    assert {frozenset((a, b)) for a, b, _ in PROMOTE} == {frozenset(p) for p in
                                                         itertools.combinations_with_replacement(dt.ALL_DTYPES, 2)}


@pytest.mark.parametrize("a, b, expected", PROMOTE)
def test_promote_types(a, b, expected):
    assert flow.promote_types(a, b) is expected
    assert flow.promote_types(b, a) is expected


@pytest.mark.parametrize("dims, zero_dim, scalars, expected", [
    (I32, (), (2.5,), F32),        # an int tensor with a float scalar: the default float dtype
    (F16, (), (2.5,), F16),        # a scalar does not raise a tensor's dtype within its category
    (I8, (), (1000,), I8),         # ... and an int8 tensor stays int8 (it wraps, as in PyTorch)
    (U8, (), (True,), U8),
    (B, (), (3,), I64),            # a bool tensor with an int scalar: int64
    (B, (), (1.0,), F32),
    (I32, (I64,), (), I32),        # a 0-d tensor of the same category does not promote
    (F32, (F64,), (2,), F32),
    (I32, (F64,), (), F64),        # a 0-d tensor of a higher category gives its own dtype
    (I32, (F16,), (), F16),
    (B, (U8, I8), (), I16),
    (None, (I16, U8), (), I16),    # only 0-d tensors: they promote among themselves
    (None, (), (2,), I64),         # only scalars
    (None, (), (True, 2.0), F32),
    (I64, (), (np.float64(1.0),), F32),
])
def test_result_type(dims, zero_dim, scalars, expected):
    assert dt.result_type(dims, zero_dim, scalars) is expected


# PyTorch's combine_categories(higher, lower), joining dims over combine(0-d, scalars): a floating higher wins;
# a bool higher (or a floating lower) goes through promote_types, which refuses bool with uint16 / 32 / 64.
U16, U32, U64 = flow.uint16, flow.uint32, flow.uint64


@pytest.mark.parametrize("dims, zero_dim, scalars, expected", [
    (U16, (B,), (), U16),          # higher uint16, lower bool: the higher wins without promote_types
    (U64, (B,), (True,), U64),
    (B, (I8,), (2.5,), F32),       # 0-d int8 with a float scalar: float32; a bool higher takes it
    (B, (I8,), (3,), I8),          # 0-d int8 over an int scalar (same category): int8; bool higher -> int8
    (None, (B,), (3,), I64),       # bool 0-d (higher) with an int scalar: promote_types -> int64
    (None, (U32,), (True,), U32),
    (U16, (F16,), (), F16),        # a floating lower: promote_types(uint16, float16)
    (I32, (F16,), (2.5,), F16),    # 0-d float16 over the float scalar; int32 dims promote to float16
    (F16, (U64,), (3,), F16),      # a floating higher wins
])
def test_result_type_combines_categories_as_pytorch(dims, zero_dim, scalars, expected):
    assert dt.result_type(dims, zero_dim, scalars) is expected


@pytest.mark.parametrize("dims, zero_dim, scalars", [
    (B, (U16,), ()), (B, (U64,), ()), (B, (U32,), (3,)), (B, (U16, B), ()), (None, (B, U16), ()),
])
def test_result_type_refuses_bool_with_limited_unsigned_as_pytorch(dims, zero_dim, scalars):
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported"):
        dt.result_type(dims, zero_dim, scalars)


def test_ops_promote_a_0d_tensor_as_pytorch():
    bools, flags = flow.tensor([True, False]), flow.tensor([3, 4], dtype=U16)
    calls = [lambda: flow.copysign(flow.tensor(0, dtype=U64), bools),
             lambda: flow.add(bools, flow.tensor(3, dtype=U16)), lambda: flow.mul(bools, flow.tensor(3, dtype=U32)),
             lambda: flow.eq(bools, flow.tensor(3, dtype=U32)),
             lambda: flow.result_type(bools, flow.tensor(1, dtype=U64))]
    for call in calls:
        with pytest.raises(RuntimeError, match=r"^(copysign|add|mul|eq|result_type): Promotion for uint16, uint32, "
                                               r"uint64 types is not supported, attempted to promote bool and uint"):
            call()
    out = flow.bitwise_or(flags, flow.tensor(True))  # higher uint16, lower bool: no promote_types, no refusal
    assert out.dtype is U16 and out.tolist() == [3, 5]
    assert flow.result_type(flags, flow.tensor(True)) is U16 and flow.result_type(flow.tensor(True), flags) is U16
    assert flow.mul(flow.tensor([2, 3], dtype=U32), flow.tensor(True)).tolist() == [2, 3]


def test_promotion_matches_torch_result_type_pairwise():
    torch = pytest.importorskip("torch")
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "uint16", "uint32",
             "uint64"]
    operands = [(n, nd) for n in names for nd in (0, 1)]

    def result(m, a, b):
        make = lambda n, nd: m.zeros((2,) if nd else (), dtype=getattr(m, n))
        try:
            return str(m.result_type(make(*a), b if not isinstance(b, tuple) else make(*b))).split(".")[-1]
        except RuntimeError:
            return "refused"
    for a in operands:
        for b in operands + [True, 1, 1.5]:
            assert result(torch, a, b) == result(flow, a, b), (a, b)


def test_scalar_dtype():
    assert dt.scalar_dtype(True) is B and dt.scalar_dtype(np.bool_(False)) is B
    assert dt.scalar_dtype(3) is I64 and dt.scalar_dtype(np.int8(3)) is I64
    assert dt.scalar_dtype(3.0) is F32 and dt.scalar_dtype(np.float16(3)) is F32
    with pytest.raises(TypeError, match="expected a bool, int or float scalar, got str"):
        dt.scalar_dtype("3")


# ---- devices ---------------------------------------------------------------------------------------
def test_devices_are_interned():
    cpu = flow.device("cpu")
    assert flow.device("cpu:0") is cpu and flow.device("cpu", 0) is cpu and flow.device(cpu) is cpu
    assert flow.device() is cpu
    meta = flow.device("meta")
    assert flow.device("meta:0") is meta and meta is not cpu
    assert (cpu.type, cpu.index, str(cpu), repr(cpu)) == ("cpu", 0, "cpu:0", "device(type='cpu', index=0)")
    assert (meta.type, str(meta), repr(meta)) == ("meta", "meta", "device(type='meta', index=0)")
    assert pickle.loads(pickle.dumps(cpu)) is cpu
    assert cpu.key_set == 1 << K.CPU and meta.key_set == 1 << K.Meta
    assert cpu.device_type.has_storage and not meta.device_type.has_storage
    assert {cpu: 1}[flow.device("cpu:0")] == 1


@pytest.mark.parametrize("spec, error, message", [
    ("cuda", RuntimeError, r"device: expected one of cpu, meta device type \(optionally followed by ':0'\), "
                           r"got 'cuda'"),
    ("gpu", RuntimeError, r"expected one of cpu, meta device type .*got 'gpu'"),
    ("CPU", RuntimeError, r"got 'CPU'"),
    ("", RuntimeError, r"got ''"),
    ("cpu:1", RuntimeError, r"device: cpu has only device index 0, got 'cpu:1'"),
    ("cuda:0", RuntimeError, r"got 'cuda:0'"),
    ("cpu:x", ValueError, r"device: invalid device string 'cpu:x'; the index must be a non-negative integer"),
    ("cpu:-1", ValueError, r"invalid device string 'cpu:-1'"),
    (3, TypeError, r"device: expected a string such as 'cpu' or 'cpu:0', got int"),
    (None, TypeError, r"got NoneType"),
])
def test_bad_devices(spec, error, message):
    with pytest.raises(error, match=message):
        flow.device(spec)


def test_bad_device_index_arguments():
    with pytest.raises(RuntimeError, match=r"device: cpu has only device index 0, got 'cpu'"):
        flow.device("cpu", 1)
    with pytest.raises(ValueError, match=r"device: index given twice in 'cpu:0'"):
        flow.device("cpu:0", 0)
    with pytest.raises(ValueError, match=r"device: index given twice for cpu:0"):
        flow.device(flow.device("cpu"), 0)


def test_register_device_type_errors_and_round_trip():
    with pytest.raises(ValueError, match=r"register_device_type: name must be an identifier, got 'my-dev'"):
        device_mod.register_device_type("my-dev")
    with pytest.raises(ValueError, match=r"register_device_type: <DispatchKey.Autograd: 11> is not a backend key; "
                                         r"expected one of \['Meta', 'CPU', 'CUDA', 'PrivateUse1'\]"):
        device_mod.register_device_type("my_dev", K.Autograd)
    with pytest.raises(ValueError, match=r"register_device_type: device type 'cpu' is already registered"):
        device_mod.register_device_type("cpu", K.PrivateUse1)
    with pytest.raises(ValueError, match=r"register_device_type: CPU already serves device type 'cpu'"):
        device_mod.register_device_type("my_dev", K.CPU)
    assert "my_dev" not in device_mod.device_types()
    dev_type = device_mod.register_device_type("my_dev", K.CUDA)
    try:
        d = flow.device("my_dev")
        assert d.device_type is dev_type and d.key_set == 1 << K.CUDA and str(d) == "my_dev:0"
        assert device_mod.device_type("my_dev") is dev_type
    finally:
        device_mod.unregister_device_type("my_dev")
    with pytest.raises(RuntimeError, match="got 'my_dev'"):
        flow.device("my_dev")
    with pytest.raises(ValueError, match=r"unregister_device_type: device type 'my_dev' is not registered"):
        device_mod.unregister_device_type("my_dev")
    with pytest.raises(ValueError, match=r"unregister_device_type: 'cpu' is built in"):
        device_mod.unregister_device_type("cpu")
    with pytest.raises(RuntimeError, match=r"unknown device type 'my_dev'; known: cpu, meta"):
        device_mod.device_type("my_dev")
