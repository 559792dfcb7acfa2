"""``flow.nn.functional``: the functional API's neural-network functions under PyTorch's names.

Each name of ``_NN_NAMES`` is the same function object as ``flow._C.<name>``; ``bilinear`` and
``multi_head_attention_forward`` are the composite functions of ``nn.Bilinear`` and ``nn.MultiheadAttention``.
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
)

for _name in _NN_NAMES:
    globals()[_name] = getattr(_F, _name)

__all__ = list(_NN_NAMES)

# Composite functions defined with the layers that use them (plain Python functions over the functional API).
from oneflow_lite.nn.modules.activation import multi_head_attention_forward
from oneflow_lite.nn.modules.linear import bilinear

__all__ += ["bilinear", "multi_head_attention_forward"]

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
