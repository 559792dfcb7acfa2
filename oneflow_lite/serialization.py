"""``flow.save`` / ``flow.load``: tensors, state dicts and nested containers in a NumPy ``.npz`` archive.

Note [Save file format]
A saved file is an uncompressed NumPy ``.npz`` archive (a ZIP file, readable by ``numpy.load``) holding

- ``__manifest__``: a uint8 array, the UTF-8 bytes of a JSON object ``{"format": "oneflow_lite.save",
  "version": 1, "root": <node>}`` describing the saved object;
- ``0``, ``1``, ...: one array per saved tensor / NumPy value, in C order, named by the manifest.

A node is plain JSON for ``None``, bools, ints, finite floats and strings, and otherwise an object with a
``"type"``: ``{"type": "float", "value": "inf" | "-inf" | "nan"}``; ``"list"`` / ``"tuple"`` / ``"Size"``
with ``"items"``; ``"dict"`` / ``"OrderedDict"`` with ``"items": [[key, value], ...]`` (keys are nodes of
str, int, float, bool, None or tuples of them, so int keys and key order survive); ``{"type": "tensor",
"id": 0, "array": "0", "dtype": "float32", "shape": [2, 3], "device": "cpu:0", "requires_grad": false,
"parameter": false}`` (``id`` numbers the saved tensor objects; ``"array": null`` for a tensor on a device
without storage, such as meta);
``{"type": "ndarray", "array": "1"}`` and ``{"type": "numpy_scalar", "array": "2"}``; ``{"type": "dtype",
"name": "float16"}``; ``{"type": "device", "name": "cpu:0"}``.

Nothing is pickled, so loading never runs code from the file. A tensor object that occurs several times is
stored once and loads as one object; distinct tensors that share memory (views) load as independent copies.
A tensor's ``.grad`` and autograd history are not saved: it loads as a leaf with its ``requires_grad``.
"""

from __future__ import annotations

import json
import math
import os
import threading
import zipfile
from collections import OrderedDict

import numpy as np

from oneflow_lite import functional as F
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.tensor import LAZY_KEY_SET, Tensor
from oneflow_lite.framework.tensor_meta import Size
from oneflow_lite.functors.creation import from_numpy
from oneflow_lite.nn.parameter import Parameter

_FORMAT = "oneflow_lite.save"
_VERSION = 1
_MANIFEST = "__manifest__"
_ZIP_MAGIC = b"PK\x03\x04"
_DTYPES = {d.name: d for d in dtypes.ALL_DTYPES}
_SUPPORTED = ("tensors, NumPy arrays and scalars, None, bool, int, float, str, flow.dtype, flow.device, flow.Size, "
              "and lists, tuples, dicts and OrderedDicts of them")
_KEY_TYPES = "str, int, float, bool, None or tuples of them"
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _where(path: list) -> str:
    return "obj" + "".join(f"[{p!r}]" for p in path)


class _Encoder:
    """Turns an object into a manifest node, collecting its arrays (see Note [Save file format])."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self.memo: dict[int, dict] = {}  # id(tensor or ndarray) -> its node, for objects seen twice
        self.keep_alive: list = []  # the memoised objects, so their ids stay unique during the walk
        self.num_tensors = 0
        self.path: list = []
        self.open: set[int] = set()  # ids of the containers being walked (to detect cycles)

    def error(self, exc_type, why: str):
        return exc_type(f"flow.save: {_where(self.path)} {why}")

    def add_array(self, array: np.ndarray) -> str:
        name = str(len(self.arrays))
        self.arrays[name] = array if array.flags.c_contiguous else array.copy(order="C")
        return name

    def node(self, obj):
        t = type(obj)
        if obj is None or t is bool or t is int or t is str:
            return obj
        if t is float:
            return obj if math.isfinite(obj) else {"type": "float", "value": repr(obj)}
        if isinstance(obj, Tensor):
            return self.memoised(obj, self.tensor)
        if t is np.ndarray:
            return self.memoised(obj, self.ndarray)
        if isinstance(obj, np.generic):
            if obj.dtype.hasobject:
                raise self.error(TypeError, "is a NumPy scalar of dtype object, which cannot be saved")
            return {"type": "numpy_scalar", "array": self.add_array(np.asarray(obj))}
        if t is dtypes.dtype:
            return {"type": "dtype", "name": obj.name}
        if t is Device:
            return {"type": "device", "name": str(obj)}
        if t in (list, tuple, Size, dict, OrderedDict):
            if id(obj) in self.open:
                raise self.error(ValueError, "contains itself (a reference cycle), which cannot be saved")
            self.open.add(id(obj))
            try:
                if t is dict or t is OrderedDict:
                    return {"type": t.__name__, "items": [[self.key(k), self.child(k, v)] for k, v in obj.items()]}
                return {"type": t.__name__, "items": [self.child(i, v) for i, v in enumerate(obj)]}
            finally:
                self.open.discard(id(obj))
        hint = " (save its state_dict() instead)" if hasattr(obj, "state_dict") else ""
        raise self.error(TypeError, f"has type {t.__module__}.{t.__qualname__}, which flow.save does not store"
                                    f"{hint}; it saves {_SUPPORTED}")

    def child(self, key, value):
        self.path.append(key)
        node = self.node(value)
        self.path.pop()
        return node

    def key(self, k):
        t = type(k)
        if t is tuple:
            return {"type": "tuple", "items": [self.key(x) for x in k]}
        if k is None or t in (bool, int, str, float):
            return self.node(k)
        raise self.error(TypeError, f"is a dict with a key of type {t.__qualname__}; keys may be {_KEY_TYPES}")

    def memoised(self, obj, encode):
        node = self.memo.get(id(obj))
        if node is None:
            node = self.memo[id(obj)] = encode(obj)
            self.keep_alive.append(obj)
        return node

    def tensor(self, t: Tensor) -> dict:
        meta = t._meta
        if t._key_set & LAZY_KEY_SET:
            raise self.error(RuntimeError, f"is a lazy tensor ({t._array.describe()}) of a graph being captured; "
                                           f"only eager tensors have values to save")
        if meta.device.device_type.has_storage:
            array = self.add_array(t.detach().cpu().numpy())
        else:
            array = None
        self.num_tensors += 1
        return {"type": "tensor", "id": self.num_tensors - 1, "array": array, "dtype": meta.dtype.name,
                "shape": list(meta.shape), "device": str(meta.device), "requires_grad": t.requires_grad,
                "parameter": isinstance(t, Parameter)}

    def ndarray(self, a: np.ndarray) -> dict:
        if a.dtype.hasobject:
            raise self.error(TypeError, "is a NumPy array of dtype object, which cannot be saved without pickle")
        return {"type": "ndarray", "array": self.add_array(a)}


def save(obj, f) -> None:
    """Save ``obj`` (a tensor, a state dict, or nested lists / tuples / dicts of tensors, NumPy values, numbers,
    strings and None) to ``f``, a path or a writable binary file object, in the format of Note [Save file
    format]. Unsupported objects raise a TypeError naming where they are, before anything is written; a path
    is written atomically (a failed save leaves an existing file unchanged)."""
    encoder = _Encoder()
    root = encoder.node(obj)
    manifest = json.dumps({"format": _FORMAT, "version": _VERSION, "root": root}, allow_nan=False)
    arrays = {_MANIFEST: np.frombuffer(manifest.encode(), np.uint8), **encoder.arrays}
    if hasattr(f, "write"):
        np.savez(f, **arrays)
        return
    path = _path(f, "save", "writable")
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    try:
        with open(tmp, "wb") as out:
            np.savez(out, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


class _Decoder:
    """Rebuilds an object from its manifest node and arrays."""

    def __init__(self, name: str, arrays: dict, map_location):
        self.name = name
        self.arrays = arrays
        self.map_location = map_location
        self.memo: dict = {}  # ("tensor", id) or an ndarray's array name -> the loaded object

    def corrupt(self, why: str):
        return RuntimeError(f"flow.load: '{self.name}' is corrupt: {why}")

    def node(self, n):
        if n is None or isinstance(n, (bool, int, float, str)):
            return n
        if not isinstance(n, dict) or not isinstance(n.get("type"), str):
            raise self.corrupt(f"unexpected manifest entry {n!r:.80}")
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
            raise self.corrupt(f"bad {kind!r} entry {n!r:.120} ({type(e).__name__}: {e})") from None
        raise self.corrupt(f"unknown entry type {kind!r}")

    def array(self, name) -> np.ndarray:
        a = self.arrays.get(name)
        if a is None:
            raise self.corrupt(f"the manifest names an array {name!r} that the archive does not hold")
        return a

    def target_device(self, saved: str) -> Device:
        loc = self.map_location
        if isinstance(loc, dict):
            loc = loc.get(saved, saved)
        target = saved if loc is None else loc
        try:
            return Device(target)
        except (RuntimeError, ValueError, TypeError) as e:
            raise RuntimeError(f"flow.load: '{self.name}': a tensor saved on '{saved}' cannot be placed on "
                               f"{target!r} ({e}); pass map_location='cpu' to load it on cpu") from None

    def tensor(self, n: dict) -> Tensor:
        dtype = _DTYPES[n["dtype"]]
        shape = tuple(n["shape"])
        device = self.target_device(n["device"])
        if n["array"] is None:
            if device.device_type.has_storage:
                raise RuntimeError(f"flow.load: '{self.name}': a tensor saved on '{n['device']}' holds no data and "
                                   f"cannot be loaded onto '{device}'")
            t = F.empty(shape, dtype=dtype, device=device)
        else:
            a = self.array(n["array"])
            if a.dtype != dtype.np_dtype or a.shape != shape:
                raise self.corrupt(f"array {n['array']!r} is {a.dtype}{list(a.shape)} but the manifest says "
                                   f"{dtype.name}{list(shape)}")
            t = from_numpy(a).to(device)
        if n["parameter"]:
            return Parameter(t, requires_grad=n["requires_grad"])
        return t.requires_grad_(True) if n["requires_grad"] else t


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
    try:
        with np.load(f, allow_pickle=False) as archive:
            if _MANIFEST not in archive.files:
                raise RuntimeError(f"flow.load: '{name}' is a ZIP archive but not a file written by flow.save (it "
                                   f"has no '{_MANIFEST}' entry)")
            return {k: archive[k] for k in archive.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zipfile.LargeZipFile) as e:
        raise RuntimeError(f"flow.load: '{name}' is truncated or corrupt ({type(e).__name__}: {e})") from None


def load(f, map_location=None, *, weights_only=None):
    """Load an object saved by :func:`save` from ``f`` (a path or a readable, seekable binary file object).

    ``map_location`` places the tensors: None keeps each tensor's saved device, a device or device string
    moves them all there, a dict maps saved device strings (``"cpu:0"``) to devices. ``weights_only`` is
    accepted for PyTorch compatibility; the format never runs code, so both values load the same. A file
    that is not a flow.save file, or is truncated or corrupt, raises a RuntimeError naming it.
    """
    if weights_only is not None and not isinstance(weights_only, bool):
        raise TypeError(f"flow.load: weights_only must be a bool or None, got {type(weights_only).__name__}")
    if not (map_location is None or isinstance(map_location, (str, Device, dict))):
        raise TypeError(f"flow.load: map_location must be None, a device, a device string or a dict of device "
                        f"strings, got {type(map_location).__name__}")
    if isinstance(map_location, dict):
        map_location = {_device_name(k): v for k, v in map_location.items()}
    if hasattr(f, "read"):
        name = str(getattr(f, "name", f))
        arrays = _read_archive(f, name)
    else:
        name = _path(f, "load", "readable")
        with open(name, "rb") as fh:
            arrays = _read_archive(fh, name)
    decoder = _Decoder(name, arrays, map_location)
    try:
        manifest = json.loads(arrays[_MANIFEST].tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise decoder.corrupt(f"its manifest is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT or "root" not in manifest:
        raise RuntimeError(f"flow.load: '{name}' is not a file written by flow.save (its manifest does not "
                           f"say format '{_FORMAT}')")
    if manifest.get("version") != _VERSION:
        raise RuntimeError(f"flow.load: '{name}' has format version {manifest.get('version')!r}; this version of "
                           f"oneflow_lite reads version {_VERSION}")
    return decoder.node(manifest["root"])
