"""The collectives of ``flow.comm`` (see the package docstring): in-place on the tensors they write."""

from __future__ import annotations

import os

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.device import device as Device
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET
from oneflow_lite.framework.tensor import Tensor, version_counter
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.framework.world import world

_OPS = ("sum", "max", "min", "prod")

# Note [The shape check of collectives]
# Each collective first checks that every rank passes the same shapes and dtypes: MPI with mismatched
# counts hangs or corrupts memory, so the check must come before the payload. It is one all-reduce (max)
# of a few int64s, the signature of the arrays and its negation (equal on every rank exactly when max ==
# -max of the negations); the signature arrays are cached per (shapes, dtypes), so a call pays one small
# collective and a dict lookup. Only on a mismatch are the descriptions exchanged, to raise the same error
# on every rank. A large message hardly notices the check; a small one (a few KB, latency-bound) pays a
# second round trip. ``ONEFLOW_LITE_COMM_CHECK=0`` in the environment of every rank skips it (then a
# mismatch is MPI's undefined behaviour: a hang or an MPI error).
CHECK_SHAPES = os.environ.get("ONEFLOW_LITE_COMM_CHECK", "1") != "0"
_signatures: dict = {}  # ((shape, dtype), ...) -> int64 [signature, -signature]


def _group(group):
    """The world's group of every rank (None), or of the given ranks."""
    w = world()
    return w.all if group is None else w.group(group)


def _array(op: str, name: str, t) -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"flow.comm.{op}: argument '{name}' must be a Tensor, got {type(t).__name__}")
    if t._key_set & GLOBAL_KEY_SET:
        raise TypeError(f"flow.comm.{op}: argument '{name}' is a global tensor; the collectives of flow.comm take "
                        f"local tensors (a global tensor's SBP conversions are tensor.to_global(...))")
    a = t._array
    if a is None or t.is_lazy:
        raise RuntimeError(f"flow.comm.{op}: argument '{name}' holds no data on this rank")
    return a


def _describe(arrays) -> tuple:
    return tuple((tuple(a.shape), a.dtype.str) for a in arrays)


def _signature(arrays) -> np.ndarray:
    """Shapes and dtypes of ``arrays`` as int64s and their negations (Note [The shape check of collectives])."""
    key = tuple([(a.shape, a.dtype) for a in arrays])
    sig = _signatures.get(key)
    if sig is None:
        out = [len(arrays)]
        for a in arrays:
            out += [a.ndim, a.dtype.num, a.dtype.itemsize, *a.shape[:6], hash(a.shape[6:]) % (1 << 40)]
        if len(_signatures) >= 1024:
            _signatures.clear()
        sig = _signatures[key] = np.array(out + [-v for v in out], np.int64)
    return sig


def _check_same(group, op: str, arrays, per_rank=False) -> list | None:
    """Every rank's (shape, dtype) of ``arrays`` must be equal (else the same error on every rank): checked by
    one small all-reduce, and only on a mismatch (or with ``per_rank``) by exchanging the descriptions, which
    are then returned (Note [The shape check of collectives])."""
    if not per_rank and (group.size == 1 or not CHECK_SHAPES or group.same_on_every_rank(_signature(arrays))):
        return None
    mine = _describe(arrays)
    everyone = group.allgather_object(mine)
    if not per_rank and any(d != everyone[0] for d in everyone):
        rows = "; ".join(f"rank {group.ranks[i]}: " + ", ".join(f"{list(s)} {np.dtype(t).name}" for s, t in d)
                         for i, d in enumerate(everyone))
        raise RuntimeError(f"flow.comm.{op}: the ranks passed tensors of different shapes or dtypes ({rows}); "
                           f"every rank must pass the same shape and dtype")
    return everyone


def _write(t: Tensor, value: np.ndarray) -> None:
    np.copyto(t._array, value.reshape(t._array.shape))
    version_counter(t).version += 1


def _reduce_op(op) -> str:
    if op in _OPS:
        return op
    name = getattr(op, "value", op)
    name = str(name).lower()
    if name not in _OPS:
        raise ValueError(f"flow.comm: unknown reduction op {op!r}; expected one of {', '.join(_OPS)}")
    return name


def all_reduce(tensor: Tensor, op="sum", group=None) -> None:
    """Every rank's ``tensor`` becomes the elementwise reduction (sum by default) over the ranks."""
    a = _array("all_reduce", "tensor", tensor)
    g = _group(group)
    op = _reduce_op(op)
    _check_same(g, "all_reduce", (a,))
    if g.allreduce_inplace(a, op):  # the tensor's own buffer, no copy
        version_counter(tensor).version += 1
    else:
        _write(tensor, g.allreduce(a, op))


def reduce(tensor: Tensor, dst: int = 0, op="sum", group=None) -> None:
    """Rank ``dst``'s ``tensor`` becomes the reduction over the ranks; the others are left as they are."""
    a = _array("reduce", "tensor", tensor)
    g = _group(group)
    _check_same(g, "reduce", (a,))
    r = g.allreduce(a, _reduce_op(op))
    if g.ranks[g.rank] == dst:
        _write(tensor, r)


def broadcast(tensor: Tensor, src: int = 0, group=None) -> None:
    """Every rank's ``tensor`` becomes rank ``src``'s."""
    a = _array("broadcast", "tensor", tensor)
    g = _group(group)
    if src not in g.ranks:
        raise ValueError(f"flow.comm.broadcast: src={src} is not a rank of the group {list(g.ranks)}")
    _check_same(g, "broadcast", (a,))
    _write(tensor, g.broadcast(np.asarray(a, order="C").copy(), root=g.ranks.index(src)))


def all_gather(tensor_list: list, tensor: Tensor, group=None) -> None:
    """``tensor_list[i]`` becomes rank ``i``'s ``tensor`` (the list holds one tensor per rank)."""
    a = _array("all_gather", "tensor", tensor)
    g = _group(group)
    if not isinstance(tensor_list, list) or len(tensor_list) != g.size:
        raise ValueError(f"flow.comm.all_gather: tensor_list must be a list of {g.size} tensors (one per rank), "
                         f"got {len(tensor_list) if isinstance(tensor_list, list) else type(tensor_list).__name__}")
    outs = [_array("all_gather", f"tensor_list[{i}]", t) for i, t in enumerate(tensor_list)]
    _check_same(g, "all_gather", (a,))
    for o in outs:
        if o.shape != a.shape or o.dtype != a.dtype:
            raise RuntimeError(f"flow.comm.all_gather: every tensor of tensor_list must have the shape "
                               f"{list(a.shape)} and dtype {a.dtype.name} of 'tensor', got {list(o.shape)} "
                               f"{o.dtype.name}")
    flat = g.allgather(a, [a.size] * g.size)
    for i, t in enumerate(tensor_list):
        _write(t, flat[i * a.size:(i + 1) * a.size])


def gather(tensor: Tensor, gather_list: list | None = None, dst: int = 0, group=None) -> None:
    """Rank ``dst``'s ``gather_list[i]`` becomes rank ``i``'s ``tensor``."""
    a = _array("gather", "tensor", tensor)
    g = _group(group)
    _check_same(g, "gather", (a,))
    flat = g.allgather(a, [a.size] * g.size)
    if g.ranks[g.rank] == dst:
        if gather_list is None or len(gather_list) != g.size:
            raise ValueError(f"flow.comm.gather: rank {dst} needs a gather_list of {g.size} tensors")
        for i, t in enumerate(gather_list):
            _write(t, flat[i * a.size:(i + 1) * a.size])


def reduce_scatter(output: Tensor, input_list: list, op="sum", group=None) -> None:
    """``output`` becomes the reduction over the ranks of their ``input_list[this rank]``."""
    a = _array("reduce_scatter", "output", output)
    g = _group(group)
    if not isinstance(input_list, (list, tuple)) or len(input_list) != g.size:
        raise ValueError(f"flow.comm.reduce_scatter: input_list must hold {g.size} tensors (one per rank)")
    ins = [_array("reduce_scatter", f"input_list[{i}]", t) for i, t in enumerate(input_list)]
    _check_same(g, "reduce_scatter", [a] + ins)
    for x in ins:
        if x.shape != a.shape:
            raise RuntimeError(f"flow.comm.reduce_scatter: each input must have the output's shape {list(a.shape)}, "
                               f"got {list(x.shape)}")
    flat = np.concatenate([np.asarray(x, dtype=a.dtype, order="C").reshape(-1) for x in ins])
    _write(output, g.reduce_scatter(flat, [a.size] * g.size, _reduce_op(op)))


def all_to_all(output_tensor_list: list, input_tensor_list: list, group=None) -> None:
    """``output_tensor_list[j]`` becomes rank ``j``'s ``input_tensor_list[this rank]``."""
    g = _group(group)
    for name, lst in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(lst, (list, tuple)) or len(lst) != g.size:
            raise ValueError(f"flow.comm.all_to_all: {name} must hold {g.size} tensors (one per rank)")
    ins = [_array("all_to_all", f"input_tensor_list[{i}]", t) for i, t in enumerate(input_tensor_list)]
    outs = [_array("all_to_all", f"output_tensor_list[{i}]", t) for i, t in enumerate(output_tensor_list)]
    everyone = _check_same(g, "all_to_all", ins, per_rank=True)
    for j, o in enumerate(outs):
        shape, dtype = everyone[j][g.rank]
        if tuple(o.shape) != shape or o.dtype.str != dtype:
            raise RuntimeError(f"flow.comm.all_to_all: output_tensor_list[{j}] has shape {list(o.shape)} "
                               f"{o.dtype.name}, but rank {g.ranks[j]} sends {list(shape)} {np.dtype(dtype).name}")
    received = g.alltoall([np.asarray(x, dtype=outs[0].dtype, order="C").reshape(-1) for x in ins])
    for t, r in zip(output_tensor_list, received):
        _write(t, r)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int = 0, group=None) -> None:
    """Rank ``i``'s ``tensor`` becomes rank ``src``'s ``scatter_list[i]``."""
    a = _array("scatter", "tensor", tensor)
    g = _group(group)
    _check_same(g, "scatter", (a,))
    if g.ranks[g.rank] == src:
        if scatter_list is None or len(scatter_list) != g.size:
            raise ValueError(f"flow.comm.scatter: rank {src} needs a scatter_list of {g.size} tensors")
        blocks = [np.asarray(_array("scatter", f"scatter_list[{i}]", t), dtype=a.dtype, order="C").reshape(-1)
                  for i, t in enumerate(scatter_list)]
    else:
        blocks = [np.empty(0, a.dtype)] * g.size
    _write(tensor, g.alltoall(blocks)[g.ranks.index(src)])


def send(tensor: Tensor, dst: int, send_meta: bool = True) -> None:
    """Send ``tensor`` to rank ``dst`` (with its shape and dtype first unless ``send_meta`` is False)."""
    a = np.asarray(_array("send", "tensor", tensor), order="C")
    w = world()
    if w.size == 1:
        raise RuntimeError("flow.comm.send: a job of one process has no other rank to send to")
    if send_meta:
        w.comm.send((a.shape, a.dtype.str), dest=dst, tag=1)
    w.all.send(a, dst, tag=2)


def recv(src: int, shape=None, dtype=None, device=None, out: Tensor | None = None) -> Tensor:
    """Receive a tensor from rank ``src`` (its shape and dtype too unless given, or ``out`` is)."""
    w = world()
    if w.size == 1:
        raise RuntimeError("flow.comm.recv: a job of one process has no other rank to receive from")
    if out is not None:
        a = _array("recv", "out", out)
        buf = np.empty_like(a)
    else:
        if shape is None or dtype is None:
            shape, np_dtype = w.comm.recv(source=src, tag=1)
            dtype = dt.from_numpy_dtype(np.dtype(np_dtype))
        buf = np.empty(tuple(shape), dtype.np_dtype)
    w.all.recv(buf, src, tag=2)
    if out is not None:
        _write(out, buf)
        return out
    return Tensor._make(buf, make_meta(buf.shape, dtype, Device(device or "cpu")))


def barrier(group=None) -> None:
    """Wait until every rank of the group gets here."""
    _group(group).barrier()
