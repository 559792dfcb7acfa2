"""Creation functions with ``placement=`` and ``sbp=``: global tensors made directly in the requested SBP.

``flow.zeros(4, 5, placement=p, sbp=flow.sbp.split(0))`` makes this rank's piece only (a partial-sum
dimension puts the value on its first rank and zeros elsewhere). A random global tensor is the same logical
tensor whatever the SBP: every rank draws one seed from its generator, the placement's first rank's seed is
broadcast, and every rank draws the whole logical tensor from it and keeps its piece. ``flow.tensor(data,
placement=p, sbp=s)`` takes the first rank's ``data`` as the logical value (OneFlow's rule).

Note [Global source ops in a graph]
Inside an nn.Graph's build() a creation call with ``placement=`` / ``sbp=`` reads no value: it captures the
local creation op of the logical tensor (a source op of the job, on the placement's device) and the build
context records the op's placement and nd-SBP (``JobBuildAndInferCtx.place_source``). The graph's plan runs
the op on every rank of that placement and each keeps its piece (``plan_source``), as eager creation does, so
the result equals the eager one. A random source draws, at every run, one seed from the device's current
generator on each rank, the placement's first rank's seed broadcast, the whole logical tensor drawn from it:
after ``flow.manual_seed(s)`` the k-th run of the graph gives what the k-th eager call would. ``flow.tensor(data,
placement=, sbp=)`` is a constant of the build: an eager global tensor, bound to a variable of the job.
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
from oneflow_lite.interpreters.lazy import capturing_ctx
from oneflow_lite.functors.registry import composite

_make = Tensor._make


def _nd_sbp(placement, sbp, what):
    if not isinstance(placement, Placement):
        raise TypeError(f"{what}: placement must be a flow.placement, got {type(placement).__name__}")
    return S.as_nd_sbp(sbp, placement.ndim, f"{what}: sbp")


def _leaf(t, requires_grad):
    return t.requires_grad_() if requires_grad else t


def _captured(make, placement, nd, requires_grad):
    """Inside a build: the local creation ``make(device)`` of the logical value, captured as a source op laid
    out over ``placement`` with ``nd`` (Note [Global source ops in a graph]); None outside a build."""
    ctx = capturing_ctx()
    if ctx is None:
        return None
    t = make(placement.device)
    S.check_nd_sbp(tuple(t.shape), nd, "sbp")
    return _leaf(ctx.place_source(t, placement, nd), requires_grad)


@composite("GlobalFull")
def global_full(size, fill_value, dtype, placement, sbp, requires_grad=False):
    """``full(size, fill_value, placement=, sbp=)``: this rank's piece only, no communication."""
    nd = _nd_sbp(placement, sbp, "full")
    dtype = dtype or dt.scalar_dtype(fill_value)
    lazy = _captured(lambda d: F.full(tuple(size), fill_value, dtype=dtype, device=d), placement, nd, requires_grad)
    if lazy is not None:
        return lazy
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
    lazy = _captured(lambda d: make(generator, d), placement, nd, requires_grad)
    if lazy is not None:
        return lazy
    logical = make(shared_generator(generator, placement))
    return from_logical(logical, placement, nd, requires_grad)


def _logical(make, placement, sbp, requires_grad, what):
    """The global tensor of the logical value ``make(device)`` (every rank computes it, keeps its piece)."""
    nd = _nd_sbp(placement, sbp, what)
    lazy = _captured(make, placement, nd, requires_grad)
    return lazy if lazy is not None else from_logical(make(), placement, nd, requires_grad)


@composite("GlobalRandn")
def global_randn(size, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g, d=None: F.randn(size, generator=g, dtype=dtype, device=d), generator, placement, sbp, requires_grad,
                   "randn")


@composite("GlobalRand")
def global_rand(size, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g, d=None: F.rand(size, generator=g, dtype=dtype, device=d), generator, placement, sbp, requires_grad,
                   "rand")


@composite("GlobalNormal")
def global_normal(mean, std, size, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g, d=None: F.normal(mean, std, size, generator=g, dtype=dtype, device=d), generator, placement, sbp,
                   requires_grad, "normal")


@composite("GlobalRandintLow")
def global_randint_low(low, high, size, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g, d=None: F.randint(low, high, size, generator=g, dtype=dtype, device=d), generator, placement, sbp,
                   requires_grad, "randint")


@composite("GlobalRandint")
def global_randint(high, size, generator, dtype, placement, sbp, requires_grad=False):
    return global_randint_low(0, high, size, generator, dtype, placement, sbp, requires_grad)


@composite("GlobalArange")
def global_arange(start, end, step, dtype, placement, sbp, requires_grad=False):
    return _logical(lambda d=None: F.arange(start, end, step, dtype=dtype, device=d), placement, sbp, requires_grad,
                    "arange")


@composite("GlobalArangeEnd")
def global_arange_end(end, dtype, placement, sbp, requires_grad=False):
    return global_arange(0, end, 1, dtype, placement, sbp, requires_grad)


@composite("GlobalRandperm")
def global_randperm(n, generator, dtype, placement, sbp, requires_grad=False):
    return _random(lambda g, d=None: F.randperm(n, generator=g, dtype=dtype, device=d), generator, placement, sbp, requires_grad,
                   "randperm")


@composite("GlobalEye")
def global_eye(n, m, dtype, placement, sbp, requires_grad=False):
    """``eye(n, m, placement=, sbp=)``: every rank keeps its piece of the logical matrix, no communication."""
    return _logical(lambda d=None: F.eye(n, m, dtype=dtype, device=d), placement, sbp, requires_grad, "eye")


@composite("GlobalLinspace")
def global_linspace(start, end, steps, dtype, placement, sbp, requires_grad=False):
    return _logical(lambda d=None: F.linspace(start, end, steps, dtype=dtype, device=d), placement, sbp,
                    requires_grad, "linspace")


@composite("GlobalLogspace")
def global_logspace(start, end, steps, base, dtype, placement, sbp, requires_grad=False):
    return _logical(lambda d=None: F.logspace(start, end, steps, base, dtype=dtype, device=d), placement, sbp,
                    requires_grad, "logspace")


@composite("GlobalTensor")
def global_tensor(value: Tensor, placement, sbp, requires_grad=False):
    """The global tensor whose logical value is the placement's first rank's ``value`` (a local tensor)."""
    nd = _nd_sbp(placement, sbp, "tensor")
    a = np.asarray(value.numpy(), order="C")
    if placement.size > 1 and placement.has_rank(world().rank):
        a = world().group(placement.rank_list).broadcast(a.copy(), root=0)
    return from_logical(_make(a, value._meta), placement, nd, requires_grad)
