"""Train a small CNN on the 8x8 handwritten digits as an ``nn.Graph``: OneFlow's static-graph training.

``TrainGraph.build`` holds the forward pass, the loss and ``loss.backward()``; ``add_optimizer`` adds the
optimizer step (Adam) and its learning-rate schedule (cosine, stepped after every call), so one call of
the graph is one whole training step, captured once and then run as a compiled plan. ``EvalGraph`` predicts
with the model in eval mode (batch norm with its running statistics). The script prints what the
compiler's passes did, and with ``--save-graph PATH`` saves the evaluation graph with ``Graph.save`` and
runs it again from the file alone with ``flow.nn.Graph.load`` (no model code needed).

    python examples/train_digits_graph.py [--epochs 8] [--batch-size 64] [--lr 0.01] [--seed 0] [--save-graph PATH]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.data import DataLoader
from oneflow_lite.utils.data.datasets import digits


def make_model() -> nn.Module:
    """Two conv -> batch norm -> ReLU -> max pool blocks ((1, 8, 8) -> (16, 4, 4) -> (32, 2, 2)), then a
    linear classifier. The convolutions have no bias: the batch norm after each would cancel it."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )


class TrainGraph(nn.Graph):
    """One training step: forward, loss, backward, and (added) the optimizer and lr-scheduler steps."""

    def __init__(self, model, optimizer, scheduler):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(optimizer, lr_sch=scheduler)

    def build(self, x, y):
        logits = self.model(x)
        loss = self.loss_fn(logits, y)
        loss.backward()
        return loss, (logits.argmax(dim=1) == y).sum()


class EvalGraph(nn.Graph):
    """The predicted class of each image."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x).argmax(dim=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Train a small CNN on the 8x8 digits as an nn.Graph.")
    parser.add_argument("--epochs", type=int, default=8, help="training epochs (default: 8)")
    parser.add_argument("--batch-size", type=int, default=64, help="training batch size (default: 64)")
    parser.add_argument("--lr", type=float, default=0.01, help="initial learning rate of Adam (default: 0.01)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the batches (default: 0)")
    parser.add_argument("--save-graph", metavar="PATH",
                        help="save the evaluation graph to PATH (Graph.save), load it back and run it")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    if not 1 <= args.batch_size <= 1437:
        parser.error(f"--batch-size must be between 1 and 1437 (the training images), got {args.batch_size}")
    if not args.lr > 0:
        parser.error(f"--lr must be positive, got {args.lr}")

    flow.manual_seed(args.seed)
    # Full batches only: every call of the graph then has the same input signature (one capture).
    loader = DataLoader(digits(train=True), batch_size=args.batch_size, shuffle=True, drop_last=True,
                        generator=flow.Generator().manual_seed(args.seed))
    test_x, test_y = digits(train=False).tensors

    model = make_model()
    optimizer = flow.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = flow.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * len(loader))
    train_graph = TrainGraph(model, optimizer, scheduler)
    eval_graph = EvalGraph(model)

    for epoch in range(1, args.epochs + 1):
        model.train()
        loss_sum = correct = 0.0
        for x, y in loader:
            loss, batch_correct = train_graph(x, y)
            loss_sum += loss.item()
            correct += batch_correct.item()
        model.eval()
        test_accuracy = (eval_graph(test_x) == test_y).float().mean().item()
        print(f"epoch {epoch}/{args.epochs}: loss {loss_sum / len(loader):.4f}  "
              f"train acc {100 * correct / (len(loader) * args.batch_size):.2f}%  "
              f"test acc {100 * test_accuracy:.2f}%  lr {float(optimizer.param_groups[0]['lr']):.3g}")

    captured, compiled = train_graph.captured_job, train_graph.job
    print(f"training graph: {len(captured.net.op)} ops captured, {len(compiled.net.op)} after the compiler's passes:")
    lines = [line.strip() for line in repr(train_graph).splitlines()]  # print(graph) ends with the passes' reports
    for line in lines[lines.index("passes:") + 1:]:
        print(f"  {line}")
    print(f"test accuracy: {100 * test_accuracy:.2f}%")

    if args.save_graph:
        eval_graph.save(args.save_graph)
        loaded = flow.nn.Graph.load(args.save_graph)
        same = np.array_equal(loaded(test_x).numpy(), eval_graph(test_x).numpy())
        print(f"evaluation graph saved to {args.save_graph}; loaded without the model code, it predicts the same "
              f"classes: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
