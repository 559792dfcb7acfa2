"""Datasets: the map-style ``Dataset`` and ``IterableDataset`` protocols, ``TensorDataset``, ``Subset``,
``ConcatDataset``, ``ChainDataset``, ``StackDataset`` and ``random_split`` (PyTorch's ``torch.utils.data`` API)."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Generic, TypeVar

from oneflow_lite import functional as F
from oneflow_lite.framework.tensor import Tensor

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: ``dataset[i]`` is the i-th sample. Subclasses define ``__getitem__`` and usually
    ``__len__`` (samplers and ``DataLoader`` need it); ``a + b`` concatenates two datasets."""

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A dataset that is a stream of samples: subclasses define ``__iter__``. With ``DataLoader(...,
    num_workers=n)`` every worker iterates it; shard it by ``flow.utils.data.get_worker_info()``."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the slices ``tuple(t[i] for t in tensors)`` of tensors with the same size in dimension 0."""

    def __init__(self, *tensors: Tensor):
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: argument {i} must be a Tensor, got {type(t).__name__}")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: tensor {i} is 0-d; every tensor needs a first dimension to index")
        if tensors:
            n = tensors[0].shape[0]
            for i, t in enumerate(tensors[1:], 1):
                if t.shape[0] != n:
                    raise ValueError(f"TensorDataset: Size mismatch between tensors: tensor {i} has {t.shape[0]} "
                                     f"rows (size of dimension 0), tensor 0 has {n}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0] if self.tensors else 0


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[T_co]):
    """The map-style ``datasets`` one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset does not support IterableDataset (dataset {i}); use ChainDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("ConcatDataset: absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {idx} is out of range for a dataset of length {len(self)}")
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """The iterable ``datasets`` one after the other."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, dataset {i} is "
                                f"{type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class StackDataset(Dataset):
    """The samples of several map-style datasets of one length side by side: ``StackDataset(a, b)[i]`` is
    ``(a[i], b[i])``, ``StackDataset(x=a, y=b)[i]`` is ``{"x": a[i], "y": b[i]}``."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or ``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = list(args or kwargs.values())
        self._length = len(datasets[0])
        if any(self._length != len(d) for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def _column(self, dataset, indices: list) -> list:
        """``[dataset[i] for i in indices]``, batched when ``dataset`` has ``__getitems__``."""
        getitems = getattr(dataset, "__getitems__", None)
        if not callable(getitems):
            return [dataset[i] for i in indices]
        items = getitems(indices)
        if len(items) != len(indices):
            raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
        return items

    def __getitems__(self, indices: list) -> list:
        """The samples of ``indices`` (what a DataLoader fetches for a batch)."""
        if isinstance(self.datasets, dict):
            columns = {k: self._column(d, indices) for k, d in self.datasets.items()}
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        return list(zip(*(self._column(d, indices) for d in self.datasets)))

    def __len__(self) -> int:
        return self._length


def random_split(dataset: Dataset, lengths, generator=None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given ``lengths``, or of the given
    fractions of ``len(dataset)`` when ``lengths`` sum to 1 (the remainder of flooring goes round-robin to the
    first subsets). The permutation is drawn by ``flow.randperm`` from ``generator`` (default: the global
    generator, so ``flow.manual_seed`` fixes it)."""
    lengths = list(lengths)
    for i, length in enumerate(lengths):
        if isinstance(length, bool) or not isinstance(length, (int, float)):
            raise TypeError(f"random_split: lengths[{i}] must be an int or a float fraction, got "
                            f"{type(length).__name__}")
    n = len(dataset)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        split = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: Fraction at index {i} is not between 0 and 1")
            split.append(math.floor(n * frac))
        for i in range(n - sum(split)):
            split[i % len(split)] += 1
        for i, length in enumerate(split):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = split
    for i, length in enumerate(lengths):
        if not isinstance(length, int) or length < 0:
            raise ValueError(f"random_split: lengths[{i}] must be a non-negative int (or all lengths fractions "
                             f"summing to 1), got {length!r}")
    if sum(lengths) != n:
        raise ValueError(f"random_split: Sum of input lengths ({sum(lengths)}) does not equal the length of the "
                         f"input dataset ({n})!")
    indices = F.randperm(n, generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
