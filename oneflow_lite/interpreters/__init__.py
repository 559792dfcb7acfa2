"""Interpreters (the handlers at dispatch keys) and ``OpInterpUtil.dispatch``.

Importing this package registers the eager interpreter at every backend key, the
global interpreter at the Global key, the lazy (graph capture) interpreter at the
Lazy key and the autograd interpreter at the Autograd key.
"""

from oneflow_lite.interpreters import autograd, eager_global, eager_local, lazy
from oneflow_lite.interpreters.op_interp_util import OpInterpUtil, dispatch, redispatch  # noqa: F401

eager_local.register()
eager_global.register()
lazy.register()
autograd.register()
