"""Shape ops: ``reshape``, ``transpose`` and ``slice`` (the strided view behind ``Tensor.__getitem__``)."""

from __future__ import annotations

from oneflow_lite.framework.op_registry import register_user_op
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


def _transpose_shape(ctx):
    shape = ctx.input_metas[0].shape
    perm = ctx.attrs["perm"]
    if sorted(perm) != list(range(len(shape))):
        raise ctx.error(f"perm {list(perm)} is not a permutation of the {len(shape)} dims of the input")
    return tuple(shape[p] for p in perm)


register_user_op("transpose", inputs=["input"], outputs=["output"], attrs={"perm": ("list_int32", ())},
                 infer_shape=_transpose_shape, infer_dtype=same_dtype)


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
