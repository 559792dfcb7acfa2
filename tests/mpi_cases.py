"""Multi-process test cases: a test module registers cases with ``@case``, runs them all in one MPI job
(``mpiexec -n N python tests/test_global_x.py``) and pytest checks each case's result on every rank.

Every rank runs every case in order and records ``<name> ok`` (or ``FAIL``, with the traceback on
stderr) in its own file of the directory ``$MPI_CASES_DIR`` (stdout of several ranks interleaves). A failing case re-raises, which aborts the job (Note [The world of processes] in
framework/world.py): a case that failed on one rank cannot leave the others waiting in a collective; the
cases after it are reported as not run. The tests skip when mpi4py or mpiexec is missing.
"""

from __future__ import annotations

import functools
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import traceback

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


class Cases:
    """The cases of one module, in definition order."""

    def __init__(self):
        self.fns = {}

    def __call__(self, fn):
        self.fns[fn.__name__] = fn
        return fn

    def add(self, name: str, fn) -> None:
        self.fns[name] = fn

    def names(self) -> list:
        return list(self.fns)

    def main(self) -> None:
        """Run every case on this rank (the module's ``__main__``)."""
        import oneflow_lite as flow
        rank = flow.env.get_rank()
        only = os.environ.get("MPI_CASES_ONLY")
        out_dir = os.environ.get("MPI_CASES_DIR")
        log = open(os.path.join(out_dir, f"rank{rank}.txt"), "w") if out_dir else sys.stdout
        for name, fn in self.fns.items():
            if only and name not in only.split(","):
                continue
            try:
                fn()
            except BaseException:
                sys.stderr.write(f"case {name} failed on rank {rank}:\n{traceback.format_exc()}")
                log.write(f"{name} FAIL\n")
                log.flush()
                raise
            log.write(f"{name} ok\n")
            log.flush()


def mpi_available() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return shutil.which("mpiexec") is not None or (pathlib.Path(sys.executable).parent / "mpiexec").exists()


def mpiexec() -> str:
    local = pathlib.Path(sys.executable).parent / "mpiexec"
    return str(local) if local.exists() else shutil.which("mpiexec")


def run_mpi(args: list, n: int, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python args...`` as an MPI job of ``n`` processes from the repository root."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run([mpiexec(), "-n", str(n), sys.executable, *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


@functools.cache
def _results(path: str, n: int) -> tuple:
    with tempfile.TemporaryDirectory() as d:
        try:
            proc = run_mpi([path], n, env={"MPI_CASES_DIR": d})
            out, err, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            out, err, rc = str(e.stdout), str(e.stderr) + "\n(timed out)", "timeout"
        seen = {}
        for rank in range(n):
            f = pathlib.Path(d) / f"rank{rank}.txt"
            for line in f.read_text().splitlines() if f.exists() else ():
                name, status = line.split()
                seen.setdefault(name, {})[rank] = status
    return seen, out, err, rc


def check_case(path: str, n: int, name: str) -> None:
    """Assert that case ``name`` of the module at ``path`` passed on all ``n`` ranks."""
    if not mpi_available():
        pytest.skip("mpi4py / mpiexec not installed (pip install -e '.[dist]')")
    seen, out, err, rc = _results(path, n)
    got = seen.get(name, {})
    if sorted(got) != list(range(n)) or any(v != "ok" for v in got.values()):
        tail = err[-6000:]
        pytest.fail(f"case {name} on {n} ranks: {got or 'not run'} (job exit {rc})\n{tail}")
