"""``DataLoader``: batches of samples from a dataset, collated into tensors by ``default_collate``
(PyTorch's ``torch.utils.data.DataLoader`` API)."""

from __future__ import annotations

import collections.abc
import copy
import functools
import itertools
import math
import operator
import queue
import threading
import warnings
from typing import Generic, TypeVar

import numpy as np

from oneflow_lite import functional as F
from oneflow_lite.framework.dtype import float64
from oneflow_lite.framework.generator import Generator, using_generator
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.creation import as_tensor, tensor
from oneflow_lite.utils.data.dataset import IterableDataset, Subset, TensorDataset
from oneflow_lite.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

T_co = TypeVar("T_co", covariant=True)

_COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_string_or_object(a: np.ndarray) -> bool:
    return a.dtype.char in "SaUO"


# ---- collation ------------------------------------------------------------------------------------
def default_collate(batch):
    """Merge a list of samples into a batch, as PyTorch's ``default_collate``: tensors are stacked along a new
    dimension 0; NumPy arrays and scalars become stacked tensors; Python floats a float64 tensor, ints (and
    bools) an int64 (bool) tensor; strings and bytes stay a list; mappings, named tuples and sequences are
    collated field by field (a tuple of fields gives a list, as in PyTorch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return F.stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _is_string_or_object(elem):
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number)):
        return as_tensor(list(batch))
    if isinstance(elem, float):
        return tensor(list(batch), dtype=float64)
    if isinstance(elem, int):
        return tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        return _rebuild_mapping(elem, collated)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        collated = [default_collate(samples) for samples in zip(*batch)]
        return collated if isinstance(elem, tuple) else _rebuild_sequence(elem, collated)
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def default_convert(data):
    """Convert NumPy arrays and scalars in ``data`` (recursively through mappings and sequences) to tensors;
    the collate function of a ``DataLoader`` with ``batch_size=None``."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _is_string_or_object(data) else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def _rebuild_mapping(like, items: dict):
    """``items`` in a mapping of ``like``'s type when that type can be made so (a plain dict otherwise)."""
    if isinstance(like, collections.abc.MutableMapping):
        clone = copy.copy(like)
        clone.update(items)
        return clone
    try:
        return type(like)(items)
    except TypeError:
        return items


def _rebuild_sequence(like, items: list):
    if isinstance(like, collections.abc.MutableSequence):
        clone = copy.copy(like)
        for i, item in enumerate(items):
            clone[i] = item
        return clone
    try:
        return type(like)(items)
    except TypeError:
        return items


# ---- fetching samples -----------------------------------------------------------------------------
# Note [Batched fetch of tensor datasets]
# ``default_collate([ds[i] for i in idx])`` of a ``TensorDataset`` is the list ``[t[idx] for t in ds.tensors]``
# (stacking rows equals indexing with the list of rows), so for a TensorDataset, or a Subset of one, collated
# by default_collate the loader fetches a batch with one indexing op per tensor instead of one per sample
# and tensor plus a stack. Only these exact types take the shortcut: a subclass may override __getitem__.
def _tensor_batch_fn(dataset):
    """A function of a list of indices giving the default-collated batch of ``dataset`` (see Note [Batched
    fetch of tensor datasets]), or None when ``dataset`` is not a TensorDataset or a Subset of one."""
    if type(dataset) is TensorDataset:
        tensors = dataset.tensors
        return lambda idx: [t[[operator.index(i) for i in idx]] for t in tensors]
    if type(dataset) is Subset:
        inner = _tensor_batch_fn(dataset.dataset)
        if inner is not None:
            indices = dataset.indices
            return lambda idx: inner([indices[i] for i in idx])
    return None


class _MapFetcher:
    """Samples of a map-style dataset: one per index, or a collated batch per list of indices."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.batch_fn = _tensor_batch_fn(dataset) if auto_collation and collate_fn is default_collate else None
        self.getitems = getattr(dataset, "__getitems__", None) if auto_collation else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.batch_fn is not None:
            return self.batch_fn(index)
        if self.getitems is not None:
            return self.collate_fn(self.getitems(index))
        return self.collate_fn([self.dataset[i] for i in index])


class _IterableFetcher:
    """Samples of an iterable dataset: the next one, or the next ``len(index)`` collated; StopIteration at
    the end (a short last batch is returned unless ``drop_last``)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            try:
                return self.collate_fn(next(self.iterator))
            except StopIteration:
                self.ended = True
                raise
        data = list(itertools.islice(self.iterator, len(index)))
        if len(data) < len(index):
            self.ended = True
            if not data or self.drop_last:
                raise StopIteration
        return self.collate_fn(data)


class _InfiniteConstantSampler(Sampler):
    """The index sampler of an iterable dataset: an endless stream of None (one per sample to fetch)."""

    def __iter__(self):
        return itertools.repeat(None)


def _fetcher_factory(loader):
    """A function making a fresh fetcher (for an iterable dataset: a fresh pass) of ``loader``'s dataset; it
    holds no reference to the loader, so worker threads do not keep the loader alive."""
    cls = _IterableFetcher if loader._iterable else _MapFetcher
    return functools.partial(cls, loader.dataset, loader._auto_collation, loader.collate_fn, loader.drop_last)


class _SingleProcessIter:
    """Iteration with ``num_workers=0``: each batch fetched in the calling thread when asked for."""

    def __init__(self, loader):
        self._loader = loader
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = _fetcher_factory(loader)()

    def __iter__(self):
        return self

    def __next__(self):
        return self._fetcher.fetch(next(self._sampler_iter))

    def __len__(self) -> int:
        return len(self._loader)


# ---- worker threads -------------------------------------------------------------------------------
# Note [DataLoader workers are threads]
# With ``num_workers=n > 0`` the batches are fetched by n worker *threads* (not processes): worker w
# fetches batches w, w + n, w + 2n, ... of each epoch, keeping up to ``prefetch_factor * n`` batches in
# flight, and the loader yields them in order (``in_order=False``: as they arrive). The workers share the
# dataset object (nothing is pickled or copied), so an IterableDataset must shard itself by
# ``get_worker_info()`` to avoid duplicates, as in PyTorch. Each worker runs with its own flow generator
# (``using_generator``) seeded ``base_seed + worker_id``, the base seed drawn per iterator from the loader's
# ``generator`` or the global one, so random flow ops in a dataset are reproducible; ``worker_init_fn`` runs
# first in each worker. An exception in a worker is re-raised by the loader (with a note naming the
# worker). ``persistent_workers`` keeps the threads for the next epoch. ``multiprocessing_context`` is
# accepted and unused. Datasets whose ``__getitem__`` releases the GIL (NumPy, file I/O) gain from threads.
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``, ``seed``, ``dataset``."""

    __slots__ = ("dataset", "id", "num_workers", "seed")

    def __init__(self, id: int, num_workers: int, seed: int, dataset):
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, dataset={self.dataset!r})"


_worker_local = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """The ``WorkerInfo`` of the DataLoader worker calling it; None outside workers."""
    return getattr(_worker_local, "info", None)


class _Failure:
    """An exception a worker raised while fetching a batch."""

    __slots__ = ("exc", "worker_id")

    def __init__(self, exc: BaseException, worker_id: int):
        self.exc = exc
        self.worker_id = worker_id


class _WorkerEnd:
    """A worker's iterable dataset is exhausted for this epoch."""

    __slots__ = ("worker_id",)

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


def _worker_loop(make_fetcher, init_fn, info: WorkerInfo, tasks: queue.SimpleQueue,
                 results: queue.SimpleQueue) -> None:
    _worker_local.info = info
    with using_generator(Generator().manual_seed(info.seed)):
        init_error = None
        if init_fn is not None:
            try:
                init_fn(info.id)
            except BaseException as e:  # noqa: BLE001  (reported with the first batch this worker is asked for)
                init_error = e
        fetcher, fetcher_epoch = None, None
        while (task := tasks.get()) is not None:
            epoch, send_idx, index = task
            if init_error is not None:
                results.put((epoch, send_idx, _Failure(init_error, info.id)))
                continue
            try:
                if fetcher_epoch != epoch:
                    fetcher, fetcher_epoch = make_fetcher(), epoch
                data = fetcher.fetch(index)
            except StopIteration:
                data = _WorkerEnd(info.id)
            except BaseException as e:  # noqa: BLE001  (a worker must answer every task, or the loader waits)
                data = _Failure(e, info.id)
            results.put((epoch, send_idx, data))


class _ThreadedIter:
    """Iteration with ``num_workers > 0`` (see Note [DataLoader workers are threads])."""

    def __init__(self, loader):
        self._shut_down, self._tasks = True, []
        self._loader = loader
        n = self._num_workers = loader.num_workers
        self._prefetch = n * loader.prefetch_factor
        self._timeout = loader.timeout if loader.timeout > 0 else None
        base_seed = int(F.randint(0, 2**63 - 1, (), generator=loader.generator).item())
        self._results = queue.SimpleQueue()
        self._tasks = [queue.SimpleQueue() for _ in range(n)]
        self._shut_down = False
        make_fetcher = _fetcher_factory(loader)
        for w in range(n):
            info = WorkerInfo(w, n, base_seed + w, loader.dataset)
            threading.Thread(target=_worker_loop, args=(make_fetcher, loader.worker_init_fn, info, self._tasks[w],
                                                        self._results),
                             name=f"DataLoader worker {w}", daemon=True).start()
        self._epoch = -1
        self._reset()

    def _reset(self) -> None:
        """Start an epoch: a new pass of the index sampler; answers still due from an earlier epoch are dropped."""
        self._epoch += 1
        self._sampler_iter = iter(self._loader._index_sampler)
        self._sampler_done = False
        self._send_idx = self._rcvd_idx = 0
        self._pending: dict[int, int] = {}  # send_idx -> worker, for every task not yet yielded
        self._ready: dict[int, object] = {}  # send_idx -> answer received ahead of its turn
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch):
            self._put_task()

    def _put_task(self) -> None:
        if self._sampler_done or not any(self._active):
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            self._sampler_done = True
            return
        worker = next(w for w in self._worker_cycle if self._active[w])
        self._tasks[worker].put((self._epoch, self._send_idx, index))
        self._pending[self._send_idx] = worker
        self._send_idx += 1

    def _receive(self) -> tuple[int, object]:
        """The next (send_idx, answer) to hand out: in order, or the first to arrive when not ``in_order``."""
        while True:
            if self._loader.in_order:
                if self._rcvd_idx in self._ready:
                    idx = self._rcvd_idx
                    return idx, self._ready.pop(idx)
            elif self._ready:
                idx = min(self._ready)
                return idx, self._ready.pop(idx)
            try:
                epoch, idx, answer = self._results.get(timeout=self._timeout)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {self._loader.timeout} seconds") from None
            if epoch == self._epoch:
                self._ready[idx] = answer

    def __iter__(self):
        return self

    def __next__(self):
        while self._pending:
            idx, answer = self._receive()
            del self._pending[idx]
            self._rcvd_idx = min(self._pending, default=self._send_idx)
            if type(answer) is _WorkerEnd:
                self._active[answer.worker_id] = False
                self._put_task()
                continue
            self._put_task()
            if type(answer) is _Failure:
                exc, note = answer.exc, f"(raised in DataLoader worker {answer.worker_id})"
                if note not in getattr(exc, "__notes__", ()):
                    exc.add_note(note)
                raise exc
            return answer
        if not self._loader.persistent_workers:
            self._shutdown()
        raise StopIteration

    def __len__(self) -> int:
        return len(self._loader)

    def _shutdown(self) -> None:
        if not self._shut_down:
            self._shut_down = True
            for q in self._tasks:
                q.put(None)

    def __del__(self):
        self._shutdown()


# ---- the loader's options -------------------------------------------------------------------------
def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context):
    """Check the worker options; return ``prefetch_factor`` (2 by default with workers)."""
    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                         "multiprocessing.")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                         "to enable multiprocessing, otherwise set prefetch_factor to None.")
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    if prefetch_factor is not None and (isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int)
                                        or prefetch_factor <= 0):
        raise ValueError(f"prefetch_factor option should be a positive integer, got {prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None and num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                         f"but got num_workers={num_workers}")
    return prefetch_factor


def _check_option_types(*, shuffle, drop_last, pin_memory, persistent_workers, in_order, collate_fn,
                        worker_init_fn, generator) -> None:
    """The flags are bools (``shuffle`` may be None), the hooks callables, ``generator`` a Generator."""
    for name, value in (("shuffle", shuffle), ("drop_last", drop_last), ("pin_memory", pin_memory),
                        ("persistent_workers", persistent_workers), ("in_order", in_order)):
        if not (isinstance(value, bool) or (name == "shuffle" and value is None)):
            raise TypeError(f"DataLoader: {name} must be a bool, got {type(value).__name__}")
    for name, value in (("collate_fn", collate_fn), ("worker_init_fn", worker_init_fn)):
        if value is not None and not callable(value):
            raise TypeError(f"DataLoader: {name} must be callable or None, got {type(value).__name__}")
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"DataLoader: generator must be a flow.Generator or None, got {type(generator).__name__}")


def _check_stream_options(shuffle, sampler, batch_sampler) -> None:
    """An IterableDataset is read as a stream: no shuffle, no sampler, no batch sampler."""
    if shuffle not in (False, None):
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                         f"shuffle={shuffle}")
    if sampler is not None:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                         f"sampler={sampler}")
    if batch_sampler is not None:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                         f"got batch_sampler={batch_sampler}")


def _samplers(dataset, iterable: bool, batch_size, shuffle: bool, sampler, batch_sampler, drop_last: bool,
              generator) -> tuple:
    """``(batch_size, sampler, batch_sampler)`` after the defaults: a sampler always, a batch sampler when
    batching (``batch_size`` becomes None when a batch sampler is given)."""
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                             "and drop_last")
        batch_size = None
    elif batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
    if sampler is None:
        if iterable:
            sampler = _InfiniteConstantSampler()
        elif shuffle:
            sampler = RandomSampler(dataset, generator=generator)
        else:
            sampler = SequentialSampler(dataset)
    if batch_size is not None and batch_sampler is None:
        batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    return batch_size, sampler, batch_sampler


# ---- the loader -----------------------------------------------------------------------------------
class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches, as PyTorch's ``DataLoader``.

    ``batch_size`` samples (None: no batching) are drawn by ``sampler`` (default: in order, or a
    ``RandomSampler`` using ``generator`` when ``shuffle``) or, instead, whole batches by ``batch_sampler``;
    ``collate_fn`` (default :func:`default_collate`) merges them; ``drop_last`` drops a short last batch.
    An ``IterableDataset`` is read as a stream (no sampler, no shuffle). ``num_workers > 0`` fetches in
    worker threads (see Note [DataLoader workers are threads]). ``pin_memory`` has no effect on cpu.
    """

    _FROZEN = frozenset(("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"))

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        prefetch_factor = _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers,
                                                multiprocessing_context)
        _check_option_types(shuffle=shuffle, drop_last=drop_last, pin_memory=pin_memory,
                            persistent_workers=persistent_workers, in_order=in_order, collate_fn=collate_fn,
                            worker_init_fn=worker_init_fn, generator=generator)
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            _check_stream_options(shuffle, sampler, batch_sampler)
        shuffle = bool(shuffle)
        batch_size, sampler, batch_sampler = _samplers(dataset, iterable, batch_size, shuffle, sampler, batch_sampler,
                                                       drop_last, generator)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterable = iterable
        self._auto_collation = batch_sampler is not None
        self._index_sampler = batch_sampler if self._auto_collation else sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None
        self._initialized = True

    def __setattr__(self, attr, value):
        if attr in DataLoader._FROZEN and self.__dict__.get("_initialized"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, value)

    def __iter__(self):
        if self.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", UserWarning, stacklevel=2)
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if not self.persistent_workers:
            return _ThreadedIter(self)
        if self._iterator is None:
            self._iterator = _ThreadedIter(self)
        else:
            self._iterator._reset()
        return self._iterator

    def __len__(self) -> int:
        """The number of batches per epoch (samples when ``batch_size`` is None); for an IterableDataset it
        needs ``len(dataset)``."""
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)
