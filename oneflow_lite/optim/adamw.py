"""``flow.optim.AdamW``: Adam with decoupled weight decay (PyTorch's algorithm and defaults)."""

from __future__ import annotations

from oneflow_lite.optim.adam import Adam


class AdamW(Adam):
    r"""AdamW, as ``torch.optim.AdamW``: Adam whose weight decay shrinks the parameter directly,
    ``theta = theta * (1 - lr * weight_decay)`` at each step before the Adam update, instead of
    adding ``weight_decay * theta`` to the gradient. The default ``weight_decay`` is 1e-2; every
    other argument, the state and the algorithm are :class:`Adam`'s.
    """

    _decoupled_weight_decay = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused)
