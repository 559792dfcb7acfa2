"""Fused elementwise kernels: generated Python source compiled by numba, cached on disk.

Note [Generated kernels]
``graph/kernel_fusion.py`` turns a region of elementwise ops into a ``KernelSpec``: the region's external inputs
(each ``full``: of the region's shape, ``scalar``: one element, or ``broadcast``: broadcast to the region's shape by
the caller), its statements (``t<k> = <expression of inputs and earlier temporaries>``) and the temporaries it
writes out. ``kernel_source`` writes one module: an ``@njit`` loop over the flattened elements computing every
statement per element and storing the outputs (LLVM vectorises it), plus ``write`` (the out-variant writer, one
output) and ``call`` (allocates the outputs). numba's ``fastmath`` is off, so ``+ - * /``, ``abs`` and the selects
of relu round exactly as NumPy's ufuncs do; constants are typed with the kernel's dtype, as NumPy
2 converts Python scalars (NEP 50). ``tanh`` (float32) is a rational approximation (Eigen's, evaluated with FMAs)
that the loop vectorises: NumPy's own is a SIMD loop, numba's ``math.tanh`` a scalar libm call 30x slower; it is
within 5 ulp of the exact value (NumPy's within 2).

The source goes to ``<cache dir>/<sha256 of the source>.py`` (the cache dir is ``$FLOW_KERNEL_CACHE``, else
``~/.cache/oneflow_lite/kernels``) and is imported from there with numba's ``cache=True``, so numba keeps the
machine code beside it and a second process loads it instead of compiling (for the W2 chain of benchmarks/run.py
the graph's first call takes 0.3 s instead of 1.0 s, most of it numba's import). The kernels
are compiled eagerly for one signature (1-d contiguous arrays of the dtype), so a call never compiles again.
numba is imported on the first kernel a process builds, never by importing the package; without numba,
``numba_available()`` is False and the pass leaves the graph unfused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import sys
import threading

_lock = threading.Lock()
_loaded: dict = {}  # source hash -> the loaded kernel module
_numba_state: list = []  # [True] / [False] once probed


def numba_available() -> bool:
    """Whether numba can be imported (tried once per process)."""
    if not _numba_state:
        try:
            import numba  # noqa: F401 - probing only
        except ImportError:
            _numba_state.append(False)
        else:
            _numba_state.append(True)
    return _numba_state[0]


def cache_dir() -> pathlib.Path:
    """Where generated kernels live: ``$FLOW_KERNEL_CACHE`` or ``~/.cache/oneflow_lite/kernels``."""
    env = os.environ.get("FLOW_KERNEL_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "oneflow_lite" / "kernels"


class KernelSpec:
    """What a fused kernel computes (Note [Generated kernels]): ``dtype`` (``"float32"`` / ``"float64"``),
    ``kinds`` (``"full"``, ``"scalar"`` or ``"broadcast"`` per input), ``stmts`` (expressions naming input k
    ``{i<k>}`` and the result of statement k ``{t<k>}``, for ``str.format``), ``outputs`` (the statement indices
    written out), ``constants`` (name -> float, typed with ``dtype``) and ``in_place`` (its one output usually
    overwrites input 0, a variable's update: ``write`` then runs a loop reading and writing that one buffer)."""

    __slots__ = ("constants", "dtype", "in_place", "kinds", "outputs", "stmts", "uses_tanh")

    def __init__(self, dtype, kinds, stmts, outputs, constants, in_place=False):
        self.dtype, self.kinds, self.stmts = dtype, tuple(kinds), tuple(stmts)
        self.outputs, self.constants = tuple(outputs), dict(constants)
        self.in_place = in_place and len(self.outputs) == 1 and self.kinds[0] == "full"
        self.uses_tanh = any("_tanh32(" in s for s in self.stmts)


# typed lazily (no signature), so LLVM inlines it into the kernel's loop and vectorises it there
_TANH32 = '''
@numba.njit(fastmath={"contract"}, cache=True)
def _tanh32(x):
    """tanh(x): Eigen's rational approximation, x itself below 4e-4 and +-1 from 8 (float32's tanh is within
    4 ulp of 1 there; the rational form would pass 1 above 9); NaN kept."""
    x2 = x * x
    p = x2 * _T_A13 + _T_A11
    p = x2 * p + _T_A9
    p = x2 * p + _T_A7
    p = x2 * p + _T_A5
    p = x2 * p + _T_A3
    p = x2 * p + _T_A1
    q = x2 * _T_B6 + _T_B4
    q = x2 * q + _T_B2
    q = x2 * q + _T_B0
    r = x if abs(x) < _T_TINY else x * p / q
    return _T_ONE if x >= _T_SAT else (-_T_ONE if x <= -_T_SAT else r)
'''
_TANH32_CONSTANTS = {
    "_T_TINY": 0.0004, "_T_A1": 4.89352455891786e-03, "_T_A3": 6.37261928875436e-04,
    "_T_A5": 1.48572235717979e-05, "_T_A7": 5.12229709037114e-08, "_T_A9": -8.60467152213735e-11,
    "_T_A11": 2.00018790482477e-13, "_T_A13": -2.76076847742355e-16, "_T_B0": 4.89352518554385e-03,
    "_T_B2": 2.26843463243900e-03, "_T_B4": 1.18534705686654e-04, "_T_B6": 1.19825839466702e-06,
    "_T_ONE": 1.0, "_T_SAT": 8.0,
}
def _kernel(spec: KernelSpec, name: str, in_place: bool) -> list:
    """The ``@njit`` function ``name``: element ``j`` of the inputs (``in_place``: input 0 is read from ``o0``, the
    buffer it writes, a loop LLVM vectorises where the alias check of two arrays would not), the statements, the
    outputs stored."""
    dt, outs = spec.dtype, [f"o{q}" for q in range(len(spec.outputs))]
    arrays = {k: f"i{k}" for k in range(len(spec.kinds))}
    if in_place:
        arrays[0] = "o0"
    params = outs + [a for k, a in arrays.items() if not (in_place and k == 0)]
    sig = f"void({', '.join([f'{dt}[::1]'] * len(params))})"
    lines = ["", "", f'@numba.njit("{sig}", fastmath=False, error_model="numpy", nogil=True, cache=True)',
             f"def {name}({', '.join(params)}):"]
    lines += [f"    s{k} = {arrays[k]}[0]" for k, kind in enumerate(spec.kinds) if kind == "scalar"]
    lines.append("    for j in range(o0.shape[0]):")
    names = {}
    for k, kind in enumerate(spec.kinds):
        names[f"i{k}"] = f"s{k}" if kind == "scalar" else f"x{k}"
        if kind != "scalar":
            lines.append(f"        x{k} = {arrays[k]}[j]")
    for j, stmt in enumerate(spec.stmts):
        lines.append(f"        t{j} = {stmt.format(**names)}")
        names[f"t{j}"] = f"t{j}"
    lines.extend(f"        o{q}[j] = t{j}" for q, j in enumerate(spec.outputs))
    return lines


def _wrappers(spec: KernelSpec) -> list:
    """``write(out, *inputs)`` (one output) and ``call(shape, *inputs)``: the inputs flattened (broadcast ones
    broadcast first), the outputs allocated by ``call``."""
    ins = [f"x{k}" for k in range(len(spec.kinds))]
    flat = []
    for k, kind in enumerate(spec.kinds):
        if kind == "broadcast":
            flat.append(f"_np.broadcast_to(x{k}, shape).ravel()")
        else:
            flat.append(f"x{k}.ravel()")
    outs = [f"y{q}" for q in range(len(spec.outputs))]
    lines = [f"def call(shape, {', '.join(ins)}):"]
    lines += [f"    {y} = _np.empty(shape, _np.{spec.dtype})" for y in outs]
    lines.append(f"    kernel({', '.join(y + '.reshape(-1)' for y in outs)}, {', '.join(flat)})")
    lines.append(f"    return {outs[0] if len(outs) == 1 else ', '.join(outs)}")
    if len(outs) == 1:  # ``out`` may be a parameter's buffer (Note [Assigns written in place]), maybe strided
        lines += ["", "", f"def write(out, {', '.join(ins)}):", "    shape = out.shape"]
        if spec.in_place:
            lines += ["    if out is x0 and out.flags.c_contiguous:",
                      f"        kernel_in_place(out.reshape(-1){''.join(', ' + f for f in flat[1:])})", "        return"]
        lines += ["    if out.flags.c_contiguous:", f"        kernel(out.reshape(-1), {', '.join(flat)})",
                  "    else:", f"        _np.copyto(out, call(shape, {', '.join(ins)}))"]
    return lines


def kernel_source(spec: KernelSpec) -> str:
    """The module of one fused kernel (Note [Generated kernels])."""
    dt = spec.dtype
    constants = dict(spec.constants)
    if spec.uses_tanh:
        constants.update(_TANH32_CONSTANTS)
    lines = ["# A fused elementwise kernel of oneflow_lite (graph/jit.py), generated: do not edit.", "import numba",
             "import numpy as _np", ""]
    lines += [f"{name} = _np.{dt if name.startswith('_c') else 'float32'}(float.fromhex({float(v).hex()!r}))"
              for name, v in sorted(constants.items())]
    if spec.uses_tanh:
        lines += _TANH32.split("\n")
    lines += _kernel(spec, "kernel", False) + (_kernel(spec, "kernel_in_place", True) if spec.in_place else [])
    return "\n".join(lines + ["", ""] + _wrappers(spec)) + "\n"


def load_kernel(spec: KernelSpec):
    """``(key, module)``: the key (a hash of the source) and the loaded module (``kernel``, ``call``, ``write``) of
    ``spec``'s kernel: from this process's table, else imported from the cache dir (written there first when
    missing), compiling it or loading numba's cache."""
    return load_source(kernel_source(spec))


def load_source(source: str):
    """``(key, module)`` of a kernel module's ``source`` (generated, or a fixed kernel of the package), loaded as
    ``load_kernel`` does."""
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    with _lock:
        module = _loaded.get(key)
        if module is None:
            module = _loaded[key] = _import(key, source)
    return key, module


def load_cached(key: str):
    """The kernel module of ``key`` (a ``load_kernel`` key) from the cache dir, where an earlier compilation put it."""
    path = cache_dir() / f"k{key}.py"
    if not path.exists():
        raise RuntimeError(f"fused_elementwise: attr kernel={key!r} names no generated kernel in {cache_dir()} "
                           f"(the graph that fused it compiles it again; FLOW_KERNEL_CACHE may point elsewhere)")
    with _lock:
        module = _loaded.get(key)
        if module is None:
            module = _loaded[key] = _import(key, path.read_text())
    return module


def _import(key: str, source: str):
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"k{key}.py"
    if not path.exists() or path.read_text() != source:
        tmp = directory / f".k{key}.{os.getpid()}.tmp"
        tmp.write_text(source)
        os.replace(tmp, path)  # atomic: a concurrent process reads the old file or this one, never half of it
    name = f"_oneflow_lite_kernel_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache finds functions through their module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
