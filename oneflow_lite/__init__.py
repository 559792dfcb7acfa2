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
    bfloat16, bool_ as bool, can_cast, dtype, finfo, float16, float32, float64, get_default_dtype, iinfo, int8,
    int16, int32, int64, promote_types, set_default_dtype, uint8, uint16, uint32, uint64,
)
from oneflow_lite.framework.dtype import float16 as half, float32 as float, float64 as double  # noqa: F401
from oneflow_lite.framework.dtype import int16 as short, int32 as int, int64 as long  # noqa: F401
from oneflow_lite.framework.generator import Generator, initial_seed, manual_seed, seed  # noqa: F401
from oneflow_lite.framework.generator import default_generator as _default_generator
from oneflow_lite.framework.tensor import Tensor  # noqa: F401
from oneflow_lite.framework.tensor_meta import Size  # noqa: F401
from oneflow_lite.framework.config import (  # noqa: F401  (process-level switches)
    are_deterministic_algorithms_enabled, get_default_device, get_deterministic_debug_mode,
    get_float32_matmul_precision, get_num_interop_threads, get_num_threads, get_printoptions, init_num_threads,
    is_anomaly_check_nan_enabled, is_anomaly_enabled, is_deterministic_algorithms_warn_only_enabled,
    is_warn_always_enabled, set_anomaly_enabled, set_default_device, set_deterministic_debug_mode,
    set_float32_matmul_precision, set_flush_denormal, set_num_interop_threads, set_num_threads, set_printoptions,
    set_warn_always,
    use_deterministic_algorithms,
)
from oneflow_lite.framework.type_utils import (  # noqa: F401  (tensor predicates, type helpers)
    is_complex, is_conj, is_floating_point, is_inference, is_neg, is_nonzero, is_same_size, is_signed, is_storage,
    is_tensor, numel, resolve_conj, resolve_neg, result_type, set_default_tensor_type, typename,
    conj, conj_physical, conj_physical_, cudnn_is_acceptable, get_device, imag, is_distributed, real,
)
from oneflow_lite.functors.creation import tensor  # noqa: F401
from oneflow_lite.functors.creation import (  # noqa: F401
    as_tensor, asarray, empty_permuted, from_file, from_numpy, frombuffer, get_rng_state, set_rng_state,
)
from oneflow_lite.functors.conversion import LEGACY_TYPES as _LEGACY_TYPES
from oneflow_lite.functors.reduce import return_types  # noqa: F401  (named tuples of max, sort, topk)
from oneflow_lite.functional import *  # noqa: F401,F403
from oneflow_lite import linalg  # noqa: F401  (flow.linalg, torch.linalg)
from oneflow_lite.functors.linalg import lobpcg, tensordot  # noqa: F401  (tensordot's dims: an int, or two lists)
from oneflow_lite.functors.shape import broadcast_shapes  # noqa: F401  (shapes, not tensors)
from oneflow_lite.framework.storage import TypedStorage, UntypedStorage  # noqa: F401  (Tensor.untyped_storage())
from oneflow_lite import autograd  # noqa: F401
from oneflow_lite.autograd import engine as _autograd_engine  # noqa: F401  (registers Tensor.backward)
from oneflow_lite.autograd import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from oneflow_lite import optim  # noqa: F401,E402  (flow.optim: optimizers and lr schedulers)
from oneflow_lite import utils  # noqa: F401  (flow.utils.data)
from oneflow_lite.serialization import load, save  # noqa: F401
from oneflow_lite import accelerator, amp, backends, cuda, distributed, onnx  # noqa: F401,E402  (environment)
from oneflow_lite.amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: F401,E402
from oneflow_lite import func  # noqa: F401,E402  (function transforms: flow.func.vmap, grad, ...)
from oneflow_lite.func import vmap  # noqa: F401,E402
from oneflow_lite.compile import compile  # noqa: F401,E402
from oneflow_lite import random  # noqa: F401,E402  (flow.random: seeds, rng state, fork_rng)
from oneflow_lite import distributions  # noqa: F401,E402  (flow.distributions: Categorical, Normal)
from oneflow_lite.interpreters.python_mode import DispatchMode  # noqa: F401,E402  (Python dispatch modes)
from oneflow_lite.utils import flop_counter as _flop_counter  # noqa: F401,E402  (flow.utils.flop_counter)
from oneflow_lite import profiler  # noqa: F401,E402  (flow.profiler)
from oneflow_lite import mock_torch  # noqa: F401,E402  (import torch as oneflow_lite)
from oneflow_lite import library  # noqa: F401,E402  (flow.library: ops and devices defined from Python)
from oneflow_lite import comm, env  # noqa: F401,E402  (flow.comm, flow.env: the processes of the job)
from oneflow_lite.framework import sbp  # noqa: F401,E402  (flow.sbp.split(d), broadcast, partial_sum)
from oneflow_lite.framework.placement import placement  # noqa: F401,E402

# [compat t1] the rest of PyTorch's torch-level names: layouts and memory formats, exceptions, streams and events,
# futures, cond, the __torch_function__ switches, symbolic-size helpers, the autocast state functions.
from oneflow_lite.framework.layout import (  # noqa: F401,E402
    channels_last, channels_last_3d, contiguous_format, layout, memory_format, preserve_format, strided,
)
from oneflow_lite.framework.runtime_errors import AcceleratorError, FatalError, OutOfMemoryError  # noqa: F401,E402
from oneflow_lite.streams import Event, Stream  # noqa: F401,E402
from oneflow_lite import cpu, futures  # noqa: F401,E402  (flow.cpu, flow.futures)
from oneflow_lite.futures import Future, fork, wait  # noqa: F401,E402
from oneflow_lite.control_flow import cond  # noqa: F401,E402
from oneflow_lite.overrides import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: F401,E402
from oneflow_lite.amp import GradScaler  # noqa: F401,E402  (torch.GradScaler is torch.amp.GradScaler)
from oneflow_lite.symbolic import *  # noqa: F401,F403,E402
from oneflow_lite.autocast_functions import *  # noqa: F401,F403,E402  (get_autocast_dtype: with set_autocast_dtype)
from oneflow_lite.device_modules import get_device_module, is_vulkan_available  # noqa: F401,E402
from oneflow_lite.random import thread_safe_generator  # noqa: F401,E402
from oneflow_lite.nn.functional import bilinear  # noqa: F401,E402  (torch.bilinear is F.bilinear)
from oneflow_lite.functors.nn import embedding_renorm_  # noqa: F401,E402
from oneflow_lite.framework.legacy_storage import (  # noqa: F401,E402  (PyTorch's legacy typed storage classes)
    BFloat16Storage, BoolStorage, ByteStorage, CharStorage, DoubleStorage, FloatStorage, HalfStorage, IntStorage,
    LongStorage, ShortStorage,
)

_C = functional
default_generator = _default_generator("cpu")  # torch.default_generator; callable with a device, as OneFlow's
globals().update(_LEGACY_TYPES)  # FloatTensor, LongTensor, ... (Note [Legacy tensor types])

from oneflow_lite._version import __version__  # noqa: E402
