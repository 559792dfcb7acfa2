"""A Megatron-style tensor-parallel MLP, expressed only through SBP.

    mpiexec -n 2 python examples/tensor_parallel_mlp.py [--steps 20] [--hidden 256]
    mpiexec -n 4 python examples/tensor_parallel_mlp.py --hybrid     # 2 x 2: data x tensor parallel

The model code is an ordinary ``nn.Sequential(Linear, ReLU, Linear)``. Only the layout changes: the first
Linear's weight and bias are split(0) (each rank holds some output features: column parallel), the second
Linear's weight is split(1) (the matching input features: row parallel) and its bias broadcast. The SBP
rules then run the first Linear without communication (its output is split(1)), make the second Linear's
output a partial sum (its bias kept on one rank), and all-reduce it where the loss needs the whole value:
Megatron's one all-reduce per MLP, derived rather than written. ``--hybrid`` lays the same model on a 2-D
placement (rows: data parallel with the batch split(0), columns: tensor parallel). The example trains it on
the digits and, in every process, the same model on local tensors, and prints both losses per step.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.data.datasets import digits

B, S = flow.sbp.broadcast, flow.sbp.split


def make_model(hidden: int) -> nn.Module:
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def tensor_parallel(model: nn.Module, placement, hybrid: bool) -> nn.Module:
    """Lay ``model``'s parameters out Megatron's way (on the last placement dimension when ``hybrid``)."""
    def layout(sbp):
        return (B, sbp) if hybrid else (sbp,)
    model.to_global(placement, layout(B))  # every rank starts from rank 0's parameters
    first, second = model[0], model[2]
    for t, sbp in ((first.weight, S(0)), (first.bias, S(0)), (second.weight, S(1)), (second.bias, B)):
        t.data = t.data.to_global(sbp=layout(sbp))
    return model


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Train a tensor-parallel MLP on the digits.")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hybrid", action="store_true", help="a 2 x 2 placement: data x tensor parallel (4 ranks)")
    args = parser.parse_args(argv)
    world = flow.env.get_world_size()
    if args.hybrid and world != 4:
        parser.error(f"--hybrid needs 4 processes (mpiexec -n 4), got {world}")
    placement = (flow.placement("cpu", ranks=[[0, 1], [2, 3]]) if args.hybrid else flow.placement.all("cpu"))
    data_sbp = (S(0), B) if args.hybrid else (B,)
    model = tensor_parallel(make_model(args.hidden), placement, args.hybrid)
    reference = make_model(args.hidden)
    opts = [flow.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference)]
    x_all, y_all = (t.numpy() for t in digits(train=True, flatten=True).tensors)
    rank = flow.env.get_rank()
    if rank == 0:
        print(f"{world} process(es), placement {placement.ranks}; first Linear weight {model[0].weight.sbp}, "
              f"second {model[2].weight.sbp}")
    x0 = flow.tensor(x_all[:4], placement=placement, sbp=data_sbp)
    hidden_sbp, out_sbp = model[1](model[0](x0)).sbp, model(x0).sbp
    worst = 0.0
    for step in range(args.steps):
        lo = (step * args.batch_size) % (len(x_all) - args.batch_size)
        x, y = x_all[lo:lo + args.batch_size], y_all[lo:lo + args.batch_size]
        losses = []
        for m, opt, feed in ((model, opts[0], lambda a: flow.tensor(a, placement=placement, sbp=data_sbp)),
                             (reference, opts[1], flow.tensor)):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(feed(x)), feed(y))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        worst = max(worst, abs(losses[0] - losses[1]))
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print(f"step {step:>3}: loss {losses[0]:.5f} (tensor parallel)  {losses[1]:.5f} (one process)")
    diff = max(float(np.abs(p.numpy() - q.numpy()).max()) for p, q in zip(model.parameters(), reference.parameters()))
    if rank == 0:
        print(f"hidden activations {hidden_sbp}, output {out_sbp}")
        print(f"largest loss difference {worst:.2e}, largest parameter difference {diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
