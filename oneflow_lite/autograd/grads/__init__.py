"""Grad functions of the built-in ops. Importing this package registers them."""

from oneflow_lite.autograd.grads import math, shape  # noqa: F401
from oneflow_lite.autograd.grads import linalg, shape_ext  # noqa: F401
from oneflow_lite.autograd.grads import binary  # noqa: F401
