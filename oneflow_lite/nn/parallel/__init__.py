"""``flow.nn.parallel``: the data-parallel wrappers. In a process group of one process (the only kind
``flow.distributed`` starts) a wrapped module computes exactly what the module computes: the wrapper
forwards calls to it and keeps it as ``.module``, so state dicts carry PyTorch's ``module.`` prefix."""

from oneflow_lite.nn.parallel.data_parallel import DataParallel, DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
