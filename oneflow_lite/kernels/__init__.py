"""Per-device kernels. Importing this package registers the cpu and meta kernels."""

from oneflow_lite.kernels import cpu  # noqa: F401
