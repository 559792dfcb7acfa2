"""Interpreters (the handlers at dispatch keys) and ``OpInterpUtil.dispatch``.

Importing this package registers the eager interpreter at every backend key and
makes the reserved functionality keys fall through until an issue fills them.
"""

from oneflow_lite.interpreters import eager_local
from oneflow_lite.interpreters.op_interp_util import OpInterpUtil, dispatch, redispatch  # noqa: F401

eager_local.register()
