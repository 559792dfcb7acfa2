"""``flow.func``: function transforms (PyTorch's ``torch.func``): ``vmap``, ``grad``, ``grad_and_value``,
``vjp``, ``jacrev``, ``jacfwd``, ``hessian``, ``functional_call``, ``stack_module_state``; ``register_batch_rule``
gives an op (one defined outside the package too) a batch rule of vmap's batching interpreter
(interpreters/batched.py)."""

from oneflow_lite.func.ensembling import stack_module_state
from oneflow_lite.func.grad_transforms import functional_call, grad, grad_and_value, vjp
from oneflow_lite.func.jacobians import hessian, jacfwd, jacrev
from oneflow_lite.func.vmap_transform import vmap
from oneflow_lite.interpreters.batched import BatchCall, is_batched, register_batch_rule

__all__ = ["BatchCall", "functional_call", "grad", "grad_and_value", "hessian", "is_batched", "jacfwd", "jacrev",
           "register_batch_rule", "stack_module_state", "vjp", "vmap"]
