"""``flow.placement``: the device type and the ranks a global tensor is laid over.

``flow.placement("cpu", ranks=[0, 1])`` is a 1-D placement of two ranks; ``ranks=[[0, 1], [2, 3]]`` is a 2-D
one (its ``hierarchy`` is ``(2, 2)``), used with one SBP per dimension. Placements are interned: equal
placements are the same object, so global tensor metas compare them by identity.
"""

from __future__ import annotations

import threading

import numpy as np

from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.world import world

_interned: dict = {}
_lock = threading.Lock()


def _nested(ranks) -> tuple:
    """``ranks`` as nested tuples of ints (a rectangular array of at most 2 dims)."""
    try:
        arr = np.asarray(ranks)
    except ValueError:
        arr = None
    if arr is None or arr.dtype.kind not in "iu" or arr.ndim not in (1, 2) or arr.size == 0:
        raise ValueError(f"placement: ranks must be a non-empty list of ints, or a rectangular list of lists of "
                         f"ints (a 2-D placement), got {ranks!r}")
    return arr


class placement:
    """Where a global tensor lives: a device type and an (up to 2-D) array of process ranks."""

    __slots__ = ("__weakref__", "_coords", "_ranks", "device", "hierarchy", "rank_list", "type")

    def __new__(cls, type: str = "cpu", ranks=None):
        if isinstance(type, Device):
            type = type.type
        if not isinstance(type, str):
            raise TypeError(f"placement: type must be a device type such as 'cpu', got {type!r}")
        if ranks is None:
            raise TypeError("placement: missing the ranks, e.g. flow.placement('cpu', ranks=[0, 1])")
        arr = _nested(ranks)
        key = (type, arr.shape, tuple(int(r) for r in arr.reshape(-1)))
        p = _interned.get(key)
        if p is not None:
            return p
        dev = Device(type)
        if not dev.device_type.has_storage:
            raise ValueError(f"placement: device type '{type}' holds no data; a placement needs one that does "
                             f"(e.g. 'cpu')")
        flat = key[2]
        if len(set(flat)) != len(flat):
            raise ValueError(f"placement: ranks {arr.tolist()} name a rank more than once")
        size = world().size
        bad = [r for r in flat if not 0 <= r < size]
        if bad:
            raise ValueError(f"placement: rank {bad[0]} is not a rank of this job of {size} process(es) "
                             f"(ranks 0..{size - 1}); start more processes with mpiexec -n N")
        p = object.__new__(cls)
        p.type = type
        p.device = dev
        p._ranks = arr
        p.hierarchy = tuple(int(d) for d in arr.shape)
        p.rank_list = flat
        p._coords = {r: tuple(int(i) for i in idx) for idx, r in np.ndenumerate(arr)}
        with _lock:
            return _interned.setdefault(key, p)

    @staticmethod
    def all(type: str = "cpu") -> placement:
        """The 1-D placement of every rank of the job."""
        return placement(type, ranks=list(range(world().size)))

    @property
    def ranks(self) -> list:
        """The ranks, as a (nested) list."""
        return self._ranks.tolist()

    @property
    def ndim(self) -> int:
        return len(self.hierarchy)

    @property
    def size(self) -> int:
        return len(self.rank_list)

    def has_rank(self, rank: int) -> bool:
        return rank in self._coords

    def coord(self, rank: int) -> tuple | None:
        """The index of ``rank`` in the ranks array (None when it is not part of the placement)."""
        return self._coords.get(rank)

    def axis_ranks(self, rank: int, axis: int) -> tuple:
        """The ranks sharing ``rank``'s coordinates on every dimension but ``axis``, in order along ``axis``."""
        idx = list(self._coords[rank])
        idx[axis] = slice(None)
        return tuple(int(r) for r in self._ranks[tuple(idx)])

    def __repr__(self):
        return f'oneflow_lite.placement(type="{self.type}", ranks={self.ranks})'

    def __reduce__(self):
        return (placement, (self.type, self.ranks))

    def to_parallel_conf(self, conf) -> None:
        """Fill the Job proto's ``ParallelConf`` ``conf`` (device tag, ranks, hierarchy)."""
        conf.device_tag = self.type
        conf.ranks.extend(self.rank_list)
        conf.hierarchy.dim.extend(self.hierarchy)

    @staticmethod
    def from_parallel_conf(conf) -> placement:
        return placement(conf.device_tag, np.reshape(list(conf.ranks), tuple(conf.hierarchy.dim)).tolist())

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)
