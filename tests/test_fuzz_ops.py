"""The op fuzzer in CI: every functional function, called with generated arguments (tests/fuzzing.py).

``test_fuzz`` checks that each call returns tensors whose shapes and dtypes the meta device infers too
(and whose gradients have their inputs' shapes), or raises a documented exception naming the op.
``test_parity`` (skipped without torch) runs the same calls through PyTorch and checks that both accept
or both refuse, with the same shapes, dtypes, values and gradients, except for the deviations listed in
``docs/deviations.md`` (:data:`deviations.KNOWN`).

A bounded budget runs in CI (deterministic examples); ``FLOW_FUZZ_EXAMPLES=N`` runs N random examples
per function, ``FLOW_FUZZ_OPS=a,b`` only some functions; ``python tests/fuzzing.py --help`` runs many
without stopping and prints the failures grouped by cause.
"""

import os
import re
from pathlib import Path

import pytest
from fuzzing import (
    FUZZ_ALLOCATION_LIMIT,
    FUZZ_SETTINGS,
    Call,
    TensorArg,
    check_call,
    draw_call,
    examples,
    selected_names,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from oneflow_lite.interpreters.eager_local import set_allocation_limit

try:
    import torch
except ImportError:  # pragma: no cover - the parity test is optional
    torch = None

RANDOM_RUN = "FLOW_FUZZ_EXAMPLES" in os.environ
FUZZ = settings(max_examples=examples(10), derandomize=not RANDOM_RUN, **FUZZ_SETTINGS)
PARITY = settings(max_examples=examples(6), derandomize=not RANDOM_RUN, **FUZZ_SETTINGS)


@pytest.fixture(autouse=True, scope="module")
def _allocation_limit():
    previous = set_allocation_limit(FUZZ_ALLOCATION_LIMIT)
    yield
    set_allocation_limit(previous)


@pytest.mark.parametrize("name", selected_names())
@FUZZ
@given(data=st.data())
def test_fuzz(name, data):
    call = draw_call(data.draw, name)
    outcome = check_call(call)
    assert outcome.kind != "failure", f"{call!r}\n{outcome.group}\n{outcome.detail}"


@pytest.mark.skipif(torch is None, reason="the parity test needs torch")
@pytest.mark.parametrize("name", selected_names())
@PARITY
@given(data=st.data())
def test_parity(name, data):
    from deviations import known
    from parity import DISAGREEMENTS, check_parity

    call = draw_call(data.draw, name)
    outcome = check_parity(call)
    if outcome.kind in DISAGREEMENTS:
        assert known(call, outcome) is not None, (f"{call!r}\n{outcome.kind}: {outcome.group}\n{outcome.detail}\n"
                                                  f"(fix it, or list it in docs/deviations.md and "
                                                  f"tests/deviations.py with the reason)")


def test_every_kept_deviation_is_documented():
    from deviations import KNOWN

    text = (Path(__file__).parent.parent / "docs" / "deviations.md").read_text()
    missing = [d.id for d in KNOWN if f"`{d.id}`" not in text]
    assert missing == [], f"deviations without a section in docs/deviations.md: {missing}"


def test_the_fuzzer_finds_what_it_is_for(monkeypatch):
    """A broken op is caught: an exception type nobody documented, and a message that names no op."""
    import numpy as np

    import oneflow_lite as flow

    x = TensorArg(np.ones(3, np.float32), flow.float32, (3,))
    good = check_call(Call("relu", [x], {}))
    assert good.kind == "result" and tuple(good.outputs[0].shape) == (3,)
    assert check_call(Call("relu", ["abc"], {})).kind == "error"

    def raises(exc):
        def fn(*args, **kwargs):
            raise exc
        return fn

    monkeypatch.setattr(flow, "relu", raises(KeyError("x")))
    assert check_call(Call("relu", [x], {})).group.startswith("cpu: undocumented exception KeyError")
    monkeypatch.setattr(flow, "relu", raises(ValueError("operands could not be broadcast together")))
    assert re.search("message names no op", check_call(Call("relu", [x], {})).group)
