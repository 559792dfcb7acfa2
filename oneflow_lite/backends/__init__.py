"""``flow.backends``: the backend switches scripts set (``torch.backends.cudnn.benchmark = True``). oneflow_lite
computes on NumPy; the CUDA / cuDNN / MPS switches exist so that scripts can set and read them, and change
nothing; ``is_available()`` is False for each of those backends."""

from oneflow_lite.backends import cpu, cuda, cudnn, mkldnn, mps  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps"]
