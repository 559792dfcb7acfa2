"""``flow.nn.Module``: the base class of layers and models, with PyTorch's API.

A module keeps its parameters, buffers and child modules in three ordered dicts
(``_parameters``, ``_buffers``, ``_modules``); ``__setattr__`` files an assigned
``Parameter`` / ``Module`` into the right one and ``__getattr__`` finds them there,
so ``self.weight = Parameter(...)`` and ``self.fc = Linear(...)`` register them.
Forward computes through the functional API, so an ``nn.Graph`` can capture it
(there the module's ``forward`` runs with its graph block as ``self``: Note
[Modules in a graph] in graph/graph.py; forward hooks run only eagerly).

Note [Atomic load_state_dict]
Unlike PyTorch, ``load_state_dict`` changes nothing when it raises: it first walks
the modules collecting missing and unexpected keys, shape mismatches and values it
cannot copy, together with the copies to make; it raises (strict key errors, or any
mismatch) before copying anything, and otherwise copies every value under ``no_grad``.
A subclass adapting old checkpoints overrides ``_load_from_state_dict`` (as
``BatchNorm`` does) and calls ``super()`` with the same arguments.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from types import MappingProxyType

import numpy as np

from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.sbp import sbp as SbpType
from oneflow_lite.framework.tensor import RemovableHandle, Tensor
from oneflow_lite.functors.creation import from_numpy
from oneflow_lite.functors.global_cast import from_logical
from oneflow_lite.nn import backward_hooks
from oneflow_lite.nn.parameter import Parameter

__all__ = ["Module", "register_module_forward_hook", "register_module_forward_pre_hook"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the missing and the unexpected keys."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    pad = " " * num_spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


def _typename(value) -> str:
    if isinstance(value, Tensor):
        return value.type()
    cls = type(value)
    return cls.__qualname__ if cls.__module__ in (None, "builtins") else f"{cls.__module__}.{cls.__qualname__}"


def _check_name(kind: str, name) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\", got: {name}")
    if name == "":
        raise KeyError(f"{kind} name can't be empty string \"\"")


def _check_parameter(name, param) -> None:
    _check_name("parameter", name)
    if param is not None:
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            f"(flow.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             f"the value in the forward() method.")


def _forward_unimplemented(self, *args, **kwargs):
    """The computation of the module, called by ``module(*args)``; every subclass defines it."""
    raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")


# Note [Global module hooks]
# ``register_module_forward_pre_hook`` / ``register_module_forward_hook`` (PyTorch's, in
# torch.nn.modules.module) add hooks that every module call runs, before the module's own hooks: the
# module tracker of FlopCounterMode (utils/flop_counter.py) names every module that runs with them.
# A call without any hook checks four dicts and calls ``forward``.
# Note [Hook tables]
# As in PyTorch, ``_forward_pre_hooks`` / ``_forward_hooks`` map a handle id to the hook itself (programs look
# hooks up there: the pruning tutorial finds its PruningContainer in ``module._forward_pre_hooks.values()``); a
# hook registered with ``with_kwargs`` or ``always_call`` also has ``(with_kwargs, always_call)`` in the module's
# ``_hook_flags`` (``_global_hook_flags`` for the global ones), removed with it.
_NO_FLAGS = (False, False)
_global_forward_pre_hooks: OrderedDict = OrderedDict()  # handle id -> hook
_global_forward_hooks: OrderedDict = OrderedDict()  # handle id -> hook
_global_hook_flags: dict = {}  # handle id -> (with_kwargs, always_call)


def register_module_forward_pre_hook(hook):
    """Call ``hook(module, args)`` before the ``forward`` of every module (before its own pre-hooks); a non-None
    result replaces the arguments. Returns a handle whose ``remove()`` unregisters it."""
    return Module._add_hook(_global_forward_pre_hooks, hook, None, _NO_FLAGS, False)


def register_module_forward_hook(hook, *, with_kwargs: bool = False, always_call: bool = False):
    """Call ``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with ``with_kwargs``) after the
    ``forward`` of every module (before its own hooks); a non-None result replaces the output. ``always_call``
    also calls it when ``forward`` raises. Returns a handle whose ``remove()`` unregisters it."""
    return Module._add_hook(_global_forward_hooks, hook, _global_hook_flags, (with_kwargs, always_call), False)


class _FlaggedHandle(RemovableHandle):
    """The handle of a hook with flags (Note [Hook tables]): ``remove()`` drops both."""

    __slots__ = ("_flags",)

    def __init__(self, hooks: dict, flags: dict):
        super().__init__(hooks)
        self._flags = flags

    def remove(self) -> None:
        super().remove()
        self._flags.pop(self.id, None)


def _in_layout_of(current: Tensor, value: Tensor) -> Tensor:
    """``value`` laid out as the global tensor ``current``: boxed when global (a checkpoint loaded with
    ``global_src_rank``), else taken as the logical value every rank loaded (sliced, no communication)."""
    if value.is_global:
        return value.to_global(current.placement, current.sbp)
    return from_logical(value, current.placement, current.sbp)


class Module:
    """Base class for all neural network modules; subclass it, assign layers in ``__init__`` (after
    ``super().__init__()``) and define ``forward``."""

    training: bool
    forward = _forward_unimplemented
    # Note [Module backward hooks] in nn/backward_hooks.py: an OrderedDict once a hook is registered
    _backward_hooks = _backward_pre_hooks = _hook_flags = MappingProxyType({})

    def __init__(self):
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", OrderedDict())
        setattr_(self, "_buffers", OrderedDict())
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_forward_pre_hooks", OrderedDict())  # handle id -> hook (Note [Hook tables])
        setattr_(self, "_forward_hooks", OrderedDict())  # handle id -> hook
        setattr_(self, "_modules", OrderedDict())

    # ---- registration ---------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's running mean); ``persistent``
        buffers are part of ``state_dict``. A None buffer is skipped by conversions and ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            f"(flow.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        """Add a parameter (a ``flow.nn.Parameter``, or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        _check_parameter(name, param)
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """Add a child module (or None) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` (``""`` is this module)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")  # noqa: TRY004  (PyTorch's type)
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")  # noqa: TRY004  (PyTorch's type)
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ---- attributes -----------------------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            members = d.get(store)
            if members is not None and name in members:
                return members[name]
        lists = d.get("_modules", {}).get("parametrizations")  # Note [Parametrized tensors]
        if lists is not None and name in lists._modules:
            return lists._modules[name]()
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        lists = d.get("_modules", {}).get("parametrizations")  # Note [Parametrized tensors]
        if lists is not None and name in lists._modules:
            lists._modules[name].right_inverse(value)
            return
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _check_parameter(name, value)  # before any change: a failed assignment changes nothing
            if hasattr(type(self), name):
                raise KeyError(f"attribute '{name}' already exists")
            _remove_from(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            params[name] = value
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                f"(flow.nn.Parameter or None expected)")
            params[name] = None
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _remove_from(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                f"(flow.nn.Module or None expected)")
            modules[name] = None
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                f"(flow.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = (dir(type(self)) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    # ---- iteration --------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else \
            [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (module_prefix + "." + k if module_prefix else k), v

    def parameters(self, recurse: bool = True):
        """The parameters of this module (and of its submodules when ``recurse``), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted name, parameter)`` pairs; a shared parameter is listed once unless not ``remove_duplicate``."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        """The buffers of this module (and of its submodules when ``recurse``)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted name, buffer)`` pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        """The immediate child modules."""
        for _, m in self.named_children():
            yield m

    def named_children(self):
        """``(name, child)`` pairs of the immediate children, each child once."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def modules(self):
        """This module and all its descendants, each once."""
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """``(dotted name, module)`` for this module (name ``prefix``) and all its descendants, depth first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + "." + name if prefix else name, remove_duplicate)

    # ---- modes ------------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode``) on this module and its descendants; returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")  # noqa: TRY004  (PyTorch's type)
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """``train(False)``: evaluation mode (Dropout is the identity, BatchNorm uses its running stats)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` of every parameter; returns ``self``."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default), or to zeros in place."""
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def apply(self, fn) -> Module:
        """Call ``fn(m)`` on every descendant (children first) and then on ``self``; returns ``self``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- conversion -------------------------------------------------------------------------------
    def _apply(self, fn) -> Module:
        """Convert every parameter (in place: Note [Tensor.data]), its grad and every buffer with ``fn``."""
        for m in self.children():
            m._apply(fn)
        for p in self._parameters.values():
            if p is None:
                continue
            with no_grad():
                applied = fn(p)
            if applied is not p:
                p.data = applied
            g = p.grad
            if g is not None:
                with no_grad():
                    applied = fn(g)
                if applied is not g:
                    g.data = applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device=None, dtype=None)``, ``to(dtype)``, ``to(tensor)``: move the parameters and buffers and
        cast the floating ones; parameters keep their identity. Returns ``self``."""
        from oneflow_lite.functors.conversion import _parse_to, convert
        device, dtype, _ = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")
        return self._apply(lambda t: convert(t, device, dtype if t._meta.dtype.is_floating_point else None))

    def to_global(self, placement=None, sbp=None) -> Module:
        """Make every parameter and buffer a global tensor on ``placement`` with ``sbp`` (parameters keep their
        identity, Note [Tensor.data]); a local one becomes global as ``Tensor.to_global`` makes it (broadcast
        takes the first rank's values), a global one is boxed. ``sbp`` may be a function of the tensor
        returning its SBP. Returns ``self``."""
        per_tensor = callable(sbp) and not isinstance(sbp, SbpType)
        return self._apply(lambda t: t.to_global(placement=placement, sbp=sbp(t) if per_tensor else sbp))

    def _cast_floating(self, dtype) -> Module:
        from oneflow_lite.functors.conversion import convert
        return self._apply(lambda t: convert(t, None, dtype) if t._meta.dtype.is_floating_point else t)

    def float(self) -> Module:
        """Cast the floating point parameters and buffers to float32; returns ``self``."""
        return self._cast_floating(dt.float32)

    def double(self) -> Module:
        """Cast the floating point parameters and buffers to float64; returns ``self``."""
        return self._cast_floating(dt.float64)

    def half(self) -> Module:
        """Cast the floating point parameters and buffers to float16; returns ``self``."""
        return self._cast_floating(dt.float16)

    def cpu(self) -> Module:
        """Move the parameters and buffers to cpu; returns ``self``."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type) -> Module:
        """Cast every parameter and buffer to ``dst_type`` (a dtype or a type name); returns ``self``."""
        return self._apply(lambda t: t.type(dst_type))

    def to_empty(self, *, device) -> Module:
        """Move the parameters and buffers to ``device`` without copying their values; returns ``self``."""
        from oneflow_lite import functional as F
        return self._apply(lambda t: F.empty_like(t, device=device))

    # ---- calling ----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """Call ``hook(module, args)`` (``hook(module, args, kwargs)`` with ``with_kwargs``) before each
        ``forward``; a non-None result replaces the arguments (``(args, kwargs)`` with ``with_kwargs``).
        Returns a handle whose ``remove()`` unregisters it."""
        return self._add_hook(self._forward_pre_hooks, hook, self._own_hooks("_hook_flags"), (with_kwargs, False),
                              prepend)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """Call ``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with ``with_kwargs``)
        after each ``forward``; a non-None result replaces the output. ``always_call`` also calls it when
        ``forward`` raises. Returns a handle whose ``remove()`` unregisters it."""
        return self._add_hook(self._forward_hooks, hook, self._own_hooks("_hook_flags"), (with_kwargs, always_call),
                              prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """Call ``hook(module, grad_input, grad_output)`` when the gradients of the module's positional arguments
        are computed (Note [Module backward hooks]); a non-None result replaces ``grad_input``. Returns a handle
        whose ``remove()`` unregisters it."""
        return self._add_hook(self._own_hooks("_backward_hooks"), hook, None, _NO_FLAGS, prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are computed; a non-None
        result replaces ``grad_output``. Returns a handle whose ``remove()`` unregisters it."""
        return self._add_hook(self._own_hooks("_backward_pre_hooks"), hook, None, _NO_FLAGS, prepend)

    def _own_hooks(self, name):
        hooks = self.__dict__.get(name)
        if hooks is None:
            hooks = OrderedDict()
            object.__setattr__(self, name, hooks)
        return hooks

    @staticmethod
    def _add_hook(hooks, hook, flag_table, flags, prepend):
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {_typename(hook)}")
        if flags == _NO_FLAGS:
            handle = RemovableHandle(hooks)
        else:
            handle = _FlaggedHandle(hooks, flag_table)
            flag_table[handle.id] = flags
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or _global_forward_pre_hooks
                or _global_forward_hooks or self._backward_hooks or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        args, kwargs = self._run_forward_pre_hooks(args, kwargs)
        backward = None
        if self._backward_hooks or self._backward_pre_hooks:  # Note [Module backward hooks]
            backward, args = backward_hooks.setup_inputs(self, list(self._backward_hooks.values()),
                                                         list(self._backward_pre_hooks.values()), args)
        flags = self._hook_flags
        hooks = [(hook, *_global_hook_flags.get(i, _NO_FLAGS)) for i, hook in _global_forward_hooks.items()]
        hooks += [(hook, *flags.get(i, _NO_FLAGS)) for i, hook in self._forward_hooks.items()]
        called = 0
        try:
            output = self.forward(*args, **kwargs)
            for hook, with_kwargs, _ in hooks:
                called += 1
                result = hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
                if result is not None:
                    output = result
        except Exception:
            for hook, with_kwargs, always_call in hooks[called:]:
                if always_call:
                    try:
                        hook(self, args, kwargs, None) if with_kwargs else hook(self, args, None)
                    except Exception as e:  # noqa: BLE001  (reported as a warning; forward's error is raised)
                        warnings.warn(f"forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {e}", stacklevel=3)
            raise
        return output if backward is None else backward_hooks.setup_outputs(backward, output)

    def _run_forward_pre_hooks(self, args, kwargs):
        # the global hooks (Note [Global module hooks]) run before the module's own, as PyTorch's
        flags = self._hook_flags
        for i, hook in [*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()]:
            if flags.get(i, _NO_FLAGS)[0]:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        return args, kwargs

    # ---- state dict ---------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ``OrderedDict`` of the parameters and persistent buffers under their dotted names, detached
        from autograd (the tensors themselves with ``keep_vars``); they share memory with the module."""
        if args:
            if len(args) > 3:
                raise TypeError(f"state_dict() takes at most 3 positional arguments but {len(args)} were given")
            destination = args[0] if destination is None else destination
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
            warnings.warn("Positional args are being deprecated, use kwargs instead.", stacklevel=2)
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys, unexpected_keys, error_msgs,
                              copies) -> None:
        """Check the entries of ``state_dict`` for this module's own parameters and persistent buffers:
        append ``(name, current tensor, value)`` to ``copies`` when a value fits, otherwise a message to
        ``error_msgs``; record missing and unexpected keys (Note [Atomic load_state_dict])."""
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items()
                           if v is not None and k not in self._non_persistent_buffers_set)
        for name, current in local_state.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            value = state_dict[key]
            if isinstance(value, np.ndarray):  # OneFlow's load_state_dict copies NumPy values too (Tensor.copy_)
                value = from_numpy(value)
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected flow.Tensor from '
                                  f'checkpoint but received {type(value)}')
                continue
            if current.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
                value = value.reshape(())  # a 0-d value saved as shape (1,)
            if value.shape != current.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {current.shape}.")
                continue
            if current.device.device_type.has_storage and not value.device.device_type.has_storage:
                error_msgs.append(f'While copying the parameter named "{key}": the checkpoint\'s value is on '
                                  f"'{value.device}', which holds no data to copy")
                continue
            copies.append((self, name, current, value))
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    child = key[len(prefix):].split(".", 1)[0]
                    if child not in self._modules and child not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy the values of ``state_dict`` (tensors, or NumPy arrays as OneFlow takes them) into the parameters
        and buffers of the same names. With
        ``strict`` the keys must match ``state_dict()``'s exactly; ``assign`` makes the module hold the
        given tensors instead of copying into its own. Returns ``(missing_keys, unexpected_keys)``; on any
        error raises without changing the module (Note [Atomic load_state_dict])."""
        from collections.abc import Mapping
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs, copies = [], [], [], []

        def load(module, local_state_dict, prefix=""):
            module._load_from_state_dict(local_state_dict, prefix, True, missing_keys, unexpected_keys, error_msgs,
                                         copies)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)

        load(self, OrderedDict(state_dict))
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        with no_grad():
            for module, name, current, value in copies:
                if current.is_global:
                    value = _in_layout_of(current, value)
                if not assign:
                    current.copy_(value)
                elif isinstance(current, Parameter):
                    module._parameters[name] = Parameter(value, current.requires_grad)
                else:
                    module._buffers[name] = value
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ---- printing ---------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module's own settings in its repr (one line or several); subclasses override it."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(m), 2) for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _remove_from(name, *stores) -> None:
    for s in stores:
        if name in s:
            if isinstance(s, dict):
                del s[name]
            else:
                s.discard(name)
