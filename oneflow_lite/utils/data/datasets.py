"""Data sets shipped inside the package.

``digits``: the 8x8 handwritten digits (1,797 images of the digits 0..9, the test part of the UCI "Optical
Recognition of Handwritten Digits" data set by E. Alpaydin and C. Kaynak, CC BY 4.0, as distributed with
scikit-learn under the BSD 3-Clause license). The file and its license text are in ``_data/`` (see its
README.md); ``scripts/make_digits_npz.py`` made it.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np

from oneflow_lite.functors.creation import from_numpy
from oneflow_lite.utils.data.dataset import TensorDataset

DIGITS_NUM_TRAIN = 1437
DIGITS_NUM_TEST = 360


@functools.lru_cache(maxsize=1)
def _digits_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(images uint8 (1797, 8, 8), labels uint8 (1797,), is_test bool (1797,)), read-only, read once."""
    path = resources.files(__package__).joinpath("_data", "digits.npz")
    with path.open("rb") as f, np.load(f, allow_pickle=False) as archive:
        images, labels, test_indices = archive["images"], archive["labels"], archive["test_indices"]
    is_test = np.zeros(len(labels), dtype=bool)
    is_test[test_indices] = True
    for a in (images, labels, is_test):
        a.flags.writeable = False
    return images, labels, is_test


def digits(train: bool = True, *, flatten: bool = False) -> TensorDataset:
    """The 8x8 handwritten digits as a ``TensorDataset`` of (image, label) pairs.

    ``train=True`` gives the fixed training split (1,437 samples), ``train=False`` the test split (360);
    the split is stored in the file (the first 360 entries of a permutation drawn once with seed 0), so
    it never changes, and each split keeps the original sample order. Images are float32 in [0, 1] (the
    pixel counts 0..16 divided by 16) of shape (1, 8, 8), or (64,) with ``flatten=True``; labels are
    int64 digits 0..9. Every call returns new tensors.
    """
    if not isinstance(train, bool):
        raise TypeError(f"digits(): argument 'train' must be bool, not {type(train).__name__}")
    if not isinstance(flatten, bool):
        raise TypeError(f"digits(): argument 'flatten' must be bool, not {type(flatten).__name__}")
    images, labels, is_test = _digits_arrays()
    rows = ~is_test if train else is_test
    x = images[rows].astype(np.float32) / 16
    x = x.reshape(-1, 64) if flatten else x.reshape(-1, 1, 8, 8)
    return TensorDataset(from_numpy(x), from_numpy(labels[rows].astype(np.int64)))
