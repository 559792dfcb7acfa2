"""``gradcheck`` and ``gradgradcheck``: analytic gradients against central finite differences.

As torch.autograd's: for every input that requires grad and every floating
output, the Jacobian computed by backward (one ``autograd.grad`` per output
element) must equal the numerical one, ``(f(x + eps) - f(x - eps)) / (2 eps)``
per input element, within ``atol + rtol * |numerical|``. Use float64 inputs:
in float32 the finite differences are too coarse for the default tolerances.
"""

from __future__ import annotations

import warnings

import numpy as np

from oneflow_lite.autograd.engine import grad as autograd_grad
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.tensor import Tensor


class GradcheckError(RuntimeError):
    """Analytic and numerical gradients differ."""


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _float_outputs(outputs) -> list:
    return [(j, o) for j, o in enumerate(outputs) if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _values(func, inputs) -> list:
    return [o.numpy().copy() for _, o in _float_outputs(_as_tuple(func(*inputs)))]


def _numerical_jacobians(func, inputs, diff, eps):
    """[input][output] -> (numel_in, numel_out) array of central differences."""
    base = _values(func, inputs)
    result = []
    for i in diff:
        arr = inputs[i].numpy()
        jacobians = [np.zeros((arr.size, b.size)) for b in base]
        for k, idx in enumerate(np.ndindex(arr.shape)):
            orig = arr[idx].item()
            arr[idx] = orig - eps
            minus = _values(func, inputs)
            arr[idx] = orig + eps
            plus = _values(func, inputs)
            arr[idx] = orig
            for j, (p, m) in enumerate(zip(plus, minus)):
                jacobians[j][k] = (p.astype(np.float64) - m).reshape(-1) / (2 * eps)
        result.append(jacobians)
    return result


def _analytical_jacobians(outputs, inputs, diff):
    """[input][output] -> (numel_in, numel_out) array from backward, one grad() per output element."""
    float_outs = _float_outputs(outputs)
    result = [[np.zeros((inputs[i].numel(), o.numel())) for _, o in float_outs] for i in diff]
    targets = [inputs[i] for i in diff]
    for j, (_, o) in enumerate(float_outs):
        if not o.requires_grad:
            continue
        for k in range(o.numel()):
            onehot = np.zeros(o.numel(), dtype=o.dtype.np_dtype)
            onehot[k] = 1
            g_out = Tensor._make(onehot.reshape(tuple(o.shape)), o._meta)
            grads = autograd_grad((o,), targets, (g_out,), retain_graph=True, allow_unused=True)
            for n, g in enumerate(grads):
                if g is not None:
                    result[n][j][:, k] = g.numpy().reshape(-1)
    return result


def _check_inputs(fn_name, inputs):
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError(f"{fn_name} expects at least one input tensor to require gradient, but none of them "
                         f"have requires_grad=True.")
    for i in diff:
        t = inputs[i]
        if t._array is None:
            raise ValueError(f"{fn_name}: input #{i} holds no data (device '{t.device}'); use cpu tensors")
        if t.dtype is not dtypes.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This check "
                          f"will likely fail if all the inputs are not of double precision floating point.",
                          UserWarning, stacklevel=3)
    return diff


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Check ``func``'s gradients at ``inputs`` against finite differences.

    ``func`` takes the inputs positionally and returns a Tensor or a tuple of
    them. Returns True, or raises ``GradcheckError`` (False with
    ``raise_exception=False``) naming the first output / input pair that differs.
    """
    inputs = _as_tuple(inputs)
    diff = _check_inputs("gradcheck", inputs)
    outputs = _as_tuple(func(*inputs))
    numerical = _numerical_jacobians(func, inputs, diff, eps)
    analytical = _analytical_jacobians(outputs, inputs, diff)
    float_outs = _float_outputs(outputs)
    for n, i in enumerate(diff):
        for j, (out_index, o) in enumerate(float_outs):
            num, ana = numerical[n][j], analytical[n][j]
            if not o.requires_grad:
                if np.any(num != 0) and not np.allclose(num, 0, atol=atol, rtol=0):
                    return _fail(raise_exception, f"Numerical gradient for function expected to be zero "
                                                  f"(output {out_index} does not require grad) with respect "
                                                  f"to input {i}:\nnumerical:{num}\n")
                continue
            if num.shape != ana.shape or not np.allclose(ana, num, rtol=rtol, atol=atol):
                return _fail(raise_exception, f"Jacobian mismatch for output {out_index} with respect to input "
                                              f"{i},\nnumerical:{num}\nanalytical:{ana}\n")
    return True


def _fail(raise_exception, message) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True) -> bool:
    """Check the second derivatives of ``func``: ``gradcheck`` of the map
    ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True)``.

    ``grad_outputs`` defaults to random float tensors (one per floating output
    that requires grad), drawn from a fixed seed so a run is reproducible.
    """
    inputs = _as_tuple(inputs)
    diff = _check_inputs("gradgradcheck", inputs)
    outputs = _as_tuple(func(*inputs))
    diff_outs = [o for _, o in _float_outputs(outputs) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            Tensor._make(rng.standard_normal(tuple(o.shape)).astype(o.dtype.np_dtype), o._meta).requires_grad_()
            for o in diff_outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
        if len(grad_outputs) != len(diff_outs):
            raise ValueError(f"gradgradcheck: got {len(grad_outputs)} grad_outputs for {len(diff_outs)} "
                             f"differentiable outputs")
    n = len(inputs)

    def first_derivatives(*args):
        ins, gos = args[:n], args[n:]
        outs = [o for _, o in _float_outputs(_as_tuple(func(*ins))) if o.requires_grad]
        targets = [ins[i] for i in diff]
        grads = autograd_grad(outs, targets, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
