"""Conversion ops: ``cast`` (dtype), ``copy`` (device) and ``hierarchical_parallel_cast`` (layout). The gradient
goes back in the input's dtype, on the input's device."""

from __future__ import annotations

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import same_dtype, same_shape


def _cast_dtype(ctx):
    return ctx.attrs["dtype"]


register_user_op("cast", inputs=["in"], outputs=["out"], attrs={"dtype": ("data_type", dt.float32)},
                 infer_shape=same_shape, infer_dtype=_cast_dtype)
derivative("cast", in_=lambda dout, in_meta: F.cast(dout, in_meta.dtype))


def _copy_device(ctx):
    target = ctx.attrs["device"]
    source = ctx.input_metas[0].device
    if target.device_type.has_storage and not source.device_type.has_storage:
        raise NotImplementedError(f"copy: Cannot copy out of {source.type} tensor; no data! "
                                  f"(a '{source}' tensor has no values to copy to '{target}')")
    return target


register_user_op("copy", inputs=["in"], outputs=["out"], attrs={"device": ("device", "cpu")},
                 infer_shape=same_shape, infer_dtype=same_dtype, infer_device=_copy_device)
derivative("copy", in_=lambda dout, in_meta: F.copy(dout, in_meta.device))


# OneFlow's op for a boxing in a job: on global tensors its input is boxed to the attr's nd-SBP (written as
# sbp.short() gives, "S(0)", "B", "P") and passed on (Note [The parallel view of a job] in
# graph/global_plan.py); on local tensors it is a copy. Its gradient passes through (its consumers box it).
register_user_op("hierarchical_parallel_cast", inputs=["in"], outputs=["out"], attrs={"nd_sbp": ("list_string", ())},
                 infer_shape=same_shape, infer_dtype=same_dtype)
derivative("hierarchical_parallel_cast", in_=lambda dout: dout)
