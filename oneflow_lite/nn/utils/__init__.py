"""``flow.nn.utils``: gradient clipping."""

from oneflow_lite.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
