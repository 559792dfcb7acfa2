"""``flow.env``: the processes of the job (Note [The world of processes] in framework/world.py).

Started with ``mpiexec -n N python train.py`` (or ``python -m oneflow_lite.distributed.launch
--nproc_per_node N train.py``), a program is one of N ranks; started plainly, it is rank 0 of 1.
"""

from __future__ import annotations

from oneflow_lite.framework.placement import placement
from oneflow_lite.framework.world import world

__all__ = ["all_device_placement", "barrier", "get_local_rank", "get_node_size", "get_rank", "get_world_size",
           "is_multi_process"]


def get_rank() -> int:
    """This process's rank (0 .. world size - 1)."""
    return world().rank


def get_world_size() -> int:
    """The number of processes of the job."""
    return world().size


def get_local_rank() -> int:
    """This process's rank among the processes of its machine."""
    return world().local_rank


def get_node_size() -> int:
    """The number of machines of the job (processes are counted per machine by their local rank)."""
    w = world()
    return len({name for name in w.all.allgather_object(_hostname())})


def is_multi_process() -> bool:
    return world().size > 1


def all_device_placement(device_type: str = "cpu") -> placement:
    """The 1-D placement of every rank (``flow.placement.all(device_type)``)."""
    return placement.all(device_type)


def barrier() -> None:
    """Wait until every rank gets here."""
    world().all.barrier()


def _hostname() -> str:
    import socket
    return socket.gethostname()
