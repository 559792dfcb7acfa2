"""Lazy modules (PyTorch's ``LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``, ``LazyBatchNorm*``,
``LazyInstanceNorm*``): the input size is read from the first input.

Note [Lazy modules]
A lazy module is built like its regular class with zero input features and ``UninitializedParameter`` weights
(nn/parameter.py), and registers a forward pre-hook. Its first call runs ``initialize_parameters(input)``: the
input size is read from the input, the parameters are materialised and initialised as the regular class does
it, the hook is removed and the module's class becomes the regular one (``cls_to_become``: a ``LazyLinear``
is a ``Linear`` from then on). Create the optimizer after that first call (a dry run), as in PyTorch.
"""

from __future__ import annotations

from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.nn.modules import batchnorm, conv, instancenorm, linear
from oneflow_lite.nn.parameter import UninitializedParameter, is_lazy

__all__ = ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LazyModuleMixin"]


class LazyModuleMixin:
    """Infers the parameters' shapes from the first input (Note [Lazy modules])."""

    cls_to_become = None

    def _lazy_init(self, names, device, dtype):
        for name in names:
            if getattr(self, name) is not None:
                setattr(self, name, UninitializedParameter(device=device, dtype=dtype))
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(p) for p in self._parameters.values())

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self._size_known():
            super().reset_parameters()

    def _materialize(self, shapes):
        with no_grad():
            for name, shape in shapes.items():
                p = getattr(self, name)
                if is_lazy(p):
                    p.materialize(shape)
            self.reset_parameters()


def _infer_parameters(module, args):
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, linear.Linear):
    """A ``Linear`` whose ``in_features`` is the last dim of its first input."""

    cls_to_become = linear.Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, bias, device, dtype)
        self.out_features = out_features
        self._lazy_init(("weight", "bias"), device, dtype)

    def _size_known(self):
        return self.in_features != 0

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self._materialize({"weight": (self.out_features, self.in_features), "bias": (self.out_features,)})


class _LazyConvMixin(LazyModuleMixin):
    def __init__(self, out_channels, kernel_size, *args, device=None, dtype=None, **kwargs):
        super().__init__(0, 0, kernel_size, *args, device=device, dtype=dtype, **kwargs)
        self.out_channels = out_channels
        self._lazy_init(("weight", "bias"), device, dtype)

    def _size_known(self):
        return self.in_channels != 0

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        batched = input.dim() == len(self.kernel_size) + 2
        self.in_channels = input.shape[1] if batched else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        c_in, c_out, g = self.in_channels, self.out_channels, self.groups
        shape = (c_in, c_out // g) if self.transposed else (c_out, c_in // g)
        self._materialize({"weight": (*shape, *self.kernel_size), "bias": (c_out,)})


class _LazyNormMixin(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        super().__init__(0, eps, momentum, affine, track_running_stats, device, dtype)
        self._lazy_init(("weight", "bias"), device, dtype)

    def has_uninitialized_params(self) -> bool:
        return super().has_uninitialized_params() or self.num_features == 0

    def _size_known(self):
        return self.num_features != 0

    def initialize_parameters(self, input, *args, **kwargs):
        if self.num_features == 0:
            self.num_features = input.shape[1]
            if self.track_running_stats:
                like = self.running_mean
                self.running_mean = like.new_zeros(self.num_features)
                self.running_var = like.new_ones(self.num_features)
            self._materialize({"weight": (self.num_features,), "bias": (self.num_features,)})


class LazyConv1d(_LazyConvMixin, conv.Conv1d):
    """A ``Conv1d`` whose ``in_channels`` is read from its first input."""
    cls_to_become = conv.Conv1d


class LazyConv2d(_LazyConvMixin, conv.Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is read from its first input."""
    cls_to_become = conv.Conv2d


class LazyConv3d(_LazyConvMixin, conv.Conv3d):
    """A ``Conv3d`` whose ``in_channels`` is read from its first input."""
    cls_to_become = conv.Conv3d


class LazyConvTranspose1d(_LazyConvMixin, conv.ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` is read from its first input."""
    cls_to_become = conv.ConvTranspose1d


class LazyConvTranspose2d(_LazyConvMixin, conv.ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` is read from its first input."""
    cls_to_become = conv.ConvTranspose2d


class LazyConvTranspose3d(_LazyConvMixin, conv.ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` is read from its first input."""
    cls_to_become = conv.ConvTranspose3d


class LazyBatchNorm1d(_LazyNormMixin, batchnorm.BatchNorm1d):
    """A ``BatchNorm1d`` whose ``num_features`` is read from its first input."""
    cls_to_become = batchnorm.BatchNorm1d


class LazyBatchNorm2d(_LazyNormMixin, batchnorm.BatchNorm2d):
    """A ``BatchNorm2d`` whose ``num_features`` is read from its first input."""
    cls_to_become = batchnorm.BatchNorm2d


class LazyBatchNorm3d(_LazyNormMixin, batchnorm.BatchNorm3d):
    """A ``BatchNorm3d`` whose ``num_features`` is read from its first input."""
    cls_to_become = batchnorm.BatchNorm3d


class LazyInstanceNorm1d(_LazyNormMixin, instancenorm.InstanceNorm1d):
    """An ``InstanceNorm1d`` (affine, tracking statistics, as PyTorch's lazy one) sized by its first input."""
    cls_to_become = instancenorm.InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormMixin, instancenorm.InstanceNorm2d):
    """An ``InstanceNorm2d`` (affine, tracking statistics, as PyTorch's lazy one) sized by its first input."""
    cls_to_become = instancenorm.InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormMixin, instancenorm.InstanceNorm3d):
    """An ``InstanceNorm3d`` (affine, tracking statistics, as PyTorch's lazy one) sized by its first input."""
    cls_to_become = instancenorm.InstanceNorm3d
