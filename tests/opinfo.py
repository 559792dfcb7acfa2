"""The op database of the table-driven op tests (in the spirit of PyTorch's OpInfo).

Every op of the library has one :class:`OpSpec` in ``tests/op_specs/<group>.py``:
the function to call, a NumPy reference written in the spec, a sample-input
generator (broadcasting, empty, 0-d, every supported dtype) and whether it is
differentiable. ``tests/test_op_db.py`` runs each spec on cpu against the
reference, on meta against cpu's shapes and dtypes, with gradcheck in float64 for
differentiable ops, and checks that unsupported dtypes raise OpKernelNotFoundError.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import attrs
import numpy as np

import oneflow_lite as flow
from oneflow_lite.framework.dtype import ALL_DTYPES, FLOATING_DTYPES, INTEGRAL_DTYPES

FLOATS = FLOATING_DTYPES
INTS = INTEGRAL_DTYPES
NUMERIC = INTEGRAL_DTYPES + FLOATING_DTYPES
ALL = ALL_DTYPES
SIGNED_INTS = tuple(d for d in INTEGRAL_DTYPES if d.is_signed)


@attrs.define
class Sample:
    """One call: ``op(*args, **kwargs)``. NumPy arrays in ``args`` / ``kwargs`` (also inside lists and
    tuples) become tensors of the array's dtype; everything else is passed as is."""

    args: tuple
    kwargs: dict = attrs.field(factory=dict)
    # Indices of the positional arrays gradcheck differentiates (default: every floating array).
    grad_args: tuple | None = None
    name: str = ""


@attrs.define
class OpSpec:
    name: str                                  # functional name: flow.<name>
    ref: Callable                              # NumPy reference: same args with arrays instead of tensors
    samples: Callable[[Any], Iterable[Sample]]  # dtype -> samples
    dtypes: tuple = FLOATS                     # dtypes the op supports (others must fail cleanly)
    differentiable: bool = True
    op: Callable | None = None                 # default: getattr(flow, name)
    atol: float = 1e-6
    rtol: float = 1e-5
    half_tol: float = 1e-2                     # atol = rtol for float16
    check_dtype: bool = True                   # compare the result dtype with the reference's
    meta: bool = True                          # False for ops whose output shape depends on values
    random: bool = False                       # compare statistics elsewhere; here only shapes / dtypes
    unsupported_error: type | None = None      # default: OpKernelNotFoundError
    grad_samples: Callable[[], Iterable[Sample]] | None = None  # float64 samples for gradcheck
    gradgrad: bool = False                     # also run gradgradcheck
    method: str | None = None                  # Tensor method name to check against the function

    @property
    def fn(self) -> Callable:
        return self.op if self.op is not None else getattr(flow, self.name)


REGISTRY: list[OpSpec] = []


def register(*specs: OpSpec) -> None:
    names = {s.name for s in REGISTRY}
    for s in specs:
        if s.name in names:
            raise ValueError(f"op spec {s.name!r} registered twice")
        names.add(s.name)
        REGISTRY.append(s)


_rng = np.random.default_rng(1234)


def make(shape, dtype, low=None, high=None, rng=None) -> np.ndarray:
    """A random NumPy array of ``shape`` and flow ``dtype`` (values in [low, high))."""
    rng = rng or _rng
    np_dtype = dtype.np_dtype
    if dtype is flow.bool:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.is_floating_point:
        lo = -3.0 if low is None else low
        hi = 3.0 if high is None else high
        return np.asarray(rng.random(shape) * (hi - lo) + lo).astype(np_dtype)
    info = np.iinfo(np_dtype)
    lo = max(info.min, -9 if low is None else int(low))
    hi = min(info.max, 10 if high is None else int(high))
    return np.asarray(rng.integers(lo, hi, size=shape, endpoint=False)).astype(np_dtype)


def unary_shapes() -> list[tuple]:
    """Shapes every unary op should handle: 0-d, 1-d, 2-d, empty."""
    return [(), (5,), (3, 4), (0,), (2, 0, 3)]


def broadcast_pairs() -> list[tuple[tuple, tuple]]:
    """Shape pairs that broadcast, including 0-d and empty."""
    return [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((5,), ()), ((0, 3), (3,)),
            ((2, 0), (1, 0))]


def to_flow(value, device="cpu"):
    """NumPy arrays (also nested in lists / tuples / dicts) -> flow tensors on ``device``."""
    if isinstance(value, np.ndarray):
        return flow.tensor(value, device=device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_flow(v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_flow(v, device) for k, v in value.items()}
    return value


def with_own_rng(spec: OpSpec, seed: int) -> OpSpec:
    """``spec`` drawing its samples (and gradcheck samples) from a generator of its own, seeded afresh at each
    call: specs added later leave the shared stream of ``make`` (so the inputs of the specs after them) as it
    was, and their own inputs do not depend on which tests ran before."""
    def own(samples):
        def draw(*args):
            global _rng
            saved, _rng = _rng, np.random.default_rng(seed)
            try:
                return list(samples(*args))
            finally:
                _rng = saved
        return draw
    return attrs.evolve(spec, samples=own(spec.samples),
                        grad_samples=None if spec.grad_samples is None else own(spec.grad_samples))
