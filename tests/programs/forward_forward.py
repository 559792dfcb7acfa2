"""pytorch/examples mnist_forward_forward (Hinton's Forward-Forward algorithm, each layer trained by its own
goodness loss): get_y_neg, overlay_y_on_x, Net and Layer (an nn.Linear subclass built with positional
``(in, out, bias, device, dtype)``, with its own Adam) are the original code. Changed, data only: MNIST is
replaced by MNIST-shaped synthetic digits (flattened 784-vectors normalised like the original transform, drawn
around ten prototypes); the module-level setup moved into ``main()`` with smaller default sizes.
``deterministic`` initialises from NumPy and draws the negative labels from NumPy (for comparing numbers)."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset

from common import numpy_init


def get_y_neg(y):
    y_neg = y.clone()
    for idx, y_samp in enumerate(y):
        allowed_indices = list(range(10))
        allowed_indices.remove(y_samp.item())
        y_neg[idx] = torch.tensor(allowed_indices)[
            torch.randint(len(allowed_indices), size=(1,))
        ].item()
    return y_neg.to(device)


def overlay_y_on_x(x, y, classes=10):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Net(torch.nn.Module):
    def __init__(self, dims):

        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1]).to(device)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer: ", i)
            h_pos, h_neg = layer.train(h_pos, h_neg)


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=args.lr)
        self.threshold = args.threshold
        self.num_epochs = args.epochs
        self.losses = []

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log1p(
                torch.exp(
                    torch.cat([-g_pos + self.threshold, g_neg - self.threshold])
                )
            ).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.losses.append(loss.item())
            if i % args.log_interval == 0:
                print("Loss: ", loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


def fake_mnist(n, rng, protos):
    """MNIST-shaped data: 784 pixels in [0, 1] around one of ten prototypes, normalised like the original
    transform (mean 0.1307, std 0.3081), and int64 labels."""
    y = rng.integers(0, 10, n)
    x = np.clip(protos[y] + rng.normal(0, 0.15, (n, 784)), 0, 1)
    return TensorDataset(torch.from_numpy(((x - 0.1307) / 0.3081).astype(np.float32)), torch.from_numpy(y))


def main(epochs=60, lr=0.03, seed=1, train_size=256, test_size=128, threshold=2.0, dims=(784, 500, 500),
         deterministic=False):
    global args, device
    args = argparse.Namespace(epochs=epochs, lr=lr, no_accel=False, seed=seed, train_size=train_size,
                              threshold=threshold, test_size=test_size, save_model=False, log_interval=20)
    torch.manual_seed(args.seed)
    use_accel = not args.no_accel and torch.accelerator.is_available()
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    train_kwargs = {"batch_size": args.train_size}
    test_kwargs = {"batch_size": args.test_size}
    rng = np.random.default_rng(seed)
    protos = (rng.random((10, 784)) < 0.2) * rng.uniform(0.5, 1.0, (10, 784))
    train_loader = DataLoader(fake_mnist(train_size, rng, protos), **train_kwargs)
    test_loader = DataLoader(fake_mnist(test_size, rng, protos), **test_kwargs)

    net = Net(list(dims))
    x, y = next(iter(train_loader))
    x, y = x.to(device), y.to(device)
    x_pos = overlay_y_on_x(x, y)
    if deterministic:
        for layer in net.layers:
            numpy_init(layer, seed, scale=0.05)
        y_neg = torch.from_numpy((y.numpy() + rng.integers(1, 10, len(y))) % 10)
    else:
        y_neg = get_y_neg(y)
    x_neg = overlay_y_on_x(x, y_neg)
    net.train(x_pos, x_neg)
    train_error = 1.0 - net.predict(x).eq(y).float().mean().item()
    print("train error:", train_error)
    x_te, y_te = next(iter(test_loader))
    x_te, y_te = x_te.to(device), y_te.to(device)
    test_error = 1.0 - net.predict(x_te).eq(y_te).float().mean().item()
    print("test error:", test_error)
    return {"losses": [v for layer in net.layers for v in layer.losses], "layer_losses": [l.losses for l in net.layers],
            "train_error": train_error, "test_error": test_error}


if __name__ == "__main__":
    main()
