"""A word-level language model in the style of PyTorch's examples/word_language_model: embedding, a 2-layer LSTM
(or GRU / RNN_TANH), a tied decoder, truncated BPTT with repackaged hidden states, gradient clipping and a manually
annealed SGD learning rate. PyTorch code: run it under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from common import TEXT, numpy_init


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def main(epochs=3, seed=0, rnn_type="LSTM", dropout=0.2, deterministic_init=True):
    torch.manual_seed(seed)
    words = TEXT.replace(",", " ,").replace(".", " .").split()
    vocab = sorted(set(words))
    ids = torch.tensor([vocab.index(w) for w in words], dtype=torch.long)
    train = batchify(ids, 4)
    model = RNNModel(rnn_type, len(vocab), 16, 16, 2, dropout=dropout, tie_weights=True)
    if deterministic_init:
        numpy_init(model, seed, scale=0.1)
    criterion = nn.NLLLoss()
    lr, bptt, losses = 2.0, 6, []
    for epoch in range(1, epochs + 1):
        model.train()
        hidden = model.init_hidden(4)
        total = 0.0
        for batch, i in enumerate(range(0, train.size(0) - 1, bptt)):
            data, targets = get_batch(train, i, bptt)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total += loss.item()
        avg = total / (batch + 1)
        losses.append(avg)
        print(f"| epoch {epoch:3d} | lr {lr:02.2f} | loss {avg:5.2f} | ppl {math.exp(avg):8.2f}")
        lr /= 1.5
    return {"losses": losses}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--model", default="LSTM", choices=["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
    args = parser.parse_args()
    main(args.epochs, rnn_type=args.model)
