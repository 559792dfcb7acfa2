"""The layers of ``flow.nn``."""

from oneflow_lite.nn.modules.activation import (  # noqa: F401
    ELU, GELU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSoftmax, Mish, MultiheadAttention, ReLU, ReLU6,
    SiLU, Sigmoid, Softmax, Softplus, Tanh,
)
from oneflow_lite.nn.modules.container import ModuleDict, ModuleList, Sequential  # noqa: F401
from oneflow_lite.nn.modules.conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
)
from oneflow_lite.nn.modules.dropout import Dropout  # noqa: F401
from oneflow_lite.nn.modules.flatten import Flatten, Unflatten  # noqa: F401
from oneflow_lite.nn.modules.linear import Bilinear, Identity, Linear  # noqa: F401
from oneflow_lite.nn.modules.loss import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss,
)
from oneflow_lite.nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm  # noqa
from oneflow_lite.nn.modules.pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d,
    MaxPool3d,
)
from oneflow_lite.nn.modules.sparse import Embedding  # noqa: F401
from oneflow_lite.nn.modules.transformer import TransformerEncoder, TransformerEncoderLayer  # noqa: F401

from oneflow_lite.nn.modules import (  # noqa: E402
    activation, container, conv, dropout, flatten, linear, loss, normalization, pooling, sparse, transformer,
)

__all__ = sorted(name for m in (activation, container, conv, dropout, flatten, linear, loss, normalization, pooling,
                                sparse, transformer) for name in m.__all__)
