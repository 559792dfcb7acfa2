"""The op fuzzer: calls of every functional function, generated from its signatures.

Every entry of ``functors.functional_api.FUNCTIONAL_API`` is fuzzed (a new entry is picked up without
editing anything here). For one call, :func:`draw_call` reads the chosen overload's argument specs and
draws a value per argument from its type and, for a few well-known names (``dim``, ``index``,
``kernel_size``, ``reduction`` ...), from what the name usually means: shapes with 0-d and empty
tensors, every dtype (bfloat16 included), contiguous, transposed, sliced and expanded layouts, values
with NaN, +-Inf, +-0, huge and denormal numbers, dims in and out of range, shapes that do not broadcast,
and, now and then, an argument of the wrong kind (None, a str, a list, a NumPy array, a tensor on
``meta``).

A drawn call is a :class:`Call`: plain data that builds the same arguments for oneflow_lite on cpu, on
``meta`` and for PyTorch (:func:`build`), and prints as a reproducer.

:func:`check_call` runs a call and classifies what happened (:class:`Outcome`): a result whose shapes and
dtypes agree with the meta device's, a clear error (a documented exception type whose message names the
op), or a failure (anything else). ``tests/test_fuzz_ops.py`` asserts there is no failure;
``python tests/fuzzing.py`` runs many more examples and prints the failures grouped by cause.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import oneflow_lite as flow
from oneflow_lite.framework import dtype as dtypes

try:
    from oneflow_lite.framework.errors import KernelContractError
except ImportError:  # an older oneflow_lite, for before / after figures: its kernel-contract errors are plain
    class KernelContractError(RuntimeError):
        pass
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors import registry as functor_registry

try:
    from oneflow_lite.interpreters.eager_local import set_allocation_limit
except ImportError:  # an older oneflow_lite, without the limit
    def set_allocation_limit(nbytes):
        return nbytes
from oneflow_lite.functors.functional_api import FUNCTIONAL_API
from oneflow_lite.functors.signature import Signature

# ---- what is fuzzed -----------------------------------------------------------------------------------------

FUNCTIONS: dict[str, list[Signature]] = {name: [Signature(s) for s in sigs] for name, sigs in FUNCTIONAL_API.items()}
NAMES = sorted(FUNCTIONS)

DTYPES = dtypes.ALL_DTYPES + dtypes.STORAGE_DTYPES
FLOAT_DTYPES = (flow.float16, flow.float32, flow.float64, flow.bfloat16)

# The exception types a call may raise (docs/errors.md); RuntimeError covers framework/errors.py's subclasses
# and NotImplementedError. KernelContractError (a kernel broke its op's inference) is a RuntimeError that is
# always a bug.
DOCUMENTED = (TypeError, ValueError, IndexError, RuntimeError, MemoryError)

# Outputs whose values are drawn at random: compared by shape and dtype only.
RANDOM = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
          "feature_dropout", "rrelu", "rrelu_", "gumbel_softmax", "rand", "randn", "rand_like", "randn_like",
          "randint", "randint_like", "randperm", "normal", "multinomial", "bernoulli", "poisson", "empty",
          "empty_like", "empty_strided", "fractional_max_pool2d", "fractional_max_pool3d",
          "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices", "native_dropout", "binomial"}

# ---- values -------------------------------------------------------------------------------------------------

SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1e30, -1e30, 1e-40, 5e-324, 65504.0, 1.0, -1.0)
HUGE_INT = 2 ** 40


def _special_for(np_dtype):
    with np.errstate(all="ignore"):
        return np.array(SPECIAL_FLOATS, np.float64).astype(np_dtype)


def make_values(shape, dtype, rng, kind="data", special=False, bound=4):
    """A NumPy array of ``shape`` and flow ``dtype``: ``kind`` is ``data`` (anything), ``index`` (ints in
    ``[0, bound)``, now and then out of range) or ``mask`` (bools)."""
    np_dtype = dtype.np_dtype
    if dtype is flow.bool:
        return np.asarray(rng.random(shape) < 0.5)
    if kind == "index" and not dtype.is_floating_point:
        lo = -1 if rng.random() < 0.1 else 0
        hi = bound + (1 if rng.random() < 0.1 else 0)
        return np.asarray(rng.integers(lo, max(hi, lo + 1), size=shape)).astype(np_dtype)
    if dtype.is_floating_point:
        a = np.asarray(rng.standard_normal(shape) * 2.0).astype(np.float32).astype(np_dtype)
        if special and a.size:
            picks = _special_for(np_dtype)
            where = np.asarray(rng.random(shape) < 0.3)
            a[where] = rng.choice(picks, size=int(where.sum()))
        return a
    info = np.iinfo(np_dtype)
    lo, hi = max(info.min, -9), min(info.max, 10)
    a = np.asarray(rng.integers(lo, hi, size=shape, endpoint=False)).astype(np_dtype)
    if special and a.size:
        where = np.asarray(rng.random(shape) < 0.2)
        a[where] = rng.choice(np.array([info.min, info.max, 0], dtype=np_dtype), size=int(where.sum()))
    return a


@dataclass
class TensorArg:
    """One tensor argument: its values, the layout that gives it its strides, device and requires_grad.
    ``source`` is the array the layout starts from (the unexpanded one for ``expanded``)."""

    source: np.ndarray
    dtype: object
    shape: tuple
    layout: str = "contiguous"  # contiguous | transposed | sliced | expanded
    device: str = "cpu"
    requires_grad: bool = False

    def __repr__(self):
        vals = np.array2string(np.asarray(self.source, np.float64 if self.dtype is flow.bfloat16 else None),
                               threshold=12, separator=", ")
        extra = "" if self.layout == "contiguous" else f", layout={self.layout}"
        extra += "" if self.device == "cpu" else f", device={self.device}"
        extra += ", requires_grad=True" if self.requires_grad else ""
        return f"T({vals.replace(chr(10), '')}, {self.dtype.name}, shape={self.shape}{extra})"


def _grad_ok(dtype):
    return dtype.is_floating_point


def build_flow_tensor(arg: TensorArg, device=None):
    """The oneflow_lite tensor of ``arg``; returns (tensor, leaf or None)."""
    device = device or arg.device
    if device == "meta":
        return flow.empty(arg.shape, dtype=arg.dtype, device="meta"), None
    rg = arg.requires_grad and _grad_ok(arg.dtype)
    src = arg.source
    if arg.layout == "transposed":
        base = flow.tensor(src.transpose().copy(order="C"), dtype=arg.dtype, requires_grad=rg)
        return base.permute(*reversed(range(src.ndim))), base
    if arg.layout == "sliced":
        base = flow.tensor(np.repeat(src, 2, axis=-1), dtype=arg.dtype, requires_grad=rg)
        return base[..., ::2], base
    base = flow.tensor(src.copy(order="C"), dtype=arg.dtype, requires_grad=rg)
    if arg.layout == "expanded":
        return base.expand(*arg.shape), base
    return base, base


@dataclass
class Call:
    """One generated call of ``flow.<name>``: values are plain Python values, :class:`TensorArg`, or lists of
    them (``TensorTuple``). ``overload`` is the signature the arguments were drawn for."""

    name: str
    args: list
    kwargs: dict
    overload: int = 0
    notes: list = field(default_factory=list)

    def __repr__(self):
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"flow.{self.name}({', '.join(parts)})"


def _map_values(value, fn):
    if isinstance(value, TensorArg):
        return fn(value)
    if isinstance(value, list) and value and all(isinstance(v, TensorArg) for v in value):
        return [fn(v) for v in value]
    return value


def build(call: Call, device=None):
    """(args, kwargs, leaves) of ``call`` for oneflow_lite: tensors on their own devices, or all on
    ``device``; leaves are the tensors requiring grad (the bases of views)."""
    leaves = []

    def make(arg):
        t, leaf = build_flow_tensor(arg, device)
        if leaf is not None and leaf.requires_grad:
            leaves.append(leaf)
        return t

    args = [_map_values(a, make) for a in call.args]
    kwargs = {k: _map_values(v, make) for k, v in call.kwargs.items()}
    return args, kwargs, leaves


# ---- drawing calls ------------------------------------------------------------------------------------------

DIM_NAMES = {"dim", "dim0", "dim1", "start_dim", "end_dim", "axis"}
INDEX_TENSORS = {"index", "indices", "offsets", "input_lengths", "target_lengths", "targets", "per_sample_weights"}
MASK_TENSORS = {"mask", "condition"}
CHANNEL_TENSORS = {"weight", "bias", "running_mean", "running_var", "pos_weight"}
STRINGS = {
    "approximate": ["none", "tanh"],
    "reduction": ["mean", "sum", "none"],
    "mode": ["constant", "reflect", "replicate", "circular", "nearest", "linear", "bilinear", "bicubic",
             "trilinear", "area", "nearest-exact", "sum", "mean", "max"],
    "padding_mode": ["zeros", "border", "reflection"],
    "padding": ["valid", "same"],
    "rounding_mode": ["trunc", "floor"],
    "p": ["fro", "nuc"],
    "reduce": ["add", "multiply"],
}
EQUATIONS = ["i->", "ij->ji", "ij,jk->ik", "i,i->", "...ij->...ji", "bij,bjk->bik", "ii->i", "ij", "i,j->ij"]
HOSTILE = ("none", "str", "list", "ndarray", "float", "meta", "huge")


@dataclass
class _Ctx:
    """What has been drawn so far for one call: shapes other arguments relate to."""

    rng: np.random.Generator
    base: tuple
    dtype: object
    special: bool
    first: TensorArg | None = None


def _shape(draw, max_dims=4, max_side=4):
    nd = draw(st.integers(0, max_dims))
    return tuple(draw(st.lists(st.integers(0, max_side), min_size=nd, max_size=nd)))


def _nonempty_bias(draw, shape):
    """Most shapes have no zero side (empty tensors are drawn, but not most of the time)."""
    if 0 in shape and draw(st.integers(0, 3)):
        return tuple(s or 1 for s in shape)
    return shape


def _related_shape(draw, ctx, name):
    base = ctx.base
    choice = draw(st.integers(0, 9))
    if choice < 5:
        return base
    if choice < 7 and base:  # broadcastable: drop leading dims, set some to 1
        k = draw(st.integers(0, len(base)))
        return tuple(1 if draw(st.booleans()) else s for s in base[k:])
    if choice < 8 and name in CHANNEL_TENSORS and len(base) >= 2:
        return (base[1],)
    if choice < 9 and name == "weight" and len(base) >= 3:  # a convolution weight
        return (draw(st.integers(1, 3)), base[1], *[draw(st.integers(1, 3)) for _ in base[2:]])
    return _nonempty_bias(draw, _shape(draw))


def _layout(draw, shape):
    options = ["contiguous"] * 4
    if len(shape) >= 2:
        options.append("transposed")
    if len(shape) >= 1:
        options += ["sliced", "expanded"]
    return draw(st.sampled_from(options))


def draw_tensor(draw, ctx: _Ctx, name: str, shape=None, dtype=None, kind=None) -> TensorArg:
    if kind is None:
        kind = "index" if name in INDEX_TENSORS else "mask" if name in MASK_TENSORS else "data"
        if name in ("target", "tensor") and draw(st.booleans()):
            kind = "index"
    if shape is None:
        shape = ctx.base if ctx.first is None else _related_shape(draw, ctx, name)
    if dtype is None:
        if kind == "index":
            dtype = draw(st.sampled_from([flow.int64] * 6 + [flow.int32, flow.uint8, flow.float32, flow.bool]))
        elif kind == "mask":
            dtype = draw(st.sampled_from([flow.bool] * 6 + [flow.uint8, flow.float32, flow.int64]))
        else:
            dtype = ctx.dtype if draw(st.integers(0, 3)) else draw(st.sampled_from(DTYPES))
    layout = _layout(draw, shape)
    source_shape = shape
    if layout == "expanded":
        source_shape = tuple(1 if draw(st.booleans()) else s for s in shape)
    bound = max(ctx.base) if ctx.base else 2
    source = make_values(source_shape, dtype, ctx.rng, kind, ctx.special, bound=max(bound, 1))
    rg = dtype.is_floating_point and kind == "data" and draw(st.integers(0, 2)) == 0
    t = TensorArg(source, dtype, tuple(shape), layout, "cpu", rg)
    if ctx.first is None:
        ctx.first = t
    return t


def _dim(draw, ctx):
    nd = len(ctx.first.shape) if ctx.first is not None else len(ctx.base)
    lo, hi = -max(nd, 1), max(nd, 1) - 1
    if draw(st.integers(0, 7)) == 0:
        return draw(st.sampled_from([hi + 1, lo - 1, 100, -100]))
    return draw(st.integers(lo, hi))


def _small_int(draw):
    if draw(st.integers(0, 11)) == 0:
        return draw(st.sampled_from([-1, -5, 0, HUGE_INT, -HUGE_INT]))
    return draw(st.integers(0, 5))


def _shape_arg(draw, ctx):
    """A target shape: usually the first tensor's numel refactored, sometimes with -1, sometimes anything."""
    shape = ctx.first.shape if ctx.first is not None else ctx.base
    choice = draw(st.integers(0, 9))
    if choice < 4 and ctx.first is not None:
        n = int(np.prod(shape))
        k = draw(st.integers(1, 4)) if n else 1
        divs = [d for d in range(1, n + 1) if n % d == 0] or [1]
        d = draw(st.sampled_from(divs))
        out = [d, n // d][:k] if k <= 2 else [d, n // d, 1][:k]
        if draw(st.booleans()) and out:
            out[draw(st.integers(0, len(out) - 1))] = -1
        return tuple(out)
    if choice < 6:
        return tuple(shape)
    if choice < 7:
        return (HUGE_INT, HUGE_INT) if draw(st.booleans()) else (-2, 3)
    return _shape(draw)


def _int_list(draw, ctx, name, size):
    if name in ("dim", "dims"):
        n = draw(st.integers(0, 3)) if size is None else size
        return [_dim(draw, ctx) for _ in range(n)]
    if name in ("shape", "size", "sizes", "normalized_shape", "repeats") and size is None:
        return list(_shape_arg(draw, ctx))
    n = size if size is not None and draw(st.integers(0, 5)) else draw(st.integers(0, 4))
    if name == "pad" and size is None:
        n = 2 * draw(st.integers(0, 3))
    return [_small_int(draw) for _ in range(n)] if n != 1 else _small_int(draw)


def _float(draw, name):
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(SPECIAL_FLOATS + (-0.5, 2.0)))
    if name in ("p", "dropout_p", "lower", "upper", "momentum", "label_smoothing"):
        return draw(st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0]))
    if name in ("eps",):
        return draw(st.sampled_from([1e-5, 1e-12, 0.0]))
    return draw(st.floats(-3, 3, allow_nan=False, width=32))


def _scalar(draw, name, ctx):
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.booleans())
    if kind <= 2:
        return draw(st.integers(-5, 5)) if draw(st.integers(0, 7)) else draw(st.sampled_from([2 ** 31, -2 ** 63,
                                                                                             300, -129]))
    return _float(draw, name)


def _string(draw, name, spec):
    if name == "equation":
        return draw(st.sampled_from(EQUATIONS))
    options = STRINGS.get(name, [])
    if spec.has_default and isinstance(spec.default, str):
        options = [spec.default, *options]
    return draw(st.sampled_from(options + ["bad"])) if options else "bad"


def draw_value(draw, ctx: _Ctx, spec, fname: str):
    """A value for one argument spec (``None`` stays possible for optional ones)."""
    base = spec.base_type
    name = spec.name
    if spec.optional and draw(st.integers(0, 2)) == 0:
        return None
    if base == "Tensor":
        return draw_tensor(draw, ctx, name)
    if base == "TensorTuple":
        if name == "indices":
            return [draw_tensor(draw, ctx, "index") for _ in range(draw(st.integers(1, 2)))]
        n = draw(st.integers(0, 3)) if draw(st.integers(0, 5)) else 0
        return [draw_tensor(draw, ctx, "input" if i == 0 else "other") for i in range(max(n, 1) if n else 0)]
    if base == "Int":
        return _dim(draw, ctx) if name in DIM_NAMES else _small_int(draw)
    if base in ("IntList", "Shape"):
        if base == "Shape" and name not in ("stride",):
            return list(_shape_arg(draw, ctx)) if ctx.first is not None or fname else _shape(draw)
        return _int_list(draw, ctx, name, spec.size)
    if base == "OptionalIntList":
        v = _int_list(draw, ctx, name, None)
        return [None if draw(st.integers(0, 3)) == 0 else x for x in v] if isinstance(v, list) else v
    if base == "FloatList":
        fl = draw(st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 0.0, -1.0, math.nan, 1e30]), min_size=1,
                           max_size=3))
        return fl[0] if len(fl) == 1 else fl
    if base == "Float":
        return _float(draw, name)
    if base == "Scalar":
        return _scalar(draw, name, ctx)
    if base == "Bool":
        return draw(st.booleans())
    if base == "String":
        return _string(draw, name, spec)
    if base == "DataType":
        return draw(st.sampled_from(DTYPES))
    if base == "Device":
        return draw(st.sampled_from(["cpu", "cpu", "meta", "cuda", "bogus"]))
    if base == "Generator":
        return flow.Generator()
    raise AssertionError(f"no strategy for argument type {spec.type!r} ({fname}.{name})")


def _hostile(draw, ctx, kind):
    if kind == "none":
        return None
    if kind == "str":
        return "abc"
    if kind == "list":
        return [1, 2]
    if kind == "ndarray":
        return np.ones((2, 3), np.float32)
    if kind == "float":
        return 1.5
    if kind == "huge":
        return HUGE_INT
    t = draw_tensor(draw, ctx, "input", shape=ctx.base)
    t.device = "meta"
    return t


# The overloads drawn: the local ones. A global overload (``placement=`` and ``sbp=``, GlobalZeros ...) needs a
# placement and SBP, which PyTorch has no counterpart for; tests/test_global*.py cover them. An optional
# placement / sbp (``zeros_like(input, *, ..., placement=None, sbp=None)``) is left to its default.
def _global_arg(a) -> bool:
    return a.type.startswith(("Placement", "Sbp"))


LOCAL_OVERLOADS = {name: [i for i, s in enumerate(sigs) if not any(_global_arg(a) and not a.has_default
                                                                    for a in s.args)]
                   for name, sigs in FUNCTIONS.items()}


def draw_call(draw, name: str) -> Call:
    """A call of ``flow.<name>``: an overload, then a value per argument (some left to their defaults)."""
    local = LOCAL_OVERLOADS[name]
    which = local[draw(st.integers(0, len(local) - 1))]
    sig = FUNCTIONS[name][which]
    seed = draw(st.integers(0, 2 ** 32 - 1))
    base = _nonempty_bias(draw, _shape(draw, max_dims=5))
    ctx = _Ctx(np.random.default_rng(seed), base, draw(st.sampled_from(DTYPES)), draw(st.integers(0, 2)) == 0)
    args, kwargs, skipping = [], {}, False
    for spec in sig.args:
        if spec.has_default and (_global_arg(spec) or draw(st.integers(0, 2)) == 0):
            skipping = True  # left to its default: later ones go by keyword
            continue
        value = draw_value(draw, ctx, spec, name)
        if spec.kw_only or skipping:
            kwargs[spec.name] = value
        else:
            args.append(value)
    call = Call(name, args, kwargs, which)
    if (args or kwargs) and draw(st.integers(0, 9)) == 0:  # an argument of the wrong kind
        kind = draw(st.sampled_from(HOSTILE))
        if args and (not kwargs or draw(st.booleans())):
            i = draw(st.integers(0, len(args) - 1))
            args[i] = _hostile(draw, ctx, kind)
        else:
            k = draw(st.sampled_from(sorted(kwargs)))
            kwargs[k] = _hostile(draw, ctx, kind)
        call.notes.append(f"hostile:{kind}")
    return call


# ---- checking one call --------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What a call did: ``kind`` is ``result``, ``error`` (clear) or ``failure``; ``group`` names the cause
    of a failure (for grouping), ``detail`` says more."""

    kind: str
    group: str = ""
    detail: str = ""
    outputs: tuple = ()


def _as_outputs(result):
    """The tensors of a result: a tensor, or a (named) tuple or list of tensors and of tuples of tensors
    (``histogramdd``'s bin edges); None for anything else."""
    if isinstance(result, Tensor):
        return (result,)
    if isinstance(result, (tuple, list)):  # None: an output not asked for (batch_norm_backward_reduce)
        parts = [() if r is None else _as_outputs(r) for r in result]
        if all(p is not None for p in parts):
            return tuple(t for p in parts for t in p)
    return None


_BY_FUNCTOR: dict[str, set] = {}  # functor name -> the functional names that call it
for _name, _sigs in FUNCTIONS.items():
    for _s in _sigs:
        _BY_FUNCTOR.setdefault(_s.functor_name, set()).add(_name)


def _functors_of(frame) -> set:
    """The registered names of the functor (or composite function) ``frame`` runs: one functor may be
    registered under several names (``Neg`` and ``Negative``)."""
    me = frame.f_locals.get("self")
    kind = type(me) if me is not None and hasattr(me, "__call__") else None
    return {name for name, inst in functor_registry._instances.items()
            if type(inst) is kind or getattr(inst, "__code__", None) is frame.f_code}


def _op_names_in_traceback(exc) -> set:
    """The op types and functional names whose functor, dispatch, inference or kernel the exception passed
    through: an error may name the op it failed in rather than the function called."""
    names = set()
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        for v in frame.f_locals.values():
            op_type = getattr(v, "op_type_name", None) or getattr(v, "op_type", None)
            if isinstance(op_type, str):
                names.add(op_type)
        functors = _functors_of(frame)
        for functor in functors:
            names |= {functor, *_BY_FUNCTOR.get(functor, ())}
        if functors:
            for v in getattr(frame.f_locals.get("self"), "__dict__", {}).values():  # the functor's op exprs
                if isinstance(getattr(v, "op_type_name", None), str):
                    names.add(v.op_type_name)
        tb = tb.tb_next
    return names


def _names_an_op(name: str, exc) -> bool:
    message = str(exc).lower()
    candidates = {name, name.rstrip("_"), *(s.functor_name for s in FUNCTIONS[name])}
    candidates |= _op_names_in_traceback(exc)
    candidates |= {c.replace("_", ".", 1) for c in candidates}  # linalg_matrix_norm is linalg.matrix_norm
    candidates |= {re.sub(r"^(linalg_|native_)|_copy$", "", c) for c in candidates}  # multi_dot, layer_norm, slice
    for c in candidates:
        c = c.lower()
        if len(c) >= 3 and c in message:
            return True
        if re.search(rf"\b{re.escape(c)}\b", message):
            return True
    return False


def _normalise(message: str) -> str:
    message = message.splitlines()[0] if message else ""
    message = re.sub(r"-?\d+(\.\d+)?(e[+-]?\d+)?", "N", message)
    return re.sub(r"\([^()]*\)", "(..)", message)[:140]


def classify_error(name: str, exc, where: str) -> Outcome:
    if isinstance(exc, KernelContractError) or not isinstance(exc, DOCUMENTED):
        kind = "kernel contract" if isinstance(exc, KernelContractError) else "undocumented exception"
        return Outcome("failure", f"{where}: {kind} {type(exc).__name__}: {_normalise(str(exc))}",
                       "".join(traceback.format_exception(exc)[-6:]))
    if not _names_an_op(name, exc):
        return Outcome("failure", f"{where}: message names no op: {type(exc).__name__}: {_normalise(str(exc))}",
                       "".join(traceback.format_exception(exc)[-4:]))
    return Outcome("error", f"{type(exc).__name__}: {_normalise(str(exc))}")


def run_guarded(fn):
    """``fn()`` with NumPy's RuntimeWarnings turned into errors (a warning leaking from a kernel is a failure);
    returns (result, exception)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation notes and the like
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return fn(), None
        except Exception as e:  # noqa: BLE001 - classified by the caller
            return None, e


def _check_outputs(name, outputs, where) -> Outcome | None:
    for i, t in enumerate(outputs):
        a = t._array
        if t.device.type == "meta":
            continue
        if not isinstance(a, np.ndarray):
            return Outcome("failure", f"{where}: output {i} holds {type(a).__name__}, not an array")
        if a.shape != tuple(t.shape) or a.dtype != t.dtype.np_dtype:
            return Outcome("failure", f"{where}: output {i} array {a.shape}/{a.dtype} disagrees with its meta "
                                      f"{tuple(t.shape)}/{t.dtype.name}")
    return None


def _value_dependent(exc) -> bool:
    text = str(exc)
    return "meta" in text or "depends on the values" in text


def _check_meta(call: Call, outputs) -> Outcome | None:
    """The same call on meta tensors infers the shapes and dtypes cpu computed."""
    args, kwargs, _ = build(call, device="meta")
    result, exc = run_guarded(lambda: getattr(flow, call.name)(*args, **kwargs))
    if exc is not None:
        if isinstance(exc, DOCUMENTED) and _value_dependent(exc):
            return None
        out = classify_error(call.name, exc, "meta")
        return Outcome("failure", f"meta refuses what cpu accepts: {type(exc).__name__}: "
                                  f"{_normalise(str(exc))}", out.detail)
    metas = _as_outputs(result)
    if metas is None or len(metas) != len(outputs):
        return Outcome("failure", "meta returns another structure than cpu")
    for i, (c, m) in enumerate(zip(outputs, metas)):
        if tuple(c.shape) != tuple(m.shape) or c.dtype is not m.dtype:
            return Outcome("failure", f"meta infers another shape/dtype than cpu computes (output {i})",
                           f"cpu {tuple(c.shape)} {c.dtype.name}, meta {tuple(m.shape)} {m.dtype.name}")
    return None


def _check_backward(call, outputs, leaves) -> Outcome | None:
    diff = [t for t in outputs if t.requires_grad and t.dtype.is_floating_point]
    if not diff or not leaves:
        return None
    grads_out = [flow.ones_like(t) for t in diff]
    grads, exc = run_guarded(lambda: flow.autograd.grad(diff, leaves, grads_out, allow_unused=True))
    if exc is not None:
        out = classify_error(call.name, exc, "backward")
        return out if out.kind == "failure" else None
    for leaf, g in zip(leaves, grads):
        if g is not None and (tuple(g.shape) != tuple(leaf.shape) or g.dtype is not leaf.dtype):
            return Outcome("failure", "gradient shape/dtype differs from its input's",
                           f"input {tuple(leaf.shape)} {leaf.dtype.name}, grad {tuple(g.shape)} {g.dtype.name}")
    return None


def check_call(call: Call) -> Outcome:
    """Run ``call`` on cpu; check its results (against meta, and their gradients) or its error."""
    fn = getattr(flow, call.name)
    args, kwargs, leaves = build(call)
    result, exc = run_guarded(lambda: fn(*args, **kwargs))
    if exc is not None:
        return classify_error(call.name, exc, "cpu")
    if type(result) in (bool, int, float):  # allclose, equal: a Python scalar, as PyTorch
        return Outcome("result", outputs=())
    outputs = _as_outputs(result)
    if outputs is None:
        return Outcome("failure", f"returns {type(result).__name__}, not tensors")
    for check in (lambda: _check_outputs(call.name, outputs, "cpu"), lambda: _check_meta(call, outputs),
                  lambda: _check_backward(call, outputs, leaves)):
        bad = check()
        if bad is not None:
            return bad
    return Outcome("result", outputs=outputs)


# ---- budgets and the collecting runner ----------------------------------------------------------------------

def examples(default: int) -> int:
    """The examples per function: ``FLOW_FUZZ_EXAMPLES`` when set, else ``default``."""
    return int(os.environ.get("FLOW_FUZZ_EXAMPLES", default))


def selected_names() -> list[str]:
    only = os.environ.get("FLOW_FUZZ_OPS")
    return [n for n in NAMES if n in set(only.split(","))] if only else NAMES


# No shrinking: a failing call is reported as drawn (shrinking a slow op's failure can take minutes).
FUZZ_SETTINGS = {"deadline": None, "database": None, "suppress_health_check": list(HealthCheck), "print_blob": True,
                 "phases": (Phase.explicit, Phase.generate)}


class Tally:
    """Counts and failure groups of a collecting run."""

    def __init__(self):
        self.counts = {"calls": 0, "result": 0, "error": 0, "failure": 0}
        self.groups: dict[str, dict] = {}
        self.slow: list = []

    def add(self, call: Call, outcome: Outcome, seconds: float = 0.0):
        self.counts["calls"] += 1
        self.counts[outcome.kind] += 1
        if seconds > 1.0:
            self.slow.append((round(seconds, 2), repr(call)[:300]))
        if outcome.kind == "failure":
            key = f"{call.name} | {outcome.group}"
            g = self.groups.setdefault(key, {"count": 0, "example": repr(call)[:1500], "detail": outcome.detail})
            g["count"] += 1

    def report(self) -> dict:
        return {"counts": self.counts, "groups": self.groups, "slow": sorted(self.slow, reverse=True)[:30]}


# Outputs above this many bytes raise MemoryError while fuzzing (Note [Allocation limit] in
# interpreters/eager_local.py): a drawn size of 2**31 must fail at once, not compute for minutes.
FUZZ_ALLOCATION_LIMIT = 16 * 2 ** 20


def _runner(name, n_examples, check, tally):
    """A hypothesis test running ``n_examples`` calls of ``name`` into ``tally``."""
    @settings(max_examples=n_examples, **FUZZ_SETTINGS)
    @given(data=st.data())
    def run(data):
        call = draw_call(data.draw, name)
        t0 = time.perf_counter()
        outcome = check(call)
        tally.add(call, outcome, time.perf_counter() - t0)
    return run


def collect(names, n_examples, check=check_call, tally=None):
    """Run ``n_examples`` calls of each function, never stopping at a failure; returns the :class:`Tally`."""
    tally = tally or Tally()
    set_allocation_limit(FUZZ_ALLOCATION_LIMIT)
    for name in names:
        _runner(name, n_examples, check, tally)()
        print(f"{name}: {tally.counts}", file=sys.stderr, flush=True)
    return tally


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=200)
    p.add_argument("--ops", default="")
    p.add_argument("--parity", action="store_true", help="compare with PyTorch instead")
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (6 * 2 ** 30, resource.RLIM_INFINITY))  # a runaway call fails fast
    names = [n for n in NAMES if n in a.ops.split(",")] if a.ops else NAMES
    if a.parity:
        import parity

        tally = collect(names, a.examples, check=parity.check_parity, tally=parity.ParityTally())
    else:
        tally = collect(names, a.examples)
    report = tally.report()
    text = json.dumps(report, indent=1, default=str)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(json.dumps(report["counts"]), file=sys.stderr)


if __name__ == "__main__":  # run as the module ``fuzzing``, so that tests/parity.py shares its classes
    sys.path.insert(0, os.path.dirname(__file__))
    import fuzzing

    fuzzing.main()
