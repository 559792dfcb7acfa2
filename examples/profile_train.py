"""Profile a few training steps of an MLP on the 8x8 digits with ``flow.profiler`` (PyTorch's profiler API).

The profile follows a schedule: one idle step, one warm-up step, then ``--steps`` recorded steps, each a
``ProfilerStep#<n>`` range holding its ``forward``, ``backward`` and ``optimizer`` ranges (``record_function``)
and the ops they run; ops run by the autograd engine are marked as backward. When the cycle ends, the script
prints the table of the ops by self CPU time, writes a chrome trace (open it in https://ui.perfetto.dev or
chrome://tracing), and, with ``--graph``, profiles the same steps compiled as an ``nn.Graph``, where each
step is one event.

    python examples/profile_train.py [--steps 3] [--batch-size 64] [--row-limit 12] [--trace PATH] [--graph]
"""

from __future__ import annotations

import argparse
import sys

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.profiler import ProfilerActivity, profile, record_function, schedule
from oneflow_lite.utils.data import DataLoader
from oneflow_lite.utils.data.datasets import digits


def make_model() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


class TrainGraph(nn.Graph):
    """One training step as a graph: forward, loss, backward and the optimizer step."""

    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def eager_step(model, loss_fn, optimizer, x, y):
    with record_function("forward"):
        loss = loss_fn(model(x), y)
    with record_function("backward"):
        optimizer.zero_grad()
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
    return loss


def profile_steps(step, batches, steps: int):
    """Run ``step`` on the batches under a profile that skips one step, warms up one and records ``steps``."""
    cycles = []
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=steps, repeat=1),
                 on_trace_ready=cycles.append, record_shapes=True) as prof:
        for i, (x, y) in zip(range(steps + 2), batches):
            step(x, y)
            prof.step()
    return prof


def summary(prof) -> str:
    events = prof.events()
    ops = [e for e in events if e.kind == "op"]
    steps = [e for e in events if e.name.startswith("ProfilerStep#")]
    return (f"recorded {len(steps)} steps ({', '.join(e.name for e in steps)}): {len(ops)} op calls, "
            f"{sum(e.is_backward for e in ops)} of them run by backward")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Profile training steps on the 8x8 digits.")
    parser.add_argument("--steps", type=int, default=3, help="recorded steps (default: 3)")
    parser.add_argument("--batch-size", type=int, default=64, help="training batch size (default: 64)")
    parser.add_argument("--row-limit", type=int, default=12, help="rows of the table (default: 12)")
    parser.add_argument("--trace", default="profile_train_trace.json",
                        help="where to write the chrome trace (default: profile_train_trace.json)")
    parser.add_argument("--graph", action="store_true", help="also profile the steps compiled as an nn.Graph")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    if not 1 <= args.batch_size <= 1437:
        parser.error(f"--batch-size must be between 1 and 1437 (the training images), got {args.batch_size}")
    if args.row_limit < 1:
        parser.error(f"--row-limit must be at least 1, got {args.row_limit}")

    flow.manual_seed(0)
    loader = DataLoader(digits(train=True), batch_size=args.batch_size, shuffle=True, drop_last=True,
                        generator=flow.Generator().manual_seed(0))
    model = make_model()
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    prof = profile_steps(lambda x, y: eager_step(model, loss_fn, optimizer, x, y), iter(loader), args.steps)
    print(f"eager: {summary(prof)}")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.row_limit), end="")
    prof.export_chrome_trace(args.trace)
    print(f"chrome trace written to {args.trace}")

    if args.graph:
        graph = TrainGraph(model, optimizer)
        prof = profile_steps(graph, iter(loader), args.steps)
        runs = [e for e in prof.events() if e.kind == "graph"]
        print(f"graph: {summary(prof)}; {len(runs)} compiled runs of {runs[0].args['Ops']} ops each")
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=args.row_limit), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
