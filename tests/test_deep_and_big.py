"""Deep and big: a backward through 100,000 chained ops and a 10,000-op graph, without recursion limits.

The figures (printed with ``pytest -s``) on the development machine (2 cores, shared): see the test
docstrings.
"""

import gc
import sys
import time

import numpy as np

import oneflow_lite as flow

CHAIN = 100_000
GRAPH_OPS = 10_000


def test_backward_through_100000_chained_ops():
    """About 2 s forward and backward (the recursion limit stays at its default)."""
    limit = sys.getrecursionlimit()
    x = flow.tensor([1.0, 2.0, 3.0], dtype=flow.float64, requires_grad=True)
    start = time.perf_counter()
    y = x
    for i in range(CHAIN):
        y = y * 1.00001 if i % 2 else y + 0.5
    forward = time.perf_counter() - start
    y.sum().backward()
    backward = time.perf_counter() - start - forward
    assert sys.getrecursionlimit() == limit
    np.testing.assert_allclose(x.grad.numpy(), [1.00001 ** (CHAIN // 2)] * 3, rtol=1e-9)
    expected = np.array([1.0, 2.0, 3.0])
    for i in range(CHAIN):
        expected = expected * 1.00001 if i % 2 else expected + 0.5
    np.testing.assert_allclose(y.detach().numpy(), expected, rtol=1e-9)
    del y  # freeing the chain of 100,000 nodes must not overflow the C stack either
    gc.collect()
    print(f"\n{CHAIN} chained ops: forward {forward:.2f} s, backward {backward:.2f} s")


def test_a_chain_without_backward_is_freed_without_recursion():
    x = flow.ones(2, requires_grad=True)
    y = x
    for _ in range(CHAIN):
        y = y + 1.0
    del y
    gc.collect()


def test_a_10000_op_graph_captures_compiles_and_runs():
    """About 2 s to capture and compile, milliseconds per run."""

    class Long(flow.nn.Graph):
        def build(self, a):
            y = a
            for i in range(GRAPH_OPS):
                y = y * 0.999 if i % 2 else y + 0.001
            return y

    x = flow.tensor(np.linspace(-1.0, 1.0, 8))
    g = Long()
    start = time.perf_counter()
    out = g(x)
    first = time.perf_counter() - start
    start = time.perf_counter()
    out2 = g(x)
    run = time.perf_counter() - start
    expected = np.linspace(-1.0, 1.0, 8).astype(np.float32)
    for i in range(GRAPH_OPS):
        expected = expected * np.float32(0.999) if i % 2 else expected + np.float32(0.001)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4)
    np.testing.assert_array_equal(out.numpy(), out2.numpy())
    print(f"\n{GRAPH_OPS}-op graph: capture + compile + first run {first:.2f} s, next run {run * 1e3:.1f} ms")
