"""``flow.utils.flop_counter.FlopCounterMode``: the FLOPs of matrix products, convolutions and attention,
forward and backward, against counts by hand (Note [FLOP formulas]); per-module counts; the table; and, when
PyTorch is installed, against ``torch.utils.flop_counter.FlopCounterMode`` on the same computations."""

from math import prod

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.utils.flop_counter import FlopCounterMode, flop_registry, register_flop_formula

_rng = np.random.default_rng(0)


def _f32(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


# name -> (build(lib, *tensors), input arrays, requires_grad per input, forward FLOPs, backward FLOPs by hand)
CASES = {
    # 2*m*k*n; backward: dA = dY @ B^T and dB = A^T @ dY, one product each per input requiring grad
    "mm": (lambda L, a, b: L.mm(a, b), [_f32(4, 5), _f32(5, 6)], [True, True], 2 * 4 * 5 * 6, 2 * 2 * 4 * 5 * 6),
    "mm_one_grad": (lambda L, a, b: L.mm(a, b), [_f32(4, 5), _f32(5, 6)], [True, False], 240, 240),
    "bmm": (lambda L, a, b: L.bmm(a, b), [_f32(3, 4, 5), _f32(3, 5, 6)], [True, True], 2 * 3 * 4 * 5 * 6,
            2 * 2 * 3 * 4 * 5 * 6),
    # broadcast batch dims (2, 1) and (4,): 8 products of (3, 5) @ (5, 6)
    "matmul_broadcast": (lambda L, a, b: a @ b, [_f32(2, 1, 3, 5), _f32(4, 5, 6)], [True, True],
                         2 * 8 * 3 * 5 * 6, 2 * 2 * 8 * 3 * 5 * 6),
    "matmul_nd_2d": (lambda L, a, b: a @ b, [_f32(2, 3, 5), _f32(5, 4)], [True, True], 2 * 6 * 5 * 4,
                     2 * 2 * 6 * 5 * 4),
    # a 1-D a is a (1, k) row; a 1-D b makes dot / mv, which PyTorch does not count
    "vector_matrix": (lambda L, a, b: a @ b, [_f32(5), _f32(5, 4)], [True, True], 2 * 5 * 4, 2 * 2 * 5 * 4),
    "dot": (lambda L, a, b: L.dot(a, b), [_f32(5), _f32(5)], [False, False], 0, 0),
    "mv": (lambda L, a, b: a @ b, [_f32(3, 5), _f32(5)], [False, False], 0, 0),
    # x (2, 3, 8) @ W^T (8, 5): 6 rows; the bias is not counted
    "linear": (lambda L, x, w, b: L.nn.functional.linear(x, w, b), [_f32(2, 3, 8), _f32(5, 8), _f32(5)],
               [True, True, True], 2 * 6 * 8 * 5, 2 * 2 * 6 * 8 * 5),
    "linear_weight_grad_only": (lambda L, x, w: L.nn.functional.linear(x, w), [_f32(7, 8), _f32(5, 8)],
                                [False, True], 2 * 7 * 8 * 5, 2 * 7 * 8 * 5),
    "linear_vector_input": (lambda L, x, w: L.nn.functional.linear(x, w), [_f32(8), _f32(5, 8)], [True, True],
                            2 * 8 * 5, 2 * 2 * 8 * 5),
    "baddbmm": (lambda L, i, a, b: L.baddbmm(i, a, b, alpha=2.0, beta=0.5), [_f32(3, 4, 6), _f32(3, 4, 5),
                                                                             _f32(3, 5, 6)],
                [True, True, True], 2 * 3 * 4 * 5 * 6, 2 * 2 * 3 * 4 * 5 * 6),
    # conv: 2 * N * prod(weight) * prod(out spatial); out (2, 6, 5, 5)
    "conv2d": (lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, stride=2, padding=1),
               [_f32(2, 2, 9, 9), _f32(6, 2, 3, 3), _f32(6)], [True, True, True],
               2 * 2 * 108 * 25,
               # grad input: 2 * N * prod(w) * prod(dy spatial); grad weight: 2 * prod(dy) * C_in * prod(kernel)
               2 * 2 * 108 * 25 + 2 * (2 * 6 * 25) * 2 * 9),
    # groups=2, dilation 2: out (2, 6, 5, 5); PyTorch's grad-weight count uses all C_in = 4 channels
    "conv2d_groups": (lambda L, x, w: L.nn.functional.conv2d(x, w, groups=2, dilation=2),
                      [_f32(2, 4, 9, 9), _f32(6, 2, 3, 3)], [False, True], 2 * 2 * 108 * 25,
                      2 * (2 * 6 * 25) * 4 * 9),
    "conv1d": (lambda L, x, w: L.nn.functional.conv1d(x, w, stride=3), [_f32(2, 3, 20), _f32(5, 3, 4)],
               [True, True], 2 * 2 * 60 * 6, 2 * 2 * 60 * 6 + 2 * (2 * 5 * 6) * 3 * 4),
    "conv3d": (lambda L, x, w: L.nn.functional.conv3d(x, w, padding=1), [_f32(1, 2, 5, 6, 7), _f32(3, 2, 3, 3, 3)],
               [True, True], 2 * 1 * 162 * 210, 2 * 1 * 162 * 210 + 2 * (3 * 210) * 2 * 27),
    # transposed: 2 * N * prod(w) * prod(input spatial); out (2, 3, 10, 10)
    "conv_transpose2d": (lambda L, x, w: L.nn.functional.conv_transpose2d(x, w, stride=2, padding=1,
                                                                           output_padding=1),
                         [_f32(2, 4, 5, 5), _f32(4, 3, 3, 3)], [True, True], 2 * 2 * 108 * 25,
                         # grad input: a conv of dy, over the input's spatial size; grad weight: 2 * prod(x) *
                         # C_out * prod(kernel)
                         2 * 2 * 108 * 25 + 2 * (2 * 4 * 25) * 3 * 9),
    "conv_transpose1d_groups": (lambda L, x, w: L.nn.functional.conv_transpose1d(x, w, stride=2, groups=2),
                                [_f32(2, 4, 7), _f32(4, 3, 3)], [True, True], 2 * 2 * 36 * 7,
                                2 * 2 * 36 * 7 + 2 * (2 * 4 * 7) * 6 * 3),
    "conv_transpose3d": (lambda L, x, w: L.nn.functional.conv_transpose3d(x, w, stride=2),
                         [_f32(1, 2, 3, 4, 3), _f32(2, 3, 2, 2, 2)], [True, True], 2 * 1 * 48 * 36,
                         2 * 1 * 48 * 36 + 2 * (1 * 2 * 36) * 3 * 8),
    # attention: Q @ K^T and P @ V, 2*B*H*L*S*(E + Ev); backward two products each
    "sdpa": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v),
             [_f32(2, 3, 5, 8), _f32(2, 3, 7, 8), _f32(2, 3, 7, 6)], [True, True, True],
             2 * 6 * 5 * 7 * (8 + 6), 2 * 2 * 6 * 5 * 7 * (8 + 6)),
    "sdpa_causal": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [_f32(2, 3, 5, 8), _f32(2, 3, 7, 8), _f32(2, 3, 7, 6)], [True, True, True],
                    2 * 6 * 5 * 7 * 14, 4 * 6 * 5 * 7 * 14),
    "sdpa_gqa": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                 [_f32(2, 4, 5, 8), _f32(2, 2, 7, 8), _f32(2, 2, 7, 6)], [True, True, True],
                 2 * 8 * 5 * 7 * 14, 4 * 8 * 5 * 7 * 14),
}


def _count(lib, counter_cls, build, arrays, grads):
    """(forward FLOPs, backward FLOPs) of ``build`` under ``counter_cls``."""
    tensors = [lib.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    with counter_cls(display=False) as counter:
        out = build(lib, *tensors)
        forward = counter.get_total_flops()
        if any(grads):
            out.sum().backward()
    return forward, counter.get_total_flops() - forward


@pytest.mark.parametrize("name", CASES)
def test_flops_by_hand(name):
    build, arrays, grads, forward, backward = CASES[name]
    assert _count(flow, FlopCounterMode, build, arrays, grads) == (forward, backward)


@pytest.mark.parametrize("name", CASES)
def test_flops_equal_pytorch(name):
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounterMode
    build, arrays, grads, _, _ = CASES[name]
    assert _count(flow, FlopCounterMode, build, arrays, grads) == _count(torch, TorchFlopCounterMode, build,
                                                                         arrays, grads)


def test_counts_by_op_type_and_backward_outside_is_not_counted():
    a, b = flow.tensor(_f32(4, 5), requires_grad=True), flow.tensor(_f32(5, 6))
    with FlopCounterMode(display=False) as fc:
        y = flow.relu(a @ b).sum()
    y.backward()
    assert fc.get_flop_counts() == {"Global": {"matmul": 240}}
    assert fc.get_total_flops() == 240


def _make_net(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(3, 4, 3)
            self.fc = lib.nn.Linear(4 * 6 * 6, 10)

        def forward(self, x):
            return self.fc(lib.relu(self.conv(x)).flatten(1))

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = lib.nn.Linear(10, 5)

        def forward(self, x):
            return self.head(self.block(x))

    return Net()


# x (2, 3, 8, 8); conv out (2, 4, 6, 6): forward 2*2*108*36 = 15552, weight grad 2*288*3*9 = 15552 (x needs no
# grad); fc (2 x 144 -> 10): 5760 forward, 2 * 5760 backward; head (2 x 10 -> 5): 200, 400
NET_COUNTS = {
    "Net.block.conv": {"conv2d": 15552, "conv_filter_grad": 15552},
    "Net.block.fc": {"linear": 5760, "matmul": 11520},
    "Net.head": {"linear": 200, "matmul": 400},
}


def test_per_module_counts():
    net = _make_net(flow)
    with FlopCounterMode(net, display=False) as fc:
        net(flow.tensor(_f32(2, 3, 8, 8))).sum().backward()
    counts = fc.get_flop_counts()
    for name, expected in NET_COUNTS.items():
        assert counts[name] == expected, name
    block = {"conv2d": 15552, "conv_filter_grad": 15552, "linear": 5760, "matmul": 11520}
    assert counts["Net.block"] == block
    total = {"conv2d": 15552, "conv_filter_grad": 15552, "linear": 5960, "matmul": 11920}
    assert counts["Net"] == counts["Global"] == total
    assert set(counts) == {"Global", "Net", "Net.block", "Net.block.conv", "Net.block.fc", "Net.head"}
    assert fc.get_total_flops() == 48984
    # the hooks are gone: running the model again counts nothing
    net(flow.tensor(_f32(2, 3, 8, 8))).sum().backward()
    assert fc.get_total_flops() == 48984


def test_per_module_counts_equal_pytorch():
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounterMode
    x = _f32(2, 3, 8, 8)
    net, tnet = _make_net(flow), _make_net(torch)
    with FlopCounterMode(net, display=False) as fc:
        net(flow.tensor(x)).sum().backward()
    with TorchFlopCounterMode(display=False) as tfc:
        tnet(torch.tensor(x)).sum().backward()
    ours = {k: sum(v.values()) for k, v in fc.get_flop_counts().items()}
    theirs = {k: sum(v.values()) for k, v in tfc.get_flop_counts().items()}
    assert ours == theirs


def test_table():
    net = _make_net(flow)
    with FlopCounterMode(net, display=False) as fc:
        net(flow.tensor(_f32(2, 3, 8, 8))).sum().backward()
    assert fc.get_table(depth=1).splitlines() == [
        "Module                  FLOP    % Total",
        "-------------------  -------  ---------",
        "Net                  48.984K    100.00%",
        " - conv2d            15.552K     31.75%",
        " - linear             5.960K     12.17%",
        " - matmul            11.920K     24.33%",
        " - conv_filter_grad  15.552K     31.75%",
    ]
    lines = fc.get_table().splitlines()  # depth 2 (the default) adds Net.block and Net.head, indented
    assert " Net.block            48.384K     98.78%" in lines and " Net.head              0.600K      1.22%" in lines


def test_table_without_modules_and_when_empty(capsys):
    a, b = flow.tensor(_f32(4, 5)), flow.tensor(_f32(5, 6))
    with FlopCounterMode():
        a @ b
    assert capsys.readouterr().out.splitlines() == [  # 240 has no suffix (PyTorch's get_suffix_str)
        "Module        FLOP    % Total",
        "---------  -------  ---------",
        "Global     240.000    100.00%",
        " - matmul  240.000    100.00%",
    ]
    with FlopCounterMode() as fc:
        flow.relu(a)
    assert fc.get_flop_counts() == {"Global": {}}  # as PyTorch's: the table read the (empty) Global counts
    assert capsys.readouterr().out.splitlines()[2] == "Global     0.000         0%"


def test_custom_mapping_and_register_flop_formula():
    x = flow.tensor(_f32(3, 4))
    with FlopCounterMode(display=False, custom_mapping={"relu": lambda x_shape, out_shape=None, **attrs:
                                                        prod(x_shape)}) as fc:
        flow.relu(x)
    assert fc.get_flop_counts() == {"Global": {"relu": 12}}
    assert "relu" not in flop_registry

    seen = []

    @register_flop_formula("reduce_sum", get_raw=True)
    def sum_flops(x, out_val=None, axis=(), keepdims=False):
        seen.append((type(x), tuple(out_val.shape), axis, keepdims))
        return x.numel()

    try:
        with FlopCounterMode(display=False) as fc:
            x.sum(dim=0)
        assert fc.get_flop_counts() == {"Global": {"reduce_sum": 12}}
        assert seen == [(flow.Tensor, (4,), (0,), False)]
        with pytest.raises(RuntimeError, match="duplicate registration for op 'reduce_sum'"):
            register_flop_formula("reduce_sum")(sum_flops)
    finally:
        del flop_registry["reduce_sum"]
    with pytest.raises(TypeError, match=r"register_flop_formula\(targets\): expected op type names \(str\)"):
        register_flop_formula([1])


def test_counter_errors_and_state():
    with pytest.raises(TypeError, match=r"FlopCounterMode\(mods=...\): expected an nn.Module or a list of them, got "
                                        r"int"):
        FlopCounterMode(3)
    fc = FlopCounterMode(display=False)
    with fc:
        with pytest.raises(RuntimeError, match="FlopCounterMode is not reentrant"):
            fc.__enter__()
    assert flow.dispatch.included() == 0 and flow.dispatch.excluded() == 0
    with pytest.raises(ValueError):
        with FlopCounterMode(display=False):
            raise ValueError
    assert flow.dispatch.included() == 0


# ---- without mods: every module, through the global module hooks (Note [Global module hooks]) ------------------------
def test_without_mods_every_module_is_counted_by_the_global_hooks():
    net = _make_net(flow)
    other = flow.nn.Linear(5, 3)  # a second root, named by its class
    with FlopCounterMode(display=False) as fc:
        other(net(flow.tensor(_f32(2, 3, 8, 8)))).sum().backward()
    counts = fc.get_flop_counts()
    for name, expected in NET_COUNTS.items():
        assert counts[name] == expected, name
    # (2 x 5 -> 3): forward 2*2*5*3 = 60; backward dx and dweight, 60 each
    assert counts["Linear"] == {"linear": 60, "matmul": 120}
    assert set(counts) == {"Global", "Net", "Net.block", "Net.block.conv", "Net.block.fc", "Net.head", "Linear"}
    assert fc.get_total_flops() == 48984 + 180 == sum(sum(counts[k].values()) for k in ("Net", "Linear"))
    # the global hooks are gone on exit
    from oneflow_lite.nn import module as module_mod
    assert not module_mod._global_forward_pre_hooks and not module_mod._global_forward_hooks
    net(flow.tensor(_f32(2, 3, 8, 8)))
    assert fc.get_total_flops() == 48984 + 180


def test_without_mods_the_table_shows_the_module_hierarchy(capsys):
    net = _make_net(flow)
    with FlopCounterMode(depth=3):
        net(flow.tensor(_f32(2, 3, 8, 8))).sum().backward()
    lines = capsys.readouterr().out.splitlines()
    modules = [line for line in lines[2:] if not line.strip().startswith("- ")]
    # Net holds every FLOP, so no Global row (PyTorch's rule); children indented by depth, sorted by name
    assert [line.split() for line in modules] == [["Net", "48.984K", "100.00%"], ["Net.block", "48.384K", "98.78%"],
                                                  ["Net.block.conv", "31.104K", "63.50%"],
                                                  ["Net.block.fc", "17.280K", "35.28%"],
                                                  ["Net.head", "0.600K", "1.22%"]]
    assert [len(m) - len(m.lstrip()) for m in modules] == [0, 1, 2, 2, 1]


def _both_counters_without_mods(torch):
    """Our FlopCounterMode and PyTorch's, without mods, after a forward and backward of the same net."""
    from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounterMode
    x = _f32(2, 3, 8, 8)
    net, tnet = _make_net(flow), _make_net(torch)
    with FlopCounterMode(display=False) as fc:
        net(flow.tensor(x)).sum().backward()
    with TorchFlopCounterMode(display=False) as tfc:
        tnet(torch.tensor(x)).sum().backward()
    return fc, tfc


def test_without_mods_per_module_counts_equal_pytorch():
    torch = pytest.importorskip("torch")
    fc, tfc = _both_counters_without_mods(torch)
    ours = {k: sum(v.values()) for k, v in fc.get_flop_counts().items()}
    theirs = {k: sum(v.values()) for k, v in tfc.get_flop_counts().items()}
    assert ours == theirs and set(ours) == {"Global", "Net", "Net.block", "Net.block.conv", "Net.block.fc",
                                            "Net.head"}


def test_without_mods_the_table_equals_pytorchs():
    torch = pytest.importorskip("torch")
    pytest.importorskip("tabulate")  # PyTorch's get_table needs it
    fc, tfc = _both_counters_without_mods(torch)

    def module_rows(table):  # the op rows name aten's ops there, this package's op types here
        return [line.split() for line in table.splitlines()[2:] if not line.strip().startswith("- ")]
    for depth in (1, 2, 3):
        assert module_rows(fc.get_table(depth)) == module_rows(tfc.get_table(depth)), depth
