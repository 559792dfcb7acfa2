"""Grad functions that gradient rows cannot express (the rows live with their ops in ops/). Importing this
package registers them."""

from oneflow_lite.autograd.grads import linalg  # noqa: F401
