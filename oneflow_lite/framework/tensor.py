"""The Tensor: an eager tensor holds a device buffer (a NumPy array on cpu,
nothing on meta); every tensor carries its interned meta and its dispatch key set.

Operators and methods that run ops (``+``, ``relu()``, ``__getitem__``, ...) are
attached by ``oneflow_lite.functors.tensor_methods`` from the same functors as the
functional API.
"""

from __future__ import annotations

import copy
import itertools
import sys
import warnings
import weakref

import numpy as np

from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework import storage as _storage
from oneflow_lite.framework.config import PRINT_OPTIONS, warn_once
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET
from oneflow_lite.framework.tensor_meta import Size, TensorMeta

# Note [Autograd key and requires_grad]
# ``requires_grad`` *is* the Autograd bit of a tensor's ``_key_set``: a tensor that
# requires grad carries the bit, so every op with such an input dispatches to the
# AutogradInterpreter first, and a call on tensors that do not require grad never
# reaches it (no autograd cost at all). Setting ``requires_grad`` on a leaf sets or
# clears the bit; the AutogradInterpreter sets it on the floating outputs of an op it
# records. Grad mode is the same bit in the thread's excluded key set
# (``flow.no_grad()`` excludes Autograd), so ``is_grad_enabled()`` reads it there.
# A tensor's autograd state (grad_fn, .grad, hooks) lives in ``_ag``, an
# ``AutogradMeta`` made only for tensors that require grad or have a ``.grad``.
AUTOGRAD_KEY_SET = 1 << DispatchKey.Autograd

# Note [Lazy tensors]
# A lazy tensor (made while a graph is captured, see interpreters/lazy.py) carries the
# Lazy key in its key set and holds no data: its ``_array`` slot holds a ``LazyBlob``,
# the logical blob name of the value in the job being built. Reading its value raises
# an error naming the graph and the op that produced it.
LAZY_KEY_SET = 1 << DispatchKey.Lazy
_LAZY_OR_GLOBAL = LAZY_KEY_SET | GLOBAL_KEY_SET

# Note [Batched tensors]
# A batched tensor (made inside ``flow.vmap``, see interpreters/batched.py) carries the Batched key and
# has the *logical* (per-sample) meta; its ``_array`` slot holds a ``BatchedValue``: the physical tensor,
# whose dim 0 is the batch, and the vmap level. Autograd and the engine copy ``_array`` / ``_meta`` /
# ``_key_set`` as for any tensor, so saved and rebuilt tensors stay batched. Reading its values raises
# an error naming vmap, as reading a lazy tensor's does.
BATCHED_KEY_SET = 1 << DispatchKey.Batched
_PLACEHOLDER_KEY_SET = LAZY_KEY_SET | BATCHED_KEY_SET


# Note [Version counters and views]
# A ``VersionCounter`` counts the in-place writes to a tensor's buffer: the eager
# interpreter bumps it after every in-place op, and a tensor saved for backward
# remembers the version it was saved at, so backward can tell it was overwritten.
# It is made lazily (first in-place write, first save, first view), so tensors that
# are never written in place, saved or viewed pay nothing. Views share it: when a
# kernel returns an array that may share memory with an input's array (a NumPy view,
# e.g. reshape / transpose / slice, or the input array itself), the eager interpreter
# gives the output the input's counter and adds both to the counter's *view family*.
# ``detach()`` also shares the counter (a write through either is seen by saved
# tensors of the other) but does not join the family. Autograd does not rebase the
# history of a view's base (PyTorch's CopySlices), so it refuses to record an in-place
# op on a tensor whose view family has another live member, rather than compute
# wrong gradients; outside autograd, in-place ops on views work as in NumPy.
class VersionCounter:
    """The version of a buffer shared by a tensor, its views and its detached aliases."""

    __slots__ = ("__weakref__", "pruned_at", "version", "views")

    def __init__(self, version: int = 0):
        self.version = version
        self.views = None  # id(tensor) -> weakref of each tensor that joined the view family
        self.pruned_at = 0


def version_counter(t) -> VersionCounter:
    """``t``'s version counter, made on first use."""
    vc = t._vc
    if vc is None:
        vc = t._vc = VersionCounter()
    return vc


# The view family keeps plain weak references (the one CPython shares between all plain references
# to a tensor), without death callbacks: joining costs a dict store. Dead entries are dropped when the
# family has doubled since the last pruning, and has_live_views() skips them.
def _join_view_family(vc: VersionCounter, t) -> None:
    views = vc.views
    views[id(t)] = weakref.ref(t)
    if len(views) > 2 * vc.pruned_at + 8:
        for key, ref in list(views.items()):
            if ref() is None:
                del views[key]
        vc.pruned_at = len(views)


def link_view(view, base) -> None:
    """Make ``view`` (whose buffer aliases ``base``'s) share ``base``'s version counter and view family."""
    vc = version_counter(base)
    view._vc = vc
    if vc.views is None:
        vc.views = {}
        _join_view_family(vc, base)
    _join_view_family(vc, view)


def has_live_views(t) -> bool:
    """Whether another live tensor is a view of ``t`` or ``t``'s base (see Note [Version counters and views])."""
    vc = t._vc
    if vc is None or not vc.views:
        return False
    for ref in vc.views.values():
        o = ref()
        if o is not None and o is not t:
            return True
    return False


class AutogradMeta:
    """A tensor's autograd state: its grad_fn and output index, ``.grad``, hooks."""

    __slots__ = ("grad", "grad_accumulator", "grad_dtype", "grad_fn", "hooks", "output_nr", "post_hooks",
                 "retains_grad")

    def __init__(self, grad_fn=None, output_nr: int = 0):
        self.grad_fn = grad_fn
        self.output_nr = output_nr
        self.grad = None
        self.retains_grad = False
        self.hooks = None  # a leaf's tensor hooks: handle id -> fn (a non-leaf's live on its grad_fn)
        self.post_hooks = None  # a leaf's post-accumulate-grad hooks: handle id -> fn
        self.grad_accumulator = None  # weakref of a leaf's AccumulateGrad node
        self.grad_dtype = OWN_DTYPE  # a leaf's Tensor.grad_dtype (Note [Gradient dtype])


# Note [Gradient dtype]
# ``Tensor.grad_dtype`` (PyTorch >= 2.9) is the dtype a leaf's ``.grad`` has: by default the tensor's own
# (``OWN_DTYPE`` in AutogradMeta), or another floating dtype, to which the engine casts every incoming gradient
# (the leaf's AccumulateGrad node declares that dtype as its output meta, so the engine's check of an input
# gradient casts it, hooks and ``autograd.grad`` see it cast), or None: any dtype, no cast. Assigning ``.grad``
# checks the same rule.
OWN_DTYPE = "own dtype"


class RemovableHandle:
    """Returned by ``register_hook`` and friends; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "id")
    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead.")


# Note [Engine registration]
# ``Tensor.backward`` and the ``AccumulateGrad`` node run the autograd engine, which sits above
# framework (it calls functors): neither imports it, which would close an import cycle
# (framework.tensor -> autograd.engine -> autograd.graph -> framework.tensor). The engine registers
# itself instead, when it is imported: its ``backward`` here, its ``accumulate_grad`` in
# ``autograd/graph.py``. The package ``__init__`` imports it with the other registering modules.
_backward_engine = None


def register_backward_engine(fn) -> None:
    """Make ``fn(tensors, grad_tensors, retain_graph, create_graph, inputs)`` what ``Tensor.backward`` runs
    (Note [Engine registration])."""
    global _backward_engine
    _backward_engine = fn


# Note [Legacy constructor]
# ``flow.Tensor(data)`` / ``flow.Tensor(2, 3)`` / ``flow.Tensor()`` / ``flow.Tensor(size=...)`` is PyTorch's
# legacy constructor: a default-dtype tensor of ``data``, or of a shape. It makes tensors through the creation
# functors, above framework, so they register it here when imported (as the engine does, Note [Engine
# registration]). Interpreters build tensors through ``Tensor._make``, which bypasses ``__new__``.
_legacy_constructor = None


def register_legacy_constructor(fn) -> None:
    """Make ``fn(dtype, args, kwargs)`` what ``Tensor(...)`` runs (Note [Legacy constructor])."""
    global _legacy_constructor
    _legacy_constructor = fn


def legacy_new(dtype, args: tuple, kwargs: dict):
    """The legacy constructor with ``dtype`` (None: the default float dtype, or a Tensor argument's own)."""
    if _legacy_constructor is None:
        raise RuntimeError("Tensor(): no legacy constructor is registered; oneflow_lite.functors.creation "
                           "registers it when imported (see Note [Legacy constructor])")
    return _legacy_constructor(dtype, args, kwargs)


# Note [Global casts registration]
# ``to_global`` / ``to_local`` and reading a global tensor's logical value run ops and collectives
# (functors/global_cast.py, above framework): that module registers them here when imported, as the
# engine registers ``backward`` (Note [Engine registration]).
_global_casts = None


def register_global_casts(impl) -> None:
    """Make ``impl`` (with ``to_global``, ``to_local`` and ``logical_array``) what global tensors use
    (Note [Global casts registration])."""
    global _global_casts
    _global_casts = impl


def _casts():
    if _global_casts is None:
        raise RuntimeError("global tensors: no global cast is registered; oneflow_lite.functors.global_cast "
                           "registers it when imported (see Note [Global casts registration])")
    return _global_casts


_new = object.__new__


class Tensor:
    """A multi-dimensional array with a dtype and a device."""

    __slots__ = ("__weakref__", "_ag", "_array", "_key_set", "_meta", "_vc")

    def __new__(cls, *args, **kwargs):
        """PyTorch's legacy constructor (Note [Legacy constructor]); ``flow.tensor(...)`` is the modern one."""
        return legacy_new(None, args, kwargs)

    def __init__(self, *args, **kwargs):  # everything happens in __new__
        pass

    @staticmethod
    def _make(array, meta: TensorMeta) -> Tensor:
        t = _new(Tensor)
        t._array = array
        t._meta = meta
        t._key_set = meta.key_set
        t._ag = None
        t._vc = None
        return t

    # ---- metadata -----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return self._meta.shape

    def size(self, dim: int | None = None):
        """The shape, or the length of dimension ``dim``."""
        if dim is None:
            return self._meta.shape
        if not self._meta.ndim:
            raise IndexError(f"size: Dimension specified as {dim} but tensor has no dimensions")
        return self._meta.shape[_wrap_dim(dim, self._meta.ndim, "size")]

    @property
    def dtype(self) -> dtypes.dtype:
        return self._meta.dtype

    @property
    def device(self):
        return self._meta.device

    @property
    def ndim(self) -> int:
        return self._meta.ndim

    def dim(self) -> int:
        return self._meta.ndim

    def numel(self) -> int:
        return self._meta.numel

    nelement = numel

    def element_size(self) -> int:
        return self._meta.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._meta.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._meta.numel * self._meta.dtype.itemsize

    def ndimension(self) -> int:
        return self._meta.ndim

    # Where the tensor is, as PyTorch's flags: cpu and meta are the devices here; there are no sparse,
    # quantized or inference tensors (inference_mode makes ordinary tensors).
    @property
    def is_cpu(self) -> bool:
        return self._meta.device.type == "cpu"

    @property
    def is_cuda(self) -> bool:
        return self._meta.device.type == "cuda"

    @property
    def is_xpu(self) -> bool:
        return self._meta.device.type == "xpu"

    @property
    def is_mps(self) -> bool:
        return self._meta.device.type == "mps"

    @property
    def is_sparse(self) -> bool:
        return False

    # Other backends and layouts of PyTorch, none of which exists here.
    is_sparse_csr = is_nested = is_mkldnn = is_vulkan = is_xla = is_ipu = is_maia = is_mtia = is_sparse

    def is_pinned(self) -> bool:
        return False

    def is_shared(self) -> bool:
        return False

    def is_conj(self) -> bool:
        """False: there are no complex tensors, so no lazily conjugated ones."""
        return False

    def is_neg(self) -> bool:
        return False

    def resolve_conj(self) -> Tensor:
        return self

    def resolve_neg(self) -> Tensor:
        return self

    # Note [Real tensors only]: with no complex dtypes, conjugation is the identity and a tensor is its own real
    # part, as PyTorch's ``conj`` / ``conj_physical`` / ``real`` are on real tensors; ``imag`` raises PyTorch's
    # error for them.
    def conj(self) -> Tensor:
        """``self`` (Note [Real tensors only]); also ``conj_physical`` and ``conj_physical_``."""
        return self

    conj_physical = conj_physical_ = conj

    @property
    def real(self) -> Tensor:
        """``self`` (Note [Real tensors only]); assigning to it copies into the tensor."""
        return self

    @real.setter
    def real(self, value) -> None:
        self.copy_(value)

    @property
    def imag(self) -> Tensor:
        """PyTorch's error: real tensors have no imaginary part (Note [Real tensors only])."""
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    @property
    def is_quantized(self) -> bool:
        return False

    def is_inference(self) -> bool:
        return False

    def get_device(self) -> int:
        """-1 for cpu tensors (PyTorch's convention), else the device index."""
        device = self._meta.device
        return -1 if device.type == "cpu" else device.index

    def data_ptr(self) -> int:
        """The address of the first element (the same for tensors sharing a buffer from the same offset);
        0 for a tensor that holds no data."""
        a = self._array
        if a is None:
            return 0
        if self._key_set & LAZY_KEY_SET:
            raise a.read_error("Tensor.data_ptr()")
        return a.__array_interface__["data"][0]

    def is_signed(self) -> bool:
        return self._meta.dtype.is_signed

    def is_complex(self) -> bool:
        return False

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor (PyTorch's errors for other sizes)."""
        n = self._meta.numel
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data("is_nonzero").reshape(()))

    def is_same_size(self, other) -> bool:
        if not isinstance(other, Tensor):
            raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        return self._meta.shape == other._meta.shape

    @property
    def is_lazy(self) -> bool:
        """Whether this tensor is a lazy tensor of a graph being captured (Note [Lazy tensors])."""
        return bool(self._key_set & LAZY_KEY_SET)

    # ---- global tensors (Note [Global casts registration]; framework/global_meta.py) -------------
    @property
    def is_global(self) -> bool:
        """Whether this is a global tensor: one logical tensor laid over a placement of ranks by an SBP."""
        return bool(self._key_set & GLOBAL_KEY_SET)

    is_consistent = is_global

    @property
    def is_local(self) -> bool:
        return not self._key_set & GLOBAL_KEY_SET

    @property
    def placement(self):
        """The placement of a global tensor."""
        if not self._key_set & GLOBAL_KEY_SET:
            raise RuntimeError("Tensor.placement: a local tensor has no placement (it has a device); make it "
                               "global with tensor.to_global(placement, sbp)")
        return self._meta.placement

    @property
    def sbp(self) -> tuple:
        """The SBP of a global tensor: a tuple with one SBP per placement dimension."""
        if not self._key_set & GLOBAL_KEY_SET:
            raise RuntimeError("Tensor.sbp: a local tensor has no SBP; make it global with "
                               "tensor.to_global(placement, sbp)")
        return self._meta.nd_sbp

    def to_global(self, placement=None, sbp=None, *, grad_sbp=None, check_meta: bool = True,
                  copy: bool = False) -> Tensor:
        """A global tensor: from a local one (this rank's tensor becomes its piece; with ``broadcast`` the
        first rank's is used), or a global one converted to another placement and / or SBP (boxing)."""
        return _casts().to_global(self, placement, sbp, grad_sbp, check_meta, copy)

    def global_to_global(self, placement=None, sbp=None, *, grad_sbp=None, check_meta: bool = False,
                         copy: bool = False) -> Tensor:
        """``to_global`` for a global tensor only."""
        if not self._key_set & GLOBAL_KEY_SET:
            raise RuntimeError("global_to_global: expected a global tensor, got a local one; use to_global")
        return _casts().to_global(self, placement, sbp, grad_sbp, check_meta, copy)

    def to_local(self, *, copy: bool = False) -> Tensor:
        """This rank's piece of a global tensor (a local tensor); a local tensor itself."""
        if not self._key_set & GLOBAL_KEY_SET:
            return self
        return _casts().to_local(self, copy)

    @property
    def is_meta(self) -> bool:
        return self._meta.device.type == "meta"

    def is_floating_point(self) -> bool:
        return self._meta.dtype.is_floating_point

    @property
    def key_set(self) -> int:
        """This tensor's dispatch key set (an int bitset; see Note [Dispatch keys are priorities])."""
        return self._key_set

    def __len__(self):
        if self._meta.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._meta.shape[0]

    # ---- values -------------------------------------------------------------------------------
    def _data(self, what: str) -> np.ndarray:
        a = self._array
        if a is None:
            raise RuntimeError(f"Tensor.{what}(): a tensor on '{self._meta.device}' holds no data")
        if self._key_set & _PLACEHOLDER_KEY_SET:  # a lazy blob or a batched value
            raise a.read_error(f"Tensor.{what}()")
        if self._key_set & GLOBAL_KEY_SET:
            return _casts().logical_array(self)  # a collective: every rank of the placement calls it
        return a

    def numpy(self) -> np.ndarray:
        """The values as a NumPy array, sharing memory with the tensor on cpu."""
        return self._data("numpy")

    def item(self):
        """The value of a one-element tensor as a Python number."""
        a = self._data("item")
        if a.size != 1:
            raise RuntimeError(f"Tensor.item(): a Tensor with {a.size} elements cannot be converted to Scalar")
        return a.reshape(()).item()

    def tolist(self):
        return self._data("tolist").tolist()

    def __bool__(self):
        a = self._data("__bool__")
        if a.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {a.size} elements is ambiguous")
        return bool(a.reshape(()))

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._meta.dtype.is_floating_point or self._meta.numel != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __array__(self, dtype=None, copy=None):
        a = self._data("__array__")
        return a if dtype is None else a.astype(dtype)

    # ---- autograd (see Note [Autograd key and requires_grad]) ---------------------------------
    @property
    def requires_grad(self) -> bool:
        return bool(self._key_set & AUTOGRAD_KEY_SET)

    @requires_grad.setter
    def requires_grad(self, requires_grad: bool):
        self.requires_grad_(requires_grad)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether autograd records operations on this (leaf) tensor; returns ``self``."""
        if not isinstance(requires_grad, (bool, np.bool_)):
            raise TypeError(f"requires_grad_(): argument 'requires_grad' must be bool, not "
                            f"{type(requires_grad).__name__}")
        ag = self._ag
        if ag is not None and ag.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad:
            if not self._meta.dtype.is_floating_point:
                raise RuntimeError(f"requires_grad_(): only Tensors of floating point dtype can require gradients, got "
                                   f"{self._meta.dtype.name}")
            if ag is None:
                self._ag = AutogradMeta()
            self._key_set |= AUTOGRAD_KEY_SET
        else:
            self._key_set &= ~AUTOGRAD_KEY_SET
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded op (every tensor that does not require grad is a leaf)."""
        ag = self._ag
        return ag is None or ag.grad_fn is None

    @property
    def grad_fn(self):
        """The backward node of the op that made this tensor (None for leaves)."""
        ag = self._ag
        return None if ag is None else ag.grad_fn

    @property
    def grad(self):
        """The gradient accumulated by backward (leaves, and non-leaves that ``retain_grad()``)."""
        ag = self._ag
        if ag is None:
            return None
        if ag.grad_fn is not None and not ag.retains_grad:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return ag.grad

    @grad.setter
    def grad(self, grad):
        if grad is not None:
            if not isinstance(grad, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(grad).__name__}")
            m, gm, ag = self._meta, grad._meta, self._ag
            allowed = m.dtype if ag is None or ag.grad_dtype is OWN_DTYPE else ag.grad_dtype
            if allowed is not None and gm.dtype is not allowed:
                raise RuntimeError(f"assigned grad has data of a different type: expected {m.dtype.name}, got "
                                   f"{gm.dtype.name}" if allowed is m.dtype else f"attempting to assign a gradient "
                                   f"with dtype '{gm.dtype.name}' to a tensor with grad_dtype '{allowed.name}'")
            if gm.device is not m.device:
                raise RuntimeError(f"assigned grad has data located on a different device: expected {m.device}, "
                                   f"got {gm.device}")
            if gm.shape != m.shape:
                raise RuntimeError(f"assigned grad has data of a different size: expected {list(m.shape)}, "
                                   f"got {list(gm.shape)}")
        ag = self._ag
        if ag is None:
            if grad is None:
                return
            ag = self._ag = AutogradMeta()
        ag.grad = grad

    @grad.deleter
    def grad(self):
        self.grad = None

    @property
    def retains_grad(self) -> bool:
        ag = self._ag
        return ag is not None and ag.grad_fn is not None and ag.retains_grad

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` during backward (a no-op on leaves)."""
        if not self._key_set & AUTOGRAD_KEY_SET:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        ag = self._ag
        if ag.grad_fn is None or ag.retains_grad:
            return
        ag.retains_grad = True
        ag.grad_fn._retain_grad(ag.output_nr, self)

    def register_hook(self, hook) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a non-None result replaces the grad."""
        if not self._key_set & AUTOGRAD_KEY_SET:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if not callable(hook):
            raise TypeError(f"register_hook(): hook must be callable, got {type(hook).__name__}")
        ag = self._ag
        if ag.grad_fn is not None:
            return ag.grad_fn._register_tensor_hook(ag.output_nr, hook)
        if ag.hooks is None:
            ag.hooks = {}
        handle = RemovableHandle(ag.hooks)
        ag.hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """Call ``hook(tensor)`` after backward has accumulated into this leaf's ``.grad``."""
        if not self._key_set & AUTOGRAD_KEY_SET:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        ag = self._ag
        if ag.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not callable(hook):
            raise TypeError(f"register_post_accumulate_grad_hook(): hook must be callable, got "
                            f"{type(hook).__name__}")
        if ag.post_hooks is None:
            ag.post_hooks = {}
        handle = RemovableHandle(ag.post_hooks)
        ag.post_hooks[handle.id] = hook
        return handle

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Accumulate the gradient of this tensor into the leaves' ``.grad`` (see ``flow.autograd.backward``)."""
        run = _backward_engine
        if run is None:
            raise RuntimeError("Tensor.backward(): no autograd engine is registered; oneflow_lite.autograd.engine "
                               "registers it when imported (see Note [Engine registration])")
        run((self,), None if gradient is None else (gradient,), retain_graph, create_graph, inputs)

    def detach(self) -> Tensor:
        """A new tensor sharing this one's data (and version counter) that does not require grad."""
        t = Tensor._make(self._array, self._meta)
        t._key_set = self._key_set & ~AUTOGRAD_KEY_SET
        t._vc = version_counter(self)
        return t

    def detach_(self) -> Tensor:
        """Make this tensor a leaf that does not require grad; returns ``self``."""
        ag = self._ag
        if ag is not None and ag.grad_fn is not None:
            if ag.retains_grad:
                ag.grad_fn._retain_grad(ag.output_nr, None)
            ag.grad_fn = None
            ag.output_nr = 0
            ag.retains_grad = False
        self._key_set &= ~AUTOGRAD_KEY_SET
        return self

    # Note [Tensor.data]
    # As PyTorch: ``t.data`` is a tensor sharing ``t``'s buffer that does not require grad and has
    # its own version counter, so writes through it are invisible to autograd. ``t.data = other``
    # makes ``t`` hold ``other``'s buffer, shape, dtype and device while ``t`` keeps its identity,
    # ``requires_grad`` and ``.grad`` (``nn.Module.to`` converts parameters this way, so optimizers
    # holding them keep working). It leaves ``t``'s view family: its old views no longer alias it.
    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's buffer, detached from autograd (Note [Tensor.data])."""
        t = Tensor._make(self._array, self._meta)
        t._key_set = self._key_set & ~AUTOGRAD_KEY_SET
        return t

    @data.setter
    def data(self, new):
        if not isinstance(new, Tensor):
            raise TypeError(f"Tensor.data: expected a Tensor, got {type(new).__name__}")
        requires_grad = self._key_set & AUTOGRAD_KEY_SET
        if requires_grad and not new._meta.dtype.is_floating_point:
            raise RuntimeError(f"Tensor.data: a tensor that requires grad must hold floating point data, got "
                               f"{new._meta.dtype.name}")
        ag = self._ag
        if ag is not None and new._meta is not self._meta:
            ag.grad_accumulator = None  # its recorded meta is the old one
        vc = self._vc
        self._array = new._array
        self._meta = new._meta
        self._key_set = (new._key_set & ~AUTOGRAD_KEY_SET) | requires_grad
        self._vc = None if vc is None else VersionCounter(vc.version)

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's buffer (shared with its views) has seen."""
        vc = self._vc
        return 0 if vc is None else vc.version

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
        ag = self._ag
        return 0 if ag is None else ag.output_nr

    # ---- strides and storage (Note [Storage of a tensor] in framework/storage.py) ---------------------
    def stride(self, dim: int | None = None):
        """The strides in elements (a tuple), or the stride of dimension ``dim``."""
        strides = _storage.tensor_geometry(self)[0]
        if dim is None:
            return strides
        if not self._meta.ndim:
            raise IndexError(f"stride(): Dimension specified as {dim} but tensor has no dimensions")
        return strides[_wrap_dim(dim, self._meta.ndim, "stride")]

    def storage_offset(self) -> int:
        """The position of the first element in the storage, in elements."""
        return _storage.tensor_geometry(self)[1]

    def dim_order(self, *, ambiguity_check: bool = False) -> tuple:
        """The dims from the outermost to the innermost in memory (by decreasing stride); with
        ``ambiguity_check``, a RuntimeError when several orders fit (size-1 dims or equal strides)."""
        if not isinstance(ambiguity_check, bool):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
        strides = self.stride()
        if ambiguity_check and (any(s == 1 for s in self._meta.shape)
                                or any(a == b for a, b in itertools.pairwise(strides))):
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                               "memory formats.")
        return tuple(sorted(range(self._meta.ndim), key=lambda d: -strides[d]))

    def is_set_to(self, tensor) -> bool:
        """Whether both tensors view the same storage with the same offset, sizes and strides."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
                            f"{type(tensor).__name__}")
        a, b = self._array, tensor._array
        if type(a) is not np.ndarray or type(b) is not np.ndarray:
            return self is tensor
        fa, fb = _storage.storage_array(a), _storage.storage_array(b)
        if fa is None or fb is None or fa.dtype != fb.dtype or fa.size != fb.size or a.shape != b.shape:
            return a is b
        return (fa.__array_interface__["data"][0] == fb.__array_interface__["data"][0]
                and _storage.array_geometry(a) == _storage.array_geometry(b))

    def untyped_storage(self) -> _storage.UntypedStorage:
        """The bytes of this tensor's storage, sharing memory with it."""
        return _storage.untyped_storage(self)

    def storage(self) -> _storage.TypedStorage:
        """This tensor's storage as elements of its dtype (deprecated in PyTorch: see ``untyped_storage``)."""
        warn_once("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()")
        return _storage.typed_storage(self)

    def const_data_ptr(self) -> int:
        """``data_ptr()`` (a read-only access in PyTorch; the same address here)."""
        return self.data_ptr()

    def share_memory_(self) -> Tensor:
        """A no-op returning ``self``: the buffer is process memory, not shared memory (``is_shared()`` stays
        False); a tensor sent to another process is pickled, so that process gets a copy."""
        return self

    def pin_memory(self, device=None) -> Tensor:
        """``self``: there is no accelerator to pin host memory for (``is_pinned()`` stays False)."""
        return self

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        """Raises: oneflow_lite has no CUDA device (``flow.cuda.is_available()`` is False)."""
        raise AssertionError("Tensor.cuda(): Torch not compiled with CUDA enabled - oneflow_lite has no CUDA "
                             "device (flow.cuda.is_available() is False); keep the tensor on 'cpu'")

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """``self`` (a dense tensor), cast to ``dtype`` when one is given."""
        return self if dtype is None or dtype is self._meta.dtype else self.to(dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this cpu tensor's buffer (NumPy's), sharing memory with it."""
        if stream is not None:
            raise BufferError("Tensor.__dlpack__(): streams are a CUDA concept; a cpu tensor takes stream=None")
        kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy))
                  if v is not None}
        return self._data("__dlpack__").__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple:
        """``(1, 0)``: DLPack's cpu device."""
        self._data("__dlpack_device__")
        return (1, 0)

    @property
    def name(self):
        """None: named tensors are not provided (no tensor has a name)."""
        return None

    @property
    def volatile(self) -> bool:
        """False, with PyTorch's warning: ``volatile`` was removed (use ``no_grad``)."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    def reinforce(self, reward):
        """Raises, as in PyTorch: ``reinforce()`` was removed."""
        raise RuntimeError("reinforce() was removed.\nUse torch.distributions instead.\nSee "
                           "https://pytorch.org/docs/main/distributions.html")

    def module_load(self, other, assign: bool = False) -> Tensor:
        """What ``nn.Module.load_state_dict`` loads into this parameter or buffer from ``other``: ``other``
        detached with ``assign``, else this tensor updated in place from it, detached."""
        return other.detach() if assign else self.copy_(other).detach()

    # ---- copying and pickling -------------------------------------------------------------------
    def __deepcopy__(self, memo):
        """A copy with its own storage, keeping ``requires_grad`` and ``.grad`` (leaves only, as PyTorch);
        views deep-copied together keep sharing one copied storage."""
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        new = memo.get(id(self))
        if new is not None:
            return new
        a = self._array
        if a is not None and self._key_set & _PLACEHOLDER_KEY_SET:
            raise a.read_error("Tensor.__deepcopy__()")
        new = Tensor._make(None if a is None else _deepcopy_array(a, memo), self._meta)
        if self._key_set & AUTOGRAD_KEY_SET:
            new.requires_grad_(True)
        ag = self._ag
        if ag is not None and ag.grad is not None:
            new.grad = copy.deepcopy(ag.grad, memo)
        memo[id(self)] = new
        return new

    def __setstate__(self, state):
        """Restore a pickled tensor: this class's own state (its slots), or PyTorch's ``(requires_grad, _,
        hooks)`` / legacy Variable ``(data, _, _, requires_grad, hooks)`` forms."""
        if not self.is_leaf:
            raise RuntimeError("__setstate__ can be only called on leaf Tensors")
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):
            for name, value in {**(state[0] or {}), **state[1]}.items():
                object.__setattr__(self, name, value)
            return
        if isinstance(state, tuple) and len(state) == 5:
            self.data = state[0]
            state = (state[3], state[4], state[2])
        if not isinstance(state, tuple) or len(state) != 3:
            raise RuntimeError(f"Tensor.__setstate__: expected a pickled oneflow_lite tensor's state, got "
                               f"{type(state).__name__}")
        self.requires_grad_(bool(state[0]))

    # ---- printing and iteration ---------------------------------------------------------------
    def __repr__(self):
        return _format_tensor(self)

    def __format__(self, format_spec):
        """As PyTorch: a 0-d tensor formats its value (``f"{loss:.4f}"``); other tensors take only the empty
        format spec (a TypeError otherwise)."""
        if self._meta.ndim == 0 and self._array is not None and type(self) is Tensor \
                and not self._key_set & LAZY_KEY_SET:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __iter__(self):
        if self._meta.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._meta.shape[0]))

    __hash__ = object.__hash__


def _deepcopy_array(a: np.ndarray, memo: dict) -> np.ndarray:
    """A copy of ``a``; arrays of one storage copied in the same ``deepcopy`` share the copied storage."""
    flat = _storage.storage_array(a)
    if flat is None:
        return a.copy()
    key = ("oneflow_lite.storage", flat.__array_interface__["data"][0], flat.size, flat.dtype.str)
    new_flat = memo.get(key)
    if new_flat is None:
        new_flat = memo[key] = flat.copy()
    strides, offset = _storage.array_geometry(a)
    return _storage.strided_view(new_flat, a.shape, strides, offset)


def _wrap_dim(dim: int, ndim: int, op: str) -> int:
    """``dim`` made non-negative; an IndexError naming the op when out of range."""
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or not lo <= dim <= hi:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 else int(dim)


def _format_tensor(t: Tensor) -> str:
    meta = t._meta
    if t._key_set & BATCHED_KEY_SET:
        return repr(t._array)
    extras = []
    if t._key_set & GLOBAL_KEY_SET:
        return _format_global(t)
    if meta.device.type != "cpu":
        extras.append(f"device='{meta.device}'")
    if t._key_set & LAZY_KEY_SET:
        body = "..."
        extras.append(f"is_lazy=True, lbn='{t._array.lbn}', size={tuple(meta.shape)}")
    elif t._array is None:
        body = "..."
        extras.append(f"size={tuple(meta.shape)}")
    else:
        a = t._array
        if a.size == 0:
            body = "[]"
            extras.append(f"size={tuple(meta.shape)}")
        else:
            body = _format_values(a, meta.dtype)
    extras.append(f"dtype={meta.dtype!r}")
    ag = t._ag
    if ag is not None and ag.grad_fn is not None:
        extras.append(f"grad_fn=<{ag.grad_fn._repr_name()}>")
    elif t._key_set & AUTOGRAD_KEY_SET:
        extras.append("requires_grad=True")
    return f"tensor({body}, {', '.join(extras)})"


def _format_global(t: Tensor) -> str:
    """The logical value (gathered: every rank of the placement prints), placement and SBP."""
    meta = t._meta
    extras = []
    if t._key_set & LAZY_KEY_SET:
        body = "..."
        extras.append(f"is_lazy=True, lbn='{t._array.lbn}', size={tuple(meta.shape)}")
    elif t._array is None or meta.numel == 0:
        body = "..." if t._array is None else "[]"
        extras.append(f"size={tuple(meta.shape)}")
    else:
        body = _format_values(_casts().logical_array(t), meta.dtype)
    extras.append(f"placement={meta.placement!r}")
    extras.append(f"sbp={meta.nd_sbp!r}")
    extras.append(f"dtype={meta.dtype!r}")
    ag = t._ag
    if ag is not None and ag.grad_fn is not None:
        extras.append(f"grad_fn=<{ag.grad_fn._repr_name()}>")
    elif t._key_set & AUTOGRAD_KEY_SET:
        extras.append("requires_grad=True")
    return f"tensor({body}, {', '.join(extras)})"


def _format_values(a: np.ndarray, dtype) -> str:
    """The values as ``set_printoptions`` asks (framework/config.py)."""
    opts = PRINT_OPTIONS
    threshold = opts["threshold"]
    kwargs = {"separator": ", ", "prefix": "tensor(", "edgeitems": opts["edgeitems"],
              "threshold": sys.maxsize if threshold == float("inf") else threshold,
              "max_line_width": opts["linewidth"], "precision": opts["precision"]}
    if dtype.is_floating_point:
        if dtype is dtypes.bfloat16:
            a = a.astype(np.float32)
        kwargs["floatmode"] = "maxprec_equal"
        sci_mode = opts["sci_mode"]
        if sci_mode is False:
            kwargs["suppress_small"] = True
        elif sci_mode:
            precision = opts["precision"]
            kwargs["formatter"] = {"float_kind": lambda v: f"{v:.{precision}e}"}
    else:
        kwargs["floatmode"] = "maxprec"
    return np.array2string(a, **kwargs)
