"""Ops that exist for backward formulas (OneFlow's ``*_grad`` user ops).

``relu_grad(dy, y)``: ``dy`` where ``y > 0``, else 0 (one op instead of a
comparison, a cast and a multiply).

``slice_grad(dy)``: the gradient of ``slice``: a tensor of shape ``like_shape``,
zero except where the slice ``start:stop:step`` (per dim) took its elements
from, which hold ``dy``. Its attrs are set per call (the defaults are empty).
"""

from __future__ import annotations

from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import same_dtype, same_shape


def _relu_grad_shape(ctx):
    dy, y = ctx.shape("dy"), ctx.shape("y")
    if tuple(dy) != tuple(y):
        raise ctx.error(f"dy and y must have the same shape, got {list(dy)} and {list(y)}")
    if ctx.dtype("dy") is not ctx.dtype("y"):
        raise ctx.error(f"dy and y must have the same dtype, got {ctx.dtype('dy').name} and {ctx.dtype('y').name}")
    return same_shape(ctx)


register_user_op("relu_grad", inputs=["dy", "y"], outputs=["dx"], infer_shape=_relu_grad_shape,
                 infer_dtype=same_dtype)


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
