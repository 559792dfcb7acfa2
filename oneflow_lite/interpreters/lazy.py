"""``LazyInterpreter``: graph capture at the Lazy dispatch key, and the job builder it appends to.

Note [Lazy capture]
``lazy_mode(ctx)`` is a thread-local guard that adds the Lazy key to the thread's
included key set and makes ``ctx`` (a ``JobBuildAndInferCtx``, OneFlow's name) the
job being built. Every op dispatched inside then reaches the LazyInterpreter
(Autograd, above Lazy, still records first, so ``loss.backward()`` inside a build
captures the backward ops too). For a user op it:

1. finds each input's logical blob name (lbn): a lazy tensor holds its ``LazyBlob``
   (Note [Lazy tensors]); an eager tensor (a parameter, a buffer, any free eager
   tensor or constant touched inside the build) is bound once to a variable op,
   named by its module path (``model.fc1.weight``) or ``<scope>-FreeEagerTensor-<k>``,
   which reads the tensor's buffer at every run. It is trainable when the tensor
   requires grad (OneFlow makes free eager tensors never trainable; here one that
   requires grad is a weight a function graph may train, and constant folding must
   not freeze it);
2. checks that the inputs share one device and infers the outputs with the same
   infer functions as eager execution;
3. appends the op's ``OperatorConf`` (``UserOpExpr.build_op_conf``: a ``UserOpConf``
   with the attrs as ``AttrValue``s) under the name ``<module path>-<op_type>-<k>``
   (``<op_type>-<k>`` outside modules), with its input lbns rewritten to the
   producers' blob names and its outputs named ``<op_name>/<output>_<i>``;
4. returns lazy tensors for the outputs.

Every check happens before the job changes, so a failed call adds nothing.

The job is in SSA form: an in-place call appends an op with new output blobs and
*rebinds* the written tensor to them (a lazy tensor gets a new ``LazyBlob``, an
eager tensor's binding moves). Tensors that alias the written one (views made
before the write, detached copies) keep the old value, unlike eager execution.
When the build ends, ``finish()`` appends an ``assign`` op for each variable or
graph input whose binding moved: at run time the executor writes the new value
into the eager tensor's buffer, so in-place updates of parameters and buffers
(an SGD step, running statistics) happen at every run.

Note [Eager tensors in a build]
A build has no lasting effect on the autograd state of the eager tensors it
touches: ``restore_eager_state()`` puts back each bound tensor's ``requires_grad``,
``grad_fn`` and ``.grad`` as they were before the build (a ``.grad`` computed by
``backward()`` inside the build is a lazy tensor and must not leak out; return it
from ``build()`` to read it). In-place writes into their buffers are captured as
above and happen at every run.

The graph owns its gradients, as in OneFlow: while a build runs, every bound
tensor (and every parameter the graph knows, see ``hide_grads``) has no
``.grad``, so a ``backward()`` in the build starts from zero at every run. An
eager ``.grad`` left by earlier eager steps is neither added into the graph's
updates nor written by them; it is back, unchanged, when the build ends.

Note [Generators in a graph]
A random op called in a build with ``generator=g`` (``flow.randn(..., generator=g)``,
global or local) is recorded with ``g`` (``op_generators``): at every run of the
graph that op draws from ``g``, as the eager call would, so after ``g.manual_seed(s)``
the k-th run gives the k-th eager call's value (a global op draws its shared seed from
``g``, Note [Random ops on global tensors]); the other random ops draw from the
device's default generator. The generator is an object of this process: a graph
saved and loaded again draws from the default generator.
"""

from __future__ import annotations

import threading

from oneflow_lite._proto import job_pb2, op_conf_pb2
from oneflow_lite.dispatch.dispatch_key import DispatchKey
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.tls import set_included
from oneflow_lite.dispatch.tls import state as _tls
from oneflow_lite.framework import generator as _generator
from oneflow_lite.framework.op_expr import UserOpExpr
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.framework.global_meta import GLOBAL_KEY_SET
from oneflow_lite.framework.tensor import LAZY_KEY_SET, Tensor, VersionCounter

_make = Tensor._make


class LazyBlob:
    """What a lazy tensor holds instead of data: its logical blob name in the job being built."""

    __slots__ = ("ctx", "lbn")

    def __init__(self, lbn: str, ctx: JobBuildAndInferCtx):
        self.lbn = lbn
        self.ctx = ctx

    def describe(self) -> str:
        op_name, _, blob = self.lbn.partition("/")
        return f"'{blob}' of op '{op_name}' in nn.Graph '{self.ctx.graph_name}'"

    def read_error(self, what: str) -> RuntimeError:
        when = "while it is being built" if self.ctx.is_open else "(its build() has finished)"
        return RuntimeError(
            f"{what}: cannot read the value of a lazy tensor: it is {self.describe()} {when}. A lazy tensor "
            f"has no value during graph capture (no numpy(), item(), tolist(), bool() or Python `if` on it); "
            f"return it from build() and read the graph's output instead.")


def lazy_blob_of(t: Tensor) -> LazyBlob | None:
    """The blob of a lazy tensor, None for an eager one."""
    return t._array if t._key_set & LAZY_KEY_SET else None


# ---- the assign op --------------------------------------------------------------------------------
def _assign_shape(ctx):
    ref, value = ctx.input_metas
    if ref.shape != value.shape or ref.dtype is not value.dtype:
        raise ctx.error(f"value has shape {list(value.shape)} and dtype {value.dtype.name}, but ref has shape "
                        f"{list(ref.shape)} and dtype {ref.dtype.name}")
    return ref.shape


# Graph-internal: ``finish()`` appends one per variable or input written in place during a build;
# the graph executor runs it (it has no kernel) by copying ``value`` into ``ref``'s buffer after
# the outputs are fetched. ``out`` is ``ref`` after the write.
register_user_op("assign", inputs=["ref", "value"], outputs=["out"], no_grad=True,
                 infer_shape=_assign_shape, infer_dtype=lambda ctx: ctx.dtype("ref"))


# ---- the job builder ------------------------------------------------------------------------------
class _Binding:
    """An eager tensor bound to a variable op: its op name, the lbn of its current value and the
    autograd state it had before the build (Note [Eager tensors in a build])."""

    __slots__ = ("lbn", "op_name", "saved", "tensor")

    def __init__(self, tensor, op_name):
        self.tensor = tensor
        self.op_name = op_name
        self.lbn = f"{op_name}/out"
        ag = tensor._ag
        self.saved = (tensor._key_set, ag, None if ag is None else (ag.grad_fn, ag.output_nr, ag.grad,
                                                                      ag.retains_grad))
        if ag is not None:
            ag.grad = None  # the graph owns its gradients (Note [Eager tensors in a build])

    def restore(self):
        t = self.tensor
        t._key_set, ag, fields = self.saved
        t._ag = ag
        if ag is not None:
            ag.grad_fn, ag.output_nr, ag.grad, ag.retains_grad = fields


def _connect_blobs(user_conf, op_expr: UserOpExpr, name: str, lbns: list) -> None:
    """Fill a user op conf's input blob names from ``lbns`` (in indexed order) and name its outputs
    ``<op name>/<arg>_<i>``."""
    k = 0
    for arg, n in zip(op_expr.input_arg_tuple.names, op_expr.input_arg_tuple.counts):
        blobs = user_conf.input[arg].s
        for i in range(n):
            blobs[i] = lbns[k]
            k += 1
    for arg, n in zip(op_expr.output_arg_tuple.names, op_expr.output_arg_tuple.counts):
        blobs = user_conf.output[arg].s
        for i in range(n):
            blobs[i] = f"{name}/{arg}_{i}"


def _shape_dtype(conf, meta):
    conf.shape.dim.extend(meta.shape)
    conf.data_type = meta.dtype.proto


class JobBuildAndInferCtx:
    """The job being built by one capture (OneFlow's ``JobBuildAndInferCtx``): the ``Job`` proto,
    unique op names, module scopes, and the bindings of inputs and eager tensors to ops."""

    def __init__(self, graph_name: str, state_names: dict | None = None):
        self.graph_name = graph_name
        self.job = job_pb2.Job()
        self.job.job_conf.job_name = graph_name
        self.is_open = False
        self.state_names = state_names or {}  # id(tensor) -> variable op name of module parameters / buffers
        self._device_tags = {}  # op name -> device tag
        self._counter = 0
        self._scopes = []
        self._bindings = {}  # id(eager tensor) -> _Binding
        self._hidden_grads = []  # (autograd meta, eager .grad) hidden for the build by hide_grads()
        self.inputs = {}  # input op name -> lazy tensor given to build()
        self.output_names = []
        self.source_layouts = {}  # source op name -> (placement, nd-SBP) or SameLayout (Note [Global source ops ...])
        self.op_generators = {}  # random op name -> the generator= it was called with (Note [Generators in a graph])

    # ---- names and scopes ---------------------------------------------------------------------
    def new_op_name(self, op_type: str) -> str:
        """``<module path>-<op_type>-<k>`` (``<op_type>-<k>`` outside modules); ``k`` counts the job's ops."""
        k = self._counter
        self._counter += 1
        scopes = self._scopes
        return f"{scopes[-1]}-{op_type}-{k}" if scopes else f"{op_type}-{k}"

    def push_scope(self, module_path: str) -> None:
        self._scopes.append(module_path)

    def pop_scope(self) -> None:
        self._scopes.pop()

    def _where(self, op_name: str, op_type: str) -> str:
        return f"nn.Graph '{self.graph_name}', op '{op_name}' ({op_type})"

    def add_op(self, conf: op_conf_pb2.OperatorConf) -> None:
        """Append ``conf``; a name already in the job is an error (OneFlow's OpNameExistError)."""
        if not conf.device_tag:
            raise RuntimeError(f"nn.Graph '{self.graph_name}': op '{conf.name}' has no device_tag")
        if conf.name in self._device_tags:
            raise RuntimeError(f"nn.Graph '{self.graph_name}': op name '{conf.name}' already exists in the job; "
                               f"op names must be unique")
        self._device_tags[conf.name] = conf.device_tag
        self.job.net.op.append(conf)

    # ---- interface ops ------------------------------------------------------------------------
    def lazy_tensor(self, lbn: str, meta, requires_grad: bool = False) -> Tensor:
        t = _make(LazyBlob(lbn, self), meta)
        t._key_set |= LAZY_KEY_SET
        if requires_grad:
            t.requires_grad_()
        return t

    def add_input(self, name: str, t: Tensor) -> Tensor:
        """An input op fed by the eager tensor ``t`` at every run; returns the lazy tensor build() sees."""
        meta = t._meta
        conf = op_conf_pb2.OperatorConf(name=name, device_tag=meta.device.type)
        conf.input_conf.out = "out"
        _shape_dtype(conf.input_conf, meta)
        self.add_op(conf)
        lazy = self.lazy_tensor(f"{name}/out", meta, t.requires_grad)
        self.inputs[name] = lazy
        return lazy

    def add_output(self, name: str, t: Tensor) -> None:
        """An output op fetching ``t`` (lazy, or eager: then bound to a variable) after every run."""
        lbn = self._lbn_of(t, "the output", name)
        if lbn is None:
            lbn = self._bind(t).lbn
        meta = t._meta
        conf = op_conf_pb2.OperatorConf(name=name, device_tag=meta.device.type)
        conf.output_conf.out = "out"
        setattr(conf.output_conf, "in", lbn)
        _shape_dtype(conf.output_conf, meta)
        self.add_op(conf)
        self.output_names.append(name)

    def _bind(self, t: Tensor) -> _Binding:
        """The binding of eager tensor ``t``, adding its variable op on first use."""
        b = self._bindings.get(id(t))
        if b is not None:
            return b
        name = self.state_names.get(id(t)) or self.new_op_name("FreeEagerTensor")
        meta = t._meta
        conf = op_conf_pb2.OperatorConf(name=name, device_tag=meta.device.type)
        var = conf.variable_conf
        var.out = "out"
        _shape_dtype(var, meta)
        var.trainable = t.requires_grad
        self.add_op(conf)
        b = self._bindings[id(t)] = _Binding(t, name)
        return b

    def _lbn_of(self, t: Tensor, what: str, op_name: str) -> str | None:
        """The lbn of a lazy tensor of this job, or of an eager tensor already bound; None for an eager
        tensor not bound yet; an error for a lazy tensor of another graph."""
        if t._key_set & LAZY_KEY_SET:
            blob = t._array
            if blob.ctx is not self:
                raise RuntimeError(f"nn.Graph '{self.graph_name}', op '{op_name}': {what} is {blob.describe()}, "
                                   f"another graph; a lazy tensor can only be used in the build() that made it")
            return blob.lbn
        b = self._bindings.get(id(t))
        return None if b is None else b.lbn

    def place_source(self, t: Tensor, placement, nd_sbp: tuple) -> Tensor:
        """Lay the output of the source op just captured (``t``, lazy) over ``placement`` with ``nd_sbp``
        (Note [Global source ops in a graph]); returns ``t``."""
        self.source_layouts[t._array.lbn.partition("/")[0]] = (placement, nd_sbp)
        return t

    def place_like(self, t: Tensor, like: Tensor, what: str) -> Tensor:
        """Lay the output of the source op just captured (``t``, lazy) as the graph's plan lays ``like`` (a lazy
        tensor of this job), when the job is on global tensors (Note [The layout of a *_like tensor in a graph]);
        returns ``t``. ``what``: the call, for errors."""
        src, like_lbn = t._array.lbn.partition("/")[0], self._lbn_of(like, "input", what)
        last = self.job.net.op[-1] if len(self.job.net.op) else None
        if last is None or last.name != src or not last.HasField("user_conf") or last.user_conf.input_order:
            raise RuntimeError(f"nn.Graph '{self.graph_name}': {what}: expected its result to be the output of the "
                               f"source op just captured, got blob '{t._array.lbn}'")
        self.source_layouts[src] = SameLayout(like_lbn)
        return t

    def variables(self) -> dict:
        """Variable op name -> the eager tensor bound to it."""
        return {b.op_name: b.tensor for b in self._bindings.values()}

    # ---- user ops -----------------------------------------------------------------------------
    def add_user_op(self, op_expr: UserOpExpr, inputs, attrs, outputs):
        """Append a user op on ``inputs`` (lazy tensors of this job, or eager ones, bound to variables) and
        return its lazy outputs; for an in-place call, ``outputs`` rebound to the op's results."""
        op_type = op_expr.op_type_name
        name = self.new_op_name(op_type)
        ibns = op_expr.indexed_ibns
        lbns = [self._lbn_of(t, f"input {ibns[i]}", name) for i, t in enumerate(inputs)]
        metas = tuple([t._meta for t in inputs])
        self._check_one_device(name, op_type, ibns, inputs, lbns, metas)
        try:
            res = op_expr.infer(metas, attrs)
        except Exception as e:
            e.add_note(f"(while capturing {self._where(name, op_type)})")
            raise
        out_metas = res.out_metas
        if outputs is not None:
            self._check_in_place_outputs(name, op_type, op_expr, outputs, out_metas)
        conf = op_expr.build_op_conf(attrs, device_tag=res.device.type)
        # Every check passed: from here on the job changes.
        for i, t in enumerate(inputs):
            if lbns[i] is None:
                lbns[i] = self._bind(t).lbn
        conf.name = name
        _connect_blobs(conf.user_conf, op_expr, name, lbns)
        self.add_op(conf)
        gen = getattr(_generator._local, "gen", None)
        if gen is not None:  # Note [Generators in a graph]
            self.op_generators[name] = gen
        new_lbns = [f"{name}/{obn}" for obn in op_expr.indexed_obns]
        if outputs is None:
            return tuple([self.lazy_tensor(lbn, m) for lbn, m in zip(new_lbns, out_metas)])
        self._rebind_in_place_outputs(outputs, new_lbns)
        return tuple(outputs)

    def _check_one_device(self, name, op_type, ibns, inputs, lbns, metas) -> None:
        """All inputs of a user op must be on one device."""
        if not metas:
            return
        dev = metas[0].device
        for i, m in enumerate(metas):
            if m.device is not dev:
                raise RuntimeError(
                    f"{self._where(name, op_type)}: expected all tensors to be on the same device, but found at "
                    f"least two devices: {dev} (input {ibns[0]}, position 0, {self._describe(inputs[0], lbns[0])}) "
                    f"and {m.device} (input {ibns[i]}, position {i}, {self._describe(inputs[i], lbns[i])}). "
                    f"Please use tensor.to() to move them to the same device.")

    def _check_in_place_outputs(self, name, op_type, op_expr, outputs, out_metas) -> None:
        """The tensors an in-place call writes must be of this job and match the result's metas."""
        if len(outputs) != len(out_metas):
            raise RuntimeError(f"{self._where(name, op_type)}: {len(out_metas)} output tensor(s) expected for "
                               f"an in-place call, got {len(outputs)}")
        for obn, t, m in zip(op_expr.indexed_obns, outputs, out_metas):
            self._lbn_of(t, f"in-place output {obn}", name)
            tm = t._meta
            if tm.key_set & GLOBAL_KEY_SET:  # a job records logical metas (Note [Graphs on global tensors])
                tm = tm.logical
            if tm is not m:
                raise RuntimeError(
                    f"{self._where(name, op_type)}: in-place output '{obn}' has shape {tuple(t.shape)}, dtype "
                    f"{t.dtype.name}, device {t.device} but the result has shape {tuple(m.shape)}, dtype "
                    f"{m.dtype.name}, device {m.device}")

    def _rebind_in_place_outputs(self, outputs, new_lbns) -> None:
        """After an in-place op, its outputs name the op's results (a new version of their buffers)."""
        for t, lbn in zip(outputs, new_lbns):
            if t._key_set & LAZY_KEY_SET:
                t._array = LazyBlob(lbn, self)
            else:
                self._bind(t).lbn = lbn
            vc = t._vc
            if vc is None:
                t._vc = VersionCounter(1)
            else:
                vc.version += 1

    def _describe(self, t, lbn) -> str:
        if lbn is not None:
            return f"blob '{lbn}'"
        return f"eager tensor {self.state_names.get(id(t)) or 'captured from outside the graph'}"

    # ---- the end of a build -------------------------------------------------------------------
    def finish(self, train: bool) -> None:
        """Append an ``assign`` for every variable or input rebound by an in-place op; set the job type."""
        written = [(b.op_name, f"{b.op_name}/out", b.lbn) for b in self._bindings.values()
                   if b.lbn != f"{b.op_name}/out"]
        written += [(name, f"{name}/out", t._array.lbn) for name, t in self.inputs.items()
                    if t._array.lbn != f"{name}/out"]
        for target, ref, value in written:
            name = f"{target}-assign"
            conf = op_conf_pb2.OperatorConf(name=name, device_tag=self._device_tags[target])
            uc = conf.user_conf
            uc.op_type_name = "assign"
            uc.input["ref"].s.append(ref)
            uc.input["value"].s.append(value)
            uc.output["out"].s.append(f"{name}/out_0")
            uc.input_order.extend(["ref", "value"])
            uc.output_order.append("out")
            self.add_op(conf)
        if train:
            self.job.job_conf.train_conf.SetInParent()
        else:
            self.job.job_conf.predict_conf.SetInParent()

    def trainable_written(self) -> bool:
        """Whether an in-place op rebinds a variable that requires grad (a training job)."""
        return any(b.lbn != f"{b.op_name}/out" and b.saved[0] & _AG for b in self._bindings.values())

    def hide_grads(self, tensors) -> None:
        """Take the eager ``.grad`` of ``tensors`` away until the build ends, before any op binds them
        (Note [Eager tensors in a build]): e.g. a ``zero_grad(set_to_none=False)`` at the start of a
        build must not capture the eager gradient buffers."""
        for t in tensors:
            ag = t._ag
            if ag is not None and ag.grad is not None:
                self._hidden_grads.append((ag, ag.grad))
                ag.grad = None

    def restore_eager_state(self) -> None:
        """Undo the build's effect on the autograd state of bound eager tensors (Note [Eager tensors in a build])."""
        for b in self._bindings.values():
            b.restore()
        for ag, grad in self._hidden_grads:
            ag.grad = grad
        self._hidden_grads.clear()


_AG = 1 << DispatchKey.Autograd


# ---- lazy mode ------------------------------------------------------------------------------------
class _LazyState(threading.local):
    ctx = None


_state = _LazyState()


def current_build_ctx() -> JobBuildAndInferCtx | None:
    """The job this thread is capturing, or None."""
    return _state.ctx


class SameLayout:
    """The layout of a source op of a build: the planned placement and nd-SBP of blob ``lbn`` (Note [The layout
    of a *_like tensor in a graph])."""

    __slots__ = ("lbn",)

    def __init__(self, lbn: str):
        self.lbn = lbn

    def __repr__(self):
        return f"SameLayout({self.lbn!r})"


def capturing_ctx() -> JobBuildAndInferCtx | None:
    """The job the ops this thread dispatches now go to: None outside a build, and inside one while the Lazy
    key is excluded (eager state made during a build, e.g. an optimizer's zero buffers)."""
    return None if _tls.excluded & LAZY_KEY_SET else _state.ctx


class lazy_mode:
    """Capture every op this thread dispatches into ``ctx`` (Note [Lazy capture]); restores on exit."""

    __slots__ = ("_ctx", "_saved")

    def __init__(self, ctx: JobBuildAndInferCtx):
        self._ctx = ctx

    def __enter__(self):
        outer = _state.ctx
        if outer is not None:
            raise RuntimeError(f"nn.Graph '{self._ctx.graph_name}' cannot be captured inside the build() of "
                               f"nn.Graph '{outer.graph_name}'; call it outside, or call its modules directly")
        self._saved = _tls.included
        set_included(self._saved | LAZY_KEY_SET)
        _state.ctx = self._ctx
        self._ctx.is_open = True
        return self._ctx

    def __exit__(self, *exc):
        set_included(self._saved)
        _state.ctx = None
        self._ctx.is_open = False
        return False


def _outside_error(op_expr, inputs, outputs) -> RuntimeError:
    for t in (*inputs, *(outputs or ())):
        if t._key_set & LAZY_KEY_SET:
            return RuntimeError(f"{op_expr.op_type_name}: got a lazy tensor ({t._array.describe()}) outside its "
                                f"graph's build(); lazy tensors exist only while a graph is captured")
    return RuntimeError(f"{op_expr.op_type_name}: the Lazy dispatch key is set but no graph is being captured "
                        f"in this thread")


def lazy_interpreter(op_expr, ks, inputs, attrs, outputs):
    """Capture ``op_expr`` into the job being built (the boxed handler of the Lazy key)."""
    ctx = _state.ctx
    if ctx is None:
        raise _outside_error(op_expr, inputs, outputs)
    if type(op_expr) is UserOpExpr:
        return ctx.add_user_op(op_expr, inputs, attrs, outputs)
    run_forward = getattr(op_expr, "run_forward", None)  # a custom autograd.Function: capture its ops
    if run_forward is not None:
        return run_forward(inputs)
    raise RuntimeError(f"LazyInterpreter: {type(op_expr).__name__} ('{op_expr.op_type_name}') is not supported "
                       f"in graph capture (nn.Graph '{ctx.graph_name}')")


def register():
    """Register the interpreter as the fallback at the Lazy key; returns the handle."""
    return DISPATCHER.register_fallback(DispatchKey.Lazy, lazy_interpreter)


class LazyInterpreter:
    """OneFlow's name for the lazy handler (a namespace; the handler is a function)."""

    apply = staticmethod(lazy_interpreter)


__all__ = ["JobBuildAndInferCtx", "LazyBlob", "LazyInterpreter", "capturing_ctx", "current_build_ctx",
           "lazy_blob_of", "lazy_interpreter", "lazy_mode", "register"]
