"""Interpreters (the handlers at dispatch keys) and ``OpInterpUtil.dispatch``.

Importing this package registers the eager interpreter at every backend key, the
lazy (graph capture) interpreter at the Lazy key and the autograd interpreter at
the Autograd key; the Python dispatch modes' handler at the Python key and the
profiler's at the Profiler key.
"""

from oneflow_lite.interpreters import autograd, eager_local, lazy
from oneflow_lite.interpreters import profiler, python_mode
from oneflow_lite.interpreters.op_interp_util import OpInterpUtil, dispatch, redispatch  # noqa: F401

eager_local.register()
lazy.register()
autograd.register()
python_mode.register()
profiler.register()
