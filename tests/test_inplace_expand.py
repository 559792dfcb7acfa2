"""Writing in place into a tensor whose elements alias each other (an expand()ed view) is refused
cleanly, as in PyTorch, and changes nothing."""

import numpy as np
import pytest

import oneflow_lite as flow


@pytest.mark.parametrize("write", [lambda t: t.add_(1), lambda t: t.mul_(2.0), lambda t: t.zero_(),
                                   lambda t: t.relu_()])
def test_inplace_write_into_expanded_view_raises(write):
    base = flow.tensor([1.0, -2.0, 3.0])
    view = base.expand(2, 3)
    with pytest.raises(RuntimeError, match=r"more than one element of the written-to tensor refers to a "
                                           r"single memory location\. Please clone\(\) the tensor"):
        write(view)
    np.testing.assert_array_equal(base.numpy(), [1.0, -2.0, 3.0])


def test_clone_of_expanded_view_can_be_written():
    view = flow.tensor([1.0, 2.0]).expand(2, 2).clone()
    view.add_(1)
    np.testing.assert_array_equal(view.numpy(), [[2.0, 3.0], [2.0, 3.0]])
