"""The table-driven op suite: every OpSpec of tests/op_specs/ against its NumPy reference.

See tests/opinfo.py for what a spec holds.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import oneflow_lite as flow
import op_specs  # noqa: F401  (fills the registry)
from oneflow_lite.framework.dtype import ALL_DTYPES
from oneflow_lite.framework.errors import OpKernelNotFoundError
from opinfo import REGISTRY, to_flow

_BY_NAME = {s.name: s for s in REGISTRY}


def _cases():
    for spec in REGISTRY:
        for d in spec.dtypes:
            yield pytest.param(spec.name, d, id=f"{spec.name}-{d.name}")


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _np_expected(value):
    return np.asarray(value)


def _compare(spec, dtype, got, expected, sample):
    got, expected = _as_tuple(got), _as_tuple(expected)
    assert len(got) == len(expected), f"{spec.name}: {len(got)} outputs, reference has {len(expected)}"
    for g, e in zip(got, expected):
        e = _np_expected(e)
        assert isinstance(g, flow.Tensor), f"{spec.name}: output is {type(g).__name__}, not a Tensor"
        assert tuple(g.shape) == e.shape, f"{spec.name} {sample.name}: shape {tuple(g.shape)} != {e.shape}"
        if spec.check_dtype:
            assert g.dtype.np_dtype == e.dtype, f"{spec.name} {sample.name}: dtype {g.dtype} != {e.dtype}"
        if spec.random:
            continue
        a = g.numpy()
        if a.dtype.kind == "f" or e.dtype.kind == "f":
            tol = spec.half_tol if dtype is flow.float16 else None
            np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64),
                                       atol=tol or spec.atol, rtol=tol or spec.rtol, equal_nan=True,
                                       err_msg=f"{spec.name} {sample.name}")
        else:
            np.testing.assert_array_equal(a, e, err_msg=f"{spec.name} {sample.name}")


@pytest.mark.parametrize("name, dtype", list(_cases()))
def test_cpu_matches_reference(name, dtype):
    spec = _BY_NAME[name]
    samples = list(spec.samples(dtype))
    assert samples, f"{name}: no samples for {dtype}"
    for sample in samples:
        expected = spec.ref(*sample.args, **sample.kwargs)
        got = spec.fn(*to_flow(sample.args), **to_flow(sample.kwargs))
        _compare(spec, dtype, got, expected, sample)
        if spec.method is not None:
            args = to_flow(sample.args)
            via_method = getattr(args[0], spec.method)(*args[1:], **to_flow(sample.kwargs))
            _compare(spec, dtype, via_method, expected, sample)


@pytest.mark.parametrize("name, dtype", list(_cases()))
def test_meta_matches_cpu(name, dtype):
    spec = _BY_NAME[name]
    for sample in spec.samples(dtype):
        cpu = _as_tuple(spec.fn(*to_flow(sample.args), **to_flow(sample.kwargs)))
        if not spec.meta:
            with pytest.raises((RuntimeError, NotImplementedError)):
                spec.fn(*to_flow(sample.args, "meta"), **to_flow(sample.kwargs, "meta"))
            continue
        meta = _as_tuple(spec.fn(*to_flow(sample.args, "meta"), **to_flow(sample.kwargs, "meta")))
        assert len(meta) == len(cpu)
        for m, c in zip(meta, cpu):
            assert m.device == flow.device("meta"), f"{name}: meta call gave a tensor on {m.device}"
            assert (tuple(m.shape), m.dtype) == (tuple(c.shape), c.dtype), f"{name} {sample.name}"


def _unsupported():
    for spec in REGISTRY:
        for d in ALL_DTYPES:
            if d not in spec.dtypes:
                yield pytest.param(spec.name, d, id=f"{spec.name}-{d.name}")


@pytest.mark.parametrize("name, dtype", list(_unsupported()))
def test_unsupported_dtype_fails_cleanly(name, dtype):
    """A dtype the op does not support gives OpKernelNotFoundError (or the spec's own error), never a
    NumPy exception."""
    spec = _BY_NAME[name]
    error = spec.unsupported_error or OpKernelNotFoundError
    supported = spec.dtypes[0]
    sample = next(iter(spec.samples(supported)))

    def retype(v):
        if isinstance(v, np.ndarray) and v.dtype == supported.np_dtype:
            return v.astype(dtype.np_dtype)
        if isinstance(v, (list, tuple)):
            return type(v)(retype(x) for x in v)
        return v
    with pytest.raises(error):
        spec.fn(*to_flow(retype(sample.args)), **to_flow(retype(sample.kwargs)))


def _differentiable():
    for spec in REGISTRY:
        if spec.differentiable:
            yield pytest.param(spec.name, id=spec.name)


def _grad_samples(spec):
    if spec.grad_samples is not None:
        return list(spec.grad_samples())
    return [s for s in spec.samples(flow.float64) if all(np.asarray(a).size > 0 for a in s.args
                                                         if isinstance(a, np.ndarray))][:3]


def _grad_inputs(sample):
    args = list(to_flow(sample.args))
    idx = sample.grad_args
    if idx is None:
        idx = tuple(i for i, a in enumerate(sample.args)
                    if isinstance(a, np.ndarray) and a.dtype == np.float64)
    for i in idx:
        args[i].requires_grad_(True)
    return args, idx


@pytest.mark.parametrize("name", list(_differentiable()))
def test_gradcheck(name):
    spec = _BY_NAME[name]
    samples = _grad_samples(spec)
    assert samples, f"{name}: no float64 samples for gradcheck"
    for sample in samples:
        args, idx = _grad_inputs(sample)
        kwargs = to_flow(sample.kwargs)

        def fn(*diff):
            full = list(args)
            for i, t in zip(idx, diff):
                full[i] = t
            return spec.fn(*full, **kwargs)
        assert flow.autograd.gradcheck(fn, tuple(args[i] for i in idx))
        if spec.gradgrad:
            assert flow.autograd.gradgradcheck(fn, tuple(args[i] for i in idx))


# ---- special values for every spec ([numerics]) ---------------------------------------------------------------
# Every spec is also run on NaN, +-Inf, +-0, huge and tiny (denormal) inputs against its own reference: each
# floating array of a sample gets these values, cycled (so each lands at several positions), and the result
# must equal the reference's, NaN for NaN and infinity for infinity; an op may also refuse the values when its
# reference does (both raise). Specs whose reference cannot speak for special values say why in
# SPECIAL_VALUES_SKIPPED (PyTorch was the judge of which side was wrong: ops were fixed where they spread a NaN or
# Inf into outputs that never saw it or overflowed where the math is finite, references where they differed from
# PyTorch's formula). Runs in CI (a few seconds for every spec).
SPECIAL_VALUES = np.array([np.nan, 1.0, np.inf, -2.5, -np.inf, 0.5, 0.0, 3.0, -0.0, 1e30, -1e30, 1e-40, -1.5])
_CANCELLING_MEAN = ("a group holding +1e30 and -1e30: its mean cancels to a value set by the summation order (0 in "
                    "PyTorch and here, 1e-41 in NumPy), and an infinite weight turns that 0 or not into NaN or Inf")
_FLOAT32_PRODUCTS = ("products of +-1e30 overflow a float32 accumulation (PyTorch's too) to Inf - Inf = NaN where the "
                     "float64 reference's sum is finite before it rounds to Inf")
_ZERO_PIVOT = ("the NumPy reference solves through LU and refuses a zero on the diagonal; PyTorch's substitution (and "
               "this one) divides by it, giving Inf or NaN")
_NOT_A_POSITION = ("a float input that is a position (grid coordinates, fractional pooling's random samples in [0, 1)): "
                   "the reference cannot index NaN, Inf or 1e30 positions")
SPECIAL_VALUES_SKIPPED: dict[str, str] = {  # a spec's name, or "name-dtype" for one dtype
    "group_norm": _CANCELLING_MEAN,
    "instance_norm": _CANCELLING_MEAN,
    "conv_transpose2d-float32": _FLOAT32_PRODUCTS,
    "conv_transpose3d-float32": _FLOAT32_PRODUCTS,
    "conv_tbc-float32": _FLOAT32_PRODUCTS,
    "linalg.solve_triangular": _ZERO_PIVOT,
    "triangular_solve": _ZERO_PIVOT,
    "scaled_dot_product_attention": "a causal row whose one allowed score is -Inf: PyTorch (and the reference) give "
                                    "it zero weights, whose dense product with masked keys' Inf values is NaN in "
                                    "some columns; here its softmax is NaN (docs/deviations.md)",
    "polygamma": "trigamma at -1e30, a negative integer: a pole (the reference's Inf) where PyTorch's reflection, "
                 "which this kernel follows (test_polygamma_special_values_follow_pytorch), gives a finite value",
    "grid_sample": _NOT_A_POSITION,
    "fractional_max_pool2d": _NOT_A_POSITION,
    "fractional_max_pool2d_with_indices": _NOT_A_POSITION,
    "fractional_max_pool3d": _NOT_A_POSITION,
    "fractional_max_pool3d_with_indices": _NOT_A_POSITION,
    "adaptive_avg_pool3d": "a window holding +1e30 and -1e30 along two axes: the kernel sums one axis at a time "
                           "(exact in real arithmetic), NumPy and PyTorch the window in order, so 3 survives or not",
}


def test_special_value_skips_name_specs():
    known = {s.name for s in REGISTRY} | {f"{s.name}-{d.name}" for s in REGISTRY for d in s.dtypes}
    assert set(SPECIAL_VALUES_SKIPPED) <= known, set(SPECIAL_VALUES_SKIPPED) - known


def _with_special_values(value, offset):
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size:
        values = np.roll(SPECIAL_VALUES, -offset)
        with np.errstate(over="ignore", under="ignore"):
            return np.resize(values, value.shape).astype(value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_with_special_values(v, offset + i) for i, v in enumerate(value))
    return value


def _special_cases():
    for spec in REGISTRY:
        if spec.random or spec.name in SPECIAL_VALUES_SKIPPED:
            continue
        for d in (flow.float32, flow.float64):
            if d in spec.dtypes and f"{spec.name}-{d.name}" not in SPECIAL_VALUES_SKIPPED:
                yield pytest.param(spec.name, d, id=f"{spec.name}-{d.name}")


def _outcome(fn):
    try:
        with np.errstate(all="ignore"):
            return fn(), None
    except Exception as exc:  # noqa: BLE001 - which one does not matter: both sides must agree to refuse
        return None, exc


@pytest.mark.parametrize("name, dtype", list(_special_cases()))
def test_special_values_match_reference(name, dtype):
    spec = _BY_NAME[name]
    samples = [s for s in spec.samples(dtype) if any(
        isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size for a in s.args)][:3]
    for k, sample in enumerate(samples):
        args, kwargs = _with_special_values(sample.args, k), sample.kwargs
        expected, ref_exc = _outcome(lambda: spec.ref(*args, **kwargs))
        got, exc = _outcome(lambda: spec.fn(*to_flow(args), **to_flow(kwargs)))
        if ref_exc is not None and exc is not None:
            continue
        assert exc is None, f"{name}: the reference computes, the op raises {exc!r} on {args}"
        assert ref_exc is None, f"{name}: the op computes, the reference raises {ref_exc!r} on {args}"
        _compare(spec, dtype, got, expected, attrs.evolve(sample, args=args, name="special values"))
