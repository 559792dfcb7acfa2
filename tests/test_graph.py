"""flow.nn.Graph: capture, signatures, modules, nested inputs and outputs, training, introspection, errors.

References are NumPy formulas or eager execution of the same code (a graph must compute what eager
execution computes, bit for bit, since it runs the same kernels).
"""

import logging

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite._proto import job_pb2
from oneflow_lite.autograd import Function


class Module:
    """The part of PyTorch's Module API a graph relies on (flow.nn.Module does not exist yet)."""

    def __init__(self):
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._children[name] = value
        elif isinstance(value, flow.Tensor) and value.requires_grad:
            self._params[name] = value
        object.__setattr__(self, name, value)

    def register_buffer(self, name, t):
        self._buffers[name] = t
        object.__setattr__(self, name, t)

    def _named(self, table, prefix=""):
        for name, t in getattr(self, table).items():
            yield prefix + name, t
        for cname, child in self._children.items():
            yield from child._named(table, f"{prefix}{cname}.")

    def named_parameters(self):
        return self._named("_params")

    def named_buffers(self):
        return self._named("_buffers")

    def named_children(self):
        return iter(self._children.items())

    def parameters(self):
        return [t for _, t in self.named_parameters()]

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for child in self._children.values():
            child.train(mode)
        return self

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


_rng = np.random.default_rng(1)


def f64(values):
    return flow.tensor(np.asarray(values, dtype=np.float64))


class Linear(Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = f64(_rng.standard_normal((n_in, n_out)) * 0.5).requires_grad_()
        self.bias = f64(_rng.standard_normal(n_out) * 0.1).requires_grad_()

    def forward(self, x):
        return x @ self.weight + self.bias


class MLP(Module):
    def __init__(self):
        super().__init__()
        self.fc1 = Linear(3, 8)
        self.fc2 = Linear(8, 2)

    def forward(self, x):
        return self.fc2(flow.relu(self.fc1(x)))


def copy_params(src, dst):
    for (_, a), (_, b) in zip(src.named_parameters(), dst.named_parameters()):
        b.numpy()[...] = a.numpy()


class Infer(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.builds = 0

    def build(self, x):
        self.builds += 1
        return self.model(x)


def np_mlp(model, x):
    w1, b1, w2, b2 = [p.numpy() for p in model.parameters()]
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


# ---- modules, names, results ------------------------------------------------------------------------
def test_module_graph_computes_the_model_and_names_ops_by_module_path():
    model = MLP()
    g = Infer(model)
    x = _rng.standard_normal((4, 3))
    y = g(f64(x))
    assert isinstance(y, flow.Tensor) and not y.is_lazy and not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), model(f64(x)).numpy())
    np.testing.assert_allclose(y.numpy(), np_mlp(model, x), rtol=1e-12)
    names = [op.name for op in g.captured_job.net.op]
    assert names == ["_Infer_0_input.0" if g.name == "Infer_0" else f"_{g.name}_input.0", "model.fc1.weight",
                     "model.fc1-matmul-0", "model.fc1.bias", "model.fc1-broadcast_add-1", "model-relu-2",
                     "model.fc2.weight", "model.fc2-matmul-3", "model.fc2.bias", "model.fc2-broadcast_add-4",
                     f"_{g.name}_output"]
    trainable = {op.name: op.variable_conf.trainable for op in g.captured_job.net.op if op.HasField("variable_conf")}
    assert trainable == {"model.fc1.weight": True, "model.fc1.bias": True, "model.fc2.weight": True,
                         "model.fc2.bias": True}


def test_graph_names_count_per_class():
    a, b = Infer(MLP()), Infer(MLP())
    prefix, k = a.name.rsplit("_", 1)
    assert prefix == "Infer" and b.name == f"Infer_{int(k) + 1}"


def test_later_calls_with_the_same_signature_only_run(caplog):
    model = MLP()
    g = Infer(model)
    x1, x2 = _rng.standard_normal((4, 3)), _rng.standard_normal((4, 3))
    with caplog.at_level(logging.INFO, logger="oneflow_lite.graph"):
        g(f64(x1))
        y2 = g(f64(x2))
        assert g.builds == 1 and caplog.records == []
        np.testing.assert_allclose(y2.numpy(), np_mlp(model, x2), rtol=1e-12)
        y3 = g(f64(_rng.standard_normal((7, 3))))  # a new shape: captured again, cached beside the first
        assert g.builds == 2 and y3.shape == (7, 2)
        assert len(caplog.records) == 1
        assert "nn.Graph 'Infer_" in caplog.records[0].getMessage()
        assert "new input signature (float64[7, 3]); capturing and compiling it (2 signature(s) cached)" in \
            caplog.records[0].getMessage()
        g(f64(x1))
        g(f64(_rng.standard_normal((7, 3))))
        assert g.builds == 2 and len(caplog.records) == 1
        g(flow.tensor(x1.astype(np.float32)).double().requires_grad_())  # requires_grad is part of the signature
        assert g.builds == 3


def test_training_flag_is_part_of_the_signature():
    class Dropish(Module):
        def forward(self, x):
            return x * 2.0 if self.training else x

    class G(flow.nn.Graph):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def build(self, x):
            return self.m(x)

    m = Dropish()
    g = G(m)
    x = f64([1.0, 2.0])
    assert g(x).numpy().tolist() == [2.0, 4.0]
    m.train(False)
    assert g(x).numpy().tolist() == [1.0, 2.0]
    m.train(True)
    assert g(x).numpy().tolist() == [2.0, 4.0]


def test_submodule_lists_and_methods_run_through_blocks():
    class Stack(Module):
        def __init__(self):
            super().__init__()
            self.a = Linear(2, 2)
            self.b = Linear(2, 2)

        def blocks(self):
            return [self.a, self.b]

        def forward(self, x):
            for layer in self.blocks():
                x = layer(x)
            return x

    class G(flow.nn.Graph):
        def __init__(self, m):
            super().__init__()
            self.net = m

        def build(self, x):
            return self.net(x)

    m = Stack()
    g = G(m)
    x = f64([[1.0, -1.0]])
    np.testing.assert_array_equal(g(x).numpy(), m(x).numpy())
    ops = [op.name for op in g.captured_job.net.op if op.HasField("user_conf")]
    assert ops == ["net.a-matmul-0", "net.a-broadcast_add-1", "net.b-matmul-2", "net.b-broadcast_add-3"]
    assert repr(g.net) == "(MODULE:net:Stack)" and repr(g.net.a) == "(MODULE:net.a:Linear)"
    assert g.net.a.weight is m.a.weight  # outside a build, attribute reads reach the module


# ---- training -------------------------------------------------------------------------------------
def sgd_step(model, x, target, lr):
    d = model(x) - target
    loss = (d * d).sum() / x.shape[0]
    loss.backward()
    with flow.no_grad():
        for p in model.parameters():
            p.sub_(p.grad * lr)
            p.grad = None
    return loss


class TrainGraph(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x, target):
        return sgd_step(self.model, x, target, 0.05)


def test_mlp_trained_as_a_graph_matches_eager_training():
    eager, graphed = MLP(), MLP()
    copy_params(eager, graphed)
    g = TrainGraph(graphed)
    x = f64(_rng.standard_normal((16, 3)))
    target = f64(_rng.standard_normal((16, 2)))
    eager_losses, graph_losses = [], []
    for _ in range(20):
        eager_losses.append(sgd_step(eager, x, target, 0.05).item())
        graph_losses.append(g(x, target).item())
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=0, atol=1e-10)
    assert graph_losses[-1] < graph_losses[0] * 0.9  # it learns
    for (name, a), (_, b) in zip(eager.named_parameters(), graphed.named_parameters()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=0, atol=1e-10, err_msg=name)
    # the build leaves no lazy state on the parameters
    assert all(p.grad is None and p.requires_grad and p.is_leaf for p in graphed.parameters())
    assert g.job.job_conf.HasField("train_conf")
    assigns = [op.name for op in g.job.net.op if op.user_conf.op_type_name == "assign"]
    assert assigns == ["model.fc1.weight-assign", "model.fc1.bias-assign", "model.fc2.weight-assign",
                       "model.fc2.bias-assign"]


def test_eager_and_graph_steps_interleave_on_shared_parameters():
    eager, graphed = MLP(), MLP()
    copy_params(eager, graphed)
    g = TrainGraph(graphed)
    x = f64(_rng.standard_normal((8, 3)))
    target = f64(_rng.standard_normal((8, 2)))
    for step in range(6):
        le = sgd_step(eager, x, target, 0.05).item()
        lg = (g(x, target) if step % 2 else sgd_step(graphed, x, target, 0.05)).item()
        assert abs(le - lg) < 1e-12
    versions = [p._version for p in graphed.parameters()]
    g(x, target)
    assert [p._version for p in graphed.parameters()] == [v + 1 for v in versions]  # runs bump versions


def test_buffers_updated_in_place_inside_build_change_at_every_run():
    class Counter(Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", f64([0.0, 0.0]))

        def forward(self, x):
            with flow.no_grad():
                self.total.add_(x)
            return x * 1.0

    class G(flow.nn.Graph):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def build(self, x):
            return self.m(x)

    m = Counter()
    g = G(m)
    for _ in range(3):
        g(f64([1.0, 2.0]))
    assert m.total.numpy().tolist() == [3.0, 6.0]
    assert [op.name for op in g.job.net.op if op.HasField("variable_conf")] == ["m.total"]


def test_grads_returned_from_build_and_custom_functions():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensors
            return dy * x * x * 3.0

    w = f64([0.5, -1.0, 2.0]).requires_grad_()

    @flow.nn.Graph.trace
    def grad_of(x):
        loss = Cube.apply(x * w).sum()
        return flow.autograd.grad(loss, w)[0]

    x = np.array([1.0, 2.0, -3.0])
    got = grad_of(f64(x)).numpy()
    np.testing.assert_allclose(got, 3 * (x * w.numpy()) ** 2 * x, rtol=1e-12)
    assert w.grad is None


def test_random_ops_in_a_graph_draw_what_eager_draws():
    def noisy(x):
        return x + flow.rand(3, dtype=flow.float64) + flow.randn(3, dtype=flow.float64) * 0.0

    g = flow.nn.Graph.trace(noisy)
    x = f64([1.0, 2.0, 3.0])
    flow.manual_seed(7)
    eager = [noisy(x).numpy() for _ in range(3)]
    flow.manual_seed(7)
    graph = [g(x).numpy() for _ in range(3)]
    for a, b in zip(eager, graph):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(graph[0], graph[1])


# ---- inputs and outputs ---------------------------------------------------------------------------
def test_nested_inputs_and_outputs_keep_their_structure():
    @flow.nn.Graph.trace
    def f(pair, cfg, scale, nothing, *, extra):
        a, b = pair
        return {"sum": a + b * scale, "list": [cfg["x"] * 2.0, None, 3], "tuple": (extra,), "flag": True}

    a, b, c, e = f64([1.0]), f64([2.0]), f64([3.0]), f64([4.0])
    out = f((a, b), {"x": c}, 2.0, None, extra=e)
    assert set(out) == {"sum", "list", "tuple", "flag"} and out["flag"] is True
    assert out["sum"].numpy().tolist() == [5.0]
    assert out["list"][0].numpy().tolist() == [6.0] and out["list"][1:] == [None, 3]
    assert isinstance(out["tuple"], tuple) and out["tuple"][0].numpy().tolist() == [4.0]
    assert not np.shares_memory(out["tuple"][0].numpy(), e.numpy())  # outputs own their memory
    names = [op.name for op in f.captured_job.net.op if op.HasField("input_conf") or op.HasField("output_conf")]
    n = f.name
    assert names == [f"_{n}_input.0.0", f"_{n}_input.0.1", f"_{n}_input.1.x", f"_{n}_input.extra",
                     f"_{n}_output.sum", f"_{n}_output.list.0", f"_{n}_output.tuple.0"]
    assert f((a, b), {"x": c}, 3.0, None, extra=e)["sum"].numpy().tolist() == [7.0]  # a new scalar: new signature


def test_an_output_returned_twice_is_one_tensor():
    @flow.nn.Graph.trace
    def f(x):
        y = x + 1.0
        return y, y

    a, b = f(f64([1.0]))
    assert a is b


def test_unsupported_inputs_and_outputs_name_the_path_and_type():
    g = flow.nn.Graph.trace(lambda *args: args[0])
    with pytest.raises(TypeError, match=rf"nn.Graph '{g.name}': input '1.k' has type set; inputs may be Tensors, "
                                        r"None, Python scalars \(bool, int, float\) and tuples, lists and dicts"):
        g(f64([1.0]), {"k": {1, 2}})
    with pytest.raises(TypeError, match=r"input '0' is a dict with a key of type tuple"):
        g({(1, 2): f64([1.0])})
    h = flow.nn.Graph.trace(lambda x: {"out": [x, "text"]})
    with pytest.raises(TypeError, match=rf"nn.Graph '{h.name}': output 'out.1' has type str; outputs may be"):
        h(f64([1.0]))
    assert h._entries == {}


def test_in_place_ops_on_inputs_write_the_callers_tensor():
    def f(x):
        x.mul_(2.0)
        return x + 1.0

    g = flow.nn.Graph.trace(f)
    a, b = f64([1.0, 2.0]), f64([1.0, 2.0])
    for _ in range(2):
        ye = f(a)
        yg = g(b)
        np.testing.assert_array_equal(yg.numpy(), ye.numpy())
        np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert b.numpy().tolist() == [4.0, 8.0]


def test_free_eager_tensors_and_tensors_made_in_build():
    offset = f64([10.0, 20.0])

    @flow.nn.Graph.trace
    def f(x):
        return x + offset + flow.tensor([1.0, 2.0], dtype=flow.float64) * 3.0

    x = f64([1.0, 1.0])
    assert f(x).numpy().tolist() == [14.0, 27.0]
    offset.add_(1.0)  # an in-place write: the graph sees the new value
    assert f(x).numpy().tolist() == [15.0, 28.0]


# ---- errors ---------------------------------------------------------------------------------------
def test_reading_a_lazy_tensor_in_build_fails_and_leaves_no_state():
    w = f64([1.0, 2.0]).requires_grad_()

    class G(flow.nn.Graph):
        def build(self, x):
            y = (x * w).sum()
            y.backward()
            if y > 0:
                return y
            return -y

    g = G()
    with pytest.raises(RuntimeError, match=rf"Tensor.__bool__\(\): cannot read the value of a lazy tensor: it is "
                                           rf"'out_0' of op 'scalar_logical_greater-\d+' in nn.Graph '{g.name}'"):
        g(f64([1.0, 1.0]))
    assert g._entries == {} and w.grad is None and w.is_leaf
    with pytest.raises(RuntimeError, match=r"has not been captured yet: call it once first"):
        _ = g.job
    assert f64([1.0]).relu().numpy().tolist() == [1.0]  # eager execution is unaffected


def test_graph_api_errors():
    class NoBuild(flow.nn.Graph):
        pass

    g = NoBuild()
    with pytest.raises(NotImplementedError, match=rf"nn.Graph '{g.name}': a subclass of nn.Graph must implement "
                                                  r"build\(\*args\)"):
        g(f64([1.0]))
    with pytest.raises(TypeError, match=r"add_optimizer\(\): expected a flow\.optim\.Optimizer, got object"):
        g.add_optimizer(object())
    with pytest.raises(AttributeError, match=r"attribute '_entries' is reserved"):
        g._entries = {}
    g._mine = 1  # other private attributes are the subclass's own
    assert g._mine == 1

    class Forgetful(flow.nn.Graph):
        def __init__(self):
            self.x = 1

    with pytest.raises(RuntimeError, match=r"Forgetful: call super\(\).__init__\(\) first"):
        Forgetful()
    with pytest.raises(TypeError, match=r"nn.Graph.trace\(\): expected a function, got int"):
        flow.nn.Graph.trace(3)
    with pytest.raises(TypeError, match=r"enable_cse\(\): mode must be a bool, got int"):
        g.config.enable_cse(1)
    with pytest.raises(RuntimeError, match=r"save\(\): call the graph once"):
        g.save("/nonexistent/x.npz")


def test_graphs_cannot_be_nested_or_fed_lazy_tensors():
    inner = flow.nn.Graph.trace(lambda x: x * 2.0)
    inner(f64([1.0]))
    outer = flow.nn.Graph.trace(lambda x: inner(x))
    with pytest.raises(RuntimeError, match=rf"nn.Graph '{inner.name}': input '0' is a lazy tensor \('out' of op "
                                           rf"'_{outer.name}_input.0' in nn.Graph '{outer.name}'\); a graph's inputs "
                                           r"must be eager tensors"):
        outer(f64([1.0]))


# ---- introspection --------------------------------------------------------------------------------
def test_print_job_and_dot():
    model = MLP()
    g = Infer(model)
    g(f64(_rng.standard_normal((2, 3))))
    text = repr(g)
    assert text.startswith(f"nn.Graph '{g.name}' (Infer): 1 captured input signature(s); GraphConfig(cse=True")
    assert "  module model: MLP" in text
    assert "  signature (float64[2, 3]): 11 captured op(s)" in text
    assert "    module model.fc1:\n      model.fc1.weight: variable (trainable) -> model.fc1.weight/out: " \
           "float64[3, 8]\n      model.fc1-matmul-0: matmul(a=_" in text
    assert "model-relu-2: relu(x=model.fc1-broadcast_add-1/z_0) -> model-relu-2/y_0: float64[2, 8]" in text
    assert f"    outputs:\n      _{g.name}_output: output <- model.fc2-broadcast_add-4/z_0: float64[2, 2]" in text
    assert "    passes:\n      common-subexpression elimination: nothing merged" in text
    assert "      elementwise fusion: 1 chain(s) of 2 op(s) into 1 buffer(s)" in text
    assert isinstance(g.job, job_pb2.Job) and g.job.job_conf.job_name == g.name
    assert g.job.job_conf.HasField("predict_conf")
    dot = g.to_dot()
    assert dot.startswith(f'digraph "{g.name}" {{')
    assert '"model.fc1-matmul-0" [label="model.fc1-matmul-0\\nmatmul", shape=box];' in dot
    assert '"model.fc1.weight" -> "model.fc1-matmul-0" [label="float64[3, 8]"];' in dot
    assert "def _run(X0):" in g.plan_source
