"""PyTorch's VAE example: an MLP encoder to mean and log-variance, the reparameterisation trick with randn_like, a
decoder with sigmoid outputs and the BCE + KL loss, trained with Adam. PyTorch code: run it under oneflow_lite with
``python -m oneflow_lite.mock_torch run``. ``fixed_noise`` draws the reparameterisation noise from NumPy (for
comparing numbers between frameworks)."""

import argparse

import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F

from common import numpy_init


class VAE(nn.Module):
    def __init__(self, d=64, h=32, z=4):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc21 = nn.Linear(h, z)
        self.fc22 = nn.Linear(h, z)
        self.fc3 = nn.Linear(z, h)
        self.fc4 = nn.Linear(h, d)
        self.noise = None

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std) if self.noise is None else self.noise
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def main(epochs=4, seed=0, fixed_noise=True, deterministic_init=True):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    protos = rng.random((4, 64)) > 0.5
    data = torch.from_numpy(np.clip(protos[rng.integers(0, 4, 128)] + rng.normal(0, 0.1, (128, 64)), 0, 1)
                            .astype(np.float32))
    model = VAE()
    if deterministic_init:
        numpy_init(model, seed, scale=0.1)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        train_loss = 0
        for i in range(0, 128, 32):
            x = data[i:i + 32]
            if fixed_noise:
                model.noise = torch.from_numpy(rng.standard_normal((32, 4)).astype(np.float32))
            optimizer.zero_grad()
            recon, mu, logvar = model(x)
            loss = loss_function(recon, x, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        losses.append(train_loss / 128)
        print(f"====> Epoch: {epoch} Average loss: {train_loss / 128:.4f}")
    with torch.no_grad():
        sample = model.decode(torch.randn(8, 4))
    return {"losses": losses, "sample_shape": tuple(sample.shape)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    main(args.epochs, fixed_noise=False)
