"""Anomaly detection: ``flow.autograd.detect_anomaly`` and ``set_detect_anomaly`` (PyTorch's names).

In anomaly mode the backward engine checks the gradients each node returns and raises a RuntimeError
naming the first node that returned NaN (``Function 'DivBackward' returned nan values in its 0th output.``).
Unlike PyTorch, the forward traceback of that node is not recorded. The switch itself is process-wide
(``flow.set_anomaly_enabled``, framework/config.py), as PyTorch's is.
"""

from __future__ import annotations

import warnings

from oneflow_lite.framework.config import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled


class _AnomalyGuard:
    """Sets anomaly mode on entry and restores the previous mode on exit."""

    def __init__(self, mode: bool, check_nan: bool):
        self._mode = mode
        self._check_nan = check_nan
        self._prev = None

    def __enter__(self):
        self._prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        set_anomaly_enabled(self._mode, self._check_nan)
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(*self._prev)
        return False


class detect_anomaly(_AnomalyGuard):
    """``with flow.autograd.detect_anomaly(): ...``: backward raises at the first node that returns NaN
    gradients."""

    def __init__(self, check_nan: bool = True):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)
        super().__init__(True, bool(check_nan))


class set_detect_anomaly(_AnomalyGuard):
    """``set_detect_anomaly(mode, check_nan=True)``: anomaly mode on or off, at once (for the rest of the
    process) or for a ``with`` block."""

    def __init__(self, mode: bool, check_nan: bool = True):
        if not isinstance(mode, bool):
            raise TypeError(f"set_detect_anomaly(): argument 'mode' must be bool, not {type(mode).__name__}")
        super().__init__(mode, bool(check_nan))
        self._prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        set_anomaly_enabled(mode, self._check_nan)

    def __enter__(self):
        return self
