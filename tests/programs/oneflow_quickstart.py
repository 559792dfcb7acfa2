# OneFlow's quickstart tutorial (github.com/Oneflow-Inc/oneflow-documentation, en/docs/basics/01_quickstart.md, every
# code cell in order) with `import oneflow` changed to `import oneflow_lite`. Changed, data only: FashionMNIST (from
# flowvision, which downloads it) is replaced by `FashionMNIST` below, synthetic images of the same shapes and types
# (1x28x28 floats in [0, 1] from transforms.ToTensor, int labels 0..9): a noisy prototype per class.
import numpy as np

import oneflow_lite as flow
import oneflow_lite.nn as nn


class FashionMNIST(flow.utils.data.Dataset):
    """Stand-in for flowvision.datasets.FashionMNIST(..., transform=transforms.ToTensor())."""

    def __init__(self, train):
        n = 320 if train else 64
        rng = np.random.default_rng(0 if train else 1)
        self.targets = rng.integers(0, 10, n)
        prototypes = np.random.default_rng(5).random((10, 28, 28))
        self.data = np.clip(prototypes[self.targets] + rng.normal(0, 0.2, (n, 28, 28)), 0, 1).astype(np.float32)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return flow.tensor(self.data[i][None]), int(self.targets[i])


BATCH_SIZE=64

DEVICE = "cuda" if flow.cuda.is_available() else "cpu"
print("Using {} device".format(DEVICE))

training_data = FashionMNIST(train=True)
test_data = FashionMNIST(train=False)

train_dataloader = flow.utils.data.DataLoader(
    training_data, BATCH_SIZE, shuffle=True
)
test_dataloader = flow.utils.data.DataLoader(
    test_data, BATCH_SIZE, shuffle=False
)

for x, y in train_dataloader:
    print("x.shape:", x.shape)
    print("y.shape:", y.shape)
    break

class NeuralNetwork(nn.Module):
    def __init__(self):
        super(NeuralNetwork, self).__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits

model = NeuralNetwork().to(DEVICE)
print(model)

loss_fn = nn.CrossEntropyLoss().to(DEVICE)
optimizer = flow.optim.SGD(model.parameters(), lr=1e-3)

def train(iter, model, loss_fn, optimizer):
    size = len(iter.dataset)
    for batch, (x, y) in enumerate(iter):
        x = x.to(DEVICE)
        y = y.to(DEVICE)

        # Compute prediction error
        pred = model(x)
        loss = loss_fn(pred, y)

        # Backpropagation
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        current = batch * BATCH_SIZE
        if batch % 100 == 0:
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")

def test(iter, model, loss_fn):
    size = len(iter.dataset)
    num_batches = len(iter)
    model.eval()
    test_loss, correct = 0, 0
    with flow.no_grad():
        for x, y in iter:
            x = x.to(DEVICE)
            y = y.to(DEVICE)

            pred = model(x)
            test_loss += loss_fn(pred, y)
            bool_value = (pred.argmax(1).to(dtype=flow.int64)==y)
            correct += float(bool_value.sum().numpy())
    test_loss /= num_batches
    print("test_loss", test_loss, "num_batches ", num_batches)
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}, Avg loss: {test_loss:>8f}")

epochs = 5
for t in range(epochs):
    print(f"Epoch {t+1}\n-------------------------------")
    train(train_dataloader, model, loss_fn, optimizer)
    test(test_dataloader, model, loss_fn)
print("Done!")

flow.save(model.state_dict(), "./model")
