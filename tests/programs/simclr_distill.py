"""Contrastive pre-training SimCLR-style, then knowledge distillation, as people write them: two augmented views of
each image (random flips and Gaussian noise), an encoder with a projection head (an MLP, or DINO's head ending in a
nn.utils.weight_norm layer whose magnitude is frozen), the NT-Xent loss written three
common ways (sthalles/SimCLR's positives/negatives split of a masked similarity matrix, a masked_fill of the
diagonal by -inf with cross_entropy against shifted arange labels, the UvA tutorial's cosine_similarity with -9e15
and logsumexp), a linear probe, then a small student trained on the teacher's softened outputs
(F.kl_div(F.log_softmax(s / T), F.softmax(t / T), reduction="batchmean") * T * T plus the hard-label loss). PyTorch
code: run it under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DINOHead(nn.Module):
    """DINO's projection head: an MLP to a bottleneck, L2-normalised, then a weight-normalised linear layer whose
    magnitude g is fixed at 1 (norm_last_layer)."""

    def __init__(self, in_dim, out_dim, use_bn=False, norm_last_layer=True, nlayers=3, hidden_dim=32,
                 bottleneck_dim=16):
        super().__init__()
        nlayers = max(nlayers, 1)
        if nlayers == 1:
            self.mlp = nn.Linear(in_dim, bottleneck_dim)
        else:
            layers = [nn.Linear(in_dim, hidden_dim)]
            if use_bn:
                layers.append(nn.BatchNorm1d(hidden_dim))
            layers.append(nn.GELU())
            for _ in range(nlayers - 2):
                layers.append(nn.Linear(hidden_dim, hidden_dim))
                if use_bn:
                    layers.append(nn.BatchNorm1d(hidden_dim))
                layers.append(nn.GELU())
            layers.append(nn.Linear(hidden_dim, bottleneck_dim))
            self.mlp = nn.Sequential(*layers)
        self.apply(self._init_weights)
        self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
        self.last_layer.weight_g.data.fill_(1)
        if norm_last_layer:
            self.last_layer.weight_g.requires_grad = False

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.mlp(x)
        x = nn.functional.normalize(x, dim=-1, p=2)
        x = self.last_layer(x)
        return x


class Encoder(nn.Module):
    def __init__(self, feat_dim=32, out_dim=16, head="mlp"):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, feat_dim),
        )
        # the projection head g(.) of SimCLR: an MLP on top of the representation
        if head == "dino":
            self.head = DINOHead(feat_dim, out_dim)
        else:
            self.head = nn.Sequential(nn.Linear(feat_dim, feat_dim), nn.ReLU(inplace=True),
                                      nn.Linear(feat_dim, out_dim))

    def forward(self, x):
        h = self.backbone(x)
        return h, self.head(h)


def info_nce_loss(features, batch_size, n_views=2, temperature=0.5):
    """sthalles/SimCLR: logits of the positive pair first, then the negatives; the label is always 0."""
    labels = torch.cat([torch.arange(batch_size) for i in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    labels = labels.to(device)

    features = F.normalize(features, dim=1)

    similarity_matrix = torch.matmul(features, features.T)
    # discard the main diagonal from both: labels and similarities matrix
    mask = torch.eye(labels.shape[0], dtype=torch.bool).to(device)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)

    # select and combine multiple positives
    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    # select only the negatives the negatives
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)

    logits = torch.cat([positives, negatives], dim=1)
    labels = torch.zeros(logits.shape[0], dtype=torch.long).to(device)

    logits = logits / temperature
    return logits, labels


def nt_xent(z1, z2, temperature=0.5):
    """The diagonal masked with -inf, each view's positive is the other view of the same image."""
    N = z1.size(0)
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=-1)
    sim = torch.mm(z, z.t()) / temperature
    sim = sim.masked_fill(torch.eye(2 * N, dtype=torch.bool, device=z.device), float("-inf"))
    targets = torch.cat([torch.arange(N, 2 * N), torch.arange(0, N)]).to(z.device)
    return F.cross_entropy(sim, targets)


def uva_nce(feats, temperature=0.5):
    """The UvA deep learning tutorial's version: cosine_similarity of all pairs, -9e15 on the diagonal."""
    cos_sim = F.cosine_similarity(feats[:, None, :], feats[None, :, :], dim=-1)
    self_mask = torch.eye(cos_sim.shape[0], dtype=torch.bool, device=cos_sim.device)
    cos_sim.masked_fill_(self_mask, -9e15)
    pos_mask = self_mask.roll(shifts=cos_sim.shape[0] // 2, dims=0)
    cos_sim = cos_sim / temperature
    nll = -cos_sim[pos_mask] + torch.logsumexp(cos_sim, dim=-1)
    nll = nll.mean()
    comb_sim = torch.cat([cos_sim[pos_mask][:, None], cos_sim.masked_fill(pos_mask, -9e15)], dim=-1)
    sim_argsort = comb_sim.argsort(dim=-1, descending=True).argmin(dim=-1)
    return nll, (sim_argsort == 0).float().mean()


def augment(x, generator=None, noise=None, flips=None):
    """A random horizontal flip per image and Gaussian noise (or the given ones)."""
    if flips is None:
        flips = torch.rand(x.size(0), generator=generator) < 0.5
    if noise is None:
        noise = torch.randn_like(x) * 0.1
    x = torch.where(flips[:, None, None, None], x.flip(-1), x)
    return x + noise


def make_data(rng, n, size=8):
    """Four classes of 1x8x8 images: a horizontal bar, a vertical bar, a cross or a dot, with noise."""
    labels = rng.integers(0, 4, n)
    images = rng.normal(0, 0.2, (n, 1, size, size)).astype(np.float32)
    for img, c in zip(images, labels):
        k = rng.integers(2, 6)
        if c in (0, 2):
            img[0, k, :] += 1.0
        if c in (1, 2):
            img[0, :, k] += 1.0
        if c == 3:
            img[0, k - 1:k + 1, k - 1:k + 1] += 2.0
    return torch.from_numpy(images), torch.from_numpy(labels)


def distillation_loss(student_logits, teacher_logits, labels, T=4.0, alpha=0.7):
    soft = F.kl_div(F.log_softmax(student_logits / T, dim=1), F.softmax(teacher_logits / T, dim=1),
                    reduction="batchmean") * T * T
    hard = F.cross_entropy(student_logits, labels)
    return alpha * soft + (1.0 - alpha) * hard


def numpy_weights(model, rng, scale=0.3):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight_g"):  # weight norm's magnitude stays at its 1
                continue
            if p.dim() > 1 or name.endswith("bias") and "backbone.1" not in name and "backbone.5" not in name:
                p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))


def main(steps=12, probe_steps=30, distill_steps=30, seed=0, batch_size=32, temperature=0.5, deterministic=False,
         head="mlp"):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x, y = make_data(rng, 128)
    encoder = Encoder(head=head).to(device)
    if deterministic:
        numpy_weights(encoder, rng)
    params = [p for p in encoder.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=3e-3, weight_decay=1e-4)
    criterion = torch.nn.CrossEntropyLoss().to(device)
    losses, agreement = [], []
    for step in range(steps):
        idx = torch.from_numpy(rng.choice(128, batch_size, replace=False))
        images = x[idx].to(device)
        if deterministic:
            views = [augment(images, noise=torch.from_numpy(rng.normal(0, 0.1, images.shape).astype(np.float32)),
                             flips=torch.from_numpy(rng.random(batch_size) < 0.5)) for _ in range(2)]
        else:
            views = [augment(images), augment(images)]
        encoder.train()
        _, z = encoder(torch.cat(views, dim=0))
        logits, labels = info_nce_loss(z, batch_size, temperature=temperature)
        loss = criterion(logits, labels)
        z1, z2 = z.chunk(2, dim=0)
        other = nt_xent(z1, z2, temperature)
        uva, top1 = uva_nce(z, temperature)
        agreement.append((loss.item(), other.item(), uva.item()))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 4 == 0:
            print(f"step {step}: nt-xent {loss.item():.4f} top1 {top1.item():.2f}")

    # linear probe on the frozen representation
    encoder.eval()
    with torch.no_grad():
        feats, _ = encoder(x)
    probe = nn.Linear(feats.size(1), 4).to(device)
    if deterministic:
        numpy_weights(probe, rng, scale=0.1)
    probe_opt = torch.optim.SGD(probe.parameters(), lr=0.5, momentum=0.9)
    probe_losses = []
    for _ in range(probe_steps):
        probe_opt.zero_grad()
        probe_loss = F.cross_entropy(probe(feats), y)
        probe_loss.backward()
        probe_opt.step()
        probe_losses.append(probe_loss.item())
    teacher = nn.Sequential(encoder.backbone, probe).eval()
    for p in teacher.parameters():
        p.requires_grad = False

    # distil the teacher into a small MLP student
    student = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    if deterministic:
        numpy_weights(student, rng, scale=0.1)
    student_opt = torch.optim.Adam(student.parameters(), lr=1e-2)
    kd_losses = []
    for _ in range(distill_steps):
        with torch.no_grad():
            teacher_logits = teacher(x)
        loss = distillation_loss(student(x), teacher_logits, y)
        student_opt.zero_grad(set_to_none=True)
        loss.backward()
        student_opt.step()
        kd_losses.append(loss.item())
    with torch.no_grad():
        agree = (student(x).argmax(1) == teacher(x).argmax(1)).float().mean().item()
        teacher_acc = (teacher(x).argmax(1) == y).float().mean().item()
    print(f"probe loss {probe_losses[-1]:.4f} teacher acc {teacher_acc:.3f} student agrees {agree:.3f}")
    g = encoder.head.last_layer.weight_g if head == "dino" else None
    return {"head_g": None if g is None else (g.requires_grad, g.grad, g.flatten().tolist()),
            "losses": losses, "agreement": agreement, "probe_losses": probe_losses, "kd_losses": kd_losses,
            "student_agreement": agree, "teacher_accuracy": teacher_acc}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    main(args.steps)
