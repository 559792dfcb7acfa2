"""``flow.jit``: PyTorch's TorchScript entry points, accepted so that programs written with them run.

Note [No TorchScript]
oneflow_lite has no TorchScript compiler. ``script`` returns the function or module itself and ``trace`` returns
it after one call on the example inputs (which checks they fit, as PyTorch's tracer runs them): it then runs
eagerly, with the same results. The decorators (``ignore``, ``unused``, ``export``) leave their function as it
is, ``annotate`` returns its value, ``is_scripting`` / ``is_tracing`` are False. ``save`` pickles the whole module
(``flow.save``) and ``load`` reads it back (``weights_only=False``: a file this program trusts): an archive for
oneflow_lite, not a TorchScript file, and the module is not given a ``.save`` method. For a captured, optimised
graph use ``flow.nn.Graph``.
"""

from __future__ import annotations

from typing import Final  # noqa: F401  (torch.jit.Final: a class-attribute annotation scripting respects)

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.serialization import load as _load
from oneflow_lite.serialization import save as _save

__all__ = ["Final", "annotate", "export", "freeze", "ignore", "is_scripting", "is_tracing", "load",
           "optimize_for_inference", "save", "script", "trace", "unused"]


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """The function or module itself (Note [No TorchScript])."""
    if not callable(obj):
        raise TypeError(f"torch.jit.script: expected a function or a module, got {type(obj).__name__}")
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True):
    """``func`` after one call on ``example_inputs`` (a tensor or a tuple of them) (Note [No TorchScript])."""
    if not callable(func):
        raise TypeError(f"torch.jit.trace: expected a function or a module, got {type(func).__name__}")
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("torch.jit.trace: example_inputs (or example_kwarg_inputs) are required")
    args = (example_inputs,) if isinstance(example_inputs, Tensor) else tuple(example_inputs or ())
    func(*args, **(example_kwarg_inputs or {}))
    return func


def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore`` / ``@torch.jit.ignore(drop=...)``: the function as it is."""
    return drop if callable(drop) else (lambda fn: fn)


def unused(fn):
    return fn


export = unused


def annotate(the_type, the_value):
    return the_value


def is_scripting() -> bool:
    return False


is_tracing = is_scripting


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    return mod.eval()


def optimize_for_inference(mod, other_methods=None):
    return mod.eval()


def save(m, f, _extra_files=None):
    """Pickle the whole module ``m`` to ``f`` (Note [No TorchScript])."""
    _save(m, f)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """The module ``save`` wrote to ``f``."""
    return _load(f, map_location=map_location, weights_only=False)
