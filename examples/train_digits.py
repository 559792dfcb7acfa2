"""Train an MLP on the 8x8 handwritten digits eagerly: a PyTorch training loop with ``import oneflow_lite as flow``.

It holds out a validation split of the training images (``random_split``), trains with dropout, SGD with
momentum and weight decay, and a step learning-rate schedule, keeps the best model by validation accuracy,
reports the test accuracy of that model, and with ``--checkpoint PATH`` saves a checkpoint of the last epoch
(model, optimizer and scheduler states) with ``flow.save`` and loads it back with ``flow.load``.

    python examples/train_digits.py [--epochs 15] [--batch-size 32] [--lr 0.1] [--seed 0] [--checkpoint PATH]
"""

from __future__ import annotations

import argparse
import copy
import sys

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.data import DataLoader, random_split
from oneflow_lite.utils.data.datasets import digits


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(128, 64), nn.ReLU(),
        nn.Linear(64, 10),
    )


def make_optimizer(model: nn.Module, lr: float, epochs: int):
    """SGD with momentum and weight decay, and a schedule dividing the lr by ~3 twice."""
    optimizer = flow.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    return optimizer, flow.optim.lr_scheduler.StepLR(optimizer, step_size=max(1, epochs // 3), gamma=0.3)


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    """The fraction of correctly classified images."""
    model.eval()
    correct = total = 0
    with flow.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum().item()
            total += y.shape[0]
    return correct / total


def train_epoch(model, loader, loss_fn, optimizer) -> tuple[float, float]:
    """One pass over ``loader``: (mean loss, accuracy) of the training batches."""
    model.train()
    loss_sum = correct = total = 0
    for x, y in loader:
        optimizer.zero_grad()
        logits = model(x)
        loss = loss_fn(logits, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()
        loss_sum += loss.item() * y.shape[0]
        correct += (logits.argmax(dim=1) == y).sum().item()
        total += y.shape[0]
    return loss_sum / total, correct / total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Train an MLP on the 8x8 digits eagerly.")
    parser.add_argument("--epochs", type=int, default=15, help="training epochs (default: 15)")
    parser.add_argument("--batch-size", type=int, default=32, help="training batch size (default: 32)")
    parser.add_argument("--lr", type=float, default=0.1, help="initial learning rate of SGD (default: 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, the weights and the batches")
    parser.add_argument("--checkpoint", metavar="PATH",
                        help="save a checkpoint here after training, then load it into a new model and optimizer")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    if not 1 <= args.batch_size <= 1237:
        parser.error(f"--batch-size must be between 1 and 1237 (the training images), got {args.batch_size}")
    if not args.lr > 0:
        parser.error(f"--lr must be positive, got {args.lr}")

    flow.manual_seed(args.seed)
    split = flow.Generator().manual_seed(args.seed)
    train_set, val_set = random_split(digits(train=True), [1237, 200], generator=split)
    test_set = digits(train=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              generator=flow.Generator().manual_seed(args.seed))
    val_loader = DataLoader(val_set, batch_size=200)
    test_loader = DataLoader(test_set, batch_size=360)
    print(f"data: {len(train_set)} training, {len(val_set)} validation and {len(test_set)} test images")

    model = make_model()
    loss_fn = nn.CrossEntropyLoss()
    optimizer, scheduler = make_optimizer(model, args.lr, args.epochs)
    best_accuracy, best_epoch, best_state = -1.0, 0, None
    for epoch in range(1, args.epochs + 1):
        lr = optimizer.param_groups[0]["lr"]
        loss, train_accuracy = train_epoch(model, train_loader, loss_fn, optimizer)
        scheduler.step()
        val_accuracy = evaluate(model, val_loader)
        if val_accuracy > best_accuracy:
            best_accuracy, best_epoch, best_state = val_accuracy, epoch, copy.deepcopy(model.state_dict())
        print(f"epoch {epoch}/{args.epochs}: lr {lr:.4g}  loss {loss:.4f}  train acc {100 * train_accuracy:.2f}%  "
              f"val acc {100 * val_accuracy:.2f}%")

    if args.checkpoint:  # everything needed to resume training: model, optimizer and scheduler states, epoch
        flow.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                   "scheduler": scheduler.state_dict(), "epoch": args.epochs}, args.checkpoint)
        checkpoint = flow.load(args.checkpoint)
        resumed = make_model()
        resumed.load_state_dict(checkpoint["model"])
        resumed_optimizer, resumed_scheduler = make_optimizer(resumed, args.lr, args.epochs)
        resumed_optimizer.load_state_dict(checkpoint["optimizer"])
        resumed_scheduler.load_state_dict(checkpoint["scheduler"])
        before, after = evaluate(model, test_loader), evaluate(resumed, test_loader)
        print(f"checkpoint of epoch {checkpoint['epoch']} saved to {args.checkpoint} and loaded: test accuracy "
              f"{100 * after:.2f}% (before saving: {100 * before:.2f}%), "
              f"next lr {resumed_optimizer.param_groups[0]['lr']:.4g}")

    model.load_state_dict(best_state)
    print(f"test accuracy of the best model (epoch {best_epoch}, val acc {100 * best_accuracy:.2f}%): "
          f"{100 * evaluate(model, test_loader):.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
