"""``flow.autograd.functional``: PyTorch's higher-level autograd API — ``vjp``, ``jvp``, ``jacobian``,
``hessian``, ``vhp`` and ``hvp`` of a function of tensors, built on ``autograd.grad``.

Note [Functional autograd]
Each call detaches its inputs into fresh leaves that require grad, runs ``func`` on them with grad mode on and
differentiates the outputs with ``autograd.grad``: a Jacobian row by row (reverse mode, one backward pass per
output element), ``jvp`` by the double-backward trick (the vjp is linear in ``v``: differentiating it with
respect to ``v`` gives the Jacobian times a vector), the Hessian as the Jacobian of the gradient. Results keep
the structure of the arguments (a tensor for a tensor, tuples for tuples); without ``create_graph`` they are
detached. A part of the output that does not depend on an input gives zeros, or raises with ``strict=True``.
"""

from __future__ import annotations

from oneflow_lite.autograd.engine import grad as _grad
from oneflow_lite.autograd.grad_mode import enable_grad
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(value, arg: str, fn: str) -> tuple[bool, tuple]:
    is_tuple = isinstance(value, (tuple, list))
    values = tuple(value) if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of Tensors but the value at "
                            f"index {i} has type {type(v).__name__}.")
    return is_tuple, values


def _leaves(inputs, create_graph):
    """Fresh leaves requiring grad (views keeping the graph with ``create_graph``)."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_() for x in inputs)


def _call(func, inputs, fn):
    with enable_grad():
        out = func(*inputs)
    return _as_tuple(out, "outputs of the user-provided function", fn)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn, what="The output"):
    """``autograd.grad`` of ``outputs`` with zeros for an input they do not depend on (or an error when strict)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        grads = (None,) * len(inputs)
    else:
        grads = _grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                      create_graph=create_graph, allow_unused=True)
    result = []
    for i, (g, x) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"{what} of the user-provided function is independent of input {i}. This is not "
                                   f"allowed in strict mode.")
            g = F.zeros_like(x)
        result.append(g if create_graph else g.detach())
    return tuple(result)


def _check_v(v, like, arg, fn):
    _, vs = _as_tuple(v, arg, fn)
    if len(vs) != len(like) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(vs, like)):
        raise RuntimeError(f"{fn}: v has shapes {[tuple(a.shape) for a in vs]}, expected the shapes "
                           f"{[tuple(b.shape) for b in like]} of the {arg.split()[-1]}")
    return vs


def _outputs_of(outputs, is_tuple, create_graph):
    outputs = tuple(o if create_graph else o.detach() for o in outputs)
    return outputs if is_tuple else outputs[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T J)``: ``v`` (one per output) may be omitted for a single-element output."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs = _leaves(inputs, create_graph)
    out_tuple, outputs = _call(func, inputs, "vjp")
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                               "with a single element.")
        vs = (F.ones_like(outputs[0]),)
    else:
        vs = _check_v(v, outputs, "v of the outputs", "vjp")
    result = _grads(outputs, inputs, vs, create_graph, strict, "vjp")
    return _outputs_of(outputs, out_tuple, create_graph), result if in_tuple else result[0]


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J v)``: ``v`` (one per input) may be omitted for a single-element input."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                               "Tensor with a single element.")
        vs = (F.ones_like(inputs[0]),)
    else:
        vs = _check_v(v, inputs, "v of the inputs", "jvp")
    inputs = _leaves(inputs, create_graph)
    out_tuple, outputs = _call(func, inputs, "jvp")
    with enable_grad():  # the vjp with a dummy cotangent u is linear in u: d(u^T J v)/du = J v
        us = tuple(F.zeros_like(o).requires_grad_() for o in outputs)
        vjps = _grads(outputs, inputs, us, True, strict, "jvp")
    result = _grads(vjps, us, vs, create_graph, strict, "jvp", what="The output's vjp")
    return _outputs_of(outputs, out_tuple, create_graph), result if out_tuple else result[0]


def _jacobian_rows(outputs, inputs, create_graph, strict):
    """``rows[i][j]``: the Jacobian of output ``i`` with respect to input ``j``, shaped ``out_i + in_j``."""
    rows = []
    for i, out in enumerate(outputs):
        flat = out.reshape(-1)
        per_input = [[] for _ in inputs]
        for k in range(flat.numel()):
            grads = _grads((flat[k],), inputs, (F.ones_like(flat[k]),), create_graph, strict, "jacobian",
                           what=f"Output {i}")
            for j, g in enumerate(grads):
                per_input[j].append(g)
        rows.append(tuple(F.stack(gs, 0).reshape(*out.shape, *x.shape) if gs else
                          F.zeros((*out.shape, *x.shape), dtype=x.dtype) for gs, x in zip(per_input, inputs)))
    return rows


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: a tensor ``out.shape + in.shape`` for one input and one output,
    else tuples (per output, then per input)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         f'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                         f'prefer to use "reverse-mode". Got {strategy!r}')
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = _leaves(inputs, create_graph)
    out_tuple, outputs = _call(func, inputs, "jacobian")
    rows = [tuple(j if create_graph else j.detach() for j in row)
            for row in _jacobian_rows(outputs, inputs, create_graph, strict)]
    rows = [row if in_tuple else row[0] for row in rows]
    return tuple(rows) if out_tuple else rows[0]


def _scalar_func(func, fn):
    def checked(*args):
        out = func(*args)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(f"The function given to {fn} should return a single Tensor with a single element, got "
                               f"{type(out).__name__ if not isinstance(out, Tensor) else tuple(out.shape)}")
        return out.reshape(())
    return checked


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a single-element ``func`` at ``inputs``: ``in.shape + in.shape`` for one input, else a
    tuple of tuples (per pair of inputs)."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    scalar = _scalar_func(func, "hessian")

    def gradient(*xs):
        xs_leaves = _leaves(xs, True)
        out = scalar(*xs_leaves)
        return _grads((out,), xs_leaves, (F.ones_like(out),), True, strict, "hessian")

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                      strategy=outer_jacobian_strategy)
    return result if in_tuple else result[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T H)`` of a single-element ``func``."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H v)`` of a single-element ``func`` (H is symmetric: the same values as ``vhp``)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, fn):
    in_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                               "Tensor with a single element.")
        vs = (F.ones_like(inputs[0]),)
    else:
        vs = _check_v(v, inputs, "v of the inputs", fn)
    inputs = _leaves(inputs, create_graph)
    out = _scalar_func(func, fn)(*inputs)
    grads = _grads((out,), inputs, (F.ones_like(out),), True, strict, fn)
    result = _grads(grads, inputs, vs, create_graph, strict, fn, what="The jacobian")
    out = out if create_graph else out.detach()
    return out, result if in_tuple else result[0]
