"""PyTorch's "NLP From Scratch: Translation with a Sequence to Sequence Network and Attention" tutorial: a Lang
vocabulary, an EncoderRNN (embedding + GRU, batch_first), an AttnDecoderRNN with BahdanauAttention (additive scores,
softmax, bmm with the encoder outputs), teacher forcing, NLLLoss on log_softmax outputs, two Adam optimizers, and
greedy decoding with topk. The data: a toy "French" to English word-for-word translation with adjective-noun
swaps. PyTorch code: run it under oneflow_lite with ``python -m oneflow_lite.mock_torch run``."""

import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

SOS_token = 0
EOS_token = 1
MAX_LENGTH = 6


class Lang:
    def __init__(self, name):
        self.name = name
        self.word2index = {}
        self.word2count = {}
        self.index2word = {0: "SOS", 1: "EOS"}
        self.n_words = 2  # Count SOS and EOS

    def addSentence(self, sentence):
        for word in sentence.split(' '):
            self.addWord(word)

    def addWord(self, word):
        if word not in self.word2index:
            self.word2index[word] = self.n_words
            self.word2count[word] = 1
            self.index2word[self.n_words] = word
            self.n_words += 1
        else:
            self.word2count[word] += 1


FRENCH = {"le": "the", "chat": "cat", "chien": "dog", "noir": "black", "blanc": "white", "petit": "small",
          "mange": "eats", "dort": "sleeps", "voit": "sees", "oiseau": "bird", "rouge": "red"}
NOUNS, ADJECTIVES, VERBS = ["chat", "chien", "oiseau"], ["noir", "blanc", "rouge"], ["mange", "dort", "voit"]


def make_pairs(n, seed):
    """"le <noun> <adj> <verb>" -> "the <adj> <noun> <verb>" (French puts the adjective after the noun)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        noun, adj, verb = rng.choice(NOUNS), rng.choice(ADJECTIVES), rng.choice(VERBS)
        src = f"le {noun} {adj} {verb}"
        tgt = f"the {FRENCH[adj]} {FRENCH[noun]} {FRENCH[verb]}"
        pairs.append([src, tgt])
    return pairs


def indexesFromSentence(lang, sentence):
    return [lang.word2index[word] for word in sentence.split(' ')]


def tensorFromSentence(lang, sentence):
    indexes = indexesFromSentence(lang, sentence)
    indexes.append(EOS_token)
    return torch.tensor(indexes, dtype=torch.long, device=device).view(1, -1)


def get_dataloader(batch_size, pairs, input_lang, output_lang, shuffle=True):
    n = len(pairs)
    input_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
    target_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)

    for idx, (inp, tgt) in enumerate(pairs):
        inp_ids = indexesFromSentence(input_lang, inp)
        tgt_ids = indexesFromSentence(output_lang, tgt)
        inp_ids.append(EOS_token)
        tgt_ids.append(EOS_token)
        input_ids[idx, :len(inp_ids)] = inp_ids
        target_ids[idx, :len(tgt_ids)] = tgt_ids

    train_data = TensorDataset(torch.LongTensor(input_ids).to(device),
                               torch.LongTensor(target_ids).to(device))

    train_sampler = RandomSampler(train_data) if shuffle else SequentialSampler(train_data)
    train_dataloader = DataLoader(train_data, sampler=train_sampler, batch_size=batch_size)
    return train_dataloader


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size

        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super(BahdanauAttention, self).__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)

        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)

        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)
        self.teacher_forcing_ratio = 1.0

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []
        use_teacher_forcing = target_tensor is not None and random.random() < self.teacher_forcing_ratio

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if use_teacher_forcing:
                # Teacher forcing: Feed the target as the next input
                decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
            else:
                # Without teacher forcing: use its own predictions as the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)

        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))

        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)

        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)

        return output, hidden, attn_weights


def train_epoch(dataloader, encoder, decoder, encoder_optimizer,
                decoder_optimizer, criterion):

    total_loss = 0
    for data in dataloader:
        input_tensor, target_tensor = data

        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

        loss = criterion(
            decoder_outputs.view(-1, decoder_outputs.size(-1)),
            target_tensor.view(-1)
        )
        loss.backward()

        encoder_optimizer.step()
        decoder_optimizer.step()

        total_loss += loss.item()

    return total_loss / len(dataloader)


def train(train_dataloader, encoder, decoder, n_epochs, learning_rate=0.001,
          print_every=100):
    start = time.time()
    losses = []
    print_loss_total = 0  # Reset every print_every

    encoder_optimizer = optim.Adam(encoder.parameters(), lr=learning_rate)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=learning_rate)
    criterion = nn.NLLLoss()

    for epoch in range(1, n_epochs + 1):
        loss = train_epoch(train_dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion)
        print_loss_total += loss
        losses.append(loss)

        if epoch % print_every == 0:
            print_loss_avg = print_loss_total / print_every
            print_loss_total = 0
            print('%.1fs (%d %d%%) %.4f' % (time.time() - start, epoch, epoch / n_epochs * 100, print_loss_avg))
    return losses


def evaluate(encoder, decoder, sentence, input_lang, output_lang):
    with torch.no_grad():
        input_tensor = tensorFromSentence(input_lang, sentence)

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)

        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()

        decoded_words = []
        for idx in decoded_ids:
            if idx.item() == EOS_token:
                decoded_words.append('<EOS>')
                break
            decoded_words.append(output_lang.index2word[idx.item()])
    return decoded_words, decoder_attn


def numpy_weights(module, rng, scale=0.3):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))


def main(n_epochs=30, seed=0, hidden_size=32, batch_size=16, n_pairs=64, dropout_p=0.1, teacher_forcing_ratio=0.5,
         deterministic=False, lr=0.01):
    random.seed(seed)
    torch.manual_seed(seed)
    pairs = make_pairs(n_pairs, seed)
    input_lang, output_lang = Lang("fra"), Lang("eng")
    for src, tgt in pairs:
        input_lang.addSentence(src)
        output_lang.addSentence(tgt)
    print("Counted words:", input_lang.name, input_lang.n_words, output_lang.name, output_lang.n_words)
    train_dataloader = get_dataloader(batch_size, pairs, input_lang, output_lang, shuffle=not deterministic)

    encoder = EncoderRNN(input_lang.n_words, hidden_size, dropout_p).to(device)
    decoder = AttnDecoderRNN(hidden_size, output_lang.n_words, dropout_p).to(device)
    decoder.teacher_forcing_ratio = teacher_forcing_ratio
    if deterministic:
        rng = np.random.default_rng(seed)
        numpy_weights(encoder, rng)
        numpy_weights(decoder, rng)

    losses = train(train_dataloader, encoder, decoder, n_epochs, learning_rate=lr, print_every=5)

    encoder.eval()
    decoder.eval()
    correct, attention_shape = 0, None
    for src, tgt in pairs[:16]:
        output_words, attentions = evaluate(encoder, decoder, src, input_lang, output_lang)
        output_sentence = ' '.join(output_words)
        correct += output_sentence == tgt + " <EOS>"
        attention_shape = tuple(attentions.shape)
        print('>', src, '=', tgt, '<', output_sentence)
    return {"losses": losses, "accuracy": correct / 16, "attention_shape": attention_shape,
            "attention_row_sums": attentions.sum(-1).tolist()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()
    main(args.epochs)
