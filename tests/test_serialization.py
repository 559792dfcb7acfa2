"""flow.save / flow.load: round trips, the documented file format, and errors for bad objects and bad files."""

import copy
import io
import json
import math
import os
import pickle
import struct
import zipfile
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.dtype import from_numpy_dtype
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta


def _cpu(array):
    """A cpu tensor holding exactly ``array`` (bypassing the creation functions, so no value is converted)."""
    return Tensor._make(array, make_meta(array.shape, from_numpy_dtype(array.dtype), flow.device("cpu")))


def _round_trip(obj, tmp_path, **load_kwargs):
    path = tmp_path / "obj.pt"
    flow.save(obj, path)
    return flow.load(path, **load_kwargs)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


# ---- tensors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("np_dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64,
                                      np.float16, np.float32, np.float64])
def test_tensor_round_trip_is_bit_identical_for_every_dtype(np_dtype, tmp_path):
    rng = np.random.default_rng(1)
    if np_dtype is np.bool_:
        a = rng.random((3, 4)) > 0.5
    elif np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        a = rng.integers(info.min, info.max, (3, 4), dtype=np_dtype, endpoint=True)
    else:
        a = (rng.standard_normal((3, 4)) * 100).astype(np_dtype)
        a[0, 0], a[0, 1], a[0, 2], a[0, 3] = np.nan, np.inf, -np.inf, -0.0
    t = _cpu(a)
    back = _round_trip(t, tmp_path)
    assert isinstance(back, Tensor) and back.dtype is t.dtype and back.shape == (3, 4)
    assert back.device == flow.device("cpu") and not back.requires_grad
    assert back.numpy().dtype == np.dtype(np_dtype)
    assert _bits(back.numpy()) == _bits(a)


def test_float16_values_and_nan_payloads_survive(tmp_path):
    bits = np.array([0x7E01, 0x3C00, 0x0001, 0x8000, 0x7BFF], dtype=np.uint16)  # nan payload, 1.0, tiny, -0, max
    a = bits.view(np.float16)
    back = _round_trip(_cpu(a), tmp_path)
    assert back.numpy().view(np.uint16).tolist() == bits.tolist()


def test_zero_dim_empty_and_non_contiguous_tensors(tmp_path):
    scalar = flow.tensor(2.5)
    empty = flow.zeros((0, 3), dtype=flow.int32)
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    transposed = _cpu(base.T)  # a non-contiguous view
    back = _round_trip([scalar, empty, transposed], tmp_path)
    assert back[0].shape == () and back[0].dtype is flow.float32 and back[0].item() == 2.5
    assert back[1].shape == (0, 3) and back[1].dtype is flow.int32 and back[1].numel() == 0
    assert back[2].shape == (4, 3)
    np.testing.assert_array_equal(back[2].numpy(), [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]])


def test_requires_grad_is_kept_and_the_loaded_tensor_is_a_leaf(tmp_path):
    w = flow.tensor([[1.0, -2.0]], requires_grad=True)
    y = (w * 3).sum()
    y.backward()
    nonleaf = w * 2
    back = _round_trip({"w": w, "y": nonleaf, "c": flow.tensor([1.0])}, tmp_path)
    assert back["w"].requires_grad and back["w"].is_leaf and back["w"].grad is None
    assert back["y"].requires_grad and back["y"].is_leaf and back["y"].grad_fn is None
    np.testing.assert_array_equal(back["y"].numpy(), [[2.0, -4.0]])
    assert not back["c"].requires_grad


def test_loaded_tensors_own_their_memory(tmp_path):
    t = flow.tensor([1.0, 2.0])
    back = _round_trip(t, tmp_path)
    back.add_(1.0)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(back.numpy(), [2.0, 3.0])


def test_a_tensor_saved_twice_loads_as_one_object_distinct_tensors_stay_distinct(tmp_path):
    a = flow.tensor([1.0, 2.0])
    view = a[0:1]
    back = _round_trip({"x": a, "again": [a], "view": view}, tmp_path)
    assert back["x"] is back["again"][0]
    assert back["view"] is not back["x"]
    back["x"].zero_()
    assert back["view"].numpy().tolist() == [1.0]  # views load as independent copies (documented)


def test_parameters_load_as_parameters(tmp_path):
    from oneflow_lite.nn.parameter import Parameter

    p = Parameter(flow.tensor([1.0, 2.0]))
    frozen = Parameter(flow.tensor([3.0]), requires_grad=False)
    back = _round_trip([p, frozen], tmp_path)
    assert type(back[0]) is Parameter and back[0].requires_grad
    assert type(back[1]) is Parameter and not back[1].requires_grad
    np.testing.assert_array_equal(back[1].numpy(), [3.0])


# ---- containers and scalars -------------------------------------------------------------------------
def test_state_dict_keeps_its_type_key_order_and_values(tmp_path):
    sd = OrderedDict()
    sd["layer2.weight"] = flow.tensor([[0.5, -0.25], [1.0, 2.0]])
    sd["layer1.bias"] = flow.tensor([0.125])
    sd["bn.num_batches_tracked"] = flow.tensor(7)
    back = _round_trip(sd, tmp_path)
    assert type(back) is OrderedDict and list(back) == ["layer2.weight", "layer1.bias", "bn.num_batches_tracked"]
    np.testing.assert_array_equal(back["layer2.weight"].numpy(), [[0.5, -0.25], [1.0, 2.0]])
    assert back["bn.num_batches_tracked"].dtype is flow.int64 and back["bn.num_batches_tracked"].item() == 7


def test_optimizer_style_state_dict_with_int_keys_and_tuples(tmp_path):
    sd = {"state": {0: {"momentum_buffer": flow.tensor([0.1, 0.2]), "step": 3}, 1: {}},
          "param_groups": [{"lr": 0.01, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False,
                            "foreach": None, "name": "güte ✓"}]}
    back = _round_trip(sd, tmp_path)
    assert type(back) is dict and list(back["state"]) == [0, 1] and back["state"][1] == {}
    assert back["state"][0]["step"] == 3 and type(back["state"][0]["step"]) is int
    group = back["param_groups"][0]
    assert group == {"lr": 0.01, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False, "foreach": None,
                     "name": "güte ✓"}
    assert type(group["betas"]) is tuple and type(group["params"]) is list
    np.testing.assert_array_equal(back["state"][0]["momentum_buffer"].numpy(), np.float32([0.1, 0.2]))


def test_python_scalars_keys_and_special_values(tmp_path):
    obj = {
        (1, "a"): 2**70, None: -0.0, 2.5: True, False: "x",
        "floats": [math.inf, -math.inf, math.nan, 1e-310, 0.1],
        "nested": ([], (), {}, [None, [1, [2, [3]]]]),
    }
    back = _round_trip(obj, tmp_path)
    assert back[(1, "a")] == 2**70 and type(back[(1, "a")]) is int
    assert math.copysign(1.0, back[None]) == -1.0
    assert back[2.5] is True and back[False] == "x"
    f = back["floats"]
    assert f[0] == math.inf and f[1] == -math.inf and math.isnan(f[2]) and f[3] == 1e-310 and f[4] == 0.1
    assert back["nested"] == ([], (), {}, [None, [1, [2, [3]]]]) and type(back["nested"]) is tuple


def test_numpy_values_dtypes_devices_and_sizes(tmp_path):
    arr = np.arange(6, dtype=np.uint16).reshape(2, 3)
    obj = {"arr": arr, "same": arr, "f32": np.float32(1.5), "b": np.bool_(True), "i8": np.int8(-3),
           "dtype": flow.float16, "device": flow.device("cpu"), "size": flow.Size([2, 3])}
    back = _round_trip(obj, tmp_path)
    assert back["arr"].dtype == np.uint16 and back["arr"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["same"] is back["arr"]
    assert type(back["f32"]) is np.float32 and back["f32"] == 1.5
    assert type(back["b"]) is np.bool_ and type(back["i8"]) is np.int8 and back["i8"] == -3
    assert back["dtype"] is flow.float16 and back["device"] is flow.device("cpu")
    assert type(back["size"]) is flow.Size and back["size"] == (2, 3)


def test_meta_tensors_round_trip_without_data(tmp_path):
    m = flow.empty((2, 5), dtype=flow.float16, device="meta")
    back = _round_trip([m, m], tmp_path)
    assert back[0] is back[1]
    assert back[0].device == flow.device("meta") and back[0].shape == (2, 5) and back[0].dtype is flow.float16
    with pytest.raises(RuntimeError, match="saved on 'meta' holds no data and cannot be loaded onto 'cpu:0'"):
        flow.load(tmp_path / "obj.pt", map_location="cpu")


def test_map_location_moves_tensors(tmp_path):
    path = tmp_path / "t.pt"
    flow.save({"a": flow.tensor([1.0, 2.0])}, path)
    for loc in ("meta", flow.device("meta"), {"cpu": "meta"}, {"cpu:0": flow.device("meta")}):
        back = flow.load(path, map_location=loc)
        assert back["a"].device == flow.device("meta") and back["a"].shape == (2,)
    assert flow.load(path, map_location={"cuda:0": "meta"})["a"].device == flow.device("cpu")
    with pytest.raises(RuntimeError, match="saved on 'cpu:0' cannot be placed on 'cuda'.*map_location='cpu'"):
        flow.load(path, map_location="cuda")
    with pytest.raises(TypeError, match="map_location must be None, a device, a device string, a dict .* got int"):
        flow.load(path, map_location=3)


def test_callable_map_location_as_pytorch(tmp_path):
    """PyTorch's ``map_location=lambda storage, loc: storage`` idiom: the tensor goes where the returned storage
    is (cpu), and the callable sees PyTorch's location name."""
    path = tmp_path / "t.pt"
    flow.save({"a": flow.tensor([1.0, 2.0])}, path)
    seen = []
    back = flow.load(path, map_location=lambda storage, loc: seen.append(loc) or storage)
    np.testing.assert_array_equal(back["a"].numpy(), [1.0, 2.0])
    assert back["a"].device == flow.device("cpu") and seen == ["cpu"]
    assert flow.load(path, map_location=lambda storage, loc: None)["a"].device == flow.device("cpu")
    with pytest.raises(TypeError, match="map_location returned str; a callable map_location must return a storage"):
        flow.load(path, map_location=lambda storage, loc: "cpu")


def test_weights_only_is_accepted(tmp_path):
    path = tmp_path / "t.pt"
    flow.save([1, flow.tensor([1])], path)
    assert flow.load(path, weights_only=True)[0] == 1
    assert flow.load(path, weights_only=False)[0] == 1
    with pytest.raises(TypeError, match="weights_only must be a bool or None, got str"):
        flow.load(path, weights_only="yes")


# ---- the file -----------------------------------------------------------------------------------------
def test_the_file_is_a_documented_npz_archive(tmp_path):
    path = tmp_path / "model.pt"  # no .npz suffix is added
    flow.save({"w": flow.tensor([[1.0, 2.0]], requires_grad=True), "n": 3}, str(path))
    assert sorted(os.listdir(tmp_path)) == ["model.pt"]
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == ["0", "__manifest__", "__pickle__"]
        manifest = json.loads(z["__manifest__"].tobytes().decode("utf-8"))
        np.testing.assert_array_equal(z["0"], np.float32([[1.0, 2.0]]))
        records = []

        class Reader(pickle.Unpickler):  # the pickle, read with a plain unpickler: tensors are persistent ids
            def persistent_load(self, pid):
                records.append(pid)
                return "<tensor>"
        root = Reader(io.BytesIO(z["__pickle__"].tobytes())).load()
    assert manifest == {"format": "oneflow_lite.save", "version": 2}
    assert root == {"w": "<tensor>", "n": 3}
    assert records == [("tensor", 0, "0", "float32", (1, 2), "cpu:0", True, False)]
    with zipfile.ZipFile(path) as zf:  # uncompressed
        assert {info.compress_type for info in zf.infolist()} == {zipfile.ZIP_STORED}


def test_files_of_format_version_1_still_load(tmp_path):
    p = tmp_path / "v1.npz"
    tensor_node = {"type": "tensor", "id": 0, "array": "0", "dtype": "float32", "shape": [2], "device": "cpu:0",
                   "requires_grad": True, "parameter": False}
    _write_manifest(p, {"format": "oneflow_lite.save", "version": 1,
                        "root": {"type": "dict", "items": [["w", tensor_node], ["n", 3]]}},
                    **{"0": np.float32([1.0, 2.0])})
    back = flow.load(p)
    assert back["n"] == 3 and back["w"].requires_grad and back["w"].tolist() == [1.0, 2.0]


def test_file_objects_and_overwriting(tmp_path):
    buf = io.BytesIO()
    flow.save([flow.tensor([1, 2, 3])], buf)
    buf.seek(0)
    assert flow.load(buf)[0].tolist() == [1, 2, 3]
    path = tmp_path / "x.pt"
    flow.save("first", path)
    flow.save("second", path)
    assert flow.load(path) == "second"
    with open(path, "rb") as f:
        assert flow.load(f) == "second"


# ---- any picklable object; errors when saving --------------------------------------------------------------
class Config:  # a user class, picklable by reference
    def __init__(self, width, tags):
        self.width = width
        self.tags = tags
        self.init = flow.tensor([1.0, 2.0])


def test_any_picklable_object_round_trips_with_weights_only_false(tmp_path):
    cfg = Config(8, {"a", "b"})
    cyclic = [1]
    cyclic.append({"self": cyclic})
    back = _round_trip({"cfg": cfg, "c": 1 + 2j, "s": {1, 2}, "cyclic": cyclic}, tmp_path, weights_only=False)
    assert type(back["cfg"]) is Config and back["cfg"].width == 8 and back["cfg"].tags == {"a", "b"}
    assert back["cfg"].init.tolist() == [1.0, 2.0]
    assert back["c"] == 1 + 2j and back["s"] == {1, 2}
    assert back["cyclic"][1]["self"] is back["cyclic"]


def test_a_whole_module_saves_and_loads_with_weights_only_false(tmp_path):
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(3, 4), flow.nn.ReLU(), flow.nn.Linear(4, 2))
    path = tmp_path / "model.pt"
    flow.save(model, path)
    back = flow.load(path, weights_only=False)
    x = flow.randn(5, 3)
    np.testing.assert_array_equal(back(x).numpy(), model(x).numpy())
    assert [n for n, _ in back.named_parameters()] == [n for n, _ in model.named_parameters()]


@pytest.mark.parametrize("obj, what", [
    ({"f": lambda: 0}, "Can't pickle <function <lambda>"),
    ((namedtuple("P", "x y")(1, 2),), "Can't pickle <class 'test_serialization.P'>"),
    ({"o": np.array([1, "a"], dtype=object)}, "a NumPy array of dtype object cannot be saved"),
])
def test_unpicklable_objects_raise_before_anything_is_written(obj, what, tmp_path):
    with pytest.raises(TypeError, match=f"flow.save: the object cannot be pickled \\(PicklingError: {what}"):
        flow.save(obj, tmp_path / "x.pt")
    assert os.listdir(tmp_path) == []  # nothing written


def test_a_failed_save_leaves_the_existing_file_unchanged(tmp_path):
    path = tmp_path / "x.pt"
    flow.save({"v": 1}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match="flow.save"):
        flow.save({"v": lambda: 1}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["x.pt"]


# ---- weights_only loading ------------------------------------------------------------------------------
def test_weights_only_is_the_default_and_refuses_other_globals_naming_them(tmp_path):
    path = tmp_path / "cfg.pt"
    flow.save({"cfg": Config(4, set())}, path)
    with pytest.raises(pickle.UnpicklingError, match=r"(?s)Weights only load failed.*Unsupported global: GLOBAL "
                                                     r"test_serialization.Config was not an allowed global by "
                                                     r"default. Please use `flow.serialization.add_safe_globals"
                                                     r"\(\[Config\]\)`"):
        flow.load(path)
    with flow.serialization.safe_globals([Config]):
        assert flow.load(path)["cfg"].width == 4
    with pytest.raises(pickle.UnpicklingError):  # the block's allowance is gone
        flow.load(path)
    flow.serialization.add_safe_globals([Config])
    try:
        assert Config in flow.serialization.get_safe_globals()
        assert flow.load(path, weights_only=True)["cfg"].width == 4
    finally:
        flow.serialization.clear_safe_globals()


def test_weights_only_loads_counters_and_bytearrays_as_pytorch_allows_them(tmp_path):
    """MultiStepLR keeps its milestones in a collections.Counter: a checkpoint holding scheduler.state_dict() loads
    with the default weights_only=True (PyTorch's allowed globals include Counter and bytearray)."""
    import collections

    path = tmp_path / "sched.pt"
    flow.save({"milestones": collections.Counter([2, 4, 4]), "raw": bytearray(b"ab")}, path)
    back = flow.load(path)
    assert type(back["milestones"]) is collections.Counter and back["milestones"] == {2: 1, 4: 2}
    assert type(back["raw"]) is bytearray and back["raw"] == b"ab"
    model = flow.nn.Linear(2, 2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    scheduler = flow.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.1)
    flow.save(scheduler.state_dict(), path)
    fresh = flow.optim.lr_scheduler.MultiStepLR(flow.optim.SGD(model.parameters(), lr=0.1), milestones=[9])
    fresh.load_state_dict(flow.load(path))
    assert fresh.milestones == collections.Counter([2, 4])


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > " + _Evil.target,))


def test_a_file_that_would_run_code_is_refused_by_default_and_runs_nothing(tmp_path):
    _Evil.target = str(tmp_path / "pwned")
    path = tmp_path / "evil.pt"
    flow.save({"x": _Evil()}, path)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL posix.system"):
        flow.load(path)
    assert not os.path.exists(_Evil.target)


def test_pickle_and_deepcopy_of_tensors_and_views():
    t = flow.arange(6.0).reshape(2, 3)
    view = t[:, 1]
    for x, expected in ((t, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]), (view, [1.0, 4.0])):
        back = pickle.loads(pickle.dumps(x))
        assert back.tolist() == expected and back.dtype is flow.float32
        assert copy.deepcopy(x).tolist() == expected
    w = flow.tensor([1.0], requires_grad=True)
    assert pickle.loads(pickle.dumps(w)).requires_grad


# ---- errors when loading ------------------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "good.pt"
    flow.save(OrderedDict(w=flow.randn(16, 16), b=flow.zeros(16)), path)
    return path


@pytest.mark.parametrize("keep", [0.5, 0.9, -1])
def test_truncated_file_raises_naming_the_path(saved, keep, tmp_path):
    data = saved.read_bytes()
    bad = tmp_path / "cut.pt"
    bad.write_bytes(data[:int(len(data) * keep)] if keep > 0 else data[:keep])
    with pytest.raises(RuntimeError, match=f"flow.load: '{bad}' is truncated or corrupt"):
        flow.load(bad)


def test_random_bytes_and_foreign_files_raise_naming_the_path(tmp_path):
    rnd = tmp_path / "random.bin"
    rnd.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(RuntimeError, match=f"flow.load: '{rnd}' is not a file written by flow.save \\(expected a "
                                           "NumPy .npz archive, but it starts with"):
        flow.load(rnd)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(RuntimeError, match="is not a file written by flow.save .*but an empty file"):
        flow.load(empty)
    npy = tmp_path / "a.npy"
    np.save(npy, np.arange(3))
    with pytest.raises(RuntimeError, match="is not a file written by flow.save"):
        flow.load(npy)
    npz = tmp_path / "plain.npz"
    np.savez(npz, x=np.arange(3))
    with pytest.raises(RuntimeError, match=f"'{npz}' is a ZIP archive but not a file written by flow.save \\(it "
                                           "has no '__manifest__' entry\\)"):
        flow.load(npz)
    other = tmp_path / "other.npz"
    np.savez(other, __manifest__=np.frombuffer(b'{"format": "something else", "root": 1}', np.uint8))
    with pytest.raises(RuntimeError, match="its manifest does not say format 'oneflow_lite.save'"):
        flow.load(other)
    with pytest.raises(FileNotFoundError):
        flow.load(tmp_path / "missing.pt")


def _write_manifest(path, manifest, **arrays):
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    np.savez(path, __manifest__=np.frombuffer(text.encode(), np.uint8), **arrays)


def test_corrupt_manifests_raise_clear_errors(tmp_path):
    p = tmp_path / "bad.npz"
    _write_manifest(p, "{not json")
    with pytest.raises(RuntimeError, match="is corrupt: its manifest is not valid JSON"):
        flow.load(p)
    _write_manifest(p, {"format": "oneflow_lite.save", "version": 99, "root": 1})
    with pytest.raises(RuntimeError, match="has format version 99; this version of oneflow_lite reads versions 1 and 2"):
        flow.load(p)
    tensor_node = {"type": "tensor", "id": 0, "array": "0", "dtype": "float32", "shape": [2], "device": "cpu:0",
                   "requires_grad": False, "parameter": False}
    _write_manifest(p, {"format": "oneflow_lite.save", "version": 1, "root": tensor_node})
    with pytest.raises(RuntimeError, match="is corrupt: the manifest names an array '0' that the archive does not"):
        flow.load(p)
    _write_manifest(p, {"format": "oneflow_lite.save", "version": 1, "root": tensor_node}, **{"0": np.zeros(3)})
    with pytest.raises(RuntimeError, match=r"is corrupt: array '0' is float64\[3\] but the manifest says float32\[2\]"):
        flow.load(p)
    _write_manifest(p, {"format": "oneflow_lite.save", "version": 1, "root": {"type": "pickle"}})
    with pytest.raises(RuntimeError, match="is corrupt: unknown entry type 'pickle'"):
        flow.load(p)
    _write_manifest(p, {"format": "oneflow_lite.save", "version": 1, "root": {"type": "list"}})
    with pytest.raises(RuntimeError, match="is corrupt: bad 'list' entry"):
        flow.load(p)


def test_lazy_tensors_cannot_be_saved(tmp_path):
    path = tmp_path / "lazy.pt"

    @flow.nn.Graph.trace
    def capture(x):
        y = x * 2
        flow.save({"y": y}, path)
        return y

    with pytest.raises(RuntimeError, match=r"flow.save: a lazy tensor .* of a graph being captured cannot be saved; "
                                           "only eager tensors have values to save"):
        capture(flow.tensor([1.0]))
    assert not path.exists()


def test_a_flipped_data_byte_fails_the_checksum(saved, tmp_path):
    data = bytearray(saved.read_bytes())
    with zipfile.ZipFile(saved) as zf:
        info = zf.getinfo("0.npy")
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)  # the local file header
    data_end = info.header_offset + 30 + name_len + extra_len + info.compress_size
    data[data_end - 5] ^= 0xFF  # inside the first array's last values
    bad = tmp_path / "flipped.pt"
    bad.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match=f"flow.load: '{bad}' is truncated or corrupt \\(BadZipFile: Bad CRC-32"):
        flow.load(bad)


def test_bad_file_arguments():
    with pytest.raises(TypeError, match="flow.save: f must be a path or a writable binary file object, got int"):
        flow.save(1, 3)
    with pytest.raises(TypeError, match="flow.load: f must be a path or a readable binary file object, got int"):
        flow.load(3)


@pytest.mark.skipif(not (hasattr(flow.nn, "Linear") and hasattr(flow, "optim")), reason="needs flow.nn and flow.optim")
def test_checkpoint_of_a_model_and_its_optimizer(tmp_path):
    model = flow.nn.Sequential(flow.nn.Linear(4, 3), flow.nn.BatchNorm1d(3), flow.nn.Linear(3, 2))
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss = model(flow.randn(5, 4)).square().sum()
    loss.backward()
    opt.step()
    ck = _round_trip({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, tmp_path)
    sd = model.state_dict()
    assert list(ck["model"]) == list(sd) and ck["epoch"] == 3
    for k, v in sd.items():
        assert ck["model"][k].dtype is v.dtype and _bits(ck["model"][k].numpy()) == _bits(v.numpy())
    osd = opt.state_dict()
    assert list(ck["optim"]["state"]) == list(osd["state"]) and ck["optim"]["param_groups"] == osd["param_groups"]
    for i, state in osd["state"].items():
        buf = state["momentum_buffer"]
        assert _bits(ck["optim"]["state"][i]["momentum_buffer"].numpy()) == _bits(buf.numpy())
    fresh = flow.nn.Sequential(flow.nn.Linear(4, 3), flow.nn.BatchNorm1d(3), flow.nn.Linear(3, 2))
    fresh.load_state_dict(ck["model"])
    for k, v in fresh.state_dict().items():
        assert _bits(v.numpy()) == _bits(sd[k].numpy())
