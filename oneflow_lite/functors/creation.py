"""Creation functors (``zeros``, ``ones``, ``full``, ``arange``, ``rand``, ``randn``) and ``flow.tensor``.

Every creation op is a source op with a ``device`` attr (see ops/creation.py).
Defaults follow PyTorch: ``zeros`` / ``ones`` / ``rand`` / ``randn`` make the
default float dtype; ``full`` takes its dtype from the fill value (bool -> bool,
int -> int64, float -> default float); ``arange`` makes int64 when start, end
and step are all ints, else the default float dtype.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.generator import using_generator
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.functors.conversion import convert
from oneflow_lite.functors.registry import functor, get_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch

_CPU = Device("cpu")
_get_default_dtype = dt.get_default_dtype
_CONSTANT_ATTRS = ("shape", "dtype", "device", "floating_value", "integer_value", "is_floating_value")


class _ConstantFunctor:
    """Shared by zeros / ones / full: one ``constant`` op filled with a Python scalar."""

    def __init__(self):
        self.op = OpBuilder("constant").output("out").build()
        self._attrs = {}

    def _fill(self, size, value, dtype, device):
        if isinstance(value, float):
            values = (size, dtype, device or _CPU, value, 0, True)
        else:
            values = (size, dtype, device or _CPU, 0.0, int(value), False)
        return dispatch(self.op, (), cached_attrs(self._attrs, _CONSTANT_ATTRS, values))[0]


def _requires_grad(t, requires_grad):
    """``t`` made a leaf that requires grad when asked (the ``requires_grad=`` of creation functions)."""
    return t.requires_grad_() if requires_grad else t


@functor("Zeros")
class ZerosFunctor(_ConstantFunctor):
    def __call__(self, size, dtype, device, requires_grad=False):
        return _requires_grad(self._fill(size, 0, dtype or _get_default_dtype(), device), requires_grad)


@functor("Ones")
class OnesFunctor(_ConstantFunctor):
    def __call__(self, size, dtype, device, requires_grad=False):
        return _requires_grad(self._fill(size, 1, dtype or _get_default_dtype(), device), requires_grad)


@functor("Full")
class FullFunctor(_ConstantFunctor):
    def __call__(self, size, fill_value, dtype, device, requires_grad=False):
        return _requires_grad(self._fill(size, fill_value, dtype or dt.scalar_dtype(fill_value), device),
                              requires_grad)


_ARANGE_ATTRS = ("dtype", "device", "is_floating_range", "float_start", "float_limit", "float_delta",
                 "integer_start", "integer_limit", "integer_delta")


@functor("Arange")
class ArangeFunctor:
    """``arange(start, end, step=1)``: ``ceil((end - start) / step)`` values ``start + i * step``."""

    def __init__(self):
        self.op = OpBuilder("arange").output("out").build()
        self._attrs = {}

    def __call__(self, start, end, step, dtype, device, requires_grad=False):
        if isinstance(start, float) or isinstance(end, float) or isinstance(step, float):
            values = (dtype or _get_default_dtype(), device or _CPU, True,
                      float(start), float(end), float(step), 0, 0, 1)
        else:
            values = (dtype or dt.int64, device or _CPU, False, 0.0, 0.0, 1.0, int(start), int(end), int(step))
        return _requires_grad(dispatch(self.op, (), cached_attrs(self._attrs, _ARANGE_ATTRS, values))[0],
                              requires_grad)


@functor("ArangeEnd")
class ArangeEndFunctor:
    """``arange(end)``: ``arange(0, end, 1)``."""

    def __call__(self, end, dtype, device, requires_grad=False):
        return get_functor("Arange")(0, end, 1, dtype, device, requires_grad)


class _RandomFunctor:
    """Shared by rand / randn: a source op drawing from the given generator or the device's default."""

    op_type = ""
    name = ""

    def __init__(self):
        self.op = OpBuilder(self.op_type).output("out").build()
        self._attrs = {}

    def __call__(self, size, generator, dtype, device, requires_grad=False):
        device = device or _CPU
        attrs = cached_attrs(self._attrs, ("shape", "dtype", "device"), (size, dtype or _get_default_dtype(), device))
        if generator is None:
            return _requires_grad(dispatch(self.op, (), attrs)[0], requires_grad)
        if generator.device is not device and device.device_type.has_storage:
            raise RuntimeError(f"{self.name}: Expected a '{device.type}' device type for generator "
                               f"but found '{generator.device.type}'")
        with using_generator(generator):
            return _requires_grad(dispatch(self.op, (), attrs)[0], requires_grad)


@functor("Rand")
class RandFunctor(_RandomFunctor):
    """``rand(*size)``: uniform samples from [0, 1)."""

    op_type = "uniform"
    name = "rand"


@functor("Randn")
class RandnFunctor(_RandomFunctor):
    """``randn(*size)``: standard normal samples."""

    op_type = "normal"
    name = "randn"


# ---- flow.tensor ------------------------------------------------------------------------------
_PY_SCALARS = {bool: dt.bool_, int: dt.int64}
_PY_TYPES = {bool, int, float}


def _numpy_dtype(np_dtype) -> dt.dtype:
    try:
        return dt.from_numpy_dtype(np_dtype)
    except TypeError:
        supported = ", ".join(d.name for d in reversed(dt.ALL_DTYPES))
        raise TypeError(f"tensor(): can't convert np.ndarray of type {np_dtype}. The only supported types are: "
                        f"{supported}.") from None


def _leaf_dtype(leaf) -> dt.dtype:
    t = type(leaf)
    if t is float:
        return _get_default_dtype()
    d = _PY_SCALARS.get(t)
    if d is not None:
        return d
    if isinstance(leaf, (np.generic, np.ndarray)):
        return _numpy_dtype(leaf.dtype)
    if isinstance(leaf, Tensor):
        return leaf.dtype
    if isinstance(leaf, (bool, int, float)):  # subclasses of the builtins
        return dt.scalar_dtype(leaf)
    raise TypeError(f"tensor(): Could not infer dtype of {t.__name__}")


def _is_sequence(x) -> bool:
    return isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0)


def _scan(data):
    """Shape, flat leaves and promoted dtype of nested sequences; a clear error for ragged ones."""
    shape = []
    level = [data]
    while level and _is_sequence(level[0]):
        n = len(level[0])
        for item in level:
            if not _is_sequence(item):
                raise ValueError(f"tensor(): expected sequence of length {n} at dim {len(shape)} "
                                 f"(got {type(item).__name__})")
            if len(item) != n:
                raise ValueError(f"tensor(): expected sequence of length {n} at dim {len(shape)} (got {len(item)})")
        shape.append(n)
        level = [x for item in level for x in item]
    types = set(map(type, level))
    if types <= _PY_TYPES:  # the common case, decided without a per-leaf loop
        if float in types or not types:  # an empty sequence is float, as in PyTorch
            return shape, level, _get_default_dtype()
        return shape, level, dt.int64 if int in types else dt.bool_
    dtype = None
    for leaf in level:
        if _is_sequence(leaf):
            raise ValueError(f"tensor(): expected a number at dim {len(shape)} of a nested sequence, "
                             f"got a sequence of length {len(leaf)}")
        d = _leaf_dtype(leaf)
        dtype = d if dtype is None else dt.promote_types(dtype, d)
    return shape, level, dtype


def _leaf_value(leaf):
    if isinstance(leaf, Tensor):
        if leaf.numel() != 1:
            raise ValueError(f"tensor(): only one element tensors can be converted to Python scalars, "
                             f"got a tensor of shape {tuple(leaf.shape)} in a sequence")
        return leaf.item()
    return leaf


def _as_array(data):
    """A new native-order NumPy array of ``data`` and the flow dtype PyTorch infers for it.

    Python floats are stored as float64 (what they are) and cast to the inferred or
    requested dtype afterwards, so ``tensor([1e300], dtype=flow.float64)`` is exact.
    """
    if isinstance(data, (np.ndarray, np.generic)):
        np_dtype = data.dtype
        if np_dtype.byteorder not in "=|":
            np_dtype = np_dtype.newbyteorder("=")
        dtype = _numpy_dtype(np_dtype)
        return np.array(data, dtype=np_dtype, order="C"), dtype
    if isinstance(data, (list, tuple)):
        shape, leaves, dtype = _scan(data)
        if any(isinstance(leaf, Tensor) for leaf in leaves):
            leaves = [_leaf_value(leaf) for leaf in leaves]
        values = leaves
    else:
        dtype = _leaf_dtype(data)
        shape, values = (), data
    storage = np.float64 if dtype.is_floating_point else dtype.np_dtype
    try:
        return np.array(values, dtype=storage).reshape(shape), dtype
    except OverflowError as e:
        raise OverflowError(f"tensor(): a value does not fit in {dtype.name}: {e}") from None


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data``: a Python scalar, a nested list / tuple of numbers,
    a NumPy array or scalar, or a Tensor.

    Without ``dtype``, bools give ``bool``, ints ``int64``, floats the default float
    dtype, NumPy data keeps its dtype and a Tensor keeps its own; mixed sequences
    promote (PyTorch's rules). ``device`` defaults to cpu (a Tensor's own device).
    The result is a leaf, detached from any graph ``data`` belongs to, that requires
    grad when ``requires_grad`` is True.
    """
    if dtype is not None and not isinstance(dtype, dt.dtype):
        raise TypeError(f"tensor(): argument 'dtype' must be flow.dtype, not {type(dtype).__name__}")
    if device is not None:
        if not isinstance(device, (str, Device)):
            raise TypeError(f"tensor(): argument 'device' must be flow.device or str, not {type(device).__name__}")
        device = Device(device)
    if not isinstance(requires_grad, bool):
        raise TypeError(f"tensor(): argument 'requires_grad' must be bool, not {type(requires_grad).__name__}")
    if isinstance(data, Tensor):
        return _requires_grad(convert(data.detach(), device, dtype, copy=True), requires_grad)
    array, inferred = _as_array(data)
    result = Tensor._make(array, make_meta(array.shape, dt.from_numpy_dtype(array.dtype), _CPU))
    return _requires_grad(convert(result, device, dtype or inferred), requires_grad)
