"""PyTorch's ``torch.layout`` and ``torch.memory_format`` objects: ``flow.strided`` (the one layout a tensor
has here), ``flow.contiguous_format``, ``flow.channels_last``, ``flow.channels_last_3d`` and
``flow.preserve_format``; ``Tensor.layout``.

Note [Memory formats]
A tensor's elements are always laid out as its strides say (framework/storage.py); no operation here picks a
kernel by memory format. The formats are accepted where PyTorch takes them (``Tensor.to(memory_format=...)``,
``nn.Module.to``) and checked as PyTorch checks them (``channels_last`` needs a 4-d tensor,
``channels_last_3d`` a 5-d one); the values a call returns are the same in every format.
"""

from __future__ import annotations

__all__ = ["channels_last", "channels_last_3d", "check_memory_format", "contiguous_format", "layout",
           "memory_format", "preserve_format", "strided"]


class _Named:
    """A singleton named object: made only here, compared by identity, pickled by name."""

    __slots__ = ("name",)
    _by_name: dict

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"cannot create 'oneflow_lite.{cls.__name__}' instances")

    @classmethod
    def _make(cls, name: str):
        obj = object.__new__(cls)
        obj.name = name
        cls._by_name[name] = obj
        return obj

    def __repr__(self):
        return f"oneflow_lite.{self.name}"

    def __reduce__(self):
        return (_by_name, (type(self).__name__, self.name))


class layout(_Named):  # PyTorch's name
    """How a tensor's elements are stored: ``flow.strided`` (dense, by strides) is the only layout here."""

    __slots__ = ()
    _by_name: dict = {}


class memory_format(_Named):  # PyTorch's name
    """The order of a dense tensor's dims in memory (Note [Memory formats])."""

    __slots__ = ()
    _by_name: dict = {}


def _by_name(kind: str, name: str):
    return {"layout": layout, "memory_format": memory_format}[kind]._by_name[name]


strided = layout._make("strided")
contiguous_format = memory_format._make("contiguous_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")
preserve_format = memory_format._make("preserve_format")

_RANK = {channels_last: 4, channels_last_3d: 5}


def check_memory_format(fn: str, value, ndim: int | None = None):
    """``value`` if it is a memory format (or None) that a tensor of ``ndim`` dims can take, else PyTorch's
    error naming ``fn``."""
    if value is None:
        return None
    if not isinstance(value, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be oneflow_lite.memory_format, not "
                        f"{type(value).__name__}")
    rank = _RANK.get(value)
    if rank is not None and ndim is not None and ndim != rank:
        raise RuntimeError(f"{fn}(): required rank {rank} tensor to use {value.name} format, got a {ndim}-d "
                           f"tensor")
    return value


def check_layout(fn: str, value):
    """``value`` if it is None or ``flow.strided`` (the only layout here), else an error naming ``fn``."""
    if value is None or value is strided:
        return value
    if not isinstance(value, layout):
        raise TypeError(f"{fn}(): argument 'layout' must be oneflow_lite.layout, not {type(value).__name__}")
    raise RuntimeError(f"{fn}(): layout {value!r} is not supported; oneflow_lite tensors are strided")
