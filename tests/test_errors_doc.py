"""docs/errors.md: every example raises the exception shown, with a message starting as shown."""

import io
import re
from pathlib import Path

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework import errors, op_registry

DOC = Path(__file__).parent.parent / "docs" / "errors.md"
EXAMPLE = re.compile(r"```python\n>>> (?P<code>.*?)\n(?P<type>\w+(?:\.\w+)?): (?P<message>.*?)\n```")
EXAMPLES = [m.groupdict() for m in EXAMPLE.finditer(DOC.read_text())]


def test_the_document_has_examples_of_every_type():
    shown = {e["type"] for e in EXAMPLES}
    assert shown >= {"TypeError", "ValueError", "IndexError", "RuntimeError", "NotImplementedError", "MemoryError",
                     "OpKernelNotFoundError", "RegistrationError", "OpDefinitionError", "KernelContractError"}
    for name in ("OpKernelNotFoundError", "DispatchError", "RegistrationError", "KernelContractError"):
        assert hasattr(errors, name) and f"### {name}" in DOC.read_text()


@pytest.fixture
def namespace():
    with flow.library.scoped("errdoc"):
        flow.library.define("errdoc::bad(Tensor x) -> Tensor")
        flow.library.impl("errdoc::bad", "cpu", lambda x: x[:1])  # a kernel breaking its op's contract
        flow.library.register_fake("errdoc::bad", lambda x: flow.empty_like(x))
        yield {"flow": flow, "np": np, "io": io, "op_registry": op_registry, "DISPATCHER": DISPATCHER}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["code"][:60] for e in EXAMPLES])
def test_each_example_raises_what_the_document_says(example, namespace):
    with pytest.raises(Exception) as info:
        eval(example["code"], namespace)
    assert type(info.value).__name__ == example["type"].rpartition(".")[2]
    expected = example["message"]
    message = str(info.value)
    if expected.endswith("..."):
        assert message.startswith(expected[:-3].rstrip()), message
    else:
        assert message.splitlines()[0] == expected


def test_numpy_warnings_never_reach_the_caller_even_as_errors():
    """Note [NumPy warnings in kernels]: IEEE results without RuntimeWarnings, also under ``-W error``."""
    import math
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = flow.tensor([math.inf, 1.0, -1.0])
        for _ in range(2):  # the first call takes the general path, the second the fast path
            assert np.isnan((x * 0.0).numpy()[0]) and np.isnan(flow.mul(x, flow.zeros(3)).numpy()[0])
            assert flow.exp(flow.tensor([1000.0])).numpy().tolist() == [math.inf]
        y = x.clone()
        y.mul_(0.0)  # in place: a writer that writes everything before NumPy warns
        z = x.clone()
        z.mul_(flow.zeros(3))
        assert np.isnan(y.numpy()[0]) and np.isnan(z.numpy()[0]) and y.numpy()[1:].tolist() == [0.0, -0.0]
