"""``flow.optim``: the optimizers of ``torch.optim`` (SGD, Adam, AdamW, Adamax, NAdam, RAdam, RMSprop,
Adadelta, Adagrad, Adafactor, ASGD, Rprop, LBFGS, Muon), ``flow.optim.lr_scheduler`` and ``swa_utils``
(weight averaging), with PyTorch's API, algorithms and state. Their steps are functional in-place ops, so
nn.Graph captures them (Note [Optimizer steps in a graph] in optimizer.py). SparseAdam is not provided (there
are no sparse gradients)."""

import importlib

from oneflow_lite.optim import lr_scheduler
from oneflow_lite.optim.adadelta import Adadelta
from oneflow_lite.optim.adafactor import Adafactor
from oneflow_lite.optim.adagrad import Adagrad
from oneflow_lite.optim.adam import Adam
from oneflow_lite.optim.adamax import Adamax
from oneflow_lite.optim.adamw import AdamW
from oneflow_lite.optim.asgd import ASGD
from oneflow_lite.optim.lbfgs import LBFGS
from oneflow_lite.optim.muon import Muon
from oneflow_lite.optim.nadam import NAdam
from oneflow_lite.optim.optimizer import Optimizer
from oneflow_lite.optim.radam import RAdam
from oneflow_lite.optim.rmsprop import RMSprop
from oneflow_lite.optim.rprop import Rprop
from oneflow_lite.optim.sgd import SGD

__all__ = ["ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "Muon", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "lr_scheduler", "swa_utils"]


def __getattr__(name):
    if name == "swa_utils":  # imports nn (which imports this package through nn.Graph): on first use
        return importlib.import_module("oneflow_lite.optim.swa_utils")
    raise AttributeError(f"module 'oneflow_lite.optim' has no attribute '{name}'")
