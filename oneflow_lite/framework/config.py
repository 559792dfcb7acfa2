"""Process-level switches PyTorch scripts set and read: print options, thread counts, determinism,
the default device, float32 matmul precision, warn-always and anomaly mode.

Note [Recorded switches]
Some of PyTorch's switches change nothing here, and are recorded so that a script reads back what it
set: every kernel is deterministic (NumPy on one device), so ``use_deterministic_algorithms`` and the
debug mode only record the choice; float32 matmul runs in float32 whatever the precision setting; the
thread counts are recorded, while NumPy's BLAS threading is fixed by the environment when NumPy is
imported (``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` before the first import).
What does change behaviour: the print options (``Tensor.__repr__``), the default device (creation
functions and ``flow.tensor``) and anomaly mode (the backward engine checks each node's gradients).
"""

from __future__ import annotations

import math
import os
import warnings

from oneflow_lite.framework.device import device as Device

# ---- print options -----------------------------------------------------------------------------------
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}
PRINT_OPTIONS = {**_PROFILES["default"], "sci_mode": None}


def _non_negative_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"set_printoptions(): argument '{name}' must be a non-negative int, got {value!r}")
    return value


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None) -> None:
    """How tensors print (PyTorch's ``set_printoptions``): ``profile`` ('default', 'short', 'full') sets
    the four numbers first; ``sci_mode`` True / False forces or forbids scientific notation, None picks."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        PRINT_OPTIONS.update(_PROFILES[profile])
    if precision is not None:
        PRINT_OPTIONS["precision"] = _non_negative_int("precision", precision)
    if threshold is not None:
        if threshold != math.inf:
            _non_negative_int("threshold", threshold)
        PRINT_OPTIONS["threshold"] = threshold
    if edgeitems is not None:
        PRINT_OPTIONS["edgeitems"] = _non_negative_int("edgeitems", edgeitems)
    if linewidth is not None:
        PRINT_OPTIONS["linewidth"] = _non_negative_int("linewidth", linewidth)
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError(f"set_printoptions(): argument 'sci_mode' must be bool or None, got {sci_mode!r}")
    PRINT_OPTIONS["sci_mode"] = sci_mode


def get_printoptions() -> dict:
    """The current print options (a copy)."""
    return dict(PRINT_OPTIONS)


# ---- threads (Note [Recorded switches]) ----------------------------------------------------------------
def _env_threads() -> int:
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return os.cpu_count() or 1


_threads = {"intra": _env_threads(), "interop": os.cpu_count() or 1}


def _positive_threads(fn, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}(): argument 'int' must be int, not {type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{fn}: Expected number of threads to be positive, but got {value}")
    return value


def get_num_threads() -> int:
    """The intra-op thread count: the one set, else the environment's (``OMP_NUM_THREADS`` ...) or the cores."""
    return _threads["intra"]


def set_num_threads(num: int) -> None:
    """Record the intra-op thread count (NumPy's BLAS threads are fixed by the environment at import; see
    Note [Recorded switches])."""
    _threads["intra"] = _positive_threads("set_num_threads", num)


def init_num_threads() -> None:
    """PyTorch initialises its thread pools in a new process with it; NumPy's need nothing (a no-op)."""


def get_num_interop_threads() -> int:
    return _threads["interop"]


def set_num_interop_threads(num: int) -> None:
    """Record the inter-op thread count (ops run one at a time here)."""
    _threads["interop"] = _positive_threads("set_num_interop_threads", num)


def set_flush_denormal(mode: bool) -> bool:
    """False, PyTorch's answer where flushing denormals cannot be set: NumPy exposes no control of the
    processor's flush-to-zero / denormals-are-zero flags, so denormals are kept."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' must be bool, not {type(mode).__name__}")
    return False


# ---- determinism (Note [Recorded switches]) --------------------------------------------------------------
_determinism = {"enabled": False, "warn_only": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the choice: every kernel here is deterministic already."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _determinism["enabled"] = mode
    _determinism["warn_only"] = warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _determinism["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _determinism["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """``'default'`` / 0, ``'warn'`` / 1 or ``'error'`` / 2: as ``use_deterministic_algorithms`` off, on with
    ``warn_only``, on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _determinism["enabled"]:
        return 0
    return 1 if _determinism["warn_only"] else 2


# ---- the default device -----------------------------------------------------------------------------------
_default_device = {"device": Device("cpu")}


def set_default_device(device) -> None:
    """The device creation functions and ``flow.tensor`` use when none is given: a ``flow.device`` or its
    name (``None``: cpu)."""
    if device is None:
        device = "cpu"
    if not isinstance(device, (str, Device)):
        raise TypeError(f"set_default_device(): argument 'device' must be flow.device or str, not "
                        f"{type(device).__name__}")
    _default_device["device"] = Device(device)


def get_default_device() -> Device:
    return _default_device["device"]


def default_device() -> Device:
    """The default device (Note [Recorded switches]); what creation functors read."""
    return _default_device["device"]


# ---- float32 matmul precision (Note [Recorded switches]) ----------------------------------------------------
_matmul_precision = {"value": "highest"}


def set_float32_matmul_precision(precision: str) -> None:
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"set_float32_matmul_precision: expected 'highest', 'high' or 'medium', got "
                           f"{precision!r}")
    _matmul_precision["value"] = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision["value"]


# ---- warnings ---------------------------------------------------------------------------------------------
_warn_always = {"value": False}


def set_warn_always(b: bool) -> None:
    """When True, warnings PyTorch gives once per process are given every time (the ones this package gives
    through ``warn_once``)."""
    if not isinstance(b, bool):
        raise TypeError(f"set_warn_always(): argument 'b' must be bool, not {type(b).__name__}")
    _warn_always["value"] = b


def is_warn_always_enabled() -> bool:
    return _warn_always["value"]


_warned: set = set()


def warn_once(message: str, category=UserWarning, stacklevel: int = 3) -> None:
    """Warn with ``message`` the first time only, unless ``set_warn_always(True)``."""
    if _warn_always["value"] or message not in _warned:
        _warned.add(message)
        warnings.warn(message, category, stacklevel=stacklevel)


# ---- anomaly mode -------------------------------------------------------------------------------------------
_anomaly = {"enabled": False, "check_nan": True}


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Anomaly mode: backward checks each node's input gradients for NaN and names the node that made one
    (``flow.autograd.detect_anomaly``)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"set_anomaly_enabled(): argument 'enabled' must be bool, not {type(enabled).__name__}")
    _anomaly["enabled"] = enabled
    _anomaly["check_nan"] = bool(check_nan)


def is_anomaly_enabled() -> bool:
    return _anomaly["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly["check_nan"]
