"""Creation functions with ``placement=`` and ``sbp=``: global tensors made directly in the requested SBP.

``flow.zeros(4, 5, placement=p, sbp=flow.sbp.split(0))`` makes this rank's piece only (a partial-sum
dimension puts the value on its first rank and zeros elsewhere). A random global tensor is the same logical
tensor whatever the SBP: every rank draws one seed from its generator, the placement's first rank's seed is
broadcast, and every rank draws the whole logical tensor from it and keeps its piece. ``flow.tensor(data,
placement=p, sbp=s)`` takes the first rank's ``data`` as the logical value (OneFlow's rule).
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.global_meta import make_global_meta
from oneflow_lite.framework.placement import placement as Placement
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.world import world
from oneflow_lite.functors.global_cast import from_logical
from oneflow_lite.interpreters.eager_global import shared_generator
from oneflow_lite.functors.registry import composite

_make = Tensor._make


def _nd_sbp(placement, sbp, what):
    if not isinstance(placement, Placement):
        raise TypeError(f"{what}: placement must be a flow.placement, got {type(placement).__name__}")
    return S.as_nd_sbp(sbp, placement.ndim, f"{what}: sbp")


def _leaf(t, requires_grad):
    return t.requires_grad_() if requires_grad else t


@composite("GlobalFull")
def global_full(size, fill_value, dtype, placement, sbp, requires_grad=False):
    """``full(size, fill_value, placement=, sbp=)``: this rank's piece only, no communication."""
    nd = _nd_sbp(placement, sbp, "full")
    dtype = dtype or dt.scalar_dtype(fill_value)
    meta = make_global_meta(tuple(size), dtype, placement, nd)
    a = None
    if meta.coord is not None:
        on_first = all(s is not S.partial_sum or i == 0 for s, i in zip(nd, meta.coord))
        a = F.full(meta.local.shape, fill_value if on_first else 0, dtype=dtype).numpy()
    return _leaf(_make(a, meta), requires_grad)


@composite("GlobalZeros")
def global_zeros(size, dtype, placement, sbp, requires_grad=False):
    return global_full(size, 0, dtype or dt.get_default_dtype(), placement, sbp, requires_grad)


@composite("GlobalOnes")
def global_ones(size, dtype, placement, sbp, requires_grad=False):
    return global_full(size, 1, dtype or dt.get_default_dtype(), placement, sbp, requires_grad)


def _random(make, generator, placement, sbp, requires_grad, what):
    nd = _nd_sbp(placement, sbp, what)
    logical = make(shared_generator(generator, placement))
    return from_logical(logical, placement, nd, requires_grad)


@composite("GlobalRandn")
def global_randn(size, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g: F.randn(size, generator=g, dtype=dtype), generator, placement, sbp, requires_grad,
                   "randn")


@composite("GlobalRand")
def global_rand(size, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g: F.rand(size, generator=g, dtype=dtype), generator, placement, sbp, requires_grad,
                   "rand")


@composite("GlobalNormal")
def global_normal(mean, std, size, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g: F.normal(mean, std, size, generator=g, dtype=dtype), generator, placement, sbp,
                   requires_grad, "normal")


@composite("GlobalRandintLow")
def global_randint_low(low, high, size, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g: F.randint(low, high, size, generator=g, dtype=dtype), generator, placement, sbp,
                   requires_grad, "randint")


@composite("GlobalRandint")
def global_randint(high, size, generator, dtype, placement, sbp, requires_grad=False):
    return global_randint_low(0, high, size, generator, dtype, placement, sbp, requires_grad)


@composite("GlobalArange")
def global_arange(start, end, step, dtype, placement, sbp, requires_grad=False):
    nd = _nd_sbp(placement, sbp, "arange")
    return from_logical(F.arange(start, end, step, dtype=dtype), placement, nd, requires_grad)


@composite("GlobalArangeEnd")
def global_arange_end(end, dtype, placement, sbp, requires_grad=False):
    return global_arange(0, end, 1, dtype, placement, sbp, requires_grad)


@composite("GlobalRandperm")
def global_randperm(n, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g: F.randperm(n, generator=g, dtype=dtype), generator, placement, sbp, requires_grad,
                   "randperm")


@composite("GlobalEye")
def global_eye(n, m, dtype, placement, sbp, requires_grad=False):
    """``eye(n, m, placement=, sbp=)``: every rank keeps its piece of the logical matrix, no communication."""
    return from_logical(F.eye(n, m, dtype=dtype), placement, _nd_sbp(placement, sbp, "eye"), requires_grad)


@composite("GlobalLinspace")
def global_linspace(start, end, steps, dtype, placement, sbp, requires_grad=False):
    nd = _nd_sbp(placement, sbp, "linspace")
    return from_logical(F.linspace(start, end, steps, dtype=dtype), placement, nd, requires_grad)


@composite("GlobalLogspace")
def global_logspace(start, end, steps, base, dtype, placement, sbp, requires_grad=False):
    nd = _nd_sbp(placement, sbp, "logspace")
    return from_logical(F.logspace(start, end, steps, base, dtype=dtype), placement, nd, requires_grad)


@composite("GlobalTensor")
def global_tensor(value: Tensor, placement, sbp, requires_grad=False):
    """The global tensor whose logical value is the placement's first rank's ``value`` (a local tensor)."""
    nd = _nd_sbp(placement, sbp, "tensor")
    a = np.asarray(value.numpy(), order="C")
    if placement.size > 1 and placement.has_rank(world().rank):
        a = world().group(placement.rank_list).broadcast(a.copy(), root=0)
    return from_logical(_make(a, value._meta), placement, nd, requires_grad)
