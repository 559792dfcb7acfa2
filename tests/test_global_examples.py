"""Smoke tests, under MPI jobs of 2 (and 4) processes, of the scale-out examples, the data-parallel demo
(``python -m oneflow_lite demo --nproc 2``) and the communication benchmark."""

import os
import re
import subprocess
import sys

import pytest
from mpi_cases import ROOT, mpi_available, run_mpi

pytestmark = pytest.mark.skipif(not mpi_available(), reason="mpi4py / mpiexec not installed")


def _accuracy(out):
    m = re.search(r"test accuracy: (\d+\.\d\d)%", out)
    assert m, out
    return float(m.group(1))


def test_train_digits_ddp_and_global_agree_on_2_ranks():
    ddp = run_mpi(["examples/train_digits_ddp.py", "--epochs", "2"], 2)
    glob = run_mpi(["examples/train_digits_ddp.py", "--epochs", "2", "--global"], 2)
    assert ddp.returncode == 0 and glob.returncode == 0, ddp.stderr + glob.stderr
    assert re.search(r"^epoch 2/2: loss \d\.\d{4}  train acc .*\(.* s, 2 process\(es\)\)$", ddp.stdout, re.MULTILINE)
    assert "(DDP, 2 process(es))" in ddp.stdout and "(global tensors, 2 process(es))" in glob.stdout
    assert _accuracy(ddp.stdout) == _accuracy(glob.stdout) > 50
    losses = [re.findall(r"loss (\d\.\d{4})", p.stdout) for p in (ddp, glob)]
    assert losses[0] == losses[1]  # the same training, by two routes


def test_tensor_parallel_mlp_example_matches_one_process():
    proc = run_mpi(["examples/tensor_parallel_mlp.py", "--steps", "6"], 2)
    assert proc.returncode == 0, proc.stderr
    assert "hidden activations (oneflow_lite.sbp.split(dim=1),), output (oneflow_lite.sbp.partial_sum,)" in proc.stdout
    m = re.search(r"largest loss difference (\S+), largest parameter difference (\S+)", proc.stdout)
    assert m and float(m.group(1)) < 1e-5 and float(m.group(2)) < 1e-5


def test_tensor_parallel_mlp_example_hybrid_on_4_ranks():
    proc = run_mpi(["examples/tensor_parallel_mlp.py", "--steps", "3", "--hybrid"], 4)
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"largest loss difference (\S+), largest parameter difference (\S+)", proc.stdout)
    assert m and float(m.group(1)) < 1e-5 and float(m.group(2)) < 1e-5


def _demo(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "oneflow_lite", "demo", *args], capture_output=True, text=True,
                          timeout=600, env=env, cwd=ROOT)


def test_demo_nproc_2_trains_data_parallel_and_prints_the_same_summary():
    dp = _demo("--nproc", "2", "--epochs", "2")
    one = _demo("--epochs", "2")
    assert dp.returncode == 0, dp.stderr
    assert "data parallel over 2 processes: each batch split(0), parameters broadcast" in dp.stdout
    for mode in ("eager", "graph"):
        assert re.search(rf"^\[{mode}, 2 ranks\] epoch 2/2  loss ", dp.stdout, re.M)
    assert dp.stdout.count("summary\n") == 1  # rank 0 prints
    assert re.search(r"^\s+eager, 2 ranks\s+graph, 2 ranks$", dp.stdout, re.M)
    rows = {}
    for name, out in (("dp", dp.stdout), ("one", one.stdout)):
        summary = out[out.index("summary\n"):]
        rows[name] = {key: re.search(rf"^{key}\s+(\S+)\s+(\S+)$", summary, re.M).groups()
                      for key in ("test accuracy", r"training loss \(last epoch\)")}
    assert rows["dp"] == rows["one"]  # the same global batches, the same training, eagerly and as a graph
    assert "the trained parameters" in dp.stdout


def test_bench_comm_quick_prints_its_rows():
    proc = subprocess.run([sys.executable, "benchmarks/bench_comm.py", "--quick"], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "flow.comm.all_reduce vs raw mpi4py Allreduce" in out
    assert re.search(r"^\s+global: 1 rank\s+\S+ ms, 2 ranks\s+\S+ ms, speedup \S+x", out, re.MULTILINE)
    assert re.search(r"^\s+ddp: 1 rank", out, re.MULTILINE)
    assert re.search(r"2 rank\(s\)\s+add: local\s+\S+ us, global\s+\S+ us", out)
