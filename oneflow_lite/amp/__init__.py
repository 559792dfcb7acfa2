"""``flow.amp``: mixed-precision helpers. ``GradScaler`` scales the loss so that small float16 gradients
do not flush to zero, unscales the gradients before the optimizer step and skips steps whose gradients
overflowed (dynamic loss scaling, as ``torch.amp.GradScaler``; ``StaticGradScaler``, OneFlow's, scales by a
constant); ``autocast`` runs the ops of a region in
mixed precision (``torch.amp.autocast``, see amp/autocast_mode.py)."""

from oneflow_lite.amp.autocast_mode import autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled
from oneflow_lite.amp.grad_scaler import GradScaler, StaticGradScaler

__all__ = ["GradScaler", "StaticGradScaler", "autocast", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled"]
