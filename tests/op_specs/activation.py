"""Activation ops."""

import numpy as np

from opinfo import NUMERIC, OpSpec, Sample, make, register, unary_shapes


def _unary_samples(low=None, high=None):
    def samples(dtype):
        for shape in unary_shapes():
            yield Sample((make(shape, dtype, low, high),), name=f"shape{shape}")
    return samples


register(
    OpSpec("relu", lambda x: np.maximum(x, x.dtype.type(0)), _unary_samples(), dtypes=NUMERIC, method="relu"),
)
