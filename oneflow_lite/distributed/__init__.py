"""``flow.distributed``: PyTorch's process-group API for a job of one process.

A script written for ``torchrun`` runs here as rank 0 of a world of 1: ``init_process_group`` records the
group, ``get_rank()`` is 0, ``get_world_size()`` 1, and the collectives leave their tensors as they are (the
sum, mean, min or max over one rank is the rank's own value). A world of more than one process is refused
with a clear error.
"""

from __future__ import annotations

import enum
import os

from oneflow_lite.framework.tensor import Tensor

__all__ = ["ReduceOp", "all_gather", "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend",
           "get_rank", "get_world_size", "init_process_group", "is_available", "is_initialized", "reduce"]

_group = {"backend": None}
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class ReduceOp(enum.Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


class _Work:
    """What an ``async_op=True`` collective returns: already complete."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return _group["backend"] is not None


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout=None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Start the default group: one process (``world_size`` and ``rank`` default to ``$WORLD_SIZE`` / ``$RANK``,
    else 1 and 0)."""
    if is_initialized():
        raise RuntimeError("trying to initialize the default process group twice!")
    if world_size == -1:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if rank == -1:
        rank = int(os.environ.get("RANK", "0"))
    if world_size != 1 or rank != 0:
        raise NotImplementedError(f"init_process_group: world_size={world_size}, rank={rank}: oneflow_lite runs a "
                                  f"process group of one process (world_size=1, rank=0) only")
    _group["backend"] = backend or "gloo"


def destroy_process_group(group=None) -> None:
    _group["backend"] = None


def _check() -> None:
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)


def get_rank(group=None) -> int:
    _check()
    return 0


def get_world_size(group=None) -> int:
    _check()
    return 1


def get_backend(group=None) -> str:
    _check()
    return _group["backend"]


def _done(async_op: bool):
    return _Work() if async_op else None


def barrier(group=None, async_op: bool = False, device_ids=None):
    _check()
    return _done(async_op)


def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Over one rank every reduction is the tensor itself: ``tensor`` is left as it is."""
    _check()
    return _done(async_op)


def reduce(tensor: Tensor, dst: int = 0, op=ReduceOp.SUM, group=None, async_op: bool = False):
    _check()
    return _done(async_op)


def broadcast(tensor: Tensor, src: int = 0, group=None, async_op: bool = False):
    _check()
    if src != 0:
        raise ValueError(f"broadcast: src={src} is not a rank of a world of 1")
    return _done(async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """``tensor_list[0]`` gets a copy of ``tensor`` (the one rank's contribution)."""
    _check()
    if len(tensor_list) != 1:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} entries for a world of 1")
    tensor_list[0].copy_(tensor)
    return _done(async_op)
