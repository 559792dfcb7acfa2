"""A small Vision Transformer as people write it: patch embedding by a Conv2d with stride = patch size, a learnable
cls token (nn.Parameter(torch.zeros(1, 1, d))) and position embedding (trunc_normal_), an nn.TransformerEncoder of
pre-norm GELU layers (batch_first), the head on the cls token; AdamW with two parameter groups (no weight decay for
norms, biases and embeddings), label-smoothed cross entropy, a linear warmup then cosine decay (LambdaLR, or
SequentialLR of LinearLR and CosineAnnealingLR), gradient clipping. PyTorch code: run it under oneflow_lite with
``python -m oneflow_lite.mock_torch run``."""

import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)  # B, D, H/P, W/P
        return x.flatten(2).transpose(1, 2)  # B, N, D


class ViT(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, num_classes=4, embed_dim=32, depth=2, num_heads=4,
                 mlp_ratio=2.0, dropout=0.1):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(p=dropout)
        encoder_layer = nn.TransformerEncoderLayer(d_model=embed_dim, nhead=num_heads,
                                                   dim_feedforward=int(embed_dim * mlp_ratio), dropout=dropout,
                                                   activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(encoder_layer, num_layers=depth, norm=nn.LayerNorm(embed_dim),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(embed_dim, num_classes)
        self.grad_checkpointing = False
        nn.init.trunc_normal_(self.pos_embed, std=.02)
        nn.init.trunc_normal_(self.cls_token, std=.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def forward(self, x):
        B = x.shape[0]
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(B, -1, -1)  # stole cls_tokens impl from Phil Wang, thanks
        x = torch.cat((cls_tokens, x), dim=1)
        x = x + self.pos_embed
        x = self.pos_drop(x)
        if self.grad_checkpointing and torch.is_grad_enabled():
            for blk in self.encoder.layers:  # recompute each block's activations in backward (timm's way)
                x = checkpoint(blk, x, use_reentrant=False)
            x = self.encoder.norm(x)
        else:
            x = self.encoder(x)
        return self.head(x[:, 0])


def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in ("cls_token", "pos_embed"):
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_scheduler(optimizer, warmup, total, kind):
    if kind == "lambda":
        def lr_lambda(step):
            if step < warmup:
                return float(step + 1) / float(max(1, warmup))
            progress = float(step - warmup) / float(max(1, total - warmup))
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    warm = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0 / warmup, end_factor=1.0, total_iters=warmup)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total - warmup, eta_min=1e-5)
    return torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warm, cosine], milestones=[warmup])


def make_data(rng, n, size=16):
    """Four classes: a bright quadrant (which one is the class), on noise."""
    labels = rng.integers(0, 4, n)
    images = rng.normal(0, 0.5, (n, 3, size, size)).astype(np.float32)
    h = size // 2
    for img, c in zip(images, labels):
        r, s = divmod(int(c), 2)
        img[:, r * h:(r + 1) * h, s * h:(s + 1) * h] += 1.0
    return torch.from_numpy(images), torch.from_numpy(labels)


def numpy_weights(model, seed, scale=0.1):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                continue
            p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))


def main(epochs=4, seed=0, n_train=128, batch_size=32, dropout=0.1, lr=3e-3, weight_decay=0.05, schedule="lambda",
         label_smoothing=0.1, deterministic=False, grad_checkpointing=False):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x, y = make_data(rng, n_train)
    tx, ty = make_data(rng, 64)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=not deterministic, drop_last=True)
    model = ViT(dropout=dropout).to(device)
    model.grad_checkpointing = grad_checkpointing
    if deterministic:
        numpy_weights(model, seed)
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"number of params: {n_params}")
    optimizer = torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, betas=(0.9, 0.999))
    total = epochs * len(loader)
    scheduler = make_scheduler(optimizer, warmup=max(1, total // 5), total=total, kind=schedule)
    losses, lrs, norms = [], [], []
    for epoch in range(epochs):
        model.train()
        running, seen = 0.0, 0
        for step, (images, targets) in enumerate(loader):
            images, targets = images.to(device), targets.to(device)
            logits = model(images)
            loss = F.cross_entropy(logits, targets, label_smoothing=label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)))
            optimizer.step()
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
            running += loss.item() * images.size(0)
            seen += images.size(0)
        losses.append(running / seen)
        model.eval()
        with torch.no_grad():
            preds = torch.argmax(model(tx.to(device)), dim=-1)
            acc = (preds == ty.to(device)).float().mean()
        print(f"epoch {epoch}: loss {losses[-1]:.4f} acc {acc:.3f} lr {optimizer.param_groups[0]['lr']:.2e}")
    return {"losses": losses, "accuracy": acc.item(), "lrs": lrs, "grad_norms": norms, "n_params": n_params,
            "weight_decays": [g["weight_decay"] for g in optimizer.param_groups]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    main(args.epochs)
