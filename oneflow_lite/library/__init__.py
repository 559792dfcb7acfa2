"""``flow.library``: ops and devices defined from Python, in the spirit of ``torch.library``.

Defining an op (Note [Library ops] in library/ops.py)::

    flow.library.define("my_ns::scale(Tensor x, *, Float factor=2.0) -> Tensor")

    @flow.library.impl("my_ns::scale", "cpu")           # NumPy arrays in, NumPy arrays out
    def scale_cpu(x, *, factor):
        return x * x.dtype.type(factor)

    @flow.library.register_fake("my_ns::scale")         # meta tensors in, meta tensors out
    def scale_fake(x, *, factor):
        return flow.empty_like(x)

    flow.library.register_autograd("my_ns::scale", lambda ctx, dy: dy * ctx.factor,
                                   setup_context=lambda ctx, inputs, output: setattr(ctx, "factor", inputs[1]))

    y = flow.ops.my_ns.scale(x, factor=3.0)              # eager, autograd, nn.Graph, saved graphs

``impl(op, "CompositeImplicitAutograd")`` defines an op by the flow ops it calls
instead. ``opcheck(op, samples)`` checks the registrations against each other.
A device defined out of tree: ``register_device(name, to_device=..., to_host=...)``
and ``register_fallback(name, fn)`` for the ops without a kernel on it
(library/devices.py). Every call returns a :class:`Handle` (``remove()``);
``with flow.library.scoped("my_ns"):`` removes what the block registered.
"""

from oneflow_lite.library.autograd import AutogradContext, register_autograd
from oneflow_lite.library.devices import register_device, register_fallback
from oneflow_lite.library.handles import Handle, scoped
from oneflow_lite.library.opcheck import OpCheckReport, opcheck
from oneflow_lite.library.ops import COMPOSITE, OpNamespace, define, defined_ops, impl, register_fake

_scoped_library = scoped  # PyTorch's name

__all__ = ["COMPOSITE", "AutogradContext", "Handle", "OpCheckReport", "OpNamespace", "define", "defined_ops",
           "impl", "opcheck", "register_autograd", "register_device", "register_fake", "register_fallback",
           "scoped"]
