"""``opcheck``: a library op's registrations checked against each other on sample inputs.

In the spirit of ``torch.library.opcheck``. Three checks, each run on every sample:

- ``registrations``: the op has what its use needs: a fake, a kernel on the samples'
  devices (or a device fallback), a backward when it takes and returns floating
  tensors (a composite needs none of them);
- ``fake``: the fake's output shapes and dtypes equal those of the arrays the kernel
  returns when called directly, and the op run eagerly returns tensors on the inputs'
  device;
- ``autograd``: the registered backward against central finite differences
  (``gradcheck``), in float64 where the op runs in float64, else in the samples'
  dtypes with looser tolerances.
"""

from __future__ import annotations

import warnings

import numpy as np

from oneflow_lite.autograd.grad_check import GradcheckError, gradcheck
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.signature import SignatureMismatch
from oneflow_lite.library.ops import LibraryOp, find

CHECKS = ("registrations", "fake", "autograd")


class CheckResult:
    """One check: ``name``, ``ok``, ``notes`` (what was checked) and ``failures`` (what went wrong)."""

    def __init__(self, name: str):
        self.name = name
        self.notes: list[str] = []
        self.failures: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.failures

    def __repr__(self):
        return f"<CheckResult {self.name}: {'ok' if self.ok else 'FAILED'}>"


class OpCheckReport:
    """What :func:`opcheck` found: ``ok``, ``results`` (name -> :class:`CheckResult`); ``str()`` reads it out."""

    def __init__(self, qualname: str, n_samples: int, results: dict):
        self.op = qualname
        self.n_samples = n_samples
        self.results: dict[str, CheckResult] = results

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results.values())

    @property
    def failures(self) -> list[str]:
        return [f"{r.name}: {f}" for r in self.results.values() for f in r.failures]

    def __str__(self):
        lines = [f"opcheck {self.op} on {self.n_samples} sample(s): {'ok' if self.ok else 'FAILED'}"]
        for r in self.results.values():
            lines.append(f"  {r.name}: {'ok' if r.ok else 'FAILED'}" + (f" ({'; '.join(r.notes)})" if r.notes else ""))
            lines.extend(f"    {f}" for f in r.failures)
        return "\n".join(lines)

    def __repr__(self):
        return f"<OpCheckReport {self.op}: {'ok' if self.ok else f'{len(self.failures)} failure(s)'}>"


def _samples(sample_inputs, op: LibraryOp) -> list:
    """Each sample as (args, kwargs): a sample is a tuple of arguments, a single Tensor, or (args, kwargs)."""
    if isinstance(sample_inputs, (Tensor, tuple)) and not _is_pair(sample_inputs):
        sample_inputs = [sample_inputs]
    samples = []
    for s in sample_inputs:
        if isinstance(s, Tensor):
            samples.append(((s,), {}))
        elif _is_pair(s):
            samples.append((tuple(s[0]), dict(s[1])))
        elif isinstance(s, (tuple, list)):
            samples.append((tuple(s), {}))
        else:
            raise TypeError(f"flow.library.opcheck('{op.qualname}'): a sample is a tuple of arguments, a Tensor or "
                            f"(args, kwargs), got {type(s).__name__}")
    if not samples:
        raise ValueError(f"flow.library.opcheck('{op.qualname}'): no samples given")
    return samples


def _is_pair(s) -> bool:
    return isinstance(s, (tuple, list)) and len(s) == 2 and isinstance(s[0], (tuple, list)) and isinstance(s[1], dict)


class _Call:
    """One sample bound to the op's schema: its values, tensors and attrs as the functor makes them."""

    def __init__(self, op: LibraryOp, args, kwargs):
        self.op = op
        self.args, self.kwargs = args, kwargs
        self.values = op.function.signatures[0].bind(op.op_type, args, kwargs)
        self.tensors = [t for (_, kind, _), v in zip(op.params, self.values) if kind != "attr"
                        for t in ((v,) if isinstance(v, Tensor) else (v or ()))]

    @property
    def devices(self) -> set:
        return {t.device.type for t in self.tensors}

    def differentiable(self) -> bool:
        return any(t.dtype.is_floating_point for t in self.tensors)


def opcheck(op, sample_inputs, *, checks=CHECKS) -> OpCheckReport:
    """Check the registrations of the library op ``op`` (``"my_ns::scale"`` or ``flow.ops.my_ns.scale``) on
    ``sample_inputs`` (a list of samples: a tuple of arguments, a Tensor, or ``(args, kwargs)``). Returns an
    :class:`OpCheckReport`: ``report.ok``, ``print(report)``."""
    target = find(op, "flow.library.opcheck")
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise ValueError(f"flow.library.opcheck: unknown check(s) {unknown} (argument checks); known: {CHECKS}")
    calls = []
    for i, (args, kwargs) in enumerate(_samples(sample_inputs, target)):
        try:
            calls.append(_Call(target, args, kwargs))
        except SignatureMismatch as e:
            raise TypeError(f"flow.library.opcheck('{target.qualname}'): sample {i} does not fit the schema "
                            f"{target.schema}: {e}") from None
    results = {}
    for name in checks:
        result = results[name] = CheckResult(name)
        _RUN[name](target, calls, result)
    return OpCheckReport(target.qualname, len(calls), results)


def _check_registrations(op: LibraryOp, calls, result) -> None:
    if op.composite is not None:
        result.notes.append(f"composite at {op.composite.location}: runs the ops it calls")
        return
    if op.fake is None:
        result.failures.append(f"no fake: register the shape and dtype inference with "
                               f"flow.library.register_fake('{op.qualname}')")
    devices = sorted(set().union(*[c.devices for c in calls]) or {"cpu"})
    for d in devices:
        if d not in op.kernels and DISPATCHER.device_fallback(d) is None and d != "meta":
            result.failures.append(f"no kernel on '{d}' (the samples' device): register one with "
                                   f"flow.library.impl('{op.qualname}', '{d}')")
    result.notes.append(f"kernels on {', '.join(sorted(op.kernels)) or 'no device'}")
    if op.autograd is None and any(c.differentiable() for c in calls) and _returns_floats(op, calls):
        result.failures.append(f"it takes and returns floating tensors but has no backward: gradients would fail "
                               f"at backward; register one with flow.library.register_autograd('{op.qualname}', ...)")


def _returns_floats(op, calls) -> bool:
    for c in calls:
        try:
            outs = op.fake_outputs(tuple([t._meta for t in c.tensors]), _slices_of(op, c), _attrs_of(op, c))
        except Exception:  # noqa: BLE001 - the fake check reports it
            return True
        if any(d.is_floating_point for _, d in outs):
            return True
    return False


def _attrs_of(op, call) -> dict:
    attrs = {spec.name: (float(v) if attr_type == "double" else v)
             for (spec, kind, attr_type), v in zip(op.params, call.values) if kind == "attr"}
    if op.needs_counts:
        attrs["_counts"] = _counts(op, call)
    return attrs


def _counts(op, call) -> tuple:
    return tuple([(1 if isinstance(v, Tensor) else len(v) if isinstance(v, (tuple, list)) else 0)
                  for (_, kind, _), v in zip(op.params, call.values) if kind != "attr"])


def _slices_of(op, call) -> dict:
    return op.slices_of({"_counts": _counts(op, call)} if op.needs_counts else {})


def _check_fake(op: LibraryOp, calls, result) -> None:
    if op.composite is not None:
        result.notes.append("a composite has no fake: its ops infer their own outputs")
        return
    for i, call in enumerate(calls):
        if call.tensors and len(call.devices) == 1 and next(iter(call.devices)) == "meta":
            continue
        attrs, slices = _attrs_of(op, call), _slices_of(op, call)
        try:
            fake = op.fake_outputs(tuple([t._meta for t in call.tensors]), slices, attrs)
        except Exception as e:  # noqa: BLE001 - reported
            result.failures.append(f"sample {i}: the fake raised {type(e).__name__}: {e}")
            continue
        device = next(iter(call.devices)) if call.tensors else "cpu"
        kernel = op.kernels.get(device)
        if kernel is None:
            result.notes.append(f"sample {i}: no '{device}' kernel of its own to compare with")
            continue
        args, kwargs = op.split(op.values([t.numpy() for t in call.tensors], slices, attrs))
        try:
            real = kernel.fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - reported
            result.failures.append(f"sample {i}: the '{device}' kernel raised {type(e).__name__}: {e}")
            continue
        _compare(i, device, fake, real, result)
        _check_eager_device(op, i, call, device, result)
    if result.ok:
        result.notes.append("the fake's shapes and dtypes match the kernels' outputs")


def _compare(i, device, fake, real, result) -> None:
    arrays = list(real) if isinstance(real, (tuple, list)) else [real]
    if len(arrays) != len(fake):
        result.failures.append(f"sample {i}: the fake makes {len(fake)} output(s), the '{device}' kernel returned "
                               f"{len(arrays)}")
        return
    for j, ((shape, dtype), a) in enumerate(zip(fake, arrays)):
        a = np.asarray(a)
        if a.shape != shape or a.dtype != dtype.np_dtype:
            result.failures.append(f"sample {i}, output {j}: the fake says shape {shape}, dtype {dtype.name}; the "
                                   f"'{device}' kernel returned shape {a.shape}, dtype {a.dtype}")


def _check_eager_device(op, i, call, device, result) -> None:
    try:
        outs = op.function(*call.args, **call.kwargs)
    except Exception as e:  # noqa: BLE001 - reported
        result.failures.append(f"sample {i}: the op raised {type(e).__name__}: {e}")
        return
    for j, o in enumerate(outs if isinstance(outs, tuple) else (outs,)):
        if call.tensors and o.device.type != device:
            result.failures.append(f"sample {i}, output {j}: on '{o.device}', the inputs on '{device}'")


def _check_autograd(op: LibraryOp, calls, result) -> None:
    if op.autograd is None and op.composite is None:
        result.notes.append("no backward registered: nothing to check")
        return
    for i, call in enumerate(calls):
        if not call.differentiable():
            result.notes.append(f"sample {i}: no floating tensor input")
            continue
        for dtype, tolerances in ((dtypes.float64, {}), (None, {"eps": 1e-3, "atol": 1e-2, "rtol": 1e-2})):
            fn, inputs = _gradcheck_problem(op, call, dtype)
            try:
                fn(*inputs)
            except Exception:  # noqa: BLE001, S112 - the op does not run in float64: check in the sample's dtypes
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    gradcheck(fn, inputs, **tolerances)
                result.notes.append(f"sample {i}: gradcheck in {'float64' if dtype else 'the sample dtypes'}")
            except GradcheckError as e:
                result.failures.append(f"sample {i}: the backward differs from finite differences: "
                                       f"{str(e).splitlines()[0]}")
            except Exception as e:  # noqa: BLE001 - reported
                result.failures.append(f"sample {i}: backward raised {type(e).__name__}: {e}")
            break


def _gradcheck_problem(op, call, dtype) -> tuple:
    """(function of the floating tensors, those tensors as fresh leaves requiring grad) for one sample."""
    floats = [t for t in call.tensors if t.dtype.is_floating_point]
    leaves = [t.detach().to(dtype=dtype or t.dtype, copy=True).requires_grad_() for t in floats]
    positions = {id(t): k for k, t in enumerate(floats)}

    def fn(*ts):
        def swap(v):
            if isinstance(v, Tensor):
                return ts[positions[id(v)]] if id(v) in positions else v
            if isinstance(v, tuple) and all(isinstance(x, Tensor) for x in v):
                return tuple(swap(x) for x in v)
            return v
        args, kwargs = op.split([swap(v) for v in call.values])
        return op.function(*args, **kwargs)
    return fn, tuple(leaves)


_RUN = {"registrations": _check_registrations, "fake": _check_fake, "autograd": _check_autograd}
