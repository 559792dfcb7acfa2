"""pytorch/examples word_language_model: model.py (word_lm_model.py) and data.py (word_lm_data.py) unchanged; main.py's
batchify, get_batch, repackage_hidden, evaluate, train, the epoch loop with learning-rate annealing, the whole-model
checkpoint (torch.save(model, f)) and its reload under torch.serialization.safe_globals, flatten_parameters, and
generate.py's sampling loop. Changed, data only: Wikitext-2 is replaced by a tiny synthetic corpus written to a
temporary directory; the module-level code moved into ``main()`` (argparse defaults kept, sizes passed in).
``deterministic`` initialises from NumPy and turns dropout off (for comparing numbers between frameworks)."""

import argparse
import math
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

import word_lm_data as data
from common import numpy_init
from word_lm_model import PositionalEncoding, RNNModel, TransformerModel

WORDS = "the cat sat on a mat and the dog ran to its bed while birds sang".split()


def write_corpus(path, seed):
    rng = np.random.default_rng(seed)
    for name, lines in (("train", 40), ("valid", 8), ("test", 8)):
        with open(os.path.join(path, f"{name}.txt"), "w", encoding="utf8") as f:
            for _ in range(lines):  # a repeating pattern the model can learn, with some noise
                start = rng.integers(0, len(WORDS))
                words = [WORDS[(start + i) % len(WORDS)] if rng.random() > 0.1 else WORDS[rng.integers(0, 16)]
                         for i in range(8)]
                f.write(" ".join(words) + "\n")


def batchify(data, bsz):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""

    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i:i+seq_len]
    target = source[i+1:i+1+seq_len].view(-1)
    return data, target


def evaluate(data_source):
    # Turn on evaluation mode which disables dropout.
    model.eval()
    total_loss = 0.
    ntokens = len(corpus.dictionary)
    if args.model != 'Transformer':
        hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            if args.model == 'Transformer':
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    # Turn on training mode which enables dropout.
    model.train()
    total_loss = 0.
    start_time = time.time()
    ntokens = len(corpus.dictionary)
    if args.model != 'Transformer':
        hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        # Starting each batch, we detach the hidden state from how it was previously produced.
        # If we didn't, the model would try backpropagating all the way to start of the dataset.
        if args.use_optimizer:
            optimizer.zero_grad()
        else:
            model.zero_grad()
        if args.model == 'Transformer':
            output = model(data)
            output = output.view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()

        # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        if args.use_optimizer:
            optimizer.step()
        else:
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

        total_loss += loss.item()

        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | '
                    'loss {:5.2f} | ppl {:8.2f}'.format(
                epoch, batch, len(train_data) // args.bptt, lr,
                elapsed * 1000 / args.log_interval, cur_loss, math.exp(cur_loss)))
            total_loss = 0
            start_time = time.time()
        if args.dry_run:
            break


def load_best(f):
    """main.py's reload of the best checkpoint: only the listed classes are allowed by the weights-only load."""
    if args.model == 'Transformer':
        safe_globals = [
            PositionalEncoding,
            TransformerModel,
            torch.nn.functional.relu,
            torch.nn.modules.activation.MultiheadAttention,
            torch.nn.modules.container.ModuleList,
            torch.nn.modules.dropout.Dropout,
            torch.nn.modules.linear.Linear,
            torch.nn.modules.linear.NonDynamicallyQuantizableLinear,
            torch.nn.modules.normalization.LayerNorm,
            torch.nn.modules.sparse.Embedding,
            torch.nn.modules.transformer.TransformerEncoder,
            torch.nn.modules.transformer.TransformerEncoderLayer,
        ]
    else:
        safe_globals = [
            RNNModel,
            torch.nn.modules.dropout.Dropout,
            torch.nn.modules.linear.Linear,
            torch.nn.modules.rnn.GRU,
            torch.nn.modules.rnn.LSTM,
            torch.nn.modules.rnn.RNN,
            torch.nn.modules.sparse.Embedding,
        ]
    with torch.serialization.safe_globals(safe_globals):
        return torch.load(f)


def generate(words, temperature=1.0):
    """generate.py's loop: sample ``words`` words from the reloaded model."""
    ntokens = len(corpus.dictionary)
    is_transformer_model = hasattr(model, 'model_type') and model.model_type == 'Transformer'
    if not is_transformer_model:
        hidden = model.init_hidden(1)
    input = torch.randint(ntokens, (1, 1), dtype=torch.long).to(device)
    out = []
    with torch.no_grad():  # no tracking history
        for i in range(words):
            if is_transformer_model:
                output = model(input, False)
                word_weights = output[-1].squeeze().div(temperature).exp().cpu()
                word_idx = torch.multinomial(word_weights, 1)[0]
                word_tensor = torch.Tensor([[word_idx]]).long().to(device)
                input = torch.cat([input, word_tensor], 0)
            else:
                output, hidden = model(input, hidden)
                word_weights = output.squeeze().div(temperature).exp().cpu()
                word_idx = torch.multinomial(word_weights, 1)[0]
                input.fill_(word_idx)
            out.append(corpus.dictionary.idx2word[word_idx])
    return out


def main(model_type='LSTM', emsize=200, nhid=200, nlayers=2, lr=20, clip=0.25, epochs=40, batch_size=20, bptt=35,
         dropout=0.2, tied=False, seed=1111, nhead=2, use_optimizer=False, deterministic=False, words=10):
    global args, device, corpus, eval_batch_size, train_data, model, criterion, optimizer, epoch
    args = argparse.Namespace(model=model_type, emsize=emsize, nhid=nhid, nlayers=nlayers, lr=lr, clip=clip,
                              epochs=epochs, batch_size=batch_size, bptt=bptt, dropout=dropout, tied=tied, seed=seed,
                              log_interval=200, nhead=nhead, dry_run=False, accel=False, use_optimizer=use_optimizer)
    torch.manual_seed(args.seed)
    if args.accel and torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    with tempfile.TemporaryDirectory() as tmp:
        write_corpus(tmp, seed)
        corpus = data.Corpus(tmp)
        eval_batch_size = 10
        train_data = batchify(corpus.train, args.batch_size)
        val_data = batchify(corpus.valid, eval_batch_size)
        test_data = batchify(corpus.test, eval_batch_size)

        ntokens = len(corpus.dictionary)
        if args.model == 'Transformer':
            model = TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout).to(device)
        else:
            model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout,
                             args.tied).to(device)
        if deterministic:  # also no dropout: nn.Transformer's layers keep their default 0.1 whatever --dropout says
            numpy_init(model, seed, scale=0.1)
            for module in model.modules():
                if isinstance(module, nn.Dropout):
                    module.p = 0.0
                elif isinstance(module, nn.MultiheadAttention):
                    module.dropout = 0.0
        criterion = nn.NLLLoss()
        if args.use_optimizer:
            optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

        # Loop over epochs.
        lr = args.lr
        best_val_loss = None
        val_losses = []
        save = os.path.join(tmp, 'model.pt')
        for epoch in range(1, args.epochs+1):
            globals()["lr"] = lr  # train() reads the module-level lr, as in main.py
            train()
            val_loss = evaluate(val_data)
            val_losses.append(val_loss)
            print('| end of epoch {:3d} | valid loss {:5.2f} | valid ppl {:8.2f}'.format(epoch, val_loss,
                                                                                      math.exp(val_loss)))
            # Save the model if the validation loss is the best we've seen so far.
            if not best_val_loss or val_loss < best_val_loss:
                with open(save, 'wb') as f:
                    torch.save(model, f)
                best_val_loss = val_loss
            else:
                # Anneal the learning rate if no improvement has been seen in the validation dataset.
                lr /= 4.0

        # Load the best saved model.
        with open(save, 'rb') as f:
            model = load_best(f)
            if args.model in ['RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU']:
                model.rnn.flatten_parameters()

    # Run on test data.
    test_loss = evaluate(test_data)
    print('| End of training | test loss {:5.2f} | test ppl {:8.2f}'.format(test_loss, math.exp(test_loss)))
    return {"losses": val_losses, "test_loss": test_loss, "best_val_loss": best_val_loss,
            "sample": generate(words), "reloaded_type": type(model).__name__,
            "vocabulary": list(corpus.dictionary.idx2word)}


if __name__ == '__main__':
    main(epochs=3)
