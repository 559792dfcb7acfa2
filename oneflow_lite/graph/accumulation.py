"""Gradient accumulation in a graph capture (``graph.config.set_gradient_accumulation_steps(n)``).

Note [Gradient accumulation]
OneFlow's semantics: one call of the graph is one mini-batch of ``n`` micro-batches. Every tensor input
is split along dimension 0 into ``n`` equal micro-batches, ``build()`` runs on each in turn, the
gradients of the parameters accumulate across the micro-batches (summed: OneFlow's ``acc`` op; divide the
loss by ``n`` in ``build()`` for the mean), the optimizer steps once after the last, and each tensor output
is the concatenation of the micro-batches' outputs along dimension 0 (a 0-d output, such as a loss,
becomes a vector of ``n`` elements: OneFlow's ``pack``). This is what an eager loop of ``n`` forward and
backward passes followed by one ``optimizer.step()`` computes.

OneFlow's runtime runs one micro-batch's job ``n`` times; here the capture unrolls it: ``build()`` is
captured ``n`` times into one job (the inputs split by one ``split`` op each, the outputs joined by
``cat`` / ``stack``), and the autograd engine accumulates the lazy gradients into ``.grad`` across the
``n`` backward passes exactly as it does eagerly. The memory plan frees each micro-batch's activations
after its backward pass, so the peak stays that of one micro-batch. Python side effects of ``build()``
happen ``n`` times per capture.
"""

from __future__ import annotations

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.graph import io


def split_inputs(graph_name: str, leaves: list, lazy: list, n: int) -> list:
    """For each micro-batch, the list of its input tensors: every lazy input split along dimension 0."""
    pieces = []
    for (path, _), t in zip(leaves, lazy):
        if t.ndim == 0 or t.shape[0] % n:
            raise ValueError(f"nn.Graph '{graph_name}': gradient accumulation over {n} micro-batches splits every "
                             f"input along dimension 0, but input '{path}' has shape {list(t.shape)}: its first "
                             f"dimension must be a multiple of {n}")
        pieces.append(t.chunk(n, 0))
    return [[p[i] for p in pieces] for i in range(n)]


def join_outputs(graph_name: str, outputs: list):
    """The outputs of the micro-batches, joined: tensors concatenated along dimension 0 (0-d ones stacked),
    other values taken from the first micro-batch; their structures must agree."""
    specs = []
    leaves = []
    for out in outputs:
        spec, found = io.flatten(out, "output", graph_name)
        specs.append(spec)
        leaves.append([t for _, t in found])
    for i, spec in enumerate(specs[1:], 1):
        if spec != specs[0]:
            raise RuntimeError(f"nn.Graph '{graph_name}': build() returned {io.describe(spec, [t._meta for t in leaves[i]])} "
                               f"for micro-batch {i} but {io.describe(specs[0], [t._meta for t in leaves[0]])} for "
                               f"micro-batch 0; with gradient accumulation every micro-batch must return the same "
                               f"structure")
    joined = []
    for parts in zip(*leaves):
        first: Tensor = parts[0]
        joined.append(F.stack(list(parts), 0) if first.ndim == 0 else F.cat(list(parts), 0))
    return io.unflatten(specs[0], joined)
