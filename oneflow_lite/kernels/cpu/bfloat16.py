"""bfloat16 kernels that compute in float32 (Note [bfloat16 through float32]).

Note [bfloat16 through float32]
bfloat16 is a storage dtype (Note [Storage dtypes] in framework/dtype.py). For each op of
``BFLOAT16_OPS``, a call with a bfloat16 input runs the op's own float32 kernel on float32 copies of
its bfloat16 inputs and rounds the floating results back to bfloat16 (integer and bool results, such as
comparisons, stay as they are): PyTorch's cpu kernels also compute bfloat16 in float32, so sums and
matmuls accumulate in float32. The float32 kernel is the one a float32 call would choose (the same
predicates and priorities), found on first use per dtype signature. An op may have optional inputs after
its required ones (``linear``'s bias, ``layer_norm``'s gamma and beta): the float32 kernel is chosen with an
op of as many inputs as the call gives, taken in order, which is exact when the kernels' predicates look at
the required inputs only (as those of the listed ops do). Ops not
listed find no bfloat16 kernel and raise OpKernelNotFoundError, unless a kernel of theirs accepts any dtype
(``masked_fill``, ``pad``, ``cast`` and the shape ops move bfloat16 values as they are). The module is
imported after every other cpu kernel module.
"""

from __future__ import annotations

import numpy as np

from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.kernel_predicate import KernelPredicate
from oneflow_lite.framework import op_registry
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.dtype import bfloat16, float32, from_numpy_dtype
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.kernels.registration import cpu_kernel

BFLOAT16_OPS = (
    # elementwise arithmetic and comparisons
    "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "broadcast_pow", "broadcast_maximum",
    "broadcast_minimum", "broadcast_equal", "broadcast_not_equal", "broadcast_less", "broadcast_less_equal",
    "broadcast_greater", "broadcast_greater_equal", "scalar_add", "scalar_mul", "scalar_div", "scalar_pow",
    "scalar_reverse_div", "scalar_reverse_pow", "scalar_logical_equal", "scalar_logical_not_equal",
    "scalar_logical_greater", "scalar_logical_greater_equal", "scalar_logical_less", "scalar_logical_less_equal",
    # elementwise math and activations
    "negative", "abs", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "square", "reciprocal", "sin",
    "cos", "tan", "tanh", "relu", "sigmoid", "gelu", "silu", "erf", "floor", "ceil", "round", "trunc", "sign",
    "isnan", "isinf", "isfinite", "leaky_relu", "elu", "hardtanh", "clip_by_scalar", "clip_by_tensor",
    "clip_by_tensor_min", "clip_by_tensor_max", "where",
    # matrix products (accumulated in float32, rounded once)
    "matmul", "linear",
    # reductions, softmax
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "softmax", "log_softmax", "argmax",
    # normalisation
    "layer_norm", "layer_norm_grad", "layer_norm_param_grad",
    # the gradients of the above, so bfloat16 tensors train
    "relu_grad", "gelu_grad", "sigmoid_grad", "tanh_grad", "silu_grad", "softmax_grad", "log_softmax_grad",
    "leaky_relu_grad", "elu_grad", "hardtanh_grad", "clip_by_scalar_grad",
)

_BF16 = bfloat16.np_dtype
_F32 = float32.np_dtype
_CPU = Device("cpu")


class _Float32Context:
    """What the float32 kernel sees: the call's attrs and device, float32 output metas."""

    __slots__ = ("attrs", "device", "out_metas")

    def __init__(self, ctx, out_metas):
        self.attrs = ctx.attrs
        self.device = ctx.device
        self.out_metas = out_metas

    def attr(self, name):
        return self.attrs[name]


def _has_bfloat16(ctx) -> bool:
    return bfloat16 in ctx.input_dtypes


_ANY_BFLOAT16_INPUT = KernelPredicate(_has_bfloat16, "any input is bfloat16 (computed in float32)")


def _as_float32(d):
    return float32 if d is bfloat16 else d


class Float32Compute:
    """The bfloat16 kernel of one op: its float32 kernel on float32 copies (Note [bfloat16 through float32])."""

    def __init__(self, op_type):
        self.op_type = op_type
        self.__name__ = f"{op_type}_bfloat16_via_float32"
        self._selectors = {}  # number of inputs given -> an op expr of op_type, to choose the float32 kernel with
        self._kernels = {}  # (input dtypes, output dtypes) in float32 -> the float32 kernel

    def _selector(self, n_inputs):
        """An op expr of the op with its first ``n_inputs`` inputs (trailing optional inputs may be absent)."""
        expr = self._selectors.get(n_inputs)
        if expr is None:
            op_def = op_registry.find(self.op_type)
            builder = OpBuilder(self.op_type)
            for arg in op_def.inputs[:n_inputs]:
                builder.input(arg.name)
            for arg in op_def.outputs:
                builder.output(arg.name)
            expr = self._selectors[n_inputs] = builder.build()
        return expr

    def _float32_kernel(self, in_dtypes, out_dtypes):
        key = (in_dtypes, out_dtypes)
        fn = self._kernels.get(key)
        if fn is None:
            fn = self._kernels[key] = DISPATCHER.select_kernel(
                self._selector(len(in_dtypes)), DISPATCHER.entry(self.op_type), _CPU, in_dtypes, out_dtypes)
        return fn

    def __call__(self, ctx, *arrays):
        in_dtypes = tuple(_as_float32(from_numpy_dtype(a.dtype)) for a in arrays)
        metas = ctx.out_metas
        out32 = tuple(make_meta(m.shape, _as_float32(m.dtype), m.device) for m in metas)
        fn = self._float32_kernel(in_dtypes, tuple(m.dtype for m in out32))
        inputs = [a.astype(_F32) if a.dtype == _BF16 else a for a in arrays]
        result = fn(_Float32Context(ctx, out32), *inputs)
        if len(metas) == 1:
            return _round_back(result, metas[0])
        return tuple(_round_back(r, m) for r, m in zip(result, metas))


def _round_back(result, meta):
    result = np.asarray(result)
    return result.astype(meta.np_dtype) if result.dtype != meta.np_dtype else result


def _register():
    for op_type in BFLOAT16_OPS:
        op_def = op_registry.find(op_type)
        flags = [a.optional for a in op_def.inputs] if op_def is not None else []
        if op_def is None or any(a.variadic for a in op_def.inputs) or flags != sorted(flags):
            raise RuntimeError(f"bfloat16 kernels: op '{op_type}' is unknown, has variadic inputs or an optional "
                               f"input before a required one")
        cpu_kernel(op_type, _ANY_BFLOAT16_INPUT, priority=10)(Float32Compute(op_type))


_register()
