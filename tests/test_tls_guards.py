"""Thread-local included / excluded key sets and their guards."""

import threading

import pytest

from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import DispatchKey as K
from oneflow_lite.dispatch.dispatch_key import key_set

AUTOGRAD = 1 << K.Autograd
LAZY = 1 << K.Lazy
PYTHON = 1 << K.Python


def test_initial_state_is_empty():
    assert tls.included() == 0 and tls.excluded() == 0


def test_include_and_exclude_guards_set_and_restore():
    with tls.IncludeDispatchKeyGuard(K.Autograd):
        assert tls.included() == AUTOGRAD and tls.excluded() == 0
        with tls.ExcludeDispatchKeyGuard([K.Lazy, K.Python]):
            assert tls.included() == AUTOGRAD and tls.excluded() == LAZY | PYTHON
        assert tls.excluded() == 0
    assert tls.included() == 0


def test_nesting_adds_and_restores_each_level():
    seen = []
    with tls.IncludeDispatchKeyGuard(K.Lazy):
        seen.append(tls.included())
        with tls.IncludeDispatchKeyGuard(K.Autograd):
            seen.append(tls.included())
            with tls.IncludeDispatchKeyGuard(K.Lazy):  # already included: no change, and exit keeps it
                seen.append(tls.included())
            seen.append(tls.included())
        seen.append(tls.included())
    seen.append(tls.included())
    assert seen == [LAZY, LAZY | AUTOGRAD, LAZY | AUTOGRAD, LAZY | AUTOGRAD, LAZY, 0]


def test_force_guard_replaces_both_sets():
    with tls.IncludeDispatchKeyGuard(K.Autograd), tls.ExcludeDispatchKeyGuard(K.Lazy):
        with tls.ForceDispatchKeyGuard(key_set(K.Python), 0):
            assert (tls.included(), tls.excluded()) == (PYTHON, 0)
        assert (tls.included(), tls.excluded()) == (AUTOGRAD, LAZY)
    assert (tls.included(), tls.excluded()) == (0, 0)


def test_guards_accept_key_sets_and_iterables():
    with tls.ExcludeDispatchKeyGuard(AUTOGRAD | LAZY):
        assert tls.excluded() == AUTOGRAD | LAZY
    with tls.IncludeDispatchKeyGuard((K.Lazy, K.Python)):
        assert tls.included() == LAZY | PYTHON


def test_guard_rejects_alias_key_and_changes_nothing():
    with pytest.raises(ValueError, match="alias key CompositeImplicitAutograd cannot be part of a dispatch key set"):
        tls.IncludeDispatchKeyGuard(K.CompositeImplicitAutograd)
    assert (tls.included(), tls.excluded()) == (0, 0)


@pytest.mark.parametrize("guard", [
    lambda: tls.IncludeDispatchKeyGuard(K.Autograd),
    lambda: tls.ExcludeDispatchKeyGuard(K.Autograd),
    lambda: tls.ForceDispatchKeyGuard(PYTHON, LAZY),
])
def test_guards_restore_state_when_an_exception_passes(guard):
    with tls.IncludeDispatchKeyGuard(K.Lazy):
        before = (tls.included(), tls.excluded())
        with pytest.raises(KeyError, match="boom"):
            with guard():
                with tls.ExcludeDispatchKeyGuard(K.Python):
                    assert (tls.included(), tls.excluded()) != before
                    raise KeyError("boom")
        assert (tls.included(), tls.excluded()) == before
    assert (tls.included(), tls.excluded()) == (0, 0)


def test_exit_restores_even_when_body_changed_state_directly():
    # A guard restores the state it saw on entry, not "state minus its keys".
    with tls.ExcludeDispatchKeyGuard(K.Lazy):
        tls.set_included(AUTOGRAD)
    assert (tls.included(), tls.excluded()) == (0, 0)
    assert tls.ACTIVE[0] == 0


def test_threads_do_not_see_each_others_keys():
    """Two threads hold different guards at the same time; each sees only its own."""
    both_inside = threading.Barrier(3)
    checked = threading.Barrier(3)
    results = {}

    def worker(name, guard_factory, expected):
        with guard_factory():
            both_inside.wait(timeout=10)
            results[name] = (tls.included(), tls.excluded()) == expected
            checked.wait(timeout=10)
        results[name + "_after"] = (tls.included(), tls.excluded()) == (0, 0)

    t1 = threading.Thread(target=worker, args=("a", lambda: tls.IncludeDispatchKeyGuard(K.Autograd), (AUTOGRAD, 0)))
    t2 = threading.Thread(target=worker, args=("b", lambda: tls.ExcludeDispatchKeyGuard(K.Lazy), (0, LAZY)))
    t1.start()
    t2.start()
    with tls.IncludeDispatchKeyGuard(K.Python):
        both_inside.wait(timeout=10)
        main_view = (tls.included(), tls.excluded())
        checked.wait(timeout=10)
    t1.join()
    t2.join()
    assert main_view == (PYTHON, 0)
    assert results == {"a": True, "b": True, "a_after": True, "b_after": True}


def test_new_thread_starts_empty_while_main_holds_a_guard():
    seen = []
    with tls.IncludeDispatchKeyGuard(K.Autograd), tls.ExcludeDispatchKeyGuard(K.Lazy):
        t = threading.Thread(target=lambda: seen.append((tls.included(), tls.excluded())))
        t.start()
        t.join()
    assert seen == [(0, 0)]


def test_guard_in_thread_exception_does_not_leak_into_other_thread():
    started, release = threading.Event(), threading.Event()
    errors = []

    def failing():
        try:
            with tls.IncludeDispatchKeyGuard(K.Autograd):
                started.set()
                release.wait(timeout=10)
                raise RuntimeError("in thread")
        except RuntimeError as e:
            errors.append((str(e), tls.included()))

    t = threading.Thread(target=failing)
    t.start()
    started.wait(timeout=10)
    assert tls.included() == 0
    release.set()
    t.join()
    assert errors == [("in thread", 0)]
    assert tls.included() == 0


def test_active_counts_the_threads_whose_sets_are_not_empty():
    """Note [Threads with changed key sets]: dispatch skips the thread-local reads when the count is 0."""
    assert tls.ACTIVE[0] == 0
    inside, release = threading.Barrier(2), threading.Event()
    counts = []

    def worker():
        with tls.ExcludeDispatchKeyGuard(K.Lazy):
            inside.wait(timeout=10)
            release.wait(timeout=10)

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(timeout=10)
    counts.append(tls.ACTIVE[0])  # the worker only
    with tls.IncludeDispatchKeyGuard(K.Python):
        counts.append(tls.ACTIVE[0])  # both
        with tls.ExcludeDispatchKeyGuard(K.Autograd):  # the same thread again: still counted once
            counts.append(tls.ACTIVE[0])
        tls.set_keys(0, 0)  # emptied inside the guard: no longer counted
        counts.append(tls.ACTIVE[0])
    counts.append(tls.ACTIVE[0])
    release.set()
    t.join()
    assert counts == [1, 2, 2, 1, 1] and tls.ACTIVE[0] == 0


def test_a_thread_in_no_grad_does_not_change_what_another_thread_records():
    import numpy as np

    import oneflow_lite as flow

    x = flow.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    inside, done = threading.Barrier(2), threading.Barrier(2)
    seen = {}

    def worker():
        with flow.no_grad():
            inside.wait(timeout=10)
            seen["worker"] = (x * 2).requires_grad
            done.wait(timeout=10)

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(timeout=10)
    seen["main"] = (x * 2).requires_grad  # while the worker's no_grad is active
    done.wait(timeout=10)
    t.join()
    assert seen == {"worker": False, "main": True} and tls.ACTIVE[0] == 0
