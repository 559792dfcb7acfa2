"""flow.nn recurrent layers (RNN, LSTM, GRU, their cells) and flow.nn.utils.rnn: outputs against a NumPy
implementation of PyTorch's equations written here, gradients against finite differences of that implementation
and gradcheck, packed sequences against running each sequence alone, parameter names / shapes / init, state
dicts (ours and PyTorch's), errors, nn.Graph capture, and PyTorch example scripts run unchanged."""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.nn.utils import rnn as rnn_utils

f64 = flow.float64


def arr(t):
    return t.numpy().astype(np.float64)


def close(t, expected, atol=1e-10, rtol=1e-8):
    np.testing.assert_allclose(arr(t), expected, atol=atol, rtol=rtol)


def uniform_params(m, low=-0.6, high=0.6):
    with flow.no_grad():
        for p in m.parameters():
            p.copy_(flow.tensor(np.random.uniform(low, high, p.shape)))
    return m


# ---- NumPy reference (PyTorch's equations, gates i, f, g, o and r, z, n) ------------------------------------
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_cell(mode, x, state, p):
    """One step of ``mode`` on x (N, in) from ``state`` (a tuple); ``p``: w_ih, w_hh, b_ih, b_hh, w_hr."""
    h = state[0]
    gi = x @ p["w_ih"].T + p.get("b_ih", 0.0)
    gh = h @ p["w_hh"].T + p.get("b_hh", 0.0)
    if mode == "RNN_TANH":
        return (np.tanh(gi + gh),)
    if mode == "RNN_RELU":
        return (np.maximum(gi + gh, 0.0),)
    if mode == "LSTM":
        c = state[1]
        hs = c.shape[-1]
        gates = gi + gh
        i, f = sigmoid(gates[:, :hs]), sigmoid(gates[:, hs:2 * hs])
        g, o = np.tanh(gates[:, 2 * hs:3 * hs]), sigmoid(gates[:, 3 * hs:])
        c = f * c + i * g
        h = o * np.tanh(c)
        if "w_hr" in p:
            h = h @ p["w_hr"].T
        return h, c
    hs = h.shape[-1]
    r = sigmoid(gi[:, :hs] + gh[:, :hs])
    z = sigmoid(gi[:, hs:2 * hs] + gh[:, hs:2 * hs])
    n = np.tanh(gi[:, 2 * hs:] + r * gh[:, 2 * hs:])
    return ((1 - z) * n + z * h,)


def layer_params(params, layer, direction):
    suffix = f"_l{layer}" + ("_reverse" if direction else "")
    keys = {"w_ih": "weight_ih", "w_hh": "weight_hh", "b_ih": "bias_ih", "b_hh": "bias_hh", "w_hr": "weight_hr"}
    return {k: params[v + suffix] for k, v in keys.items() if v + suffix in params}


def np_rnn(mode, x, params, num_layers, bidirectional, states, dropout_masks=None):
    """Time-major x (L, N, in); ``states``: tuple of (layers * directions, N, *) arrays; returns (output, finals).
    ``dropout_masks[k]`` multiplies the input of layer k + 1."""
    dirs = 2 if bidirectional else 1
    finals = [[] for _ in states]
    for layer in range(num_layers):
        if layer and dropout_masks is not None:
            x = x * dropout_masks[layer - 1]
        outs = []
        for d in range(dirs):
            p = layer_params(params, layer, d)
            state = tuple(s[layer * dirs + d] for s in states)
            out = [None] * len(x)
            for t in (reversed(range(len(x))) if d else range(len(x))):
                state = np_cell(mode, x[t], state, p)
                out[t] = state[0]
            outs.append(np.stack(out))
            for i, s in enumerate(state):
                finals[i].append(s)
        x = np.concatenate(outs, -1)
    return x, tuple(np.stack(f) for f in finals)


def np_params(m):
    return {name: arr(p) for name, p in m.named_parameters()}


def state_shapes(m, batch):
    dirs = 2 if m.bidirectional else 1
    hidden = m.proj_size if getattr(m, "proj_size", 0) else m.hidden_size
    shapes = [(m.num_layers * dirs, batch, hidden)]
    if m.mode == "LSTM":
        shapes.append((m.num_layers * dirs, batch, m.hidden_size))
    return shapes


def make(mode, *args, **kwargs):
    if mode.startswith("RNN"):
        return nn.RNN(*args, nonlinearity="tanh" if mode == "RNN_TANH" else "relu", **kwargs)
    return getattr(nn, mode)(*args, **kwargs)


MODES = ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"]


def run(m, x, states):
    """Call ``m`` with states as the module expects them; returns (output, tuple of final states)."""
    if states is None:
        out, hidden = m(x)
    elif m.mode == "LSTM":
        out, hidden = m(x, tuple(states))
    else:
        out, hidden = m(x, states[0])
    return out, (hidden if isinstance(hidden, tuple) else (hidden,))


# ---- construction -----------------------------------------------------------------------------------------
def test_parameter_names_shapes_order_and_init():
    lstm = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    names = [n for n, _ in lstm.named_parameters()]
    expected = [f"{kind}_l{layer}{suffix}" for layer in range(2) for suffix in ("", "_reverse")
                for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    assert names == expected == lstm._flat_weights_names
    shapes = {n: tuple(p.shape) for n, p in lstm.named_parameters()}
    assert shapes["weight_ih_l0"] == (20, 3) and shapes["weight_hh_l0_reverse"] == (20, 5)
    assert shapes["weight_ih_l1"] == (20, 10) and shapes["bias_hh_l1_reverse"] == (20,)
    assert [[tuple(p.shape) for p in ps] for ps in lstm.all_weights][2] == [(20, 10), (20, 5), (20,), (20,)]
    assert all(a is b for a, b in zip(lstm._flat_weights, lstm.parameters()))
    bound = 1 / math.sqrt(5)
    values = np.concatenate([arr(p).ravel() for p in lstm.parameters()])
    assert np.abs(values).max() <= bound and values.std() > bound / 3  # U(-1/sqrt(H), 1/sqrt(H)), not constant
    gru = nn.GRU(4, 6, bias=False)
    assert [(n, tuple(p.shape)) for n, p in gru.named_parameters()] == [("weight_ih_l0", (18, 4)),
                                                                       ("weight_hh_l0", (18, 6))]
    rnn = nn.RNN(4, 6, 1, "relu")
    assert rnn.nonlinearity == "relu" and rnn.mode == "RNN_RELU" and tuple(rnn.weight_ih_l0.shape) == (6, 4)
    proj = nn.LSTM(4, 6, 2, proj_size=3)
    assert [(n, tuple(p.shape)) for n, p in proj.named_parameters()][:5] == [
        ("weight_ih_l0", (24, 4)), ("weight_hh_l0", (24, 3)), ("bias_ih_l0", (24,)), ("bias_hh_l0", (24,)),
        ("weight_hr_l0", (3, 6))]
    assert tuple(proj.weight_ih_l1.shape) == (24, 3)
    assert isinstance(lstm, nn.RNNBase) and isinstance(nn.LSTMCell(2, 3), nn.RNNCellBase)
    cell = nn.GRUCell(3, 4, dtype=f64)
    assert [(n, tuple(p.shape)) for n, p in cell.named_parameters()] == [
        ("weight_ih", (12, 3)), ("weight_hh", (12, 4)), ("bias_ih", (12,)), ("bias_hh", (12,))]
    assert cell.weight_ih.dtype == f64
    assert nn.RNNCell(3, 4, bias=False).bias_ih is None


def test_reprs_defaults_and_helpers():
    assert repr(nn.LSTM(2, 3)) == "LSTM(2, 3)"
    assert repr(nn.LSTM(2, 3, 2, proj_size=2, bidirectional=True, batch_first=True, dropout=0.5)) == \
        "LSTM(2, 3, proj_size=2, num_layers=2, batch_first=True, dropout=0.5, bidirectional=True)"
    assert repr(nn.GRU(2, 3, bias=False)) == "GRU(2, 3, bias=False)"
    assert repr(nn.RNNCell(2, 3, nonlinearity="relu", bias=False)) == "RNNCell(2, 3, bias=False, nonlinearity=relu)"
    assert repr(nn.LSTMCell(2, 3)) == "LSTMCell(2, 3)"
    m = nn.GRU(2, 3)
    assert (m.num_layers, m.bias, m.batch_first, m.dropout, m.bidirectional, m.proj_size) == (1, True, False, 0.0,
                                                                                            False, 0)
    m.flatten_parameters()  # exists (a no-op here)
    before = arr(m.weight_hh_l0)
    m.reset_parameters()
    assert not np.array_equal(before, arr(m.weight_hh_l0))
    assert nn.modules.rnn.LSTM is nn.LSTM and nn.modules.rnn.RNNBase is nn.RNNBase


# ---- forward against NumPy -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("num_layers", "bidirectional", "batch_first", "with_states"),
                         [(1, False, False, False), (2, False, True, True), (2, True, False, True),
                          (1, True, True, False)])
def test_forward_matches_numpy(mode, num_layers, bidirectional, batch_first, with_states):
    m = uniform_params(make(mode, 3, 4, num_layers, batch_first=batch_first, bidirectional=bidirectional,
                            dtype=f64))
    x = np.random.randn(5, 2, 3)
    states = [np.random.randn(*s) for s in state_shapes(m, 2)] if with_states else None
    x_in = x.transpose(1, 0, 2) if batch_first else x
    out, finals = run(m, flow.tensor(x_in), None if states is None else [flow.tensor(s) for s in states])
    ref_states = states or [np.zeros(s) for s in state_shapes(m, 2)]
    ref, ref_finals = np_rnn(mode, x, np_params(m), num_layers, bidirectional, tuple(ref_states))
    close(out, ref.transpose(1, 0, 2) if batch_first else ref)
    assert len(finals) == len(ref_finals)
    for got, want in zip(finals, ref_finals):
        close(got, want)


def test_lstm_projection_matches_numpy():
    m = uniform_params(nn.LSTM(3, 5, 2, proj_size=2, bidirectional=True, dtype=f64))
    x = np.random.randn(4, 3, 3)
    h0, c0 = np.random.randn(4, 3, 2), np.random.randn(4, 3, 5)
    out, (h, c) = m(flow.tensor(x), (flow.tensor(h0), flow.tensor(c0)))
    ref, (rh, rc) = np_rnn("LSTM", x, np_params(m), 2, True, (h0, c0))
    assert out.shape == (4, 3, 4) and h.shape == (4, 3, 2) and c.shape == (4, 3, 5)
    close(out, ref)
    close(h, rh)
    close(c, rc)
    zero_out, (zh, _) = m(flow.tensor(x))
    close(zero_out, np_rnn("LSTM", x, np_params(m), 2, True, (np.zeros((4, 3, 2)), np.zeros((4, 3, 5))))[0])
    assert zh.shape == (4, 3, 2)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input(mode, batch_first):
    m = uniform_params(make(mode, 3, 4, 2, bidirectional=True, batch_first=batch_first, dtype=f64))
    x = np.random.randn(5, 3)
    states = [np.random.randn(*s)[:, 0] for s in state_shapes(m, 1)]
    out, finals = run(m, flow.tensor(x), [flow.tensor(s) for s in states])
    ref, ref_finals = np_rnn(mode, x[:, None], np_params(m), 2, True, tuple(s[:, None] for s in states))
    assert out.shape == (5, 8)
    close(out, ref[:, 0])
    for got, want in zip(finals, ref_finals):
        assert got.shape == want[:, 0].shape
        close(got, want[:, 0])
    out0, finals0 = run(m, flow.tensor(x), None)
    close(out0, np_rnn(mode, x[:, None], np_params(m), 2, True,
                       tuple(np.zeros(s) for s in state_shapes(m, 1)))[0][:, 0])
    assert finals0[0].shape == (4, 4)


def test_dropout_applies_between_layers_in_training_only():
    m = uniform_params(nn.GRU(3, 4, num_layers=3, dropout=1.0, dtype=f64))  # p=1: every layer input after the first is 0
    x = np.random.randn(4, 2, 3)
    zeros = (np.zeros((3, 2, 4)),)
    eval_ref = np_rnn("GRU", x, np_params(m), 3, False, zeros)[0]
    drop_all = [np.zeros((4, 2, 4))] * 2
    train_ref = np_rnn("GRU", x, np_params(m), 3, False, zeros, dropout_masks=drop_all)[0]
    assert not np.allclose(eval_ref, train_ref)
    close(m(flow.tensor(x))[0], train_ref)  # the last layer's output is not dropped
    m.eval()
    close(m(flow.tensor(x))[0], eval_ref)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got "
                                         "dropout=0.5 and num_layers=1"):
        nn.LSTM(2, 3, dropout=0.5)


# ---- gradients ------------------------------------------------------------------------------------------
def numeric_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        old = a[i]
        a[i] = old + eps
        up = f()
        a[i] = old - eps
        down = f()
        a[i] = old
        g[i] = (up - down) / (2 * eps)
    return g


@pytest.mark.parametrize("mode", MODES)
def test_gradients_match_finite_differences_of_numpy(mode):
    m = uniform_params(make(mode, 2, 3, 2, bidirectional=True, dtype=f64), -0.8, 0.8)
    if mode == "RNN_RELU":  # keep pre-activations away from relu's kink
        with flow.no_grad():
            for name, p in m.named_parameters():
                if name.startswith("bias"):
                    p.copy_(flow.tensor(np.random.uniform(0.3, 0.8, p.shape)))
    x = np.random.randn(3, 2, 2)
    states = [np.random.randn(*s) for s in state_shapes(m, 2)]
    weights = [np.random.randn(3, 2, 6)] + [np.random.randn(*s) for s in state_shapes(m, 2)]
    xt = flow.tensor(x, requires_grad=True)
    st = [flow.tensor(s, requires_grad=True) for s in states]
    out, finals = run(m, xt, st)
    loss = (out * flow.tensor(weights[0])).sum()
    for f, w in zip(finals, weights[1:]):
        loss = loss + (f * flow.tensor(w)).sum()
    loss.backward()
    params = np_params(m)

    def ref_loss():
        o, fs = np_rnn(mode, x, params, 2, True, tuple(states))
        return float((o * weights[0]).sum() + sum((f * w).sum() for f, w in zip(fs, weights[1:])))

    close(xt.grad, numeric_grad(ref_loss, x), atol=1e-6, rtol=1e-5)
    for s, t in zip(states, st):
        close(t.grad, numeric_grad(ref_loss, s), atol=1e-6, rtol=1e-5)
    for name, p in m.named_parameters():
        close(p.grad, numeric_grad(ref_loss, params[name]), atol=1e-6, rtol=1e-5)


def _with_weights(m, weights):
    """Replace the module's parameters by the given tensors (the weight-drop pattern: the parameter is removed
    and a plain tensor set under its name), so gradcheck can differentiate with respect to them."""
    for name, w in zip(m._flat_weights_names, weights):
        m._parameters.pop(name, None)
        object.__setattr__(m, name, w)
    return m


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_gradcheck_tiny_layer(mode):
    m = make(mode, 2, 2, 1, bidirectional=True, dtype=f64)  # (test_gradients_match_... covers 2 layers)
    weights = [flow.tensor(arr(p), requires_grad=True) for p in m.parameters()]
    _with_weights(m, weights)
    x = flow.tensor(np.random.randn(3, 1, 2), requires_grad=True)
    states = [flow.tensor(np.random.randn(*s), requires_grad=True) for s in state_shapes(m, 1)]

    def f(x, *rest):
        n = len(states)
        for name, w in zip(m._flat_weights_names, rest[n:]):
            object.__setattr__(m, name, w)
        out, finals = run(m, x, list(rest[:n]))
        return (out, *finals)

    assert flow.autograd.gradcheck(f, (x, *states, *weights))


def test_gradcheck_cells():
    for cell in (nn.LSTMCell(2, 3, dtype=f64), nn.GRUCell(2, 3, dtype=f64), nn.RNNCell(2, 3, dtype=f64)):
        x = flow.tensor(np.random.randn(2, 2), requires_grad=True)
        h = flow.tensor(np.random.randn(2, 3), requires_grad=True)
        c = flow.tensor(np.random.randn(2, 3), requires_grad=True)
        if isinstance(cell, nn.LSTMCell):
            assert flow.autograd.gradcheck(lambda x, h, c, cell=cell: cell(x, (h, c)), (x, h, c))
        else:
            assert flow.autograd.gradcheck(lambda x, h, cell=cell: cell(x, h), (x, h))


# ---- cells -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("cls", "mode"), [(nn.RNNCell, "RNN_TANH"), (nn.LSTMCell, "LSTM"), (nn.GRUCell, "GRU")])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_numpy(cls, mode, bias):
    cell = uniform_params(cls(3, 4, bias=bias, dtype=f64))
    p = {"w_ih": arr(cell.weight_ih), "w_hh": arr(cell.weight_hh)}
    if bias:
        p.update(b_ih=arr(cell.bias_ih), b_hh=arr(cell.bias_hh))
    x = np.random.randn(2, 3)
    state = tuple(np.random.randn(2, 4) for _ in range(2 if mode == "LSTM" else 1))
    ref = np_cell(mode, x, state, p)
    got = cell(flow.tensor(x), tuple(flow.tensor(s) for s in state) if mode == "LSTM" else flow.tensor(state[0]))
    got = got if isinstance(got, tuple) else (got,)
    for g, r in zip(got, ref):
        close(g, r)
    zero_ref = np_cell(mode, x, tuple(np.zeros((2, 4)) for _ in state), p)
    got0 = cell(flow.tensor(x))
    for g, r in zip(got0 if isinstance(got0, tuple) else (got0,), zero_ref):
        close(g, r)
    # unbatched (H_in,) input and (H,) states
    got1 = cell(flow.tensor(x[0]), tuple(flow.tensor(s[0]) for s in state) if mode == "LSTM"
                else flow.tensor(state[0][0]))
    for g, r in zip(got1 if isinstance(got1, tuple) else (got1,), ref):
        assert g.shape == (4,)
        close(g, r[0])


def test_relu_cell():
    cell = uniform_params(nn.RNNCell(3, 4, nonlinearity="relu", dtype=f64))
    x, h = np.random.randn(5, 3), np.random.randn(5, 4)
    ref = np_cell("RNN_RELU", x, (h,), {"w_ih": arr(cell.weight_ih), "w_hh": arr(cell.weight_hh),
                                         "b_ih": arr(cell.bias_ih), "b_hh": arr(cell.bias_hh)})[0]
    close(cell(flow.tensor(x), flow.tensor(h)), ref)


# ---- packed sequences -------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_input_matches_running_each_sequence_alone(mode, batch_first):
    m = uniform_params(make(mode, 3, 4, 2, bidirectional=True, batch_first=batch_first, dtype=f64))
    lengths = [3, 5, 1, 5]
    x = np.random.randn(5, 4, 3)
    states = [np.random.randn(*s) for s in state_shapes(m, 4)]
    xt = flow.tensor(x.transpose(1, 0, 2) if batch_first else x, requires_grad=True)
    packed = rnn_utils.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [4, 3, 3, 2, 2] and packed.sorted_indices.tolist() == [1, 3, 0, 2]
    out, finals = run(m, packed, [flow.tensor(s) for s in states])
    assert isinstance(out, rnn_utils.PackedSequence) and out.batch_sizes is packed.batch_sizes
    padded, out_lengths = rnn_utils.pad_packed_sequence(out, batch_first=batch_first, padding_value=-7.0)
    assert out_lengths.tolist() == lengths and out_lengths.dtype == flow.int64
    padded = arr(padded).transpose(1, 0, 2) if batch_first else arr(padded)
    params = np_params(m)
    for b, n in enumerate(lengths):
        ref, ref_finals = np_rnn(mode, x[:n, b:b + 1], params, 2, True, tuple(s[:, b:b + 1] for s in states))
        np.testing.assert_allclose(padded[:n, b], ref[:, 0], atol=1e-10)
        assert np.all(padded[n:, b] == -7.0)
        for got, want in zip(finals, ref_finals):
            np.testing.assert_allclose(arr(got)[:, b], want[:, 0], atol=1e-10)
    out.data.sum().backward()  # the padding gets no gradient
    grad = arr(xt.grad).transpose(1, 0, 2) if batch_first else arr(xt.grad)
    for b, n in enumerate(lengths):
        assert np.all(grad[n:, b] == 0) and np.all(grad[:n, b] != 0)


def test_packed_input_without_states_and_sorted():
    m = uniform_params(nn.LSTM(2, 3, dtype=f64))
    seqs = [flow.tensor(np.random.randn(n, 2)) for n in (4, 2, 2)]
    packed = rnn_utils.pack_sequence(seqs)
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    out, (h, c) = m(packed)
    params = np_params(m)
    for b, s in enumerate(seqs):
        ref, (rh, rc) = np_rnn("LSTM", arr(s)[:, None], params, 1, False, (np.zeros((1, 1, 3)),) * 2)
        close(rnn_utils.unpack_sequence(out)[b], ref[:, 0])
        close(h[:, b], rh[:, 0])
        close(c[:, b], rc[:, 0])


def test_pad_pack_utilities():
    a, b, c = (flow.tensor(np.random.randn(n, 2)) for n in (2, 4, 1))
    padded = rnn_utils.pad_sequence([a, b, c])
    assert padded.shape == (4, 3, 2)
    close(padded[:2, 0], arr(a))
    assert np.all(arr(padded)[2:, 0] == 0)
    bf = rnn_utils.pad_sequence([a, b, c], batch_first=True, padding_value=9.0)
    assert bf.shape == (3, 4, 2) and np.all(arr(bf)[2, 1:] == 9.0)
    left = rnn_utils.pad_sequence([a, b], batch_first=True, padding_side="left")
    close(left[0, 2:], arr(a))
    assert np.all(arr(left)[0, :2] == 0)
    packed = rnn_utils.pack_sequence([a, b, c], enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1] and packed.unsorted_indices.tolist() == [1, 0, 2]
    close(packed.data, np.concatenate([arr(b)[0:1], arr(a)[0:1], arr(c)[0:1], arr(b)[1:2], arr(a)[1:2],
                                       arr(b)[2:3], arr(b)[3:4]]))
    for got, want in zip(rnn_utils.unpack_sequence(packed), (a, b, c)):
        close(got, arr(want))
    long_pad, lengths = rnn_utils.pad_packed_sequence(packed, total_length=6)
    assert long_pad.shape == (6, 3, 2) and lengths.tolist() == [2, 4, 1]
    assert [tuple(s.shape) for s in rnn_utils.unpad_sequence(long_pad, lengths)] == [(2, 2), (4, 2), (1, 2)]
    assert rnn_utils.invert_permutation(flow.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert rnn_utils.invert_permutation(None) is None
    as_double = rnn_utils.pack_sequence([a.float()]).double()
    assert isinstance(as_double, rnn_utils.PackedSequence) and as_double.data.dtype == f64
    again = rnn_utils.PackedSequence(packed.data, packed.batch_sizes, packed.sorted_indices)
    assert again.unsorted_indices.tolist() == [1, 0, 2]
    data, sizes, _, _ = packed  # a named tuple, as in PyTorch
    assert data is packed.data and sizes is packed.batch_sizes


def test_pad_pack_errors():
    x = flow.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order when "
                                           "`enforce_sorted` is True"):
        rnn_utils.pack_padded_sequence(x, [1, 4, 2])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 "
                                           r"\(batch_size=3\)"):
        rnn_utils.pack_padded_sequence(x, [4, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        rnn_utils.pack_padded_sequence(x, [4, 2, 0])
    with pytest.raises(RuntimeError, match=r"the longest length \(5\) is larger than the padded input's time "
                                           r"dimension \(4\)"):
        rnn_utils.pack_padded_sequence(x, [5, 2, 1])
    packed = rnn_utils.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest sequence "
                                         "in input, but got total_length=3 and max sequence length being 4"):
        rnn_utils.pad_packed_sequence(packed, total_length=3)
    with pytest.raises(RuntimeError, match=r"pad_sequence: sequence 1 has shape \(3, 4\); every sequence must have "
                                           r"the trailing dimensions \(3,\) of sequence 0"):
        rnn_utils.pad_sequence([flow.zeros(2, 3), flow.zeros(3, 4)])
    with pytest.raises(ValueError, match="Expected padding_side to be one of left or right, but got up."):
        rnn_utils.pad_sequence([flow.zeros(2, 3)], padding_side="up")


# ---- errors -----------------------------------------------------------------------------------------------
def test_constructor_errors():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."):
        nn.RNN(2, 3, nonlinearity="gelu")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not RNN or GRU"):
        nn.GRU(2, 3, proj_size=1)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(2, 3, proj_size=3)
    with pytest.raises(ValueError, match="proj_size should be a positive integer or zero"):
        nn.LSTM(2, 3, proj_size=-1)
    with pytest.raises(ValueError, match=r"dropout should be a number in range \[0, 1\]"):
        nn.LSTM(2, 3, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(2, 0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.GRU(2, 3, 0)
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        nn.LSTM(2, 3.0)
    with pytest.raises(ValueError, match="Unrecognized RNN mode: SRU"):
        nn.RNNBase("SRU", 2, 3)


def test_forward_errors():
    lstm = nn.LSTM(2, 3)
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        lstm(flow.zeros(1, 2, 3, 2))
    with pytest.raises(ValueError, match="RNN: Expected input to be 2D or 3D, got 1D tensor instead"):
        nn.RNN(2, 3)(flow.zeros(2))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 2, got 5"):
        lstm(flow.zeros(4, 3, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 3\), got \[1, 3, 4\]"):
        lstm(flow.zeros(4, 3, 2), (flow.zeros(1, 3, 4), flow.zeros(1, 3, 3)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 3, 3\), got \[1, 2, 3\]"):
        lstm(flow.zeros(4, 3, 2), (flow.zeros(1, 3, 3), flow.zeros(1, 2, 3)))
    with pytest.raises(RuntimeError, match=r"For batched 3-D input, hx and cx should also be 3-D but got "
                                           r"\(2-D, 3-D\) tensors"):
        lstm(flow.zeros(4, 3, 2), (flow.zeros(3, 3), flow.zeros(1, 3, 3)))
    gru = nn.GRU(2, 3, 2)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 5, 3\), got \[1, 5, 3\]"):
        gru(flow.zeros(4, 5, 2), flow.zeros(1, 5, 3))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"):
        gru(flow.zeros(4, 2), flow.zeros(2, 1, 3))
    with pytest.raises(ValueError, match=r"RNN input dtype \(oneflow_lite.float64\) does not match weight dtype "
                                         r"\(oneflow_lite.float32\)"):
        gru(flow.zeros(4, 5, 2, dtype=f64))
    cell = nn.LSTMCell(2, 3)
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D instead"):
        cell(flow.zeros(1, 1, 2))
    with pytest.raises(ValueError, match=r"LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D instead"):
        cell(flow.zeros(1, 2), (flow.zeros(1, 3), flow.zeros(1, 1, 3)))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 2"):
        cell(flow.zeros(4, 5))
    with pytest.raises(RuntimeError, match="Input batch size 4 doesn't match hidden0 batch size 3"):
        cell(flow.zeros(4, 2), (flow.zeros(3, 3), flow.zeros(4, 3)))
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size: got 4, expected 3"):
        cell(flow.zeros(4, 2), (flow.zeros(4, 3), flow.zeros(4, 4)))
    with pytest.raises(ValueError, match="GRUCell: Expected hidden to be 1D or 2D, got 3D instead"):
        nn.GRUCell(2, 3)(flow.zeros(4, 2), flow.zeros(1, 4, 3))
    with pytest.raises(RuntimeError, match="hidden has inconsistent hidden_size: got 4, expected 3"):
        nn.GRUCell(2, 3)(flow.zeros(4, 2), flow.zeros(4, 4))
    bad = nn.RNNCell(2, 3)
    bad.nonlinearity = "sigmoid"
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: sigmoid"):
        bad(flow.zeros(1, 2))


# ---- state dicts, weights and subclasses ------------------------------------------------------------------
def test_state_dict_round_trip(tmp_path):
    m = nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2)
    other = nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2)
    x = flow.randn(5, 2, 3)
    assert not np.allclose(arr(m(x)[0]), arr(other(x)[0]))
    assert list(m.state_dict()) == m._flat_weights_names
    other.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(arr(m(x)[0]), arr(other(x)[0]))
    path = tmp_path / "lstm.pt"
    flow.save(m.state_dict(), str(path))
    third = nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2)
    third.load_state_dict(flow.load(str(path)))
    np.testing.assert_array_equal(arr(m(x)[0]), arr(third(x)[0]))
    cell, cell2 = nn.GRUCell(3, 4), nn.GRUCell(3, 4)
    cell2.load_state_dict(cell.state_dict())
    np.testing.assert_array_equal(arr(cell(x[0])), arr(cell2(x[0])))


def test_reassigned_weights_are_used_and_conversions_keep_working():
    m = nn.GRU(2, 3, dtype=f64)
    x = flow.tensor(np.random.randn(4, 1, 2))
    m.weight_hh_l0 = nn.Parameter(flow.zeros(9, 3, dtype=f64))  # PyTorch updates _flat_weights on assignment
    assert m._flat_weights[1] is m.weight_hh_l0
    params = np_params(m)
    close(m(x)[0], np_rnn("GRU", arr(x), params, 1, False, (np.zeros((1, 1, 3)),))[0])
    m.float()
    assert m(x.float())[0].dtype == flow.float32 and m._flat_weights[0].dtype == flow.float32


def test_subclass_overriding_forward():
    class Encoder(nn.LSTM):
        def __init__(self):
            super().__init__(input_size=3, hidden_size=4, batch_first=True)
            self.extra = nn.Linear(4, 1)

        def forward(self, x):
            out, (h, _c) = super().forward(x)
            return self.extra(out[:, -1]), h

    enc = Encoder()
    y, h = enc(flow.randn(2, 5, 3))
    assert y.shape == (2, 1) and h.shape == (1, 2, 4)
    assert "extra.weight" in enc.state_dict() and "weight_ih_l0" in enc.state_dict()


# ---- nn.Graph -------------------------------------------------------------------------------------------
class _Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, 2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(8, 5)
        self.cell = nn.LSTMCell(5, 6)
        self.rnn_cell = nn.RNNCell(6, 2, nonlinearity="relu")

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        z, hg = self.gru(y)
        a, b = self.cell(z[:, -1])
        return y, h, c, hg, a, b, self.rnn_cell(a)


def test_layers_in_a_graph_equal_eager():
    model = _Stack()

    class Infer(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x, h0, c0):
            return self.model(x, h0, c0)

    x, h0, c0 = flow.randn(2, 5, 3), flow.randn(4, 2, 4), flow.randn(4, 2, 4)
    g = Infer()
    for _ in range(2):  # capture, then run the compiled plan
        for got, want in zip(g(x, h0, c0), model(x, h0, c0)):
            np.testing.assert_allclose(arr(got), arr(want), rtol=1e-6, atol=1e-6)


def test_lstm_training_step_in_a_graph_equals_eager():
    x = flow.tensor(np.random.randn(4, 2, 2))
    eager, graph_model = [nn.ModuleList([nn.LSTM(2, 3, dtype=f64), nn.Linear(3, 1, dtype=f64)]) for _ in range(2)]
    graph_model.load_state_dict(eager.state_dict())

    def loss_of(mods, x):
        out, _ = mods[0](x)
        return (mods[1](out) ** 2).mean()

    opt_e = flow.optim.SGD(eager.parameters(), lr=0.1)
    opt_g = flow.optim.SGD(graph_model.parameters(), lr=0.1)

    class Train(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.mods = graph_model
            self.add_optimizer(opt_g)

        def build(self, x):
            loss = loss_of(self.mods, x)
            loss.backward()
            return loss

    g = Train()
    for _ in range(3):
        opt_e.zero_grad()
        le = loss_of(eager, x)
        le.backward()
        opt_e.step()
        lg = g(x)
        np.testing.assert_allclose(arr(lg), arr(le), rtol=1e-10)
    for (name, p), (_, q) in zip(eager.named_parameters(), graph_model.named_parameters()):
        np.testing.assert_allclose(arr(q), arr(p), rtol=1e-9, atol=1e-12, err_msg=name)


# ---- PyTorch's state dicts and example scripts -----------------------------------------------------------
@pytest.mark.parametrize(("cls", "kwargs"), [("LSTM", {"num_layers": 2, "bidirectional": True}),
                                             ("LSTM", {"proj_size": 3, "batch_first": True}),
                                             ("GRU", {"num_layers": 2, "bidirectional": True}),
                                             ("RNN", {"num_layers": 2, "nonlinearity": "relu"}),
                                             ("GRU", {"bias": False, "batch_first": True})])
def test_torch_state_dict_gives_torch_outputs(cls, kwargs):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, cls)(4, 5, **kwargs)
    ours = getattr(nn, cls)(4, 5, **kwargs)
    result = ours.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = np.random.randn(3, 6, 4).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "LSTM with projections is not supported with oneDNN"
        t_out, t_hidden = theirs(torch.tensor(x))
    o_out, o_hidden = ours(flow.tensor(x))
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-5)
    t_hidden = t_hidden if isinstance(t_hidden, tuple) else (t_hidden,)
    o_hidden = o_hidden if isinstance(o_hidden, tuple) else (o_hidden,)
    for o, t in zip(o_hidden, t_hidden):
        np.testing.assert_allclose(o.numpy(), t.detach().numpy(), atol=1e-5)
    # packed input, unsorted lengths
    lengths = [2, 6, 4] if not ours.batch_first else [6, 2, 4]
    xp = np.random.randn(3, 6, 4).astype(np.float32) if ours.batch_first else np.random.randn(6, 3, 4).astype(
        np.float32)
    t_packed = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(xp), lengths, ours.batch_first, False)
    o_packed = rnn_utils.pack_padded_sequence(flow.tensor(xp), lengths, ours.batch_first, False)
    np.testing.assert_array_equal(o_packed.data.numpy(), t_packed.data.numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_out = theirs(t_packed)[0]
    np.testing.assert_allclose(ours(o_packed)[0].data.numpy(), t_out.data.detach().numpy(), atol=1e-5)


def test_torch_cells_state_dicts():
    torch = pytest.importorskip("torch")
    x = np.random.randn(3, 4).astype(np.float32)
    for cls in ("RNNCell", "LSTMCell", "GRUCell"):
        theirs, ours = getattr(torch.nn, cls)(4, 5), getattr(nn, cls)(4, 5)
        ours.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
        t_out, o_out = theirs(torch.tensor(x)), ours(flow.tensor(x))
        for o, t in zip(o_out if isinstance(o_out, tuple) else (o_out,), t_out if isinstance(t_out, tuple)
                        else (t_out,)):
            np.testing.assert_allclose(o.numpy(), t.detach().numpy(), atol=1e-5)


def test_word_language_model_rnn_script_runs_unchanged():
    """PyTorch's examples/word_language_model RNNModel with ``torch`` = oneflow_lite (trimmed of comments)."""
    torch = flow
    F = flow.nn.functional

    class RNNModel(nn.Module):
        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
            super(RNNModel, self).__init__()  # noqa: UP008  (the script's spelling)
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ["LSTM", "GRU"]:
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.rnn_type = rnn_type
            self.nhid = nhid
            self.nlayers = nlayers

        def init_weights(self):
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if self.rnn_type == "LSTM":
                return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
            return weight.new_zeros(self.nlayers, bsz, self.nhid)

    def repackage_hidden(h):
        if isinstance(h, torch.Tensor):
            return h.detach()
        return tuple(repackage_hidden(v) for v in h)

    data = torch.tensor(np.tile(np.arange(10), 8)[:, None] * np.ones((1, 4), np.int64))  # a learnable cycle
    criterion = nn.NLLLoss()
    for kind in ("LSTM", "GRU", "RNN_TANH"):
        model = RNNModel(kind, 10, 16, 16, 2, dropout=0.1, tie_weights=True)
        hidden = model.init_hidden(4)
        losses = []
        for _epoch in range(6):
            for i in range(0, data.size(0) - 1, 8):
                seq_len = min(8, len(data) - 1 - i)
                source, target = data[i:i + seq_len], data[i + 1:i + 1 + seq_len].reshape(-1)
                model.zero_grad()
                hidden = repackage_hidden(hidden)
                output, hidden = model(source, hidden)
                loss = criterion(output, target)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
                for p in model.parameters():
                    p.data.add_(p.grad, alpha=-20.0)
                losses.append(loss.item())
        assert np.isfinite(losses).all() and np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5]), kind


def test_time_sequence_prediction_script_runs_unchanged():
    """PyTorch's examples/time_sequence_prediction model (two LSTMCells in float64) with ``torch`` =
    oneflow_lite; trained with Adam instead of LBFGS for a few steps."""
    torch = flow

    class Sequence(nn.Module):
        def __init__(self):
            super(Sequence, self).__init__()  # noqa: UP008  (the script's spelling)
            self.lstm1 = nn.LSTMCell(1, 51)
            self.lstm2 = nn.LSTMCell(51, 51)
            self.linear = nn.Linear(51, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
            c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
            h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
            c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for _i in range(future):
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            return torch.cat(outputs, dim=1)

    t = np.arange(30)[None, :] + np.random.randint(-8, 8, (6, 1))
    wave = torch.tensor(np.sin(t / 5.0))
    inp, target = wave[:, :-1], wave[:, 1:]
    seq = Sequence()
    seq.double()
    criterion = nn.MSELoss()
    optimizer = flow.optim.Adam(seq.parameters(), lr=0.01)
    losses = []
    for _ in range(8):
        optimizer.zero_grad()
        loss = criterion(seq(inp), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    with torch.no_grad():
        pred = seq(inp, future=5)
    assert pred.shape == (6, 34) and pred.dtype == f64
