"""The backward engine: ``backward`` and ``grad`` over the graph of ``Node``s.

Note [The backward engine]
One run (a GraphTask) first walks the graph from the roots with an explicit
stack, counting for every node how many edges lead to it; then it processes
nodes from a ready list, a node becoming ready when its count drops to zero,
so a node runs once all its output grads are summed. No step recurses, so a
100,000-op chain needs no deeper Python stack than a single op. Per node:
pre-hooks and tensor hooks, ``retain_grad`` stores, capture for ``grad()``,
then (when the node has any output grad) a missing output grad of an output
that requires grad becomes zeros, the node runs, its input grads are checked
against the producing node's output metas (shape and device must match; a
floating dtype is cast) and summed out of place into the producers' buffers;
without ``retain_graph`` the node's saved tensors are dropped. Grad mode during
the run is ``create_graph``: with it, the grad ops are recorded and the result
is differentiable (double backward); without, nothing is recorded.
``grad()`` (and ``backward(inputs=...)``) first marks the nodes on a path from a
root to an input; only those run, and accumulation nodes never do: the inputs'
grads are captured from their nodes' buffers instead.
"""

from __future__ import annotations

import sys
import warnings
from contextlib import ExitStack

import numpy as np

from oneflow_lite.autograd import grad_reduce
from oneflow_lite.autograd.grad_mode import _set_enabled, is_grad_enabled
from oneflow_lite.autograd.graph import AccumulateGrad, OpNode, gradient_edge, register_accumulate_grad
from oneflow_lite.framework.config import is_anomaly_check_nan_enabled, is_anomaly_enabled
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET
from oneflow_lite.framework.sbp import broadcast as _BROADCAST
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET as _AG_BIT
from oneflow_lite.framework.tensor import LAZY_KEY_SET, RemovableHandle, Tensor, register_backward_engine
from oneflow_lite.framework.calls import F
from oneflow_lite.functors.registry import get_functor

_functors = {}


def _f(name):
    fn = _functors.get(name)
    if fn is None:
        fn = _functors[name] = get_functor(name)
    return fn


# ---- tensor helpers of the engine (functors, so they are recorded under create_graph) -----------
def add_tensors(a: Tensor, b: Tensor) -> Tensor:
    return _f("Add")(a, b, 1, False)


def add_in_place(a: Tensor, b: Tensor) -> None:
    _f("Add")(a, b, 1, True)


def copy_tensor(t: Tensor) -> Tensor:
    """A copy of ``t`` (the Copy op: recorded under create_graph, captured by a graph being built)."""
    return _f("Copy")(t, t._meta.device)


def zeros_of(meta) -> Tensor:
    if meta.key_set & GLOBAL_KEY_SET:  # a global tensor's zeros: same placement and SBP
        return _f("GlobalFull")(meta.shape, 0, meta.dtype, meta.placement, meta.nd_sbp)
    return _f("Zeros")(meta.shape, meta.dtype, meta.device)


def ones_of(meta) -> Tensor:
    if meta.key_set & GLOBAL_KEY_SET:  # the gradient of a global output: ones, broadcast
        return _f("GlobalFull")(meta.shape, 1, meta.dtype, meta.placement, (_BROADCAST,) * len(meta.nd_sbp))
    return _f("Ones")(meta.shape, meta.dtype, meta.device)


def cast_to(t: Tensor, dtype) -> Tensor:
    return _f("Cast")(t, dtype)


# Note [Stealing the gradient]
# The first gradient accumulated into a leaf's ``.grad`` is a copy of the incoming one, unless
# nothing else can see the incoming one (PyTorch's AccumulateGrad does the same): then the engine
# hands it over as it is and saves a copy of a parameter-sized buffer per leaf and step. Only the
# engine offers a gradient (``owned``): it holds it in one local variable and nowhere else, so when
# the tensor's reference count shows no other holder (a hook that kept it, grad() capturing it,
# the same tensor routed to two leaves) and its array is referenced by that tensor only, owns its
# memory and is writeable (not a view, not an expand()ed input), later in-place accumulation into
# ``.grad`` cannot be observed elsewhere. A lazy gradient (a graph being captured) is an immutable
# blob of the job (Note [Lazy capture]), so ``.grad`` may always share it, through a new tensor
# object: later in-place ops rebind that object only, exactly as they would rebind a copy. Under
# create_graph the copy is an op to differentiate through, so it is always made.
_getrefcount = sys.getrefcount
# The references to an owned gradient seen in _take: the engine's variable, the parameters of
# accumulate_grad and _take, getrefcount's argument; to its array: the tensor, _take's variable and
# getrefcount's argument.
_OWNED_TENSOR_REFS = 4
_OWNED_ARRAY_REFS = 3


def _take(g: Tensor) -> Tensor | None:
    """``g`` itself or a new tensor sharing its lazy blob when ``.grad`` may share it (Note [Stealing the
    gradient]); None when it must be copied."""
    ks = g._key_set
    if ks & _AG_BIT:
        return None
    if ks & LAZY_KEY_SET:
        t = Tensor._make(g._array, g._meta)
        t._key_set = ks
        return t
    a = g._array
    if (_getrefcount(g) <= _OWNED_TENSOR_REFS and a is not None and _getrefcount(a) <= _OWNED_ARRAY_REFS
            and a.base is None
            and a.flags.writeable and g._vc is None):
        return g
    return None


def accumulate_grad(t: Tensor, g: Tensor, create_graph: bool, owned: bool = False) -> None:
    """Into ``t.grad``: a copy of ``g`` the first time (or ``g`` itself when ``owned`` and nothing else can
    see it, Note [Stealing the gradient]), then ``g`` added in place (out of place under create_graph, so
    the result stays differentiable); then ``t``'s post-accumulate hooks. A global gradient is first boxed
    to the leaf's placement and SBP (a partial-sum gradient of a broadcast parameter is all-reduced: within a
    backward run, bucketed with the others, Note [Bucketed all-reduce of partial gradients])."""
    if g._meta is not t._meta and g._key_set & GLOBAL_KEY_SET:
        if owned and not create_graph and grad_reduce.defer(t, g):
            return  # stored at the end of the run (Note [Bucketed all-reduce of partial gradients])
        m = t._meta
        g = g.to_global(placement=m.placement, sbp=m.nd_sbp)
    taken = _take(g) if owned and not create_graph else None  # before the call: its arguments would count
    _store_grad(t, g, taken, create_graph)


def _store_grad(t: Tensor, g: Tensor, taken, create_graph: bool) -> None:
    """``g`` into ``t.grad`` (``taken``: ``g`` or a tensor sharing its data, which ``.grad`` may become when it
    is None), then ``t``'s post-accumulate hooks."""
    ag = t._ag
    old = ag.grad
    if old is None:
        ag.grad = copy_tensor(g) if taken is None else taken
    elif create_graph:
        ag.grad = add_tensors(old, g)
    else:
        add_in_place(old, g)
    post = ag.post_hooks
    if post:
        for fn in list(post.values()):
            fn(t)


# ---- argument handling ---------------------------------------------------------------------------
def _as_tensor_tuple(value, what: str, fn: str) -> tuple:
    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, (tuple, list)):
        for i, t in enumerate(value):
            if not isinstance(t, Tensor):
                raise TypeError(f"{fn}(): element {i} of '{what}' must be a Tensor, got {type(t).__name__}")
        return tuple(value)
    raise TypeError(f"{fn}(): '{what}' must be a Tensor or a sequence of Tensors, got {type(value).__name__}")


def _make_grads(outputs: tuple, grads, fn: str, grads_name: str) -> list:
    """The root grads: each output must require grad; implicit ones only for one-element outputs."""
    n = len(outputs)
    if grads is None:
        grads = (None,) * n
    elif isinstance(grads, Tensor):
        grads = (grads,)
    elif isinstance(grads, (tuple, list)):
        grads = tuple(grads)
    else:
        raise TypeError(f"{fn}(): '{grads_name}' must be a Tensor, a sequence of Tensors or None, "
                        f"got {type(grads).__name__}")
    if len(grads) != n:
        raise RuntimeError(f"{fn}(): got {n} tensors and {len(grads)} gradients ('{grads_name}' needs one per "
                           f"output)")
    result = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not out._key_set & _AG_BIT:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        m = out._meta
        if g is None:
            if m.numel != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs (output {i} has "
                                   f"shape {list(m.shape)})")
            g = ones_of(m)
        else:
            if not isinstance(g, Tensor):
                raise TypeError(f"{fn}(): {grads_name}[{i}] must be a Tensor or None, got {type(g).__name__}")
            gm = g._meta
            if gm.shape != m.shape:
                raise RuntimeError(f"Mismatch in shape: {grads_name}[{i}] has a shape of {gm.shape} and "
                                   f"output[{i}] has a shape of {m.shape}.")
            if gm.device is not m.device:
                raise RuntimeError(f"Mismatch in device: {grads_name}[{i}] is on {gm.device} and output[{i}] "
                                   f"is on {m.device}.")
            if gm.dtype is not m.dtype:
                if not gm.dtype.is_floating_point:
                    raise RuntimeError(f"Mismatch in dtype: {grads_name}[{i}] has dtype {gm.dtype.name} and "
                                       f"output[{i}] has dtype {m.dtype.name}; a gradient must be a floating "
                                       f"point tensor")
                g = cast_to(g, m.dtype)
        result.append(g)
    return result


# ---- the run -------------------------------------------------------------------------------------
def _count_dependencies(root_nodes):
    """For every node reachable from the roots, how many edges lead to it (a node is pushed once, when
    its first edge is seen; a root is already on the stack)."""
    deps = {}
    roots = set(root_nodes)
    stack = list(root_nodes)
    pop, push = stack.pop, stack.append
    while stack:
        for nxt, _ in pop().next_functions:
            if nxt is not None:
                d = deps.get(nxt)
                if d is None:
                    deps[nxt] = 1
                    if nxt not in roots:
                        push(nxt)
                else:
                    deps[nxt] = d + 1
    return deps


def _nodes_to_execute(root_nodes, targets) -> set:
    """The nodes on a path from a root to a target node: they must run for the targets' grads."""
    reaches = {}
    execute = set()
    for root in root_nodes:
        if root in reaches:
            continue
        reaches[root] = root in targets
        stack = [(root, iter(root.next_functions))]
        while stack:
            node, children = stack[-1]
            for nxt, _ in children:
                if nxt is not None and nxt not in reaches:
                    reaches[nxt] = nxt in targets
                    stack.append((nxt, iter(nxt.next_functions)))
                    break
            else:
                stack.pop()
                for nxt, _ in node.next_functions:
                    if nxt is not None and reaches[nxt]:
                        execute.add(node)
                        reaches[node] = True
                        break
    return execute


def _call_tensor_hooks(hooks: dict, grad: Tensor) -> Tensor:
    for fn in list(hooks.values()):
        result = fn(grad)
        if result is not None:
            if not isinstance(result, Tensor):
                raise TypeError(f"hook {getattr(fn, '__name__', fn)!r} returned {type(result).__name__}; a tensor "
                                f"hook must return a Tensor or None")
            if result._meta.shape != grad._meta.shape:
                raise RuntimeError(f"hook {getattr(fn, '__name__', fn)!r} has changed the size of value: "
                                   f"expected {list(grad.shape)}, got {list(result.shape)}")
            grad = result
    return grad


def _prepare(node, grads: list, accumulate: bool, create_graph: bool) -> list:
    """Run the node's pre-hooks and its outputs' tensor hooks; store retained grads."""
    if type(node) is AccumulateGrad:
        hooks = node.variable._ag.hooks
        if hooks and grads[0] is not None:
            grads[0] = _call_tensor_hooks(hooks, grads[0])
    hooks = node.hooks
    if hooks is None:
        return grads
    for fn in list(hooks.pre.values()):
        result = fn(tuple(grads))
        if result is not None:
            if len(result) != len(grads):
                raise RuntimeError(f"pre-hook of {node.name()} returned {len(result)} grads, expected {len(grads)}")
            grads = list(result)
    for nr, tensor_hooks in hooks.tensor.items():
        g = grads[nr]
        if tensor_hooks and g is not None:
            grads[nr] = _call_tensor_hooks(tensor_hooks, g)
    if accumulate:
        for nr, ref in hooks.retained.items():
            t, g = ref(), grads[nr]
            if t is not None and g is not None:
                ag = t._ag
                ag.grad = copy_tensor(g) if ag.grad is None else add_tensors(ag.grad, g)
    return grads


def _check_grad(node, i, g, meta, target=None):
    """``g`` as the grad of an input of ``meta``: same shape and device, cast to its dtype (kept as it is when
    ``target``, the node receiving it, is a leaf's with ``grad_dtype=None``: Note [Gradient dtype])."""
    if not isinstance(g, Tensor):
        raise TypeError(f"Function {node.name()} returned an invalid gradient at index {i} - expected a Tensor "
                        f"or None, got {type(g).__name__}")
    gm = g._meta
    if gm.shape != meta.shape:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                           f"{list(gm.shape)} but expected shape compatible with {list(meta.shape)}")
    if gm.device is not meta.device:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - expected device "
                           f"{meta.device} but got {gm.device}")
    if gm.dtype is not meta.dtype and not (type(target) is AccumulateGrad and target.any_dtype):
        if not gm.dtype.is_floating_point:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - expected "
                               f"a floating point dtype, got {gm.dtype.name}")
        g = cast_to(g, meta.dtype)
    return g


def _seed_buffers(roots, root_grads) -> tuple:
    """The grad buffer of every root node, with the root grads summed in, and the root nodes in order."""
    buffers = {}
    root_nodes = []
    for (node, nr), g in zip(roots, root_grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * len(node.out_metas)
            root_nodes.append(node)
        buf[nr] = g if buf[nr] is None else add_tensors(buf[nr], g)
    return buffers, root_nodes


def _plan_targets(root_nodes, targets) -> tuple:
    """For ``grad()``: the target slots of each target node (node -> [(output_nr, index in targets)]) and
    the nodes that must run to reach them."""
    target_of = {}
    for idx, (node, nr) in enumerate(targets):
        if node is not None:
            target_of.setdefault(node, []).append((nr, idx))
    return target_of, _nodes_to_execute(root_nodes, target_of)


def _zeros_for_missing_grads(metas, grads: list) -> None:
    """A node with several outputs runs with zeros for the absent grads of outputs that require grad."""
    for i, g in enumerate(grads):
        if g is None and metas[i] is not None:
            grads[i] = zeros_of(metas[i])


def _call_post_hooks(post: dict, in_grads, grads: list):
    """Run a node's post hooks; a non-None result replaces its input grads."""
    for fn in list(post.values()):
        result = fn(in_grads, tuple(grads))
        if result is not None:
            in_grads = tuple(result)
    return in_grads


def run_backward(roots, root_grads, retain_graph: bool, create_graph: bool, targets=None, accumulate=True):
    """Backpropagate ``root_grads`` from the edges ``roots``.

    ``targets``: edges whose grads to return (then only the nodes that lead to
    them run); ``accumulate``: whether AccumulateGrad nodes and ``retain_grad``
    store into ``.grad``.
    """
    buffers, root_nodes = _seed_buffers(roots, root_grads)
    deps = _count_dependencies(root_nodes)
    target_of = execute = captured = None
    if targets is not None:
        captured = [None] * len(targets)
        target_of, execute = _plan_targets(root_nodes, targets)
    ready = [n for n in root_nodes if n not in deps]
    ready.reverse()
    anomaly = is_anomaly_enabled() and is_anomaly_check_nan_enabled()
    prev_mode = is_grad_enabled()
    _set_enabled(create_graph)
    outer = grad_reduce.begin_run()
    store = None
    try:
        if _backward_observers:  # Note [Backward observers]: one test per run, none per node
            with ExitStack() as observed:
                for observer in list(_backward_observers.values()):
                    observed.enter_context(observer())
                _run_ready_nodes(ready, buffers, deps, target_of, execute, captured, retain_graph, create_graph,
                                 accumulate, anomaly)
        else:
            _run_ready_nodes(ready, buffers, deps, target_of, execute, captured, retain_graph, create_graph,
                             accumulate, anomaly)
        store = _store_reduced
    finally:
        try:
            grad_reduce.end_run(outer, store)  # Note [Bucketed all-reduce of partial gradients]
        finally:
            _set_enabled(prev_mode)
    return captured


def _store_reduced(t: Tensor, g: Tensor) -> None:
    """A gradient all-reduced at the end of the run: nothing else sees ``g``, so ``.grad`` may become it."""
    _store_grad(t, g, g, False)


# Note [Backward observers]
# Tools that watch backward runs (the profiler marks the ops a run dispatches as backward ops; the flop
# counter's module tracker resets its module stack after a run) add an observer: a zero-argument callable
# returning a context manager that wraps the node loop of one run, in the thread running it. The engine
# tests the list once per run and never per node, so a run without observers pays one truthiness test.
_backward_observers: dict = {}  # handle id -> observer


def add_backward_observer(observer):
    """Wrap every backward run in ``observer()`` (a context manager) until the returned handle's ``remove()``
    (Note [Backward observers])."""
    if not callable(observer):
        raise TypeError(f"add_backward_observer(): observer must be a callable returning a context manager, got "
                        f"{type(observer).__name__}")
    handle = RemovableHandle(_backward_observers)
    _backward_observers[handle.id] = observer
    return handle


def _check_nan(node, in_grads) -> None:
    """Anomaly mode (``flow.autograd.detect_anomaly``): a NaN in an input grad of ``node`` is an error naming it."""
    for i, g in enumerate(in_grads):
        if g is not None and g._meta.dtype.is_floating_point and g._array is not None \
                and not g._key_set & LAZY_KEY_SET and g._meta.numel and np.isnan(g._array).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _after_apply(node, in_grads, grads, anomaly):
    """A node's post hooks, then the NaN check of anomaly mode, on the input grads it computed."""
    hooks = node.hooks
    if hooks is not None and hooks.post:
        in_grads = _call_post_hooks(hooks.post, in_grads, grads)
    if anomaly:
        _check_nan(node, in_grads)
    return in_grads


def _run_ready_nodes(ready, buffers, deps, target_of, execute, captured, retain_graph, create_graph, accumulate,
                     anomaly=False):
    """Run each ready node on its summed output grads and release its producers (Note [The backward engine]): one
    loop, no call per node on the common path (W6 times it); ``anomaly`` checks input grads for NaN."""
    while ready:
        node = ready.pop()
        grads = buffers.pop(node, None)
        next_functions = node.next_functions
        if grads is not None:
            is_leaf = type(node) is AccumulateGrad
            if is_leaf or node.hooks is not None:
                grads = _prepare(node, grads, accumulate, create_graph)
            if target_of is not None:
                for nr, idx in target_of.get(node, ()):
                    captured[idx] = grads[nr]
            if (execute is None or node in execute) and (
                    grads[0] is not None if len(grads) == 1 else any(g is not None for g in grads)):
                if len(grads) > 1:
                    _zeros_for_missing_grads(node.out_metas, grads)
                if is_leaf:  # no successors, nothing saved
                    g, grads = grads[0], None  # g is now held by this variable only (Note [Stealing the gradient])
                    accumulate_grad(node.variable, g, create_graph, True)
                    g = None
                    continue
                gf = node.grad_fn if type(node) is OpNode else None  # OpNode.apply, inlined
                in_grads = node.apply(grads, create_graph) if gf is None else gf.apply(node.state, grads)
                if gf is not None and (type(in_grads) is not tuple or len(in_grads) != len(next_functions)):
                    in_grads = node.check_grads(in_grads)
                if anomaly or node.hooks is not None:
                    in_grads = _after_apply(node, in_grads, grads, anomaly)
                i = 0  # not enumerate(): a tuple per input costs more than the count (W6)
                for (nxt, nr), g in zip(next_functions, in_grads):
                    if nxt is not None and g is not None:
                        meta = nxt.out_metas[nr]
                        if g._meta is not meta:
                            g = _check_grad(node, i, g, meta, nxt)
                        buf = buffers.get(nxt)
                        if buf is None:
                            buf = buffers[nxt] = [None] * len(nxt.out_metas)
                            buf[nr] = g
                        else:
                            buf[nr] = g if buf[nr] is None else add_tensors(buf[nr], g)
                    i += 1
                in_grads = g = buf = None  # the buffers alone hold the grads (Note [Stealing the gradient])
                if not retain_graph:
                    if type(node) is not OpNode:
                        node.release()
                    elif (state := node.state)._packed:  # OpNode.release, inlined
                        state._packed = None
        for nxt, _ in next_functions:
            if nxt is not None:
                d = deps[nxt] - 1
                if d:
                    deps[nxt] = d
                else:
                    del deps[nxt]
                    ready.append(nxt)


# Note [Backward entry hooks]
# A transform may have to see a ``backward()`` call before it runs: vmap refuses it (a batched root has a grad
# per sample; PyTorch's functorch error, interpreters/batched.py), nn.Graph's loss scaling multiplies the root
# grads of a ``loss.backward()`` captured with a grad scaler by the scale (Note [Graph AMP] in graph/amp.py).
# Each registers ``hook(tensors, grads)`` (the roots and their root grads), which may raise or return new root
# grads (None: unchanged). ``backward()`` tests the table once per call, never per node; ``autograd.grad`` does
# not call the hooks (it is what vmap's ``grad`` transform runs on).
_backward_entry_hooks: dict = {}  # handle id -> hook


def add_backward_entry_hook(hook):
    """Call ``hook(tensors, grads)`` at every ``backward()`` call until the returned handle's ``remove()``
    (Note [Backward entry hooks])."""
    if not callable(hook):
        raise TypeError(f"add_backward_entry_hook(): hook must be a callable (tensors, grads) -> grads or None, got "
                        f"{type(hook).__name__}")
    handle = RemovableHandle(_backward_entry_hooks)
    _backward_entry_hooks[handle.id] = hook
    return handle


def _run_entry_hooks(tensors, grads):
    for hook in list(_backward_entry_hooks.values()):
        result = hook(tensors, grads)
        if result is not None:
            grads = list(result)
    return grads


# ---- entry points --------------------------------------------------------------------------------
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``)."""
    tensors = _as_tensor_tuple(tensors, "tensors", "backward")
    grads = _make_grads(tensors, grad_tensors, "backward", "grad_tensors")
    if _backward_entry_hooks:  # Note [Backward entry hooks]
        grads = _run_entry_hooks(tensors, grads)
    if retain_graph is None:
        retain_graph = create_graph
    roots = [gradient_edge(t) for t in tensors]
    if inputs is None:
        run_backward(roots, grads, retain_graph, create_graph)
        return
    inputs = _as_tensor_tuple(inputs, "inputs", "backward")
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    for i, t in enumerate(inputs):
        if not t._key_set & _AG_BIT:
            raise RuntimeError(f"backward(): element {i} of 'inputs' does not require grad")
    captured = run_backward(roots, grads, retain_graph, create_graph, [gradient_edge(t) for t in inputs],
                            accumulate=True)
    prev_mode = is_grad_enabled()
    _set_enabled(create_graph)
    try:
        for t, g in zip(inputs, captured):
            if g is not None:
                accumulate_grad(t, g, create_graph)
    finally:
        _set_enabled(prev_mode)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs`` (``.grad`` is left alone). ``is_grads_batched``:
    the first dim of every ``grad_outputs`` entry is a batch of vectors (a backward pass each, stacked);
    ``materialize_grads``: zeros for an input the outputs do not depend on (instead of None)."""
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.", stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    outputs = _as_tensor_tuple(outputs, "outputs", "grad")
    inputs = _as_tensor_tuple(inputs, "inputs", "grad")
    for t in inputs:
        if not t._key_set & _AG_BIT:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        captured = _batched_grads(outputs, inputs, grad_outputs, retain_graph, create_graph)
    else:
        grads = _make_grads(outputs, grad_outputs, "grad", "grad_outputs")
        captured = run_backward([gradient_edge(t) for t in outputs], grads, retain_graph, create_graph,
                                [gradient_edge(t) for t in inputs], accumulate=False)
    if not (allow_unused or materialize_grads) and any(g is None for g in captured):
        raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                           "Set allow_unused=True if this is the desired behavior.")
    if materialize_grads:
        captured = [F.zeros_of(t._meta) if g is None else g for g, t in zip(captured, inputs)]
    return tuple(captured)


def _batched_grads(outputs, inputs, grad_outputs, retain_graph, create_graph):
    """``grad(..., is_grads_batched=True)``: one backward pass per row of the grad_outputs, stacked (None stays)."""
    if grad_outputs is None:
        raise RuntimeError("grad: is_grads_batched=True needs grad_outputs (a batch of vectors per output)")
    batched = _as_tensor_tuple(grad_outputs, "grad_outputs", "grad")
    sizes = {g.shape[0] if g.dim() else None for g in batched}
    if len(sizes) != 1 or None in sizes:
        raise RuntimeError(f"grad: with is_grads_batched=True every grad_outputs entry needs the same batch size "
                           f"in its first dim, got shapes {[tuple(g.shape) for g in batched]}")
    rows, n = [], sizes.pop()
    for i in range(n):
        grads = _make_grads(outputs, tuple(g[i] for g in batched), "grad", "grad_outputs")
        rows.append(run_backward([gradient_edge(t) for t in outputs], grads, retain_graph or i < n - 1,
                                 create_graph, [gradient_edge(t) for t in inputs], accumulate=False))
    return [None if any(r[k] is None for r in rows) else _f("Stack")([r[k] for r in rows], 0)
            for k in range(len(inputs))]


# Tensor.backward and AccumulateGrad.apply reach the engine through these (Note [Engine registration]).
register_backward_engine(backward)
register_accumulate_grad(accumulate_grad)

__all__ = ["add_backward_entry_hook", "add_backward_observer", "backward", "grad", "run_backward"]
