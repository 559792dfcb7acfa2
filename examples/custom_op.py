"""A new op defined outside the package: squareplus, its cpu kernel, its gradient, a functor and a module.

squareplus(x; b) = (x + sqrt(x^2 + b)) / 2 (Barron, 2021) is a smooth ReLU-like activation that oneflow_lite
does not ship. Everything below uses the public registration APIs, as a third-party package would:

1. ``register_user_op``: the op's inputs, outputs, typed attr ``b`` with its default, shape and dtype inference;
2. ``flow.dispatch.register_kernel``: the cpu kernel (NumPy), for float32 and float64 only (a dtype predicate);
3. ``register_op_grad``: the backward formula, written with functional ops, so it is differentiable again
   and an nn.Graph can capture it;
4. a functor that builds its ``UserOpExpr`` once with ``OpBuilder`` and calls ``OpInterpUtil.dispatch``,
   and an ``nn.Module`` around it.

Then it is used eagerly (checked against NumPy), differentiated (``gradcheck`` / ``gradgradcheck``) and trained
inside an ``nn.Graph`` with an optimizer on the 8x8 digits.

    python examples/custom_op.py [--epochs N] [--seed S]
"""

from __future__ import annotations

import argparse
import numbers
import sys

import numpy as np

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.autograd import OpExprGradFunction, register_op_grad
from oneflow_lite.dispatch import dtype_in
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.interpreters.op_interp_util import OpInterpUtil


# ---- 1. the op definition ---------------------------------------------------------------------------------------
def _infer_shape(ctx):
    if not ctx.attr("b") > 0:
        raise ctx.error(f"attr 'b' must be positive, got {ctx.attr('b')}")
    return ctx.shape("x")


def _infer_dtype(ctx):
    return ctx.dtype("x")


register_user_op("squareplus", inputs=["x"], outputs=["y"], attrs={"b": ("double", 4.0)},
                 infer_shape=_infer_shape, infer_dtype=_infer_dtype)


# ---- 2. the cpu kernel ------------------------------------------------------------------------------------------
def squareplus_cpu(ctx, x):
    """``(x + sqrt(x*x + b)) / 2`` in x's dtype (the kernel must return exactly the inferred dtype and shape)."""
    b = x.dtype.type(ctx.attr("b"))
    y = np.multiply(x, x)
    y += b
    np.sqrt(y, out=y)
    y += x
    y *= x.dtype.type(0.5)
    return y


flow.dispatch.register_kernel("squareplus", "cpu", squareplus_cpu, predicate=dtype_in("x", flow.float32, flow.float64))


# ---- 3. the gradient --------------------------------------------------------------------------------------------
@register_op_grad("squareplus")
class SquareplusGrad(OpExprGradFunction):
    """dx = dy * (1 + x / sqrt(x^2 + b)) / 2, from the saved input."""

    name = "Squareplus"  # the backward node is SquareplusBackward

    def capture(self, state, inputs, outputs, attrs):
        if state.needs_input_grad[0]:
            state.save_for_backward(inputs[0])
            state.b = attrs["b"]

    def apply(self, state, out_grads):
        if not state.needs_input_grad[0]:
            return (None,)
        (x,) = state.saved_tensors
        slope = (x / flow.sqrt(x * x + state.b) + 1) * 0.5
        return (out_grads[0] * slope,)


# ---- 4. the functor and the module ------------------------------------------------------------------------------
class SquareplusFunctor:
    """``squareplus(input, b=4.0)``: builds its UserOpExpr once; a call checks its arguments and dispatches."""

    def __init__(self):
        self.op = OpBuilder("squareplus").input("x").output("y").build()
        self._attrs = {}  # b -> AttrMap, so a call with a b seen before builds nothing

    def __call__(self, input, b=4.0):
        if not isinstance(input, flow.Tensor):
            raise TypeError(f"squareplus(): argument 'input' must be Tensor, not {type(input).__name__}")
        if not isinstance(b, numbers.Real) or isinstance(b, bool):
            raise TypeError(f"squareplus(): argument 'b' must be a real number, not {type(b).__name__}")
        attrs = self._attrs.get(b)
        if attrs is None:
            attrs = self._attrs[b] = AttrMap({"b": float(b)})
        return OpInterpUtil.dispatch(self.op, (input,), attrs)[0]


squareplus = SquareplusFunctor()


class Squareplus(nn.Module):
    """The squareplus activation as a layer."""

    def __init__(self, b: float = 4.0):
        super().__init__()
        self.b = b

    def forward(self, x):
        return squareplus(x, self.b)

    def extra_repr(self) -> str:
        return f"b={self.b}"


# ---- using it ---------------------------------------------------------------------------------------------------
def show_eager() -> None:
    x = flow.tensor([-3.0, -1.0, 0.0, 1.0, 3.0])
    y = squareplus(x)
    xn = x.numpy().astype(np.float64)
    reference = (xn + np.sqrt(xn * xn + 4.0)) / 2
    values = ", ".join(f"{v:.4f}" for v in y.numpy())
    print(f"eager: squareplus({x.numpy().tolist()}) = [{values}] ({y.dtype}); "
          f"max |error| vs NumPy: {np.max(np.abs(y.numpy() - reference)):.1e}")
    try:
        squareplus(flow.tensor([1, 2]))
    except Exception as e:  # noqa: BLE001 - shown to the reader
        print(f"int64 input: {type(e).__name__}: {str(e).splitlines()[0]}")
    try:
        squareplus(x, b=-1.0)
    except Exception as e:  # noqa: BLE001 - shown to the reader
        print(f"b=-1: {type(e).__name__}: {str(e).splitlines()[0]}")


def show_autograd() -> None:
    x = flow.tensor(np.linspace(-2.0, 2.0, 5), requires_grad=True)
    y = squareplus(x, 2.0)
    y.sum().backward()
    xn = x.detach().numpy()
    expected = (1 + xn / np.sqrt(xn * xn + 2.0)) / 2
    print(f"autograd: y.grad_fn is {y.grad_fn.name()}; x.grad matches the formula: "
          f"{bool(np.allclose(x.grad.numpy(), expected, rtol=1e-12))}")
    inputs = (flow.tensor(np.random.default_rng(0).standard_normal(6), requires_grad=True),)
    print(f"gradcheck: {flow.autograd.gradcheck(lambda t: squareplus(t, 0.5), inputs)}; "
          f"gradgradcheck: {flow.autograd.gradgradcheck(lambda t: squareplus(t, 0.5), inputs)}")


class TrainGraph(nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


def show_graph_training(epochs: int, seed: int) -> None:
    flow.manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), Squareplus(), nn.Linear(64, 10))
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    graph = TrainGraph(model, optimizer)
    generator = flow.Generator()
    generator.manual_seed(seed)
    loader = flow.utils.data.DataLoader(flow.utils.data.datasets.digits(train=True), batch_size=32, shuffle=True,
                                        drop_last=True, generator=generator)
    print(f"graph training: {model[2]!r} between two Linear layers, SGD, {epochs} epoch(s)")
    for epoch in range(1, epochs + 1):
        losses = [graph(x, y).item() for x, y in loader]
        print(f"epoch {epoch}/{epochs}: mean loss {np.mean(losses):.4f}")
    op_types = [op.user_conf.op_type_name for op in graph.job.net.op if op.WhichOneof("op_type") == "user_conf"]
    print(f"the training graph runs {len(graph.job.net.op)} ops: {op_types.count('squareplus')} squareplus in the "
          f"forward pass, its gradient as the functional ops SquareplusGrad.apply called during the capture")
    test_x, test_y = flow.utils.data.datasets.digits(train=False).tensors
    model.eval()
    with flow.no_grad():
        accuracy = (model(test_x).argmax(1) == test_y).float().mean().item()
    print(f"test accuracy: {100 * accuracy:.2f}%")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Define the squareplus op outside the package, check it eagerly "
                                                 "and with gradcheck, and train a model using it in an nn.Graph.")
    parser.add_argument("--epochs", type=int, default=10, help="epochs of graph training on the digits (default: 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and batch order (default: 0)")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    for line in flow.dispatch.dump("squareplus").splitlines():
        if line.startswith(("schema:", "kernel[")):
            print(f"registered {line}")
    show_eager()
    show_autograd()
    show_graph_training(args.epochs, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
