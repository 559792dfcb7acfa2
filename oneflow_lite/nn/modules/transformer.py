"""``Transformer``, ``TransformerEncoderLayer``, ``TransformerEncoder``, ``TransformerDecoderLayer`` and
``TransformerDecoder`` (PyTorch's arguments, defaults and submodule names, so their state dicts line up and user
classes deriving from them work; no fused fast path)."""

from __future__ import annotations

import copy
import math

from oneflow_lite import functional as F
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.modules.activation import MultiheadAttention, _canonical_mask
from oneflow_lite.nn.modules.container import ModuleList
from oneflow_lite.nn.modules.dropout import Dropout
from oneflow_lite.nn.modules.linear import Linear
from oneflow_lite.nn.modules.normalization import LayerNorm

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]


def _activation(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str) or not callable(activation):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")  # noqa: TRY004  (PyTorch's type)
    return activation


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a residual connection and LayerNorm
    (after the residual by default; before the block with ``norm_first``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        activation = _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """``src`` (S, N, E), or (N, S, E) with ``batch_first``; masks as in ``MultiheadAttention``."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               None if src_mask is None else src_mask.dtype, "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = F.add(x, self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal))
            x = F.add(x, self._ff_block(self.norm2(x)))
        else:
            x = self.norm1(F.add(x, self._sa_block(x, src_mask, src_key_padding_mask, is_causal)))
            x = self.norm2(F.add(x, self._ff_block(x)))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (deep copies: independent parameters) applied in turn, then
    ``norm`` if given. ``enable_nested_tensor`` and ``mask_check`` are accepted for PyTorch compatibility (they
    tune PyTorch's nested-tensor fast path, which this does not have)."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False  # no nested-tensor fast path here
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        """``src`` as for the layer; ``mask`` / ``src_key_padding_mask`` go to every layer."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               None if mask is None else mask.dtype, "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention to the encoder's output (``memory``) and a feed-forward block,
    each with dropout, a residual connection and LayerNorm (after the residual by default; before the block with
    ``norm_first``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        activation = _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        """``tgt`` (T, N, E) and ``memory`` (S, N, E) (``batch_first``: N first; unbatched: no N); masks as in
        ``MultiheadAttention`` (``tgt_mask`` (T, T), ``memory_mask`` (T, S))."""
        x = tgt
        if self.norm_first:
            x = F.add(x, self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = F.add(x, self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                         memory_is_causal))
            x = F.add(x, self._ff_block(self.norm3(x)))
        else:
            x = self.norm1(F.add(x, self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal)))
            x = self.norm2(F.add(x, self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                                    memory_is_causal)))
            x = self.norm3(F.add(x, self._ff_block(x)))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` (deep copies: independent parameters) applied in turn to the
    target, each attending to the same ``memory``, then ``norm`` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        """Arguments as for the layer; every mask goes to every layer. ``tgt_is_causal`` is a hint only (the
        mask is always applied), so None (PyTorch: detect it from the mask) is False here."""
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=bool(tgt_is_causal),
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None):
    """(sz, sz) float mask: -inf above the diagonal (future positions), 0 on and below it."""
    return F.triu(F.full((sz, sz), -math.inf, dtype=dtype, device=device), 1)


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need" with PyTorch's defaults: ``encoder`` is a
    ``TransformerEncoder`` of ``num_encoder_layers`` layers plus a final LayerNorm, ``decoder`` a
    ``TransformerDecoder`` likewise (or ``custom_encoder`` / ``custom_decoder``); every parameter with more than
    one dim is re-initialised with ``xavier_uniform_``."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1, activation="relu",
                 custom_encoder=None, custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        """``src`` (S, N, E) and ``tgt`` (T, N, E) (``batch_first``: N first; unbatched: no N) -> (T, N, E):
        the decoder's output for ``tgt`` attending to the encoded ``src``."""
        is_batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if is_batched and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """A causal (sz, sz) float mask: -inf above the diagonal, 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        """``xavier_uniform_`` on every parameter with more than one dim (PyTorch's)."""
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
