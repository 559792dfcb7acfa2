"""A sequence-to-sequence nn.Transformer that learns to reverse digit strings: source and target embeddings with
positional encodings, generate_square_subsequent_mask, padding masks, CrossEntropyLoss(ignore_index=PAD), Adam and
greedy decoding. PyTorch code: run it under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse
import math

import numpy as np
import torch
import torch.nn as nn

from common import numpy_init

PAD, BOS, EOS = 0, 1, 2


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=32):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:x.size(0)]


class Seq2Seq(nn.Module):
    def __init__(self, vocab, d_model=32, nhead=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = PositionalEncoding(d_model)
        self.transformer = nn.Transformer(d_model=d_model, nhead=nhead, num_encoder_layers=layers,
                                          num_decoder_layers=layers, dim_feedforward=64, dropout=0.0)
        self.out = nn.Linear(d_model, vocab)
        self.d_model = d_model

    def forward(self, src, tgt):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(0))
        s = self.pos(self.embed(src) * math.sqrt(self.d_model))
        t = self.pos(self.embed(tgt) * math.sqrt(self.d_model))
        h = self.transformer(s, t, tgt_mask=tgt_mask, src_key_padding_mask=(src == PAD).t(),
                             tgt_key_padding_mask=(tgt == PAD).t(), memory_key_padding_mask=(src == PAD).t())
        return self.out(h)


def make_batch(rng, n, length=5):
    seqs = rng.integers(3, 13, size=(n, length))
    src = torch.from_numpy(np.concatenate([seqs, np.full((n, 1), EOS)], 1).T.copy())
    rev = seqs[:, ::-1]
    tgt = torch.from_numpy(np.concatenate([np.full((n, 1), BOS), rev, np.full((n, 1), EOS)], 1).T.copy())
    return src.long(), tgt.long()


@torch.no_grad()
def greedy(model, src, steps):
    ys = torch.full((1, src.size(1)), BOS, dtype=torch.long)
    for _ in range(steps):
        logits = model(src, ys)
        ys = torch.cat([ys, logits[-1].argmax(-1, keepdim=True).t()], dim=0)
    return ys


def main(steps=60, seed=0, deterministic_init=True):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = Seq2Seq(13)
    if deterministic_init:
        numpy_init(model, seed, scale=0.1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    losses = []
    for step in range(steps):
        src, tgt = make_batch(rng, 16)
        logits = model(src, tgt[:-1])
        loss = criterion(logits.reshape(-1, logits.size(-1)), tgt[1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 20 == 0:
            print(f"step {step:3d} loss {loss.item():.4f}")
    model.eval()
    src, tgt = make_batch(rng, 8)
    pred = greedy(model, src, tgt.size(0) - 1)
    acc = (pred[1:] == tgt[1:]).float().mean().item()
    print(f"greedy token accuracy {acc:.2%}")
    return {"losses": losses, "accuracy": acc}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    main(args.steps)
