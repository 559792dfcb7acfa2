"""oneflow_lite: a OneFlow-style tensor framework core on NumPy.

``import oneflow_lite as flow``; then ``flow.relu(flow.tensor([-1.0, 2.0]))``.
"""

# The registering modules, imported once, in order: op definitions, kernels,
# interpreters (dispatch fallbacks), functors and the functional API.
from oneflow_lite import ops  # noqa: F401
from oneflow_lite import kernels  # noqa: F401
from oneflow_lite import interpreters  # noqa: F401
from oneflow_lite import functional  # noqa: F401
from oneflow_lite.functors import tensor_methods  # noqa: F401  (Tensor methods and operators)
from oneflow_lite import nn  # noqa: F401,E402
from oneflow_lite.autograd import grads as _autograd_grads  # noqa: F401  (grad functions of the ops)
from oneflow_lite import dispatch  # noqa: F401

from oneflow_lite.framework.device import device  # noqa: F401
from oneflow_lite.framework.dtype import (  # noqa: F401
    bool_ as bool, dtype, float16, float32, float64, get_default_dtype, int8, int16, int32, int64,
    promote_types, set_default_dtype, uint8,
)
from oneflow_lite.framework.dtype import float16 as half, float32 as float, float64 as double  # noqa: F401
from oneflow_lite.framework.dtype import int32 as int, int64 as long  # noqa: F401
from oneflow_lite.framework.generator import Generator, default_generator, initial_seed, manual_seed  # noqa: F401
from oneflow_lite.framework.tensor import Tensor  # noqa: F401
from oneflow_lite.framework.tensor_meta import Size  # noqa: F401
from oneflow_lite.functors.creation import tensor  # noqa: F401
from oneflow_lite.functors.creation import as_tensor, from_numpy  # noqa: F401
from oneflow_lite.functors.reduce import return_types  # noqa: F401  (named tuples of max, sort, topk)
from oneflow_lite.functional import *  # noqa: F401,F403
from oneflow_lite import linalg  # noqa: F401  (flow.linalg, torch.linalg)
from oneflow_lite.functors.linalg import tensordot  # noqa: F401  (dims: an int, or two lists)
from oneflow_lite import autograd  # noqa: F401
from oneflow_lite.autograd import engine as _autograd_engine  # noqa: F401  (registers Tensor.backward)
from oneflow_lite.autograd import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from oneflow_lite import optim  # noqa: F401,E402  (flow.optim: optimizers and lr schedulers)
from oneflow_lite import utils  # noqa: F401  (flow.utils.data)
from oneflow_lite.serialization import load, save  # noqa: F401
from oneflow_lite import accelerator, amp, backends, cuda, distributed, onnx  # noqa: F401,E402  (environment)
from oneflow_lite.compile import compile  # noqa: F401,E402
from oneflow_lite import mock_torch  # noqa: F401,E402  (import torch as oneflow_lite)

_C = functional

from oneflow_lite._version import __version__  # noqa: E402
