"""The batch rules of vmap's batching interpreter (interpreters/batched.py), keyed by op type.

A rule takes a ``BatchCall`` (the physical input tensors, batch dim 0 where batched, Note [Batch dim in
front]) and returns the op's outputs computed on the whole batch at once, each batched at dim 0. Rules
call ops (the op itself with changed attrs through ``call.redo``, others through ``F``), which
dispatch again: on physical tensors batched at a lower vmap level they are batched in turn. A rule
that meets a case it does not handle (an unusual operand batched) returns ``call.loop()``, the
per-sample fallback. Importing this module registers the rules.

The families: elementwise ops (operands broadcast; unbatched ones are expanded to the batch as views),
reductions and ops along dims (the dim attrs shifted past the batch dim), shape and view ops (the batch
prepended to shape attrs), matmul / linear / baddbmm / einsum, softmax and its grads, the class losses
(``nll``: the reduction is applied per sample), embedding, convolution and pooling (the batch folded
into N, or into the channels with ``groups`` when the weights are batched), layer norm and indexing.
"""

from __future__ import annotations

import itertools
from string import ascii_letters

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.interpreters.batched import loop_inplace, register_batch_rule
from oneflow_lite.interpreters.op_interp_util import dispatch


# ---- helpers ------------------------------------------------------------------------------------------
def _reshape(t, shape):
    return F.ops.reshape(t, shape=tuple(shape))


def _pad_rank(t, k: int):
    """A batched physical tensor (B, *s) as (B, 1 (k times), *s)."""
    if k <= 0:
        return t
    shape = t._meta.shape
    return _reshape(t, (shape[0], *(1,) * k, *shape[1:]))


def _expand_to_batch(t, size: int, ndim: int):
    """An unbatched tensor of shape s as the batched view (B, 1 (ndim - len(s) times), *s)."""
    shape = t._meta.shape
    return F.ops.expand(t, expand_shape=(size, *(1,) * (ndim - len(shape)), *shape))


def batched_values(call, indices=None) -> list:
    """The inputs at ``indices`` (all by default) batched at dim 0 with one logical rank (the largest):
    batched ones get size-1 dims after the batch dim, unbatched ones are expanded (views)."""
    indices = range(len(call.values)) if indices is None else indices
    ndim = max(call.logical_ndim(i) for i in indices)
    out = []
    for i in indices:
        v = call.values[i]
        out.append(_pad_rank(v, ndim - call.logical_ndim(i)) if call.batched[i]
                   else _expand_to_batch(v, call.size, ndim))
    return out


def _wrap(dim: int, ndim: int) -> int:
    """``dim`` of a tensor of ``ndim`` dims made non-negative (a 0-d tensor takes -1 and 0)."""
    return dim % ndim if ndim else 0


def _names(text: str) -> list[str]:
    return text.split()


def _register(rule, *op_types, inplace=False):
    for op in op_types:
        register_batch_rule(op, rule, inplace=inplace)


# ---- elementwise ----------------------------------------------------------------------------------------
def elementwise(call, outputs=None):
    """Ops applied element by element with broadcasting: every operand batched (Note [Batch dim in front]);
    in place (``outputs``: the written physical tensors) too."""
    ins = batched_values(call)
    if outputs is None:
        return call.redo(ins)
    return dispatch(call.op_expr, tuple(ins), call.call_attrs, outputs)


def _elementwise_unless(*indices):
    """An elementwise rule for ops whose inputs at ``indices`` must keep their shape (a 0-d fill value):
    they must not be batched (else the per-sample loop)."""
    def rule(call, outputs=None):
        if any(call.batched[i] for i in indices if i < len(call.values)):
            return call.loop()
        keep = [i for i in range(len(call.values)) if i not in indices]
        ins = dict(zip(keep, batched_values(call, keep)))
        values = [ins.get(i, v) for i, v in enumerate(call.values)]
        if outputs is None:
            return call.redo(values)
        return dispatch(call.op_expr, tuple(values), call.call_attrs, outputs)
    return rule


UNARY = _names("abs ceil cos erf exp expm1 floor log log1p log2 negative reciprocal relu round rsqrt sigmoid sign "
               "silu sin sqrt square tan tanh trunc gelu elu leaky_relu hardsigmoid hardswish hardtanh mish selu "
               "softplus isfinite isinf isnan logical_not bitwise_not nan_to_num cast copy clip_by_scalar tril triu")
SCALAR = _names("scalar_add scalar_div scalar_floor_mod scalar_floordiv scalar_fmod scalar_mul scalar_pow "
                "scalar_reverse_div scalar_reverse_pow scalar_truncdiv scalar_logical_equal scalar_logical_greater "
                "scalar_logical_greater_equal scalar_logical_less scalar_logical_less_equal scalar_logical_not_equal")
BINARY = _names("broadcast_add broadcast_atan2 broadcast_bitwise_and broadcast_bitwise_or broadcast_bitwise_xor "
                "broadcast_div broadcast_equal broadcast_floor_mod broadcast_floordiv broadcast_fmod broadcast_greater "
                "broadcast_greater_equal broadcast_less broadcast_less_equal broadcast_logical_and broadcast_logical_or "
                "broadcast_logical_xor broadcast_maximum broadcast_minimum broadcast_mul broadcast_not_equal "
                "broadcast_pow broadcast_sub broadcast_truncdiv clip_by_tensor clip_by_tensor_max clip_by_tensor_min "
                "where lerp scalar_lerp addcmul addcdiv masked_fill dropout normal_tensor")
ACTIVATION_GRADS = _names("relu_grad sigmoid_grad tanh_grad elu_grad gelu_grad hardsigmoid_grad hardswish_grad "
                          "hardtanh_grad leaky_relu_grad mish_grad selu_grad silu_grad softplus_grad clip_by_scalar_grad")
LOSSES = _names("mse_loss l1_loss smooth_l1_loss huber_loss kl_div_loss binary_cross_entropy "
                "binary_cross_entropy_with_logits")
LOSS_GRADS = [op + suffix for op in LOSSES for suffix in ("_grad", "_target_grad")
              if op + suffix not in ("mse_loss_target_grad", "l1_loss_target_grad", "smooth_l1_loss_target_grad",
                                     "huber_loss_target_grad")]

_register(elementwise, *UNARY, *SCALAR, *BINARY, *ACTIVATION_GRADS, *LOSSES, *LOSS_GRADS, inplace=True)
# [compat s1] the elementwise ops of ops/unary.py and ops/binary.py
_register(elementwise, *_names("acos asin atan acosh asinh atanh sinh cosh erfc erfinv exp2 log10 lgamma digamma "
                               "polygamma i0 i1 frac signbit logit logit_grad frexp"),
          *["broadcast_" + op for op in _names("hypot logaddexp logaddexp2 xlogy fmax fmin nextafter igamma igammac "
                                               "gcd lcm heaviside bitwise_left_shift bitwise_right_shift")],
          inplace=True)
_register(_elementwise_unless(2), "masked_fill_tensor", inplace=True)
# like: only its shape matters; a batched like gives one mask per sample (randomness="different")
_register(lambda call: call.redo(call.values), "random_mask_like")


# ---- reductions and ops along one dim ---------------------------------------------------------------------
def _reduction(attr):
    """Reductions over the dims of ``attr`` (``axis`` of reduce_*, ``dims`` of count_nonzero), the other
    operands (output grads with kept dims) broadcast against the first."""
    def rule(call):
        ins = batched_values(call)
        ndim = ins[0]._meta.ndim - 1
        dims = sorted({_wrap(d, ndim) + 1 for d in call.attrs[attr]}) if ndim else []
        return call.redo(ins, **{attr: dims})
    return rule


_register(_reduction("axis"), "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all",
          "reduce_any", "reduce_logsumexp", "reduce_std", "reduce_var", "vector_norm", "reduce_prod_grad",
          "vector_norm_grad")
_register(_reduction("dims"), "count_nonzero")


def _along(attr, extra=0, indices=None):
    """Ops along the one dim ``attr`` of their (common) shape, wrapped against the logical rank plus
    ``extra`` (1 for ops adding a dim: stack, expand_dims); inputs at ``indices`` (all by default)
    batched, the others passed as they are."""
    def rule(call):
        idx = list(range(len(call.values))) if indices is None else [i for i in indices if i < len(call.values)]
        ndim = max(call.logical_ndim(i) for i in idx) + extra
        if ndim == 0:
            return call.loop()
        ins = dict(zip(idx, batched_values(call, idx)))
        values = [ins.get(i, v) for i, v in enumerate(call.values)]
        return call.redo(values, **{attr: _wrap(call.attrs[attr], ndim) + 1})
    return rule


_register(_along("axis"), "softmax", "log_softmax", "safe_softmax", "softmax_grad", "log_softmax_grad", "cat",
          "split", "unbind")
_register(_along("axis", extra=1), "stack", "expand_dims")
_register(_along("dim"), "cumsum", "cumprod", "cumprod_grad", "reduce_max_dim", "reduce_min_dim", "sort", "arg_sort",
          "topk", "dim_gather", "select_along_dim", "dim_scatter_add", "dim_scatter_mul", "dim_scatter_update",
          "dim_scatter_add_scalar", "dim_scatter_mul_scalar", "dim_scatter_update_scalar")


def _index_vector(rule):
    """Ops taking a 1-D index at input 1: batched per sample only through the loop."""
    def checked(call):
        return call.loop() if call.batched[1] else rule(call)
    return checked


register_batch_rule("index_select", _index_vector(_along("dim", indices=(0,))))
register_batch_rule("index_add", _index_vector(_along("dim", indices=(0, 2))))


def _argmax(call):
    x = call.values[0]
    if call.attrs["flatten"]:
        if call.attrs["keepdim"]:
            return call.loop()
        return call.redo([_reshape(x, (call.size, -1))], dim=1, flatten=False)
    return _along("dim")(call)


_register(_argmax, "argmax", "argmin")


def _select_along_dim_grad(call):
    ins = batched_values(call)
    like = call.attrs["like_shape"]
    return call.redo(ins, dim=_wrap(call.attrs["dim"], len(like)) + 1, like_shape=(call.size, *like))


register_batch_rule("select_along_dim_grad", _select_along_dim_grad)


# ---- shape and view ops -------------------------------------------------------------------------------------
def _only(call):
    """The one (batched) input and its logical rank."""
    return call.values[0], call.values[0]._meta.ndim - 1


def _reshape_rule(call):
    return call.redo(call.values, shape=(call.size, *call.attrs["shape"]))


def _flatten(call):
    x, ndim = _only(call)
    if ndim == 0:
        return (_reshape(x, (call.size, 1)),)
    return call.redo([x], start_dim=_wrap(call.attrs["start_dim"], ndim) + 1,
                     end_dim=_wrap(call.attrs["end_dim"], ndim) + 1)


def _squeeze(call):
    x, ndim = _only(call)
    return call.redo([x], axes=[_wrap(a, ndim) + 1 for a in call.attrs["axes"]] if ndim else [])


def _transpose(call):
    return call.redo(call.values, perm=[0, *(p + 1 for p in call.attrs["perm"])])


def _expand(call):
    x, ndim = _only(call)
    target = call.attrs["expand_shape"]
    return call.redo([_pad_rank(x, len(target) - ndim)], expand_shape=(call.size, *target))


def _repeat(call):
    x, ndim = _only(call)
    repeats = call.attrs["repeats"]
    return call.redo([_pad_rank(x, len(repeats) - ndim)], repeats=(1, *repeats))


def _slice(call):
    a = call.attrs
    return call.redo(call.values, start=(0, *a["start"]), stop=(call.size, *a["stop"]), step=(1, *a["step"]))


def _slice_grad(call):
    a = call.attrs
    return call.redo(call.values, like_shape=(call.size, *a["like_shape"]), start=(0, *a["start"]),
                     stop=(call.size, *a["stop"]), step=(1, *a["step"]))


def _flip(call):
    x, ndim = _only(call)
    return call.redo([x], dims=[_wrap(d, ndim) + 1 for d in call.attrs["dims"]])


def _roll(call):
    x, ndim = _only(call)
    dims = call.attrs["dims"]
    if dims:
        return call.redo([x], dims=[_wrap(d, ndim) + 1 for d in dims])
    flat = call.redo([_reshape(x, (call.size, -1))], dims=[1])[0]  # no dims: roll the flattened tensor
    return (_reshape(flat, x._meta.shape),)


def _pad(call):
    a = call.attrs
    return call.redo(call.values, padding_before=(0, *a["padding_before"]), padding_after=(0, *a["padding_after"]))


register_batch_rule("reshape", _reshape_rule)
register_batch_rule("flatten", _flatten)
register_batch_rule("squeeze", _squeeze)
register_batch_rule("transpose", _transpose)
register_batch_rule("expand", _expand)
register_batch_rule("repeat", _repeat)
register_batch_rule("slice", _slice)
register_batch_rule("slice_grad", _slice_grad)
register_batch_rule("flip", _flip)
register_batch_rule("roll", _roll)
_register(_pad, "pad", "pad_grad")


# ---- matmul, linear, baddbmm, einsum -----------------------------------------------------------------------
def matmul_physical(a, a_batched: bool, b, b_batched: bool):
    """``matmul`` of logical ``a`` and ``b`` (at least one batched at dim 0) on their physical tensors: a
    1-D operand becomes a matrix, the batched operands get size-1 batch dims up to the other's rank, so the
    batch dim broadcasts in front; the added matrix dims are dropped from the result."""
    la, lb = a._meta.ndim - a_batched, b._meta.ndim - b_batched
    if a_batched and not b_batched and lb <= max(la, 2):
        return F.ops.matmul(a, b)  # the batch is one more leading dim of a (a row per sample when a is 1-D)
    drop_row, drop_col = la == 1, lb == 1
    if drop_row:
        a = _reshape(a, (*a._meta.shape[:-1], 1, a._meta.shape[-1]))
        la = 2
    if drop_col:
        b = _reshape(b, (*b._meta.shape, 1))
        lb = 2
    rank = max(la, lb)
    if a_batched:
        a = _pad_rank(a, rank - la)
    if b_batched:
        b = _pad_rank(b, rank - lb)
    out = F.ops.matmul(a, b)
    if drop_row or drop_col:
        shape = out._meta.shape
        out = _reshape(out, (*shape[:-2], *shape[-2:-1][:1 - drop_row], *shape[-1:][:1 - drop_col]))
    return out


def _matmul(call):
    (a, b), (ab, bb) = call.values, call.batched
    return (matmul_physical(a, ab, b, bb),)


def _linear(call):
    x, w = call.values[0], call.values[1]
    if not any(call.batched[1:]):
        return call.redo(call.values)  # the batch is one more leading dim of x
    if w._meta.ndim - call.batched[1] != 2:
        return call.loop()
    w_t = F.ops.transpose(w, perm=(0, 2, 1) if call.batched[1] else (1, 0))
    y = matmul_physical(x, call.batched[0], w_t, call.batched[1])
    if len(call.values) == 3:
        bias = call.values[2]
        if call.batched[2]:
            bias = _pad_rank(bias, y._meta.ndim - 2)
        y = F.ops.broadcast_add(y, bias)
    return (y,)


def _scaled(t, factor: float):
    return t if factor == 1.0 else F.ops.scalar_mul(t, float_operand=factor, has_float_operand=True)


def _baddbmm(call):
    """``beta * input + alpha * (batch1 @ batch2)``, the product batched by the matmul rule."""
    (inp, b1, b2), (ib, b1b, b2b) = call.values, call.batched
    alpha, beta = call.attrs["alpha"], call.attrs["beta"]
    prod = _scaled(matmul_physical(b1, b1b, b2, b2b) if (b1b or b2b) else
                   _expand_to_batch(F.ops.matmul(b1, b2), call.size, 3), alpha)
    if beta == 0.0:
        return (prod,)
    inp = _pad_rank(inp, 3 - (inp._meta.ndim - 1)) if ib else inp
    return (F.ops.broadcast_add(_scaled(inp, beta), prod),)


def _einsum(call):
    """A new letter for the batch dim, in front of each batched operand's and the output's subscripts."""
    equation = call.attrs["equation"]
    letter = next(c for c in ascii_letters if c not in equation)
    lhs, out = equation.split("->")
    subs = [letter + s if b else s for s, b in zip(lhs.split(","), call.batched)]
    out_shape = call.attrs["out_shape"]
    return call.redo(call.values, equation=",".join(subs) + "->" + letter + out,
                     out_shape=(call.size, *out_shape) if out_shape else ())


register_batch_rule("matmul", _matmul)
register_batch_rule("linear", _linear)
register_batch_rule("baddbmm", _baddbmm)
register_batch_rule("einsum", _einsum)


# ---- class losses (Note [The reduction of nll] in ops/nn.py) ----------------------------------------------
def _fold_class_args(call, x, target, like):
    """``x`` (B, *like) and ``target`` (B, *t) with the batch folded into N (or taking N's place when the
    logical input is (C,)): the shapes the op takes with reduction "none"."""
    size = call.size
    if len(like) == 1:
        return x, target
    return (_reshape(x, (size * like[0], *like[1:])),
            _reshape(target, (size * target._meta.shape[1], *target._meta.shape[2:])))


def _per_sample_total(call, like, dtype, device, target_f, weight, target_shape):
    """Per sample, the total weight of the targets that are not ignored (the denominator of "mean"): an
    ``nll`` of ones gives minus each target's weight."""
    size = call.size
    folded_like = (size, *like) if len(like) == 1 else (size * like[0], *like[1:])
    ones = F.ops.constant(shape=folded_like, dtype=dtype, device=device, floating_value=1.0,
                          is_floating_value=True)
    w = F.ops.nll(ones, target_f, *weight, ignore_index=call.attrs["ignore_index"], reduction="none")
    return F.ops.scalar_mul(_sum_per_sample(_reshape(w, (size, *target_shape))), float_operand=-1.0,
                            has_float_operand=True)


def _sum_per_sample(t):
    ndim = t._meta.ndim
    return t if ndim == 1 else F.ops.reduce_sum(t, axis=tuple(range(1, ndim)), keepdims=False)


def _class_loss(call):
    """``nll`` / ``nll_smooth``: the unreduced loss of the folded batch, then each sample's reduction."""
    if len(call.values) == 3 and call.batched[2]:
        return call.loop()
    x, target = batched_values(call, [0]) + [call.values[1] if call.batched[1] else
                                            _expand_to_batch(call.values[1], call.size, call.values[1]._meta.ndim)]
    like = x._meta.shape[1:]
    t_shape = target._meta.shape[1:]
    weight = call.values[2:]
    x_f, t_f = _fold_class_args(call, x, target, like)
    losses = _reshape(call.redo([x_f, t_f, *weight], reduction="none")[0], (call.size, *t_shape))
    reduction = call.attrs["reduction"]
    if reduction == "none":
        return (losses,)
    total = _sum_per_sample(losses)
    if reduction == "sum":
        return (total,)
    denominator = _per_sample_total(call, like, x._meta.dtype, x._meta.device, t_f, weight, t_shape)
    return (F.ops.broadcast_div(total, denominator),)


def _class_loss_grad(call):
    """``nll_grad`` / ``nll_smooth_grad``: the output grad spread over each sample's targets (divided by its
    total weight for "mean"), then the unreduced grad op on the folded batch."""
    if len(call.values) == 3 and call.batched[2]:
        return call.loop()
    dy, target = call.values[0], call.values[1]
    size = call.size
    target = target if call.batched[1] else _expand_to_batch(target, size, target._meta.ndim)
    t_shape = target._meta.shape[1:]
    like = call.attrs["like_shape"]
    weight = call.values[2:]
    dy = dy if call.batched[0] else _expand_to_batch(dy, size, dy._meta.ndim)
    reduction = call.attrs["reduction"]
    t_f = target if len(like) == 1 else _reshape(target, (size * t_shape[0], *t_shape[1:]))
    if reduction == "mean":
        dy = F.ops.broadcast_div(dy, _per_sample_total(call, like, dy._meta.dtype, dy._meta.device, t_f, weight,
                                                       t_shape))
    if reduction != "none":
        dy = F.ops.expand(_pad_rank(dy, len(t_shape)), expand_shape=(size, *t_shape))
    dy_f = dy if len(like) == 1 else _reshape(dy, (size * t_shape[0], *t_shape[1:]))
    folded_like = (size, *like) if len(like) == 1 else (size * like[0], *like[1:])
    dx = call.redo([dy_f, t_f, *weight], reduction="none", like_shape=folded_like)[0]
    return (_reshape(dx, (size, *like)),)


_register(_class_loss, "nll", "nll_smooth")
_register(_class_loss_grad, "nll_grad", "nll_smooth_grad")


# ---- embedding, one_hot -------------------------------------------------------------------------------------
def _embedding(call):
    if call.batched[0]:
        return call.loop()  # per-sample tables
    return call.redo(call.values)  # the batch is one more leading dim of the indices


def _embedding_grad(call):
    """Per-sample table grads: sample b's indices are offset by ``b * num_weights`` into one table of
    ``B * num_weights`` rows (so repeated indices still accumulate per sample)."""
    a = call.attrs
    if a["padding_idx"] >= 0:
        return call.loop()
    dy, idx = (v if b else _expand_to_batch(v, call.size, v._meta.ndim) for v, b in zip(call.values, call.batched))
    size, n = call.size, a["num_weights"]
    offsets = F.ops.scalar_mul(F.arange(size, dtype=idx._meta.dtype, device=idx._meta.device), int_operand=n,
                               has_float_operand=False)
    idx = F.ops.broadcast_add(idx, _reshape(offsets, (size, *(1,) * (idx._meta.ndim - 1))))
    dx = call.redo([dy, idx], num_weights=size * n)[0]
    return (_reshape(dx, (size, n, *dx._meta.shape[1:])),)


register_batch_rule("embedding", _embedding)
register_batch_rule("embedding_grad", _embedding_grad)
register_batch_rule("one_hot", lambda call: call.redo(call.values))


# ---- convolution and pooling ----------------------------------------------------------------------------------
def _fold(t, size):
    """(B, N, ...) as (B * N, ...)."""
    shape = t._meta.shape
    return _reshape(t, (size * shape[1], *shape[2:]))


def _unfold(t, size):
    shape = t._meta.shape
    return _reshape(t, (size, shape[0] // size, *shape[1:]))


def _folding(spatial):
    """Ops on (N, C, *spatial) tensors (pooling, upsampling and their grads): the batch folded into N, or
    taking N's place when the logical tensors are (C, *spatial). ``spatial(call)``: the spatial rank."""
    def rule(call):
        ins = batched_values(call)
        if call.logical_ndim(0) == spatial(call) + 1:
            return call.redo(ins)
        outs = call.redo([_fold(t, call.size) for t in ins])
        return tuple([_unfold(o, call.size) for o in outs])
    return rule


def _spatial_of_name(call):
    return int(call.op_type.split("_pool")[1][0])


def _spatial_of_output_size(call):
    return len(call.attrs["output_size"])


_register(_folding(_spatial_of_name), *[f"{kind}_pool{nd}d{suffix}" for nd in (1, 2, 3) for kind in ("avg", "max")
                                         for suffix in ("", "_grad")],
          *[f"max_pool{nd}d_gather" for nd in (1, 2, 3)],
          *[f"adaptive_avg_pool{nd}d{suffix}" for nd in (1, 2, 3) for suffix in ("", "_grad")])
_register(_folding(_spatial_of_output_size), "upsample_nearest", "upsample_nearest_grad", "upsample_linear",
          "upsample_linear_grad")


def _into_channels(t, size):
    """(B, N, C, *s) as (N, B * C, *s): the batch folded into the channels of a grouped convolution."""
    shape = t._meta.shape
    return _reshape(F.ops.transpose(t, perm=(1, 0, *range(2, len(shape)))), (shape[1], size * shape[2], *shape[3:]))


def _out_of_channels(t, size):
    """(N, B * C, *s) back to (B, N, C, *s)."""
    shape = t._meta.shape
    t = _reshape(t, (shape[0], size, shape[1] // size, *shape[2:]))
    return F.ops.transpose(t, perm=(1, 0, *range(2, len(shape) + 1)))


def _batched(call, i):
    v = call.values[i]
    return v if call.batched[i] else _expand_to_batch(v, call.size, v._meta.ndim)


def _conv(call):
    """conv1d/2d/3d: unbatched weights: the batch folded into N; batched weights (or bias): the batch
    folded into the channels of one grouped convolution (``groups`` times B)."""
    size = call.size
    if not any(call.batched[1:]):
        return (_unfold(call.redo([_fold(call.values[0], size), *call.values[1:]])[0], size),)
    w = _batched(call, 1)
    ins = [_into_channels(_batched(call, 0), size), _reshape(w, (-1, *w._meta.shape[2:]))]
    if len(call.values) == 3:
        ins.append(_reshape(_batched(call, 2), (-1,)))
    return (_out_of_channels(call.redo(ins, groups=call.attrs["groups"] * size)[0], size),)


def _conv_data_grad(call):
    """The transposed convolution of ``dy`` by ``filter``: folded into N, or into the channels (grouped) when
    the filters are batched."""
    size = call.size
    if not call.batched[1]:
        return (_unfold(call.redo([_fold(call.values[0], size), call.values[1]])[0], size),)
    w = call.values[1]
    dx = call.redo([_into_channels(_batched(call, 0), size), _reshape(w, (-1, *w._meta.shape[2:]))],
                   groups=call.attrs["groups"] * size)[0]
    return (_out_of_channels(dx, size),)


def _conv_filter_grad(call):
    """Per-sample filter grads: one grouped filter grad with the batch folded into the channels."""
    size = call.size
    dw = call.redo([_into_channels(_batched(call, 0), size), _into_channels(_batched(call, 1), size)],
                   groups=call.attrs["groups"] * size)[0]
    return (_reshape(dw, (size, -1, *dw._meta.shape[1:])),)


_register(_conv, "conv1d", "conv2d", "conv3d")
register_batch_rule("conv_data_grad", _conv_data_grad)
register_batch_rule("conv_filter_grad", _conv_filter_grad)


# ---- layer norm -------------------------------------------------------------------------------------------------
def _layer_norm(call):
    """The batch folded into the leading (not normalized) dims. Batched ``gamma`` / ``beta`` (per-sample affine
    parameters): the normalisation without them, then ``y * gamma + beta`` broadcast per sample (the op's own
    order of operations)."""
    ndim = call.logical_ndim(0)
    begin = _wrap(call.attrs["begin_norm_axis"], ndim) + 1
    if not any(call.batched[1:]):
        return call.redo(call.values, begin_norm_axis=begin)
    a = call.attrs
    y, mean, inv = F.ops.layer_norm(_batched(call, 0), begin_norm_axis=begin, epsilon=a["epsilon"], center=False,
                                    scale=False)
    params = iter(range(1, len(call.values)))
    if a["scale"]:
        y = F.ops.broadcast_mul(y, _affine_param(call, next(params), begin))
    if a["center"]:
        y = F.ops.broadcast_add(y, _affine_param(call, next(params), begin))
    return y, mean, inv


def _affine_param(call, i, begin):
    """Input ``i`` (a normalized-shape parameter) broadcastable against the physical (B, *lead, *normalized)."""
    v = call.values[i]
    return _pad_rank(v, begin - 1) if call.batched[i] else v


def _layer_norm_grad(call):
    """dx; a batched ``gamma`` is folded into the output grad first (the kernel's ``dy * gamma``)."""
    ndim = call.logical_ndim(1)
    begin = _wrap(call.attrs["begin_norm_axis"], ndim) + 1
    ins = [_batched(call, i) for i in range(4)]
    if len(call.values) == 5 and call.batched[4]:
        ins[0] = F.ops.broadcast_mul(ins[0], _affine_param(call, 4, begin))
        return (F.ops.layer_norm_grad(*ins, begin_norm_axis=begin),)
    return call.redo([*ins, *call.values[4:]], begin_norm_axis=begin)


def _layer_norm_param_grad(call):
    """Per-sample gamma / beta grads: ``sum(dy * x_hat)`` and ``sum(dy)`` over each sample's leading dims,
    with ``x_hat = (x - mean) * inv_variance``."""
    dy, x, mean, inv = (call.values[i] if call.batched[i] else
                        _expand_to_batch(call.values[i], call.size, call.values[i]._meta.ndim) for i in range(4))
    ndim = x._meta.ndim - 1
    begin = _wrap(call.attrs["begin_norm_axis"], ndim) + 1
    trailing = (1,) * (x._meta.ndim - begin)
    x_hat = F.ops.broadcast_mul(F.ops.broadcast_sub(x, _reshape(mean, (*mean._meta.shape, *trailing))),
                                _reshape(inv, (*inv._meta.shape, *trailing)))
    lead = tuple(range(1, begin))
    gamma = F.ops.broadcast_mul(dy, F.ops.cast(x_hat, dtype=dy._meta.dtype))
    if lead:
        return (F.ops.reduce_sum(gamma, axis=lead, keepdims=False), F.ops.reduce_sum(dy, axis=lead, keepdims=False))
    return (gamma, F.ops.copy(dy, device=dy._meta.device))


register_batch_rule("layer_norm", _layer_norm)
register_batch_rule("layer_norm_grad", _layer_norm_grad)
register_batch_rule("layer_norm_param_grad", _layer_norm_param_grad)


# ---- advanced indexing ------------------------------------------------------------------------------------------
def _index(call):
    """``x[indices]`` with only ``x`` batched: the indexed dims shift past the batch dim; when they are not
    adjacent, the broadcast index dims come first (NumPy's rule), so the batch dim is moved back in front."""
    if any(call.batched[1:]):
        return _index_batched_indices(call)
    dims = [d + 1 for d in call.attrs["dims"]]
    out = call.redo(call.values, dims=dims)[0]
    if dims and dims[-1] - dims[0] != len(dims) - 1:
        lead = out._meta.ndim - (call.values[0]._meta.ndim - len(dims))  # the broadcast dims, in front
        perm = [lead, *range(lead), *range(lead + 1, out._meta.ndim)]
        out = F.ops.transpose(out, perm=tuple(perm))
    return (out,)


_index_ops = {}  # number of index tensors -> the index op expr


def _index_op(n):
    op = _index_ops.get(n)
    if op is None:
        op = _index_ops[n] = OpBuilder("index").input("input").input("indices", n).output("output").build()
    return op


def _index_batched_indices(call):
    """Batched index tensors: the batch dim of ``x`` becomes one more advanced index, ``arange(B)`` in front
    (broadcast against the others), so sample b reads its own indices in its own slice. The broadcast index
    dims then lead the result, batch first; when the logical indexed dims were adjacent after other dims, those
    dims are moved back in front of the index dims (NumPy's rule for the logical call)."""
    size = call.size
    x = _batched(call, 0)
    indices = batched_values(call, range(1, len(call.values)))
    k = indices[0]._meta.ndim - 1  # the logical rank of the broadcast indices
    batch = _reshape(F.arange(size, dtype=indices[0]._meta.dtype, device=x._meta.device), (size, *(1,) * k))
    dims = call.attrs["dims"]
    out = dispatch(_index_op(len(indices) + 1), (x, batch, *indices), _index_op(len(indices) + 1).compose_attrs(
        {"dims": (0, *[d + 1 for d in dims])}))[0]
    pre = dims[0]
    if pre and dims[-1] - dims[0] == len(dims) - 1:  # logical result: (*x[:pre], *index dims, *rest)
        n = out._meta.ndim
        perm = (0, *range(1 + k, 1 + k + pre), *range(1, 1 + k), *range(1 + k + pre, n))
        out = F.ops.transpose(out, perm=perm)
    return (out,)


register_batch_rule("index", _index)


def _setitem(call, outputs=None):
    """``ref[index] = value`` (``tensor_setitem``, ``tensor_setitem_scalar``; in place or on a copy) with
    unbatched index tensors: a full slice of the batch dim in front of the encoded index (Note [Advanced
    indexing ops] in ops/index.py); a batched value gets the batch dim in front of the indexed region."""
    first_index = 2 if call.op_type == "tensor_setitem" else 1
    a = call.attrs
    kinds, adv = a["kinds"], a["adv_dims"]
    if any(call.batched[first_index:]):
        if not _full_slices(kinds, a["values"], call.values[0]._meta.shape[1 if call.batched[0] else 0:]) or any(
                v._meta.dtype.name == "bool" for v in call.values[first_index:]):
            return _setitem_loop(call, outputs)
        return _setitem_batched_indices(call, outputs, first_index)
    values = list(call.values)
    values[0] = _batched(call, 0)
    if first_index == 2 and call.batched[1]:
        values[1] = _value_in_front(call, values[1], kinds, adv, values[first_index:])
    changes = {"kinds": (1, *kinds), "values": (0, call.size, 1, *a["values"]), "adv_dims": tuple(d + 1 for d in adv)}
    if outputs is None:
        return call.redo(values, **changes)
    attrs = call.op_expr.compose_attrs({**a, **changes})
    return dispatch(call.op_expr, tuple(values), attrs, outputs)


def _value_in_front(call, value, kinds, adv, indices):
    """A batched value (B, *v) reshaped to broadcast against the indexed region (B, *r): v's leading 1s
    dropped, then size-1 dims up to r's rank. When the indexed dims are not adjacent, the region is
    (*index dims, B, *rest) (NumPy's rule), and the value's batch dim moves there too."""
    ndim = call.logical_ndim(0) - kinds.count(0) + kinds.count(2)
    index_ndim = max((t._meta.ndim for t in indices), default=0)
    if adv:
        ndim += index_ndim - len(adv)
    shape = list(value._meta.shape[1:])
    while shape and shape[0] == 1:
        shape.pop(0)
    value = _reshape(value, (call.size, *(1,) * (ndim - len(shape)), *shape))
    if adv and adv[-1] - adv[0] != len(adv) - 1 and index_ndim:
        perm = [*range(1, index_ndim + 1), 0, *range(index_ndim + 1, ndim + 1)]
        value = F.ops.transpose(value, perm=tuple(perm))
    return value


def _setitem_loop(call, outputs):
    return call.loop() if outputs is None else loop_inplace(call, outputs)


def _full_slices(kinds, values, shape) -> bool:
    """Whether the encoded basic index is only full slices (``x[:, :, idx]``): its view is the tensor itself."""
    if any(k != 1 for k in kinds) or len(kinds) > len(shape):
        return False
    return all(values[3 * i] == 0 and values[3 * i + 1] >= shape[i] and values[3 * i + 2] == 1
               for i in range(len(kinds)))


_setitem_ops = {}  # (op type, number of index tensors) -> op expr


def _setitem_op(op_type, n):
    op = _setitem_ops.get((op_type, n))
    if op is None:
        b = OpBuilder(op_type).input("ref")
        if op_type == "tensor_setitem":
            b.input("value")
        op = _setitem_ops[(op_type, n)] = b.input("indices", n).output("out").build()
    return op


def _setitem_batched_indices(call, outputs, first_index):
    """``ref[indices] = value`` (or ``+=``: ``index_put``, the gradient of ``index``) with batched integer index
    tensors and no basic part but full slices: as for ``index``, ``arange(B)`` indexes the batch dim of ``ref`` in front of the
    others. The indexed region is then (B, *index dims, *other dims of ref), so the value is broadcast to the
    logical region per sample and, when the logical indexed dims were adjacent after other dims, those dims move
    behind the index dims."""
    a = call.attrs
    adv = a["adv_dims"]
    ref = _batched(call, 0)
    shape = ref._meta.shape[1:]
    indices = batched_values(call, range(first_index, len(call.values)))
    index_shape = _broadcast_shape([t._meta.shape[1:] for t in indices])
    k = len(index_shape)
    batch = _reshape(F.arange(call.size, dtype=indices[0]._meta.dtype, device=ref._meta.device), (call.size, *(1,) * k))
    values = [ref]
    if first_index == 2:
        pre = adv[0] if adv[-1] - adv[0] == len(adv) - 1 else 0
        rest = [n for i, n in enumerate(shape) if i not in adv]
        region = (*rest[:pre], *index_shape, *rest[pre:])
        value = _value_to_region(_batched(call, 1), region, call.size)
        if pre:
            value = F.ops.transpose(value, perm=(0, *range(1 + pre, 1 + pre + k), *range(1, 1 + pre),
                                                 *range(1 + pre + k, 1 + len(region))))
        values.append(value)
    op = _setitem_op(call.op_type, len(indices) + 1)
    attrs = op.compose_attrs({**a, "kinds": (), "values": (), "adv_dims": (0, *[d + 1 for d in adv])})
    return dispatch(op, (*values, batch, *indices), attrs, outputs)


def _broadcast_shape(shapes) -> tuple:
    out = []
    for dims in itertools.zip_longest(*[reversed(tuple(s)) for s in shapes], fillvalue=1):
        out.append(max(dims) if min(dims) != 0 else 0)
    return tuple(reversed(out))


def _value_to_region(value, region, size):
    """A physical value (B, *v), ``v`` broadcastable to ``region`` (extra leading 1s allowed, as the kernel
    drops them), expanded to (B, *region)."""
    v = list(value._meta.shape[1:])
    while len(v) > len(region) and v[0] == 1:
        v.pop(0)
    value = _reshape(value, (size, *(1,) * (len(region) - len(v)), *v))
    return F.ops.expand(value, expand_shape=(size, *region))


register_batch_rule("tensor_setitem", _setitem, inplace=True)
register_batch_rule("tensor_setitem_scalar", _setitem, inplace=True)


def _batch_norm_elemt(call):
    """Normalisation with given statistics (batch norm in eval mode): the batch folded into N when only x
    is batched."""
    if any(call.batched[1:]) or call.logical_ndim(0) < 2:
        return call.loop()
    return (_unfold(call.redo([_fold(call.values[0], call.size), *call.values[1:]])[0], call.size),)


register_batch_rule("batch_norm_elemt", _batch_norm_elemt)
