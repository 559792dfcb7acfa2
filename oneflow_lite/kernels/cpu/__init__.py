"""NumPy kernels for the cpu device."""

from oneflow_lite.kernels.cpu import activation  # noqa: F401
