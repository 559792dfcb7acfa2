"""Threads: 8 workers run eager ops, backward and graph runs for a bounded time while another thread
registers and removes kernels, per-op handlers and fallbacks. Every result is checked against NumPy; no
thread raises or hangs; each thread's modes (grad mode, excluded keys) stay its own.
"""

import os
import threading
import time

import numpy as np

import oneflow_lite as flow
from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import ExcludeDispatchKeyGuard
from oneflow_lite.interpreters.op_interp_util import redispatch

WORKERS = 8
SECONDS = float(os.environ.get("FLOW_THREAD_SECONDS", "2.0"))
_ABOVE_PYTHON = (1 << (DispatchKey.Python + 1)) - 1


class Square(flow.nn.Graph):
    def build(self, a, b):
        return (a * b + a).relu()


def _relu_same(ctx, x):
    """A second relu kernel computing the same values: results never depend on which one runs."""
    return np.maximum(x, x.dtype.type(0))


def _pass_through(op_expr, ks, inputs, attrs, outputs):
    return redispatch(op_expr, ks & _ABOVE_PYTHON & ~(1 << DispatchKey.Python), inputs, attrs, outputs)


def _registrar(stop, errors, counts):
    """Registers and removes a relu kernel, a relu handler at the Python key and a fallback there."""
    try:
        while not stop.is_set():
            k = DISPATCHER.register_kernel("relu", "cpu", _relu_same, priority=10)
            h = DISPATCHER.register_impl("relu", DispatchKey.Python, _pass_through)
            f = DISPATCHER.register_fallback(DispatchKey.Python, _pass_through)
            time.sleep(0.0005)
            for reg in (f, h, k):
                reg.remove()
            counts["registrations"] += 3
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(("registrar", repr(e)))


def _check_eager(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    x, y = flow.tensor(a), flow.tensor(b)
    np.testing.assert_allclose(flow.matmul(x, y).relu().numpy(), np.maximum(a @ b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((x * 2 + 1).sum(1).numpy(), (a * 2 + 1).sum(1), rtol=1e-5)


def _check_backward(rng):
    a = rng.standard_normal(5)
    w = flow.tensor(a, requires_grad=True)
    (w * w * 3.0).relu().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 6 * a, rtol=1e-12)


def _check_modes(i):
    """Each thread changes its own modes; another thread's never leak in."""
    assert flow.is_grad_enabled() and tls.excluded() == 0
    w = flow.ones(2, requires_grad=True)
    if i % 2:
        with flow.no_grad():
            assert not flow.is_grad_enabled() and not (w * 2).requires_grad
    else:
        with ExcludeDispatchKeyGuard(DispatchKey.Autograd):
            assert tls.excluded() and not (w * 2).requires_grad
    assert flow.is_grad_enabled() and tls.excluded() == 0 and (w * 2).requires_grad


def _worker(i, stop, errors, counts, graph):
    rng = np.random.default_rng(i)
    try:
        while not stop.is_set():
            _check_eager(rng)
            _check_backward(rng)
            _check_modes(i)
            a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
            np.testing.assert_allclose(graph(flow.tensor(a), flow.tensor(b)).numpy(), np.maximum(a * b + a, 0),
                                       rtol=1e-5, atol=1e-6)
            counts[i] += 1
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append((i, repr(e)))


def _registrations():
    return ({k: tuple(v) for k, v in DISPATCHER.find_entry("relu").impls.items()},
            {k: tuple(v) for k, v in DISPATCHER.fallbacks().items()})


def test_eight_threads_against_a_registering_thread():
    stop = threading.Event()
    errors, counts = [], {i: 0 for i in range(WORKERS)}
    counts["registrations"] = 0
    relu_impls, fallbacks = _registrations()
    graphs = [Square() for _ in range(2)]  # two graphs shared by the workers
    for g in graphs:
        g(flow.ones(2, 3), flow.ones(2, 3))
    threads = [threading.Thread(target=_worker, args=(i, stop, errors, counts, graphs[i % 2]), daemon=True)
               for i in range(WORKERS)]
    threads.append(threading.Thread(target=_registrar, args=(stop, errors, counts), daemon=True))
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (deadlock?)"
    assert errors == []
    assert all(counts[i] > 0 for i in range(WORKERS)) and counts["registrations"] > 0, counts
    assert _registrations() == (relu_impls, fallbacks)
    assert flow.relu(flow.tensor([-1.0, 2.0])).numpy().tolist() == [0.0, 2.0]
