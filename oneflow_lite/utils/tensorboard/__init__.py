"""``torch.utils.tensorboard`` (``flow.utils.tensorboard``): a ``SummaryWriter`` for scalars and text that writes
TensorBoard event files itself (Note [Event files] in event_file.py; the ``tensorboard`` package is not needed)."""

from oneflow_lite.utils.tensorboard.writer import SummaryWriter  # noqa: F401

__all__ = ["SummaryWriter"]
