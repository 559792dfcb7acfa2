"""Activation functors."""

from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.registry import functor
from oneflow_lite.interpreters.op_interp_util import dispatch


@functor("Relu")
class ReluFunctor:
    def __init__(self):
        self.op = OpBuilder("relu").input("x").output("y").build()

    def __call__(self, x, inplace=False):
        if inplace:
            return dispatch(self.op, (x,), None, (x,))[0]
        return dispatch(self.op, (x,))[0]
