"""``DistributedDataParallel``: data parallelism on local tensors, gradients averaged over the processes.

Note [Bucketed gradient all-reduce]
Each process runs the whole model on its own part of the batch. At construction rank 0's parameters and
buffers are broadcast, so every replica starts alike. The parameters that require grad are packed, in
reverse order (roughly the order backward produces their gradients), into buckets of at most
``bucket_cap_mb`` megabytes (``bucket_size`` elements when given) of one dtype. A post-accumulate-grad hook
on each parameter copies its gradient into its bucket; a bucket whose last gradient arrived starts a
non-blocking all-reduce (``MPI_Iallreduce``) at once, while backward goes on computing the gradients of
earlier layers, and later hooks let MPI progress the pending ones. When the last expected gradient has
arrived, every bucket is waited for, divided by the number of processes and copied back into the
``.grad`` of its parameters, before ``backward()`` returns. ``no_sync()`` skips the reduction (gradients
accumulate locally; the next synchronised backward reduces the sum). A parameter the forward did not use
gets no gradient: with ``find_unused_parameters=True`` the forward's output graph is walked to find them
and they count as ready (their bucket slots stay zero); without it, the next forward raises. In a job of
one process the wrapper is transparent: no hooks, no buckets.
"""

from __future__ import annotations

import contextlib

import numpy as np

from oneflow_lite.framework.tensor import Tensor, version_counter
from oneflow_lite.framework.world import world
from oneflow_lite.nn.module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    __slots__ = ("flat", "pending", "request", "slots")

    def __init__(self, dtype, slots):
        self.slots = slots  # (parameter, offset, size)
        self.flat = np.zeros(sum(s for _, _, s in slots), dtype)
        self.pending = len(slots)
        self.request = None


def _bucket_dtype(p) -> np.dtype:
    d = p._meta.np_dtype
    return d if d.kind == "f" and d.itemsize >= 4 else np.dtype(np.float32)


class _Reducer:
    """The buckets and hooks of one wrapped module (Note [Bucketed gradient all-reduce])."""

    def __init__(self, params, group, cap_elements, cap_bytes, find_unused):
        self.group = group
        self.params = [p for p in params if p.requires_grad]
        self.find_unused = find_unused
        self.enabled = True
        self.buckets, self.where = self._make_buckets(cap_elements, cap_bytes)
        self.handles = [p.register_post_accumulate_grad_hook(self._hook) for p in self.params]
        self._reset()

    def _make_buckets(self, cap_elements, cap_bytes):
        buckets, where, current, size, dtype = [], {}, [], 0, None
        for p in reversed(self.params):
            d = _bucket_dtype(p)
            n = p._meta.numel
            full = size + n > cap_elements if cap_elements else (size + n) * d.itemsize > cap_bytes
            if current and (d != dtype or full):
                buckets.append(_Bucket(dtype, current))
                current, size = [], 0
            current.append((p, size, n))
            size += n
            dtype = d
        if current:
            buckets.append(_Bucket(dtype, current))
        for b in buckets:
            for p, off, n in b.slots:
                where[id(p)] = (b, off, n)
        return buckets, where

    def _reset(self):
        self.ready = set()  # ids of the parameters whose gradient is in its bucket
        self.launched = []
        for b in self.buckets:
            b.pending = len(b.slots)
            b.request = None
            b.flat[...] = 0

    def check_finished(self):
        if self.ready:
            missing = [i for i, p in enumerate(self.params) if id(p) not in self.ready]
            self._reset()
            raise RuntimeError(f"DistributedDataParallel: {len(missing)} parameter(s) (indices {missing[:8]} of the "
                               f"parameters that require grad) received no gradient in the last backward, so the "
                               f"gradients were not synchronised; pass find_unused_parameters=True when the forward "
                               f"does not use every parameter")

    def _hook(self, p: Tensor):
        if not self.enabled:
            return
        b, off, n = self.where[id(p)]
        np.copyto(b.flat[off:off + n], p.grad.numpy().reshape(-1), casting="unsafe")
        self._mark_ready(p, b)

    def _mark_ready(self, p, b):
        if id(p) in self.ready:
            return
        self.ready.add(id(p))
        b.pending -= 1
        if b.pending == 0:
            b.request = self.group.iallreduce(b.flat)
            self.launched.append(b)
        else:
            self.group.progress([x.request for x in self.launched])
        if len(self.ready) == len(self.params):
            self._finish()

    def mark_unused(self, outputs):
        """Count the parameters ``outputs``' graph does not reach as ready (find_unused_parameters)."""
        reached = _leaves_reached(outputs)
        for p in self.params:
            if id(p) not in reached:
                self._mark_ready(p, self.where[id(p)][0])

    def _finish(self):
        n = self.group.size
        for b in self.launched:
            if b.request is not None:
                b.request.Wait()
            b.flat /= n
            for p, off, size in b.slots:
                g = p.grad
                if g is not None:
                    np.copyto(g.numpy(), b.flat[off:off + size].reshape(g.shape), casting="unsafe")
                    version_counter(g).version += 1
        self._reset()


def _leaves_reached(outputs) -> set:
    """The ids of the leaf tensors the backward graph of ``outputs`` reaches."""
    stack = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
    seen, leaves = set(), set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return leaves


def _tensors(value):
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def _broadcast_state(tensors, group) -> None:
    """Every rank's ``tensors`` become rank 0's (one broadcast of the whole state)."""
    tensors = [t for t in tensors if t.is_local and t.numel()]
    if not tensors:
        return
    flat = np.concatenate([t.numpy().reshape(-1).view(np.uint8) for t in tensors])
    flat = group.broadcast(flat, root=0)
    off = 0
    for t in tensors:
        a = t.numpy()
        a.reshape(-1).view(np.uint8)[...] = flat[off:off + a.nbytes]
        off += a.nbytes


class DistributedDataParallel(Module):
    """Data parallelism over the job's processes (Note [Bucketed gradient all-reduce]); PyTorch's and
    OneFlow's arguments. ``bucket_size`` (elements) or ``bucket_cap_mb`` (megabytes, default 25) caps a
    bucket."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, bucket_size=None, **kwargs):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got {type(module).__name__}")
        self.module = module
        self.device_ids = device_ids
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        group = world().all if process_group is None else world().group(process_group)
        self._reducer = None
        if group.size > 1:
            _broadcast_state(list(module.parameters()) + list(module.buffers()), group)
            cap_bytes = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2 ** 20)
            self._reducer = _Reducer(list(module.parameters()), group, bucket_size, cap_bytes,
                                     find_unused_parameters)

    def __getattr__(self, name: str):
        """The wrapper's own members, else the wrapped module's attributes: OneFlow's DistributedDataParallel
        returns the module itself, so OneFlow scripts read ``ddp_model.lr`` or ``ddp_model.w``."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            module = self.__dict__.get("_modules", {}).get("module")
            if module is None or name.startswith("__"):
                raise
            try:
                return getattr(module, name)
            except AttributeError:
                raise AttributeError(f"'DistributedDataParallel' object has no attribute '{name}' (nor has its module, "
                                     f"a {type(module).__name__})") from None

    def forward(self, *inputs, **kwargs):
        reducer = self._reducer
        if reducer is not None:
            reducer.check_finished()
            if self.broadcast_buffers:
                _broadcast_state(list(self.module.buffers()), reducer.group)
        out = self.module(*inputs, **kwargs)
        if reducer is not None and reducer.find_unused and reducer.enabled:
            reducer.mark_unused(out)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Skip gradient synchronisation inside the block (gradients accumulate locally)."""
        reducer = self._reducer
        if reducer is None:
            yield
            return
        before = reducer.enabled
        reducer.enabled = False
        try:
            yield
        finally:
            reducer.enabled = before

