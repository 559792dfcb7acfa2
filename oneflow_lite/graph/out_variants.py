"""Out-variants of elementwise kernels: write an op's result into a given buffer (NumPy ``out=``).

The graph compiler uses them to fuse chains of elementwise ops into one buffer
and to reuse buffers across ops (Note [Fusion and the memory plan] in
compiler.py). ``register_out_variant(op_type, factory)``: ``factory(ctx,
input_dtypes)`` is called at compile time with the op's ``InferResult`` and
returns ``writer(out, *arrays)``, or None when the op cannot write into a buffer
for these dtypes (then its kernel runs as usual). A writer must compute exactly
what the op's cpu kernel computes (the graph tests compare them bit for bit);
``out`` has the op's output shape and dtype and may be one of the inputs. A writer may also offer a
form that overwrites one of its inputs (Note [Writers that consume an input] in compiler.py).
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.kernels.cpu.activation import RELU_ZEROS
from oneflow_lite.kernels.cpu.math import scalar_operand
from oneflow_lite.kernels.cpu.model_update import sgd_update_cpu

_OUT_VARIANTS: dict = {}
_F16 = np.dtype(np.float16)
_errstate = np.errstate


def register_out_variant(op_type: str, factory) -> None:
    """Register the out-variant factory of ``op_type`` (replacing an earlier one)."""
    if not callable(factory):
        raise TypeError(f"register_out_variant('{op_type}'): factory must be callable, got {factory!r}")
    _OUT_VARIANTS[op_type] = factory


def out_writer(op_type: str, ctx, input_dtypes):
    """The writer of one op call, or None."""
    factory = _OUT_VARIANTS.get(op_type)
    return None if factory is None else factory(ctx, input_dtypes)


def _ufunc_writer(ufunc, quiet=False):
    if quiet:
        def write(out, *arrays):
            with _errstate(all="ignore"):
                ufunc(*arrays, out=out)
    else:
        def write(out, *arrays):
            ufunc(*arrays, out=out)
    return write


def _plain(ufunc, quiet=False):
    def factory(ctx, input_dtypes):
        return _ufunc_writer(ufunc, quiet)
    return factory


def _relu(ctx, input_dtypes):
    maximum, zero = np.maximum, RELU_ZEROS[input_dtypes[0].np_dtype]

    def write(out, x):
        maximum(x, zero, out=out)
    return write


def _sigmoid(ctx, input_dtypes):
    """The sigmoid kernel's own sequence (negative, exp, +1, reciprocal) in ``out``; not for float16."""
    if input_dtypes[0].np_dtype == _F16:
        return None
    negative, exp, add, reciprocal = np.negative, np.exp, np.add, np.reciprocal

    def write(out, x):
        with _errstate(all="ignore"):
            negative(x, out=out)
            exp(out, out=out)
            add(out, 1, out=out)
            reciprocal(out, out=out)
    return write


def _scalar(ufunc, quiet, reverse=False):
    """``ufunc(x, s)`` (``ufunc(s, x)`` when ``reverse``) with the operand converted once, at compile time."""
    def factory(ctx, input_dtypes):
        np_dtype = input_dtypes[0].np_dtype
        if np_dtype == _F16:
            return None
        s = scalar_operand(ctx, np_dtype)
        if reverse:
            def call(out, x):
                ufunc(s, x, out=out)
        else:
            def call(out, x):
                ufunc(x, s, out=out)
        if not quiet:
            return call

        def write(out, x):
            with _errstate(all="ignore"):
                call(out, x)
        return write
    return factory


def _in_place_form(kernel):
    """The kernel's own in-place form (Note [Kernels that write in place] in kernels/cpu/math.py), and its
    form that may overwrite an input (``kernel.write_consuming``, Note [Writers that consume an input] in
    compiler.py): an optimizer update written straight into the parameter (Note [Assigns written in place])."""
    write = kernel.write
    consumed, write_consuming = getattr(kernel, "write_consuming", (None, None))

    def factory(ctx, input_dtypes):
        def writer(out, *arrays):
            write(ctx, out, *arrays)
        if write_consuming is not None:
            def consuming(out, *arrays):
                write_consuming(ctx, out, *arrays)
            writer.consumes = (consumed, consuming)
        return writer
    return factory


for _op, _factory in (
    ("relu", _relu),
    ("negative", _plain(np.negative)),
    ("tanh", _plain(np.tanh)),
    ("exp", _plain(np.exp, quiet=True)),
    ("sigmoid", _sigmoid),
    ("broadcast_add", _plain(np.add)),
    ("broadcast_sub", _plain(np.subtract)),
    ("broadcast_mul", _plain(np.multiply)),
    ("broadcast_div", _plain(np.divide, quiet=True)),
    ("scalar_add", _scalar(np.add, quiet=False)),
    ("scalar_mul", _scalar(np.multiply, quiet=False)),
    ("scalar_div", _scalar(np.divide, quiet=True)),
    ("scalar_reverse_div", _scalar(np.divide, quiet=True, reverse=True)),
    ("sgd_update", _in_place_form(sgd_update_cpu)),
):
    register_out_variant(_op, _factory)
