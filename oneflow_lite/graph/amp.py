"""nn.Graph mixed precision: ``self.config.enable_amp(True)`` and ``self.set_grad_scaler(scaler)`` (OneFlow's
graph AMP), and the two graph-internal ops the loss scaling adds to a job.

::

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)
            self.config.enable_amp(True)                      # float16, as OneFlow
            self.set_grad_scaler(flow.amp.GradScaler("cpu"))  # or flow.amp.StaticGradScaler(1024.0)

        def build(self, x, y):
            loss = loss_fn(self.model(x), y)
            loss.backward()                                   # no scaler.scale(): the graph scales
            return loss

Note [Graph AMP]
``enable_amp(True, dtype=flow.float16)`` captures ``build()`` under ``flow.autocast`` with that dtype for the
device types of the graph's inputs and parameters: the autocast interpreter inserts the casts, the job
records them (a capture option, Note [Capture options] in graph/config.py). ``backward()`` runs outside
autocast, as in an eager training step (``with autocast: loss = ...`` then ``loss.backward()``); a backward
observer of the capture suspends autocast while the engine runs (Note [Backward observers]).

A grad scaler makes every run of a training graph do what an eager ``GradScaler`` step does, in the job:

- scale: a ``backward()`` of the build starts from ``root grad * scale`` instead of the root grad (a backward
  entry hook, Note [Backward entry hooks] in autograd/engine.py) -- eagerly, ``scaler.scale(loss)``;
- unscale: after ``build()`` (and all micro-batches), each gradient of an optimizer's parameter becomes
  ``fused_cast_scale(grad, 1 / scale)``, the value the optimizer then reads as ``.grad``;
- check: ``multi_count_not_finite`` (OneFlow's op) counts the infs and NaNs of the unscaled gradients;
- skip: the optimizer step is captured, then every variable it writes (parameters, momentum buffers, step
  counts) is written ``where(found_inf, value before the step, value after)``; the step is captured without
  the fused update ops, which write their state behind the dispatcher's back (Note [Update ops write their
  state]) where a ``where`` could not undo it. With ``config.allow_fuse_model_update_ops(True)`` (OneFlow's
  fused model update) the step is captured with the fused update ops instead, each given the not-finite count
  as its ``skip_if`` input (Note [skip_if] in ops/model_update.py): they skip themselves, parameter and state,
  and only the variables other ops write (Adam's step counts, the steps of unfused optimizers) get a ``where``;
- update: ``dynamic_loss_scale_schedule`` (OneFlow's op) backs the scale off after an overflow and grows it
  after ``growth_interval`` clean steps, writing the scale and the growth tracker in place.

The scale (a 0-d float64 tensor, as the eager scaler's Python float) and the growth tracker (0-d int64) are the
scaler's own state tensors (``GradScaler._state_tensors``), bound as the graph's variables
``System-GradScaler-Scale`` / ``-GoodStepCounter``: ``scaler.get_scale()`` reads the graph's current scale,
``graph.state_dict()`` saves it. float64 makes each value equal the eager one: the root grad is the scale cast
to the loss's dtype, the unscaling multiplies by the float64 reciprocal cast to the gradient's dtype (the
eager ``g.mul_(1 / scale)``), and the schedule multiplies in float64. A ``StaticGradScaler`` scales and
unscales by a constant and neither checks nor skips (OneFlow's ``loss_scale_factor``).
"""

from __future__ import annotations

import contextlib

import numpy as np

from oneflow_lite.amp.grad_scaler import GradScaler, StaticGradScaler
from oneflow_lite.autograd.engine import add_backward_entry_hook, add_backward_observer
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import Arg, register_user_op
from oneflow_lite.framework.tensor import LAZY_KEY_SET
from oneflow_lite.interpreters import autocast as autocast_interp
from oneflow_lite.interpreters.lazy import current_build_ctx
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.optim.optimizer import fused_updates, skipping_updates

SCALE_NAME = "System-GradScaler-Scale"
TRACKER_NAME = "System-GradScaler-GoodStepCounter"


# ---- the graph-internal ops ------------------------------------------------------------------------
def _count_not_finite_cpu(ctx, *xs):
    n = 0
    for x in xs:
        n += x.size - int(np.count_nonzero(np.isfinite(x)))
    return np.asarray(n, np.int64)


register_user_op("multi_count_not_finite", inputs=[Arg("x", variadic=True)], outputs=["y"], no_grad=True,
                 infer_shape=lambda ctx: (), infer_dtype=lambda ctx: dtypes.int64)


def _schedule_shape(ctx):
    for name in ("loss_scale", "good_step_counter", "count_not_finite"):
        if ctx.shape(name) != ():
            raise ctx.error(f"{name} must be a 0-d tensor, got shape {list(ctx.shape(name))}")
    return [(), ()]


register_user_op("dynamic_loss_scale_schedule", inputs=["loss_scale", "good_step_counter", "count_not_finite"],
                 outputs=["new_loss_scale", "new_good_step_counter"], no_grad=True,
                 attrs={"growth_factor": ("double", 2.0), "backoff_factor": ("double", 0.5),
                        "growth_interval": ("int64", 2000)},
                 infer_shape=_schedule_shape,
                 infer_dtype=lambda ctx: [ctx.dtype("loss_scale"), ctx.dtype("good_step_counter")])


def _schedule_cpu(ctx, scale, counter, count):
    """GradScaler.update(): back off after an overflow, grow after ``growth_interval`` clean steps."""
    a = ctx.attrs
    s, c = float(scale), int(counter)
    if int(count) > 0:
        s, c = s * a["backoff_factor"], 0
    else:
        c += 1
        if c == a["growth_interval"]:
            s, c = s * a["growth_factor"], 0
    return np.asarray(s, scale.dtype), np.asarray(c, counter.dtype)


DISPATCHER.register_kernel("multi_count_not_finite", "cpu", _count_not_finite_cpu, name="multi_count_not_finite_cpu")
DISPATCHER.register_kernel("dynamic_loss_scale_schedule", "cpu", _schedule_cpu, name="dynamic_loss_scale_schedule_cpu")

_count_exprs = {}  # number of inputs -> op expr


def _count_not_finite(tensors):
    expr = _count_exprs.get(len(tensors))
    if expr is None:
        expr = _count_exprs[len(tensors)] = OpBuilder("multi_count_not_finite").input("x", len(tensors)).output(
            "y").build()
    return dispatch(expr, tuple(tensors))[0]


_SCHEDULE = (OpBuilder("dynamic_loss_scale_schedule").input("loss_scale").input("good_step_counter")
             .input("count_not_finite").output("new_loss_scale").output("new_good_step_counter").build())


# ---- one capture -----------------------------------------------------------------------------------
def check_scaler(graph_name: str, scaler):
    """``scaler`` for ``nn.Graph.set_grad_scaler``: a GradScaler (one made for 'cuda', disabled eagerly here, is
    enabled: the graph scales on its own device) or a StaticGradScaler; a disabled GradScaler is None."""
    if isinstance(scaler, StaticGradScaler):
        return scaler
    if not isinstance(scaler, GradScaler):
        raise TypeError(f"nn.Graph '{graph_name}'.set_grad_scaler(): expected a flow.amp.GradScaler or "
                        f"flow.amp.StaticGradScaler, got {type(scaler).__name__}")
    return scaler if scaler._enable_for_graph() else None


class AmpCapture:
    """What a capture with AMP options does (Note [Graph AMP]); ``AmpCapture(None, None)`` does nothing."""

    def __init__(self, dtype, scaler, device_types=("cpu",), fuse_updates=False):
        self.dtype = dtype
        self.scaler = scaler
        self.device_types = device_types
        self.fuse_updates = fuse_updates  # the fused update ops with skip_if (Note [Graph AMP])
        self.dynamic = isinstance(scaler, GradScaler)
        self.scale = self.tracker = None
        if self.dynamic:
            self.scale, self.tracker = scaler._state_tensors()

    @contextlib.contextmanager
    def capturing(self, ctx):
        """While ``ctx`` is captured: ``backward()`` runs outside autocast and starts from the scaled root grads."""
        if self.dtype is None and self.scaler is None:
            yield
            return
        ctx.amp = self
        handles = [add_backward_observer(self._backward_without_autocast)]
        if self.scaler is not None:
            handles.append(add_backward_entry_hook(self._scale_root_grads))
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    @contextlib.contextmanager
    def autocast(self):
        """``build()``'s region: autocast with ``dtype`` on the graph's device types."""
        if self.dtype is None:
            yield
            return
        tokens = [autocast_interp.enter(d, self.dtype, True, True) for d in self.device_types]
        try:
            yield
        finally:
            for token in reversed(tokens):
                autocast_interp.leave(token)

    def _mine(self) -> bool:
        ctx = current_build_ctx()
        return ctx is not None and getattr(ctx, "amp", None) is self

    @contextlib.contextmanager
    def _backward_without_autocast(self):
        if not (self.dtype is not None and self._mine()):
            yield
            return
        token = autocast_interp.suspend()
        try:
            yield
        finally:
            autocast_interp.resume(token)

    def _scale_root_grads(self, tensors, grads):
        if not self._mine() or not any(t._key_set & LAZY_KEY_SET for t in tensors):
            return None
        with no_grad():
            if self.dynamic:
                return [F.ops.fused_cast_scale(g, self.scale, dtype=g._meta.dtype) for g in grads]
            return [F.mul_scalar(g, self.scaler.get_scale()) for g in grads]

    # ---- after build(): unscale, check, step, skip, update ----------------------------------------------------
    def step(self, ctx, optimizers) -> None:
        """The optimizers' steps, with the unscaling before and, for a GradScaler, the skipping and the scale
        update after (Note [Graph AMP])."""
        if self.scaler is None:
            for optimizer, _ in optimizers:
                optimizer.step()
            return
        with no_grad():
            count = self._unscale(optimizers)
        if not self.dynamic:
            for optimizer, _ in optimizers:
                optimizer.step()
            return
        before = {key: b.lbn for key, b in ctx._bindings.items()}
        with skipping_updates(count) if self.fuse_updates and count is not None else fused_updates(False) as skipped:
            for optimizer, _ in optimizers:
                optimizer.step()
        with no_grad():
            if count is not None:
                self._skip_if_not_finite(ctx, before, F.gt(count, 0), {id(p) for p in skipped or ()})
                dispatch(_SCHEDULE, (self.scale, self.tracker, count), self._schedule_attrs(),
                         (self.scale, self.tracker))

    def _unscale(self, optimizers):
        """Replace each parameter's lazy ``.grad`` by its unscaled value; the count of its non-finite values."""
        params = [p for optimizer, _ in optimizers for group in optimizer.param_groups for p in group["params"]]
        grads = []
        inv = F.reciprocal(self.scale) if self.dynamic else None
        seen = set()
        for p in params:
            g = p.grad
            if g is None or id(p) in seen:
                continue
            seen.add(id(p))
            if inv is None:
                g = F.ops.fused_cast_scale(g, dtype=g._meta.dtype, scale=1.0 / self.scaler.get_scale())
            else:
                g = F.ops.fused_cast_scale(g, inv, dtype=g._meta.dtype)
            p._ag.grad = g
            grads.append(g)
        return _count_not_finite(grads) if grads and self.dynamic else None

    @staticmethod
    def _skip_if_not_finite(ctx, before: dict, found, skipped_by_op=frozenset()) -> None:
        """Every variable the step wrote keeps its value from before the step when ``found``, but those written by
        an update op that skips itself (``skipped_by_op``: ids of tensors; Note [Graph AMP])."""
        for key, b in list(ctx._bindings.items()):
            old = before.get(key, f"{b.op_name}/out")
            if b.lbn == old or key in skipped_by_op:
                continue
            meta = b.tensor._meta
            kept = F.where(found, ctx.lazy_tensor(old, meta), ctx.lazy_tensor(b.lbn, meta))
            b.lbn = kept._array.lbn

    def _schedule_attrs(self):
        s = self.scaler
        return _SCHEDULE.compose_attrs({"growth_factor": s.get_growth_factor(), "backoff_factor": s.get_backoff_factor(),
                                        "growth_interval": s.get_growth_interval()})
