"""NumPy kernels for the cpu device."""

from oneflow_lite.kernels.cpu import activation  # noqa: F401
from oneflow_lite.kernels.cpu import math  # noqa: F401
from oneflow_lite.kernels.cpu import unary  # noqa: F401
from oneflow_lite.kernels.cpu import binary  # noqa: F401
from oneflow_lite.kernels.cpu import shape  # noqa: F401
from oneflow_lite.kernels.cpu import linalg  # noqa: F401
from oneflow_lite.kernels.cpu import conversion  # noqa: F401
from oneflow_lite.kernels.cpu import creation  # noqa: F401
from oneflow_lite.kernels.cpu import index  # noqa: F401
from oneflow_lite.kernels.cpu import reduce  # noqa: F401
from oneflow_lite.kernels.cpu import conv  # noqa: F401
from oneflow_lite.kernels.cpu import nn  # noqa: F401
from oneflow_lite.kernels.cpu import model_update  # noqa: F401
from oneflow_lite.kernels.cpu import bfloat16  # noqa: F401  (last: wraps the float32 kernels above)
