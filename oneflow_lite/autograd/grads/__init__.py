"""The helpers gradient rows call through ``F`` (util.py: registered as F.<name> at import) and the grad
functions that rows cannot express (the rows live with their ops in ops/). Importing this package registers
them."""

from oneflow_lite.autograd.grads import linalg, util  # noqa: F401
