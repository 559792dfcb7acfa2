"""pytorch/examples mnist_rnn: the Net (an LSTM over image rows with batch_first, BatchNorm1d, Dropout2d on 2-D
features, log_softmax), train / test and the epoch loop with Adadelta and StepLR are the original code. Changed,
data only: MNIST is replaced by MNIST-shaped synthetic digits (1 x 28 x 28, normalised like the original transform)
in a TensorDataset; the argparse flags are main()'s keyword arguments (smaller sizes). ``deterministic``
initialises from NumPy, turns dropout and shuffling off (for comparing numbers between frameworks)."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import TensorDataset

from common import numpy_init


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=64, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(64)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, input):
        # Shape of input is (batch_size,1, 28, 28)
        # converting shape of input to (batch_size, 28, 28)
        # as required by RNN when batch_first is set True
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)

        # RNN output shape is (seq_len, batch, input_size)
        # Get last output of RNN
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        output = F.log_softmax(output, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        args.losses.append(loss.item())
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                       100. * batch_idx / len(train_loader), loss.item()))
            if args.dry_run:
                break


def test(args, model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()
            if args.dry_run:
                break

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return test_loss, correct / len(test_loader.dataset)


def fake_mnist(n, rng, protos):
    """MNIST-shaped digits: 1 x 28 x 28 images in [0, 1] around ten prototypes, normalised as the original."""
    y = rng.integers(0, 10, n)
    x = np.clip(protos[y] + rng.normal(0, 0.2, (n, 28, 28)), 0, 1)[:, None]
    return TensorDataset(torch.from_numpy(((x - 0.1307) / 0.3081).astype(np.float32)), torch.from_numpy(y))


def main(batch_size=64, test_batch_size=1000, epochs=3, lr=0.1, gamma=0.7, seed=1, n_train=256, n_test=128,
         deterministic=False):
    args = argparse.Namespace(batch_size=batch_size, test_batch_size=test_batch_size, epochs=epochs, lr=lr,
                              gamma=gamma, accel=False, dry_run=False, seed=seed, log_interval=10, save_model=False,
                              losses=[])
    if args.accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    torch.manual_seed(args.seed)

    kwargs = {'num_workers': 1, 'pin_memory': True} if args.accel else {}
    rng = np.random.default_rng(seed)
    protos = (rng.random((10, 28, 28)) < 0.25).astype(np.float64)
    train_loader = torch.utils.data.DataLoader(fake_mnist(n_train, rng, protos),
        batch_size=args.batch_size, shuffle=not deterministic, **kwargs)
    test_loader = torch.utils.data.DataLoader(fake_mnist(n_test, rng, protos),
        batch_size=args.test_batch_size, shuffle=not deterministic, **kwargs)

    model = Net().to(device)
    if deterministic:
        numpy_init(model, seed, scale=0.1)
        model.dropout1.p = model.dropout2.p = 0.0
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    results = []
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        results.append(test(args, model, device, test_loader))
        scheduler.step()
    return {"losses": args.losses, "test_loss": results[-1][0], "accuracy": results[-1][1],
            "lr": optimizer.param_groups[0]["lr"]}


if __name__ == '__main__':
    main()
