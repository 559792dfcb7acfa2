"""DispatchKey priorities, key sets as int bitsets, alias keys, highest key and keys_below."""

import pytest

from oneflow_lite.dispatch import dispatch_key as dk
from oneflow_lite.dispatch.dispatch_key import DispatchKey as K


def test_value_is_priority_backends_below_functionality_below_alias():
    assert K.Meta < K.CPU < K.CUDA < K.PrivateUse1
    assert K.Global < K.Lazy < K.Batched < K.Python < K.Autograd < K.Autocast < K.Profiler  # Note [Dispatch key order]
    assert K.Global == max(dk.BACKEND_KEYS) + 4  # directly above the backends' room
    assert max(dk.BACKEND_KEYS) < min(dk.FUNCTIONALITY_KEYS)
    assert max(dk.RUNTIME_KEYS) < min(dk.ALIAS_KEYS)
    assert set(dk.RUNTIME_KEYS) | set(dk.ALIAS_KEYS) == set(K)
    assert set(dk.RUNTIME_KEYS).isdisjoint(dk.ALIAS_KEYS)


def test_key_set_is_an_int_bitset():
    ks = dk.key_set(K.CPU, K.Autograd)
    assert type(ks) is int
    assert ks == (1 << 1) | (1 << 11)
    assert dk.key_set() == 0
    assert dk.key_set(K.CPU, K.CPU) == 2
    # union, removal, membership are plain bit operations
    assert ks | dk.key_set(K.Lazy) == 0b100100000010
    assert ks & ~dk.key_set(K.Autograd) == 0b10
    assert ks >> K.Autograd & 1 and not ks >> K.Lazy & 1


@pytest.mark.parametrize("alias", [K.CompositeImplicitAutograd, K.CompositeExplicitAutograd])
def test_alias_keys_are_never_in_a_key_set(alias):
    with pytest.raises(ValueError, match=f"alias key {alias.name} cannot be part of a dispatch key set"):
        dk.key_set(K.CPU, alias)
    assert all(not dk.FULL_KEY_SET >> a & 1 for a in dk.ALIAS_KEYS)


def test_highest_key_by_bit_length():
    assert dk.highest_key(dk.key_set(K.Meta)) is K.Meta
    assert dk.highest_key(dk.key_set(K.CPU, K.Meta)) is K.CPU
    assert dk.highest_key(dk.key_set(K.CPU, K.Autograd, K.Lazy)) is K.Autograd
    assert dk.highest_key(dk.key_set(K.PrivateUse1, K.Profiler, K.Python)) is K.Profiler
    assert dk.highest_key(dk.FULL_KEY_SET) is K.Profiler
    for key in dk.RUNTIME_KEYS:
        assert dk.highest_key(dk.key_set(key) | dk.keys_below(key)) is key
    with pytest.raises(ValueError, match="highest_key: the dispatch key set is empty"):
        dk.highest_key(0)


def test_keys_below():
    assert dk.keys_below(K.Meta) == 0
    assert dk.keys_below(K.CPU) == dk.key_set(K.Meta)
    below_autograd = dk.FULL_KEY_SET & dk.keys_below(K.Autograd)
    assert dk.keys_of(below_autograd) == [K.Python, K.Batched, K.Lazy, K.Global, K.PrivateUse1, K.CUDA, K.CPU,
                                           K.Meta]
    ks = dk.key_set(K.Autograd, K.Lazy, K.CPU)
    assert ks & dk.keys_below(K.Autograd) == dk.key_set(K.Lazy, K.CPU)
    assert ks & dk.keys_below(K.Lazy) == dk.key_set(K.CPU)
    # a global tensor's keys: the Global interpreter redispatches to its backend
    assert dk.key_set(K.Global, K.CPU) & dk.keys_below(K.Global) == dk.key_set(K.CPU)


def test_keys_of_and_format():
    ks = dk.key_set(K.CPU, K.Autograd, K.Meta)
    assert dk.keys_of(ks) == [K.Autograd, K.CPU, K.Meta]
    assert dk.format_key_set(ks) == "DispatchKeySet(Autograd, CPU, Meta)"
    assert dk.format_key_set(0) == "DispatchKeySet()"


def test_alias_expansion():
    assert dk.ALIAS_EXPANSION[K.CompositeExplicitAutograd] == (K.Meta, K.CPU, K.CUDA, K.PrivateUse1)
    assert dk.ALIAS_EXPANSION[K.CompositeImplicitAutograd] == (K.Meta, K.CPU, K.CUDA, K.PrivateUse1, K.Autograd)


def test_devices_carry_their_backend_key():
    import oneflow_lite as flow
    assert flow.device("cpu").key_set == dk.key_set(K.CPU)
    assert flow.device("meta").key_set == dk.key_set(K.Meta)
