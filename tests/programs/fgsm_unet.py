"""Two programs people write around gradients of inputs and dense prediction:

* PyTorch's "Adversarial Example Generation" (FGSM) tutorial: a small CNN classifier, then for each test image
  ``data.requires_grad = True``, ``loss.backward()``, ``data.grad.data.sign()``, a step of size epsilon, clamp to
  the valid range, accuracy against epsilon; plus a few epochs of FGSM adversarial training, double backpropagation
  (the input-gradient norm as a penalty, autograd.grad with create_graph=True) and a saliency map from
  torch.autograd.functional.jacobian.
* a UNet (milesial/Pytorch-UNet's DoubleConv / Down / Up with ConvTranspose2d, F.pad to the skip size and torch.cat
  skip connections) trained for binary segmentation with BCEWithLogitsLoss(pos_weight=...) plus the Dice loss,
  RMSprop, a disabled GradScaler and autocast (as that repository's train.py on a machine without a GPU),
  clip_grad_norm_ and ReduceLROnPlateau on the validation Dice score.

PyTorch code: run it under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch import Tensor

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
MEAN, STD = 0.1307, 0.3081


# ---- FGSM ----------------------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def fgsm_attack(image, epsilon, data_grad):
    # Collect the element-wise sign of the data gradient
    sign_data_grad = data_grad.sign()
    # Create the perturbed image by adjusting each pixel of the input image
    perturbed_image = image + epsilon * sign_data_grad
    # Adding clipping to maintain [0,1] range
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    return perturbed_image


def denorm(batch, mean=[MEAN], std=[STD]):
    """Convert a batch of tensors to their original scale."""
    if isinstance(mean, list):
        mean = torch.tensor(mean).to(device)
    if isinstance(std, list):
        std = torch.tensor(std).to(device)
    return batch * std.view(1, -1, 1, 1) + mean.view(1, -1, 1, 1)


def normalize(batch):
    return (batch - MEAN) / STD


def test(model, device, test_data, epsilon):
    correct = 0
    adv_examples = []
    n = 0
    for data, target in test_data:
        data, target = data.unsqueeze(0).to(device), target.view(1).to(device)
        # Set requires_grad attribute of tensor. Important for Attack
        data.requires_grad = True
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]  # get the index of the max log-probability
        n += 1
        # If the initial prediction is wrong, don't bother attacking, just move on
        if init_pred.item() != target.item():
            continue
        loss = F.nll_loss(output, target)
        model.zero_grad()
        loss.backward()
        # Collect ``datagrad``
        data_grad = data.grad.data
        # Restore the data to its original scale
        data_denorm = denorm(data)
        perturbed_data = fgsm_attack(data_denorm, epsilon, data_grad)
        # Reapply normalization
        perturbed_data_normalized = normalize(perturbed_data)
        output = model(perturbed_data_normalized)
        final_pred = output.max(1, keepdim=True)[1]
        if final_pred.item() == target.item():
            correct += 1
            if epsilon == 0 and len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
        else:
            if len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
    final_acc = correct / float(n)
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {n} = {final_acc}")
    return final_acc, adv_examples


def make_digits(rng, n):
    """Four classes of 1x8x8 images in [0, 1]: a bright row, column, diagonal or anti-diagonal."""
    labels = rng.integers(0, 4, n)
    images = rng.uniform(0, 0.3, (n, 1, 8, 8)).astype(np.float32)
    for img, c in zip(images, labels):
        k = rng.integers(1, 7)
        if c == 0:
            img[0, k, :] = 1.0
        elif c == 1:
            img[0, :, k] = 1.0
        elif c == 2:
            img[0][np.eye(8, dtype=bool)] = 1.0
        else:
            img[0][np.eye(8, dtype=bool)[::-1]] = 1.0
    return torch.from_numpy(images), torch.from_numpy(labels)


def input_gradient_penalty_step(model, optimizer, data, target, weight=0.1):
    """Double backpropagation (Drucker & LeCun): the loss plus the squared norm of its gradient with respect to the
    input, the gradient taken with create_graph=True so that the penalty trains the weights."""
    data = data.clone().requires_grad_(True)
    loss = F.nll_loss(model(data), target)
    grad = torch.autograd.grad(outputs=loss, inputs=data, grad_outputs=torch.ones_like(loss), create_graph=True,
                               retain_graph=True, only_inputs=True)[0]
    penalty = grad.view(grad.size(0), -1).pow(2).sum(1).mean()
    optimizer.zero_grad()
    (loss + weight * penalty).backward()
    optimizer.step()
    return loss.item(), penalty.item()


def fgsm_part(rng, epochs, epsilons, deterministic, adversarial_epochs, penalty_steps=2):
    x, y = make_digits(rng, 256)
    tx, ty = make_digits(rng, 32)
    model = Net().to(device)
    if deterministic:
        numpy_weights(model, rng, 0.3)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(epochs + adversarial_epochs):
        model.train()
        for i in range(0, len(x), 64):
            data, target = normalize(x[i:i + 64]).to(device), y[i:i + 64].to(device)
            if epoch >= epochs:  # FGSM adversarial training: half clean, half perturbed
                data = data.clone().detach().requires_grad_()
                grad, = torch.autograd.grad(F.nll_loss(model(data), target), data)
                adv = normalize(fgsm_attack(denorm(data.detach()), 0.1, grad))
                data = torch.cat([data.detach(), adv])
                target = torch.cat([target, target])
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
        losses.append(loss.item())
    penalties = [input_gradient_penalty_step(model, optimizer, normalize(x[i:i + 64]), y[i:i + 64])
                 for i in range(0, 64 * penalty_steps, 64)]
    model.eval()
    # the saliency of one test image: the Jacobian of the class log-probabilities with respect to its pixels
    jac = torch.autograd.functional.jacobian(lambda img: model(img.unsqueeze(0)).squeeze(0), normalize(tx[0]))
    saliency = jac[ty[0]].abs().squeeze(0)
    accuracies, examples = [], []
    for eps in epsilons:
        acc, ex = test(model, device, zip(normalize(tx), ty), eps)
        accuracies.append(acc)
        examples.append(ex)
    return losses, accuracies, examples, penalties, (tuple(jac.shape), saliency.sum().item())


# ---- UNet (milesial/Pytorch-UNet) ------------------------------------------------------------------
class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(
            nn.MaxPool2d(2),
            DoubleConv(in_channels, out_channels)
        )

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv"""

    def __init__(self, in_channels, out_channels, bilinear=False):
        super().__init__()

        # if bilinear, use the normal convolutions to reduce the number of channels
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]

        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                        diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(OutConv, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False, width=8):
        super(UNet, self).__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear

        self.inc = (DoubleConv(n_channels, width))
        self.down1 = (Down(width, width * 2))
        factor = 2 if bilinear else 1
        self.down2 = (Down(width * 2, width * 4 // factor))
        self.up1 = (Up(width * 4, width * 2 // factor, bilinear))
        self.up2 = (Up(width * 2, width, bilinear))
        self.outc = (OutConv(width, n_classes))

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        logits = self.outc(x)
        return logits


def dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    # Average of Dice coefficient for all batches, or for a single mask
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first

    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)

    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)

    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def dice_loss(input: Tensor, target: Tensor, multiclass: bool = False):
    # Dice loss (objective to minimize) between 0 and 1
    return 1 - dice_coeff(input, target, reduce_batch_first=True)


def make_masks(rng, n, size=12):
    """Images holding one or two noisy discs; the mask marks the discs (about a sixth of the pixels)."""
    yy, xx = np.mgrid[:size, :size]
    images = rng.normal(0, 0.3, (n, 1, size, size)).astype(np.float32)
    masks = np.zeros((n, size, size), dtype=np.int64)
    for img, mask in zip(images, masks):
        for _ in range(rng.integers(1, 3)):
            cy, cx = rng.uniform(2, size - 2, 2)
            r = rng.uniform(1.5, 2.5)
            disc = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
            mask[disc] = 1
        img[0][mask > 0] += 1.0
    return torch.from_numpy(images), torch.from_numpy(masks)


@torch.inference_mode()
def evaluate(net, images, masks, amp=False):
    net.eval()
    with torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp):
        mask_pred = net(images)
        mask_pred = (F.sigmoid(mask_pred.squeeze(1)) > 0.5).float()
        dice_score = dice_coeff(mask_pred, masks.float(), reduce_batch_first=False)
    net.train()
    return dice_score.item()


def unet_part(rng, epochs, deterministic, bilinear=False, amp=False, gradient_clipping=1.0):
    images, masks = make_masks(rng, 32)
    val_images, val_masks = make_masks(rng, 8)
    model = UNet(n_channels=1, n_classes=1, bilinear=bilinear).to(device=device, memory_format=torch.channels_last)
    if deterministic:
        numpy_weights(model, rng, 0.3)
    optimizer = optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9, foreach=True)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'max', patience=2)  # goal: maximize Dice score
    grad_scaler = torch.amp.GradScaler(device.type, enabled=amp)
    pos_weight = torch.tensor([3.0], device=device)
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    losses, scores = [], []
    for epoch in range(1, epochs + 1):
        model.train()
        epoch_loss = 0
        for i in range(0, len(images), 8):
            batch_images = images[i:i + 8].to(device=device, dtype=torch.float32, memory_format=torch.channels_last)
            true_masks = masks[i:i + 8].to(device=device, dtype=torch.long)
            with torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp):
                masks_pred = model(batch_images)
                loss = criterion(masks_pred.squeeze(1), true_masks.float())
                loss += dice_loss(F.sigmoid(masks_pred.squeeze(1)), true_masks.float(), multiclass=False)
            optimizer.zero_grad(set_to_none=True)
            grad_scaler.scale(loss).backward()
            grad_scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
            grad_scaler.step(optimizer)
            grad_scaler.update()
            epoch_loss += loss.item()
        val_score = evaluate(model, val_images, val_masks, amp)
        scheduler.step(val_score)
        losses.append(epoch_loss / 4)
        scores.append(val_score)
        print(f"epoch {epoch}: loss {losses[-1]:.4f} validation Dice score: {val_score:.4f}")
    return losses, scores, optimizer.param_groups[0]["lr"]


def numpy_weights(model, rng, scale):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1 or not isinstance(dict(model.named_modules())[name.rsplit(".", 1)[0]], nn.BatchNorm2d):
                p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))


def main(epochs=4, adversarial_epochs=2, unet_epochs=5, seed=0, epsilons=(0, 0.05, 0.1, 0.2), deterministic=False,
         bilinear=False):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    losses, accuracies, examples, penalties, jacobian = fgsm_part(rng, epochs, list(epsilons), deterministic,
                                                                  adversarial_epochs)
    unet_losses, dice_scores, lr = unet_part(rng, unet_epochs, deterministic, bilinear)
    return {"penalties": penalties, "jacobian_shape": jacobian[0], "saliency": jacobian[1],
            "losses": losses, "accuracies": accuracies, "n_examples": [len(e) for e in examples],
            "example_shape": examples[-1][0][2].shape if examples[-1] else None,
            "unet_losses": unet_losses, "dice_scores": dice_scores, "lr": lr}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    main(args.epochs)
