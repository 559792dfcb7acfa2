"""Hostile files: what ``flow.load`` and ``nn.Graph.load`` do with files they should not trust.

Truncated at every length, bit-flipped anywhere, of another format (random bytes, a random .npz, a foreign
pickle, a pickle that would run code, a ZIP with path-traversal names), or with an .npy header declaring a
huge shape, or a ZIP bomb: each raises a clear error naming the file at load (a RuntimeError; the
weights-only refusal is PyTorch's ``pickle.UnpicklingError``), runs no code, writes no file and allocates
no more than the file holds (Note [Reading untrusted archives] in oneflow_lite/framework/archive.py).
"""

import io
import pickle
import time
import zipfile

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.interpreters.eager_local import set_allocation_limit

CLEAR = (RuntimeError, pickle.UnpicklingError)


def _state_dict_bytes() -> bytes:
    model = flow.nn.Sequential(flow.nn.Linear(3, 4), flow.nn.ReLU(), flow.nn.Linear(4, 2))
    buf = io.BytesIO()
    flow.save(model.state_dict(), buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def saved() -> bytes:
    return _state_dict_bytes()


def _load(data: bytes, tmp_path, name="f.pt"):
    path = tmp_path / name
    path.write_bytes(data)
    return flow.load(path)


def _npy(shape, dtype="<f8", data=b"", version=(1, 0)) -> bytes:
    """An .npy entry whose header declares ``shape`` and ``dtype``, followed by ``data``."""
    buf = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    writer = np.lib.format.write_array_header_1_0 if version == (1, 0) else np.lib.format.write_array_header_2_0
    writer(buf, header)
    return buf.getvalue() + data


def _zip(entries: dict, compression=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


def _with_entries(saved: bytes, **replace) -> bytes:
    """The archive ``saved`` with some entries' raw bytes replaced (``name=bytes``)."""
    src = zipfile.ZipFile(io.BytesIO(saved))
    entries = {i.filename: src.read(i.filename) for i in src.infolist()}
    entries.update({f"{k}.npy": v for k, v in replace.items()})
    return _zip(entries)


# ---- flow.load ----------------------------------------------------------------------------------------------
def test_every_truncation_raises_naming_the_file(saved, tmp_path):
    path = tmp_path / "cut.pt"
    for keep in range(0, len(saved), 7):
        path.write_bytes(saved[:keep])
        with pytest.raises(RuntimeError, match="flow.load: '.*cut.pt'"):
            flow.load(path)


def test_bit_flips_load_or_raise_clearly(saved, tmp_path):
    rng = np.random.default_rng(0)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(300):
        data = bytearray(saved)
        i = int(rng.integers(len(data)))
        data[i] ^= 1 << int(rng.integers(8))
        try:
            result = _load(bytes(data), tmp_path)
        except CLEAR:
            outcomes["refused"] += 1
        else:  # a flip in a name or a header field that still parses: a dict of tensors or a clear value
            assert isinstance(result, dict)
            outcomes["loaded"] += 1
    assert outcomes["refused"] > 200, outcomes


@pytest.mark.parametrize("data, what", [
    (b"", "an empty file"),
    (np.random.default_rng(1).bytes(512), "it starts with"),
    (pickle.dumps({"w": [1.0, 2.0]}), "it starts with"),
    (b"PK\x03\x04garbage", "truncated or corrupt"),
])
def test_foreign_files_raise_naming_the_file(data, what, tmp_path):
    with pytest.raises(RuntimeError, match=f"flow.load: '.*f.pt'.*{what}"):
        _load(data, tmp_path)


def test_a_random_npz_is_not_a_flow_file(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, a=np.ones(3), b=np.arange(4))
    with pytest.raises(RuntimeError, match="not a file written by flow.save .*no '__manifest__' entry"):
        _load(buf.getvalue(), tmp_path)


class _Opener:
    """A pickle that would create a file when loaded."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(saved, tmp_path):
    marker = tmp_path / "pwned"
    evil = np.frombuffer(pickle.dumps({"w": _Opener(marker)}, protocol=4), np.uint8)
    data = _with_entries(saved, __pickle__=_npy(evil.shape, "|u1", evil.tobytes()))
    with pytest.raises(pickle.UnpicklingError, match=r"(?s)Weights only load failed.*GLOBAL (io|builtins)\.open"):
        _load(data, tmp_path)
    assert not marker.exists()


def test_path_traversal_names_write_nothing(saved, tmp_path):
    inner = tmp_path / "inner"
    inner.mkdir()
    entries = {"../escaped.npy": _npy((2,), "<f8", bytes(16)), "/abs/escaped.npy": _npy((1,), "<f8", bytes(8))}
    src = zipfile.ZipFile(io.BytesIO(saved))
    entries.update({i.filename: src.read(i.filename) for i in src.infolist()})
    result = _load(_zip(entries), inner)  # the extra entries are keys nobody reads; nothing is extracted
    assert set(result) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["f.pt", "inner"]


@pytest.mark.parametrize("shape", [(2 ** 40,), (2 ** 20, 2 ** 20), (1_000_000_000,), (2 ** 62, 4)])
def test_a_header_declaring_a_huge_shape_fails_at_once(saved, shape, tmp_path):
    data = _with_entries(saved, **{"0": _npy(shape, "<f4", bytes(48))})
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"flow.load: '.*f.pt' is truncated or corrupt .*declares shape"):
        _load(data, tmp_path)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("descr", ["|O", "<M8[s]", "[('a', '<f4')]", "<c16"])
def test_entries_of_other_dtypes_are_refused(saved, descr, tmp_path):
    dtype = np.dtype(eval(descr) if descr.startswith("[") else descr)
    data = _with_entries(saved, **{"0": _npy((1,), dtype.descr if dtype.fields else descr, bytes(dtype.itemsize))})
    with pytest.raises(RuntimeError, match="truncated or corrupt .*only numbers and bools are read"):
        _load(data, tmp_path)


def test_a_zip_bomb_is_refused_before_it_is_inflated(saved, tmp_path):
    bomb = _npy((64 * 2 ** 20,), "|u1", bytes(64 * 2 ** 20))  # 64 MiB of zeros, about 64 KiB deflated
    src = zipfile.ZipFile(io.BytesIO(saved))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i in src.infolist():
            z.writestr(i.filename, src.read(i.filename))
        z.writestr("bomb.npy", bomb)
    assert len(buf.getvalue()) < 2 ** 20
    previous = set_allocation_limit(16 * 2 ** 20)
    try:
        with pytest.raises(RuntimeError, match="declares .* bytes of arrays, more than the allocation limit"):
            _load(buf.getvalue(), tmp_path)
    finally:
        set_allocation_limit(previous)


def test_a_lying_record_does_not_become_a_tensor(saved, tmp_path):
    """A pickle record declaring another shape than its array, or a huge one without data on cpu."""
    records = [("tensor", 0, "0", "float32", (2 ** 40,), "cpu:0", False, False),
               ("tensor", 0, None, "float32", (2 ** 40,), "cpu:0", False, False),
               ("tensor", 0, "0", "no_such_dtype", (4, 3), "cpu:0", False, False)]
    for record in records:
        class _Pickler(pickle.Pickler):
            def persistent_id(self, obj, record=record):
                return record if obj == "T" else None

        buf = io.BytesIO()
        _Pickler(buf, protocol=4).dump({"w": "T"})
        evil = np.frombuffer(buf.getvalue(), np.uint8)
        with pytest.raises(RuntimeError, match="flow.load: '.*f.pt'"):
            _load(_with_entries(saved, __pickle__=_npy(evil.shape, "|u1", evil.tobytes())), tmp_path)


# ---- nn.Graph.load --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved_graph(tmp_path_factory) -> bytes:
    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = flow.nn.Linear(3, 2)

        def build(self, x):
            return self.lin(x).relu()

    g = G()
    g(flow.ones(4, 3))
    path = tmp_path_factory.mktemp("graph") / "g.npz"
    g.save(path)
    return path.read_bytes()


def _load_graph(data, tmp_path):
    path = tmp_path / "g.npz"
    path.write_bytes(data)
    return flow.nn.Graph.load(path)


def test_graph_truncations_raise_naming_the_file(saved_graph, tmp_path):
    for keep in range(0, len(saved_graph), 11):
        with pytest.raises(RuntimeError, match="flow.nn.Graph.load: '.*g.npz' is not a valid saved graph"):
            _load_graph(saved_graph[:keep], tmp_path)


def test_graph_bit_flips_load_or_raise_clearly(saved_graph, tmp_path):
    rng = np.random.default_rng(1)
    for _ in range(200):
        data = bytearray(saved_graph)
        i = int(rng.integers(len(data)))
        data[i] ^= 1 << int(rng.integers(8))
        try:
            _load_graph(bytes(data), tmp_path)
        except RuntimeError:
            pass


def test_a_random_npz_is_not_a_saved_graph(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, a=np.ones(3))
    with pytest.raises(RuntimeError, match="not a valid saved graph: the archive has no '__meta__'"):
        _load_graph(buf.getvalue(), tmp_path)


def test_a_graph_whose_header_declares_a_huge_shape_fails_clearly(saved_graph, tmp_path):
    data = _with_entries(saved_graph, var0=_npy((2 ** 40,), "<f4", bytes(24)))
    with pytest.raises(RuntimeError, match="not a valid saved graph"):
        _load_graph(data, tmp_path)
