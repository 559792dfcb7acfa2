"""``autocast_interpreter``: the boxed fallback at the Autocast dispatch key (mixed precision).

While ``flow.autocast(device_type, dtype)`` is active, the Autocast key is in the thread's included
key set, so every op call of the thread reaches this handler (Note [Dispatch key order]: above
Autograd, so the casts it inserts are recorded and differentiated, and float32 parameters get float32
gradients). It looks the op type up in the policy table (Note [Autocast policies]), casts the op's
floating inputs as the policy says, and redispatches the op below the Autocast key. The casts are
``cast`` ops dispatched from here: autograd records them, a graph being captured records them.

The thread's autocast state (``enter`` / ``leave``, used by ``flow.autocast``) is the dtype per
enabled device type and the cast cache (Note [Autocast cast cache]).
"""

from __future__ import annotations

import functools
import threading

from oneflow_lite.dispatch.dispatch_key import DispatchKey, keys_below
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import set_included
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, LAZY_KEY_SET, Tensor
from oneflow_lite.interpreters.op_interp_util import redispatch

AUTOCAST_KEY_SET = 1 << DispatchKey.Autocast
_BELOW = keys_below(DispatchKey.Autocast)
_F32 = dtypes.float32
_F64 = dtypes.float64


def lower_precision_dtypes() -> tuple:
    """The dtypes autocast can run lower-precision ops in: float16, and bfloat16 when this build has it."""
    bf16 = getattr(dtypes, "bfloat16", None)
    return (dtypes.float16,) if bf16 is None else (dtypes.float16, bf16)


# ---- the thread's autocast state -------------------------------------------------------------------
class _State(threading.local):
    def __init__(self):
        self.dtypes = {}  # device type name -> autocast dtype, for the enabled device types
        self.cache_enabled = True
        self.depth = 0  # nesting of autocast contexts (enabled or not); the cache is cleared at 0
        self.cache = {}  # Note [Autocast cast cache]


_state = _State()


def enter(device_type: str, dtype, enabled: bool, cache_enabled: bool) -> tuple:
    """Enable (or disable) autocast for ``device_type`` in this thread; returns the token ``leave`` takes to
    restore the state exactly as it was."""
    st = _state
    token = (dict(st.dtypes), st.cache_enabled, _tls.included & AUTOCAST_KEY_SET)
    if enabled:
        st.dtypes[device_type] = dtype
    else:
        st.dtypes.pop(device_type, None)
    st.cache_enabled = cache_enabled
    st.depth += 1
    _set_key(bool(st.dtypes))
    return token


def leave(token: tuple) -> None:
    """Restore the state ``enter`` returned ``token`` for; leaving the outermost context clears the cache."""
    st = _state
    st.dtypes, st.cache_enabled, key = token
    st.depth -= 1
    if st.depth == 0:
        st.cache.clear()
    _set_key(bool(key))


def _set_key(on: bool) -> None:
    included = _tls.included
    if bool(included & AUTOCAST_KEY_SET) is not on:
        set_included(included | AUTOCAST_KEY_SET if on else included & ~AUTOCAST_KEY_SET)


def state_key():
    """The thread's autocast state as a hashable value (None when autocast is off): a graph keys its captures on
    it (Note [Graph signatures] in graph/graph.py), since the casts are recorded in the captured job."""
    if not _tls.included & AUTOCAST_KEY_SET:
        return None
    return tuple(sorted((d, t.name) for d, t in _state.dtypes.items()))


def suspend() -> tuple:
    """Turn autocast off in this thread for every device type until ``resume(token)`` (nn.Graph's AMP runs
    ``backward()`` outside autocast, as an eager training step does, Note [Graph AMP] in graph/amp.py)."""
    st = _state
    token = (st.dtypes, _tls.included & AUTOCAST_KEY_SET)
    st.dtypes = {}
    _set_key(False)
    return token


def resume(token: tuple) -> None:
    _state.dtypes, key = token
    _set_key(bool(key))


def enabled_dtype(device_type: str):
    """The autocast dtype of ``device_type`` in this thread, or None when autocast is off for it."""
    return _state.dtypes.get(device_type)


def cache_size() -> int:
    """How many casts the thread's cast cache holds (for tests)."""
    return len(_state.cache)


# ---- casts ------------------------------------------------------------------------------------------
# Note [Autocast cast cache]
# As PyTorch: inside an autocast region, the lower-precision cast of a float32 leaf that requires grad
# (a parameter) is made once and reused by every op that casts it again (a weight used at every step
# of a loop is cast once). The cache maps the tensor's id to (tensor, dtype, cast); holding the tensor
# keeps its id from being reused. It is cleared when the outermost autocast context exits. A cast made
# without grad mode (not recorded) or while a graph is captured (a lazy tensor, valid in that graph
# only) is not cached.
def _cast(t, dtype):
    st = _state
    if (st.cache_enabled and t._key_set & AUTOGRAD_KEY_SET and t._ag.grad_fn is None
            and t._meta.dtype is _F32 and dtype is not _F32):
        hit = st.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] is dtype:
            return hit[2]
        c = F.ops.cast(t, dtype=dtype)
        if c._key_set & AUTOGRAD_KEY_SET and not c._key_set & LAZY_KEY_SET:
            st.cache[id(t)] = (t, dtype, c)
        return c
    return F.ops.cast(t, dtype=dtype)


def _device_dtype(inputs):
    """The autocast dtype for the device of the op's inputs, or None."""
    return _state.dtypes.get(inputs[0]._meta.device.type)


def _cast_all(inputs, target, eligible):
    """``inputs`` with every tensor whose dtype is ``eligible`` (and not ``target``) cast to ``target``, or
    None when nothing needs a cast."""
    out = None
    for i, t in enumerate(inputs):
        d = t._meta.dtype
        if d is not target and eligible(d):
            if out is None:
                out = list(inputs)
            out[i] = _cast(t, target)
    return out


def _is_floating_not_double(d) -> bool:
    return d.is_floating_point and d is not _F64


# Note [Autocast policies]
# PyTorch's CPU autocast lists (https://pytorch.org/docs/stable/amp.html, checked op by op against
# torch 2.13's ``torch.autocast("cpu")``), mapped to this package's op types:
# - lower precision: the floating inputs (but float64) are cast to the autocast dtype;
# - float32: float16 / bfloat16 inputs are cast to float32;
# - promote: the floating inputs (but float64) are cast to the widest of them (float32 if one is);
# - any other op runs in its inputs' dtypes (PyTorch's CPU lists leave softmax, the normalisations, the
#   reductions, the activations... there); batch_norm, group_norm, layer_norm and instance_norm of a
#   lower-precision input with float32 parameters compute in float32 and return the input's dtype, as
#   PyTorch's cpu kernels do (Note [Mixed-precision normalisation] in functors/nn.py).
# Functions on the lists (``addmm``, ``cdist``, ``trace``, ``quantile``, the margin losses, the linalg functors)
# are wrapped (Note [Autocast at the function level]). Other composite functions decompose: ``einsum`` is
# its op, ``scaled_dot_product_attention`` is matmuls and a softmax, ``conv_transpose*`` is
# ``conv_data_grad``; ``cross_entropy`` is ``log_softmax`` (which runs in its input's dtype) then ``nll``
# (float32), where PyTorch casts the input of the whole ``cross_entropy_loss`` to float32 first: the loss is
# float32 either way, the log-softmax differs by float16 rounding.
def lower_precision(op_expr, inputs, attrs):
    target = _device_dtype(inputs)
    return None if target is None else _cast_all(inputs, target, _is_floating_not_double)


def fp32(op_expr, inputs, attrs):
    if _device_dtype(inputs) is None:
        return None
    return _cast_all(inputs, _F32, _is_floating_not_double)


def promote(op_expr, inputs, attrs):
    target = _device_dtype(inputs)
    if target is None:
        return None
    eligible = {t._meta.dtype for t in inputs if _is_floating_not_double(t._meta.dtype)}
    if len(eligible) < 2:
        return None
    return _cast_all(inputs, _F32, _is_floating_not_double)  # two of float16, bfloat16, float32: float32


def pad_policy(op_expr, inputs, attrs):
    """``pad``: reflection over 1 or 2 dims and replication over 1 to 3 dims are on PyTorch's float32 list
    (``reflection_pad1d/2d``, ``replication_pad1d/2d/3d``); other pads run in the input's dtype."""
    full = op_expr.compose_attrs(attrs)
    mode = full["mode"]
    if mode not in ("reflect", "replicate"):
        return None
    padded = [i for i, (b, a) in enumerate(zip(full["padding_before"], full["padding_after"])) if b or a]
    n = len(full["padding_before"]) - padded[0] if padded else 0
    if 0 < n <= (2 if mode == "reflect" else 3):
        return fp32(op_expr, inputs, attrs)
    return None


# Note [Autocast at the function level]
# A composite function, or a functor that checks its arguments before it dispatches, is invisible to the op
# policies. PyTorch's aten ops on its lists are functions here (``addmm``, ``cdist``, ``trace``, the margin
# losses, the linalg functors that check the dtype first...): they are wrapped to run as PyTorch runs them under
# autocast: their floating (not float64) tensor arguments cast to the policy's dtype, and the body run with
# autocast off, so everything inside stays in that dtype. A function PyTorch leaves off the lists but that is
# built here of listed ops (``mv`` and ``dot`` are ``matmul``s) runs with autocast off on its arguments as
# given. Without autocast each wrapper costs one key-set test.
def _autocast_function(target, fn):
    """``fn`` run under autocast with its arguments cast to ``target(autocast dtype)`` (None: as given) and its
    body with autocast off (Note [Autocast at the function level])."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not _tls.included & AUTOCAST_KEY_SET:
            return fn(*args, **kwargs)
        args = [_cast_argument(a, target) for a in args]
        kwargs = {k: _cast_argument(v, target) for k, v in kwargs.items()}
        token = suspend()
        try:
            return fn(*args, **kwargs)
        finally:
            resume(token)
    return call


def _cast_argument(a, target):
    if not isinstance(a, Tensor) or not _is_floating_not_double(a._meta.dtype):
        return a
    autocast_dtype = _state.dtypes.get(a._meta.device.type)
    dtype = None if autocast_dtype is None else target(autocast_dtype)
    return a if dtype is None or dtype is a._meta.dtype else _cast(a, dtype)


def _to_float32(autocast_dtype):
    return _F32


def _to_autocast_dtype(autocast_dtype):
    return autocast_dtype


def _as_given(autocast_dtype):
    return None


def promote_function(fn):
    """``fn``, on PyTorch's promote list (``index_copy``): under autocast, floating (not float64) tensor arguments
    of several dtypes are cast to float32 and the body runs with autocast off (Note [Autocast at the function
    level]); arguments of one dtype run as given."""
    as_float32 = fp32_function(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _tls.included & AUTOCAST_KEY_SET and len({a._meta.dtype for a in (*args, *kwargs.values())
                                                     if isinstance(a, Tensor)
                                                     and _is_floating_not_double(a._meta.dtype)}) > 1:
            return as_float32(*args, **kwargs)
        return fn(*args, **kwargs)
    return call


fp32_function = functools.partial(_autocast_function, _to_float32)  # PyTorch's float32 list
lower_precision_function = functools.partial(_autocast_function, _to_autocast_dtype)  # its lower-precision list
without_autocast = functools.partial(_autocast_function, _as_given)  # on no list, built of listed ops here


LOWER_PRECISION_OPS = ("matmul", "linear", "conv1d", "conv2d", "conv3d", "conv_data_grad", "baddbmm", "einsum")
FP32_OPS = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div_loss", "binary_cross_entropy",
            "binary_cross_entropy_with_logits", "nll", "nll_smooth", "reduce_prod", "avg_pool3d", "max_pool3d",
            "adaptive_avg_pool3d", "adaptive_max_pool3d", "max_unpool2d", "max_unpool3d", "fractional_max_pool2d",
            "fractional_max_pool3d", "linalg_inv", "linalg_solve", "linalg_solve_triangular", "linalg_cholesky",
            "linalg_qr", "linalg_svd", "linalg_eigh", "linalg_pinv", "linalg_lu_factor", "geqrf")
PROMOTE_OPS = ("cat", "stack")

# op type -> policy(op_expr, inputs, attrs) -> the cast inputs, or None to run the op as called
POLICIES = {
    **{op: lower_precision for op in LOWER_PRECISION_OPS},
    **{op: fp32 for op in FP32_OPS},
    **{op: promote for op in PROMOTE_OPS},
    "pad": pad_policy,
}


def register_policy(op_type: str, policy):
    """Give ``op_type`` an autocast policy (``lower_precision``, ``fp32``, ``promote`` or a function of the
    same signature; None removes it); returns the previous one. For ops defined outside the package."""
    if policy is not None and not callable(policy):
        raise TypeError(f"autocast.register_policy('{op_type}'): expected a callable policy or None, got {policy!r}")
    previous = POLICIES.get(op_type)
    if policy is None:
        POLICIES.pop(op_type, None)
    else:
        POLICIES[op_type] = policy
    return previous


# ---- the handler ------------------------------------------------------------------------------------
def autocast_interpreter(op_expr, ks, inputs, attrs, outputs):
    """Cast the op's inputs as its policy says, then run it below the Autocast key."""
    policy = POLICIES.get(op_expr.op_type_name)
    if policy is not None and outputs is None and inputs:
        cast = policy(op_expr, inputs, attrs)
        if cast is not None:
            inputs = tuple(cast)
            ks = 0
            for t in inputs:
                ks |= t._key_set
            st = _tls
            ks = (ks | st.included) & ~st.excluded
    return redispatch(op_expr, ks & _BELOW, inputs, attrs, outputs)


def register():
    """Register the interpreter as the fallback at the Autocast key; returns the handle."""
    return DISPATCHER.register_fallback(DispatchKey.Autocast, autocast_interpreter)


class AutocastInterpreter:
    """The autocast handler's namespace (the handler is a function for speed)."""

    apply = staticmethod(autocast_interpreter)
