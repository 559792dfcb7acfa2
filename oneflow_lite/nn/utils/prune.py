"""``flow.nn.utils.prune`` (PyTorch's ``torch.nn.utils.prune``): masking parameters to zero by magnitude, norm of
channels, at random or by a given mask, per tensor or globally across tensors.

Note [Pruning masks]
Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, keeps a buffer ``<name>_mask`` and registers the
pruning method as a forward pre-hook that sets ``module.<name> = <name>_orig * <name>_mask`` before each call (a
product, so the gradient of the pruned entries is zero). Pruning the same tensor again combines the methods in a
``PruningContainer``: the new method only looks at the entries (or, structured, the channels) still unpruned,
and its amount counts among them. ``remove`` makes the pruned values the plain parameter again. ``amount`` is a
fraction of the entries (rounded) or a number of them.
"""

from __future__ import annotations

import numbers

from oneflow_lite import functional as F
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.nn.utils.convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
           "RandomStructured", "RandomUnstructured", "custom_from_mask", "global_unstructured", "identity",
           "is_pruned", "l1_unstructured", "ln_structured", "random_structured", "random_unstructured", "remove"]


def _nparams_toprune(amount, size: int) -> int:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        if amount < 0:
            raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
                             f"integer")
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    if not 0.0 <= amount <= 1.0:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")
    return round(amount * size)


def _pruning_hooks(module, name):
    return [(k, hook) for k, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]


class BasePruningMethod:
    """A pruning method: ``compute_mask(t, default_mask)``; a forward pre-hook applying the mask (Note [Pruning
    masks])."""

    PRUNING_TYPE = "unstructured"
    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t, default_mask):
        raise NotImplementedError(f"{type(self).__name__} must implement compute_mask")

    def apply_mask(self, module):
        return getattr(module, self._tensor_name + "_orig") * getattr(module, self._tensor_name + "_mask")

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        method = cls(*args, **kwargs)
        method._tensor_name = name
        old = _pruning_hooks(module, name)
        for key, _ in old:
            del module._forward_pre_hooks[key]
        if old:
            container = old[0][1] if isinstance(old[0][1], PruningContainer) else PruningContainer(old[0][1])
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        scores = orig if importance_scores is None else importance_scores
        if tuple(scores.shape) != tuple(orig.shape):
            raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}")
        if not old:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = F.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        with no_grad():
            mask = method.compute_mask(scores.detach(), default_mask=default_mask)
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        scores = t if importance_scores is None else importance_scores
        mask = F.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module):
        weight = self.apply_mask(module)
        delattr(module, self._tensor_name)
        orig = module._parameters.pop(self._tensor_name + "_orig")
        with no_grad():
            orig.copy_(weight)
        del module._buffers[self._tensor_name + "_mask"]
        module.register_parameter(self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The methods applied one after another to one tensor (Note [Pruning masks])."""

    def __init__(self, *methods):
        self._pruning_methods = ()
        for m in methods:
            self.add_pruning_method(m)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if self._tensor_name is not None and method._tensor_name != self._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer. Found '{method._tensor_name}'")
        self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        mask = default_mask.clone().to(dtype=t.dtype)
        if method.PRUNING_TYPE == "global":
            return method.compute_mask(t, default_mask=mask)
        if method.PRUNING_TYPE == "unstructured":
            keep = mask == 1
            mask[keep] = method.compute_mask(t[keep], default_mask=mask[keep]).to(dtype=mask.dtype)
            return mask
        dim = method.dim % t.dim()
        others = [d for d in range(t.dim()) if d != dim]
        channels = F.nonzero(mask.sum(dim=others) != 0).reshape(-1)
        partial = method.compute_mask(t.index_select(dim, channels), default_mask=mask.index_select(dim, channels))
        return mask.index_copy(dim, channels, partial.to(dtype=mask.dtype))


class Identity(BasePruningMethod):
    def compute_mask(self, t, default_mask):
        return default_mask


class _Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries ranked lowest by ``_ranking(t)``."""

    def __init__(self, amount):
        _nparams_toprune(amount, 1 << 62)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _nparams_toprune(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            mask.view(-1)[F.topk(self._ranking(t).view(-1), k, largest=False).indices] = 0
        return mask


class RandomUnstructured(_Unstructured):
    def _ranking(self, t):
        return F.rand_like(t)


class L1Unstructured(_Unstructured):
    def _ranking(self, t):
        return t.abs()


class _Structured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def _channel_mask(self, t, default_mask, keep):
        mask = F.zeros_like(t)
        index = [slice(None)] * t.dim()
        index[self.dim] = keep
        mask[tuple(index)] = 1
        return mask * default_mask.to(dtype=mask.dtype)

    def compute_mask(self, t, default_mask):
        size = t.shape[self.dim]
        k = _nparams_toprune(self.amount, size)
        if k == 0:
            return default_mask
        return self._channel_mask(t, default_mask, self._kept_channels(t, size - k))


class RandomStructured(_Structured):
    def __init__(self, amount, dim=-1):
        _nparams_toprune(amount, 1 << 62)
        self.amount, self.dim = amount, dim

    def _kept_channels(self, t, n_keep):
        return F.topk(F.rand(t.shape[self.dim]), n_keep).indices


class LnStructured(_Structured):
    def __init__(self, amount, n, dim=-1):
        _nparams_toprune(amount, 1 << 62)
        self.amount, self.n, self.dim = amount, n, dim

    def _kept_channels(self, t, n_keep):
        dims = [d for d in range(t.dim()) if d != self.dim % t.dim()]
        return F.topk(F.norm(t, self.n, dims), n_keep).indices


class CustomFromMask(BasePruningMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        return default_mask * self.mask.to(dtype=default_mask.dtype)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of ``parameters`` together: ``pruning_method`` (unstructured) ranks all
    their entries at once."""
    parameters = list(parameters)
    scores = importance_scores or {}
    flat_scores = parameters_to_vector([scores.get((m, n), getattr(m, n)) for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask", F.ones_like(getattr(m, n))) for m, n in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f'{pruning_method} of type {method.PRUNING_TYPE}')
    method._tensor_name = "temp"
    container = PruningContainer(method)
    with no_grad():
        final_mask = container.compute_mask(flat_scores.detach(), default_mask)
    start = 0
    for module, name in parameters:
        n = getattr(module, name).numel()
        custom_from_mask(module, name, final_mask[start:start + n].view_as(getattr(module, name)))
        start += n


def remove(module, name):
    """Make the pruned ``module.<name>`` a plain parameter again, its pruned values kept."""
    hooks = _pruning_hooks(module, name)
    if not hooks:
        raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")
    key, hook = hooks[0]
    hook.remove(module)
    del module._forward_pre_hooks[key]
    return module


def is_pruned(module) -> bool:
    return any(isinstance(hook, BasePruningMethod) for m in module.modules() for hook in m._forward_pre_hooks.values())
