"""Train an MLP on the 8x8 handwritten digits in mixed precision: ``flow.autocast`` and ``flow.amp.GradScaler``.

The forward pass runs under ``flow.autocast("cpu", dtype=flow.float16)``: the linear layers compute in
float16, the loss in float32 (PyTorch's CPU autocast lists). The parameters stay float32 and get float32
gradients; the scaler multiplies the loss before backward so small float16 gradients do not flush to zero,
then unscales them and skips the steps whose gradients overflowed.

With ``--graph`` the training step is an ``nn.Graph`` as a OneFlow user writes it: ``config.enable_amp(True)``
captures the forward under autocast, ``set_grad_scaler`` does the loss scaling inside the job (``build()``
just calls ``loss.backward()``). ``--dtype bfloat16`` uses bfloat16 instead of float16.

    python examples/autocast_train.py [--epochs 10] [--batch-size 32] [--lr 0.1] [--seed 0] [--graph]
                                      [--dtype float16|bfloat16]
"""

from __future__ import annotations

import argparse
import sys

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.data import DataLoader
from oneflow_lite.utils.data.datasets import digits


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def train_epoch(model, loader, optimizer, scaler, dtype) -> tuple[float, dict]:
    """One pass over ``loader``: the mean loss and the dtypes seen in the last step."""
    model.train()
    loss_sum = total = 0
    seen = {}
    for x, y in loader:
        optimizer.zero_grad()
        with flow.autocast("cpu", dtype=dtype):
            logits = model(x)
            loss = nn.functional.cross_entropy(logits, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        loss_sum += loss.item() * y.shape[0]
        total += y.shape[0]
        seen = {"logits": logits.dtype, "loss": loss.dtype, "weight grad": model[0].weight.grad.dtype}
    return loss_sum / total, seen


class TrainGraph(nn.Graph):
    """The training step as a graph: autocast and loss scaling are options of the graph (OneFlow's AMP)."""

    def __init__(self, model, optimizer, scaler, dtype):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)
        self.config.enable_amp(True, dtype=dtype)
        self.set_grad_scaler(scaler)

    def build(self, x, y):
        logits = self.model(x)
        loss = nn.functional.cross_entropy(logits, y)
        loss.backward()
        return logits, loss


def train_epoch_graph(model, graph, loader) -> tuple[float, dict]:
    """One pass over ``loader`` with the training graph: the mean loss and the dtypes seen in the last step."""
    model.train()
    loss_sum = total = 0
    seen = {}
    for x, y in loader:
        logits, loss = graph(x, y)
        loss_sum += loss.item() * y.shape[0]
        total += y.shape[0]
        seen = {"logits": logits.dtype, "loss": loss.dtype, "parameters": model[0].weight.dtype}
    return loss_sum / total, seen


def evaluate(model, loader, dtype) -> float:
    model.eval()
    correct = total = 0
    with flow.no_grad(), flow.autocast("cpu", dtype=dtype):
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum().item()
            total += y.shape[0]
    return correct / total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Train an MLP on the 8x8 digits with autocast and a GradScaler.")
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default: 10)")
    parser.add_argument("--batch-size", type=int, default=32, help="training batch size (default: 32)")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate of SGD with momentum (default: 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the batches")
    parser.add_argument("--graph", action="store_true", help="train with an nn.Graph (enable_amp, set_grad_scaler)")
    parser.add_argument("--dtype", choices=("float16", "bfloat16"), default="float16",
                        help="the autocast dtype (default: float16)")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    if not args.lr > 0:
        parser.error(f"--lr must be positive, got {args.lr}")
    dtype = getattr(flow, args.dtype)
    flow.manual_seed(args.seed)
    train = DataLoader(digits(train=True, flatten=True), batch_size=args.batch_size, shuffle=True)
    test = DataLoader(digits(train=False, flatten=True), batch_size=256)
    model = make_model()
    optimizer = flow.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scaler = flow.amp.GradScaler("cpu")
    graph = TrainGraph(model, optimizer, scaler, dtype) if args.graph else None
    for epoch in range(1, args.epochs + 1):
        if graph is None:
            loss, seen = train_epoch(model, train, optimizer, scaler, dtype)
        else:
            loss, seen = train_epoch_graph(model, graph, train)
        print(f"epoch {epoch}/{args.epochs}: loss {loss:.4f}  loss scale {scaler.get_scale():g}")
    print("dtypes: " + ", ".join(f"{k} {v.name}" for k, v in seen.items()))
    print(f"test accuracy: {100 * evaluate(model, test, dtype):.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
