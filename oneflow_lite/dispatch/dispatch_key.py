"""Dispatch keys and key sets.

Note [Dispatch keys are priorities]
A ``DispatchKey``'s value is its priority and its bit position in a key set:
a larger value is handled first. Backend keys (one per device type) sit at the
bottom, functionality keys (lazy capture, autograd, ...) above them, so a call
passes every functionality that applies before it reaches its device. A key set
is a plain ``int`` with bit ``k`` set for key ``k``: union is ``|``, removal is
``& ~``, and the key to handle next is ``ks.bit_length() - 1``. This module
depends on nothing else in the package, so the framework layer (devices and
tensors carry key sets) may import it.

Note [Dispatch key order]
From the bottom: the backends (where the data lives); then, lowest first,

- ``Global``: carried by global tensors (one logical tensor laid over the ranks
  of a placement by an SBP, interpreters/eager_global.py). Its interpreter infers
  each op's SBP signature, boxes the inputs, and redispatches the op to the
  backend key on this rank's local pieces. It sits directly above the backends,
  so that everything above it sees logical tensors: autograd records logical
  ops (the gradient of a global op is a global op, and data parallelism falls
  out of the SBP rules), and Python modes, autocast and vmap see one program
  whatever the number of ranks. It sits below ``Lazy``, so that a graph being
  captured records the logical op and its SBP signature (as OneFlow's lazy
  interpreter does) instead of the eager boxing and the local kernels;
- ``Lazy``: graph capture sees the ops every higher key lets through, already
  differentiated, cast and decomposed, so a captured job holds what eager
  execution would run;
- ``Batched`` (vmap's key): below Autograd, so autograd records logical
  (per-sample) ops and their backward is batched in turn (per-sample gradients
  come out of ``vmap(grad(f))``), above Lazy so a graph captures the batched
  ops;
- ``Python``: dispatch modes see the ops as they run, after autograd has recorded
  them, including the ops of backward formulas (as PyTorch's ``__torch_dispatch__``);
- ``Autograd``: records the backward graph of what reaches it;
- ``Autocast``: above Autograd, so the casts it inserts are recorded and
  differentiated (float32 parameters get float32 gradients);
- ``Profiler``: the outermost, so it times each call with everything below it.

Alias keys are registration conveniences: a kernel registered at an alias key is
copied to the runtime keys the alias expands to when the dispatch table is
computed. They never appear in a key set and are never dispatched to.
"""

from __future__ import annotations

import enum


class DispatchKey(enum.IntEnum):
    # Backend keys: the device a tensor's data lives on.
    Meta = 0
    CPU = 1
    CUDA = 2  # reserved; no device type uses it yet
    PrivateUse1 = 3  # for one out-of-tree device type
    # Functionality keys, in order of priority (Note [Dispatch key order]).
    Global = 7
    Lazy = 8
    Batched = 9
    Python = 10
    Autograd = 11
    Autocast = 12
    Profiler = 13
    # Alias keys (never in a key set).
    CompositeExplicitAutograd = 32
    CompositeImplicitAutograd = 33


BACKEND_KEYS = (DispatchKey.Meta, DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.PrivateUse1)
FUNCTIONALITY_KEYS = (DispatchKey.Global, DispatchKey.Lazy, DispatchKey.Batched, DispatchKey.Python,
                      DispatchKey.Autograd, DispatchKey.Autocast, DispatchKey.Profiler)
RUNTIME_KEYS = BACKEND_KEYS + FUNCTIONALITY_KEYS
ALIAS_KEYS = (DispatchKey.CompositeExplicitAutograd, DispatchKey.CompositeImplicitAutograd)
NUM_RUNTIME_SLOTS = max(RUNTIME_KEYS) + 1

BACKEND_KEY_SET = sum(1 << k for k in BACKEND_KEYS)
FULL_KEY_SET = sum(1 << k for k in RUNTIME_KEYS)

# The runtime keys an alias key expands to (PyTorch's semantics):
# CompositeExplicitAutograd serves every backend; CompositeImplicitAutograd serves
# every backend and the Autograd key, so an op written as a composite of other
# ops is differentiated through those ops.
ALIAS_EXPANSION = {
    DispatchKey.CompositeExplicitAutograd: BACKEND_KEYS,
    DispatchKey.CompositeImplicitAutograd: BACKEND_KEYS + (DispatchKey.Autograd,),
}


def key_set(*keys: DispatchKey) -> int:
    """The key set holding ``keys``; alias keys are rejected."""
    ks = 0
    for k in keys:
        if k in ALIAS_KEYS:
            raise ValueError(f"alias key {DispatchKey(k).name} cannot be part of a dispatch key set")
        ks |= 1 << k
    return ks


def highest_key(ks: int) -> DispatchKey:
    """The highest-priority key of a non-empty key set."""
    if ks <= 0:
        raise ValueError("highest_key: the dispatch key set is empty")
    return DispatchKey(ks.bit_length() - 1)


def keys_below(key: DispatchKey) -> int:
    """The mask of every key with a lower priority than ``key``."""
    return (1 << key) - 1


def keys_of(ks: int) -> list[DispatchKey]:
    """The keys of a key set, highest first (for printing, not for dispatch)."""
    return [DispatchKey(b) for b in range(ks.bit_length() - 1, -1, -1) if ks >> b & 1]


def format_key_set(ks: int) -> str:
    return "DispatchKeySet(" + ", ".join(k.name for k in keys_of(ks)) + ")"
