"""``DistributedSampler`` (PyTorch's ``torch.utils.data.distributed.DistributedSampler``): each of
``num_replicas`` processes iterates its own ``1 / num_replicas`` share of a dataset."""

from __future__ import annotations

import math

from oneflow_lite import distributed as dist
from oneflow_lite import functional as F
from oneflow_lite.framework.generator import Generator
from oneflow_lite.utils.data.sampler import Sampler, T_co

__all__ = ["DistributedSampler"]


def _int_arg(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"DistributedSampler: {name} must be an int, got {type(value).__name__}")
    return value


class DistributedSampler(Sampler[T_co]):
    """The indices of ``dataset`` that process ``rank`` of ``num_replicas`` loads (default: the rank and world
    size of ``flow.distributed``'s initialised process group; PyTorch's ValueError when there is none).

    Each pass takes a permutation of the indices (``shuffle``: ``flow.randperm`` from a generator seeded with
    ``seed + epoch``, so every process draws the same one and ``set_epoch`` changes it; else ``0, 1, ...``),
    pads it by repeating its start to a multiple of ``num_replicas`` (or with ``drop_last`` cuts it to one),
    and yields every ``num_replicas``-th index starting at ``rank``: ``len(self)`` indices per process."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        num_replicas = dist.get_world_size() if num_replicas is None else _int_arg("num_replicas", num_replicas)
        rank = dist.get_rank() if rank is None else _int_arg("rank", rank)
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be positive, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = _int_arg("seed", seed)

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices = F.randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the next passes' shuffle seed (``seed + epoch``), so epochs differ and every
        process agrees."""
        self.epoch = epoch
