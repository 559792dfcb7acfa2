"""The all-reduce of partial-sum gradients of broadcast leaves, bucketed and overlapping backward.

Note [Bucketed all-reduce of partial gradients]
A broadcast parameter used with split data gets a partial-sum gradient (each rank's part of the batch adds
its own); its ``.grad`` is broadcast like the parameter, so accumulating it is a P -> B boxing, an
all-reduce. Done leaf by leaf, each all-reduce would stop backward until every rank reached it: one
synchronisation of the ranks per parameter. Instead, during a backward run the engine's ``accumulate_grad``
hands such a gradient to the run's ``Reducer``: its piece is copied into the open bucket of its group and
dtype; a bucket holding ``BUCKET_BYTES`` or more starts a non-blocking all-reduce (``MPI_Iallreduce``) at
once while backward goes on, and each later arrival lets MPI progress the pending ones (as
DistributedDataParallel does, Note [Bucketed gradient all-reduce] in nn/parallel/distributed.py). When the
run's node loop ends, the open buckets start, every bucket is waited for, and each leaf's summed gradient (a
view of its bucket, with the leaf's own global meta) is accumulated into ``.grad`` as before and its
post-accumulate hooks run, all before ``backward()`` returns: the optimizer and every reader after backward
see what an immediate all-reduce gave. Every rank forms the same buckets in the same order, because every
rank runs the same backward graph in the same order (SPMD). Deferred: P -> B on exactly one placement
dimension of the leaf's own placement, a float32 / float64 gradient of the leaf's dtype, in a group of more
than one rank, outside ``create_graph`` and graph capture; any other boxing runs at once. On two ranks a
sum is the same bits in a bucket as alone; with more, MPI's order of summation may differ (rounding only).
If the node loop raises, the started buckets are waited for (every rank started them) and the deferred
gradients are dropped.
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np

from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.tensor import LAZY_KEY_SET, Tensor
from oneflow_lite.framework.world import world

BUCKET_BYTES = 25 * 2 ** 20  # DistributedDataParallel's default bucket_cap_mb
_REDUCIBLE = (np.dtype(np.float32), np.dtype(np.float64))
_state = threading.local()  # .reducer: the Reducer of this thread's innermost backward run, or None


# Note [Reused bucket buffers]
# The gradients a run stores are views of its buckets' buffers, so a buffer lives as long as any of them. Once
# they are all gone (``zero_grad()`` set them to None), the buffer is kept for the next run's bucket of the same
# size and dtype instead of a fresh one: a step of data-parallel training then touches no new memory for its
# buckets (as DistributedDataParallel's persistent buckets), which page faults on every step would cost. A
# buffer is reused only when nothing but this cache refers to it (its reference count).
_spare: dict = {}  # (size, dtype) -> buffers of ended runs
_spare_lock = threading.Lock()
_CACHE_REFS = 3  # the list holding it, the loop variable, getrefcount's argument


def _buffer(size: int, dtype) -> np.ndarray:
    """A flat buffer of ``size`` elements: a spare one no gradient refers to any more, else a new one kept as spare
    (Note [Reused bucket buffers])."""
    key = (size, dtype)
    with _spare_lock:
        spares = _spare.setdefault(key, [])
        for a in spares:
            if sys.getrefcount(a) <= _CACHE_REFS:
                return a
        a = np.empty(size, dtype)
        if len(spares) < 2:
            spares.append(a)
        return a


class _Bucket:
    __slots__ = ("flat", "group", "pieces", "request", "size")

    def __init__(self, group):
        self.group = group
        self.pieces = []  # (leaf, piece array)
        self.size = 0
        self.flat = None
        self.request = None

    def start(self):
        """Pack the pieces into one buffer (letting them go) and start its all-reduce in place."""
        flat = self.flat = _buffer(sum(a.size for _, a in self.pieces), self.pieces[0][1].dtype)
        off, pieces = 0, self.pieces
        for i, (leaf, a) in enumerate(pieces):
            flat[off:off + a.size].reshape(a.shape)[...] = a
            pieces[i] = (leaf, a.shape)
            off += a.size
        self.request = self.group.iallreduce(flat)

    def results(self):
        """(leaf, summed piece) for each piece, views of the reduced buffer."""
        off = 0
        for leaf, shape in self.pieces:
            size = math.prod(shape)
            yield leaf, self.flat[off:off + size].reshape(shape)
            off += size


class Reducer:
    """The deferred all-reduces of one backward run (Note [Bucketed all-reduce of partial gradients])."""

    def __init__(self):
        self.open = {}  # (group ranks, dtype) -> the bucket being filled
        self.started = []
        self.arrival = {}  # id(leaf) -> its place in the order the gradients came

    def add(self, leaf: Tensor, piece: np.ndarray, group) -> None:
        self.arrival[id(leaf)] = len(self.arrival)
        key = (group.ranks, piece.dtype)
        b = self.open.get(key)
        if b is None:
            b = self.open[key] = _Bucket(group)
        b.pieces.append((leaf, piece))
        b.size += piece.nbytes
        if b.size >= BUCKET_BYTES:
            del self.open[key]
            b.start()
            self.started.append(b)
        elif self.started:
            group.progress([s.request for s in self.started if s.request is not None])

    def finish(self, store) -> None:
        """Start the open buckets, wait for all, and ``store(leaf, summed gradient)`` in arrival order."""
        for b in self.open.values():
            b.start()
            self.started.append(b)
        self.open = {}
        self.wait()
        arrival = self.arrival
        done = sorted((p for b in self.started for p in b.results()), key=lambda p: arrival[id(p[0])])
        for leaf, a in done:
            store(leaf, Tensor._make(a, leaf._meta))

    def wait(self) -> None:
        for b in self.started:
            if b.request is not None:
                b.request.Wait()
                b.request = None


def _reduction_group(leaf_meta, g_meta):
    """The group to all-reduce ``g`` over for ``leaf``'s gradient when that is all its boxing takes, else None."""
    if g_meta.placement is not leaf_meta.placement or g_meta.dtype is not leaf_meta.dtype \
            or g_meta.np_dtype not in _REDUCIBLE or g_meta.coord is None:
        return None
    axis = None
    for h, (gs, ts) in enumerate(zip(g_meta.nd_sbp, leaf_meta.nd_sbp)):
        if gs is ts:
            continue
        if gs is not S.partial_sum or ts is not S.broadcast or axis is not None:
            return None
        axis = h
    if axis is None:
        return None
    group = world().group(g_meta.placement.axis_ranks(world().rank, axis))
    return group if group.size > 1 else None


def defer(leaf: Tensor, g: Tensor) -> bool:
    """Queue the all-reduce of global gradient ``g`` for ``leaf`` in this thread's backward run; False when
    there is no run or the boxing is not one the run defers (then the caller boxes ``g`` at once)."""
    reducer = getattr(_state, "reducer", None)
    if reducer is None or g._key_set & LAZY_KEY_SET or g._array is None:
        return False
    group = _reduction_group(leaf._meta, g._meta)
    if group is None:
        return False
    reducer.add(leaf, g._array, group)
    return True


def begin_run():
    """Make a new Reducer this thread's current one; returns the outer run's, to give to ``end_run``."""
    outer = getattr(_state, "reducer", None)
    _state.reducer = Reducer()
    return outer


def end_run(outer, store) -> None:
    """Finish this thread's current run (``store`` gets the summed gradients; None: the run failed, drop them)
    and make ``outer`` current again."""
    r = _state.reducer
    _state.reducer = outer
    if store is None:
        r.wait()
    elif r.started or r.open:
        r.finish(store)
