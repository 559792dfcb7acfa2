"""The job builder of an ``nn.Graph`` capture: the LazyInterpreter's ``JobBuildAndInferCtx`` plus what the
graph needs to know about the capture: the module calls (their op ranges, inputs and outputs, for
activation checkpointing and ``print(graph)``), the ops' Python locations and the debug prints
(graph/debug.py)."""

from __future__ import annotations

from oneflow_lite.framework.tensor import LAZY_KEY_SET
from oneflow_lite.graph import debug as dbg
from oneflow_lite.interpreters.lazy import JobBuildAndInferCtx


class ModuleCall:
    """One call of a module's ``forward`` during a capture: the module path, the ops it added
    (``job.net.op[start:end]``), and its inputs' and outputs' descriptions and blob names."""

    __slots__ = ("end", "inputs", "module_type", "out_lbns", "outputs", "path", "start")

    def __init__(self, path: str, start: int, module_type: str = ""):
        self.path, self.module_type = path, module_type  # its class name, for error notes
        self.start = self.end = start
        self.inputs, self.outputs = [], []  # inputs: (name, meta text, is a tensor)
        self.out_lbns = set()


class GraphBuildCtx(JobBuildAndInferCtx):
    """``JobBuildAndInferCtx`` recording module calls and op locations, printing at the debug levels."""

    def __init__(self, graph_name: str, state_names: dict, debug: dbg.DebugOptions):
        super().__init__(graph_name, state_names)
        self.debug = debug
        self.debug_stack = [debug]  # the options of the innermost module being called
        self.calls: list[ModuleCall] = []
        self.locations: dict = {}  # op name -> Python location (Note [Op locations])
        self.metas: dict = {}  # lbn -> meta of every blob the capture made

    @property
    def current_debug(self) -> dbg.DebugOptions:
        return self.debug_stack[-1]

    @property
    def num_ops(self) -> int:
        return len(self.job.net.op)

    def add_op(self, conf) -> None:
        options = self.current_debug
        if options.records_locations or self.debug.records_locations:
            self.locations[conf.name] = dbg.python_location(options if options.records_locations else self.debug)
        super().add_op(conf)

    def lazy_tensor(self, lbn: str, meta, requires_grad: bool = False):
        self.metas[lbn] = meta
        return super().lazy_tensor(lbn, meta, requires_grad)

    def _bind(self, t):
        b = super()._bind(t)
        self.metas.setdefault(f"{b.op_name}/out", t._meta)
        return b

    def add_user_op(self, op_expr, inputs, attrs, outputs):
        result = super().add_user_op(op_expr, inputs, attrs, outputs)
        conf = self.job.net.op[-1]
        for lbn, t in zip([f"{conf.name}/{obn}" for obn in op_expr.indexed_obns], result):
            self.metas[lbn] = t._meta
        options = self.current_debug
        if options.v_level >= 2:
            dbg.emit(options, 2, dbg.operator_repr(conf, self.metas, self.locations.get(conf.name)))
        return result

    # ---- gradients without an optimizer ----------------------------------------------------------
    def unused_gradients(self) -> list:
        """``(variable op name, gradient blob)`` of the trainable variables given a ``.grad`` by a ``backward()``
        in the build when none of these gradients reaches an output or a variable update, else [] (Note
        [Backward without an optimizer] in graph/graph.py)."""
        grads = {}
        for b in self._bindings.values():
            ag = b.tensor._ag
            grad = None if ag is None else ag.grad
            if grad is not None and grad._key_set & LAZY_KEY_SET and grad._array.ctx is self:
                grads[grad._array.lbn] = b.op_name
        if not grads:
            return []
        reached = self._blobs_reaching_results()
        if any(lbn in reached for lbn in grads):
            return []
        return [(name, lbn) for lbn, name in grads.items()]

    def _blobs_reaching_results(self) -> set:
        """The blobs from which an output or an assign is computed."""
        needed = set()
        for conf in reversed(self.job.net.op):
            kind = conf.WhichOneof("op_type")
            if kind == "output_conf":
                needed.add(getattr(conf.output_conf, "in"))
            elif kind == "user_conf":
                uc = conf.user_conf
                outs = [lbn for arg in uc.output_order for lbn in uc.output[arg].s]
                if uc.op_type_name == "assign" or any(lbn in needed for lbn in outs):
                    needed.update(lbn for arg in uc.input_order for lbn in uc.input[arg].s)
        return needed
