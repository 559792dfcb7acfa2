"""Interpreters (the handlers at dispatch keys) and ``OpInterpUtil.dispatch``.

Importing this package registers the eager interpreter at every backend key, the
global interpreter at the Global key, the lazy (graph capture) interpreter at the
Lazy key, vmap's batching interpreter at the Batched key (with its batch rules),
the Python dispatch modes' handler at the Python key, the autograd interpreter at
the Autograd key, the autocast interpreter at the Autocast key and the
profiler's at the Profiler key.
"""

from oneflow_lite.interpreters import autocast, autograd, batch_rules, batched, eager_global, eager_local, lazy  # noqa: F401
from oneflow_lite.interpreters import profiler, python_mode
from oneflow_lite.interpreters.op_interp_util import OpInterpUtil, dispatch, redispatch  # noqa: F401

eager_local.register()
eager_global.register()
lazy.register()
batched.register()
autograd.register()
autocast.register()
python_mode.register()
profiler.register()
