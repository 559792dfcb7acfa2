"""Static graphs against eager execution and NumPy, measured in the same run.

Rows: a 20-op elementwise chain on (64, 64) float32 (add, mul, relu, neg, tanh, four times); the same
chain on 4-element tensors (per-op overhead); an MLP forward (64 x 256 -> 512 -> 10, float32); an MLP
train step (forward, backward, SGD update of the parameters in place). Each graph row also shows the
graph's capture-plus-compile time: the median over 5 new graphs of their first call (capture, compile
and one run).

Run: ``python benchmarks/bench_graph.py``. Each figure is the median of 7 timings of a loop calibrated to
last at least 0.2 s, with the garbage collector off while timing.
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
    fn()
    number = 1
    while True:
        elapsed = _time_loop(fn, number)
        if elapsed >= MIN_SECONDS:
            break
        number = max(number * 2, int(number * MIN_SECONDS / max(elapsed, 1e-9) * 1.1))
    return statistics.median(_time_loop(fn, number) for _ in range(REPEATS)) / number * 1e6


def _time_loop(fn, number: int) -> float:
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()


def first_call_ms(make_graph, *args, reset=None) -> float:
    """Median over 5 new graphs of the first call's time; ``reset()`` runs before each (untimed)."""
    times = []
    for _ in range(5):
        if reset is not None:
            reset()
        graph = make_graph()
        start = time.perf_counter()
        graph(*args)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


# ---- the elementwise chain --------------------------------------------------------------------------
def chain(x, y):
    h = x
    for _ in range(4):
        h = flow.tanh(-flow.relu((h + y) * y))
    return h


def np_chain(x, y):
    h = x
    for _ in range(4):
        h = np.tanh(-np.maximum((h + y) * y, 0))
    return h


def chain_rows(shape, label):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    x, y = flow.tensor(a), flow.tensor(b)
    chain(x, y)  # eager first: the functors are built, so the capture time is the graph's own
    build_ms = first_call_ms(lambda: flow.nn.Graph.trace(chain), x, y)
    g = flow.nn.Graph.trace(chain)
    np.testing.assert_array_equal(g(x, y).numpy(), chain(x, y).numpy())
    np.testing.assert_allclose(g(x, y).numpy(), np_chain(a, b), rtol=1e-6, atol=1e-6)
    return (label, per_call_us(lambda: chain(x, y)), per_call_us(lambda: g(x, y)),
            per_call_us(lambda: np_chain(a, b)), build_ms)


# ---- the MLP ------------------------------------------------------------------------------------------
class Linear:
    """A minimal module (flow.nn.Module does not exist yet): the Module API a graph uses."""

    def __init__(self, rng, n_in, n_out):
        self.weight = flow.tensor(rng.standard_normal((n_in, n_out)).astype(np.float32) * 0.05).requires_grad_()
        self.bias = flow.tensor(np.zeros(n_out, np.float32)).requires_grad_()
        self.training = True

    def named_parameters(self):
        return iter([("weight", self.weight), ("bias", self.bias)])

    def named_buffers(self):
        return iter([])

    def named_children(self):
        return iter([])

    def forward(self, x):
        return x @ self.weight + self.bias

    __call__ = forward


class MLP:
    def __init__(self, rng):
        self.fc1, self.fc2 = Linear(rng, 256, 512), Linear(rng, 512, 10)
        self.training = True

    def named_children(self):
        return iter([("fc1", self.fc1), ("fc2", self.fc2)])

    def named_parameters(self):
        return iter([(f"{c}.{n}", p) for c, m in self.named_children() for n, p in m.named_parameters()])

    def named_buffers(self):
        return iter([])

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def forward(self, x):
        return self.fc2(flow.relu(self.fc1(x)))

    __call__ = forward


def train_step(model, x, target):
    d = model(x) - target
    loss = (d * d).sum() * (1.0 / x.shape[0])
    loss.backward()
    with flow.no_grad():
        for p in model.parameters():
            p.sub_(p.grad * 0.01)
            p.grad = None
    return loss


class Forward(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


class TrainStep(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x, target):
        return train_step(self.model, x, target)


def np_train_step(params, x, target):
    w1, b1, w2, b2 = params
    h = x @ w1 + b1
    r = np.maximum(h, 0)
    d = r @ w2 + b2 - target
    loss = (d * d).sum() * (1.0 / x.shape[0])
    g = d * (2.0 / x.shape[0])
    gw2, gb2 = r.T @ g, g.sum(0)
    gh = (g @ w2.T) * (h > 0)
    gw1, gb1 = x.T @ gh, gh.sum(0)
    for p, gp in zip(params, (gw1, gb1, gw2, gb2)):
        p -= gp * 0.01
    return loss


def mlp_rows():
    rng = np.random.default_rng(0)
    model = MLP(rng)
    xa = rng.standard_normal((64, 256)).astype(np.float32)
    ta = rng.standard_normal((64, 10)).astype(np.float32)
    x, target = flow.tensor(xa), flow.tensor(ta)
    start = [p.numpy().copy() for p in model.parameters()]

    def reset():
        for p, s in zip(model.parameters(), start):
            p.numpy()[...] = s

    train_step(model, x, target)  # eager first (functors built), then back to the initial parameters
    reset()
    fwd_ms = first_call_ms(lambda: Forward(model), x)
    fwd = Forward(model)
    np.testing.assert_array_equal(fwd(x).numpy(), model(x).numpy())
    params = [p.numpy().copy() for p in model.parameters()]
    w1, b1, w2, b2 = params
    rows = [("MLP forward", per_call_us(lambda: model(x)), per_call_us(lambda: fwd(x)),
             per_call_us(lambda: np.maximum(xa @ w1 + b1, 0) @ w2 + b2), fwd_ms)]
    step_ms = first_call_ms(lambda: TrainStep(model), x, target, reset=reset)
    step = TrainStep(model)
    reset()
    eager_loss = train_step(model, x, target).item()
    eager_params = [p.numpy().copy() for p in model.parameters()]
    reset()
    assert step(x, target).item() == eager_loss
    for p, e in zip(model.parameters(), eager_params):
        np.testing.assert_array_equal(p.numpy(), e)
    np_params = [s.copy() for s in start]
    np.testing.assert_allclose(np_train_step(np_params, xa, ta), eager_loss, rtol=1e-5)
    rows.append(("MLP train step", per_call_us(lambda: train_step(model, x, target)),
                 per_call_us(lambda: step(x, target)), per_call_us(lambda: np_train_step(np_params, xa, ta)),
                 step_ms))
    return rows


def main() -> int:
    rows = [chain_rows((64, 64), "20-op chain (64, 64)"), chain_rows((4,), "20-op chain (4,)"), *mlp_rows()]
    print(f"oneflow_lite static graphs vs eager vs NumPy, float32 (median of {REPEATS}, loops >= {MIN_SECONDS} s, "
          f"GC off)")
    print(f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}")
    header = (f"{'workload':<22} {'eager us':>10} {'graph us':>10} {'NumPy us':>10}   {'eager/NumPy':>11} "
              f"{'graph/NumPy':>11} {'eager/graph':>11}   {'capture+compile ms':>18}")
    print(header)
    print("-" * len(header))
    for name, eager, graph, numpy_us, build_ms in rows:
        print(f"{name:<22} {eager:>10.1f} {graph:>10.1f} {numpy_us:>10.1f}   {eager / numpy_us:>10.2f}x "
              f"{graph / numpy_us:>10.2f}x {eager / graph:>10.2f}x   {build_ms:>18.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
