"""The eager walk-through run by ``python -m oneflow_lite walkthrough``.

It follows ``flow.relu(flow.tensor([-1.0, 2.0]))`` through every layer of
DESIGN.md §2 and prints what it finds there, read from the live objects (the
functional function, the functor and its UserOpExpr, the dispatcher's table, the
meta-inference cache, the chosen kernel), not from canned text.
"""

from __future__ import annotations

import sys

import numpy as np
from google.protobuf import text_format

import oneflow_lite as flow
from oneflow_lite.dispatch import tls
from oneflow_lite.dispatch.dispatch_key import FULL_KEY_SET, format_key_set, keys_of
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.introspection import dump_table
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.functors.signature import SignatureMismatch


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.rstrip("\n").splitlines())


def _op_exprs(functor) -> list[tuple[str, UserOpExpr]]:
    """The UserOpExprs a functor built in ``__init__``, by attribute name."""
    names = list(getattr(functor, "__dict__", {})) + [s for c in type(functor).__mro__
                                                       for s in getattr(c, "__slots__", ())]
    found = []
    for name in names:
        value = getattr(functor, name, None)
        if isinstance(value, UserOpExpr) and all(value is not e for _, e in found):
            found.append((name, value))
    return found


def _kernel_registration(entry, device, fn):
    for reg in entry.kernels.get(device.type, ()):
        if reg.fn is fn:
            return reg
    return None


def run_walkthrough(out=None) -> None:
    """Print the walk-through of ``flow.relu(flow.tensor([-1.0, 2.0]))`` to ``out`` (stdout)."""
    out = out or sys.stdout

    def say(text=""):
        print(text, file=out)

    say("oneflow_lite eager walk-through of: y = flow.relu(flow.tensor([-1.0, 2.0]))")
    say()
    values = [-1.0, 2.0]
    x = _show_input(say, values)
    fn = flow.relu
    chosen = _show_overloads(say, fn, x)
    expr = _show_functor(say, chosen)
    entry = _show_dispatch(say, expr, x)
    y, y2 = _show_eager_interpreter(say, fn, expr, entry, x)
    _show_output(say, values, y, y2)


def _show_input(say, values) -> flow.Tensor:
    """[1] the input."""
    x = flow.tensor(values)
    say("[1] input: x = flow.tensor([-1.0, 2.0])")
    say(f"    {x!r}")
    say(f"    meta: {x._meta!r}")
    say(f"    key set of x: {format_key_set(x.key_set)}")
    say()
    return x


def _show_overloads(say, fn, x):
    """[2] the functional API: overloads tried in declaration order; returns the signature that binds."""
    say(f"[2] functional API: flow.relu is the function '{fn.__name__}' of oneflow_lite.functional "
        f"(flow._C.relu is flow.relu: {flow._C.relu is fn})")
    say("    signatures, tried in declaration order; the first that binds wins:")
    chosen = None
    for i, sig in enumerate(fn.signatures):
        try:
            bound = sig.bind(fn.__name__, (x,), {})
        except SignatureMismatch as e:
            say(f"      {i}: {sig}    does not bind: {e}")
            continue
        if chosen is None:
            chosen = sig
            shown = ", ".join(f"{a.name}={'x' if v is x else repr(v)}" for a, v in zip(sig.args, bound))
            say(f"      {i}: {sig}    <- binds: ({shown})")
        else:
            say(f"      {i}: {sig}    (would bind, but an earlier overload won)")
    say()
    return chosen


def _show_functor(say, chosen) -> UserOpExpr:
    """[3] the functor and the UserOpExprs it built once; returns the first."""
    functor = get_functor(chosen.functor_name)
    say(f"[3] functor '{chosen.functor_name}': {type(functor).__module__}.{type(functor).__qualname__}, "
        f"built once; its __call__ calls OpInterpUtil.dispatch")
    exprs = _op_exprs(functor)
    for attr_name, e in exprs:
        say(f"    {type(functor).__name__}.{attr_name}: {e!r}")
        say(f"      op_name: {e.op_name}   op_type_name: {e.op_type_name}")
        say(f"      inputs: {e.indexed_ibns}   outputs: {e.indexed_obns}   base attrs: {e.base_attrs!r}")
        say("      UserOpConf:")
        say(_indent(text_format.MessageToString(e.proto), "        "))
    say()
    return exprs[0][1]


def _show_dispatch(say, expr: UserOpExpr, x):
    """[4] dispatch: the key set and the handler at its highest key; returns the op's dispatcher entry."""
    entry = DISPATCHER.entry(expr.op_type_name)
    mask, table = entry.dispatch_state
    included, excluded = tls.included(), tls.excluded()
    ks = (x.key_set | included) & ~excluded & mask
    say("[4] OpInterpUtil.dispatch: key set = (inputs' key sets | thread-local included) & ~thread-local excluded"
        " & ~fallthrough keys")
    say(f"    = ({format_key_set(x.key_set)} | {format_key_set(included)}) & ~{format_key_set(excluded)}"
        f" & ~{format_key_set(FULL_KEY_SET & ~mask)}")
    say(f"    = {format_key_set(ks)}")
    say("    handlers from the highest key down (each redispatches below its own key):")
    for key in keys_of(ks):
        kind, reg = entry.provenance[key]
        handler = table[key]
        say(f"      {key.name}: {getattr(handler, '__qualname__', handler)} [{kind}]"
            + (f" registered at {reg.location}" if reg is not None else ""))
    say(f"    flow.dispatch.dump_table('{expr.op_type_name}'):")
    say(_indent(dump_table(expr.op_type_name)))
    say()
    return entry


def _show_eager_interpreter(say, fn, expr: UserOpExpr, entry, x) -> tuple:
    """[5] the eager interpreter: cached meta inference, then the kernel; returns the two calls' outputs."""
    metas = (x._meta,)
    expr.clear_infer_cache()
    say("[5] EagerLocalInterpreter (the handler at every backend key)")
    say(f"    meta-inference cache of {expr.op_name}, emptied for the demo: {expr.infer_cache_size()} entries")
    before = expr.cached_infer(metas)
    y = fn(x)
    first = expr.cached_infer(metas)
    size = expr.infer_cache_size()
    say(f"    call 1: {'hit' if before is not None else 'miss'} -> inferred out metas {first.out_metas!r}, "
        f"device {first.device}; cache now {size} entr{'y' if size == 1 else 'ies'}")
    y2 = fn(x)
    second = expr.cached_infer(metas)
    say(f"    call 2: {'hit' if second is first else 'miss'} -> the same InferResult object: {second is first}")
    reg = _kernel_registration(entry, first.device, first.kernel)
    dtypes = ", ".join(f"{n}={t._meta.dtype.name}" for n, t in zip(expr.indexed_ibns, (x,)))
    say(f"    kernel candidates on '{first.device.type}': "
        f"{len(entry.kernels.get(first.device.type, ()))}; chosen for ({dtypes}):")
    if reg is not None:
        say(f"      {reg.name}  predicate: {reg.predicate}  priority: {reg.priority}  registered at {reg.location}")
    else:
        say(f"      {getattr(first.kernel, '__qualname__', first.kernel)}")
    say()
    return y, y2


def _show_output(say, values, y, y2) -> None:
    """[6] the output, checked against NumPy."""
    reference = np.maximum(np.array(values, dtype=np.float32), 0)
    say(f"[6] output: y = {y!r}")
    say(f"    NumPy reference np.maximum(x, 0) = {reference.tolist()}; equal: "
        f"{bool(np.array_equal(y.numpy(), reference) and np.array_equal(y2.numpy(), reference))}")
