"""Grad functions of the built-in ops. Importing this package registers them."""

from oneflow_lite.autograd.grads import conversion  # noqa: F401
from oneflow_lite.autograd.grads import linalg  # noqa: F401
from oneflow_lite.autograd.grads import index  # noqa: F401
from oneflow_lite.autograd.grads import nn  # noqa: F401
from oneflow_lite.autograd.grads import conv  # noqa: F401
from oneflow_lite.autograd.grads import unary  # noqa: F401
from oneflow_lite.autograd.grads import reduce  # noqa: F401
