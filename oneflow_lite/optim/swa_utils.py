"""``flow.optim.swa_utils``: stochastic weight averaging and exponential moving averages of a model's weights
(PyTorch's ``torch.optim.swa_utils``): ``AveragedModel``, the averaging functions, ``update_bn`` and ``SWALR``.

Note [Averaged models]
``AveragedModel(model)`` holds a deep copy of ``model`` and a buffer ``n_averaged``. ``update_parameters(model)``
copies the model's parameters on its first call and afterwards folds them in with the averaging function: the
running mean by default (``p += (p_model - p) / (n + 1)``), ``get_ema_multi_avg_fn(decay)`` for
``p = decay p + (1 - decay) p_model``, or any ``avg_fn(p, p_model, n)`` / ``multi_avg_fn(ps, p_models, n)``.
Buffers (BatchNorm statistics) are averaged too with ``use_buffers=True``, otherwise copied from the model;
``update_bn`` recomputes BatchNorm statistics for the averaged weights in one pass over a loader.
"""

from __future__ import annotations

import copy
import itertools
import math

from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.functors.creation import tensor
from oneflow_lite.framework import dtype as dt
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.modules.batchnorm import _BatchNorm
from oneflow_lite.optim.lr_scheduler.base import LRScheduler

__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


def get_ema_multi_avg_fn(decay=0.999):
    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """An average of ``model``'s weights over the calls of ``update_parameters`` (Note [Averaged models]);
    calling it runs the averaged copy."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dt.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        def tensors(m):
            return itertools.chain(m.parameters(), m.buffers()) if self.use_buffers else m.parameters()
        own = tensors(self.module) if self.use_buffers else self.parameters()
        pairs = [(p.detach(), q.detach().to(p.device)) for p, q in zip(own, tensors(model))]
        n = int(self.n_averaged)
        with no_grad():
            if n == 0:
                for p, q in pairs:
                    p.copy_(q)
            elif self.avg_fn is not None:
                for p, q in pairs:
                    p.copy_(self.avg_fn(p, q, self.n_averaged))
            else:
                (self.multi_avg_fn or get_swa_multi_avg_fn())([p for p, _ in pairs], [q for _, q in pairs],
                                                              self.n_averaged)
            if not self.use_buffers:  # keep the buffers in sync with the source model
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


@no_grad()
def update_bn(loader, model, device=None):
    """Recompute the running statistics of ``model``'s BatchNorm layers (cumulative averages) over one pass of
    ``loader`` (batches, or tuples whose first element is the input)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        model(batch if device is None else batch.to(device))
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` steps (``"cos"`` or ``"linear"``), then keep it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = list(swa_lr) if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(optimizer.param_groups)
        if len(swa_lrs) != len(optimizer.param_groups):
            raise ValueError(f"swa_lr must have the same length as optimizer.param_groups: swa_lr has "
                             f"{len(swa_lrs)}, optimizer.param_groups has {len(optimizer.param_groups)}")
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t):
        return t if self.anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    def get_lr(self):
        self._warn_if_called_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self._anneal(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev_lrs = [group["swa_lr"] if prev_alpha == 1 else (group["lr"] - prev_alpha * group["swa_lr"]) /
                    (1 - prev_alpha) for group in groups]
        alpha = self._anneal(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(groups, prev_lrs)]
