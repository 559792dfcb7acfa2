"""A nanoGPT-style GPT written with PyTorch's API, the model of the GPT rows of ``benchmarks/run.py``.

Token and position embeddings, pre-LayerNorm blocks of causal self-attention
(``F.scaled_dot_product_attention(is_causal=True)``) and a GELU MLP, a final LayerNorm, a language-model
head tied to the token embedding, cross-entropy; AdamW with decay (matrices) / no-decay (biases, norms)
parameter groups. Only ``import torch`` names the framework: ``load("torch")`` executes this file with
PyTorch, ``load("oneflow_lite")`` with ``flow.mock_torch`` enabled, so both run the very same source.
Submodules are bound at import (``from torch import nn, optim``): a mock ``torch`` proxy used after
``disable()`` resolves ``torch.<submodule>`` to PyTorch's again, so the code reads none at run time.

Run alone: ``python benchmarks/gpt.py [--config tiny|mid] [--steps N]`` (PyTorch), or
``python -m oneflow_lite.mock_torch run benchmarks/gpt.py`` (oneflow_lite).
"""

import argparse
import importlib.util
import math
import pathlib
import sys
import time
from dataclasses import dataclass

import torch
from torch import nn, optim
from torch.nn import functional as F
from torch.nn import init


@dataclass(frozen=True)
class GPTConfig:
    """The model's sizes and the batch of one train step."""

    n_layer: int
    n_head: int
    n_embd: int
    block_size: int
    batch: int
    vocab_size: int = 65  # nanoGPT's character-level Shakespeare


CONFIGS = {
    "tiny": GPTConfig(n_layer=2, n_head=4, n_embd=64, block_size=32, batch=8),
    "mid": GPTConfig(n_layer=4, n_head=4, n_embd=128, block_size=128, batch=8),
}
LR, BETAS, WEIGHT_DECAY = 6e-4, (0.9, 0.95), 0.1


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.n_head, self.n_embd = cfg.n_head, cfg.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(cfg.vocab_size, cfg.n_embd),
            "wpe": nn.Embedding(cfg.block_size, cfg.n_embd),
            "h": nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)]),
            "ln_f": nn.LayerNorm(cfg.n_embd),
        })
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def configure_optimizer(self, weight_decay=WEIGHT_DECAY, lr=LR, betas=BETAS, **options):
        """AdamW with the matrices decayed and the biases and norm weights not (nanoGPT's groups)."""
        params = [p for p in self.parameters() if p.requires_grad]  # the tied weight once
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        return optim.AdamW(groups, lr=lr, betas=betas, **options)


def train_step(model, optimizer, x, y):
    """One eager train step: forward, backward, AdamW; the loss (a 0-d tensor)."""
    loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss


def make_batch(cfg: GPTConfig, seed: int = 0):
    """Token ids and targets (int64 NumPy arrays of shape (batch, block_size)) from a seeded generator."""
    import numpy as np
    rng = np.random.default_rng(seed)
    data = rng.integers(0, cfg.vocab_size, (cfg.batch, cfg.block_size + 1))
    return data[:, :-1].copy(), data[:, 1:].copy()


def load(framework: str):
    """This file as a module whose ``torch`` is PyTorch (``"torch"``) or oneflow_lite (``"oneflow_lite"``,
    executed with ``flow.mock_torch`` enabled; the names it bound stay oneflow_lite's afterwards)."""
    path = pathlib.Path(__file__).resolve()
    spec = importlib.util.spec_from_file_location(f"_gpt_on_{framework}", path)
    module = importlib.util.module_from_spec(spec)
    if framework == "torch":
        spec.loader.exec_module(module)
    elif framework == "oneflow_lite":
        import oneflow_lite as flow
        with flow.mock_torch.enable():
            spec.loader.exec_module(module)
    else:
        raise ValueError(f"gpt.load: framework must be 'torch' or 'oneflow_lite', got {framework!r}")
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    cfg = CONFIGS[args.config]
    torch.manual_seed(0)
    model = GPT(cfg)
    optimizer = model.configure_optimizer()
    x, y = (torch.from_numpy(a) for a in make_batch(cfg))
    print(f"{torch.__version__}: GPT-{args.config}, {sum(p.numel() for p in model.parameters())} parameters")
    for step in range(args.steps):
        start = time.perf_counter()
        loss = train_step(model, optimizer, x, y)
        print(f"step {step}: loss {loss.item():.6f}, {(time.perf_counter() - start) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
