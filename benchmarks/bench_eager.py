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


def _flow_add_available(x, y) -> bool:
    """Whether ``flow.add`` runs (it is being written; until then its row shows n/a)."""
    add = getattr(flow, "add", None)
    if add is None:
        return False
    try:
        add(x, y)
    except Exception:  # noqa: BLE001 - any failure means there is no usable flow.add to time
        return False
    return True


def main() -> int:
    a = np.array([-1.5, 0.5, 2.0, -3.0], dtype=np.float32)
    b = np.array([1.0, -2.0, 0.25, 4.0], dtype=np.float32)
    x, y = flow.tensor(a), flow.tensor(b)
    assert x.dtype is flow.float32 and x.shape == (4,)
    np.testing.assert_array_equal(flow.relu(x).numpy(), np.maximum(a, 0))

    rows = [("flow.relu(x)", lambda: flow.relu(x), "np.maximum(x, 0)", lambda: np.maximum(a, 0))]
    if _flow_add_available(x, y):
        np.testing.assert_array_equal(flow.add(x, y).numpy(), a + b)
        rows.append(("flow.add(x, y)", lambda: flow.add(x, y), "x + y", lambda: a + b))
    else:
        rows.append(("flow.add(x, y)", None, "x + y", lambda: a + b))

    print(f"oneflow_lite eager dispatch, 4-element float32 tensors (median of {REPEATS}, loops >= {MIN_SECONDS} s, "
          f"GC off)")
    print(f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}")
    header = f"{'call':<16} {'us/call':>9}   {'NumPy':<17} {'us/call':>9}   {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for name, fn, np_name, np_fn in rows:
        np_us = per_call_us(np_fn)
        if fn is None:
            print(f"{name:<16} {'n/a':>9}   {np_name:<17} {np_us:>9.3f}   {'n/a':>7}")
            continue
        us = per_call_us(fn)
        print(f"{name:<16} {us:>9.3f}   {np_name:<17} {np_us:>9.3f}   {us / np_us:>6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
