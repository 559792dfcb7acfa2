"""nn.Graph.debug(v_level) prints (OneFlow's formats), print(graph)'s module tree, and the capture errors, which
name the graph, the module and the op."""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.nn.graph import GraphModule


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class G(nn.Graph):
    def __init__(self, model=None):
        super().__init__()
        self.model = model if model is not None else Net()

    def build(self, x):
        return self.model(x) * 2.0  # line 28: named by the ops' locations


def _run(level, **kwargs):
    g = G()
    if level is not None:
        g.debug(level, **kwargs)
    g(flow.randn(2, 3))
    return g


def test_debug_levels_print_stages_modules_and_ops_with_locations(capsys):
    _run(None)
    assert capsys.readouterr().out == ""
    g = _run(0)
    out = capsys.readouterr().out
    assert f"(GRAPH:{g.name}:G) start building graph.\n" in out
    assert f"(GRAPH:{g.name}:G) building graph Done! Cost time: " in out
    assert f"(GRAPH:{g.name}:G) building plan Done! Cost time: " in out
    assert "(MODULE:" not in out and "(OPERATOR:" not in out

    g = _run(1)
    out = capsys.readouterr().out
    assert "(MODULE:model:Net())\n(INPUT:_model_input.0.0:tensor(..., is_lazy='True', device='cpu:0', size=(2, 3), " \
           "dtype=oneflow_lite.float32))\n" in out
    assert "(PARAMETER:model.fc.weight:tensor(..., device='cpu:0', size=(4, 3), dtype=oneflow_lite.float32))" in out
    assert "(OUTPUT:_model.act_output.0.0:tensor(..., is_lazy='True', device='cpu:0', size=(2, 4), " in out
    assert f"(OUTPUT:_{g.name}_output:tensor(" in out and f"{g.name} with operators:\n" in out
    assert "(OPERATOR:" not in out

    g = _run(2)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("(OPERATOR: model.fc-linear-0("))
    assert line.startswith(f"(OPERATOR: model.fc-linear-0(_{g.name}_input.0/out:(size=(2, 3), dtype=(oneflow_lite."
                           f"float32)), model.fc.weight/out:(size=(4, 3), dtype=(oneflow_lite.float32)), ")
    # the innermost frames of user code: the module's forward, then build()
    assert "-> (model.fc-linear-0/out_0:(size=(2, 4), dtype=(oneflow_lite.float32))), location=(Python stack[-1]: " \
           "'forward' at '" in line and "test_graph_debug.py': line 19; Python stack[-2]: 'build' at '" in line
    assert line.endswith("test_graph_debug.py': line 28))")
    assert "(OPERATOR: scalar_mul-2(" in out


def test_debug_options(capsys):
    _run(2, ranks=[1])  # another rank prints
    assert capsys.readouterr().out == ""
    _run(2, ranks=-1, max_py_stack_depth=1)
    out = capsys.readouterr().out
    assert "Python stack[-1]" in out and "Python stack[-2]" not in out
    g = G()
    g.model.fc.to(GraphModule).debug(2)  # one module only
    g(flow.randn(2, 3))
    out = capsys.readouterr().out
    assert "(OPERATOR: model.fc-linear-0(" in out and "model.act-relu" not in out and "(GRAPH:" not in out
    g = _run(-1, op_repr_with_py_stack=True)
    assert capsys.readouterr().out == ""
    assert "model.fc-linear-0: linear(" in repr(g) and "  location=(Python stack[-1]: 'forward'" in repr(g)
    with pytest.raises(ValueError, match=r"debug\(\): v_level must be an int from -1 to 3, got 4"):
        g.debug(4)
    with pytest.raises(ValueError, match=r"ranks must be an int or a list of ints"):
        g.debug(0, ranks="0")


def test_print_graph_shows_the_module_tree_with_metas_after_the_first_call():
    g = G()
    before = repr(g)
    assert "  module model: Net\n    module model.fc: Linear\n    module model.act: ReLU" in before
    assert "(INPUT:" not in before
    g.model.act.to(GraphModule).activation_checkpointing = True
    g(flow.randn(5, 3))
    text = repr(g)
    assert ("  module model: Net\n"
            "    (INPUT:_model_input.0.0:tensor(..., is_lazy='True', device='cpu:0', size=(5, 3), "
            "dtype=oneflow_lite.float32))\n"
            "    module model.fc: Linear\n"
            "      (INPUT:_model.fc_input.0.0:tensor(..., is_lazy='True', device='cpu:0', size=(5, 3), "
            "dtype=oneflow_lite.float32))\n"
            "      (OUTPUT:_model.fc_output.0.0:tensor(..., is_lazy='True', device='cpu:0', size=(5, 4), "
            "dtype=oneflow_lite.float32))\n"
            "    module model.act: ReLU (activation_checkpointing=True)\n") in text
    assert "    (OUTPUT:_model_output.0.0:tensor(..., is_lazy='True', device='cpu:0', size=(5, 4)" in text


# ---- errors -----------------------------------------------------------------------------------------
def test_a_tensor_on_another_device_names_the_graph_module_and_op():
    class OnMeta(nn.Module):
        def __init__(self):
            super().__init__()
            self.offset = flow.zeros(3, device="meta")

        def forward(self, x):
            return x + self.offset

    g = G(OnMeta())
    with pytest.raises(RuntimeError, match=rf"nn.Graph '{g.name}', op 'model-broadcast_add-0' \(broadcast_add\): "
                                           r"expected all tensors to be on the same device, but found at least two "
                                           r"devices: cpu:0 \(input x_0, position 0") as info:
        g(flow.randn(2, 3))
    assert f"(in module 'model' (OnMeta) of nn.Graph '{g.name}')" in info.value.__notes__


def test_reading_a_lazy_tensor_names_the_graph_module_and_op():
    class Reads(nn.Module):
        def forward(self, x):
            y = x.relu()
            return y * float(y.sum().numpy())

    g = G(Reads())
    with pytest.raises(RuntimeError, match=rf"numpy\(\): cannot read the value of a lazy tensor: it is 'output_tensor_0' "
                                           rf"of op 'model-reduce_sum-1' in nn.Graph '{g.name}' while it is being "
                                           r"built") as info:
        g(flow.randn(2, 3))
    assert f"(in module 'model' (Reads) of nn.Graph '{g.name}')" in info.value.__notes__
    assert g._entries == {}


def test_values_that_cannot_be_captured_name_the_graph_and_the_path():
    g = G()
    with pytest.raises(TypeError, match=rf"nn.Graph '{g.name}': input '0' has type ndarray; inputs may be Tensors"):
        g(np.ones((2, 3), np.float32))

    class ReturnsObject(nn.Graph):
        def build(self, x):
            return {"y": x, "bad": object()}

    r = ReturnsObject()
    with pytest.raises(TypeError, match=rf"nn.Graph '{r.name}': output 'bad' has type object"):
        r(flow.ones(2))

    class PassesString(nn.Module):
        def forward(self, x):
            return flow.add(x, "one")

    with pytest.raises(TypeError) as info:
        G(PassesString())(flow.ones(2, 3))
    assert any("(in module 'model' (PassesString)" in n for n in info.value.__notes__)


def test_backward_without_an_optimizer_is_an_error_when_nothing_uses_the_gradients():
    class Forgot(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = Net()

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss

    g = Forgot()
    with pytest.raises(RuntimeError, match=rf"nn.Graph '{g.name}': build\(\) called backward\(\), but no optimizer "
                                           r"was added with add_optimizer\(\) and the gradients of 'model.fc.weight' "
                                           r"\(gradient '.*'\), 'model.fc.bias' \(gradient '.*'\) reach no output and "
                                           r"update no parameter; add the optimizer in __init__"):
        g(flow.randn(2, 3))
    assert all(p.grad is None for p in g.model.to(nn.Module).parameters())

    class Returns(Forgot):
        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss, self.model.fc.weight.grad.norm()  # the gradient is used: no error

    _, norm = Returns()(flow.randn(2, 3))
    assert norm.item() > 0


# ---- pictures -----------------------------------------------------------------------------------------
def test_to_dot_has_module_clusters_and_op_shapes():
    g = G()
    g(flow.randn(2, 3))
    dot = g.to_dot()
    assert dot.startswith(f'digraph "{g.name}" {{')
    assert '  subgraph "cluster_model" {\n    label="model (Net)";' in dot
    assert '    subgraph "cluster_model.fc" {\n      label="model.fc (Linear)";' in dot
    assert '      "model.fc-linear-0" [label="model.fc-linear-0\\nlinear", shape=box];\n' \
           '      "model.fc-linear-0" [xlabel="float32[2, 4]"];' in dot
    assert '      "model.fc.weight" [label="model.fc.weight\\nvariable", shape=cylinder];' in dot
    assert '  "model.act-relu-1" -> "scalar_mul-2" [label="float32[2, 4]"];' in dot
    assert dot.count("{") == dot.count("}")


def test_render_writes_pictures_or_says_what_to_install(tmp_path, monkeypatch):
    g = G()
    g(flow.randn(2, 3))
    try:
        import graphviz

        graphviz.Source("digraph { a }").pipe(format="svg")
        have_dot = True
    except Exception:  # noqa: BLE001 - the package or the dot program is missing
        have_dot = False
    if have_dot:
        svg = g.render(tmp_path / "g.svg")
        with open(svg) as f:
            assert f.read().lstrip().startswith(("<?xml", "<svg"))
        png = g.render(tmp_path / "g", format="png")
        with open(png, "rb") as f:
            assert png.endswith("g.png") and f.read(4) == b"\x89PNG"
    monkeypatch.setitem(__import__("sys").modules, "graphviz", None)  # the package absent
    with pytest.raises(RuntimeError, match=r"graph.render\(\) draws with the 'graphviz' Python package and Graphviz's "
                                           r"'dot' program: pip install graphviz.*\(the graphviz package is not "
                                           r"installed\)"):
        g.render(tmp_path / "x.svg")
