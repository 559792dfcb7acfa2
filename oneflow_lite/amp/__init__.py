"""``flow.amp``: mixed-precision helpers. ``GradScaler`` scales the loss so that small float16 gradients
do not flush to zero, unscales the gradients before the optimizer step and skips steps whose gradients
overflowed (dynamic loss scaling, as ``torch.amp.GradScaler``)."""

from oneflow_lite.amp.grad_scaler import GradScaler

__all__ = ["GradScaler"]
