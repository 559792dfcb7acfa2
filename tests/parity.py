"""Parity with PyTorch: the fuzzer's calls (tests/fuzzing.py) run through both frameworks.

For one drawn :class:`fuzzing.Call`, :func:`check_parity` builds the same arguments for PyTorch (same
values, dtypes, layouts, devices and requires_grad), calls PyTorch's function of the same name
(``torch.nn.functional`` first, then ``torch``, then the Tensor method; :data:`TORCH_FUNCTIONS` maps the
few that differ) and compares:

- acceptance: both raise, or both return tensors of the same shapes and dtypes. oneflow_lite returning
  where PyTorch raises is a *silent acceptance*, the dangerous kind; raising where PyTorch returns is a
  *refusal*;
- values, NaN-aware (NaN matches NaN, an infinity matches the same infinity), with tolerances per dtype;
- gradients of every floating input requiring grad, for the same output gradients.

Each disagreement has a kind (``silent acceptance``, ``refusal``, ``shape``, ``dtype``, ``value``,
``grad``, ``grad refusal``, ``grad acceptance``). The ones kept on purpose are listed, with the reason, in
``docs/deviations.md`` and in :data:`KNOWN` below; ``tests/test_fuzz_ops.py`` fails on any other.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch
from fuzzing import FUNCTIONS, RANDOM, Call, Outcome, Tally, TensorArg, _as_outputs, _normalise, build, run_guarded

import oneflow_lite as flow

# ---- calling PyTorch ----------------------------------------------------------------------------------------

def _torch_dtype(d):
    return getattr(torch, d.name)


def _sorting(fn):
    """torch.sort / argsort take ``stable`` only with ``dim`` and ``descending`` by keyword."""
    def call(x, dim=-1, descending=False, stable=False):
        return fn(x, dim=dim, descending=descending, stable=stable)
    return call


TORCH_FUNCTIONS = {
    "sort": _sorting(torch.sort),
    "argsort": _sorting(torch.argsort),
    "cast": lambda x, dtype: x.to(dtype),
    "view": torch.Tensor.view,
    "contiguous": torch.Tensor.contiguous,
    "expand": torch.Tensor.expand,
    "expand_as": torch.Tensor.expand_as,
    "repeat": torch.Tensor.repeat,
    "unflatten": torch.unflatten,
}

# Keywords of oneflow_lite's signatures PyTorch's function does not take: (name, value) -> what to do.
# ``inplace=True`` of an elementwise function is PyTorch's ``<name>_`` method.
_DROPPED = {"_stacklevel"}


def torch_function(name: str):
    """PyTorch's callable for ``flow.<name>``, or None."""
    if name in TORCH_FUNCTIONS:
        return TORCH_FUNCTIONS[name]
    for ns in (torch.nn.functional, torch, torch.special):
        fn = getattr(ns, name, None)
        if callable(fn):
            return fn
    method = getattr(torch.Tensor, name, None)
    return method if callable(method) else None


def build_torch_tensor(arg: TensorArg):
    dtype = _torch_dtype(arg.dtype)
    if arg.device == "meta":
        return torch.empty(arg.shape, dtype=dtype, device="meta"), None
    rg = arg.requires_grad and arg.dtype.is_floating_point
    src = arg.source

    def leaf(a):
        a = np.asarray(a)
        t = torch.from_numpy(a.astype(np.float32) if arg.dtype is flow.bfloat16 else a.copy()).to(dtype)
        return t.clone().requires_grad_(rg)  # storage of PyTorch's own (from_numpy's cannot be resized)

    if arg.layout == "transposed":
        base = leaf(src.transpose().copy(order="C"))
        return base.permute(*reversed(range(src.ndim))), base
    if arg.layout == "sliced":
        base = leaf(np.repeat(src, 2, axis=-1))
        return base[..., ::2], base
    base = leaf(src.copy(order="C"))
    if arg.layout == "expanded":
        return base.expand(*arg.shape), base
    return base, base


def _to_torch_value(value, make):
    if isinstance(value, TensorArg):
        return make(value)
    if isinstance(value, list) and value and all(isinstance(v, TensorArg) for v in value):
        return [make(v) for v in value]
    if isinstance(value, flow.dtype):
        return _torch_dtype(value)
    if isinstance(value, flow.Generator):
        return torch.Generator()
    return value


def _canonical(call: Call) -> tuple[list, dict]:
    """The call's arguments the way PyTorch's functions take them: positionally in the signature's order (an
    argument left out is given its default, as some of PyTorch's functions have none), by keyword from the
    first one left out or given as its None default on (PyTorch often refuses an explicit None where leaving
    the argument out is fine); keyword-only ones and ``inplace`` by keyword."""
    sig = FUNCTIONS[call.name][call.overload]
    given = dict(zip([a.name for a in sig.positional], call.args))
    args, kwargs, by_keyword = [], {}, False
    for spec in sig.args:
        if spec.name in call.kwargs or spec.name in given:
            value = call.kwargs[spec.name] if spec.name in call.kwargs else given[spec.name]
        elif spec.has_default and spec.default is not None and not by_keyword and not spec.kw_only:
            value = spec.default
        else:
            by_keyword = by_keyword or not spec.kw_only
            continue
        if value is None and spec.has_default and spec.default is None:
            by_keyword = by_keyword or not spec.kw_only
            continue
        if spec.kw_only or by_keyword or spec.name == "inplace":
            kwargs[spec.name] = value
        else:
            args.append(value)
    kwargs.update({k: v for k, v in call.kwargs.items() if k not in sig.by_name})  # unknown keywords stay
    args += call.args[len(sig.positional):]  # and so do surplus positional ones
    return args, kwargs


def _takes_inplace(fn) -> bool:
    try:
        return "inplace" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def torch_call(call: Call):
    """(function, args, kwargs, leaves) of ``call`` for PyTorch; function None when PyTorch has no such."""
    fn = torch_function(call.name)
    leaves = []

    def make(arg):
        t, leaf = build_torch_tensor(arg)
        if leaf is not None and leaf.requires_grad:
            leaves.append(leaf)
        return t

    c_args, c_kwargs = _canonical(call)
    args = [_to_torch_value(a, make) for a in c_args]
    kwargs = {k: _to_torch_value(v, make) for k, v in c_kwargs.items()
              if k not in _DROPPED and not (k == "generator" and is_random(call.name))}
    if type(kwargs.get("inplace")) is bool and not _takes_inplace(fn) and kwargs.pop("inplace") and fn is not None:
        fn = getattr(torch.Tensor, call.name + "_", None) or getattr(torch, call.name + "_", None)  # PyTorch's <name>_
    return fn, args, kwargs, leaves


def is_random(name: str) -> bool:
    return name in RANDOM or name.rstrip("_") in RANDOM


# ---- comparing ----------------------------------------------------------------------------------------------

TOLERANCES = {"float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2), "float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}
# Ops whose index outputs may legitimately differ where the input has ties.
TIE_OPS = {"sort", "argsort", "topk", "max", "min", "argmax", "argmin", "kthvalue", "mode", "median"}


def to_numpy(t) -> np.ndarray:
    """The values of a flow or torch tensor as a NumPy array (bfloat16 as float32)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy(force=True)  # force: a ZeroTensor grad
    a = t.numpy()
    return a.astype(np.float32) if t.dtype is flow.bfloat16 else a


def values_differ(a: np.ndarray, b: np.ndarray, dtype_name: str) -> str | None:
    """Why ``a`` and ``b`` differ (NaN-aware, with the tolerances of ``dtype_name``), or None."""
    if a.shape != b.shape:
        return f"shapes {a.shape} vs {b.shape}"
    if a.dtype.kind not in "fc":
        bad = a != b
        return None if not bad.any() else f"{int(bad.sum())} of {a.size} differ, e.g. {a[bad][0]} vs {b[bad][0]}"
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    if (nan_a != nan_b).any():
        i = np.argwhere(nan_a != nan_b)[0]
        return f"NaN placement differs, e.g. at {tuple(i)}: {a64[tuple(i)]} vs {b64[tuple(i)]}"
    inf_a, inf_b = np.isinf(a64), np.isinf(b64)
    if ((inf_a | inf_b) & (a64 != b64) & ~nan_a).any():
        i = np.argwhere((inf_a | inf_b) & (a64 != b64) & ~nan_a)[0]
        return f"infinity differs, e.g. at {tuple(i)}: {a64[tuple(i)]} vs {b64[tuple(i)]}"
    rtol, atol = TOLERANCES.get(dtype_name, (1e-4, 1e-5))
    fin = np.isfinite(a64) & np.isfinite(b64)
    with np.errstate(all="ignore"):
        bad = fin & ~(np.abs(a64 - b64) <= atol + rtol * np.abs(b64))
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return f"{int(bad.sum())} of {a.size} differ, e.g. at {i}: {a64[i]!r} vs {b64[i]!r}"
    return None


def _as_torch_outputs(result):
    """The tensors of a PyTorch result, flattened as :func:`fuzzing._as_outputs` flattens flow's."""
    if isinstance(result, torch.Tensor):
        return (result,)
    if isinstance(result, (tuple, list)):
        parts = [() if r is None else _as_torch_outputs(r) for r in result]
        if all(p is not None for p in parts):
            return tuple(t for p in parts for t in p)
    return None


def _has_ties(call, torch_args) -> bool:
    first = next((a for a in torch_args if isinstance(a, torch.Tensor)), None)
    if first is None or first.device.type == "meta":
        return True
    flat = first.detach().reshape(-1)
    return torch.unique(flat).numel() < flat.numel()


class ParityTally(Tally):
    """Counts of a parity run: agreements by kind, and disagreements grouped by op and kind."""

    def __init__(self):
        super().__init__()
        self.counts = {"calls": 0, "both return": 0, "both refuse": 0, "silent acceptance": 0, "refusal": 0,
                       "shape": 0, "dtype": 0, "value": 0, "grad": 0, "grad refusal": 0, "grad acceptance": 0,
                       "no torch function": 0, "result": 0, "error": 0, "failure": 0}

    def add(self, call, outcome, seconds=0.0):
        self.counts["calls"] += 1
        self.counts[outcome.kind] = self.counts.get(outcome.kind, 0) + 1
        if outcome.kind in DISAGREEMENTS:
            from deviations import known  # the kept ones, by id; the others are to fix or to document

            deviation = known(call, outcome)
            tag = deviation.id if deviation is not None else "UNKNOWN"
            self.counts[f"kept: {tag}"] = self.counts.get(f"kept: {tag}", 0) + 1
            key = f"{call.name} | {outcome.kind} | [{tag}] {outcome.group}"
            g = self.groups.setdefault(key, {"count": 0, "example": repr(call)[:1500], "detail": outcome.detail})
            g["count"] += 1


DISAGREEMENTS = ("silent acceptance", "refusal", "shape", "dtype", "value", "grad", "grad refusal",
                 "grad acceptance")


def _compare_outputs(call, f_out, t_out, t_args) -> Outcome | None:
    if len(f_out) != len(t_out):
        return Outcome("shape", f"{len(f_out)} outputs vs {len(t_out)}")
    for i, (f, t) in enumerate(zip(f_out, t_out)):
        if tuple(f.shape) != tuple(t.shape):
            return Outcome("shape", f"output {i}", f"flow {tuple(f.shape)}, torch {tuple(t.shape)}")
        if f.dtype.name != str(t.dtype).replace("torch.", ""):
            return Outcome("dtype", f"output {i}: flow {f.dtype.name}, torch {str(t.dtype)[6:]}")
    if is_random(call.name) or any(t.device.type == "meta" for t in t_out):
        return None
    for i, (f, t) in enumerate(zip(f_out, t_out)):
        why = values_differ(to_numpy(f), to_numpy(t), f.dtype.name)
        if why is not None:
            if call.name in TIE_OPS and f.dtype is flow.int64 and _has_ties(call, t_args):
                continue
            return Outcome("value", f"output {i} ({f.dtype.name})", why)
    return None


def _grads(outputs, leaves, is_torch, seed):
    diff = [o for o in outputs if o.requires_grad and o.dtype.is_floating_point]
    if not diff or not leaves:
        return None, None
    rng = np.random.default_rng(seed)
    gos = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in diff]
    if is_torch:
        gos = [torch.from_numpy(g).to(o.dtype) for g, o in zip(gos, diff)]
        return run_guarded(lambda: torch.autograd.grad(diff, leaves, gos, allow_unused=True))
    gos = [flow.tensor(g).to(o.dtype) for g, o in zip(gos, diff)]
    return run_guarded(lambda: flow.autograd.grad(diff, leaves, gos, allow_unused=True))


def _compare_grads(call, f_out, f_leaves, t_out, t_leaves) -> Outcome | None:
    if is_random(call.name) or len(f_leaves) != len(t_leaves):
        return None
    fg, fe = _grads(f_out, f_leaves, False, 7)
    tg, te = _grads(t_out, t_leaves, True, 7)
    if fe is not None and te is None and tg is not None:
        return Outcome("grad refusal", f"{type(fe).__name__}: {_normalise(str(fe))}")
    if fe is None and fg is not None and te is not None:
        return Outcome("grad acceptance", f"torch: {type(te).__name__}: {_normalise(str(te))}")
    if fg is None or tg is None:
        return None
    for i, (f, t) in enumerate(zip(fg, tg)):
        if f is None or t is None:
            if (f is None) != (t is None) and not (t is not None and not t.any()) and not (
                    f is not None and not f.numpy().any()):
                return Outcome("grad", f"input {i}: gradient missing on one side")
            continue
        why = values_differ(to_numpy(f), to_numpy(t), f_leaves[i].dtype.name)
        if why is not None:
            return Outcome("grad", f"input {i} ({f_leaves[i].dtype.name})", why)
    return None


def _is_number(v) -> bool:
    return isinstance(v, (bool, int, float))


def _huge_values(call: Call) -> bool:
    return any(t.source is not None and not (np.abs(np.asarray(t.source, np.float64)) < 1e9).all()
               for t in [*call.args, *call.kwargs.values()] if isinstance(t, TensorArg))


def _integer_minimum(call: Call) -> bool:
    return any(t.source is not None and not t.dtype.is_floating_point and t.dtype is not flow.bool
               and (np.asarray(t.source) == np.iinfo(t.dtype.np_dtype).min).any()
               for t in [*call.args, *call.kwargs.values()] if isinstance(t, TensorArg))


def _unchecked_channels(call: Call) -> bool:
    """native_batch_norm's weight / bias / running stats not of one element per channel (PyTorch reads past them)."""
    x, *params = (call.args[:5] + [None] * 5)[:5]
    if not isinstance(x, TensorArg):
        return True
    channels = x.shape[1] if len(x.shape) > 1 else None
    return any(isinstance(p, TensorArg) and (len(p.shape) != 1 or p.shape[0] != channels) for p in params)


# Calls that PyTorch does not return from (its CPU binomial sampler loops on a huge or non-finite count) or that
# kill its process (lcm with the most negative integer: SIGFPE in an integer division; native_batch_norm with
# parameters of the wrong size: a segfault): not run there, counted as "torch hazard".
TORCH_HAZARDS = {"binomial": _huge_values, "lcm": _integer_minimum, "lcm_": _integer_minimum,
                 "native_batch_norm": _unchecked_channels}


def check_parity(call: Call) -> Outcome:
    """Run ``call`` in both frameworks and say how they agree (an :class:`Outcome` whose kind is an agreement
    or one of :data:`DISAGREEMENTS`)."""
    hazard = TORCH_HAZARDS.get(call.name)
    if hazard is not None and hazard(call):
        return Outcome("torch hazard")
    fn, t_args, t_kwargs, t_leaves = torch_call(call)
    if fn is None:
        return Outcome("no torch function")
    f_args, f_kwargs, f_leaves = build(call)
    f_res, f_exc = run_guarded(lambda: getattr(flow, call.name)(*f_args, **f_kwargs))
    if isinstance(f_exc, MemoryError):  # over the fuzzer's allocation limit: PyTorch would allocate it
        return Outcome("both refuse")
    t_res, t_exc = run_guarded(lambda: fn(*t_args, **t_kwargs))
    if f_exc is not None and t_exc is not None:
        return Outcome("both refuse")
    if f_exc is None and t_exc is not None:
        return Outcome("silent acceptance", f"torch: {type(t_exc).__name__}: {_normalise(str(t_exc))}")
    f_out = _as_outputs(f_res) if f_exc is None else None
    t_out = _as_torch_outputs(t_res) if t_exc is None else None
    if f_exc is not None:
        if t_out is None:  # PyTorch returned something that is not tensors (a Python number, a size)
            return Outcome("both refuse")
        return Outcome("refusal", f"{type(f_exc).__name__}: {_normalise(str(f_exc))}")
    if f_out is None and t_out is None and _is_number(f_res) and _is_number(t_res):  # allclose, equal
        same = f_res == t_res or (f_res != f_res and t_res != t_res)  # NaN == NaN here
        return Outcome("both return") if same else Outcome("value", "Python numbers", f"flow {f_res!r}, torch {t_res!r}")
    if f_out is None or t_out is None:
        return Outcome("shape", "not tensors on one side")
    bad = _compare_outputs(call, f_out, t_out, t_args) or _compare_grads(call, f_out, f_leaves, t_out, t_leaves)
    return bad or Outcome("both return")


__all__ = ["DISAGREEMENTS", "ParityTally", "check_parity", "torch_call", "torch_function", "values_differ"]
