"""``flow.nn.utils.parametrize``: a module tensor computed from other tensors on every access (PyTorch's
``torch.nn.utils.parametrize``): ``register_parametrization``, ``remove_parametrizations``, ``is_parametrized``.

Note [Parametrized tensors]
``register_parametrization(module, "weight", p)`` moves the parameter (or buffer) ``weight`` into
``module.parametrizations.weight``, a ``ParametrizationList`` holding the originals (``original``, or
``original0``, ``original1``, ... when ``p.right_inverse`` returns several tensors) and the chain of
parametrizations. ``module.weight`` is then computed on every access: ``Module.__getattr__`` (reached because
``weight`` is no longer a member) asks the list, and ``module.weight = value`` (``Module.__setattr__``) stores
``right_inverse(value)`` into the originals. PyTorch builds a ``Parametrized<Class>`` subclass with a property
instead; here the module keeps its class (its name in ``repr``), the state dict keys are PyTorch's
(``parametrizations.weight.original``). A single original keeps the Parameter object it was (optimizers that
already hold it keep working): ``right_inverse``'s value is copied into it.
"""

from __future__ import annotations

import contextlib

from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.nn.modules.container import ModuleDict, ModuleList
from oneflow_lite.nn.parameter import Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations"]

_cache: dict | None = None  # Note [Parametrized tensors]: values by (list id) inside ``cached()``


@contextlib.contextmanager
def cached():
    """Inside the block each parametrized tensor is computed once (on first access) and reused."""
    global _cache
    outer = _cache
    _cache = {} if outer is None else outer
    try:
        yield
    finally:
        _cache = outer


def _store(owner, name, value, like):
    """Register ``value`` on ``owner`` as a parameter when ``like`` is one, else as a buffer."""
    if isinstance(like, Parameter):
        owner.register_parameter(name, value if isinstance(value, Parameter) else Parameter(value,
                                                                                        like.requires_grad))
    else:
        owner.register_buffer(name, value)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its originals (Note [Parametrized tensors])."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        first = self[0]
        with no_grad():
            new = first.right_inverse(original) if hasattr(first, "right_inverse") else original
        if isinstance(new, Tensor):
            self.is_tensor, self.ntensors = True, 1
            if new is not original:
                with no_grad():
                    original.copy_(new) if tuple(new.shape) == tuple(original.shape) else original.set_(new)
            _store(self, "original", original, original)
        else:
            self.is_tensor, self.ntensors = False, len(new)
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of type {type(t).__name__}")
                _store(self, f"original{i}", t.detach().clone(), original)

    def originals(self):
        return [self.original] if self.is_tensor else [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def right_inverse(self, value):
        """Store ``value`` (walked back through the chain's right inverses) into the originals."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            values = [value] if self.is_tensor else list(value)
            if len(values) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of {self.ntensors} tensors, got "
                                 f"{len(values)}")
            for original, v in zip(self.originals(), values):
                original.copy_(v)

    def forward(self):
        if _cache is not None and id(self) in _cache:
            return _cache[id(self)]
        x = self[0](*self.originals())
        for module in list(self)[1:]:
            x = module(x)
        if _cache is not None:
            _cache[id(self)] = x
        return x


def register_parametrization(module, tensor_name: str, parametrization, *, unsafe: bool = False):
    """Compute ``module.<tensor_name>`` as ``parametrization(original)`` from now on (appended to the chain when
    it is parametrized already); returns the module."""
    lists = module._modules.get("parametrizations")
    if lists is not None and tensor_name in lists._modules:
        lists[tensor_name].append(parametrization)
        return module
    if tensor_name in module._parameters:
        original = module._parameters[tensor_name]
    elif tensor_name in module._buffers:
        original = module._buffers[tensor_name]
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if lists is None:
        module.parametrizations = lists = ModuleDict()
    lists[tensor_name] = plist
    return module


def is_parametrized(module, tensor_name: str | None = None) -> bool:
    lists = module._modules.get("parametrizations")
    if lists is None or not isinstance(lists, ModuleDict):
        return False
    return len(lists) > 0 if tensor_name is None else tensor_name in lists._modules


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    """Make ``module.<tensor_name>`` a plain parameter (or buffer) again: its current value
    (``leave_parametrized``) or its original; returns the module."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = plist()
                original.copy_(value) if tuple(value.shape) == tuple(original.shape) else original.set_(value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = plist().detach()
        like = plist.original0
        original = Parameter(value, like.requires_grad) if isinstance(like, Parameter) else value
    del module.parametrizations._modules[tensor_name]
    _store(module, tensor_name, original, original if isinstance(original, Parameter) else plist.originals()[0])
    if not module.parametrizations._modules:
        del module._modules["parametrizations"]
    return module
