"""``flow.random`` (PyTorch's ``torch.random``): seeding and state of the cpu default generator, and
``fork_rng`` to run a block without disturbing it; ``thread_safe_generator`` for DataLoader workers."""

from __future__ import annotations

import contextlib

from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.generator import current_generator, default_generator, initial_seed, manual_seed, seed
from oneflow_lite.functors.creation import get_rng_state, set_rng_state
from oneflow_lite.utils.data.dataloader import get_worker_info

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state",
           "thread_safe_generator"]
_CPU = Device("cpu")


def thread_safe_generator():
    """The generator of the DataLoader worker calling it (each worker thread has its own, seeded from the
    loader's base seed and the worker id), so that random transforms in workers neither share nor race on
    the default generator; None outside workers (the default generator is used)."""
    if get_worker_info() is None:
        return None
    return current_generator(_CPU)


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
