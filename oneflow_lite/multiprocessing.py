"""``flow.multiprocessing`` (``torch.multiprocessing``): Python's ``multiprocessing`` with PyTorch's additions that
scripts call: ``spawn`` (run ``fn(rank, *args)`` in ``nprocs`` processes and raise if one fails) and the tensor
sharing strategy. oneflow_lite tensors pickle their data, so every strategy shares by copying."""

from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F403  (torch.multiprocessing re-exports Python's)

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = ["file_descriptor"]


class ProcessRaisedException(Exception):  # noqa: N818  (PyTorch's name)
    """A process started by ``spawn`` exited with an error."""


def get_all_sharing_strategies() -> set:
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"set_sharing_strategy: expected one of {sorted(_STRATEGIES)}, got {new_strategy!r}")
    _strategy[0] = new_strategy


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)``; with ``join``, wait for them and raise
    ``ProcessRaisedException`` naming the first that failed (otherwise return the processes)."""
    context = multiprocessing.get_context(start_method)
    processes = [context.Process(target=fn, args=(i, *args), daemon=daemon) for i in range(nprocs)]
    for p in processes:
        p.start()
    if not join:
        return processes
    for p in processes:
        p.join()
    for i, p in enumerate(processes):
        if p.exitcode != 0:
            raise ProcessRaisedException(f"process {i} terminated with exit code {p.exitcode}")
    return None
