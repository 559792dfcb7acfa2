"""NumPy kernels for the cpu device."""

from oneflow_lite.kernels.cpu import activation  # noqa: F401
from oneflow_lite.kernels.cpu import math  # noqa: F401
from oneflow_lite.kernels.cpu import shape  # noqa: F401
from oneflow_lite.kernels.cpu import conversion  # noqa: F401
from oneflow_lite.kernels.cpu import creation  # noqa: F401
from oneflow_lite.kernels.cpu import grad_ops  # noqa: F401
