"""Text dumps of what is registered for an op and how its dispatch table resolves.

In the spirit of ``torch._C._dispatch_dump`` / ``_dispatch_dump_table``.
"""

from __future__ import annotations

from oneflow_lite.dispatch.dispatch_key import ALIAS_KEYS, BACKEND_KEYS, RUNTIME_KEYS, DispatchKey
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework.device import device_type, device_types


# Note [Key annotations]
# A handler whose behaviour per op lives in a table of its own (the Global key's SBP rules) registers an
# annotation for its key: ``fn(op_type)`` returns a line about that op (or None), which ``dump_table``
# prints under the key's handler, so the table stays the one place that shows how an op is handled.
_annotations: dict = {}


def register_annotation(key: DispatchKey, fn) -> None:
    """Print ``fn(op_type)`` (a line, or None) under ``key``'s handler in ``dump_table`` (Note [Key annotations])."""
    _annotations.setdefault(key, []).append(fn)


def _device_types_of(key: DispatchKey) -> list[str]:
    return [name for name in device_types() if device_type(name).dispatch_key == key]


def _entry(op_type: str, what: str):
    entry = DISPATCHER.find_entry(op_type) if isinstance(op_type, str) else None
    if entry is None:
        raise RuntimeError(f"{what}: no op type {op_type!r} is defined or has registrations, and no function "
                           f"of that name is a composite")
    return entry


def _kernel_lines(reg, indent: str) -> list[str]:
    """A kernel's line, and under it the factory of its out-variant writer if it has one (Note [Out-variant
    writers] in kernels/registration.py)."""
    lines = [f"{indent}kernel[{reg.device_type}]: {reg.describe()} registered at {reg.location}"]
    factory = reg.out_variant
    if factory is not None:
        name = getattr(factory, "__qualname__", None) or repr(factory)
        lines.append(f"{indent}    out-variant writer: {name}")
    return lines


def _composite_text(name: str, found: dict) -> str:
    """What the function ``name`` runs when some of its overloads are composites (Note [Composite ops])."""
    whole = all(found.values())
    lines = [f"{name}: {'composite' if whole else 'function with composite overloads'} (CompositeImplicitAutograd)"]
    for functor, location in found.items():
        if location is None:
            lines.append(f"  => {functor}: a functor dispatching ops of its own")
        else:
            lines.append(f"  => {functor} defined at {location}")
    lines.append("  a composite has no op conf, kernel or gradient of its own: every dispatch key (autograd, lazy "
                 "capture, the backends) sees the ops it calls")
    return "\n".join(lines) + "\n"


def dump(op_type: str) -> str:
    """Every registration for ``op_type``, one line each, with its ``file:line``; for a composite function,
    where it is defined."""
    found = DISPATCHER.composite(op_type) if isinstance(op_type, str) else None
    if found and DISPATCHER.find_entry(op_type) is None:
        return _composite_text(op_type, found)
    entry = _entry(op_type, "dump")
    d = entry.definition
    lines = [f"name: {op_type}",
             f"schema: {d.signature() if d else '(not defined)'}",
             f"debug: registered at {d.location if d else '-'}"]
    for key in RUNTIME_KEYS + ALIAS_KEYS:
        suffix = "[alias]" if key in ALIAS_KEYS else ""
        for reg in entry.impls.get(key, ()):
            lines.append(f"{key.name}{suffix}: {reg.describe()} registered at {reg.location}")
    for dev_type in sorted(entry.kernels):
        for reg in sorted(entry.kernels[dev_type], key=lambda r: r.seq):
            lines.extend(_kernel_lines(reg, ""))
    return "\n".join(lines) + "\n"


def dump_table(op_type: str) -> str:
    """The computed handler of every runtime key with its provenance, and under each
    backend key the kernels the eager interpreter would choose from (with their out-variant
    writers); for a function with composite overloads (Note [Composite ops] in functors/registry.py), what
    each overload runs and where the composites are defined (after the op's table when the function shares
    its name with an op type)."""
    found = DISPATCHER.composite(op_type) if isinstance(op_type, str) else None
    if found and DISPATCHER.find_entry(op_type) is None:
        return _composite_text(op_type, found)
    entry = _entry(op_type, "dump_table")
    lines = []
    for key in RUNTIME_KEYS:
        kind, reg = entry.provenance[key]
        if kind == "missing":
            lines.append(f"{key.name}: [missing]")
        else:
            lines.append(f"{key.name}: {reg.describe()} [{kind}] registered at {reg.location}")
        for fn in _annotations.get(key, ()):
            note = fn(op_type)
            if note:
                lines.append(f"    {note}")
        if key in BACKEND_KEYS:
            for dev_type in _device_types_of(key):
                regs = sorted(entry.kernels.get(dev_type, ()), key=lambda r: (-r.priority, -r.seq))
                for r in regs:
                    lines.extend(_kernel_lines(r, "    "))
                fallback = DISPATCHER.device_fallback(dev_type)
                if fallback is not None:
                    lines.append(f"    {_fallback_line(dev_type, fallback)} (for calls no kernel above takes)")
    text = "\n".join(lines) + "\n"
    return text if not found else text + "\nfunction " + _composite_text(op_type, found)


def _fallback_line(device_type: str, reg) -> str:
    return f"kernel fallback[{device_type}]: {reg.describe()} registered at {reg.location}"


def fallbacks() -> str:
    """The boxed fallback registered at each key, then the kernel fallback of each device type that has one
    (Note [Device fallbacks] in dispatch/dispatcher.py)."""
    lines = []
    for key, regs in sorted(DISPATCHER.fallbacks().items()):
        lines.append(f"{key.name}: {regs[-1].describe()} registered at {regs[-1].location}")
    for device_type, reg in sorted(DISPATCHER.device_fallbacks().items()):
        lines.append(_fallback_line(device_type, reg))
    return "\n".join(lines) + "\n"


__all__ = ["dump", "dump_table", "fallbacks", "register_annotation"]
