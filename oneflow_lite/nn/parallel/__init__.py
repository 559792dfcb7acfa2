"""``flow.nn.parallel``: the data-parallel wrappers. ``DistributedDataParallel`` averages gradients over the
job's processes (nn/parallel/distributed.py); in a job of one process it, like ``DataParallel``, computes
exactly what the module computes: the wrapper forwards calls to it and keeps it as ``.module``, so state dicts
carry PyTorch's ``module.`` prefix."""

from oneflow_lite.nn.parallel.data_parallel import DataParallel
from oneflow_lite.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
