"""Registering a cpu kernel together with its meta twin and its out-variant writer.

Every op gets a meta kernel that computes nothing and accepts exactly the dtypes
its cpu kernel accepts, so a call on ``meta`` fails or succeeds as it would on cpu.

Note [Out-variant writers]
A kernel may be registered with ``out_variant=factory`` (kept on its ``KernelRegistration``, shown by
``flow.dispatch.dump_table``): the graph compiler writes the op's result into a buffer of its own
choosing instead of allocating it (NumPy ``out=``), to fuse chains of elementwise ops into one buffer
and to reuse buffers across ops (Note [Fusion and the memory plan] in graph/compiler.py). At compile
time ``factory(ctx, input_dtypes)`` gets the op call's ``InferResult`` and input dtypes and returns
``writer(out, *arrays)``, or None when the kernel cannot write into a buffer for these dtypes (then the
kernel runs as usual). A writer computes exactly what its kernel computes (the graph tests compare them
bit for bit); ``out`` has the op's output shape and dtype and may be one of the inputs. A writer may also
offer a form that overwrites one of its inputs (Note [Writers that consume an input] in
graph/compiler.py). A plug-in gives kernels registered elsewhere a writer with
``oneflow_lite.graph.register_out_variant(op_type, factory)``.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.kernel_predicate import ANY_DTYPE
from oneflow_lite.kernels.meta import meta_kernel

_errstate = np.errstate


def cpu_kernel(op_type: str, predicate=ANY_DTYPE, priority: int = 0, out_variant=None):
    """Decorator: register ``fn`` as a cpu kernel of ``op_type`` (with the factory of its out-variant writer,
    Note [Out-variant writers]) and a meta kernel beside it."""
    def register(fn):
        DISPATCHER.register_kernel(op_type, "cpu", fn, predicate=predicate, priority=priority,
                                   name=fn.__name__, out_variant=out_variant)
        DISPATCHER.register_kernel(op_type, "meta", meta_kernel, predicate=predicate, priority=priority,
                                   name="meta_kernel")
        return fn
    return register


def ufunc_out_variant(ufunc, quiet: bool = False):
    """The out-variant factory of a kernel computing ``ufunc(*arrays)`` for every dtype it takes (``quiet``:
    with NumPy's floating-point warnings silenced, Note [Out-variant writers])."""
    if quiet:
        def write(out, *arrays):
            with _errstate(all="ignore"):
                ufunc(*arrays, out=out)
    else:
        def write(out, *arrays):
            ufunc(*arrays, out=out)

    def factory(ctx, input_dtypes):
        return write
    factory.__qualname__ = f"ufunc_out_variant({ufunc.__name__})"
    return factory
