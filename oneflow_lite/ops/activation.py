"""Activation ops."""

from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import same_dtype, same_shape

register_user_op("relu", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)
