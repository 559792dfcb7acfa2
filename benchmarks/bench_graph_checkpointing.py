"""Activation checkpointing in nn.Graph: peak memory (tracemalloc) and time of one training step of a stack of MLP
blocks, with and without ``activation_checkpointing`` on each block, and the same step eagerly.

    python benchmarks/bench_graph_checkpointing.py [--blocks 6] [--width 64] [--batch 1024] [--repeats 5]

Each row: the peak bytes allocated during one step (after warm-up steps, so the graph's plan is compiled and
its pooled buffers exist) relative to the graph without checkpointing, the median step time, and whether the
losses of the runs are equal (they must be: recomputation runs the same kernels on the same inputs).
Checkpointing lowers the peak when activations (batch x width per block) outweigh the weight gradients, which
all live until the optimizer step: with a wide layer and a small batch the gradients set the peak.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc

import numpy as np

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.nn.graph import GraphModule


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


def make_model(blocks, width, seed=0):
    flow.manual_seed(seed)
    return nn.Sequential(*[Block(width) for _ in range(blocks)], nn.Linear(width, 1))


class TrainGraph(nn.Graph):
    def __init__(self, model, checkpointing):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=1e-3))
        for i in range(len(model) - 1):
            self.model[i].to(GraphModule).activation_checkpointing = checkpointing

    def build(self, x, y):
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss


def eager_step(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


def measure(step, x, y, repeats):
    losses = [step(x, y).item() for _ in range(2)]  # warm-up: capture, compile, first (checked) run
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        losses.append(step(x, y).item())
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        losses.append(step(x, y).item())
        times.append(time.perf_counter() - start)
    return peak, statistics.median(times), losses


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = flow.tensor(rng.standard_normal((args.batch, args.width)).astype(np.float32))
    y = flow.tensor(rng.standard_normal((args.batch, 1)).astype(np.float32))

    rows = {}
    for name, make in (("graph", lambda m: TrainGraph(m, False)), ("graph + checkpointing", lambda m: TrainGraph(m, True)),
                       ("eager", lambda m: eager_step(m, flow.optim.SGD(m.parameters(), lr=1e-3)))):
        rows[name] = measure(make(make_model(args.blocks, args.width)), x, y, args.repeats)

    ref_peak = rows["graph"][0]
    print(f"one training step of {args.blocks} MLP blocks (width {args.width}, batch {args.batch}, float32)")
    print(f"{'':<24}{'peak MiB':>10}{'vs graph':>10}{'step ms':>10}  losses equal to the graph's")
    for name, (peak, seconds, losses) in rows.items():
        equal = "yes" if losses == rows["graph"][2] else ("-" if name == "eager" else "NO")
        print(f"{name:<24}{peak / 2**20:>10.2f}{peak / ref_peak:>9.2f}x{seconds * 1e3:>10.2f}  {equal}")
    return 0 if rows["graph + checkpointing"][2] == rows["graph"][2] else 1


if __name__ == "__main__":
    sys.exit(main())
