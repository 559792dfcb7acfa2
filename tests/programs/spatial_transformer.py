"""PyTorch's "Spatial Transformer Networks" tutorial: a localization net regresses a 2x3 affine matrix (its last
layer starts at the identity: weight zeroed, bias copied from [1, 0, 0, 0, 1, 0]), F.affine_grid and F.grid_sample
(align_corners left to its default) warp the input, and the classifier (the MNIST example's CNN with Dropout2d)
reads the warped image. The data: 28x28 images of four strokes, shifted and scaled at random. PyTorch code: run it
under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self, dropout=0.5):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d(p=dropout)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 4)
        self.dropout = dropout

        # Spatial transformer localization-network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True)
        )

        # Regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 3 * 3, 32),
            nn.ReLU(True),
            nn.Linear(32, 3 * 2)
        )

        # Initialize the weights/bias with identity transformation
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    # Spatial transformer network forward function
    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)

        grid = F.affine_grid(theta, x.size())
        x = F.grid_sample(x, grid)
        return x, theta

    def forward(self, x):
        # transform the input
        x, _ = self.stn(x)

        # Perform the usual forward pass
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def numpy_weights(model, seed, scale=0.1):
    """NumPy-drawn weights for every layer but fc_loc's last (the identity transform stays)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("fc_loc.2."):
                continue
            p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))


def make_data(rng, n):
    """Four classes of 28x28 images (a horizontal, vertical, diagonal stroke or a box), shifted and scaled."""
    labels = rng.integers(0, 4, n)
    images = np.zeros((n, 1, 28, 28), dtype=np.float32)
    for img, c in zip(images, labels):
        size = rng.integers(8, 14)
        r, s = rng.integers(2, 26 - size, 2)
        patch = np.zeros((size, size), dtype=np.float32)
        if c == 0:
            patch[size // 2, :] = 1
        elif c == 1:
            patch[:, size // 2] = 1
        elif c == 2:
            patch[np.arange(size), np.arange(size)] = 1
        else:
            patch[[0, -1], :] = 1
            patch[:, [0, -1]] = 1
        img[0, r:r + size, s:s + size] = patch
    images += rng.normal(0, 0.05, images.shape).astype(np.float32)
    return torch.from_numpy((images - 0.1307) / 0.3081), torch.from_numpy(labels)


def train(model, optimizer, x, y, epoch, batch_size=32, log_interval=2):
    model.train()
    losses = []
    for batch_idx, i in enumerate(range(0, len(x), batch_size)):
        data, target = x[i:i + batch_size].to(device), y[i:i + batch_size].to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if batch_idx % log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(x), 100. * i / len(x), loss.item()))
    return sum(losses) / len(losses)


def test(model, x, y):
    with torch.no_grad():
        model.eval()
        test_loss = 0
        correct = 0
        data, target = x.to(device), y.to(device)
        output = model(data)
        # sum up batch loss
        test_loss += F.nll_loss(output, target, size_average=False).item()
        # get the index of the max log-probability
        pred = output.max(1, keepdim=True)[1]
        correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(x)
        print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'
              .format(test_loss, correct, len(x), 100. * correct / len(x)))
    return test_loss, correct / len(x)


def convert_image_np(inp):
    """Convert a Tensor to numpy image."""
    inp = inp.numpy().transpose((1, 2, 0))
    mean = np.array([0.1307])
    std = np.array([0.3081])
    inp = std * inp + mean
    inp = np.clip(inp, 0, 1)
    return inp


def visualize_stn(model, data):
    with torch.no_grad():
        input_tensor = data.cpu()
        transformed_input_tensor, theta = model.stn(data)
        in_grid = convert_image_np(input_tensor[0])
        out_grid = convert_image_np(transformed_input_tensor.cpu()[0])
    return in_grid, out_grid, theta


def main(epochs=3, seed=0, n_train=128, n_test=64, dropout=0.5, deterministic=False, lr=0.05, momentum=0.0):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x, y = make_data(rng, n_train)
    tx, ty = make_data(rng, n_test)
    model = Net(dropout).to(device)
    if deterministic:
        numpy_weights(model, seed)
    optimizer = optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    losses = []
    for epoch in range(1, epochs + 1):
        losses.append(train(model, optimizer, x, y, epoch))
        test_loss, accuracy = test(model, tx, ty)
    in_grid, out_grid, theta = visualize_stn(model, tx[:4])
    return {"losses": losses, "test_loss": test_loss, "accuracy": accuracy, "theta": theta.numpy(),
            "grid_shapes": (in_grid.shape, out_grid.shape), "warped_mean": float(out_grid.mean())}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    main(args.epochs)
