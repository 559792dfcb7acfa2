"""The dispatcher: registration commutes, removal restores, newest wins, failed registrations
change nothing, handles, handlers actually run, fallthrough, missing handlers, thread safety.

In the style of PyTorch's test/test_dispatch.py ``commute``: fresh test ops, a list of
registrations applied in every order, and the text of ``dump_table`` compared.
"""

import itertools
import re
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch import dump, dump_table, fallbacks
from oneflow_lite.dispatch.dispatch_key import FUNCTIONALITY_KEYS, key_set, keys_below
from oneflow_lite.dispatch.dispatch_key import DispatchKey as K
from oneflow_lite.dispatch.dispatcher import DISPATCHER, fallthrough
from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.dispatch.tls import ExcludeDispatchKeyGuard, IncludeDispatchKeyGuard
from oneflow_lite.framework.errors import DispatchError, RegistrationError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.interpreters.eager_local import eager_local_interpreter
from oneflow_lite.interpreters.op_interp_util import dispatch, redispatch

_ids = itertools.count()

# Two functionality keys for test fallbacks and "missing" checks: those no fallback of the package serves
# first, then the highest. The package's fallbacks at them (interpreters registered at these keys) are set
# aside while each test runs (fixture ``spare_keys``), so such interpreters do not change these tests.
_SPARE = sorted(FUNCTIONALITY_KEYS, key=lambda k: (k not in DISPATCHER.fallbacks(), k))
FALLBACK_KEY, FALLTHROUGH_KEY = _SPARE[-1], _SPARE[-2]


@pytest.fixture(autouse=True)
def spare_keys():
    """No fallback at FALLBACK_KEY and FALLTHROUGH_KEY while a test runs; the package's are put back after."""
    aside = {k: DISPATCHER.fallbacks().get(k, []) for k in (FALLBACK_KEY, FALLTHROUGH_KEY)}
    for regs in aside.values():
        for reg in reversed(regs):
            reg.remove()
    yield
    for key, regs in aside.items():
        for reg in regs:
            DISPATCHER.register_fallback(key, reg.fn, location=reg.location)


def _tensor(values, dtype=flow.float32, device="cpu"):
    dev = flow.device(device)
    a = np.asarray(values, dtype=dtype.np_dtype)
    return Tensor._make(a if dev.device_type.has_storage else None, make_meta(a.shape, dtype, dev))


def _line():
    """The line number of the caller's next line."""
    return sys._getframe(1).f_lineno + 1


@pytest.fixture
def op():
    """A fresh unary test op ``x -> y`` with no kernels; everything registered for it must be removed."""
    name = f"dispatch_test_op_{next(_ids)}"
    definition = register_user_op(name, inputs=["x"], outputs=["y"],
                                  infer_shape=lambda ctx: ctx.shape("x"), infer_dtype=lambda ctx: ctx.dtype("x"))
    yield name
    entry = DISPATCHER.entry(name)
    leftover = (dict(entry.impls), dict(entry.kernels))
    definition.remove()
    assert leftover == ({}, {}), "a test left registrations behind"


def _row(table, key):
    """The line of ``key`` in a dump_table text."""
    return next(line for line in table.splitlines() if line.startswith(key + ":"))


def _expr(op_type):
    return OpBuilder(op_type).input("x").output("y").build()


# ---- handlers used as registrations (distinct names so the dumps tell them apart) -----------------
def h_cpu(op_expr, ks, inputs, attrs, outputs):
    return ("h_cpu",)


def h_meta(op_expr, ks, inputs, attrs, outputs):
    return ("h_meta",)


def h_autograd(op_expr, ks, inputs, attrs, outputs):
    return ("h_autograd",)


def h_implicit(op_expr, ks, inputs, attrs, outputs):
    return ("h_implicit",)


def h_explicit(op_expr, ks, inputs, attrs, outputs):
    return ("h_explicit",)


def h_fallback(op_expr, ks, inputs, attrs, outputs):
    return ("h_fallback",)


def k_cpu(ctx, x):
    return x


def k_cpu_double(ctx, x):
    return x * 2


def k_meta(ctx, x):
    return None


# name -> function registering it for op type ``o`` and returning the handle
REGISTRATIONS = {
    "impl CPU": lambda o: DISPATCHER.register_impl(o, K.CPU, h_cpu),
    "impl Meta": lambda o: DISPATCHER.register_impl(o, K.Meta, h_meta),
    "impl Autograd": lambda o: DISPATCHER.register_impl(o, K.Autograd, h_autograd),
    "alias CompositeImplicitAutograd": lambda o: DISPATCHER.register_impl(o, K.CompositeImplicitAutograd, h_implicit),
    "alias CompositeExplicitAutograd": lambda o: DISPATCHER.register_impl(o, K.CompositeExplicitAutograd, h_explicit),
    "fallthrough Python": lambda o: DISPATCHER.register_impl(o, K.Python, fallthrough),
    "fallback": lambda o: DISPATCHER.register_fallback(FALLBACK_KEY, h_fallback),
    "fallthrough fallback": lambda o: DISPATCHER.register_fallback(FALLTHROUGH_KEY, fallthrough),
    "kernel cpu": lambda o: DISPATCHER.register_kernel(o, "cpu", k_cpu),
    "kernel cpu priority 3": lambda o: DISPATCHER.register_kernel(o, "cpu", k_cpu_double, priority=3,
                                                                   predicate=dtype_in("x", flow.float32)),
    "kernel meta": lambda o: DISPATCHER.register_kernel(o, "meta", k_meta, predicate=dtype_in("x", flow.float32)),
}


def _state(op_type, with_dump=True):
    """What introspection shows. ``dump`` lists registrations in registration order, so it is
    compared only where no two registrations share a key or a device."""
    return dump_table(op_type), dump(op_type) if with_dump else "", fallbacks(), dump_table("relu")


def _commute(op_type, names, with_dump=True):
    """Register ``names`` in every order; after each step the state equals the state of the same
    set registered in a canonical order. Removing them (in every order, as the permutations run)
    brings back, after each removal, the state of the set that remains, and finally the start."""
    _state = globals()["_state"]
    if not with_dump:
        def _state(o):
            return globals()["_state"](o, with_dump=False)
    start = _state(op_type)
    expected = {}
    for r in range(len(names) + 1):
        for subset in itertools.combinations(sorted(names), r):
            handles = [REGISTRATIONS[n](op_type) for n in subset]
            expected[frozenset(subset)] = _state(op_type)
            for h in reversed(handles):
                h.remove()
            assert _state(op_type) == start
    assert len(set(expected.values())) == len(expected), "every subset should give a different table"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # registrations at different keys never warn
        for order in itertools.permutations(names):
            handles, done = {}, set()
            for n in order:
                handles[n] = REGISTRATIONS[n](op_type)
                done.add(n)
                assert _state(op_type) == expected[frozenset(done)], f"registering {order} up to {n}"
            for n in order:  # removal in this permutation's order: over all permutations, every order
                handles[n].remove()
                done.discard(n)
                assert _state(op_type) == expected[frozenset(done)], f"removing {order} up to {n}"
    assert _state(op_type) == start


def test_registration_commutes_and_removal_restores_op_level(op):
    _commute(op, ["impl CPU", "alias CompositeImplicitAutograd", "alias CompositeExplicitAutograd",
                  "fallthrough Python", "kernel cpu", "kernel meta"])


def test_registration_commutes_and_removal_restores_with_fallbacks(op):
    _commute(op, ["impl Meta", "impl Autograd", "alias CompositeImplicitAutograd", "fallback",
                  "fallthrough fallback", "kernel cpu priority 3"])


def test_registration_commutes_for_kernels_of_one_device_with_different_priorities(op):
    _commute(op, ["kernel cpu", "kernel cpu priority 3", "impl CPU"], with_dump=False)


def test_dump_table_text(op):
    regs = [REGISTRATIONS[n](op) for n in ("impl Autograd", "alias CompositeExplicitAutograd", "fallthrough Python",
                                           "kernel cpu", "kernel cpu priority 3")]
    here = f"tests/test_dispatcher.py:{REGISTRATIONS['impl Autograd'].__code__.co_firstlineno}"
    try:
        lines = dump_table(op).splitlines()
        by_key = {line.split(":")[0]: line for line in lines if not line.startswith(" ")}
        assert list(by_key) == ["Meta", "CPU", "CUDA", "PrivateUse1", "Global", "Lazy", "Batched", "Python",
                                "Autograd", "Autocast", "Profiler"]
        assert by_key["CPU"].startswith("CPU: h_explicit [from alias CompositeExplicitAutograd] registered at tests/")
        assert by_key["Autograd"].startswith("Autograd: h_autograd [kernel] registered at tests/test_dispatcher.py:")
        assert by_key["Python"].startswith("Python: fallthrough [fallthrough] registered at tests/test_dispatcher.py:")
        assert by_key[FALLBACK_KEY.name] == f"{FALLBACK_KEY.name}: [missing]"
        cpu_at = lines.index(by_key["CPU"])
        assert lines[cpu_at + 1].startswith("    kernel[cpu]: k_cpu_double [dtype(x) in {float32}] priority=3 "
                                            "registered at tests/test_dispatcher.py:")
        assert lines[cpu_at + 2].startswith("    kernel[cpu]: k_cpu [any dtype] priority=0 registered at tests/")
        assert lines[cpu_at + 3].startswith("CUDA:")
        assert by_key["Autograd"] == f"Autograd: h_autograd [kernel] registered at {here}"  # the lambda's line
        d = dump(op).splitlines()
        assert d[0] == f"name: {op}"
        assert d[1] == f"schema: {op}(Tensor x) -> (Tensor y)"
        assert d[2].startswith("debug: registered at tests/test_dispatcher.py:")
        assert [line.split(" registered at ")[0] for line in d[3:]] == [
            "Python: fallthrough", "Autograd: h_autograd", "CompositeExplicitAutograd[alias]: h_explicit",
            "kernel[cpu]: k_cpu [any dtype] priority=0", "kernel[cpu]: k_cpu_double [dtype(x) in {float32}] priority=3"]
        assert all(line.split(" registered at ")[1].startswith("tests/test_dispatcher.py:") for line in d[3:])
    finally:
        for r in regs:
            r.remove()


def test_dump_of_unknown_op_is_an_error():
    with pytest.raises(RuntimeError, match="dump_table: no op type 'no_such_op' is defined or has registrations"):
        dump_table("no_such_op")
    with pytest.raises(RuntimeError, match="dump: no op type 'no_such_op' is defined or has registrations"):
        dump("no_such_op")
    assert "no_such_op" not in DISPATCHER.op_types()


def test_alias_resolution(op):
    with DISPATCHER.register_impl(op, K.CompositeImplicitAutograd, h_implicit):
        table = dump_table(op)
        for key in ("Meta", "CPU", "CUDA", "PrivateUse1", "Autograd"):
            assert f"\n{key}: h_implicit [from alias CompositeImplicitAutograd]" in "\n" + table
        # A backend handler of its own: the op is differentiated as a whole, so Autograd no longer decomposes.
        with DISPATCHER.register_impl(op, K.CPU, h_cpu):
            table = dump_table(op)
            assert "\nCPU: h_cpu [kernel]" in table
            assert _row(table, "Autograd") == _row(dump_table("relu"), "Autograd")  # the package's own, if any
            assert "\nMeta: h_implicit [from alias CompositeImplicitAutograd]" in "\n" + table
        # An explicit composite beats the implicit one on backends, and also stops the Autograd decomposition.
        with DISPATCHER.register_impl(op, K.CompositeExplicitAutograd, h_explicit):
            table = dump_table(op)
            assert "\nCPU: h_explicit [from alias CompositeExplicitAutograd]" in table
            assert _row(table, "Autograd") == _row(dump_table("relu"), "Autograd")
        assert "\nAutograd: h_implicit [from alias CompositeImplicitAutograd]" in dump_table(op)


def test_alias_handler_is_dispatched_to(op):
    x = _tensor([1.0])
    with DISPATCHER.register_impl(op, K.CompositeExplicitAutograd, h_explicit):
        assert dispatch(_expr(op), (x,)) == ("h_explicit",)
        assert dispatch(_expr(op), (_tensor([1.0], device="meta"),)) == ("h_explicit",)


def test_newest_wins_removing_newest_restores_and_override_warns(op):
    e, x = _expr(op), _tensor([1.0])
    first_line = _line()
    r1 = DISPATCHER.register_impl(op, K.CPU, h_cpu)
    assert dispatch(e, (x,)) == ("h_cpu",)
    second_line = _line() + 1
    with pytest.warns(UserWarning) as record:
        r2 = DISPATCHER.register_impl(op, K.CPU, h_meta)
    message = str(record[0].message)
    assert message == (f"Overriding a previously registered handler for op '{op}' at dispatch key CPU\n"
                       f"  previous: h_cpu registered at tests/test_dispatcher.py:{first_line}\n"
                       f"  new: h_meta registered at tests/test_dispatcher.py:{second_line}")
    assert record[0].filename == __file__ and record[0].lineno == second_line
    assert dispatch(e, (x,)) == ("h_meta",)
    r2.remove()
    assert dispatch(e, (x,)) == ("h_cpu",)
    assert f"CPU: h_cpu [kernel] registered at tests/test_dispatcher.py:{first_line}" in dump_table(op)
    r1.remove()
    assert "\nCPU: eager_local_interpreter [fallback]" in dump_table(op)


def test_removing_an_older_registration_keeps_the_newest(op):
    e, x = _expr(op), _tensor([1.0])
    r1 = DISPATCHER.register_impl(op, K.CPU, h_cpu)
    with pytest.warns(UserWarning, match=r"previous: h_cpu registered at tests/test_dispatcher\.py:\d+"):
        r2 = DISPATCHER.register_impl(op, K.CPU, h_meta)
    r1.remove()
    assert dispatch(e, (x,)) == ("h_meta",)
    assert [line for line in dump(op).splitlines() if line.startswith("CPU")][0].startswith("CPU: h_meta")
    r2.remove()
    assert DISPATCHER.entry(op).impls == {}


def test_fallback_override_warns_naming_both_sites(op):
    with pytest.warns(UserWarning) as record:
        line = _line()
        reg = DISPATCHER.register_fallback(K.CPU, h_cpu)
    try:
        assert re.fullmatch(r"Overriding a previously registered fallback at dispatch key CPU\n"
                            r"  previous: eager_local_interpreter registered at "
                            r"oneflow_lite/interpreters/eager_local\.py:\d+\n"
                            rf"  new: h_cpu registered at tests/test_dispatcher\.py:{line}", str(record[0].message))
        assert dispatch(_expr(op), (_tensor([1.0]),)) == ("h_cpu",)
        assert "\nCPU: h_cpu [fallback]" in dump_table("relu")
    finally:
        reg.remove()
    assert "\nCPU: eager_local_interpreter [fallback]" in dump_table("relu")


def test_kernel_newest_wins_on_equal_priority(op):
    e, x = _expr(op), _tensor([3.0])
    r1 = DISPATCHER.register_kernel(op, "cpu", k_cpu)
    r2 = DISPATCHER.register_kernel(op, "cpu", k_cpu_double)
    np.testing.assert_array_equal(dispatch(e, (x,))[0].numpy(), [6.0])
    r2.remove()
    np.testing.assert_array_equal(dispatch(e, (x,))[0].numpy(), [3.0])
    r1.remove()


FAILED_REGISTRATIONS = [
    (lambda o: DISPATCHER.register_impl(o, K.CPU, 42), RegistrationError,
     r"register_impl\('{op}', CPU\): expected a callable handler, got 42"),
    (lambda o: DISPATCHER.register_impl(o, "CPU", h_cpu), RegistrationError,
     r"register_impl\('{op}', CPU\): expected a DispatchKey, got 'CPU'"),
    (lambda o: DISPATCHER.register_impl("no_such_op", K.CPU, h_cpu), RegistrationError,
     r"register_impl\('no_such_op', CPU\): op type 'no_such_op' is not defined; register the op first"),
    (lambda o: DISPATCHER.register_fallback(K.CompositeImplicitAutograd, h_cpu), RegistrationError,
     r"register_fallback\(CompositeImplicitAutograd\): alias key CompositeImplicitAutograd is not allowed here"),
    (lambda o: DISPATCHER.register_fallback(K.Lazy, None), RegistrationError,
     r"register_fallback\(Lazy\): expected a callable handler, got None"),
    (lambda o: DISPATCHER.register_kernel(o, "tpu", k_cpu), RegistrationError,
     r"register_kernel\('{op}', 'tpu'\): unknown device type 'tpu'; known: cpu, meta"),
    (lambda o: DISPATCHER.register_kernel(o, "cpu", k_cpu, predicate=lambda ctx: True), RegistrationError,
     r"register_kernel\('{op}', 'cpu'\): predicate must be a KernelPredicate, got <function"),
    (lambda o: DISPATCHER.register_kernel(o, "cpu", k_cpu, priority="high"), RegistrationError,
     r"register_kernel\('{op}', 'cpu'\): priority must be an int, got 'high'"),
    (lambda o: DISPATCHER.register_kernel(o, "cpu", k_cpu, priority=True), RegistrationError,
     r"priority must be an int, got True"),
    (lambda o: DISPATCHER.register_kernel(o, "cpu", fallthrough), RegistrationError,
     r"register_kernel\('{op}', 'cpu'\): expected a callable kernel, got fallthrough"),
    (lambda o: DISPATCHER.register_kernel("no_such_op", "cpu", k_cpu), RegistrationError,
     r"op type 'no_such_op' is not defined"),
]


@pytest.mark.parametrize("register, error, message", FAILED_REGISTRATIONS)
def test_failed_registration_changes_nothing(op, register, error, message):
    with DISPATCHER.register_impl(op, K.Autograd, h_autograd), DISPATCHER.register_kernel(op, "cpu", k_cpu):
        before = _state(op)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(error, match=message.format(op=op)):
                register(op)
        assert _state(op) == before
        assert "no_such_op" not in DISPATCHER.op_types()


def test_handle_remove_undoes_exactly_it_and_twice_is_a_no_op(op):
    start = _state(op)
    r_ag = DISPATCHER.register_impl(op, K.Autograd, h_autograd)
    r_cpu = DISPATCHER.register_impl(op, K.CPU, h_cpu)
    r_k = DISPATCHER.register_kernel(op, "cpu", k_cpu)
    with_all = _state(op)
    r_cpu.remove()
    after_cpu = _state(op)
    assert after_cpu != with_all
    assert "\nAutograd: h_autograd [kernel]" in after_cpu[0] and "kernel[cpu]: k_cpu" in after_cpu[0]
    assert not r_cpu.active and r_ag.active
    r_cpu.remove()  # a second remove does nothing
    assert _state(op) == after_cpu
    r_k.remove()
    r_k.remove()
    assert "kernel[cpu]" not in dump_table(op)
    r_ag.remove()
    r_ag.remove()
    assert _state(op) == start


def test_second_remove_does_not_remove_a_later_equal_registration(op):
    r1 = DISPATCHER.register_impl(op, K.Autograd, h_autograd)
    r1.remove()
    r2 = DISPATCHER.register_impl(op, K.Autograd, h_autograd)
    r1.remove()
    assert "\nAutograd: h_autograd [kernel]" in dump_table(op)
    r2.remove()
    assert _row(dump_table(op), "Autograd") == _row(dump_table("relu"), "Autograd")


def test_handler_is_called_and_redispatches_below_its_key(op):
    calls = []

    def recording(op_expr, ks, inputs, attrs, outputs):
        calls.append((op_expr, ks, inputs))
        return redispatch(op_expr, ks & keys_below(K.Autograd), inputs, attrs, outputs)

    e, x = _expr(op), _tensor([1.0, -2.0])
    with DISPATCHER.register_impl(op, K.Autograd, recording), DISPATCHER.register_kernel(op, "cpu", k_cpu_double):
        (y,) = dispatch(e, (x,))  # no Autograd key anywhere: the handler is not reached
        assert calls == []
        np.testing.assert_array_equal(y.numpy(), [2.0, -4.0])
        with IncludeDispatchKeyGuard(K.Autograd):
            (y,) = dispatch(e, (x,))
        np.testing.assert_array_equal(y.numpy(), [2.0, -4.0])
        assert calls == [(e, key_set(K.Autograd, K.CPU), (x,))]
        with IncludeDispatchKeyGuard(K.Autograd), ExcludeDispatchKeyGuard(K.Autograd):
            dispatch(e, (x,))
        assert len(calls) == 1


def test_per_op_handler_overrides_fallback_and_sees_the_key_set(op):
    seen = []

    def cpu_handler(op_expr, ks, inputs, attrs, outputs):
        seen.append((ks, attrs))
        return eager_local_interpreter(op_expr, ks, inputs, attrs, outputs)

    e = _expr(op)
    with DISPATCHER.register_impl(op, K.CPU, cpu_handler), DISPATCHER.register_kernel(op, "cpu", k_cpu):
        with IncludeDispatchKeyGuard(K.Meta):
            (y,) = dispatch(e, (_tensor([5.0]),))
    np.testing.assert_array_equal(y.numpy(), [5.0])
    assert seen == [(key_set(K.CPU, K.Meta), None)]


def test_fallthrough_key_is_skipped(op):
    e, x, key = _expr(op), _tensor([1.0]), FALLBACK_KEY
    with DISPATCHER.register_kernel(op, "cpu", k_cpu), IncludeDispatchKeyGuard(key):
        with pytest.raises(DispatchError, match=f"Could not run '{op}' with arguments from the '{key.name}' backend"):
            dispatch(e, (x,))
        with DISPATCHER.register_impl(op, key, fallthrough):
            np.testing.assert_array_equal(dispatch(e, (x,))[0].numpy(), [1.0])
        with DISPATCHER.register_fallback(key, fallthrough):
            assert f"\n{key.name}: fallthrough [fallthrough fallback]" in dump_table(op)
            np.testing.assert_array_equal(dispatch(e, (x,))[0].numpy(), [1.0])
            # a per-op handler at the key beats the fallthrough fallback
            with DISPATCHER.register_impl(op, key, h_cpu):
                assert dispatch(e, (x,)) == ("h_cpu",)
            keys = DISPATCHER.entry(op).registered_keys()
            assert key not in keys and keys == DISPATCHER.entry("relu").registered_keys()
        with pytest.raises(DispatchError):
            dispatch(e, (x,))


def test_missing_handler_message(op):
    e, key = _expr(op), FALLBACK_KEY
    with IncludeDispatchKeyGuard(key):
        with pytest.raises(DispatchError) as info:
            dispatch(e, (_tensor([1.0]),))
    assert str(info.value) == (
        f"Could not run '{op}' with arguments from the '{key.name}' backend: no handler, fallback or kernel is "
        f"registered for it. '{op}' is available for backends ['Meta', 'CPU', 'CUDA', 'PrivateUse1']. "
        f"See flow.dispatch.dump_table('{op}').")


def test_empty_key_set_message(op):
    with ExcludeDispatchKeyGuard(K.CPU):
        with pytest.raises(DispatchError, match=rf"Could not run '{op}': the call's dispatch key set is empty"):
            dispatch(_expr(op), (_tensor([1.0]),))


def test_unregistered_backend_handler_is_missing(op):
    with pytest.warns(UserWarning):
        fb = DISPATCHER.register_fallback(K.PrivateUse1, h_cpu)
    fb.remove()
    assert "\nPrivateUse1: eager_local_interpreter [fallback]" in dump_table(op)


def test_op_types_lists_defined_ops(op):
    assert op in DISPATCHER.op_types() and "relu" in DISPATCHER.op_types()


def test_concurrent_registration_and_dispatch(op):
    """One thread registers and removes handlers and kernels in a loop while others dispatch:
    no dispatch ever fails or sees a half-built table."""
    calls = []

    def python_handler(op_expr, ks, inputs, attrs, outputs):
        calls.append(1)
        return redispatch(op_expr, ks & keys_below(K.Python), inputs, attrs, outputs)

    def k_cpu_double_again(ctx, x):
        return x * 2

    e = _expr(op)
    stop = threading.Event()
    errors, results = [], []

    def reader():
        x = _tensor([1.0, 2.0, -3.0])
        try:
            with IncludeDispatchKeyGuard(K.Python):
                while not stop.is_set():
                    y = dispatch(e, (x,))[0].numpy()
                    if not np.array_equal(y, [2.0, 4.0, -6.0]):
                        results.append(y)
        except Exception as exc:  # noqa: BLE001 - any error fails the test below
            errors.append(exc)

    base = [DISPATCHER.register_impl(op, K.Python, fallthrough), DISPATCHER.register_kernel(op, "cpu", k_cpu_double)]
    threads = [threading.Thread(target=reader) for _ in range(3)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the threads finely
    for t in threads:
        t.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            rounds = 0
            # at least 0.3 s and 200 rounds, and until a reader has run the toggled handler (5 s at most)
            while (time.perf_counter() - start < 0.3 or rounds < 200 or not calls) and time.perf_counter() - start < 5:
                h = DISPATCHER.register_impl(op, K.Python, python_handler)
                k = DISPATCHER.register_kernel(op, "cpu", k_cpu_double_again, priority=1)
                fb = DISPATCHER.register_fallback(FALLBACK_KEY, fallthrough)
                fb.remove()
                k.remove()
                h.remove()
                rounds += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
        sys.setswitchinterval(switch)
        for r in base:
            r.remove()
    assert errors == [] and results == []
    assert calls, "no reader ever ran the handler registered by the other thread"
    assert f"\n{FALLBACK_KEY.name}: [missing]" in dump_table(op)
