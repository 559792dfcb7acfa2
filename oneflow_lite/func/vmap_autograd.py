"""Gradients through ``flow.vmap``'s outputs (PyTorch's ``grad(vmap(f))``), and ``backward()`` refused inside vmap.

Note [Gradients through vmap's outputs]
Batched sits below Autograd (Note [Batching and autograd] in interpreters/batched.py): inside ``vmap`` autograd
records each op once, on the batched (logical, per-sample) tensors, and the physical ops of the batch rules are
not recorded. The physical tensors vmap returns therefore have no history of their own. PyTorch's functorch
records the physical ops instead (its vmap layer sits above the autograd of ordinary tensors); here the logical
graph is what exists, so the gradient is taken through it:

- while the level is active, the batching interpreter notes the gradient edges of the *crossings*: unbatched
  tensors that require grad (parameters and other tensors the function closed over, values computed before the
  call) read by an op of the level;
- a mapped input that requires grad is wrapped as a batched tensor whose ``grad_fn`` is a ``BatchBackward``
  node leading to the input (moved to dim 0), so the logical graph reaches it too;
- when the function returns a batched output that requires grad, vmap walks the logical graph from the outputs
  down to the crossings, the ``BatchBackward`` nodes of the level and any leaf (the boundary), and gives the
  physical outputs one ``VmapBackward`` node whose edges are that boundary.

``VmapBackward`` re-enters the vmap level, wraps the physical output grads as batched tensors of the level and
runs the logical nodes (their backward formulas on per-sample grads, batched again by the batching interpreter),
collecting the grads that reach the boundary instead of running its nodes (a boundary node would otherwise run
twice, once per sample and once in the outer backward). A closed-over tensor's grad is per sample: summed over
the batch (the mapped function ran once per sample, each run contributed); a mapped input's grad is the
physical grad, batch dim moved back to its ``in_dim``. The outer engine then continues from the boundary as from
any other node. ``vmap(grad(f))`` is unchanged (its grads are taken inside the level); a grad of per-sample grads
(``grad(vmap(grad(f)))``) differentiates through the inner backward as ``create_graph`` allows.

Note [backward() inside vmap]
``loss.backward()`` inside a mapped function would accumulate a different gradient per sample into one
``.grad``: it raises PyTorch's error (a backward entry hook, Note [Backward entry hooks] in autograd/engine.py);
``flow.func.grad`` / ``vjp`` / ``flow.autograd.grad`` are the per-sample forms. The outermost vmap call of a
thread adds the hook and removes it when it returns: a program without vmap pays nothing.
"""

from __future__ import annotations

from oneflow_lite.autograd.engine import _run_ready_nodes, _seed_buffers, add_backward_entry_hook
from oneflow_lite.autograd.grad_mode import _set_enabled, is_grad_enabled
from oneflow_lite.autograd.graph import AccumulateGrad, Node, gradient_edge
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, AutogradMeta
from oneflow_lite.interpreters import batched as _batched

_NEVER = 1 << 62  # the dependency count of a boundary node: it never becomes ready in the inner run


# ---- backward() inside vmap -----------------------------------------------------------------------------
def _refuse_backward_inside_vmap(tensors, grads):
    if _batched.active_levels():
        raise RuntimeError("backward() called inside a functorch transform. This is not supported, please use "
                           "functorch.grad or functorch.vjp instead or call backward() outside of functorch "
                           "transforms. (flow.vmap: use flow.func.grad, flow.func.vjp or flow.autograd.grad inside "
                           "the mapped function.)")


def refusing_backward():
    """The handle of the hook refusing ``backward()`` while this thread runs a vmap, for the outermost vmap
    call of the thread to ``remove()`` when it returns (so a program without vmap pays nothing), else None."""
    if _batched.active_levels():
        return None  # an outer vmap of this thread has it
    return add_backward_entry_hook(_refuse_backward_inside_vmap)


# ---- mapped inputs ----------------------------------------------------------------------------------------
class BatchBackward(Node):
    """The ``grad_fn`` of a mapped input that requires grad, as vmap wraps it: the grad of the batched tensor is
    the physical grad of the input (moved to dim 0)."""

    __slots__ = ("level",)

    def __init__(self, physical, logical_meta, level: int):
        self.next_functions = (gradient_edge(physical),)
        self.out_metas = (logical_meta,)
        self.hooks = None
        self.level = level

    def name(self) -> str:
        return "BatchBackward"

    def apply(self, grads, create_graph):
        g = grads[0]
        return (None if g is None else _batched.unwrap(g, self.level)[0],)


def wrap_mapped_input(physical, level: int):
    """The batched tensor of ``physical`` (batch dim 0) at ``level``: with a ``BatchBackward`` history when
    ``physical`` requires grad and grad mode is on (Note [Gradients through vmap's outputs])."""
    t = _batched.make_batched(physical, level)
    if physical._key_set & AUTOGRAD_KEY_SET and is_grad_enabled():
        ag = t._ag = AutogradMeta()
        ag.grad_fn = BatchBackward(physical, t._meta, level)
        ag.output_nr = 0
        t._key_set |= AUTOGRAD_KEY_SET
    return t


# ---- outputs ----------------------------------------------------------------------------------------------
class VmapBackward(Node):
    """The ``grad_fn`` of vmap's physical outputs (Note [Gradients through vmap's outputs])."""

    __slots__ = ("boundary", "level", "logical", "outputs", "randomness", "size")

    def __init__(self, level, size, randomness, outputs, boundary, logical, out_metas):
        self.level = level
        self.size = size
        self.randomness = randomness
        self.outputs = outputs  # per output: (logical gradient edge, out_dim) or None
        self.boundary = boundary  # boundary edge -> whether it is a mapped input's BatchBackward
        self.logical = logical  # the nodes between the outputs and the boundary
        # a mapped input's gradient goes to the input itself (its BatchBackward takes batched grads)
        self.next_functions = tuple([edge[0].next_functions[0] if mapped else edge for edge, mapped in boundary.items()])
        self.out_metas = out_metas
        self.hooks = None

    def name(self) -> str:
        return "VmapBackward"

    def apply(self, grads, create_graph):
        if self.logical is None:
            raise RuntimeError("Trying to backward through the graph a second time (or directly access saved tensors "
                               "after they have already been freed): VmapBackward's per-sample graph was freed by "
                               "the first backward. Specify retain_graph=True the first time.")
        level = self.level
        _, token = _batched.enter_level(self.size, self.randomness, level)
        try:
            roots, root_grads = [], []
            for out, g in zip(self.outputs, grads):
                if out is not None and g is not None:
                    edge, out_dim = out
                    roots.append(edge)
                    root_grads.append(_batched.make_batched(_to_front(g, out_dim), level))
            captured = self._run(roots, root_grads, create_graph) if roots else {}
        finally:
            _batched.leave_level(token)
        return tuple([self._boundary_grad(captured.get(edge), mapped) for edge, mapped in self.boundary.items()])

    def _run(self, roots, root_grads, create_graph) -> dict:
        """The logical nodes below ``roots`` run on the batched output grads (the engine's node loop); the grads
        that reach each boundary edge, whose nodes never become ready."""
        buffers, root_nodes = _seed_buffers(roots, root_grads)
        deps = {node: _NEVER for node, _ in self.boundary}
        logical = self.logical
        stack = [n for n in root_nodes if n in logical]
        seen = set(stack)
        while stack:
            for nxt, _ in stack.pop().next_functions:
                if nxt is not None and nxt in logical:
                    deps[nxt] = deps.get(nxt, 0) + 1
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
        ready = [n for n in root_nodes if n not in deps]
        previous = is_grad_enabled()
        _set_enabled(create_graph)
        try:
            _run_ready_nodes(ready, buffers, deps, None, None, None, True, create_graph, False)
        finally:
            _set_enabled(previous)
        captured = {}
        for node, nr in self.boundary:
            buf = buffers.get(node)
            if buf is not None and buf[nr] is not None:
                captured[(node, nr)] = buf[nr]
        return captured

    def _boundary_grad(self, g, mapped: bool):
        if g is None:
            return None
        value, batched = _batched.unwrap(g, self.level)
        if mapped:  # the physical grad of the mapped input
            return value if batched else F.ops.expand(g, expand_shape=(self.size, *g._meta.shape))
        if batched:  # a closed-over tensor: one contribution per sample, summed
            return F.ops.reduce_sum(value, axis=(0,), keepdims=False)
        return F.mul_scalar(g, float(self.size))  # the same contribution from every sample

    def release(self):
        logical, self.logical = self.logical, None
        for node in logical or ():
            node.release()


def _to_front(t, d):
    if d == 0:
        return t
    return F.ops.transpose(t, perm=(d, *(i for i in range(t._meta.ndim) if i != d)))


def _walk(root_edges, level) -> tuple:
    """The logical nodes reachable from ``root_edges`` and the boundary edges below them (edge -> whether it is a
    mapped input's ``BatchBackward``): the level's crossings, its ``BatchBackward`` nodes and every leaf."""
    crossings = _batched.crossings(level)
    logical, boundary = set(), {}

    def visit(edge, stack):
        nxt = edge[0]
        if nxt is None:
            return
        mapped = type(nxt) is BatchBackward and nxt.level == level
        if mapped or edge in crossings or type(nxt) is AccumulateGrad:
            boundary[edge] = mapped
        elif nxt not in logical:
            stack.append(nxt)

    stack = []
    for edge in root_edges:
        visit(edge, stack)
    while stack:
        node = stack.pop()
        if node in logical:
            continue
        logical.add(node)
        for edge in node.next_functions:
            visit(edge, stack)
    return logical, boundary


def attach(results: list, leaves, dims, level, size, randomness) -> None:
    """Give the physical outputs ``results`` (of the logical outputs ``leaves``, at ``dims``) a ``VmapBackward``
    history when a batched logical output requires grad (Note [Gradients through vmap's outputs]); a result that
    gets it is replaced by an alias of its buffer (the physical tensor inside the batched one stays as it is)."""
    outputs, metas = [], []
    for leaf, d, r in zip(leaves, dims, results):
        differentiable = (d is not None and leaf._key_set & AUTOGRAD_KEY_SET and _batched.unwrap(leaf, level)[1]
                          and r._meta.dtype.is_floating_point)
        outputs.append((gradient_edge(leaf), d % r._meta.ndim) if differentiable else None)
        metas.append(r._meta if differentiable else None)
    if not any(o is not None for o in outputs):
        return
    logical, boundary = _walk([o[0] for o in outputs if o is not None], level)
    node = VmapBackward(level, size, randomness, outputs, boundary, logical, tuple(metas))
    for i, out in enumerate(outputs):
        if out is not None:
            r = results[i] = results[i].detach()
            ag = r._ag = AutogradMeta()
            ag.grad_fn = node
            ag.output_nr = i
            r._key_set |= AUTOGRAD_KEY_SET
