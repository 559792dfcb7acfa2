"""``flow.nn.Graph``: capture ``build()`` into a Job once per input signature, compile it, run it.

::

    class MLPGraph(flow.nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model            # a Module: its parameters become variable ops

        def build(self, x):
            return self.model(x).relu()

    g = MLPGraph(model)
    y = g(x)        # first call: capture, compile, run; later calls with the same signature: run

    f = flow.nn.Graph.trace(lambda x, y: (x * y).sum())   # a graph of a plain function
    z = f(x, y)

Note [Graph signatures]
A graph caches one compiled plan per input signature: the nested structure of
the arguments, each tensor's shape, dtype, device and requires_grad, the values
of Python scalars among them (they are baked into the captured ops), and the
``training`` flag of each module attribute, and the thread's autocast state (a call
under ``flow.autocast`` records casts a call without it does not). A call with a new signature captures
and compiles again (logged at INFO on ``oneflow_lite.graph``) and keeps the plan
beside the earlier ones. Outputs never require grad: a graph is not differentiated
from outside (call ``backward()`` inside ``build()``).

Note [Modules in a graph]
A module assigned to a graph attribute is used through PyTorch's Module API only:
``named_parameters()`` and ``named_buffers()`` name its parameters and buffers
(they become variable ops called ``<attribute>.<path>``, trainable when they
require grad), ``named_children()`` gives the submodules, ``training`` is part of
the signature, and ``forward`` runs with the module's graph block as ``self``,
so calling a submodule opens its scope and its ops are named
``<module path>-<op_type>-<k>`` (OneFlow's names). Forward hooks are not run.
Parameters stay shared with the module: in-place updates inside ``build()``
(e.g. an SGD step under ``flow.no_grad()``) write the module's tensors at every
run, so eager and graph steps can be interleaved.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import threading
import time
from contextlib import ExitStack
from typing import ClassVar

import numpy as np
from google.protobuf.message import DecodeError

from oneflow_lite._proto import job_pb2
from oneflow_lite.dispatch.tls import ACTIVE as _KEYS_ACTIVE
from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework import op_registry
from oneflow_lite.framework.archive import read_npz
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, LAZY_KEY_SET, RemovableHandle, Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.interpreters.eager_local import get_allocation_limit
from oneflow_lite.graph import io, picture
from oneflow_lite.graph import state as graph_state
from oneflow_lite.graph.accumulation import join_outputs, split_inputs
from oneflow_lite.graph.amp import SCALE_NAME, TRACKER_NAME, AmpCapture, check_scaler
from oneflow_lite.graph.capture import GraphBuildCtx
from oneflow_lite.graph.compiler import Plan, StalePlan
from oneflow_lite.graph.config import GraphConfig
from oneflow_lite.graph.debug import DebugOptions, emit, meta_repr
from oneflow_lite.graph.global_plan import (GlobalJobPlan, describe_parallel_view, gather_variables, globalize,
                                            is_global_job, saved_source_layouts)
from oneflow_lite.graph.ir import JobError, JobIR, is_free_eager_name
from oneflow_lite.graph.pipeline import checkpoint_segments, run_job_passes
from oneflow_lite.graph.proxy import GraphModule, ModuleBlock  # noqa: F401  (re-exported)
from oneflow_lite.interpreters.autocast import state_key as _autocast_state
from oneflow_lite.interpreters.lazy import current_build_ctx, lazy_mode

_log = logging.getLogger("oneflow_lite.graph")
SAVED_GRAPH_ENTRY = "graph.npz"  # the file of a graph saved into a directory (flow.save(graph, dir))

# Exporters by format: onnx/ (which imports graph/) registers "onnx" for Graph.export_onnx.
EXPORTERS: dict = {}
_FORMAT = "oneflow_lite.nn.Graph"
_FORMAT_VERSION = 1


def _is_module(value) -> bool:
    return (not isinstance(value, (type, Tensor)) and callable(getattr(value, "named_parameters", None))
            and callable(getattr(value, "named_buffers", None)) and callable(getattr(value, "named_children", None)))


# ---- one compiled signature -----------------------------------------------------------------------
class _Entry:
    """The captured job of one input signature and its compiled plan."""

    __slots__ = (
        "calls",
        "capture_seconds",
        "compile_seconds",
        "config",
        "generators",
        "graph_modules",
        "in_metas",
        "in_spec",
        "ir",
        "job",
        "locations",
        "metas",
        "out_spec",
        "pass_reports",
        "plan",
        "single",
        "source_layouts",
        "variables",
    )

    def __init__(self, job, in_spec, in_metas, out_spec, variables, config):
        self.config = config
        self.job = job
        self.in_spec = in_spec
        self.in_metas = in_metas
        self.out_spec = out_spec
        self.single = out_spec == ("T", 0)
        self.variables = variables  # variable op name -> eager tensor
        self.ir = None
        self.plan = None
        self.pass_reports = []
        self.capture_seconds = 0.0
        self.compile_seconds = 0.0
        self.calls = []  # ModuleCall of each module call of the capture (graph/capture.py)
        self.graph_modules = {}  # module path -> GraphModule (its options, read at compile time)
        self.locations = {}  # op name -> Python location (Note [Op locations] in graph/debug.py)
        self.metas = {}  # blob name -> meta, of every blob of the capture
        self.source_layouts = {}  # source op name -> (placement, nd-SBP) (Note [Global source ops in a graph])
        self.generators = {}  # random op name -> its generator= (Note [Generators in a graph])

    def compile(self) -> None:
        config = self.config
        start = time.perf_counter()
        ir = JobIR.parse(self.job)
        layouts = self.source_layouts
        if is_global_job(self.variables, self.in_metas, layouts):  # Note [Graphs on global tensors]
            self.ir, self.pass_reports = ir, []
            self.plan = GlobalJobPlan(ir, self.variables, self.in_metas, self.notes, layouts, self.generators)
            self.compile_seconds = time.perf_counter() - start
            return
        reports = run_job_passes(ir, self.variables, config,
                                 checkpoint_segments(self.job, self.calls, self.graph_modules))
        plan = Plan(ir, self.variables, config.is_enabled("fusion"), config.is_enabled("memory_plan"), self.generators)
        self.ir, self.plan, self.pass_reports = ir, plan, reports
        self.compile_seconds = time.perf_counter() - start

    def notes(self, op_name: str) -> list:
        """The note naming the innermost module that added op ``op_name`` (an inner call spans fewer ops)."""
        index = next((i for i, conf in enumerate(self.job.net.op) if conf.name == op_name), -1)
        calls = sorted((c for c in self.calls if c.start <= index < c.end), key=lambda c: c.end - c.start)
        graph = self.job.job_conf.job_name
        return [f"(in module '{c.path}' ({c.module_type}) of nn.Graph '{graph}')" for c in calls[:1]]

    @property
    def reports(self) -> list:
        """What each pass changed (the plan's reports reflect its latest memory plan)."""
        return self.pass_reports + self.plan.reports

    def signature_text(self) -> str:
        return io.describe_call(*self.in_spec, self.in_metas)

    def run(self, tensors):
        if _run_observers:  # Note [Graph run observers]
            with ExitStack() as observed:
                for observer in list(_run_observers.values()):
                    observed.enter_context(observer(self))
                return self._run(tensors)
        return self._run(tensors)

    def _run(self, tensors):
        try:
            arrays = self.plan.run(tensors)
        except StalePlan:
            self.compile()
            arrays = self.plan.run(tensors)
        plan = self.plan
        if self.single:
            return Tensor._make(arrays[0], plan.out_metas[0])
        made = {}
        outs = []
        for a, m in zip(arrays, plan.out_metas):
            t = made.get(id(a))
            if t is None:
                t = made[id(a)] = Tensor._make(a, m)
            outs.append(t)
        return io.unflatten(self.out_spec, outs)


# Note [Graph run observers]
# Tools that watch compiled graph runs (the profiler records one event per run) add an observer: a callable
# taking the run's ``_Entry`` (its plan and IR) and returning a context manager that wraps the run. A run
# tests the list once; without observers that is all it pays.
_run_observers: dict = {}  # handle id -> observer


def add_run_observer(observer):
    """Wrap every compiled graph run in ``observer(entry)`` until the returned handle's ``remove()``
    (Note [Graph run observers])."""
    if not callable(observer):
        raise TypeError(f"add_run_observer(): observer must be a callable returning a context manager, got "
                        f"{type(observer).__name__}")
    handle = RemovableHandle(_run_observers)
    _run_observers[handle.id] = observer
    return handle


def _identifier(text: str) -> str:
    return re.sub(r"\W", "_", text).strip("_") or "graph"


class Graph:
    """Base class of static graphs: subclass it, assign modules, implement ``build(*args)``, call it.

    See the module docstring, Note [Graph signatures] and Note [Modules in a graph]."""

    _counters: ClassVar[dict] = {}
    _counter_lock = threading.Lock()

    def __init__(self):
        cls_name = _identifier(type(self).__name__)
        with Graph._counter_lock:
            counter = Graph._counters.setdefault(cls_name, itertools.count())
            name = f"{cls_name}_{next(counter)}"
        self._init(name)

    def _init(self, name):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_blocks", {})
        object.__setattr__(self, "_entries", {})
        object.__setattr__(self, "_fast", {})  # keys of calls with tensor arguments only -> entries
        object.__setattr__(self, "_last", None)
        object.__setattr__(self, "_dropped", None)  # the last call's entry when _drop_captures forgot it
        object.__setattr__(self, "_lock", threading.RLock())
        object.__setattr__(self, "config", GraphConfig(self._drop_plans, self._drop_captures))
        object.__setattr__(self, "_optimizers", [])  # (optimizer, lr scheduler or None), see add_optimizer
        object.__setattr__(self, "_graph_modules", {})  # module path -> GraphModule (graph/proxy.py)
        object.__setattr__(self, "_debug", DebugOptions())  # graph.debug() (graph/debug.py)
        object.__setattr__(self, "_grad_scaler", None)  # set_grad_scaler (graph/amp.py)

    @property
    def name(self) -> str:
        """The graph's name: ``<ClassName>_<k>`` (it prefixes the input and output op names)."""
        return self._name

    def build(self, *args, **kwargs):
        """The computation to capture; subclasses implement it."""
        raise NotImplementedError(f"nn.Graph '{self._name}': a subclass of nn.Graph must implement build(*args)")

    def add_optimizer(self, optimizer, *, lr_sch=None) -> None:
        """Make ``optimizer.step()`` part of the graph: it is captured after ``build()`` returns (which
        calls ``loss.backward()``), so every run updates the parameters in place. ``lr_sch.step()`` runs
        after every call of the graph; its learning rate reaches the captured update because each
        param group's ``lr`` becomes a 0-d float64 tensor that the scheduler rewrites in place
        (Note [Optimizer steps in a graph] in optim/optimizer.py). Register before the first call."""
        if not (callable(getattr(optimizer, "step", None)) and isinstance(getattr(optimizer, "param_groups", None),
                                                                            list)):
            raise TypeError(f"nn.Graph '{self._name}'.add_optimizer(): expected a flow.optim.Optimizer, "
                            f"got {type(optimizer).__name__}")
        if self._entries:
            raise RuntimeError(f"nn.Graph '{self._name}'.add_optimizer(): the graph has already been captured; "
                               f"add optimizers before its first call")
        if lr_sch is not None:
            if not callable(getattr(lr_sch, "step", None)) or getattr(lr_sch, "optimizer", None) is not optimizer:
                raise ValueError(f"nn.Graph '{self._name}'.add_optimizer(): lr_sch must be a scheduler of the "
                                 f"optimizer being added")
            for group in optimizer.param_groups:
                if not isinstance(group["lr"], Tensor):
                    group["lr"] = _make_lr_tensor(group["lr"])
        self._optimizers.append((optimizer, lr_sch))
        self.config._train(True)

    def set_grad_scaler(self, grad_scaler) -> None:
        """Loss scaling inside the job (OneFlow's ``nn.Graph.set_grad_scaler``): a ``flow.amp.GradScaler``
        (dynamic: scale, unscale, inf / NaN check, step skipping, growth and backoff at every run, its state as
        graph variables) or a ``flow.amp.StaticGradScaler`` (a constant factor); ``build()`` calls
        ``loss.backward()`` without ``scale()``. A GradScaler made for 'cuda' (PyTorch's default device,
        disabled eagerly here) is enabled: the graph scales on its own device. See Note [Graph AMP] in
        graph/amp.py. The next call captures again."""
        scaler = check_scaler(self._name, grad_scaler)
        if scaler is not self._grad_scaler:
            self.__dict__["_grad_scaler"] = scaler
            self._drop_captures()

    # ---- attributes -----------------------------------------------------------------------------
    _RESERVED = frozenset(("_name", "_blocks", "_entries", "_fast", "_last", "_dropped", "_lock", "_path", "config",
                           "_optimizers", "_graph_modules", "_debug", "_grad_scaler"))

    def __setattr__(self, name, value):
        if name in self._RESERVED:
            raise AttributeError(f"nn.Graph '{self._name}': attribute '{name}' is reserved")
        if _is_module(value):
            self._blocks[name] = ModuleBlock(value, name, self._graph_modules, self._drop_plans)
            self.__dict__.pop(name, None)
        else:
            self._blocks.pop(name, None)
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        blocks = self.__dict__.get("_blocks")
        if blocks is None:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() first in the __init__ of an "
                               f"nn.Graph subclass")
        if name in blocks:
            return blocks[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _state_names(self) -> dict:
        names = {}
        for attr, block in self._blocks.items():
            m = block._origin
            for path, t in itertools.chain(m.named_parameters(), m.named_buffers()):
                if isinstance(t, Tensor):
                    names.setdefault(id(t), f"{attr}.{path}")
        # A tensor lr (add_optimizer) is rewritten by its scheduler between runs: a named variable read at
        # every run, not a free eager tensor that constant folding would fold (and recompile at every run).
        for i, (optimizer, _) in enumerate(self._optimizers):
            for j, group in enumerate(optimizer.param_groups):
                if isinstance(group["lr"], Tensor):
                    names.setdefault(id(group["lr"]), f"optimizer{i}_param_group{j}_lr")
        scaler = self._grad_scaler
        if scaler is not None and hasattr(scaler, "_state_tensors"):
            scale, tracker = scaler._state_tensors()
            names.setdefault(id(scale), SCALE_NAME)
            names.setdefault(id(tracker), TRACKER_NAME)
        return names

    def _trainable_tensors(self) -> list:
        """The parameters of the graph's modules and optimizers (their eager grads are hidden in a build)."""
        tensors = [p for block in self._blocks.values() for _, p in block._origin.named_parameters()]
        tensors += [p for optimizer, _ in self._optimizers for g in optimizer.param_groups for p in g["params"]]
        return tensors

    def _drop_plans(self):
        with self._lock:
            for entry in self._entries.values():
                entry.ir = entry.plan = None

    def _drop_captures(self):
        """Forget every captured job: the next call captures again (a capture option changed)."""
        with self._lock:
            self._entries.clear()
            self._fast.clear()
            if self._last is not None:
                self.__dict__["_dropped"] = self._last
            self.__dict__["_last"] = None

    # ---- calling --------------------------------------------------------------------------------
    _KEY_MASK = AUTOGRAD_KEY_SET | LAZY_KEY_SET  # key bits of an input in the signature (a lazy one never hits)

    def _flags(self) -> tuple:
        """The modules' training flags and the thread's autocast state (Note [Graph signatures])."""
        flags = [getattr(b._origin, "training", None) for b in self._blocks.values()]
        # only when some thread has changed its key sets can this one be under autocast
        flags.append(_autocast_state() if _KEYS_ACTIVE[0] else None)
        return tuple(flags)

    def __call__(self, *args, **kwargs):
        """Run the graph; the first call of an input signature captures and compiles it."""
        fast_key = None
        if not kwargs:
            for t in args:
                if type(t) is not Tensor:
                    break
            else:  # only tensors: a key without the structure walk
                mask = self._KEY_MASK
                fast_key = (self._flags(), *[(t._meta, t._key_set & mask) for t in args])
                entry = self._fast.get(fast_key)
                if entry is not None and entry.plan is not None:
                    self.__dict__["_last"] = entry
                    out = entry.run(args)
                    if self._optimizers:
                        self._step_schedulers()
                    return out
        a_spec, leaves = io.flatten(args, "input", self._name)
        k_spec, leaves = io.flatten(kwargs, "input", self._name, leaves)
        tensors = [t for _, t in leaves]
        key = self._key(a_spec, k_spec, tensors)
        entry = self._entries.get(key)
        if entry is None or entry.plan is None:
            io.check_eager_inputs(leaves, self._name)
            with self._lock:
                entry = self._entries.get(key)
                if entry is None:
                    entry = self._capture(args, kwargs, key, a_spec, k_spec, leaves)
                if entry.plan is None:
                    self._compile_entry(entry)
        if fast_key is not None:
            self._fast[fast_key] = entry
        self.__dict__["_last"] = entry
        out = entry.run(tensors)
        if self._optimizers:
            self._step_schedulers()
        return out

    def _step_schedulers(self):
        for _, lr_sch in self._optimizers:
            if lr_sch is not None:
                lr_sch.step()

    def _key(self, a_spec, k_spec, tensors):
        """The cache key of a call (Note [Graph signatures])."""
        mask = self._KEY_MASK
        return ((a_spec, k_spec), tuple([(t._meta, t._key_set & mask) for t in tensors]), self._flags())

    def _capture(self, args, kwargs, key, a_spec, k_spec, leaves, store: bool = True) -> _Entry:
        if current_build_ctx() is not None:
            raise RuntimeError(f"nn.Graph '{self._name}' cannot be called inside the build() of nn.Graph "
                               f"'{current_build_ctx().graph_name}'")
        start = time.perf_counter()
        in_metas = [t._meta for _, t in leaves]
        if self._entries:
            _log.info("nn.Graph '%s': new input signature %s; capturing and compiling it (%d signature(s) cached)",
                      self._name, io.describe_call(a_spec, k_spec, in_metas), len(self._entries) + 1)
        for attr, block in list(self._blocks.items()):  # submodules may have changed since assignment
            self._blocks[attr] = ModuleBlock(block._origin, attr, self._graph_modules, self._drop_plans)
        ctx = GraphBuildCtx(self._name, self._state_names(), self._debug)
        emit(self._debug, 0, f"{self._shallow_repr()} start building graph.")
        try:
            ctx.hide_grads(self._trainable_tensors())
            with lazy_mode(ctx):
                out_spec = self._build_into(ctx, a_spec, k_spec, leaves)
        except Exception:
            emit(self._debug, 0, f"[ERROR]{self._shallow_repr()} building graph got error.")
            raise
        finally:
            ctx.restore_eager_state()
        entry = _Entry(ctx.job, (a_spec, k_spec), in_metas, out_spec, ctx.variables(), self.config)
        entry.calls, entry.locations, entry.metas = ctx.calls, ctx.locations, ctx.metas
        entry.source_layouts, entry.generators = ctx.source_layouts, ctx.op_generators
        entry.graph_modules = self._graph_modules
        entry.capture_seconds = time.perf_counter() - start
        emit(self._debug, 0, lambda: f"{self._shallow_repr()} building graph Done! Cost time: "
                                     f"{entry.capture_seconds:.2f}s.")
        if store:
            self._entries[key] = entry
        return entry

    def _entry_for(self, args, kwargs, store: bool = True) -> _Entry:
        """The captured job of a call's signature, captured without running when it is not cached (kept only
        when ``store``): for the exporter (onnx/)."""
        a_spec, leaves = io.flatten(args, "input", self._name)
        k_spec, leaves = io.flatten(kwargs, "input", self._name, leaves)
        key = self._key(a_spec, k_spec, [t for _, t in leaves])
        entry = self._entries.get(key)
        if entry is None:
            io.check_eager_inputs(leaves, self._name)
            with self._lock:
                entry = self._capture(args, kwargs, key, a_spec, k_spec, leaves, store)
        return entry

    def _build_into(self, ctx, a_spec, k_spec, leaves):
        """Capture ``build()`` (once per micro-batch, Note [Gradient accumulation]), the optimizer steps and
        the outputs into ``ctx``; the output structure."""
        debug = self._debug
        lazy = [ctx.add_input(f"_{self._name}_input.{p}", t) for p, t in leaves]
        for (p, _), t in zip(leaves, lazy):
            emit(debug, 1, lambda p=p, t=t: f"(INPUT:_{self._name}_input.{p}:{meta_repr(t._meta)})")
        options = self.config.capture_options()  # Note [Capture options] in graph/config.py
        amp = self._amp_capture(options, leaves)
        with amp.capturing(ctx):
            n = options["grad_acc_steps"]
            with amp.autocast():
                if n > 1:
                    outs = [self.build(*io.unflatten(a_spec, micro), **io.unflatten(k_spec, micro))
                            for micro in split_inputs(self._name, leaves, lazy, n)]
                    outputs = join_outputs(self._name, outs)
                else:
                    outputs = self.build(*io.unflatten(a_spec, lazy), **io.unflatten(k_spec, lazy))
            amp.step(ctx, self._optimizers)
        out_spec, out_leaves = io.flatten(outputs, "output", self._name)
        for p, t in out_leaves:
            name = f"_{self._name}_output" + (f".{p}" if p else "")
            ctx.add_output(name, t)
            emit(debug, 1, lambda name=name, t=t: f"(OUTPUT:{name}:{meta_repr(t._meta)})")
        ctx.finish(train=ctx.trainable_written())
        self._check_gradients_used(ctx)
        return out_spec

    def _amp_capture(self, options, leaves) -> AmpCapture:
        """What the capture does for ``enable_amp`` and the grad scaler (Note [Graph AMP] in graph/amp.py)."""
        scaler = self._grad_scaler
        if scaler is not None and not self._optimizers:
            raise RuntimeError(f"nn.Graph '{self._name}': set_grad_scaler() scales the loss of a training graph, but "
                               f"no optimizer was added; add one with add_optimizer() in __init__")
        devices = {t._meta.device.type for _, t in leaves}
        for block in self._blocks.values():
            devices.update(p._meta.device.type for _, p in block._origin.named_parameters())
        return AmpCapture(options["amp_dtype"], scaler, tuple(sorted(devices or {"cpu"})),
                          options["fuse_model_update_ops"])

    # Note [Backward without an optimizer]
    # OneFlow's graph refuses ``loss.backward()`` when no optimizer was added ("job has no TrainConf when
    # adding loss logical blob name"): without an optimizer nothing would use the gradients. Here a build
    # may use them itself (a hand-written update of the parameters, gradients returned as outputs), so the
    # error is raised only when nothing does: backward() gave trainable variables gradients, none of which
    # reaches an output or a variable update, and the graph has no optimizer.
    def _check_gradients_used(self, ctx) -> None:
        if self._optimizers:
            return
        unused = ctx.unused_gradients()
        if unused:
            names = ", ".join(f"'{v}' (gradient '{lbn}')" for v, lbn in unused[:4])
            raise RuntimeError(f"nn.Graph '{self._name}': build() called backward(), but no optimizer was added "
                               f"with add_optimizer() and the gradients of {names}"
                               f"{' and more' if len(unused) > 4 else ''} reach no output and update no "
                               f"parameter; add the optimizer in __init__ (self.add_optimizer(optimizer)), as "
                               f"OneFlow requires, or use the gradients in build()")

    def _shallow_repr(self) -> str:
        return f"(GRAPH:{self._name}:{type(self).__name__})"

    def _compile_entry(self, entry) -> None:
        debug = self._debug
        emit(debug, 0, f"{self._shallow_repr()} start building plan.")
        entry.compile()
        emit(debug, 1, lambda: f"{self._name} with operators:\n{self!r}")
        emit(debug, 0, lambda: f"{self._shallow_repr()} building plan Done! Cost time: {entry.compile_seconds:.2f}s.")

    # ---- state ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The graph's state: each module's ``state_dict()`` under its attribute name, and each added
        optimizer's and LR scheduler's state (Note [Graph state dicts] in graph/state.py)."""
        return graph_state.state_dict(self)

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        """Restore a ``state_dict()``: modules copied in place, optimizers and schedulers loaded (a captured
        graph is then captured again at its next call, Note [Graph state dicts] in graph/state.py)."""
        graph_state.load_state_dict(self, state_dict, strict)

    @property
    def training(self) -> bool:
        """Whether the graph trains (has an optimizer), OneFlow's ``graph.training``."""
        return self.config.training

    @property
    def is_compiled(self) -> bool:
        """Whether the graph has been captured and compiled (for its last call's signature)."""
        return self._last is not None and self._last.plan is not None

    # ---- debugging ------------------------------------------------------------------------------
    def debug(self, v_level: int = 0, *, ranks=None, max_py_stack_depth: int = 2, only_user_py_stack: bool = True,
              op_repr_with_py_stack: bool = False) -> None:
        """Print what the next capture and compilation do (OneFlow's ``nn.Graph.debug``, graph/debug.py):
        ``v_level`` -1 nothing, 0 the stages, 1 also each module's inputs, parameters and outputs, 2 also every
        op with its Python location (``max_py_stack_depth`` frames, of user code only when
        ``only_user_py_stack``); ``op_repr_with_py_stack`` adds the locations to ``print(graph)``'s ops.
        ``ranks``: the ranks that print (default 0; -1 all). Sets every module of the graph too."""
        self._debug.set(v_level, ranks, max_py_stack_depth, only_user_py_stack, op_repr_with_py_stack,
                        f"nn.Graph '{self._name}'")
        for block in self._blocks.values():
            block._graph_module.debug(v_level, ranks=ranks, max_py_stack_depth=max_py_stack_depth,
                                      only_user_py_stack=only_user_py_stack, op_repr_with_py_stack=op_repr_with_py_stack)

    # ---- introspection --------------------------------------------------------------------------
    def _current(self) -> _Entry:
        entry = self._last
        if entry is None:
            raise RuntimeError(f"nn.Graph '{self._name}' has not been captured yet: call it once first")
        if entry.plan is None:
            entry.compile()
        return entry

    @property
    def job(self) -> job_pb2.Job:
        """The ``Job`` proto that runs for the last call's signature (after the passes); on global tensors with
        each op's placement and SBP signature (Note [The parallel view of a job])."""
        entry = self._current()
        job = entry.ir.to_job()
        return entry.plan.annotate(job) if isinstance(entry.plan, GlobalJobPlan) else job

    @property
    def captured_job(self) -> job_pb2.Job:
        """The ``Job`` proto as captured for the last call's signature (before the passes)."""
        entry = self._last
        if entry is None:
            raise RuntimeError(f"nn.Graph '{self._name}' has not been captured yet: call it once first")
        job = job_pb2.Job()
        job.CopyFrom(entry.job)
        return job

    @property
    def plan_source(self) -> str:
        """The generated Python source of the last call's plan."""
        return self._current().plan.source

    def __repr__(self):
        lines = [(f"nn.Graph '{self._name}' ({type(self).__name__}): {len(self._entries)} captured input "
                  f"signature(s); {self.config!r}")]
        for block in self._blocks.values():
            lines.extend(block.tree_lines(2))
        for entry in self._entries.values():
            lines.extend(_describe_entry(entry, self._debug.op_repr_with_py_stack))
        return "\n".join(lines)

    def to_dot(self) -> str:
        """Graphviz DOT text of the job that runs for the last call's signature: ops with their output shapes,
        edges with the blobs' metas, modules as clusters (graph/picture.py)."""
        entry = self._current()
        classes = {}
        stack = list(self._blocks.values())
        while stack:
            block = stack.pop()
            classes[block._path] = type(block._origin).__name__
            stack.extend(block._children.values())
        return picture.to_dot(self._name, entry.ir, classes)

    def render(self, path, format: str | None = None) -> str:
        """Draw :meth:`to_dot` into ``path`` (SVG, PNG, PDF, ...: ``format``, else the path's suffix, else SVG)
        with the ``graphviz`` package and Graphviz's ``dot``; says what to install when they are missing.
        Returns the path written."""
        return picture.render(self.to_dot(), path, format)

    def export_onnx(self, path=None, **options):
        """Export the job of the last call's signature to ONNX (``flow.onnx.export(self, <inputs of that
        signature>, path, **options)``; the inputs' values do not matter); returns the ``onnx.ModelProto``."""
        entry = self._last
        if entry is None:
            raise RuntimeError(f"nn.Graph '{self._name}'.export_onnx(): call the graph once (capturing it) before "
                               f"exporting it")
        export = EXPORTERS.get("onnx")
        if export is None:
            raise RuntimeError(f"nn.Graph '{self._name}'.export_onnx(): no ONNX exporter is registered (import "
                               f"oneflow_lite.onnx)")
        args, kwargs = _zero_inputs(entry)
        return export(self, args, path, kwargs=kwargs, **options)

    # ---- persistence ----------------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the last call's captured job and the current values of its variables to ``path``
        (a NumPy ``.npz`` archive; ``<path>/graph.npz`` when ``path`` is a directory, as ``flow.save(graph, dir)``
        makes it); :meth:`load` makes a runnable graph of it without the model code. A graph on global tensors is
        saved by every rank together (Note [Saved graphs on global tensors])."""
        entry = self._last
        if entry is None and self._dropped is not None:  # state loaded since: capture that signature again
            entry = self._entry_for(*_zero_inputs(self._dropped))
        if entry is None:
            raise RuntimeError(f"nn.Graph '{self._name}'.save(): call the graph once (capturing it) before saving")
        if entry.plan is None:
            entry.compile()
        job, values = entry.job, {name: t._array for name, t in entry.variables.items()}
        if isinstance(entry.plan, GlobalJobPlan):  # Note [Saved graphs on global tensors]
            job, values = entry.plan.annotate(_copy_job(job)), gather_variables(entry.variables)
            if values is None:
                return
        meta = {
            "format": _FORMAT, "version": _FORMAT_VERSION, "graph_name": self._name,
            "args_spec": io.to_json(entry.in_spec[0]), "kwargs_spec": io.to_json(entry.in_spec[1]),
            "out_spec": io.to_json(entry.out_spec),
            "variables": sorted(entry.variables),
            "op_modules": _op_modules(job),
        }
        arrays = {"__job__": np.frombuffer(job.SerializeToString(deterministic=True), np.uint8),
                  "__meta__": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
        for i, name in enumerate(meta["variables"]):
            arrays[f"var{i}"] = values[name]
        path = _graph_file(path)
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    @staticmethod
    def load(path) -> Graph:
        """A runnable graph from a file written by :meth:`save` (no Python model code needed); it accepts the
        input signature it was saved with. A corrupt or mismatched file raises a RuntimeError saying so."""
        return _load(_graph_file(path))

    @staticmethod
    def trace(fn) -> Graph:
        """A graph whose ``build`` is ``fn`` (a function of tensors, without modules); usable as a decorator::

            @flow.nn.Graph.trace
            def step(x, y):
                return (x * y).relu().sum()
        """
        if not callable(fn):
            raise TypeError(f"nn.Graph.trace(): expected a function, got {type(fn).__name__}")
        return FunctionGraph(fn)


def _zero_inputs(entry) -> tuple:
    """(args, kwargs) of zeros with the input signature of ``entry`` (to capture it without real inputs)."""
    zeros = [Tensor._make(np.zeros(m.shape, m.np_dtype), m) for m in entry.in_metas]
    return io.unflatten(entry.in_spec[0], zeros), io.unflatten(entry.in_spec[1], zeros)


def _make_lr_tensor(lr) -> Tensor:
    from oneflow_lite.functors.creation import tensor

    return tensor(float(lr), dtype=dtypes.float64)


class FunctionGraph(Graph):
    """The graph of a plain function (made by :meth:`Graph.trace`); op names carry no module path."""

    def __init__(self, fn):
        cls_name = _identifier(getattr(fn, "__name__", "function"))
        with Graph._counter_lock:
            counter = Graph._counters.setdefault(cls_name, itertools.count())
            name = f"{cls_name}_{next(counter)}"
        self._init(name)
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "__doc__", getattr(fn, "__doc__", None))

    def build(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


class _LoadedGraph(Graph):
    """A graph read by :meth:`Graph.load`: one compiled signature and no build()."""

    _KEY_MASK = LAZY_KEY_SET  # the saved job does not depend on requires_grad

    def __init__(self, name, path):
        self._init(name)
        object.__setattr__(self, "_path", path)

    def _flags(self) -> tuple:
        return ()  # a saved job runs as it was saved, under autocast or not

    def _add(self, entry):
        self._entries[(entry.in_spec, tuple([(m, 0) for m in entry.in_metas]), ())] = entry
        self.__dict__["_last"] = entry

    def build(self, *args, **kwargs):
        entry = self._last
        raise RuntimeError(f"nn.Graph '{self._name}' was loaded from '{self._path}' for the input signature "
                           f"{entry.signature_text()} and has no build() to capture another; call it with inputs "
                           f"of that signature")

    def variables(self) -> dict:
        """Variable op name -> the tensor holding its value (updated in place by a training graph)."""
        return dict(self._last.variables)


# ---- printing -------------------------------------------------------------------------------------
def _meta_text(m) -> str:
    return f"{m.dtype.name}[{', '.join(map(str, m.shape))}]"


def _section(conf) -> str:
    name = conf.name
    kind = conf.WhichOneof("op_type")
    if kind == "input_conf":
        return "inputs"
    if kind == "output_conf":
        return "outputs"
    if kind == "variable_conf":
        if is_free_eager_name(name):
            scope = name.rsplit("-", 2)[0] if name.count("-") >= 2 else ""
            return f"module {scope}" if scope else "free eager tensors"
        return f"module {name.rsplit('.', 1)[0]}" if "." in name else "variables"
    if conf.user_conf.op_type_name == "assign":
        return "in-place updates"
    parts = name.rsplit("-", 2)
    return f"module {parts[0]}" if len(parts) == 3 else "functional ops"


def _describe_op(conf, metas) -> str:
    kind = conf.WhichOneof("op_type")
    if kind in ("input_conf", "variable_conf"):
        body = getattr(conf, kind)
        lbn = f"{conf.name}/{body.out}"
        what = "input" if kind == "input_conf" else f"variable{' (trainable)' if body.trainable else ''}"
        return f"{conf.name}: {what} -> {lbn}: {_meta_text(metas[lbn])}"
    if kind == "output_conf":
        src = getattr(conf.output_conf, "in")
        return f"{conf.name}: output <- {src}: {_meta_text(metas[src])}"
    uc = conf.user_conf
    ins = ", ".join(f"{arg}={','.join(uc.input[arg].s)}" for arg in uc.input_order)
    outs = ", ".join(f"{lbn}: {_meta_text(metas[lbn])}" for arg in uc.output_order for lbn in uc.output[arg].s)
    return f"{conf.name}: {uc.op_type_name}({ins}) -> {outs}"


def _describe_entry(entry: _Entry, with_locations: bool) -> list:
    if entry.plan is None:
        entry.compile()
    metas = entry.ir.metas
    lines = [(f"  signature {entry.signature_text()}: {len(entry.job.net.op)} captured op(s) in "
              f"{entry.capture_seconds * 1e3:.2f} ms, compiled in {entry.compile_seconds * 1e3:.2f} ms")]
    sections = {}
    for conf in entry.job.net.op:
        text = _describe_op(conf, metas)
        if with_locations and entry.locations.get(conf.name):
            text += f"  location=({entry.locations[conf.name]})"
        sections.setdefault(_section(conf), []).append(text)
    order = ["inputs"] + [s for s in sections if s not in ("inputs", "outputs", "in-place updates")]
    order += ["in-place updates", "outputs"]
    for s in order:
        if s in sections:
            lines.append(f"    {s}:")
            lines.extend(f"      {text}" for text in sections[s])
    if isinstance(entry.plan, GlobalJobPlan):  # Note [The parallel view of a job]
        lines.append("    parallel view (placement and SBP signature of each op):")
        lines.extend(f"      {text}" for text in describe_parallel_view(entry.plan.annotate(entry.ir.to_job())))
        lines.extend(f"      {text}" for text in entry.plan.boxing_lines)
    lines.append("    passes:")
    lines.extend(f"      {r}" for r in entry.reports)
    lines.append(f"    plan: {entry.plan.num_steps} kernel step(s) for {len(entry.ir.nodes)} op(s) after the passes")
    return lines


# ---- loading --------------------------------------------------------------------------------------
def _copy_job(job) -> job_pb2.Job:
    out = job_pb2.Job()
    out.CopyFrom(job)
    return out


def _graph_file(path) -> str:
    """The file of a saved graph at ``path``: ``<path>/graph.npz`` when ``path`` is a directory."""
    path = os.fspath(path)
    return os.path.join(path, SAVED_GRAPH_ENTRY) if os.path.isdir(path) else path


def _load(path: str) -> Graph:
    """The graph saved by ``nn.Graph.save()`` at ``path``, compiled and ready to run."""
    files = _read_archive(path)
    meta, job = _read_header(path, files)
    name = meta.get("graph_name")
    if not isinstance(name, str) or name != job.job_conf.job_name:
        raise _load_error(path, f"graph name {name!r} does not match the job's name {job.job_conf.job_name!r}")
    in_spec, out_spec, var_names = _read_specs(path, meta)
    _check_ops_registered(path, job, meta)
    try:
        ir = JobIR.parse(job)
    except JobError as e:
        raise _load_error(path, str(e)) from None
    variables = _read_variables(path, files, ir, var_names)
    inputs = [n for n in ir.nodes if n.kind == "input"]
    in_metas = [ir.metas[n.outputs[0]] for n in inputs]
    layouts = {}
    if job.placement.placement_group:  # Note [Saved graphs on global tensors]
        try:
            variables, in_metas = globalize(job, variables, [n.name for n in inputs], in_metas)
            layouts = saved_source_layouts(job, ir)
        except (ValueError, TypeError, KeyError) as e:
            raise _load_error(path, f"bad placement or SBP in its job ({type(e).__name__}: {e})") from None
    n_in = _count_tensors(in_spec[0]) + _count_tensors(in_spec[1])
    if n_in != len(inputs) or _count_tensors(out_spec) != len(ir.nodes_of("output")):
        raise _load_error(path, "its input / output structure does not match the job's input and output ops")
    graph = _LoadedGraph(name, path)
    entry = _Entry(job, in_spec, in_metas, out_spec, variables, graph.config)
    entry.source_layouts = layouts
    try:
        entry.compile()
    except JobError as e:
        raise _load_error(path, str(e)) from None
    graph._add(entry)
    return graph


# Note [Saved graphs of library ops]
# A saved job names its ops by type; an op defined out of the package (flow.library) is
# registered only once the module defining it has run. save() records the defining module
# of each such op type (op_registry's ``module``); load() checks every op type first and
# names the op, its namespace and that module instead of failing inside the job's parser.
def _op_modules(job) -> dict:
    """Op type -> the module defining it, for the job's op types defined outside the package."""
    found = {}
    for conf in job.net.op:
        if conf.WhichOneof("op_type") == "user_conf":
            definition = op_registry.find(conf.user_conf.op_type_name)
            if definition is not None and definition.module is not None:
                found[definition.op_type] = definition.module
    return found


def _check_ops_registered(path: str, job, meta: dict) -> None:
    """An error naming the first op type of ``job`` that is not registered and what to import for it."""
    modules = meta.get("op_modules") if isinstance(meta.get("op_modules"), dict) else {}
    for conf in job.net.op:
        op_type = conf.user_conf.op_type_name if conf.WhichOneof("op_type") == "user_conf" else None
        if op_type and op_registry.find(op_type) is None:
            namespace = op_type.split(".", 1)[0]
            what = (f"the ops of namespace '{namespace}' (flow.library.define('{namespace}::...'))" if "." in op_type
                    else "it (register_user_op)")
            where = (f"; it was defined by module '{modules[op_type]}' when the graph was saved"
                     if op_type in modules else "")
            raise RuntimeError(f"flow.nn.Graph.load('{path}'): op '{conf.name}' has type '{op_type}', which is not "
                               f"registered in this process: import the module that defines {what} before "
                               f"loading{where}")


def _load_error(path: str, why: str) -> RuntimeError:
    return RuntimeError(f"flow.nn.Graph.load: '{path}' is not a valid saved graph: {why}")


def _read_archive(path: str) -> dict:
    """The arrays of the NumPy archive at ``path``, by name, read without trusting it (Note [Reading untrusted
    archives] in serialization.py: no entry may declare more data than it holds)."""
    with open(path, "rb") as f:
        try:
            return read_npz(f, path, "flow.nn.Graph.load", get_allocation_limit())
        except RuntimeError as e:
            raise _load_error(path, f"cannot read it as a NumPy archive ({e})") from None


def _read_header(path: str, files: dict) -> tuple:
    """The metadata dict and the job proto, taken out of ``files`` and checked against the format."""
    if "__meta__" not in files or "__job__" not in files:
        raise _load_error(path, "the archive has no '__meta__' and '__job__' entries")
    try:
        meta = json.loads(files.pop("__meta__").tobytes().decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise _load_error(path, f"bad metadata ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise _load_error(path, f"it was not written by nn.Graph.save() (format {found!r})")
    if meta.get("version") != _FORMAT_VERSION:
        raise _load_error(path, f"format version {meta.get('version')!r}; this version reads version "
                                f"{_FORMAT_VERSION}")
    job = job_pb2.Job()
    try:
        job.ParseFromString(files.pop("__job__").tobytes())
    except DecodeError as e:
        raise _load_error(path, f"the job proto does not parse ({e})") from None
    return meta, job


def _read_specs(path: str, meta: dict) -> tuple:
    """The input structure (args, kwargs), the output structure and the variable names of the metadata."""
    try:
        in_spec = (io.from_json(meta["args_spec"]), io.from_json(meta["kwargs_spec"]))
        out_spec = io.from_json(meta["out_spec"])
        var_names = meta["variables"]
    except (KeyError, ValueError) as e:
        raise _load_error(path, f"bad input / output structure ({e})") from None
    if in_spec[0][0] != "tuple" or in_spec[1][0] != "dict":
        raise _load_error(path, "bad input structure")
    return in_spec, out_spec, var_names


def _read_variables(path: str, files: dict, ir: JobIR, var_names) -> dict:
    """Variable op name -> its saved value as a tensor, checked against the job's variable ops."""
    var_nodes = {n.name: n for n in ir.nodes if n.kind == "variable"}
    if not isinstance(var_names, list) or sorted(var_names) != sorted(var_nodes):
        raise _load_error(path, f"its variable values {var_names!r} do not match the job's variable ops "
                                f"{sorted(var_nodes)}")
    variables = {}
    for i, vname in enumerate(var_names):
        a = files.get(f"var{i}")
        m = ir.metas[var_nodes[vname].outputs[0]]
        if a is None:
            raise _load_error(path, f"no value for variable '{vname}'")
        if a.shape != tuple(m.shape) or a.dtype != m.np_dtype:
            raise _load_error(path, f"variable '{vname}' is declared {_meta_text(m)} but its value has shape "
                                    f"{a.shape} and dtype {a.dtype}")
        a = np.ascontiguousarray(a).reshape(a.shape)  # ascontiguousarray makes a 0-d array 1-d
        variables[vname] = Tensor._make(a, make_meta(a.shape, dtypes.from_numpy_dtype(a.dtype), m.device))
    return variables


def _count_tensors(spec) -> int:
    kind = spec[0]
    if kind == "T":
        return 1
    if kind in ("N", "S"):
        return 0
    items = spec[1] if kind != "dict" else [s for _, s in spec[1]]
    return sum(_count_tensors(s) for s in items)

