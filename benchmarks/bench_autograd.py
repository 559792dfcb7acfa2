"""Autograd overhead: a 1,000-op chain of small ops on 4-element float32 tensors.

Rows: the forward per op without recording (``flow.no_grad()``), the forward per op
when recording (inputs require grad), and the backward per node; beside them the
same chain written in NumPy (forward, and a hand-written backward), measured in the
same run. The chain cycles through ``y * 1.0001``, ``y + c`` and ``relu(y)``.

Run: ``python benchmarks/bench_autograd.py``. Each figure is the median of 7 runs
with the garbage collector off while timing; a backward run times only
``loss.backward()`` on a freshly built graph.
"""

import os

# Before NumPy is imported: one BLAS / OpenMP thread, so timings do not depend on the machine's core count.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import gc
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # run from a checkout without installing
import oneflow_lite as flow

CHAIN = 1000
REPEATS = 7


def forward(x, c):
    y = x
    for i in range(CHAIN):
        k = i % 3
        if k == 0:
            y = y * 1.0001
        elif k == 1:
            y = y + c
        else:
            y = flow.relu(y)
    return y.sum()


def numpy_forward(a, b):
    ys = [a]
    y = a
    for i in range(CHAIN):
        k = i % 3
        if k == 0:
            y = y * np.float32(1.0001)
        elif k == 1:
            y = y + b
        else:
            y = np.maximum(y, 0)
        ys.append(y)
    return ys


def numpy_backward(ys):
    g = np.ones_like(ys[-1])
    for i in range(CHAIN - 1, -1, -1):
        k = i % 3
        if k == 0:
            g = g * np.float32(1.0001)
        elif k == 2:
            g = np.where(ys[i + 1] > 0, g, np.float32(0))
    return g


def timed(fn, setup=None) -> float:
    """Median over REPEATS of the seconds ``fn(setup())`` takes (setup untimed), GC off."""
    fn(setup() if setup else None)  # warm the caches
    times = []
    for _ in range(REPEATS):
        arg = setup() if setup else None
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            start = time.perf_counter()
            fn(arg)
            times.append(time.perf_counter() - start)
        finally:
            if gc_was_enabled:
                gc.enable()
    return statistics.median(times)


def main() -> int:
    a = np.array([0.5, 1.5, -0.25, 2.0], dtype=np.float32)
    b = np.array([0.01, 0.02, 0.03, 0.04], dtype=np.float32)
    x, c = flow.tensor(a).requires_grad_(), flow.tensor(b)

    # the chain's gradient against the hand-written NumPy backward
    forward(x, c).backward()
    np.testing.assert_allclose(x.grad.numpy(), numpy_backward(numpy_forward(a, b)), rtol=1e-5)

    def no_grad_forward(_):
        with flow.no_grad():
            forward(x, c)

    fwd_plain = timed(no_grad_forward) / CHAIN
    fwd_record = timed(lambda _: forward(x, c)) / CHAIN
    nodes = CHAIN + 2  # the chain, the sum and the leaf's AccumulateGrad
    bwd = timed(lambda loss: loss.backward(), setup=lambda: forward(x, c)) / nodes
    np_fwd = timed(lambda _: numpy_forward(a, b)) / CHAIN
    np_bwd = timed(lambda ys: numpy_backward(ys), setup=lambda: numpy_forward(a, b)) / CHAIN

    print(f"oneflow_lite autograd, a {CHAIN}-op chain (y*1.0001, y+c, relu) on 4-element float32 tensors "
          f"(median of {REPEATS}, GC off)")
    print(f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}")
    header = f"{'':<34} {'us':>8}   {'NumPy us':>9}   {'ratio':>7}"
    print(header)
    print("-" * len(header))
    rows = [("forward per op, no_grad", fwd_plain, np_fwd),
            ("forward per op, recording", fwd_record, np_fwd),
            ("backward per node", bwd, np_bwd)]
    for name, us, np_us in rows:
        print(f"{name:<34} {us * 1e6:>8.2f}   {np_us * 1e6:>9.2f}   {us / np_us:>6.1f}x")
    print(f"recording overhead per op: {(fwd_record - fwd_plain) * 1e6:.2f} us; "
          f"backward per node / forward per op (no_grad): {bwd / fwd_plain:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
