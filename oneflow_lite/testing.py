"""``flow.testing`` (``torch.testing``): ``assert_close`` with PyTorch's default tolerances per dtype, its checks
(shape, dtype, device) and its mismatch report."""

from __future__ import annotations

import math
import numbers

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.creation import tensor

__all__ = ["assert_close"]

_TOLERANCES = {dt.float16: (1e-3, 1e-5), dt.bfloat16: (1.6e-2, 1e-5), dt.float32: (1.3e-6, 1e-5),
               dt.float64: (1e-7, 1e-7)}


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless ``actual`` and ``expected`` (tensors, numbers, or sequences / mappings of them)
    are close: ``|actual - expected| <= atol + rtol * |expected|`` elementwise."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no value for "
                         f"'{'rtol' if rtol is None else 'atol'}'.")
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", msg)
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                         check_dtype=check_dtype, msg=msg)
        return
    if isinstance(actual, dict) and isinstance(expected, dict):
        if set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match: {sorted(map(str, actual))} != "
                  f"{sorted(map(str, expected))}", msg)
        for k in actual:
            assert_close(actual[k], expected[k], rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_device=check_device, check_dtype=check_dtype, msg=msg)
        return
    a, e = (v if isinstance(v, Tensor) else tensor(v) if isinstance(v, numbers.Number) else None
            for v in (actual, expected))
    if a is None or e is None:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")
    for attr, check in (("shape", True), ("dtype", check_dtype), ("device", check_device)):
        if check and getattr(a, attr) != getattr(e, attr):
            _fail(f"The values for attribute '{attr}' do not match: {getattr(a, attr)} != {getattr(e, attr)}.", msg)
    if rtol is None:
        rtol, atol = _TOLERANCES.get(a.dtype, (0.0, 0.0))
    wide = a.dtype == dt.float64 or e.dtype == dt.float64 or not a.dtype.is_floating_point
    ct = np.float64 if wide else np.float32  # the differences in the inputs' precision, as PyTorch reports them
    _compare(a.numpy().astype(ct), e.numpy().astype(ct), rtol, atol, equal_nan, msg, a.dtype.is_floating_point)


def _compare(a, e, rtol, atol, equal_nan, msg, floating):
    with np.errstate(all="ignore"):
        diff = np.abs(a - e)
        close = (diff <= atol + rtol * np.abs(e)) | (a == e) | (equal_nan & np.isnan(a) & np.isnan(e))
        if close.all():
            return
        rel = np.where(e != 0, diff / np.abs(e), np.where(diff == 0, 0.0, math.inf))
    where_abs, where_rel = (np.unravel_index(int(np.argmax(np.where(close, -1, v))), a.shape) for v in (diff, rel))
    worst = diff[where_abs] if floating else int(diff[where_abs])
    limits = ("", "") if rtol == atol == 0 else (f" (up to {atol} allowed)", f" (up to {rtol} allowed)")
    n, total = int((~close).sum()), close.size
    _fail(f"Tensor-likes are not {'equal' if rtol == atol == 0 else 'close'}!\n\n"
          f"Mismatched elements: {n} / {total} ({100 * n / total:.1f}%)\n"
          f"Greatest absolute difference: {worst} at index {tuple(map(int, where_abs))}{limits[0]}\n"
          f"Greatest relative difference: {rel[where_rel]} at index {tuple(map(int, where_rel))}{limits[1]}", msg)


def _fail(message, msg):
    raise AssertionError(msg(message) if callable(msg) else msg if msg is not None else message)
