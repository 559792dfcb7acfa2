"""Kernel compilers for one-pass elementwise kernels, measured against oneflow_lite's NumPy kernels.

Run: ``python benchmarks/kernel_compilers.py`` (needs numba and numexpr; one thread everywhere).

Kernels, on GPT-mid shapes (benchmarks/gpt.py: batch 8, block 128, width 128, MLP 512), float32:

- GELU (exact, erf) forward and backward on the MLP's hidden activations, (1024, 512);
- GELU (tanh form) forward and backward, same shape;
- layer_norm forward (y, mean, rstd) over the last axis of (1024, 128) with weight and bias.

Each row gives the median time of the NumPy kernel (the one oneflow_lite runs today), of a numba version
(``@vectorize`` for the elementwise kernels, an ``@njit`` loop per row for layer_norm) and of a numexpr
version (numexpr has no erf: the exact GELU uses the same Cephes rational forms written as one ``where``
expression; layer_norm keeps NumPy's reductions and fuses the normalisation and the affine step), and the
largest difference from the NumPy kernel. The costs that are paid once are measured in fresh processes:
importing each package, the first call of every numba kernel without an on-disk cache (JIT compile: the
cold cost) and with numba's cache filled by an earlier process (``cache=True``: the warm cost).
A last table compares the exact GELU with a branchless float32 erf in plain NumPy (Abramowitz and Stegun
7.1.26: no boolean indexing, a dozen full passes; absolute error 1.5e-7, enough for float32 only).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import math
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HIDDEN, WIDTH = (1024, 512), (1024, 128)
_SQRT1_2, _INV_SQRT_2PI = math.sqrt(0.5), 1.0 / math.sqrt(2.0 * math.pi)
_K, _C = math.sqrt(2.0 / math.pi), 0.044715
EPS = 1e-5


# ---- numba kernels (compiled on first call; ``cache=True`` keeps the machine code on disk) ----------------------
def numba_kernels(cache: bool) -> dict:
    import numba

    sigs = ["float32(float32)", "float64(float64)"]
    sigs2 = ["float32(float32, float32)", "float64(float64, float64)"]

    @numba.vectorize(sigs, cache=cache)
    def gelu(x):
        return 0.5 * x * (1.0 + math.erf(x * _SQRT1_2))

    @numba.vectorize(sigs2, cache=cache)
    def gelu_grad(dy, x):
        return dy * (0.5 * (1.0 + math.erf(x * _SQRT1_2)) + x * math.exp(-0.5 * x * x) * _INV_SQRT_2PI)

    @numba.vectorize(sigs, cache=cache)
    def gelu_tanh(x):
        return 0.5 * x * (1.0 + math.tanh(_K * (x + _C * x * x * x)))

    @numba.vectorize(sigs2, cache=cache)
    def gelu_tanh_grad(dy, x):
        t = math.tanh(_K * (x + _C * x * x * x))
        return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * (_K * (1.0 + 3.0 * _C * x * x)))

    @numba.njit(cache=cache, fastmath=True)  # the row sums may be reassociated (vectorised)
    def layer_norm(x, w, b, eps, y, mean, rstd):
        rows, n = x.shape
        for i in range(rows):
            s = 0.0
            for j in range(n):
                s += x[i, j]
            mu = s / n
            ss = 0.0
            for j in range(n):
                d = x[i, j] - mu
                ss += d * d
            r = 1.0 / math.sqrt(ss / n + eps)
            for j in range(n):
                y[i, j] = (x[i, j] - mu) * r * w[j] + b[j]
            mean[i] = mu
            rstd[i] = r

    def ln(x, w, b):
        y = np.empty_like(x)
        mean, rstd = np.empty(x.shape[0], x.dtype), np.empty(x.shape[0], x.dtype)
        layer_norm(x, w, b, EPS, y, mean, rstd)
        return y, mean, rstd

    return {"gelu": gelu, "gelu_grad": gelu_grad, "gelu_tanh": gelu_tanh, "gelu_tanh_grad": gelu_tanh_grad,
            "layer_norm": ln}


# ---- numexpr kernels ---------------------------------------------------------------------------------------
def _poly(var: str, coefs) -> str:
    expr = repr(coefs[0])
    for c in coefs[1:]:
        expr = f"({expr}) * {var} + {c!r}"
    return expr


def numexpr_kernels() -> dict:
    import numexpr as ne

    from oneflow_lite.kernels.cpu import unary

    ne.set_num_threads(1)
    # erf(z): Cephes' forms, both evaluated for every element and chosen by where() (numexpr has no erf)
    s, a = "(z * z)", "where(abs(z) < 8.0, abs(z), 8.0)"
    small = f"z * ({_poly(s, unary._ERF_T)}) / ({_poly(s, unary._ERF_U)})"
    big = f"(1.0 - exp(-{a} * {a}) * ({_poly(a, unary._ERFC_P)}) / ({_poly(a, unary._ERFC_Q)}))"
    erf = f"where(abs(z) <= 1.0, {small}, where(z < 0, -{big}, {big}))"
    gelu_src = "0.5 * x * (1.0 + {erf})".format(erf=erf.replace("z", "(x * 0.7071067811865476)"))
    grad_src = "dy * (0.5 * (1.0 + {erf}) + x * exp(-0.5 * x * x) * {c!r})".format(
        erf=erf.replace("z", "(x * 0.7071067811865476)"), c=_INV_SQRT_2PI)
    tanh_src = f"0.5 * x * (1.0 + tanh({_K!r} * (x + {_C!r} * x * x * x)))"
    tanh_grad_src = (f"dy * (0.5 * (1.0 + tanh({_K!r} * (x + {_C!r} * x * x * x))) + 0.5 * x * "
                     f"(1.0 - tanh({_K!r} * (x + {_C!r} * x * x * x)) ** 2) * ({_K!r} * (1.0 + {3 * _C!r} * x * x)))")

    def ln(x, w, b):
        mean = x.mean(-1, keepdims=True)
        d = x - mean
        rstd = 1.0 / np.sqrt((d * d).mean(-1, keepdims=True) + np.float32(EPS))
        y = ne.evaluate("d * rstd * w + b", local_dict={"d": d, "rstd": rstd, "w": w, "b": b})
        return y, mean[:, 0], rstd[:, 0]

    f32 = np.float32
    return {"gelu": lambda x: ne.evaluate(gelu_src, local_dict={"x": x}).astype(f32, copy=False),
            "gelu_grad": lambda dy, x: ne.evaluate(grad_src, local_dict={"dy": dy, "x": x}).astype(f32, copy=False),
            "gelu_tanh": lambda x: ne.evaluate(tanh_src, local_dict={"x": x}),
            "gelu_tanh_grad": lambda dy, x: ne.evaluate(tanh_grad_src, local_dict={"dy": dy, "x": x}),
            "layer_norm": ln}


# ---- plain NumPy, branchless --------------------------------------------------------------------------------
_AS_P, _AS_A = 0.3275911, (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf_branchless(x):
    """erf of a float32 array by Abramowitz and Stegun 7.1.26 (|error| <= 1.5e-7), in full-array passes."""
    f32 = np.float32
    a = np.abs(x)
    t = np.multiply(a, f32(_AS_P))
    t += 1
    np.reciprocal(t, out=t)
    y = np.multiply(t, f32(_AS_A[4]))
    for c in _AS_A[3::-1]:
        y += f32(c)
        y *= t
    e = np.multiply(a, a, out=a)
    np.negative(e, out=e)
    np.exp(e, out=e)
    y *= e
    np.subtract(f32(1), y, out=y)
    return np.copysign(y, x, out=y)


def branchless_kernels() -> dict:
    f32 = np.float32

    def gelu(x):
        r = erf_branchless(x * f32(_SQRT1_2))
        r += 1
        r *= x
        r *= f32(0.5)
        return r

    def gelu_grad(dy, x):
        r = erf_branchless(x * f32(_SQRT1_2))
        r += 1
        r *= f32(0.5)
        e = np.multiply(x, x)
        e *= f32(-0.5)
        np.exp(e, out=e)
        e *= x
        e *= f32(_INV_SQRT_2PI)
        r += e
        r *= dy
        return r
    return {"gelu": gelu, "gelu_grad": gelu_grad}


# ---- the NumPy kernels oneflow_lite runs today -------------------------------------------------------------
def numpy_kernels() -> dict:
    import oneflow_lite as flow
    from oneflow_lite.kernels.cpu import activation

    exact, tanh = {"approximate": "none"}, {"approximate": "tanh"}

    return {"gelu": lambda x: activation._gelu(exact, x), "gelu_grad": lambda dy, x: activation._gelu_grad(exact, dy, x),
            "gelu_tanh": lambda x: activation._gelu(tanh, x),
            "gelu_tanh_grad": lambda dy, x: activation._gelu_grad(tanh, dy, x),
            "layer_norm": lambda x, w, b: _layer_norm_kernel(flow, x, w, b)}


def _layer_norm_kernel(flow, x, w, b):
    """The cpu kernel of ``layer_norm`` (y, mean, rstd), called with the ctx the eager interpreter gives it."""
    from oneflow_lite.kernels.cpu.nn import layer_norm_cpu

    ctx = _LN_CTX.get(x.shape)
    if ctx is None:
        from oneflow_lite.framework.attr import AttrMap
        from oneflow_lite.framework.op_builder import OpBuilder

        expr = OpBuilder("layer_norm").input("x").input("gamma").input("beta").output("y").output("mean").output(
            "inv_variance").build()
        attrs = AttrMap({"begin_norm_axis": 1, "epsilon": EPS, "center": True, "scale": True})
        ctx = _LN_CTX[x.shape] = expr.infer(tuple(flow.tensor(a)._meta for a in (x, w, b)), attrs)
    return layer_norm_cpu(ctx, x, w, b)


_LN_CTX: dict = {}


# ---- timing ------------------------------------------------------------------------------------------------
def _loop_time(fn, args, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number


def paired_times(fns: dict, args, min_seconds=0.05, repeats=9) -> tuple:
    """(median seconds per call of each function, median ratio of the first one's time to each), the functions
    timed round-robin in each repeat, so that a change in the machine's load touches all of them alike."""
    numbers = {}
    for name, fn in fns.items():
        fn(*args)
        number = 1
        while _loop_time(fn, args, number) * number < min_seconds:
            number *= 2
        numbers[name] = number
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(_loop_time(fn, args, numbers[name]))
    first = next(iter(fns))
    ratios = {name: statistics.median(a / b for a, b in zip(times[first], times[name])) for name in fns}
    return {name: statistics.median(t) for name, t in times.items()}, ratios


def _inputs():
    rng = np.random.default_rng(0)
    h = (rng.standard_normal(HIDDEN) * 2).astype(np.float32)
    dy = rng.standard_normal(HIDDEN).astype(np.float32)
    x = rng.standard_normal(WIDTH).astype(np.float32)
    w, b = rng.standard_normal(128).astype(np.float32), rng.standard_normal(128).astype(np.float32)
    return {"gelu": (h,), "gelu_grad": (dy, h), "gelu_tanh": (h,), "gelu_tanh_grad": (dy, h),
            "layer_norm": (x, w, b)}


def _max_diff(a, b) -> float:
    a, b = (a,) if isinstance(a, np.ndarray) else a, (b,) if isinstance(b, np.ndarray) else b
    return max(float(np.max(np.abs(np.asarray(p, np.float64) - np.asarray(q, np.float64)))) for p, q in zip(a, b))


def run_times() -> None:
    inputs = _inputs()
    impls = {"numpy": numpy_kernels(), "numba": numba_kernels(cache=False), "numexpr": numexpr_kernels()}
    print(f"{'kernel':<16}{'shape':<13}{'NumPy':>10}{'numba':>10}{'x':>7}{'numexpr':>10}{'x':>7}   max |diff| "
          f"numba / numexpr")
    for name, args in inputs.items():
        ref = impls["numpy"][name](*args)
        t, ratio = paired_times({k: v[name] for k, v in impls.items()}, args)
        diffs = [_max_diff(impls[k][name](*args), ref) for k in ("numba", "numexpr")]
        shape = "x".join(map(str, args[-1].shape if name != "layer_norm" else args[0].shape))
        print(f"{name:<16}{shape:<13}{t['numpy'] * 1e3:>8.3f}ms{t['numba'] * 1e3:>8.3f}ms"
              f"{ratio['numba']:>6.2f}x{t['numexpr'] * 1e3:>8.3f}ms{ratio['numexpr']:>6.2f}x"
              f"   {diffs[0]:.1e} / {diffs[1]:.1e}")
    print("x: NumPy's time / the compiler's (median of paired timings; > 1: the compiler is faster)")
    branchless = branchless_kernels()
    print(f"\n{'exact GELU':<16}{'shape':<13}{'NumPy':>10}{'branchless':>12}{'x':>7}   max |diff|")
    for name in ("gelu", "gelu_grad"):
        args = inputs[name]
        t, ratio = paired_times({"numpy": impls["numpy"][name], "branchless": branchless[name]}, args)
        diff = _max_diff(branchless[name](*args), impls["numpy"][name](*args))
        print(f"{name:<16}{'x'.join(map(str, args[-1].shape)):<13}{t['numpy'] * 1e3:>8.3f}ms"
              f"{t['branchless'] * 1e3:>10.3f}ms{ratio['branchless']:>6.2f}x   {diff:.1e}")


# ---- one-time costs, each in a fresh process ---------------------------------------------------------------------
def _child(what: str) -> None:
    start = time.perf_counter()
    if what == "import-numba":
        import numba
    elif what == "import-numexpr":
        import numexpr  # noqa: F401
    elif what == "import-oneflow_lite":
        import oneflow_lite  # noqa: F401
    else:  # "compile": the first call of every numba kernel (JIT, or loaded from numba's cache)
        import numba  # noqa: F401
        start = time.perf_counter()
        kernels = numba_kernels(cache=True)
        for name, args in _inputs().items():
            kernels[name](*args)
    print(time.perf_counter() - start)


def one_time_costs() -> None:
    def child(what, env=None):
        out = subprocess.run([sys.executable, __file__, "--child", what], capture_output=True, text=True, check=True,
                             env={**os.environ, **(env or {})})
        return float(out.stdout.split()[-1])

    print("\none-time costs (fresh processes, median of 3):")
    for what in ("import-oneflow_lite", "import-numba", "import-numexpr"):
        print(f"  {what:<26}{statistics.median(child(what) for _ in range(3)) * 1e3:8.1f} ms")
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {"NUMBA_CACHE_DIR": cache_dir}
        cold = child("compile", env)  # empty cache: compiles and writes it
        warm = statistics.median(child("compile", env) for _ in range(3))
    print(f"  {'numba: compile 5 kernels':<26}{cold * 1e3:8.1f} ms  (cold: empty cache, JIT to machine code)")
    print(f"  {'numba: load 5 kernels':<26}{warm * 1e3:8.1f} ms  (warm: cache=True, a later process)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return 0
    import numba
    import numexpr
    print(f"NumPy {np.__version__}, numba {numba.__version__}, numexpr {numexpr.__version__}; float32, 1 thread")
    run_times()
    one_time_costs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
