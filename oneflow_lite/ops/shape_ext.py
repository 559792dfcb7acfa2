"""Strided views: ``as_strided`` (a view with explicit strides over the input's storage), its scatter form
``as_strided_scatter``, ``Tensor.unfold`` (``unfold_tensor``: sliding windows as a view), and their grad ops.

Note [Strided ops and virtual storage]
``as_strided`` reads the input's *storage* (Note [Storage of a tensor] in framework/storage.py), which a
meta or lazy tensor does not have, and which a gradient tensor does not share. So the ops carry the input's
geometry as attrs (``in_stride``, ``in_offset``: what ``stride()`` and ``storage_offset()`` said when the
functor ran), and everything but the eager forward view works on a *virtual* storage: a zero array as large
as both geometries need, the input placed in it by its geometry. ``strided_remap`` is the one linear map
the gradients need: place ``x`` by the ``src`` geometry (adding where elements share a position), read it
back by the ``dst`` geometry. Its transpose is the same op with the geometries swapped, so every gradient
here is differentiable again. Where the input overlaps itself in memory (an expanded tensor), each storage
position's gradient is shared evenly by the elements on it, as PyTorch does (the ``divide`` attrs).
"""

from __future__ import annotations

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import same_dtype


def check_geometry(error, size, stride, offset) -> None:
    """PyTorch's checks of an ``as_strided`` geometry (raises ``error(message)``)."""
    if len(size) != len(stride):
        raise error("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise error(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
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


_UNFOLD_ATTRS = {"dimension": ("int32", 0), "size": ("int32", 1), "step": ("int32", 1)}
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
