"""``flow.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as parametrizations (Note
[Parametrized tensors] in parametrize.py), PyTorch's recommended forms of the hook-based ones in weight_norm.py."""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.utils import parametrize

__all__ = ["spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / F.norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return F.norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name: str = "weight", dim: int = 0):
    """``module.<name>`` as ``g * v / ||v||`` with originals ``parametrizations.<name>.original0`` (g) and
    ``original1`` (v); returns the module."""
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """``weight / sigma``: sigma estimated by power iterations (in training mode) on buffers ``_u`` / ``_v``; a
    1-D weight is normalised instead."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps, self.n_power_iterations = eps, n_power_iterations
        if ndim > 1:
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = F.normalize(F.randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=self.eps)
            v = F.normalize(F.randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=self.eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(F.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(F.mv(weight_mat.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = F.vdot(u, F.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """``module.<name>`` divided by its spectral norm (a parametrization); ``dim`` defaults to 1 for transposed
    convolutions, else 0. Returns the module."""
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") else 0
    return parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
