"""``flow.optim.Optimizer``: the base class of the optimizers (PyTorch's API).

Note [Optimizer steps in a graph]
An optimizer step is a sequence of in-place ops on the parameters and the state
tensors (``p.add_``, ``exp_avg.lerp_``, ``p.addcdiv_``, SGD's ``sgd_update``, ...)
run under ``flow.no_grad()``, never NumPy on buffers, so inside an nn.Graph's ``build()``
the LazyInterpreter captures it and the graph writes the parameters and the state
at every run (Note [Lazy capture]). Three things make a captured step right at
every run, not only at the first:

- State tensors are always made eagerly (``eager_zeros_like``), also during a
  capture, so they outlive the build as ordinary tensors that the graph binds as
  variables and updates in place.
- Nothing that changes from step to step is read into Python: while a graph is
  being captured (or with ``capturable=True``) the step count and the bias
  corrections stay 0-d tensors. Eagerly they are read as Python floats, which is
  faster and exact in float64.
- A Python-float hyperparameter is baked into the captured ops. ``lr`` may also be
  a 0-d tensor (as in PyTorch): a captured step then reads it at every run, and an
  LR scheduler updates it in place (``fill_``), so schedules work in a graph.

A first step whose form differs from the later ones cannot be captured unless it
is the later form applied to zero state: SGD's first momentum step sets the buffer
to the gradient, which equals ``momentum * 0 + (1 - dampening) * g`` only with
zero dampening, so capturing it with dampening raises (one eager step first works).

Schedulers that cycle momentum (CyclicLR, OneCycleLR) also change ``momentum`` or
``betas[0]``: when a group with a tensor ``lr`` is captured, a non-zero ``momentum``
and ``betas[0]`` become 0-d tensors as well (``lift_scheduled``), which the
schedulers then ``fill_`` in place. A captured step combines such a tensor with the
state before any other operand (``ema_``), never in an op of its own: an op whose
inputs are all free eager tensors is folded into a constant, and the plan would be
recompiled after every change. Whether momentum is on is decided in Python on the
tensor's value (``value_of``). A step that must read a value into Python to decide
what to do (LBFGS's line search) cannot be captured and raises.

Note [Fused update ops]
SGD (with momentum), Adam, AdamW and RMSprop update each parameter with one op, OneFlow's
``momentum_update`` / ``adam_update`` / ``rmsprop_update`` (ops/model_update.py), eagerly and in a
graph: the op writes the parameter in place and updates the state tensors it is given (Note [Update
ops write their state]). A step is then two dispatches per parameter (the step count's ``add_`` and
the update) instead of ten or more, and a few passes over memory with one scratch array instead of a
new array per op. The step count and a tensor ``lr`` are inputs of the op, read when it runs, so the
same op serves eager steps, ``capturable=True`` and captured steps. The unfused step, op by op, stays
as the reference the fused kernels are tested against: it runs under ``fused_updates(False)``,
whenever a hyperparameter the op takes as an attr is a tensor (a cycled ``momentum`` or ``betas[0]``
in a capture, ``lift_scheduled``), and for parameters on other devices than cpu (an out-of-tree
device's kernel fallback runs the cpu kernel on host copies of the arrays, so the state it writes
in place would be lost).
"""

from __future__ import annotations

import contextlib
import numbers
import threading
import warnings
from collections import defaultdict
from itertools import chain, product

from oneflow_lite.autograd.grad_mode import enable_grad, no_grad
from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.dispatch.tls import ExcludeDispatchKeyGuard
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functional import full, full_like, zeros_like
from oneflow_lite.interpreters.lazy import current_build_ctx
from oneflow_lite.interpreters.op_interp_util import dispatch


class _RequiredParameter:
    """The default of a hyperparameter that every parameter group must give (``optim.optimizer.required``)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


# ---- fused update ops (Note [Fused update ops]) --------------------------------------------------------
_fused = threading.local()


def fused_updates_enabled() -> bool:
    """Whether SGD with momentum, Adam, AdamW and RMSprop step with their fused update ops (the default)."""
    return getattr(_fused, "enabled", True)


@contextlib.contextmanager
def fused_updates(enabled: bool):
    """Within the block (this thread), the optimizers step with their fused update ops (``True``) or with the
    unfused reference step, op by op (``False``); Note [Fused update ops]."""
    if not isinstance(enabled, bool):
        raise TypeError(f"fused_updates(): enabled must be a bool, not {type(enabled).__name__}")
    previous = fused_updates_enabled()
    _fused.enabled = enabled
    try:
        yield
    finally:
        _fused.enabled = previous


_WITH_SKIP_IF: dict = {}  # id(update op expr) -> the same expr with a last ``skip_if`` input


def update_exprs(op_type: str, inputs: tuple) -> dict:
    """The ``UserOpExpr`` of a fused update op (output ``out``) for each choice of its optional ``inputs`` (names
    ending in ``?``), keyed by the tuple of those choices in order; each also has its twin with ``skip_if``
    (``update_in_place`` under ``skipping_updates``)."""
    optional = [name for name in inputs if name.endswith("?")]
    exprs = {}
    for key in product((False, True), repeat=len(optional)):
        given = dict(zip(optional, key))
        names = [name.rstrip("?") for name in inputs if given.get(name, True)]
        expr = exprs[key] = _update_expr(op_type, names)
        _WITH_SKIP_IF[id(expr)] = _update_expr(op_type, names + ["skip_if"])
    return exprs


def _update_expr(op_type: str, names: list):
    builder = OpBuilder(op_type)
    for name in names:
        builder.input(name)
    return builder.output("out").build()


@contextlib.contextmanager
def skipping_updates(skip_if: Tensor):
    """Within the block (this thread), the fused update ops take ``skip_if`` (a one-element integer or bool
    tensor; non-zero: the op changes nothing, Note [skip_if] in ops/model_update.py). Yields the list of the
    parameters so updated, which grows as the optimizers step (nn.Graph's loss scaling, Note [Graph AMP])."""
    if not isinstance(skip_if, Tensor) or skip_if.dtype.is_floating_point or skip_if.numel() != 1:
        raise TypeError(f"skipping_updates(): skip_if must be a one-element integer or bool tensor, got "
                        f"{skip_if!r}")
    previous = getattr(_fused, "skip", None)
    updated = []
    _fused.skip = (skip_if, updated)
    try:
        yield updated
    finally:
        _fused.skip = previous


def use_fused_update(group: dict, *hyperparameters) -> bool:
    """Whether ``group`` steps with its fused update op (Note [Fused update ops]): they are on, none of the
    ``hyperparameters`` the op takes as attrs is a tensor, and every parameter is a local cpu tensor (the op
    writes its state tensors as a side effect, which a global tensor's boxing would not see)."""
    return (fused_updates_enabled() and not any(isinstance(v, Tensor) for v in hyperparameters)
            and all(p.is_cpu and not p.is_global for p in group["params"]))


def update_in_place(expr, p: Tensor, inputs: tuple, attrs) -> None:
    """Run a fused update op on ``(p, *inputs)``, writing ``p`` in place (Note [Fused update ops]); with the
    thread's ``skip_if`` as a last input inside ``skipping_updates``."""
    skip = getattr(_fused, "skip", None)
    if skip is None:
        dispatch(expr, (p, *inputs), attrs, (p,))
        return
    dispatch(_WITH_SKIP_IF[id(expr)], (p, *inputs, skip[0]), attrs, (p,))
    skip[1].append(p)


# ---- helpers of the optimizers' steps ---------------------------------------------------------------
def capturing() -> bool:
    """Whether this thread is capturing an nn.Graph (Note [Optimizer steps in a graph])."""
    return current_build_ctx() is not None


def eager_zeros_like(p: Tensor) -> Tensor:
    """A zero state tensor like ``p``, made eagerly even while a graph is captured."""
    with ExcludeDispatchKeyGuard(DispatchKey.Lazy):
        return zeros_like(p)


def eager_zeros(shape, like: Tensor) -> Tensor:
    """A zero state tensor of ``shape`` with the dtype and device of ``like``, made eagerly."""
    with ExcludeDispatchKeyGuard(DispatchKey.Lazy):
        return like.new_zeros(shape)


def eager_full_like(p: Tensor, value) -> Tensor:
    """A state tensor like ``p`` filled with ``value``, made eagerly even while a graph is captured."""
    with ExcludeDispatchKeyGuard(DispatchKey.Lazy):
        return full_like(p, value)


def eager_scalar(value: float = 0.0, dtype=None) -> Tensor:
    """A 0-d state tensor made eagerly, of PyTorch's scalar dtype by default (float32, float64 under a
    float64 default dtype), as ``state['step']`` or NAdam's ``state['mu_product']``."""
    if dtype is None:
        dtype = dtypes.float64 if dtypes.get_default_dtype() is dtypes.float64 else dtypes.float32
    with ExcludeDispatchKeyGuard(DispatchKey.Lazy):
        return full((), value, dtype=dtype)


def eager_step_counter() -> Tensor:
    """A 0-d step count (PyTorch's ``state['step']``: float32, float64 under a float64 default dtype)."""
    return eager_scalar(0.0)


def number(value, tensor_mode: bool):
    """A hyperparameter as a step uses it: a tensor is read into Python unless the step keeps tensors."""
    return value.item() if not tensor_mode and isinstance(value, Tensor) else value


def value_of(value):
    """A hyperparameter's Python value (a tensor, eager even in a capture, is read): for the decisions a step
    takes in Python, such as whether momentum is on."""
    return value.item() if isinstance(value, Tensor) else value


def ema_(avg: Tensor, x: Tensor, beta) -> None:
    """``avg = beta * avg + (1 - beta) * x`` in place; a 0-d tensor ``beta`` only meets the state
    (Note [Optimizer steps in a graph])."""
    if isinstance(beta, Tensor):
        avg.sub_(x).mul_(beta).add_(x)
    else:
        avg.lerp_(x, 1 - beta)


def lift_scheduled(group: dict) -> None:
    """In a capture, a group with a tensor lr gets a tensor ``momentum`` / ``betas[0]`` too, so that the
    schedulers that cycle them reach the graph (Note [Optimizer steps in a graph])."""
    if not isinstance(group["lr"], Tensor):
        return
    momentum = group.get("momentum")
    if isinstance(momentum, numbers.Real) and not isinstance(momentum, bool) and momentum != 0:
        group["momentum"] = eager_scalar(momentum, dtypes.float64)
    betas = group.get("betas")
    if isinstance(betas, (tuple, list)) and len(betas) == 2 and isinstance(betas[0], numbers.Real):
        group["betas"] = (eager_scalar(betas[0], dtypes.float64), betas[1])


def sub_scaled(p: Tensor, t: Tensor, scale) -> None:
    """``p -= scale * t`` in place, ``scale`` a number or a 0-d tensor."""
    if isinstance(scale, Tensor):
        p.sub_(t * scale)
    else:
        p.add_(t, alpha=-scale)


def check_number(opt: str, name: str, value) -> None:
    """A Python number, or a 1-element floating tensor (a scheduled hyperparameter, ``lift_scheduled``)."""
    if isinstance(value, Tensor) and value.numel() == 1 and value.is_floating_point():
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{opt}: {name} must be a number, not {type(value).__name__}")


def check_bool(opt: str, name: str, value, optional: bool = False) -> None:
    if not (isinstance(value, bool) or (optional and value is None)):
        expected = "a bool or None" if optional else "a bool"
        raise TypeError(f"{opt}: {name} must be {expected}, not {type(value).__name__}")


def check_lr(opt: str, lr, invalid: str = "Invalid learning rate: {}") -> None:
    """PyTorch's checks of ``lr``: a non-negative number or a 1-element tensor (``invalid``: the message
    for a negative one)."""
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not lr.is_floating_point():
            raise TypeError(f"{opt}: a Tensor lr must have a floating dtype, got {lr.dtype.name}")
        value = float(lr)
    else:
        check_number(opt, "lr", lr)
        value = lr
    if not 0.0 <= value:
        raise ValueError(invalid.format(lr))


def check_at_least_zero(group: dict, name: str, what: str) -> None:
    """PyTorch's ``Invalid <what>: <value>`` for a negative hyperparameter."""
    if not 0.0 <= group[name]:
        raise ValueError(f"Invalid {what}: {group[name]}")


def check_betas(opt: str, betas) -> None:
    """A pair of coefficients in [0, 1) (Adam's ``betas``, PyTorch's messages)."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"{opt}: betas must be a pair of numbers, got {betas!r}")
    check_number(opt, "betas[0]", betas[0])
    check_number(opt, "betas[1]", betas[1])
    for i in range(2):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def check_unsupported(opt: str, group: dict) -> None:
    """``differentiable`` and ``fused`` exist for PyTorch compatibility; only their off values work."""
    check_bool(opt, "foreach", group["foreach"], optional=True)
    check_bool(opt, "differentiable", group["differentiable"])
    if group["differentiable"]:
        raise NotImplementedError(f"{opt}: differentiable=True is not supported (steps run under no_grad)")
    if "fused" in group:
        check_bool(opt, "fused", group["fused"], optional=True)
        if group["fused"]:
            raise NotImplementedError(f"{opt}: fused=True is not supported (PyTorch's fused kernels; SGD, Adam, AdamW "
                                      f"and RMSprop update each parameter with one fused op already)")


def _copy(value):
    """A copy of a state or hyperparameter value: tensors cloned, containers copied."""
    if isinstance(value, Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_copy(v) for v in value)
    return value


class Optimizer:
    """Base class of the optimizers: parameter groups, per-parameter state, ``zero_grad``,
    ``state_dict`` / ``load_state_dict``. Subclasses implement ``step(closure=None)``.

    ``params``: an iterable of tensors, or of dicts that define parameter groups (each with a
    ``'params'`` entry and any hyperparameters that override ``defaults``).
    """

    # State entries shaped like their parameter; load_state_dict checks their shapes.
    _PARAM_SHAPED_STATE: frozenset = frozenset()

    def __init__(self, params, defaults: dict):
        if isinstance(params, Tensor):
            raise TypeError(f"params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {params.type()}")
        if not isinstance(defaults, dict):
            raise TypeError(f"{type(self).__name__}: defaults must be a dict, not {type(defaults).__name__}")
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        if not any(v is required for v in defaults.values()):
            self._check_hyperparameters(defaults)
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def _check_hyperparameters(self, group: dict) -> None:
        """Raise for invalid hyperparameters in ``group`` (or the defaults); subclasses override."""

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        return "\n".join(lines) + "\n)"

    def add_param_group(self, param_group: dict) -> None:
        """Add a parameter group (a dict with ``'params'``; missing hyperparameters take the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("param_group must have a 'params' entry")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(param).__name__}")
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter "
                                 f"{name}")
            group.setdefault(name, default)
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; each occurrence is "
                          "updated at every step", stacklevel=3)
        if not set(params).isdisjoint(chain.from_iterable(g["params"] for g in self.param_groups)):
            raise ValueError("some parameters appear in more than one parameter group")
        self._check_hyperparameters(group)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to None (default) or, with
        ``set_to_none=False``, to zeros in place (detached from any graph)."""
        if not isinstance(set_to_none, bool):
            raise TypeError(f"zero_grad(): set_to_none must be a bool, not {type(set_to_none).__name__}")
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        raise NotImplementedError(f"{type(self).__name__} must implement step(closure=None)")

    def _step(self, closure, update_group) -> object:
        """The built-in optimizers' ``step``: evaluate ``closure`` with grad enabled, then run
        ``update_group(group, tensor_mode)`` for each group under no_grad (Note [Optimizer steps in a graph])."""
        if closure is not None and not callable(closure):
            raise TypeError(f"{type(self).__name__}.step(): closure must be callable, not {type(closure).__name__}")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            tensor_mode = capturing()
            for group in self.param_groups:
                if tensor_mode:
                    lift_scheduled(group)
                update_group(group, tensor_mode)
        return loss

    def _params_with_grad(self, group: dict):
        """``(param, grad, state)`` for each parameter of ``group`` with a gradient; the gradient is negated
        when the group has ``maximize`` on."""
        maximize = group.get("maximize", False)
        for p in group["params"]:
            grad = p.grad
            if grad is not None:
                yield p, (-grad if maximize else grad), self.state[p]

    # ---- state dict ---------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The optimizer's state in PyTorch's format: ``{'state': {index: {name: value}}, 'param_groups':
        [{..., 'params': [index, ...]}]}``, parameters numbered in group order. Tensors are copies."""
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed = {k: _copy(v) for k, v in group.items() if k != "params"}
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index_of[id(k)] if isinstance(k, Tensor) else k): _copy(v) for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a ``state_dict()`` (copied; floating state cast to each parameter's dtype and device).
        The groups must match this optimizer's in number and sizes; nothing changes on error."""
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= state_dict.keys():
            raise ValueError("load_state_dict(): expected a dict with 'state' and 'param_groups' entries (from "
                             "Optimizer.state_dict())")
        saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
        if not isinstance(saved_groups, (list, tuple)) or not all(
                isinstance(g, dict) and isinstance(g.get("params"), (list, tuple)) for g in saved_groups):
            raise ValueError("load_state_dict(): 'param_groups' must be a list of dicts with a 'params' list")
        if not isinstance(saved_state, dict):
            raise TypeError(f"load_state_dict(): 'state' must be a dict, not {type(saved_state).__name__}")
        groups = self.param_groups
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            new_group = {k: _copy(v) for k, v in saved.items() if k != "params"}
            for name, default in self.defaults.items():
                new_group.setdefault(name, default)
            new_group["params"] = group["params"]
            self._check_hyperparameters(new_group)
            new_groups.append(new_group)
        state = defaultdict(dict)
        for key, value in saved_state.items():
            param = id_map.get(key)
            if param is None:
                state[key] = _copy(value)
                continue
            if not isinstance(value, dict):
                raise TypeError(f"load_state_dict(): the state of parameter {key} must be a dict, not "
                                 f"{type(value).__name__}")
            state[param] = {name: self._load_value(param, key, name, v) for name, v in value.items()}
        self.state = state
        self.param_groups = new_groups

    def _load_value(self, param: Tensor, index, name: str, value):
        if not isinstance(value, Tensor):
            return _copy(value)
        if name in self._PARAM_SHAPED_STATE and value.shape != param.shape:
            raise ValueError(f"load_state_dict(): state '{name}' of parameter {index} has shape {list(value.shape)}, "
                             f"but the parameter has shape {list(param.shape)}")
        if name == "step":
            return value.to(copy=True)
        dtype = param.dtype if param.is_floating_point() and value.is_floating_point() else None
        return value.to(device=param.device, dtype=dtype, copy=True)
