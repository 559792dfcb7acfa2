"""``graph.state_dict()`` / ``graph.load_state_dict()``: checkpoint a graph and resume it.

Note [Graph state dicts]
A graph's state (OneFlow's layout): one entry per module attribute, the module's own ``state_dict()``
(its parameters and persistent buffers, the graph's variables), then the state of what
``add_optimizer`` added: ``System-Optimizer-<i>`` (the optimizer's ``state_dict()``: its per-parameter
state, such as momentum buffers and step counts, and its param groups) and ``System-LRScheduler-<i>``; with
a dynamic grad scaler (``set_grad_scaler``), ``System-GradScaler``: its ``state_dict()`` (the scale and growth
tracker the job updates, Note [Graph AMP] in graph/amp.py). ``flow.save`` writes it, ``flow.load`` reads it
back.

``load_state_dict`` copies the modules' values into their tensors in place, so every graph sharing the
modules (an evaluation graph beside the training graph) sees them at its next run. OneFlow loads a graph's
state only before its first call; here a captured graph is captured again at its next call when an
optimizer's state was loaded, because ``Optimizer.load_state_dict`` makes new state tensors, which the
captured job does not read. The next steps then continue exactly as the saved graph's would have.
"""

from __future__ import annotations

from collections import OrderedDict

_OPTIMIZER = "System-Optimizer-{}"
_SCHEDULER = "System-LRScheduler-{}"
_SCALER = "System-GradScaler"


def _dynamic_scaler(graph):
    scaler = graph._grad_scaler
    return scaler if scaler is not None and hasattr(scaler, "load_state_dict") else None


def state_dict(graph) -> OrderedDict:
    """Note [Graph state dicts]."""
    state = OrderedDict()
    for name, block in graph._blocks.items():
        state[name] = block._origin.state_dict()
    for i, (optimizer, lr_sch) in enumerate(graph._optimizers):
        state[_OPTIMIZER.format(i)] = optimizer.state_dict()
        if lr_sch is not None:
            state[_SCHEDULER.format(i)] = lr_sch.state_dict()
    if _dynamic_scaler(graph) is not None:
        state[_SCALER] = graph._grad_scaler.state_dict()
    return state


def _expected_keys(graph) -> list:
    keys = list(graph._blocks)
    for i, (_, lr_sch) in enumerate(graph._optimizers):
        keys.append(_OPTIMIZER.format(i))
        if lr_sch is not None:
            keys.append(_SCHEDULER.format(i))
    if _dynamic_scaler(graph) is not None:
        keys.append(_SCALER)
    return keys


def load_state_dict(graph, state: dict, strict: bool = True) -> None:
    """Note [Graph state dicts]. With ``strict`` the keys must be those of ``graph.state_dict()`` (and each
    module's keys those of its own state dict)."""
    who = f"nn.Graph '{graph.name}'.load_state_dict()"
    if not isinstance(state, dict):
        raise TypeError(f"{who}: expected a dict (from nn.Graph.state_dict()), got {type(state).__name__}")
    expected = _expected_keys(graph)
    unexpected = [k for k in state if k not in expected]
    missing = [k for k in expected if k not in state]
    if strict and (unexpected or missing):
        raise RuntimeError(f"{who}: the state dict does not match the graph's: missing key(s) {missing}, unexpected "
                           f"key(s) {unexpected} (the graph has modules {list(graph._blocks)} and "
                           f"{len(graph._optimizers)} optimizer(s))")
    for name, block in graph._blocks.items():
        if name in state:
            block._origin.load_state_dict(state[name], strict=strict)
    reloaded = False
    for i, (optimizer, lr_sch) in enumerate(graph._optimizers):
        if _OPTIMIZER.format(i) in state:
            optimizer.load_state_dict(state[_OPTIMIZER.format(i)])
            reloaded = True
        if lr_sch is not None and _SCHEDULER.format(i) in state:
            lr_sch.load_state_dict(state[_SCHEDULER.format(i)])
    if _dynamic_scaler(graph) is not None and _SCALER in state:
        graph._grad_scaler.load_state_dict(state[_SCALER])  # writes the tensors the job reads, in place
    if reloaded:
        graph._drop_captures()
