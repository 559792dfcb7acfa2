"""Interpreters (the handlers at dispatch keys) and ``OpInterpUtil.dispatch``.

Importing this package registers the eager interpreter at every backend key, the
lazy (graph capture) interpreter at the Lazy key, vmap's batching interpreter
at the Batched key (with its batch rules), the autograd interpreter at the
Autograd key and the autocast interpreter at the Autocast key.
"""

from oneflow_lite.interpreters import autocast, autograd, batch_rules, batched, eager_local, lazy  # noqa: F401
from oneflow_lite.interpreters.op_interp_util import OpInterpUtil, dispatch, redispatch  # noqa: F401

eager_local.register()
lazy.register()
batched.register()
autograd.register()
autocast.register()
