"""``flow.random`` (PyTorch's ``torch.random``): seeding and state of the cpu default generator, and
``fork_rng`` to run a block without disturbing it."""

from __future__ import annotations

import contextlib

from oneflow_lite.framework.generator import default_generator, initial_seed, manual_seed, seed
from oneflow_lite.functors.creation import get_rng_state, set_rng_state

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, device_type: str = "cpu"):
    """Run the block with the cpu default generator's state saved on entry and restored on exit (draws
    inside do not change what comes after). ``devices`` is accepted for PyTorch's signature; only cpu
    has a generator here."""
    if not enabled:
        yield
        return
    gen = default_generator("cpu")
    state = gen.state_bytes()  # with the initial seed (Note [Generator state])
    try:
        yield
    finally:
        gen.set_state(state)
