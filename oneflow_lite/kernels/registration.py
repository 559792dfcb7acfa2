"""Registering a cpu kernel together with its meta twin.

Every op gets a meta kernel that computes nothing and accepts exactly the dtypes
its cpu kernel accepts, so a call on ``meta`` fails or succeeds as it would on cpu.
"""

from __future__ import annotations

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.kernel_predicate import ANY_DTYPE
from oneflow_lite.kernels.meta import meta_kernel


def cpu_kernel(op_type: str, predicate=ANY_DTYPE, priority: int = 0):
    """Decorator: register ``fn`` as a cpu kernel of ``op_type`` and a meta kernel beside it."""
    def register(fn):
        DISPATCHER.register_kernel(op_type, "cpu", fn, predicate=predicate, priority=priority,
                                   name=fn.__name__)
        DISPATCHER.register_kernel(op_type, "meta", meta_kernel, predicate=predicate, priority=priority,
                                   name="meta_kernel")
        return fn
    return register
