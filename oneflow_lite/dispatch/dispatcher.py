"""The dispatcher: one ``OperatorEntry`` per op type, boxed fallbacks per key,
fallthroughs, per-device kernels, and the computed dispatch tables.

Note [Handlers and kernels]
A dispatch-table cell holds a *handler*, ``handler(op_expr, key_set, inputs,
attrs, outputs) -> outputs``, usually an interpreter registered as the boxed
fallback of its key. A per-op handler at the same key overrides the fallback for
that op. *Per-device kernels* are plain compute functions with a dtype predicate
and a priority (OneFlow's ``REGISTER_USER_KERNEL``); they live in the same entry,
per device type, and the eager interpreter (the handler at every backend key)
chooses among them after meta inference.

Note [Copy-on-write dispatch tables]
Dispatch must never wait for a lock, and must never see a half-written table.
PyTorch's C++ dispatcher keeps two copies of its tables (LeftRight) so readers
never block. In Python one attribute assignment is atomic, which gives the same
property more cheaply: a registration takes the dispatcher's lock, computes a
complete new ``(mask, table)`` tuple for each affected entry and stores it with
a single assignment. A reader loads ``entry.dispatch_state`` once per call and
uses that tuple throughout, so it sees either the old table or the new one,
never a mix; the old tuple is freed when its last reader lets go.

Note [Device fallbacks]
A device type may have one boxed *kernel fallback*: the kernel of every op that
has no kernel of its own on that device for a call's dtypes (PyTorch's boxed
CPU fallback of an out-of-tree backend). ``fn(op, ctx, *arrays)`` gets a
:class:`FallbackCall` (the op type, the call's dtypes, and ``op.kernel(device_type)``,
the kernel another device type runs for the same call) and the kernel's usual
arguments, and returns what that kernel would: typically it moves the arrays to
the host, runs the cpu kernel and moves the results back (Note [Device storage and
transfer hooks] in framework/device.py). It lives where kernels are chosen, not at
the device's dispatch key, so the eager interpreter and the graph compiler both
use it, and its choice is cached per op expr like any kernel's; registering or
removing one drops every cached choice. A kernel registered for the device later
takes precedence at once.
"""

from __future__ import annotations

import functools
import threading
import warnings
import weakref

from oneflow_lite.dispatch.dispatch_key import (
    ALIAS_EXPANSION, ALIAS_KEYS, BACKEND_KEYS, FULL_KEY_SET, NUM_RUNTIME_SLOTS, RUNTIME_KEYS, DispatchKey,
)
from oneflow_lite.dispatch.kernel_predicate import ANY_DTYPE, KernelMatchContext, KernelPredicate
from oneflow_lite.framework import device as device_mod
from oneflow_lite.framework import op_registry
from oneflow_lite.framework.errors import DispatchError, OpKernelNotFoundError, RegistrationError
from oneflow_lite.framework.source_location import caller_location


_BIND_LOCK = threading.Lock()


class _Fallthrough:
    """Register this instead of a handler to make a key pass the call to the next key."""

    def __repr__(self):
        return "fallthrough"

    def __call__(self, *args):  # never called: fallthrough keys are masked out before dispatch
        raise AssertionError("the fallthrough marker was dispatched to")


fallthrough = _Fallthrough()


class Registration:
    """One registration; ``remove()`` undoes exactly it (once; later calls do nothing)."""

    __slots__ = ("fn", "location", "_undo", "__weakref__")

    def __init__(self, fn, location, undo):
        self.fn = fn
        self.location = location
        self._undo = undo

    @property
    def is_fallthrough(self) -> bool:
        return self.fn is fallthrough

    def remove(self) -> None:
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    @property
    def active(self) -> bool:
        return self._undo is not None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def describe(self) -> str:
        return "fallthrough" if self.is_fallthrough else _fn_name(self.fn)


class KernelRegistration(Registration):
    """A per-device kernel: compute function, dtype predicate, priority, and the factory of its out-variant
    writer or None (Note [Out-variant writers] in kernels/registration.py)."""

    __slots__ = ("device_type", "predicate", "priority", "seq", "name", "out_variant")

    def describe(self) -> str:
        return f"{self.name} [{self.predicate}] priority={self.priority}"


def _fn_name(fn) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return name


class OperatorEntry:
    """Everything registered for one op type, and its computed dispatch table."""

    def __init__(self, op_type: str):
        self.op_type = op_type
        self.impls: dict[DispatchKey, list[Registration]] = {}
        self.kernels: dict[str, tuple[KernelRegistration, ...]] = {}
        # (mask of keys that are not fallthrough, table indexed by key; [-1] handles an empty key set)
        self.dispatch_state: tuple[int, tuple] = (FULL_KEY_SET, ())
        self.provenance: dict[DispatchKey, tuple[str, Registration | None]] = {}
        self.kernel_gen = 0
        self.exprs = weakref.WeakSet()  # the UserOpExprs bound to this entry (Note [Eager fast path])

    def bind(self, op_expr) -> None:
        """Remember ``op_expr`` (bound on its first dispatch) so kernel changes can drop its fast calls."""
        if hasattr(op_expr, "_fast"):
            with _BIND_LOCK:
                self.exprs.add(op_expr)

    def kernels_changed(self) -> None:
        """A kernel of this op came or went: a new generation, and every bound expr forgets its fast calls
        (each gets a new dict: a call filling the old one meanwhile fills a dict nobody reads)."""
        self.kernel_gen += 1
        with _BIND_LOCK:
            exprs = list(self.exprs)
        for e in exprs:
            e._fast = {}

    @property
    def definition(self):
        return op_registry.find(self.op_type)

    def registered_keys(self) -> list[DispatchKey]:
        """Runtime keys that have a handler (not fallthrough, not missing)."""
        return [k for k, (kind, _) in self.provenance.items()
                if kind != "missing" and not kind.startswith("fallthrough")]

    def has_registrations(self) -> bool:
        return bool(self.impls or self.kernels)


def _missing_handler(entry: OperatorEntry, key: DispatchKey | None):
    def missing(op_expr, ks, inputs, attrs, outputs):
        available = [k.name for k in entry.registered_keys() if k in BACKEND_KEYS]
        if key is None:
            raise DispatchError(f"Could not run '{entry.op_type}': the call's dispatch key set is empty (every "
                                f"key of its inputs is excluded or falls through); '{entry.op_type}' is "
                                f"available for backends {available}")
        raise DispatchError(f"Could not run '{entry.op_type}' with arguments from the '{key.name}' backend: "
                            f"no handler, fallback or kernel is registered for it. '{entry.op_type}' is "
                            f"available for backends {available}. See flow.dispatch.dump_table('{entry.op_type}').")
    missing.__qualname__ = "missing"
    return missing


class Dispatcher:
    """The process-wide registry of handlers, fallbacks and kernels."""

    def __init__(self):
        self._lock = threading.RLock()
        self._entries: dict[str, OperatorEntry] = {}
        self._fallbacks: dict[DispatchKey, list[Registration]] = {}
        self._composites: dict[str, dict] = {}  # function name -> {functor: file:line of a composite, or None}
        self._device_fallbacks: dict[str, list[Registration]] = {}  # Note [Device fallbacks]
        self._seq = 0

    # ---- lookup -------------------------------------------------------------------------------
    def entry(self, op_type: str) -> OperatorEntry:
        """The entry of ``op_type``, made (with its table computed) on first use."""
        e = self._entries.get(op_type)
        if e is None:
            with self._lock:
                e = self._entries.get(op_type)
                if e is None:
                    e = OperatorEntry(op_type)
                    self._recompute(e)
                    self._entries[op_type] = e
        return e

    def op_types(self) -> list[str]:
        """Every op type that is defined or has registrations."""
        registered = [name for name, e in list(self._entries.items()) if e.has_registrations()]
        return sorted(set(op_registry.registered_op_types()) | set(registered))

    def find_entry(self, op_type: str) -> OperatorEntry | None:
        """The entry of ``op_type`` if it is defined or has registrations, else None (makes no entry)."""
        if op_registry.find(op_type) is None:
            e = self._entries.get(op_type)
            return e if e is not None and e.has_registrations() else None
        return self.entry(op_type)

    def register_composite(self, name: str, overloads: dict) -> None:
        """Record the functors of the functional function ``name``'s overloads, ``{functor: file:line of a
        composite, or None}`` (Note [Composite ops] in functors/registry.py). Composites have no entry: they are
        never dispatched; the ops they call are."""
        with self._lock:
            self._composites[name] = dict(overloads)

    def unregister_composite(self, name: str, overloads: dict) -> None:
        """Forget the composite function ``name`` if ``overloads`` is what is recorded for it."""
        with self._lock:
            if self._composites.get(name) == overloads:
                del self._composites[name]

    def composite(self, name: str) -> dict | None:
        """``{functor: file:line or None}`` of the overloads of function ``name`` when one of them is a
        composite, else None."""
        found = self._composites.get(name)
        return dict(found) if found else None

    def composites(self) -> list[str]:
        return sorted(self._composites)

    def fallbacks(self) -> dict[DispatchKey, list[Registration]]:
        return {k: list(v) for k, v in self._fallbacks.items()}

    def device_fallback(self, device_type: str) -> Registration | None:
        """The kernel fallback of ``device_type`` (Note [Device fallbacks]), or None."""
        regs = self._device_fallbacks.get(device_type)
        return regs[-1] if regs else None

    def device_fallbacks(self) -> dict[str, Registration]:
        return {d: regs[-1] for d, regs in self._device_fallbacks.items()}

    # ---- registration -------------------------------------------------------------------------
    @staticmethod
    def _check_key(key, what, allow_alias):
        if not isinstance(key, DispatchKey):
            raise RegistrationError(f"{what}: expected a DispatchKey, got {key!r}")
        if key in ALIAS_KEYS and not allow_alias:
            raise RegistrationError(f"{what}: alias key {key.name} is not allowed here; use a runtime key")

    @staticmethod
    def _check_fn(fn, what, kind="handler"):
        if not callable(fn) or (kind == "kernel" and fn is fallthrough):
            raise RegistrationError(f"{what}: expected a callable {kind}, got {fn!r}")

    def _check_op(self, op_type, what):
        if op_registry.find(op_type) is None:
            raise RegistrationError(f"{what}: op type '{op_type}' is not defined; register the op first")

    def register_impl(self, op_type: str, key: DispatchKey, fn, *, location: str | None = None) -> Registration:
        """Register ``fn`` (or ``fallthrough``) as ``op_type``'s handler at ``key`` (runtime or alias key).

        The newest registration at a key wins; earlier ones are kept, so removing
        the newest restores the previous. Overriding warns, naming both sites.
        """
        what = f"register_impl('{op_type}', {getattr(key, 'name', key)})"
        self._check_key(key, what, allow_alias=True)
        self._check_fn(fn, what)
        self._check_op(op_type, what)
        location = location or caller_location()
        with self._lock:
            entry = self.entry(op_type)
            regs = entry.impls.setdefault(key, [])
            reg = Registration(fn, location, None)
            if regs:
                warnings.warn(f"Overriding a previously registered handler for op '{op_type}' at dispatch key "
                              f"{key.name}\n  previous: {regs[-1].describe()} registered at {regs[-1].location}\n"
                              f"  new: {reg.describe()} registered at {location}", stacklevel=2)
            regs.append(reg)
            reg._undo = lambda: self._remove_impl(entry, key, reg)
            self._recompute(entry)
        return reg

    def _remove_impl(self, entry, key, reg):
        with self._lock:
            regs = entry.impls.get(key, [])
            regs.remove(reg)
            if not regs:
                del entry.impls[key]
            self._recompute(entry)

    def register_fallback(self, key: DispatchKey, fn, *, location: str | None = None) -> Registration:
        """Register ``fn`` (or ``fallthrough``) as the boxed handler of every op at runtime key ``key``."""
        what = f"register_fallback({getattr(key, 'name', key)})"
        self._check_key(key, what, allow_alias=False)
        self._check_fn(fn, what)
        location = location or caller_location()
        with self._lock:
            regs = self._fallbacks.setdefault(key, [])
            reg = Registration(fn, location, None)
            if regs:
                warnings.warn(f"Overriding a previously registered fallback at dispatch key {key.name}\n"
                              f"  previous: {regs[-1].describe()} registered at {regs[-1].location}\n"
                              f"  new: {reg.describe()} registered at {location}", stacklevel=2)
            regs.append(reg)
            reg._undo = lambda: self._remove_fallback(key, reg)
            self._recompute_all()
        return reg

    def _remove_fallback(self, key, reg):
        with self._lock:
            regs = self._fallbacks.get(key, [])
            regs.remove(reg)
            if not regs:
                del self._fallbacks[key]
            self._recompute_all()

    def register_device_fallback(self, device_type: str, fn, *, location: str | None = None) -> Registration:
        """Register ``fn(op, ctx, *arrays)`` as the kernel of every op without a kernel of its own on
        ``device_type`` (Note [Device fallbacks]); the newest registration wins, removing it restores the
        previous."""
        what = f"register_device_fallback('{device_type}')"
        self._check_fn(fn, what, "kernel")
        if device_type not in device_mod.device_types():
            raise RegistrationError(f"{what}: unknown device type {device_type!r}; "
                                    f"known: {', '.join(device_mod.device_types())}")
        if not device_mod.device_type(device_type).has_storage:
            raise RegistrationError(f"{what}: '{device_type}' holds no data, so its kernels compute nothing; "
                                    f"a fallback has nothing to do there")
        location = location or caller_location()
        with self._lock:
            regs = self._device_fallbacks.setdefault(device_type, [])
            reg = Registration(fn, location, None)
            if regs:
                warnings.warn(f"Overriding a previously registered kernel fallback of device type '{device_type}'\n"
                              f"  previous: {regs[-1].describe()} registered at {regs[-1].location}\n"
                              f"  new: {reg.describe()} registered at {location}", stacklevel=2)
            regs.append(reg)
            reg._undo = lambda: self._remove_device_fallback(device_type, reg)
            self.all_kernels_changed()
        return reg

    def _remove_device_fallback(self, device_type, reg):
        with self._lock:
            regs = self._device_fallbacks.get(device_type, [])
            regs.remove(reg)
            if not regs:
                del self._device_fallbacks[device_type]
            self.all_kernels_changed()

    def all_kernels_changed(self):
        """Every op chooses its kernels again (a kernel, a fallback or a limit on them changed)."""
        for e in list(self._entries.values()):
            e.kernels_changed()

    def register_kernel(self, op_type: str, device_type: str, fn, *, predicate: KernelPredicate = ANY_DTYPE,
                        priority: int = 0, name: str | None = None, location: str | None = None,
                        out_variant=None) -> KernelRegistration:
        """Register a per-device compute kernel of ``op_type`` for ``device_type``.

        ``fn(ctx, *arrays)`` returns the output array (a tuple of them for several
        outputs); ``ctx`` carries ``attrs``, ``out_metas`` and ``device``. Of the
        kernels whose predicate matches a call's dtypes, the highest priority wins
        (the newest on a tie). ``out_variant``: the factory of the kernel's
        out-variant writer (Note [Out-variant writers] in kernels/registration.py).
        """
        what = f"register_kernel('{op_type}', '{device_type}')"
        self._check_fn(fn, what, "kernel")
        self._check_out_variant(out_variant, what)
        self._check_op(op_type, what)
        if device_type not in device_mod.device_types():
            raise RegistrationError(f"{what}: unknown device type '{device_type}'; "
                                    f"known: {', '.join(device_mod.device_types())}")
        if not isinstance(predicate, KernelPredicate):
            raise RegistrationError(f"{what}: predicate must be a KernelPredicate, got {predicate!r}")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise RegistrationError(f"{what}: priority must be an int, got {priority!r}")
        location = location or caller_location()
        with self._lock:
            entry = self.entry(op_type)
            reg = KernelRegistration(fn, location, None)
            reg.device_type = device_type
            reg.predicate = predicate
            reg.priority = priority
            reg.name = name or _fn_name(fn)
            reg.out_variant = out_variant
            self._seq += 1
            reg.seq = self._seq
            # Copy-on-write, as the tables: a reader iterating the old tuple is unaffected.
            entry.kernels[device_type] = (*entry.kernels.get(device_type, ()), reg)
            reg._undo = lambda: self._remove_kernel(entry, reg)
            entry.kernels_changed()
        return reg

    @staticmethod
    def _check_out_variant(factory, what):
        if factory is not None and not callable(factory):
            raise RegistrationError(f"{what}: out_variant must be a callable factory(ctx, input_dtypes) or None, "
                                    f"got {factory!r}")

    def register_out_variant(self, op_type: str, factory, *, device_type: str = "cpu") -> None:
        """Give the ``device_type`` kernels of ``op_type`` registered so far the out-variant writer factory
        ``factory`` (replacing theirs): for a plug-in adding a writer to kernels registered elsewhere. A kernel
        registered with its writer passes ``out_variant=`` instead (Note [Out-variant writers] in
        kernels/registration.py)."""
        what = f"register_out_variant('{op_type}', device_type='{device_type}')"
        if not callable(factory):
            raise RegistrationError(f"{what}: factory must be a callable factory(ctx, input_dtypes), got {factory!r}")
        with self._lock:
            entry = self.find_entry(op_type)
            regs = entry.kernels.get(device_type, ()) if entry is not None else ()
            if not regs:
                raise RegistrationError(f"{what}: '{op_type}' has no '{device_type}' kernel to give a writer to; "
                                        f"register the kernel first")
            for reg in regs:
                reg.out_variant = factory

    def _remove_kernel(self, entry, reg):
        with self._lock:
            regs = tuple(r for r in entry.kernels[reg.device_type] if r is not reg)
            if regs:
                entry.kernels[reg.device_type] = regs
            else:
                del entry.kernels[reg.device_type]
            entry.kernels_changed()

    # ---- kernel choice ------------------------------------------------------------------------
    def select_kernel(self, op_expr, entry: OperatorEntry, device, input_dtypes, output_dtypes):
        """The highest-priority kernel of ``entry`` on ``device`` matching the dtypes, cached per op expr."""
        # The generation is read before the candidates: a choice made from a newer list is at worst
        # cached under an older generation and made again on the next call, never the reverse.
        gen = entry.kernel_gen
        if op_expr.kernel_cache_gen != gen:
            op_expr.kernel_cache = {}
            op_expr.kernel_cache_gen = gen
        key = (device.type, input_dtypes, output_dtypes)
        fn = op_expr.kernel_cache.get(key)
        if fn is None:
            fn = op_expr.kernel_cache[key] = self.select_registration(
                op_expr, entry, device, input_dtypes, output_dtypes).fn
        return fn

    def select_registration(self, op_expr, entry: OperatorEntry, device, input_dtypes,
                            output_dtypes) -> KernelRegistration:
        """The registration of the kernel ``select_kernel`` chooses (not cached): for a caller that needs more
        than the function, as the graph compiler needs its out-variant writer."""
        ctx = KernelMatchContext(op_expr, input_dtypes, output_dtypes)
        best = None
        for reg in entry.kernels.get(device.type, ()):
            if reg.predicate(ctx) and (best is None or (reg.priority, reg.seq) > (best.priority, best.seq)):
                best = reg
        if best is None:
            fallback = self.device_fallback(device.type)
            if fallback is not None:
                return _fallback_registration(fallback, FallbackCall(self, op_expr, entry, device, input_dtypes,
                                                                     output_dtypes))
            raise OpKernelNotFoundError(_no_kernel_message(op_expr, entry, device, input_dtypes, output_dtypes))
        return best

    # ---- table computation --------------------------------------------------------------------
    def _recompute_all(self):
        for op_type, e in list(self._entries.items()):
            if not e.has_registrations() and op_registry.find(op_type) is None:
                del self._entries[op_type]  # a removed op with nothing left: nothing to keep up to date
                continue
            self._recompute(e)

    def _resolve(self, entry: OperatorEntry, key: DispatchKey):
        """(handler or fallthrough or None, provenance kind, registration) for one runtime key."""
        regs = entry.impls.get(key)
        if regs:
            reg = regs[-1]
            return reg.fn, ("fallthrough" if reg.is_fallthrough else "kernel"), reg
        for alias in ALIAS_KEYS:
            if key not in ALIAS_EXPANSION[alias]:
                continue
            regs = entry.impls.get(alias)
            if not regs:
                continue
            if key == DispatchKey.Autograd and alias == DispatchKey.CompositeImplicitAutograd:
                # An op with its own backend handlers is differentiated as a whole, not decomposed.
                if any(k in entry.impls for k in BACKEND_KEYS + (DispatchKey.CompositeExplicitAutograd,)):
                    continue
            reg = regs[-1]
            return reg.fn, f"from alias {alias.name}", reg
        regs = self._fallbacks.get(key)
        if regs:
            reg = regs[-1]
            return reg.fn, ("fallthrough fallback" if reg.is_fallthrough else "fallback"), reg
        return None, "missing", None

    def _recompute(self, entry: OperatorEntry):
        table = [None] * (NUM_RUNTIME_SLOTS + 1)
        mask = FULL_KEY_SET
        provenance = {}
        for key in RUNTIME_KEYS:
            fn, kind, reg = self._resolve(entry, key)
            provenance[key] = (kind, reg)
            if fn is fallthrough:
                mask &= ~(1 << key)
                fn = None
            table[key] = fn if fn is not None else _missing_handler(entry, key)
        for slot in range(NUM_RUNTIME_SLOTS):
            if table[slot] is None:
                table[slot] = _missing_handler(entry, None)
        table[-1] = _missing_handler(entry, None)
        entry.provenance = provenance
        entry.dispatch_state = (mask, tuple(table))


class FallbackCall:
    """What a device's kernel fallback knows of the call it serves (Note [Device fallbacks]): ``op_type``,
    ``device``, ``input_dtypes`` / ``output_dtypes``, and ``kernel(device_type)``."""

    __slots__ = ("_dispatcher", "_entry", "_op_expr", "device", "input_dtypes", "op_type", "output_dtypes")

    def __init__(self, dispatcher, op_expr, entry, device, input_dtypes, output_dtypes):
        self._dispatcher = dispatcher
        self._op_expr = weakref.ref(op_expr)  # the op expr caches this call's kernel: no reference cycle
        self._entry = entry
        self.op_type = entry.op_type
        self.device = device
        self.input_dtypes = input_dtypes
        self.output_dtypes = output_dtypes

    def kernel(self, device_type: str = "cpu"):
        """The kernel ``device_type`` runs for this call (its dtypes), called as ``kernel(ctx, *arrays)``;
        OpKernelNotFoundError when it has none."""
        if device_type == self.device.type:
            raise RuntimeError(f"FallbackCall.kernel: '{self.op_type}' has no kernel of its own on "
                               f"'{device_type}'; that is why its fallback runs")
        return self._dispatcher.select_kernel(self._op_expr(), self._entry, device_mod.device(device_type),
                                              self.input_dtypes, self.output_dtypes)

    def __repr__(self):
        ins = ", ".join(d.name for d in self.input_dtypes)
        return f"<FallbackCall {self.op_type} on {self.device} ({ins})>"


def _fallback_registration(fallback: Registration, call: FallbackCall) -> KernelRegistration:
    """The kernel of ``call``: the device's fallback with the call bound (Note [Device fallbacks])."""
    reg = KernelRegistration(functools.partial(fallback.fn, call), fallback.location, None)
    reg.device_type = call.device.type
    reg.predicate = ANY_DTYPE
    reg.priority = 0
    reg.seq = 0
    reg.name = f"fallback {fallback.describe()}"
    reg.out_variant = None
    return reg


def _no_kernel_message(op_expr, entry, device, input_dtypes, output_dtypes) -> str:
    ins = ", ".join(f"{n}={d.name}" for n, d in zip(op_expr.indexed_ibns, input_dtypes)) or "no inputs"
    outs = ", ".join(f"{n}={d.name}" for n, d in zip(op_expr.indexed_obns, output_dtypes))
    lines = [f"Cannot find a kernel of op '{entry.op_type}' (op name '{op_expr.op_name}') for device "
             f"'{device.type}' with dtypes {ins} -> {outs}."]
    candidates = entry.kernels.get(device.type, ())
    if candidates:
        lines.append(f"Kernels of '{entry.op_type}' on '{device.type}':")
        lines.extend(f"  {r.name} requires {r.predicate} (priority {r.priority}, registered at {r.location})"
                     for r in sorted(candidates, key=lambda r: (-r.priority, -r.seq)))
    else:
        others = sorted(entry.kernels)
        lines.append(f"'{entry.op_type}' has no kernels on '{device.type}'"
                     + (f"; it has kernels on: {', '.join(others)}." if others else "."))
        if device.type not in ("cpu", "meta"):
            lines.append(f"Register one for '{device.type}', or a kernel fallback serving every op without one: "
                         f"flow.library.register_fallback('{device.type}', fn).")
    return "\n".join(lines)


DISPATCHER = Dispatcher()
