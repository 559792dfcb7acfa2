"""SBP rules of the nn, loss and shape-assembly ops: nll and its grad, embedding, layer_norm, slice, cat,
stack, split, unbind (Note [SBP rules] in interpreters/sbp_rules.py).

Note [The global mean of nll]
``nll`` with ``reduction="mean"`` divides the summed loss by the total weight of the targets. Over a batch
split between ranks, each rank's local mean would divide by its own total: the local call sums instead
(``reduction="sum"``) and the ``finish`` step divides by the total weight over the ranks holding the
batch (a scalar all-reduce), giving a partial sum whose sum over the ranks is the global mean. ``nll_grad``
does the same for its gradient.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.framework.world import world
from oneflow_lite.interpreters.sbp_rules import B, P, SbpRule, register_sbp_rule, split


# ---- nll -----------------------------------------------------------------------------------------------
def _batch_dims(x_ndim):
    """(input dim, target dim) pairs a class loss can split: the batch dim and the spatial dims."""
    return [(0, 0)] + [(d, d - 1) for d in range(2, x_ndim)]


def nll_signatures(ctx) -> list:
    x = ctx.inputs[0]
    w = (B,) if len(ctx.inputs) == 3 else ()
    reduced = ctx.attrs["reduction"] != "none"
    sigs = []
    if x.ndim >= 2:
        for d, td in _batch_dims(x.ndim):
            sigs.append(((split(d), split(td)) + w, (P if reduced else split(td),)))
    return sigs + [((B, B) + w, (B,))]


def nll_grad_signatures(ctx) -> list:
    like = ctx.attrs["like_shape"]
    w = (B,) if len(ctx.inputs) == 3 else ()
    reduced = ctx.attrs["reduction"] != "none"
    sigs = []
    if len(like) >= 2:
        for d, td in _batch_dims(len(like)):
            sigs.append((((B,) if reduced else (split(td),)) + (split(td),) + w, (split(d),)))
    return sigs + [((B, B) + w, (B,))]


def _split_group(placement, coord, nd_sbp):
    """The ranks that share this rank's coordinates on every placement dimension ``nd_sbp`` does not split."""
    keep = [h for h, s in enumerate(nd_sbp) if s.kind != "S"]
    ranks = tuple(r for r in placement.rank_list if all(placement.coord(r)[h] == coord[h] for h in keep))
    return world().group(ranks)


def _nll_mean_finish(plan, inputs, outputs):
    """Note [The global mean of nll]: divide the local sum by the global total weight of the targets."""
    ignore_index, group = plan.data
    target = inputs[1]._array
    valid = target != ignore_index
    if len(inputs) == 3 and inputs[2]._array.size:
        total = float(inputs[2]._array[np.where(valid, target, 0)][valid].sum())
    else:
        total = float(valid.sum())
    total = group.allreduce(np.array(total, np.float64))
    out = outputs[0]._array
    with np.errstate(invalid="ignore", divide="ignore"):
        out /= out.dtype.type(total)


def _nll_localize(ctx, plan, target_input=1):
    attrs = {}
    if ctx.op_type == "nll_grad":
        attrs["like_shape"] = plan.out_local_shapes[0]
    target_sbp = plan.in_nd_sbps[target_input]
    if ctx.attrs["reduction"] == "mean" and any(s.kind == "S" for s in target_sbp):
        attrs["reduction"] = "sum"
        coord = plan.placement.coord(world().rank)
        plan.data = (ctx.attrs["ignore_index"], _split_group(plan.placement, coord, target_sbp))
        plan.finish = _nll_mean_finish
    return attrs


register_sbp_rule("nll", SbpRule(nll_signatures, localize=_nll_localize))
register_sbp_rule("nll_grad", SbpRule(nll_grad_signatures, localize=_nll_localize))


# ---- embedding -----------------------------------------------------------------------------------------
# Note [Vocab-parallel embedding]
# With the weight split by rows (S(0): each rank holds a slice of the vocabulary) and the indices
# broadcast, each rank looks up the indices that fall in its rows and gives zeros for the others: the
# output is a partial sum (Megatron's vocab-parallel embedding, expressed by SBP alone). The local call
# gets the indices shifted into this rank's rows, those outside clamped to its first row (``prepare``);
# ``finish`` zeroes the outputs of the indices outside. An index outside the whole vocabulary raises as on
# one process. The signature is offered when every rank holds at least one row. Backward: the gradient of
# a partial output is any SBP summing to it; ``embedding_grad`` is linear in ``dy`` (P -> P). Its op does not
# take the weight, so its signatures cannot see the weight's layout: the weight's gradient row does
# (``F.embedding_weight_grad`` in autograd/grads/util.py) and, for a weight split by rows, asks for the
# gradient in that layout (the output given, as an in-place call): ``dy`` and the indices broadcast, each
# rank computes only its own rows' gradient (``num_weights`` its row count; ``prepare`` keeps the indices in
# its rows, shifted, with their ``dy`` rows), so no rank holds the whole table's gradient and the table is
# never reduced: what moves is ``dy`` (the size of the looked-up rows).
def embedding_signatures(ctx) -> list:
    """(B, S(d)) -> S(d) over the indices' dims; (S(1), B) -> S(-1): the embedding dim split; (S(0), B) -> P:
    vocab parallel (Note [Vocab-parallel embedding])."""
    nd = ctx.inputs[1].ndim
    sigs = ([((B, split(d)), (split(d),)) for d in range(nd)] + [((split(1), B), (split(nd),))]
            + [((B, B), (B,))])
    if ctx.inputs[0].shape[0] >= ctx.n:
        sigs.append(((split(0), B), (P,)))
    return sigs


def _vocab_rows(plan):
    """This rank's rows of the weight: (start, stop), and the vocabulary size."""
    w = plan.in_metas[0]
    rows = S.local_slices(tuple(w.shape), plan.in_nd_sbps[0], plan.placement.hierarchy, w.coord)[0]
    return rows.start, rows.stop, w.shape[0]


def _shift_indices(plan, inputs):
    start, stop, vocab = plan.data
    idx = inputs[1]._array
    if idx.size and (idx.min() < 0 or idx.max() >= vocab):
        raise IndexError(f"embedding: index out of range in self (indices must be in [0, {vocab}))")
    local = idx - start
    local[(local < 0) | (local >= stop - start)] = 0
    return [inputs[0], Tensor._make(local, inputs[1]._meta)]


def _zero_outside(plan, inputs, outputs):
    start, stop, _ = plan.data
    idx = inputs[1]._array
    outputs[0]._array[(idx < start) | (idx >= stop)] = 0


def _embedding_localize(ctx, plan):
    if any(s.kind == "S" and s.dim == 0 for s in plan.in_nd_sbps[0]):
        plan.data = _vocab_rows(plan)
        plan.prepare, plan.finish = _shift_indices, _zero_outside
    return {}


def embedding_grad_signatures(ctx) -> list:
    """The last, (B, B) -> S(0), is only taken when asked for (its inputs cost as much as (B, B) -> B, which
    comes first): the gradient of a weight split by rows (Note [Vocab-parallel embedding])."""
    nd = ctx.inputs[1].ndim
    return ([((split(d), split(d)), (P,)) for d in range(nd)] + [((split(nd), B), (split(1),))]
            + [((B, B), (B,)), ((P, B), (P,)), ((B, B), (split(0),))])


def _own_rows_only(plan, inputs):
    """The indices in this rank's rows, shifted, and their ``dy`` rows (1-D and 2-D)."""
    start, stop, vocab = plan.data
    dy, idx = inputs[0], inputs[1]._array
    if idx.size and (idx.min() < 0 or idx.max() >= vocab):
        raise IndexError(f"embedding: index out of range in self (indices must be in [0, {vocab}))")
    keep = ((idx >= start) & (idx < stop)).reshape(-1)
    rows = dy._array.reshape(-1, dy.shape[-1])[keep]
    local = idx.reshape(-1)[keep] - start
    return [Tensor._make(rows, make_meta(rows.shape, dy._meta.dtype, dy._meta.device)),
            Tensor._make(local, make_meta(local.shape, inputs[1]._meta.dtype, dy._meta.device))]


def _embedding_grad_localize(ctx, plan):
    out = plan.out_metas[0]
    if not any(s.kind == "S" and s.dim == 0 for s in out.nd_sbp):
        return {}
    rows = S.local_slices(tuple(out.shape), out.nd_sbp, plan.placement.hierarchy, out.coord)[0]
    plan.data = (rows.start, rows.stop, out.shape[0])
    plan.prepare = _own_rows_only
    pad = ctx.attrs["padding_idx"]
    return {"num_weights": rows.stop - rows.start,
            "padding_idx": pad - rows.start if rows.start <= pad < rows.stop else -1}


register_sbp_rule("embedding", SbpRule(embedding_signatures, localize=_embedding_localize))
register_sbp_rule("embedding_grad", SbpRule(embedding_grad_signatures, localize=_embedding_grad_localize))


# ---- layer_norm ----------------------------------------------------------------------------------------
def _norm_axis(ctx, shape_ndim):
    a = ctx.attrs["begin_norm_axis"]
    return a + shape_ndim if a < 0 else a


def layer_norm_signatures(ctx) -> list:
    """x split on a dim before the normalised ones; gamma and beta broadcast; every output split alike."""
    x = ctx.inputs[0]
    params = (B,) * (len(ctx.inputs) - 1)
    n_out = len(ctx.outputs)
    sigs = [((split(d),) + params, (split(d),) * n_out) for d in range(_norm_axis(ctx, x.ndim))]
    return sigs + [((B,) + params, (B,) * n_out)]


def layer_norm_grad_signatures(ctx) -> list:
    """dy, x, mean, inv_variance split alike on a leading dim; gamma broadcast; the param grads partial."""
    x = ctx.inputs[1]
    rest = (B,) * (len(ctx.inputs) - 4)
    sigs = []
    for d in range(_norm_axis(ctx, x.ndim)):
        outs = (split(d),) if ctx.op_type == "layer_norm_grad" else (P, P)
        sigs.append(((split(d),) * 4 + rest, outs))
    return sigs + [((B,) * len(ctx.inputs), (B,) * len(ctx.outputs))]


register_sbp_rule("layer_norm", SbpRule(layer_norm_signatures))
register_sbp_rule(("layer_norm_grad", "layer_norm_param_grad"), SbpRule(layer_norm_grad_signatures))


# ---- slice, cat, stack, split, unbind --------------------------------------------------------------------
def _whole_dims(ctx, shape):
    start, stop, step = ctx.attrs["start"], ctx.attrs["stop"], ctx.attrs["step"]
    return [d for d, size in enumerate(shape) if start[d] == 0 and stop[d] >= size and step[d] == 1]


def slice_signatures(ctx) -> list:
    """A dim the slice keeps whole may stay split; the slice is linear (P -> P)."""
    shape = ctx.inputs[0].shape if ctx.op_type == "slice" else ctx.attrs["like_shape"]
    dims = _whole_dims(ctx, shape)
    return [((split(d),), (split(d),)) for d in dims] + [((B,), (B,)), ((P,), (P,))]


def _slice_localize(ctx, plan):
    """The stop of a split dim is this rank's piece's size; slice_grad's like_shape its piece's shape."""
    shape = plan.in_local_shapes[0] if ctx.op_type == "slice" else plan.out_local_shapes[0]
    stop = list(ctx.attrs["stop"])
    for d in _whole_dims(ctx, ctx.inputs[0].shape if ctx.op_type == "slice" else ctx.attrs["like_shape"]):
        stop[d] = shape[d]
    attrs = {"stop": tuple(stop)}
    if ctx.op_type == "slice_grad":
        attrs["like_shape"] = plan.out_local_shapes[0]
    return attrs


register_sbp_rule(("slice", "slice_grad"), SbpRule(slice_signatures, localize=_slice_localize))


def _axis(ctx, ndim):
    a = ctx.attrs["axis"]
    return a + ndim if a < 0 else a


def cat_signatures(ctx) -> list:
    """Every input split alike on a dim other than the axis (cat, split, unbind); stack shifts the dims after
    the new axis."""
    nd = ctx.inputs[0].ndim
    n_in, n_out = len(ctx.inputs), len(ctx.outputs)
    axis = _axis(ctx, ctx.outputs[0].ndim if ctx.op_type == "stack" else nd)
    sigs = []
    for d in range(nd):
        if ctx.op_type == "stack":
            sigs.append(((split(d),) * n_in, (split(d if d < axis else d + 1),)))
        elif d != axis:
            out = d if ctx.op_type != "unbind" or d < axis else d - 1
            sigs.append(((split(d),) * n_in, (split(out),) * n_out))
    return sigs + [((B,) * n_in, (B,) * n_out), ((P,) * n_in, (P,) * n_out)]


register_sbp_rule(("cat", "stack", "split", "unbind"), SbpRule(cat_signatures))


# ---- convolution, pooling, upsampling: the batch (and for pooling the channel) dim ---------------------
def batch_signatures(ctx, split_inputs=None, partial_out=False, dims=(0,)) -> list:
    """The inputs of ``split_inputs`` (default: all) split alike on one of ``dims``; the outputs split alike,
    or partial (a weight's gradient summed over the batch)."""
    n_in, n_out = len(ctx.inputs), len(ctx.outputs)
    chosen = range(n_in) if split_inputs is None else split_inputs
    sigs = []
    for d in dims:
        ins = tuple(split(d) if i in chosen else B for i in range(n_in))
        sigs.append((ins, (P,) * n_out if partial_out else (split(d),) * n_out))
    return sigs + [((B,) * n_in, (B,) * n_out)]


register_sbp_rule(("conv1d", "conv2d", "conv3d", "conv_data_grad"),
                  SbpRule(partial(batch_signatures, split_inputs=(0,))))
register_sbp_rule("conv_filter_grad", SbpRule(partial(batch_signatures, partial_out=True)))
_POOLS = [f"{kind}_pool{n}d{suffix}" for kind in ("max", "avg") for n in (1, 2, 3) for suffix in ("", "_grad")]
_POOLS += [f"max_pool{n}d_gather" for n in (1, 2, 3)]
_POOLS += [f"adaptive_avg_pool{n}d{suffix}" for n in (1, 2, 3) for suffix in ("", "_grad")]
_POOLS += [f"upsample_{kind}{suffix}" for kind in ("nearest", "linear", "bicubic") for suffix in ("", "_grad")]
register_sbp_rule(_POOLS, SbpRule(partial(batch_signatures, dims=(0, 1))))
