"""Indexing ops: gather / scatter along a dim, index_select / index_add, masked_fill, masked_select,
nonzero / count_nonzero, and the advanced-indexing ops behind ``Tensor.__getitem__`` / ``__setitem__``.

Functors wrap dims and check PyTorch's argument rules first (with PyTorch's messages);
the infer functions here check again, so an op built directly (or replayed from a
graph) cannot run on inconsistent inputs. Index *values* (bounds) are checked by
the kernels, which alone see them.

Note [Value-dependent shapes]
``masked_select`` and ``nonzero`` have an output length that depends on values. Each
is split in two ops: ``count_nonzero`` computes the count (read on the host with
``.item()``), and the op proper takes it as its ``count`` attr, so its output meta is
inferred from metas and attrs like every other op's, and a captured graph records the
count it was built with. The functors refuse tensors without data (``meta``): there
is no count to read. The kernels check that the count still matches.

Note [Advanced indexing ops]
``x[index]`` first applies the basic part (ints, slices, None) as views (``slice`` and
``reshape``), then one ``index`` op: one int32 / int64 tensor per indexed dim of that
view (bool masks are turned into such tensors by ``nonzero``), broadcast together;
the broadcast dims replace the indexed dims where those are adjacent, else they come
first (NumPy's and PyTorch's rule). Ints are basic (they select before the advanced
part, as in PyTorch, unlike NumPy which treats them as advanced when arrays are
present). ``x[index] = value`` is one in-place ``tensor_setitem`` op on ``x`` itself
(not on a view, so autograd records it on ``x``): its ``kinds`` / ``values`` attrs
encode the basic part (0: an int, 1: a slice start, stop, step, 2: None) and
``adv_dims`` the dims of the basic view that the index tensors (int or bool masks,
NumPy semantics) address. ``accumulate`` adds instead of writing (``index_put``).

Note [Indexing grads]
Each op's gradient rows stand after its definition. Each backward is itself made of
indexing ops, so double backward works: gather <-> scatter_add, index_select <->
index_add, masked_select <-> masked_select_grad, index <-> tensor_setitem
(accumulating). Writes (scatter, masked_fill, tensor_setitem) pass the gradient to
the written tensor except where they wrote, and to the written values where they
landed. count_nonzero and nonzero have integer outputs (never recorded); backward
through dim_scatter_mul (``reduce="multiply"``) raises, as in PyTorch. Casts and
reshapes call the op (``F.ops``), as in Note [Reduction grads].
"""

from __future__ import annotations

import itertools
import math

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.ops.common import broadcast_shapes, not_implemented_row, same_dtype
from oneflow_lite.ops.math import SCALAR_ATTRS

_INDEX_DTYPES = (dt.int32, dt.int64)
_SETITEM_INDEX_DTYPES = (dt.int32, dt.int64, dt.bool_)


def _nonempty(shape) -> tuple:
    """A 0-d shape counts as ``(1,)`` (PyTorch's ``ensure_nonempty``)."""
    return tuple(shape) if len(shape) else (1,)


def _check_dim(ctx, dim, ndim):
    if not 0 <= dim < max(ndim, 1):
        raise ctx.error(f"dim {dim} is out of range for a tensor of dimension {ndim}")


def check_scalar_fits(ctx, value, dtype) -> None:
    """PyTorch's overflow check when a Python scalar is converted to ``dtype`` (``dt.holds``: a float is compared
    before truncation, so -0.5 and 255.5 do not fit uint8)."""
    if not dt.holds(dtype, value):
        raise ctx.error(f"value cannot be converted to type {dtype.name} without overflow: {value}")


def scalar_value(attrs):
    return attrs["float_operand"] if attrs["has_float_operand"] else attrs["int_operand"]


# ---- gather / scatter along a dim -----------------------------------------------------------------
def _gather_shape(ctx):
    x, index = ctx.shape("input"), ctx.shape("index")
    dim = ctx.attrs["dim"]
    _check_dim(ctx, dim, len(x))
    if ctx.dtype("index") is not dt.int64:
        raise ctx.error(f"Expected dtype int64 for index, got {ctx.dtype('index').name}")
    xs, ixs = _nonempty(x), _nonempty(index)
    if len(xs) != len(ixs):
        raise ctx.error("Index tensor must have the same number of dimensions as input tensor")
    for d in range(len(xs)):
        if d != dim and ixs[d] > xs[d]:
            raise ctx.error(f"Size does not match at dimension {d} expected index {list(index)} to be smaller "
                            f"than self {list(x)} apart from dimension {dim}")
    return index


register_user_op("dim_gather", inputs=["input", "index"], outputs=["output"], attrs={"dim": ("int32", 0)},
                 infer_shape=_gather_shape, infer_dtype=same_dtype)
# dx = scatter_add(zeros, dim, index, dy)
derivative("dim_gather", name="Gather",
           input=lambda doutput, index, input_meta, dim: F.scatter_add(F.zeros_of(input_meta), dim, index, doutput))


def _scatter_shape(ctx):
    x, index = ctx.shape("input"), ctx.shape("index")
    dim = ctx.attrs["dim"]
    _check_dim(ctx, dim, len(x))
    if ctx.dtype("index") is not dt.int64:
        raise ctx.error(f"Expected dtype int64 for index, got {ctx.dtype('index').name}")
    xs, ixs = _nonempty(x), _nonempty(index)
    if len(xs) != len(ixs):
        raise ctx.error("Index tensor must have the same number of dimensions as self tensor")
    if ctx.has_input("src"):
        if ctx.dtype("src") is not ctx.dtype("input"):
            raise ctx.error(f"Expected self.dtype to be equal to src.dtype, got {ctx.dtype('input').name} and "
                            f"{ctx.dtype('src').name}")
        src = ctx.shape("src")
        ss = _nonempty(src)
        if len(ss) != len(ixs):
            raise ctx.error("Index tensor must have the same number of dimensions as src tensor")
        for d in range(len(xs)):
            if ixs[d] > ss[d] or (d != dim and ixs[d] > xs[d]):
                raise ctx.error(f"Expected index {list(index)} to be smaller than self {list(x)} apart from "
                                f"dimension {dim} and to be smaller size than src {list(src)}")
    else:
        for d in range(len(xs)):
            if d != dim and ixs[d] > xs[d]:
                raise ctx.error(f"Expected index {list(index)} to be smaller than self {list(x)} apart from "
                                f"dimension {dim}")
    return x


SCATTER_OPS = ("dim_scatter_update", "dim_scatter_add", "dim_scatter_mul")
for _op in SCATTER_OPS:
    register_user_op(_op, inputs=["input", "index", "src"], outputs=["output"], attrs={"dim": ("int32", 0)},
                     infer_shape=_scatter_shape, infer_dtype=same_dtype)


def _scatter_scalar_dtype(ctx):
    d = ctx.dtype("input")
    check_scalar_fits(ctx, scalar_value(ctx.attrs), d)
    return d


for _op in SCATTER_OPS:
    register_user_op(_op + "_scalar", inputs=["input", "index"], outputs=["output"],
                     attrs={"dim": ("int32", 0), **SCALAR_ATTRS},
                     infer_shape=_scatter_shape, infer_dtype=_scatter_scalar_dtype)


def _fit(g, shape):
    """``g`` (the block of ``shape`` starting at 0 that an index addressed) zero-padded to ``shape``."""
    gs = g._meta.shape
    if gs == shape:
        return g
    if not gs or not shape:  # one element either way
        return F.ops.reshape(g, shape=tuple(shape))
    n = len(shape)
    return F.slice_grad(g, like_shape=tuple(shape), start=(0,) * n, stop=tuple(gs), step=(1,) * n)


def _overwritten_grad(doutput, index, dim):
    """dx of an update: dy, zeroed where the update wrote."""
    return F.scatter(doutput, dim, index, 0)


def _added_grad(doutput):
    """dx of an add: dy."""
    return doutput


def _scatter_src_grad(doutput, index, src_meta, dim):
    """dsrc = gather(dy), padded to src's shape."""
    return _fit(F.gather(doutput, dim, index), src_meta.shape)


for _op, _name, _dx in (("dim_scatter_update", "Scatter", _overwritten_grad),
                        ("dim_scatter_add", "ScatterAdd", _added_grad)):
    derivative(_op, name=_name, input=_dx, src=_scatter_src_grad)
    derivative(_op + "_scalar", name=_name, input=_dx)
for _op in ("dim_scatter_mul", "dim_scatter_mul_scalar"):  # not differentiable, as in PyTorch
    derivative(_op, name="ScatterMul", joint=not_implemented_row(
        "the derivative for 'scatter' with reduce='multiply' is not implemented"))



# ---- scatter_reduce (Note [scatter_reduce grads]) ----------------------------------------------------------
SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_shape(ctx):
    if ctx.attrs["reduce"] not in SCATTER_REDUCTIONS:
        raise ctx.error(f"reduce argument must be either sum, prod, mean, amax or amin, got {ctx.attrs['reduce']}")
    return _scatter_shape(ctx)


register_user_op("dim_scatter_reduce", inputs=["input", "index", "src"], outputs=["output"],
                 attrs={"dim": ("int32", 0), "reduce": ("string", "sum"), "include_self": ("bool", True)},
                 infer_shape=_scatter_reduce_shape, infer_dtype=same_dtype)


# Note [scatter_reduce grads]
# PyTorch's formulas (scatter_reduce_backward): "sum" passes dy to input (zeroed where src landed without
# include_self) and gathers it for src; "mean" divides by the number of values averaged; "amax" / "amin"
# share dy evenly between the values equal to the result; "prod" divides the result by each factor, with
# zeros handled apart (a product with one zero factor has a nonzero gradient for that factor only). Each
# row computes with functional calls, scatter_reduce included, so double backward works.
def _index_block(t, shape):
    """The block ``[:s0, :s1, ...]`` of ``t`` that an index of ``shape`` addresses."""
    if t._meta.shape == tuple(shape) or not shape:
        return t
    n = len(shape)
    return F.ops.slice(t, start=(0,) * n, stop=tuple(shape), step=(1,) * n)


def _as(mask, like):
    return F.cast(mask, like._meta.dtype)


def _untouched(t, dim, index):
    """``t`` zeroed where the index points (the positions src wrote to)."""
    return F.scatter(t, dim, index, 0)


def _scatter_reduce_mean(g, input, index, src, dim, include_self):
    counts = F.scatter_add(F.full_like(input, 1 if include_self else 0), dim, index, F.ones_like(src))
    g = F.div(g, F.masked_fill(counts, F.eq(counts, 0), 1))
    return g if include_self else _untouched(g, dim, index), F.gather(g, dim, index)


def _scatter_reduce_extremum(g, input, index, src, output, dim, include_self):
    src_hit = _as(F.eq(src, F.gather(output, dim, index)), g)
    self_hit = _as(F.eq(input, output), g)
    if not include_self:
        self_hit = _untouched(self_hit, dim, index)
    share = F.div(g, F.add(self_hit, F.scatter_add(F.zeros_like(input), dim, index, src_hit)))
    return F.mul(share, self_hit), F.mul(F.gather(share, dim, index), src_hit)


def _scatter_reduce_prod(g, input, index, src, output, dim, include_self):
    masked_input = F.masked_fill(input, F.eq(input, 0), 1)
    gx = F.div(F.mul(g, F.scatter_reduce(masked_input, dim, index, src, "prod", include_self=include_self)),
               masked_input)
    src_zero = F.eq(src, 0)
    zeros_there = F.gather(F.scatter_add(F.zeros_like(input), dim, index, _as(src_zero, g)), dim, index)
    single_zero = F.logical_and(src_zero, F.eq(zeros_there, 1))
    without_zero = F.scatter_reduce(input, dim, index, F.masked_fill(src, single_zero, 1), "prod",
                                    include_self=include_self)
    gs = F.where(single_zero, F.gather(F.mul(g, without_zero), dim, index),
                 F.div(F.gather(F.mul(g, output), dim, index), F.masked_fill(src, src_zero, 1)))
    return (gx if include_self else _untouched(gx, dim, index)), gs


def _scatter_reduce_grads(needs, doutput, input, index, src, output, dim, reduce, include_self):
    g = doutput
    src_block = _index_block(src, index._meta.shape)
    if reduce == "sum":
        gx, gs = (g if include_self else _untouched(g, dim, index)), F.gather(g, dim, index)
    elif reduce == "mean":
        gx, gs = _scatter_reduce_mean(g, input, index, src_block, dim, include_self)
    elif reduce == "prod":
        gx, gs = _scatter_reduce_prod(g, input, index, src_block, output, dim, include_self)
    else:
        gx, gs = _scatter_reduce_extremum(g, input, index, src_block, output, dim, include_self)
    return gx, None, _fit(gs, src._meta.shape)


derivative("dim_scatter_reduce", name="ScatterReduce", joint=_scatter_reduce_grads)

# ---- index_select / index_add --------------------------------------------------------------------
def _check_index_vector(ctx):
    index = ctx.shape("index")
    if len(index) > 1:
        raise ctx.error("Index is supposed to be a vector")
    if ctx.dtype("index") not in _INDEX_DTYPES:
        raise ctx.error(f"Expected dtype int32 or int64 for index, got {ctx.dtype('index').name}")
    return math.prod(index)


def _index_select_shape(ctx):
    x = ctx.shape("input")
    dim = ctx.attrs["dim"]
    _check_dim(ctx, dim, len(x))
    n = _check_index_vector(ctx)
    if not x:
        if n != 1:
            raise ctx.error(f"Index to scalar can have only 1 value, got {n} value(s)")
        return x
    return (*x[:dim], n, *x[dim + 1:])


register_user_op("index_select", inputs=["input", "index"], outputs=["output"], attrs={"dim": ("int32", 0)},
                 infer_shape=_index_select_shape, infer_dtype=same_dtype)
# dx = index_add(zeros, dim, index, dy)
derivative("index_select",
           input=lambda doutput, index, input_meta, dim: F.index_add(F.zeros_of(input_meta), dim, index, doutput))


def _index_add_shape(ctx):
    x, source = ctx.shape("input"), ctx.shape("source")
    dim = ctx.attrs["dim"]
    _check_dim(ctx, dim, len(x))
    n = _check_index_vector(ctx)
    if ctx.dtype("source") is not ctx.dtype("input"):
        raise ctx.error(f"self ({ctx.dtype('input').name}) and source ({ctx.dtype('source').name}) must have the "
                        f"same scalar type")
    expected = (*x[:dim], n, *x[dim + 1:]) if x else ()
    if tuple(source) != expected and not (not x and tuple(source) in ((), (1,)) and n == 1):
        raise ctx.error(f"source must have the shape of self with dimension {dim} of size {n} (the number of "
                        f"indices): expected {list(expected)}, got {list(source)}")
    return x


register_user_op("index_add", inputs=["input", "index", "source"], outputs=["output"],
                 attrs={"dim": ("int32", 0)}, infer_shape=_index_add_shape, infer_dtype=same_dtype)


def _index_add_source_grad(doutput, index, source_meta, dim):
    """dsource = index_select(dy, dim, index)."""
    ds = F.index_select(doutput, dim, index)
    if ds._meta.shape != source_meta.shape:  # a 0-d input: source () or (1,)
        ds = F.ops.reshape(ds, shape=tuple(source_meta.shape))
    return ds


derivative("index_add", input=_added_grad, source=_index_add_source_grad)


# ---- masked_fill --------------------------------------------------------------------------------
def _check_mask(ctx, name="mask"):
    if ctx.dtype(name) is not dt.bool_:
        raise ctx.error(f"only supports boolean masks, but got mask with dtype {ctx.dtype(name).name}")


def _masked_fill_shape(ctx):
    _check_mask(ctx)
    if ctx.has_input("value") and len(ctx.shape("value")) != 0:
        raise ctx.error(f"only supports a 0-dimensional value tensor, but got tensor with "
                        f"{len(ctx.shape('value'))} dimension(s)")
    return broadcast_shapes(ctx.op_type, ctx.shape("x"), ctx.shape("mask"))


def _masked_fill_scalar_dtype(ctx):
    d = ctx.dtype("x")
    check_scalar_fits(ctx, scalar_value(ctx.attrs), d)
    return d


def _masked_fill_tensor_dtype(ctx):
    d = ctx.dtype("x")
    if ctx.dtype("value") is not d:
        raise ctx.error(f"value must have the dtype of x ({d.name}), got {ctx.dtype('value').name}")
    return d


register_user_op("masked_fill", inputs=["x", "mask"], outputs=["y"], attrs=SCALAR_ATTRS,
                 infer_shape=_masked_fill_shape, infer_dtype=_masked_fill_scalar_dtype)
register_user_op("masked_fill_tensor", inputs=["x", "mask", "value"], outputs=["y"],
                 infer_shape=_masked_fill_shape, infer_dtype=_masked_fill_tensor_dtype)


def _masked_fill_x_grad(dy, mask, x_meta):
    """dx = dy where the mask is False (summed back to x's shape when x was broadcast)."""
    return F.reduce_to(F.masked_fill(dy, mask, 0), x_meta.shape)


def _masked_fill_value_grad(dy, mask):
    """dvalue = the sum of dy where the mask is True."""
    return F.sum(F.mul(dy, F.ops.cast(mask, dtype=dy._meta.dtype)))


derivative("masked_fill", x=_masked_fill_x_grad)
derivative("masked_fill_tensor", name="MaskedFill", x=_masked_fill_x_grad, value=_masked_fill_value_grad)


# ---- count_nonzero, masked_select, nonzero (Note [Value-dependent shapes]) -------------------------
def _count_nonzero_shape(ctx):
    x = ctx.shape("input")
    dims = ctx.attrs["dims"]
    for d in dims:
        _check_dim(ctx, d, len(x))
    if len(set(dims)) != len(dims):
        raise ctx.error(f"dims {list(dims)} contain a dim more than once")
    if not dims:
        return ()
    return tuple(s for i, s in enumerate(x) if i not in dims)


def _int64(ctx):
    return dt.int64


register_user_op("count_nonzero", inputs=["input"], outputs=["output"], attrs={"dims": ("list_int32", ())},
                 no_grad=True, infer_shape=_count_nonzero_shape, infer_dtype=_int64)


def _count(ctx):
    count = ctx.attrs["count"]
    if count < 0:
        raise ctx.error(f"count must be non-negative, got {count}")
    return count


def _masked_select_shape(ctx):
    _check_mask(ctx)
    broadcast_shapes(ctx.op_type, ctx.shape("input"), ctx.shape("mask"))
    return (_count(ctx),)


register_user_op("masked_select", inputs=["input", "mask"], outputs=["output"], attrs={"count": ("int64", 0)},
                 infer_shape=_masked_select_shape, infer_dtype=same_dtype)


def _masked_select_grad_shape(ctx):
    """``dx`` of ``like_shape`` (the broadcast shape of input and mask): ``dy`` where the mask is True, else 0."""
    _check_mask(ctx)
    like = ctx.attrs["like_shape"]
    if broadcast_shapes(ctx.op_type, like, ctx.shape("mask")) != tuple(like):
        raise ctx.error(f"mask of shape {list(ctx.shape('mask'))} does not broadcast to like_shape {list(like)}")
    if len(ctx.shape("dy")) != 1:
        raise ctx.error(f"dy must be 1-D, got shape {list(ctx.shape('dy'))}")
    return like


register_user_op("masked_select_grad", inputs=["dy", "mask"], outputs=["dx"], attrs={"like_shape": ("shape", ())},
                 infer_shape=_masked_select_grad_shape, infer_dtype=same_dtype)


def _masked_select_input_grad(doutput, mask, input_meta):
    """dx = dy scattered to where the mask is True (masked_select_grad), summed back to x's shape."""
    like = broadcast_shapes("masked_select", input_meta.shape, mask._meta.shape)
    return F.reduce_to(F.masked_select_grad(doutput, mask, like_shape=like), input_meta.shape)


derivative("masked_select", input=_masked_select_input_grad)
# d(dy) = masked_select(ddx, mask), with the count known: dy's length (F.ops: the op, not the function that
# reads the count from the mask)
derivative("masked_select_grad", dy=lambda ddx, mask, dy_meta: F.ops.masked_select(ddx, mask, count=dy_meta.shape[0]))


def _nonzero_shape(ctx):
    return (_count(ctx), len(ctx.shape("input")))


register_user_op("nonzero", inputs=["input"], outputs=["output"], attrs={"count": ("int64", 0)}, no_grad=True,
                 infer_shape=_nonzero_shape, infer_dtype=_int64)


# ---- advanced indexing (Note [Advanced indexing ops]) ----------------------------------------------
def advanced_result_shape(shape, dims, index_shapes, op_type="index") -> tuple:
    """The shape of ``x[idx]`` when ``idx`` holds integer arrays of ``index_shapes`` at ``dims`` of ``shape``
    (ascending) and full slices elsewhere: NumPy's placement of the broadcast dims."""
    try:
        b = broadcast_shapes(op_type, *index_shapes)
    except RuntimeError:
        shown = ", ".join(str(list(s)) for s in index_shapes)
        raise IndexError(f"{op_type}: shape mismatch: indexing tensors could not be broadcast together with "
                         f"shapes {shown}") from None
    rest = [s for i, s in enumerate(shape) if i not in dims]
    if dims[-1] - dims[0] == len(dims) - 1:  # adjacent: the broadcast dims take their place
        return (*shape[:dims[0]], *b, *shape[dims[-1] + 1:])
    return (*b, *rest)


def _check_adv_dims(ctx, dims, ndim):
    if any(b <= a for a, b in itertools.pairwise(dims)):
        raise ctx.error(f"dims {list(dims)} must be strictly increasing")
    if dims and not (0 <= dims[0] and dims[-1] < ndim):
        raise ctx.error(f"dims {list(dims)} out of range for a tensor of dimension {ndim}")


def _index_shape(ctx):
    x = ctx.shape("input")
    dims = ctx.attrs["dims"]
    n = ctx.num_inputs("indices")
    if len(dims) != n:
        raise ctx.error(f"{n} index tensor(s) but {len(dims)} dims")
    _check_adv_dims(ctx, dims, len(x))
    for i in range(n):
        if ctx.dtype("indices", i) not in _INDEX_DTYPES:
            raise ctx.error(f"tensors used as indices must be int32 or int64, got {ctx.dtype('indices', i).name}")
    return advanced_result_shape(x, dims, [ctx.shape("indices", i) for i in range(n)], ctx.op_type)


register_user_op("index", inputs=["input", Arg("indices", variadic=True)], outputs=["output"],
                 attrs={"dims": ("list_int32", ())}, infer_shape=_index_shape, infer_dtype=same_dtype)
# dx = zeros with dy added at the indexed positions (repeated indices accumulate)
derivative("index", input=lambda doutput, indices, input_meta, dims:
           F.index_put_encoded(F.zeros_of(input_meta), (), (), dims, indices, doutput, True))


def basic_view_shape(shape, kinds, values, error) -> tuple:
    """The shape of ``x[basic]`` for the encoded basic index (Note [Advanced indexing ops])."""
    out = []
    d = k = 0
    for kind in kinds:
        if kind == 2:
            out.append(1)
            continue
        if d >= len(shape):
            raise error(f"too many indices for tensor of dimension {len(shape)}")
        size = shape[d]
        if kind == 0:
            i = values[k]
            k += 1
            if not -size <= i < size:
                raise error(f"index {i} is out of bounds for dimension {d} with size {size}")
        elif kind == 1:
            start, stop, step = values[k:k + 3]
            k += 3
            if step <= 0:
                raise error(f"step must be greater than zero, got {step}")
            out.append(len(range(*slice(start, stop, step).indices(size))))
        else:
            raise error(f"unknown index kind {kind}")
        d += 1
    if k != len(values):
        raise error(f"kinds {list(kinds)} need {k} values, got {len(values)}")
    out.extend(shape[d:])
    return tuple(out)


def _setitem_shape(ctx):
    x = ctx.shape("ref")
    attrs = ctx.attrs
    view = basic_view_shape(x, attrs["kinds"], attrs["values"], ctx.error)
    dims = attrs["adv_dims"]
    n = ctx.num_inputs("indices")
    if len(dims) != n:
        raise ctx.error(f"{n} index tensor(s) but {len(dims)} adv_dims")
    index_shapes, int_dims, has_mask = [], [], False
    end = 0
    for i, d in enumerate(dims):
        idt, shape = ctx.dtype("indices", i), tuple(ctx.shape("indices", i))
        if idt not in _SETITEM_INDEX_DTYPES:
            raise ctx.error(f"tensors used as indices must be long, int or bool tensors, got {idt.name}")
        if d < end:
            raise ctx.error(f"adv_dims {list(dims)} overlap or are not increasing")
        if idt is dt.bool_:
            if not shape:
                raise ctx.error("a 0-d bool index must be given as a 1-element mask over a new dim")
            if view[d:d + len(shape)] != shape:
                raise ctx.error(f"The shape of the mask {list(shape)} at index {d} does not match the shape of "
                                f"the indexed tensor {list(view[d:d + len(shape)])}")
            has_mask = True
            end = d + len(shape)
        else:
            if d >= len(view):
                raise ctx.error(f"too many indices for tensor of dimension {len(view)}")
            index_shapes.append(shape)
            int_dims.append(d)
            end = d + 1
    if ctx.has_input("value") and ctx.dtype("value") is not ctx.dtype("ref"):
        raise ctx.error(f"value must have the dtype of ref ({ctx.dtype('ref').name}), got {ctx.dtype('value').name}")
    if ctx.has_input("value") and not has_mask:  # with a mask, the indexed length is known at run time only
        result = advanced_result_shape(view, int_dims, index_shapes, ctx.op_type) if n else view
        check_value_shape(ctx.shape("value"), result, ctx.error)
    if attrs["accumulate"] and not ctx.has_input("value"):
        raise ctx.error("accumulate needs a value tensor")
    return x


def check_value_shape(value, result, error) -> None:
    """``value`` (leading 1s stripped) must broadcast to the indexing result ``result``."""
    v = tuple(value)
    while v and v[0] == 1:
        v = v[1:]
    if len(v) > len(result) or any(a != 1 and a != b for a, b in zip(reversed(v), reversed(result))):
        raise error(f"shape mismatch: value tensor of shape {list(value)} cannot be broadcast to indexing result "
                    f"of shape {list(result)}")


def _setitem_scalar_dtype(ctx):
    d = ctx.dtype("ref")
    check_scalar_fits(ctx, scalar_value(ctx.attrs), d)
    return d


_SETITEM_ATTRS = {"kinds": ("list_int32", ()), "values": ("list_int64", ()), "adv_dims": ("list_int32", ()),
                  "accumulate": ("bool", False)}
register_user_op("tensor_setitem", inputs=["ref", "value", Arg("indices", optional=True, variadic=True, min=0)],
                 outputs=["out"], attrs=_SETITEM_ATTRS, infer_shape=_setitem_shape, infer_dtype=same_dtype)
register_user_op("tensor_setitem_scalar", inputs=["ref", Arg("indices", optional=True, variadic=True, min=0)],
                 outputs=["out"], attrs={**_SETITEM_ATTRS, **SCALAR_ATTRS},
                 infer_shape=_setitem_shape, infer_dtype=_setitem_scalar_dtype)


def _setitem_ref_grad(dout, indices, kinds, values, adv_dims, accumulate):
    """dref = dy, zeroed where written (unless accumulating)."""
    return dout if accumulate else F.index_put_encoded(dout, kinds, values, adv_dims, indices, 0)


def _reduce_to_value(g, shape):
    """``g`` (the shape of an indexing result) summed to a value of ``shape`` broadcast into it (leading 1s of
    ``shape`` may exceed ``g``'s dims)."""
    stripped = tuple(shape)
    while stripped and stripped[0] == 1:
        stripped = stripped[1:]
    g = F.reduce_to(g, stripped)
    return g if stripped == tuple(shape) else F.ops.reshape(g, shape=tuple(shape))


def _setitem_value_grad(dout, indices, value_meta, kinds, values, adv_dims):
    """dvalue = dy[index] summed to value's shape."""
    return _reduce_to_value(F.index_encoded(dout, kinds, values, adv_dims, indices), value_meta.shape)


derivative("tensor_setitem", name="Setitem", ref=_setitem_ref_grad, value=_setitem_value_grad)
derivative("tensor_setitem_scalar", name="Setitem", ref=_setitem_ref_grad)
