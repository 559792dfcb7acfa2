"""cpu kernels of activation ops and their ``*_grad`` ops.

Apart from relu (every numeric dtype) and tanh, the kernels take floating
inputs only, as PyTorch's ("not implemented for 'Long'"). Composite formulas
run in float32 for float16 inputs and round once at the end (PyTorch's
``opmath``), with NumPy's floating-point warnings silenced: ``exp`` may
overflow to inf on the way, as it does silently in PyTorch (Note [Quiet unary
kernels] in kernels/cpu/unary.py).
"""

import math

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import FLOATING_DTYPES, NUMERIC_DTYPES
from oneflow_lite.kernels.cpu.blocked import run_blocked
from oneflow_lite.kernels.cpu.unary import ERF_SMALL_POLY, erf_reference, erfc_form
from oneflow_lite.kernels.registration import cpu_kernel, ufunc_out_variant

_maximum = np.maximum
_minimum = np.minimum
_where = np.where
_empty = np.empty
_greater = np.greater
_copyto = np.copyto
_negative = np.negative
_bitwise_and = np.bitwise_and
_exp = np.exp
_errstate = np.errstate
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)

_FLOAT_X = dtype_in("x", *FLOATING_DTYPES)
_FLOAT_DY = dtype_in("dy", *FLOATING_DTYPES)

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


# A 0-d zero of each dtype: ``maximum(x, zero)`` skips NumPy's conversion of a Python 0 (a third of the time
# of relu on a small tensor). Read-only, as they are shared.
RELU_ZEROS = {d.np_dtype: np.zeros((), d.np_dtype) for d in NUMERIC_DTYPES}
for _z in RELU_ZEROS.values():
    _z.flags.writeable = False

# Note [relu against a zeros array]
# NumPy's SIMD loop of ``maximum`` runs on two contiguous operands, not on a broadcast 0-d one: against a
# zeros array of x's shape, relu of a (64, 64) float32 array takes 0.5 us instead of 3.5 us, of (64, 256)
# 1.8 us instead of 7.4 us. From ``_FULL_ZEROS_MIN`` elements the kernels read zeros of x's shape, a view
# of one read-only zeros buffer per dtype, grown as needed (``np.zeros`` maps untouched zero pages: a large
# one costs address space, not memory, and reads one physical page).
_FULL_ZEROS_MIN = 1024
_zeros_buffers: dict = {}


def zeros_of_shape(dtype, shape, size):
    """Read-only zeros of ``shape`` (``size`` elements) and ``dtype``, a view of a shared buffer."""
    buf = _zeros_buffers.get(dtype)
    if buf is None or buf.size < size:
        buf = np.zeros(max(size, 2 * buf.size if buf is not None else size), dtype)
        buf.flags.writeable = False
        _zeros_buffers[dtype] = buf
    return buf[:size].reshape(shape)


def relu_out_variant(ctx, input_dtypes):
    """Note [Out-variant writers] in kernels/registration.py."""
    m = ctx.out_metas[0]
    maximum = _maximum
    zero = (zeros_of_shape(m.np_dtype, m.shape, m.numel) if m.numel >= _FULL_ZEROS_MIN
            else RELU_ZEROS[input_dtypes[0].np_dtype])

    def write(out, x):
        maximum(x, zero, out=out)
    return write


@cpu_kernel("relu", dtype_in("x", *NUMERIC_DTYPES), out_variant=relu_out_variant)
def relu_cpu(ctx, x):
    if x.size >= _FULL_ZEROS_MIN:
        return _maximum(x, zeros_of_shape(x.dtype, x.shape, x.size))
    return _maximum(x, RELU_ZEROS[x.dtype])


def _forward(op_type, fn, out_variant=None):
    """Register ``fn(attrs, x)`` as the kernel of ``op_type`` (float16 in float32, quietly)."""
    def kernel(ctx, x):
        with _errstate(all="ignore"):
            if x.dtype == _F16:
                return fn(ctx.attrs, x.astype(_F32)).astype(_F16)
            return fn(ctx.attrs, x)
    kernel.__name__ = kernel.__qualname__ = op_type + "_cpu"
    cpu_kernel(op_type, _FLOAT_X, out_variant=out_variant)(kernel)
    return fn


def _backward(op_type, fn):
    """Register ``fn(attrs, dy, x)`` as the kernel of ``op_type`` (float16 in float32, quietly)."""
    def kernel(ctx, dy, x):
        with _errstate(all="ignore"):
            if x.dtype == _F16:
                return fn(ctx.attrs, dy.astype(_F32), x.astype(_F32)).astype(_F16)
            return fn(ctx.attrs, dy, x)
    kernel.__name__ = kernel.__qualname__ = op_type + "_cpu"
    cpu_kernel(op_type, _FLOAT_DY)(kernel)
    return fn


def _sigmoid(x):
    """``1 / (1 + exp(-x))`` in one buffer."""
    r = np.negative(x, out=np.empty_like(x))
    _exp(r, out=r)
    r += 1
    return np.reciprocal(r, out=r)


def sigmoid_out_variant(ctx, input_dtypes):
    """``_sigmoid``'s own sequence (negative, exp, +1, reciprocal) in ``out``; not for float16 (Note
    [Out-variant writers] in kernels/registration.py)."""
    if input_dtypes[0].np_dtype == _F16:
        return None
    negative, exp, add, reciprocal = _negative, _exp, np.add, np.reciprocal

    def write(out, x):
        with _errstate(all="ignore"):
            negative(x, out=out)
            exp(out, out=out)
            add(out, 1, out=out)
            reciprocal(out, out=out)
    return write


# ---- sigmoid, tanh (their grad ops take the output y) -------------------------------------------------
_forward("sigmoid", lambda a, x: _sigmoid(x), out_variant=sigmoid_out_variant)
_backward("sigmoid_grad", lambda a, dy, y: dy * y * (1 - y))


@cpu_kernel("tanh", _FLOAT_X, out_variant=ufunc_out_variant(np.tanh))
def tanh_cpu(ctx, x):
    return np.tanh(x)


tanh_cpu.plain = np.tanh  # Note [Plain kernels] in kernels/cpu/math.py


_backward("tanh_grad", lambda a, dy, y: dy * (1 - y * y))


# ---- piecewise linear ---------------------------------------------------------------------------------
def _hardtanh(a, x):
    t = x.dtype.type
    return _minimum(_maximum(x, t(a["min_val"])), t(a["max_val"]))


def _hardtanh_grad(a, dy, x):
    """dy strictly inside (min_val, max_val), else 0 (PyTorch's hardtanh_backward)."""
    t = x.dtype.type
    return _where((x <= t(a["min_val"])) | (x >= t(a["max_val"])), t(0), dy)


_forward("hardtanh", _hardtanh)
_backward("hardtanh_grad", _hardtanh_grad)
_forward("leaky_relu", lambda a, x: _where(x > 0, x, x * a["alpha"]))
_backward("leaky_relu_grad", lambda a, dy, x: _where(x > 0, dy, dy * a["alpha"]))
_forward("hardsigmoid", lambda a, x: _minimum(_maximum(x + 3, 0), 6) / 6)
_backward("hardsigmoid_grad", lambda a, dy, x: _where((x > -3) & (x < 3), dy / 6, x.dtype.type(0)))
_forward("hardswish", lambda a, x: x * _minimum(_maximum(x + 3, 0), 6) / 6)
_backward("hardswish_grad",
          lambda a, dy, x: _where(x < -3, x.dtype.type(0), _where(x <= 3, dy * (x / 3 + 0.5), dy)))


# ---- exponential family ----------------------------------------------------------------------------
def _elu(x, alpha, scale):
    """``x >= 0`` takes ``x`` (PyTorch's forward: ``elu(±0, alpha=inf)`` is ±0, not ``0 * inf``); the gradient at
    0 is the ``alpha`` side's, as PyTorch's."""
    return _where(x >= 0, x * scale, np.expm1(x) * (alpha * scale))


def _elu_grad(dy, x, alpha, scale):
    return _where(x > 0, dy * scale, dy * _exp(x) * (alpha * scale))


_forward("elu", lambda a, x: _elu(x, a["alpha"], 1.0))
_backward("elu_grad", lambda a, dy, x: _elu_grad(dy, x, a["alpha"], 1.0))
_forward("selu", lambda a, x: _elu(x, _SELU_ALPHA, _SELU_SCALE))
_backward("selu_grad", lambda a, dy, x: _elu_grad(dy, x, _SELU_ALPHA, _SELU_SCALE))


def _softplus(a, x):
    """``log1p(exp(beta x)) / beta``, and ``x`` itself where ``beta x > threshold``."""
    z = x * a["beta"]
    return _where(z > a["threshold"], x, np.log1p(_exp(z)) / a["beta"])


def _softplus_grad(a, dy, x):
    z = x * a["beta"]
    return _where(z > a["threshold"], dy, dy * _sigmoid(z))


_forward("softplus", _softplus)
_backward("softplus_grad", _softplus_grad)
_forward("silu", lambda a, x: x * _sigmoid(x))


def _silu_grad(a, dy, x):
    s = _sigmoid(x)
    return dy * s * (1 + x * (1 - s))


_backward("silu_grad", _silu_grad)
_forward("mish", lambda a, x: x * np.tanh(np.log1p(_exp(x))))


def _mish_grad(a, dy, x):
    t = np.tanh(np.log1p(_exp(x)))
    return dy * (t + x * _sigmoid(x) * (1 - t * t))


_backward("mish_grad", _mish_grad)


# ---- gelu ------------------------------------------------------------------------------------------
# Note [GELU kernels]
# The exact form is x Phi(x), Phi the normal cdf; its derivative Phi(x) + x phi(x). float64 keeps the
# reference formulas (``gelu_reference``: erf by Cephes' forms, Note [erf kernels] in kernels/cpu/unary.py).
# float32 (and float16, computed in float32) computes Phi(x) = 1/2 + (x / 2 sqrt 2) (1 + R(x^2 / 2)) by the
# float32 erf polynomial on every element, then, where |x| > sqrt 2 only, Phi(-|x|) = erfc(|x| / sqrt 2) / 2
# by the erfc form (1 - it for x > 0: no cancellation for negative x). The gradient's exp(-x^2 / 2) is phi's
# and the erfc form's, computed once. The tanh form is the same formula in any dtype. All of them run in
# cache-sized blocks with their passes written in place (Note [Blocked kernels] in kernels/cpu/blocked.py):
# about 16 passes for the exact form where activations are small (as in a network), 10 for the tanh form,
# against some 40 passes, boolean indexing and fresh temporaries of the reference. ``gelu_reference`` and
# ``gelu_grad_reference`` stay as the formulas the tests compare the kernels with. The saved tensor is x, as
# in PyTorch, so the output may be changed in place before backward.
_GELU_SMALL = 256  # fewer elements: the reference (math.erf per element) makes fewer NumPy calls
_S = 1.0 / (2.0 * math.sqrt(2.0))
# Phi(x) - 1/2 = x S(x^2), lowest power first: the erf polynomial at x / sqrt 2, halved
_CDF_POLY = tuple(_S * ((1.0 + c) if k == 0 else c) / 2.0 ** k for k, c in enumerate(ERF_SMALL_POLY))


def gelu_reference(a, x):
    if a["approximate"] == "tanh":
        return 0.5 * x * (1 + np.tanh(_GELU_K * (x + _GELU_C * x * x * x)))
    return 0.5 * x * (1 + erf_reference(x * _SQRT1_2))


def gelu_derivative_reference(a, x):
    """Phi(x) + x phi(x); for "tanh" PyTorch's derivative of the tanh form."""
    if a["approximate"] == "tanh":
        t = np.tanh(_GELU_K * (x + _GELU_C * x * x * x))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * (_GELU_K * (1 + 3 * _GELU_C * x * x))
    return 0.5 * (1 + erf_reference(x * _SQRT1_2)) + x * _exp(-0.5 * x * x) * _INV_SQRT_2PI


def gelu_grad_reference(a, dy, x):
    """dy * gelu'(x)."""
    return dy * gelu_derivative_reference(a, x)


def _normal_cdf_block(x, cdf, u, e, large):
    """``cdf`` = Phi(x) of a float32 block; ``e`` = exp(-x^2 / 2) if ``e`` is given (Note [GELU kernels])."""
    f = x.dtype.type
    np.multiply(x, x, out=u)
    np.multiply(u, f(_CDF_POLY[-1]), out=cdf)
    for c in _CDF_POLY[-2:0:-1]:
        cdf += f(c)
        cdf *= u
    cdf += f(_CDF_POLY[0])
    cdf *= x
    cdf += f(0.5)
    if e is not None:
        np.multiply(u, f(-0.5), out=e)
        _exp(e, out=e)
    np.greater(u, f(2), out=large)  # NaN stays with the polynomial (NaN)
    idx = np.flatnonzero(large)
    if idx.size:
        xl = x.take(idx)
        el = e.take(idx) if e is not None else _exp(u.take(idx) * f(-0.5))
        q = erfc_form(np.abs(xl) * f(_SQRT1_2), el)  # erfc(|x| / sqrt 2) = 2 Phi(-|x|)
        q *= f(0.5)
        cdf.put(idx, _where(xl >= 0, f(1) - q, q))


def _gelu_block(y, x, u, large):
    _normal_cdf_block(x, y, u, None, large)
    y *= x


def _gelu_derivative_block(g, x, u, e, large):
    _normal_cdf_block(x, g, u, e, large)
    e *= x
    e *= x.dtype.type(_INV_SQRT_2PI)
    g += e


def _gelu_grad_block(dx, dy, x, u, e, large):
    _gelu_derivative_block(dx, x, u, e, large)
    dx *= dy


def _gelu_with_derivative_block(y, g, x, u, e, large):
    """y = gelu(x) and g = gelu'(x), by the very operations of the gelu and gelu_grad blocks."""
    _normal_cdf_block(x, g, u, e, large)
    np.multiply(g, x, out=y)
    e *= x
    e *= x.dtype.type(_INV_SQRT_2PI)
    g += e


def _tanh_inner(x, u, t):
    """``u`` = tanh(K (x + C x^3)), ``t`` = x^2."""
    f = x.dtype.type
    np.multiply(x, x, out=t)
    np.multiply(t, f(_GELU_K * _GELU_C), out=u)
    u += f(_GELU_K)
    u *= x
    np.tanh(u, out=u)


def _gelu_tanh_block(y, x, t):
    _tanh_inner(x, y, t)
    y += 1
    y *= x
    y *= x.dtype.type(0.5)


def _gelu_tanh_derivative(g, x, u, t):
    """g = 0.5 (1 + u) + 0.5 x (1 - u^2) K (1 + 3 C x^2) from u = tanh(K (x + C x^3)) and t = x^2 (``t`` is
    overwritten)."""
    f = x.dtype.type
    t *= f(3 * _GELU_C * _GELU_K)  # K (1 + 3 C x^2)
    t += f(_GELU_K)
    np.multiply(u, u, out=g)
    np.subtract(f(1), g, out=g)
    g *= t
    g *= x
    g += u
    g += f(1)
    g *= f(0.5)


def _gelu_tanh_grad_block(dx, dy, x, u, t):
    _tanh_inner(x, u, t)
    _gelu_tanh_derivative(dx, x, u, t)
    dx *= dy


def _gelu_tanh_with_derivative_block(y, g, x, u, t):
    _tanh_inner(x, u, t)
    np.add(u, x.dtype.type(1), out=y)
    y *= x
    y *= x.dtype.type(0.5)
    _gelu_tanh_derivative(g, x, u, t)


def _gelu(a, x):
    if a["approximate"] == "tanh":
        return run_blocked(_gelu_tanh_block, np.empty(x.shape, x.dtype), (x,), 1)
    if x.dtype != _F32 or x.size < _GELU_SMALL:
        return gelu_reference(a, x)
    return run_blocked(_gelu_block, np.empty(x.shape, x.dtype), (x,), 1, 1)


def _gelu_grad(a, dy, x):
    if a["approximate"] == "tanh":
        return run_blocked(_gelu_tanh_grad_block, np.empty(x.shape, x.dtype), (dy, x), 2)
    if x.dtype != _F32 or x.size < _GELU_SMALL:
        return gelu_grad_reference(a, dy, x)
    return run_blocked(_gelu_grad_block, np.empty(x.shape, x.dtype), (dy, x), 2, 1)


def _gelu_with_derivative(a, x):
    """(gelu(x), gelu'(x)), each computed as the gelu and gelu_grad kernels compute them, so gelu'(x) * dy is
    gelu_grad's result bit for bit (the graph's GELU fusion, Note [Derivatives in the forward] in
    graph/passes.py)."""
    if a["approximate"] == "tanh":
        g = np.empty(x.shape, x.dtype)
        return run_blocked(_gelu_tanh_with_derivative_block, np.empty(x.shape, x.dtype), (g, x), 2), g
    if x.dtype != _F32 or x.size < _GELU_SMALL:
        return gelu_reference(a, x), gelu_derivative_reference(a, x)
    g = np.empty(x.shape, x.dtype)
    return run_blocked(_gelu_with_derivative_block, np.empty(x.shape, x.dtype), (g, x), 2, 1), g


_forward("gelu", _gelu)
_backward("gelu_grad", _gelu_grad)


@cpu_kernel("gelu_with_derivative", _FLOAT_X)
def gelu_with_derivative_cpu(ctx, x):
    with _errstate(all="ignore"):
        if x.dtype == _F16:
            return tuple(r.astype(_F16) for r in _gelu_with_derivative(ctx.attrs, x.astype(_F32)))
        return _gelu_with_derivative(ctx.attrs, x)


_BITS = {np.dtype(f): np.dtype(i) for f, i in ((np.float16, np.int16), (np.float32, np.int32), (np.float64, np.int64))}
# Note [relu_grad by bit masks]
# relu_grad is ``dy`` where ``y > 0``, else +0 (NaN in dy kept where y > 0, dropped elsewhere), so it is
# not ``dy * (y > 0)`` (NaN * 0 is NaN, -1 * 0 is -0). ``np.where(mask, dy, 0)`` is exact but slow on a
# random mask (19 us on (64, 256) float32, against 6 us for the multiply); from this many elements the
# kernel instead ANDs dy's bits with an all-ones / all-zeros integer mask made from ``y > 0`` (copy, negate,
# and: 6 us, exact), written into the result's own buffer.
_BITS_MIN_SIZE = 2048


@cpu_kernel("relu_grad", dtype_in("dy", *FLOATING_DTYPES))
def relu_grad_cpu(ctx, dy, y):
    zero = RELU_ZEROS[dy.dtype]  # a shared 0-d zero: no conversion of a Python 0 per call
    if dy.size < _BITS_MIN_SIZE:
        return _where(_greater(y, zero), dy, zero)
    ints = _BITS[dy.dtype]  # Note [relu_grad by bit masks]
    dx = _empty(dy.shape, dy.dtype)
    mask = dx.view(ints)
    _copyto(mask, _greater(y, zero))
    _negative(mask, out=mask)
    _bitwise_and(dy.view(ints), mask, out=mask)
    return dx
