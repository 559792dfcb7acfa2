"""``to_global`` / ``to_local``: between local tensors and global ones, and between global layouts.

Each is an ``autograd.Function`` (OneFlow's LocalToGlobal, GlobalToGlobal and GlobalToLocal op exprs), so
gradients flow through them (Note [Gradients of casts]):

- local -> global: this rank's tensor becomes its piece; the logical shape comes from every rank's piece
  (``check_meta``, a small metadata exchange) or, without it, from this rank's piece times the ranks of
  each split dimension; with ``broadcast`` the first rank's data is broadcast (OneFlow's rule);
- global -> global: boxing to another nd-SBP and / or placement (interpreters/boxing.py); the same
  placement and SBP return the tensor itself;
- global -> local: this rank's piece, sharing its memory.

Note [Gradients of casts]
The gradient of a boxing is the boxing back: the output gradient, whatever its SBP, is boxed to the
input's SBP (or to ``grad_sbp`` when given). The gradient of ``to_local`` makes the local gradient this
rank's piece of a global gradient with the input's SBP, except that a broadcast input gets a partial-sum
gradient (each rank's local use of the whole tensor contributes its own gradient). The gradient of a local
-> global cast is this rank's piece of the output gradient boxed to the cast's SBP.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.autograd.function import Function
from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET, make_global_meta
from oneflow_lite.framework.placement import placement as Placement
from oneflow_lite.framework.tensor import Tensor, register_global_casts, version_counter
from oneflow_lite.framework.world import world
from oneflow_lite.interpreters.boxing import box_across_placements, box_same_placement, slice_piece

_make = Tensor._make


def _group_along(placement, axis):
    return world().group(placement.axis_ranks(world().rank, axis))


def _logical_shape(local: np.ndarray, placement, nd_sbp, check_meta: bool) -> tuple:
    """The logical shape of pieces ``local`` laid by ``nd_sbp`` (Note in the module docstring)."""
    shape = list(local.shape)
    for h, s in enumerate(nd_sbp):
        if s.kind == "S":
            shape[s.dim] *= placement.hierarchy[h]
    if not check_meta:
        return tuple(shape)
    if len(nd_sbp) == 1 and nd_sbp[0].kind == "S":  # uneven pieces: their sizes add up
        d = nd_sbp[0].dim
        metas = _group_along(placement, 0).allgather_object((local.shape, local.dtype.str))
        shape[d] = sum(m[0][d] for m in metas)
    else:
        metas = world().group(placement.rank_list).allgather_object((local.shape, local.dtype.str))
    expected = [(S.local_shape(tuple(shape), nd_sbp, placement.hierarchy, placement.coord(r)), local.dtype.str)
                for r in placement.rank_list]
    got = [(tuple(m[0]), m[1]) for m in metas]
    if got != expected:
        rows = ", ".join(f"rank {r}: {list(g[0])} {np.dtype(g[1]).name}" for r, g in zip(placement.rank_list, got))
        raise RuntimeError(f"to_global: the local tensors of the ranks do not make one logical tensor of shape "
                           f"{list(shape)} under sbp {S.format_nd_sbp(nd_sbp)} on {placement}: {rows} (split "
                           f"pieces must follow the balanced split: the first size % n ranks hold one more row)")
    return tuple(shape)


class LocalToGlobal(Function):
    """A local tensor as this rank's piece of a global tensor (Note [Gradients of casts])."""

    @staticmethod
    def forward(ctx, x, placement, nd_sbp, check_meta, shape=None):
        ctx.nd_sbp = nd_sbp
        ctx.placement = placement
        rank = world().rank
        if not placement.has_rank(rank):
            raise RuntimeError(f"to_global: rank {rank} is not in {placement}; a local tensor can only "
                               f"become a piece on a rank of the placement")
        a = np.asarray(x.numpy(), order="C")
        if shape is None:
            shape = _logical_shape(a, placement, nd_sbp, check_meta)
        elif S.local_shape(shape, nd_sbp, placement.hierarchy, placement.coord(rank)) != a.shape:
            raise RuntimeError(f"to_global: rank {rank}'s local tensor of shape {list(a.shape)} is not its piece "
                               f"of a tensor of shape {list(shape)} under {S.format_nd_sbp(nd_sbp)}")
        for h, s in enumerate(nd_sbp):  # OneFlow: broadcast takes the first rank's data
            if s is S.broadcast and placement.hierarchy[h] > 1:
                a = _group_along(placement, h).broadcast(a.copy(), root=0)
        return _make(a, make_global_meta(shape, x._meta.dtype, placement, nd_sbp))

    @staticmethod
    def backward(ctx, dy):
        return to_global(dy, ctx.placement, ctx.nd_sbp).to_local(), None, None, None, None


class GlobalToGlobal(Function):
    """Boxing to another nd-SBP and / or placement (Note [Gradients of casts])."""

    @staticmethod
    def forward(ctx, x, placement, nd_sbp, grad_nd_sbp):
        m = x._meta
        ctx.src = (m.placement, m.nd_sbp if grad_nd_sbp is None else grad_nd_sbp)
        if placement is m.placement:
            a = None if x._array is None else box_same_placement(x._array, m.shape, placement, m.coord,
                                                                 m.nd_sbp, nd_sbp)
        else:
            a = box_across_placements(x._array, tuple(m.shape), m.np_dtype, m.placement, m.nd_sbp, placement,
                                      nd_sbp)
        if a is x._array and a is not None:
            a = a.copy()
        return _make(a, make_global_meta(m.shape, m.dtype, placement, nd_sbp))

    @staticmethod
    def backward(ctx, dy):
        placement, nd_sbp = ctx.src
        return to_global(dy, placement, nd_sbp), None, None, None


class GlobalToLocal(Function):
    """This rank's piece of a global tensor, sharing its memory (Note [Gradients of casts])."""

    @staticmethod
    def forward(ctx, x):
        m = x._meta
        ctx.placement = m.placement
        ctx.nd_sbp = tuple(S.partial_sum if s is S.broadcast else s for s in m.nd_sbp)
        ctx.shape = tuple(m.shape)
        if m.local is None:
            raise RuntimeError(f"to_local: rank {world().rank} holds no piece of a tensor on {m.placement}")
        t = _make(x._array, m.local)
        t._vc = version_counter(x)
        return t

    @staticmethod
    def backward(ctx, dy):
        return LocalToGlobal.apply(dy, ctx.placement, ctx.nd_sbp, False, ctx.shape)


def _parse(t, placement, sbp):
    m = t._meta
    is_global = t._key_set & GLOBAL_KEY_SET
    if placement is None:
        if not is_global:
            raise ValueError("to_global: a local tensor needs a placement, e.g. "
                             "x.to_global(placement=flow.placement('cpu', ranks=[0, 1]), sbp=flow.sbp.split(0))")
        placement = m.placement
    if not isinstance(placement, Placement):
        raise TypeError(f"to_global: placement must be a flow.placement, got {type(placement).__name__}")
    if sbp is None:
        if not is_global or m.placement.ndim != placement.ndim:
            raise ValueError("to_global: missing the sbp, e.g. sbp=flow.sbp.broadcast")
        sbp = m.nd_sbp
    nd_sbp = S.as_nd_sbp(sbp, placement.ndim, "to_global")
    S.check_nd_sbp(tuple(m.shape), nd_sbp, "to_global")
    return placement, nd_sbp


def to_global(t, placement=None, sbp=None, grad_sbp=None, check_meta=True, copy=False):
    """``t.to_global(placement, sbp)`` (see the module docstring)."""
    placement, nd_sbp = _parse(t, placement, sbp)
    if not t._key_set & GLOBAL_KEY_SET:
        return LocalToGlobal.apply(t.clone() if copy else t, placement, nd_sbp, bool(check_meta))
    grad_nd = None if grad_sbp is None else S.as_nd_sbp(grad_sbp, t._meta.placement.ndim, "to_global: grad_sbp")
    m = t._meta
    if placement is m.placement and nd_sbp == m.nd_sbp and grad_nd is None:
        return GlobalToGlobal.apply(t, placement, nd_sbp, None) if copy else t
    return GlobalToGlobal.apply(t, placement, nd_sbp, grad_nd)


def to_local(t, copy=False):
    out = GlobalToLocal.apply(t)
    return out.clone() if copy else out


def logical_array(t) -> np.ndarray:
    """The logical value of global tensor ``t`` (a collective over its placement: every rank calls it)."""
    m = t._meta
    if m.local is None:
        raise RuntimeError(f"rank {world().rank} is not in {m.placement}: it cannot read the tensor's value")
    return box_same_placement(t._array, m.shape, m.placement, m.coord, m.nd_sbp, (S.broadcast,) * len(m.nd_sbp))


def from_logical(value: Tensor, placement, sbp, requires_grad=False) -> Tensor:
    """A global tensor whose logical value is ``value`` (a local tensor every rank holds; no communication)."""
    nd_sbp = S.as_nd_sbp(sbp, placement.ndim, "sbp")
    m = value._meta
    S.check_nd_sbp(tuple(m.shape), nd_sbp, "sbp")
    meta = make_global_meta(m.shape, m.dtype, placement, nd_sbp)
    a = None if meta.coord is None else slice_piece(value.numpy(), m.shape, placement, meta.coord, nd_sbp)
    out = _make(a, meta)
    return out.requires_grad_() if requires_grad else out


class _Casts:
    """What framework/tensor.py calls (Note [Global casts registration])."""

    to_global = staticmethod(to_global)
    to_local = staticmethod(to_local)
    logical_array = staticmethod(logical_array)


register_global_casts(_Casts)
