"""flow.utils.data: datasets, samplers, collation, DataLoader (also with worker threads), and the shipped digits."""

import collections
import math
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.utils import data
from oneflow_lite.utils.data import (
    BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler, Sampler,
    SequentialSampler, Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_collate,
    default_convert, get_worker_info, random_split,
)


def _xy(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) * 10
    return x, y


def _tensor_dataset(n=10):
    x, y = _xy(n)
    return TensorDataset(flow.tensor(x), flow.tensor(y))


class _Squares(Dataset):
    """Map-style dataset of dicts with NumPy values and Python numbers."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.full((2,), i, dtype=np.float32), "sq": i * i, "name": f"s{i}"}


class _Stream(IterableDataset):
    def __init__(self, n, shard=False):
        self.n = n
        self.shard = shard

    def __iter__(self):
        info = get_worker_info() if self.shard else None
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def _flat(batches):
    return [v for b in batches for v in b.tolist()]


# ---- datasets ---------------------------------------------------------------------------------------
def test_tensor_dataset_indexes_every_tensor():
    x, y = _xy(4)
    ds = TensorDataset(flow.tensor(x), flow.tensor(y))
    assert len(ds) == 4
    xi, yi = ds[2]
    np.testing.assert_array_equal(xi.numpy(), [6.0, 7.0, 8.0])
    assert yi.item() == 20 and yi.dtype is flow.int64
    xi, yi = ds[-1]
    np.testing.assert_array_equal(xi.numpy(), [9.0, 10.0, 11.0])
    assert len(TensorDataset()) == 0 and len(TensorDataset(flow.zeros((0, 2)))) == 0


def test_tensor_dataset_errors():
    with pytest.raises(ValueError, match="TensorDataset: Size mismatch between tensors: tensor 1 has 3 rows "
                                         r"\(size of dimension 0\), tensor 0 has 4"):
        TensorDataset(flow.zeros(4, 2), flow.zeros(3))
    with pytest.raises(TypeError, match="TensorDataset: argument 1 must be a Tensor, got ndarray"):
        TensorDataset(flow.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="TensorDataset: tensor 0 is 0-d"):
        TensorDataset(flow.tensor(1.0))


def test_dataset_base_classes():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__"):
        Dataset()[0]
    with pytest.raises(NotImplementedError, match="Subclasses of IterableDataset should implement __iter__"):
        iter(IterableDataset())
    with pytest.raises(NotImplementedError, match="Subclasses of Sampler should implement __iter__"):
        iter(Sampler())
    assert isinstance(_Squares(2) + _Squares(3), ConcatDataset)
    assert isinstance(_Stream(2) + _Stream(3), ChainDataset)


def test_subset_and_concat_dataset():
    ds = _tensor_dataset(10)
    sub = Subset(ds, [7, 2, 5])
    assert len(sub) == 3 and sub[0][1].item() == 70 and sub[-1][1].item() == 50
    assert [s[1].item() for s in sub.__getitems__([2, 0])] == [50, 70]
    cat = ConcatDataset([Subset(ds, [0, 1]), _tensor_dataset(3), Subset(ds, [9])])
    assert len(cat) == 6 and cat.cumulative_sizes == [2, 5, 6]
    assert [cat[i][1].item() for i in range(6)] == [0, 10, 0, 10, 20, 90]
    assert cat[-1][1].item() == 90 and cat[-6][1].item() == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-7]
    with pytest.raises(IndexError, match="ConcatDataset: index 6 is out of range for a dataset of length 6"):
        cat[6]
    with pytest.raises(ValueError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([_Stream(3)])
    chain = ChainDataset([_Stream(2), _Stream(3)])
    assert list(chain) == [0, 1, 0, 1, 2]
    with pytest.raises(TypeError, match="ChainDataset only supports IterableDataset, dataset 1 is list"):
        list(ChainDataset([_Stream(1), [5]]))


def test_random_split_with_lengths():
    ds = _tensor_dataset(10)
    g = flow.Generator().manual_seed(5)
    a, b, c = random_split(ds, [3, 5, 2], generator=g)
    assert (len(a), len(b), len(c)) == (3, 5, 2)
    all_idx = a.indices + b.indices + c.indices
    assert sorted(all_idx) == list(range(10))  # disjoint and covering
    # the documented contract: consecutive slices of flow.randperm(len(dataset), generator=...)
    assert all_idx == flow.randperm(10, generator=flow.Generator().manual_seed(5)).tolist()
    assert a[0][1].item() == 10 * a.indices[0]
    again = random_split(ds, [3, 5, 2], generator=flow.Generator().manual_seed(5))
    assert [s.indices for s in again] == [a.indices, b.indices, c.indices]
    other = random_split(ds, [3, 5, 2], generator=flow.Generator().manual_seed(6))
    assert [s.indices for s in other] != [a.indices, b.indices, c.indices]


def test_random_split_uses_the_global_generator_by_default():
    flow.manual_seed(123)
    first = [s.indices for s in random_split(range(20), [10, 10])]
    flow.manual_seed(123)
    assert [s.indices for s in random_split(range(20), [10, 10])] == first


def test_random_split_with_fractions():
    # 11 * 0.5 floors to 5 and 5; the remainder 1 goes to the first split
    assert [len(s) for s in random_split(range(11), [0.5, 0.5])] == [6, 5]
    # 10 * [0.3, 0.3, 0.4] = [3, 3, 4] exactly
    assert [len(s) for s in random_split(range(10), [0.3, 0.3, 0.4])] == [3, 3, 4]
    # 7 * [0.1, 0.1, 0.8] = floors [0, 0, 5]; remainder 2 round-robin -> [1, 1, 5]
    assert [len(s) for s in random_split(range(7), [0.1, 0.1, 0.8])] == [1, 1, 5]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        assert [len(s) for s in random_split(range(2), [0.9, 0.1])] == [2, 0]


def test_random_split_errors():
    with pytest.raises(ValueError, match=r"Sum of input lengths \(9\) does not equal the length of the input "
                                         r"dataset \(10\)"):
        random_split(range(10), [4, 5])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [-0.5, 1.5])
    with pytest.raises(TypeError, match="lengths\\[1\\] must be an int or a float fraction, got str"):
        random_split(range(10), [5, "5"])
    with pytest.raises(ValueError, match="lengths\\[0\\] must be a non-negative int"):
        random_split(range(10), [2.5, 7.5])


# ---- samplers ---------------------------------------------------------------------------------------
def test_sequential_and_batch_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3] and len(SequentialSampler(range(4))) == 4
    assert list(BatchSampler(range(10), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(range(10), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4 and len(BatchSampler(range(10), 3, True)) == 3
    assert len(BatchSampler(range(9), 3, False)) == 3
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=True"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler_permutes_per_epoch_and_is_seeded():
    s = RandomSampler(range(20))
    flow.manual_seed(7)
    e1, e2 = list(s), list(s)
    assert sorted(e1) == list(range(20)) and sorted(e2) == list(range(20))
    assert e1 != e2 and e1 != list(range(20))
    flow.manual_seed(7)
    assert [list(s), list(s)] == [e1, e2]
    g = flow.Generator().manual_seed(1)
    s = RandomSampler(range(20), generator=g)
    first = list(s)
    g.manual_seed(1)
    assert list(s) == first
    assert first == flow.randperm(20, generator=flow.Generator().manual_seed(1)).tolist()


def test_random_sampler_num_samples_and_replacement():
    g = flow.Generator().manual_seed(0)
    longer = list(RandomSampler(range(5), num_samples=12, generator=g))
    assert len(longer) == 12
    assert sorted(longer[:5]) == sorted(longer[5:10]) == list(range(5))  # whole permutations, then a part
    assert len(set(longer[10:])) == 2
    draws = list(RandomSampler(range(3), replacement=True, num_samples=300, generator=g))
    assert len(draws) == 300 and set(draws) == {0, 1, 2}
    assert len(RandomSampler(range(3), replacement=True, num_samples=300)) == 300
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(0))
    with pytest.raises(TypeError, match="RandomSampler: generator must be a flow.Generator or None, got int"):
        RandomSampler(range(3), generator=1)
    with pytest.raises(ValueError, match="RandomSampler: cannot draw samples from an empty data_source"):
        list(RandomSampler([], num_samples=2))


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    g = flow.Generator().manual_seed(3)
    out = list(SubsetRandomSampler(idx, generator=g))
    assert sorted(out) == idx and len(SubsetRandomSampler(idx)) == 4
    perm = flow.randperm(4, generator=flow.Generator().manual_seed(3)).tolist()
    assert out == [idx[i] for i in perm]


def test_weighted_random_sampler():
    g = flow.Generator().manual_seed(0)
    draws = np.array(list(WeightedRandomSampler([0.0, 1.0, 3.0], 8000, generator=g)))
    assert len(draws) == 8000 and 0 not in draws
    assert abs((draws == 2).mean() - 0.75) < 0.03  # 3 / (1 + 3); std of the mean ~0.005
    unique = list(WeightedRandomSampler(flow.tensor([1.0, 1.0, 5.0, 0.0]), 3, replacement=False, generator=g))
    assert sorted(unique) == [0, 1, 2]
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(2, 2\)"):
        WeightedRandomSampler([[1, 2], [3, 4]], 2)
    with pytest.raises(ValueError, match="weights must be finite and non-negative with a positive sum"):
        WeightedRandomSampler([1.0, -1.0], 2)
    with pytest.raises(ValueError, match="cannot draw 3 samples without replacement from 2 indices"):
        WeightedRandomSampler([1.0, 0.0, 2.0], 3, replacement=False)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=-1"):
        WeightedRandomSampler([1.0], -1)


# ---- collation ---------------------------------------------------------------------------------------
def test_default_collate_stacks_tensors_and_numbers():
    a, b = flow.tensor([1.0, 2.0]), flow.tensor([3.0, 4.0])
    out = default_collate([a, b])
    assert out.shape == (2, 2)
    np.testing.assert_array_equal(out.numpy(), np.stack([a.numpy(), b.numpy()]))
    f = default_collate([0.5, 1.5])
    assert f.dtype is flow.float64 and f.tolist() == [0.5, 1.5]
    i = default_collate([1, 2, 3])
    assert i.dtype is flow.int64 and i.tolist() == [1, 2, 3]
    bools = default_collate([True, False])
    assert bools.dtype is flow.bool and bools.tolist() == [True, False]
    assert default_collate(["a", "b"]) == ["a", "b"]
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([flow.zeros(2), flow.zeros(3)])


def test_default_collate_numpy_values():
    arrs = [np.array([1, 2], dtype=np.int16), np.array([3, 4], dtype=np.int16)]
    out = default_collate(arrs)
    assert out.dtype is flow.int16 and out.tolist() == [[1, 2], [3, 4]]
    sc = default_collate([np.float32(1.5), np.float32(2.5)])
    assert sc.dtype is flow.float32 and sc.tolist() == [1.5, 2.5]
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, "
                                        "dicts or lists; found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_default_collate_containers():
    batch = [{"x": np.float32([1, 2]), "y": 0, "meta": ("a", 1.0)},
             {"x": np.float32([3, 4]), "y": 1, "meta": ("b", 2.0)}]
    out = default_collate(batch)
    assert set(out) == {"x", "y", "meta"}
    np.testing.assert_array_equal(out["x"].numpy(), [[1, 2], [3, 4]])
    assert out["y"].tolist() == [0, 1]
    assert isinstance(out["meta"], list) and list(out["meta"][0]) == ["a", "b"]  # a tuple of fields gives a list
    assert out["meta"][1].dtype is flow.float64
    ordered = default_collate([collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)])
    assert type(ordered) is collections.OrderedDict and list(ordered) == ["b", "a"]
    assert ordered["b"].tolist() == [1, 3]
    Point = collections.namedtuple("Point", "x y")
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert type(p) is Point and p.x.tolist() == [1, 3] and p.y.tolist() == [2.0, 4.0]
    pairs = default_collate([(flow.tensor([1]), 5), (flow.tensor([2]), 6)])
    assert isinstance(pairs, list) and pairs[0].tolist() == [[1], [2]] and pairs[1].tolist() == [5, 6]
    lists = default_collate([[1, 2], [3, 4]])
    assert [t.tolist() for t in lists] == [[1, 3], [2, 4]]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain .* found <class 'object'>"):
        default_collate([object(), object()])


def test_default_convert():
    a = np.arange(3, dtype=np.float64)
    t = default_convert(a)
    assert isinstance(t, flow.Tensor) and t.dtype is flow.float64 and t.tolist() == [0.0, 1.0, 2.0]
    out = default_convert({"a": a, "n": 1, "s": "x", "l": [np.int32(4)], "t": (np.bool_(True),)})
    assert out["n"] == 1 and out["s"] == "x"
    assert out["l"][0].dtype is flow.int32 and out["l"][0].item() == 4
    assert isinstance(out["t"], list) and out["t"][0].dtype is flow.bool
    strings = np.array(["a"])
    assert default_convert(strings) is strings


# ---- DataLoader --------------------------------------------------------------------------------------
def test_dataloader_batches_in_order_with_a_short_last_batch():
    x, y = _xy(10)
    loader = DataLoader(_tensor_dataset(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    np.testing.assert_array_equal(batches[0][0].numpy(), x[0:4])
    np.testing.assert_array_equal(batches[2][0].numpy(), x[8:10])
    assert batches[2][1].tolist() == y[8:10].tolist()
    assert batches[0][0].dtype is flow.float32 and batches[0][1].dtype is flow.int64


def test_tensor_dataset_batches_match_row_indexing_on_every_path():
    x, y = _xy(12)
    ds = TensorDataset(flow.tensor(x), flow.tensor(y))

    class Plain(TensorDataset):  # a subclass: fetched sample by sample, then stacked
        pass

    class Doubled(TensorDataset):
        def __getitem__(self, i):
            a, b = super().__getitem__(i)
            return a * 2, b

    order = [11, 0, 5, 5, 3, 7, 2]
    for dataset, scale in ((ds, 1), (Plain(*ds.tensors), 1), (Doubled(*ds.tensors), 2)):
        batches = list(DataLoader(dataset, batch_size=3, sampler=order))
        assert [type(b) for b in batches] == [list] * 3
        for k, (bx, by) in enumerate(batches):
            rows = order[3 * k:3 * k + 3]
            np.testing.assert_array_equal(bx.numpy(), x[rows] * scale)
            np.testing.assert_array_equal(by.numpy(), y[rows])
            assert bx.dtype is flow.float32 and by.dtype is flow.int64
    sub = Subset(ds, [4, 9, 1])
    (bx, by), = list(DataLoader(sub, batch_size=3))
    np.testing.assert_array_equal(bx.numpy(), x[[4, 9, 1]])
    with pytest.raises(IndexError, match="index 12 is out of bounds for dimension 0 with size 12"):
        list(DataLoader(ds, batch_size=2, sampler=[0, 12]))


def test_batches_of_a_tensor_dataset_carry_gradients():
    w = flow.tensor(np.arange(6, dtype=np.float32).reshape(3, 2), requires_grad=True)
    (batch,) = next(iter(DataLoader(TensorDataset(w), batch_size=4, sampler=[2, 0, 2])))
    (batch * flow.tensor([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[1, 10], [0, 0], [2, 20]])  # row 2 taken twice


def test_dataloader_defaults_to_batches_of_one():
    loader = DataLoader(_tensor_dataset(3))
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape for b in batches] == [(1, 3)] * 3


def test_dataloader_drop_last():
    loader = DataLoader(_tensor_dataset(10), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[1].tolist() for b in loader] == [[0, 10, 20, 30], [40, 50, 60, 70]]


def test_dataloader_shuffle_covers_every_sample_and_is_seeded():
    loader = DataLoader(_tensor_dataset(20), batch_size=6, shuffle=True)
    flow.manual_seed(11)
    e1 = _flat(b[1] for b in loader)
    e2 = _flat(b[1] for b in loader)
    assert sorted(e1) == sorted(e2) == [10 * i for i in range(20)]
    assert e1 != e2 and e1 != sorted(e1)
    flow.manual_seed(11)
    assert _flat(b[1] for b in loader) == e1
    g = flow.Generator().manual_seed(4)
    loader = DataLoader(_tensor_dataset(20), batch_size=6, shuffle=True, generator=g)
    first = _flat(b[1] for b in loader)
    g.manual_seed(4)
    assert _flat(b[1] for b in loader) == first
    expected = [10 * i for i in flow.randperm(20, generator=flow.Generator().manual_seed(4)).tolist()]
    assert first == expected


def test_dataloader_with_sampler_and_batch_sampler():
    ds = _tensor_dataset(10)
    loader = DataLoader(ds, batch_size=2, sampler=[9, 0, 5])
    assert [b[1].tolist() for b in loader] == [[90, 0], [50]] and len(loader) == 2
    loader = DataLoader(ds, batch_sampler=[[1, 2, 3], [7]])
    assert [b[1].tolist() for b in loader] == [[10, 20, 30], [70]] and len(loader) == 2
    assert loader.batch_size is None and loader.drop_last is False


def test_dataloader_without_batching_converts_samples():
    loader = DataLoader(_Squares(3), batch_size=None)
    items = list(loader)
    assert len(loader) == 3 and len(items) == 3
    assert isinstance(items[2]["x"], flow.Tensor) and items[2]["x"].tolist() == [2.0, 2.0]
    assert items[2]["sq"] == 4 and items[2]["name"] == "s2"


def test_dataloader_collates_dicts():
    batch = next(iter(DataLoader(_Squares(5), batch_size=3)))
    np.testing.assert_array_equal(batch["x"].numpy(), [[0, 0], [1, 1], [2, 2]])
    assert batch["sq"].tolist() == [0, 1, 4] and batch["name"] == ["s0", "s1", "s2"]


def test_dataloader_custom_collate_and_getitems():
    class Batched(Dataset):
        def __init__(self):
            self.calls = []

        def __len__(self):
            return 5

        def __getitem__(self, i):
            raise AssertionError("__getitems__ should be used")

        def __getitems__(self, idx):
            self.calls.append(list(idx))
            return [i * 2 for i in idx]

    ds = Batched()
    assert list(DataLoader(ds, batch_size=2, collate_fn=sum)) == [2, 10, 8]
    assert ds.calls == [[0, 1], [2, 3], [4]]


def test_dataloader_iterable_dataset():
    loader = DataLoader(_Stream(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    loader = DataLoader(_Stream(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(_Stream(2), batch_size=None)) == [0, 1]  # plain ints are left as they are

    class Sized(_Stream):
        def __len__(self):
            return self.n

    assert len(DataLoader(Sized(7), batch_size=3)) == 3
    assert len(DataLoader(Sized(7), batch_size=3, drop_last=True)) == 2
    assert len(ChainDataset([Sized(2), Sized(3)])) == 5
    with pytest.raises(TypeError):
        len(DataLoader(_Stream(7), batch_size=3))
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified shuffle option, "
                                         "but got shuffle=True"):
        DataLoader(_Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(_Stream(3), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(_Stream(3), batch_sampler=[[0]])


@pytest.mark.parametrize("kwargs, error, message", [
    ({"sampler": [0, 1], "shuffle": True}, ValueError, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, ValueError,
     "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
    ({"batch_sampler": [[0]], "drop_last": True}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, ValueError,
     "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
    ({"batch_size": 0}, ValueError, "batch_size should be a positive integer value, but got batch_size=0"),
    ({"num_workers": -1}, ValueError, "num_workers option should be non-negative"),
    ({"timeout": -1}, ValueError, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, ValueError, "prefetch_factor option could only be specified in multiprocessing"),
    ({"num_workers": 1, "prefetch_factor": 0}, ValueError, "prefetch_factor option should be a positive integer"),
    ({"persistent_workers": True}, ValueError, "persistent_workers option needs num_workers > 0"),
    ({"multiprocessing_context": "spawn"}, ValueError, "multiprocessing_context can only be used with multi-"),
    ({"shuffle": "yes"}, TypeError, "DataLoader: shuffle must be a bool, got str"),
    ({"drop_last": 1}, TypeError, "DataLoader: drop_last must be a bool, got int"),
    ({"collate_fn": 3}, TypeError, "DataLoader: collate_fn must be callable or None, got int"),
    ({"generator": 3}, TypeError, "DataLoader: generator must be a flow.Generator or None, got int"),
])
def test_dataloader_argument_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        DataLoader(_tensor_dataset(4), **kwargs)


def test_dataloader_attributes_are_frozen_after_init():
    loader = DataLoader(_tensor_dataset(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    loader.collate_fn = default_collate  # not frozen, as in PyTorch


def test_pin_memory_warns_that_it_has_no_effect():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        list(DataLoader(_tensor_dataset(2), pin_memory=True))


# ---- worker threads ----------------------------------------------------------------------------------
@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_workers_give_the_same_batches_in_order(num_workers):
    ds = _tensor_dataset(23)
    expected = [b[1].tolist() for b in DataLoader(ds, batch_size=4)]
    loader = DataLoader(ds, batch_size=4, num_workers=num_workers)
    assert [b[1].tolist() for b in loader] == expected and len(loader) == 6
    unordered = DataLoader(ds, batch_size=4, num_workers=num_workers, in_order=False)
    assert sorted(b[1].tolist() for b in unordered) == sorted(expected)


def test_workers_run_in_threads_with_worker_info_and_init_fn():
    seen, inits = [], []

    class Recorder(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            info = get_worker_info()
            seen.append((i, info.id, info.num_workers, threading.current_thread().name))
            return i

    def init(worker_id):
        inits.append((worker_id, get_worker_info().id))

    assert get_worker_info() is None
    out = [b.tolist() for b in DataLoader(Recorder(), batch_size=2, num_workers=2, worker_init_fn=init)]
    assert out == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert sorted(inits) == [(0, 0), (1, 1)]
    # batch k is fetched by worker k % 2
    assert sorted((i, w, n) for i, w, n, _ in seen) == [(i, (i // 2) % 2, 2) for i in range(8)]
    assert {name for *_, name in seen} == {"DataLoader worker 0", "DataLoader worker 1"}


def test_worker_random_ops_are_seeded_per_worker():
    class Noise(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return flow.rand(2)

    def run(seed):
        g = flow.Generator().manual_seed(seed)
        return [b.numpy().copy() for b in DataLoader(Noise(), batch_size=2, num_workers=2, generator=g)]

    a, b, c = run(1), run(1), run(2)
    assert all((x == y).all() for x, y in zip(a, b))
    assert not all((x == z).all() for x, z in zip(a, c))
    assert not (a[0] == a[1]).all()  # the two workers draw different streams


def test_worker_exceptions_are_reraised_with_the_worker_named():
    class Failing(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            if i == 3:
                raise KeyError("bad sample 3")
            return i

    it = iter(DataLoader(Failing(), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    with pytest.raises(KeyError, match="bad sample 3") as info:
        next(it)
    assert "(raised in DataLoader worker 1)" in info.value.__notes__
    assert next(it).tolist() == [4, 5]
    with pytest.raises(StopIteration):
        next(it)


def test_worker_init_fn_errors_are_reraised():
    def init(worker_id):
        raise RuntimeError(f"init failed in {worker_id}")

    with pytest.raises(RuntimeError, match="init failed in 0"):
        list(DataLoader(_tensor_dataset(4), num_workers=1, worker_init_fn=init))


def test_worker_timeout():
    class Slow(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            time.sleep(0.5)
            return i

    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.05 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.05))


def test_iterable_dataset_with_workers():
    # without sharding every worker yields the whole stream, as in PyTorch
    dup = [b.tolist() for b in DataLoader(_Stream(4), batch_size=2, num_workers=2)]
    assert sorted(v for b in dup for v in b) == [0, 0, 1, 1, 2, 2, 3, 3]
    sharded = [b.tolist() for b in DataLoader(_Stream(9, shard=True), batch_size=2, num_workers=2)]
    # worker 0 streams 0,2,4,6,8 and worker 1 streams 1,3,5,7; batches alternate between them
    assert sharded == [[0, 2], [1, 3], [4, 6], [5, 7], [8]]
    dropped = [b.tolist() for b in DataLoader(_Stream(9, shard=True), batch_size=2, num_workers=2, drop_last=True)]
    assert dropped == [[0, 2], [1, 3], [4, 6], [5, 7]]


def test_persistent_workers_serve_several_epochs():
    inits = []
    g = flow.Generator().manual_seed(0)
    loader = DataLoader(_tensor_dataset(10), batch_size=3, shuffle=True, num_workers=2, persistent_workers=True,
                        worker_init_fn=inits.append, generator=g)
    epochs = [_flat(b[1] for b in loader) for _ in range(3)]
    assert all(sorted(e) == [10 * i for i in range(10)] for e in epochs)
    assert epochs[0] != epochs[1]
    assert sorted(inits) == [0, 1]  # the threads were started once
    it = iter(loader)
    next(it)  # abandon an epoch half-way; the next one starts cleanly
    assert sorted(_flat(b[1] for b in loader)) == [10 * i for i in range(10)]


def test_workers_shut_down_after_an_epoch():
    before = threading.active_count()
    list(DataLoader(_tensor_dataset(6), batch_size=2, num_workers=3))
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before


# ---- the digits data set ------------------------------------------------------------------------------
_DATA_DIR = Path(data.__file__).parent / "_data"
# Per-class counts of the 1,797 digits, as the UCI description lists them for the test part.
_ALL_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
_TRAIN_COUNTS = [149, 144, 144, 143, 148, 143, 149, 137, 133, 147]
_TEST_COUNTS = [29, 38, 33, 40, 33, 39, 32, 42, 41, 33]
# The first two rows of scikit-learn's digits.csv.gz (64 pixels, then the label), both in the training split.
_ROW0 = [0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0, 0, 3, 15, 2, 0, 11, 8, 0, 0, 4, 12, 0, 0, 8, 8, 0,
         0, 5, 8, 0, 0, 9, 8, 0, 0, 4, 11, 0, 1, 12, 7, 0, 0, 2, 14, 5, 10, 12, 0, 0, 0, 0, 6, 13, 10, 0, 0, 0]
_ROW1 = [0, 0, 0, 12, 13, 5, 0, 0, 0, 0, 0, 11, 16, 9, 0, 0, 0, 0, 3, 15, 16, 6, 0, 0, 0, 7, 15, 16, 16, 2, 0, 0,
         0, 0, 1, 16, 16, 3, 0, 0, 0, 0, 1, 16, 16, 6, 0, 0, 0, 0, 1, 16, 16, 6, 0, 0, 0, 0, 0, 11, 16, 10, 0, 0]


def test_the_shipped_file():
    path = _DATA_DIR / "digits.npz"
    assert path.stat().st_size < 100_000
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == ["images", "labels", "test_indices"]
        images, labels, test = z["images"], z["labels"], z["test_indices"]
    assert images.dtype == np.uint8 and images.shape == (1797, 8, 8)
    assert images.min() == 0 and images.max() == 16
    assert labels.dtype == np.uint8 and labels.shape == (1797,)
    assert np.bincount(labels).tolist() == _ALL_COUNTS
    assert test.shape == (360,) and (np.diff(test) > 0).all() and test[0] >= 0 and test[-1] < 1797
    assert images[0].ravel().tolist() == _ROW0 and labels[0] == 0
    assert images[1].ravel().tolist() == _ROW1 and labels[1] == 1
    readme = (_DATA_DIR / "README.md").read_text()
    assert "BSD 3-Clause License" in readme and "CC BY 4.0" in readme and "Alpaydin" in readme


def test_digits_splits():
    train, test = data.datasets.digits(), data.datasets.digits(train=False)
    assert isinstance(train, TensorDataset) and len(train) == 1437 and len(test) == 360
    x, y = train.tensors
    assert x.shape == (1437, 1, 8, 8) and x.dtype is flow.float32 and y.shape == (1437,) and y.dtype is flow.int64
    assert np.bincount(y.numpy(), minlength=10).tolist() == _TRAIN_COUNTS
    assert np.bincount(test.tensors[1].numpy(), minlength=10).tolist() == _TEST_COUNTS
    xs = x.numpy()
    assert xs.min() == 0.0 and xs.max() == 1.0 and ((xs * 16) == np.round(xs * 16)).all()
    np.testing.assert_array_equal(xs[0, 0].ravel(), np.array(_ROW0, np.float32) / 16)
    np.testing.assert_array_equal(xs[1, 0].ravel(), np.array(_ROW1, np.float32) / 16)
    assert y[0].item() == 0 and y[1].item() == 1
    flat = data.datasets.digits(flatten=True)
    assert flat.tensors[0].shape == (1437, 64)
    np.testing.assert_array_equal(flat.tensors[0].numpy(), xs.reshape(1437, 64))


def test_digits_split_is_fixed_and_disjoint():
    with np.load(_DATA_DIR / "digits.npz", allow_pickle=False) as z:
        images, test = z["images"], z["test_indices"]
    train_rows = np.setdiff1d(np.arange(1797), test)
    a = data.datasets.digits(train=False, flatten=True).tensors[0].numpy()
    np.testing.assert_array_equal(a * 16, images[test].reshape(360, 64))
    b = data.datasets.digits(flatten=True).tensors[0].numpy()
    np.testing.assert_array_equal(b * 16, images[train_rows].reshape(1437, 64))
    flow.manual_seed(99)  # the split does not depend on any random state
    again = data.datasets.digits(train=False, flatten=True)
    np.testing.assert_array_equal(again.tensors[0].numpy(), a)


def test_digits_returns_new_tensors_and_checks_arguments():
    one = data.datasets.digits(train=False)
    one.tensors[0].zero_()
    assert data.datasets.digits(train=False).tensors[0].numpy().max() == 1.0
    with pytest.raises(TypeError, match="digits\\(\\): argument 'train' must be bool, not str"):
        data.datasets.digits("train")
    with pytest.raises(TypeError, match="digits\\(\\): argument 'flatten' must be bool, not int"):
        data.datasets.digits(flatten=1)


def test_digits_through_a_shuffled_loader():
    flow.manual_seed(0)
    loader = DataLoader(data.datasets.digits(), batch_size=64, shuffle=True, drop_last=True)
    n, counts = 0, np.zeros(10, int)
    for images, labels in loader:
        assert images.shape == (64, 1, 8, 8) and labels.shape == (64,)
        counts += np.bincount(labels.numpy(), minlength=10)
        n += 1
    assert n == len(loader) == 1437 // 64
    assert counts.sum() == 64 * 22 and (counts <= np.array(_TRAIN_COUNTS)).all()


def test_flow_utils_data_is_reachable_from_the_package():
    assert flow.utils.data.DataLoader is DataLoader
    assert flow.utils.data.datasets.digits is data.datasets.digits
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(DataLoader(_tensor_dataset(2)))


def test_random_sampler_with_replacement_draws_lazily_for_a_huge_num_samples():
    import itertools

    flow.manual_seed(0)
    sampler = flow.utils.data.RandomSampler(range(10), replacement=True, num_samples=10**10)
    assert len(sampler) == 10**10
    first = list(itertools.islice(iter(sampler), 100))  # an up-front draw would need 74.5 GiB
    assert len(first) == 100 and all(0 <= i < 10 for i in first) and len(set(first)) > 1
    flow.manual_seed(0)
    again = list(itertools.islice(iter(sampler), 100))
    assert again == first
    assert len(list(flow.utils.data.RandomSampler(range(5), replacement=True, num_samples=70))) == 70  # 2*32 + 6


# ---- [compat t1] DistributedSampler, StackDataset ---------------------------------------------------------------

def _distributed_reference(n, replicas, rank, order, drop_last):
    """PyTorch's DistributedSampler rule written out: pad by repeating the start (or cut), then stride."""
    num = math.ceil((n - replicas) / replicas) if drop_last and n % replicas else math.ceil(n / replicas)
    total = num * replicas
    idx = list(order)
    idx = (idx * math.ceil(total / n))[:total] if not drop_last else idx[:total]
    return idx[rank:total:replicas]


@pytest.mark.parametrize("n,replicas", [(10, 3), (10, 5), (3, 4), (7, 2), (1, 3)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_splits_and_pads(n, replicas, drop_last):
    from oneflow_lite.utils.data import DistributedSampler
    seen = []
    for rank in range(replicas):
        s = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        got = list(s)
        assert got == _distributed_reference(n, replicas, rank, range(n), drop_last) and len(s) == len(got)
        seen += got
    if not drop_last:
        assert set(seen) == set(range(n)) and len(seen) % replicas == 0
    else:
        assert len(seen) == len(set(seen)) == (n // replicas) * replicas


def test_distributed_sampler_shuffles_with_seed_plus_epoch():
    from oneflow_lite.utils.data import DistributedSampler
    n, replicas = 11, 3
    samplers = [DistributedSampler(range(n), replicas, r, seed=5) for r in range(replicas)]
    perm = flow.randperm(n, generator=flow.Generator().manual_seed(5)).tolist()
    parts = [list(s) for s in samplers]
    assert parts == [_distributed_reference(n, replicas, r, perm, False) for r in range(replicas)]
    assert parts == [list(s) for s in samplers]  # the same order every pass of one epoch
    for s in samplers:
        s.set_epoch(2)
    perm2 = flow.randperm(n, generator=flow.Generator().manual_seed(7)).tolist()
    assert [list(s) for s in samplers] == [_distributed_reference(n, replicas, r, perm2, False) for r in range(3)]
    assert perm2 != perm


def test_distributed_sampler_defaults_and_errors():
    from oneflow_lite import distributed as dist
    from oneflow_lite.utils.data import DistributedSampler
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(TypeError, match="num_replicas must be an int"):
        DistributedSampler(range(4), num_replicas=2.0, rank=0)
    dist.init_process_group("gloo")
    try:
        s = DistributedSampler(range(4), shuffle=False)
        assert (s.num_replicas, s.rank, list(s)) == (1, 0, [0, 1, 2, 3])
        loader = DataLoader(TensorDataset(flow.arange(6.0)), batch_size=2, sampler=DistributedSampler(range(6)))
        assert sorted(v for (b,) in loader for v in b.tolist()) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    finally:
        dist.destroy_process_group()


def test_stack_dataset_tuple_and_dict():
    from oneflow_lite.utils.data import StackDataset
    x, y = _xy(4)
    images, labels = TensorDataset(flow.tensor(x)), list("abcd")
    s = StackDataset(images, labels)
    assert len(s) == 4 and s[2][1] == "c"
    np.testing.assert_array_equal(s[2][0][0].numpy(), x[2])
    batch = s.__getitems__([3, 0])
    assert [b[1] for b in batch] == ["d", "a"]
    d = StackDataset(x=flow.tensor(x), y=flow.tensor(y))
    assert set(d[1]) == {"x", "y"} and d[1]["y"].item() == y[1]
    (first, *_) = list(DataLoader(d, batch_size=3))
    np.testing.assert_array_equal(first["x"].numpy(), x[:3])
    np.testing.assert_array_equal(first["y"].numpy(), y[:3])
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(images, [1])
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset(images, y=labels)
    with pytest.raises(ValueError, match="At least one dataset"):
        StackDataset()


def test_distributed_sampler_against_torch_oracle():
    torch = pytest.importorskip("torch")
    from oneflow_lite.utils.data import DistributedSampler
    for n, replicas, drop_last in ((10, 3, False), (10, 3, True), (3, 4, False), (2, 5, False)):
        for rank in range(replicas):
            want = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            got = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            assert list(got) == list(want) and len(got) == len(want)
