"""Shared test fixtures."""

import numpy as np
import pytest

import oneflow_lite as flow


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    flow.manual_seed(0)
    np.random.seed(0)
    yield
