"""Python dispatch modes: watch every op a model runs, forward and backward, from Python.

A mode is a ``flow.DispatchMode`` subclass with ``__flow_dispatch__(self, op, types, args, kwargs)``: inside
``with mode:`` every op call reaches it (below autograd, so it also sees the ops of the backward formulas when
backward runs inside), and what it returns is the call's result; ``op(*args, **kwargs)`` runs the op. The
script logs the ops of one training step of a small CNN with such a mode, then counts the step's FLOPs with
``flow.utils.flop_counter.FlopCounterMode`` (PyTorch's API) and checks the total against the formulas.

    python examples/dispatch_mode.py [--batch-size 4] [--depth 2]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from math import prod

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.flop_counter import FlopCounterMode


class LogMode(flow.DispatchMode):
    """Prints each op with its input shapes (and whether backward is running) and runs it."""

    def __init__(self):
        self.counts = Counter()
        self.phase = "forward"

    def __flow_dispatch__(self, op, types, args, kwargs):
        self.counts[self.phase] += 1
        shapes = ", ".join("x".join(map(str, a.shape)) or "scalar" for a in args)
        print(f"  [{self.phase}] {op.name}({shapes})")
        return op(*args, **kwargs)


class Net(nn.Module):
    """A conv, a ReLU, and a linear classifier over the flattened feature maps of 8x8 images."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(flow.relu(self.conv(x)).flatten(1))


def expected_flops(batch: int) -> int:
    """The step's FLOPs by PyTorch's rules: conv forward and its weight gradient (the images need none), the
    linear layer forward and its two gradient products; biases, ReLU and the loss are not counted."""
    conv = 2 * batch * prod((4, 1, 3, 3)) * 8 * 8
    fc = 2 * batch * (4 * 8 * 8) * 10
    return 2 * conv + 3 * fc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Log the ops of a training step with a dispatch mode and count "
                                                 "its FLOPs with FlopCounterMode.")
    parser.add_argument("--batch-size", type=int, default=4, help="images per batch (default: 4)")
    parser.add_argument("--depth", type=int, default=2, help="module depth of the FLOP table (default: 2)")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.depth < 1:
        parser.error(f"--depth must be at least 1, got {args.depth}")

    flow.manual_seed(0)
    model = Net()
    x, y = flow.randn(args.batch_size, 1, 8, 8), flow.randint(0, 10, (args.batch_size,))
    loss_fn = nn.CrossEntropyLoss()

    print("ops of one training step, seen by a logging mode:")
    mode = LogMode()
    with mode:
        loss = loss_fn(model(x), y)
        mode.phase = "backward"
        loss.backward()
    print(f"{mode.counts['forward']} forward ops, {mode.counts['backward']} backward ops")

    model.zero_grad()
    with FlopCounterMode(model, depth=args.depth) as counter:
        loss_fn(model(x), y).backward()
    total = counter.get_total_flops()
    print(f"total FLOPs: {total}; by the formulas: {expected_flops(args.batch_size)}; "
          f"equal: {total == expected_flops(args.batch_size)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
