"""Ops of namespace ``ext_ops`` defined with ``flow.library``, as a third-party package would: importing this
module defines them (``HANDLES`` removes them). ``squareplus`` is a kernel op with a fake and a backward;
``softsign2`` is a composite."""

from __future__ import annotations

import numpy as np

import oneflow_lite as flow

HANDLES = [flow.library.define("ext_ops::squareplus(Tensor x, Float b=4.0) -> Tensor")]


@flow.library.impl("ext_ops::squareplus", "cpu")
def squareplus_cpu(x, b):
    return ((x + np.sqrt(x * x + b)) / 2).astype(x.dtype, copy=False)


@flow.library.register_fake("ext_ops::squareplus")
def squareplus_fake(x, b):
    return flow.empty_like(x)


def _setup(ctx, inputs, output):
    x, b = inputs
    ctx.save_for_backward(x)
    ctx.b = b


def _backward(ctx, dy):
    (x,) = ctx.saved_tensors
    return dy * (x / flow.sqrt(x * x + ctx.b) + 1) * 0.5, None


HANDLES += [squareplus_cpu, squareplus_fake,
            flow.library.register_autograd("ext_ops::squareplus", _backward, setup_context=_setup),
            flow.library.define("ext_ops::softsign2(Tensor x) -> Tensor")]


@flow.library.impl("ext_ops::softsign2", "CompositeImplicitAutograd")
def softsign2(x):
    return x / (flow.abs(x) + 1)


HANDLES.append(softsign2)
