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

# Note [Pending fuzz failures]
# Functions that still fail test_fuzz / test_parity, with the reason (issues #17, #20). They are skipped by
# test_fuzz / test_parity, and test_pending_{fuzz,parity}_entries_still_fail assert each one still fails: the lists
# can only shrink (a function fixed must be removed from its list). Never add a function that passes today.
FUZZ_PENDING: dict[str, str] = {}
PARITY_PENDING: dict[str, str] = {}

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
    if name in FUZZ_PENDING and name not in _RUNNING_PENDING:
        pytest.skip(f"pending: {FUZZ_PENDING[name]}")
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

    if name in PARITY_PENDING and name not in _RUNNING_PENDING:
        pytest.skip(f"pending: {PARITY_PENDING[name]}")
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


_RUNNING_PENDING = []  # set while test_pending_* run test_fuzz / test_parity on a pending entry


def _fails(test, name) -> bool:
    """Whether ``test`` (test_fuzz or test_parity, with their own derandomized draws) fails for ``name``."""
    _RUNNING_PENDING.append(name)
    try:
        test(name=name)
    except AssertionError:
        return True
    finally:
        _RUNNING_PENDING.pop()
    return False


@pytest.mark.parametrize("name", sorted(FUZZ_PENDING))
def test_pending_fuzz_entries_still_fail(name):
    """Note [Pending fuzz failures]: a pending function that passes must leave FUZZ_PENDING."""
    assert _fails(test_fuzz, name), f"{name} passes test_fuzz now: remove it from FUZZ_PENDING"


@pytest.mark.skipif(torch is None, reason="the parity test needs torch")
@pytest.mark.parametrize("name", sorted(PARITY_PENDING))
def test_pending_parity_entries_still_fail(name):
    assert _fails(test_parity, name), f"{name} passes test_parity now: remove it from PARITY_PENDING"
