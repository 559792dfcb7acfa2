"""Per-sample gradients of an MLP on the 8x8 handwritten digits with ``flow.vmap`` and ``flow.func.grad``.

``flow.func.grad(loss)`` is the gradient of the loss of one sample with respect to the parameters;
``flow.vmap`` maps it over a batch, so one call gives every sample's gradient (as ``torch.func`` does). The
script checks the result against a Python loop that runs backward once per sample, times both, and prints
the per-sample gradient norms (what DP-SGD clips).

    python examples/per_sample_grads.py [--batch-size 64] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.data.datasets import digits

F = nn.functional


def per_sample_grads_vmap(model, xs, ys) -> dict:
    """name -> (batch, *parameter shape): every sample's gradient, in one vmapped call."""
    params = {name: p.detach() for name, p in model.named_parameters()}

    def loss(p, x, y):
        logits = flow.func.functional_call(model, p, (x[None],))  # one sample as a batch of one
        return F.cross_entropy(logits, y[None])

    return flow.vmap(flow.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)


def per_sample_grads_loop(model, xs, ys) -> dict:
    """The same, with one backward per sample."""
    grads = {name: [] for name, _ in model.named_parameters()}
    for i in range(len(xs)):
        model.zero_grad()
        F.cross_entropy(model(xs[i:i + 1]), ys[i:i + 1]).backward()
        for name, p in model.named_parameters():
            grads[name].append(p.grad.numpy().copy())
    return {name: np.stack(g) for name, g in grads.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Per-sample gradients of a digits MLP with vmap and grad.")
    parser.add_argument("--batch-size", type=int, default=64, help="how many samples (default: 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights")
    args = parser.parse_args(argv)
    data = digits(train=True, flatten=True)
    if not 1 <= args.batch_size <= len(data):
        parser.error(f"--batch-size must be between 1 and {len(data)}, got {args.batch_size}")
    flow.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    xs, ys = data.tensors[0][:args.batch_size], data.tensors[1][:args.batch_size]

    start = time.perf_counter()
    batched = per_sample_grads_vmap(model, xs, ys)
    vmap_seconds = time.perf_counter() - start
    start = time.perf_counter()
    looped = per_sample_grads_loop(model, xs, ys)
    loop_seconds = time.perf_counter() - start

    diff = max(float(np.abs(batched[name].numpy() - looped[name]).max()) for name in looped)
    print(f"per-sample gradients of {args.batch_size} samples: "
          + ", ".join(f"{name} {tuple(g.shape)}" for name, g in batched.items()))
    print(f"vmap: {1e3 * vmap_seconds:.1f} ms, loop: {1e3 * loop_seconds:.1f} ms")
    print(f"max abs difference from the loop: {diff:.2e}")
    norms = np.sqrt(sum((g.numpy().reshape(args.batch_size, -1) ** 2).sum(1) for g in batched.values()))
    print(f"per-sample gradient norms: min {norms.min():.4f}  median {np.median(norms):.4f}  max {norms.max():.4f}")
    return 0 if diff < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
