"""The "infinite loader" training loop of many scripts: RandomSampler(replacement=True, num_samples=int(1e10)), a
DataLoader iterated for a fixed number of steps, a linear model trained with SGD, checkpointing with torch.save /
torch.load (weights_only by default) and f-string formatting of tensors. PyTorch code: run it under oneflow_lite with
``python -m oneflow_lite.mock_torch run``."""

import argparse
import os
import tempfile

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, RandomSampler, TensorDataset


def main(steps=50, seed=0):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((64, 3)).astype(np.float32))
    w_true = torch.tensor([[1.5], [-2.0], [0.5]])
    y = x @ w_true + 0.1
    ds = TensorDataset(x, y)
    loader = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds, replacement=True, num_samples=int(1e10)))
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    it = iter(loader)
    for step in range(steps):
        xb, yb = next(it)
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d} loss {loss:.5f} w {model.weight.detach().view(-1)[0]:+.3f}")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ckpt.pt")
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": steps}, path)
        ckpt = torch.load(path)
        restored = nn.Linear(3, 1)
        restored.load_state_dict(ckpt["model"])
        opt2 = torch.optim.SGD(restored.parameters(), lr=0.1, momentum=0.9)
        opt2.load_state_dict(ckpt["optimizer"])
    full = nn.functional.mse_loss(restored(x), y).item()
    print(f"restored at step {ckpt['step']}: full-batch loss {full:.6f}")
    return {"loss": full, "weight": restored.weight.detach().view(-1).tolist()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    main(args.steps)
