"""Samplers: iterables of dataset indices (``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``,
``WeightedRandomSampler``) and of index batches (``BatchSampler``), as in ``torch.utils.data``."""

from __future__ import annotations

from typing import Generic, TypeVar

import numpy as np

from oneflow_lite import functional as F
from oneflow_lite.framework.generator import Generator, default_generator

T_co = TypeVar("T_co", covariant=True)


def _check_generator(owner: str, generator) -> None:
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{owner}: generator must be a flow.Generator or None, got {type(generator).__name__}")


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


class Sampler(Generic[T_co]):
    """Base class of samplers: ``__iter__`` yields dataset indices (or batches of them); ``__len__`` is
    optional. ``data_source`` is accepted for compatibility and unused, as in PyTorch."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError("Subclasses of Sampler should implement __iter__.")


class SequentialSampler(Sampler[int]):
    """The indices 0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


_CHUNK = 32  # indices drawn at a time with replacement (PyTorch's chunk)


class RandomSampler(Sampler[int]):
    """Random indices of ``data_source``: a fresh permutation per pass (``replacement=False``; more than
    ``len(data_source)`` samples chain several permutations), or ``num_samples`` independent uniform draws.

    The indices come from ``flow.randperm`` / ``flow.randint`` with ``generator``; without one, each pass
    seeds a private generator from the global one (so ``flow.manual_seed`` fixes every epoch's order).
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        _check_generator("RandomSampler", generator)
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not _positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if n == 0:
            raise ValueError("RandomSampler: cannot draw samples from an empty data_source")
        generator = self.generator
        if generator is None:
            generator = Generator().manual_seed(int(F.randint(0, 2**63 - 1, ()).item()))
        if self.replacement:  # drawn lazily, a chunk at a time: num_samples may be huge (an "infinite" loader)
            full, rest = divmod(self.num_samples, _CHUNK)
            for _ in range(full):
                yield from F.randint(0, n, (_CHUNK,), generator=generator).tolist()
            if rest:
                yield from F.randint(0, n, (rest,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from F.randperm(n, generator=generator).tolist()
        if self.num_samples % n:
            yield from F.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order (a new permutation per pass, drawn from ``generator``)."""

    def __init__(self, indices, generator=None):
        _check_generator("SubsetRandomSampler", generator)
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in F.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices in ``range(len(weights))``, index i with probability proportional to
    ``weights[i]`` (with or without replacement), drawn from ``generator`` (default: the global one)."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        if not _positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(  # noqa: TRY004  (PyTorch's type)
                f"replacement should be a boolean value, but got replacement={replacement}")
        _check_generator("WeightedRandomSampler", generator)
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite and non-negative with a positive sum")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement from "
                             f"{np.count_nonzero(w)} indices of non-zero weight")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rng = (self.generator or default_generator()).numpy
        p = self.weights / self.weights.sum()
        yield from rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter unless ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if not _positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")  # noqa: TRY004
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
