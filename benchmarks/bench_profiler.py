"""The cost of watching ops: microseconds per call of ``flow.relu`` / ``flow.add`` on 4-element float32 tensors
without any mode, inside ``flow.profiler.profile`` (with and without ``record_shapes``), inside a Python dispatch
mode that only passes the call on, and inside ``FlopCounterMode``, beside the NumPy expression, in the same run.

Run: ``python benchmarks/bench_profiler.py [--calls N]``. Each figure is the median of 7 timings of a loop of N
calls (default 20,000) with the garbage collector off; a profiled loop runs inside one recording (the records of
the loop are kept, and the events are built after the timing, when the profile ends).
"""

import os

# Before NumPy is imported: one BLAS / OpenMP thread, so timings do not depend on the machine's core count.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse
import contextlib
import gc
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # run from a checkout without installing
import oneflow_lite as flow
from oneflow_lite.utils.flop_counter import FlopCounterMode

REPEATS = 7


class PassMode(flow.DispatchMode):
    """A mode that only runs each op (the cost of the Python key itself)."""

    def __flow_dispatch__(self, op, types, args, kwargs):
        return op(*args, **kwargs)


def _timed_loop(fn, calls: int, context) -> float:
    """Seconds for ``calls`` calls of ``fn`` inside ``context()`` (entered and left outside the timing)."""
    loop = range(calls)
    gc.disable()
    try:
        with context():
            start = time.perf_counter()
            for _ in loop:
                fn()
            elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return elapsed


def per_call_us(fn, calls: int, context=contextlib.nullcontext) -> float:
    """Median over REPEATS loops of ``calls`` calls of ``fn`` inside ``context()``, in µs per call."""
    _timed_loop(fn, min(calls, 100), context)  # warm the caches (functors, inference, kernel choice)
    return statistics.median(_timed_loop(fn, calls, context) for _ in range(REPEATS)) / calls * 1e6


CONTEXTS = [
    ("eager, no mode", contextlib.nullcontext),
    ("profile()", lambda: flow.profiler.profile()),
    ("profile(record_shapes=False)", lambda: flow.profiler.profile(record_shapes=False)),
    ("DispatchMode passing through", PassMode),
    ("FlopCounterMode", lambda: FlopCounterMode(display=False)),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Per-op cost of the profiler and of Python dispatch modes.")
    parser.add_argument("--calls", type=int, default=20000, help="calls per timed loop (default: 20000)")
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error(f"--calls must be at least 1, got {args.calls}")
    a = np.array([-1.5, 0.5, 2.0, -3.0], dtype=np.float32)
    b = np.array([1.0, -2.0, 0.25, 4.0], dtype=np.float32)
    x, y = flow.tensor(a), flow.tensor(b)
    with flow.profiler.profile() as prof:
        np.testing.assert_array_equal(flow.relu(x).numpy(), np.maximum(a, 0))
    assert [e.name for e in prof.events()] == ["relu"]
    ops = [("flow.relu(x)", lambda: flow.relu(x), "np.maximum(x, 0)", lambda: np.maximum(a, 0)),
           ("flow.add(x, y)", lambda: flow.add(x, y), "np.add(x, y)", lambda: np.add(a, b))]
    print(f"per-op cost of watching ops, 4-element float32 tensors (median of {REPEATS} loops of {args.calls} calls, "
          f"GC off)")
    print(f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}")
    header = f"{'call':<16} {'context':<30} {'us/call':>9} {'+us vs eager':>13} {'vs NumPy':>9}"
    print(header)
    print("-" * len(header))
    for name, fn, np_name, np_fn in ops:
        np_us = per_call_us(np_fn, args.calls)
        eager_us = None
        for context_name, context in CONTEXTS:
            us = per_call_us(fn, args.calls, context)
            eager_us = us if eager_us is None else eager_us
            print(f"{name:<16} {context_name:<30} {us:>9.3f} {us - eager_us:>+13.3f} {us / np_us:>8.1f}x")
        print(f"{np_name:<16} {'NumPy':<30} {np_us:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
