"""Shape ops: ``reshape``, ``transpose`` (any permutation) and ``slice`` (the strided view behind
``Tensor.__getitem__``); ``flatten``, ``squeeze``, ``expand_dims``, ``expand``, ``repeat``; ``cat``,
``stack``, ``split``, ``unbind``; ``flip``, ``roll``, ``tril``, ``triu``, ``pad`` and ``pad_grad``.

Dims in attrs may be negative where PyTorch allows it; the infer functions wrap them and raise
PyTorch's errors (IndexError for a dim out of range). The functors normalise dims already, so
these checks matter for other callers (graphs, tests, plug-ins).

Each op's gradient rows follow it. The reshape-like ops reshape the grad back; the joining and
splitting ops are each other's gradients: cat <-> split, stack <-> unbind (the engine gives a
multi-output node zeros for the outputs that got no gradient).
"""

from __future__ import annotations

from functools import partial
from math import prod


from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.ops.common import same_dtype


def _reshape_shape(ctx):
    """The target shape with its one ``-1`` inferred (PyTorch's ``infer_size`` and its errors)."""
    shape = ctx.attrs["shape"]
    numel = ctx.input_metas[0].numel
    inferred = -1
    known = 1
    for i, d in enumerate(shape):
        if d == -1:
            if inferred >= 0:
                raise ctx.error("only one dimension can be inferred")
            inferred = i
        elif d < 0:
            raise ctx.error(f"invalid shape dimension {d}")
        else:
            known *= d
    if inferred >= 0:
        if known == 0 and numel == 0:
            raise ctx.error(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                            f"unspecified dimension size -1 can be any value and is ambiguous")
        if known != 0 and numel % known == 0:
            return (*shape[:inferred], numel // known, *shape[inferred + 1:])
    elif known == numel:
        return shape
    raise ctx.error(f"shape '{list(shape)}' is invalid for input of size {numel}")


register_user_op("reshape", inputs=["in"], outputs=["out"], attrs={"shape": ("shape", ())},
                 infer_shape=_reshape_shape, infer_dtype=same_dtype)


def _reshape_back(dout, in_meta):
    """The grad of a reshape-like op: the output's grad reshaped to the input's shape."""
    return F.reshape(dout, in_meta.shape)


derivative("reshape", name="Reshape", in_=_reshape_back)


def _transpose_shape(ctx):
    shape = ctx.input_metas[0].shape
    perm = ctx.attrs["perm"]
    if sorted(perm) != list(range(len(shape))):
        raise ctx.error(f"perm {list(perm)} is not a permutation of the {len(shape)} dims of the input")
    return tuple(shape[p] for p in perm)


register_user_op("transpose", inputs=["input"], outputs=["output"], attrs={"perm": ("list_int32", ())},
                 infer_shape=_transpose_shape, infer_dtype=same_dtype)


def _transpose_grad(doutput, perm):
    """The grad transposed back by the inverse permutation."""
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return F.ops.transpose(doutput, perm=tuple(inverse))


derivative("transpose", name="Transpose", input=_transpose_grad)


def _slice_shape(ctx):
    """Per dim, ``len(range(start, stop, step))`` after Python's clamping of start / stop (step > 0)."""
    shape = ctx.input_metas[0].shape
    start, stop, step = ctx.attrs["start"], ctx.attrs["stop"], ctx.attrs["step"]
    if not len(start) == len(stop) == len(step) == len(shape):
        raise ctx.error(f"start, stop and step need one entry per dim of the input ({len(shape)}), "
                        f"got {len(start)}, {len(stop)} and {len(step)}")
    out = []
    for dim, (size, a, b, c) in enumerate(zip(shape, start, stop, step)):
        if c <= 0:
            raise ctx.error(f"step must be greater than zero, got {c} at dim {dim}")
        out.append(len(range(*slice(a, b, c).indices(size))))
    return tuple(out)


register_user_op("slice", inputs=["x"], outputs=["y"],
                 attrs={"start": ("list_int64", ()), "stop": ("list_int64", ()),
                        "step": ("list_int64", ())},
                 infer_shape=_slice_shape, infer_dtype=same_dtype)
derivative("slice", name="Slice", x=lambda dy, x_meta, start, stop, step:
           F.ops.slice_grad(dy, like_shape=x_meta.shape, start=start, stop=stop, step=step))


def _wrap(ctx, dim, ndim, what="dim"):
    """``dim`` in [-ndim, ndim) made non-negative (a 0-d tensor takes -1 and 0, as in PyTorch)."""
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(f"{ctx.op_type}: {what} out of range (expected to be in range of [{lo}, {hi}], "
                         f"but got {dim})")
    return dim % ndim if ndim else 0


def _wrap_unique(ctx, dims, ndim):
    """``dims`` wrapped, each at most once."""
    out = []
    for d in dims:
        d = _wrap(ctx, d, ndim)
        if d in out:
            raise ctx.error(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


# ---- reshapes: flatten, squeeze, expand_dims ---------------------------------------------------
def _flatten_shape(ctx):
    shape = ctx.input_metas[0].shape
    ndim = len(shape)
    start = _wrap(ctx, ctx.attrs["start_dim"], ndim, "start_dim")
    end = _wrap(ctx, ctx.attrs["end_dim"], ndim, "end_dim")
    if start > end:
        raise ctx.error("flatten() has invalid args: start_dim cannot come after end_dim")
    if ndim == 0:
        return (1,)
    return (*shape[:start], prod(shape[start:end + 1]), *shape[end + 1:])


register_user_op("flatten", inputs=["in"], outputs=["out"],
                 attrs={"start_dim": ("int32", 0), "end_dim": ("int32", -1)},
                 infer_shape=_flatten_shape, infer_dtype=same_dtype)
derivative("flatten", name="Flatten", in_=_reshape_back)


def _squeeze_shape(ctx):
    """Drops the dims of ``axes`` that have size 1 (others stay, as in PyTorch)."""
    shape = ctx.input_metas[0].shape
    axes = _wrap_unique(ctx, ctx.attrs["axes"], len(shape))
    return tuple(d for i, d in enumerate(shape) if not (d == 1 and i in axes))


register_user_op("squeeze", inputs=["in"], outputs=["out"], attrs={"axes": ("list_int32", ())},
                 infer_shape=_squeeze_shape, infer_dtype=same_dtype)
derivative("squeeze", name="Squeeze", in_=_reshape_back)


def _expand_dims_shape(ctx):
    shape = ctx.input_metas[0].shape
    axis = _wrap(ctx, ctx.attrs["axis"], len(shape) + 1)
    return (*shape[:axis], 1, *shape[axis:])


register_user_op("expand_dims", inputs=["in"], outputs=["out"], attrs={"axis": ("int32", 0)},
                 infer_shape=_expand_dims_shape, infer_dtype=same_dtype)
derivative("expand_dims", name="Unsqueeze", in_=_reshape_back)


# ---- expand, repeat ----------------------------------------------------------------------------
def _expand_shape(ctx):
    """PyTorch's ``expand``: -1 keeps a dim; a size-1 dim stretches; new dims are added in front."""
    shape = ctx.input_metas[0].shape
    target = ctx.attrs["expand_shape"]
    lead = len(target) - len(shape)
    if lead < 0:
        raise ctx.error(f"the number of sizes provided ({len(target)}) must be greater or equal to the number "
                        f"of dimensions in the tensor ({len(shape)})")
    out = []
    for i, t in enumerate(target):
        if i < lead:
            if t < 0:
                raise ctx.error(f"The expanded size of the tensor ({t}) isn't allowed in a leading, non-existing "
                                f"dimension {i}")
            out.append(t)
            continue
        s = shape[i - lead]
        if t == -1:
            out.append(s)
        elif t < 0:
            raise ctx.error(f"The expanded size of the tensor ({t}) isn't allowed: sizes must be non-negative, "
                            f"or -1 to keep the existing size")
        elif s != 1 and t != s:
            raise ctx.error(f"The expanded size of the tensor ({t}) must match the existing size ({s}) at "
                            f"non-singleton dimension {i}.  Target sizes: {list(target)}.  "
                            f"Tensor sizes: {list(shape)}")
        else:
            out.append(t)
    return tuple(out)


register_user_op("expand", inputs=["in"], outputs=["out"], attrs={"expand_shape": ("shape", ())},
                 infer_shape=_expand_shape, infer_dtype=same_dtype)
# Summed over the dims expand added or stretched.
derivative("expand", name="Expand", in_=lambda dout, in_meta: F.reduce_to(dout, in_meta.shape))


def _repeat_shape(ctx):
    shape = ctx.input_metas[0].shape
    repeats = ctx.attrs["repeats"]
    if len(repeats) < len(shape):
        raise ctx.error("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                        f"tensor (got {len(repeats)} repeat dims for a {len(shape)}-d tensor)")
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    out = tuple(s * r for s, r in zip(padded, repeats))
    negative = next((r for r in repeats if r < 0), None)
    if negative is not None:
        raise ctx.error(f"Trying to create tensor with negative dimension {negative}: {list(repeats)}")
    return out


register_user_op("repeat", inputs=["in"], outputs=["out"], attrs={"repeats": ("shape", ())},
                 infer_shape=_repeat_shape, infer_dtype=same_dtype)


def _repeat_grad(dout, in_meta, repeats):
    """dout of shape (r0 * s0, r1 * s1, ...) viewed as (r0, s0, r1, s1, ...) and summed over the r dims."""
    shape = in_meta.shape
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    split_shape = tuple(d for pair in zip(repeats, padded) for d in pair)
    g = F.ops.reduce_sum(F.reshape(dout, split_shape), axis=tuple(range(0, 2 * len(repeats), 2)), keepdims=False)
    return F.reshape(g, shape)


derivative("repeat", name="Repeat", in_=_repeat_grad)


# ---- cat, stack, split, unbind -----------------------------------------------------------------
def _same_dtypes(ctx):
    """Every input has the dtype of the first (the functors cast to the common dtype first)."""
    metas = ctx.input_metas
    d = metas[0].dtype
    for i, m in enumerate(metas):
        if m.dtype is not d:
            raise ctx.error(f"expected all inputs to have the same dtype, got {d.name} (input 0) and {m.dtype.name} "
                            f"(input {i}); the functors cast to a common dtype first")
    return d


def _cat_shape(ctx):
    metas = ctx.input_metas
    first = metas[0].shape
    ndim = len(first)
    if ndim == 0:
        raise ctx.error("zero-dimensional tensor (at position 0) cannot be concatenated")
    axis = _wrap(ctx, ctx.attrs["axis"], ndim)
    total = 0
    for i, m in enumerate(metas):
        s = m.shape
        if len(s) != ndim:
            if not s:
                raise ctx.error(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
            raise ctx.error(f"Tensors must have same number of dimensions: got {ndim} and {len(s)}")
        for d in range(ndim):
            if d != axis and s[d] != first[d]:
                raise ctx.error(f"Sizes of tensors must match except in dimension {axis}. Expected size {first[d]} "
                                f"but got size {s[d]} for tensor number {i} in the list.")
        total += s[axis]
    return (*first[:axis], total, *first[axis + 1:])


register_user_op("cat", inputs=[Arg("in", variadic=True)], outputs=["out"], attrs={"axis": ("int64", 0)},
                 infer_shape=_cat_shape, infer_dtype=_same_dtypes)


def _cat_grad(dout, in_meta, axis, needs):
    """The grad split back into the inputs' sizes along ``axis``."""
    pieces = F.split_raw(dout, [m.shape[axis] for m in in_meta], axis)
    return [g if need else None for g, need in zip(pieces, needs)]


derivative("cat", name="Cat", in_=_cat_grad)


def _stack_shape(ctx):
    metas = ctx.input_metas
    first = metas[0].shape
    for i, m in enumerate(metas):
        if m.shape != first:
            raise ctx.error(f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 and "
                            f"{list(m.shape)} at entry {i}")
    axis = _wrap(ctx, ctx.attrs["axis"], len(first) + 1)
    return (*first[:axis], len(metas), *first[axis:])


register_user_op("stack", inputs=[Arg("in", variadic=True)], outputs=["out"], attrs={"axis": ("int64", 0)},
                 infer_shape=_stack_shape, infer_dtype=_same_dtypes)
derivative("stack", name="Stack",
           in_=lambda dout, axis, needs: [g if need else None for g, need in zip(F.unbind_raw(dout, axis), needs)])


def _split_shapes(ctx):
    """One output per entry of ``sizes`` (the op expr has as many), which must sum to the dim's size."""
    shape = ctx.input_metas[0].shape
    if not shape:
        raise ctx.error("split expects at least a 1-dimensional tensor")
    axis = _wrap(ctx, ctx.attrs["axis"], len(shape))
    sizes = ctx.attrs["sizes"]
    if any(s < 0 for s in sizes):
        raise ctx.error(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                        f"split_sizes={list(sizes)}")
    if sum(sizes) != shape[axis]:
        raise ctx.error(f"split_with_sizes expects split_sizes to sum exactly to {shape[axis]} (input tensor's "
                        f"size at dimension {axis}), but got split_sizes={list(sizes)}")
    shapes = [(*shape[:axis], s, *shape[axis + 1:]) for s in sizes]
    return shapes if len(shapes) != 1 else shapes[0]


def _one_or_list(value, n):
    """What an infer function returns for ``n`` outputs of ``value``: the value itself for one output."""
    return value if n == 1 else [value] * n


def _split_dtypes(ctx):
    return _one_or_list(ctx.input_metas[0].dtype, len(ctx.attrs["sizes"]))


register_user_op("split", inputs=["x"], outputs=[Arg("out", variadic=True)],
                 attrs={"axis": ("int64", 0), "sizes": ("list_int64", ())},
                 infer_shape=_split_shapes, infer_dtype=_split_dtypes)
derivative("split", name="Split", x=lambda dout, axis: F.cat_raw(list(dout), axis))


def _unbind_shapes(ctx):
    """One output per index of dim ``axis`` (the op expr has as many)."""
    shape = ctx.input_metas[0].shape
    if not shape:
        raise IndexError("unbind: Dimension specified as 0 but tensor has no dimensions")
    axis = _wrap(ctx, ctx.attrs["axis"], len(shape))
    return _one_or_list((*shape[:axis], *shape[axis + 1:]), shape[axis])


def _unbind_dtypes(ctx):
    m = ctx.input_metas[0]  # infer_shape has checked the axis
    return _one_or_list(m.dtype, m.shape[_wrap(ctx, ctx.attrs["axis"], m.ndim)])


register_user_op("unbind", inputs=["x"], outputs=[Arg("out", variadic=True)], attrs={"axis": ("int64", 0)},
                 infer_shape=_unbind_shapes, infer_dtype=_unbind_dtypes)
derivative("unbind", name="Unbind", x=lambda dout, axis: F.stack_raw(list(dout), axis))


# ---- flip, roll, tril, triu ----------------------------------------------------------------------
def _flip_shape(ctx):
    shape = ctx.input_metas[0].shape
    _wrap_unique(ctx, ctx.attrs["dims"], len(shape))
    return shape


register_user_op("flip", inputs=["x"], outputs=["y"], attrs={"dims": ("list_int32", ())},
                 infer_shape=_flip_shape, infer_dtype=same_dtype)


def _self_adjoint(op_type, grads, attrs):
    """The grad of a linear op that is its own adjoint (flip; tril and triu, which mask like the forward):
    the op again, with the same attrs, on the output's grad."""
    return getattr(F.ops, op_type)(grads[0], attrs=attrs)


derivative("flip", name="Flip", x=partial(_self_adjoint, "flip"))


def _roll_shape(ctx):
    """``dims`` empty: roll the flattened tensor by the one shift; else one shift per dim."""
    shape = ctx.input_metas[0].shape
    shifts, dims = ctx.attrs["shifts"], ctx.attrs["dims"]
    if not shifts or (len(shifts) != len(dims) and not (not dims and len(shifts) == 1)):
        raise ctx.error(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    for d in dims:
        _wrap(ctx, d, len(shape))
    return shape


register_user_op("roll", inputs=["in"], outputs=["out"],
                 attrs={"shifts": ("list_int64", ()), "dims": ("list_int32", ())},
                 infer_shape=_roll_shape, infer_dtype=same_dtype)
# Rolled back by the opposite shifts.
derivative("roll", name="Roll",
           in_=lambda dout, shifts, dims: F.ops.roll(dout, shifts=tuple(-s for s in shifts), dims=dims))


def _triangle_shape(ctx):
    shape = ctx.input_metas[0].shape
    if len(shape) < 2:
        raise ctx.error(f"input tensor must have at least 2 dimensions, got {len(shape)}")
    return shape


for _op, _name in (("tril", "Tril"), ("triu", "Triu")):
    register_user_op(_op, inputs=["in"], outputs=["out"], attrs={"diagonal": ("int64", 0)},
                     infer_shape=_triangle_shape, infer_dtype=same_dtype)
    derivative(_op, name=_name, in_=partial(_self_adjoint, _op))


# ---- pad -----------------------------------------------------------------------------------------
# Note [Pad modes]
# ``pad`` pads each dim by ``padding_before[d]`` / ``padding_after[d]`` (the functor turns PyTorch's
# last-dim-first pad tuple into these). "constant" fills with ``value`` and also takes negative
# padding (cropping); "reflect" mirrors without repeating the edge (padding < size), "replicate"
# repeats the edge (size > 0), "circular" wraps around (padding <= size). ``pad_grad`` is the
# adjoint: it sums the gradient of every output element into the input element it was copied from,
# and the grad of ``pad_grad`` is ``pad`` again.
PAD_MODES = ("constant", "reflect", "replicate", "circular")
_PAD_ATTRS = {"mode": ("string", "constant"), "padding_before": ("list_int64", ()),
              "padding_after": ("list_int64", ()), "value": ("double", 0.0)}


def _check_crop(ctx, d, s, b, a):
    """Constant padding crops by each negative pad first, then pads (PyTorch's narrow, then fill): the crops
    may not remove more than the ``s`` elements of dimension ``d``, whatever the other side adds back."""
    if s + b + a < 0:
        raise ctx.error(f"The input size {s}, plus negative padding {b} and {a} resulted in a negative output size, "
                        f"which is invalid. Check dimension {d} of your input.")
    if s + min(b, 0) + min(a, 0) < 0:
        raise ctx.error(f"The input size {s}, cropped by the negative padding {b} and {a}, would be negative "
                        f"(narrow(): length must be non-negative) before the other side pads it. Check dimension "
                        f"{d} of your input.")


def _check_padding(ctx, shape):
    attrs = ctx.attrs
    mode, before, after = attrs["mode"], attrs["padding_before"], attrs["padding_after"]
    if mode not in PAD_MODES:
        raise ctx.error(f"Unrecognised padding mode {mode}; expected one of {', '.join(PAD_MODES)}")
    if len(before) != len(shape) or len(after) != len(shape):
        raise ctx.error(f"padding_before and padding_after need one entry per dim ({len(shape)}), got "
                        f"{len(before)} and {len(after)}")
    for d, (s, b, a) in enumerate(zip(shape, before, after)):
        if mode == "constant":
            _check_crop(ctx, d, s, b, a)
            continue
        if not b and not a:
            continue
        if b < 0 or a < 0:
            raise ctx.error(f"negative padding ({b}, {a}) at dimension {d} is only supported in constant mode, "
                            f"not {mode}")
        if mode == "reflect" and (b >= s or a >= s):
            raise ctx.error(f"Padding size should be less than the corresponding input dimension, but got: padding "
                            f"({b}, {a}) at dimension {d} of input {list(shape)}")
        if mode == "replicate" and s == 0:
            raise ctx.error(f"replicate padding needs a non-empty dimension, but dimension {d} of input "
                            f"{list(shape)} has size 0")
        if mode == "circular" and (b > s or a > s):
            raise ctx.error(f"Padding value causes wrapping around more than once: padding ({b}, {a}) at "
                            f"dimension {d} of input {list(shape)}")
    return before, after


def _check_fill_value(ctx, dtype):
    """The constant must fit the dtype without overflow (PyTorch's ``fill_`` check); bool takes any value."""
    value = ctx.attrs["value"]
    if not dt.holds(dtype, value):
        raise ctx.error(f"value {value} cannot be converted to type {dtype.name} without overflow")


def _pad_shape(ctx):
    m = ctx.input_metas[0]
    before, after = _check_padding(ctx, m.shape)
    if ctx.attrs["mode"] == "constant":
        _check_fill_value(ctx, m.dtype)
    return tuple(s + b + a for s, b, a in zip(m.shape, before, after))


def _pad_grad_shape(ctx):
    """The input shape of the ``pad`` whose output has ``dy``'s shape."""
    dy = ctx.input_metas[0].shape
    before, after = ctx.attrs["padding_before"], ctx.attrs["padding_after"]
    if len(before) != len(dy) or len(after) != len(dy):
        raise ctx.error(f"padding_before and padding_after need one entry per dim ({len(dy)}), got "
                        f"{len(before)} and {len(after)}")
    shape = tuple(s - b - a for s, b, a in zip(dy, before, after))
    if any(s < 0 for s in shape):
        raise ctx.error(f"dy of shape {list(dy)} is smaller than its padding {list(before)}, {list(after)}")
    _check_padding(ctx, shape)
    return shape


register_user_op("pad", inputs=["x"], outputs=["y"], attrs=_PAD_ATTRS, infer_shape=_pad_shape,
                 infer_dtype=same_dtype)
register_user_op("pad_grad", inputs=["dy"], outputs=["dx"], attrs=_PAD_ATTRS, infer_shape=_pad_grad_shape,
                 infer_dtype=same_dtype)


def _pad_adjoint(adjoint, grads, mode, padding_before, padding_after):
    """pad and pad_grad are each other's adjoints (Note [Pad modes]); ``value`` stays 0: the adjoint is linear."""
    return getattr(F.ops, adjoint)(grads[0], mode=mode, padding_before=padding_before, padding_after=padding_after)


derivative("pad", name="Pad", x=partial(_pad_adjoint, "pad_grad"))
derivative("pad_grad", name="PadGrad", dy=partial(_pad_adjoint, "pad"))


# ``slice_grad(dy)``: the gradient of ``slice``: a tensor of shape ``like_shape``, zero except where the
# slice ``start:stop:step`` (per dim) took its elements from, which hold ``dy``. Its attrs are set per call.
def _slice_grad_shape(ctx):
    like = ctx.attrs["like_shape"]
    start, stop, step = ctx.attrs["start"], ctx.attrs["stop"], ctx.attrs["step"]
    if not len(start) == len(stop) == len(step) == len(like):
        raise ctx.error(f"start, stop and step need one entry per dim of like_shape ({len(like)}), got "
                        f"{len(start)}, {len(stop)} and {len(step)}")
    expected = []
    for dim, (size, a, b, c) in enumerate(zip(like, start, stop, step)):
        if c <= 0:
            raise ctx.error(f"step must be greater than zero, got {c} at dim {dim}")
        expected.append(len(range(*slice(a, b, c).indices(size))))
    dy = tuple(ctx.shape("dy"))
    if dy != tuple(expected):
        raise ctx.error(f"dy has shape {list(dy)} but slicing like_shape {list(like)} gives {expected}")
    return like


register_user_op("slice_grad", inputs=["dy"], outputs=["dx"],
                 attrs={"like_shape": ("shape", ()), "start": ("list_int64", ()), "stop": ("list_int64", ()),
                        "step": ("list_int64", ())},
                 infer_shape=_slice_grad_shape, infer_dtype=same_dtype)
# slice_grad is linear in dy: its grad slices again.
derivative("slice_grad", name="SliceGrad", dy=lambda ddx, start, stop, step:
           F.ops.slice(ddx, start=start, stop=stop, step=step))


# ---- strided views (as_strided, as_strided_scatter, Tensor.unfold) ------------------------------
# Strided views: ``as_strided`` (a view with explicit strides over the input's storage), its scatter form
# ``as_strided_scatter``, ``Tensor.unfold`` (``unfold_tensor``: sliding windows as a view), and their grad ops.
#
# Note [Strided ops and virtual storage]
# ``as_strided`` reads the input's *storage* (Note [Storage of a tensor] in framework/storage.py), which a
# meta or lazy tensor does not have, and which a gradient tensor does not share. So the ops carry the input's
# geometry as attrs (``in_stride``, ``in_offset``: what ``stride()`` and ``storage_offset()`` said when the
# functor ran), and everything but the eager forward view works on a *virtual* storage: a zero array as large
# as both geometries need, the input placed in it by its geometry. ``strided_remap`` is the one linear map
# the gradients need: place ``x`` by the ``src`` geometry (adding where elements share a position), read it
# back by the ``dst`` geometry. Its transpose is the same op with the geometries swapped, so every gradient
# here is differentiable again. Where the input overlaps itself in memory (an expanded tensor), each storage
# position's gradient is shared evenly by the elements on it, as PyTorch does (the ``divide`` attrs).


def check_geometry(error, size, stride, offset) -> None:
    """PyTorch's checks of an ``as_strided`` geometry (raises ``error(message)``)."""
    if len(size) != len(stride):
        raise error("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise error(f"Negative strides are not supported at the moment, got strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise error(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    if offset < 0:
        raise error(f"Tensor: invalid storage offset {offset}")


def _as_strided_shape(ctx):
    a = ctx.attrs
    check_geometry(ctx.error, a["size"], a["stride"], a["storage_offset"])
    if len(a["in_stride"]) != len(ctx.shape("input")):
        raise ctx.error(f"in_stride {list(a['in_stride'])} does not match the input's shape "
                        f"{list(ctx.shape('input'))}")
    return tuple(a["size"])


_GEOMETRY = {"size": ("list_int64", ()), "stride": ("list_int64", ()), "storage_offset": ("int64", 0),
             "in_stride": ("list_int64", ()), "in_offset": ("int64", 0)}
register_user_op("as_strided", inputs=["input"], outputs=["output"], attrs=_GEOMETRY,
                 infer_shape=_as_strided_shape, infer_dtype=same_dtype)


def _as_strided_input_grad(doutput, input_meta, size, stride, storage_offset, in_stride, in_offset):
    """dx: dy placed by the output's geometry, read by the input's (shared evenly where the input overlaps)."""
    return F.ops.strided_remap(doutput, like_shape=tuple(input_meta.shape), src_stride=stride,
                               src_offset=storage_offset, dst_stride=in_stride, dst_offset=in_offset,
                               divide_dst=True)


derivative("as_strided", input=_as_strided_input_grad)


def _remap_shape(ctx):
    a = ctx.attrs
    x = ctx.shape("x")
    like = tuple(a["like_shape"])
    check_geometry(ctx.error, x, a["src_stride"], a["src_offset"])
    check_geometry(ctx.error, like, a["dst_stride"], a["dst_offset"])
    return like


register_user_op("strided_remap", inputs=["x"], outputs=["y"],
                 attrs={"like_shape": ("shape", ()), "src_stride": ("list_int64", ()), "src_offset": ("int64", 0),
                        "dst_stride": ("list_int64", ()), "dst_offset": ("int64", 0),
                        "divide_src": ("bool", False), "divide_dst": ("bool", False)},
                 infer_shape=_remap_shape, infer_dtype=same_dtype)


def _remap_x_grad(dy, x_meta, src_stride, src_offset, dst_stride, dst_offset, divide_src, divide_dst):
    """The transpose: the same op with the two geometries (and the divisions) swapped."""
    return F.ops.strided_remap(dy, like_shape=tuple(x_meta.shape), src_stride=dst_stride, src_offset=dst_offset,
                               dst_stride=src_stride, dst_offset=src_offset, divide_src=divide_dst,
                               divide_dst=divide_src)


derivative("strided_remap", x=_remap_x_grad)


# ---- as_strided_scatter ----------------------------------------------------------------------------------
def _as_strided_scatter_shape(ctx):
    a = ctx.attrs
    check_geometry(ctx.error, a["size"], a["stride"], a["storage_offset"])
    src = tuple(ctx.shape("src"))
    if src != tuple(a["size"]):
        raise ctx.error(f"expected src to have a size equal to the slice of self. src size = {list(src)}, slice "
                        f"size = {list(a['size'])}")
    if ctx.dtype("src") is not ctx.dtype("input"):
        raise ctx.error(f"expected src to have the dtype of self ({ctx.dtype('input').name}), got "
                        f"{ctx.dtype('src').name}")
    return ctx.shape("input")


register_user_op("as_strided_scatter", inputs=["input", "src"], outputs=["output"], attrs=_GEOMETRY,
                 infer_shape=_as_strided_scatter_shape, infer_dtype=same_dtype)


def _scatter_input_grad(doutput, src_meta, attrs):
    """dinput: dy, zeroed where src was written."""
    return F.ops.as_strided_scatter(doutput, F.zeros_of(src_meta), attrs=attrs)


def _scatter_src_grad(doutput, size, stride, storage_offset, in_stride, in_offset):
    """dsrc: dy placed by the input's geometry, read where src was written."""
    return F.ops.strided_remap(doutput, like_shape=tuple(size), src_stride=in_stride, src_offset=in_offset,
                               dst_stride=stride, dst_offset=storage_offset)


derivative("as_strided_scatter", input=_scatter_input_grad, src=_scatter_src_grad)


# ---- Tensor.unfold ----------------------------------------------------------------------------------------
def _windows(ctx, shape):
    """(dim, size, step, number of windows) of ``unfold_tensor`` over an input of ``shape``."""
    a = ctx.attrs
    dim, size, step = a["dimension"], a["size"], a["step"]
    length = shape[dim] if shape else 1
    if not 0 <= dim < max(len(shape), 1):
        raise ctx.error(f"dimension {dim} is out of range for a tensor of dimension {len(shape)}")
    if size > length:
        raise ctx.error(f"maximum size for tensor at dimension {dim} is {length} but size is {size}")
    if step <= 0:
        raise ctx.error(f"step is {step} but must be > 0")
    if size < 0:
        raise ctx.error(f"size is {size} but must be >= 0")
    return dim, size, step, (length - size) // step + 1


def _unfold_shape(ctx):
    shape = tuple(ctx.shape("x"))
    dim, size, _, n = _windows(ctx, shape)
    if not shape:
        return (size,)
    return (*shape[:dim], n, *shape[dim + 1:], size)


# step is int64: a step past the dim (one window) keeps its stride, as PyTorch's view
_UNFOLD_ATTRS = {"dimension": ("int32", 0), "size": ("int32", 1), "step": ("int64", 1)}
register_user_op("unfold_tensor", inputs=["x"], outputs=["y"], attrs=_UNFOLD_ATTRS,
                 infer_shape=_unfold_shape, infer_dtype=same_dtype)


def _unfold_grad_shape(ctx):
    like = tuple(ctx.attrs["like_shape"])
    dim, size, _, n = _windows(ctx, like)
    expected = (size,) if not like else (*like[:dim], n, *like[dim + 1:], size)
    if tuple(ctx.shape("dy")) != expected:
        raise ctx.error(f"dy must have shape {list(expected)}, got {list(ctx.shape('dy'))}")
    return like


register_user_op("unfold_tensor_grad", inputs=["dy"], outputs=["dx"],
                 attrs={**_UNFOLD_ATTRS, "like_shape": ("shape", ())},
                 infer_shape=_unfold_grad_shape, infer_dtype=same_dtype)
# dx: each window's gradient added back where the window was; the grad op's own gradient unfolds again
derivative("unfold_tensor", name="Unfold", x=lambda dy, x_meta, dimension, size, step: F.ops.unfold_tensor_grad(
    dy, dimension=dimension, size=size, step=step, like_shape=tuple(x_meta.shape)))
derivative("unfold_tensor_grad", dy=lambda ddx, dimension, size, step: F.ops.unfold_tensor(
    ddx, dimension=dimension, size=size, step=step))


# ---- Tensor.view(dtype) -------------------------------------------------------------------------------------
# ``view_dtype`` reinterprets the input's bytes as ``dtype`` (a view, not differentiable, as in PyTorch). With
# another element size the last dim scales by the size ratio; the functor checks the strides and the storage
# offset (which only an eager tensor has), the infer function what the shape decides.
def view_dtype_shape(shape, src, dst, error):
    """The shape of ``Tensor.view(dst)`` on a ``src`` tensor of ``shape``; PyTorch's errors via ``error``."""
    shape = tuple(shape)
    if src.itemsize == dst.itemsize:
        return shape
    what = f"to view {dtype_torch_name(src)} as {dtype_torch_name(dst)} (different element sizes)"
    if not shape:
        raise error(f"self.dim() cannot be 0 {what}")
    if src.itemsize > dst.itemsize:
        return (*shape[:-1], shape[-1] * (src.itemsize // dst.itemsize))
    ratio = dst.itemsize // src.itemsize
    if shape[-1] % ratio:
        raise error(f"self.size(-1) must be divisible by {ratio} {what}, but got {shape[-1]}")
    return (*shape[:-1], shape[-1] // ratio)


def dtype_torch_name(d) -> str:
    """PyTorch's scalar-type name of ``d`` (``Float``, ``BFloat16``), as its messages spell it."""
    names = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
             "float16": "Half", "float32": "Float", "float64": "Double", "bfloat16": "BFloat16",
             "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
    return names.get(d.name, d.name[0].upper() + d.name[1:])


register_user_op("view_dtype", inputs=["x"], outputs=["y"], attrs={"dtype": ("data_type", dt.float32)},
                 infer_shape=lambda ctx: view_dtype_shape(ctx.shape("x"), ctx.dtype("x"), ctx.attrs["dtype"],
                                                          ctx.error),
                 infer_dtype=lambda ctx: ctx.attrs["dtype"], no_grad=True)
