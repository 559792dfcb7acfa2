"""The processes this program runs as: MPI's ``COMM_WORLD`` when started by ``mpiexec``, else one process.

Note [The world of processes]
Every process of a job runs the same program (SPMD). The world is found on first use, never at import:
when the environment names an MPI job (``PMI_SIZE`` from MPICH's hydra, ``OMPI_COMM_WORLD_SIZE`` from Open
MPI, ``PMIX_RANK``), ``mpi4py`` is imported and ``MPI.COMM_WORLD`` is the world; otherwise the program is
rank 0 of a world of 1 and nothing imports ``mpi4py`` (importing the package never needs it). A world of
more than one process installs an exception hook: an exception no rank catches prints its traceback,
prefixed with the rank, and aborts the whole job (``MPI_Abort``), so the other ranks never wait forever in
a collective the failed rank will not enter.

Note [Buffers on the wire]
Collectives move NumPy buffers through mpi4py's buffer interface (upper-case methods: ``Allreduce``,
``Allgatherv``, ...), never pickled. Data movement sends raw bytes (any dtype); reductions use the MPI
type of the dtype, and float16 / bfloat16 are reduced in float32. Only small metadata (shapes, dtype
names) goes through the pickling lower-case methods.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback

import numpy as np

_MPI_ENV = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")
_lock = threading.Lock()
_world = None


class _Single:
    """The communicator of a group of one process: every collective returns its own input."""

    size = 1
    rank = 0


class Group:
    """A tuple of world ranks and the communicator they share (collectives on NumPy arrays).

    Every member must call each collective, in the same order; ``rank`` is this process's index in
    ``ranks``.
    """

    def __init__(self, ranks: tuple, comm, mpi):
        self.ranks = ranks
        self.size = len(ranks)
        self.comm = comm
        self.rank = comm.rank
        self._mpi = mpi
        self._max = None if mpi is None else mpi.MAX
        self._ops = None if mpi is None else {"sum": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN, "prod": mpi.PROD}

    def __repr__(self):
        return f"Group(ranks={list(self.ranks)}, rank={self.rank})"

    # ---- reductions ---------------------------------------------------------------------------------
    def _mpi_op(self, op: str):
        mpi_op = self._ops.get(op)
        if mpi_op is None:
            raise ValueError(f"collective reduction: unknown op '{op}'; expected sum, max, min or prod")
        return mpi_op

    def _reduce_args(self, a: np.ndarray, op: str):
        """``a`` contiguous in a dtype MPI reduces (Note [Buffers on the wire]), and the MPI op."""
        dt = a.dtype
        if dt.kind == "b":
            up = np.uint8
        elif dt.kind in "iu" or (dt.kind == "f" and dt.itemsize >= 4):
            up = dt
        else:  # float16, bfloat16
            up = np.float32
        return np.asarray(a, dtype=up, order="C"), self._mpi_op(op)

    def allreduce(self, a: np.ndarray, op: str = "sum") -> np.ndarray:
        """The elementwise reduction (``sum``, ``max``, ``min``, ``prod``) of ``a`` over the group."""
        if self.size == 1:
            return a.copy()
        src, mpi_op = self._reduce_args(a, op)
        out = np.empty_like(src)
        self.comm.Allreduce(src, out, op=mpi_op)
        return out.astype(a.dtype, copy=False)

    def allreduce_inplace(self, a: np.ndarray, op: str = "sum") -> bool:
        """All-reduce ``a`` in place when MPI can reduce its buffer as it is (contiguous, a 32 / 64-bit float or
        int dtype); False when it cannot (then use ``allreduce``)."""
        if self.size == 1:
            return True
        dt = a.dtype
        if not a.flags.c_contiguous or not a.flags.writeable or dt.kind not in "fiu" or dt.itemsize < 4:
            return False
        self.comm.Allreduce(self._mpi.IN_PLACE, a, op=self._mpi_op(op))
        return True

    def same_on_every_rank(self, both: np.ndarray) -> bool:
        """Whether every member passed the same int64 ``both``, values followed by their negations: one small
        all-reduce of the max (the values' max and the negated min agree only when they are all equal)."""
        if self.size == 1:
            return True
        out = np.empty_like(both)
        self.comm.Allreduce(both, out, op=self._max)
        o = out.tolist()
        n = len(o) // 2
        return o[:n] == [-v for v in o[n:]]

    def iallreduce(self, a: np.ndarray, op: str = "sum"):
        """Start an in-place all-reduce of contiguous ``a`` (float32, float64 or an int dtype); returns the
        request (``wait()`` it before reading ``a``), or None in a group of one."""
        if self.size == 1:
            return None
        return self.comm.Iallreduce(self._mpi.IN_PLACE, a, op=self._mpi_op(op))

    def progress(self, requests: list) -> None:
        """Let MPI progress the pending ``requests`` (non-blocking collectives advance inside MPI calls)."""
        if requests:
            self._mpi.Request.Testall(requests)

    def reduce_scatter(self, a: np.ndarray, counts: list, op: str = "sum") -> np.ndarray:
        """Reduce ``a`` (flat, contiguous blocks of ``counts`` elements per member) and keep this member's block."""
        if self.size == 1:
            return a.reshape(-1).copy()
        src, mpi_op = self._reduce_args(a.reshape(-1), op)
        out = np.empty(counts[self.rank], src.dtype)
        self.comm.Reduce_scatter(src, out, recvcounts=counts, op=mpi_op)
        return out.astype(a.dtype, copy=False)

    # ---- data movement (bytes) ----------------------------------------------------------------------
    def allgather(self, a: np.ndarray, counts: list) -> np.ndarray:
        """Every member's flat ``a`` (``counts[i]`` elements from member ``i``) concatenated in member order."""
        a = np.asarray(a, order="C")
        if self.size == 1:
            return a.reshape(-1).copy()
        out = np.empty(sum(counts), a.dtype)
        nb = a.dtype.itemsize
        bcounts = [c * nb for c in counts]
        self.comm.Allgatherv(_bytes(a), [_bytes(out), bcounts, _displs(bcounts), self._mpi.BYTE])
        return out

    def broadcast(self, a: np.ndarray, root: int = 0) -> np.ndarray:
        """``a`` of member ``root`` on every member (``a`` gives the shape and dtype elsewhere; it is written)."""
        a = np.asarray(a, order="C")
        if self.size > 1:
            self.comm.Bcast(_bytes(a), root=root)
        return a

    def alltoall(self, blocks: list) -> list:
        """``blocks[i]`` (a flat array) goes to member ``i``; returns the block received from each member.

        The sizes of the received blocks are exchanged first (a tiny Alltoall of counts)."""
        if self.size == 1:
            return [blocks[0].copy()]
        dtype = blocks[0].dtype
        nb = dtype.itemsize
        send_counts = np.array([b.size * nb for b in blocks], np.int64)
        recv_counts = np.empty_like(send_counts)
        self.comm.Alltoall(send_counts, recv_counts)
        send = np.concatenate([np.asarray(b, order="C").reshape(-1) for b in blocks]) if blocks else np.empty(0, dtype)
        recv = np.empty(int(recv_counts.sum()) // nb, dtype)
        sc, rc = send_counts.tolist(), recv_counts.tolist()
        self.comm.Alltoallv([_bytes(send), sc, _displs(sc), self._mpi.BYTE],
                            [_bytes(recv), rc, _displs(rc), self._mpi.BYTE])
        offsets = _displs([c // nb for c in rc])
        return [recv[o:o + c // nb] for o, c in zip(offsets, rc)]

    def send(self, a: np.ndarray, dst: int, tag: int = 0) -> None:
        self.comm.Send(_bytes(np.asarray(a, order="C")), dest=dst, tag=tag)

    def recv(self, out: np.ndarray, src: int, tag: int = 0) -> np.ndarray:
        self.comm.Recv(_bytes(out), source=src, tag=tag)
        return out

    # ---- metadata (small, pickled) -----------------------------------------------------------------
    def allgather_object(self, obj) -> list:
        """Every member's ``obj`` (small metadata only: it is pickled)."""
        if self.size == 1:
            return [obj]
        return self.comm.allgather(obj)

    def broadcast_object(self, obj, root: int = 0):
        if self.size == 1:
            return obj
        return self.comm.bcast(obj, root=root)

    def barrier(self) -> None:
        if self.size > 1:
            self.comm.Barrier()


def _bytes(a: np.ndarray) -> np.ndarray:
    """A flat uint8 view of a contiguous array (a 0-d or empty array included)."""
    return a.reshape(-1).view(np.uint8)


def _displs(counts: list) -> list:
    out, total = [], 0
    for c in counts:
        out.append(total)
        total += c
    return out




class World:
    """The job: this process's rank, the number of processes, and the groups made over its ranks."""

    def __init__(self, comm, mpi):
        self.comm = comm
        self.mpi = mpi
        self.rank = comm.rank
        self.size = comm.size
        self.local_rank = int(os.environ.get("MPI_LOCALRANKID", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK",
                                                                              os.environ.get("LOCAL_RANK", "0"))))
        self._groups = {tuple(range(self.size)): Group(tuple(range(self.size)), comm, mpi)}
        self._group_lock = threading.Lock()

    def group(self, ranks) -> Group:
        """The group of world ranks ``ranks`` (made on first use, collectively by its members only)."""
        ranks = tuple(int(r) for r in ranks)
        g = self._groups.get(ranks)
        if g is None:
            if self.rank not in ranks:
                raise RuntimeError(f"rank {self.rank} is not a member of the group of ranks {list(ranks)}")
            with self._group_lock:
                g = self._groups.get(ranks)
                if g is None:
                    if len(ranks) == 1:
                        comm = _Single()
                    else:
                        comm = self.comm.Create_group(self.comm.group.Incl(list(ranks)))
                    g = self._groups[ranks] = Group(ranks, comm, self.mpi)
        return g

    @property
    def all(self) -> Group:
        return self._groups[tuple(range(self.size))]


def _launched_by_mpi() -> bool:
    return any(int(os.environ.get(v, "0") or 0) > 1 or (v == "PMIX_RANK" and v in os.environ) for v in _MPI_ENV)


def _start_mpi() -> World:
    try:
        from mpi4py import MPI
    except ImportError:
        raise RuntimeError("this process was started as part of an MPI job (mpiexec), but mpi4py is not "
                           "installed: pip install 'oneflow_lite[dist]' (mpi4py and mpich)") from None
    world = World(MPI.COMM_WORLD, MPI)
    if world.size > 1:
        _install_abort_hook(world)
    return world


def _install_abort_hook(world: World) -> None:
    """Note [The world of processes]: an uncaught exception on one rank aborts the job with its message."""
    previous = sys.excepthook

    def abort_job(exc_type, exc, tb):
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        sys.stderr.write("".join(f"[rank {world.rank}] {line}\n" for line in text.rstrip("\n").split("\n")))
        sys.stderr.write(f"[rank {world.rank}] aborting the job of {world.size} processes\n")
        sys.stderr.flush()
        sys.stdout.flush()
        if exc_type is KeyboardInterrupt:
            previous(exc_type, exc, tb)
        time.sleep(0.5)  # let mpiexec forward the message before Abort kills the job (lost under load otherwise)
        world.comm.Abort(1)

    sys.excepthook = abort_job


def world() -> World:
    """The world of this process (Note [The world of processes]), found on first call."""
    global _world
    w = _world
    if w is None:
        with _lock:
            if _world is None:
                _world = _start_mpi() if _launched_by_mpi() else World(_SingleWorldComm(), None)
            w = _world
    return w


def is_multi_process() -> bool:
    """Whether this job has more than one process (without starting MPI when it was not launched by it)."""
    return _launched_by_mpi() and world().size > 1


class _SingleWorldComm(_Single):
    """COMM_WORLD of a job of one process."""
