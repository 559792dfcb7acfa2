"""cpu kernels of the arithmetic, comparison, matmul and reduce_sum ops.

Note [Scalar operands]
A scalar op's operand arrives as an attr (a Python int or float) and is converted
to the input's dtype here (once per distinct attrs and dtype), as PyTorch casts a
wrapped scalar to the common dtype:
integers wrap (``int8 + 1000`` adds ``-24``, NumPy 2 would raise OverflowError
for a plain Python int), a float too large for float16 / float32 becomes inf.
Arithmetic on float16 runs in float32 with the operand kept at float32 precision
and rounds once at the end, as PyTorch's CPU kernels do (``opmath`` with the
original scalar value), so ``half(1e-3) * 1e6`` is 1000, not inf. Comparisons
compare in the input's dtype.

Division and exp follow IEEE (x / 0 is inf or nan, exp(1000) is inf) without
NumPy's RuntimeWarnings, as PyTorch does. add / sub / mul overflow to inf as well,
but without ``np.errstate`` (it costs about 1 us, a third of an eager ``flow.add``): their warnings are
filtered and caught in one place (Note [NumPy warnings in kernels] in interpreters/eager_local.py).
"""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import ALL_DTYPES, FLOATING_DTYPES, NUMERIC_DTYPES, WITH_LIMITED_UNSIGNED
from oneflow_lite.kernels.registration import cpu_kernel, ufunc_out_variant

_errstate = np.errstate
_array = np.array
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)
_FLOAT_MAX = {np.dtype(d): float(np.finfo(d).max) for d in (np.float16, np.float32)}


def _scalar_as(value, np_dtype):
    """The 0-d array of ``value`` in ``np_dtype``, wrapping integers (Note [Scalar operands])."""
    a = _array(value, _I64 if type(value) is int else _F64)
    limit = _FLOAT_MAX.get(np_dtype)
    if limit is None or -limit <= value <= limit:
        return a.astype(np_dtype)
    with _errstate(all="ignore"):  # beyond float16 / float32: inf (nan stays nan)
        return a.astype(np_dtype)


_operands: dict = {}  # (attrs, np dtype) -> read-only 0-d operand
_OPERANDS_CACHE_SIZE = 4096


def scalar_operand(ctx, np_dtype):
    """A scalar op's operand (its ``*_operand`` attrs) as a read-only 0-d array of ``np_dtype``, converted once
    per distinct (attrs, dtype) (an AttrMap keeps 0.0 and -0.0 apart, Note [Typed attr map equality])."""
    attrs = ctx.attrs
    key = (attrs, np_dtype)
    s = _operands.get(key)
    if s is None:
        s = _scalar_as(attrs["float_operand"] if attrs["has_float_operand"] else attrs["int_operand"], np_dtype)
        s.flags.writeable = False
        if len(_operands) >= _OPERANDS_CACHE_SIZE:
            _operands.clear()
        _operands[key] = s
    return s


# Note [Plain kernels]
# A kernel may carry ``kernel.plain``, a function of the arrays alone that computes exactly what
# ``kernel(ctx, *arrays)`` does (``np.add`` for broadcast_add). The eager interpreter's fast path
# calls it directly (Note [Eager fast path]), which saves the wrapper's Python frame, about 40 ns
# of a 1.5 us ``flow.add``. Kernels that read attrs, convert dtypes or silence warnings have none.


# Note [Kernels that write in place]
# A kernel may carry ``kernel.write(ctx, out, *arrays)``, which stores exactly the kernel's result
# into ``out`` (an array of the result's shape and dtype, possibly one of the inputs). The eager
# interpreter uses it for in-place calls (``p.add_(g)``): one ufunc with ``out=`` instead of a new
# result copied into the tensor. NumPy's ufuncs give the same values when ``out`` overlaps an input.
# A write that runs one ufunc with ``out=`` (NumPy warns only after writing every element) or runs quietly
# says so with ``write.writes_all = True`` (Note [NumPy warnings in kernels] in interpreters/eager_local.py).
def _arith_scalar_kernel(ufunc, name, quiet, reverse=False):
    """A kernel computing ``ufunc(x, s)`` (``ufunc(s, x)`` when ``reverse``), float16 in float32."""
    def kernel(ctx, x):
        dt = x.dtype
        if dt == _F16:
            s = scalar_operand(ctx, _F32)
            with _errstate(all="ignore"):
                r = ufunc(s, x.astype(_F32)) if reverse else ufunc(x.astype(_F32), s)
                return r.astype(_F16)
        s = scalar_operand(ctx, dt)
        if quiet:
            with _errstate(all="ignore"):
                return ufunc(s, x) if reverse else ufunc(x, s)
        return ufunc(s, x) if reverse else ufunc(x, s)

    def write(ctx, out, x):
        dt = x.dtype
        if dt == _F16:
            out[...] = kernel(ctx, x)
            return
        s = scalar_operand(ctx, dt)
        a, b = (s, x) if reverse else (x, s)
        if quiet:
            with _errstate(all="ignore"):
                ufunc(a, b, out=out)
        else:
            ufunc(a, b, out=out)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.write = write
    write.writes_all = True  # one ufunc with out=, or quiet (Note [NumPy warnings in kernels])
    return kernel


def _compare_scalar_kernel(ufunc, name):
    def kernel(ctx, x):
        return ufunc(x, scalar_operand(ctx, x.dtype))
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _binary_kernel(ufunc, name, quiet=False):
    if quiet:
        def kernel(ctx, x, y):
            with _errstate(all="ignore"):
                return ufunc(x, y)

        def write(ctx, out, x, y):
            with _errstate(all="ignore"):
                ufunc(x, y, out=out)
    else:
        def kernel(ctx, x, y):
            return ufunc(x, y)

        def write(ctx, out, x, y):
            ufunc(x, y, out=out)
        kernel.plain = ufunc  # Note [Plain kernels]
    kernel.__name__ = kernel.__qualname__ = name
    kernel.write = write  # Note [Kernels that write in place]
    write.writes_all = True  # one ufunc with out=, or quiet (Note [NumPy warnings in kernels])
    return kernel


def _scalar_out_variant(ufunc, quiet, reverse=False):
    """The out-variant factory of ``_arith_scalar_kernel(ufunc, quiet, reverse)``, with the operand converted
    once, at compile time; not for float16 (Note [Out-variant writers] in kernels/registration.py)."""
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
    factory.__qualname__ = f"scalar_out_variant({ufunc.__name__}{', reverse' if reverse else ''})"
    return factory


def _register(op_type, predicate, fn, out_variant=None):
    cpu_kernel(op_type, predicate, out_variant=out_variant)(fn)


_ALL_X = dtype_in("x", *ALL_DTYPES)
_NUMERIC_X = dtype_in("x", *NUMERIC_DTYPES)
_FLOAT_X = dtype_in("x", *FLOATING_DTYPES)
_ALL_IN = dtype_in("in", *ALL_DTYPES)
_FLOAT_IN = dtype_in("in", *FLOATING_DTYPES)
_UNSIGNED_TOO_X = dtype_in("x", *WITH_LIMITED_UNSIGNED)  # Note [Limited unsigned dtypes]
_UNSIGNED_TOO_IN = dtype_in("in", *WITH_LIMITED_UNSIGNED)
_EQUALITIES = frozenset({"broadcast_equal", "broadcast_not_equal", "scalar_logical_equal", "scalar_logical_not_equal"})

# bool + bool is logical or and bool * bool logical and (NumPy's bool add / multiply), as in PyTorch.
_register("broadcast_add", _ALL_X, _binary_kernel(np.add, "broadcast_add_cpu"), ufunc_out_variant(np.add))
_register("broadcast_sub", _NUMERIC_X, _binary_kernel(np.subtract, "broadcast_sub_cpu"),
          ufunc_out_variant(np.subtract))
_register("broadcast_mul", _UNSIGNED_TOO_X, _binary_kernel(np.multiply, "broadcast_mul_cpu"), ufunc_out_variant(np.multiply))
_register("broadcast_div", _FLOAT_X, _binary_kernel(np.divide, "broadcast_div_cpu", quiet=True),
          ufunc_out_variant(np.divide, quiet=True))
for _op, _ufunc in (("broadcast_equal", np.equal), ("broadcast_not_equal", np.not_equal),
                    ("broadcast_less", np.less), ("broadcast_less_equal", np.less_equal),
                    ("broadcast_greater", np.greater), ("broadcast_greater_equal", np.greater_equal)):
    _register(_op, _UNSIGNED_TOO_X if _op in _EQUALITIES else _ALL_X, _binary_kernel(_ufunc, _op + "_cpu"))

_register("scalar_add", _ALL_IN, _arith_scalar_kernel(np.add, "scalar_add_cpu", quiet=False),
          _scalar_out_variant(np.add, quiet=False))
_register("scalar_mul", _UNSIGNED_TOO_IN, _arith_scalar_kernel(np.multiply, "scalar_mul_cpu", quiet=False),
          _scalar_out_variant(np.multiply, quiet=False))
_register("scalar_div", _FLOAT_IN, _arith_scalar_kernel(np.divide, "scalar_div_cpu", quiet=True),
          _scalar_out_variant(np.divide, quiet=True))
_register("scalar_reverse_div", _FLOAT_IN,
          _arith_scalar_kernel(np.divide, "scalar_reverse_div_cpu", quiet=True, reverse=True),
          _scalar_out_variant(np.divide, quiet=True, reverse=True))
for _op, _ufunc in (("scalar_logical_equal", np.equal), ("scalar_logical_not_equal", np.not_equal),
                    ("scalar_logical_less", np.less), ("scalar_logical_less_equal", np.less_equal),
                    ("scalar_logical_greater", np.greater), ("scalar_logical_greater_equal", np.greater_equal)):
    _register(_op, _UNSIGNED_TOO_IN if _op in _EQUALITIES else _ALL_IN,
              _compare_scalar_kernel(_ufunc, _op + "_cpu"))

_negative = np.negative
_exp = np.exp


@cpu_kernel("negative", _NUMERIC_X, out_variant=ufunc_out_variant(_negative))
def negative_cpu(ctx, x):
    return _negative(x)


negative_cpu.plain = _negative  # Note [Plain kernels]


@cpu_kernel("exp", _FLOAT_X, out_variant=ufunc_out_variant(_exp, quiet=True))
def exp_cpu(ctx, x):
    with _errstate(all="ignore"):
        return _exp(x)


_matmul = np.matmul


def _matmul_any(a, b):
    """``a @ b``; float16 is computed in float32 and rounded once: PyTorch's cpu half matmul accumulates in
    float32 too, and NumPy's own float16 matmul has no BLAS (50 times slower than float32). Beyond float16's
    range is inf, silently. (NumPy's builtin dtypes are singletons, so ``is`` is the cheap exact test.)"""
    if a.dtype is _F16:
        with _errstate(over="ignore"):
            return _matmul(a.astype(_F32), b.astype(_F32)).astype(_F16)
    return _matmul(a, b)


# PyTorch has no bool matmul on cpu; integer matmul works (NumPy's non-BLAS loops).
@cpu_kernel("matmul", dtype_in("a", *NUMERIC_DTYPES))
def matmul_cpu(ctx, a, b):
    return _matmul_any(a, b)


matmul_cpu.plain = _matmul_any  # Note [Plain kernels]


_sum = np.add.reduce  # np.sum without its Python wrapper


@cpu_kernel("reduce_sum", dtype_in("input_tensor", *ALL_DTYPES))
def reduce_sum_cpu(ctx, x):
    attrs = ctx.attrs
    dt = x.dtype
    if dt == _F16:  # accumulate float16 in float32, as PyTorch does; beyond float16's range is inf
        with _errstate(all="ignore"):
            return _sum(x, attrs["axis"], _F32, keepdims=attrs["keepdims"]).astype(_F16)
    return _sum(x, attrs["axis"], dt, keepdims=attrs["keepdims"])
