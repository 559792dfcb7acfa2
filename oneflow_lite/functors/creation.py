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

import collections.abc
import math
import os
import warnings
from functools import partial

import numpy as np

from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.dispatch.tls import ExcludeDispatchKeyGuard
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.config import default_device, warn_once
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.generator import default_generator, using_generator
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET
from oneflow_lite.framework.layout import check_layout
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import LAZY_KEY_SET, Tensor, register_legacy_constructor
from oneflow_lite.framework.tensor_meta import Size, make_meta
from oneflow_lite.functors.conversion import convert
from oneflow_lite.functors.promotion import check_converts
from oneflow_lite.functors.registry import composite, functor, get_functor, register_functor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.lazy import capturing_ctx
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.ops.shape import check_geometry

_CPU = Device("cpu")
_get_default_dtype = dt.get_default_dtype
_CONSTANT_ATTRS = ("shape", "dtype", "device", "floating_value", "integer_value", "is_floating_value")


def _int64_bits(value: int, dtype) -> int:
    """``value`` for the constant op's int64 attr: a uint64 value of 2**63 or more as its two's complement (Note
    [uint64 constants] in ops/creation.py); a negative uint64 value refuses here, before it could be read so."""
    if dtype is not dt.uint64 or 0 <= value < 2 ** 63:
        return value
    if not dt.holds(dt.uint64, value):
        raise RuntimeError(f"constant: value {value} cannot be converted to type uint64 without overflow")
    return value - 2 ** 64


class _ConstantFunctor:
    """Shared by zeros / ones / full: one ``constant`` op filled with a Python scalar."""

    def __init__(self):
        self.op = OpBuilder("constant").output("out").build()
        self._attrs = {}

    def _fill(self, size, value, dtype, device):
        if isinstance(value, float):
            values = (size, dtype, device or default_device(), value, 0, True)
        else:
            values = (size, dtype, device or default_device(), 0.0, _int64_bits(int(value), dtype), False)
        return dispatch(self.op, (), cached_attrs(self._attrs, _CONSTANT_ATTRS, values))[0]


def _requires_grad(t, requires_grad, name):
    """``t`` made a leaf that requires grad when asked (the ``requires_grad=`` of creation function ``name``)."""
    if not requires_grad:
        return t
    if not t._meta.dtype.is_floating_point:
        raise RuntimeError(f"{name}(): only Tensors of floating point dtype can require gradients, got "
                           f"{t._meta.dtype.name} (argument 'requires_grad')")
    return t.requires_grad_()


@functor("Zeros")
class ZerosFunctor(_ConstantFunctor):
    def __call__(self, size, dtype, device, requires_grad=False):
        return _requires_grad(self._fill(size, 0, dtype or _get_default_dtype(), device), requires_grad, "zeros")


@functor("Ones")
class OnesFunctor(_ConstantFunctor):
    def __call__(self, size, dtype, device, requires_grad=False):
        return _requires_grad(self._fill(size, 1, dtype or _get_default_dtype(), device), requires_grad, "ones")


@functor("Full")
class FullFunctor(_ConstantFunctor):
    def __call__(self, size, fill_value, dtype, device, requires_grad=False):
        return _requires_grad(self._fill(size, fill_value, dtype or dt.scalar_dtype(fill_value), device),
                              requires_grad, "full")


_ARANGE_ATTRS = ("dtype", "device", "is_floating_range", "float_start", "float_limit", "float_delta",
                 "integer_start", "integer_limit", "integer_delta")


@functor("Arange")
class ArangeFunctor:
    """``arange(start, end, step=1)``: ``ceil((end - start) / step)`` values ``start + i * step``."""

    def __init__(self):
        self.op = OpBuilder("arange").output("out").build()
        self._attrs = {}

    def __call__(self, start, end, step, dtype, device, requires_grad=False):
        floating = isinstance(start, float) or isinstance(end, float) or isinstance(step, float)
        if floating and dtype is dt.int64 and all(math.isfinite(v) for v in (start, end, step)):
            # PyTorch checks the signs of the given bounds, then truncates the bounds and the step (a step of 0.3
            # is 0: an error). Other integer dtypes count in double and step from the truncated start by the
            # truncated step (Note [Integer aranges] in kernels/cpu/creation.py)
            if (step > 0 and end < start) or (step < 0 and end > start):
                raise RuntimeError("arange: upper bound and lower bound inconsistent with step sign")
            start, end, step, floating = int(start), int(end), int(step), False
        if floating:
            values = (dtype or _get_default_dtype(), device or default_device(), True,
                      float(start), float(end), float(step), 0, 0, 1)
        else:
            values = (dtype or dt.int64, device or default_device(), False, 0.0, 0.0, 1.0,
                      int(start), int(end), int(step))
        return _requires_grad(dispatch(self.op, (), cached_attrs(self._attrs, _ARANGE_ATTRS, values))[0],
                              requires_grad, "arange")


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
        device = device or default_device()
        attrs = cached_attrs(self._attrs, ("shape", "dtype", "device"), (size, dtype or _get_default_dtype(), device))
        if generator is None:
            return _requires_grad(dispatch(self.op, (), attrs)[0], requires_grad, self.name)
        if generator.device is not device and device.device_type.has_storage:
            raise RuntimeError(f"{self.name}: Expected a '{device.type}' device type for generator "
                               f"but found '{generator.device.type}'")
        with using_generator(generator):
            return _requires_grad(dispatch(self.op, (), attrs)[0], requires_grad, self.name)


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
        supported = ", ".join(d.name for d in (*reversed(dt.ALL_DTYPES), *reversed(dt.LIMITED_UNSIGNED)))
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
    """Lists, tuples, NumPy arrays with a dim and (as PyTorch) any other Python sequence: range, deque, ..."""
    if isinstance(x, (list, tuple)):
        return True
    if isinstance(x, np.ndarray):
        return x.ndim > 0
    return (type(x) not in _PY_TYPES and isinstance(x, collections.abc.Sequence)
            and not isinstance(x, (str, bytes, bytearray)))


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


def _as_array(data, requested=None):
    """A new native-order NumPy array of ``data`` and the flow dtype PyTorch infers for it.

    Python floats are stored as float64 (what they are) and cast to the inferred or
    requested dtype afterwards, so ``tensor([1e300], dtype=flow.float64)`` is exact; Python ints
    requested as uint64 are stored as uint64, so values above int64's range are exact too.
    """
    if isinstance(data, (np.ndarray, np.generic)):
        np_dtype = data.dtype
        if np_dtype.byteorder not in "=|":
            np_dtype = np_dtype.newbyteorder("=")
        dtype = _numpy_dtype(np_dtype)
        return np.array(data, dtype=np_dtype, order="C"), dtype
    if _is_sequence(data):
        shape, leaves, dtype = _scan(data)
        if any(isinstance(leaf, Tensor) for leaf in leaves):
            leaves = [_leaf_value(leaf) for leaf in leaves]
        values = leaves
    else:
        dtype = _leaf_dtype(data)
        shape, values = (), data
    storage = np.float64 if dtype.is_floating_point else dtype.np_dtype
    if requested is dt.uint64 and dtype is dt.int64:
        storage, dtype = np.uint64, dt.uint64
    try:
        return np.array(values, dtype=storage).reshape(shape), dtype
    except OverflowError as e:
        raise OverflowError(f"tensor(): a value does not fit in {dtype.name}: {e}") from None


def tensor(data, dtype=None, device=None, requires_grad=False, placement=None, sbp=None):
    """A new tensor holding a copy of ``data``: a Python scalar, a nested list / tuple of numbers,
    a NumPy array or scalar, or a Tensor.

    Without ``dtype``, bools give ``bool``, ints ``int64``, floats the default float
    dtype, NumPy data keeps its dtype and a Tensor keeps its own; mixed sequences
    promote (PyTorch's rules). ``device`` defaults to cpu (a Tensor's own device).
    The result is a leaf, detached from any graph ``data`` belongs to, that requires
    grad when ``requires_grad`` is True. With ``placement`` and ``sbp`` it is a global
    tensor whose logical value is ``data`` (functors/global_creation.py).
    """
    if placement is not None or sbp is not None:
        if placement is None or sbp is None:
            raise ValueError("tensor(): a global tensor needs both placement and sbp")
        if isinstance(data, Tensor) and data._key_set & LAZY_KEY_SET:
            raise TypeError(f"tensor(): data is a lazy tensor ({data._array.describe()}) while a global tensor "
                            f"copies a value known when build() runs; create it with placement= and sbp= "
                            f"(flow.arange(n, placement=p, sbp=s)) or use data.to_global(placement, sbp)")
        with ExcludeDispatchKeyGuard(DispatchKey.Lazy):  # a constant of a build (Note [Global source ops in a graph])
            local = tensor(data, dtype=dtype)
        return get_functor("GlobalTensor")(local, placement, sbp, requires_grad)
    if dtype is not None and not isinstance(dtype, dt.dtype):
        raise TypeError(f"tensor(): argument 'dtype' must be flow.dtype, not {type(dtype).__name__}")
    if device is not None:
        if not isinstance(device, (str, Device)):
            raise TypeError(f"tensor(): argument 'device' must be flow.device or str, not {type(device).__name__}")
        device = Device(device)
    if not isinstance(requires_grad, bool):
        raise TypeError(f"tensor(): argument 'requires_grad' must be bool, not {type(requires_grad).__name__}")
    if isinstance(data, Tensor):
        return _requires_grad(convert(data.detach(), device, dtype, copy=True), requires_grad, "tensor")
    array, inferred = _as_array(data, dtype)
    result = Tensor._make(array, make_meta(array.shape, dt.from_numpy_dtype(array.dtype), _CPU))
    return _requires_grad(convert(result, device or default_device(), dtype or inferred), requires_grad, "tensor")


# ---- *_like, empty, eye, linspace / logspace -----------------------------------------------------
# Note [The layout of a *_like tensor]
# ``zeros_like(x)`` and the other *_like functions of a global ``x`` keep its placement and SBP (unless a
# ``device`` asks for a local tensor); ``placement=`` / ``sbp=`` given override them, and make a global tensor
# of a local ``x`` when both are given (OneFlow's rule). ``_like_layout`` returns None for a local result.
def _like_layout(name, x, device, placement, sbp):
    """``(placement, sbp)`` of the result of ``<name>_like(x, ...)``, or None for a local result."""
    m = x._meta
    is_global = bool(m.key_set & GLOBAL_KEY_SET)
    if placement is None and sbp is None:
        return (m.placement, m.nd_sbp) if is_global and device is None else None
    if device is not None:
        raise ValueError(f"{name}: give either device= (a local tensor) or placement= and sbp= (a global "
                         f"tensor), not both")
    if not is_global and (placement is None or sbp is None):
        missing = "placement" if placement is None else "sbp"
        raise ValueError(f"{name}: a global result of a local input needs both placement= and sbp=; "
                         f"{missing}= is missing")
    return (placement or m.placement, m.nd_sbp if sbp is None else sbp)


# Note [The layout of a *_like tensor in a graph]
# Inside an nn.Graph's build a tensor of the build is lazy: it holds its logical meta only, its placement and SBP
# are decided when the graph's plan is made. A *_like call of such a tensor (with no device / placement / sbp
# given) captures its local source op and records it as laid out like that tensor (``place_like``): when the job
# runs on global tensors, the plan gives the source op the placement and nd-SBP it gave the tensor, so the result
# is what the eager call on the global tensor gives (Note [Global source ops in a graph]); in a local job it is
# the local source op it always was.
def _lazy_like(out: Tensor, name, x, device, placement, sbp) -> Tensor:
    """``out``, the local result of ``<name>_like(x)``, recorded as laid out like lazy ``x`` (Note above)."""
    if x._key_set & LAZY_KEY_SET and device is None and placement is None and sbp is None:
        ctx = capturing_ctx()
        if ctx is not None:
            ctx.place_like(out, x, name)
    return out


@composite("FullLike")
def full_like(x, fill_value, dtype, device, placement=None, sbp=None, requires_grad=False):
    """``full_like(input, fill_value)``: ``full`` of ``input``'s shape, and its dtype (not the fill value's)
    and device unless given (Note [The layout of a *_like tensor])."""
    return _full_like("full_like", x, fill_value, dtype, device, placement, sbp, requires_grad)


def _full_like(name, x, fill_value, dtype, device, placement, sbp, requires_grad):
    m = x._meta
    layout = _like_layout(name, x, device, placement, sbp)
    if layout is not None:
        return get_functor("GlobalFull")(m.shape, fill_value, dtype or m.dtype, *layout, requires_grad)
    return _lazy_like(F.full(m.shape, fill_value, dtype=dtype or m.dtype, device=device or m.device,
                             requires_grad=requires_grad), name, x, device, placement, sbp)


@composite("ZerosLike")
def zeros_like(x, dtype, device, placement=None, sbp=None, requires_grad=False):
    """``zeros_like(input)``: ``full_like(input, 0)``."""
    return _full_like("zeros_like", x, 0, dtype, device, placement, sbp, requires_grad)


@composite("OnesLike")
def ones_like(x, dtype, device, placement=None, sbp=None, requires_grad=False):
    """``ones_like(input)``: ``full_like(input, 1)``."""
    return _full_like("ones_like", x, 1, dtype, device, placement, sbp, requires_grad)


@functor("Empty")
class EmptyFunctor(_ConstantFunctor):
    """``empty(*size)``: uninitialised in PyTorch; here filled with zeros (a tensor always holds defined values)."""

    def __call__(self, size, dtype, device, requires_grad=False):
        return _requires_grad(self._fill(size, 0, dtype or _get_default_dtype(), device), requires_grad, "empty")


@composite("EmptyLike")
def empty_like(x, dtype, device, placement=None, sbp=None, requires_grad=False):
    """``empty_like(input)``: as ``zeros_like`` (see ``empty``)."""
    return _full_like("empty_like", x, 0, dtype, device, placement, sbp, requires_grad)


@functor("Eye")
class EyeFunctor:
    """``eye(n, m=None)``: an ``n`` x ``m`` (``n`` x ``n``) matrix with ones on the diagonal."""

    def __init__(self):
        self.op = OpBuilder("eye").output("out").build()
        self._attrs = {}

    def __call__(self, n, m, dtype, device, requires_grad=False):
        values = (n, n if m is None else m, dtype or _get_default_dtype(), device or default_device())
        return _requires_grad(dispatch(self.op, (), cached_attrs(self._attrs, ("rows", "cols", "dtype", "device"),
                                                                 values))[0], requires_grad, "eye")


def _float_scalar(name, arg, value) -> float:
    """``value`` (a bool counts as 0 / 1, as in PyTorch) as a float."""
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
        values = (_float_scalar(self.name, "start", start), _float_scalar(self.name, "end", end), steps,
                  dtype or _get_default_dtype(), device or default_device())
        d = values[3]
        if not d.is_floating_point and steps != 0:  # the bounds are values of the dtype (PyTorch's check, made
            # only when there is a value to compute)
            for arg, v in (("start", start), ("end", end)):
                if isinstance(v, (int, float)):
                    check_converts(self.name, arg, v, d)
        return values

    def __call__(self, start, end, steps, dtype, device, requires_grad=False):
        values = self._values(start, end, steps, dtype, device)
        out = dispatch(self.op, (), cached_attrs(self._attrs, self.names, values))[0]
        return _requires_grad(out, requires_grad, "linspace")


@functor("Logspace")
class LogspaceFunctor(LinspaceFunctor):
    """``logspace(start, end, steps, base=10)``: ``base ** linspace(start, end, steps)``."""

    op_type = name = "logspace"
    names = LinspaceFunctor.names + ("base",)

    def __call__(self, start, end, steps, base, dtype, device, requires_grad=False):
        values = (*self._values(start, end, steps, dtype, device), base)
        out = dispatch(self.op, (), cached_attrs(self._attrs, self.names, values))[0]
        return _requires_grad(out, requires_grad, "logspace")


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
        device = device or default_device()
        attrs = cached_attrs(self._attrs, ("low", "high", "shape", "dtype", "device"),
                             (low, high, size, dtype or dt.int64, device))
        return _requires_grad(_random(self.op, (), attrs, generator, device, "randint"), requires_grad, "randint")


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
        device = device or default_device()
        attrs = cached_attrs(self._attrs, ("n", "dtype", "device"), (n, dtype or dt.int64, device))
        return _requires_grad(_random(self.op, (), attrs, generator, device, "randperm"), requires_grad, "randperm")


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
        device = device or default_device()
        attrs = cached_attrs(self._attrs, ("shape", "dtype", "device", "mean", "std"),
                             (size, dtype or _get_default_dtype(), device, mean, std))
        return _requires_grad(_random(self.op, (), attrs, generator, device, "normal"), requires_grad, "normal")


@composite("RandLike")
def rand_like(x, dtype, device, placement=None, sbp=None, requires_grad=False):
    """``rand_like(input)``: uniform samples in [0, 1) of ``input``'s shape (and dtype / device / layout unless given)."""
    m = x._meta
    layout = _like_layout("rand_like", x, device, placement, sbp)
    if layout is not None:
        return F.rand(m.shape, dtype=dtype or m.dtype, placement=layout[0], sbp=layout[1],
                       requires_grad=requires_grad)
    return _lazy_like(F.rand(m.shape, dtype=dtype or m.dtype, device=device or m.device, requires_grad=requires_grad),
                      "rand_like", x, device, placement, sbp)


@composite("RandnLike")
def randn_like(x, dtype, device, placement=None, sbp=None, requires_grad=False):
    """``randn_like(input)``: standard normal samples of ``input``'s shape (and dtype / device / layout unless given)."""
    m = x._meta
    layout = _like_layout("randn_like", x, device, placement, sbp)
    if layout is not None:
        return F.randn(m.shape, dtype=dtype or m.dtype, placement=layout[0], sbp=layout[1],
                       requires_grad=requires_grad)
    return _lazy_like(F.randn(m.shape, dtype=dtype or m.dtype, device=device or m.device, requires_grad=requires_grad),
                      "randn_like", x, device, placement, sbp)


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


_INIT_OPS: dict = {}  # op type -> (op expr, attr cache) of the source ops in-place initialisers write with


def _init_op(op_type):
    """The op expr of the source op ``op_type`` and its attr cache (built on first use)."""
    entry = _INIT_OPS.get(op_type)
    if entry is None:
        entry = _INIT_OPS[op_type] = (OpBuilder(op_type).output("out").build(), {})
    return entry


def _fill_random(self, op_type, names, values, generator, name):
    """Write the source op ``op_type`` (attrs shape / dtype / device of ``self``, and ``names`` = ``values``)
    into ``self``, drawing from ``generator`` when given; returns ``self``."""
    m = self._meta
    op, cache = _init_op(op_type)
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
    return _fill_random(self, "uniform", ("from", "to"), (low, high), generator, "uniform_")


def normal_(self, *args, generator=None, **kwargs):
    """``normal_(mean=0, std=1, *, generator=None)``: fill with samples of N(mean, std**2); returns ``self``."""
    mean, std = _range_args("normal_", args, kwargs, ("mean", "std"), (0.0, 1.0))
    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    return _fill_random(self, "normal", ("mean", "std"), (mean, std), generator, "normal_")


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
        supported = ", ".join(d.name for d in (*reversed(dt.ALL_DTYPES), *reversed(dt.LIMITED_UNSIGNED)))
        raise TypeError(f"from_numpy(): can't convert np.ndarray of type {np_dtype}. The only supported types "
                        f"are: {supported}.") from None
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and oneflow_lite does not support non-writable "
                      "tensors: writing to the tensor (in place) will fail.", UserWarning, stacklevel=2)
    return Tensor._make(ndarray, make_meta(ndarray.shape, dtype, _CPU))


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False) -> Tensor:
    """A 1-d cpu tensor of ``size`` elements of ``dtype`` (default: the default float dtype) read from the
    binary file ``filename``: with ``shared``, a memory map of the file (created or extended to fit), so writes
    to the tensor go to the file; otherwise a copy of its first ``size * itemsize`` bytes."""
    check_layout("from_file", layout)
    d = dt.get_default_dtype() if dtype is None else dtype
    if not isinstance(d, dt.dtype):
        raise TypeError(f"from_file(): argument 'dtype' must be flow.dtype, not {type(d).__name__}")
    if device is not None and Device(device).type != "cpu":
        raise RuntimeError(f"from_file(): only cpu tensors can be mapped to files, got device '{device}'")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"from_file(): argument 'size' must be a non-negative int, got {size!r}")
    nbytes = size * d.itemsize
    if shared:
        with open(filename, "ab") as f:  # created if missing; extended to nbytes
            if f.tell() < nbytes:
                f.truncate(nbytes)
        array = np.memmap(filename, dtype=d.np_dtype, mode="r+", shape=(size,)) if size else np.empty(0, d.np_dtype)
        return from_numpy(array)
    have = os.path.getsize(filename)
    if have < nbytes:
        raise RuntimeError(f"from_file(): trying to read {size} {d.name} elements ({nbytes} bytes) from "
                           f"'{filename}', which holds {have} bytes")
    return from_numpy(np.fromfile(filename, dtype=d.np_dtype, count=size))


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False) -> Tensor:
    """An uninitialised tensor of shape ``size`` whose dims lie in memory in the order ``physical_layout``
    (outermost first): ``empty_permuted((2, 3, 4), (0, 2, 1)).stride() == (12, 1, 3)``."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted(): physical_layout {list(order)} is not a permutation of the "
                           f"{len(size)} dims of size {list(size)}")
    check_layout("empty_permuted", layout)
    physical = F.empty([size[i] for i in order], dtype=dtype, device=device)
    out = physical.permute(*[order.index(i) for i in range(len(size))])
    return out.requires_grad_(True) if requires_grad else out


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


_NUMPY_DTYPES = frozenset(d.np_dtype for d in dt.ALL_DTYPES + dt.STORAGE_DTYPES)

Tensor.uniform_ = uniform_
Tensor.normal_ = normal_
Tensor.new_zeros = _new("new_zeros", "zeros")
Tensor.new_ones = _new("new_ones", "ones")
Tensor.new_empty = _new("new_empty", "empty")
Tensor.new_full = _new("new_full", "full", with_value=True)
Tensor.new_tensor = new_tensor


# ---- multinomial, bernoulli, poisson and the in-place distributions ---------------------------------------
@functor("Multinomial")
class MultinomialFunctor:
    """``multinomial(input, num_samples, replacement=False)``: category indices drawn from each row of
    probabilities (1-D or 2-D, not necessarily normalised)."""

    def __init__(self):
        self.op = OpBuilder("multinomial").input("x").output("out").build()
        self._attrs = {}

    def __call__(self, x, num_samples, replacement, generator):
        attrs = cached_attrs(self._attrs, ("num_samples", "replacement"), (num_samples, bool(replacement)))
        return _random(self.op, (x,), attrs, generator, x._meta.device, "multinomial")


_PROBABILITY_OPS: dict = {}  # op type -> op expr of bernoulli / poisson


def _probability_op(op_type):
    """The op expr of ``op_type`` (one input ``x``), built on first use."""
    op = _PROBABILITY_OPS.get(op_type)
    if op is None:
        op = _PROBABILITY_OPS[op_type] = OpBuilder(op_type).input("x").output("out").build()
    return op


_BERNOULLI_ATTRS: dict = {}


def _bernoulli(probs, dtype, generator, out=None):
    """1 with probability ``probs`` (a floating tensor), elementwise, in ``dtype`` (into ``out`` when given)."""
    attrs = cached_attrs(_BERNOULLI_ATTRS, ("dtype",), (dtype,))
    op = _probability_op("bernoulli")
    outputs = None if out is None else (out,)
    if generator is None:
        return dispatch(op, (probs,), attrs, outputs)[0]
    device = probs._meta.device
    if generator.device is not device and device.device_type.has_storage:
        raise RuntimeError(f"bernoulli: Expected a '{device.type}' device type for generator "
                           f"but found '{generator.device.type}'")
    with using_generator(generator):
        return dispatch(op, (probs,), attrs, outputs)[0]


@composite("Bernoulli")
def bernoulli(x, generator):
    """``bernoulli(input)``: 1 with probability ``input[i]``, in ``input``'s (floating) dtype."""
    return _bernoulli(x, x._meta.dtype, generator)


def _probability(name, p) -> float:
    if not 0 <= p <= 1:
        raise RuntimeError(f"{name}: expected 0 <= p <= 1, but got p={p}")
    return float(p)


@composite("BernoulliProb")
def bernoulli_prob(x, p, generator):
    """``bernoulli(input, p)``: 1 with probability ``p``, of ``input``'s shape, dtype and device."""
    m = x._meta
    probs = F.full(m.shape, _probability("bernoulli", p), dtype=dt.float64, device=m.device)
    return _bernoulli(probs, m.dtype, generator)


def bernoulli_(self, p=0.5, *, generator=None):
    """``bernoulli_(p=0.5)``: fill with 1 with probability ``p`` (a number, or a tensor broadcast to this
    tensor's shape), else 0; returns ``self``."""
    m = self._meta
    if isinstance(p, Tensor):
        probs = p if p._meta.shape == m.shape else F.expand(p, m.shape)
    elif isinstance(p, (int, float, np.integer, np.floating)) and not isinstance(p, (bool, np.bool_)):
        probs = F.full(m.shape, _probability("bernoulli_", p), dtype=dt.float64, device=m.device)
    else:
        raise TypeError(f"bernoulli_(): argument 'p' must be float or Tensor, not {type(p).__name__}")
    return _bernoulli(probs, m.dtype, generator, self)


@functor("Poisson")
class PoissonFunctor:
    """``poisson(input)``: Poisson samples with rates ``input`` (floating, non-negative), in its dtype."""

    def __init__(self):
        self.op = _probability_op("poisson")

    def __call__(self, x, generator):
        return _random(self.op, (x,), None, generator, x._meta.device, "poisson")


@functor("Binomial")
class BinomialFunctor:
    """``binomial(count, prob)``: binomial samples (``count`` trials, success probability ``prob``, broadcast,
    one floating dtype), in that dtype; a ``count`` with ``prob == 1`` is returned as it is, as PyTorch does."""

    def __init__(self):
        self.op = OpBuilder("binomial").input("count").input("prob").output("out").build()

    def __call__(self, count, prob, generator):
        return _random(self.op, (count, prob), None, generator, count._meta.device, "binomial")


def _float_arg(name, arg, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}(): argument '{arg}' must be float, not {type(value).__name__}")
    return float(value)


def exponential_(self, lambd=1.0, *, generator=None):
    """``exponential_(lambd=1)``: fill with samples of density ``lambd * exp(-lambd * x)``; returns ``self``."""
    value = _float_arg("exponential_", "lambd", lambd)
    return _fill_random(self, "exponential", ("lambd",), (value,), generator, "exponential_")


def geometric_(self, p, *, generator=None):
    """``geometric_(p)``: fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    value = _float_arg("geometric_", "p", p)
    return _fill_random(self, "geometric", ("p",), (value,), generator, "geometric_")


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """``log_normal_(mean=1, std=2)``: fill with ``exp(N(mean, std**2))`` samples; returns ``self``."""
    values = (_float_arg("log_normal_", "mean", mean), _float_arg("log_normal_", "std", std))
    return _fill_random(self, "log_normal", ("mean", "std"), values, generator, "log_normal_")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """``cauchy_(median=0, sigma=1)``: fill with Cauchy samples; returns ``self``."""
    values = (_float_arg("cauchy_", "median", median), _float_arg("cauchy_", "sigma", sigma))
    return _fill_random(self, "cauchy", ("median", "sigma"), values, generator, "cauchy_")


# The integers random_() draws from without bounds: a floating dtype's exactly representable ones.
_FLOAT_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}


def _random_upper(dtype) -> int:
    """One past the largest value ``random_`` draws for ``dtype`` when ``to`` is not given (int64's maximum
    itself is left out: the bound is an int64 attr)."""
    if dtype is dt.bool_:
        return 2
    digits = _FLOAT_DIGITS.get(dtype)
    if digits is not None:
        return 2**digits + 1
    return min(int(np.iinfo(dtype.np_dtype).max) + 1, 2**63 - 1)


def _int_arg(name, arg, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}(): argument '{arg}' must be int, not {type(value).__name__}")
    return int(value)


def random_(self, *args, generator=None, **kwargs):
    """``random_()``, ``random_(to)``, ``random_(from, to=None)``: fill with integers uniform in [from, to)
    (from 0; up to the dtype's largest exactly representable integer when ``to`` is None); returns ``self``."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments but {len(args)} were given")
    unknown = set(kwargs) - {"from", "to"}
    if unknown:
        raise TypeError(f"random_() got an unexpected keyword argument '{unknown.pop()}'")
    if len(args) == 1 and not kwargs:
        low, high = 0, args[0]
    else:
        values = dict(zip(("from", "to"), args))
        for key, value in kwargs.items():
            if key in values:
                raise TypeError(f"random_() got multiple values for argument '{key}'")
            values[key] = value
        low, high = values.get("from", 0), values.get("to")
    low = _int_arg("random_", "from", low)
    high = _random_upper(self._meta.dtype) if high is None else _int_arg("random_", "to", high)
    return _fill_random(self, "randint", ("low", "high"), (low, high), generator, "random_")


@composite("RandintLike")
def randint_like(x, high, dtype, device, placement=None, sbp=None, requires_grad=False):
    """``randint_like(input, high)``: ``randint(0, high)`` of ``input``'s shape (and dtype / device unless given)."""
    return randint_like_low(x, 0, high, dtype, device, placement, sbp, requires_grad)


@composite("RandintLikeLow")
def randint_like_low(x, low, high, dtype, device, placement=None, sbp=None, requires_grad=False):
    """``randint_like(input, low, high)``: ``randint(low, high)`` of ``input``'s shape (and dtype / device /
    layout unless given: Note [The layout of a *_like tensor])."""
    m = x._meta
    layout = _like_layout("randint_like", x, device, placement, sbp)
    if layout is not None:
        return F.randint(low, high, m.shape, dtype=dtype or m.dtype, placement=layout[0], sbp=layout[1],
                         requires_grad=requires_grad)
    return _lazy_like(F.randint(low, high, m.shape, dtype=dtype or m.dtype, device=device or m.device,
                                requires_grad=requires_grad), "randint_like", x, device, placement, sbp)


# ---- windows, triangle indices, scalar_tensor, empty_strided, range ----------------------------------------
_WINDOW_ATTRS = ("kind", "window_length", "periodic", "alpha", "beta", "dtype", "device")
# kind -> the names of its parameters after ``periodic`` and their defaults (alpha, beta)
_WINDOW_PARAMS = {"hann": (), "hamming": ("alpha", "beta"), "blackman": (), "bartlett": (), "kaiser": ("beta",)}
_WINDOW_DEFAULTS = {"hamming": (0.54, 0.46), "kaiser": (0.0, 12.0)}


class WindowFunctor:
    """``<kind>_window(window_length, periodic=True, [alpha, beta | beta], *, dtype, device, requires_grad)``."""

    def __init__(self, kind):
        self.kind = kind
        self.op = OpBuilder("window").output("out").build()
        self._attrs = {}

    def __call__(self, window_length, periodic, *args):
        *params, dtype, device, requires_grad = args
        alpha, beta = _WINDOW_DEFAULTS.get(self.kind, (0.54, 0.46))
        named = dict(zip(_WINDOW_PARAMS[self.kind], params))
        alpha, beta = named.get("alpha", alpha), named.get("beta", beta)
        values = (self.kind, window_length, periodic, float(alpha), float(beta), dtype or _get_default_dtype(),
                  device or default_device())
        out = dispatch(self.op, (), cached_attrs(self._attrs, _WINDOW_ATTRS, values))[0]
        return _requires_grad(out, requires_grad, f"{self.kind}_window")


for _kind in _WINDOW_PARAMS:
    register_functor(f"{_kind.capitalize()}Window", partial(WindowFunctor, _kind))


class TriangleIndicesFunctor:
    """``tril_indices`` / ``triu_indices(row, col, offset=0)``: the (2, N) coordinates of the triangle."""

    def __init__(self, upper):
        self.upper = upper
        self.op = OpBuilder("triangle_indices").output("out").build()
        self._attrs = {}

    def __call__(self, row, col, offset, dtype, device):
        values = (row, col, offset, self.upper, dtype or dt.int64, device or default_device())
        return dispatch(self.op, (), cached_attrs(self._attrs, ("row", "col", "offset", "upper", "dtype", "device"),
                                                  values))[0]


register_functor("TrilIndices", partial(TriangleIndicesFunctor, False))
register_functor("TriuIndices", partial(TriangleIndicesFunctor, True))


@composite("ScalarTensor")
def scalar_tensor(s, dtype, device, requires_grad=False):
    """``scalar_tensor(s)``: a 0-d tensor of ``s``, of the default float dtype unless ``dtype`` is given."""
    return F.full((), s, dtype=dtype or _get_default_dtype(), device=device, requires_grad=requires_grad)


@composite("EmptyStrided")
def empty_strided(size, stride, dtype, device, requires_grad=False):
    """``empty_strided(size, stride)``: ``empty(size)``; tensors here are always contiguous, so ``stride``
    (one per dimension) only decides the memory layout PyTorch would use."""
    check_geometry(lambda message: RuntimeError(f"empty_strided: {message}"), size, stride, 0)
    return F.empty(size, dtype=dtype, device=device, requires_grad=requires_grad)


@composite("Range")
def range_(start, end, step, dtype, device, requires_grad=False):
    """``range(start, end, step=1)`` (deprecated in PyTorch): ``start, start + step, ...`` up to ``end``
    *inclusive*, of the default float dtype unless ``dtype`` is given."""
    warn_once("oneflow_lite.range is deprecated and will be removed in a future release because its behavior is "
              "inconsistent with Python's range builtin. Instead, use oneflow_lite.arange, which produces values "
              "in [start, end).")
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if not math.isfinite(step):
        raise RuntimeError(f"range: step must be finite, got {step}")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"range: unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("range: upper bound and lower bound inconsistent with step sign")
    if dtype is not None and not dtype.is_floating_point and dtype is not dt.bool_:
        # an integer dtype: PyTorch truncates the bounds and the step first (a step of 0.3 is 0: an error)
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise RuntimeError("range: step must be nonzero")
        count = (end - start) // step + 1
        return _requires_grad(F.arange(start, start + count * step, step, dtype=dtype, device=device),
                              requires_grad, "range")
    count = int((end - start) / step + 1)  # PyTorch adds 1 in double before truncating (it rounds past 2**53)
    offsets = F.arange(0, count, dtype=dt.float64, device=device)
    values = F.add(F.mul(offsets, float(step)), float(start))
    return _requires_grad(F.cast(values, dtype or _get_default_dtype()), requires_grad, "range")


# ---- frombuffer, asarray, rng state ------------------------------------------------------------------------
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    """A 1-D cpu tensor sharing memory with ``buffer`` (any object with the buffer protocol): ``count`` items
    of ``dtype`` (-1: all) from byte ``offset``."""
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be flow.dtype, not {type(dtype).__name__}")
    try:
        array = np.frombuffer(buffer, dtype=dtype.np_dtype, count=count, offset=offset)
    except TypeError:
        raise TypeError(f"frombuffer(): object of type {type(buffer).__name__} does not implement the buffer "
                        f"protocol") from None
    except ValueError as e:
        raise ValueError(f"frombuffer(): {e} (buffer of {memoryview(buffer).nbytes} bytes, offset={offset}, "
                         f"count={count}, dtype={dtype.name})") from None
    if array.size == 0:
        raise ValueError("frombuffer(): both buffer length and count must be positive after the offset")
    if not array.flags.writeable:
        warn_once("The given buffer is not writable, and oneflow_lite does not support non-writable tensors: "
                  "writing to the tensor (in place) will fail.")
        array = np.frombuffer(buffer, dtype=dtype.np_dtype, count=count, offset=offset)
    return _requires_grad(Tensor._make(array, make_meta(array.shape, dtype, _CPU)), requires_grad, "frombuffer")


def _aliases(obj, result) -> bool:
    """Whether the tensor ``result`` shares ``obj``'s memory (``obj`` a Tensor or anything else)."""
    if result is obj:
        return True
    a = result._array
    if not isinstance(a, np.ndarray):
        return False
    source = obj._array if isinstance(obj, Tensor) else obj
    return isinstance(source, np.ndarray) and np.shares_memory(source, a)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``obj`` as a tensor (PyTorch's ``asarray``): shares memory with a Tensor or NumPy array when
    ``dtype`` and ``device`` allow and ``copy`` is not True; ``copy=False`` makes a needed copy an error."""
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"asarray(): argument 'copy' must be bool or None, not {type(copy).__name__}")
    if copy:
        return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)
    result = as_tensor(obj, dtype=dtype, device=device)
    if copy is False and not _aliases(obj, result):
        raise ValueError("asarray(): can't alias the given object with the requested dtype / device (copy=False)")
    return _requires_grad(result, requires_grad, "asarray")


def get_rng_state() -> Tensor:
    """The cpu default generator's state as a uint8 tensor (see Note [Generator state])."""
    return from_numpy(default_generator("cpu").state_bytes())


def set_rng_state(new_state) -> None:
    """Restore the cpu default generator's state from ``get_rng_state()``."""
    if not isinstance(new_state, Tensor):
        raise TypeError(f"set_rng_state(): argument 'new_state' must be Tensor, not {type(new_state).__name__}")
    default_generator("cpu").set_state(new_state.numpy())


# ---- the legacy constructor (Note [Legacy constructor] in framework/tensor.py) --------------------------
def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _legacy_constructor(dtype, args, kwargs):
    """``Tensor()``, ``Tensor(*sizes)``, ``Tensor(size=...)``, ``Tensor(data)``, ``Tensor(other)`` with
    ``dtype`` (None: the default float dtype), and ``device=``."""
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None)
    size = kwargs.pop("size", None)
    if kwargs:
        raise TypeError(f"new(): unexpected keyword argument '{next(iter(kwargs))}' (the legacy constructor takes "
                        f"data or sizes, and device=; use flow.tensor(data, dtype=...) for a dtype)")
    target = dtype or _get_default_dtype()
    if size is not None:
        if args:
            raise TypeError("new(): give the sizes either positionally or as size=, not both")
        return F.empty(size, dtype=target, device=device)
    if not args:
        return F.empty((0,), dtype=target, device=device)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        if dtype is not None and first._meta.dtype is not dtype:
            raise TypeError(f"expected {dtype.name} (got {first._meta.dtype.name})")
        return first
    if len(args) == 1 and isinstance(first, Size):
        args = tuple(first)
    elif len(args) == 1 and not _is_int(first):
        if isinstance(first, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(first).__name__}'")
        if not isinstance(first, (list, tuple, np.ndarray)):
            raise TypeError(f"new(): data must be a sequence (got {type(first).__name__})")
        return tensor(first, dtype=target, device=device)
    bad = next((a for a in args if not _is_int(a)), None)
    if bad is not None:
        raise TypeError(f"new(): argument 'size' must be a tuple of ints, but found element of type "
                        f"{type(bad).__name__}")
    return F.empty(tuple(int(a) for a in args), dtype=target, device=device)


def new(self, *args, **kwargs):
    """``new(...)``: the legacy constructor with this tensor's dtype and (unless given) device."""
    kwargs.setdefault("device", self._meta.device)
    return _legacy_constructor(self._meta.dtype, args, kwargs)


register_legacy_constructor(_legacy_constructor)
Tensor.new = new
Tensor.bernoulli_ = bernoulli_
Tensor.exponential_ = exponential_
Tensor.geometric_ = geometric_
Tensor.log_normal_ = log_normal_
Tensor.cauchy_ = cauchy_
Tensor.random_ = random_
