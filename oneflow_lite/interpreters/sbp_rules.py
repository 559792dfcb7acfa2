"""SBP signature rules: for each op type, the SBP signatures it admits on one placement dimension (OneFlow's
``GetSbpFn``), and how its local call differs from the logical one.

Note [SBP rules]
A rule is registered per op type (``register_sbp_rule``): an :class:`SbpRule` holding

- ``signatures(ctx)``: the admitted ``(input SBPs, output SBPs)`` pairs for one placement dimension of
  ``ctx.n`` ranks, from the logical metas and attrs in ``ctx``; the global interpreter picks, for each
  placement dimension, the one whose inputs are cheapest to box to (Note [Choosing a signature]);
- ``localize(ctx, plan)`` (optional), run once per plan: returns the attrs that differ in the local call
  (e.g. a ``shape`` attr holding the logical output shape becomes this rank's piece's shape), and may set
  ``plan.finish(plan, inputs, outputs)``, a per-call step after the local kernel (e.g. the mean of a split
  dimension divided by the global count instead of the local one), with ``plan.data`` for it, and
  ``plan.prepare(plan, inputs)``, a per-call step returning the local inputs the kernel gets instead (e.g.
  indices shifted into this rank's rows); ``finish`` still sees the inputs before ``prepare``.

Rules are written for families (``broadcast``: elementwise and broadcasting ops; ``reduce``; ``view``;
matmul / linear; softmax; nll; embedding; ...) and registered for each op type of the family. An op
without a rule runs on broadcast inputs (every rank computes the whole op) and says so once in the log.
Random ops have no rule on purpose (a broadcast result must be the same on every rank), except dropout's
mask, drawn piece by piece (Note [Random ops on global tensors] in interpreters/eager_global.py).
"""

from __future__ import annotations

import threading
from functools import partial

import numpy as np

from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.world import world

B = S.broadcast
P = S.partial_sum
split = S.split
_lock = threading.Lock()


class SbpContext:
    """What a rule sees: the op type, the logical input / output metas, the composed attrs, and the number
    of ranks ``n`` on the placement dimension ``axis`` being decided (of ``size`` ranks in all)."""

    __slots__ = ("attrs", "axis", "inputs", "n", "op_type", "outputs", "size")

    def __init__(self, op_type, inputs, outputs, attrs, n, axis=0, size=None):
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.n = n
        self.axis = axis
        self.size = n if size is None else size


class SbpRule:
    """The SBP behaviour of an op type (Note [SBP rules])."""

    __slots__ = ("localize", "signatures")

    def __init__(self, signatures, localize=None):
        self.signatures = signatures
        self.localize = localize

    def __repr__(self):
        fn = self.signatures
        name = getattr(getattr(fn, "func", fn), "__name__", repr(fn))
        if isinstance(fn, partial) and fn.keywords:
            name += "(" + ", ".join(f"{k}={getattr(v, '__name__', v)!r}" for k, v in fn.keywords.items()) + ")"
        return name + ("" if self.localize is None else f", localized by {self.localize.__name__}")


def describe_rule(op_type: str) -> str:
    """The line ``dump_table`` prints under the Global key (Note [Key annotations] in dispatch/introspection.py)."""
    rule = SBP_RULES.get(op_type)
    if rule is None:
        return "sbp rule: none (global calls run on broadcast inputs)"
    return f"sbp rule: {rule!r}"


SBP_RULES: dict[str, SbpRule] = {}


def register_sbp_rule(op_types, rule: SbpRule) -> None:
    """Register ``rule`` for each op type of ``op_types`` (a name or a list of names)."""
    if isinstance(op_types, str):
        op_types = (op_types,)
    with _lock:
        for t in op_types:
            SBP_RULES[t] = rule


def find_sbp_rule(op_type: str) -> SbpRule | None:
    return SBP_RULES.get(op_type)


# ---- broadcast (elementwise and broadcasting ops) -----------------------------------------------------
def broadcast_signatures(ctx, partial_sets=(), skip=None) -> list:
    """Split any output dim that some input has whole (inputs that broadcast along it stay B), all B, and
    the given sets of inputs partial (the op is linear in them; the other inputs B)."""
    out = ctx.outputs[0].shape
    nd = len(out)
    skipped = skip(ctx) if skip is not None else ()
    n_out = len(ctx.outputs)
    sigs = []
    for d in range(nd):
        if d in skipped:
            continue
        ins = []
        for m in ctx.inputs:
            k = d - (nd - m.ndim)
            ins.append(split(k) if k >= 0 and m.shape[k] == out[d] else B)
        if any(s is not B for s in ins):
            sigs.append((tuple(ins), (split(d),) * n_out))
    sigs.append(((B,) * len(ctx.inputs), (B,) * n_out))
    for ps in partial_sets:
        if max(ps) < len(ctx.inputs):
            sigs.append((tuple(P if i in ps else B for i in range(len(ctx.inputs))), (P,) * n_out))
    return sigs


def _axis_dim(ctx):
    nd = ctx.inputs[0].ndim
    a = ctx.attrs["axis"]
    return (a + nd if a < 0 else a,)


broadcast = SbpRule(broadcast_signatures)
linear_unary = SbpRule(partial(broadcast_signatures, partial_sets=((0,),)))
softmax = SbpRule(partial(broadcast_signatures, skip=_axis_dim))

_UNARY = ["abs", "ceil", "cos", "erf", "exp", "expm1", "floor", "log", "log1p", "log2", "reciprocal", "round", "rsqrt", "sign", "sin", "sqrt", "square", "tan", "tanh", "trunc", "sigmoid", "relu", "elu", "gelu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "mish", "selu", "silu", "softplus", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "nan_to_num", "clip_by_scalar", "scalar_add", "scalar_floor_mod", "scalar_floordiv", "scalar_fmod", "scalar_lerp", "scalar_logical_equal", "scalar_logical_greater", "scalar_logical_greater_equal", "scalar_logical_less", "scalar_logical_less_equal", "scalar_logical_not_equal", "scalar_pow", "scalar_reverse_div", "scalar_reverse_pow", "scalar_truncdiv", "relu_grad", "elu_grad", "gelu_grad", "hardsigmoid_grad", "hardswish_grad", "hardtanh_grad", "leaky_relu_grad", "mish_grad", "selu_grad", "sigmoid_grad", "silu_grad", "softplus_grad", "tanh_grad", "clip_by_scalar_grad", "broadcast_atan2", "broadcast_bitwise_and", "broadcast_bitwise_or", "broadcast_bitwise_xor", "broadcast_equal", "broadcast_floor_mod", "broadcast_floordiv", "broadcast_fmod", "broadcast_greater", "broadcast_greater_equal", "broadcast_less", "broadcast_less_equal", "broadcast_logical_and", "broadcast_logical_or", "broadcast_logical_xor", "broadcast_maximum", "broadcast_minimum", "broadcast_not_equal", "broadcast_pow", "broadcast_truncdiv", "clip_by_tensor", "clip_by_tensor_max", "clip_by_tensor_min", "where", "masked_fill", "masked_fill_tensor", "lerp", "addcmul", "addcdiv", "mse_loss", "mse_loss_grad", "l1_loss", "l1_loss_grad", "smooth_l1_loss", "smooth_l1_loss_grad", "huber_loss", "huber_loss_grad", "kl_div_loss", "kl_div_loss_grad", "kl_div_loss_target_grad", "binary_cross_entropy", "binary_cross_entropy_grad", "binary_cross_entropy_target_grad", "binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits_grad", "binary_cross_entropy_with_logits_target_grad", "sgd_update", "one_hot"]
register_sbp_rule(_UNARY, broadcast)
register_sbp_rule(("negative", "scalar_mul", "scalar_div", "cast", "copy"), linear_unary)
register_sbp_rule(("broadcast_add", "broadcast_sub"), SbpRule(partial(broadcast_signatures, partial_sets=((0, 1),))))
register_sbp_rule("broadcast_mul", SbpRule(partial(broadcast_signatures, partial_sets=((0,), (1,)))))
register_sbp_rule("broadcast_div", SbpRule(partial(broadcast_signatures, partial_sets=((0,),))))
register_sbp_rule(("softmax", "log_softmax", "softmax_grad", "log_softmax_grad", "safe_softmax"), softmax)
# dropout is linear in its input given the mask (B); the mask follows its input's split, and a partial input
# (whose shape is the logical one) gets a broadcast mask, drawn alike (Note [Random ops on global tensors]).
register_sbp_rule("dropout", SbpRule(partial(broadcast_signatures, partial_sets=((0,),))))


def random_mask_signatures(ctx) -> list:
    nd = ctx.inputs[0].ndim
    return [((split(d),), (split(d),)) for d in range(nd)] + [((B,), (B,)), ((P,), (B,))]


register_sbp_rule("random_mask_like", SbpRule(random_mask_signatures))


# ---- reductions ---------------------------------------------------------------------------------------
def _reduced_axes(ctx) -> tuple:
    nd = ctx.inputs[0].ndim
    if "axis" in ctx.attrs:
        axes = ctx.attrs["axis"]
        keep = ctx.attrs["keepdims"]
    else:
        axes, keep = (ctx.attrs["dim"],), ctx.attrs["keepdim"]
    return tuple(sorted(a + nd if a < 0 else a for a in axes)) if nd else (), keep


def reduce_signatures(ctx, partial=None) -> list:
    """A split of a kept dim stays a split (of the dim it becomes); a split of a reduced dim gives
    ``partial`` (P for sum and mean, P(max) for max, P(min) for min; these two only when no piece is empty,
    as the kernels reject an empty max / min) when given; B -> B; ``partial`` -> ``partial``."""
    axes, keep = _reduced_axes(ctx)
    n_out = len(ctx.outputs)
    sigs = []
    for d in range(ctx.inputs[0].ndim):
        if d in axes:
            if partial is not None and (partial is P or ctx.inputs[0].shape[d] >= ctx.size):
                sigs.append(((split(d),), (partial,) * n_out))
        else:
            sigs.append(((split(d),), (split(d if keep else d - sum(a < d for a in axes)),) * n_out))
    sigs.append(((B,), (B,) * n_out))
    if partial is not None:
        sigs.append(((partial,), (partial,) * n_out))
    return sigs


def _mean_finish(plan, inputs, outputs):
    """The local mean of a split reduced dim is over the local count: rescale to the global count."""
    factor = plan.data
    for o in outputs:
        a = o._array
        if factor == 0.0:
            a[...] = 0
        else:
            a *= a.dtype.type(factor)


def _mean_factor(ctx, plan):
    axes, _ = _reduced_axes(ctx)
    local, logical = plan.in_local_shapes[0], ctx.inputs[0].shape
    num = den = 1
    for a in axes:
        num *= local[a]
        den *= logical[a]
    plan.data = (num / den) if den else 1.0
    if plan.data != 1.0:
        plan.finish = _mean_finish


register_sbp_rule(("reduce_sum",), SbpRule(partial(reduce_signatures, partial=P)))
register_sbp_rule(("reduce_mean",), SbpRule(partial(reduce_signatures, partial=P), localize=_mean_factor))
register_sbp_rule("reduce_max", SbpRule(partial(reduce_signatures, partial=S.partial_max)))
register_sbp_rule("reduce_min", SbpRule(partial(reduce_signatures, partial=S.partial_min)))
register_sbp_rule(("reduce_prod", "reduce_all", "reduce_any", "reduce_logsumexp", "count_nonzero"),
                  SbpRule(reduce_signatures))


# Note [Max and min along a split dim]
# ``max(dim)`` / ``min(dim)`` (values and indices) over a dim split on a placement dimension do not gather the
# input: each rank reduces its piece (its local winner and index), shifts the index by its piece's start,
# and the ranks of that placement dimension all-gather these reduced (small) results and keep the global
# winner: NaN first (the kernel's rule), then the larger (smaller) value, ties to the lower index, as torch's
# first occurrence. Values and indices come out broadcast. The signature is offered only when the dim has
# at least as many elements as the placement has ranks (no piece is empty, however the placement dimensions
# split it); a shorter dim is gathered, as before.
def dim_extreme_signatures(ctx) -> list:
    axes, _ = _reduced_axes(ctx)
    shape = ctx.inputs[0].shape
    return reduce_signatures(ctx) + [((split(a),), (B, B)) for a in axes if shape[a] >= ctx.size]


def _dim_extreme_localize(ctx, plan):
    in_nd, m = plan.in_nd_sbps[0], plan.in_metas[0]
    (d,), _ = _reduced_axes(ctx)
    axes = [h for h, s in enumerate(in_nd) if s is split(d)]
    if axes:
        start = S.local_slices(m.shape, in_nd, plan.placement.hierarchy, m.coord)[d].start
        groups = [world().group(plan.placement.axis_ranks(world().rank, h)) for h in axes]
        plan.data = (start, groups, ctx.op_type == "reduce_max_dim")
        plan.finish = _dim_extreme_finish


def _nan(a):
    return np.isnan(a) if a.dtype.kind in "fcV" else np.zeros(a.shape, bool)  # V: bfloat16


def _pick_extremes(values, indices, groups, is_max):
    """Each rank's (value, global index) candidates in ``values`` / ``indices`` (same shape) all-gathered over
    each group in turn; the winners, as on every rank: NaN first, then the larger (smaller) value, ties to
    the lower index (Note [Max and min along a split dim])."""
    for g in groups:
        vals = g.allgather(values, [values.size] * g.size).reshape((g.size, *values.shape))
        idx = g.allgather(indices, [indices.size] * g.size).reshape((g.size, *indices.shape))
        values, indices = vals[0], idx[0]
        for v, i in zip(vals[1:], idx[1:]):
            v_nan, best_nan = _nan(v), _nan(values)
            wins = (v > values) if is_max else (v < values)
            ties = (v == values) | (v_nan & best_nan)
            take = ((wins | v_nan) & ~best_nan) | (ties & (i < indices))
            values, indices = np.where(take, v, values), np.where(take, i, indices)
    return values, indices


def _dim_extreme_finish(plan, inputs, outputs):
    start, groups, is_max = plan.data
    values, indices = outputs[0]._array, outputs[1]._array
    indices += start
    values[...], indices[...] = _pick_extremes(values, indices, groups, is_max)


register_sbp_rule(("reduce_max_dim", "reduce_min_dim"), SbpRule(dim_extreme_signatures,
                                                              localize=_dim_extreme_localize))


# Note [argmax along a split dim]
# ``argmax`` / ``argmin`` over a split dim (or over the whole tensor, ``dim=None``, split on any dim) do not
# gather the input either: each rank takes its piece's local winner (the kernel's index), reads its value from
# the piece, makes the index global (shifted by the piece's start; with ``dim=None`` the flat index of the
# winner's position in the logical tensor), and the ranks of each placement dimension that splits it pick the
# global winner among the gathered (value, index) pairs by the rules of Note [Max and min along a split dim]
# (the kernel's NaN rule; ties to the lower index, the first occurrence). The index comes out broadcast.
def arg_extreme_signatures(ctx) -> list:
    shape = ctx.inputs[0].shape
    if ctx.attrs["flatten"]:
        return [((split(d),), (B,)) for d in range(len(shape)) if shape[d] >= ctx.size] + [((B,), (B,))]
    axes, _ = _reduced_axes(ctx)
    return reduce_signatures(ctx) + [((split(a),), (B,)) for a in axes if shape[a] >= ctx.size]


def _arg_extreme_localize(ctx, plan):
    in_nd, m = plan.in_nd_sbps[0], plan.in_metas[0]
    flatten = ctx.attrs["flatten"]
    dim = None if flatten else _reduced_axes(ctx)[0]
    axes = [h for h, s in enumerate(in_nd) if s.kind == "S" and (flatten or (s.dim,) == dim)]
    if axes:
        starts = tuple(sl.start for sl in S.local_slices(m.shape, in_nd, plan.placement.hierarchy, m.coord))
        groups = [world().group(plan.placement.axis_ranks(world().rank, h)) for h in axes]
        plan.data = (starts, groups, ctx.op_type == "argmax", None if flatten else dim[0], ctx.attrs["keepdim"],
                     tuple(m.shape))
        plan.finish = _arg_extreme_finish


def _arg_extreme_finish(plan, inputs, outputs):
    starts, groups, is_max, d, keepdim, shape = plan.data
    x, out = inputs[0]._array, outputs[0]._array
    if d is None:  # the whole tensor: one winner, its flat index in the logical tensor
        at = np.unravel_index(int(out.reshape(-1)[0]), x.shape)
        values = x[at].reshape(1)
        indices = np.array([np.ravel_multi_index(tuple(i + s for i, s in zip(at, starts)), shape)], np.int64)
    else:
        idx = out if keepdim else np.expand_dims(out, d)
        values = np.take_along_axis(x, idx, axis=d)
        indices = idx + starts[d]
    out[...] = _pick_extremes(values, indices, groups, is_max)[1].reshape(out.shape)


register_sbp_rule(("argmax", "argmin"), SbpRule(arg_extreme_signatures, localize=_arg_extreme_localize))


# ---- views: reshape, flatten, squeeze, expand_dims -----------------------------------------------------
def view_split_map(in_shape, out_shape, n) -> dict:
    """Input dim -> output dim whose splits over ``n`` ranks hold the same elements: the same number of
    elements before both, and the same size or both divisible by ``n``."""
    pre_out, acc = {}, 1
    for j, d in enumerate(out_shape):
        pre_out.setdefault(acc, []).append(j)
        acc *= d
    found, acc = {}, 1
    for i, d in enumerate(in_shape):
        for j in pre_out.get(acc, ()):
            o = out_shape[j]
            if d > 1 and (o == d or (d % n == 0 and o % n == 0)):
                found[i] = j
                break
        acc *= d
    return found


def view_signatures(ctx) -> list:
    m = view_split_map(ctx.inputs[0].shape, ctx.outputs[0].shape, ctx.n)
    return [((split(a),), (split(b),)) for a, b in m.items()] + [((B,), (B,)), ((P,), (P,))]


def _reshape_attrs(ctx, plan):
    return {"shape": plan.out_local_shapes[0]}


register_sbp_rule("reshape", SbpRule(view_signatures, localize=_reshape_attrs))
register_sbp_rule(("flatten", "squeeze", "expand_dims"), SbpRule(view_signatures))


def transpose_signatures(ctx) -> list:
    perm = ctx.attrs["perm"]
    return [((split(p),), (split(j),)) for j, p in enumerate(perm)] + [((B,), (B,)), ((P,), (P,))]


register_sbp_rule("transpose", SbpRule(transpose_signatures))


def expand_signatures(ctx) -> list:
    ins, out = ctx.inputs[0].shape, ctx.outputs[0].shape
    lead = len(out) - len(ins)
    sigs = [((split(k),), (split(k + lead),)) for k, d in enumerate(ins) if d == out[k + lead] and d > 1]
    return sigs + [((B,), (B,)), ((P,), (P,))]


register_sbp_rule("expand", SbpRule(expand_signatures,
                                    localize=lambda ctx, plan: {"expand_shape": plan.out_local_shapes[0]}))


# ---- matmul and linear --------------------------------------------------------------------------------
def matmul_signatures(ctx) -> list:
    """(S(m), B) -> S(m); (B, S(n)) -> S(n); (S(k), S(k)) -> P; batch dims split together; B / P passes."""
    a, b = ctx.inputs[0], ctx.inputs[1]
    na, nb, no = a.ndim, b.ndim, ctx.outputs[0].ndim
    sigs = []
    if na >= 2 and nb >= 2:
        bo = no - 2
        for d in range(bo):  # batch dims
            ka, kb = d - (bo - (na - 2)), d - (bo - (nb - 2))
            sa = split(ka) if ka >= 0 and a.shape[ka] == ctx.outputs[0].shape[d] else B
            sb = split(kb) if kb >= 0 and b.shape[kb] == ctx.outputs[0].shape[d] else B
            sigs.append(((sa, sb), (split(d),)))
        sigs.append(((split(na - 2), B), (split(no - 2),)))
        sigs.append(((B, split(nb - 1)), (split(no - 1),)))
    elif na >= 2:  # matrix @ vector
        sigs.append(((split(na - 2), B), (split(no - 1),)))
    sigs.append(((split(na - 1), split(max(nb - 2, 0))), (P,)))
    sigs += [((B, B), (B,)), ((P, B), (P,)), ((B, P), (P,))]
    return sigs


def linear_signatures(ctx) -> list:
    """x (..., k), weight (n, k), bias (n,): batch splits; column parallel (weight S(0), bias S(0)) -> S(-1);
    row parallel (x S(-1), weight S(1), bias P) -> P."""
    x = ctx.inputs[0]
    has_bias = len(ctx.inputs) == 3
    nd = x.ndim
    bias = (B,) if has_bias else ()
    sigs = [((split(d), B) + bias, (split(d),)) for d in range(nd - 1)]
    if ctx.inputs[1].ndim == 2:
        sigs.append(((B, split(0)) + ((split(0),) if has_bias else ()), (split(nd - 1),)))
        sigs.append(((split(nd - 1), split(1)) + ((P,) if has_bias else ()), (P,)))
    sigs.append(((B, B) + bias, (B,)))
    sigs.append(((P, B) + ((P,) if has_bias else ()), (P,)))
    return sigs


register_sbp_rule("matmul", SbpRule(matmul_signatures))
register_sbp_rule("linear", SbpRule(linear_signatures))


def parallel_cast_signatures(ctx) -> list:
    """The attr's SBP on this placement dimension, in and out: the interpreter boxes the input to it."""
    nd = ctx.attrs["nd_sbp"]
    if len(nd) <= ctx.axis:
        raise ValueError(f"hierarchical_parallel_cast: attr nd_sbp {list(nd)} has no SBP for placement dimension "
                         f"{ctx.axis}; expected one per placement dimension")
    s = S.parse_short(nd[ctx.axis])
    return [((s,), (s,))]


register_sbp_rule("hierarchical_parallel_cast", SbpRule(parallel_cast_signatures))
