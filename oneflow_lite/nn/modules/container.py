"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList`` and ``ParameterDict``."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import chain, islice
from typing import Self

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.nn.module import Module, _addindent
from oneflow_lite.nn.parameter import Parameter

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


def _abs_index(idx, size: int) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


class Sequential(Module):
    """Modules called in order, each on the previous one's output: ``Sequential(m0, m1, ...)`` names them
    "0", "1", ...; ``Sequential(OrderedDict(name=module, ...))`` names them."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _key(self, idx) -> str:
        return next(islice(iter(self._modules), _abs_index(idx, len(self)), None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key(idx)]

    def __setitem__(self, idx, module) -> None:
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, self._key(idx))
        self._renumber()

    def _renumber(self) -> None:
        # keep the numbering of the remaining modules contiguous
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(  # noqa: TRY004  (PyTorch's type)
                f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return type(self)(*chain(self, other))

    def __iadd__(self, other) -> Self:
        if not isinstance(other, Sequential):
            raise ValueError(  # noqa: TRY004  (PyTorch's type)
                f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(other)

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int) or isinstance(other, bool):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return type(self)(*(list(self) * other))

    __rmul__ = __mul__

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before position ``index``; returns ``self``."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")  # noqa: TRY004  (PyTorch's type)
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))
        return self

    def extend(self, sequential) -> Sequential:
        """Append every module of ``sequential`` (any iterable of modules); returns ``self``."""
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key):
        """Remove and return the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered (so their parameters are the list's); it has no ``forward``."""

    def __init__(self, modules: Iterable | None = None):
        super().__init__()
        if modules is not None:
            self += modules

    def _key(self, idx) -> str:
        return str(_abs_index(idx, len(self)))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._key(idx)]

    def __setitem__(self, idx, module) -> None:
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._key(idx))
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules) -> Self:
        return self.extend(modules)

    def __add__(self, other) -> ModuleList:
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        for m in modules:
            if not isinstance(m, Module):
                raise TypeError(f"{type(m).__name__} is not a Module subclass")
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove and return the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules) -> ModuleList:
        """Append every module of the iterable ``modules``; returns ``self``."""
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        modules = list(modules)
        for m in modules:
            if not isinstance(m, Module) and m is not None:
                raise TypeError(f"{type(m).__name__} is not a Module subclass")
        offset = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(offset + i), m)
        return self

    def __repr__(self):
        # PyTorch's compact form: a run of equal reprs prints once, as "(i-j): n x <repr>"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for start, end, r in runs:
            text = f"({start}): {r}" if start == end else f"({start}-{end}): {end - start + 1} x {r}"
            lines.append(_addindent(text, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys; it has no ``forward``."""

    def __init__(self, modules: Mapping | Iterable | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module under ``key``."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        """Add or replace modules from a mapping or an iterable of (key, module) pairs (validated first)."""
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(modules).__name__}")
        if isinstance(modules, Mapping):
            pairs = list(modules.items())
        else:
            pairs = []
            for j, m in enumerate(modules):
                if not isinstance(m, Iterable):
                    raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is "
                                    f"{type(m).__name__}")
                m = tuple(m)
                if len(m) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} has length {len(m)}; 2 is required")
                pairs.append(m)
        for key, m in pairs:
            if not isinstance(m, Module) and m is not None:
                raise TypeError(f"{type(m).__name__} is not a Module subclass")
        for key, m in pairs:
            self[key] = m


def _entry_repr(key, p) -> str:
    """One line of a ParameterList / ParameterDict repr: ``(key): Parameter containing: [dtype of size AxB]``."""
    if isinstance(p, Tensor):
        size = "x".join(str(n) for n in p.shape)
        device = f" ({p.device})" if p.device.type != "cpu" else ""
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return f"  ({key}): {kind} containing: [{p.dtype} of size {size}{device}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters, registered (named "0", "1", ...); a tensor added becomes a Parameter, other
    objects are kept as they are. It cannot be called."""

    def __init__(self, values: Iterable | None = None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _key(self, idx) -> str:
        return str(_abs_index(idx, len(self)))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._key(idx))

    def __setitem__(self, idx, param) -> None:
        # every way of adding an entry ends here: the one place tensors become Parameters
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, self._key(idx), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, parameters) -> Self:
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value) -> ParameterList:
        """Add ``value`` at the end; returns ``self``."""
        index = len(self)
        self._size += 1
        self[index] = value
        return self

    def extend(self, values) -> ParameterList:
        """Append every value of the iterable ``values`` (not a tensor); returns ``self``."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_entry_repr(k, p) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters under string keys; a tensor added becomes a Parameter. A plain dict
    given to the constructor or ``update`` is added in sorted key order (an OrderedDict or a ParameterDict in
    its own order), as in PyTorch. It cannot be called."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key) -> str:
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key: str):
        return getattr(self, self._attr(key))

    def __setitem__(self, key: str, value) -> None:
        attr = self._attr(key)
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default=None):
        """``self[key]``, set to ``default`` first when missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str):
        """Remove and return the entry under ``key``."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple:
        """Remove and return the last (key, value) pair."""
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key: str, default=None):
        return self[key] if key in self else default  # noqa: SIM401  (this is get)

    def fromkeys(self, keys, default=None) -> ParameterDict:
        """A new ParameterDict with ``keys``, each holding ``default``."""
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        """Add or replace entries from a mapping, a ParameterDict or an iterable of (key, value) pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError(f"ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(parameters).__name__}")
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = []
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is"
                                    f"{type(p).__name__}")
                p = tuple(p)
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(p)}; 2 is required")
                pairs.append(p)
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_entry_repr(k, p) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other: ParameterDict) -> Self:
        self.update(other)
        return self
