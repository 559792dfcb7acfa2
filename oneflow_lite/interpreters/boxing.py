"""Boxing: turning this rank's piece of a global tensor under one nd-SBP / placement into its piece under
another, with the collectives of OneFlow's boxing table (on NumPy arrays, over MPI groups).

=============  ==========================================
from -> to     what moves
=============  ==========================================
S(i) -> B      all-gather along i
P -> B         all-reduce (sum)
P -> S(i)      reduce-scatter along i
B -> S(i)      nothing: slice this rank's part
B -> P         nothing: the value on the first rank, zeros elsewhere
S(i) -> S(j)   all-to-all
S(i) -> P      nothing: the piece inside zeros of the whole
Pm -> B        all-reduce (max)
Pm -> S(i)     reduce-scatter (max) along i
Pm -> P        all-reduce (max), then as B -> P
B -> Pm        nothing: every rank's whole value
P -> Pm        all-reduce (sum): a broadcast value
S(i) -> Pm     nothing: the piece inside the lowest values of the whole
=============  ==========================================

``Pm`` is partial_max (the logical value is the elementwise maximum over the ranks); partial_min has the same
rows with the minimum (and the highest values around a split's piece).

Note [Boxing an nd-SBP one placement dimension at a time]
On a 2-D placement each dimension is boxed on its own, among the ranks that share this rank's coordinate on
the other dimension, on the tensor those ranks hold together (this rank's piece with the boxed dimension
taken as broadcast). That is exact when no other placement dimension splits a tensor dim the boxed one
splits; otherwise the tensor is first made broadcast on every dimension (the last one first, undoing the
splits in reverse order) and then sliced. Another placement: the source ranks make the tensor broadcast,
send it to the target ranks that do not hold it, and every target rank slices its piece.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.world import world

_B = S.broadcast
_P = S.partial_sum
_PM = S.partial_max
_PMIN = S.partial_min


def _part(size: int, n: int, i: int) -> slice:
    start, length = S.part(size, n, i)
    return slice(start, start + length)


def _take(a: np.ndarray, dim: int, n: int, i: int) -> np.ndarray:
    """Part ``i`` of ``n`` of ``a`` along ``dim``, as a new array."""
    index = [slice(None)] * a.ndim
    index[dim] = _part(a.shape[dim], n, i)
    return np.array(a[tuple(index)], copy=True)


def _all_gather(a, whole_shape, dim, group):
    moved = np.moveaxis(a, dim, 0)
    inner = int(np.prod(moved.shape[1:], dtype=np.int64))
    counts = [r * inner for r in S.part_sizes(whole_shape[dim], group.size)]
    flat = group.allgather(np.asarray(moved, order="C"), counts)
    rest = moved.shape[1:]
    return np.asarray(np.moveaxis(flat.reshape((whole_shape[dim], *rest)), 0, dim), order="C")


def _reduce_scatter(a, dim, group, op="sum"):
    moved = np.asarray(np.moveaxis(a, dim, 0), order="C")
    inner = int(np.prod(moved.shape[1:], dtype=np.int64))
    rows = S.part_sizes(a.shape[dim], group.size)
    out = group.reduce_scatter(moved, [r * inner for r in rows], op)
    return np.asarray(np.moveaxis(out.reshape((rows[group.rank], *moved.shape[1:])), 0, dim), order="C")


def _all_to_all(a, whole_shape, src_dim, dst_dim, group):
    n, i = group.size, group.rank
    blocks = [_take(a, dst_dim, n, j) for j in range(n)]
    received = group.alltoall(blocks)
    shapes = []
    for j in range(n):
        shape = list(a.shape)
        shape[src_dim] = S.part(whole_shape[src_dim], n, j)[1]
        shape[dst_dim] = S.part(whole_shape[dst_dim], n, i)[1]
        shapes.append(shape)
    return np.concatenate([r.reshape(s) for r, s in zip(received, shapes)], axis=src_dim)


def box_1d(a: np.ndarray, whole_shape: tuple, src, dst, group) -> np.ndarray:
    """This member's piece under ``dst`` from its piece ``a`` under ``src``, for the tensor of ``whole_shape``
    the group holds together (see the table in the module docstring)."""
    if src is dst:
        return a
    if src is _PM or dst is _PM:
        return _box_partial_extreme(a, whole_shape, src, dst, group, _PM)
    if src is _PMIN or dst is _PMIN:
        return _box_partial_extreme(a, whole_shape, src, dst, group, _PMIN)
    n, i = group.size, group.rank
    if src is _B:
        if dst is _P:
            return a.copy() if i == 0 else np.zeros_like(a)
        return _take(a, dst.dim, n, i)
    if src is _P:
        if dst is _B:
            return group.allreduce(a)
        return _reduce_scatter(a, dst.dim, group)
    if dst is _B:  # src is a split
        return _all_gather(a, whole_shape, src.dim, group)
    if dst is _P:
        out = np.zeros(whole_shape, a.dtype)
        index = [slice(None)] * a.ndim
        index[src.dim] = _part(whole_shape[src.dim], n, i)
        out[tuple(index)] = a
        return out
    return _all_to_all(a, whole_shape, src.dim, dst.dim, group)


def identity_of(dtype, is_max: bool) -> object:
    """The value no element of ``dtype`` is below (the identity of max) or above (of min)."""
    if dtype.kind == "f" or dtype.kind == "V":
        return -np.inf if is_max else np.inf
    if dtype.kind == "b":
        return not is_max
    return np.iinfo(dtype).min if is_max else np.iinfo(dtype).max


def _box_partial_extreme(a, whole_shape, src, dst, group, extreme) -> np.ndarray:
    """The rows of the boxing table with partial_max or partial_min (``extreme``) on one side."""
    op = "max" if extreme is _PM else "min"
    if src is extreme:
        if dst.kind == "S":
            return _reduce_scatter(a, dst.dim, group, op)
        whole = group.allreduce(a, op)
        return whole if dst is _B else box_1d(whole, whole_shape, _B, dst, group)
    if src is _B:
        return a
    if src is _P:
        return group.allreduce(a)
    if src.is_partial:  # the other extreme: make it broadcast first
        return box_1d(box_1d(a, whole_shape, src, _B, group), whole_shape, _B, dst, group)
    out = np.full(whole_shape, identity_of(a.dtype, extreme is _PM), a.dtype)  # a split
    index = [slice(None)] * a.ndim
    index[src.dim] = _part(whole_shape[src.dim], group.size, group.rank)
    out[tuple(index)] = a
    return out


def _axis_group(placement, axis):
    """The group of the ranks along placement dimension ``axis`` through this rank."""
    return world().group(placement.axis_ranks(world().rank, axis))


def _separable(src: tuple, dst: tuple) -> bool:
    """Whether each changed placement dimension splits tensor dims no other dimension splits
    (Note [Boxing an nd-SBP one placement dimension at a time])."""
    for h, (a, b) in enumerate(zip(src, dst)):
        if a is b:
            continue
        dims = {s.dim for s in (a, b) if s.kind == "S"}
        others = {s.dim for k, s in enumerate(src + dst) if k % len(src) != h and s.kind == "S"}
        if dims & others:
            return False
    return True


def _whole(shape, nd_sbp, placement, coord, axis):
    nd = list(nd_sbp)
    nd[axis] = _B
    return S.local_shape(shape, tuple(nd), placement.hierarchy, coord)


def box_same_placement(a, shape, placement, coord, src: tuple, dst: tuple) -> np.ndarray:
    """This rank's piece under nd-SBP ``dst`` from its piece ``a`` under ``src`` (same placement)."""
    if src == dst:
        return a
    if len(src) == 1:
        return box_1d(a, tuple(shape), src[0], dst[0], _axis_group(placement, 0))
    cur = list(src)
    if _separable(src, dst):
        for h in range(len(src)):
            if cur[h] is not dst[h]:
                whole = _whole(shape, cur, placement, coord, h)
                a = box_1d(a, whole, cur[h], dst[h], _axis_group(placement, h))
                cur[h] = dst[h]
        return a
    for h in reversed(range(len(src))):  # make it broadcast, last dimension first, then slice
        if cur[h] is not _B:
            whole = _whole(shape, cur, placement, coord, h)
            a = box_1d(a, whole, cur[h], _B, _axis_group(placement, h))
            cur[h] = _B
    return slice_piece(a, shape, placement, coord, dst)


def slice_piece(logical: np.ndarray, shape, placement, coord, nd_sbp: tuple) -> np.ndarray:
    """This rank's piece under ``nd_sbp`` of the logical value every rank holds (no communication; a partial
    dimension keeps the value on its first rank and zeros elsewhere)."""
    piece = np.array(logical[S.local_slices(tuple(shape), nd_sbp, placement.hierarchy, coord)], copy=True)
    for s, i in zip(nd_sbp, coord):
        if s is _P and i != 0:
            piece[...] = 0
    return piece


def box_across_placements(a, shape, dtype, src_placement, src: tuple, dst_placement, dst: tuple):
    """This rank's piece under (``dst_placement``, ``dst``) of a tensor held under (``src_placement``, ``src``);
    ``a`` is None on a rank outside the source placement; None is returned outside the target placement."""
    w = world()
    rank = w.rank
    full = None
    if src_placement.has_rank(rank):
        coord = src_placement.coord(rank)
        full = box_same_placement(a, shape, src_placement, coord, src, (_B,) * len(src))
    senders = src_placement.rank_list
    receivers = [r for r in dst_placement.rank_list if not src_placement.has_rank(r)]
    for k, r in enumerate(receivers):
        sender = senders[k % len(senders)]
        if rank == sender:
            w.all.send(full, r, tag=7)
        elif rank == r:
            full = w.all.recv(np.empty(shape, dtype), sender, tag=7)
    if not dst_placement.has_rank(rank):
        return None
    return slice_piece(full, shape, dst_placement, dst_placement.coord(rank), dst)
