"""The benchmark suite: every workload of the [perf] issue, oneflow_lite against NumPy in one process.

Run: ``python benchmarks/run.py [--quick] [--only NAME ...] [--json PATH]``.

Each time is the median of 7 timings of a loop calibrated to last at least 0.2 s (``--quick``: 3 timings,
0.02 s), with the garbage collector off while timing and one BLAS / OpenMP thread; a workload's timings and
its baseline's are taken in back-to-back pairs and the ratio is the median of the pairs' ratios, so a change
in the machine's load affects both alike, and NumPy runs on the very arrays the tensors hold. Before timing,
every workload checks its result against NumPy once; a failed check marks the row and makes the exit status 1.
The process is a plain one: no allocator tuning (glibc's malloc returns large freed blocks to the system, so a
step that allocates parameter-sized arrays pays their page faults at every call, as a user's process does).
The table gives each workload's oneflow_lite figure, its baseline (NumPy in the same run unless the last
column says otherwise), their ratio, the target and whether it holds. ``--only`` takes a workload id
(``W1``) or a row name (``"W1 relu"``), case-insensitively, and may be repeated; ``--json`` also writes the
rows to a file.

Rows: W1 per-op overhead on 4-element tensors (``flow.add`` beside ``np.add``, the operator ``x + y`` beside
NumPy's operator); W2 a 20-op elementwise chain on (64, 64), eager and as a
compiled graph (its elementwise ops fused into one generated kernel); W3 an add of 4,194,304 elements; W4 a
512 x 512 matmul; W5 an MLP train step
(Linear 784 -> 256, ReLU, Linear 256 -> 10, cross-entropy, batch 64, backward, SGD lr 0.1) eager and as an
nn.Graph, against a hand-written NumPy step; W6 the backward of a 1,000-op chain per node, against the
chain's forward per op; W7 the first call (capture, compile, one run) of the W5 graph; W8 the peak memory
(tracemalloc) of the W5 graph step against the eager step. The W2 and W5 graphs fuse kernels with numba (the jit
extra, ``pip install 'oneflow-lite[jit]'``); without it they run unfused and miss their targets.
"""

import os

# Before NumPy is imported: one BLAS / OpenMP thread, so timings do not depend on the machine's core count
# (not when the module is imported by the tests, whose process must not be changed).
if __name__ == "__main__":
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse
import gc
import importlib.util
import json
import pathlib
import platform
import statistics
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # run from a checkout without installing
import oneflow_lite as flow  # noqa: E402

F = flow.nn.functional


# ---- timing -----------------------------------------------------------------------------------------
class Timer:
    """Seconds per call: the median of ``repeats`` timings of a loop lasting at least ``min_seconds``."""

    def __init__(self, min_seconds: float, repeats: int):
        self.min_seconds = min_seconds
        self.repeats = repeats

    def _calibrate(self, warm, loop) -> int:
        """The number of calls for which ``loop(number)`` (the seconds ``number`` calls take) lasts at least
        ``min_seconds``, after one untimed ``warm()``."""
        warm()  # warm the caches (functor construction, meta inference, kernel choice, graph compilation)
        number = 1
        while True:
            elapsed = loop(number)
            if elapsed >= self.min_seconds:
                return number
            number = max(number * 2, int(number * self.min_seconds / max(elapsed, 1e-9) * 1.1))

    def compare(self, fn, baseline, setup=None) -> tuple:
        """(seconds per ``fn()``, seconds per ``baseline()``, their ratio): the times are medians of timings
        taken in pairs, one loop of each back to back; the ratio is the median of the pairs' ratios, so
        that a change in the machine's load (memory bandwidth on a shared host moves a large add by +-30%
        from one second to the next) touches both sides of a pair alike. With ``setup``, ``fn`` is timed
        as ``fn(setup())``, the setups made before each timed loop (untimed)."""
        if setup is None:
            warm, loop = fn, lambda number: _time_loop(fn, number)
        else:
            warm, loop = lambda: fn(setup()), lambda number: _time_prepared(fn, [setup() for _ in range(number)])
        base_loop = lambda number: _time_loop(baseline, number)  # noqa: E731
        n_fn, n_base = self._calibrate(warm, loop), self._calibrate(baseline, base_loop)
        times, base_times = [], []
        for _ in range(self.repeats):
            times.append(loop(n_fn) / n_fn)
            base_times.append(base_loop(n_base) / n_base)
        ratios = [a / b for a, b in zip(times, base_times)]
        return statistics.median(times), statistics.median(base_times), statistics.median(ratios)


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


def _time_prepared(fn, args: list) -> float:
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for a in args:
            fn(a)
        return time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()
        del args[:]


# ---- rows -------------------------------------------------------------------------------------------
@dataclass
class Row:
    """One line of the table. ``value`` and ``baseline`` are in ``unit``; ``limit`` is the target: a bound on
    ``value / baseline`` (``absolute`` False) or on ``value`` itself (``absolute`` True)."""

    name: str
    value: float | None = None
    baseline: float | None = None
    paired_ratio: float | None = None  # Timer.compare's median of paired ratios; else value / baseline
    unit: str = "s"
    limit: float | None = None
    absolute: bool = False
    baseline_is: str = "NumPy"
    checked: bool = False
    status: str = "ok"  # or "FAILED: ..."

    @property
    def ratio(self) -> float | None:
        if self.paired_ratio is not None:
            return self.paired_ratio
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    @property
    def holds(self) -> bool | None:
        if self.value is None or self.limit is None:
            return None
        return (self.value if self.absolute else self.ratio) <= self.limit


def _fmt(value, unit) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value * 1e6:.3f} us" if value < 1e-3 else f"{value * 1e3:.3f} ms"
    if unit == "B":
        return f"{value / 2**20:.2f} MiB"
    return f"{value:g} {unit}"


def format_table(rows) -> str:
    header = (f"{'workload':<20} {'oneflow_lite':>13} {'baseline':>13} {'ratio':>8} {'target':>10} {'holds':>6}  "
              f"{'check':<6} baseline is")
    lines = [header, "-" * len(header)]
    for r in rows:
        if r.status != "ok":
            lines.append(f"{r.name:<20} {r.status}")
            continue
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        if r.limit is None:
            target = "report"
        elif r.absolute:
            target = "<= " + _fmt(r.limit, r.unit).replace(".000", "")
        else:
            target = f"<= {r.limit:.2f}"
        holds = "-" if r.holds is None else ("yes" if r.holds else "NO")
        lines.append(f"{r.name:<20} {_fmt(r.value, r.unit):>13} {_fmt(r.baseline, r.unit):>13} {ratio:>8} "
                     f"{target:>10} {holds:>6}  {'ok' if r.checked else '-':<6} {r.baseline_is}")
    return "\n".join(lines)


# ---- W1: per-op overhead ----------------------------------------------------------------------------
def _pair(a, b):
    """Tensors of ``a`` and ``b``, and the arrays they hold: NumPy runs on the same buffers (alignment alone
    moves a large matmul by a few percent)."""
    x, y = flow.tensor(a), flow.tensor(b)
    return x.numpy(), y.numpy(), x, y


def _small_pair():
    return _pair(np.array([-1.5, 0.5, 2.0, -3.0], dtype=np.float32), np.array([1.0, -2.0, 0.25, 4.0], dtype=np.float32))


def w1_relu(timer):
    a, _, x, _ = _small_pair()
    check(flow.relu(x), np.maximum(a, 0), exact=True)
    return Row("W1 relu", *timer.compare(lambda: flow.relu(x), lambda: np.maximum(a, 0)),
               limit=3.0, baseline_is="np.maximum(x, 0), (4,) float32", checked=True)


def w1_add(timer):
    a, b, x, y = _small_pair()
    check(flow.add(x, y), np.add(a, b), exact=True)
    return Row("W1 add", *timer.compare(lambda: flow.add(x, y), lambda: np.add(a, b)),
               limit=5.0, baseline_is="np.add(x, y), (4,) float32", checked=True)


def w1_add_operator(timer):
    a, b, x, y = _small_pair()
    check(x + y, a + b, exact=True)
    return Row("W1 x + y", *timer.compare(lambda: x + y, lambda: a + b),
               limit=5.0, baseline_is="x + y, (4,) float32", checked=True)


# ---- W2: a 20-op elementwise chain ------------------------------------------------------------------
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


def _chain_inputs():
    rng = np.random.default_rng(0)
    return _pair(*(rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2)))


def w2_chain_eager(timer):
    a, b, x, y = _chain_inputs()
    check(chain(x, y), np_chain(a, b), rtol=1e-6, atol=1e-6)
    return Row("W2 chain eager", *timer.compare(lambda: chain(x, y), lambda: np_chain(a, b)),
               limit=3.0, baseline_is="the chain in NumPy, (64, 64) float32", checked=True)


def w2_chain_graph(timer):
    a, b, x, y = _chain_inputs()
    g = flow.nn.Graph.trace(chain)
    g.config.allow_fuse_elementwise_kernels(True)  # one generated kernel (numba, the jit extra)
    check(g(x, y), np_chain(a, b), rtol=1e-6, atol=1e-6)
    return Row("W2 chain graph", *timer.compare(lambda: g(x, y), lambda: np_chain(a, b)),
               limit=0.6, baseline_is="the chain in NumPy, (64, 64) float32; graph with fused kernels", checked=True)


# ---- W3, W4: large ops ------------------------------------------------------------------------------
def w3_large_add(timer):
    rng = np.random.default_rng(0)
    a, b, x, y = _pair(*(rng.standard_normal(4_194_304).astype(np.float32) for _ in range(2)))
    check(flow.add(x, y), a + b, exact=True)
    return Row("W3 large add", *timer.compare(lambda: flow.add(x, y), lambda: a + b),
               limit=1.10, baseline_is="x + y, 4,194,304 float32", checked=True)


def w4_matmul(timer):
    rng = np.random.default_rng(0)
    a, b, x, y = _pair(*(rng.standard_normal((512, 512)).astype(np.float32) for _ in range(2)))
    check(flow.matmul(x, y), a @ b, rtol=1e-5, atol=1e-4)
    return Row("W4 matmul", *timer.compare(lambda: flow.matmul(x, y), lambda: a @ b),
               limit=1.05, baseline_is="x @ y, 512 x 512 float32", checked=True)


# ---- W5, W7, W8: an MLP train step ------------------------------------------------------------------
LR = 0.1
BATCH, N_IN, N_HIDDEN, N_OUT = 64, 784, 256, 10
def np_train_step(params, x, t):
    """The step by hand: forward, softmax cross-entropy (mean), backward, SGD update in place; the loss."""
    w1, b1, w2, b2 = params
    n = x.shape[0]
    h = x @ w1.T + b1
    r = np.maximum(h, 0)
    z = r @ w2.T + b2
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    s = e.sum(1, keepdims=True)
    rows = np.arange(n)
    loss = np.log(s[:, 0]).mean() - z[rows, t].mean()
    g = e / s
    g[rows, t] -= 1
    g /= n
    gw2, gb2 = g.T @ r, g.sum(0)
    gh = (g @ w2) * (h > 0)
    gw1, gb1 = gh.T @ x, gh.sum(0)
    for p, gp in zip(params, (gw1, gb1, gw2, gb2)):
        p -= LR * gp
    return loss


class MLPFixture:
    """The model, its optimizer, the data, the NumPy twin and the graph of the W5 rows (made once)."""

    _instance = None

    @classmethod
    def get(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def __init__(self):
        rng = np.random.default_rng(0)
        self.x = flow.tensor(rng.standard_normal((BATCH, N_IN)).astype(np.float32))
        self.t = flow.tensor(rng.integers(0, N_OUT, BATCH))
        self.xa, self.ta = self.x.numpy(), self.t.numpy()
        flow.manual_seed(0)
        self.model = MLP()
        self.params = list(self.model.parameters())
        self.opt = flow.optim.SGD(self.params, lr=LR)
        self.start = [p.numpy().copy() for p in self.params]
        self.np_params = [s.copy() for s in self.start]

    def reset(self):
        """Parameters back to their initial values, grads dropped."""
        for p, s in zip(self.params, self.start):
            p.numpy()[...] = s
            p.grad = None

    def eager_step(self):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(self.x), self.t)
        loss.backward()
        self.opt.step()
        return loss

    def new_graph(self):
        return TrainGraph(self.model, self.opt)

    def check(self, step):
        """One ``step()`` from the initial parameters against the NumPy step."""
        self.reset()
        np_params = [s.copy() for s in self.start]
        expected = np_train_step(np_params, self.xa, self.ta)
        loss = step()
        check(loss, np.float32(expected), rtol=1e-5, atol=1e-6)
        for p, e in zip(self.params, np_params):
            check(p, e, rtol=1e-4, atol=1e-6)
        self.reset()


class MLP(flow.nn.Module):
    """Linear(784 -> 256), ReLU, Linear(256 -> 10)."""

    def __init__(self):
        super().__init__()
        self.fc1 = flow.nn.Linear(N_IN, N_HIDDEN)
        self.fc2 = flow.nn.Linear(N_HIDDEN, N_OUT)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class TrainGraph(flow.nn.Graph):
    """The W5 step as an nn.Graph: forward, ``loss.backward()`` and the optimizer's step (``add_optimizer``), with the
    fused-kernel passes on."""

    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        # numba kernels (the jit extra): cross-entropy and its grad in one pass each, SGD updates in one pass
        self.config.allow_fuse_softmax_cross_entropy(True)
        self.config.allow_fuse_elementwise_kernels(True)

    def build(self, x, t):
        loss = F.cross_entropy(self.model(x), t)
        loss.backward()
        return loss


def w5_eager(timer):
    fx = MLPFixture.get()
    fx.check(fx.eager_step)
    times = timer.compare(fx.eager_step, lambda: np_train_step(fx.np_params, fx.xa, fx.ta))
    fx.reset()
    return Row("W5 MLP step eager", *times, limit=1.6, checked=True,
               baseline_is="the step by hand in NumPy (forward, backward, update)")


def w5_graph(timer):
    fx = MLPFixture.get()
    g = fx.new_graph()
    fx.check(lambda: g(fx.x, fx.t))
    times = timer.compare(lambda: g(fx.x, fx.t), lambda: np_train_step(fx.np_params, fx.xa, fx.ta))
    fx.reset()
    return Row("W5 MLP step graph", *times, limit=1.0, checked=True,
               baseline_is="the step by hand in NumPy (graph with add_optimizer, fused kernels)")


def w7_capture_compile(timer):
    fx = MLPFixture.get()
    fx.eager_step()  # functors built, so the time is the graph's own
    times = []
    for _ in range(max(3, timer.repeats)):
        fx.reset()
        g = fx.new_graph()
        start = time.perf_counter()
        g(fx.x, fx.t)
        times.append(time.perf_counter() - start)
    fx.check(lambda: g(fx.x, fx.t))
    return Row("W7 capture+compile", statistics.median(times), None, limit=0.050, absolute=True, checked=True,
               baseline_is="first call of a new W5 graph (capture, compile, one run)")


def _peak_bytes(step) -> int:
    """Peak traced bytes above the memory traced before ``step()`` (tracemalloc already running)."""
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    step()
    return tracemalloc.get_traced_memory()[1] - base


def w8_memory(timer):
    fx = MLPFixture.get()
    # Both from the same state (parameters only, no grads). The graph is made after the baseline is
    # taken, so its buffers and compiled plan count towards its peak.
    tracemalloc.start()
    try:
        fx.reset()
        fx.eager_step()
        fx.reset()
        eager = _peak_bytes(fx.eager_step)
        fx.reset()
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        g = fx.new_graph()
        g(fx.x, fx.t)
        g(fx.x, fx.t)  # the second run plans memory knowing which kernels return views
        tracemalloc.reset_peak()
        g(fx.x, fx.t)
        graph = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    fx.check(lambda: g(fx.x, fx.t))
    return Row("W8 memory", graph, eager, unit="B", limit=1.0, checked=True,
               baseline_is="peak of the eager step (tracemalloc; graph: its buffers and plan included)")


# ---- W6: backward per node --------------------------------------------------------------------------
CHAIN = 1000


def grad_chain(x, c):
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


def np_grad_chain(a, b):
    """The chain's gradient with respect to ``a``, by hand."""
    ys = [a]
    for i in range(CHAIN):
        k = i % 3
        y = ys[-1]
        ys.append(y * np.float32(1.0001) if k == 0 else y + b if k == 1 else np.maximum(y, 0))
    g = np.ones_like(a)
    for i in range(CHAIN - 1, -1, -1):
        k = i % 3
        if k == 0:
            g = g * np.float32(1.0001)
        elif k == 2:
            g = np.where(ys[i + 1] > 0, g, np.float32(0))
    return g


def w6_backward(timer):
    a = np.array([0.5, 1.5, -0.25, 2.0], dtype=np.float32)
    b = np.array([0.01, 0.02, 0.03, 0.04], dtype=np.float32)
    x, c = flow.tensor(a).requires_grad_(), flow.tensor(b)
    grad_chain(x, c).backward()
    check(x.grad, np_grad_chain(a, b), rtol=1e-5)

    def forward_no_grad():
        with flow.no_grad():
            grad_chain(x, c)

    nodes = CHAIN + 2  # the chain, the sum and the leaf's AccumulateGrad
    backward, forward, ratio = timer.compare(lambda loss: loss.backward(), forward_no_grad,
                                             setup=lambda: grad_chain(x, c))
    backward /= nodes
    forward /= CHAIN + 1
    return Row("W6 backward/node", backward, forward, ratio * (CHAIN + 1) / nodes, limit=3.0, checked=True,
               baseline_is=f"forward per op of the same {CHAIN}-op chain, (4,) float32, no_grad")


# ---- GPT: a nanoGPT train step against PyTorch eager ------------------------------------------------
GPT_STEPS_CHECKED = 3


def _import_torch():
    """PyTorch with one intra-op and one inter-op thread (the BLAS variables are set above), or None."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or parallel work already started: it stays as it was
        pass
    return torch


_GPT_FIXTURES: dict = {}  # config -> GPTFixture, made once


class GPTFixture:
    """The GPT of benchmarks/gpt.py at one size (``gpt.CONFIGS``) under both frameworks, from the same initial
    weights (PyTorch's, loaded into oneflow_lite through NumPy arrays) and the same batch (made once)."""

    @classmethod
    def get(cls, config: str):
        if config not in _GPT_FIXTURES:
            _GPT_FIXTURES[config] = cls(config)
        return _GPT_FIXTURES[config]

    def __init__(self, config: str):
        self.torch = torch = _import_torch()
        if torch is None:
            return
        spec = importlib.util.spec_from_file_location("_gpt_on_torch", pathlib.Path(__file__).with_name("gpt.py"))
        gpt = self.gpt_torch = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gpt)
        self.gpt_flow = gpt.load("oneflow_lite")
        self.cfg = gpt.CONFIGS[config]
        torch.manual_seed(0)
        self.init_model = self.gpt_torch.GPT(self.cfg)
        self.init = {k: v.detach().numpy().copy() for k, v in self.init_model.state_dict().items()}
        xa, ya = gpt.make_batch(self.cfg)
        self.x_torch, self.y_torch = torch.from_numpy(xa), torch.from_numpy(ya)
        self.x, self.y = flow.tensor(xa), flow.tensor(ya)

    def torch_model(self):
        """A PyTorch model with the initial weights, and its AdamW."""
        model = self.gpt_torch.GPT(self.cfg)
        model.load_state_dict({k: self.torch.from_numpy(v.copy()) for k, v in self.init.items()})
        return model, model.configure_optimizer()

    def flow_model(self):
        """A oneflow_lite model with the initial weights, and its AdamW."""
        model = self.gpt_flow.GPT(self.cfg)
        model.load_state_dict({k: flow.tensor(v.copy()) for k, v in self.init.items()})
        return model, model.configure_optimizer()

    def torch_step(self, model, opt):
        return lambda: self.gpt_torch.train_step(model, opt, self.x_torch, self.y_torch)

    def flow_eager_step(self, model, opt):
        return lambda: self.gpt_flow.train_step(model, opt, self.x, self.y)

    def flow_graph_step(self, model, opt):
        g = GPTTrainGraph(model, opt)
        return lambda: g(self.x, self.y)

    def check(self, make_step):
        """The losses of the first steps of ``make_step(model, opt)`` on a fresh oneflow_lite model against
        PyTorch's from the same weights and data (float32 tolerance)."""
        torch_step, flow_step = self.torch_step(*self.torch_model()), make_step(*self.flow_model())
        expected = np.array([torch_step().item() for _ in range(GPT_STEPS_CHECKED)], dtype=np.float32)
        got = np.array([flow_step().item() for _ in range(GPT_STEPS_CHECKED)], dtype=np.float32)
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5)


class GPTTrainGraph(flow.nn.Graph):
    """A GPT train step as an nn.Graph: forward, ``loss.backward()`` and AdamW's step (``add_optimizer``)."""

    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        # numba kernels (the jit extra): cross-entropy and its grad in one pass each, SGD updates in one pass
        self.config.allow_fuse_softmax_cross_entropy(True)
        self.config.allow_fuse_elementwise_kernels(True)

    def build(self, x, y):
        loss = self.model(x, y)
        loss.backward()
        return loss


GPT_TARGETS = {("tiny", "eager"): 1.5, ("tiny", "graph"): 1.0, ("mid", "eager"): 1.3, ("mid", "graph"): 1.0}


def _gpt_row(config: str, mode: str, timer) -> Row:
    name = f"GPT-{config} {mode}"
    fx = GPTFixture.get(config)
    if fx.torch is None:
        return Row(name, status="skipped: PyTorch is not installed (pip install 'oneflow-lite[bench]')")
    make_step = fx.flow_eager_step if mode == "eager" else fx.flow_graph_step
    fx.check(make_step)
    times = timer.compare(make_step(*fx.flow_model()), fx.torch_step(*fx.torch_model()))
    what = "ours as an nn.Graph (add_optimizer)" if mode == "graph" else "ours eager"
    return Row(name, *times, limit=GPT_TARGETS[config, mode], checked=True,
               baseline_is=f"PyTorch {fx.torch.__version__} eager step, 1 thread; {what}")


def gpt_tiny_eager(timer):
    return _gpt_row("tiny", "eager", timer)


def gpt_tiny_graph(timer):
    return _gpt_row("tiny", "graph", timer)


def gpt_mid_eager(timer):
    return _gpt_row("mid", "eager", timer)


def gpt_mid_graph(timer):
    return _gpt_row("mid", "graph", timer)


# ---- checks and the run -----------------------------------------------------------------------------
def check(result, expected, rtol=1e-6, atol=0.0, exact=False):
    """``result`` (a tensor) against the NumPy ``expected``: values, shape and dtype."""
    got = result.numpy()
    expected = np.asarray(expected)
    if got.dtype != expected.dtype or got.shape != expected.shape:
        raise AssertionError(f"got {got.dtype}{list(got.shape)}, expected {expected.dtype}{list(expected.shape)}")
    if exact:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


WORKLOADS = [
    ("W1 relu", w1_relu), ("W1 add", w1_add), ("W1 x + y", w1_add_operator),
    ("W2 chain eager", w2_chain_eager), ("W2 chain graph", w2_chain_graph),
    ("W3 large add", w3_large_add), ("W4 matmul", w4_matmul),
    ("W5 MLP step eager", w5_eager), ("W5 MLP step graph", w5_graph),
    ("W6 backward/node", w6_backward), ("W7 capture+compile", w7_capture_compile), ("W8 memory", w8_memory),
    ("GPT-tiny eager", gpt_tiny_eager), ("GPT-tiny graph", gpt_tiny_graph),
    ("GPT-mid eager", gpt_mid_eager), ("GPT-mid graph", gpt_mid_graph),
]


def _ids(name: str) -> set:
    """The names ``--only`` accepts for a row: the row's name, its id (``W1``, ``GPT-tiny``) and, for a
    GPT row, ``GPT``."""
    first = name.split()[0].lower()
    return {name.lower(), first, first.split("-")[0]}


def select(only) -> list:
    """The workloads named by ``--only`` (ids like ``W1`` or ``GPT-mid``, or row names), in table order."""
    if not only:
        return WORKLOADS
    wanted = {o.strip().lower() for o in only}
    known = set().union(*[_ids(n) for n, _ in WORKLOADS])
    unknown = sorted(wanted - known)
    if unknown:
        raise SystemExit(f"run.py: unknown workload(s) {', '.join(unknown)}; known: "
                         f"{', '.join(n for n, _ in WORKLOADS)} (or an id such as W1, GPT-mid or GPT)")
    return [(n, fn) for n, fn in WORKLOADS if _ids(n) & wanted]


def run(workloads, timer) -> list:
    rows = []
    for name, fn in workloads:
        try:
            rows.append(fn(timer))
        except AssertionError as e:
            rows.append(Row(name, status="FAILED: result differs from NumPy: " + " ".join(str(e).split())[:200]))
        print(f"  {name} done", file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short loops (0.02 s) and 3 timings: a smoke run")
    parser.add_argument("--only", action="append", metavar="NAME", help="a workload id (W1) or row name")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    args = parser.parse_args(argv)
    workloads = select(args.only)
    allocator = "default allocator, no tuning"
    timer = Timer(0.02, 3) if args.quick else Timer(0.2, 7)
    rows = run(workloads, timer)
    print(f"oneflow_lite benchmarks (median of {timer.repeats}, loops >= {timer.min_seconds} s, GC off while "
          f"timing, 1 BLAS thread{', --quick' if args.quick else ''}; ratio: median of the paired timings' ratios)")
    print(f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} CPU(s), {allocator}")
    print(format_table(rows))
    checked = sum(r.checked for r in rows)
    failed = [r for r in rows if r.status.startswith("FAILED")]
    missed = [r.name for r in rows if r.holds is False]
    print(f"correctness checks: {checked} passed, {len(failed)} failed; targets missed: "
          f"{', '.join(missed) if missed else 'none'}")
    if args.json:
        meta = {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
                "allocator": allocator, "quick": args.quick, "repeats": timer.repeats,
                "min_seconds": timer.min_seconds}
        data = [{**asdict(r), "ratio": r.ratio, "holds": r.holds} for r in rows]
        pathlib.Path(args.json).write_text(json.dumps({"meta": meta, "rows": data}, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
