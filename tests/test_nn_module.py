"""flow.nn.Module, flow.nn.Parameter, Tensor.data, the containers and nn.utils.clip_grad_*: registration,
iteration, modes, conversion, state dicts, hooks, reprs and errors, against PyTorch's documented behaviour
(values checked against NumPy computed in the tests)."""

import copy
import math
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn


def arr(t):
    return t.numpy().copy()


class Net(nn.Module):
    """Two linear layers, a BatchNorm (buffers), a non-persistent buffer and a plain attribute."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.register_buffer("step", flow.zeros(()))
        self.register_buffer("cache", flow.ones(2), persistent=False)
        self.scale = 2.0

    def forward(self, x):
        return self.fc2(flow.relu(self.bn(self.fc1(x)))) * self.scale


# ---- Parameter ------------------------------------------------------------------------------------
def test_parameter_is_a_tensor_sharing_storage():
    t = flow.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    assert isinstance(p, flow.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert not t.requires_grad
    t.add_(1.0)  # shares t's buffer
    np.testing.assert_array_equal(arr(p), [2.0, 3.0])
    assert not nn.Parameter(t, requires_grad=False).requires_grad


def test_parameter_repr_and_defaults():
    p = nn.Parameter(flow.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], dtype=oneflow_lite.float32, requires_grad=True)"
    empty = nn.Parameter()
    assert empty.shape == (0,) and empty.dtype == flow.float32 and empty.requires_grad


def test_parameter_works_with_ops_and_autograd():
    w = nn.Parameter(flow.tensor([[1.0, 2.0], [3.0, 4.0]]))
    x = flow.tensor([[1.0, -1.0]])
    y = (x @ w.T + w.sum()).sum()
    assert type(y) is flow.Tensor and type(w.detach()) is flow.Tensor
    y.backward()
    # y = sum_j (x @ w.T)_j + 2 * sum(w): d/dw[j, k] = x[0, k] + 2
    np.testing.assert_allclose(arr(w.grad), [[3.0, 1.0], [3.0, 1.0]])


def test_parameter_errors():
    with pytest.raises(TypeError, match="argument 'data' must be Tensor, not list"):
        nn.Parameter([1.0])
    with pytest.raises(TypeError, match="argument 'requires_grad' must be bool"):
        nn.Parameter(flow.ones(1), requires_grad=1)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        nn.Parameter(flow.tensor([1, 2]))
    assert not nn.Parameter(flow.tensor([1, 2]), requires_grad=False).requires_grad


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(flow.tensor([1.0, 2.0]))
    c = copy.deepcopy(p)
    assert type(c) is nn.Parameter and c.requires_grad and c is not p
    c.data.add_(1.0)
    np.testing.assert_array_equal(arr(p), [1.0, 2.0])
    q = pickle.loads(pickle.dumps(nn.Parameter(flow.tensor([3.0]), requires_grad=False)))
    assert type(q) is nn.Parameter and not q.requires_grad
    np.testing.assert_array_equal(arr(q), [3.0])


# ---- Tensor.data ----------------------------------------------------------------------------------
def test_tensor_data_getter_shares_buffer_without_autograd():
    p = nn.Parameter(flow.tensor([1.0, 2.0]))
    d = p.data
    assert type(d) is flow.Tensor and not d.requires_grad
    d.mul_(3.0)
    np.testing.assert_array_equal(arr(p), [3.0, 6.0])
    assert p._version == 0  # writes through .data are invisible to autograd


def test_tensor_data_setter_keeps_identity():
    p = nn.Parameter(flow.tensor([1.0, 2.0]))
    g = p.grad = flow.tensor([0.5, 0.5])
    p.data = flow.tensor([[1.0, 2.0, 3.0]], dtype=flow.float64)
    assert p.shape == (1, 3) and p.dtype == flow.float64 and p.requires_grad and type(p) is nn.Parameter
    assert p.grad is g  # .grad is left alone (Module.to converts it separately)
    p.grad = None
    (p * 2).sum().backward()
    np.testing.assert_array_equal(arr(p.grad), [[2.0, 2.0, 2.0]])
    with pytest.raises(TypeError, match="Tensor.data: expected a Tensor, got int"):
        p.data = 3
    with pytest.raises(RuntimeError, match="must hold floating point data, got int64"):
        p.data = flow.tensor([1])
    assert p.dtype == flow.float64


# ---- registration and attributes ------------------------------------------------------------------
def test_setattr_registers_parameters_modules_and_buffers():
    net = Net()
    assert list(net._parameters) == []
    assert list(net._modules) == ["fc1", "bn", "fc2"]
    assert list(net._buffers) == ["step", "cache"]
    assert net.scale == 2.0 and "scale" in net.__dict__
    m = nn.Module()
    m.w = nn.Parameter(flow.ones(2))
    m.t = flow.ones(2)  # a plain tensor attribute is not registered
    assert list(m._parameters) == ["w"] and "t" in m.__dict__ and m.w is m._parameters["w"]
    m.w = None  # a registered parameter may be set to None
    assert m._parameters["w"] is None and m.w is None
    m.w = nn.Parameter(flow.zeros(1))
    m.sub = nn.Linear(1, 1)
    m.sub = nn.ReLU()  # replacing a module
    assert isinstance(m._modules["sub"], nn.ReLU)
    m.x = 1
    m.x = nn.Parameter(flow.ones(1))  # a plain attribute becomes a parameter
    assert "x" not in m.__dict__ and "x" in m._parameters


def test_setattr_errors():
    m = nn.Module()
    m.w = nn.Parameter(flow.ones(2))
    with pytest.raises(TypeError, match=r"cannot assign 'oneflow_lite.FloatTensor' as parameter 'w' "
                                        r"\(flow.nn.Parameter or None expected\)"):
        m.w = flow.ones(2)
    m.sub = nn.ReLU()
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'sub'"):
        m.sub = 3
    m.register_buffer("b", flow.zeros(1))
    with pytest.raises(TypeError, match=r"cannot assign 'str' as buffer 'b' \(flow.Tensor or None expected\)"):
        m.b = "x"
    m.b = None
    assert m._buffers["b"] is None
    nonleaf = nn.Parameter(flow.ones(1)) * 2
    with pytest.raises(TypeError, match="cannot assign 'oneflow_lite.FloatTensor' object to parameter 'p'"):
        m.register_parameter("p", nonleaf)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(flow.ones(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()

    class EarlyModule(nn.Module):
        def __init__(self):
            self.l = nn.ReLU()

    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\) call"):
        EarlyModule()


def test_non_leaf_parameter_is_rejected():
    m = nn.Module()
    p = nn.Parameter(flow.ones(1))
    q = nn.Parameter.__new__(nn.Parameter, flow.ones(1))
    q._ag = (p * 2)._ag  # a Parameter object carrying a grad_fn
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'q'"):
        m.q = q
    assert "q" not in m._parameters and "q" not in m.__dict__


def test_register_buffer_and_parameter_errors():
    m = nn.Module()
    m.attr = 1
    with pytest.raises(KeyError, match="attribute 'attr' already exists"):
        m.register_buffer("attr", flow.ones(1))
    with pytest.raises(KeyError, match="buffer name can.+t contain"):
        m.register_buffer("a.b", flow.ones(1))
    with pytest.raises(KeyError, match="buffer name can.+t be empty string"):
        m.register_buffer("", flow.ones(1))
    with pytest.raises(TypeError, match="buffer name should be a string. Got int"):
        m.register_buffer(1, flow.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'list' object to buffer 'x' \(flow.Tensor or None"):
        m.register_buffer("x", [1.0])
    with pytest.raises(KeyError, match="attribute 'attr' already exists"):
        m.register_parameter("attr", nn.Parameter(flow.ones(1)))
    with pytest.raises(KeyError, match="parameter name can.+t contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="cannot assign 'oneflow_lite.FloatTensor' object to parameter 'x'"):
        m.register_parameter("x", flow.ones(1))
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(KeyError, match="module name can.+t contain \".\", got: a.b"):
        m.add_module("a.b", nn.ReLU())
    with pytest.raises(KeyError, match="attribute 'attr' already exists"):
        m.add_module("attr", nn.ReLU())
    with pytest.raises(AttributeError, match=r"cannot assign buffer before Module.__init__\(\) call"):
        nn.Module.__new__(nn.Module).register_buffer("b", None)
    assert list(m._parameters) == list(m._buffers) == list(m._modules) == []


def test_register_module_get_submodule_get_parameter_get_buffer():
    net = nn.Module()
    net.register_module("block", nn.Module())
    net.block.add_module("lin", nn.Linear(2, 2))
    net.block.register_buffer("buf", flow.zeros(1))
    net.block.register_parameter("p", nn.Parameter(flow.ones(1)))
    assert net.get_submodule("block.lin") is net.block.lin
    assert net.get_submodule("") is net
    assert net.get_parameter("block.lin.weight") is net.block.lin.weight
    assert net.get_parameter("block.p") is net.block.p
    assert net.get_buffer("block.buf") is net.block.buf
    with pytest.raises(AttributeError, match="Module has no attribute `nope`"):
        net.get_submodule("block.nope")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.get_submodule("block.lin.weight")
    with pytest.raises(AttributeError, match="`buf` is not an nn.Parameter"):
        net.get_parameter("block.buf")
    with pytest.raises(AttributeError, match="`p` is not a buffer"):
        net.get_buffer("block.p")


def test_getattr_delattr_dir():
    net = Net()
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        _ = net.nope
    assert "fc1" in dir(net) and "step" in dir(net) and "forward" in dir(net)
    del net.fc1
    del net.step
    del net.cache
    del net.scale
    assert "fc1" not in net._modules and "step" not in net._buffers and not hasattr(net, "scale")
    assert "cache" not in net._non_persistent_buffers_set
    m = nn.Linear(2, 2)
    del m.bias
    assert list(m._parameters) == ["weight"]


# ---- iteration ------------------------------------------------------------------------------------
def test_named_parameters_buffers_children_modules():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "bn.weight", "bn.bias",
                                                      "fc2.weight"]
    assert [p is q for p, q in zip(net.parameters(), [net.fc1.weight, net.fc1.bias, net.bn.weight,
                                                         net.bn.bias, net.fc2.weight])] == [True] * 5
    assert next(n for n, _ in net.named_parameters(prefix="model")) == "model.fc1.weight"
    assert list(net.named_parameters(recurse=False)) == []
    assert [n for n, _ in net.named_buffers()] == ["step", "cache", "bn.running_mean", "bn.running_var",
                                                   "bn.num_batches_tracked"]
    assert [n for n, _ in net.named_buffers(recurse=False)] == ["step", "cache"]
    assert len(list(net.buffers())) == 5
    assert [n for n, _ in net.named_children()] == ["fc1", "bn", "fc2"]
    assert list(net.children()) == [net.fc1, net.bn, net.fc2]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "bn", "fc2"]
    assert [n for n, _ in net.named_modules(prefix="m")] == ["m", "m.fc1", "m.bn", "m.fc2"]
    assert next(iter(net.modules())) is net


def test_shared_modules_and_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in seq.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in seq.named_parameters(remove_duplicate=False)] == ["0.weight", "0.bias", "2.weight",
                                                                            "2.bias"]
    assert [n for n, _ in seq.named_children()] == ["0", "1"]
    m = nn.Module()
    m.a = nn.Parameter(flow.ones(1))
    m.b = m.a  # one parameter under two names
    assert [n for n, _ in m.named_parameters()] == ["a"]
    assert list(m.state_dict()) == ["a", "b"]


# ---- modes ----------------------------------------------------------------------------------------
def test_train_eval_requires_grad_apply():
    net = Net()
    assert net.training and net.bn.training
    assert net.eval() is net
    assert not net.training and not net.fc1.training and not net.bn.training
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    assert all(p.requires_grad for p in net.parameters())
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "BatchNorm1d", "Linear", "Net"]


def test_zero_grad():
    lin = nn.Linear(2, 1)
    lin(flow.ones(1, 2)).sum().backward()
    lin.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(arr(lin.weight.grad), [[0.0, 0.0]])
    np.testing.assert_array_equal(arr(lin.bias.grad), [0.0])
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_forward_runs_and_missing_forward_error():
    net = Net().eval()
    x = flow.randn(5, 3)
    w1, b1, w2 = arr(net.fc1.weight), arr(net.fc1.bias), arr(net.fc2.weight)
    h = x.numpy() @ w1.T + b1
    h = np.maximum(h / np.sqrt(1.0 + 1e-5), 0)  # eval BatchNorm with fresh running stats (0, 1)
    np.testing.assert_allclose(arr(net(x)), 2.0 * h @ w2.T, rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(x)


# ---- conversion ----------------------------------------------------------------------------------
def test_to_dtype_converts_parameters_in_place():
    net = Net()
    params = list(net.parameters())
    before = [arr(p) for p in params]
    net.fc1(flow.ones(1, 3)).sum().backward()
    assert net.to(flow.float64) is net
    assert [p is q for p, q in zip(net.parameters(), params)] == [True] * 5  # an optimizer's references stay valid
    for p, b in zip(params, before):
        assert p.dtype == flow.float64 and type(p) is nn.Parameter and p.requires_grad
        np.testing.assert_array_equal(arr(p), b.astype(np.float64))
    assert net.fc1.weight.grad.dtype == flow.float64
    assert net.step.dtype == flow.float64 and net.bn.running_mean.dtype == flow.float64
    assert net.bn.num_batches_tracked.dtype == flow.int64  # integer buffers keep their dtype
    out = net(flow.ones(2, 3, dtype=flow.float64))
    assert out.dtype == flow.float64
    net.float()
    assert all(p.dtype == flow.float32 for p in net.parameters())
    net.double()
    assert all(p.dtype == flow.float64 for p in net.parameters())
    net.to(flow.ones(1))  # to(tensor): its dtype
    assert all(p.dtype == flow.float32 for p in net.parameters())
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got "
                                        "desired dtype=oneflow_lite.int64"):
        net.to(flow.int64)


def test_to_device_and_cpu():
    lin = nn.Linear(2, 3)
    w = lin.weight
    lin.to("meta")
    assert lin.weight is w and w.device.type == "meta" and lin.bias.device.type == "meta"
    assert lin(flow.ones(4, 2, device="meta")).shape == (4, 3)
    lin.to_empty(device="cpu")
    assert w.device.type == "cpu" and w.shape == (3, 2)
    lin.cpu()
    assert w.device.type == "cpu"


# ---- state dict ----------------------------------------------------------------------------------
def test_state_dict_keys_values_and_sharing():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["step", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "bn.running_mean",
                        "bn.running_var", "bn.num_batches_tracked", "fc2.weight"]
    assert all(type(v) is flow.Tensor and not v.requires_grad for v in sd.values())
    sd["fc1.weight"].zero_()  # detached, but sharing memory with the module
    np.testing.assert_array_equal(arr(net.fc1.weight), np.zeros((4, 3)))
    kept = net.state_dict(keep_vars=True)
    assert kept["fc1.weight"] is net.fc1.weight and kept["step"] is net.step
    assert next(iter(net.state_dict(prefix="m."))) == "m.step"
    dest = {}
    assert net.state_dict(destination=dest) is dest and len(dest) == 9
    with pytest.warns(UserWarning, match="Positional args are being deprecated"):
        assert next(iter(net.state_dict(None, "p."))) == "p.step"


def test_state_dict_round_trip():
    src, dst = Net(), Net()
    src.train()(flow.randn(6, 3))  # moves the running statistics
    src.step.fill_(7.0)
    result = dst.load_state_dict(src.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (name, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        np.testing.assert_array_equal(arr(a), arr(b), err_msg=name)
    assert int(dst.bn.num_batches_tracked) == 1 and float(dst.step) == 7.0
    x = flow.randn(4, 3)
    np.testing.assert_array_equal(arr(src.eval()(x)), arr(dst.eval()(x)))
    assert dst.fc1.weight.requires_grad  # copied into, not replaced


def test_load_state_dict_strict_errors_name_the_keys_and_change_nothing():
    net = Net()
    before = {k: arr(v) for k, v in net.state_dict().items()}
    sd = Net().state_dict()
    del sd["fc1.bias"]
    sd["fc3.weight"] = flow.ones(1)
    sd["fc1.extra"] = flow.ones(1)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    assert str(info.value) == ("Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "
                               "\"fc1.bias\". \n\tUnexpected key(s) in state_dict: \"fc3.weight\", \"fc1.extra\". ")
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(arr(v), before[k], err_msg=k)
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["fc3.weight", "fc1.extra"]
    assert repr(result) == ("_IncompatibleKeys(missing_keys=['fc1.bias'], unexpected_keys=['fc3.weight', "
                            "'fc1.extra'])")
    np.testing.assert_array_equal(arr(net.fc1.weight), arr(sd["fc1.weight"]))  # the rest was loaded


def test_load_state_dict_shape_mismatch_and_bad_values():
    net = Net()
    before = arr(net.fc1.bias)
    sd = Net().state_dict()
    sd["fc2.weight"] = flow.ones(3, 3)
    sd["step"] = [1.0]
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd, strict=False)
    msg = str(info.value)
    assert "size mismatch for fc2.weight: copying a param with shape oneflow_lite.Size([3, 3]) from checkpoint, " \
           "the shape in current model is oneflow_lite.Size([2, 4])." in msg
    assert 'While copying the parameter named "step", expected flow.Tensor from checkpoint but received ' \
           "<class 'list'>" in msg
    np.testing.assert_array_equal(arr(net.fc1.bias), before)  # nothing was copied
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        net.load_state_dict([1])


def test_load_state_dict_casts_and_assign():
    lin = nn.Linear(2, 2)
    w = lin.weight
    sd = {"weight": flow.ones(2, 2, dtype=flow.float64), "bias": flow.tensor([1, 2])}
    lin.load_state_dict(sd)
    assert lin.weight is w and w.dtype == flow.float32
    np.testing.assert_array_equal(arr(lin.bias), [1.0, 2.0])
    new_w = flow.full((2, 2), 3.0)
    lin.load_state_dict({"weight": new_w, "bias": flow.zeros(2)}, assign=True)
    assert lin.weight is not w and type(lin.weight) is nn.Parameter and lin.weight.requires_grad
    new_w.fill_(4.0)  # assign shares the given tensor's buffer
    np.testing.assert_array_equal(arr(lin.weight), np.full((2, 2), 4.0))


def test_load_state_dict_batchnorm_without_num_batches_tracked():
    bn = nn.BatchNorm1d(2)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    assert repr(bn.load_state_dict(sd)) == "<All keys matched successfully>"


# ---- hooks ----------------------------------------------------------------------------------------
def test_forward_hooks_modify_input_and_output_and_remove():
    lin = nn.Linear(2, 2)
    calls = []

    def pre(module, args):
        calls.append(("pre", module))
        return args[0] * 2  # a single value becomes the 1-tuple of args

    def post(module, args, output):
        calls.append(("post", tuple(args[0].shape)))
        return output + 1

    h1 = lin.register_forward_pre_hook(pre)
    h2 = lin.register_forward_hook(post)
    x = flow.ones(1, 2)
    expected = 2 * x.numpy() @ arr(lin.weight).T + arr(lin.bias) + 1
    np.testing.assert_allclose(arr(lin(x)), expected, rtol=1e-6)
    assert calls == [("pre", lin), ("post", (1, 2))]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(arr(lin(x)), expected - 1 - x.numpy() @ arr(lin.weight).T, rtol=1e-6)
    assert len(calls) == 2


def test_hook_order_prepend_kwargs_and_context_manager():
    m = nn.Identity()
    order = []
    m.register_forward_hook(lambda mod, a, out: order.append("a"))
    m.register_forward_hook(lambda mod, a, out: order.append("b"), prepend=True)

    def pre_kw(mod, args, kwargs):
        order.append("pre_kw")
        return args, kwargs

    m.register_forward_pre_hook(pre_kw, with_kwargs=True)
    seen = {}

    def post_kw(mod, args, kwargs, out):
        seen.update(kwargs)

    m.register_forward_hook(post_kw, with_kwargs=True)
    m(flow.ones(1))
    assert order == ["pre_kw", "b", "a"]

    class Kw(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    k = Kw()
    with k.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True):
        assert float(k(flow.ones(()))) == 3.0
    assert float(k(flow.ones(()))) == 1.0
    with pytest.raises(TypeError, match="hook must be callable, got int"):
        k.register_forward_hook(3)
    k.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, "
                                           r"new_kwargs\), but got 5"):
        k(flow.ones(()))


def test_always_call_hook_runs_when_forward_raises():
    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Bad()
    seen = []
    m.register_forward_hook(lambda mod, a, out: seen.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, a, out: seen.append("never"))
    with pytest.raises(ValueError, match="boom"):
        m(flow.ones(1))
    assert seen == [("always", None)]


# ---- backward hooks (Note [Module backward hooks]) --------------------------------------------------
def test_full_backward_hook_sees_argument_and_output_grads_and_may_replace_them():
    class Two(nn.Module):
        def forward(self, a, scale, b):
            return a * b * scale, a - b

    m, log = Two(), []

    def hook(mod, grad_input, grad_output):
        log.append(("hook", mod, [None if g is None else g.numpy() for g in grad_input],
                    [g.numpy() for g in grad_output]))
        return (grad_input[0] * 10, None, None)

    def pre_hook(mod, grad_output):
        log.append(("pre", [g.numpy() for g in grad_output]))
        return (grad_output[0] * 2, grad_output[1])

    m.register_full_backward_hook(hook)
    m.register_full_backward_pre_hook(pre_hook)
    a_np, b_np = np.array([1.0, -2.0, 0.5], np.float32), np.array([3.0, 1.0, -1.0], np.float32)
    a, b = flow.tensor(a_np, requires_grad=True), flow.tensor(b_np)
    y1, y2 = m(a, 3.0, b)
    (y1.sum() + (y2 * y2).sum()).backward()
    d1, d2 = np.ones(3), 2 * (a_np - b_np)  # dL/dy1, dL/dy2
    assert [entry[0] for entry in log] == ["pre", "hook"]
    np.testing.assert_allclose(log[0][1][0], d1)
    np.testing.assert_allclose(log[0][1][1], d2)
    _, mod, grad_input, grad_output = log[1]
    assert mod is m and len(grad_input) == 3 and grad_input[1] is None  # not a tensor
    np.testing.assert_array_equal(grad_input[2], np.zeros(3))  # b requires no grad: zeros, as PyTorch's
    np.testing.assert_allclose(grad_output[0], 2 * d1)  # the pre-hook's replacement
    np.testing.assert_allclose(grad_input[0], 2 * d1 * 3.0 * b_np + d2, rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), 10 * (2 * d1 * 3.0 * b_np + d2), rtol=1e-6)


def test_full_backward_hook_guided_backprop_grad_cam_and_removal():
    net = nn.Sequential(nn.Linear(2, 2, bias=False), nn.ReLU(), nn.Linear(2, 1, bias=False))
    with flow.no_grad():
        net[0].weight.copy_(flow.tensor([[1.0, -1.0], [2.0, 1.0]]))
        net[2].weight.copy_(flow.tensor([[-1.0, 3.0]]))
    x = flow.tensor([[1.0, 0.5]], requires_grad=True)  # hidden (0.5, 2.5): both units active
    handle = net[1].register_full_backward_hook(lambda mod, gi, go: (flow.clamp(gi[0], min=0.0),))
    net(x).sum().backward()
    # the grad reaching the ReLU's input is (-1, 3): clamped to (0, 3), then through W1^T
    np.testing.assert_allclose(x.grad.numpy(), [[0.0 * 1 + 3.0 * 2, 0.0 * -1 + 3.0 * 1]])
    handle.remove()
    x.grad = None
    net(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[-1.0 + 6.0, 1.0 + 3.0]])
    seen = []  # Grad-CAM: the gradient of the score with respect to a layer's output
    net[0].register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].numpy()))
    net(x).sum().backward()
    np.testing.assert_allclose(seen[0], [[-1.0, 3.0]])


def test_full_backward_hook_without_input_grad_runs_with_none_and_checks_results():
    lin = nn.Linear(3, 2)
    seen = []
    lin.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go[0].shape)))
    lin(flow.ones(4, 3)).sum().backward()  # only the parameters require grad
    assert seen == [((None,), (4, 2))]
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.full((2, 3), 4.0))
    bad = nn.Linear(3, 2)
    bad.register_full_backward_hook(lambda mod, gi, go: (flow.ones(4, 3),))
    with pytest.raises(RuntimeError, match="no input requires gradient should always return None"):
        bad(flow.ones(4, 3)).sum().backward()
    wrong = nn.Linear(3, 2)
    wrong.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, but "
                                           "expected 1"):
        wrong(flow.ones(4, 3, requires_grad=True)).sum().backward()
    with flow.no_grad():  # nothing recorded: the call is not wrapped
        assert not lin(flow.ones(1, 3, requires_grad=True)).requires_grad


# ---- weight_norm / spectral_norm (Note [Weight reparametrisation hooks]) --------------------------------
def test_weight_norm_reparametrises_and_removes():
    w = np.array([[3.0, 4.0, 0.0], [1.0, -2.0, 2.0]], np.float32)
    lin = nn.Linear(3, 2)
    with flow.no_grad():
        lin.weight.copy_(flow.tensor(w))
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        nn.utils.weight_norm(lin)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(lin.weight_g.numpy(), [[5.0], [3.0]])  # the row norms (dim=0)
    with flow.no_grad():
        lin.weight_g.copy_(flow.tensor([[1.0], [6.0]]))
    x = flow.ones(1, 3)
    lin(x).sum().backward()  # the pre-hook recomputes weight = g v / ||v||
    np.testing.assert_allclose(lin.weight.detach().numpy(), [[0.6, 0.8, 0.0], [2.0, -4.0, 4.0]], rtol=1e-6)
    np.testing.assert_allclose(lin.weight_g.grad.numpy(), (w / np.linalg.norm(w, axis=1, keepdims=True)).sum(1,
                               keepdims=True), rtol=1e-6)  # d(sum W x)/dg = sum of the unit row
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on "
                                                                       "the same parameter weight"):
        nn.utils.weight_norm(lin)
    nn.utils.remove_weight_norm(lin)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"] and not lin._forward_pre_hooks
    np.testing.assert_allclose(lin.weight.detach().numpy(), [[0.6, 0.8, 0.0], [2.0, -4.0, 4.0]], rtol=1e-6)
    with pytest.warns(FutureWarning):
        conv = nn.utils.weight_norm(nn.Conv1d(2, 3, 2), dim=None)  # one norm of the whole weight
    assert tuple(conv.weight_g.shape) == ()
    with pytest.raises(ValueError, match="weight_norm of 'bias' not found"):
        nn.utils.remove_weight_norm(conv, "bias")


def test_spectral_norm_divides_by_the_largest_singular_value():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    lin = nn.Linear(4, 3)
    with flow.no_grad():
        lin.weight.copy_(flow.tensor(w))
    nn.utils.spectral_norm(lin, n_power_iterations=2)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight_orig"]
    assert sorted(n for n, _ in lin.named_buffers()) == ["weight_u", "weight_v"]
    x = flow.ones(1, 4)
    for _ in range(30):  # the power method converges to the top singular vectors
        lin(x)
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(lin.weight.detach().numpy(), w / sigma, rtol=1e-4)
    lin.eval()  # no power iteration in eval mode
    u = lin.weight_u.numpy().copy()
    lin(x)
    np.testing.assert_array_equal(lin.weight_u.numpy(), u)
    lin.train()
    lin(x).sum().backward()
    assert lin.weight_orig.grad is not None and tuple(lin.weight_orig.grad.shape) == (3, 4)
    assert tuple(nn.utils.spectral_norm(nn.ConvTranspose2d(2, 3, 2)).weight_u.shape) == (3,)  # dim 1
    nn.utils.remove_spectral_norm(lin)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"] and not list(lin.named_buffers())
    np.testing.assert_allclose(lin.weight.detach().numpy(), w / sigma, rtol=1e-4)


def test_register_parametrization_computes_on_access_and_assigns_through_right_inverse():
    from oneflow_lite.nn.utils import parametrize as P

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    class Scale(nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, X):
            return X / 2

    w = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    lin = nn.Linear(3, 3, bias=False)
    with flow.no_grad():
        lin.weight.copy_(flow.tensor(w))
    original = lin.weight
    P.register_parametrization(lin, "weight", Symmetric())
    sym = np.triu(w) + np.triu(w, 1).T
    np.testing.assert_array_equal(lin.weight.detach().numpy(), sym)
    assert list(lin.state_dict()) == ["parametrizations.weight.original"] and P.is_parametrized(lin, "weight")
    assert lin.parametrizations.weight.original is original  # optimizers holding it keep working
    lin(flow.ones(1, 3)).sum().backward()  # d sum(x W^T)/dW_ij = 1 for every entry of the symmetric W
    np.testing.assert_array_equal(original.grad.numpy(), np.triu(np.ones((3, 3))) + np.triu(np.ones((3, 3)), 1))
    with pytest.raises(RuntimeError, match="parametrization Symmetric does not implement right_inverse"):
        lin.weight = flow.eye(3)
    P.register_parametrization(lin, "weight", Scale())  # chained
    np.testing.assert_array_equal(lin.weight.detach().numpy(), 2 * sym)
    with P.cached():
        assert lin.weight is lin.weight
    P.remove_parametrizations(lin, "weight")
    assert lin.weight is original and not P.is_parametrized(lin)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), 2 * sym)
    scaled = nn.Linear(2, 2, bias=False)
    P.register_parametrization(scaled, "weight", Scale())
    scaled.weight = flow.eye(2) * 4  # stored as right_inverse(value)
    np.testing.assert_array_equal(scaled.parametrizations.weight.original.detach().numpy(), 2 * np.eye(2))


def test_parametrizations_weight_norm_and_spectral_norm():
    from oneflow_lite.nn.utils import parametrizations, parametrize

    w = np.array([[3.0, 4.0], [0.0, -2.0]], np.float32)
    lin = nn.Linear(2, 2)
    with flow.no_grad():
        lin.weight.copy_(flow.tensor(w))
    parametrizations.weight_norm(lin)
    keys = ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert list(lin.state_dict()) == keys
    np.testing.assert_allclose(lin.parametrizations.weight.original0.numpy(), [[5.0], [2.0]])
    np.testing.assert_allclose(lin.weight.detach().numpy(), w, rtol=1e-6)
    parametrize.remove_parametrizations(lin, "weight")
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"]
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    sn = nn.Linear(4, 3)
    with flow.no_grad():
        sn.weight.copy_(flow.tensor(w))
    parametrizations.spectral_norm(sn)
    assert list(sn.state_dict()) == ["bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
                                     "parametrizations.weight.0._v"]
    for _ in range(30):
        sn(flow.ones(1, 4))
    np.testing.assert_allclose(sn.weight.detach().numpy(), w / np.linalg.svd(w, compute_uv=False)[0], rtol=1e-4)


# ---- repr -----------------------------------------------------------------------------------------
def test_nested_repr():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, stride=2, padding=1, bias=False)
            self.act = nn.LeakyReLU(0.2, inplace=True)

        def extra_repr(self):
            return "custom=1"

    model = nn.Sequential(OrderedDict(block=Block(), flat=nn.Flatten(), head=nn.Linear(8, 3)))
    assert repr(model) == (
        "Sequential(\n"
        "  (block): Block(\n"
        "    custom=1\n"
        "    (conv): Conv2d(1, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)\n"
        "    (act): LeakyReLU(negative_slope=0.2, inplace=True)\n"
        "  )\n"
        "  (flat): Flatten(start_dim=1, end_dim=-1)\n"
        "  (head): Linear(in_features=8, out_features=3, bias=True)\n"
        ")")
    assert repr(nn.Module()) == "Module()"
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh(), nn.ReLU()])) == (
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n  (3): ReLU()\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"


# ---- containers ----------------------------------------------------------------------------------
def test_sequential_indexing_slicing_and_editing():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    sub = seq[1:]
    assert type(sub) is nn.Sequential and list(sub._modules) == ["1", "2"] and sub[0] is b
    x = flow.randn(4, 2)
    expected = np.maximum(x.numpy() @ arr(a.weight).T + arr(a.bias), 0) @ arr(c.weight).T + arr(c.bias)
    np.testing.assert_allclose(arr(seq(x)), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    d = nn.Tanh()
    assert seq.append(d) is seq and seq[3] is d
    seq[1] = nn.Sigmoid()
    assert isinstance(seq[1], nn.Sigmoid)
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and seq[1] is c
    seq.insert(1, b)
    assert list(seq) == [a, b, c, d]
    assert seq.pop(-1) is d and len(seq) == 3
    seq.extend([nn.Identity()])
    assert len(seq) == 4
    both = nn.Sequential(a) + nn.Sequential(c)
    assert list(both) == [a, c]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        nn.Sequential(a) + [c]
    named = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert list(named._modules) == ["first", "second"] and named.first is a and named[1] is b
    assert nn.Sequential()(x) is x


def test_module_list():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and [n for n, _ in layers.named_parameters()][:2] == ["0.weight", "0.bias"]
    assert len(list(layers.parameters())) == 6
    extra = nn.ReLU()
    layers.append(extra)
    assert layers[-1] is extra and layers[3] is extra
    layers.insert(0, nn.Tanh())
    assert isinstance(layers[0], nn.Tanh) and list(layers._modules) == ["0", "1", "2", "3", "4"]
    del layers[0]
    assert list(layers._modules) == ["0", "1", "2", "3"] and layers[3] is extra
    assert type(layers[1:3]) is nn.ModuleList and len(layers[1:3]) == 2
    layers += [nn.Sigmoid()]
    assert len(layers) == 5 and layers.pop(4).__class__ is nn.Sigmoid
    layers[0] = nn.Identity()
    assert isinstance(layers[0], nn.Identity)
    with pytest.raises(IndexError, match="index 9 is out of range"):
        layers[9]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        layers.extend(3)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        layers.extend([nn.ReLU(), 3])
    assert len(layers) == 4  # a failed extend adds nothing
    with pytest.raises(NotImplementedError, match="missing the required \"forward\" function"):
        layers(flow.ones(1))


def test_module_dict():
    d = nn.ModuleDict({"lin": nn.Linear(2, 2), "act": nn.ReLU()})
    assert list(d) == ["lin", "act"] and len(d) == 2 and "lin" in d and isinstance(d["act"], nn.ReLU)
    assert list(d.keys()) == ["lin", "act"] and [type(v).__name__ for v in d.values()] == ["Linear", "ReLU"]
    d["out"] = nn.Tanh()
    d.update([("act", nn.Sigmoid())])
    assert list(d) == ["lin", "act", "out"] and isinstance(d.act, nn.Sigmoid)
    assert [n for n, _ in d.named_parameters()] == ["lin.weight", "lin.bias"]
    assert isinstance(d.pop("out"), nn.Tanh) and "out" not in d
    del d["act"]
    assert next(iter(d.items()))[0] == "lin"
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable of key/value pairs, "
                                        "but got int"):
        d.update(3)
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 3; 2 is required"):
        d.update([("a", nn.ReLU(), 1)])
    with pytest.raises(TypeError, match="ModuleDict update sequence element #0 should be Iterable; is int"):
        d.update([1])
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        d.update({"x": nn.ReLU(), "y": 3})
    assert list(d) == ["lin"]  # a failed update adds nothing
    d.clear()
    assert len(d) == 0


def test_deepcopy_module():
    net = Net()
    c = copy.deepcopy(net)
    assert c.fc1.weight is not net.fc1.weight and type(c.fc1.weight) is nn.Parameter
    np.testing.assert_array_equal(arr(c.fc1.weight), arr(net.fc1.weight))
    c.fc1.weight.data.zero_()
    assert np.abs(arr(net.fc1.weight)).sum() > 0


# ---- clip_grad ------------------------------------------------------------------------------------
def _with_grads(*grads):
    params = []
    for g in grads:
        p = nn.Parameter(flow.zeros(len(g)))
        p.grad = flow.tensor(g)
        params.append(p)
    return params


def test_clip_grad_norm_scales_by_the_total_norm():
    params = _with_grads([3.0, 4.0], [12.0])
    total = nn.utils.clip_grad_norm_(params, max_norm=6.5)
    assert math.isclose(float(total), 13.0, rel_tol=1e-6)  # sqrt(9 + 16 + 144)
    coef = 6.5 / (13.0 + 1e-6)
    np.testing.assert_allclose(arr(params[0].grad), [3.0 * coef, 4.0 * coef], rtol=1e-6)
    np.testing.assert_allclose(arr(params[1].grad), [12.0 * coef], rtol=1e-6)
    params = _with_grads([3.0, 4.0])
    nn.utils.clip_grad_norm_(params, max_norm=100.0)  # below the limit: unchanged
    np.testing.assert_allclose(arr(params[0].grad), [3.0, 4.0])


def test_clip_grad_norm_other_norms():
    params = _with_grads([3.0, -4.0], [1.0])
    total = nn.utils.clip_grad_norm_(params, 1.0, norm_type=float("inf"))
    assert float(total) == 4.0
    np.testing.assert_allclose(arr(params[0].grad), np.array([3.0, -4.0]) / (4.0 + 1e-6), rtol=1e-6)
    params = _with_grads([3.0, -4.0], [1.0])
    total = nn.utils.clip_grad_norm_(params, 4.0, norm_type=1)
    assert math.isclose(float(total), 8.0, rel_tol=1e-6)
    np.testing.assert_allclose(arr(params[1].grad), [4.0 / (8.0 + 1e-6)], rtol=1e-6)
    p = nn.Parameter(flow.zeros(1))
    assert float(nn.utils.clip_grad_norm_([p], 1.0)) == 0.0  # no grads
    single = _with_grads([6.0, 8.0])[0]
    assert math.isclose(float(nn.utils.clip_grad_norm_(single, 5.0)), 10.0, rel_tol=1e-6)  # a single tensor


def test_clip_grad_norm_nonfinite_and_errors():
    params = _with_grads([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(arr(params[0].grad), [float("inf"), 1.0])
    with pytest.raises(TypeError, match="clip_grad_norm_: parameters must be a Tensor or an iterable of Tensors, "
                                        "got int"):
        nn.utils.clip_grad_norm_(3, 1.0)
    with pytest.raises(TypeError, match="clip_grad_value_: parameters must be Tensors, got an element of type str"):
        nn.utils.clip_grad_value_(["x"], 1.0)


def test_clip_grad_value():
    params = _with_grads([3.0, -4.0, 0.5])
    assert nn.utils.clip_grad_value_(params, 1.0) is None
    np.testing.assert_array_equal(arr(params[0].grad), [1.0, -1.0, 0.5])


def test_clip_grad_norm_in_a_training_step():
    lin = nn.Linear(3, 1)
    x = flow.tensor([[10.0, 20.0, 30.0]])
    lin(x).sum().backward()
    g = np.concatenate([arr(lin.weight.grad).ravel(), arr(lin.bias.grad)])  # [10, 20, 30, 1]
    total = nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
    assert math.isclose(float(total), float(np.linalg.norm(g)), rel_tol=1e-6)
    np.testing.assert_allclose(arr(lin.weight.grad), [[10.0, 20.0, 30.0]] / (np.linalg.norm(g) + 1e-6), rtol=1e-5)


# ---- global module hooks (Note [Global module hooks] in nn/module.py) -----------------------------------------------
def test_global_module_hooks_run_for_every_module_before_its_own():
    import oneflow_lite as flow
    from oneflow_lite import nn
    from oneflow_lite.nn import module as module_mod

    calls = []
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    own = net[0].register_forward_pre_hook(lambda m, args: calls.append(("own pre", type(m).__name__)))
    pre = nn.register_module_forward_pre_hook(lambda m, args: calls.append(("pre", type(m).__name__)))
    post = nn.register_module_forward_hook(lambda m, args, out: calls.append(("post", type(m).__name__)))
    x = flow.ones(1, 2)
    net(x)
    assert calls == [("pre", "Sequential"), ("pre", "Linear"), ("own pre", "Linear"), ("post", "Linear"),
                     ("pre", "ReLU"), ("post", "ReLU"), ("post", "Sequential")]
    pre.remove()
    post.remove()
    own.remove()
    calls.clear()
    net(x)
    assert calls == [] and not module_mod._global_forward_pre_hooks and not module_mod._global_forward_hooks

    # results replace the arguments / output; with_kwargs; always_call sees a failing forward
    doubled = nn.register_module_forward_pre_hook(lambda m, args: (args[0] * 2,) if isinstance(m, nn.ReLU) else None)
    negated = nn.register_module_forward_hook(lambda m, args, kwargs, out: -out if isinstance(m, nn.ReLU) else None,
                                              with_kwargs=True)
    try:
        assert nn.ReLU()(flow.tensor([1.0, -1.0])).tolist() == [-2.0, -0.0]
    finally:
        doubled.remove()
        negated.remove()

    class Failing(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    handle = nn.register_module_forward_hook(lambda m, args, out: seen.append(out), always_call=True)
    try:
        with pytest.raises(ValueError, match="boom"):
            Failing()(x)
    finally:
        handle.remove()
    assert seen == [None]
    with pytest.raises(TypeError, match="hook must be callable"):
        nn.register_module_forward_hook(3)


def test_parameters_to_vector_and_back():
    m = flow.nn.Linear(3, 2)
    w, b = m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy()
    v = flow.nn.utils.parameters_to_vector(m.parameters())
    np.testing.assert_array_equal(v.detach().numpy(), np.concatenate([w.ravel(), b]))
    (v * flow.arange(8.0)).sum().backward()  # differentiable: each parameter gets its slice of the weights
    np.testing.assert_array_equal(m.weight.grad.numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(m.bias.grad.numpy(), [6.0, 7.0])
    vec = flow.arange(10.0, 18.0)
    flow.nn.utils.vector_to_parameters(vec, m.parameters())
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.arange(10.0, 16.0).reshape(2, 3))
    np.testing.assert_array_equal(m.bias.detach().numpy(), [16.0, 17.0])
    assert isinstance(m.weight, flow.nn.Parameter) and m.weight.requires_grad
    vec[0] = -1.0  # as PyTorch: the parameters now view vec's memory
    assert m.weight[0, 0].item() == -1.0
    with pytest.raises(TypeError, match="expected 'vec' to be a Tensor"):
        flow.nn.utils.vector_to_parameters([1.0], m.parameters())
    with pytest.raises(RuntimeError, match="'vec' has 7 elements, fewer than the parameters need"):
        flow.nn.utils.vector_to_parameters(flow.zeros(7), m.parameters())
    with pytest.raises(TypeError, match="expected an iterable of Tensors"):
        flow.nn.utils.parameters_to_vector(m.weight)


# ---- lazy modules (Note [Lazy modules]) -----------------------------------------------------------------
def test_lazy_modules_take_their_sizes_from_the_first_input_and_become_the_regular_class():
    from oneflow_lite.nn.parameter import UninitializedParameter
    model = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(),
                          nn.LazyLinear(2))
    assert isinstance(model[0].weight, UninitializedParameter) and isinstance(model[4].bias, UninitializedParameter)
    flow.manual_seed(0)
    y = model(flow.ones(2, 3, 5, 5))
    assert tuple(y.shape) == (2, 2)
    assert [type(m).__name__ for m in model] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    assert tuple(model[0].weight.shape) == (4, 3, 3, 3) and model[0].in_channels == 3
    assert tuple(model[1].running_mean.shape) == (4,) and model[1].num_features == 4
    assert tuple(model[4].weight.shape) == (2, 100) and model[4].in_features == 100
    assert type(model[4].weight) is nn.Parameter and not model[0]._forward_pre_hooks
    bound = 1 / math.sqrt(100)  # Linear's own initialisation ran on the materialised weight
    assert float(model[4].weight.abs().max()) <= bound and float(model[4].weight.abs().max()) > bound / 2
    np.testing.assert_array_equal(model[1].weight.numpy(), np.ones(4))
    opt = flow.optim.SGD(model.parameters(), lr=0.1)  # after the dry run, as in PyTorch
    model(flow.ones(2, 3, 5, 5)).sum().backward()
    opt.step()
    assert model[4].weight.grad.shape == (2, 100)
    t = nn.LazyConvTranspose1d(6, 2, groups=2)
    assert tuple(t(flow.ones(1, 4, 3)).shape) == (1, 6, 4) and tuple(t.weight.shape) == (4, 3, 2)
    unbatched = nn.LazyLinear(3, bias=False)
    unbatched(flow.ones(7))
    assert tuple(unbatched.weight.shape) == (3, 7) and unbatched.bias is None


# ---- pruning (Note [Pruning masks]) and the hook tables (Note [Hook tables]) ---------------------------------
def test_pruning_masks_reparametrise_and_the_tutorials_hook_lookup_works():
    from oneflow_lite.nn.utils import prune
    w = np.array([[0.1, -2.0, 0.3, 4.0], [-0.05, 1.0, -3.0, 0.2], [2.5, -0.4, 0.0, 1.5]], np.float32)
    lin = nn.Linear(4, 3)
    with flow.no_grad():
        lin.weight.copy_(flow.tensor(w))
    prune.l1_unstructured(lin, name="weight", amount=0.25)  # the 3 smallest magnitudes of 12
    expect = (np.abs(w) > 0.1).astype(np.float32)
    np.testing.assert_array_equal(lin.weight_mask.numpy(), expect)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight_orig"]
    lin(flow.ones(1, 4)).sum().backward()  # weight = weight_orig * mask: pruned entries get no gradient
    np.testing.assert_array_equal(lin.weight_orig.grad.numpy(), expect)
    prune.ln_structured(lin, name="weight", amount=1, n=2, dim=0)  # then the row of smallest L2 norm goes
    rows = np.linalg.norm(w * expect, axis=1)
    np.testing.assert_array_equal(lin.weight_mask.numpy(), expect * (rows != rows.min())[:, None])
    for hook in lin._forward_pre_hooks.values():  # as PyTorch's pruning tutorial inspects the history
        if hook._tensor_name == "weight":
            break
    assert [type(m).__name__ for m in hook] == ["L1Unstructured", "LnStructured"]
    prune.remove(lin, "weight")
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"] and not prune.is_pruned(lin)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), w * expect * (rows != rows.min())[:, None])
    a, b = nn.Linear(2, 2), nn.Linear(2, 1)
    with flow.no_grad():
        a.weight.copy_(flow.tensor([[1.0, -5.0], [0.5, 2.0]]))
        b.weight.copy_(flow.tensor([[-0.2, 3.0]]))
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=2)
    np.testing.assert_array_equal(a.weight_mask.numpy(), [[1, 1], [0, 1]])  # 0.5 and 0.2 across both layers
    np.testing.assert_array_equal(b.weight_mask.numpy(), [[0, 1]])
    with pytest.raises(ValueError, match="amount=1.5 should either be a float in the range"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(nn.Linear(2, 2), "weight")


def test_hook_tables_hold_the_hooks_and_their_flags_go_with_them():
    lin = nn.Linear(2, 2)
    plain = lin.register_forward_hook(lambda m, a, out: None)
    flagged = lin.register_forward_pre_hook(lambda m, a, kw: None, with_kwargs=True)
    assert all(callable(h) and not isinstance(h, tuple) for h in lin._forward_hooks.values())
    assert list(lin._hook_flags.values()) == [(True, False)]
    flagged.remove()
    plain.remove()
    assert not lin._forward_pre_hooks and not lin._forward_hooks and not lin._hook_flags


def test_fusing_batchnorm_into_conv_and_linear_keeps_the_eval_outputs():
    from oneflow_lite.nn.utils import fusion
    rng = np.random.default_rng(0)
    x = flow.tensor(rng.standard_normal((2, 3, 5, 5)).astype(np.float32))
    for conv, bn, transpose in ((nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), False),
                                (nn.ConvTranspose2d(3, 4, 2, bias=False), nn.BatchNorm2d(4), True)):
        with flow.no_grad():
            bn.running_mean.copy_(flow.tensor(rng.standard_normal(4).astype(np.float32)))
            bn.running_var.copy_(flow.tensor(rng.uniform(0.5, 2, 4).astype(np.float32)))
            bn.weight.copy_(flow.tensor(rng.standard_normal(4).astype(np.float32)))
            bn.bias.copy_(flow.tensor(rng.standard_normal(4).astype(np.float32)))
        conv.eval(), bn.eval()
        fused = fusion.fuse_conv_bn_eval(conv, bn, transpose=transpose)
        np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
        assert isinstance(fused.weight, nn.Parameter) and fused is not conv
    lin, bn1 = nn.Linear(3, 2).eval(), nn.BatchNorm1d(2).eval()
    with flow.no_grad():
        bn1.running_var.fill_(4.0)
        bn1.running_mean.fill_(1.0)
    v = flow.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    np.testing.assert_allclose(fusion.fuse_linear_bn_eval(lin, bn1)(v).detach().numpy(),
                               bn1(lin(v)).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="Fusion only works in eval mode"):
        fusion.fuse_conv_bn_eval(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        out = nn.utils.stateless.functional_call(lin, {"bias": flow.zeros(2)}, (v,))
    np.testing.assert_allclose(out.detach().numpy(), (v @ lin.weight.T).detach().numpy(), rtol=1e-6)
