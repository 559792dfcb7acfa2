"""pytorch/examples super_resolution (ESPCN, Shi et al. 2016): model.py's Net (super_resolution_model.py: orthogonal
init, PixelShuffle) and main.py's train / test / checkpoint are the original code. Changed, data only: BSDS300
images (downloaded by data.py) are replaced by smooth synthetic 24x24 luminance images and their 3x box-downsampled
8x8 inputs; the module-level setup moved into ``main()`` with main.py's flags as defaults (DataLoader with
num_workers=threads, shuffle=True); checkpoints go to a temporary directory. ``deterministic`` replaces the
orthogonal init by NumPy-seeded weights and turns shuffling off (for comparing numbers between frameworks)."""

import argparse
import os
import tempfile
from math import log10

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

from common import numpy_init
from super_resolution_model import Net


def synthetic_set(n, upscale_factor, size, rng):
    """(input, target) pairs: smooth images in [0, 1] (sums of random plane waves) and their box-downsampled
    inputs, the shapes data.py gives (1 x size/r x size/r and 1 x size x size)."""
    yy, xx = np.mgrid[0:size, 0:size] / size
    k = rng.uniform(-6, 6, (n, 3, 2))
    phase = rng.uniform(0, 2 * np.pi, (n, 3, 1, 1))
    waves = np.sin(k[..., 0, None, None] * xx + k[..., 1, None, None] * yy + phase).mean(1)
    target = (0.5 + 0.4 * waves).astype(np.float32)[:, None]
    r = upscale_factor
    low = target.reshape(n, 1, size // r, r, size // r, r).mean((3, 5))
    return TensorDataset(torch.from_numpy(low), torch.from_numpy(target))


def main(upscale_factor=3, batchSize=64, testBatchSize=10, nEpochs=2, lr=0.01, threads=4, seed=123, n_train=128,
         n_test=20, deterministic=False):
    global opt, device, model, criterion, optimizer, training_data_loader, testing_data_loader
    opt = argparse.Namespace(upscale_factor=upscale_factor, batchSize=batchSize, testBatchSize=testBatchSize,
                             nEpochs=nEpochs, lr=lr, accel=False, threads=threads, seed=seed)
    torch.manual_seed(opt.seed)
    if opt.accel and torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    print('===> Loading datasets')
    rng = np.random.default_rng(seed)
    train_set = synthetic_set(n_train, opt.upscale_factor, 24, rng)
    test_set = synthetic_set(n_test, opt.upscale_factor, 24, rng)
    training_data_loader = DataLoader(dataset=train_set, num_workers=opt.threads, batch_size=opt.batchSize,
                                      shuffle=not deterministic)
    testing_data_loader = DataLoader(dataset=test_set, num_workers=opt.threads, batch_size=opt.testBatchSize,
                                     shuffle=False)

    print('===> Building model')
    model = Net(upscale_factor=opt.upscale_factor).to(device)
    if deterministic:
        numpy_init(model, seed, scale=0.05)
    criterion = nn.MSELoss()

    optimizer = optim.Adam(model.parameters(), lr=opt.lr)

    losses, psnrs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for epoch in range(1, opt.nEpochs + 1):
            losses.append(train(epoch))
            psnrs.append(test())
            checkpoint(epoch, tmp)
        reloaded = torch.load(os.path.join(tmp, f"model_epoch_{opt.nEpochs}.pth"), weights_only=False)
    x = test_set[0][0].unsqueeze(0)
    with torch.no_grad():
        same = bool(torch.equal(reloaded(x), model(x)))
    return {"losses": losses, "psnr": psnrs, "reloaded_is_same": same, "reloaded_type": type(reloaded).__name__}


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)

        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()

        print("===> Epoch[{}]({}/{}): Loss: {:.4f}".format(epoch, iteration, len(training_data_loader), loss.item()))

    print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))
    return epoch_loss / len(training_data_loader)


def test():
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0].to(device), batch[1].to(device)

            prediction = model(input)
            mse = criterion(prediction, target)
            psnr = 10 * log10(1 / mse.item())
            avg_psnr += psnr
    print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
    return avg_psnr / len(testing_data_loader)


def checkpoint(epoch, directory="."):
    model_out_path = os.path.join(directory, "model_epoch_{}.pth".format(epoch))
    torch.save(model, model_out_path)
    print("Checkpoint saved to {}".format(model_out_path))


if __name__ == '__main__':
    main()
