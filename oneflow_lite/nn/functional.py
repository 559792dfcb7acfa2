"""``flow.nn.functional``: the functional API's neural-network functions under PyTorch's names.

Each name of ``_NN_NAMES`` is the same function object as ``flow._C.<name>``; ``bilinear``,
``multi_head_attention_forward``, ``linear_cross_entropy`` and ``triplet_margin_with_distance_loss`` are the
functions of the layers that use them (nn/modules/). PyTorch's module-level helpers follow: the typing names
(``Tensor``, ``Callable``, ``Optional``, ``DType``), the ``__torch_function__`` helpers (oneflow_lite/overrides.py)
and ``boolean_dispatch``.
"""

from oneflow_lite import functional as _F

# Names exposed here; each must exist in functors/functional_api.py.
_NN_NAMES = (
    "pad", "linear",
    "relu",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "interpolate",
    "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "mish", "softplus", "hardtanh", "hardsigmoid", "hardswish",
    "sigmoid", "tanh",
    "softmax", "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "dropout", "layer_norm", "group_norm",
    "batch_norm", "embedding", "one_hot", "scaled_dot_product_attention",
    # the nn sweep: activations, distances, dropout variants, normalisation, losses, embedding_bag
    "celu", "celu_", "elu_", "hardtanh_", "leaky_relu_", "relu_", "selu_", "rrelu", "rrelu_", "threshold",
    "threshold_", "hardshrink", "softshrink", "tanhshrink", "softsign", "softmin", "logsigmoid", "glu", "prelu",
    "gumbel_softmax", "normalize", "cosine_similarity", "pairwise_distance", "pdist", "alpha_dropout",
    "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "instance_norm", "local_response_norm",
    "rms_norm", "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "poisson_nll_loss",
    "gaussian_nll_loss", "triplet_margin_loss", "embedding_bag", "ctc_loss",
)

for _name in _NN_NAMES:
    globals()[_name] = getattr(_F, _name)

__all__ = list(_NN_NAMES)

# Composite functions defined with the layers that use them (plain Python functions over the functional API;
# the last two take Python objects a functional signature cannot: a distance callable, chunking options).
from oneflow_lite.nn.modules.activation import multi_head_attention_forward
from oneflow_lite.nn.modules.linear import bilinear
from oneflow_lite.functors.linalg import grouped_mm  # noqa: E402  (mixture-of-experts grouped GEMM)
from oneflow_lite.nn.modules.loss import linear_cross_entropy, triplet_margin_with_distance_loss

__all__ += ["bilinear", "grouped_mm", "linear_cross_entropy", "multi_head_attention_forward",
            "triplet_margin_with_distance_loss"]

# PyTorch's module-level helpers of torch.nn.functional: typing names, the __torch_function__ protocol helpers
# (oneflow_lite.overrides) and boolean_dispatch.
from collections.abc import Callable
from typing import Optional  # PyTorch's name: typing.Optional

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.overrides import (
    handle_torch_function,
    has_torch_function,
    has_torch_function_unary,
    has_torch_function_variadic,
)

DType = int  # PyTorch's alias in torch.nn.functional (the type of a dtype argument in TorchScript)


def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    """PyTorch's argument check: ``arg`` is an int or a pair, else AssertionError(``message.format(arg_name)``)."""
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling ``if_true`` or ``if_false`` by the boolean argument ``arg_name`` (at position
    ``arg_index``, ``default`` when not passed), as PyTorch's ``torch._jit_internal.boolean_dispatch``; the
    result takes the docstring of whichever function has one."""
    def fn(*args, **kwargs):
        flag = default
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if if_true.__doc__ is None and if_false.__doc__ is not None:
        if_true.__doc__ = if_false.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is not None:
        if_false.__doc__ = if_true.__doc__
    elif if_false.__doc__ is not None and if_true.__doc__ is not None:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = if_true.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    return fn


__all__ += ["Callable", "DType", "Optional", "Tensor", "boolean_dispatch", "handle_torch_function",
            "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic"]


# ---- pooling, unpooling, fold / unfold, shuffles, grid sampling, upsampling (functors/conv.py) ------------------
_SPATIAL_NAMES = (
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d", "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "fold", "unfold", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "conv_tbc", "grid_sample", "affine_grid",
)
for _name in _SPATIAL_NAMES:
    globals()[_name] = getattr(_F, _name)

# The deprecated wrappers of ``interpolate`` (plain functions, so their warnings point at the caller).
from oneflow_lite.nn.modules.upsampling import upsample, upsample_bilinear, upsample_nearest

__all__ += list(_SPATIAL_NAMES) + ["upsample", "upsample_bilinear", "upsample_nearest"]
