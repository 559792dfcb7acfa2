"""``flow.distributed``: PyTorch's process-group API over the job's processes (MPI through mpi4py).

A script started with ``mpiexec -n N python train.py`` (or ``python -m oneflow_lite.distributed.launch
--nproc_per_node N train.py``) is one of N ranks: ``init_process_group`` joins the MPI world (any backend
name is accepted: the transport is MPI), ``get_rank()`` / ``get_world_size()`` are its rank and size, and
the collectives run ``flow.comm``'s. A script started plainly is rank 0 of a world of 1: the collectives
leave their tensors as they are (the sum, mean, min or max over one rank is the rank's own value).
"""

from __future__ import annotations

import enum
import os

from oneflow_lite import comm
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.world import world

__all__ = ["ReduceOp", "all_gather", "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend",
           "get_rank", "get_world_size", "init_process_group", "is_available", "is_initialized", "reduce",
           "reduce_scatter"]

_group = {"backend": None}
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class ReduceOp(enum.Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "prod"
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
    """Join the job's processes: ``world_size`` and ``rank`` (default ``$WORLD_SIZE`` / ``$RANK``, else the
    MPI world's) must be the MPI world's."""
    if is_initialized():
        raise RuntimeError("trying to initialize the default process group twice!")
    w = world()
    if world_size == -1:
        world_size = int(os.environ.get("WORLD_SIZE", w.size))
    if rank == -1:
        rank = int(os.environ.get("RANK", w.rank))
    if world_size != w.size or rank != w.rank:
        raise NotImplementedError(f"init_process_group: world_size={world_size}, rank={rank}, but this job has "
                                  f"{w.size} process(es) and this is rank {w.rank}: the processes of a job are "
                                  f"started by MPI (mpiexec -n {world_size} python script.py, or python -m "
                                  f"oneflow_lite.distributed.launch --nproc_per_node {world_size} script.py)")
    _group["backend"] = backend or "mpi"


def destroy_process_group(group=None) -> None:
    _group["backend"] = None


def _check() -> None:
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)


def get_rank(group=None) -> int:
    _check()
    return world().rank


def get_world_size(group=None) -> int:
    _check()
    return world().size


def get_backend(group=None) -> str:
    _check()
    return _group["backend"]


def _done(async_op: bool):
    return _Work() if async_op else None


def _op(op) -> str:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"expected a flow.distributed.ReduceOp, got {op!r}")
    return "sum" if op is ReduceOp.AVG else op.value


def barrier(group=None, async_op: bool = False, device_ids=None):
    _check()
    comm.barrier()
    return _done(async_op)


def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``tensor`` becomes the reduction over the ranks (AVG: the sum divided by the world size)."""
    _check()
    comm.all_reduce(tensor, _op(op))
    if op is ReduceOp.AVG and world().size > 1:
        tensor.div_(world().size)
    return _done(async_op)


def reduce(tensor: Tensor, dst: int = 0, op=ReduceOp.SUM, group=None, async_op: bool = False):
    _check()
    comm.reduce(tensor, dst, _op(op))
    return _done(async_op)


def broadcast(tensor: Tensor, src: int = 0, group=None, async_op: bool = False):
    _check()
    if not 0 <= src < world().size:
        raise ValueError(f"broadcast: src={src} is not a rank of a world of {world().size}")
    comm.broadcast(tensor, src)
    return _done(async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """``tensor_list[i]`` gets rank ``i``'s ``tensor``."""
    _check()
    comm.all_gather(tensor_list, tensor)
    return _done(async_op)


def reduce_scatter(output: Tensor, input_list: list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    _check()
    comm.reduce_scatter(output, input_list, _op(op))
    return _done(async_op)
