"""Modules inside an ``nn.Graph``: ``ModuleBlock`` (OneFlow's ``ProxyModule``) and its ``GraphModule``.

``graph.model`` is the ``ModuleBlock`` of the module assigned to ``self.model``; ``graph.model.block`` the
block of its submodule ``block``. ``block.to(GraphModule)`` is the module's graph side: per-module options
(``activation_checkpointing``, ``set_stage``, ``debug()``) and what the last capture recorded about its
calls; ``block.to(nn.Module)`` (or ``to(type(module))``) is the module itself. OneFlow 0.9 spelt the options
``block.config.activation_checkpointing = True``; that spelling works too (Note [Block config]).

Note [Block config]
``block.config`` is a view of the block's options whose other attributes read the module's own
``config`` attribute, so a model whose ``forward`` reads ``self.config.n_head`` (a GPT) still runs in a
graph, while ``block.config.activation_checkpointing`` and ``block.config.stage_id`` set the options.
"""

from __future__ import annotations

from oneflow_lite.framework.tensor import LAZY_KEY_SET, Tensor
from oneflow_lite.graph import debug as dbg
from oneflow_lite.graph.capture import GraphBuildCtx, ModuleCall
from oneflow_lite.interpreters.lazy import current_build_ctx


class GraphModule:
    """The graph side of a module in an ``nn.Graph`` (OneFlow's ``GraphModule``): its options and what the
    last capture recorded about it. Changing an option drops the graph's compiled plans."""

    def __init__(self, path: str, on_change=None):
        self._path = path
        self._on_change = on_change
        self._activation_checkpointing = None
        self._stage_id = None
        self._stage_placement = None
        self._debug = dbg.DebugOptions()
        self.children: list[GraphModule] = []
        self.last_call: ModuleCall | None = None  # the last call of the last capture

    @property
    def name(self) -> str:
        return self._path.rsplit(".", 1)[-1]

    @property
    def name_prefix(self) -> str:
        return self._path[: -len(self.name)]

    @property
    def activation_checkpointing(self):
        """Whether the graph recomputes this module's forward ops in backward instead of keeping their
        results (Note [Activation checkpointing] in graph/checkpointing.py); None until set."""
        return self._activation_checkpointing

    @activation_checkpointing.setter
    def activation_checkpointing(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"GraphModule '{self._path}'.activation_checkpointing: expected a bool, got "
                            f"{type(mode).__name__}")
        if mode != bool(self._activation_checkpointing):
            self._activation_checkpointing = mode
            if self._on_change is not None:
                self._on_change()
        self._activation_checkpointing = mode

    @property
    def stage_id(self):
        """The pipeline stage of the module (recorded only: a graph here runs on one device)."""
        return self._stage_id

    @stage_id.setter
    def stage_id(self, value) -> None:
        self._stage_id = value

    @property
    def stage_placement(self):
        return self._stage_placement

    def set_stage(self, stage_id: int | None = None, placement=None) -> None:
        """Record the pipeline stage and placement of the module (OneFlow's pipeline parallelism; recorded
        only, as every graph here runs on one device)."""
        self._stage_id = stage_id
        self._stage_placement = placement

    def debug(self, v_level: int = 0, *, ranks=None, max_py_stack_depth: int = 2, only_user_py_stack: bool = True,
              op_repr_with_py_stack: bool = False) -> None:
        """Debug this module and its submodules while the graph is captured (graph/debug.py)."""
        self._debug.set(v_level, ranks, max_py_stack_depth, only_user_py_stack, op_repr_with_py_stack,
                        f"GraphModule '{self._path}'")
        for child in self.children:
            child.debug(v_level, ranks=ranks, max_py_stack_depth=max_py_stack_depth,
                        only_user_py_stack=only_user_py_stack, op_repr_with_py_stack=op_repr_with_py_stack)

    def _config_repr(self) -> str:
        parts = []
        if self._stage_id is not None:
            parts.append(f"stage_id={self._stage_id}")
        if self._activation_checkpointing is not None:
            parts.append(f"activation_checkpointing={self._activation_checkpointing}")
        return ", ".join(parts)

    def __repr__(self):
        return f"(GraphModule:{self._path}({self._config_repr()}))"


class _BlockConfig:
    """``block.config`` (Note [Block config])."""

    __slots__ = ("_graph_module", "_origin")
    _OPTIONS = frozenset(("activation_checkpointing", "stage_id"))

    def __init__(self, graph_module, origin):
        object.__setattr__(self, "_graph_module", graph_module)
        object.__setattr__(self, "_origin", origin)

    def __getattr__(self, name):
        if name in self._OPTIONS:
            return getattr(self._graph_module, name)
        own = getattr(self._origin, "config", None)
        if own is None:
            raise AttributeError(f"block config of '{self._graph_module._path}' has no option '{name}'")
        return getattr(own, name)

    def __setattr__(self, name, value):
        if name not in self._OPTIONS:
            raise AttributeError(f"block config of '{self._graph_module._path}': unknown option '{name}' (options: "
                                 f"{', '.join(sorted(self._OPTIONS))})")
        setattr(self._graph_module, name, value)


class ModuleBlock:
    """A module inside a graph (OneFlow's proxy, Note [Modules in a graph] in graph/graph.py): attribute
    reads go to the module, submodules come back as blocks, and a call during capture opens the module's
    scope and runs its ``forward`` with the block as ``self``."""

    __slots__ = ("_children", "_graph_module", "_origin", "_path")

    def __init__(self, origin, path: str, graph_modules: dict | None = None, on_change=None):
        if graph_modules is None:
            graph_modules = {}
        gm = graph_modules.get(path)
        if gm is None:
            gm = graph_modules[path] = GraphModule(path, on_change)
        object.__setattr__(self, "_origin", origin)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_graph_module", gm)
        # _modules keeps a module registered under two names (named_children() drops the repeat)
        modules = getattr(origin, "_modules", None)
        children = modules.items() if isinstance(modules, dict) else origin.named_children()
        object.__setattr__(self, "_children", {name: ModuleBlock(child, f"{path}.{name}", graph_modules, on_change)
                                               for name, child in children if child is not None})
        gm.children = [c._graph_module for c in self._children.values()]

    def to(self, *args, **kwargs):
        """``to(GraphModule)``: the module's graph side; ``to(nn.Module)`` (or the module's class): the module;
        other arguments move the module (``Module.to``) and return the block."""
        if len(args) == 1 and not kwargs and isinstance(args[0], type):
            if args[0] is GraphModule:
                return self._graph_module
            if isinstance(self._origin, args[0]):
                return self._origin
        self._origin.to(*args, **kwargs)
        return self

    @property
    def config(self):
        """The block's options (Note [Block config])."""
        return _BlockConfig(self._graph_module, self._origin)

    def __getattr__(self, name):
        child = self._children.get(name)
        if child is not None:
            return child
        attr = getattr(self._origin, name)
        if getattr(attr, "__self__", None) is self._origin and hasattr(attr, "__func__"):
            return attr.__func__.__get__(self)  # a method runs with the block as self
        return attr

    def __setattr__(self, name, value):
        setattr(self._origin, name, value)

    def __call__(self, *args, **kwargs):
        ctx = current_build_ctx()
        if ctx is None:
            return self._origin(*args, **kwargs)
        forward = getattr(type(self._origin), "forward", None)
        if not callable(forward):
            raise TypeError(f"module '{self._path}' ({type(self._origin).__name__}) has no forward() to call in a graph")
        recording = isinstance(ctx, GraphBuildCtx)
        call = self._enter(ctx, args, kwargs) if recording else None
        ctx.push_scope(self._path)
        try:
            result = forward(self, *args, **kwargs)
        except Exception as e:
            if not any("(in module '" in note for note in getattr(e, "__notes__", ())):
                e.add_note(f"(in module '{self._path}' ({type(self._origin).__name__}) of nn.Graph '{ctx.graph_name}')")
            raise
        finally:
            ctx.pop_scope()
            if recording:
                ctx.debug_stack.pop()
        if recording:
            self._leave(ctx, call, result)
        return result

    def _enter(self, ctx: GraphBuildCtx, args, kwargs) -> ModuleCall:
        """Record the call's inputs and print them (debug level 1)."""
        gm = self._graph_module
        options = gm._debug if gm._debug.v_level >= 0 else ctx.current_debug
        ctx.debug_stack.append(options)
        call = ModuleCall(self._path, ctx.num_ops, type(self._origin).__name__)
        dbg.emit(options, 1, lambda: self._shallow_repr())
        prefix = f"_{self._path}_input"
        leaves = [(f"{prefix}.0.{i}", a) for i, a in enumerate(args)]
        leaves += [(f"{prefix}.1.{k}", v) for k, v in kwargs.items()]
        for name, value in leaves:
            is_tensor, text = dbg.value_repr(value, bool(getattr(value, "_key_set", 0) & LAZY_KEY_SET))
            call.inputs.append((name, text, is_tensor))
            dbg.emit(options, 1, lambda n=name, t=text, ok=is_tensor: f"{'' if ok else '[WARNING]'}(INPUT:{n}:{t})")
        if options.v_level >= 1:
            for kind, items in (("PARAMETER", self._origin.named_parameters()), ("BUFFER", self._origin.named_buffers())):
                for pname, t in items:
                    if "." not in pname and isinstance(t, Tensor):
                        print(f"({kind}:{self._path}.{pname}:{dbg.meta_repr(t._meta, False)})", flush=True)
        return call

    def _leave(self, ctx: GraphBuildCtx, call: ModuleCall, result) -> None:
        """Record the call's op range and outputs and print them (debug level 1)."""
        call.end = ctx.num_ops
        outs = result if isinstance(result, (tuple, list)) else (result,)
        options = self._graph_module._debug if self._graph_module._debug.v_level >= 0 else ctx.current_debug
        for i, value in enumerate(outs):
            is_tensor, text = dbg.value_repr(value, bool(getattr(value, "_key_set", 0) & LAZY_KEY_SET))
            name = f"_{self._path}_output.0.{i}"
            call.outputs.append((name, text, is_tensor))
            if is_tensor and value._key_set & LAZY_KEY_SET and value._array.ctx is ctx:
                call.out_lbns.add(value._array.lbn)
            dbg.emit(options, 1, lambda n=name, t=text, ok=is_tensor: f"{'' if ok else '[WARNING]'}(OUTPUT:{n}:{t})")
        ctx.calls.append(call)
        self._graph_module.last_call = call

    def _shallow_repr(self) -> str:
        return f"(MODULE:{self._path}:{type(self._origin).__name__}())"

    def tree_lines(self, indent: int) -> list:
        """``print(graph)``'s lines of this module and its submodules: each with the inputs and outputs of its
        last call in the last capture (nothing before the first call)."""
        gm = self._graph_module
        options = gm._config_repr()
        pad = " " * indent
        lines = [f"{pad}module {self._path}: {type(self._origin).__name__}{f' ({options})' if options else ''}"]
        call = gm.last_call
        inner = " " * (indent + 2)
        if call is not None:
            lines.extend(f"{inner}{'' if ok else '[WARNING]'}(INPUT:{name}:{text})" for name, text, ok in call.inputs)
        for child in self._children.values():
            lines.extend(child.tree_lines(indent + 2))
        if call is not None:
            lines.extend(f"{inner}{'' if ok else '[WARNING]'}(OUTPUT:{name}:{text})" for name, text, ok in call.outputs)
        return lines

    def __iter__(self):
        return iter(self._children.values())

    def __len__(self):
        return len(self._children)

    def __getitem__(self, index):
        if isinstance(index, int):
            keys = list(self._children)
            return self._children[keys[index]]
        return self._children[index]

    def __repr__(self):
        return f"(MODULE:{self._path}:{type(self._origin).__name__})"
