"""User-op definitions (the ``REGISTER_USER_OP`` analogue). Importing this package registers them."""

from oneflow_lite.ops import activation  # noqa: F401
from oneflow_lite.ops import math  # noqa: F401
from oneflow_lite.ops import unary  # noqa: F401
from oneflow_lite.ops import binary  # noqa: F401
from oneflow_lite.ops import shape  # noqa: F401
from oneflow_lite.ops import linalg  # noqa: F401
from oneflow_lite.ops import conversion  # noqa: F401
from oneflow_lite.ops import creation  # noqa: F401
from oneflow_lite.ops import index  # noqa: F401
from oneflow_lite.ops import reduce  # noqa: F401
from oneflow_lite.ops import conv  # noqa: F401
from oneflow_lite.ops import nn  # noqa: F401
from oneflow_lite.ops import model_update  # noqa: F401  (optimizer update ops, e.g. sgd_update)
