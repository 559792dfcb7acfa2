"""``flow.comm``: collectives on local tensors over the processes of the job (MPI through mpi4py).

Every rank of the group calls each collective, in the same order. Tensors move as raw buffers, never
pickled (Note [Buffers on the wire] in framework/world.py). Each collective first checks, with a small
metadata exchange, that the ranks pass tensors of the same shape and dtype; a mismatch raises the same
error, naming the op and every rank's tensor, on every rank. In a job of one process each collective is
the identity of its one rank.
"""

from oneflow_lite.comm.collectives import (
    all_gather,
    all_reduce,
    all_to_all,
    barrier,
    broadcast,
    gather,
    recv,
    reduce,
    reduce_scatter,
    scatter,
    send,
)

__all__ = ["all_gather", "all_reduce", "all_to_all", "barrier", "broadcast", "gather", "recv", "reduce",
           "reduce_scatter", "scatter", "send"]
