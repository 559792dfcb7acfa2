"""``flow.save`` / ``flow.load``: any picklable object, its tensors stored as arrays beside the pickle, and a
loader that by default runs no code from the file (PyTorch 2.6's ``weights_only=True``).

::

    flow.save(model.state_dict(), "model.pt")
    model.load_state_dict(flow.load("model.pt"))            # weights_only=True: tensors, containers, numbers
    flow.save(model, "whole.pt")                             # a whole module, by reference to its class
    model = flow.load("whole.pt", weights_only=False)       # only for files you trust: it may run code
    with flow.serialization.safe_globals([MyConfig]):       # or allow one class for weights_only loads
        cfg = flow.load("cfg.pt")

Note [Save file format]
A saved file is an uncompressed NumPy ``.npz`` archive (a ZIP file, readable by ``numpy.load``) holding

- ``__manifest__``: a uint8 array, the UTF-8 bytes of the JSON object ``{"format": "oneflow_lite.save",
  "version": 2}``;
- ``__pickle__``: a uint8 array, the object pickled (protocol 4) with every tensor, NumPy array and NumPy
  scalar replaced by a *persistent id* (``pickle``'s mechanism for objects stored outside the pickle):
  ``("tensor", k, array, dtype, shape, device, requires_grad, is_parameter)`` (``k`` numbers the tensor
  objects), ``("ndarray", array)`` or ``("numpy_scalar", array)``, where ``array`` names an entry of the
  archive (``None`` for a tensor on a device without storage, such as meta);
- ``0``, ``1``, ...: one array per saved tensor / NumPy value, in C order.

Persistent ids are memoised on both sides: a tensor object that occurs several times loads as one object; distinct
tensors that share memory (views) load as independent copies. A tensor's ``.grad`` and autograd history are
not saved: it loads as a leaf with its ``requires_grad``. Files of version 1 (a JSON manifest, no pickle)
still load. A tensor saved from a global tensor has a ninth field, its layout ``(device type, ranks, SBPs)``
(ranks as given to ``flow.placement``, SBPs as ``"S(0)"``, ``"B"``, ``"P"``); its array holds the logical value.

Note [Global tensors in saved files]
A global tensor is one logical tensor laid over several processes, so saving and loading it are collective
(OneFlow's ``global_dst_rank`` / ``global_src_rank``): every rank calls ``flow.save(obj, f,
global_dst_rank=r)`` with the same object; each global tensor is gathered to rank ``r`` (boxed to
broadcast on the placement ``[r]``) and only rank ``r`` writes the file, recording the tensor's placement
and SBP. ``flow.load(f, global_src_rank=r)``, called by every rank, reads the file on rank ``r`` only; the
pickle (metadata: tensors are persistent ids) and the archive's index of array shapes and dtypes are
broadcast, every rank unpickles the same bytes, NumPy values are broadcast, and each tensor becomes a
global tensor sent from rank ``r`` to its saved placement and SBP (when those ranks exist in this job;
otherwise, and for a tensor saved local, broadcast on the placement ``[r]``, OneFlow's rule), or to
``map_location`` when that is a ``flow.placement`` (broadcast there). A file rank ``r`` cannot read raises on
every rank. ``nn.Module.load_state_dict`` then boxes each value to its parameter's placement and SBP.

Note [Weights-only loading]
``flow.load`` unpickles with a restricted unpickler unless ``weights_only=False``: the only globals it
resolves are the containers pickle needs (``collections.OrderedDict``, ``collections.Counter`` (MultiStepLR's
state), ``set``, ``frozenset``, ``bytearray``, ``complex``, ``slice``), oneflow_lite's ``dtype``, ``device`` and
``Size``, and what ``add_safe_globals`` / ``safe_globals`` allowed. Any other global (a class, a function) is refused before it is looked up, with
PyTorch's message naming it and the call that would allow it, so a file from an untrusted source cannot run
code. ``weights_only=False`` is the plain unpickler (PyTorch's ``torch.load`` before 2.6).

Note [Directory paths]
OneFlow saves into directories, and its scripts often create one (``os.makedirs(path)``) before
``flow.save(model.state_dict(), path)`` and ``flow.load(path)``. A path naming an existing directory therefore
holds the archive as ``<path>/snapshot.npz`` (``DIRECTORY_ENTRY``), and ``flow.load`` of a directory reads that
entry. ``flow.save(graph, path)`` of an ``nn.Graph`` makes ``path`` a directory holding the graph's job and
variables (``nn.Graph.save``), as OneFlow does for serving; ``nn.Graph.load(path)`` runs it.
"""

from __future__ import annotations

import contextlib
import copyreg
import io
import json
import math
import os
import pickle
import threading
from collections import Counter, OrderedDict

import numpy as np

from oneflow_lite import functional as F
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework import sbp as sbp_mod
from oneflow_lite.framework.archive import read_npz
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET, make_global_meta
from oneflow_lite.framework.placement import placement as Placement
from oneflow_lite.framework.storage import UntypedStorage
from oneflow_lite.framework.tensor import LAZY_KEY_SET, Tensor
from oneflow_lite.framework.tensor_meta import Size
from oneflow_lite.framework.world import world
from oneflow_lite.graph import Graph
from oneflow_lite.functors.creation import from_numpy
from oneflow_lite.interpreters.eager_local import get_allocation_limit
from oneflow_lite.nn.parameter import Parameter

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals", "save"]

_FORMAT = "oneflow_lite.save"
_VERSION = 2
_MANIFEST = "__manifest__"
_PICKLE = "__pickle__"
_PROTOCOL = 4
_ZIP_MAGIC = b"PK\x03\x04"
_DTYPES = {d.name: d for d in dtypes.ALL_DTYPES + dtypes.STORAGE_DTYPES}
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
DIRECTORY_ENTRY = "snapshot.npz"  # Note [Directory paths]


# ---- pickling tensors and flow objects ------------------------------------------------------------------
def _c_order(array: np.ndarray) -> np.ndarray:
    """``array``, copied to C order when it is not (0-d arrays stay 0-d, unlike ``np.ascontiguousarray``)."""
    return array if array.flags.c_contiguous else array.copy(order="C")


def _rebuild_tensor(array, requires_grad):
    t = from_numpy(array)
    return t.requires_grad_(True) if requires_grad else t


def _reduce_tensor(t: Tensor):
    """``pickle`` / ``copy`` of a plain Tensor: its values (a C-ordered copy; views are copied) and
    ``requires_grad``; it comes back as a leaf on cpu."""
    if t._key_set & LAZY_KEY_SET:
        raise RuntimeError(f"cannot pickle a lazy tensor ({t._array.describe()}): it has no value")
    return _rebuild_tensor, (_c_order(t.detach().cpu().numpy()), t.requires_grad)


def _dtype_from_name(name):
    return _DTYPES[name]


def _device_from_name(name):
    return Device(name)


copyreg.pickle(Tensor, _reduce_tensor)
copyreg.pickle(dtypes.dtype, lambda d: (_dtype_from_name, (d.name,)))
copyreg.pickle(Device, lambda d: (_device_from_name, (str(d),)))


class _Pickler(pickle.Pickler):
    """Stores tensors and NumPy values as archive arrays (Note [Save file format])."""

    def __init__(self, file, global_dst_rank=None):
        super().__init__(file, protocol=_PROTOCOL)
        self.global_dst_rank = global_dst_rank
        self.arrays: dict[str, np.ndarray] = {}
        self.ids: dict[int, tuple] = {}  # id(tensor or ndarray) -> its persistent id: one object stays one
        self.keep_alive: list = []  # the objects of self.ids, so that their ids stay unique during the dump

    def add_array(self, array: np.ndarray) -> str:
        name = str(len(self.arrays))
        self.arrays[name] = _c_order(array)
        return name

    def persistent_id(self, obj):
        t = type(obj)
        if t is Tensor or t is Parameter or t is np.ndarray:
            pid = self.ids.get(id(obj))
            if pid is None:
                if t is np.ndarray:
                    if obj.dtype.hasobject:
                        raise pickle.PicklingError("a NumPy array of dtype object cannot be saved")
                    pid = ("ndarray", self.add_array(obj))
                else:
                    pid = self.tensor_id(obj)
                self.ids[id(obj)] = pid
                self.keep_alive.append(obj)
            return pid
        if isinstance(obj, np.generic):
            if obj.dtype.hasobject:
                raise pickle.PicklingError("a NumPy scalar of dtype object cannot be saved")
            return ("numpy_scalar", self.add_array(np.asarray(obj)))
        return None

    def tensor_id(self, t: Tensor):
        meta = t._meta
        if t._key_set & LAZY_KEY_SET:
            raise RuntimeError(f"flow.save: a lazy tensor ({t._array.describe()}) of a graph being captured cannot "
                               f"be saved; only eager tensors have values to save")
        record = ("tensor", len(self.ids), None, meta.dtype.name, tuple(meta.shape), str(meta.device),
                  t.requires_grad, type(t) is Parameter)
        if t._key_set & GLOBAL_KEY_SET:
            return self.global_tensor_id(t, record)
        array = self.add_array(t.detach().cpu().numpy()) if meta.device.device_type.has_storage else None
        return record[:2] + (array,) + record[3:]

    def global_tensor_id(self, t: Tensor, record: tuple):
        """Note [Global tensors in saved files]: the logical value gathered to the destination rank."""
        m, dst = t._meta, self.global_dst_rank
        if dst is None:
            raise RuntimeError(f"flow.save: a global tensor of shape {list(m.shape)} on {m.placement} with sbp "
                               f"{sbp_mod.format_nd_sbp(m.nd_sbp)} needs global_dst_rank=r: every rank calls "
                               f"flow.save(obj, f, global_dst_rank=r) and rank r writes the gathered tensors")
        whole = t.detach().to_global(Placement(m.placement.type, [dst]), sbp_mod.broadcast)
        array = None if whole._array is None else self.add_array(whole._array)
        ranks = tuple(tuple(r) if isinstance(r, list) else r for r in m.placement.ranks)  # hashable: memo keys
        layout = (m.placement.type, ranks, tuple(s.short() for s in m.nd_sbp))
        return record[:2] + (array,) + record[3:] + (layout,)


def _check_rank(rank, what: str) -> None:
    size = world().size
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < size:
        raise ValueError(f"{what} must be a rank of this job of {size} process(es) (an int in 0..{size - 1}), "
                         f"got {rank!r}")


def save(obj, f, *, global_dst_rank=None, save_as_external_data=False) -> None:
    """Save ``obj`` (any picklable object: a tensor, a state dict, a whole module, an optimizer's state, ...) to
    ``f``, a path (an existing directory: Note [Directory paths]) or a writable binary file object, in the format
    of Note [Save file format]. An object that cannot be pickled raises before anything is written; a path is
    written atomically (a failed save leaves an existing file unchanged). With ``global_dst_rank=r`` every rank
    calls it, global tensors are gathered to rank ``r`` and only rank ``r`` writes (Note [Global tensors in
    saved files]). ``save_as_external_data`` (OneFlow's) is accepted: tensors are always stored beside the
    pickle."""
    if global_dst_rank is not None:
        _check_rank(global_dst_rank, "flow.save: global_dst_rank")
    if isinstance(obj, Graph):
        if global_dst_rank is None or world().rank == global_dst_rank:
            path = _path(f, "save", "writable")
            os.makedirs(path, exist_ok=True)
            obj.save(path)
        return
    buf = io.BytesIO()
    pickler = _Pickler(buf, global_dst_rank)
    try:
        pickler.dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise TypeError(f"flow.save: the object cannot be pickled ({type(e).__name__}: {e})") from None
    if global_dst_rank is not None and world().rank != global_dst_rank:
        return  # the other ranks took part in gathering the global tensors; rank global_dst_rank writes
    manifest = json.dumps({"format": _FORMAT, "version": _VERSION})
    arrays = {_MANIFEST: np.frombuffer(manifest.encode(), np.uint8),
              _PICKLE: np.frombuffer(buf.getvalue(), np.uint8), **pickler.arrays}
    if hasattr(f, "write"):
        np.savez(f, **arrays)
        return
    path = _in_directory(_path(f, "save", "writable"))
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    try:
        with open(tmp, "wb") as out:
            np.savez(out, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# ---- safe globals (Note [Weights-only loading]) --------------------------------------------------------
_DEFAULT_SAFE = {
    ("collections", "OrderedDict"): OrderedDict, ("collections", "Counter"): Counter,  # MultiStepLR's milestones
    ("builtins", "set"): set, ("builtins", "frozenset"): frozenset, ("builtins", "bytearray"): bytearray,
    ("builtins", "complex"): complex, ("builtins", "slice"): slice,
    (__name__, "_dtype_from_name"): _dtype_from_name, (__name__, "_device_from_name"): _device_from_name,
    (__name__, "_rebuild_tensor"): _rebuild_tensor,
    ("oneflow_lite.framework.tensor_meta", "Size"): Size,
    ("oneflow_lite.nn.parameter", "_rebuild_parameter"): None,  # filled below: Parameter pickles through it
}
_safe_lock = threading.Lock()
_user_safe: dict[tuple[str, str], object] = {}
_scoped = threading.local()


def _qualified(obj) -> tuple[str, str]:
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], str):  # (obj, "module.name") as in PyTorch
        name = obj[1]
        module, _, qualname = name.rpartition(".")
        return module, qualname
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)):
        raise TypeError(f"add_safe_globals: expected classes or functions (or (obj, 'module.name') pairs), got "
                        f"{obj!r}")
    return module, qualname


def add_safe_globals(safe_globals: list) -> None:
    """Allow the classes / functions in ``safe_globals`` in ``weights_only`` loads from now on."""
    entries = {_qualified(g): (g[0] if isinstance(g, tuple) else g) for g in safe_globals}
    with _safe_lock:
        _user_safe.update(entries)


def get_safe_globals() -> list:
    """The globals allowed by :func:`add_safe_globals` (not those of an open ``safe_globals`` block)."""
    with _safe_lock:
        return list(_user_safe.values())


def clear_safe_globals() -> None:
    with _safe_lock:
        _user_safe.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list):
    """Allow ``safe_globals`` in ``weights_only`` loads inside the block (this thread only)."""
    entries = {_qualified(g): (g[0] if isinstance(g, tuple) else g) for g in safe_globals}
    stack = getattr(_scoped, "stack", None)
    if stack is None:
        stack = _scoped.stack = []
    stack.append(entries)
    try:
        yield
    finally:
        stack.pop()


def _allowed(module: str, name: str):
    key = (module, name)
    if key in _DEFAULT_SAFE:
        return True, _DEFAULT_SAFE[key]
    for entries in reversed(getattr(_scoped, "stack", ())):
        if key in entries:
            return True, entries[key]
    with _safe_lock:
        if key in _user_safe:
            return True, _user_safe[key]
    return False, None


def _weights_only_message(module: str, name: str) -> str:
    short = name.rpartition(".")[2]
    return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
            "steps only if you trust the source of the checkpoint. (1) Re-running `flow.load` with `weights_only` "
            "set to `False` will likely succeed, but it can result in arbitrary code execution. Do it only if you "
            "got the file from a trusted source. (2) Alternatively, to load with `weights_only=True` please check "
            "the recommended steps in the following error message.\n"
            f"WeightsUnpickler error: Unsupported global: GLOBAL {module}.{name} was not an allowed global by "
            f"default. Please use `flow.serialization.add_safe_globals([{short}])` or the "
            f"`flow.serialization.safe_globals([{short}])` context manager to allowlist this global if you trust "
            f"this class/function.")


class _Unpickler(pickle.Unpickler):
    """Resolves persistent ids to tensors and arrays; restricted to safe globals when ``weights_only``."""

    def __init__(self, file, arrays, name, map_location, weights_only):
        super().__init__(file)
        self.arrays = arrays
        self.name = name
        self.map_location = map_location
        self.weights_only = weights_only
        self.loaded = {}  # persistent id -> the object loaded for it (one object stays one)

    def find_class(self, module, name):
        if not self.weights_only:
            return super().find_class(module, name)
        ok, value = _allowed(module, name)
        if not ok:
            raise pickle.UnpicklingError(_weights_only_message(module, name))
        return value if value is not None else super().find_class(module, name)

    def array(self, key) -> np.ndarray:
        a = self.arrays.get(key) if isinstance(key, str) and not key.startswith("__") else None
        if a is None:
            raise _corrupt(self.name, f"the pickle names an array {key!r} that the archive does not hold")
        return a

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid or pid[0] not in ("tensor", "ndarray", "numpy_scalar"):
            raise _corrupt(self.name, f"unknown persistent id {pid!r:.80}")
        if pid[0] == "numpy_scalar":
            return self.array(pid[1])[()]
        try:
            obj = self.loaded.get(pid)
        except TypeError:
            raise _corrupt(self.name, f"bad record {pid!r:.120}") from None
        if obj is None:
            obj = self.loaded[pid] = self.array(pid[1]).copy() if pid[0] == "ndarray" else self.tensor(pid)
        return obj

    def tensor(self, pid) -> Tensor:
        try:
            _, _, key, dtype_name, shape, device, requires_grad, is_parameter = pid[:8]
            if len(pid) > 9:
                raise ValueError(len(pid))
            dtype = _DTYPES[dtype_name]
            shape = tuple(int(d) for d in shape)
        except (ValueError, KeyError, TypeError):
            raise _corrupt(self.name, f"bad tensor record {pid!r:.120}") from None
        return _make_tensor(self.name, key, None if key is None else self.array(key), dtype, shape, device,
                            _target_device(self.name, self.map_location, device), requires_grad, is_parameter,
                            "its tensor record")


def _corrupt(name: str, why: str) -> RuntimeError:
    return RuntimeError(f"flow.load: '{name}' is corrupt: {why}")


def _target_device(name: str, map_location, saved: str) -> Device:
    loc = map_location
    if isinstance(loc, dict):
        loc = loc.get(saved, saved)
    elif callable(loc):
        loc = _call_map_location(name, loc, saved)
    target = saved if loc is None else loc
    try:
        return Device(target)
    except (RuntimeError, ValueError, TypeError) as e:
        raise RuntimeError(f"flow.load: '{name}': a tensor saved on '{saved}' cannot be placed on {target!r} ({e}); "
                           f"pass map_location='cpu' to load it on cpu") from None


def _call_map_location(name: str, fn, saved: str):
    """PyTorch's callable ``map_location(storage, location)``: called with a cpu storage and the saved device's
    name (``"cpu"``, ``"cuda:0"``); the tensor goes to the device of the storage it returns (None: the saved
    device)."""
    location = "cpu" if saved.split(":")[0] == "cpu" else saved
    result = fn(UntypedStorage(np.empty(0, np.uint8), Device("cpu")), location)
    if result is None:
        return saved
    device = getattr(result, "device", None)
    if device is None:
        raise TypeError(f"flow.load: '{name}': map_location returned {type(result).__name__}; a callable "
                        f"map_location must return a storage (or None), as map_location(storage, location)")
    return device


def _make_tensor(name, key, array, dtype, shape, saved_device, device, requires_grad, is_parameter,
                 record="the manifest") -> Tensor:
    """The tensor of archive array ``key`` (``array``; None for a tensor saved without data), checked against
    the dtype and shape its ``record`` gives."""
    if array is None:
        if device.device_type.has_storage:
            raise RuntimeError(f"flow.load: '{name}': a tensor saved on '{saved_device}' holds no data and cannot be "
                               f"loaded onto '{device}'")
        t = F.empty(shape, dtype=dtype, device=device)
    else:
        if array.dtype.kind == "V" and array.dtype.itemsize == dtype.itemsize:
            array = array.view(dtype.np_dtype)  # bfloat16 (ml_dtypes) comes back from .npy as raw 2-byte records
        if array.dtype != dtype.np_dtype or array.shape != shape:
            raise _corrupt(name, f"array {key!r} is {array.dtype}{list(array.shape)} but {record} says "
                                 f"{dtype.name}{list(shape)}")
        t = from_numpy(array).to(device)
    if is_parameter:
        return Parameter(t, requires_grad=bool(requires_grad))
    return t.requires_grad_(True) if requires_grad else t


class _V1Decoder:
    """Rebuilds an object from a version-1 file: a JSON manifest node and the arrays (no pickle)."""

    def __init__(self, name: str, arrays: dict, map_location):
        self.name = name
        self.arrays = arrays
        self.map_location = map_location
        self.memo: dict = {}  # ("tensor", id) or an ndarray's array name -> the loaded object

    def node(self, n):
        if n is None or isinstance(n, (bool, int, float, str)):
            return n
        if not isinstance(n, dict) or not isinstance(n.get("type"), str):
            raise _corrupt(self.name, f"unexpected manifest entry {n!r:.80}")
        kind = n["type"]
        try:
            if kind in ("list", "tuple", "Size"):
                items = [self.node(x) for x in n["items"]]
                return items if kind == "list" else tuple(items) if kind == "tuple" else Size(items)
            if kind in ("dict", "OrderedDict"):
                pairs = [(self.node(k), self.node(v)) for k, v in n["items"]]
                return dict(pairs) if kind == "dict" else OrderedDict(pairs)
            if kind == "tensor":
                key = ("tensor", n["id"])
                if key not in self.memo:
                    self.memo[key] = self.tensor(n)
                return self.memo[key]
            if kind == "ndarray":
                return self.memo.setdefault(n["array"], self.array(n["array"]))
            if kind == "numpy_scalar":
                return self.array(n["array"])[()]
            if kind == "float":
                return _NON_FINITE[n["value"]]
            if kind == "dtype":
                return _DTYPES[n["name"]]
            if kind == "device":
                return Device(n["name"])
        except (KeyError, TypeError, ValueError) as e:
            raise _corrupt(self.name, f"bad {kind!r} entry {n!r:.120} ({type(e).__name__}: {e})") from None
        raise _corrupt(self.name, f"unknown entry type {kind!r}")

    def array(self, name) -> np.ndarray:
        a = self.arrays.get(name)
        if a is None:
            raise _corrupt(self.name, f"the manifest names an array {name!r} that the archive does not hold")
        return a

    def tensor(self, n: dict) -> Tensor:
        array = None if n["array"] is None else self.array(n["array"])
        return _make_tensor(self.name, n["array"], array, _DTYPES[n["dtype"]], tuple(n["shape"]), n["device"],
                            _target_device(self.name, self.map_location, n["device"]), n["requires_grad"],
                            n["parameter"])


def _path(f, op: str, mode: str) -> str:
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"flow.{op}: f must be a path or a {mode} binary file object, got {type(f).__name__}")
    return os.fspath(f)


def _device_name(spec) -> str:
    """``spec``'s canonical name (``"cpu"`` -> ``"cpu:0"``), or ``spec`` itself for a device not registered here."""
    try:
        return str(Device(spec))
    except (RuntimeError, ValueError, TypeError):
        return spec


def _read_archive(f, name: str) -> dict:
    """The arrays of the .npz archive in the open binary file ``f``; a RuntimeError naming ``name`` when
    ``f`` is not one (foreign) or cannot be read (truncated or corrupt)."""
    start = f.tell()
    magic = f.read(4)
    f.seek(start)
    if magic != _ZIP_MAGIC:
        shown = "an empty file" if not magic else f"it starts with {magic!r}"
        raise RuntimeError(f"flow.load: '{name}' is not a file written by flow.save (expected a NumPy .npz "
                           f"archive, but {shown})")
    arrays = read_npz(f, name, "flow.load", get_allocation_limit())
    if _MANIFEST not in arrays:
        raise RuntimeError(f"flow.load: '{name}' is a ZIP archive but not a file written by flow.save (it "
                           f"has no '{_MANIFEST}' entry)")
    return arrays


def _open_archive(f) -> tuple:
    """``(name, arrays)`` of the flow.save file ``f`` (a path or a readable, seekable binary file object)."""
    if hasattr(f, "read"):
        name = str(getattr(f, "name", f))
        return name, _read_archive(f, name)
    name = _path(f, "load", "readable")
    if os.path.isdir(name) and not os.path.exists(_in_directory(name)):
        raise FileNotFoundError(f"flow.load: '{name}' is a directory without the '{DIRECTORY_ENTRY}' that "
                                f"flow.save writes into a directory")
    name = _in_directory(name)
    with open(name, "rb") as fh:
        return name, _read_archive(fh, name)


def _in_directory(path: str) -> str:
    """The file that ``path`` names: its ``DIRECTORY_ENTRY`` when it is a directory (Note [Directory paths])."""
    return os.path.join(path, DIRECTORY_ENTRY) if os.path.isdir(path) else path


def _manifest_version(name: str, arrays: dict):
    """The format version of the archive (1 with its manifest's root, or 2), or a RuntimeError naming ``name``."""
    try:
        manifest = json.loads(arrays[_MANIFEST].tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _corrupt(name, f"its manifest is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        raise RuntimeError(f"flow.load: '{name}' is not a file written by flow.save (its manifest does not "
                           f"say format '{_FORMAT}')")
    version = manifest.get("version")
    if version == 1 and "root" in manifest:
        return 1, manifest["root"]
    if version != _VERSION:
        raise RuntimeError(f"flow.load: '{name}' has format version {version!r}; this version of oneflow_lite "
                           f"reads versions 1 and {_VERSION}")
    if _PICKLE not in arrays:
        raise _corrupt(name, f"it has no '{_PICKLE}' entry")
    return _VERSION, None


def _unpickle(unpickler, name: str):
    try:
        return unpickler.load()
    except pickle.UnpicklingError as e:
        if "Weights only load failed" in str(e):
            raise
        raise _corrupt(name, f"its pickle cannot be read (UnpicklingError: {e})") from None
    except (EOFError, ValueError, IndexError, KeyError) as e:
        raise _corrupt(name, f"its pickle cannot be read ({type(e).__name__}: {e})") from None


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, global_src_rank=None,
         **pickle_load_args):
    """Load an object saved by :func:`save` from ``f`` (a path or a readable, seekable binary file object).

    ``map_location`` places the tensors: None keeps each tensor's saved device, a device or device string
    moves them all there, a dict maps saved device strings (``"cpu:0"``) to devices, a callable
    ``(storage, location) -> storage`` (PyTorch's) places each tensor on its returned storage's device. ``weights_only`` (None
    means True, as in PyTorch 2.6) loads with the restricted unpickler of Note [Weights-only loading];
    ``weights_only=False`` unpickles anything, running the code a pickle names: only for trusted files.
    ``pickle_module`` and ``mmap`` are accepted for PyTorch compatibility (the file holds its arrays
    uncompressed; they are read into memory). A file that is not a flow.save file, or is truncated or
    corrupt, raises a RuntimeError naming it. With ``global_src_rank=r`` every rank calls it, rank ``r``
    reads the file and the tensors come back global (Note [Global tensors in saved files]; ``map_location``
    may then be a ``flow.placement``).
    """
    if weights_only is not None and not isinstance(weights_only, bool):
        raise TypeError(f"flow.load: weights_only must be a bool or None, got {type(weights_only).__name__}")
    if global_src_rank is not None:
        return _load_global(f, map_location, weights_only is not False, global_src_rank)
    if not (map_location is None or isinstance(map_location, (str, Device, dict)) or callable(map_location)):
        raise TypeError(f"flow.load: map_location must be None, a device, a device string, a dict of device "
                        f"strings or a callable (storage, location) -> storage, got {type(map_location).__name__}")
    if isinstance(map_location, dict):
        map_location = {_device_name(k): v for k, v in map_location.items()}
    name, arrays = _open_archive(f)
    version, root = _manifest_version(name, arrays)
    if version == 1:
        return _V1Decoder(name, arrays, map_location).node(root)
    unpickler = _Unpickler(io.BytesIO(arrays[_PICKLE].tobytes()), arrays, name, map_location,
                           weights_only is not False)
    return _unpickle(unpickler, name)


# ---- global tensors (Note [Global tensors in saved files]) -------------------------------------------------
def _read_on_source(f, src: int):
    """On rank ``src``: ``(name, arrays, header)``, the header being what the other ranks need (or the error)."""
    try:
        name, arrays = _open_archive(f)
        version, _ = _manifest_version(name, arrays)
        if version == 1:
            raise RuntimeError(f"flow.load: '{name}' has format version 1, which global_src_rank does not read; "
                               f"load it without global_src_rank")
    except Exception as e:  # every rank raises it (the others would wait for the file otherwise)
        return None, None, ("error", e)
    index = {k: (a.dtype.str, a.shape) for k, a in arrays.items() if k != _MANIFEST}
    return name, arrays, ("ok", name, index)


def _load_global(f, map_location, weights_only: bool, src: int):
    _check_rank(src, "flow.load: global_src_rank")
    if not (map_location is None or isinstance(map_location, Placement)):
        raise TypeError(f"flow.load: with global_src_rank, map_location must be None or a flow.placement, got "
                        f"{type(map_location).__name__}")
    group = world().all
    name = arrays = header = None
    if group.rank == src:
        name, arrays, header = _read_on_source(f, src)
    sent = header if header is None or header[0] == "ok" else ("error", f"{type(header[1]).__name__}: {header[1]}")
    shared = group.broadcast_object(sent, root=src)
    if shared[0] == "error":
        if header is not None:
            raise header[1]
        raise RuntimeError(f"flow.load (global_src_rank={src}): rank {src} could not read the file: {shared[1]}")
    _, name, index = shared
    if arrays is None:  # this rank holds no file: empty arrays of the same shapes (filled by broadcasts)
        arrays = {k: np.empty(shape, np.dtype(dt)) for k, (dt, shape) in index.items()}
    group.broadcast(arrays[_PICKLE], root=src)
    unpickler = _GlobalUnpickler(io.BytesIO(arrays[_PICKLE].tobytes()), arrays, name, None, weights_only)
    unpickler.src, unpickler.target = src, map_location
    return _unpickle(unpickler, name)


class _GlobalUnpickler(_Unpickler):
    """Unpickles the same bytes on every rank; values come from rank ``src`` (Note [Global tensors in saved
    files])."""

    src: int
    target: Placement | None

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and pid and pid[0] in ("ndarray", "numpy_scalar") and pid not in self.loaded:
            world().all.broadcast(self.array(pid[1]), root=self.src)
        return super().persistent_load(pid)

    def tensor(self, pid) -> Tensor:
        if len(pid) not in (8, 9):
            raise _corrupt(self.name, f"bad tensor record {pid!r:.120}")
        local = super().tensor(pid[:6] + (False, False))
        m = local._meta
        source = Placement(m.device.type, [self.src])
        placement, nd = self.layout(pid[8] if len(pid) == 9 else None, tuple(m.shape), source)
        held = local._array if world().rank == self.src else None
        t = Tensor._make(held, make_global_meta(m.shape, m.dtype, source, (sbp_mod.broadcast,)))
        if placement is not source or nd != (sbp_mod.broadcast,):
            t = t.to_global(placement, nd)
        if pid[7]:
            return Parameter(t, requires_grad=bool(pid[6]))
        return t.requires_grad_(True) if pid[6] else t

    def layout(self, saved, shape: tuple, source) -> tuple:
        """The placement and nd-SBP a loaded tensor gets: ``map_location``'s, the saved one, or the source's."""
        if self.target is not None:
            return self.target, (sbp_mod.broadcast,) * self.target.ndim
        try:
            kind, ranks, sbps = saved
            if max(int(r) for r in np.ravel(ranks)) >= world().size:
                raise ValueError(ranks)
            placement = Placement(kind, ranks)
            nd = tuple(sbp_mod.parse_short(s) for s in sbps)
            return placement, sbp_mod.as_nd_sbp(nd, placement.ndim, "flow.load")
        except (TypeError, ValueError, KeyError, IndexError):  # a local tensor, or a layout this job cannot hold
            return source, (sbp_mod.broadcast,)
