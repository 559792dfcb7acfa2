"""Grad functions of the built-in ops. Importing this package registers them."""

from oneflow_lite.autograd.grads import activation, conversion, math, shape  # noqa: F401
