"""``flow.nn.Parameter``: a tensor that a ``Module`` registers as one of its parameters.

Note [Parameter is a Tensor subclass]
``Parameter`` subclasses ``Tensor`` and adds no slots, so a parameter *is* a tensor
(``isinstance(p, flow.Tensor)``) and every op, method and the autograd engine take it as
they take any tensor (they only read the slots). Ops return plain tensors, so only
tensors made by ``Parameter(...)`` are parameters. ``Parameter(t)`` shares ``t``'s buffer
and version counter, as ``t.detach()`` does, and is a leaf that requires grad unless
``requires_grad=False``. Converting a module (``Module.to``) replaces a parameter's data
in place (Note [Tensor.data]) so that optimizers holding the parameter keep working.
"""

from __future__ import annotations

from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, Tensor, version_counter


class Parameter(Tensor):
    """``Parameter(data=None, requires_grad=True)``: a tensor registered as a module parameter when
    assigned as a ``Module`` attribute; ``data`` None is an empty float tensor."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from oneflow_lite import functional as F
            data = F.empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        if not isinstance(requires_grad, bool):
            raise TypeError(f"Parameter(): argument 'requires_grad' must be bool, not {type(requires_grad).__name__}")
        p = object.__new__(cls)
        p._array = data._array
        p._meta = data._meta
        p._key_set = data._key_set & ~AUTOGRAD_KEY_SET
        p._ag = None
        p._vc = version_counter(data)
        p.requires_grad_(requires_grad)
        return p

    def __init__(self, data=None, requires_grad=True):  # everything happens in __new__
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        result = memo.get(id(self))
        if result is None:
            result = memo[id(self)] = type(self)(self.data.clone(), self.requires_grad)
        return result

    def __reduce_ex__(self, protocol):
        return _rebuild_parameter, (self.data, self.requires_grad)


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (lazy modules, Note [Lazy modules] in nn/modules/lazy.py): it holds
    no elements until ``materialize(shape)`` gives it data and makes it a ``Parameter``."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from oneflow_lite import functional as F
        return super().__new__(cls, F.empty(0, dtype=dtype, device=device), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the parameter uninitialised data of ``shape`` (it becomes a ``Parameter``)."""
        from oneflow_lite import functional as F
        self.data = F.empty(tuple(shape), dtype=dtype or self.dtype, device=device or self.device)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return "<UninitializedParameter>"

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), type(self)(self.requires_grad, self.device, self.dtype))

    def __reduce_ex__(self, protocol):
        return UninitializedParameter, (self.requires_grad,)


def is_lazy(param) -> bool:
    return isinstance(param, UninitializedParameter)
