"""Every function the [ops] issue names is exposed, has an OpSpec in the op database, and every op
type it runs has a cpu and a meta kernel (and a grad function when the function is differentiable).

The op types a function runs are recorded with a Python dispatch mode (``flow.DispatchMode``, the
handler at the Python dispatch key) active for the duration of the call.
"""

from __future__ import annotations

import pytest

import oneflow_lite as flow
import op_specs  # noqa: F401  (fills the registry)
from oneflow_lite.autograd.grad_function import get_grad_function
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework.op_registry import find
from opinfo import REGISTRY, to_flow

# The issue's lists, by section; each name is flow.<name> or flow.nn.functional.<name>.
ISSUE_FUNCTIONS = {
    "unary": "abs neg exp expm1 log log1p log2 sqrt rsqrt square sin cos tan tanh sigmoid relu relu6 leaky_relu "
             "elu selu gelu silu mish softplus hardtanh hardsigmoid hardswish sign floor ceil round trunc "
             "reciprocal erf logical_not isnan isinf isfinite clamp clip nan_to_num",
    "binary": "add sub mul div floor_divide pow maximum minimum fmod remainder atan2 eq ne lt le gt ge "
              "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor where lerp addcmul addcdiv",
    "reductions": "sum mean prod max min amax amin argmax argmin var std logsumexp norm all any cumsum cumprod "
                  "sort argsort topk",
    "linalg": "matmul mm bmm dot outer linear baddbmm einsum",
    "shape": "reshape flatten unflatten squeeze unsqueeze transpose permute t broadcast_to tile cat stack split "
             "chunk unbind narrow flip roll tril triu gather scatter scatter_add index_select masked_fill "
             "masked_select nonzero pad clone",
    "nn": "softmax log_softmax cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss "
          "binary_cross_entropy binary_cross_entropy_with_logits kl_div dropout layer_norm group_norm batch_norm "
          "embedding one_hot conv1d conv2d conv_transpose2d max_pool2d avg_pool2d adaptive_avg_pool2d interpolate "
          "scaled_dot_product_attention",
    "creation": "zeros_like ones_like full_like empty empty_like eye linspace logspace randint randperm normal "
                "rand_like randn_like from_numpy as_tensor",
}
ISSUE_METHODS = "view expand expand_as repeat contiguous normal_ uniform_ zero_ fill_ to bool int float".split()
NAMES = sorted({n for names in ISSUE_FUNCTIONS.values() for n in names.split()})
_SPECS = {s.name: s for s in REGISTRY}


def _lookup(name):
    return getattr(flow, name, None) or getattr(flow.nn.functional, name, None)


@pytest.mark.parametrize("name", NAMES)
def test_function_is_exposed(name):
    assert callable(_lookup(name)), f"flow.{name} / flow.nn.functional.{name} is missing"


@pytest.mark.parametrize("name", ISSUE_METHODS)
def test_method_is_exposed(name):
    assert callable(getattr(flow.Tensor, name, None)), f"Tensor.{name} is missing"


_NO_SPEC = {"from_numpy", "as_tensor", "empty", "empty_like"}  # tested in tests/test_creation*.py


@pytest.mark.parametrize("name", [n for n in NAMES if n not in _NO_SPEC])
def test_function_has_an_op_spec(name):
    assert name in _SPECS, f"{name} has no OpSpec in tests/op_specs/"


class _RecordOpTypes(flow.DispatchMode):
    def __init__(self):
        self.seen = set()

    def __flow_dispatch__(self, op, types, args, kwargs):
        self.seen.add(op.name)
        return op(*args, **kwargs)


def _record_op_types(spec) -> set[str]:
    recorder = _RecordOpTypes()
    for dtype in spec.dtypes:
        for sample in spec.samples(dtype):
            args, kwargs = to_flow(sample.args), to_flow(sample.kwargs)
            with recorder:
                spec.fn(*args, **kwargs)
    return recorder.seen


@pytest.mark.parametrize("name", [n for n in NAMES if n in _SPECS])
def test_every_op_type_run_has_cpu_and_meta_kernels(name):
    spec = _SPECS[name]
    op_types = _record_op_types(spec)
    assert op_types, f"{name} dispatched no op"
    for op_type in sorted(op_types):
        entry = DISPATCHER.entry(op_type)
        assert entry.kernels.get("cpu"), f"{name}: op '{op_type}' has no cpu kernel"
        assert entry.kernels.get("meta"), f"{name}: op '{op_type}' has no meta kernel"
        definition = find(op_type)
        if spec.differentiable and definition is not None and not definition.no_grad:
            assert get_grad_function(op_type) is not None, f"{name}: op '{op_type}' has no grad function"
