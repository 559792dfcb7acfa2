"""``flow.utils.data``: datasets, samplers and ``DataLoader`` (PyTorch's ``torch.utils.data`` API), and the
data sets shipped with the package (``flow.utils.data.datasets``)."""

from oneflow_lite.utils.data import datasets  # noqa: F401
from oneflow_lite.utils.data.dataloader import (  # noqa: F401
    DataLoader, WorkerInfo, default_collate, default_convert, get_worker_info,
)
from oneflow_lite.utils.data.dataset import (  # noqa: F401
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset, random_split,
)
from oneflow_lite.utils.data.distributed import DistributedSampler  # noqa: F401
from oneflow_lite.utils.data.sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler,
)
