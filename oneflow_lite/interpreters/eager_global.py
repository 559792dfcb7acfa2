"""``EagerGlobalInterpreter``: the handler at the Global key (OneFlow's eager_global_op_interpreter).

A call on global tensors is planned once per (call attrs, input global metas), in the op expr's
``global_infer_cache`` (OneFlow's GlobalTensorInferCache): the inputs must be global and on one placement;
the op's own infer functions give the logical output metas from the logical input metas; the op's SBP rule
(interpreters/sbp_rules.py) gives a signature per placement dimension (Note [Choosing a signature]); the
rule's ``localize`` gives the local call's attrs. Each call then boxes the inputs whose SBP differs
(interpreters/boxing.py), redispatches the op below the Global key on this rank's pieces (the backend's
eager interpreter runs the local kernel, with its own caches and fast path), runs the rule's per-call
``finish`` if any, and wraps the local outputs as global tensors.

Note [Choosing a signature]
For each placement dimension, among the rule's signatures, the one with the least boxing cost from the
inputs' current SBPs wins; ties go to the first listed. The cost of an input counts the bytes it moves
(all-gather: the tensor; all-reduce: twice; reduce-scatter and all-to-all: less) plus one for a change
that moves nothing (B -> S slices, S -> P pads), so an input already in the right SBP always wins over a
free change. An in-place call only takes signatures whose outputs keep the written tensor's SBP; when
there is none, it computes out of place, boxes the result and copies it in.
"""

from __future__ import annotations

import logging

import numpy as np

from oneflow_lite.dispatch.dispatch_key import DispatchKey, keys_below
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.introspection import register_annotation
from oneflow_lite.framework import sbp as S
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.generator import Generator, current_generator, using_generator
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET, make_global_meta
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.framework.tensor import Tensor, version_counter
from oneflow_lite.framework.world import world
from oneflow_lite.interpreters import sbp_rules_nn  # noqa: F401  (registers the rules of the nn ops)
from oneflow_lite.interpreters.boxing import box_same_placement
from oneflow_lite.interpreters.op_interp_util import redispatch
from oneflow_lite.interpreters.sbp_rules import B, SbpContext, SbpRule, describe_rule, find_sbp_rule

_BELOW = keys_below(DispatchKey.Global)
_AUTOGRAD = 1 << DispatchKey.Autograd
_make = Tensor._make
_log = logging.getLogger("oneflow_lite.global")
_noted: set = set()


class GlobalPlan:
    """How a global call runs: the placement, each input's nd-SBP and local meta, the output global metas,
    the local call's attrs and the optional per-call ``finish`` (with its ``data``)."""

    __slots__ = ("attrs", "data", "finish", "prepare", "in_local_metas", "in_local_shapes", "in_metas", "in_nd_sbps",
                 "inplace_box", "out_local_shapes", "out_metas", "placement", "random", "stream")

    def __repr__(self):
        ins = ", ".join(S.format_nd_sbp(s) for s in self.in_nd_sbps)
        outs = ", ".join(S.format_nd_sbp(m.nd_sbp) for m in self.out_metas)
        return f"GlobalPlan({ins} -> {outs} on {self.placement})"


def _inconsistent(op_type, metas):
    kinds = ", ".join("global" if m.key_set & GLOBAL_KEY_SET else "local" for m in metas)
    return RuntimeError(f"Got input tensors with inconsistent attributes! op_type_name: {op_type} (inputs: "
                        f"{kinds}); every input of an op on global tensors must be global: make the local ones "
                        f"global with tensor.to_global(placement, sbp)")


# Note [Wrapped numbers on global calls]
# Functors turn a Python number into a 0-d local tensor for ops without a scalar operand
# (``where(c, x, 0.0)``, ``2 % x``: PyTorch's wrapped numbers). Next to global inputs such a tensor is
# taken as broadcast: every rank made the same number. Any other local input (one that requires grad
# included) is an error, as in OneFlow.
def _check_wrapped_numbers(op_expr, inputs) -> None:
    for t in inputs:
        if not t._key_set & GLOBAL_KEY_SET and (t._key_set & _AUTOGRAD or t._meta.ndim):
            raise _inconsistent(op_expr.op_type_name, [u._meta for u in inputs])


def _placement_of(op_expr, metas):
    names = op_expr.indexed_ibns
    p = None
    for i, m in enumerate(metas):
        if not m.key_set & GLOBAL_KEY_SET:
            if m.ndim == 0:  # a wrapped number
                continue
            raise _inconsistent(op_expr.op_type_name, metas)
        q = m.placement
        if p is None:
            p, first = q, i
        elif q is not p:
            where = names[i] if i < len(names) else "an in-place output"
            raise RuntimeError(f"{op_expr.op_type_name}: Expected all tensors to be on the same placement, but "
                               f"found at least two placements, {p} (input {names[first]}) and {q} ({where})! "
                               f"Please use tensor.to_global() to move them to one placement.")
    if p is None:
        raise _inconsistent(op_expr.op_type_name, metas)
    return p


def _global_metas(metas, placement):
    """The inputs' global metas, a wrapped number's as broadcast (Note [Wrapped numbers on global calls])."""
    return [m if m.key_set & GLOBAL_KEY_SET else
            make_global_meta((), m.dtype, placement, (B,) * placement.ndim) for m in metas]


_BYTES_FREE = 1.0


def boxing_cost(src, dst, nbytes: float, n: int) -> float:
    """The cost of boxing one placement dimension from ``src`` to ``dst`` (Note [Choosing a signature])."""
    if src is dst:
        return 0.0
    if src is B or dst.is_partial and src.kind == "S":
        return _BYTES_FREE
    if src.is_partial:
        return _BYTES_FREE + (2 * nbytes if dst.kind != "S" else nbytes)
    return _BYTES_FREE + (nbytes if dst is B else nbytes / n)


def _choose(sigs, current, nbytes, n, want_out):
    best, best_cost = None, None
    for ins, outs in sigs:
        if want_out is not None and any(w is not None and w is not o for w, o in zip(want_out, outs)):
            continue
        cost = 0.0
        for src, dst, nb in zip(current, ins, nbytes):
            cost += boxing_cost(src, dst, nb, n)
        if best is None or cost < best_cost:
            best, best_cost = (ins, outs), cost
    return best


# Note [Random ops on global tensors]
# A random op draws from a generator seeded alike on every rank of the placement: every rank draws one seed
# from its current generator (so all advance alike), and the first rank's seed is broadcast. Most random ops
# have no SBP rule: they run on broadcast inputs, and the broadcast result is the same on every rank.
# ``random_mask_like`` (dropout's mask) has one: a split input gives a split mask, each rank drawing only
# its own piece, from the stream ``seed + k`` where ``k`` is the index of its piece (its coordinates along
# the placement dimensions that split the output, row-major; 0 when none does, so broadcast draws agree).
# The logical mask is therefore, piece by piece in rank order, ``PCG64(seed + k).random(piece shape,
# float32) >= rate`` (the kernel's draw): it depends on the number of pieces, not only on the seed.
RANDOM_OPS = frozenset(("bernoulli", "normal_tensor", "random_mask_like", "multinomial", "poisson", "exponential",
                        "geometric", "cauchy", "log_normal", "uniform", "normal", "randint", "randperm"))


def shared_generator(generator, placement, stream: int = 0) -> Generator:
    """A generator seeded alike on every rank of ``placement``, plus ``stream`` (Note [Random ops on global
    tensors])."""
    gen = generator or current_generator(placement.device)
    seed = np.array([gen.numpy.integers(0, 2 ** 62)], np.int64)
    if placement.size > 1 and placement.has_rank(world().rank):
        seed = world().group(placement.rank_list).broadcast(seed, root=0)
    return Generator().manual_seed(int(seed[0]) + stream)


def piece_index(placement, nd_sbp: tuple, coord) -> int:
    """The index of this rank's piece among the pieces ``nd_sbp`` cuts (row-major over the split placement
    dimensions; 0 when none splits or outside the placement)."""
    k = 0
    if coord is not None:
        for s, n, i in zip(nd_sbp, placement.hierarchy, coord):
            if s.kind == "S":
                k = k * n + i
    return k


def _rule_of(op_type):
    rule = find_sbp_rule(op_type)
    if rule is None:
        if op_type not in _noted and op_type not in RANDOM_OPS:
            _noted.add(op_type)
            _log.info("global: op '%s' has no SBP rule; its inputs are made broadcast and every rank computes "
                      "the whole op (register one with interpreters.sbp_rules.register_sbp_rule)", op_type)
        return _FALLBACK
    return rule


_FALLBACK = SbpRule(lambda ctx: [((B,) * len(ctx.inputs), (B,) * len(ctx.outputs))])


def _signature(op_expr, placement, in_metas, logical, attrs, out_metas):
    """Per output and input: the nd-SBP chosen dimension by dimension (Note [Choosing a signature])."""
    rule = _rule_of(op_expr.op_type_name)
    nbytes = [m.numel * m.dtype.itemsize for m in in_metas]
    in_nd = [[] for _ in in_metas]
    out_nd = [[] for _ in logical.out_metas]
    ctx = None
    for h, n in enumerate(placement.hierarchy):
        ctx = SbpContext(op_expr.op_type_name, tuple(m.logical for m in in_metas), logical.out_metas, logical.attrs, n,
                         h, placement.size)
        sigs = rule.signatures(ctx)
        current = [m.nd_sbp[h] for m in in_metas]
        want = None if out_metas is None else [o.nd_sbp[h] for o in out_metas]
        chosen = _choose(sigs, current, nbytes, n, want)
        if chosen is None:  # an in-place call no signature writes as it is (Note [Choosing a signature])
            return None, None, rule, ctx
        for lst, s in zip(in_nd, chosen[0]):
            lst.append(s)
        for lst, s in zip(out_nd, chosen[1]):
            lst.append(s)
    return [tuple(s) for s in in_nd], [tuple(s) for s in out_nd], rule, ctx


def plan_call(op_expr, metas, attrs, out_metas=None) -> GlobalPlan:
    """How a call of ``op_expr`` on inputs of global ``metas`` runs (an in-place call's ``out_metas`` given):
    metadata only, shared by the eager interpreter and the plans of graphs on global tensors."""
    placement = _placement_of(op_expr, tuple(metas) + tuple(out_metas or ()))
    in_metas = _global_metas(metas, placement)
    logical = op_expr.infer(tuple(m.logical for m in in_metas), attrs)
    in_nd, out_nd, rule, ctx = _signature(op_expr, placement, in_metas, logical, attrs, out_metas)
    plan = GlobalPlan()
    plan.placement = placement
    plan.finish = plan.data = plan.prepare = None
    plan.inplace_box = in_nd is None
    plan.random = op_expr.op_type_name in RANDOM_OPS
    if in_nd is None:
        return plan
    plan.in_metas = in_metas
    plan.in_nd_sbps = in_nd
    targets = [make_global_meta(m.shape, m.dtype, placement, nd) for m, nd in zip(in_metas, in_nd)]
    plan.in_local_metas = [t.local for t in targets]
    plan.in_local_shapes = [None if t.local is None else t.local.shape for t in targets]
    plan.out_metas = tuple(make_global_meta(m.shape, m.dtype, placement, nd)
                           for m, nd in zip(logical.out_metas, out_nd))
    plan.out_local_shapes = [None if m.local is None else m.local.shape for m in plan.out_metas]
    plan.attrs = attrs
    plan.stream = piece_index(placement, out_nd[0], plan.out_metas[0].coord) if plan.random and out_nd else 0
    if rule.localize is not None and targets and targets[0].local is not None:
        overrides = rule.localize(ctx, plan)
        if overrides:
            plan.attrs = AttrMap(dict(attrs.items()) if attrs else {}).merged(overrides)
    if plan.in_local_metas and plan.in_local_metas[0] is not None:
        _check_local_shapes(op_expr, plan)
    return plan


def plan_source(op_expr, placement, attrs=None, nd_sbp: tuple | None = None) -> GlobalPlan:
    """The plan of an op without inputs (a constant or random source captured in a graph) on ``placement``:
    every rank makes the whole value (a random one from a generator seeded alike) and keeps its piece under
    ``nd_sbp`` (broadcast when None; Note [Global source ops in a graph])."""
    logical = op_expr.infer((), attrs)
    plan = GlobalPlan()
    plan.placement = placement
    plan.data = plan.prepare = None
    plan.inplace_box = False
    plan.random = op_expr.op_type_name in RANDOM_OPS
    plan.in_metas, plan.in_nd_sbps, plan.in_local_metas, plan.in_local_shapes = [], [], [], []
    nd = nd_sbp or (B,) * placement.ndim
    plan.out_metas = tuple(make_global_meta(m.shape, m.dtype, placement, nd) for m in logical.out_metas)
    plan.out_local_shapes = [m.shape for m in logical.out_metas]
    plan.finish = None if all(s is B for s in nd) else _keep_pieces
    plan.attrs = attrs
    plan.stream = 0
    return plan


def _keep_pieces(plan, local_in, res) -> None:
    """A source op laid out under a non-broadcast nd-SBP: every rank made the whole value, it keeps its piece
    (its ``B -> nd-SBP`` boxing, which needs no communication); a rank outside the placement keeps nothing."""
    for t, m in zip(res, plan.out_metas):
        whole = (B,) * len(m.nd_sbp)
        t._array = None if m.coord is None else box_same_placement(t._array, m.shape, m.placement, m.coord, whole,
                                                                    m.nd_sbp)


def _check_local_shapes(op_expr, plan):
    """The local call's output shapes must be the pieces of the logical outputs (a wrong rule fails here)."""
    local = op_expr.infer(tuple(plan.in_local_metas), plan.attrs)
    for m, lm, name in zip(plan.out_metas, local.out_metas, op_expr.indexed_obns):
        if m.local is not None and tuple(lm.shape) != tuple(m.local.shape):
            raise RuntimeError(f"{op_expr.op_type_name}: the SBP signature {plan!r} gives output '{name}' a local "
                               f"shape {list(lm.shape)} on this rank, but the piece of the logical shape "
                               f"{list(m.shape)} under {S.format_nd_sbp(m.nd_sbp)} is {list(m.local.shape)}")


def _local_input(t, meta, nd_sbp, local_meta, placement):
    a = t._array
    if meta.nd_sbp != nd_sbp:
        a = box_same_placement(a, meta.shape, placement, meta.coord, meta.nd_sbp, nd_sbp)
    lt = _make(a, local_meta)
    if t._vc is not None and a is t._array:
        lt._vc = t._vc
    return lt


def eager_global_interpreter(op_expr, ks, inputs, attrs, outputs):
    """Run an op on global tensors (the boxed handler of the Global key)."""
    if type(op_expr) is not UserOpExpr:
        run_forward = getattr(op_expr, "run_forward", None)  # a custom autograd.Function
        if run_forward is not None:
            return run_forward(inputs)
        raise RuntimeError(f"EagerGlobalInterpreter: {type(op_expr).__name__} ('{op_expr.op_type_name}') is not "
                           f"supported on global tensors")
    try:
        key = (attrs, *[t._meta for t in inputs]) if outputs is None else \
            (attrs, *[t._meta for t in inputs], None, *[t._meta for t in outputs])
        plan = op_expr.global_infer_cache.get(key)
    except TypeError:  # plain-dict attrs do not hash
        key, plan = None, None
    if plan is None:
        _check_wrapped_numbers(op_expr, inputs)
        plan = plan_call(op_expr, [t._meta for t in inputs], attrs,
                         None if outputs is None else [o._meta for o in outputs])
        if key is not None:
            op_expr.global_infer_cache[key] = plan
    if plan.inplace_box:
        return _inplace_by_copy(op_expr, ks, inputs, attrs, outputs)
    if plan.in_local_metas and plan.in_local_metas[0] is None:  # this rank is outside the placement
        return tuple(outputs) if outputs is not None else tuple(_make(None, m) for m in plan.out_metas)
    p = plan.placement
    local_in = [_local_input(t, m, nd, lm, p)
                for t, m, nd, lm in zip(inputs, plan.in_metas, plan.in_nd_sbps, plan.in_local_metas)]
    local_out = None
    if outputs is not None:
        local_out = []
        for o in outputs:
            lo = _make(o._array, o._meta.local)
            lo._vc = version_counter(o)
            local_out.append(lo)
    kernel_in = local_in if plan.prepare is None else plan.prepare(plan, local_in)
    if plan.random:
        with using_generator(shared_generator(None, p, plan.stream)):
            res = redispatch(op_expr, ks & _BELOW, kernel_in, plan.attrs, local_out)
    else:
        res = redispatch(op_expr, ks & _BELOW, kernel_in, plan.attrs, local_out)
    if plan.finish is not None:
        plan.finish(plan, local_in, res)
    if outputs is not None:
        return tuple(outputs)
    outs = []
    for lt, m in zip(res, plan.out_metas):
        g = _make(lt._array, m)
        g._vc = lt._vc
        outs.append(g)
    return tuple(outs)


def _inplace_by_copy(op_expr, ks, inputs, attrs, outputs):
    """An in-place call whose result has another SBP than the written tensor: out of place, boxed, copied."""
    results = eager_global_interpreter(op_expr, ks, inputs, attrs, None)
    for o, r in zip(outputs, results):
        rm, om = r._meta, o._meta
        a = box_same_placement(r._array, rm.shape, rm.placement, rm.coord, rm.nd_sbp, om.nd_sbp)
        if o._array is not None:
            np.copyto(o._array, a)
            version_counter(o).version += 1
    return tuple(outputs)


def register():
    """Register the interpreter as the fallback at the Global key, and its SBP rules' line in ``dump_table``;
    returns the handle."""
    register_annotation(DispatchKey.Global, describe_rule)
    return DISPATCHER.register_fallback(DispatchKey.Global, eager_global_interpreter)


class EagerGlobalInterpreter:
    """OneFlow's name for the global handler (a namespace; the handler is a function for speed)."""

    apply = staticmethod(eager_global_interpreter)
