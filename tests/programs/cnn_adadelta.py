"""PyTorch's MNIST example (a CNN with dropout, max pooling, log_softmax and nll_loss, trained with Adadelta and a
StepLR schedule), on 8x8 synthetic digit-like images so that it runs anywhere in seconds. PyTorch code: run it
under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

from common import numpy_init


class Net(nn.Module):
    def __init__(self, dropout=0.25):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(2 * dropout)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def make_data(rng, n):
    """Four classes of 8x8 images: a bright row, column, diagonal or anti-diagonal, with noise."""
    labels = rng.integers(0, 4, n)
    images = rng.normal(0, 0.3, (n, 1, 8, 8)).astype(np.float32)
    for img, c in zip(images, labels):
        k = rng.integers(1, 7)
        if c == 0:
            img[0, k, :] += 1.5
        elif c == 1:
            img[0, :, k] += 1.5
        elif c == 2:
            img[0][np.eye(8, dtype=bool)] += 1.5
        else:
            img[0][np.eye(8, dtype=bool)[::-1]] += 1.5
    return torch.from_numpy(images), torch.from_numpy(labels)


def train(model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
    print(f"Train Epoch: {epoch} Loss: {loss.item():.6f}")
    return loss.item()


def test(model, data, target):
    model.eval()
    with torch.no_grad():
        output = model(data)
        test_loss = F.nll_loss(output, target, reduction="sum").item() / len(target)
        correct = output.argmax(dim=1, keepdim=True).eq(target.view_as(output.argmax(dim=1, keepdim=True))).sum()
    print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct.item()}/{len(target)}")
    return test_loss, correct.item() / len(target)


def main(epochs=3, seed=0, dropout=0.25, deterministic_init=True, shuffle=True):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x, y = make_data(rng, 512)
    tx, ty = make_data(rng, 128)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=shuffle)
    model = Net(dropout)
    if deterministic_init:
        numpy_init(model, seed, scale=0.2)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    for epoch in range(1, epochs + 1):
        losses.append(train(model, loader, optimizer, epoch))
        test_loss, acc = test(model, tx, ty)
        scheduler.step()
    return {"losses": losses, "test_loss": test_loss, "accuracy": acc}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    main(args.epochs)
