"""Random number generators: ``flow.Generator``, ``flow.manual_seed`` and the
default generator of each device.

Random kernels draw from :func:`current_generator`: the generator a functor
passed for this call (``flow.rand(..., generator=g)``) or the device's default.

Note [Generator state]
``Generator.get_state()`` is NumPy's bit-generator state (a dict: it compares with ``==``);
``state_bytes()`` packs it with the initial seed into 48 bytes, the opaque uint8 "ByteTensor" of
PyTorch's ``get_rng_state`` (``flow.get_rng_state`` makes the tensor). ``set_state`` takes either.
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
        """NumPy's bit-generator state (see Note [Generator state])."""
        return self.numpy.bit_generator.state

    def set_state(self, state) -> "Generator":
        """Restore a state from ``get_state()`` or ``state_bytes()`` (any uint8 buffer of those 48 bytes, such
        as the tensor ``flow.get_rng_state()`` returns)."""
        if isinstance(state, dict):
            self.numpy.bit_generator.state = state
            return self
        try:
            raw = np.asarray(state)
        except (TypeError, ValueError, RuntimeError):
            raw = None
        if raw is None or raw.dtype != np.uint8 or raw.shape != (_STATE_BYTES,):
            shown = type(state).__name__ if raw is None else f"{raw.dtype} array of shape {raw.shape}"
            raise RuntimeError(f"Generator.set_state: expected a state from get_state() or a uint8 tensor of "
                               f"{_STATE_BYTES} bytes from get_rng_state(), got {shown}")
        words = [int.from_bytes(raw[i:i + 16].tobytes(), "little") for i in (0, 16)]
        tail = np.frombuffer(raw[32:].tobytes(), dtype="<u8")
        self.numpy.bit_generator.state = {
            "bit_generator": "PCG64", "state": {"state": words[0], "inc": words[1]},
            "has_uint32": int(tail[0] >> 32), "uinteger": int(tail[0] & 0xFFFF_FFFF)}
        self._seed = int(tail[1])
        return self

    def state_bytes(self) -> np.ndarray:
        """The state as 48 uint8 values (see Note [Generator state])."""
        st = self.numpy.bit_generator.state
        head = st["state"]["state"].to_bytes(16, "little") + st["state"]["inc"].to_bytes(16, "little")
        tail = np.array([(st["has_uint32"] << 32) | st["uinteger"], self._seed], dtype="<u8")
        return np.frombuffer(head + tail.tobytes(), dtype=np.uint8).copy()

    def __repr__(self):
        return f"<oneflow_lite.Generator device={self.device} seed={self._seed}>"


_STATE_BYTES = 48


class DefaultGenerator(Generator):
    """A device's default generator. ``flow.default_generator`` is the cpu one, as ``torch.default_generator``
    is; calling it, ``flow.default_generator(device)``, gives the default generator of ``device``, as OneFlow's
    function does."""

    def __call__(self, device="cpu") -> Generator:
        return default_generator(device)


_defaults: dict = {}
_local = threading.local()


def default_generator(device="cpu") -> Generator:
    """The default generator of ``device`` (made on first use)."""
    dev = Device(device)
    gen = _defaults.get(dev)
    if gen is None:
        gen = _defaults.setdefault(dev, DefaultGenerator(dev))
    return gen


def manual_seed(seed: int) -> Generator:
    """Seed the default generator of every device; returns the cpu one."""
    for gen in list(_defaults.values()):
        gen.manual_seed(seed)
    return default_generator("cpu").manual_seed(seed)


def initial_seed() -> int:
    """The seed the cpu default generator was last seeded with."""
    return default_generator("cpu").initial_seed()


def seed() -> int:
    """Seed every default generator from fresh entropy; returns the seed."""
    value = int(np.random.SeedSequence().entropy) & 0x7FFF_FFFF_FFFF_FFFF
    manual_seed(value)
    return value


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
