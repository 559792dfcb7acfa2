"""Tensor methods and operators, built from the functional API's functions.

The methods, and the unary operators ``__neg__`` / ``__invert__`` / ``__abs__`` / ``__pos__``,
are the entries of the functional API declared with ``method(...)``
(functors/functional_api.py); the binary operators are listed here, and
``x.where(condition, y)`` / ``x.polygamma(n)`` (which take ``x`` second) are written here, as are the
Tensor-only methods that run ops: the in-place view ops (``t_``, ``squeeze_``, ``as_strided_``, ...),
``resize_`` / ``set_``, ``unfold``, ``sum_to_size``, ``mT`` / ``H``, ``apply_`` / ``map_``, ``__contains__``,
``__reversed__``, ``__complex__``.

``x.relu()``, ``x + y``, ``x @ y``, ``x.sum(1)``, ... call the same
functions as ``flow.relu`` and friends, so argument checking,
overloads and errors are identical. Binary operators return ``NotImplemented``
for operands that are neither tensors nor numbers, so Python can try the other
side (and ``t == None`` is ``False``, as in PyTorch).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from oneflow_lite import functional as F
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.legacy_storage import storage_type_of
from oneflow_lite.framework.storage import (
    TypedStorage,
    UntypedStorage,
    array_geometry,
    contiguous_strides,
    required_size,
    storage_array,
    strided_view,
)
from oneflow_lite.framework.tensor import (
    AUTOGRAD_KEY_SET,
    OWN_DTYPE,
    AutogradMeta,
    Tensor,
    has_live_views,
    link_view,
    version_counter,
)
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.functors import creation
from oneflow_lite.functors.functional_api import FUNCTIONAL_API, Entry
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.ops.shape import check_geometry

_OPERAND = (Tensor, numbers.Number, np.generic)

# operator -> (functional function name, whether the tensor is the right operand)
OPERATORS = {
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("sub", False), "__rsub__": ("sub", True),
    "__mul__": ("mul", False), "__rmul__": ("mul", True),
    "__truediv__": ("div", False), "__rtruediv__": ("div", True),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    "__eq__": ("eq", False), "__ne__": ("ne", False),
    "__lt__": ("lt", False), "__le__": ("le", False), "__gt__": ("gt", False), "__ge__": ("ge", False),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__pow__": ("pow", False), "__rpow__": ("pow", True), "__mod__": ("remainder", False),
    "__rmod__": ("remainder", True), "__and__": ("bitwise_and", False), "__rand__": ("bitwise_and", True),
    "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", True), "__xor__": ("bitwise_xor", False),
    "__rxor__": ("bitwise_xor", True), "__lshift__": ("bitwise_left_shift", False),
    "__rlshift__": ("bitwise_left_shift", True), "__rshift__": ("bitwise_right_shift", False),
    "__rrshift__": ("bitwise_right_shift", True),
}
INPLACE_OPERATORS = {"__iadd__": "add", "__isub__": "sub", "__imul__": "mul", "__itruediv__": "div",
                     "__idiv__": "div", "__ifloordiv__": "floor_divide", "__ipow__": "pow", "__imod__": "remainder",
                     "__iand__": "bitwise_and", "__ior__": "bitwise_or", "__ixor__": "bitwise_xor",
                     "__ilshift__": "bitwise_left_shift", "__irshift__": "bitwise_right_shift"}


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _inplace_method(fn, name):
    def method(self, *args, **kwargs):
        return fn(self, *args, inplace=True, **kwargs)
    method.__name__ = name
    method.__doc__ = f"In-place version of :meth:`{fn.__name__}`."
    return method


def _operator(fn, reflected, name):
    # Two tensors: the functional function's plan for the two types when it has one (Note [Functional
    # fast path]), which saves a call layer on the hottest path. `type(other) is Tensor` first: the
    # isinstance check against the numbers.Number ABC costs more than the rest of the operator's work.
    plans_get = fn._plans.get
    if reflected:
        def op(self, other):
            if type(other) is Tensor:
                plan = plans_get((Tensor, type(self)))
                if plan is not None and not plan[1]:
                    return plan[0](other, self)
                return fn(other, self)
            return fn(other, self) if isinstance(other, _OPERAND) else NotImplemented
    else:
        def op(self, other):
            if type(other) is Tensor:
                plan = plans_get((type(self), Tensor))
                if plan is not None and not plan[1]:
                    return plan[0](self, other)
                return fn(self, other)
            return fn(self, other) if isinstance(other, _OPERAND) else NotImplemented
    op.__name__ = name
    return op


def _inplace_operator(fn, name):
    def op(self, other):
        return fn(self, other, inplace=True) if isinstance(other, _OPERAND) else NotImplemented
    op.__name__ = name
    return op


def _attach_extras():
    """Methods whose call differs from the functional one: ``x.where(c, y)`` is ``where(c, x, y)``,
    ``x.polygamma(n)`` is ``polygamma(n, x)``."""
    Tensor.where = lambda self, condition, y: F.where(condition, self, y)
    Tensor.polygamma = lambda self, n: F.polygamma(n, self)
    Tensor.polygamma_ = lambda self, n: F.polygamma(n, self, inplace=True)


def _attach():
    for fname, entry in FUNCTIONAL_API.items():
        if isinstance(entry, Entry):  # method variants (functional_api.method)
            fn = getattr(F, fname)
            for name in (fname, *entry.also):
                setattr(Tensor, name, _method(fn))
            if entry.inplace:
                setattr(Tensor, fname + "_", _inplace_method(fn, fname + "_"))
    for name, (fname, reflected) in OPERATORS.items():
        setattr(Tensor, name, _operator(getattr(F, fname), reflected, name))
    for name, fname in INPLACE_OPERATORS.items():
        setattr(Tensor, name, _inplace_operator(getattr(F, fname), name))
    _attach_extras()
    Tensor.__hash__ = object.__hash__  # defining __eq__ would otherwise drop hashing
    # As torch.Tensor: NumPy scalars and arrays defer to the tensor's reflected operators, so
    # ``np.float32(2) * t`` is a Tensor, not an ndarray made through ``__array__``.
    Tensor.__array_priority__ = 1000


_attach()


# ---- [compat s3] Tensor-only methods -------------------------------------------------------------------------
# Note [In-place view ops]
# ``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_`` / ``swapaxes_`` / ``swapdims_``, ``as_strided_`` and
# ``resize_`` change a tensor's shape in place. The tensor takes over the buffer, meta and autograd history of
# the view op's result (so backward goes through the view op, as PyTorch's TBackward after ``t_()``) and its
# version is bumped, so a saved copy of its old self is caught at backward. As in PyTorch, a leaf that
# requires grad refuses them while grad mode is on.
def _in_place_view(name, self, view):
    ag = self._ag
    if self._key_set & AUTOGRAD_KEY_SET and (ag is None or ag.grad_fn is None) \
            and not _tls.excluded & AUTOGRAD_KEY_SET:  # grad mode on
        raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place operation.")
    _take_buffer(self, view._array, view._meta)
    view_ag = view._ag
    if view_ag is not None and view_ag.grad_fn is not None:
        self._ag = view_ag
        self._key_set = view._key_set
    version_counter(self).version += 1
    return self


def _take_buffer(self, array, meta):
    """Give ``self`` a new buffer and meta (an in-place shape change: its leaf's grad accumulator, which
    recorded the old meta, is made again)."""
    ag = self._ag
    if ag is not None and meta is not self._meta:
        ag.grad_accumulator = None
    self._array = array
    self._meta = meta


def _int_args(name, args, what="size"):
    """``f(2, 3)`` or ``f((2, 3))``: the ints of a varargs size."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for a in args:
        if not isinstance(a, (int, np.integer)) or isinstance(a, (bool, np.bool_)):
            raise TypeError(f"{name}(): argument '{what}' must be tuple of ints, but found element of type "
                            f"{type(a).__name__}")
    return tuple(int(a) for a in args)


def squeeze_(self, dim=None):
    """In-place ``squeeze`` (Note [In-place view ops])."""
    return _in_place_view("squeeze_", self, F.squeeze(self) if dim is None else F.squeeze(self, dim))


def unsqueeze_(self, dim):
    """In-place ``unsqueeze`` (Note [In-place view ops])."""
    return _in_place_view("unsqueeze_", self, F.unsqueeze(self, dim))


def t_(self):
    """In-place ``t`` (Note [In-place view ops])."""
    if self._meta.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self._meta.ndim}D")
    return _in_place_view("t_", self, F.t(self))


def transpose_(self, dim0, dim1):
    """In-place ``transpose`` (Note [In-place view ops])."""
    return _in_place_view("transpose_", self, F.transpose(self, dim0, dim1))


def swapaxes_(self, axis0, axis1):
    """In-place ``swapaxes`` (Note [In-place view ops])."""
    return _in_place_view("swapaxes_", self, F.transpose(self, axis0, axis1))


def swapdims_(self, dim0, dim1):
    """In-place ``swapdims`` (Note [In-place view ops])."""
    return _in_place_view("swapdims_", self, F.transpose(self, dim0, dim1))


def as_strided_(self, size, stride, storage_offset=None):
    """In-place ``as_strided``: this tensor becomes the view ``size`` / ``stride`` / ``storage_offset`` of its
    storage (Note [In-place view ops])."""
    return _in_place_view("as_strided_", self, F.as_strided(self, size, stride, storage_offset))


def resize_(self, *sizes, memory_format=None):
    """Give this tensor the shape ``sizes`` in place, as PyTorch: the first elements of its storage from its
    offset, C-contiguous; a larger size grows the storage (new elements are zeros here, uninitialised in
    PyTorch). Growing a storage other tensors share (views of it) raises: a NumPy buffer cannot grow in place.
    """
    sizes = _int_args("resize_", sizes)
    if self._key_set & AUTOGRAD_KEY_SET:
        raise RuntimeError("resize_: cannot resize variables that require grad")
    for s in sizes:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(sizes)}")
    m = self._meta
    meta = make_meta(sizes, m.dtype, m.device)
    a = self._array
    if a is not None and type(a) is not np.ndarray:
        raise RuntimeError("resize_(): a tensor of a graph being captured or inside vmap cannot be resized")
    _take_buffer(self, _resized(self, a, sizes) if a is not None and sizes != a.shape else a, meta)
    version_counter(self).version += 1
    return self


def _resized(self, a, sizes):
    n = math.prod(sizes)
    flat = storage_array(a)
    offset = array_geometry(a)[1] if flat is not None else 0
    if flat is not None and offset + n <= flat.size:
        return flat[offset:offset + n].reshape(sizes)
    if has_live_views(self):
        raise RuntimeError(f"resize_(): cannot grow the storage of a tensor that other tensors view (from "
                           f"{a.size} to {n} elements): oneflow_lite tensors hold NumPy buffers, which cannot grow "
                           f"in place; resize a tensor that owns its storage, or clone() it first")
    old = flat[offset:] if flat is not None else a.reshape(-1)
    new = np.zeros(n, a.dtype)
    new[:min(n, old.size)] = old[:n]
    return new.reshape(sizes)


def resize_as_(self, other, memory_format=None):
    """``resize_(other.size())``."""
    if not isinstance(other, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    if self._key_set & AUTOGRAD_KEY_SET:
        raise RuntimeError("resize_as_: cannot resize variables that require grad")
    return resize_(self, other._meta.shape)


def resize(self, *sizes):
    """Deprecated in PyTorch: ``reshape`` to ``sizes`` (the same number of elements), with PyTorch's warning."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize_copy(self, _int_args("resize", sizes))


def resize_as(self, tensor):
    """Deprecated in PyTorch: ``reshape`` to ``tensor.size()``, with PyTorch's warning."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_copy(self, tuple(tensor._meta.shape))


def _resize_copy(self, sizes):
    numel = math.prod(sizes)
    if numel != self._meta.numel:
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements in total), but the "
                           f"given tensor has a size of {'x'.join(map(str, self._meta.shape))} ({self._meta.numel} "
                           f"elements). autograd's resize can only change the shape of a given tensor, while "
                           f"preserving the number of elements. ")
    return F.reshape(F.clone(self), sizes)


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make this tensor view other memory, in place: nothing (``set_()``: an empty tensor), ``source``'s buffer
    (a Tensor: its storage, offset, sizes and strides), or a storage (``untyped_storage()`` / ``storage()``)
    with ``storage_offset``, ``size`` and ``stride`` (default: all of it, contiguous)."""
    ag = self._ag
    if self._key_set & AUTOGRAD_KEY_SET and (ag is None or ag.grad_fn is None) \
            and not _tls.excluded & AUTOGRAD_KEY_SET:
        raise RuntimeError("set_: a leaf Variable that requires grad is being used in an in-place operation.")
    m = self._meta
    if source is None:
        array = None if m.device.type == "meta" else np.zeros(0, m.np_dtype)
        shape = (0,)
    elif isinstance(source, Tensor) and size is None:
        if source._meta.dtype is not m.dtype or source._meta.device is not m.device:
            raise RuntimeError(f"set_: expected source of dtype {m.dtype.name} on {m.device}, got "
                               f"{source._meta.dtype.name} on {source._meta.device}")
        array, shape = source._array, source._meta.shape
    else:
        array = _storage_view(self, source, storage_offset, size, stride)
        shape = array.shape
    _take_buffer(self, array, make_meta(shape, m.dtype, m.device))
    if isinstance(source, Tensor):
        link_view(self, source)
    version_counter(self).version += 1
    return self


def _storage_view(self, source, storage_offset, size, stride):
    """The view ``size`` / ``stride`` from ``storage_offset`` of a storage (or of a tensor's storage)."""
    if isinstance(source, Tensor):
        flat = storage_array(source._data("set_"))
    elif isinstance(source, (TypedStorage, UntypedStorage)):
        flat = source._flat
    else:
        raise TypeError(f"set_(): argument 'source' must be Tensor or a storage, not {type(source).__name__}")
    np_dtype = self._meta.np_dtype
    if flat is None or flat.nbytes % np.dtype(np_dtype).itemsize:
        raise RuntimeError(f"set_: the source's storage cannot hold elements of {self._meta.dtype.name}")
    flat = flat.view(np.uint8).view(np_dtype) if flat.dtype != np_dtype else flat
    size = (flat.size - storage_offset,) if size is None else _int_args("set_", (size,))
    stride = contiguous_strides(size) if stride is None else _int_args("set_", (stride,), "stride")
    check_geometry(RuntimeError, size, stride, storage_offset)
    need = required_size(size, stride, storage_offset)
    if need > flat.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {storage_offset}, "
                           f"and itemsize {flat.itemsize} requiring a storage size of {need * flat.itemsize} are out "
                           f"of bounds for storage of size {flat.nbytes}")
    return strided_view(flat, size, stride, storage_offset)


def unfold(self, dimension, size, step):
    """``Tensor.unfold(dimension, size, step)``: the windows of ``size`` elements every ``step`` along
    ``dimension`` as a new last dim; a view (``flow.unfold`` is ``nn.functional.unfold``, im2col)."""
    for name, v in (("dimension", dimension), ("size", size), ("step", step)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise TypeError(f"unfold(): argument '{name}' must be int, not {type(v).__name__}")
    return get_functor("UnfoldTensor")(self, int(dimension), int(size), int(step))


def sum_to_size(self, *size):
    """The sum of this tensor over the dims broadcasting would stretch from ``size`` (which must be
    expandable to this tensor's shape)."""
    size = _int_args("sum_to_size", size)
    shape = tuple(self._meta.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
    if not dims:
        return self
    return F.reshape(F.sum(self, dims), size)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    """A new tensor of ``size`` with the strides ``stride`` (over a storage just large enough), this tensor's
    dtype and device unless given; zeros here (uninitialised in PyTorch)."""
    size, stride = _int_args("new_empty_strided", (size,)), _int_args("new_empty_strided", (stride,), "stride")
    dtype = dtype or self._meta.dtype
    device = device or self._meta.device
    need = required_size(size, stride, 0) if len(size) == len(stride) else 0
    out = F.as_strided(F.empty((need,), dtype=dtype, device=device), size, stride, 0)
    return out.requires_grad_(True) if requires_grad else out


def _matrix_transpose(self):
    """``mT`` / ``mH``: the last two dims swapped (a view)."""
    if self._meta.ndim == 1:  # a 0-d tensor is its own transpose, as in PyTorch
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return F.transpose(self, -2, -1) if self._meta.ndim else F.reshape(self, ())


def _hermitian(self):
    """``H``: the (conjugate) transpose of a matrix; a 0-d tensor as it is, with PyTorch's warning."""
    ndim = self._meta.ndim
    if ndim == 2:
        return F.transpose(self, 0, 1)
    if ndim == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return self
    batches = " For batches of matrices, consider using tensor.mH" if ndim > 2 else ""
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {ndim}-D tensor.{batches}")


def _elementwise_in_place(self, name, fn, others):
    """Write ``fn(x, *others at the same position)`` for every element, in Python (cpu only, as PyTorch)."""
    if self._key_set & AUTOGRAD_KEY_SET:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
                           f"instead.")
    if self._meta.device.type != "cpu":
        raise RuntimeError(f"{name}() is only implemented on CPU tensors")
    if not callable(fn):
        raise TypeError(f"{name}(): 'callable' must be callable, got {type(fn).__name__}")
    shape = self._meta.shape
    arrays = [self.numpy()]
    for other in others:
        if other._meta.dtype is not self._meta.dtype:
            raise TypeError(f"{name}: expected {self.type()} for 'other' (got {other.type()})")
        arrays.append(F.expand(other, shape).numpy())
    values = [fn(*[a[pos].item() for a in arrays]) for pos in np.ndindex(*shape)]
    out = np.array(values).astype(self._meta.np_dtype).reshape(shape)
    return self.copy_(creation.tensor(out))


def apply_(self, callable):
    """Replace each element ``x`` by ``callable(x)`` (a Python function of numbers; cpu only)."""
    return _elementwise_in_place(self, "apply_", callable, ())


def map_(self, tensor, callable):
    """Replace each element ``x`` by ``callable(x, y)``, ``y`` from ``tensor`` broadcast to this shape."""
    return _elementwise_in_place(self, "map_", callable, (tensor,))


def map2_(self, x, y, callable):
    """Replace each element ``a`` by ``callable(a, b, c)``, ``b`` and ``c`` from ``x`` and ``y`` broadcast."""
    return _elementwise_in_place(self, "map2_", callable, (x, y))


def __contains__(self, element):
    """``element in t``: whether some element equals ``element`` (a number or a tensor, compared
    elementwise with broadcasting)."""
    if not isinstance(element, _OPERAND):
        raise RuntimeError(  # noqa: TRY004 (PyTorch's error type)
            f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}.")
    return bool(F.eq(self, element).any().item())


def __reversed__(self):
    """The tensor reversed along dim 0 (a 0-d tensor as it is)."""
    return self if not self._meta.ndim else F.flip(self, (0,))


def as_subclass(self, cls):
    """A ``cls`` (a subclass of Tensor) sharing this tensor's data and attached to its autograd graph (an alias
    view)."""
    if not isinstance(cls, type) or not issubclass(cls, Tensor):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not {cls!r}")
    alias = F.reshape(self, tuple(self._meta.shape))
    out = object.__new__(cls)
    for slot in ("_array", "_meta", "_key_set", "_ag", "_vc"):
        setattr(out, slot, getattr(alias, slot))
    link_view(out, self)
    return out


def __complex__(self):
    """``complex(x)`` of a one-element tensor (a real value: complex dtypes are not provided)."""
    return complex(self.item())


_TENSOR_ONLY = (squeeze_, unsqueeze_, t_, transpose_, swapaxes_, swapdims_, as_strided_, resize_, resize_as_,
                resize, resize_as, set_, unfold, sum_to_size, new_empty_strided, apply_, map_, map2_, __contains__,
                __reversed__, __complex__, as_subclass)
for _fn in _TENSOR_ONLY:
    setattr(Tensor, _fn.__name__, _fn)
Tensor.mT = Tensor.mH = property(_matrix_transpose)
Tensor.H = property(_hermitian)


# ---- [compat t1] more of PyTorch's Tensor API: device moves that cannot happen here, storage type, grad dtype ----
def is_distributed(self) -> bool:
    """False: PyTorch's legacy distributed tensors do not exist (global tensors are ``is_global``)."""
    return False


def _no_device(kind: str, message: str):
    def move(self, device=None, non_blocking: bool = False, memory_format=None):
        raise AssertionError(f"Tensor.{kind}(): {message} - oneflow_lite has no {kind.upper()} device; keep the "
                             f"tensor on 'cpu'")
    move.__name__ = move.__qualname__ = kind
    move.__doc__ = f"Raises, as ``Tensor.cuda()`` does: there is no {kind.upper()} device."
    return move


def storage_type(self) -> type:
    """The legacy storage class of this tensor's dtype (``flow.FloatStorage`` for float32)."""
    return storage_type_of(self._meta.dtype)


def _get_grad_dtype(self):
    """The dtype ``.grad`` has: the tensor's own by default, another floating dtype, or None: any (Note
    [Gradient dtype] in framework/tensor.py)."""
    ag = self._ag
    d = OWN_DTYPE if ag is None else ag.grad_dtype
    return self._meta.dtype if d is OWN_DTYPE else d


def _set_grad_dtype(self, value):
    ag = self._ag
    if ag is not None and ag.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, dt.dtype):
        raise TypeError(f"grad_dtype must be a flow.dtype or None, got {type(value).__name__}")
    own = self._meta.dtype
    if value is not None and value is not own and not value.is_floating_point:
        raise RuntimeError(f"grad_dtype: a gradient dtype other than the tensor's ({own.name}) must be a floating "
                           f"point dtype, got {value.name}")
    if self.is_global and value is not own:
        raise RuntimeError("grad_dtype: a gradient dtype other than the tensor's is not supported for global tensors")
    if ag is None:
        ag = self._ag = AutogradMeta()
    ag.grad_dtype = OWN_DTYPE if value is own else value
    ref = ag.grad_accumulator
    node = None if ref is None else ref()
    if node is not None:  # a graph recorded already: its leaf node takes the new dtype
        node.use_grad_dtype()


for _fn in (is_distributed, storage_type, _no_device("xpu", "Torch not compiled with XPU enabled"),
            _no_device("ipu", "PyTorch is not linked with support for ipu devices"),
            _no_device("mtia", "Torch not compiled with MTIA enabled")):
    setattr(Tensor, _fn.__name__, _fn)
Tensor.grad_dtype = property(_get_grad_dtype, _set_grad_dtype)
