"""Random number generators: ``flow.Generator``, ``flow.manual_seed`` and the
default generator of each device.

Random kernels draw from :func:`current_generator`: the generator a functor
passed for this call (``flow.rand(..., generator=g)``) or the device's default.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from oneflow_lite.framework.device import device as Device

_DEFAULT_SEED = 67280421310721


class Generator:
    """A seedable source of random numbers for one device (NumPy's PCG64 underneath)."""

    def __init__(self, device="cpu"):
        self.device = Device(device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed: int) -> "Generator":
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"manual_seed: expected an int seed, got {type(seed).__name__}")
        self._seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self.numpy = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        """Reseed from fresh entropy and return the new seed."""
        seed = int(np.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        return self.numpy.bit_generator.state

    def set_state(self, state) -> "Generator":
        self.numpy.bit_generator.state = state
        return self

    def __repr__(self):
        return f"<oneflow_lite.Generator device={self.device} seed={self._seed}>"


_defaults: dict = {}
_local = threading.local()


def default_generator(device="cpu") -> Generator:
    """The default generator of ``device`` (made on first use)."""
    dev = Device(device)
    gen = _defaults.get(dev)
    if gen is None:
        gen = _defaults.setdefault(dev, Generator(dev))
    return gen


def manual_seed(seed: int) -> Generator:
    """Seed the default generator of every device; returns the cpu one."""
    for gen in list(_defaults.values()):
        gen.manual_seed(seed)
    return default_generator("cpu").manual_seed(seed)


def initial_seed() -> int:
    return default_generator("cpu").initial_seed()


@contextlib.contextmanager
def using_generator(gen: Generator | None):
    """Make ``gen`` the generator random kernels draw from in this thread (None: the default)."""
    prev = getattr(_local, "gen", None)
    _local.gen = gen
    try:
        yield
    finally:
        _local.gen = prev


def current_generator(device) -> Generator:
    """The generator a random kernel on ``device`` should draw from now."""
    gen = getattr(_local, "gen", None)
    return gen if gen is not None else default_generator(device)
