"""The fast cpu kernels against the NumPy reference kernels they replaced, on GPT-mid shapes, in one process.

Run: ``python benchmarks/bench_kernels.py [--repeats N]``. Each figure is the best of N (default 7) timings of a
loop of calls, in process CPU time (a loaded machine's waiting is not counted); the last column is the
reference's time over the kernel's. Shapes are GPT-mid's (benchmarks/gpt.py: batch 8, block 128, width 128,
4 heads, MLP 512). GELU inputs are drawn as a network's pre-activations (N(0, 0.5), all within the polynomial's
range) and wider (N(0, 2), half of them through the erfc form); the attention row compares the fused op with
the composite of matmuls and a softmax it replaces (forward and backward, through the functional API).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import math
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import oneflow_lite as flow  # noqa: E402
from oneflow_lite.framework.attr import AttrMap  # noqa: E402
from oneflow_lite.framework.op_builder import OpBuilder  # noqa: E402
from oneflow_lite.kernels.cpu import activation, nn, unary  # noqa: E402

EXACT, TANH = {"approximate": "none"}, {"approximate": "tanh"}
HIDDEN, WIDTH, SCORES, LOGITS = (8, 128, 512), (8, 128, 128), (8, 4, 128, 128), (1024, 65)


def cpu_time(fn, repeats: int, min_seconds: float = 0.05) -> float:
    """Best seconds per call of ``fn`` over ``repeats`` loops lasting at least ``min_seconds`` of CPU time."""
    fn()
    number = 1
    while True:
        start = time.process_time()
        for _ in range(number):
            fn()
        if time.process_time() - start >= min_seconds:
            break
        number *= 2
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best


def _ctx(op_type, inputs, outputs, arrays, attrs):
    b = OpBuilder(op_type)
    for name in inputs:
        b.input(name)
    for name in outputs:
        b.output(name)
    return b.build().infer(tuple(flow.tensor(a)._meta for a in arrays), AttrMap(attrs))


def _gelu_rows(rng):
    rows = []
    dy = rng.standard_normal(HIDDEN).astype(np.float32)
    for scale in (0.5, 2.0):
        x = (rng.standard_normal(HIDDEN) * scale).astype(np.float32)
        rows.append((f"gelu, N(0, {scale:g})", lambda x=x: activation.gelu_reference(EXACT, x),
                     lambda x=x: activation._gelu(EXACT, x)))
        rows.append((f"gelu_grad, N(0, {scale:g})", lambda x=x: activation.gelu_grad_reference(EXACT, dy, x),
                     lambda x=x: activation._gelu_grad(EXACT, dy, x)))
        rows.append((f"erf, N(0, {scale:g})", lambda x=x: unary.erf_reference(x), lambda x=x: unary.erf(x)))
    x = rng.standard_normal(HIDDEN).astype(np.float32)
    rows.append(("gelu tanh", lambda: activation.gelu_reference(TANH, x), lambda: activation._gelu(TANH, x)))
    rows.append(("gelu_grad tanh", lambda: activation.gelu_grad_reference(TANH, dy, x),
                 lambda: activation._gelu_grad(TANH, dy, x)))
    return rows


def _layer_norm_rows(rng):
    x, dy = (rng.standard_normal(WIDTH).astype(np.float32) for _ in range(2))
    w, b = (rng.standard_normal(WIDTH[-1:]).astype(np.float32) for _ in range(2))
    attrs = {"begin_norm_axis": 2, "epsilon": 1e-5, "center": True, "scale": True}
    ctx = _ctx("layer_norm", ["x", "gamma", "beta"], ["y", "mean", "inv_variance"], [x, w, b], attrs)
    _, mean, inv = nn.layer_norm_reference(ctx, x, w, b)
    gctx = _ctx("layer_norm_grad", ["dy", "x", "mean", "inv_variance", "gamma"], ["dx"], [dy, x, mean, inv, w],
                {"begin_norm_axis": 2})
    pctx = _ctx("layer_norm_param_grad", ["dy", "x", "mean", "inv_variance"], ["gamma_diff", "beta_diff"],
                [dy, x, mean, inv], {"begin_norm_axis": 2})
    return [("layer_norm", lambda: nn.layer_norm_reference(ctx, x, w, b), lambda: nn.layer_norm_cpu(ctx, x, w, b)),
            ("layer_norm_grad", lambda: nn.layer_norm_grad_reference(gctx, dy, x, mean, inv, w),
             lambda: nn.layer_norm_grad_cpu(gctx, dy, x, mean, inv, w)),
            ("layer_norm_param_grad", lambda: nn.layer_norm_param_grad_reference(pctx, dy, x, mean, inv),
             lambda: nn.layer_norm_param_grad_cpu(pctx, dy, x, mean, inv))]


def _softmax_rows(rng):
    rows = []
    for shape in (SCORES, LOGITS):
        x, dy = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        y = nn.softmax_reference(-1, x)
        for name in ("softmax", "log_softmax", "safe_softmax", "softmax_grad", "log_softmax_grad"):
            args = (y, dy) if name.endswith("grad") else (x,)
            ref, fast = getattr(nn, name + "_reference"), getattr(nn, "_" + name)
            rows.append((f"{name} {'x'.join(map(str, shape))}", lambda r=ref, a=args: r(-1, *a),
                         lambda f=fast, a=args: f(-1, *a)))
    return rows


def _attention_rows(rng):
    q, k, v, dout = (flow.tensor(rng.standard_normal((8, 4, 128, 32)).astype(np.float32)) for _ in range(4))
    scale = 1 / math.sqrt(32)
    bias = flow.tensor(np.where(np.tri(128, 128, dtype=bool), 0, -np.inf).astype(np.float32))

    def composite():
        a, b, c = (t.detach().requires_grad_() for t in (q, k, v))
        y = flow.matmul(flow.softmax(flow.matmul(a, b.transpose(-2, -1)) * scale + bias, dim=-1), c)
        y.backward(dout)

    def fused():
        a, b, c = (t.detach().requires_grad_() for t in (q, k, v))
        flow.nn.functional.scaled_dot_product_attention(a, b, c, is_causal=True).backward(dout)
    x = (rng.standard_normal(HIDDEN) * 0.5).astype(np.float32)
    return [("causal attention fwd+bwd", composite, fused),
            ("relu (8, 128, 512)", lambda: np.maximum(x, activation.RELU_ZEROS[x.dtype]),
             lambda: activation.relu_cpu(None, x))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"NumPy {np.__version__}, float32, 1 thread, best of {args.repeats} (process CPU time)")
    print(f"{'kernel':<34}{'reference':>12}{'kernel':>12}{'speed-up':>10}")
    with np.errstate(all="ignore"):
        for name, ref, fast in _gelu_rows(rng) + _layer_norm_rows(rng) + _softmax_rows(rng) + _attention_rows(rng):
            r, f = cpu_time(ref, args.repeats), cpu_time(fast, args.repeats)
            print(f"{name:<34}{r * 1e3:>10.3f}ms{f * 1e3:>10.3f}ms{r / f:>9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
