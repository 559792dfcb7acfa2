"""A small CIFAR-style ResNet (BasicBlock with BatchNorm2d and a 1x1-conv downsample shortcut, AdaptiveAvgPool2d,
kaiming_normal_ init through model.apply) trained with SGD (momentum, nesterov, weight decay) and MultiStepLR; the
training is checkpointed half way (model, optimizer and scheduler state), a fresh model resumes from the checkpoint
and finishes. PyTorch code: run it under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import MultiStepLR
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super(BasicBlock, self).__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=4, width=8):
        super(ResNet, self).__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 2 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.avgpool(x)
        x = x.view(x.size(0), -1)
        return self.fc(x)


def init_weights(m):
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
        nn.init.constant_(m.weight, 1)
        nn.init.constant_(m.bias, 0)
    elif isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, 0, 0.01)
        nn.init.zeros_(m.bias)


def numpy_weights(model, seed):
    """Kaiming-scaled conv / linear weights from NumPy (the same under both frameworks); norms keep their init."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                fan_out = m.weight.shape[0] * (m.weight[0, 0].numel() if m.weight.dim() > 2 else 1)
                w = rng.standard_normal(tuple(m.weight.shape)) * np.sqrt(2.0 / fan_out)
                m.weight.copy_(torch.from_numpy(w.astype(np.float32)))


def make_data(rng, n):
    """Four classes of 3x8x8 images: which colour channel carries a bright square, plus noise."""
    labels = rng.integers(0, 4, n)
    images = rng.normal(0, 0.5, (n, 3, 8, 8)).astype(np.float32)
    for img, c in zip(images, labels):
        r, s = rng.integers(0, 5, 2)
        if c < 3:
            img[c, r:r + 3, s:s + 3] += 1.5
        else:
            img[:, r:r + 3, s:s + 3] -= 1.0
    return torch.from_numpy(images), torch.from_numpy(labels).long()


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    running = 0.0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad(set_to_none=True)
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        running += loss.item() * inputs.size(0)
    return running / len(loader.dataset)


def evaluate(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        outputs = model(x.to(device))
        _, predicted = torch.max(outputs, 1)
        correct += (predicted == y.to(device)).sum().item()
    return correct / y.size(0)


class GradCAM:
    """Grad-CAM on a layer: its activations (a forward hook) weighted by the channel means of the gradient of the
    class score with respect to them (a full backward hook), ReLU, upsampled to the input size."""

    def __init__(self, model, layer):
        self.model, self.activations, self.gradients = model, None, None
        self.handles = [layer.register_forward_hook(self.save_activation),
                        layer.register_full_backward_hook(self.save_gradient)]

    def save_activation(self, module, input, output):
        self.activations = output.detach()

    def save_gradient(self, module, grad_input, grad_output):
        self.gradients = grad_output[0].detach()

    def __call__(self, x, class_idx=None):
        self.model.eval()
        x = x.clone().requires_grad_(True)
        logits = self.model(x)
        if class_idx is None:
            class_idx = logits.argmax(dim=1)
        self.model.zero_grad()
        score = logits.gather(1, class_idx.view(-1, 1)).sum()
        score.backward()
        weights = self.gradients.mean(dim=(2, 3), keepdim=True)
        cam = F.relu((weights * self.activations).sum(dim=1, keepdim=True))
        cam = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)
        cam_min = cam.flatten(1).min(dim=1)[0].view(-1, 1, 1, 1)
        cam_max = cam.flatten(1).max(dim=1)[0].view(-1, 1, 1, 1)
        return (cam - cam_min) / (cam_max - cam_min + 1e-8), class_idx

    def remove(self):
        for h in self.handles:
            h.remove()


def make_optimizer(model):
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = MultiStepLR(optimizer, milestones=[2, 4], gamma=0.1)
    return optimizer, scheduler


def main(epochs=6, seed=0, shuffle=True, deterministic=False, ckpt_dir=None):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x, y = make_data(rng, 128)
    tx, ty = make_data(rng, 64)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=shuffle, drop_last=True)
    model = ResNet(BasicBlock, [1, 1]).to(device)
    model.apply(init_weights)
    if deterministic:
        numpy_weights(model, seed)
    criterion = nn.CrossEntropyLoss()
    optimizer, scheduler = make_optimizer(model)
    ckpt_dir = ckpt_dir or tempfile.mkdtemp()
    path = os.path.join(ckpt_dir, "checkpoint.pth")
    losses, lrs = [], []
    half = epochs // 2
    for epoch in range(half):
        losses.append(train_epoch(model, loader, optimizer, criterion))
        lrs.append(optimizer.param_groups[0]["lr"])
        scheduler.step()
        print(f"epoch {epoch} loss {losses[-1]:.4f} lr {lrs[-1]:.4g}")
    torch.save({"epoch": half, "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "loss": losses[-1]}, path)
    before = evaluate(model, tx, ty)

    # a new process would do this: build everything again, then resume from the checkpoint
    model = ResNet(BasicBlock, [1, 1]).to(device)
    optimizer, scheduler = make_optimizer(model)
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    start_epoch = checkpoint["epoch"]
    resumed_same = evaluate(model, tx, ty) == before
    running_mean = model.bn1.running_mean.tolist()
    for epoch in range(start_epoch, epochs):
        losses.append(train_epoch(model, loader, optimizer, criterion))
        lrs.append(optimizer.param_groups[0]["lr"])
        scheduler.step()
        print(f"epoch {epoch} loss {losses[-1]:.4f} lr {lrs[-1]:.4g}")
    accuracy = evaluate(model, tx, ty)
    print(f"test accuracy {100 * accuracy:.1f}%")
    momentum = optimizer.state_dict()["state"][0]["momentum_buffer"]
    grad_cam = GradCAM(model, model.layer2)
    cam, predicted = grad_cam(tx[:4])
    grad_cam.remove()
    return {"cam": cam.squeeze(1).numpy(), "cam_classes": predicted.tolist(), "losses": losses,
            "accuracy": accuracy, "lrs": lrs, "resumed_same": resumed_same,
            "running_mean": running_mean, "momentum_norm": momentum.norm().item(),
            "num_batches_tracked": int(model.bn1.num_batches_tracked)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args()
    main(args.epochs)
