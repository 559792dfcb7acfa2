"""PyTorch's DCGAN example, scaled down to 8x8 images: a generator of ConvTranspose2d + BatchNorm2d + ReLU + Tanh, a
discriminator of Conv2d + LeakyReLU + BatchNorm2d + Sigmoid, ``weights_init`` by class name, BCELoss and Adam with
betas (0.5, 0.999). PyTorch code: run it under oneflow_lite with ``python -m oneflow_lite.mock_torch run``.
``fixed_noise`` draws the latent vectors from NumPy (for comparing numbers between frameworks)."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nz, ngf, ndf, nc = 8, 8, 8, 1


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 1, 0, bias=False), nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True), nn.Flatten(), nn.Linear(ndf * 2, 1), nn.Sigmoid())

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def numpy_weights_init(module, rng):
    with torch.no_grad():
        for name, p in module.named_parameters():
            mean = 1.0 if p.dim() == 1 and "main.1." in name or "main.4." in name and p.dim() == 1 else 0.0
            p.copy_(torch.from_numpy((mean + 0.02 * rng.standard_normal(tuple(p.shape))).astype(np.float32)))


def main(iters=20, seed=0, fixed_noise=True):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    real_images = torch.from_numpy(np.tanh(rng.normal(0, 1, (64, 1, 8, 8))).astype(np.float32))
    netG, netD = Generator(), Discriminator()
    if fixed_noise:
        numpy_weights_init(netG, rng)
        numpy_weights_init(netD, rng)
    else:
        netG.apply(weights_init)
        netD.apply(weights_init)
    criterion = nn.BCELoss()
    optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    real_label, fake_label = 1.0, 0.0
    history = []
    for i in range(iters):
        real = real_images[(i * 16) % 64:(i * 16) % 64 + 16]
        b = real.size(0)
        netD.zero_grad()
        label = torch.full((b,), real_label, dtype=real.dtype)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        noise = (torch.from_numpy(rng.standard_normal((b, nz, 1, 1)).astype(np.float32)) if fixed_noise
                 else torch.randn(b, nz, 1, 1))
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()
        history.append((errD_real.item() + errD_fake.item(), errG.item()))
        if i % 5 == 0:
            print(f"[{i}/{iters}] Loss_D: {history[-1][0]:.4f} Loss_G: {history[-1][1]:.4f}")
    return {"history": history}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    main(args.iters, fixed_noise=False)
