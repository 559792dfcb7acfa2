"""Eager dispatch overhead: microseconds per call of ``flow.relu`` and ``flow.add`` on
4-element float32 tensors, beside the NumPy expressions they compute, measured in the same run.

Run: ``python benchmarks/bench_eager.py``. Each figure is the median of 7 timings of a
loop calibrated to last at least 0.2 s, with the garbage collector off while timing.
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
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import oneflow_lite as flow

MIN_SECONDS = 0.2
REPEATS = 7


def per_call_us(fn) -> float:
    """Median over REPEATS timings of a loop of ``fn()`` lasting at least MIN_SECONDS, in µs per call."""
    fn()  # warm the caches (functor construction, meta inference, kernel choice)
    number = 1
    while True:
        elapsed = _time_loop(fn, number)
        if elapsed >= MIN_SECONDS:
            break
        number = max(number * 2, int(number * MIN_SECONDS / max(elapsed, 1e-9) * 1.1))
    timings = [_time_loop(fn, number) for _ in range(REPEATS)]
    return statistics.median(timings) / number * 1e6


def _time_loop(fn, number: int) -> float:
    loop = range(number)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in loop:
            fn()
        return time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()


def main() -> int:
    a = np.array([-1.5, 0.5, 2.0, -3.0], dtype=np.float32)
    b = np.array([1.0, -2.0, 0.25, 4.0], dtype=np.float32)
    x, y = flow.tensor(a), flow.tensor(b)
    assert x.dtype is flow.float32 and x.shape == (4,)
    np.testing.assert_array_equal(flow.relu(x).numpy(), np.maximum(a, 0))
    np.testing.assert_array_equal(flow.add(x, y).numpy(), a + b)
    rows = [("flow.relu(x)", per_call_us(lambda: flow.relu(x)), "np.maximum(x, 0)",
             per_call_us(lambda: np.maximum(a, 0))),
            ("flow.add(x, y)", per_call_us(lambda: flow.add(x, y)), "x + y", per_call_us(lambda: a + b))]
    rows.append(("backward, per node", *_backward_per_node_us()))

    print(f"oneflow_lite eager dispatch, 4-element float32 tensors (median of {REPEATS}, loops >= {MIN_SECONDS} s, "
          f"GC off)")
    print(f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}")
    header = f"{'call':<20} {'us/call':>9}   {'NumPy':<24} {'us/call':>9}   {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for name, us, np_name, np_us in rows:
        print(f"{name:<20} {us:>9.3f}   {np_name:<24} {np_us:>9.3f}   {us / np_us:>6.1f}x")
    return 0


def _backward_per_node_us():
    """The backward of bench_autograd's 1,000-op chain, per node, beside its hand-written NumPy backward."""
    import bench_autograd as chain

    a = np.array([0.5, 1.5, -0.25, 2.0], dtype=np.float32)
    b = np.array([0.01, 0.02, 0.03, 0.04], dtype=np.float32)
    x, c = flow.tensor(a).requires_grad_(), flow.tensor(b)
    chain.forward(x, c).backward()
    np.testing.assert_allclose(x.grad.numpy(), chain.numpy_backward(chain.numpy_forward(a, b)), rtol=1e-5)
    bwd = chain.timed(lambda loss: loss.backward(), setup=lambda: chain.forward(x, c)) / (chain.CHAIN + 2)
    np_bwd = chain.timed(chain.numpy_backward, setup=lambda: chain.numpy_forward(a, b)) / chain.CHAIN
    return bwd * 1e6, f"{chain.CHAIN}-op chain backward", np_bwd * 1e6


if __name__ == "__main__":
    sys.exit(main())
