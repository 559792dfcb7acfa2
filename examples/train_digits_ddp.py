"""Train the digits MLP data-parallel over several processes.

    mpiexec -n 2 python examples/train_digits_ddp.py [--epochs 5] [--batch-size 64] [--lr 0.1] [--global]
    python -m oneflow_lite.distributed.launch --nproc_per_node 2 examples/train_digits_ddp.py

Every process builds the same model from the same seed and draws the same shuffled global batches; each
trains on its own part of every global batch. By default ``nn.parallel.DistributedDataParallel`` averages
the gradients over the processes (bucketed all-reduces overlapping backward); with ``--global`` the batch
is a global tensor split(0) over the ranks and the parameters are broadcast global tensors, so the same
model code gets its gradients all-reduced by the SBP rules. Rank 0 prints each epoch's mean loss and
accuracies (over the whole global batch) and the time per epoch. Started as one plain process, it trains
alone (rank 0 of 1).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.data.datasets import digits


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def my_part(array, rank, world):
    """This rank's part of a global batch (np.array_split: the first ``len % world`` parts are one longer)."""
    return np.array_split(array, world)[rank]


def global_mean(value: float, weight: int) -> tuple:
    """(sum of value * weight, sum of weight) over the ranks: the mean of a metric over the global batch."""
    t = flow.tensor([value * weight, float(weight)], dtype=flow.float64)
    flow.comm.all_reduce(t)
    return t[0].item(), t[1].item()


def train(args) -> float:
    rank, world = flow.env.get_rank(), flow.env.get_world_size()
    flow.manual_seed(args.seed)
    model = make_model()
    placement = flow.placement.all("cpu")
    if args.use_global:
        model.to_global(placement, flow.sbp.broadcast)
    else:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = flow.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    train_x, train_y = (t.numpy() for t in digits(train=True, flatten=True).tensors)
    test_x, test_y = (t.numpy() for t in digits(train=False, flatten=True).tensors)
    rng = np.random.default_rng(args.seed)  # the same permutation on every rank

    def feed(x, y):
        xs, ys = flow.tensor(my_part(x, rank, world)), flow.tensor(my_part(y, rank, world))
        if args.use_global:
            return xs.to_global(placement, flow.sbp.split(0)), ys.to_global(placement, flow.sbp.split(0))
        return xs, ys

    steps = len(train_x) // args.batch_size
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(train_x))
        start, loss_sum, correct = time.perf_counter(), 0.0, 0.0
        for s in range(steps):
            idx = order[s * args.batch_size:(s + 1) * args.batch_size]
            x, y = feed(train_x[idx], train_y[idx])
            optimizer.zero_grad()
            logits = model(x)
            loss = nn.functional.cross_entropy(logits, y)
            loss.backward()
            optimizer.step()
            hits = (logits.argmax(1) == y).sum().item()
            if args.use_global:  # a global loss is already the mean over the global batch
                loss_sum, correct = loss_sum + loss.item(), correct + hits
            else:
                total, n = global_mean(loss.item(), y.shape[0])
                loss_sum, correct = loss_sum + total / n, correct + global_mean(hits, 1)[0]
        seconds = time.perf_counter() - start
        with flow.no_grad():
            x, y = feed(test_x, test_y)
            hits = (model(x).argmax(1) == y).sum().item()
        test_hits = hits if args.use_global else global_mean(hits, 1)[0]
        accuracy = test_hits / len(test_y)
        if rank == 0:
            print(f"epoch {epoch}/{args.epochs}: loss {loss_sum / steps:.4f}  train acc "
                  f"{100 * correct / (steps * args.batch_size):.2f}%  test acc {100 * accuracy:.2f}%  "
                  f"({seconds:.3f} s, {world} process(es))", flush=True)
    return accuracy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Train the digits MLP data-parallel over MPI processes.")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="the global batch (all ranks together)")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--global", dest="use_global", action="store_true",
                        help="global tensors (batch split(0), parameters broadcast) instead of DDP")
    args = parser.parse_args(argv)
    accuracy = train(args)
    if flow.env.get_rank() == 0:
        print(f"test accuracy: {100 * accuracy:.2f}% ({'global tensors' if args.use_global else 'DDP'}, "
              f"{flow.env.get_world_size()} process(es))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
