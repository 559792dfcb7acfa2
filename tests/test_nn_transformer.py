"""flow.nn.Transformer, TransformerDecoderLayer and TransformerDecoder: outputs against NumPy formulas written
here, submodule and parameter names, initialisation, masks, errors, PyTorch state dicts, nn.Graph capture, and
PyTorch's word_language_model TransformerModel (a subclass of nn.Transformer) run unchanged."""

import inspect
import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn

f64 = flow.float64


def arr(t):
    return t.numpy().astype(np.float64)


def close(t, expected, atol=1e-9, rtol=1e-7):
    np.testing.assert_allclose(arr(t), expected, atol=atol, rtol=rtol)


def uniform_params(m):
    with flow.no_grad():
        for p in m.parameters():
            p.copy_(flow.tensor(np.random.uniform(-0.5, 0.5, p.shape)))
    return m


# ---- NumPy references -----------------------------------------------------------------------------------
def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_layer_norm(x, norm, eps=1e-5):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    return y * arr(norm.weight) + arr(norm.bias)


def np_attention(attn, q, kv, mask=None):
    """Sequence-first (L, N, E) multi-head attention of ``attn``'s parameters; ``mask`` additive, broadcast to
    (N, H, L, S)."""
    e = q.shape[-1]
    heads = attn.num_heads
    hd = e // heads
    wq, wk, wv = np.split(arr(attn.in_proj_weight), 3)
    bq, bk, bv = np.split(arr(attn.in_proj_bias), 3)

    def split_heads(t):  # (L, N, E) -> (N, H, L, hd)
        return t.reshape(t.shape[0], t.shape[1], heads, hd).transpose(1, 2, 0, 3)

    qh, kh, vh = split_heads(q @ wq.T + bq), split_heads(kv @ wk.T + bk), split_heads(kv @ wv.T + bv)
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(hd)
    if mask is not None:
        scores = scores + mask
    out = (np_softmax(scores) @ vh).transpose(2, 0, 1, 3).reshape(q.shape)
    return out @ arr(attn.out_proj.weight).T + arr(attn.out_proj.bias)


def np_ff(layer, x, activation):
    h = activation(x @ arr(layer.linear1.weight).T + arr(layer.linear1.bias))
    return h @ arr(layer.linear2.weight).T + arr(layer.linear2.bias)


def relu(h):
    return np.maximum(h, 0)


def np_encoder_layer(layer, x, mask=None, activation=relu):
    if layer.norm_first:
        x = x + np_attention(layer.self_attn, np_layer_norm(x, layer.norm1), np_layer_norm(x, layer.norm1), mask)
        return x + np_ff(layer, np_layer_norm(x, layer.norm2), activation)
    x = np_layer_norm(x + np_attention(layer.self_attn, x, x, mask), layer.norm1)
    return np_layer_norm(x + np_ff(layer, x, activation), layer.norm2)


def np_decoder_layer(layer, x, mem, tgt_mask=None, mem_mask=None, activation=relu):
    if layer.norm_first:
        n1 = np_layer_norm(x, layer.norm1)
        x = x + np_attention(layer.self_attn, n1, n1, tgt_mask)
        x = x + np_attention(layer.multihead_attn, np_layer_norm(x, layer.norm2), mem, mem_mask)
        return x + np_ff(layer, np_layer_norm(x, layer.norm3), activation)
    x = np_layer_norm(x + np_attention(layer.self_attn, x, x, tgt_mask), layer.norm1)
    x = np_layer_norm(x + np_attention(layer.multihead_attn, x, mem, mem_mask), layer.norm2)
    return np_layer_norm(x + np_ff(layer, x, activation), layer.norm3)


def np_transformer(model, src, tgt, src_mask=None, tgt_mask=None, mem_mask=None):
    mem = src
    for layer in model.encoder.layers:
        mem = np_encoder_layer(layer, mem, src_mask)
    mem = np_layer_norm(mem, model.encoder.norm)
    out = tgt
    for layer in model.decoder.layers:
        out = np_decoder_layer(layer, out, mem, tgt_mask, mem_mask)
    return np_layer_norm(out, model.decoder.norm)


def causal(n):
    return np.triu(np.full((n, n), -np.inf), 1)


# ---- decoder layer and stack --------------------------------------------------------------------------------
def test_decoder_layer_matches_numpy():
    layer = uniform_params(nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, dtype=f64))
    assert [n for n, _ in layer.named_children()] == ["self_attn", "multihead_attn", "linear1", "dropout", "linear2",
                                                      "norm1", "norm2", "norm3", "dropout1", "dropout2", "dropout3"]
    assert layer.activation is nn.functional.relu and not layer.norm_first
    tgt, mem = np.random.randn(4, 3, 8), np.random.randn(6, 3, 8)
    close(layer(flow.tensor(tgt), flow.tensor(mem)), np_decoder_layer(layer, tgt, mem))
    out = layer(flow.tensor(tgt), flow.tensor(mem), tgt_mask=flow.tensor(causal(4)), tgt_is_causal=True)
    close(out, np_decoder_layer(layer, tgt, mem, tgt_mask=causal(4)))
    bool_mask = flow.tensor(np.triu(np.ones((4, 4), bool), 1))  # True: not allowed
    close(layer(flow.tensor(tgt), flow.tensor(mem), tgt_mask=bool_mask), np_decoder_layer(layer, tgt, mem,
                                                                                           tgt_mask=causal(4)))
    mem_mask = np.random.randn(4, 6)
    close(layer(flow.tensor(tgt), flow.tensor(mem), memory_mask=flow.tensor(mem_mask)),
          np_decoder_layer(layer, tgt, mem, mem_mask=mem_mask))


def test_decoder_layer_norm_first_gelu_batch_first_and_padding_masks():
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    layer = uniform_params(nn.TransformerDecoderLayer(8, 4, 16, 0.0, activation="gelu", norm_first=True,
                                                      batch_first=True, dtype=f64))
    tgt, mem = np.random.randn(3, 4, 8), np.random.randn(3, 5, 8)  # (N, T, E), (N, S, E)
    ref = np_decoder_layer(layer, tgt.transpose(1, 0, 2), mem.transpose(1, 0, 2), activation=gelu)
    close(layer(flow.tensor(tgt), flow.tensor(mem)), ref.transpose(1, 0, 2))
    kpm = np.zeros((3, 5), bool)
    kpm[1, 3:] = True  # batch 1 ignores memory positions 3 and 4
    mem_mask = np.where(kpm, -np.inf, 0.0)[:, None, None, :]  # (N, 1, 1, S)
    ref = np_decoder_layer(layer, tgt.transpose(1, 0, 2), mem.transpose(1, 0, 2), mem_mask=mem_mask,
                           activation=gelu)
    close(layer(flow.tensor(tgt), flow.tensor(mem), memory_key_padding_mask=flow.tensor(kpm)),
          ref.transpose(1, 0, 2))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
        nn.TransformerDecoderLayer(8, 2, activation="swish")
    custom = nn.TransformerDecoderLayer(8, 2, 16, activation=nn.Tanh())
    assert "(activation): Tanh()" in repr(custom)


def test_decoder_stacks_independent_copies_then_norm():
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, dtype=f64)
    dec = nn.TransformerDecoder(layer, 3, norm=nn.LayerNorm(4, dtype=f64))
    assert len(dec.layers) == 3 and dec.num_layers == 3 and dec.layers[0] is not layer
    assert dec.layers[0].linear1.weight is not dec.layers[1].linear1.weight
    uniform_params(dec)
    tgt, mem = np.random.randn(3, 2, 4), np.random.randn(5, 2, 4)
    h = tgt
    for lay in dec.layers:
        h = np_decoder_layer(lay, h, mem, tgt_mask=causal(3))
    out = dec(flow.tensor(tgt), flow.tensor(mem), tgt_mask=flow.tensor(causal(3)))
    close(out, np_layer_norm(h, dec.norm))
    no_norm = nn.TransformerDecoder(layer, 1)
    assert no_norm.norm is None
    assert len(list(dec.parameters())) == 3 * 18 + 2


# ---- Transformer ------------------------------------------------------------------------------------------
def test_transformer_structure_defaults_and_init():
    model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=32)
    assert isinstance(model.encoder, nn.TransformerEncoder) and isinstance(model.decoder, nn.TransformerDecoder)
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 1
    assert isinstance(model.encoder.norm, nn.LayerNorm) and isinstance(model.decoder.norm, nn.LayerNorm)
    assert (model.d_model, model.nhead, model.batch_first) == (16, 4, False)
    assert model.encoder.layers[0].dropout.p == 0.1 and model.encoder.layers[0].linear1.out_features == 32
    names = list(model.state_dict())
    assert names[:4] == ["encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias",
                         "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.self_attn.out_proj.bias"]
    assert "decoder.layers.0.multihead_attn.in_proj_weight" in names and names[-2:] == ["decoder.norm.weight",
                                                                                          "decoder.norm.bias"]
    for name, p in model.named_parameters():  # xavier_uniform_ on every matrix; vectors untouched
        values = arr(p)
        if p.dim() > 1:
            bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
            assert np.abs(values).max() <= bound and values.std() > bound / 4, name
        elif name.endswith("in_proj_bias"):
            assert np.all(values == 0), name
        elif "norm" in name:
            assert np.all(values == (1 if name.endswith("weight") else 0)), name
    defaults = {k: v.default for k, v in inspect.signature(nn.Transformer).parameters.items()}
    assert defaults == {"d_model": 512, "nhead": 8, "num_encoder_layers": 6, "num_decoder_layers": 6,
                        "dim_feedforward": 2048, "dropout": 0.1, "activation": "relu", "custom_encoder": None,
                        "custom_decoder": None, "layer_norm_eps": 1e-5, "batch_first": False, "norm_first": False,
                        "bias": True, "device": None, "dtype": None}


def test_generate_square_subsequent_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    assert mask.dtype == flow.float32 and mask.shape == (4, 4)
    np.testing.assert_array_equal(mask.numpy(), causal(4))
    mask64 = nn.Transformer.generate_square_subsequent_mask(3, dtype=f64, device="cpu")
    assert mask64.dtype == f64
    np.testing.assert_array_equal(mask64.numpy(), causal(3))
    model = nn.Transformer(8, 2, 1, 1, 16)
    np.testing.assert_array_equal(model.generate_square_subsequent_mask(2).numpy(), causal(2))


@pytest.mark.parametrize(("batch_first", "norm_first"), [(False, False), (True, False), (False, True)])
def test_transformer_matches_numpy(batch_first, norm_first):
    model = uniform_params(nn.Transformer(8, 2, 2, 2, 16, dropout=0.0, batch_first=batch_first,
                                          norm_first=norm_first, dtype=f64))
    src, tgt = np.random.randn(5, 3, 8), np.random.randn(4, 3, 8)
    mem_mask = np.random.randn(4, 5)
    ref = np_transformer(model, src, tgt, tgt_mask=causal(4), mem_mask=mem_mask)  # the layers read norm_first
    swap = (lambda a: a.transpose(1, 0, 2)) if batch_first else (lambda a: a)
    out = model(flow.tensor(swap(src)), flow.tensor(swap(tgt)), tgt_mask=model.generate_square_subsequent_mask(4,
                dtype=f64), memory_mask=flow.tensor(mem_mask))
    close(out, swap(ref), atol=1e-8)


def test_transformer_unbatched_masks_and_gradients():
    model = uniform_params(nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, dtype=f64))
    src, tgt = np.random.randn(5, 8), np.random.randn(3, 8)
    ref = np_transformer(model, src[:, None], tgt[:, None], src_mask=causal(5), tgt_mask=causal(3))[:, 0]
    out = model(flow.tensor(src), flow.tensor(tgt), src_mask=flow.tensor(causal(5)), tgt_mask=flow.tensor(causal(3)))
    assert out.shape == (3, 8)
    close(out, ref, atol=1e-8)
    kpm = np.array([[False, False, False, True, True]])
    srcb, tgtb = flow.tensor(src[:, None]), flow.tensor(tgt[:, None])
    masked = model(srcb, tgtb, src_key_padding_mask=flow.tensor(kpm), memory_key_padding_mask=flow.tensor(kpm))
    cut = model(flow.tensor(src[:3, None]), tgtb)  # padding the source equals dropping those positions
    close(masked, arr(cut), atol=1e-8)
    model(srcb, tgtb, tgt_mask=flow.tensor(causal(3))).sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())


def test_transformer_custom_encoder_decoder_and_errors():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0), 1)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, 0.0), 1)
    model = nn.Transformer(8, 2, custom_encoder=enc, custom_decoder=dec)
    assert model.encoder is enc and model.decoder is dec
    src, tgt = flow.randn(5, 2, 8), flow.randn(3, 2, 8)
    close(model(src, tgt), arr(dec(tgt, enc(src))))
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(flow.randn(5, 2, 8), flow.randn(3, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(flow.randn(5, 2, 8), flow.randn(3, 2, 6))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        model(src, tgt, tgt_is_causal=True)


def test_non_dynamically_quantizable_linear_is_importable_from_linear():
    from oneflow_lite.nn.modules.activation import NonDynamicallyQuantizableLinear as FromActivation
    from oneflow_lite.nn.modules.linear import NonDynamicallyQuantizableLinear

    assert NonDynamicallyQuantizableLinear is FromActivation
    assert isinstance(nn.MultiheadAttention(4, 2).out_proj, NonDynamicallyQuantizableLinear)
    assert issubclass(NonDynamicallyQuantizableLinear, nn.Linear)


# ---- nn.Graph -----------------------------------------------------------------------------------------------
def test_transformer_in_a_graph_equals_eager():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0).eval()

    class Infer(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, src, tgt, mask):
            return self.model(src, tgt, tgt_mask=mask)

    src, tgt = flow.randn(5, 2, 8), flow.randn(4, 2, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    g = Infer()
    for _ in range(2):
        np.testing.assert_allclose(arr(g(src, tgt, mask)), arr(model(src, tgt, tgt_mask=mask)), rtol=1e-6, atol=1e-6)


# ---- PyTorch ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("batch_first", "norm_first"), [(False, False), (True, True)])
def test_torch_state_dict_gives_torch_outputs(batch_first, norm_first):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "enable_nested_tensor is True, but self.use_nested_tensor is False"
        theirs = torch.nn.Transformer(16, 4, 2, 2, 32, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    ours = nn.Transformer(16, 4, 2, 2, 32, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    result = ours.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    theirs.eval()
    ours.eval()
    src, tgt = np.random.randn(3, 5, 16).astype(np.float32), np.random.randn(3, 4, 16).astype(np.float32)
    if not batch_first:
        src, tgt = src.transpose(1, 0, 2).copy(), tgt.transpose(1, 0, 2).copy()
    kpm = np.zeros((3, 5), bool)
    kpm[1, 3:] = True
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(nn.Transformer.generate_square_subsequent_mask(4).numpy(), t_mask.numpy())
    with torch.no_grad():
        want = theirs(torch.tensor(src), torch.tensor(tgt), tgt_mask=t_mask, src_key_padding_mask=torch.tensor(kpm),
                      memory_key_padding_mask=torch.tensor(kpm)).numpy()
    got = ours(flow.tensor(src), flow.tensor(tgt), tgt_mask=nn.Transformer.generate_square_subsequent_mask(4),
               src_key_padding_mask=flow.tensor(kpm), memory_key_padding_mask=flow.tensor(kpm))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)


def test_word_language_model_transformer_script_runs_unchanged():
    """PyTorch's examples/word_language_model TransformerModel (a subclass of nn.Transformer that replaces
    ``decoder`` and uses only ``self.encoder``) with ``torch`` = oneflow_lite, trained for a few steps."""
    torch = flow
    F = flow.nn.functional

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super(PositionalEncoding, self).__init__()  # noqa: UP008  (the script's spelling)
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer("pe", pe)

        def forward(self, x):
            x = x + self.pe[:x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
            super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,  # noqa: UP008
                                                   num_encoder_layers=nlayers)
            self.model_type = "Transformer"
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            self.init_weights()

        def _generate_square_subsequent_mask(self, sz):
            return torch.log(torch.tril(torch.ones(sz, sz)))

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask=True):
            if has_mask:
                device = src.device
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    mask = self._generate_square_subsequent_mask(len(src)).to(device)
                    self.src_mask = mask
            else:
                self.src_mask = None
            src = self.input_emb(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.encoder(src, mask=self.src_mask)
            output = self.decoder(output)
            return F.log_softmax(output, dim=-1)

    model = TransformerModel(10, 16, 2, 32, 2, dropout=0.1)
    assert isinstance(model.decoder, nn.Linear) and "decoder.layers.0.norm3.weight" not in model.state_dict()
    data = torch.tensor(np.tile(np.arange(10), 5)[:, None] * np.ones((1, 4), np.int64))
    criterion = nn.NLLLoss()
    losses = []
    for _epoch in range(4):
        for i in range(0, data.size(0) - 1, 7):
            seq_len = min(7, len(data) - 1 - i)
            source, target = data[i:i + seq_len], data[i + 1:i + 1 + seq_len].reshape(-1)
            model.zero_grad()
            output = model(source).view(-1, 10)
            loss = criterion(output, target)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-1.0)
            losses.append(loss.item())
    assert np.isfinite(losses).all() and np.mean(losses[-4:]) < 0.8 * np.mean(losses[:4])
    model.eval()
    assert model(data[:5], has_mask=False).shape == (5, 4, 10)
