"""User-op definitions (the ``REGISTER_USER_OP`` analogue). Importing this package registers them."""

from oneflow_lite.ops import activation  # noqa: F401
