"""``flow.optim``: optimizers (SGD, Adam, AdamW, RMSprop) and ``flow.optim.lr_scheduler``, with
PyTorch's API. Their steps are functional in-place ops, so nn.Graph captures them (Note [Optimizer
steps in a graph] in optimizer.py)."""

from oneflow_lite.optim import lr_scheduler
from oneflow_lite.optim.adam import Adam
from oneflow_lite.optim.adamw import AdamW
from oneflow_lite.optim.optimizer import Optimizer
from oneflow_lite.optim.rmsprop import RMSprop
from oneflow_lite.optim.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
