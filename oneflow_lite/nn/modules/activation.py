"""Activation layers (``ReLU``, ``GELU``, ``Softmax``, ...) and ``MultiheadAttention``.

Note [MultiheadAttention]
``MultiheadAttention`` follows ``torch.nn.functional.multi_head_attention_forward``:
sequence-first (L, N, E) inputs (``batch_first`` transposes), unbatched (L, E) inputs,
bool masks where True means *not allowed* (turned into -inf float masks; float masks
are added), ``key_padding_mask`` (N, S) merged into ``attn_mask`` per head, ``bias_k`` /
``bias_v`` and ``add_zero_attn`` appending a key / value position. With ``need_weights``
it computes ``softmax(q k^T / sqrt(head_dim) + mask)`` explicitly and also returns the
weights (averaged over heads by default); otherwise it calls
``scaled_dot_product_attention``. ``is_causal`` is only a hint that ``attn_mask`` is causal
(the mask is required and used), as in PyTorch. Shape errors are AssertionErrors with
PyTorch's messages.
"""

from __future__ import annotations

import math
import warnings

from oneflow_lite import functional as F
from oneflow_lite.framework import dtype as dt
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.modules.linear import NonDynamicallyQuantizableLinear
from oneflow_lite.nn.parameter import Parameter

__all__ = ["CELU", "ELU", "GELU", "GLU", "SELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Mish", "MultiheadAttention", "PReLU", "RReLU", "ReLU", "ReLU6", "SiLU",
           "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink",
           "Threshold"]


def _inplace_repr(inplace: bool, lead: str = "") -> str:
    return (lead + "inplace=True") if inplace else ""


class ReLU(Module):
    """``max(0, x)``."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_repr(self.inplace, ", ")


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)``."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input):
        return F.relu6(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class LeakyReLU(Module):
    """``x`` where ``x >= 0``, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + _inplace_repr(self.inplace, ", ")


class ELU(Module):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace, ", ")


class _InplaceActivation(Module):
    _fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return self._fn(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class SELU(_InplaceActivation):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""

    _fn = staticmethod(F.selu)


class SiLU(_InplaceActivation):
    """``x * sigmoid(x)`` (swish)."""

    _fn = staticmethod(F.silu)


class Mish(_InplaceActivation):
    """``x * tanh(softplus(x))``."""

    _fn = staticmethod(F.mish)


class Hardsigmoid(_InplaceActivation):
    """``relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Hardswish(_InplaceActivation):
    """``x * relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class GELU(Module):
    """``x * Phi(x)`` (``approximate='tanh'``: the tanh approximation)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, input):
        return F.sigmoid(input)


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """``exp(x) / sum(exp(x))`` along ``dim`` (None: PyTorch's legacy implicit choice, with a warning)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log(softmax(x))`` along ``dim``, computed stably."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """``softmax(-x)`` along ``dim`` (None: PyTorch's legacy implicit choice, with a warning)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of a (C, H, W) or (N, C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class Threshold(Module):
    """``value`` where ``x <= threshold``, else ``x``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + _inplace_repr(self.inplace, ", ")


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace, ", ")


class RReLU(Module):
    """Randomized leaky ReLU: slope ``~ U(lower, upper)`` per element in training, ``(lower + upper) / 2``
    in evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + _inplace_repr(self.inplace, ", ")


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return self._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(_Shrink):
    """``x`` where ``|x| > lambd``, else 0."""

    _fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""

    _fn = staticmethod(F.softshrink)


class _Elementwise(Module):
    _fn = None

    def forward(self, input):
        return self._fn(input)


class LogSigmoid(_Elementwise):
    """``log(sigmoid(x))``."""

    _fn = staticmethod(F.logsigmoid)


class Softsign(_Elementwise):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Elementwise):
    """``x - tanh(x)``."""

    _fn = staticmethod(F.tanhshrink)


class GLU(Module):
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves of the input along ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """``x`` where ``x > 0``, else ``weight * x``, with a learnt slope shared (``num_parameters=1``) or one
    per channel; the weight starts at ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(F.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


# ---- multi-head attention (Note [MultiheadAttention]) ------------------------------------------------------
def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask as a float mask of ``target_type`` (-inf where True), a float mask as is."""
    if mask is None:
        return None
    d = mask.dtype
    if d.is_floating_point:
        return mask
    if d is not dt.bool_:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and other_type is not d:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      f"instead.", stacklevel=4)
    return F.masked_fill(F.zeros_like(mask, dtype=target_type), mask, -math.inf)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """Whether the inputs are batched (3-D query); AssertionErrors with PyTorch's messages otherwise."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.ndim}-D tensor instead")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.ndim}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query "
                         f"tensor")


def _in_projection(query, key, value, w_q, w_k, w_v, b_q, b_k, b_v):
    return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, average_attn_weights=True, is_causal=False):
    """``torch.nn.functional.multi_head_attention_forward`` on (L, N, E) / (S, N, E) inputs (or unbatched
    (L, E) / (S, E)); see Note [MultiheadAttention]. Returns ``(output, weights or None)``."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = F.unsqueeze(query, 1), F.unsqueeze(key, 1), F.unsqueeze(value, 1)
        if key_padding_mask is not None:
            key_padding_mask = F.unsqueeze(key_padding_mask, 0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
    head_dim = _mha_head_dim(key, value, embed_dim, embed_dim_to_check, num_heads, use_separate_proj_weight)
    q, k, v = _mha_in_projection(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight,
                                 q_proj_weight, k_proj_weight, v_proj_weight)
    if attn_mask is not None:
        attn_mask = _mha_check_attn_mask(attn_mask, bsz * num_heads, tgt_len, key.shape[0])
    if bias_k is not None and bias_v is not None:
        k = F.cat([k, F.repeat(bias_k, (1, bsz, 1))])
        v = F.cat([v, F.repeat(bias_v, (1, bsz, 1))])
        attn_mask, key_padding_mask = _mha_pad_masks(attn_mask, key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    q, k, v = (_mha_split_heads(t, bsz * num_heads, head_dim) for t in (q, k, v))
    if add_zero_attn:
        zeros = F.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = F.cat([k, zeros], dim=1)
        v = F.cat([v, zeros], dim=1)
        attn_mask, key_padding_mask = _mha_pad_masks(attn_mask, key_padding_mask)
    if key_padding_mask is not None:
        attn_mask = _mha_merge_padding_mask(attn_mask, key_padding_mask, bsz, num_heads, k.shape[1])
    if not training:
        dropout_p = 0.0
    if need_weights:
        out, weights = _mha_attention_with_weights(q, k, v, attn_mask, dropout_p, out_proj_weight, out_proj_bias,
                                                   bsz, num_heads, average_attn_weights)
        if not is_batched:
            out, weights = F.squeeze(out, 1), F.squeeze(weights, 0)
        return out, weights
    out = _mha_fused_attention(q, k, v, attn_mask, dropout_p, out_proj_weight, out_proj_bias, bsz, num_heads)
    return (out if is_batched else F.squeeze(out, 1)), None


def _mha_head_dim(key, value, embed_dim, embed_dim_to_check, num_heads, use_separate_proj_weight) -> int:
    """The dims per head, after checking the embedding dim and that key and value go together."""
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    return head_dim


def _mha_in_projection(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight,
                       q_proj_weight, k_proj_weight, v_proj_weight) -> tuple:
    """q, k, v: one matmul for self-attention, three otherwise."""
    if use_separate_proj_weight:
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else F.chunk(in_proj_bias, 3)
        return _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)
    if query is key and key is value:
        return F.chunk(F.linear(query, in_proj_weight, in_proj_bias), 3, -1)
    w_q, w_k, w_v = F.chunk(in_proj_weight, 3)
    b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else F.chunk(in_proj_bias, 3)
    return _in_projection(query, key, value, w_q, w_k, w_v, b_q, b_k, b_v)


def _mha_check_attn_mask(attn_mask, batch_heads, tgt_len, src_len):
    """A 2-D (L, S) mask as (1, L, S), a 3-D one checked to be (N * H, L, S)."""
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                               f"{(tgt_len, src_len)}.")
        return F.unsqueeze(attn_mask, 0)
    if attn_mask.ndim == 3:
        if tuple(attn_mask.shape) != (batch_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                               f"{(batch_heads, tgt_len, src_len)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")


def _mha_pad_masks(attn_mask, key_padding_mask) -> tuple:
    """Both masks (either may be None) extended by one key position that is not masked."""
    return (None if attn_mask is None else F.pad(attn_mask, (0, 1)),
            None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1)))


def _mha_split_heads(t, batch_heads, head_dim):
    """(L, N, E) -> (N * H, L, head_dim)."""
    return F.transpose(F.reshape(t, (t.shape[0], batch_heads, head_dim)), 0, 1)


def _mha_merge_padding_mask(attn_mask, key_padding_mask, bsz, num_heads, src_len):
    """The (N, S) key padding mask broadcast to (N * H, 1, S) and added to ``attn_mask`` (when given)."""
    if tuple(key_padding_mask.shape) != (bsz, src_len):
        raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                             f"{key_padding_mask.shape}")
    key_padding_mask = F.reshape(F.expand(F.reshape(key_padding_mask, (bsz, 1, 1, src_len)),
                                          (bsz, num_heads, 1, src_len)), (bsz * num_heads, 1, src_len))
    return key_padding_mask if attn_mask is None else F.add(attn_mask, key_padding_mask)


def _mha_attention_with_weights(q, k, v, attn_mask, dropout_p, out_proj_weight, out_proj_bias, bsz, num_heads,
                                average_attn_weights) -> tuple:
    """Attention written out (softmax(q k^T / sqrt(d) + mask) v), so its weights can be returned:
    ``(output (L, N, E_out), weights (N, L, S), or (N, H, L, S) when not averaged)``."""
    _, tgt_len, head_dim = q.shape
    src_len = k.shape[1]
    q_scaled = F.mul(q, math.sqrt(1.0 / float(head_dim)))
    scores = F.bmm(q_scaled, F.transpose(k, -2, -1))
    if attn_mask is not None:
        scores = F.add(scores, attn_mask)
    weights = F.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p)
    out = F.bmm(weights, v)
    out = F.reshape(F.transpose(out, 0, 1), (tgt_len * bsz, num_heads * head_dim))
    out = F.reshape(F.linear(out, out_proj_weight, out_proj_bias), (tgt_len, bsz, out_proj_weight.shape[0]))
    weights = F.reshape(weights, (bsz, num_heads, tgt_len, src_len))
    if average_attn_weights:
        weights = F.mean(weights, 1)
    return out, weights


def _mha_fused_attention(q, k, v, attn_mask, dropout_p, out_proj_weight, out_proj_bias, bsz, num_heads):
    """Attention through ``scaled_dot_product_attention`` (no weights): the output (L, N, E_out)."""
    _, tgt_len, head_dim = q.shape
    src_len = k.shape[1]
    if attn_mask is not None:
        if attn_mask.shape[0] == 1:
            attn_mask = F.unsqueeze(attn_mask, 0)
        else:
            attn_mask = F.reshape(attn_mask, (bsz, num_heads, -1, src_len))
    q = F.reshape(q, (bsz, num_heads, tgt_len, head_dim))
    k = F.reshape(k, (bsz, num_heads, src_len, head_dim))
    v = F.reshape(v, (bsz, num_heads, src_len, head_dim))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p)
    out = F.reshape(F.permute(out, (2, 0, 1, 3)), (bsz * tgt_len, num_heads * head_dim))
    return F.reshape(F.linear(out, out_proj_weight, out_proj_bias), (tgt_len, bsz, out_proj_weight.shape[0]))


class MultiheadAttention(Module):
    """Attention from ``num_heads`` heads of ``embed_dim // num_heads`` dims each (Note [MultiheadAttention]):
    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim // num_heads * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(F.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(F.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(F.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(F.empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(F.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(F.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(F.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """Xavier-uniform in-projection, zero biases, Xavier-normal ``bias_k`` / ``bias_v`` (PyTorch's)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        is_batched = query.ndim == 3
        if self.batch_first and is_batched:
            if key is value:
                if query is key:
                    query = key = value = F.transpose(query, 1, 0)
                else:
                    query, key = F.transpose(query, 1, 0), F.transpose(key, 1, 0)
                    value = key
            else:
                query, key, value = (F.transpose(x, 1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return F.transpose(out, 1, 0), weights
        return out, weights
