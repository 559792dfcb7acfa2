"""PyTorch's torch-level exception classes, so that scripts can catch them: ``flow.OutOfMemoryError`` (PyTorch's
``torch.OutOfMemoryError`` = ``torch.cuda.OutOfMemoryError``), ``flow.AcceleratorError`` and
``flow.FatalError``. NumPy's own ``MemoryError`` is what an allocation that fails on the CPU raises here."""

__all__ = ["AcceleratorError", "FatalError", "OutOfMemoryError"]


class OutOfMemoryError(RuntimeError):
    """A device ran out of memory (PyTorch's ``torch.OutOfMemoryError``)."""


class AcceleratorError(RuntimeError):
    """Exception raised while executing on device (PyTorch's ``torch.AcceleratorError``)."""


class FatalError(Exception):
    """An unrecoverable internal error (PyTorch's ``torch.FatalError``)."""
