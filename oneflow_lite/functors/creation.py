"""Creation functors (``zeros``, ``ones``, ``full``, ``empty``, the ``*_like`` family, ``eye``, ``linspace``,
``logspace``, ``arange``, ``rand``, ``randn``, ``randint``, ``randperm``, ``normal``), the in-place initialisers
``Tensor.uniform_`` / ``normal_``, ``Tensor.new_*``, and ``flow.tensor`` / ``from_numpy`` / ``as_tensor``.

Every creation op is a source op with a ``device`` attr (see ops/creation.py).
Defaults follow PyTorch: ``zeros`` / ``ones`` / ``rand`` / ``randn`` make the
default float dtype; ``full`` takes its dtype from the fill value (bool -> bool,
int -> int64, float -> default float); ``arange`` makes int64 when start, end
and step are all ints, else the default float dtype.
"""

from __future__ import annotations

import warnings

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.generator import using_generator
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.functors.conversion import convert
from oneflow_lite.functors.registry import composite, functor
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


@composite("ArangeEnd")
def arange_end(end, dtype, device, requires_grad=False):
    """``arange(end)``: ``arange(0, end, 1)``."""
    return F.arange(0, end, 1, dtype=dtype, device=device, requires_grad=requires_grad)


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


# ---- *_like, empty, eye, linspace / logspace -----------------------------------------------------
@composite("FullLike")
def full_like(x, fill_value, dtype, device, requires_grad=False):
    """``full_like(input, fill_value)``: ``full`` of ``input``'s shape, and its dtype (not the fill value's)
    and device unless given."""
    m = x._meta
    return F.full(m.shape, fill_value, dtype=dtype or m.dtype, device=device or m.device,
                  requires_grad=requires_grad)


@composite("ZerosLike")
def zeros_like(x, dtype, device, requires_grad=False):
    """``zeros_like(input)``: ``full_like(input, 0)``."""
    return full_like(x, 0, dtype, device, requires_grad)


@composite("OnesLike")
def ones_like(x, dtype, device, requires_grad=False):
    """``ones_like(input)``: ``full_like(input, 1)``."""
    return full_like(x, 1, dtype, device, requires_grad)


@functor("Empty")
class EmptyFunctor(_ConstantFunctor):
    """``empty(*size)``: uninitialised in PyTorch; here filled with zeros (a tensor always holds defined values)."""

    def __call__(self, size, dtype, device, requires_grad=False):
        return _requires_grad(self._fill(size, 0, dtype or _get_default_dtype(), device), requires_grad)


@composite("EmptyLike")
def empty_like(x, dtype, device, requires_grad=False):
    """``empty_like(input)``: as ``zeros_like`` (see ``empty``)."""
    return full_like(x, 0, dtype, device, requires_grad)


@functor("Eye")
class EyeFunctor:
    """``eye(n, m=None)``: an ``n`` x ``m`` (``n`` x ``n``) matrix with ones on the diagonal."""

    def __init__(self):
        self.op = OpBuilder("eye").output("out").build()
        self._attrs = {}

    def __call__(self, n, m, dtype, device, requires_grad=False):
        values = (n, n if m is None else m, dtype or _get_default_dtype(), device or _CPU)
        return _requires_grad(dispatch(self.op, (), cached_attrs(self._attrs, ("rows", "cols", "dtype", "device"),
                                                                 values))[0], requires_grad)


def _float_scalar(name, arg, value) -> float:
    if type(value) is bool:
        raise TypeError(f"{name}(): argument '{arg}' must be a number, not bool")
    return float(value)


@functor("Linspace")
class LinspaceFunctor:
    """``linspace(start, end, steps)``: ``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""

    op_type = name = "linspace"
    names = ("start", "end", "steps", "dtype", "device")

    def __init__(self):
        self.op = OpBuilder(self.op_type).output("out").build()
        self._attrs = {}

    def _values(self, start, end, steps, dtype, device):
        return (_float_scalar(self.name, "start", start), _float_scalar(self.name, "end", end), steps,
                dtype or _get_default_dtype(), device or _CPU)

    def __call__(self, start, end, steps, dtype, device, requires_grad=False):
        values = self._values(start, end, steps, dtype, device)
        return _requires_grad(dispatch(self.op, (), cached_attrs(self._attrs, self.names, values))[0], requires_grad)


@functor("Logspace")
class LogspaceFunctor(LinspaceFunctor):
    """``logspace(start, end, steps, base=10)``: ``base ** linspace(start, end, steps)``."""

    op_type = name = "logspace"
    names = LinspaceFunctor.names + ("base",)

    def __call__(self, start, end, steps, base, dtype, device, requires_grad=False):
        values = (*self._values(start, end, steps, dtype, device), base)
        return _requires_grad(dispatch(self.op, (), cached_attrs(self._attrs, self.names, values))[0], requires_grad)


# ---- random ---------------------------------------------------------------------------------------
def _random(op, inputs, attrs, generator, device, name):
    """Run the random ``op``, drawing from ``generator`` when given (it must be on ``device``)."""
    if generator is None:
        return dispatch(op, inputs, attrs)[0]
    if generator.device is not device and device.device_type.has_storage:
        raise RuntimeError(f"{name}: Expected a '{device.type}' device type for generator "
                           f"but found '{generator.device.type}'")
    with using_generator(generator):
        return dispatch(op, inputs, attrs)[0]


@functor("RandintLow")
class RandintLowFunctor:
    """``randint(low, high, size)``: uniform integers in [low, high), int64 unless ``dtype`` is given."""

    def __init__(self):
        self.op = OpBuilder("randint").output("out").build()
        self._attrs = {}

    def __call__(self, low, high, size, generator, dtype, device, requires_grad=False):
        device = device or _CPU
        attrs = cached_attrs(self._attrs, ("low", "high", "shape", "dtype", "device"),
                             (low, high, size, dtype or dt.int64, device))
        return _requires_grad(_random(self.op, (), attrs, generator, device, "randint"), requires_grad)


@composite("Randint")
def randint(high, size, generator, dtype, device, requires_grad=False):
    """``randint(high, size)``: ``randint(0, high, size)``."""
    return F.randint(0, high, size, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


@functor("Randperm")
class RandpermFunctor:
    """``randperm(n)``: a random permutation of 0 .. n-1, int64 unless ``dtype`` is given."""

    def __init__(self):
        self.op = OpBuilder("randperm").output("out").build()
        self._attrs = {}

    def __call__(self, n, generator, dtype, device, requires_grad=False):
        device = device or _CPU
        attrs = cached_attrs(self._attrs, ("n", "dtype", "device"), (n, dtype or dt.int64, device))
        return _requires_grad(_random(self.op, (), attrs, generator, device, "randperm"), requires_grad)


# Note [normal with tensor parameters]
# ``normal(mean, std)`` with a tensor mean and / or std draws ``mean + std * N(0, 1)`` elementwise
# (broadcast) in one ``normal_tensor`` op, in mean's dtype (std's when mean is a number). The op is
# no_grad: PyTorch gives mean and std zero gradients there (it does not reparameterise), so the
# result here does not require grad. A number parameter becomes a 0-d tensor of the other's dtype.
@functor("NormalTensorTensor")
class NormalTensorTensorFunctor:
    """``normal(mean, std)``: tensors (see Note [normal with tensor parameters])."""

    def __init__(self):
        self.op = OpBuilder("normal_tensor").input("mean").input("std").output("out").build()

    def __call__(self, mean, std, generator):
        return _random(self.op, (mean, std), None, generator, mean._meta.device, "normal")


@composite("NormalTensorFloat")
def normal_tensor_float(mean, std, generator):
    """``normal(mean, std)``: a tensor mean, a number std (see Note [normal with tensor parameters])."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    m = mean._meta
    return F.normal(mean, F.full((), std, dtype=m.dtype, device=m.device), generator=generator)


@composite("NormalFloatTensor")
def normal_float_tensor(mean, std, generator):
    """``normal(mean, std)``: a number mean, a tensor std (see Note [normal with tensor parameters])."""
    m = std._meta
    return F.normal(F.full((), mean, dtype=m.dtype, device=m.device), std, generator=generator)


@functor("Normal")
class NormalFunctor:
    """``normal(mean, std, size)``: samples of N(mean, std**2) of shape ``size``."""

    def __init__(self):
        self.op = OpBuilder("normal").output("out").build()
        self._attrs = {}

    def __call__(self, mean, std, size, generator, dtype, device, requires_grad=False):
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        device = device or _CPU
        attrs = cached_attrs(self._attrs, ("shape", "dtype", "device", "mean", "std"),
                             (size, dtype or _get_default_dtype(), device, mean, std))
        return _requires_grad(_random(self.op, (), attrs, generator, device, "normal"), requires_grad)


@composite("RandLike")
def rand_like(x, dtype, device, requires_grad=False):
    """``rand_like(input)``: uniform samples in [0, 1) of ``input``'s shape (and dtype / device unless given)."""
    m = x._meta
    return F.rand(m.shape, dtype=dtype or m.dtype, device=device or m.device, requires_grad=requires_grad)


@composite("RandnLike")
def randn_like(x, dtype, device, requires_grad=False):
    """``randn_like(input)``: standard normal samples of ``input``'s shape (and dtype / device unless given)."""
    m = x._meta
    return F.randn(m.shape, dtype=dtype or m.dtype, device=device or m.device, requires_grad=requires_grad)


# ---- in-place initialisers --------------------------------------------------------------------------
def _range_args(name, args, kwargs, names, defaults):
    """The two float parameters of ``uniform_`` / ``normal_`` given positionally or by name."""
    if len(args) > 2:
        raise TypeError(f"{name}() takes at most 2 positional arguments but {len(args)} were given")
    values = list(args) + [None] * (2 - len(args))
    for i, key in enumerate(names):
        if key in kwargs:
            if i < len(args):
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
            values[i] = kwargs.pop(key)
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    out = []
    for key, v, default in zip(names, values, defaults):
        if v is None:
            v = default
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name}(): argument '{key}' must be float, not {type(v).__name__}")
        out.append(float(v))
    return out


class _InitOps:
    """The uniform / normal op exprs the in-place initialisers write with, each with its attr cache (built on
    first use)."""

    _ops = None

    @classmethod
    def get(cls):
        if cls._ops is None:
            cls._ops = tuple((OpBuilder(op_type).output("out").build(), {}) for op_type in ("uniform", "normal"))
        return cls._ops


def _fill_random(self, op_index, names, values, generator, name):
    m = self._meta
    op, cache = _InitOps.get()[op_index]
    attrs = cached_attrs(cache, ("shape", "dtype", "device") + names, (m.shape, m.dtype, m.device, *values))
    if generator is None:
        return dispatch(op, (), attrs, (self,))[0]
    if generator.device is not m.device and m.device.device_type.has_storage:
        raise RuntimeError(f"{name}: Expected a '{m.device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    with using_generator(generator):
        return dispatch(op, (), attrs, (self,))[0]


def uniform_(self, *args, generator=None, **kwargs):
    """``uniform_(from=0, to=1, *, generator=None)``: fill with uniform samples from [from, to); returns ``self``."""
    low, high = _range_args("uniform_", args, kwargs, ("from", "to"), (0.0, 1.0))
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
    return _fill_random(self, 0, ("from", "to"), (low, high), generator, "uniform_")


def normal_(self, *args, generator=None, **kwargs):
    """``normal_(mean=0, std=1, *, generator=None)``: fill with samples of N(mean, std**2); returns ``self``."""
    mean, std = _range_args("normal_", args, kwargs, ("mean", "std"), (0.0, 1.0))
    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    return _fill_random(self, 1, ("mean", "std"), (mean, std), generator, "normal_")


# ---- Tensor.new_* ----------------------------------------------------------------------------------
def _new(name, function_name, with_value=False):
    def method(self, *args, dtype=None, device=None, requires_grad=False, **kwargs):
        m = self._meta
        return getattr(F, function_name)(*args, dtype=dtype or m.dtype, device=device or m.device,
                                         requires_grad=requires_grad, **kwargs)
    method.__name__ = method.__qualname__ = name
    what = "filled with fill_value" if with_value else f"of {function_name}"
    method.__doc__ = (f"``{name}(size{', fill_value' if with_value else ''}, *, dtype=None, device=None)``: a new "
                      f"tensor {what}, with this tensor's dtype and device unless given.")
    return method


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """``new_tensor(data)``: ``flow.tensor(data)`` with this tensor's dtype and device unless given."""
    m = self._meta
    return tensor(data, dtype=dtype or m.dtype, device=device or m.device, requires_grad=requires_grad)


# ---- sharing NumPy memory --------------------------------------------------------------------------
def from_numpy(ndarray) -> Tensor:
    """A cpu tensor sharing memory with the NumPy array ``ndarray`` (writes to either show in both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(ndarray).__name__})")
    np_dtype = ndarray.dtype
    if np_dtype.byteorder not in "=|" and np_dtype.itemsize > 1:
        raise ValueError("from_numpy(): given numpy array has byte order different from the native byte order. "
                         "Conversion between byte orders is currently not supported.")
    try:
        dtype = dt.from_numpy_dtype(np_dtype)
    except TypeError:
        supported = ", ".join(d.name for d in reversed(dt.ALL_DTYPES))
        raise TypeError(f"from_numpy(): can't convert np.ndarray of type {np_dtype}. The only supported types "
                        f"are: {supported}.") from None
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and oneflow_lite does not support non-writable "
                      "tensors: writing to the tensor (in place) will fail.", UserWarning, stacklevel=2)
    return Tensor._make(ndarray, make_meta(ndarray.shape, dtype, _CPU))


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, without a copy when possible: a Tensor of the requested dtype and device is
    returned as is (converted otherwise, keeping its autograd history); a NumPy array of a supported dtype
    shares memory on cpu when ``dtype`` matches; anything else is copied as by ``flow.tensor``."""
    if dtype is not None and not isinstance(dtype, dt.dtype):
        raise TypeError(f"as_tensor(): argument 'dtype' must be flow.dtype, not {type(dtype).__name__}")
    if device is not None:
        if not isinstance(device, (str, Device)):
            raise TypeError(f"as_tensor(): argument 'device' must be flow.device or str, not "
                            f"{type(device).__name__}")
        device = Device(device)
    if isinstance(data, Tensor):
        return convert(data, device, dtype)
    if isinstance(data, np.ndarray) and data.dtype.byteorder in "=|" and data.dtype in _NUMPY_DTYPES:
        t = from_numpy(data)
        return convert(t, device, dtype)
    return tensor(data, dtype=dtype, device=device)


_NUMPY_DTYPES = frozenset(d.np_dtype for d in dt.ALL_DTYPES)

Tensor.uniform_ = uniform_
Tensor.normal_ = normal_
Tensor.new_zeros = _new("new_zeros", "zeros")
Tensor.new_ones = _new("new_ones", "ones")
Tensor.new_empty = _new("new_empty", "empty")
Tensor.new_full = _new("new_full", "full", with_value=True)
Tensor.new_tensor = new_tensor
