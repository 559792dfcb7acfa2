"""pytorch/examples fast_neural_style (Johnson et al. 2016): TransformerNet (neural_style_transformer_net.py), utils'
gram_matrix / normalize_batch, vgg.py's Vgg16 slicing and neural_style.py's train loop (content loss on relu2_2,
style loss on the Gram matrices of four VGG stages, Adam) are the original code. Changed, data only: the
ImageFolder dataset and the style image are small synthetic images (0-255, like ToTensor().mul(255)); VGG16's
pretrained features (a download) are torchvision's vgg16 ``features`` layer list built here with NumPy-seeded weights;
the argparse flags are main()'s keyword arguments (smaller image size and weights); the saved model goes to a temporary
directory and is loaded back. ``deterministic`` also initialises TransformerNet from NumPy (for comparing numbers)."""

import argparse
import os
import tempfile
import time
from collections import namedtuple

import numpy as np
import torch
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset

from common import numpy_init
from neural_style_transformer_net import TransformerNet


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    # normalize using imagenet mean and std
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


def vgg16_features(seed):
    """The first 23 layers of torchvision's vgg16().features (configuration D), weights from NumPy."""
    layers, in_ch = [], 3
    for v in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512]:
        if v == "M":
            layers.append(torch.nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers += [torch.nn.Conv2d(in_ch, v, kernel_size=3, padding=1), torch.nn.ReLU(inplace=True)]
            in_ch = v
    features = torch.nn.Sequential(*layers)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for m in features:
            if isinstance(m, torch.nn.Conv2d):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.from_numpy((rng.standard_normal(tuple(m.weight.shape)) * np.sqrt(2 / fan_in))
                                                .astype(np.float32)))
                m.bias.zero_()
    return features


class Vgg16(torch.nn.Module):
    def __init__(self, requires_grad=False, seed=0):
        super(Vgg16, self).__init__()
        vgg_pretrained_features = vgg16_features(seed)
        self.slice1 = torch.nn.Sequential()
        self.slice2 = torch.nn.Sequential()
        self.slice3 = torch.nn.Sequential()
        self.slice4 = torch.nn.Sequential()
        for x in range(4):
            self.slice1.add_module(str(x), vgg_pretrained_features[x])
        for x in range(4, 9):
            self.slice2.add_module(str(x), vgg_pretrained_features[x])
        for x in range(9, 16):
            self.slice3.add_module(str(x), vgg_pretrained_features[x])
        for x in range(16, 23):
            self.slice4.add_module(str(x), vgg_pretrained_features[x])
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        h = self.slice3(h)
        h_relu3_3 = h
        h = self.slice4(h)
        h_relu4_3 = h
        vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2', 'relu3_3', 'relu4_3'])
        out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)
        return out


def synthetic_images(n, size, rng):
    """(image, label) pairs like ImageFolder + Resize + CenterCrop + ToTensor().mul(255): 3 x size x size in 0..255."""
    yy, xx = np.mgrid[0:size, 0:size] / size
    k = rng.uniform(-8, 8, (n, 3, 2))
    img = 127.5 * (1 + np.sin(k[..., 0, None, None] * xx + k[..., 1, None, None] * yy))
    return TensorDataset(torch.from_numpy(img.astype(np.float32)), torch.zeros(n, dtype=torch.long))


def train(args):
    device = torch.device("cpu")
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    rng = np.random.default_rng(args.seed)
    train_dataset = synthetic_images(args.n_images, args.image_size, rng)
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size)

    transformer = TransformerNet().to(device)
    if args.deterministic:
        numpy_init(transformer, args.seed, scale=0.05)
    optimizer = Adam(transformer.parameters(), args.lr)
    mse_loss = torch.nn.MSELoss()

    vgg = Vgg16(requires_grad=False, seed=args.seed).to(device)
    style = synthetic_images(1, args.image_size, rng)[0][0]
    style = style.repeat(args.batch_size, 1, 1, 1).to(device)

    features_style = vgg(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]

    losses = []
    for e in range(args.epochs):
        transformer.train()
        agg_content_loss = 0.
        agg_style_loss = 0.
        count = 0
        for batch_id, (x, _) in enumerate(train_loader):
            n_batch = len(x)
            count += n_batch
            optimizer.zero_grad()

            x = x.to(device)
            y = transformer(x)

            y = normalize_batch(y)
            x = normalize_batch(x)

            features_y = vgg(y)
            features_x = vgg(x)

            content_loss = args.content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)

            style_loss = 0.
            for ft_y, gm_s in zip(features_y, gram_style):
                gm_y = gram_matrix(ft_y)
                style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
            style_loss *= args.style_weight

            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()

            agg_content_loss += content_loss.item()
            agg_style_loss += style_loss.item()
            losses.append(total_loss.item())

            if (batch_id + 1) % args.log_interval == 0:
                mesg = "{}\tEpoch {}:\t[{}/{}]\tcontent: {:.6f}\tstyle: {:.6f}\ttotal: {:.6f}".format(
                    time.ctime(), e + 1, count, len(train_dataset),
                                  agg_content_loss / (batch_id + 1),
                                  agg_style_loss / (batch_id + 1),
                                  (agg_content_loss + agg_style_loss) / (batch_id + 1)
                )
                print(mesg)

    # save model
    transformer.eval().cpu()
    save_model_filename = f"epoch_{args.epochs}_{args.content_weight}_{args.style_weight}.model"
    save_model_path = os.path.join(args.save_model_dir, save_model_filename)
    torch.save(transformer.state_dict(), save_model_path)
    print("\nDone, trained model saved at", save_model_path)
    return transformer, save_model_path, losses


def main(epochs=2, batch_size=2, n_images=4, image_size=16, lr=1e-3, content_weight=1.0, style_weight=10.0, seed=42,
         log_interval=1, deterministic=False):
    with tempfile.TemporaryDirectory() as tmp:
        args = argparse.Namespace(epochs=epochs, batch_size=batch_size, n_images=n_images, image_size=image_size,
                                  lr=lr, content_weight=content_weight, style_weight=style_weight, seed=seed,
                                  log_interval=log_interval, deterministic=deterministic, save_model_dir=tmp)
        transformer, path, losses = train(args)
        style_model = TransformerNet()
        style_model.load_state_dict(torch.load(path))  # stylize()'s reload (a weights-only load)
        style_model.eval()
    x = synthetic_images(1, image_size, np.random.default_rng(0))[0][0].unsqueeze(0)
    with torch.no_grad():
        output = style_model(x)
        same = bool(torch.allclose(output, transformer(x)))
    return {"losses": losses, "output_shape": tuple(output.shape), "reloaded_is_same": same}


if __name__ == "__main__":
    main()
