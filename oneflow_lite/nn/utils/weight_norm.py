"""``weight_norm`` / ``remove_weight_norm`` and ``spectral_norm`` / ``remove_spectral_norm``: PyTorch's hook-based
reparametrisations of a module's weight (``torch.nn.utils.weight_norm`` and ``torch.nn.utils.spectral_norm``).

Note [Weight reparametrisation hooks]
Both replace the parameter ``name`` by other parameters (``name_g`` and ``name_v`` for weight norm: direction
``v`` and magnitude ``g`` = the norm of ``v`` over every dim but ``dim``; ``name_orig`` plus the buffers
``name_u`` and ``name_v`` for spectral norm: the left and right singular vector estimates) and register a forward
pre-hook that computes ``name`` from them before every call and sets it as a plain tensor attribute of the module
(a function of the parameters, so autograd reaches them). Spectral norm runs ``n_power_iterations`` of the power
method in training mode (updating ``u`` and ``v`` in place, without grad) and divides the weight by
``sigma = u^T W v``. ``remove_*`` computes the weight once more and makes it a plain parameter again.
"""

from __future__ import annotations

import warnings

from oneflow_lite import functional as F
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.nn.parameter import Parameter

__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]


def _hooks_of(module, kind, name):
    """``(handle id, hook)`` of the module's pre-hooks that are ``kind`` reparametrising ``name``."""
    return [(k, hook) for k, hook in module._forward_pre_hooks.items()
            if isinstance(hook, kind) and hook.name == name]


def _weight_of(module, name, what):
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"`{what}` cannot be applied as parameter `{name}` is None")
    return weight


class WeightNorm:
    """The forward pre-hook of ``weight_norm`` (Note [Weight reparametrisation hooks])."""

    def __init__(self, name: str, dim):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / F.norm_except_dim(v, 2, self.dim))

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim=0):
    """Reparametrise ``module.<name>`` as ``g * v / ||v||`` (the norm over every dim but ``dim``; ``dim=None``:
    over all of them) with parameters ``<name>_g`` and ``<name>_v``; returns the module."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    if _hooks_of(module, WeightNorm, name):
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    fn = WeightNorm(name, dim)
    weight = _weight_of(module, name, "WeightNorm")
    del module._parameters[name]
    with no_grad():
        module.register_parameter(name + "_g", Parameter(F.norm_except_dim(weight, 2, fn.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def _remove(module, cls, name, what):
    """Undo the ``cls`` reparametrisation of ``module.<name>`` (its hook's ``remove``, then the hook itself)."""
    for key, hook in _hooks_of(module, cls, name):
        hook.remove(module)
        del module._forward_pre_hooks[key]
        return module
    raise ValueError(f"{what} of '{name}' not found in {module}")


def remove_weight_norm(module, name: str = "weight"):
    """Undo ``weight_norm``: ``module.<name>`` is a parameter again (its current value); returns the module."""
    return _remove(module, WeightNorm, name, "weight_norm")


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm`` (Note [Weight reparametrisation hooks])."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(F.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(F.mv(weight_mat, v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = F.dot(u, F.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm, estimated by power iterations (parameter ``<name>_orig``,
    buffers ``<name>_u`` / ``<name>_v``); ``dim`` (default 0, 1 for transposed convolutions) is the output dim.
    Returns the module."""
    if _hooks_of(module, SpectralNorm, name):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") else 0
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = _weight_of(module, name, "SpectralNorm")
    with no_grad():
        h, w = fn.reshape_weight_to_matrix(weight).shape
        u = F.normalize(F.randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
        v = F.normalize(F.randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo ``spectral_norm``: ``module.<name>`` is a parameter again (the normalised value); returns the module."""
    return _remove(module, SpectralNorm, name, "spectral_norm")
