"""Communication and scale-out benchmarks, each an MPI job started by this script (``mpiexec``).

Rows:

- all-reduce throughput: ``flow.comm.all_reduce`` on a float32 tensor vs raw mpi4py ``Allreduce`` (in place)
  on a buffer of the same size, in the same job, interleaved; 2 ranks; goal: >= 0.9x of raw from 1 MB (a
  small message pays the shape check's round trip; also shown without the check);
- data-parallel speedup: one training step (forward, backward, SGD update) of a matmul-bound MLP on a global
  batch split(0) over 2 ranks vs the same global batch on 1 rank, with global tensors and with
  DistributedDataParallel (both all-reduce the gradients in buckets overlapping backward); goal: >= 1.7x;
- the global interpreter's overhead per op on tiny (4-element) tensors: ``x + x`` and ``relu(x)`` on global
  tensors (split, on 1 and 2 ranks) vs the same calls on local tensors.

Run: ``python benchmarks/bench_comm.py [--quick] [--json PATH]``. Every process uses one BLAS thread. Each
figure is a median over repetitions; the machine's other load shows in them, the ratios within one job less.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
RESULT = "BENCH_RESULT "
DP_GOAL = 1.7  # data-parallel speedup, 2 ranks vs 1


def _median_time(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


# ---- workers (run inside the MPI job) -------------------------------------------------------------------
def worker_allreduce(quick):
    from mpi4py import MPI

    import oneflow_lite as flow
    from oneflow_lite.comm import collectives
    comm = MPI.COMM_WORLD
    rows = []

    def unchecked(t):
        collectives.CHECK_SHAPES = False
        try:
            flow.comm.all_reduce(t)
        finally:
            collectives.CHECK_SHAPES = True
    for n in ([1 << 10, 1 << 18] if quick else [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22]):
        t = flow.ones(n)
        raw = np.ones(n, np.float32)
        reps = 5 if n >= 1 << 20 else 30
        flow_times, raw_times, unchecked_times = [], [], []
        for _ in range(3 if quick else 7):  # interleaved rounds
            comm.Barrier()
            flow_times.append(_median_time(lambda t=t: flow.comm.all_reduce(t), reps))
            comm.Barrier()
            raw_times.append(_median_time(lambda raw=raw: comm.Allreduce(MPI.IN_PLACE, raw), reps))
            comm.Barrier()
            unchecked_times.append(_median_time(lambda t=t: unchecked(t), reps))
        f, r, u = statistics.median(flow_times), statistics.median(raw_times), statistics.median(unchecked_times)
        rows.append({"elements": n, "bytes": 4 * n, "flow_s": f, "raw_s": r, "unchecked_s": u,
                     "flow_GBps": 4 * n / f / 1e9, "raw_GBps": 4 * n / r / 1e9, "ratio": r / f,
                     "unchecked_ratio": r / u})
    return rows


def _mlp_step_setup(mode, quick):
    import oneflow_lite as flow
    from oneflow_lite import nn
    width, batch = (256, 256) if quick else (1024, 1024)
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 10))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    r, n = flow.env.get_rank(), flow.env.get_world_size()
    xs, ys = np.array_split(x, n)[r], np.array_split(y, n)[r]
    if mode == "global":
        p = flow.placement.all("cpu")
        model.to_global(p, flow.sbp.broadcast)
        xi = flow.tensor(xs).to_global(p, flow.sbp.split(0))
        yi = flow.tensor(ys).to_global(p, flow.sbp.split(0))
    else:
        model = nn.parallel.DistributedDataParallel(model)
        xi, yi = flow.tensor(xs), flow.tensor(ys)
    opt = flow.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xi), yi)
        loss.backward()
        opt.step()
    return step


def worker_dp(quick):
    from mpi4py import MPI
    out = {}
    for mode in ("global", "ddp"):
        step = _mlp_step_setup(mode, quick)
        step()
        MPI.COMM_WORLD.Barrier()
        out[mode] = _median_time(step, 3 if quick else 7)
    return out


def worker_overhead(quick):
    import oneflow_lite as flow
    p = flow.placement.all("cpu")
    x = flow.ones(4 * flow.env.get_world_size())
    g = x.to_global(p, flow.sbp.split(0))
    n = 2000 if quick else 20000
    out = {}
    for name, fn in (("add", lambda t: t + t), ("relu", lambda t: flow.relu(t))):
        fn(x), fn(g)  # warm the caches
        t_local = _per_call(lambda fn=fn: fn(x), n)
        t_global = _per_call(lambda fn=fn: fn(g), n)
        out[name] = {"local_us": t_local * 1e6, "global_us": t_global * 1e6}
    return out


def _per_call(fn, n):
    best = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - t) / n)
    return statistics.median(best)


WORKERS = {"allreduce": worker_allreduce, "dp": worker_dp, "overhead": worker_overhead}


def run_worker(name, quick):
    import oneflow_lite as flow
    result = WORKERS[name](quick)
    if flow.env.get_rank() == 0:
        print(RESULT + json.dumps(result), flush=True)


# ---- driver ---------------------------------------------------------------------------------------------
def _launch(name, nproc, quick):
    from oneflow_lite.distributed.launch import find_mpiexec
    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise SystemExit("bench_comm: mpiexec not found; pip install -e '.[dist]' (mpi4py and mpich)")
    cmd = [mpiexec, "-n", str(nproc), sys.executable, __file__, "--worker", name] + (["--quick"] if quick else [])
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=1800)
    for line in proc.stdout.splitlines():
        if RESULT in line:
            return json.loads(line.split(RESULT, 1)[1])
    raise SystemExit(f"bench_comm: worker {name} on {nproc} ranks failed:\n{proc.stderr[-3000:]}")


def _report(allreduce, dp1, dp2, over1, over2):
    print("all-reduce, 2 ranks (float32, in place): flow.comm.all_reduce vs raw mpi4py Allreduce; 'unchecked':")
    print("with ONEFLOW_LITE_COMM_CHECK=0 (no shape check, Note [The shape check of collectives])")
    print(f"{'bytes':>10} {'flow us':>9} {'raw us':>9} {'flow GB/s':>10} {'raw GB/s':>10} {'flow/raw':>9} "
          f"{'unchecked':>10}  goal >= 0.90 from 1 MB")
    for r in allreduce:
        goal = "holds" if r["ratio"] >= 0.9 else ("NO" if r["bytes"] >= 1 << 20 else "-")
        print(f"{r['bytes']:>10} {r['flow_s'] * 1e6:>9.1f} {r['raw_s'] * 1e6:>9.1f} {r['flow_GBps']:>10.3f} "
              f"{r['raw_GBps']:>10.3f} {r['ratio']:>8.2f}x {r['unchecked_ratio']:>9.2f}x  {goal}")
    print("\ndata-parallel MLP step (same global batch): 1 rank vs 2 ranks")
    for mode in ("global", "ddp"):
        s = dp1[mode] / dp2[mode]
        print(f"  {mode:>6}: 1 rank {dp1[mode] * 1e3:8.1f} ms, 2 ranks {dp2[mode] * 1e3:8.1f} ms, speedup "
              f"{s:.2f}x  goal >= {DP_GOAL:.2f}: {'holds' if s >= DP_GOAL else 'NO'}")
    print("\nglobal interpreter overhead per op on 4-element tensors (split(0))")
    for n, over in ((1, over1), (2, over2)):
        for op, v in over.items():
            print(f"  {n} rank(s) {op:>5}: local {v['local_us']:7.1f} us, global {v['global_us']:7.1f} us, "
                  f"overhead {v['global_us'] - v['local_us']:7.1f} us ({v['global_us'] / v['local_us']:.1f}x)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repetitions")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(args.worker, args.quick)
        return 0
    figures = {"allreduce": _launch("allreduce", 2, args.quick), "dp_1": _launch("dp", 1, args.quick),
               "dp_2": _launch("dp", 2, args.quick), "overhead_1": _launch("overhead", 1, args.quick),
               "overhead_2": _launch("overhead", 2, args.quick)}
    _report(figures["allreduce"], figures["dp_1"], figures["dp_2"], figures["overhead_1"], figures["overhead_2"])
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
