"""``python -m oneflow_lite.distributed.launch --nproc_per_node N train.py [args]``: start an MPI job.

A thin wrapper over ``mpiexec -n N python train.py [args]`` (OneFlow's and PyTorch's launcher arguments are
accepted; the processes learn their rank from MPI, read by ``flow.env`` and ``flow.distributed``). One
machine only: the MPI implementation installed from the package registry (``pip install mpi4py mpich``) runs
the processes of one node. The exit status is the job's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m oneflow_lite.distributed.launch",
                                description="Run a training script as an MPI job of N processes on this machine.")
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int, default=1,
                   help="the number of processes to start (default: 1)")
    p.add_argument("--nnodes", type=int, default=1, help="the number of machines (only 1 is supported)")
    p.add_argument("--node_rank", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--master_addr", default="127.0.0.1", help=argparse.SUPPRESS)
    p.add_argument("--master_port", type=int, default=29500, help=argparse.SUPPRESS)
    p.add_argument("--mpiexec", default=None, help="the mpiexec to run (default: the one next to this Python, "
                                                    "else the first on PATH)")
    p.add_argument("script", help="the training script")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def find_mpiexec() -> str | None:
    local = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return local if os.path.exists(local) else shutil.which("mpiexec")


def command(args) -> list:
    """The mpiexec command line of parsed launcher ``args``."""
    mpiexec = args.mpiexec or find_mpiexec()
    if mpiexec is None:
        raise SystemExit("launch: mpiexec not found; install an MPI with pip install 'oneflow_lite[dist]' "
                         "(mpi4py and mpich)")
    return [mpiexec, "-n", str(args.nproc_per_node), sys.executable, args.script, *args.script_args]


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.nnodes != 1:
        raise SystemExit(f"launch: --nnodes {args.nnodes}: only one machine is supported")
    if args.nproc_per_node < 1:
        raise SystemExit(f"launch: --nproc_per_node must be at least 1, got {args.nproc_per_node}")
    return subprocess.call(command(args))


if __name__ == "__main__":
    sys.exit(main())
